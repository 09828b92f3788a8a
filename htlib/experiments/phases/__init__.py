"""The phases chapter (``book/phases.ipynb``):
its ``compute`` and ``reading`` modules under one name, ``ch`` (:mod:`htlib.experiments`)."""

from htlib.experiments._facade import chapter_getattr
from htlib.experiments.phases import compute, reading

__getattr__, __dir__ = chapter_getattr(compute, reading)

"""The Marchenko-Pastur baseline chapter (``book/mp_baseline.ipynb``):
its ``compute``, ``measures`` and ``reading`` modules under one name, ``ch`` (:mod:`htlib.experiments`)."""

from htlib.experiments._facade import chapter_getattr
from htlib.experiments.mp_baseline import compute, measures, reading

__getattr__, __dir__ = chapter_getattr(compute, measures, reading)

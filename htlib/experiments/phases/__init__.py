"""The phases chapter (``book/phases.ipynb``):
its ``compute``, ``measures`` and ``reading`` modules under one name, ``ch`` (:mod:`htlib.experiments`)."""

from htlib.experiments._facade import chapter_getattr
from htlib.experiments.phases import bounds, compute, measures, reading  # noqa: F401 - bounds: the Setup's further limits

__getattr__, __dir__ = chapter_getattr(compute, measures, reading)

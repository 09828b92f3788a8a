"""The generalization chapter (paper 003, §5.3 and App. E.4):
its ``compute``, ``measures`` and ``reading`` modules under one name, ``ch`` (:mod:`htlib.experiments`)."""

from htlib.experiments._facade import chapter_getattr
from htlib.experiments.generalization import bounds, compute, measures, reading  # noqa: F401 - bounds: the Setup's further limits

__getattr__, __dir__ = chapter_getattr(compute, measures, reading)

"""Experiments of the chapter on linear-network Hessians (paper 004):
its ``compute``, ``extra`` and ``reading`` modules under one name, ``ch`` (:mod:`htlib.experiments`)."""

from htlib.experiments._facade import chapter_getattr
from htlib.experiments.linear_hessian import bounds, compute, extra, measures, reading  # noqa: F401 - bounds: Setup limits

__getattr__, __dir__ = chapter_getattr(compute, extra, measures, reading)

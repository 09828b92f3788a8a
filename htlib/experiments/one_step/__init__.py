"""The one-step chapter (paper 003, §4): Figs. 2-3, Theorem 4.1, Corollary 4.2 and their claims.

The chapter's notebook imports this package as ``ch``; every name comes from one of its two modules:
:mod:`~htlib.experiments.one_step.compute` (``Setup``, ``PAPER``, the ``run_*`` functions and their typed
results: in the result-cache key) or :mod:`~htlib.experiments.one_step.reading` (claims, tables, figures
and glue read from those results: outside the key, so a verdict edit recomputes nothing).
"""

from htlib.experiments._facade import chapter_getattr
from htlib.experiments.one_step import compute, reading

__getattr__, __dir__ = chapter_getattr(compute, reading)

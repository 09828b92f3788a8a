"""The generalization chapter (paper 003, §5.3 and App. E.4): Figs. 7 and 8, their claims.

The chapter's notebook imports this package as ``ch``; every name comes from one of its two modules:
:mod:`~htlib.experiments.generalization.compute` (``Setup``, ``PAPER``, the ``run_*`` functions and their typed
results: in the result-cache key) or :mod:`~htlib.experiments.generalization.reading` (claims, tables, figures
and glue read from those results: outside the key, so a verdict edit recomputes nothing).
"""

from htlib.experiments._facade import chapter_getattr
from htlib.experiments.generalization import compute, reading

__getattr__, __dir__ = chapter_getattr(compute, reading)

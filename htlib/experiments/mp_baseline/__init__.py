"""The Marchenko-Pastur baseline chapter (``book/mp_baseline.ipynb``): what "random" looks like.

The chapter's notebook imports this package as ``ch``; every name comes from one of its two modules:
:mod:`~htlib.experiments.mp_baseline.compute` (``Setup``, ``PAPER``, the ``run_*`` functions and their typed
results: in the result-cache key) or :mod:`~htlib.experiments.mp_baseline.reading` (claims, tables, figures
and glue read from those results: outside the key, so a verdict edit recomputes nothing).
"""

from htlib.experiments._facade import chapter_getattr
from htlib.experiments.mp_baseline import compute, reading

__getattr__, __dir__ = chapter_getattr(compute, reading)

"""The phases chapter (``book/phases.ipynb``): Martin & Mahoney's 5+1 phases on labelled matrices.

The chapter's notebook imports this package as ``ch``; every name comes from one of its two modules:
:mod:`~htlib.experiments.phases.compute` (``Setup``, ``PAPER``, the ``run_*`` functions and their typed
results: in the result-cache key) or :mod:`~htlib.experiments.phases.reading` (claims, tables, figures
and glue read from those results: outside the key, so a verdict edit recomputes nothing).
"""

from htlib.experiments._facade import chapter_getattr
from htlib.experiments.phases import compute, reading

__getattr__, __dir__ = chapter_getattr(compute, reading)

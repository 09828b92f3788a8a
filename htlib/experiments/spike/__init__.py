"""The spike-to-heavy-tail chapter (paper 003, §1, §5, §6, App. A): runs, tables, figures and claims.

The chapter's notebook imports this package as ``ch``; every name comes from one of its two modules:
:mod:`~htlib.experiments.spike.compute` (``Setup``, ``PAPER``, the ``run_*`` functions and their typed
results: in the result-cache key) or :mod:`~htlib.experiments.spike.reading` (claims, tables, figures
and glue read from those results: outside the key, so a verdict edit recomputes nothing).
"""

from htlib.experiments._facade import chapter_getattr
from htlib.experiments.spike import compute, reading

__getattr__, __dir__ = chapter_getattr(compute, reading)

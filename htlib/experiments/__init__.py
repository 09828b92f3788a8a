"""The experiments layer: what each chapter of the book computes, at the papers' settings.

One package per chapter, in three stages: ``compute`` (the chapter's ``Setup``, ``PAPER`` and ``run_*`` sweeps with
their typed results, in the result-cache key; runs added later sit beside it in modules of their own), ``measures``
(its claims table, what each row reads from the runs, and the judge's verdicts) and ``reading`` (the page's tables,
figures and glued numbers), both outside the key, so a level or sentence edit recomputes nothing.
``htlib.experiments._facade`` shows them under one name, ``ch.X``.  This layer may name a paper's figures and numbers; the numerics beneath it never do.
Parameters are declared with :mod:`htlib.params`.
"""

from htlib.params import INT_MAX, MIN_WIDTH, ParameterError, ParameterSpec, SetupBase, SweepSetup, param

__all__ = ["INT_MAX", "MIN_WIDTH", "ParameterError", "ParameterSpec", "SetupBase", "SweepSetup", "param"]

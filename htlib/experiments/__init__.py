"""The experiments layer: what each chapter of the book computes, at the papers' settings.

One package per chapter, in two modules: ``compute`` (the chapter's ``Setup``, ``PAPER`` and ``run_*`` sweeps with
their typed results, in the result-cache key) and ``reading`` (claims, tables and glue read from those results,
outside the key, so a level or sentence edit recomputes nothing).  ``htlib.experiments._facade`` shows both
under one name, ``ch.X``.  This layer may name a paper's figures and numbers; the numerics beneath it never do.
Parameters are declared with :mod:`htlib.params`.
"""

from htlib.params import INT_MAX, MIN_WIDTH, ParameterError, ParameterSpec, SetupBase, SweepSetup, param

__all__ = ["INT_MAX", "MIN_WIDTH", "ParameterError", "ParameterSpec", "SetupBase", "SweepSetup", "param"]

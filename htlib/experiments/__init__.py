"""The experiments layer: what each chapter of the book computes, at the papers' settings.

One package per chapter (``mp_baseline``, ``phases``, ``one_step``, ``spike``, ``generalization``,
``htmp``, ``linear_hessian``), in two modules.  ``compute`` holds the chapter's ``Setup``, ``PAPER``,
figure configurations and ``run_*`` sweeps (through the result cache) with their typed results;
``reading`` holds what is read from those results: ``measure`` (one :class:`htlib.claims.Measurement` per
row of the chapter's claims table, ``claims.toml`` beside it, where every level is written once), the one
entry point ``claims(...)`` (the table judged by :func:`htlib.claims.judge`), tables and glue.  No ``compute`` imports its ``reading``, so the result cache, which keys a run on
the code of its ``compute`` (and what that imports), keeps every run when a level, a gate or a
sentence changes (``tests/test_chapter_split.py``).  The package itself
(:mod:`htlib.experiments._facade`) shows both modules' names under one, ``ch.X``.  It may name a paper's figures and numbers; the
numerics modules beneath it (``htlib.spectra``, ``htlib.htmp``, ``htlib.linear``, ...) never do.
Each chapter's parameters are one ``Setup`` (:mod:`htlib.experiments._setup`: :func:`param`,
:class:`SetupBase`, :class:`SweepSetup` with the one executor option); its docstring says how to move a
chapter onto it.

Why a subpackage of ``htlib`` and not, say, a ``book/_code`` folder or one module per paper:

- *One import path.*  Chapters, ``htlib.paper`` (which reruns every chapter at the papers'
  settings) and the unit tests import the same code as ``htlib.experiments.<chapter>``; an
  installed ``htlib`` carries it, so a chapter executed outside the repository (papermill into
  ``runs/``) finds it without ``sys.path`` tricks.
- *The result cache sees it.*  ``htlib.cache`` keys a chapter's results by the code of the numerics
  and of that chapter's ``compute`` module here, so a change to a chapter's configuration or sweep
  invalidates exactly that chapter's results, while edits to the tooling (plotting, claims tables),
  to the chapter's ``reading``, to another chapter or to a docstring do not.
- *The boundary is a folder.*  ``tests/test_layers.py`` checks the import direction by path: the
  numerics never import ``htlib.experiments``, and a reader sees from the import line alone
  whether a function is reusable or belongs to one chapter.
- *Per chapter, not per paper.*  A chapter is the unit that executes, caches and publishes its
  claims; paper 003 alone feeds four chapters, so modules per paper would mix their parameters.
"""

from htlib.experiments._setup import INT_MAX, MIN_WIDTH, ParameterError, ParameterSpec, SetupBase, SweepSetup, param

__all__ = ["INT_MAX", "MIN_WIDTH", "ParameterError", "ParameterSpec", "SetupBase", "SweepSetup", "param"]

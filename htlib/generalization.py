"""Spectral numbers of a trained student and their rank correlation with its losses (trains nothing).

:func:`final_metrics` (the last-step numbers of a run, with ratios computed from its ESD), Spearman rank
correlations across a :class:`htlib.two_layer.RunGrid` and :func:`seed_mean`, both with bootstrap intervals that
resample whole seeds (the independent unit).  The chapter's use is :mod:`htlib.experiments.generalization`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import scipy.stats

from htlib._checks import check_float, check_int, to_numpy
from htlib.two_layer import READOUT_METRICS, READOUT_SCALES, RunGrid, Trajectory

__all__ = ["METRICS", "final_metrics", "top_singular_ratio", "spike_over_bulk", "RankCorrelation", "SeedMean",
           "seed_mean", "spearman_bootstrap", "correlation_table"]

METRICS: tuple[str, ...] = ("train_loss", "test_loss", "kta", "alpha_hill", "alpha_ks", "alpha_weighted", "lambda_max",
                            "sv_ratio", "spike_q90", *(f"{m}@{s}" for s in READOUT_SCALES for m in READOUT_METRICS))
"""Per-run numbers at the last step: ``alpha_weighted = alpha_ks * log10(lambda_max)`` (WeightWatcher's),
``sv_ratio = s_1 / s_2`` of ``W``, ``spike_q90 = lambda_max / q_0.9`` of ``WᵀW``.  Plain loss/KTA names follow
each run's ``readout_scale``; ``"test_loss@sqrt_d"`` etc. name one convention."""


def top_singular_ratio(eigs: np.ndarray) -> float:
    """``s_1 / s_2`` from the eigenvalues of ``WᵀW`` (ascending): ``sqrt(l_max / l_second)``.

    Parameters
    ----------
    eigs : numpy.ndarray
        Eigenvalues of ``WᵀW``, ascending (a positive second largest).

    Returns
    -------
    float
        ``s_1 / s_2``.

    Examples
    --------
    >>> from htlib.generalization import top_singular_ratio
    >>> top_singular_ratio([1.0, 4.0, 16.0])         # sqrt(16 / 4)
    2.0
    """
    e = to_numpy(eigs, "eigs")
    if e.ndim != 1 or e.size < 2 or not np.all(np.isfinite(e)) or e[-2] <= 0:
        raise ValueError("eigs must be a 1-D array of >= 2 finite eigenvalues with a positive second largest")
    return float(np.sqrt(e[-1] / e[-2]))


def spike_over_bulk(eigs: np.ndarray, q: float = 0.9) -> float:
    """``lambda_max / Q_q``: the top eigenvalue of ``WᵀW`` over the ``q``-quantile of all eigenvalues (10: one
    decade between the spike and the bulk's upper part).

    Parameters
    ----------
    eigs : numpy.ndarray
        Eigenvalues of ``WᵀW``.
    q : float, default 0.9
        The quantile, in (0, 1).

    Returns
    -------
    float
        ``lambda_max / Q_q``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.generalization import spike_over_bulk
    >>> round(spike_over_bulk(np.r_[np.ones(99), 50.0]), 4)      # one spike at 50 over a flat bulk at 1
    50.0
    """
    e = to_numpy(eigs, "eigs")
    if e.ndim != 1 or e.size < 2 or not np.all(np.isfinite(e)):
        raise ValueError("eigs must be a 1-D array of >= 2 finite eigenvalues")
    if not 0 < q < 1:
        raise ValueError(f"q must be in (0, 1), got {q!r}")
    ref = float(np.quantile(e, q))
    if ref <= 0:
        raise ValueError("the q-quantile of eigs must be positive")
    return float(e.max() / ref)


def final_metrics(traj: Trajectory) -> dict[str, float]:
    """The :data:`METRICS` of the last step of ``traj``; all NaN if the run diverged.

    Parameters
    ----------
    traj : htlib.two_layer.Trajectory
        A finished run.

    Returns
    -------
    dict of str to float
        One value per name of :data:`METRICS`.

    Examples
    --------
    >>> import math
    >>> from htlib.generalization import METRICS, final_metrics
    >>> from htlib.two_layer import TwoLayerConfig, train
    >>> m = final_metrics(train(TwoLayerConfig(n=40, d=20, h=30, n_test=10, steps=2, dtype="float64")))
    >>> sorted(m) == sorted(METRICS), m["sv_ratio"] >= 1.0, all(math.isfinite(v) for v in m.values())
    (True, True, True)
    """
    if traj.diverged_at is not None or int(traj.steps[-1]) != traj.config.steps:
        return {m: float("nan") for m in METRICS}
    eigs = np.asarray(traj.esd[-1], dtype=np.float64)
    lmax = float(eigs[-1])
    alpha_ks = float(traj.alpha_ks[-1])
    return {
        "train_loss": float(traj.train_loss[-1]),
        "test_loss": float(traj.test_loss[-1]),
        "kta": float(traj.kta[-1]),
        "alpha_hill": float(traj.alpha_hill[-1]),
        "alpha_ks": alpha_ks,
        "alpha_weighted": alpha_ks * float(np.log10(lmax)),
        "lambda_max": lmax,
        "sv_ratio": top_singular_ratio(eigs),
        "spike_q90": spike_over_bulk(eigs),
        **{f"{m}@{s}": float(traj.readouts[s][m][-1]) for s in READOUT_SCALES for m in READOUT_METRICS},
    }


@dataclass(frozen=True)
class RankCorrelation:
    """A Spearman rank correlation (over ``n_points`` finite pairs) with a percentile bootstrap interval
    ``[low, high]`` at ``level`` that resamples seeds (NaN with fewer than two seeds).

    Attributes
    ----------
    rho : float
        Spearman's rho.
    low, high : float
        The bootstrap interval.
    level : float
        Its confidence level.
    n_points : int
        Finite pairs.
    n_seeds : int
        Seeds.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.generalization import spearman_bootstrap
    >>> x = np.arange(5.0)[:, None] + np.zeros((5, 3))                # 5 cells, 3 seeds
    >>> r = spearman_bootstrap(x, x ** 3 + np.arange(3.0), n_boot=100)  # monotone in every seed
    >>> round(r.rho, 3), round(r.low, 3), round(r.high, 3), r.excludes_zero, r.n_points
    (1.0, 1.0, 1.0, True, 15)
    """

    rho: float
    low: float
    high: float
    level: float
    n_points: int
    n_seeds: int

    @property
    def excludes_zero(self) -> bool:
        """Whether the interval lies strictly on one side of 0."""
        return bool(self.low > 0 or self.high < 0)


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(scipy.stats.spearmanr(x, y).statistic)


def spearman_bootstrap(x: np.ndarray, y: np.ndarray, *, method: str = "within", n_boot: int = 2000,
                       level: float = 0.95, seed: int = 0) -> RankCorrelation:
    """Spearman's rho between ``x`` and ``y`` (shape ``(..., n_seeds)``) with a bootstrap interval that resamples
    whole seeds (runs of one seed share data and initial weights: seeds are the independent units).

    ``method="within"``: rho across the cells of each seed, averaged over seeds (free of between-seed
    differences); ``"pooled"``: one rho over all points.  Non-finite pairs are dropped; a seed or replicate whose
    rho is undefined (fewer than 3 pairs, or a constant variable) is left out.

    Parameters
    ----------
    x, y : numpy.ndarray
        Paired values of shape ``(..., n_seeds)``.
    method : {"within", "pooled"}, default "within"
        Rho within each seed, averaged, or one rho over all points.
    n_boot : int, default 2000
        Bootstrap replicates.
    level : float, default 0.95
        Confidence level.
    seed : int, default 0
        Seed of the bootstrap.

    Returns
    -------
    RankCorrelation
        Rho and its interval.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.generalization import spearman_bootstrap
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((6, 4))
    >>> round(spearman_bootstrap(x, -np.exp(x), n_boot=100).rho, 3)       # a decreasing function of x
    -1.0
    >>> spearman_bootstrap(x[:, :1], x[:, :1], n_boot=100).low   # one seed: no interval
    nan
    """
    x, y = to_numpy(x, "x"), to_numpy(y, "y")  # NaN allowed: a diverged run, dropped below
    if x.shape != y.shape or x.ndim < 1 or x.shape[-1] < 1:
        raise ValueError(f"x and y must have the same shape (..., n_seeds), got {x.shape} and {y.shape}")
    if method not in ("within", "pooled"):
        raise ValueError(f"method must be 'within' or 'pooled', got {method!r}")
    check_int("n_boot", n_boot, 1)
    check_float("level", level, low=0.0, high=1.0)
    check_int("seed", seed, 0)
    n_seeds = x.shape[-1]
    xs = x.reshape(-1, n_seeds)
    ys = y.reshape(-1, n_seeds)
    n_points = int((np.isfinite(xs) & np.isfinite(ys)).sum())
    if method == "within":
        per_seed = np.array([_spearman(xs[:, s], ys[:, s]) for s in range(n_seeds)])

        def stat(cols: np.ndarray) -> float:
            v = per_seed[cols]
            v = v[np.isfinite(v)]
            return float(v.mean()) if v.size else float("nan")
    else:
        def stat(cols: np.ndarray) -> float:
            return _spearman(xs[:, cols].ravel(), ys[:, cols].ravel())

    rho = stat(np.arange(n_seeds))
    low = high = float("nan")
    if n_seeds >= 2:
        rng = np.random.default_rng(seed)
        cols = rng.integers(0, n_seeds, size=(n_boot, n_seeds))
        reps = np.array([stat(c) for c in cols])
        reps = reps[np.isfinite(reps)]
        if reps.size:
            tail = 100 * (1 - level) / 2
            low, high = (float(v) for v in np.percentile(reps, [tail, 100 - tail]))
    return RankCorrelation(rho=rho, low=low, high=high, level=level, n_points=n_points, n_seeds=n_seeds)


def correlation_table(grid: RunGrid, *, metrics: Sequence[str] = ("alpha_hill", "alpha_ks", "alpha_weighted", "kta"),
                      target: str = "test_loss", eta_min: float = 0.0, eta_max: float = np.inf, method: str = "within",
                      n_boot: int = 2000, level: float = 0.95, seed: int = 0) -> dict[tuple[str, str], RankCorrelation]:
    """Spearman's rho of each metric against ``target`` across the etas in ``[eta_min, eta_max]``, per optimizer:
    ``{(optimizer, metric): RankCorrelation}`` (``method`` as in :func:`spearman_bootstrap`).

    Parameters
    ----------
    grid : htlib.two_layer.RunGrid
        The runs.
    metrics : sequence of str
        Metrics correlated with ``target``.
    target : str, default "test_loss"
        The loss.
    eta_min, eta_max : float
        Range of learning rates used.
    method, n_boot, level, seed
        As for :func:`spearman_bootstrap`.

    Returns
    -------
    dict
        ``{(optimizer, metric): RankCorrelation}``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.generalization import correlation_table
    >>> from htlib.two_layer import RunGrid
    >>> etas = np.array([0.1, 1.0, 10.0])
    >>> alpha = np.array([[[4.0, 4.2], [3.0, 3.1], [2.0, 2.2]]])      # (optimizer, eta, seed)
    >>> grid = RunGrid(("gd",), etas, np.array([0, 1]), {"alpha_hill": alpha, "test_loss": 1.0 / alpha},
    ...                np.zeros((1, 3, 2), dtype=bool))
    >>> table = correlation_table(grid, metrics=["alpha_hill"], n_boot=100)
    >>> list(table), round(table["gd", "alpha_hill"].rho, 3)
    ([('gd', 'alpha_hill')], -1.0)
    """
    keep = (grid.etas >= eta_min) & (grid.etas <= eta_max)
    if not keep.any():
        raise ValueError(f"no learning rate of the grid lies in [{eta_min}, {eta_max}]")
    out = {}
    for opt in grid.optimizers:
        y = grid.get(target, opt)[keep]
        for m in metrics:
            out[(opt, m)] = spearman_bootstrap(grid.get(m, opt)[keep], y, method=method, n_boot=n_boot,
                                               level=level, seed=seed)
    return out


@dataclass(frozen=True)
class SeedMean:
    """Means over the finite seeds (``n_seeds`` of them) with percentile bootstrap intervals at ``level``
    (arrays of the input's leading shape; NaN without a finite seed, ``low = high = mean`` with one).

    Attributes
    ----------
    mean, low, high : numpy.ndarray
        Means over seeds and the interval's ends, of the input's leading shape.
    level : float
        Confidence level.
    n_seeds : numpy.ndarray
        Finite seeds at each index.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.generalization import seed_mean
    >>> m = seed_mean(np.array([[2.0, np.nan, 4.0], [7.0, np.nan, np.nan]]), n_boot=200)
    >>> m.n_seeds.tolist(), m.mean.tolist(), m.at(1)            # one seed: low = high = mean
    ([2, 1], [3.0, 7.0], (7.0, (7.0, 7.0)))
    """

    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    level: float
    n_seeds: np.ndarray

    def at(self, index) -> tuple[float, tuple[float, float]]:
        """``(mean, (low, high))`` at one index of the leading shape (what ``Criterion.judge`` takes)."""
        return float(self.mean[index]), (float(self.low[index]), float(self.high[index]))


def seed_mean(x: np.ndarray, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0) -> SeedMean:
    """The mean over the last axis (seeds) of ``x`` with a percentile bootstrap interval that resamples the seeds
    (``scipy.stats.bootstrap``); non-finite entries (diverged runs) are left out.

    Parameters
    ----------
    x : numpy.ndarray
        Values, seeds along the last axis.
    n_boot : int, default 2000
        Bootstrap replicates.
    level : float, default 0.95
        Confidence level.
    seed : int, default 0
        Seed of the bootstrap.

    Returns
    -------
    SeedMean
        Means and intervals per leading index.

    Examples
    --------
    >>> m = seed_mean(np.array([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]]), n_boot=500)
    >>> m.mean.tolist(), float(m.low[1]), float(m.high[1])
    ([2.0, 5.0], 5.0, 5.0)
    >>> bool(1.0 <= m.low[0] < 2.0 < m.high[0] <= 3.0)
    True
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < 1 or x.shape[-1] < 1:
        raise ValueError(f"x must have a non-empty last (seed) axis, got shape {x.shape}")
    check_int("n_boot", n_boot, 1)
    check_float("level", level, low=0.0, high=1.0)
    rows = x.reshape(-1, x.shape[-1])
    out = np.full((3, rows.shape[0]), np.nan)
    counts = np.zeros(rows.shape[0], dtype=int)
    rng = np.random.default_rng(seed)
    for i, row in enumerate(rows):
        v = row[np.isfinite(row)]
        counts[i] = v.size
        if v.size == 0:
            continue
        out[0, i] = v.mean()
        if v.size == 1 or np.ptp(v) == 0:
            out[1, i] = out[2, i] = v.mean()
            continue
        ci = scipy.stats.bootstrap((v,), np.mean, n_resamples=n_boot, confidence_level=level,
                                   method="percentile", random_state=rng).confidence_interval
        out[1, i], out[2, i] = ci.low, ci.high
    shape = x.shape[:-1]
    return SeedMean(mean=out[0].reshape(shape), low=out[1].reshape(shape), high=out[2].reshape(shape),
                    level=float(level), n_seeds=counts.reshape(shape))

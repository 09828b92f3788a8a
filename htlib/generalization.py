"""Heavy tails and generalization after a few full-batch steps (paper 003, §5.3).

This module owns the numerics of the generalization chapter; it trains nothing
itself (training is :func:`htlib.two_layer.train`, spectra are :mod:`htlib.spectra`):

- the Fig. 7 sweep (learning-rate grid x optimizer x seed, metrics of ``W_10``)
  and the Fig. 8 sweeps (sample size, ridge constant, label noise, StepLR decay);
- assembly of finished trajectories into ``(optimizer, eta, seed)`` arrays;
- Spearman rank correlations between ESD metrics and losses, with bootstrap
  confidence intervals that resample whole seeds (the independent unit);
- the ridge-constant panel, recomputed from stored ``W_t`` (no retraining);
- numeric checks of the paper's six claims, each with an explicit criterion, returned as
  :class:`htlib.claims.Claim` records; the loss-dependent checks take the readout
  convention (``"d"``, the published figures', or ``"sqrt_d"``, the paper's formula).
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np
import scipy.stats
import torch

from htlib import cache, dynamics
from htlib.sweep import process_executor, run_sweep
from htlib.claims import Claim
from htlib.two_layer import (READOUT_METRICS, READOUT_SCALES, Trajectory, TwoLayerConfig, make_data,
                             readout_features, train)

__all__ = [
    "ETA_GRID",
    "OPTIMIZERS",
    "METRICS",
    "fig7_configs",
    "fig8_configs",
    "Fig8Configs",
    "make_executor",
    "run_trainings",
    "GridMetrics",
    "final_metrics",
    "assemble_grid",
    "RankCorrelation",
    "spearman_bootstrap",
    "correlation_table",
    "ReadoutConfig",
    "ridge_losses",
    "readout_curve",
    "readout_curves",
    "top_singular_ratio",
    "update_overlap_outlier",
    "format_mean_table",
    "format_correlations",
    "spike_over_bulk",
    "check_gd_large_eta",
    "check_adam_benign_band",
    "check_hill_flat_ks_decreasing",
    "check_sample_size",
    "check_ridge",
    "check_label_noise",
]

ETA_GRID: tuple[float, ...] = (0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0, 2000.0, 3000.0)
"""The learning rates of Fig. 7."""

OPTIMIZERS: tuple[str, ...] = ("gd", "adam")

METRICS: tuple[str, ...] = (
    "train_loss",
    "test_loss",
    "kta",
    "alpha_hill",
    "alpha_ks",
    "alpha_weighted",
    "lambda_max",
    "sv_ratio",
    "spike_q90",
    *(f"{m}@{s}" for s in READOUT_SCALES for m in READOUT_METRICS),
)
"""Per-run numbers at the last step. ``alpha_weighted = alpha_ks * log10(lambda_max)``
(WeightWatcher's definition, REFERENCE §B); ``sv_ratio = s_1 / s_2``, the top
singular value of ``W`` over the second one; ``spike_q90 = lambda_max / q_0.9``, the top
eigenvalue of ``WᵀW`` over the 90th percentile of its eigenvalues (how far the spike stands
from the bulk on the eigenvalue scale).  Plain loss/KTA names follow each run's
``readout_scale``; ``"test_loss@sqrt_d"`` etc. name one convention."""


# ----------------------------------------------------------------------------- sweeps


def _check_positive_int(name: str, value: int, low: int = 1) -> None:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def fig7_configs(
    *,
    etas: Sequence[float] = ETA_GRID,
    optimizers: Sequence[str] = OPTIMIZERS,
    seeds: int = 5,
    n: int = 8000,
    d: int = 1000,
    h: int = 1500,
    n_test: int = 200,
    rho_e: float = 0.3,
    lam: float = 0.01,
    steps: int = 10,
    weight_norm: bool = False,
    weight_norm_order: str = "before_forward",
    readout_scale: str = "d",
    dtype: str = "float32",
    device: str = "cpu",
) -> list[TwoLayerConfig]:
    """The runs of Fig. 7: every (optimizer, eta, seed), ordered optimizer-major.

    Metrics and the ESD are recorded only at the last step (``record_every =
    steps``, ``record_initial = False``) and no weight matrix is kept: the
    figure needs only the numbers of ``W_steps``.

    Parameters
    ----------
    etas
        Learning rates, each ``> 0``.
    optimizers
        Subset of ``{"gd", "adam"}``.
    seeds
        Number of seeds ``0..seeds-1`` (``>= 1``).
    n, d, h, n_test, rho_e, lam, steps, weight_norm, weight_norm_order, readout_scale, dtype, device
        As in :class:`htlib.two_layer.TwoLayerConfig` (which validates them).

    Returns
    -------
    list of TwoLayerConfig
        ``len(optimizers) * len(etas) * seeds`` configs; index
        ``(i_opt * len(etas) + i_eta) * seeds + seed``.
    """
    _check_positive_int("seeds", seeds)
    _check_positive_int("steps", steps)
    if len(etas) == 0 or any(not (float(e) > 0) for e in etas):
        raise ValueError(f"etas must be a non-empty list of numbers > 0, got {list(etas)!r}")
    bad = [o for o in optimizers if o not in OPTIMIZERS]
    if len(optimizers) == 0 or bad:
        raise ValueError(f"optimizers must be a non-empty subset of {OPTIMIZERS}, got {list(optimizers)!r}")
    return [
        TwoLayerConfig(
            n=n, d=d, h=h, n_test=n_test, rho_e=float(rho_e), lam=float(lam),
            optimizer=opt, eta=float(eta), steps=steps, weight_norm=weight_norm,
            weight_norm_order=weight_norm_order, readout_scale=readout_scale, seed=seed, dtype=dtype, device=device, record_every=steps, keep_weights=(),
            record_initial=False,
        )
        for opt in optimizers
        for eta in etas
        for seed in range(seeds)
    ]


@dataclass(frozen=True)
class Fig8Configs:
    """The runs of Fig. 8 (FB-Adam, fixed eta), by panel.

    ``base`` (``n = 8000``, ``rho_e = 0.3``, constant learning rate) keeps every
    ``W_t``: panel (b) recomputes its readout for each ridge constant and the
    label-noise check needs ``W_9, W_10``.  The label-noise runs keep
    ``W_9, W_10``; the other runs keep nothing.  Panels share the base run
    wherever their grid contains its setting.
    """

    base: TwoLayerConfig
    by_n: dict[int, TwoLayerConfig]
    by_rho: dict[float, TwoLayerConfig]
    by_gamma: dict[float, TwoLayerConfig]

    def unique(self) -> list[TwoLayerConfig]:
        """Every distinct config once, base first."""
        out: list[TwoLayerConfig] = []
        for c in (self.base, *self.by_n.values(), *self.by_rho.values(), *self.by_gamma.values()):
            if c not in out:
                out.append(c)
        return out


def fig8_configs(
    *,
    ns: Sequence[int] = (500, 2000, 4000, 8000),
    rhos: Sequence[float] = (0.1, 0.3, 0.5, 0.7),
    gammas: Sequence[float] = (0.2, 0.4, 0.6, 0.8),
    n: int = 8000,
    d: int = 1000,
    h: int = 1500,
    n_test: int = 200,
    rho_e: float = 0.3,
    lam: float = 0.01,
    eta: float = 1.0,
    steps: int = 10,
    seed: int = 0,
    readout_scale: str = "d",
    dtype: str = "float32",
    device: str = "cpu",
) -> Fig8Configs:
    """The runs of Fig. 8: FB-Adam at learning rate ``eta``, recorded at every step.

    Parameters
    ----------
    ns, rhos, gammas
        Panel (a) sample sizes, panel (c) label-noise levels, panel (d) StepLR decays.
    n, rho_e
        The base setting the other panels vary around (panel (b) varies only the readout).
    d, h, n_test, lam, eta, steps, seed, readout_scale, dtype, device
        As in :class:`htlib.two_layer.TwoLayerConfig`.
    """
    _check_positive_int("steps", steps)
    base = TwoLayerConfig(
        n=n, d=d, h=h, n_test=n_test, rho_e=float(rho_e), lam=float(lam), optimizer="adam",
        eta=float(eta), steps=steps, seed=seed, readout_scale=readout_scale, dtype=dtype, device=device,
        record_every=1,
        keep_weights=tuple(range(steps + 1)),
    )
    plain = dataclasses.replace(base, keep_weights=())
    last_two = (steps - 1, steps)

    def pick(cfg: TwoLayerConfig) -> TwoLayerConfig:
        same = dataclasses.replace(cfg, keep_weights=base.keep_weights)
        return base if same == base else cfg

    by_n = {int(v): pick(dataclasses.replace(plain, n=int(v))) for v in ns}
    by_rho = {float(v): pick(dataclasses.replace(plain, rho_e=float(v), keep_weights=last_two)) for v in rhos}
    by_gamma = {float(v): pick(dataclasses.replace(plain, steplr_gamma=float(v))) for v in gammas}
    return Fig8Configs(base=base, by_n=by_n, by_rho=by_rho, by_gamma=by_gamma)


def make_executor(kind: str, workers: int = 2) -> cf.Executor | None:
    """The executor of a chapter's sweeps.

    Parameters
    ----------
    kind
        ``"serial"``: no executor, runs one after another in this process with
        threaded BLAS.  ``"process"``: :func:`htlib.sweep.process_executor` with
        ``workers`` processes of one BLAS thread each.
    workers
        Number of processes for ``"process"`` (``>= 1``).
    """
    if kind not in ("serial", "process"):
        raise ValueError(f"kind must be one of {{'serial', 'process'}}, got {kind!r}")
    _check_positive_int("workers", workers)
    return None if kind == "serial" else process_executor(workers, threads_per_worker=1)


def run_trainings(
    configs: Sequence[TwoLayerConfig],
    *,
    executor: str | cf.Executor | None = "serial",
    workers: int = 2,
    use_cache: bool = True,
    desc: str = "runs",
) -> list[Trajectory]:
    """``[train(c) for c in configs]`` through :func:`htlib.sweep.run_sweep` (cached, resumable).

    ``executor`` is ``"serial"``, ``"process"`` (see :func:`make_executor`), or any
    :class:`concurrent.futures.Executor` (e.g. ``distributed.Client().get_executor()``),
    which the caller then owns.  A process pool made here is shut down here.
    """
    if isinstance(executor, str):
        pool = make_executor(executor, workers)
        try:
            return run_sweep(train, list(configs), executor=pool, use_cache=use_cache, desc=desc)
        finally:
            if pool is not None:
                pool.shutdown()
    return run_sweep(train, list(configs), executor=executor, use_cache=use_cache, desc=desc)


# ----------------------------------------------------------------------------- assembly


def top_singular_ratio(eigs: np.ndarray) -> float:
    """``s_1 / s_2`` from the eigenvalues of ``WᵀW`` (ascending): ``sqrt(l_max / l_second)``."""
    e = np.asarray(eigs, dtype=np.float64)
    if e.ndim != 1 or e.size < 2 or not np.all(np.isfinite(e)) or e[-2] <= 0:
        raise ValueError("eigs must be a 1-D array of >= 2 finite eigenvalues with a positive second largest")
    return float(np.sqrt(e[-1] / e[-2]))


def spike_over_bulk(eigs: np.ndarray, q: float = 0.9) -> float:
    """``lambda_max / Q_q``: the top eigenvalue of ``WᵀW`` over the ``q``-quantile of all eigenvalues.

    The bulk reference of the "outlier an order of magnitude from the bulk" reading of a log10
    eigenvalue histogram: a value of 10 is one decade between the spike and the bulk's upper part.
    """
    e = np.asarray(eigs, dtype=np.float64)
    if e.ndim != 1 or e.size < 2 or not np.all(np.isfinite(e)):
        raise ValueError("eigs must be a 1-D array of >= 2 finite eigenvalues")
    if not 0 < q < 1:
        raise ValueError(f"q must be in (0, 1), got {q!r}")
    ref = float(np.quantile(e, q))
    if ref <= 0:
        raise ValueError("the q-quantile of eigs must be positive")
    return float(e.max() / ref)


def final_metrics(traj: Trajectory) -> dict[str, float]:
    """The :data:`METRICS` of the last step of ``traj``; all NaN if the run diverged."""
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
class GridMetrics:
    """Last-step numbers of a Fig. 7 sweep as ``(optimizer, eta, seed)`` arrays.

    Attributes
    ----------
    optimizers : tuple of str
    etas : ndarray, ascending
    seeds : ndarray
    values : dict
        :data:`METRICS` name -> ``(len(optimizers), len(etas), len(seeds))`` float64
        array, NaN where the run diverged.
    diverged : ndarray of bool, same shape
    """

    optimizers: tuple[str, ...]
    etas: np.ndarray
    seeds: np.ndarray
    values: dict[str, np.ndarray]
    diverged: np.ndarray

    def get(self, metric: str, optimizer: str) -> np.ndarray:
        """``(len(etas), len(seeds))`` array of ``metric`` for ``optimizer``."""
        if metric not in self.values:
            raise ValueError(f"metric must be one of {sorted(self.values)}, got {metric!r}")
        if optimizer not in self.optimizers:
            raise ValueError(f"optimizer must be one of {self.optimizers}, got {optimizer!r}")
        return self.values[metric][self.optimizers.index(optimizer)]

    def mean(self, metric: str, optimizer: str) -> np.ndarray:
        """Mean over seeds (ignoring diverged runs), one value per eta."""
        v = self.get(metric, optimizer)
        out = np.full(v.shape[0], np.nan)
        ok = np.isfinite(v).any(axis=1)
        out[ok] = np.nanmean(v[ok], axis=1)
        return out


def assemble_grid(trajectories: Sequence[Trajectory]) -> GridMetrics:
    """Arrange finished Fig. 7 runs by (optimizer, eta, seed).

    Every (optimizer, eta, seed) combination present must appear exactly once.
    """
    if len(trajectories) == 0:
        raise ValueError("trajectories must be non-empty")
    opts = tuple(o for o in OPTIMIZERS if any(t.config.optimizer == o for t in trajectories))
    etas = np.array(sorted({t.config.eta for t in trajectories}))
    seeds = np.array(sorted({t.config.seed for t in trajectories}))
    shape = (len(opts), etas.size, seeds.size)
    values = {m: np.full(shape, np.nan) for m in METRICS}
    diverged = np.zeros(shape, dtype=bool)
    filled = np.zeros(shape, dtype=bool)
    for t in trajectories:
        idx = (opts.index(t.config.optimizer), int(np.searchsorted(etas, t.config.eta)),
               int(np.searchsorted(seeds, t.config.seed)))
        if filled[idx]:
            raise ValueError(f"duplicate run for optimizer={t.config.optimizer}, eta={t.config.eta}, seed={t.config.seed}")
        filled[idx] = True
        diverged[idx] = t.diverged_at is not None
        for m, v in final_metrics(t).items():
            values[m][idx] = v
    if not filled.all():
        raise ValueError("trajectories must cover every (optimizer, eta, seed) combination they mention")
    return GridMetrics(optimizers=opts, etas=etas, seeds=seeds, values=values, diverged=diverged)


def format_mean_table(grid: GridMetrics, *, names: Mapping[str, str] | None = None,
                      readouts: Sequence[str] = READOUT_SCALES) -> str:
    """The seed means of every optimizer and eta as an aligned text table (3 significant digits):
    train loss, test loss and KTA under each readout convention of ``readouts``, then the alphas."""
    names = names or {"gd": "GD", "adam": "FB-Adam"}
    cols = [(f"{m}@{r}", f"{h}/{r}") for r in readouts for m, h in
            (("train_loss", "train"), ("test_loss", "test"), ("kta", "KTA"))]
    cols += [("alpha_hill", "Hill"), ("alpha_ks", "KS"), ("alpha_weighted", "alpha_w")]
    width = max(9, max(len(h) for _, h in cols) + 1)
    lines = [f"{'optimizer':<9} {'eta':>7} " + " ".join(f"{h:>{width}}" for _, h in cols) + f" {'diverged':>8}"]
    for opt in grid.optimizers:
        means = {m: grid.mean(m, opt) for m, _ in cols}
        div = grid.diverged[grid.optimizers.index(opt)].sum(axis=1)
        for i, eta in enumerate(grid.etas):
            row = " ".join(f"{means[m][i]:>{width}.3g}" for m, _ in cols)
            lines.append(f"{names.get(opt, opt):<9} {eta:>7g} {row} {int(div[i]):>8d}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- correlations


@dataclass(frozen=True)
class RankCorrelation:
    """A Spearman rank correlation with a bootstrap confidence interval.

    Attributes
    ----------
    rho : float
        Spearman's rho over all finite pairs.
    low, high : float
        Percentile bootstrap interval at ``level``, resampling seeds (NaN if
        fewer than two seeds).
    level : float
    n_points : int
        Finite pairs used for ``rho``.
    n_seeds : int
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


def spearman_bootstrap(
    x: np.ndarray,
    y: np.ndarray,
    *,
    method: str = "within",
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> RankCorrelation:
    """Spearman's rho between ``x`` and ``y`` with a seed-resampling bootstrap interval.

    Runs with the same seed share their data and initial weights, so seeds, not
    single points, are the independent units, and the bootstrap resamples whole
    seeds (a cluster bootstrap).  Two statistics:

    - ``"within"`` (default): Spearman's rho across the cells (e.g. learning
      rates) of each seed, averaged over seeds.  It measures how the two
      quantities co-vary as the cell changes, free of the differences between
      seeds (different data sets give different test losses at every eta).
    - ``"pooled"``: one rho over all points of all seeds (ties from repeated
      seeds get average ranks); between-seed differences enter it.

    Non-finite pairs (diverged runs) are dropped; a seed or replicate whose rho
    is undefined (fewer than 3 pairs, or a constant variable) is left out.

    Parameters
    ----------
    x, y
        Arrays of the same shape ``(..., n_seeds)``; the last axis indexes seeds,
        the others are flattened into cells.
    method
        ``"within"`` or ``"pooled"``.
    n_boot
        Bootstrap replicates (``>= 1``).
    level
        Confidence level in ``(0, 1)``.
    seed
        Seed of the resampling generator.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim < 1 or x.shape[-1] < 1:
        raise ValueError(f"x and y must have the same shape (..., n_seeds), got {x.shape} and {y.shape}")
    if method not in ("within", "pooled"):
        raise ValueError(f"method must be 'within' or 'pooled', got {method!r}")
    _check_positive_int("n_boot", n_boot)
    if not (0 < level < 1):
        raise ValueError(f"level must be in (0, 1), got {level}")
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


def correlation_table(
    grid: GridMetrics,
    *,
    metrics: Sequence[str] = ("alpha_hill", "alpha_ks", "alpha_weighted", "kta"),
    target: str = "test_loss",
    eta_min: float = 0.0,
    eta_max: float = np.inf,
    method: str = "within",
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> dict[tuple[str, str], RankCorrelation]:
    """Spearman's rho of each metric against ``target`` across the eta grid, per optimizer.

    Only learning rates in ``[eta_min, eta_max]`` enter; ``method`` as in
    :func:`spearman_bootstrap`.  Returns ``{(optimizer, metric): RankCorrelation}``.
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


def format_correlations(table: Mapping[tuple[str, str], RankCorrelation], *,
                        names: Mapping[str, str] | None = None) -> str:
    """A :func:`correlation_table` as aligned text: rho and its bootstrap interval per optimizer and metric."""
    names = names or {"gd": "GD", "adam": "FB-Adam"}
    lines = [f"{'optimizer':<9} {'metric':<15} {'rho':>6}  {'CI':<16} {'points':>6}"]
    for (opt, metric), r in table.items():
        lines.append(f"{names.get(opt, opt):<9} {metric:<15} {r.rho:>+6.2f}  [{r.low:+.2f}, {r.high:+.2f}]  {r.n_points:>6d}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- ridge panel


@dataclass(frozen=True)
class ReadoutConfig:
    """Fig. 8(b): the trained run ``base`` read out with each ridge constant of ``lams``."""

    base: TwoLayerConfig
    lams: tuple[float, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.lams, tuple) or len(self.lams) == 0:
            raise ValueError(f"lams must be a non-empty tuple of numbers > 0, got {self.lams!r}")
        for lam in self.lams:
            if not (np.isfinite(lam) and lam > 0):
                raise ValueError(f"lams must hold finite numbers > 0, got {lam!r}")
        missing = [t for t in range(self.base.steps + 1) if t not in self.base.keep_weights]
        if missing:
            raise ValueError(f"base.keep_weights must contain every step 0..{self.base.steps}; missing {missing}")


def ridge_losses(W: torch.Tensor, data, lams: Sequence[float],
                 readout_scale: str = "d") -> dict[float, tuple[float, float]]:
    """Probe (train) and test MSE of the ridge readout of ``W`` for several ridge constants.

    The same readout as :func:`htlib.two_layer.ridge_readout`,
    ``a = (ZᵀZ + (lam/h) n I)^-1 Zᵀy`` on the probe set, in float64, but the
    ``h x h`` Gram ``ZᵀZ`` is formed once and only the Cholesky solve is
    repeated per ``lam``; features :func:`htlib.two_layer.readout_features` of convention
    ``readout_scale``.  Returns ``{lam: (train_loss, test_loss)}``.
    """
    Zp = readout_features(W, data.X_probe, readout_scale).to(torch.float64)
    Zt = readout_features(W, data.X_test, readout_scale).to(torch.float64)
    yp = data.y_probe.to(torch.float64)
    yt = data.y_test.to(torch.float64)
    n, h = Zp.shape
    gram = Zp.T @ Zp
    rhs = (Zp.T @ yp).unsqueeze(1)
    eye = torch.eye(h, dtype=torch.float64)
    out = {}
    for lam in lams:
        if not (np.isfinite(lam) and lam > 0):
            raise ValueError(f"lams must hold finite numbers > 0, got {lam!r}")
        a = torch.cholesky_solve(rhs, torch.linalg.cholesky(gram + (lam * n / h) * eye)).squeeze(1)
        out[float(lam)] = (torch.mean((Zp @ a - yp) ** 2).item(), torch.mean((Zt @ a - yt) ** 2).item())
    return out


def readout_curve(config: ReadoutConfig) -> dict[float, dict[str, np.ndarray]]:
    """Train and test loss per step of ``config.base`` for every ridge constant of ``config.lams``.

    The first-layer weights ``W_t`` come from the (cached) base run: nothing is
    retrained, only the ridge readout ``a`` is refitted.  Module-level, so
    :func:`htlib.sweep.run_sweep` can cache it.  Returns
    ``{lam: {"steps", "train_loss", "test_loss", "train_loss@d", ..., "test_loss@sqrt_d"}}``:
    the plain names under ``base.readout_scale``, the suffixed ones under each convention.
    """
    traj = cache.cached_call(train, config.base)
    if traj.diverged_at is not None:
        raise ValueError(f"the base run diverged at step {traj.diverged_at}")
    data = make_data(config.base)
    dtype = data.X_probe.dtype
    steps = np.arange(config.base.steps + 1)
    rows = {s: [ridge_losses(torch.as_tensor(traj.weights[int(t)], dtype=dtype), data, config.lams, s)
                for t in steps] for s in READOUT_SCALES}
    out = {}
    for lam in (float(v) for v in config.lams):
        curve = {"steps": steps}
        for s in READOUT_SCALES:
            curve[f"train_loss@{s}"] = np.array([r[lam][0] for r in rows[s]])
            curve[f"test_loss@{s}"] = np.array([r[lam][1] for r in rows[s]])
        curve["train_loss"] = curve[f"train_loss@{config.base.readout_scale}"]
        curve["test_loss"] = curve[f"test_loss@{config.base.readout_scale}"]
        out[lam] = curve
    return out


def readout_curves(
    base: TwoLayerConfig,
    lams: Iterable[float],
    *,
    use_cache: bool = True,
) -> dict[float, dict[str, np.ndarray]]:
    """:func:`readout_curve` through the cached sweep runner, in this process.

    Here the base run is found in the cache under the same source hash as the
    sweep that trained it (a worker process could hash a newer source).
    """
    config = ReadoutConfig(base, tuple(float(v) for v in lams))
    return run_sweep(readout_curve, [config], executor=None, use_cache=use_cache, desc="readouts")[0]


def update_overlap_outlier(traj: Trajectory, t: int | None = None) -> tuple[float, float]:
    """Largest diagonal entries of ``O(U_W, U_M)`` and ``O(V_W, V_M)`` for ``W = W_{t+1}``, ``M = W_{t+1} - W_t``.

    ``t`` defaults to the last update (``steps - 1``); ``traj`` must keep ``W_t`` and ``W_{t+1}``.
    """
    t = traj.config.steps - 1 if t is None else t
    if t not in traj.weights or t + 1 not in traj.weights:
        raise ValueError(f"the trajectory must keep W_{t} and W_{t + 1}; it keeps {sorted(traj.weights)}")
    O_u, O_v = dynamics.update_overlaps(traj.weights[t + 1], traj.update(t))
    return float(np.diag(O_u).max()), float(np.diag(O_v).max())


# ----------------------------------------------------------------------------- claims
#
# Each check fixes its criterion in its docstring and returns a :class:`htlib.claims.Claim`.
# The loss-dependent ones take ``readout``: the metric names become ``"<loss>@<readout>"``.

_READOUT_NAMES = {"d": "figures' readout /d", "sqrt_d": "written readout /sqrt(d)"}


def _g(x: float) -> str:
    return f"{x:.3g}"


def _ci(r: RankCorrelation) -> str:
    return f"{r.rho:+.2f} [{r.low:+.2f}, {r.high:+.2f}]"


def _check_readout(readout: str) -> str:
    if readout not in READOUT_SCALES:
        raise ValueError(f"readout must be one of {READOUT_SCALES}, got {readout!r}")
    return readout


def _sign_verdict(results: Sequence[tuple[RankCorrelation, int]]) -> str:
    """agrees: every rho has its expected sign and an interval excluding 0;
    partly: some signs right (or all right but some interval contains 0); disagrees: no sign right."""
    right = [np.sign(r.rho) == s for r, s in results]
    if all(right) and all(r.excludes_zero for r, _ in results):
        return "agrees"
    return "partly" if any(right) else "disagrees"


def _sign_reason(results: Sequence[tuple[RankCorrelation, int]], names: Sequence[str]) -> str:
    wrong = [n for (r, s), n in zip(results, names) if np.sign(r.rho) != s]
    wide = [n for (r, s), n in zip(results, names) if np.sign(r.rho) == s and not r.excludes_zero]
    parts = []
    if wrong:
        parts.append("wrong sign: " + ", ".join(wrong))
    if wide:
        parts.append("right sign but interval contains 0: " + ", ".join(wide))
    return "; ".join(parts)


def check_gd_large_eta(grid: GridMetrics, *, readout: str = "d", eta_min: float = 1000.0, n_boot: int = 2000,
                       level: float = 0.95, seed: int = 0, where: str = "§5.3, Fig. 7",
                       section: str = "") -> Claim:
    """GD at ``eta >= eta_min``: lower losses go with higher KTA and lower alphas.

    Criterion: within-seed Spearman rho(loss, KTA) < 0 and rho(loss, alpha) > 0 (Hill and KS) for
    the train and the test loss over these etas, every interval excluding 0.
    """
    r_ = _check_readout(readout)
    keep = grid.etas >= eta_min
    pairs = [(f"kta@{r_}", "KTA", -1), ("alpha_hill", "Hill", +1), ("alpha_ks", "KS", +1)]
    parts, results, names = [], [], []
    for loss, short in (("train_loss", "train"), ("test_loss", "test")):
        y = grid.get(f"{loss}@{r_}", "gd")[keep]
        for m, mshort, sign in pairs:
            r = spearman_bootstrap(grid.get(m, "gd")[keep], y, n_boot=n_boot, level=level, seed=seed)
            results.append((r, sign))
            names.append(f"({short}, {mshort})")
            parts.append(f"rho({short},{mshort})={_ci(r)}")
    verdict = _sign_verdict(results)
    return Claim(
        paper="003", where=where, section=section,
        claim=f"GD, eta >= {eta_min:g}: the reduction in losses goes with a higher KTA and lower PL alphas "
              f"[{_READOUT_NAMES[r_]}]",
        criterion="within-seed Spearman rho(loss, KTA) < 0 and rho(loss, alpha) > 0 for train and test loss, "
                  "seed-bootstrap CI excluding 0",
        measured="; ".join(parts), verdict=verdict,
        reason="" if verdict == "agrees" else _sign_reason(results, names),
    )


def check_adam_benign_band(grid: GridMetrics, *, readout: str = "d", eta_max: float = 1.0, n_boot: int = 2000,
                           level: float = 0.95, seed: int = 0, where: str = "§5.3, Fig. 7",
                           section: str = "") -> Claim:
    """FB-Adam at ``eta <= eta_max``: a lower PL_Alpha_Hill goes with a lower test loss.

    Criterion: within-seed Spearman rho(PL_Alpha_Hill, test loss) > 0 over these etas, interval excluding 0.
    """
    r_ = _check_readout(readout)
    keep = grid.etas <= eta_max
    r = spearman_bootstrap(grid.get("alpha_hill", "adam")[keep], grid.get(f"test_loss@{r_}", "adam")[keep],
                           n_boot=n_boot, level=level, seed=seed)
    hill = grid.mean("alpha_hill", "adam")[keep]
    test = grid.mean(f"test_loss@{r_}", "adam")[keep]
    means = ", ".join(f"eta={e:g}: Hill {_g(a)}, test {_g(b)}" for e, a, b in zip(grid.etas[keep], hill, test))
    verdict = _sign_verdict([(r, +1)])
    return Claim(
        paper="003", where=where, section=section,
        claim=f"FB-Adam, eta <= {eta_max:g} (benign band): a lower PL_Alpha_Hill goes with a better test loss "
              f"[{_READOUT_NAMES[r_]}]",
        criterion="within-seed Spearman rho(PL_Alpha_Hill, test loss) > 0 over these etas, CI excluding 0",
        measured=f"rho={_ci(r)}; means {means}", verdict=verdict,
        reason="" if verdict == "agrees" else _sign_reason([(r, +1)], ["(Hill, test)"]),
    )


def check_hill_flat_ks_decreasing(grid: GridMetrics, *, eta_min: float = 1.0, eta_max: float = 100.0,
                                  flat_tol: float = 0.05, where: str = "§5.3, Fig. 7",
                                  section: str = "") -> Claim:
    """FB-Adam, ``eta_min <= eta <= eta_max``: PL_Alpha_Hill flat, PL_Alpha_KS decreasing.

    Flat: the range of the seed means is below ``flat_tol`` times their mean.
    Decreasing: the seed means of PL_Alpha_KS fall strictly from each eta to the next.
    (No readout enters: the alphas are spectra of W.)
    """
    keep = (grid.etas >= eta_min) & (grid.etas <= eta_max)
    if keep.sum() < 2:
        raise ValueError("the grid needs at least two learning rates in the range")
    hill = grid.mean("alpha_hill", "adam")[keep]
    ks = grid.mean("alpha_ks", "adam")[keep]
    rel = float(np.ptp(hill) / np.mean(hill))
    flat = rel < flat_tol
    decreasing = bool(np.all(np.diff(ks) < 0))
    verdict = "agrees" if flat and decreasing else ("partly" if flat or decreasing else "disagrees")
    reason = "" if verdict == "agrees" else ("Hill not flat" if not flat else "") + (
        ("; " if not flat and not decreasing else "") + ("KS not strictly decreasing" if not decreasing else ""))
    return Claim(
        paper="003", where=where, section=section,
        claim=f"FB-Adam, {eta_min:g} <= eta <= {eta_max:g}: PL_Alpha_Hill stays flat while PL_Alpha_KS keeps decreasing",
        criterion=f"range of mean Hill alpha < {flat_tol:g} x its mean; mean KS alpha strictly decreasing in eta",
        measured=(f"Hill means {', '.join(_g(v) for v in hill)} (range/mean {rel:.3f}); "
                  f"KS means {', '.join(_g(v) for v in ks)}"),
        verdict=verdict, reason=reason,
    )


def check_sample_size(traj_small: Trajectory, traj_large: Trajectory, *, hill_small: float = 1.8,
                      hill_large: float = 1.9, tol: float = 0.1, separated: float = 5.0,
                      absorbed: float = 1.5, where: str = "§5.3, Fig. 8(a)", section: str = "") -> Claim:
    """PL_Alpha_Hill of ``W_10`` about 1.8 at n=2000 and 1.9 at n=8000; the spike absorbed at n=8000,
    almost an order of magnitude from the bulk at n=2000.

    Criterion: both Hill alphas within ``tol`` of the paper's and the small-n one lower; on the
    eigenvalue scale the top eigenvalue of ``WᵀW`` is at least ``separated`` times the 90th
    percentile of the eigenvalues at the small n (:func:`spike_over_bulk`; 10 would be one full
    decade on the paper's log10 histogram); at the large n the top singular value is within
    ``absorbed`` times the second (``s1/s2 < absorbed``: no isolated outlier).
    """
    a = final_metrics(traj_small)
    b = final_metrics(traj_large)
    n_s, n_l = traj_small.config.n, traj_large.config.n
    hill_ok = (abs(a["alpha_hill"] - hill_small) <= tol and abs(b["alpha_hill"] - hill_large) <= tol
               and a["alpha_hill"] < b["alpha_hill"])
    spike_ok = a["spike_q90"] >= separated and b["sv_ratio"] < absorbed
    verdict = "agrees" if hill_ok and spike_ok else ("partly" if hill_ok or spike_ok else "disagrees")
    reason = "" if verdict == "agrees" else ("Hill alphas off" if not hill_ok else "spike part fails")
    return Claim(
        paper="003", where=where, section=section,
        claim=(f"PL_Alpha_Hill ~{hill_small:g} at n={n_s} vs ~{hill_large:g} at n={n_l}; at n={n_l} the spike "
               f"is absorbed by the bulk, at n={n_s} the outlier is almost an order of magnitude from the bulk"),
        criterion=(f"|Hill - paper| <= {tol:g} and Hill(n={n_s}) < Hill(n={n_l}); lambda_max / 90th percentile "
                   f"of the eigenvalues >= {separated:g} at n={n_s}; s1/s2 < {absorbed:g} at n={n_l}"),
        measured=(f"Hill {_g(a['alpha_hill'])} (n={n_s}) vs {_g(b['alpha_hill'])} (n={n_l}); "
                  f"lambda_max/q90 {_g(a['spike_q90'])} vs {_g(b['spike_q90'])}; "
                  f"s1/s2 {_g(a['sv_ratio'])} vs {_g(b['sv_ratio'])}"),
        verdict=verdict, reason=reason,
    )


def check_ridge(curves: Mapping[float, Mapping[str, np.ndarray]], *, readout: str = "d", balanced: float = 1e-2,
                where: str = "§5.3, Fig. 8(b)", section: str = "") -> Claim:
    """lambda = 1e-2 balances test loss and generalization gap (Fig. 8(b), last step).

    Criterion (the paper's sentence): every smaller lambda reaches a lower train and test loss but
    a larger gap ``test - train`` than ``balanced``.
    """
    r_ = _check_readout(readout)
    if balanced not in curves:
        raise ValueError(f"curves must contain lambda={balanced:g}")
    last = {lam: (float(c[f"train_loss@{r_}"][-1]), float(c[f"test_loss@{r_}"][-1])) for lam, c in curves.items()}
    tr0, te0 = last[balanced]
    smaller = [lam for lam in curves if lam < balanced]
    if not smaller:
        raise ValueError("curves must contain a lambda smaller than the balanced one")
    lower = [last[l][0] < tr0 and last[l][1] < te0 for l in smaller]
    wider = [last[l][1] - last[l][0] > te0 - tr0 for l in smaller]
    verdict = "agrees" if all(lower) and all(wider) else ("partly" if any(lower) or any(wider) else "disagrees")
    reason = "" if verdict == "agrees" else (
        f"{sum(lower)} of {len(smaller)} smaller lambdas have both losses lower, {sum(wider)} a larger gap")
    measured = "; ".join(f"lambda={lam:g}: train {_g(tr)}, test {_g(te)}, gap {_g(te - tr)}"
                         for lam, (tr, te) in sorted(last.items(), reverse=True))
    return Claim(
        paper="003", where=where, section=section,
        claim=f"smaller lambdas give lower losses but larger gaps; lambda={balanced:g} balances them "
              f"[{_READOUT_NAMES[r_]}]",
        criterion=f"at the last step each lambda < {balanced:g}: lower train and test loss and a larger test-train gap",
        measured=measured, verdict=verdict, reason=reason,
    )


def check_label_noise(by_rho: Mapping[float, Trajectory], *, readout: str = "d", rho_low: float = 0.3,
                      rho_high: float = 0.7, ratio: float = 0.5, ratio_tol: float = 0.15,
                      where: str = "§5.3, Fig. 8(c)", section: str = "") -> Claim:
    """Losses increase with the label noise; the overlap outliers at ``rho_low`` are about
    ``ratio`` times those at ``rho_high``.

    Outlier = the largest diagonal entry of ``O(U_{W_10}, U_{M_9})`` (and of the ``V`` version).
    Criterion: train and test loss at the last step strictly increasing in rho; both
    outlier ratios within ``ratio +- ratio_tol``.
    """
    r_ = _check_readout(readout)
    rhos = sorted(by_rho)
    if rho_low not in by_rho or rho_high not in by_rho:
        raise ValueError(f"by_rho must contain rho_e={rho_low:g} and rho_e={rho_high:g}")
    fm = {r: final_metrics(by_rho[r]) for r in rhos}
    tr = np.array([fm[r][f"train_loss@{r_}"] for r in rhos])
    te = np.array([fm[r][f"test_loss@{r_}"] for r in rhos])
    increasing = bool(np.all(np.diff(tr) > 0) and np.all(np.diff(te) > 0))
    u_lo, v_lo = update_overlap_outlier(by_rho[rho_low])
    u_hi, v_hi = update_overlap_outlier(by_rho[rho_high])
    ru, rv = u_lo / u_hi, v_lo / v_hi
    near = abs(ru - ratio) <= ratio_tol and abs(rv - ratio) <= ratio_tol
    verdict = "agrees" if increasing and near else ("partly" if increasing or near else "disagrees")
    reason = "" if verdict == "agrees" else ("losses not increasing in rho" if not increasing
                                             else "overlap ratio outside the band")
    losses = ", ".join(f"rho={r:g}: {_g(a)}/{_g(b)}" for r, a, b in zip(rhos, tr, te))
    return Claim(
        paper="003", where=where, section=section,
        claim=f"larger label noise gives larger losses; overlap outliers at rho={rho_low:g} are ~{ratio:g}x "
              f"those at rho={rho_high:g} [{_READOUT_NAMES[r_]}]",
        criterion=f"train and test loss strictly increasing in rho; max diag overlap ratio within {ratio:g} +- {ratio_tol:g}",
        measured=(f"train/test {losses}; max diag O_U {_g(u_lo)} vs {_g(u_hi)} (ratio {_g(ru)}), "
                  f"O_V {_g(v_lo)} vs {_g(v_hi)} (ratio {_g(rv)})"),
        verdict=verdict, reason=reason,
    )

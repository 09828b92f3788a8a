"""The generalization chapter (paper 003, §5.3): Figs. 7 and 8, their claims and figures.

The experiments layer of :mod:`htlib.generalization` (rank correlations, spectral numbers) and
:func:`htlib.two_layer.train`:

- the Fig. 7 sweep (learning-rate grid x optimizer x seed, metrics of ``W_10``) and the Fig. 8
  sweeps (sample size, ridge constant, label noise, StepLR decay factor), run through the
  result cache (:func:`htlib.sweep.run_sweep`);
- the ridge-constant panel, recomputed from stored ``W_t`` (no retraining);
- numeric checks of the paper's six claims, each with an explicit criterion, returned as
  :class:`htlib.claims.Claim` records; the loss-dependent checks take the readout convention
  (``"d"``, the published figures', or ``"sqrt_d"``, the paper's formula);
- the chapter's tables (DataFrames) and figures (on :mod:`htlib.plotting`).
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from htlib import cache, dynamics, plotting
from htlib._checks import check_choice, check_int
from htlib.claims import Claim
from htlib.generalization import RankCorrelation, final_metrics, spearman_bootstrap
from htlib.sweep import process_executor, run_sweep
from htlib.two_layer import (READOUT_SCALES, RunGrid, Trajectory, TwoLayerConfig, make_data, recording_covers,
                             restrict_recording, ridge_losses, run_grid, train)

ETA_GRID: tuple[float, ...] = (0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0, 2000.0, 3000.0)
"""The learning rates of Fig. 7."""

OPTIMIZERS: tuple[str, ...] = ("gd", "adam")
_NAMES = {"gd": "GD", "adam": "FB-Adam"}


SETTING: dict = dict(n=8000, d=1000, h=1500, n_test=200, rho_e=0.3, lam=0.01, steps=10, readout_scale="d",
                     dtype="float32", device="cpu")
"""The §5.3 setting of Figs. 7 and 8 (fields of :class:`htlib.two_layer.TwoLayerConfig`)."""

_FIELDS = tuple(f.name for f in dataclasses.fields(TwoLayerConfig))


def _setting(setting: Mapping, fixed: Sequence[str]) -> dict:
    """:data:`SETTING` updated by ``setting``: TwoLayerConfig fields other than the ``fixed`` ones the sweep sets."""
    bad = [k for k in setting if k not in _FIELDS or k in fixed]
    if bad:
        raise ValueError(f"unknown or fixed setting {bad}; allowed: {[f for f in _FIELDS if f not in fixed]}")
    out = {**SETTING, **setting}
    check_int("steps", out["steps"], 1)
    return {**out, "rho_e": float(out["rho_e"]), "lam": float(out["lam"])}


def fig7_configs(*, etas: Sequence[float] = ETA_GRID, optimizers: Sequence[str] = OPTIMIZERS, seeds: int = 5,
                 **setting) -> list[TwoLayerConfig]:
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
    **setting
        :class:`htlib.two_layer.TwoLayerConfig` fields that change :data:`SETTING` (``n``, ``weight_norm``, ...;
        validated by the config).

    Returns
    -------
    list of TwoLayerConfig
        ``len(optimizers) * len(etas) * seeds`` configs; index
        ``(i_opt * len(etas) + i_eta) * seeds + seed``.
    """
    check_int("seeds", seeds, 1)
    s = _setting(setting, ("optimizer", "eta", "seed", "record_every", "keep_weights", "record_initial"))
    if len(etas) == 0 or any(not (float(e) > 0) for e in etas):
        raise ValueError(f"etas must be a non-empty list of numbers > 0, got {list(etas)!r}")
    bad = [o for o in optimizers if o not in OPTIMIZERS]
    if len(optimizers) == 0 or bad:
        raise ValueError(f"optimizers must be a non-empty subset of {OPTIMIZERS}, got {list(optimizers)!r}")
    return [TwoLayerConfig(**s, optimizer=opt, eta=float(eta), seed=seed, record_every=s["steps"], keep_weights=(),
                           record_initial=False)
            for opt in optimizers for eta in etas for seed in range(seeds)]


@dataclass(frozen=True)
class Fig8Configs:
    """The runs of Fig. 8 (FB-Adam, fixed eta), by panel.

    ``base`` (``n = 8000``, ``rho_e = 0.3``, constant learning rate) keeps every
    ``W_t``: panel (b) recomputes its readout for each ridge constant and the
    label-noise check needs ``W_9, W_10``.  The label-noise runs keep
    ``W_9, W_10``; the other runs keep nothing.  A panel config with the base's
    training spec is not trained again: :func:`run_trainings` reads it off the
    base run, whose recording covers it.
    """

    base: TwoLayerConfig
    by_n: dict[int, TwoLayerConfig]
    by_rho: dict[float, TwoLayerConfig]
    by_steplr_gamma: dict[float, TwoLayerConfig]

    def unique(self) -> list[TwoLayerConfig]:
        """Every distinct config once, base first."""
        out: list[TwoLayerConfig] = []
        for c in (self.base, *self.by_n.values(), *self.by_rho.values(), *self.by_steplr_gamma.values()):
            if c not in out:
                out.append(c)
        return out


def fig8_configs(*, ns: Sequence[int] = (500, 2000, 4000, 8000), rhos: Sequence[float] = (0.1, 0.3, 0.5, 0.7),
                 steplr_gammas: Sequence[float] = (0.2, 0.4, 0.6, 0.8), eta: float = 1.0, seed: int = 0,
                 **setting) -> Fig8Configs:
    """The runs of Fig. 8: FB-Adam at learning rate ``eta``, recorded at every step.

    Parameters
    ----------
    ns, rhos, steplr_gammas
        Panel (a) sample sizes, panel (c) label-noise levels, panel (d) StepLR decay factors (the
        learning rate is multiplied by one after every step).
    eta, seed
        FB-Adam's learning rate and the seed of every run.
    **setting
        :class:`htlib.two_layer.TwoLayerConfig` fields that change :data:`SETTING`; its ``n`` and
        ``rho_e`` are the base the other panels vary around (panel (b) varies only the readout).
    """
    s = _setting(setting, ("optimizer", "eta", "seed", "steplr_gamma", "record_every", "keep_weights"))
    steps = s["steps"]
    base = TwoLayerConfig(**s, optimizer="adam", eta=float(eta), seed=seed, record_every=1,
                          keep_weights=tuple(range(steps + 1)))
    plain = dataclasses.replace(base, keep_weights=())
    last_two = (steps - 1, steps)
    by_n = {int(v): dataclasses.replace(plain, n=int(v)) for v in ns}
    by_rho = {float(v): dataclasses.replace(plain, rho_e=float(v), keep_weights=last_two) for v in rhos}
    by_steplr_gamma = {float(v): dataclasses.replace(plain, steplr_gamma=float(v)) for v in steplr_gammas}
    return Fig8Configs(base=base, by_n=by_n, by_rho=by_rho, by_steplr_gamma=by_steplr_gamma)


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
    check_choice("kind", kind, ("serial", "process"))
    check_int("workers", workers, 1)
    return None if kind == "serial" else process_executor(workers, threads_per_worker=1)


def run_trainings(
    configs: Sequence[TwoLayerConfig],
    *,
    executor: str | cf.Executor | None = "serial",
    workers: int = 2,
    use_cache: bool = True,
    desc: str = "runs",
) -> list[Trajectory]:
    """``[train(c) for c in configs]`` through :func:`htlib.sweep.run_sweep` (cached, resumable),
    training each training spec once.

    A config whose recording another config of the batch covers
    (:func:`htlib.two_layer.recording_covers`: same training spec, a superset of the recorded steps,
    kept weights and ESD) is read off that run (:func:`htlib.two_layer.restrict_recording`)
    instead of being trained again; where that run diverged it is trained itself.
    ``executor`` is ``"serial"``, ``"process"`` (see :func:`make_executor`), or any
    :class:`concurrent.futures.Executor` (e.g. ``distributed.Client().get_executor()``),
    which the caller then owns.  A process pool made here is shut down here.
    """
    configs = list(configs)
    hosts: list[TwoLayerConfig] = []
    host_of: dict[TwoLayerConfig, TwoLayerConfig] = {}
    for c in sorted(dict.fromkeys(configs), key=_recording_size, reverse=True):
        host = next((h for h in hosts if recording_covers(h, c)), None)
        if host is None:
            hosts.append(c)
            host = c
        host_of[c] = host
    pool = make_executor(executor, workers) if isinstance(executor, str) else executor
    try:
        done = dict(zip(hosts, run_sweep(train, hosts, executor=pool, use_cache=use_cache, desc=desc)))
        redo = [c for c, h in host_of.items() if h != c and done[h].diverged_at is not None]
        if redo:
            done.update(zip(redo, run_sweep(train, redo, executor=pool, use_cache=use_cache, desc=desc)))
    finally:
        if isinstance(executor, str) and pool is not None:
            pool.shutdown()
    return [done[c] if c in done else restrict_recording(done[host_of[c]], c) for c in configs]


def _recording_size(c: TwoLayerConfig) -> tuple[int, int, bool]:
    return len(c.recorded_steps()), len(c.keep_weights), c.record_esd




def fig7_grid(trajectories: Sequence[Trajectory]) -> RunGrid:
    """The finished Fig. 7 runs as a :class:`htlib.two_layer.RunGrid` of
    :func:`htlib.generalization.final_metrics` (ESD numbers included)."""
    return run_grid(trajectories, final_metrics)


def mean_table(grid: RunGrid, *, readouts: Sequence[str] = READOUT_SCALES) -> pd.DataFrame:
    """The seed means of every optimizer and eta (3 significant digits): train loss, test loss
    and KTA under each readout convention of ``readouts``, then the alphas and the diverged count."""
    cols = [(f"{m}@{r}", f"{h}/{r}") for r in readouts for m, h in
            (("train_loss", "train"), ("test_loss", "test"), ("kta", "KTA"))]
    cols += [("alpha_hill", "Hill"), ("alpha_ks", "KS"), ("alpha_weighted", "alpha_w")]
    rows = []
    for opt in grid.optimizers:
        means = {m: grid.mean(m, opt) for m, _ in cols}
        div = grid.diverged[grid.optimizers.index(opt)].sum(axis=1)
        for i, eta in enumerate(grid.etas):
            rows.append({"optimizer": _NAMES.get(opt, opt), "eta": f"{eta:g}",
                         **{h: f"{means[m][i]:.3g}" for m, h in cols}, "diverged": int(div[i])})
    return pd.DataFrame(rows)


def correlations_frame(tables: Mapping[str, Mapping[tuple[str, str], RankCorrelation]]) -> pd.DataFrame:
    """Several :func:`htlib.generalization.correlation_table` results as one DataFrame, keyed by
    ``tables``' labels (e.g. the readout convention): rho and its bootstrap interval per optimizer
    and metric."""
    return pd.DataFrame([{"readout": label, "optimizer": _NAMES.get(opt, opt), "metric": metric,
                          "rho": f"{r.rho:+.2f}", "CI": f"[{r.low:+.2f}, {r.high:+.2f}]", "points": r.n_points}
                         for label, table in tables.items() for (opt, metric), r in table.items()])


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


CLAIM_SETTING = ("the paper's sizes n=8000, d=1000, h=1500 and 10 full-batch steps; 5 seeds per learning rate in Fig. 7, "
           "one seed in Fig. 8 (the authors' configurations use 2)")
"""What every record of this chapter states as its setting (the defaults of the parameters cell)."""


_D_TAG, _SQRT_TAG = " [figures' readout /d]", " [written readout /sqrt(d)]"


def _readout_variants(claims: list[Claim]) -> list[Claim]:
    """The written /sqrt(d) readout rows as variants of the /d rows (the published figures'): never counted."""
    import dataclasses

    out = []
    for c in claims:
        if c.claim.endswith(_D_TAG):
            key = f"{c.where}: {c.claim[: -len(_D_TAG)]}"
            out.append(dataclasses.replace(c, key=key))
        elif c.claim.endswith(_SQRT_TAG):
            key = f"{c.where}: {c.claim[: -len(_SQRT_TAG)]}"
            out.append(dataclasses.replace(c, key=key + " (sqrt_d)", variant_of=key,
                                           setting=c.setting + "; the readout /sqrt(d) of the text"))
        else:
            out.append(c)
    return out


def _record(**fields) -> Claim:
    """A claim record under the book's verdict rules.

    A criterion that fails here is reported as "inconclusive", not "disagrees": the chapter does not yet
    show by a measurement what produces the difference, which a "disagrees" requires.
    """
    cause = fields.pop("cause", "") or ""
    verdict = fields.pop("verdict")
    if verdict == "disagrees":
        verdict = "inconclusive"
        cause = ("the criterion fails (" + (cause or fields["measured"]) + "); the chapter does not yet "
                 "establish the cause by a measurement, so the failure is not counted as a disagreement")
    elif verdict != "agrees" and not cause:
        cause = f"only part of the criterion holds: {fields['measured']}"
    fields.setdefault("setting", CLAIM_SETTING)
    return Claim(verdict=verdict, cause=cause, **fields)


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


def check_gd_large_eta(grid: RunGrid, *, readout: str = "d", eta_min: float = 1000.0, n_boot: int = 2000,
                       level: float = 0.95, seed: int = 0, where: str = "§5.3, Fig. 7",
                       section: str = "") -> Claim:
    """GD at ``eta >= eta_min``: lower losses go with higher KTA and lower alphas.

    Criterion: within-seed Spearman rho(loss, KTA) < 0 and rho(loss, alpha) > 0 (Hill and KS) for
    the train and the test loss over these etas, every interval excluding 0.
    """
    r_ = check_choice("readout", readout, READOUT_SCALES)
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
    return _record(
        paper="003", where=where, section=section,
        claim=f"GD, eta >= {eta_min:g}: the reduction in losses goes with a higher KTA and lower PL alphas "
              f"[{_READOUT_NAMES[r_]}]",
        criterion="within-seed Spearman rho(loss, KTA) < 0 and rho(loss, alpha) > 0 for train and test loss, "
                  "seed-bootstrap CI excluding 0",
        measured="; ".join(parts), verdict=verdict,
        cause="" if verdict == "agrees" else _sign_reason(results, names),
    )


def check_adam_benign_band(grid: RunGrid, *, readout: str = "d", eta_max: float = 1.0, n_boot: int = 2000,
                           level: float = 0.95, seed: int = 0, where: str = "§5.3, Fig. 7",
                           section: str = "") -> Claim:
    """FB-Adam at ``eta <= eta_max``: a lower PL_Alpha_Hill goes with a lower test loss.

    Criterion: within-seed Spearman rho(PL_Alpha_Hill, test loss) > 0 over these etas, interval excluding 0.
    """
    r_ = check_choice("readout", readout, READOUT_SCALES)
    keep = grid.etas <= eta_max
    r = spearman_bootstrap(grid.get("alpha_hill", "adam")[keep], grid.get(f"test_loss@{r_}", "adam")[keep],
                           n_boot=n_boot, level=level, seed=seed)
    hill = grid.mean("alpha_hill", "adam")[keep]
    test = grid.mean(f"test_loss@{r_}", "adam")[keep]
    means = ", ".join(f"eta={e:g}: Hill {_g(a)}, test {_g(b)}" for e, a, b in zip(grid.etas[keep], hill, test))
    verdict = _sign_verdict([(r, +1)])
    return _record(
        paper="003", where=where, section=section,
        claim=f"FB-Adam, eta <= {eta_max:g} (benign band): a lower PL_Alpha_Hill goes with a better test loss "
              f"[{_READOUT_NAMES[r_]}]",
        criterion="within-seed Spearman rho(PL_Alpha_Hill, test loss) > 0 over these etas, CI excluding 0",
        measured=f"rho={_ci(r)}; means {means}", verdict=verdict,
        cause="" if verdict == "agrees" else _sign_reason([(r, +1)], ["(Hill, test)"]),
    )


def check_hill_flat_ks_decreasing(grid: RunGrid, *, eta_min: float = 1.0, eta_max: float = 100.0,
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
    return _record(
        paper="003", where=where, section=section,
        claim=f"FB-Adam, {eta_min:g} <= eta <= {eta_max:g}: PL_Alpha_Hill stays flat while PL_Alpha_KS keeps decreasing",
        criterion=f"range of mean Hill alpha < {flat_tol:g} x its mean; mean KS alpha strictly decreasing in eta",
        measured=(f"Hill means {', '.join(_g(v) for v in hill)} (range/mean {rel:.3f}); "
                  f"KS means {', '.join(_g(v) for v in ks)}"),
        verdict=verdict, cause=reason,
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
    return _record(
        paper="003", where=where, section=section,
        claim=(f"PL_Alpha_Hill ~{hill_small:g} at n={n_s} vs ~{hill_large:g} at n={n_l}; at n={n_l} the spike "
               f"is absorbed by the bulk, at n={n_s} the outlier is almost an order of magnitude from the bulk"),
        criterion=(f"|Hill - paper| <= {tol:g} and Hill(n={n_s}) < Hill(n={n_l}); lambda_max / 90th percentile "
                   f"of the eigenvalues >= {separated:g} at n={n_s}; s1/s2 < {absorbed:g} at n={n_l}"),
        measured=(f"Hill {_g(a['alpha_hill'])} (n={n_s}) vs {_g(b['alpha_hill'])} (n={n_l}); "
                  f"lambda_max/q90 {_g(a['spike_q90'])} vs {_g(b['spike_q90'])}; "
                  f"s1/s2 {_g(a['sv_ratio'])} vs {_g(b['sv_ratio'])}"),
        verdict=verdict, cause=reason,
    )


def check_ridge(curves: Mapping[float, Mapping[str, np.ndarray]], *, readout: str = "d", balanced: float = 1e-2,
                where: str = "§5.3, Fig. 8(b)", section: str = "") -> Claim:
    """lambda = 1e-2 balances test loss and generalization gap (Fig. 8(b), last step).

    Criterion (the paper's sentence): every smaller lambda reaches a lower train and test loss but
    a larger gap ``test - train`` than ``balanced``.
    """
    r_ = check_choice("readout", readout, READOUT_SCALES)
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
    return _record(
        paper="003", where=where, section=section,
        claim=f"smaller lambdas give lower losses but larger gaps; lambda={balanced:g} balances them "
              f"[{_READOUT_NAMES[r_]}]",
        criterion=f"at the last step each lambda < {balanced:g}: lower train and test loss and a larger test-train gap",
        measured=measured, verdict=verdict, cause=reason,
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
    r_ = check_choice("readout", readout, READOUT_SCALES)
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
    return _record(
        paper="003", where=where, section=section,
        claim=f"larger label noise gives larger losses; overlap outliers at rho={rho_low:g} are ~{ratio:g}x "
              f"those at rho={rho_high:g} [{_READOUT_NAMES[r_]}]",
        criterion=f"train and test loss strictly increasing in rho; max diag overlap ratio within {ratio:g} +- {ratio_tol:g}",
        measured=(f"train/test {losses}; max diag O_U {_g(u_lo)} vs {_g(u_hi)} (ratio {_g(ru)}), "
                  f"O_V {_g(v_lo)} vs {_g(v_hi)} (ratio {_g(rv)})"),
        verdict=verdict, cause=reason,
    )


# ----------------------------------------------------------------------------- the chapter's claims and figures


def chapter_claims(grid: RunGrid, f8: "Fig8Configs", runs: Mapping[TwoLayerConfig, Trajectory],
                   ridge: Mapping[float, Mapping[str, np.ndarray]], *, n: int, n_boot: int = 2000,
                   level: float = 0.95) -> list[Claim]:
    """The chapter's claims, in the order of its table: the Fig. 7 checks under both readouts,
    then those of Fig. 8 whose settings the parameters include."""
    boot = dict(n_boot=n_boot, level=level)
    sec = dict(section="gen-correlations")
    claims = []
    for s in ("d", "sqrt_d"):
        claims += [check_gd_large_eta(grid, readout=s, **boot, **sec),
                   check_adam_benign_band(grid, readout=s, **boot, **sec)]
    claims.append(check_hill_flat_ks_decreasing(grid, section="gen-fig7"))
    if 2000 in f8.by_n and n in f8.by_n:
        claims.append(check_sample_size(runs[f8.by_n[2000]], runs[f8.by_n[n]], section="gen-fig8"))
    for s in ("d", "sqrt_d"):
        if 0.01 in ridge and min(ridge) < 0.01:
            claims.append(check_ridge(ridge, readout=s, section="gen-fig8"))
        if 0.3 in f8.by_rho and 0.7 in f8.by_rho:
            claims.append(check_label_noise({r: runs[c] for r, c in f8.by_rho.items()}, readout=s,
                                            section="gen-fig8"))
    return _readout_variants(claims)


def print_claims(claims: Sequence[Claim]) -> None:
    """Each claim with its verdict, criterion and measured numbers, numbered."""
    for i, c in enumerate(claims, 1):
        print(f"{i}. [{c.verdict}] {c.claim}\n   test: {c.criterion}\n   measured: {c.measured}\n")


def _curves(runs, by, fmt, readout):
    return {fmt(k): (runs[c].steps, runs[c].metric(f"train_loss@{readout}"), runs[c].metric(f"test_loss@{readout}"))
            for k, c in by.items()}


def _scale_name(s: str) -> str:
    return "d (figures)" if s == "d" else "sqrt(d) (formula)"


def fig7_figure(grid: RunGrid, *, readout: str = "d", title: str | None = None):
    """Fig. 7 in two rows of two: losses and KTA under the readout convention ``readout``,
    PL_Alpha_Hill and PL_Alpha_KS against eta; mean +- std over seeds, one colour per optimizer
    (train solid, test dashed)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5))
    for k, opt in enumerate(grid.optimizers):
        name = _NAMES.get(opt, opt)
        for m, ls, mk in (("train", "-", "o"), ("test", "--", "s")):
            plotting.mean_std_plot(axes[0, 0], grid.etas, grid.get(f"{m}_loss@{readout}", opt).T,
                                   label=f"{name} {m}", color_index=k, ls=ls, marker=mk)
        for ax, metric in zip(axes.flat[1:], (f"kta@{readout}", "alpha_hill", "alpha_ks")):
            plotting.mean_std_plot(ax, grid.etas, grid.get(metric, opt).T, label=name, color_index=k)
    for ax, lab in zip(axes.flat, ("loss (MSE)", "KTA", "PL_Alpha_Hill", "PL_Alpha_KS")):
        ax.set_xlabel(r"learning rate $\eta$")
        ax.set_title(lab)
    axes[0, 0].legend()
    axes[0, 1].legend()
    if title:
        fig.suptitle(title)
    return fig


def fig8_figure(f8: "Fig8Configs", runs: Mapping[TwoLayerConfig, Trajectory],
                ridge: Mapping[float, Mapping[str, np.ndarray]], *, readout: str = "d"):
    """Fig. 8: train (solid) and test (dashed) loss per step for each panel's settings."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 8), sharex=True)
    plotting.train_test_curves(axes[0, 0], _curves(runs, f8.by_n, lambda v: f"n={v}", readout),
                               title="(a) sample size")
    plotting.train_test_curves(axes[0, 1], {f"λ={k:g}": (c["steps"], c[f"train_loss@{readout}"],
                                                         c[f"test_loss@{readout}"]) for k, c in ridge.items()},
                               title="(b) ridge constant")
    plotting.train_test_curves(axes[1, 0], _curves(runs, f8.by_rho, lambda v: f"ρe={v:g}", readout),
                               title="(c) label noise")
    plotting.train_test_curves(axes[1, 1], _curves(runs, f8.by_steplr_gamma, lambda v: f"γ={v:g}", readout),
                               title="(d) StepLR decay")
    fig.suptitle(f"Fig. 8: FB-Adam, η={f8.base.eta:g}, readout s={readout}; train solid, test dashed")
    return fig


def sample_size_figure(f8: "Fig8Configs", runs: Mapping[TwoLayerConfig, Trajectory]):
    """Fig. 8(a) under both readout conventions, side by side."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, s in zip(axes, ("d", "sqrt_d")):
        plotting.train_test_curves(ax, _curves(runs, f8.by_n, lambda v: f"n={v}", s),
                                   title=f"(a) sample size, s = {_scale_name(s)}")
    return fig


def alpha_scatter_figure(grid: RunGrid, *, readout: str = "d"):
    """Test loss against PL_Alpha_KS of every run of the grid, coloured by learning rate."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    eta_of = np.broadcast_to(grid.etas[:, None], grid.get("alpha_ks", grid.optimizers[0]).shape)
    for k, (opt, mk) in enumerate(zip(grid.optimizers, "os")):
        plotting.alpha_band_scatter(ax, grid.get("alpha_ks", opt), grid.get(f"test_loss@{readout}", opt), eta_of,
                                    marker=mk, label=opt, colorbar=k == 0)
    ax.set_xlabel("PL_Alpha_KS of $W_{10}^T W_{10}$")
    ax.set_ylabel(f"test loss (s = {readout})")
    ax.legend()
    return fig

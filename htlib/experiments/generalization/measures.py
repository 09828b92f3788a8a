"""What the generalization-correlations chapter measures in its cached runs: one :class:`~htlib.claims.Measurement` per
row of its claims table (``claims.toml``, read into :data:`TABLE`) from :func:`measure`, judged by :func:`claims`.
Every fit and test the chapter's claims read happens here; the page
(:mod:`htlib.experiments.generalization.reading`) only words and draws. Outside the result-cache key, which covers
:mod:`htlib.experiments.generalization.compute` alone."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import scipy.stats

from htlib import archive, dynamics
from htlib.claims import Measurement, judge_table, read_table
from htlib.generalization import final_metrics
from htlib.records import PAPER_SETTING, Claim
from htlib.two_layer import READOUT_SCALES, RunGrid, Trajectory
from htlib.experiments.generalization.compute import Fig7Result, Fig8Result, Setup
from htlib.experiments.generalization.extra import NOISE_PAIR, MoreSeeds

READOUT_NAMES = {"d": "s = d (the figures' readout)", "sqrt_d": "s = sqrt(d) (the written readout)"}

FIG7_FIELDS = ("n", "d", "h", "n_test", "rho_e", "lam", "steps", "etas", "seeds")

FIG8_FIELDS = ("d", "h", "n_test", "steps", "fig8_eta", "fig8_seeds")

ESD_DECILES = tuple(np.round(np.arange(0.1, 1.0, 0.1), 1))  # noise_esd: the deciles of the ESD (and lambda_max)

TABLE = read_table(Path(__file__).with_name("claims.toml"))

# What the measurements read (the paper's learning rates, sizes and settings; the levels are in TABLE).
GD_LARGE_ETA = 1000.0  # §5.3: "for GD with eta >= 1000", against the rest of the grid

BENIGN_ETA, BENIGN_LOW = 1.0, 0.1  # §5.3, benign eta <= 1: eta = 1 against the grid etas <= 0.1

FLAT_BAND = (1.0, 100.0)  # §5.3: "for 1 <= eta <= 100 ... similar values of PL_Alpha_Hill"

KS_STEPS = {"ks_1_10": (1.0, 10.0), "ks_10_100": (10.0, 100.0)}

SMALLER_NS = (500, 2000, 4000)  # Fig. 8(a): the sizes at which the network overfits

LAM_BALANCED = 0.01  # Fig. 8(b): the ridge constant that "reasonably balances" test loss and gap

RIDGE_LAMS = {"1e-3": 1e-3, "1e-4": 1e-4}

NOISE_STEPS = {"1_3": (0.1, 0.3), "3_5": (0.3, 0.5), "5_7": (0.5, 0.7)}

RHO_LOW, RHO_HIGH = 0.3, 0.7

STEPLR_FAST, STEPLR_SLOW = (0.2, 0.4), (0.6, 0.8)  # Fig. 8(d): "stable loss curves" and "relatively unstable"

WN_STEPS = {"2_4": (0.2, 0.4), "4_6": (0.4, 0.6), "6_8": (0.6, 0.8)}

def update_overlap_outlier(traj: Trajectory, t: int | None = None) -> tuple[float, float]:
    """Largest diagonal entries of ``O(U_W, U_M)`` and ``O(V_W, V_M)`` for ``W = W_{t+1}``, ``M = W_{t+1} - W_t``
    (default: the last update)."""
    t = traj.config.steps - 1 if t is None else t
    if t not in traj.weights or t + 1 not in traj.weights:
        raise ValueError(f"the trajectory must keep W_{t} and W_{t + 1}; it keeps {sorted(traj.weights)}")
    O_u, O_v = dynamics.update_overlaps(traj.weights[t + 1], traj.update(t))
    return float(np.diag(O_u).max()), float(np.diag(O_v).max())

def _runs(values, **kw) -> Measurement:
    """The per-seed values of one statistic (a diverged run's is kept: the judge's gate of non-finite runs)."""
    v = np.asarray(values, dtype=float).ravel()
    return Measurement(v, runs_text=f"{v.size} seeds", **kw)

def _missing(what: str) -> Measurement:
    return Measurement.not_run(f"{what} is not in this setting; the paper's setting runs it", why="not_in_run",
                               what=what)

def _compound(key: str, parts: Mapping[str, Measurement], setting: str) -> Measurement:
    # Parts are judged as claims, so the reduced-setting gate would turn a variant's failures inconclusive.
    check = (f"none needed: {READOUT_NAMES['sqrt_d']} is this variant's convention, read from the same weights as "
             "the counted row, not a reduction" if TABLE[key].kind == "variant" else "")
    return Measurement(parts={f"{key}-{k}": m for k, m in parts.items()}, setting=setting, reduction_check=check)

def _setting(setup: Setup, fields: Sequence[str], readout: str = "d") -> str:
    dev = setup.deviations(fields)
    return dev if readout == "d" else READOUT_NAMES[readout] + ("" if dev == PAPER_SETTING else f"; {dev}")

ROW_KEYS: dict[tuple[str, str], str] = {  # (reading, readout) -> row key; ``_sqrt_d``: the written readout
    ("gd_contrast", "d"): "gd_contrast", ("gd_contrast", "sqrt_d"): "gd_contrast_sqrt_d",
    ("adam_corr", "d"): "adam_corr", ("adam_corr", "sqrt_d"): "adam_corr_sqrt_d",
    ("benign", "d"): "benign", ("benign", "sqrt_d"): "benign_sqrt_d",
    ("sample_loss", "d"): "sample_loss", ("sample_loss", "sqrt_d"): "sample_loss_sqrt_d",
    ("ridge", "d"): "ridge", ("ridge", "sqrt_d"): "ridge_sqrt_d",
    ("noise", "d"): "noise", ("noise", "sqrt_d"): "noise_sqrt_d",
    ("steplr", "d"): "steplr", ("steplr", "sqrt_d"): "steplr_sqrt_d",
}
"""The rows read under both readouts, by literal key (a search for a row finds its reading)."""

def _at(values: np.ndarray, etas: np.ndarray, eta: float):
    i = np.flatnonzero(np.isclose(etas, eta))
    return values[i[0]] if i.size else None

def table_level(key: str, part: str = ""):
    """The level of a row of :data:`TABLE` (or of its part ``part``)."""
    spec = TABLE[key]
    return next(p for p in spec.parts if p.key == f"{key}-{part}").level if part else spec.level

def _gd_contrast(key: str, grid: RunGrid, readout: str, setting: str) -> Measurement:
    """GD, per seed: the mean over ``eta >= 1000`` minus the mean over the other grid etas, for each quantity."""
    big = grid.etas >= GD_LARGE_ETA
    if big.all() or not big.any():
        return Measurement.not_run(f"the grid etas need learning rates on both sides of {GD_LARGE_ETA:g}")
    parts = {}
    for k, metric in (("train", f"train_loss@{readout}"), ("test", f"test_loss@{readout}"), ("kta", f"kta@{readout}"),
                      ("hill", "alpha_hill"), ("ks", "alpha_ks")):
        v = grid.get(metric, "gd")
        parts[k] = _runs(np.nanmean(v[big], 0) - np.nanmean(v[~big], 0))
    return _compound(key, parts, setting)

def _benign(key: str, grid: RunGrid, readout: str, setting: str) -> Measurement:
    """FB-Adam, per seed: :func:`benign_contrast` of PL_Alpha_Hill and of the test loss."""
    etas = grid.etas
    if (etas == BENIGN_ETA).sum() != 1 or not (etas <= BENIGN_LOW).any():
        return Measurement.not_run(f"the grid etas need {BENIGN_ETA:g} and a value <= {BENIGN_LOW:g}")
    test, note, keep = grid.get(f"test_loss@{readout}", "adam"), "", etas <= BENIGN_ETA
    if keep.sum() >= 3:  # the reading this contrast replaced, for comparison
        rho = within_seed_rho(grid.get("alpha_hill", "adam")[keep], test[keep])
        note = f"the within-seed Spearman it replaced: seed mean {np.nanmean(rho):+.3g} over {int(keep.sum())} etas"
    return _compound(key, {"hill": _runs(benign_contrast(grid.get("alpha_hill", "adam"), etas)),
                           "test": _runs(benign_contrast(test, etas), note=note)}, setting)

def measure_fig7(res: Fig7Result, setup: Setup) -> dict[str, Measurement]:
    """The Fig. 7 rows of :data:`TABLE`, read from the grid."""
    g, out = res.grid, {}
    for s in READOUT_SCALES:
        setting = _setting(setup, FIG7_FIELDS, s)
        out[ROW_KEYS["gd_contrast", s]] = _gd_contrast(ROW_KEYS["gd_contrast", s], g, s, setting)
        y = g.get(f"train_loss@{s}", "adam")
        out[ROW_KEYS["adam_corr", s]] = _compound(ROW_KEYS["adam_corr", s], {
            k: _runs(within_seed_rho(g.get(m, "adam"), y))
            for k, m in (("kta", f"kta@{s}"), ("hill", "alpha_hill"), ("ks", "alpha_ks"))}, setting)
        out[ROW_KEYS["benign", s]] = _benign(ROW_KEYS["benign", s], g, s, setting)
    keep = (g.etas >= FLAT_BAND[0]) & (g.etas <= FLAT_BAND[1])
    if keep.sum() < 2:
        out["hill_flat"] = Measurement.not_run(f"fewer than 2 grid etas in [{FLAT_BAND[0]:g}, {FLAT_BAND[1]:g}]")
    else:
        hill, ks = g.get("alpha_hill", "adam")[keep], g.get("alpha_ks", "adam")
        parts = {"hill": _runs(np.ptp(hill, axis=0) / np.mean(hill, axis=0))}
        for k, (a, b) in KS_STEPS.items():
            ka, kb = _at(ks, g.etas, a), _at(ks, g.etas, b)
            parts[k] = _missing(f"eta = {a:g} or {b:g}") if ka is None or kb is None else _runs(kb - ka)
        out["hill_flat"] = _compound("hill_flat", parts, _setting(setup, FIG7_FIELDS))
    out["hill_spike"] = _hill_spike(g, setup)
    out["gd_contrast_wn"] = (
        Measurement.not_run(f"weight_norm_repeat is off: {2 * len(setup.etas) * setup.seeds} more runs of {setup.steps} "
                            f"steps at n = {setup.n}, as many as the Fig. 7 grid, beyond the chapter's budget; make "
                            "paper runs it", why="off") if res.grid_wn is None
        else _gd_contrast("gd_contrast_wn", res.grid_wn, "d", _setting(setup, FIG7_FIELDS)))
    return out

def spike_influence(hill: np.ndarray, hill_wo_top: np.ndarray) -> np.ndarray:
    """Per seed (last axis): the mean over the etas (first axis) of ``(hill_wo_top - hill) / hill``, the relative
    change of PL_Alpha_Hill when the top eigenvalue is left out.

    Examples
    --------
    >>> spike_influence(np.array([[2.0, 1.0], [2.0, 1.0]]), np.array([[2.2, 1.0], [2.4, 1.1]])).round(3).tolist()
    [0.15, 0.05]
    """
    hill, wo = np.asarray(hill, dtype=float), np.asarray(hill_wo_top, dtype=float)
    return np.nanmean((wo - hill) / hill, axis=0)

def _hill_spike(g: RunGrid, setup: Setup) -> Measurement:
    """FB-Adam over ``FLAT_BAND``, per seed: the spread of the median singular value of ``W_T`` (largest over
    smallest) and :func:`spike_influence`."""
    keep = (g.etas >= FLAT_BAND[0]) & (g.etas <= FLAT_BAND[1])
    if keep.sum() < 2:
        return Measurement.not_run(f"fewer than 2 grid etas in [{FLAT_BAND[0]:g}, {FLAT_BAND[1]:g}]")
    sv, hill = g.get("sv_median", "adam")[keep], g.get("alpha_hill", "adam")[keep]
    ratio = np.nanmean(g.get("sv_ratio", "adam")[keep], axis=1) ** 2  # lambda_1 / lambda_2 of W_T^T W_T
    m = min(setup.h, setup.d) - min(setup.h, setup.d) // 2  # the terms of the Hill sum
    a = float(np.nanmean(hill))
    note = ("lambda_1 / lambda_2 of W_T^T W_T (seed means): " + ", ".join(
        f"{r:.3g} at eta = {e:g}" for r, e in zip(ratio, g.etas[keep])) + f"; leaving one of the {m} terms of the "
        "Hill sum out moves PL_Alpha_Hill by about (alpha - 1)^2 ln(lambda_1 / lambda_median) / (m alpha) relative, so "
        f"a {table_level('hill_spike', 'spike'):.0%} change at alpha = {a:.3g} needs ln(lambda_1 / "
        f"lambda_median) near {table_level('hill_spike', 'spike') * m * a / (a - 1) ** 2:.3g}")
    return _compound("hill_spike", {
        "scale": _runs(np.nanmax(sv, axis=0) / np.nanmin(sv, axis=0)),
        "spike": _runs(spike_influence(hill, g.get("alpha_hill_wo_top", "adam")[keep]), note=note)},
        _setting(setup, FIG7_FIELDS))

def esd_spread(trajs_by_level: Sequence[Trajectory]) -> tuple[float, float]:
    """For one seed's runs at several levels: the range over the levels of PL_Alpha_Hill over its mean, and the
    largest such relative range of the ESD's deciles and ``lambda_max`` (:data:`ESD_DECILES`) of the last step.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> run = lambda s: NS(diverged_at=None, alpha_hill=np.array([2.0 * s]), esd=(s * np.arange(1.0, 101.0),))
    >>> [round(x, 3) for x in esd_spread([run(1.0), run(1.1)])]  # everything scaled by 1.1: 0.1 / 1.05
    [0.095, 0.095]
    """
    if any(t.diverged_at is not None for t in trajs_by_level):
        return float("nan"), float("nan")
    hill = np.array([float(t.alpha_hill[-1]) for t in trajs_by_level])
    q = np.array([[*np.quantile(np.asarray(t.esd[-1], dtype=float), ESD_DECILES), float(np.max(t.esd[-1]))]
                  for t in trajs_by_level])
    return float(np.ptp(hill) / np.mean(hill)), float(np.max(np.ptp(q, axis=0) / np.mean(q, axis=0)))

def within_seed_rho(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho of ``x`` and ``y`` across the cells (first axis) of each seed (last axis), NaN where undefined.

    Examples
    --------
    >>> within_seed_rho(np.array([[1.0, 1], [2, 3], [3, 2]]), np.array([[1.0, 1], [2, 2], [3, 3]])).tolist()
    [1.0, 0.5]
    """
    out = []
    for s in range(x.shape[-1]):
        a, b = x[:, s], y[:, s]
        ok = np.isfinite(a) & np.isfinite(b)
        if ok.sum() < 3 or np.ptp(a[ok]) == 0 or np.ptp(b[ok]) == 0:
            out.append(np.nan)
        else:
            out.append(scipy.stats.spearmanr(a[ok], b[ok]).statistic)
    return np.array(out, dtype=float)

def benign_contrast(values: np.ndarray, etas: np.ndarray) -> np.ndarray:
    """Per seed: ``values`` (shape ``(len(etas), n_seeds)``) at ``BENIGN_ETA`` minus their mean over ``<= BENIGN_LOW``.

    Examples
    --------
    >>> benign_contrast(np.array([[2.0, 3.0], [4.0, 5.0], [1.0, 1.0]]), np.array([0.01, 0.1, 1.0])).tolist()
    [-2.0, -3.0]
    """
    etas = np.asarray(etas, dtype=float)
    values = np.asarray(values, dtype=float)
    top, low = etas == BENIGN_ETA, etas <= BENIGN_LOW
    if values.shape[0] != etas.size or top.sum() != 1 or not low.any():
        raise ValueError(f"values must have one row per eta, and etas must hold {BENIGN_ETA:g} once and a value "
                         f"<= {BENIGN_LOW:g}; got etas {etas.tolist()} and values of shape {values.shape}")
    return values[top][0] - np.nanmean(values[low], axis=0)

def _last(traj: Trajectory, metric: str) -> float:
    return float(traj.metric(metric)[-1]) if traj.diverged_at is None else float("nan")

def _rel_drop(trajs: Sequence[Trajectory], metric: str) -> np.ndarray:
    return np.array([1 - _last(t, metric) / float(t.metric(metric)[0]) for t in trajs])

def loss_rise(traj: Trajectory, readout: str = "d", *, steps: int | None = None) -> float:
    """The instability of a loss curve: the step-to-step increases of the train and the test loss over the first
    ``steps`` steps (default: half, rounded up), each relative to its step-0 value.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> t = NS(config=NS(steps=4), metric=lambda m: np.array([1.0, 0.8, 0.9, 0.7, 0.6]))
    >>> round(loss_rise(t), 3)  # 0.1 up in the train loss and 0.1 up in the test loss (same curve here)
    0.2
    """
    k = math.ceil(traj.config.steps / 2) if steps is None else int(steps)
    out = 0.0
    for m in ("train_loss", "test_loss"):
        v = np.asarray(traj.metric(f"{m}@{readout}"), dtype=float)[:k + 1]
        out += float(np.clip(np.diff(v), 0, None).sum() / v[0])
    return out

def _sample_hill(res: Fig8Result, setup: Setup, grid: RunGrid | None) -> Measurement:
    """Fig. 8(a)'s spectra at n = 2000 and n = 8000, the latter from the Fig. 7 grid's FB-Adam runs at ``fig8_eta``
    where it has them (the same trainings for the shared seeds, and more seeds), else Fig. 8's own runs."""
    by_n = res.panel("by_n")
    if setup.n != 8000 or not {2000, 8000} <= set(by_n):
        return Measurement.not_run("needs n = 8000 and ns to contain 2000 and 8000")
    keys = ("alpha_hill", "spike_q90", "sv_ratio")
    small, big = ({k: np.array([final_metrics(t)[k] for t in by_n[n]]) for k in keys} for n in (2000, 8000))
    note, paired = "", big
    if grid is not None and "adam" in grid.optimizers and _at(grid.etas, grid.etas, setup.fig8_eta) is not None:
        from_grid = {k: _at(grid.get(k, "adam"), grid.etas, setup.fig8_eta) for k in keys}
        shared = min(len(big["alpha_hill"]), from_grid["alpha_hill"].size)
        gap = float(np.nanmax(np.abs(from_grid["alpha_hill"][:shared] - big["alpha_hill"][:shared])))
        note = (f"read from the Fig. 7 grid's FB-Adam runs at eta = {setup.fig8_eta:g}, whose seeds 0-{shared - 1} are "
                "Fig. 8's n = 8000 runs (" + ("Hill identical on them)" if gap == 0 else f"Hill within {gap:.2g})"))
        big, paired = from_grid, big
    return _compound("sample_hill", {
        "hill_2000": _runs(small["alpha_hill"]), "hill_8000": _runs(big["alpha_hill"], note=note),
        "hill_diff": _runs(small["alpha_hill"] - paired["alpha_hill"][:small["alpha_hill"].size]),
        "spike_2000": _runs(small["spike_q90"]), "sv_8000": _runs(big["sv_ratio"])},
        _setting(setup, FIG8_FIELDS + ("n", "rho_e", "lam")))

def _fig8_readout(res: Fig8Result, setup: Setup, s: str, more: MoreSeeds | None = None) -> dict[str, Measurement]:
    """The Fig. 8 rows read under the readout ``s``: sample size, ridge constant (from ``more``; Fig. 8's own test
    sets in the first measurement's variant), label noise (its overlap ratios from ``more`` where given), StepLR."""
    out: dict[str, Measurement] = {}
    by_n = res.sample_panel() or res.panel("by_n")
    if setup.n not in by_n:
        out[ROW_KEYS["sample_loss", s]] = Measurement.not_run("ns must contain n")
    else:
        parts = {f"{m}_big": _runs(_rel_drop(by_n[setup.n], f"{m}_loss@{s}")) for m in ("train", "test")}
        for n in SMALLER_NS:
            for m in ("train", "test"):
                parts[f"{m}_{n}"] = (_runs(_rel_drop(by_n[n], f"{m}_loss@{s}")) if n in by_n and n < setup.n
                                     else _missing(f"n = {n} below the chapter's n"))
        out[ROW_KEYS["sample_loss", s]] = _compound(ROW_KEYS["sample_loss", s], parts,
                                           _setting(setup, FIG8_FIELDS + ("fig8a_seeds", "n", "rho_e", "lam", "ns"), s))
    ridge_setting = _setting(setup, FIG8_FIELDS + ("n", "rho_e", "lams"), s)
    first = {lam: np.array([[c[lam][f"train_loss@{s}"][-1], c[lam][f"test_loss@{s}"][-1]] for c in res.ridge])
             for lam in res.ridge[0]}
    if s == "d":  # the first measurement: Fig. 8's own runs and test sets, named as such in its record
        m = _ridge("ridge_first", first, ridge_setting)
        out["ridge_first"] = m if ridge_setting != PAPER_SETTING or not m.ran else dataclasses.replace(
            m, setting=TABLE["ridge_first"].setting,
            reduction_check="none needed: the paper's setting, its 200 test points and Fig. 8's own seeds")
    if more is None:
        out[ROW_KEYS["ridge", s]] = Measurement.not_run("the ridge readings on larger test sets (extra.run_more_seeds) are not "
                                               "given to this reading; the chapter's claims cell reads them")
    else:
        last = {lam: np.array([r[s][lam] for r in more.ridge]) for lam in more.ridge[0][s]}
        k = min(len(res.ridge), len(more.ridge))
        gap = max((float(np.max(np.abs(last[lam][:k, 0] - first[lam][:k, 0]))) for lam in first if lam in last),
                  default=float("nan"))
        seeds = more.ridge_seeds
        note = (f"test losses on {more.n_test} test points per seed; seeds {seeds[0]}-{seeds[-1]}; seeds 0-{k - 1} read "
                f"Fig. 8's base runs (their train losses " + ("identical to Fig. 8(b)'s)" if gap == 0 else
                                                             f"within {gap:.2g} of Fig. 8(b)'s)"))
        out[ROW_KEYS["ridge", s]] = _ridge(ROW_KEYS["ridge", s], last, ridge_setting, note)
    by_rho, parts = res.panel_cd("by_rho"), {}
    for tag, (a, b) in NOISE_STEPS.items():
        for m in ("train", "test"):
            parts[f"{m}_{tag}"] = (_runs([_last(u, f"{m}_loss@{s}") - _last(v, f"{m}_loss@{s}")
                                          for u, v in zip(by_rho[b], by_rho[a])])
                                   if a in by_rho and b in by_rho else _missing(f"rho_e = {a:g} or {b:g}"))
    if more is not None and NOISE_PAIR == (RHO_LOW, RHO_HIGH):  # the overlaps do not depend on the readout
        ratio, seeds = more.noise[:, 0, :] / more.noise[:, 1, :], more.noise_seeds
        note = (f"seeds {seeds[0]}-{seeds[-1]}: seeds 0-{len(res.configs + res.extra) - 1} are Fig. 8(c)'s runs, "
                "read before the others were run (the level unchanged)")

        def said(r: np.ndarray) -> str:  # how many seeds halve at all: the claim's "almost 0.5x" per run
            inside = int(np.sum((r >= 0.35) & (r <= 0.65)))
            return (f"{note}; {inside} of {len(r)} seeds read a ratio in [0.35, 0.65] (per seed "
                    f"{', '.join(f'{x:.2f}' for x in r)}); the U and V ratios move together, so they are one "
                    "reading, and the largest diagonal entry depends on how the singular vectors are ordered")
        parts.update({"ou": _runs(ratio[:, 0], note=said(ratio[:, 0])),
                      "ov": _runs(ratio[:, 1], note=said(ratio[:, 1]))})
    elif RHO_LOW in by_rho and RHO_HIGH in by_rho:  # both records read the same overlaps
        lo, hi = (np.array([update_overlap_outlier(t) for t in by_rho[r]]) for r in (RHO_LOW, RHO_HIGH))
        parts.update({"ou": _runs(lo[:, 0] / hi[:, 0]), "ov": _runs(lo[:, 1] / hi[:, 1])})
    else:
        parts.update({k: _missing(f"rho_e = {RHO_LOW:g} or {RHO_HIGH:g}") for k in ("ou", "ov")})
    out[ROW_KEYS["noise", s]] = _compound(ROW_KEYS["noise", s], parts, _setting(setup, FIG8_FIELDS + ("n", "rhos"), s))
    by_g = res.panel_cd("by_steplr_gamma")
    if not set(STEPLR_FAST + STEPLR_SLOW) <= set(by_g):
        out[ROW_KEYS["steplr", s]] = Measurement.not_run("steplr_gammas must contain 0.2, 0.4, 0.6 and 0.8")
    else:
        rise = {g: np.array([loss_rise(t, s) for t in by_g[g]]) for g in STEPLR_FAST + STEPLR_SLOW}
        margin = np.min([rise[g] for g in STEPLR_SLOW], axis=0) - np.max([rise[g] for g in STEPLR_FAST], axis=0)
        out[ROW_KEYS["steplr", s]] = _runs(margin, note="seed-mean rise " + ", ".join(f"{rise[g].mean():.3g} at gamma = {g:g}"
                                                                           for g in rise),
                                  setting=_setting(setup, FIG8_FIELDS + ("n", "rho_e", "steplr_gammas"), s))
    return out

def _ridge(key: str, last: Mapping[float, np.ndarray], setting: str, note: str = "") -> Measurement:
    """Fig. 8(b)'s parts from ``last[lam]``, one ``[train, test]`` loss of the last step per seed: each ridge constant
    of :data:`RIDGE_LAMS` against :data:`LAM_BALANCED`."""
    if LAM_BALANCED not in last:
        return Measurement.not_run(f"lams must contain {LAM_BALANCED:g}")
    tr0, te0, parts = last[LAM_BALANCED][:, 0], last[LAM_BALANCED][:, 1], {}
    for tag, lam in RIDGE_LAMS.items():
        if lam not in last:
            parts.update({f"{k}_{tag}": _missing(f"lambda = {lam:g}") for k in ("train", "test", "gap")})
            continue
        tr, te = last[lam][:, 0], last[lam][:, 1]
        parts.update({f"train_{tag}": _runs(tr - tr0, note=note), f"test_{tag}": _runs(te - te0, note=note),
                      f"gap_{tag}": _runs((te - tr) - (te0 - tr0), note=note)})
    return _compound(key, parts, setting)

def measure_fig8(res: Fig8Result, setup: Setup, grid: RunGrid | None = None,
                 more: MoreSeeds | None = None) -> dict[str, Measurement]:
    """The Fig. 8 and App. E.4 rows of :data:`TABLE` (the n = 8000 spectra from ``grid``; the ridge readings and the
    noise-level overlap ratios over more seeds from ``more``, :func:`~htlib.experiments.generalization.extra.run_more_seeds`)."""
    out = {"sample_hill": _sample_hill(res, setup, grid)}
    for s in READOUT_SCALES:
        out.update(_fig8_readout(res, setup, s, more))
    by_rho = res.panel_cd("by_rho")
    if len(by_rho) < 2:
        out["noise_esd"] = Measurement.not_run("rhos must hold at least 2 noise levels")
    else:
        spread = np.array([esd_spread([by_rho[r][i] for r in by_rho]) for i in range(len(next(iter(by_rho.values()))))])
        out["noise_esd"] = _compound("noise_esd", {"hill": _runs(spread[:, 0]), "esd": _runs(spread[:, 1])},
                                     _setting(setup, FIG8_FIELDS + ("n", "rhos")))
    wn, plain, parts = res.panel("wn_by_steplr_gamma"), res.panel("by_steplr_gamma"), {}
    def q90(g: float) -> np.ndarray:
        return np.array([final_metrics(t)["spike_q90"] for t in wn[g]])
    for tag, (a, b) in WN_STEPS.items():
        parts[f"q90_{tag}"] = _runs(q90(b) - q90(a)) if a in wn and b in wn else _missing(f"gamma = {a:g} or {b:g}")
    for g in sorted({g for pair in WN_STEPS.values() for g in pair}):
        parts[f"hill_{round(10 * g)}"] = (
            _runs([final_metrics(u)["alpha_hill"] - final_metrics(v)["alpha_hill"] for u, v in zip(wn[g], plain[g])])
            if g in wn and g in plain else _missing(f"gamma = {g:g}"))
    out["wn_schedules"] = _compound("wn_schedules", parts,
                                    _setting(setup, FIG8_FIELDS + ("n", "rho_e", "steplr_gammas")))
    return out

def measure(fig7: Fig7Result, fig8: Fig8Result, setup: Setup, more: MoreSeeds | None = None) -> dict[str, Measurement]:
    """One :class:`htlib.claims.Measurement` per row of :data:`TABLE`."""
    return {**measure_fig7(fig7, setup), **measure_fig8(fig8, setup, fig7.grid, more)}

def claims(fig7: Fig7Result, fig8: Fig8Result, setup: Setup, more: MoreSeeds | None = None) -> list[Claim]:
    """The chapter's records, judged by :func:`htlib.claims.judge` (``more``: the ridge readings and the noise-level
    overlap ratios over more seeds, :func:`~htlib.experiments.generalization.extra.run_more_seeds`)."""
    return judge_table(TABLE, archive.merge(measure(fig7, fig8, setup, more), __name__))

"""The generalization-correlations chapter's page: the tables, figures and prose numbers its notebook shows, from the
runs (:mod:`htlib.experiments.generalization.compute`) and the measures
(:mod:`htlib.experiments.generalization.measures`).  Outside the result-cache key."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd
import scipy.stats

from htlib import stats
from htlib._checks import check_int
from htlib.records import PAPER_SETTING
from htlib.stats import SeedInterval, seed_interval
from htlib.two_layer import READOUT_SCALES, RunGrid
from htlib.experiments.generalization.compute import AUTHORS_FIG8_SEEDS, Fig7Result, Fig8Result, Setup
from htlib.experiments.generalization.extra import NOISE_PAIR, MoreSeeds, run_more_seeds  # noqa: F401 - ch.run_more_seeds
from htlib.experiments.generalization.measures import BENIGN_ETA, BENIGN_LOW, FIG7_FIELDS, FLAT_BAND, GD_LARGE_ETA, LAM_BALANCED, READOUT_NAMES, RIDGE_LAMS, TABLE, _last, _rel_drop, benign_contrast, loss_rise, table_level

NAMES = {"gd": "GD", "adam": "FB-Adam"}

HTSR_BAND = (2.0, 4.0)  # heavy-tailed self-regularization's range of well-trained layers' alpha

def mean_table(grid: RunGrid, *, readouts: Sequence[str] = READOUT_SCALES) -> pd.DataFrame:
    """The seed means of every optimizer and eta (3 significant digits) and the diverged count."""
    cols = [(f"{m}@{r}", f"{h}/{r}") for r in readouts for m, h in
            (("train_loss", "train"), ("test_loss", "test"), ("kta", "KTA"))]
    cols += [("alpha_hill", "Hill"), ("alpha_ks", "KS"), ("alpha_weighted", "alpha_w")]
    rows = []
    for opt in grid.optimizers:
        means = {m: grid.mean(m, opt) for m, _ in cols}
        div = grid.diverged[grid.optimizers.index(opt)].sum(axis=1)
        for i, eta in enumerate(grid.etas):
            rows.append({"optimizer": NAMES.get(opt, opt), "eta": f"{eta:g}",
                         **{h: f"{means[m][i]:.3g}" for m, h in cols}, "diverged": int(div[i])})
    return pd.DataFrame(rows)

def odd_student_floor(rho_e: float, nodes: int = 80) -> float:
    """The population MSE below which no odd student of the softplus teacher can go, by Gauss-Hermite quadrature.

    Examples
    --------
    >>> round(odd_student_floor(0.0), 4)  # E[(softplus(z) - z/2)^2], z ~ N(0, 1)
    0.6712
    """
    z, w = np.polynomial.hermite_e.hermegauss(nodes)
    even = np.logaddexp(0.0, z) - z / 2
    return float(w @ even**2 / w.sum() + float(rho_e) ** 2)

def rho_interval(rho, n_points: int, level: float = 0.95) -> SeedInterval:
    """The seed average of within-seed Spearman correlations and its Fisher-z Student-t interval (``tanh`` of the
    interval of the mean ``arctanh(rho)``); ``|rho| = 1`` enters half a rank step inside, ``+-(1 - 6 / (k^3 - k))``.

    Examples
    --------
    >>> r = rho_interval([0.9, 0.95, 0.99], n_points=9)
    >>> round(float(r.mean), 3), bool(-1 < r.low < r.mean < r.high < 1)
    (0.963, True)
    >>> float(rho_interval([1.0, 1.0, 1.0], n_points=3).high)  # three seeds at +1: the clip, 1 - 6/24
    0.75
    """
    check_int("n_points", n_points, 1)
    x = np.asarray(rho, dtype=float)
    if n_points < 3:  # no Spearman of fewer than 3 points
        nan = np.full(x.shape[:-1], np.nan)
        return SeedInterval(mean=nan, low=nan, high=nan, level=float(level), n_seeds=np.zeros(x.shape[:-1], int))
    edge = 1 - 6 / (n_points ** 3 - n_points)
    t = seed_interval(np.arctanh(np.clip(x, -edge, edge)), level=level)
    return SeedInterval(mean=np.tanh(t.mean), low=np.tanh(t.low), high=np.tanh(t.high), level=t.level,
                        n_seeds=t.n_seeds)

def _rank_step(k: int) -> str:
    return f"{12 / (k ** 3 - k):.2g}" if k >= 2 else "none (no rank correlation of fewer than 2 points)"

def _g(x: float) -> str:
    return f"{x:.3g}"

def setting_numbers(setup: Setup) -> dict[str, str]:
    """The setting of the run, as the opening paragraph states it."""
    n_big = sum(e >= GD_LARGE_ETA for e in setup.etas)
    return {"set_n": str(setup.n), "set_d": str(setup.d), "set_h": str(setup.h), "set_steps": str(setup.steps),
            "set_seeds": str(setup.seeds), "set_n_etas": str(len(setup.etas)),
            "set_n_runs": str(2 * len(setup.etas) * setup.seeds), "set_fig8_seeds": str(setup.fig8_seeds),
            "set_fig8_eta": f"{setup.fig8_eta:g}",
            "set_fig8a_seeds": str(max(setup.fig8_seeds, setup.fig8a_seeds)), "set_n_test": str(setup.n_test),
            "set_fig8a_n_test": str(setup.fig8a_n_test), "set_fig8cd_seeds": str(max(setup.fig8_seeds, setup.fig8cd_seeds)),
            "set_rho_e": f"{setup.rho_e:g}", "set_lam": f"{setup.lam:g}",
            "set_readout": READOUT_NAMES[setup.readout],
            "set_fig7": ("the paper's" if setup.deviations(FIG7_FIELDS) == PAPER_SETTING
                         else "a reduced one (" + setup.deviations(FIG7_FIELDS) + ")"),
            "set_wn": "on" if setup.weight_norm_repeat else "off",
            "floor": f"{odd_student_floor(setup.rho_e):.3f}",
            "gd_large_eta": f"{GD_LARGE_ETA:g}", "benign_eta": f"{BENIGN_ETA:g}",
            "rule_loss_pct": f"{table_level('sample_loss', 'train_big'):.0%}", "set_ci": f"{setup.ci_level:.0%}",
            "set_dof": str(setup.seeds - 1), "set_fig8_dof": str(setup.fig8_seeds - 1),
            "set_fig8_t": (f"{scipy.stats.t.ppf(0.5 + setup.ci_level / 2, setup.fig8_seeds - 1):.3g}"
                           if setup.fig8_seeds >= 2 else "undefined"),
            "hill_similar_pct": f"{table_level('hill_flat', 'hill'):.0%}",
            "paper_fig8_seeds": str(AUTHORS_FIG8_SEEDS), "benign_low": f"{BENIGN_LOW:g}",
            "min_seeds": str(TABLE["steplr"].min_runs), "set_gd_big_points": str(n_big),
            "set_gd_big_values": spearman_values_text(n_big),
            "sample_hill_source": (
                f"the Fig. 7 grid's {setup.seeds} FB-Adam runs at eta = {setup.fig8_eta:g} (the same training as "
                f"Fig. 8's n = 8000 run for its seeds, which it extends)"
                if setup.n == 8000 and any(math.isclose(e, setup.fig8_eta) for e in setup.etas)
                else f"Fig. 8's n = 8000 runs ({setup.fig8_seeds} seeds): the Fig. 7 grid does not train FB-Adam at "
                     f"eta = {setup.fig8_eta:g} and n = 8000 in this setting")}

def spearman_values(k: int) -> list[float]:
    """Every value a Spearman rho of ``k`` untied points can take (``2 <= k <= 7``), ascending.

    Examples
    --------
    >>> spearman_values(3)
    [-1.0, -0.5, 0.5, 1.0]
    """
    import itertools
    check_int("k", k, 2)
    if k > 7:
        raise ValueError(f"k must be at most 7 (the values are enumerated over permutations), got {k}")
    base = np.arange(k)
    return sorted({round(1 - 6 * float(((base - np.array(p)) ** 2).sum()) / (k ** 3 - k), 12)
                   for p in itertools.permutations(range(k))})

def spearman_values_text(k: int) -> str:
    """What a within-seed Spearman over ``k`` points can take, for the prose."""
    if k < 2:
        return "no value (a Spearman needs 2 points or more)"
    if k > 7:
        return f"a value on a grid of step {_rank_step(k)}"
    v = [x for x in spearman_values(k) if x >= 0]
    return "only " + ", ".join(f"±{x:g}" if x else "0" for x in v[:-1]) + (" or " if len(v) > 1 else "") + f"±{v[-1]:g}"

def fig7_numbers(res: Fig7Result, setup: Setup) -> dict[str, str]:
    """Seed means of the GD contrast and FB-Adam's alphas, for the prose."""
    g, out = res.grid, {}
    big = g.etas >= GD_LARGE_ETA
    for metric, name in (("train_loss@d", "train"), ("test_loss@d", "test"), ("kta@d", "kta"),
                         ("alpha_hill", "hill"), ("alpha_ks", "ks")):
        v = g.get(metric, "gd")
        out[f"gd_{name}_big"] = _g(np.nanmean(v[big])) if big.any() else "n/a"
        out[f"gd_{name}_rest"] = _g(np.nanmean(v[~big])) if (~big).any() else "n/a"
    out["adam_hill_first"], out["adam_hill_last"] = _g(g.mean("alpha_hill", "adam")[0]), _g(g.mean("alpha_hill", "adam")[-1])
    out["adam_ks_first"], out["adam_ks_last"] = _g(g.mean("alpha_ks", "adam")[0]), _g(g.mean("alpha_ks", "adam")[-1])
    keep = g.etas <= BENIGN_ETA
    out.update(eta_first=f"{g.etas[0]:g}", eta_last=f"{g.etas[-1]:g}", n_diverged=str(int(g.diverged.sum())),
               benign_points=str(int(keep.sum())),
               benign_step=_rank_step(int(keep.sum())) if keep.sum() >= 2 else "n/a", gd_big_points=str(int(big.sum())))
    if (g.etas == BENIGN_ETA).sum() == 1 and (g.etas <= BENIGN_LOW).any():
        for metric, name in (("alpha_hill", "hill"), (f"test_loss@{setup.readout}", "test")):
            c = stats.t_interval(benign_contrast(g.get(metric, "adam"), g.etas), setup.ci_level, drop_nonfinite=True)
            out[f"benign_{name}_contrast"] = f"{c.estimate:.3g} [{c.low:.3g}, {c.high:.3g}]"
    else:
        out["benign_hill_contrast"] = out["benign_test_contrast"] = "n/a (the grid lacks eta = 1 or eta <= 0.1)"
    band = [i for i, e in enumerate(g.etas) if FLAT_BAND[0] <= e <= FLAT_BAND[1]]
    for key, metric in (("band_sv", "sv_median"), ("band_hill", "alpha_hill"), ("band_hill_wo", "alpha_hill_wo_top")):
        m = g.mean(metric, "adam")
        out[key] = ", ".join(f"{m[i]:.3g} at eta = {g.etas[i]:g}" for i in band) or "n/a"
    ks_all = np.concatenate([g.get("alpha_ks", o).ravel() for o in g.optimizers])
    ks_all = ks_all[np.isfinite(ks_all)]
    out.update(ks_outside=str(int(((ks_all < HTSR_BAND[0]) | (ks_all > HTSR_BAND[1])).sum())),
               ks_runs=str(ks_all.size), htsr_band=f"[{HTSR_BAND[0]:g}, {HTSR_BAND[1]:g}]")
    ks, hill = g.get("alpha_ks", "adam"), g.get("alpha_hill", "adam")
    for k in range(min(2, g.etas.size)):
        out[f"frag_eta{k}"] = f"{g.etas[k]:g}"
        out[f"frag_ks{k}"] = _g(np.nanmean(ks[k]))
        out[f"frag_ks{k}_range"] = f"{np.nanmin(ks[k]):.3g}-{np.nanmax(ks[k]):.3g}"
        out[f"frag_hill{k}"] = _g(np.nanmean(hill[k]))
    return out

def fig8_numbers(res: Fig8Result, setup: Setup) -> dict[str, str]:
    """The base run's losses under both readouts, the sample-size and StepLR numbers, for the prose."""
    out, base = {}, res.base
    for s in READOUT_SCALES:
        for m, name in (("train_loss", "train"), ("test_loss", "test")):
            out[f"base_{name}0_{s}"] = _g(np.mean([float(t.metric(f"{m}@{s}")[0]) for t in base]))
            out[f"base_{name}_last_{s}"] = _g(np.mean([_last(t, f"{m}@{s}") for t in base]))
            out[f"base_{name}_drop_{s}"] = f"{np.mean(_rel_drop(base, f'{m}@{s}')):.1%}"
    smaller = {n: t for n, t in (res.sample_panel() or res.panel("by_n")).items() if n < setup.n}
    out["test_drops"] = ", ".join(f"{np.mean(_rel_drop(t, 'test_loss@d')):+.1%} at n = {n}" for n, t in smaller.items()) or "n/a"
    out["rises"] = ", ".join(f"{np.mean([loss_rise(t) for t in ts]):.3g} at gamma = {g:g}"
                             for g, ts in res.panel_cd("by_steplr_gamma").items())
    big = (res.sample_panel() or {}).get(setup.n)
    out["test_drop_big"] = f"{np.mean(_rel_drop(big, 'test_loss@d')):.1%}" if big else "n/a"
    out["test_n_big"] = str(big[0].config.n_test) if big else "n/a"
    out["min_test"] = _g(min(np.min(t.metric("test_loss@d")) for trajs in res.panel("by_n").values() for t in trajs))
    by_rho = res.panel_cd("by_rho")
    hill = {r: np.mean([_last(t, "alpha_hill") for t in ts]) for r, ts in by_rho.items()}
    test = {r: np.mean([_last(t, "test_loss@d") for t in ts]) for r, ts in by_rho.items()}
    out["noise_hills"] = ", ".join(f"{v:.3g} at rho_e = {r:g}" for r, v in hill.items())
    out["noise_tests"] = ", ".join(f"{v:.3g}" for v in test.values())
    return out

def more_seeds_texts(more: MoreSeeds, setup: Setup) -> dict[str, str]:
    """Glue texts of the ridge and noise readings over more seeds (:func:`run_more_seeds`), as the records read them:
    seed means with their 95% Student-t intervals of the ridge parts under the figures' readout and of the overlap
    ratios, and the seeds and test-set size."""
    m = _fig8_readout_more(more, setup)
    out = {"more_n_test": f"{more.n_test}",
           "more_ridge_seeds": f"{len(more.ridge_seeds)} ({more.ridge_seeds[0]}-{more.ridge_seeds[-1]})",
           "more_noise_seeds": f"{len(more.noise_seeds)} ({more.noise_seeds[0]}-{more.noise_seeds[-1]})"}
    for name, values in m.items():
        iv = stats.t_interval(values, setup.ci_level)
        out[f"more_{name}"] = f"{iv.estimate:.3g} [{iv.low:.3g}, {iv.high:.3g}]"
    return out

def _fig8_readout_more(more: MoreSeeds, setup: Setup) -> dict[str, np.ndarray]:
    """The per-seed values the ridge (readout s = d) and noise-ratio parts read from ``more``."""
    last = {lam: np.array([r["d"][lam] for r in more.ridge]) for lam in more.ridge[0]["d"]}
    out = {}
    if LAM_BALANCED in last:
        tr0, te0 = last[LAM_BALANCED][:, 0], last[LAM_BALANCED][:, 1]
        for tag, lam in RIDGE_LAMS.items():
            if lam in last:
                tr, te = last[lam][:, 0], last[lam][:, 1]
                out.update({f"train_{tag}": tr - tr0, f"test_{tag}": te - te0, f"gap_{tag}": (te - tr) - (te0 - tr0)})
    ratio = more.noise[:, 0, :] / more.noise[:, 1, :]
    out.update({"ou": ratio[:, 0], "ov": ratio[:, 1]})
    return out

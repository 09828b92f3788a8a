"""The one-step Adam scaling chapter's page: the tables, figures and prose numbers its notebook shows, from the runs
(:mod:`htlib.experiments.one_step.compute`) and the measures (:mod:`htlib.experiments.one_step.measures`).  Outside
the result-cache key."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from htlib import stats
from htlib.records import PAPER_SETTING
from htlib.two_layer import READOUT_SCALES
from htlib.experiments.one_step.compute import Fig2Result, Fig3Result, MODE_MASS, OPTIMIZERS, SIGN_FACTOR, ScalingResult, Setup
from htlib.experiments.one_step.measures import BIMODAL_ETA, GRID_FIELDS, PAPER_ETAS, READOUT_NAMES, SWEET_SPOT, TABLE, _holds, rule_spec

NAMES = {"gd": "GD", "adam": "FB-Adam"}

RULE_NAMES = {"spike": "spike", "sim": "sim", "kta": "KTA", "loss": "loss"}

def fig2_table(res: Fig2Result) -> pd.DataFrame:
    """Per panel: ``lambda_max / lambda_+`` and the eigenvalues above ``lambda_+`` (seed 0, seed range), modes."""
    def row(name, runs, modes):
        ratio = np.array([r.esd[-1][-1] / res.edge for r in runs])
        above = np.array([int(np.sum(r.esd[-1] > res.edge)) for r in runs])
        return {"run": name, "lambda_max / lambda_+ (seed 0)": f"{ratio[0]:.4g}",
                "seed range": f"{ratio.min():.4g} - {ratio.max():.4g}",
                "eigenvalues above lambda_+ (seed 0)": int(above[0]),
                "log-ESD modes per seed": ", ".join(str(m.count) for m in modes)}
    rows = [row("W0", res.init, res.modes["init"])]
    rows += [row(f"{NAMES[o]}, eta = {e:g}", res.runs[(o, e)], res.modes[(o, e)]) for o, e in res.panels]
    return pd.DataFrame(rows)

def _first(etas, values) -> float | None:
    return next((float(e) for e, v in zip(etas, values) if v), None)

def _eta(x: float | None) -> str:
    return "none in grid" if x is None else f"{x:g}"

def rule_table(fig3: Fig3Result, readout: str = "d") -> pd.DataFrame:
    """The seed mean of each rule's statistic per grid eta and optimizer; last rows: the rule and the first grid eta
    meeting it (seed mean, and each seed's own with counts)."""
    etas = fig3.grid.etas
    cols = {f"{NAMES[o]} {RULE_NAMES[rule]}": (rule, fig3.statistic(rule, o, readout))
            for rule in RULE_NAMES for o in OPTIMIZERS}
    rows = [{"eta": f"{e:g}", **{k: f"{np.nanmean(v[j]):.3g}" for k, (_, v) in cols.items()}}
            for j, e in enumerate(etas)]
    rows.append({"eta": "rule", **{k: f"{rule_spec(r).op} {rule_spec(r).level:g}" for k, (r, _) in cols.items()}})
    rows.append({"eta": "first eta (mean)", **{k: _eta(_first(etas, [_holds(r, x) for x in np.nanmean(v, axis=1)]))
                                               for k, (r, v) in cols.items()}})
    def seeds(r, v):
        firsts = [_eta(_first(etas, [_holds(r, x) for x in v[:, s]])) for s in range(v.shape[1])]
        order = sorted(set(firsts), key=lambda t: (t == "none in grid", float(t) if t[0].isdigit() else 0))
        return ", ".join(f"{t} ({firsts.count(t)})" for t in order)
    rows.append({"eta": "first eta (seeds)", **{k: seeds(r, v) for k, (r, v) in cols.items()}})
    return pd.DataFrame(rows)

def fig3_table(res: Fig3Result) -> pd.DataFrame:
    """Seed means of train/test loss, KTA and ``sim`` per optimizer, eta and readout, initialization first."""
    grid, rows, cols = res.grid, [], (("train_loss", "train"), ("test_loss", "test"), ("kta", "KTA"))
    for s in READOUT_SCALES:
        readout = "d" if s == "d" else "sqrt(d)"
        rows.append({"readout": readout, "eta": "init",
                     **{f"{NAMES[o]} {h}": f"{res.init_mean(f'{m}@{s}'):.4g}" for o in OPTIMIZERS for m, h in cols},
                     **{f"{NAMES[o]} sim": f"{res.init_mean('sim'):.3g}" for o in OPTIMIZERS}})
        rows += [{"readout": readout, "eta": f"{eta:g}",
                  **{f"{NAMES[o]} {h}": f"{grid.mean(f'{m}@{s}', o)[j]:.4g}" for o in OPTIMIZERS for m, h in cols},
                  **{f"{NAMES[o]} sim": f"{grid.mean('sim', o)[j]:.3g}" for o in OPTIMIZERS}}
                 for j, eta in enumerate(grid.etas)]
    return pd.DataFrame(rows)

def _g(x: float, fmt: str = ".3g") -> str:
    return "n/a" if x is None or not np.isfinite(x) else format(float(x), fmt)

def rule_numbers() -> dict[str, str]:
    """The rules' levels, the paper's learning rates and the other levels the prose quotes, from :data:`TABLE`."""
    out = {f"rule_{k}": f"{rule_spec(k).level:g}" for k in RULE_NAMES}
    out.update(rule_loss_pct=f"{rule_spec('loss').level:.0%}", rule_spike_pct=f"{rule_spec('spike').level - 1:.0%}",
               rule_kta_pct=f"{rule_spec('kta').level - 1:.0%}",
               rule_kta_first=f"{TABLE['kta_gd'].parts[0].revised_from:g}")
    out.update({f"paper_eta_{o}": f"{e:g}" for o, e in PAPER_ETAS.items()})
    peak = TABLE["kta_rev"].parts[0].level
    out.update(adam_train_drop=f"{1 - TABLE['adam_loss'].parts[0].level:.0%}", mode_mass=f"{MODE_MASS:.0%}",
               bimodal_eta=f"{BIMODAL_ETA:g}", exponent_band=f"{TABLE['thm_2'].level[1]:g}",
               kta_band=f"[{10 ** peak[0]:g}, {10 ** peak[1]:g}]")
    return out

def setting_numbers(setup: Setup) -> dict[str, str]:
    """The setting of the run, as the opening paragraph states it (keys ``set_*``)."""
    out = dict(n=str(setup.n), d=str(setup.d), h=str(setup.h), seeds=str(setup.seeds), n_test=str(setup.n_test),
               n_etas=str(len(setup.etas)), n_runs=str(2 * len(setup.etas) * setup.seeds),
               setting=("the paper's" if setup.deviations(GRID_FIELDS) == PAPER_SETTING
                        else "a reduced one (" + setup.deviations(GRID_FIELDS) + ")"),
               scaling_h=str(setup.scaling_h), scaling_dmin=str(min(setup.scaling_ds)),
               scaling_dmax=str(max(setup.scaling_ds)), scaling_seeds=str(setup.scaling_seeds),
               scaling_hs=", ".join(map(str, setup.scaling_hs)),
               readout=READOUT_NAMES[setup.readout], ci=f"{setup.ci_level:.0%}",
               dof=str(setup.seeds - 1), scaling_dof=str(setup.scaling_seeds - 1))
    return {f"set_{k}": v for k, v in out.items()}

def fig2_numbers(res: Fig2Result) -> dict[str, str]:
    """Per panel (``gd1``, ``adam1``, ...): eta, ``lambda_max / lambda_+``, eigenvalues above the edge and the 99th
    percentile (seed 0); and the mode counts."""
    out = {"w0_ratio": _g(res.init[0].esd[-1][-1] / res.edge, ".4g"),
           "w0_modes": ", ".join(str(m.count) for m in res.modes["init"])}
    for o in OPTIMIZERS:
        for i, (opt, eta) in enumerate([p for p in res.panels if p[0] == o], 1):
            e = res.runs[(opt, eta)][0].esd[-1]
            out.update({f"{o}{i}_eta": f"{eta:g}", f"{o}{i}_ratio": _g(e[-1] / res.edge, ".3g"),
                        f"{o}{i}_above": str(int(np.sum(e > res.edge))),
                        f"{o}{i}_q99": _g(np.quantile(e, 0.99) / res.edge, ".3g")})
    modes = res.modes.get(("adam", BIMODAL_ETA))
    out["bimodal_modes"] = ", ".join(str(m.count) for m in modes) if modes else "not run"
    dips = [m.dip for m in modes] if modes else []
    out["bimodal_dip"] = f"{np.nanmin(dips):.2f}-{np.nanmax(dips):.2f}" if dips and np.isfinite(dips).any() else "n/a"
    locs = [m.locations for m in modes if m.count >= 2] if modes else []
    out["bimodal_low"] = _g(np.mean([10 ** l[0] for l in locs]) / res.edge) if locs else "n/a"
    out["bimodal_high"] = _g(np.mean([10 ** l[-1] for l in locs]) / res.edge) if locs else "n/a"
    return out

def fig3_numbers(res: Fig3Result, readout: str, level: float = 0.95) -> dict[str, str]:
    """The first grid eta of every rule and optimizer, the statistics (seed mean, t-interval) at the paper's eta and
    the one below, the predicted spike thresholds and the initial losses."""
    out, etas = {}, list(map(float, res.grid.etas))
    for rule in RULE_NAMES:
        for o in OPTIMIZERS:
            v = res.statistic(rule, o, readout)
            ivs = [stats.t_interval(v[k], level, drop_nonfinite=True) for k in range(len(etas))]
            out[f"first_{rule}_{o}"] = _eta(_first(etas, [_holds(rule, iv.estimate) for iv in ivs]))
            j = etas.index(PAPER_ETAS[o]) if PAPER_ETAS[o] in etas else -1
            out[f"at_{rule}_{o}"] = _g(ivs[j].estimate) if j >= 0 else "n/a"
            out[f"below_eta_{o}"] = f"{etas[j - 1]:g}" if j > 0 else "n/a"
            for name, k in (("at", j), ("below", j - 1)):
                iv = ivs[k] if k >= 0 and j >= 0 else None
                fmt = ".1%" if rule == "loss" else ".3g"
                out[f"{name}_{rule}_{o}_ci"] = ("n/a" if iv is None else
                                                f"{iv.estimate:{fmt}} [{iv.low:{fmt}}, {iv.high:{fmt}}]")
            if rule == "loss":  # the onset: the first grid eta at which a drop above 0 holds, interval excluding 0
                out[f"onset_loss_{o}"] = _eta(_first(etas, [iv.low > 0 for iv in ivs]))
            if rule == "loss" and o == "adam":  # the drop the review's case (2) reads
                lo, hi = SWEET_SPOT["sweet2"]
                idx = [k for k, e in enumerate(etas) if lo <= e <= hi]
                iv = max((ivs[k] for k in idx), key=lambda i: i.estimate, default=None)
                out[f"sweet2_loss_{o}_ci"] = ("n/a" if iv is None else
                                              f"{iv.estimate:.1%} [{iv.low:.1%}, {iv.high:.1%}]")
    out.update(pred_gd=_g(res.predicted["gd"]), pred_adam=_g(res.predicted["adam"], ".2g"))
    losses, g = ("train_loss", "test_loss"), res.grid
    out.update({f"init_{m}_{s}": _g(res.init_mean(f"{m}@{s}")) for s in READOUT_SCALES for m in losses})
    rel = {(m, o, s): g.mean(f"{m}@{s}", o) / res.init_mean(f"{m}@{s}") - 1
           for o in OPTIMIZERS for s in READOUT_SCALES for m in losses}
    out.update({f"maxmove_{m}_{o}_{s}": f"{np.nanmax(np.abs(r)):.1%}" for (m, o, s), r in rel.items()})
    out.update(n_diverged=str(int(g.diverged.sum())), sim_init=_g(res.init_mean("sim")),
               inv_sqrt_d=_g(1 / math.sqrt(res.init[0].config.d)))
    return out

def scaling_numbers(res: ScalingResult) -> dict[str, str]:
    """The fitted exponents (with intervals) and the range of each ratio, for the prose."""
    out = {f"exp_{k}": f"{f.slope:+.3f}" for k, f in res.fits.items()}
    out.update({f"ci_{k}": f"[{f.low:+.3f}, {f.high:+.3f}]" for k, f in res.fits.items()})
    for k in ("adam_frob", "adam_spec", "eta_f", "eta_2"):
        out[f"lo_{k}"], out[f"hi_{k}"] = _g(res.values[k].min()), _g(res.values[k].max())
    last = [r for c, r in zip(res.configs, res.norms) if c.d == max(res.ds) and c.seed == 0][0]
    out.update(nobc_frob_last=f"{last.adam_nobc_frob / last.sign_frob / SIGN_FACTOR:.3f}",
               bc_frob_last=f"{last.adam_frob / last.sign_frob:.3f}",
               kappa_last=_g(res.values["adam_spec"][res.ds == max(res.ds)].mean()), d_last=str(int(max(res.ds))))
    for k, stat in res.residual.items():
        x, (low, high) = stat.at(())
        out[f"res_{k}"] = f"{x:+.3f}"
        out[f"res_ci_{k}"] = f"[{low:+.3f}, {high:+.3f}]" if np.isfinite(low) else "(no interval: one seed)"
    return out

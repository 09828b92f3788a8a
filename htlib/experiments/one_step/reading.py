"""What the one_step chapter reads from its cached results: the claims table (``claims.toml``), the measurements,
tables and glue; outside the result-cache key, so editing a level, a gate or a sentence recomputes nothing."""

from __future__ import annotations

import math
import operator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.stats

from htlib import archive, stats
from htlib.claims import Measurement, Spec, judge_table, read_table
from htlib.records import PAPER_SETTING, Claim
from htlib.two_layer import READOUT_SCALES
from htlib.experiments.one_step.compute import (COR_FORMS, ONSET_CS, Fig2Result, Fig3Result, MODE_MASS, OPTIMIZERS,
    SCALING_QUANTITIES, SIGN_FACTOR, ScalingResult, Setup, finite_size_form, residual_exponents)

TABLE: dict[str, Spec] = read_table(Path(__file__).with_name("claims.toml"))
"""The chapter's claims table: every level the claims, the tables and the prose read."""

NAMES = {"gd": "GD", "adam": "FB-Adam"}
READOUT_NAMES = {"d": "s = d (the figures' readout)", "sqrt_d": "s = sqrt(d) (the written readout)"}
RULE_NAMES = {"spike": "spike", "sim": "sim", "kta": "KTA", "loss": "loss"}
GRID_FIELDS = ("n", "d", "h", "n_test", "rho_e", "lam", "bias_correction", "etas", "seeds")
"""The fields a claim of the Fig. 2-3 grid depends on."""
PAPER_ETAS: dict[str, float] = {"gd": 2000.0, "adam": 0.1}
"""The learning rates the paper names as one step's thresholds (§4.1, Figs. 2-3), per optimizer."""
BIMODAL_ETA = 10.0
"""The FB-Adam learning rate of Fig. 2(d)."""
SWEET_SPOT = {"sweet1": (0.0, 0.01), "sweet2": (0.01, 1.0)}
"""The review's one-step cases (1) eta < 0.01 and (2) 0.01 <= eta <= 1 (case (3) is Fig. 3(b)-(c))."""
_OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}

def rule_spec(rule: str) -> Spec:
    """The spec of a learning-rate rule (spike, sim, KTA, loss) at the paper's GD eta: its level and op."""
    spec = TABLE[f"{rule}_gd"]
    return spec.parts[0] if spec.parts else spec

def _holds(rule: str, x: float) -> bool:
    return bool(_OPS[rule_spec(rule).op](x, rule_spec(rule).level))

def _readout_setting(setup: Setup, readout: str) -> str:
    base = setup.deviations(GRID_FIELDS)
    return base if readout == "d" else READOUT_NAMES[readout] + ("" if base == PAPER_SETTING else f"; {base}")

def _variant_setting(setup: Setup, key: str) -> str:
    """A variant's own convention (its row's ``setting``), and the grid's deviations from the paper's, if any."""
    base = setup.deviations(GRID_FIELDS)
    return TABLE[key].setting + ("" if base == PAPER_SETTING else f"; {base}")

def _runs(values, *, note: str = "", what: str = "") -> Measurement:
    """The per-seed values of one statistic; a diverged run makes the setting unable to test it."""
    v = np.asarray(values, dtype=float)
    if bad := int(np.sum(~np.isfinite(v))):
        return Measurement(values=v, cannot_test=f"{bad} of {v.size} runs diverged {what} (Fig. 3 table)")
    return Measurement(values=v, runs_text=f"{v.size} seeds", note=note)

def _parts(key: str, setting: str, **parts: Measurement) -> Measurement:
    return Measurement(setting=setting, parts={f"{key}-{k}": m for k, m in parts.items()})

def _at_below(fig3: Fig3Result, rule: str, o: str, readout: str) -> tuple[Measurement, Measurement]:
    """A rule's per-seed statistic at the paper's eta and at the grid eta below it."""
    etas, p = list(map(float, fig3.grid.etas)), PAPER_ETAS[o]
    if p not in etas:
        missing = Measurement.not_run(f"the grid lacks the paper's eta = {p:g}; the paper's grid (make paper) has it",
                                      why="not_in_run", what=f"eta = {p:g}")
        return missing, missing
    j, stat = etas.index(p), fig3.statistic(rule, o, readout)
    below = (_runs(stat[j - 1], note=f"eta = {etas[j - 1]:g}", what=f"at eta = {etas[j - 1]:g}") if j else
             Measurement.not_run(f"no grid eta lies below the paper's {p:g}"))
    return _runs(stat[j], what=f"at eta = {p:g}"), below

def _worst(v: np.ndarray, idx: list[int], etas, pick, what: str) -> Measurement:
    """The per-seed values at the grid eta of ``idx`` whose seed mean ``pick`` (np.argmax or np.argmin) selects."""
    j = idx[int(pick(np.nanmean(v[idx], axis=1)))]
    return _runs(v[j], note=f"at eta = {etas[j]:g}, {what}", what=f"at eta = {etas[j]:g}")

def measure_fig2(fig2: Fig2Result, setup: Setup) -> dict[str, Measurement]:
    """Fig. 2(d): the number of log-ESD modes of each seed at :data:`BIMODAL_ETA`."""
    modes = fig2.modes.get(("adam", BIMODAL_ETA))
    if not modes:
        return {"bimodal": Measurement.not_run(f"fig2_adam_etas lacks eta = {BIMODAL_ETA:g}; the paper's has it",
                                                   why="not_in_run", what=f"eta = {BIMODAL_ETA:g}")}
    dips = [m.dip for m in modes]
    note = (f"W0: {', '.join(str(m.count) for m in fig2.modes['init'])} modes; "
            f"dip/peak {np.nanmin(dips):.2f}-{np.nanmax(dips):.2f}")
    return {"bimodal": Measurement(values=[m.count for m in modes], runs_text=f"{len(modes)} seeds", note=note,
                                   setting=setup.deviations(("n", "d", "h", "rho_e", "bias_correction")))}

def measure_fig3(fig3: Fig3Result, setup: Setup) -> dict[str, Measurement]:
    """Fig. 3 and the review's cases, under both readouts (``_sqrt_d``: the written one, a variant)."""
    out: dict[str, Measurement] = {}
    etas = list(map(float, fig3.grid.etas))
    for s in READOUT_SCALES:
        sfx, setting = ("" if s == "d" else "_sqrt_d"), _readout_setting(setup, s)
        for rule, o in (("spike", "gd"), ("spike", "adam"), ("sim", "gd"), ("sim", "adam"), ("kta", "gd"),
                        ("kta", "adam"), ("loss", "gd")):
            if s != "d" and rule in ("spike", "sim"):
                continue  # the readout changes neither W1's spectrum nor its alignment
            at, below = _at_below(fig3, rule, o, s)
            out[f"{rule}_{o}{sfx}"] = _parts(f"{rule}_{o}{sfx}", setting, at=at, below=below)
        key, idx = f"adam_loss{sfx}", [j for j, e in enumerate(etas) if e > 1.0]
        if idx and 1.0 in etas:
            tr, te = fig3.relative("train_loss", "adam", s), fig3.relative("test_loss", "adam", s)
            out[key] = _parts(key, setting, train=_worst(tr, idx, etas, np.argmax, "the largest seed mean"),
                              test=_worst(te, idx, etas, np.argmin, "the smallest seed mean"))
        else:
            out[key] = Measurement.not_run("the grid needs eta = 1 and an eta > 1; the paper's has them")
        v = fig3.grid.get(f"kta@{s}", "adam")
        peaks = np.log10(np.asarray(etas)[np.nanargmax(v, axis=0)])
        out[f"kta_rev{sfx}"] = _parts(f"kta_rev{sfx}", setting, peak=_runs(peaks),
                                      reversal=_runs(v[-1] / np.nanmax(v, axis=0), note=f"eta_max = {etas[-1]:g}"))
        if s == "d":
            out.update(measure_onsets(fig3, setup))
        for case, (lo, hi) in SWEET_SPOT.items():
            idx = [j for j, e in enumerate(etas) if (lo <= e < hi if case == "sweet1" else lo <= e <= hi)]
            key = f"{case}{sfx}"
            if not idx:
                out[key] = Measurement.not_run("no grid eta lies in the range; the paper's grid has one")
                continue
            out[key] = _parts(key, setting, **{r: _worst(fig3.statistic(r, "adam", s), idx, etas, np.argmax,
                                                         "the largest seed mean in the range")
                                               for r in ("loss", "kta", "sim")})
    return out

def measure_onsets(fig3: Fig3Result, setup: Setup) -> dict[str, Measurement]:
    """GD below its threshold: is the test loss's drop larger with the spike than at the grid eta below (the paper's
    conclusion), and do the KTA and the losses move at all there (stricter readings); FB-Adam's sweet-spot onset at
    the paper's FB-Adam threshold."""
    etas, p = list(map(float, fig3.grid.etas)), PAPER_ETAS["gd"]
    gen_keys = ("spike_gen", "spike_gen_sqrt_d")
    out: dict[str, Measurement] = {}
    if p not in etas or etas.index(p) == 0:
        out |= {k: Measurement.not_run(f"the grid needs the paper's eta = {p:g} and one below it; the paper's has them")
                for k in (*gen_keys, "spike_gen_first", "kta_gd_onset", "loss_gd_onset")}
    else:
        j = etas.index(p)
        no_spike = (f"the spike rule holds at eta = {etas[j - 1]:g} too: no run without a spike to compare"
                    if _holds("spike", float(np.nanmean(fig3.statistic("spike", "gd")[j - 1]))) else "")
        for key, s in zip(gen_keys, READOUT_SCALES):
            test = 1 - fig3.grid.get(f"test_loss@{s}", "gd") / fig3.init_values(f"test_loss@{s}")
            falls, n = int(np.sum(test[j - 1] > 0)), int(np.sum(np.isfinite(test[j - 1])))
            early = n and not no_spike and scipy.stats.binomtest(falls, n, alternative="greater").pvalue < 0.05
            below = (f"eta = {etas[j - 1]:g}, where no spike appears" + (
                f": there the test loss already falls in {falls} of {n} seeds, so the improvement begins before "
                "the spike" if early else ""))
            more = replace(_runs(test[j] - test[j - 1], note=below), cannot_test=no_spike)
            out[key] = _parts(key, _readout_setting(setup, s), **{"with": _runs(test[j]), "more": more})
            if key == "spike_gen":  # the first criterion: no drop at all without the spike
                without = replace(_runs(test[j - 1], note=f"eta = {etas[j - 1]:g}"), cannot_test=no_spike)
                out["spike_gen_first"] = _parts("spike_gen_first", _variant_setting(setup, "spike_gen_first"),
                                                **{"with": _runs(test[j]), "without": without})
        for rule in ("kta", "loss"):
            at, below = _at_below(fig3, rule, "gd", "d")
            out[f"{rule}_gd_onset"] = _parts(f"{rule}_gd_onset", _readout_setting(setup, "d"), at=at, below=below)
    q = PAPER_ETAS["adam"]
    out["sweet2_onset"] = (replace(_runs(fig3.statistic("loss", "adam", "d")[etas.index(q)]),
                                   setting=_readout_setting(setup, "d")) if q in etas else
                           Measurement.not_run(f"the grid lacks eta = {q:g}; the paper's has it", why="not_in_run",
                                               what=f"eta = {q:g}"))
    return out

NO_SIZES = "the paper gives no sizes for its scaling statements: the sweep is not a reduction of a larger setting"

def measure_scaling(scaling: ScalingResult, setup: Setup) -> dict[str, Measurement]:
    """Theorem 4.1 and Corollary 4.2: each seed's exponent in d (claims), the pooled fit's (checks)."""
    setting = (f"h = {scaling.h} fixed, d = {', '.join(str(int(d)) for d in sorted(set(scaling.ds)))}, "
               f"n = {setup.n / setup.d:g} d, {len({c.seed for c in scaling.configs})} seeds "
               "(the paper gives no sizes for this check)")
    nobc = "eq. (2): FB-Adam without bias correction; " + setting
    ds, seeds = scaling.ds, np.array([c.seed for c in scaling.configs])
    contrast = {k: f"contrast {SCALING_QUANTITIES[k][0]} ~ d^{scaling.fits[k].slope:+.3f}"
                for k in ("gd_spec", "gd_eta_2")}
    def per_seed(key: str, note: str) -> Measurement:
        forms = np.array([finite_size_form(key, c.h, c.d) if key in COR_FORMS else 1.0 for c in scaling.configs])
        x = residual_exponents(ds, seeds, scaling.values[key], forms)
        return Measurement(values=x, runs_text=f"{x.size} seeds, each seed's exponent fitted over "
                                                f"{len(set(ds))} sizes", note=note)
    def pooled(key: str) -> Measurement:  # a check: why it holds is the table's
        f = scaling.fits[key]
        return Measurement(values=[f.slope], runs_text="one least-squares fit over every size and seed",
                           note=f"{f.level:.0%} interval [{f.low:+.3f}, {f.high:+.3f}]")
    out = {
        "thm_f": pooled("adam_frob"), "thm_2": per_seed("adam_spec", contrast["gd_spec"]),
        "thm_f_nobc": pooled("adam_nobc_frob"), "thm_2_nobc": per_seed("adam_nobc_spec", contrast["gd_spec"]),
        "cor_f": per_seed("eta_f", f"finite-size form {COR_FORMS['eta_f']} divided out; {contrast['gd_eta_2']}"),
        "cor_2": per_seed("eta_2", f"finite-size form {COR_FORMS['eta_2']} divided out (raw exponent "
                          f"{scaling.fits['eta_2'].slope:+.3f}); {contrast['gd_eta_2']}"),
    }
    cor_2 = ("Thm. 4.1's sweep, with ||W0||_2 at the MP edge; h is fixed here and sqrt(h) divided out (the "
             "width sweep reads h): ")
    settings = {"thm_f_nobc": nobc, "thm_2_nobc": nobc, "cor_f": "Thm. 4.1's sweep, with ||W0||_F in closed form: "
                + setting, "cor_2": cor_2 + setting}
    out = {k: replace(m, setting=settings.get(k, setting), reduction_check=NO_SIZES) for k, m in out.items()}
    return out | measure_width(scaling, setup)

def spike_onsets(scaling: ScalingResult) -> np.ndarray:
    """Per width and seed, the ``eta sqrt(h)`` at which one FB-Adam step first meets the spike rule: interpolated
    in ``log c`` between the two points of :data:`ONSET_CS` around the crossing (NaN where the grid holds none)."""
    level, logc = rule_spec("spike").level, np.log(ONSET_CS)
    out = []
    for r in scaling.h_ratios:
        above = np.flatnonzero(r > level)
        i = int(above[0]) if above.size else 0
        if i == 0:
            out.append(np.nan)
            continue
        t = (level - r[i - 1]) / (r[i] - r[i - 1])
        out.append(float(np.exp(logc[i - 1] + t * (logc[i] - logc[i - 1]))))
    return np.array(out)

def measure_width(scaling: ScalingResult, setup: Setup) -> dict[str, Measurement]:
    """Corollary 4.2 in h at fixed d, per seed: the exponent in h of the spike's onset ``eta_c sqrt(h)`` (the claim;
    a variant without its finite-size form), and of ``eta*_2 sqrt(h)`` (Theorem 4.1's norm ratio read in h, a variant),
    each over its finite-size form."""
    cs = scaling.h_configs
    if len({c.h for c in cs}) < 3:
        missing = Measurement.not_run("scaling_hs needs at least 3 widths")
        return {"cor_2_h": missing, "cor_2_h_raw": missing, "thm_2_h": missing}
    hs, seeds = np.array([c.h for c in cs], dtype=float), np.array([c.seed for c in cs])
    forms = np.array([finite_size_form("eta_2", c.h, c.d) for c in cs])
    setting = (f"d = {cs[0].d} fixed, h = {', '.join(str(int(h)) for h in sorted(set(hs)))}, n = {setup.n / setup.d:g} d, "
               f"{len(set(seeds))} seeds, FB-Adam (the paper gives no sizes for this statement)")
    onset = spike_onsets(scaling)
    runs = f"{len(set(seeds))} seeds, each seed's exponent fitted over {len(set(hs))} widths"
    if not np.all(np.isfinite(onset)):
        cor = Measurement(values=[np.nan], cannot_test=f"the spike rule's onset lies outside eta sqrt(h) in "
                          f"[{ONSET_CS[0]:.2g}, {ONSET_CS[-1]:.2g}] in {int(np.sum(~np.isfinite(onset)))} of {onset.size} runs")
        cor_raw = cor
    else:
        x = residual_exponents(hs, seeds, onset, forms)
        eta_c = residual_exponents(hs, seeds, onset / np.sqrt(hs), np.ones_like(hs)).mean()
        cor = Measurement(values=x, runs_text=runs, note=f"eta_c sqrt(h) from {onset.min():.3g} to {onset.max():.3g}; "
                          f"finite-size form {COR_FORMS['eta_2']} divided out; without it eta_c itself ~ "
                          f"h^{eta_c:+.3f} (seed mean), not h^-0.5")
        cor_raw = Measurement(values=residual_exponents(hs, seeds, onset, np.ones_like(hs)), runs_text=runs,
                              note=f"eta_c itself ~ h^{eta_c:+.3f} (seed mean)")
    norm = residual_exponents(hs, seeds, scaling.h_values["eta_2"], forms)
    raw = residual_exponents(hs, seeds, scaling.h_values["eta_2"] / np.sqrt(hs), np.ones_like(hs))
    thm = Measurement(values=norm, runs_text=runs, note=f"eta*_2 itself ~ h^{raw.mean():+.3f} (seed mean)")
    raw_setting = f"{TABLE['cor_2_h_raw'].setting}; {setting}"
    return {k: replace(m, setting=s, reduction_check=NO_SIZES)
            for k, m, s in (("cor_2_h", cor, setting), ("cor_2_h_raw", cor_raw, raw_setting), ("thm_2_h", thm, setting))}

def measure(fig2: Fig2Result, fig3: Fig3Result, scaling: ScalingResult, setup: Setup) -> dict[str, Measurement]:
    """Every row of :data:`TABLE`, measured on the cached results."""
    return {**measure_fig2(fig2, setup), **measure_fig3(fig3, setup), **measure_scaling(scaling, setup)}

def claims(fig2: Fig2Result, fig3: Fig3Result, scaling: ScalingResult, setup: Setup) -> list[Claim]:
    """The chapter's records: :data:`TABLE` judged by :func:`htlib.claims.judge` on :func:`measure`."""
    return judge_table(TABLE, archive.merge(measure(fig2, fig3, scaling, setup), __name__))

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

"""What the one-step Adam scaling chapter measures in its cached runs: one :class:`~htlib.claims.Measurement` per row
of its claims table (``claims.toml``, read into :data:`TABLE`) from :func:`measure`, judged by :func:`claims`. Every
fit and test the chapter's claims read happens here; the page (:mod:`htlib.experiments.one_step.reading`) only words
and draws. Outside the result-cache key."""

from __future__ import annotations

import operator
from dataclasses import replace
from pathlib import Path

import numpy as np
import scipy.stats

from htlib import archive
from htlib.claims import Measurement, Spec, judge_table, read_table
from htlib.records import PAPER_SETTING, Claim
from htlib.two_layer import READOUT_SCALES
from htlib.experiments.one_step.compute import (COR_FORMS, ONSET_CS, Fig2Result, Fig3Result, SCALING_QUANTITIES, ScalingResult, Setup, finite_size_form,
                                                residual_exponents)

TABLE: dict[str, Spec] = read_table(Path(__file__).with_name("claims.toml"))
"""The chapter's claims table: every level the claims, the tables and the prose read."""

READOUT_NAMES = {"d": "s = d (the figures' readout)", "sqrt_d": "s = sqrt(d) (the written readout)"}

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

def _runs(values, *, note: str = "") -> Measurement:
    """The per-seed values of one statistic (a diverged run's is kept: the judge's gate of non-finite runs)."""
    v = np.asarray(values, dtype=float)
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
    below = (_runs(stat[j - 1], note=f"eta = {etas[j - 1]:g}") if j else
             Measurement.not_run(f"no grid eta lies below the paper's {p:g}"))
    return _runs(stat[j]), below

def _worst(v: np.ndarray, idx: list[int], etas, pick, what: str) -> Measurement:
    """The per-seed values at the grid eta of ``idx`` whose seed mean ``pick`` (np.argmax or np.argmin) selects."""
    j = idx[int(pick(np.nanmean(v[idx], axis=1)))]
    return _runs(v[j], note=f"at eta = {etas[j]:g}, {what}")

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

THRESHOLD_ROWS: dict[str, tuple[str, str, str]] = {  # row key: (rule, optimizer, readout) read at the paper's eta
    "spike_gd": ("spike", "gd", "d"), "spike_adam": ("spike", "adam", "d"), "sim_gd": ("sim", "gd", "d"),
    "sim_adam": ("sim", "adam", "d"), "kta_gd": ("kta", "gd", "d"), "kta_adam": ("kta", "adam", "d"),
    "loss_gd": ("loss", "gd", "d"), "kta_gd_sqrt_d": ("kta", "gd", "sqrt_d"),
    "kta_adam_sqrt_d": ("kta", "adam", "sqrt_d"), "loss_gd_sqrt_d": ("loss", "gd", "sqrt_d")}
"""The learning-rate threshold rows of Fig. 3 (the readout changes neither W1's spectrum nor its alignment, so the
spike and sim rules have no ``_sqrt_d`` variant)."""

SWEET_ROWS: dict[str, tuple[str, str]] = {"sweet1": ("sweet1", "d"), "sweet2": ("sweet2", "d"),
                                          "sweet1_sqrt_d": ("sweet1", "sqrt_d"), "sweet2_sqrt_d": ("sweet2", "sqrt_d")}
"""The review's sweet-spot rows: row key -> (range of :data:`SWEET_SPOT`, readout)."""

def measure_fig3(fig3: Fig3Result, setup: Setup) -> dict[str, Measurement]:
    """Fig. 3 and the review's cases, under both readouts (``_sqrt_d``: the written one, a variant)."""
    out: dict[str, Measurement] = {}
    etas = list(map(float, fig3.grid.etas))
    for key, (rule, o, s) in THRESHOLD_ROWS.items():
        at, below = _at_below(fig3, rule, o, s)
        out[key] = _parts(key, _readout_setting(setup, s), at=at, below=below)
    for s in READOUT_SCALES:
        setting = _readout_setting(setup, s)
        key, idx = {"d": "adam_loss", "sqrt_d": "adam_loss_sqrt_d"}[s], [j for j, e in enumerate(etas) if e > 1.0]
        if idx and 1.0 in etas:
            tr, te = fig3.relative("train_loss", "adam", s), fig3.relative("test_loss", "adam", s)
            out[key] = _parts(key, setting, train=_worst(tr, idx, etas, np.argmax, "the largest seed mean"),
                              test=_worst(te, idx, etas, np.argmin, "the smallest seed mean"))
        else:
            out[key] = Measurement.not_run("the grid needs eta = 1 and an eta > 1; the paper's has them")
        v = fig3.grid.get(f"kta@{s}", "adam")
        peaks = np.log10(np.asarray(etas)[np.nanargmax(v, axis=0)])
        key = {"d": "kta_rev", "sqrt_d": "kta_rev_sqrt_d"}[s]
        out[key] = _parts(key, setting, peak=_runs(peaks),
                          reversal=_runs(v[-1] / np.nanmax(v, axis=0), note=f"eta_max = {etas[-1]:g}"))
        if s == "d":
            out.update(measure_onsets(fig3, setup))
        for key, (case, s_row) in SWEET_ROWS.items():
            if s_row != s:
                continue
            lo, hi = SWEET_SPOT[case]
            idx = [j for j, e in enumerate(etas) if (lo <= e < hi if case == "sweet1" else lo <= e <= hi)]
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
        for key, rule in (("kta_gd_onset", "kta"), ("loss_gd_onset", "loss")):
            at, below = _at_below(fig3, rule, "gd", "d")
            out[key] = _parts(key, _readout_setting(setup, "d"), at=at, below=below)
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

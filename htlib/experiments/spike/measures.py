"""What the spike-to-heavy-tail chapter measures in its cached runs: one :class:`~htlib.claims.Measurement` per row of
its claims table (``claims.toml``, read into :data:`TABLE`) from :func:`measure`, judged by :func:`claims`. Every
fit and test the chapter's claims read happens here; the page (:mod:`htlib.experiments.spike.reading`) only words
and draws. Outside the runs' result-cache key; the refits are cached under a key of their own (:func:`measured`)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping

import numpy as np

from htlib import archive, dynamics, spectra
from htlib.cache import cached_call
from htlib.plotting import plain_number
from htlib.dynamics import tail_shape
from htlib.claims import Measurement, judge_table, read_table
from htlib.records import Claim
from htlib.experiments.spike.compute import HILL_HEAVY, PAPER, Setup, run_training
from htlib.experiments.spike.sizes import BIG_FACTOR, N_TEST, SizeRuns, run_sizes
from htlib.two_layer import Trajectory

TABLE = read_table(Path(__file__).with_name("claims.toml"))

NAMES = {"gd": "GD", "adam": "FB-Adam"}

PAPER_STEPS = {1.0: 10.0, 0.1: 1e4, 0.01: 1e6}  # the review's FB-Adam steps to a heavy tail, per learning rate

SLOW_TIMING = {"s_per_step": 0.251, "s_per_record": 0.990, "threads": 1, "sizes": (2000, 1000, 1500),
               "measured": "2026-12-03 23:41 UTC, load 1.0-1.6 on two cores"}
"""Measured wall time of FB-Adam (eta = 0.1) at the paper's sizes ``(n, d, h)`` on one worker thread, as a sweep
runs it: 50 steps with 2 records and 20 steps with 11 records, solved for the seconds per step and per record
(ESD and both readouts).  What the slow run's not-run reason extrapolates from; not a level."""

PAPER_PROTOCOL = ("n", "d", "h", "steps", "eta_gd", "eta_adam", "eta_adam_fig1", "appA_n", "appA_d", "appA_h",
                  "appA_eta_gd", "appA_eta_adam", "ht_steps", "readout", "slow_eta", "slow_seeds")
"""The parameters that make the chapter's runs the paper's own protocol (the slow run's budget is read by its own rows:
not run, or the setting cannot test it): with all of them at :data:`~htlib.experiments.spike.compute.PAPER`'s, a
failure is not put down to a reduced setting (the records' ``reduction_check``)."""

DECAY_KS = (4.0, 6.0)
"""Martin & Mahoney's bulk-decay range of PL_Alpha_KS, ``[4, 6)``, set after the runs had been seen (the §6 row's
revised_because says so)."""

def _name(opt: str, eta: float) -> str:
    return f"{NAMES[opt]} eta={eta:g}"

def spread_summaries(late: Mapping[str, Mapping[str, np.ndarray]], *, block: int) -> dict:
    """``{(run, "U_after" | "V_after"): OverlapSummary}`` of the leading ``block`` of the late overlaps."""
    return {(name, k): dynamics.overlap_summary(ov[k], k=block, n_top=1) for name, ov in late.items()
            for k in ("U_after", "V_after")}

@dataclass(frozen=True)
class FirstStep:
    """First recorded step meeting a heavy-tail reading, bracketed by the record before (``None``: never)."""

    first: int | None
    previous: int | None
    budget: int

    @property
    def text(self) -> str:
        if self.first is None:
            return f"not reached in {self.budget} steps"
        return f"t = {self.first}" if self.previous in (None, self.first - 1) else f"t in ({self.previous}, {self.first}]"

def first_step(steps, flags, budget: int) -> FirstStep:
    """:class:`FirstStep` of the boolean per-record ``flags``."""
    steps = [int(t) for t in steps]
    for i, f in enumerate(flags):
        if f:
            return FirstStep(steps[i], steps[i - 1] if i else None, budget)
    return FirstStep(None, None, budget)

def readings(tr: Trajectory, *, h: int, d: int, rules: spectra.PhaseRules) -> dict[str, FirstStep]:
    """The three readings of "steps to a heavy tail": :attr:`htlib.dynamics.TailShape.heavy`, PL_Alpha_Hill < 2, PL_Alpha_KS < 4."""
    track = dynamics.phase_track(tr.steps, tr.esd, h=h, d=d, rules=rules)
    budget = int(tr.config.steps)
    heavy = [tail_shape(e, h=h, d=d, rules=rules).heavy for e in tr.esd]
    return {"label": first_step(tr.steps, heavy, budget),
            "Hill": first_step(tr.steps, track.alpha_hill < HILL_HEAVY, budget),
            "KS": first_step(tr.steps, track.alpha_ks < rules.heavy_alpha, budget)}

def bridge_reading(track: dynamics.PhaseTrack, *, heavy_alpha: float) -> dict:
    """§6 along one run: the first bulk+spikes step, the first later step with PL_Alpha_KS below ``heavy_alpha``
    and the steps between in :data:`DECAY_KS` (``bridged`` is ``None`` without both ends)."""
    steps, ks = [int(t) for t in track.steps], np.asarray(track.alpha_ks, dtype=float)
    bs = next((i for i, p in enumerate(track.phase) if p == "bulk+spikes"), None)
    ht = None if bs is None else next((i for i in range(bs + 1, len(steps)) if ks[i] < heavy_alpha), None)
    between = [] if ht is None else [steps[i] for i in range(bs + 1, ht) if DECAY_KS[0] <= ks[i] < DECAY_KS[1]]
    return {"bs": None if bs is None else steps[bs], "bs_index": bs, "ht": None if ht is None else steps[ht],
            "decay": between, "bridged": None if ht is None else bool(between), "ks": ks}

def _one(x: float, undefined: str, note: str = "") -> Measurement:
    """One seed's value of a row, or (not finite) one that cannot test it."""
    x = float(x)
    return (Measurement([x], runs_text="1 seed", note=note) if np.isfinite(x) else
            Measurement(cannot_test=undefined, runs_text="1 seed", note=note))

def _first(fs: FirstStep, band, note: str = "") -> Measurement:
    """A first heavy-tailed step against ``band``; a run past the band without one counts as its budget + 1."""
    if fs.first is not None:
        return _one(fs.first, "", f"{fs.text}; {note}" if note else fs.text)
    if fs.budget >= band[1]:  # censored: the first step is at least budget + 1, and counts as that
        return _one(fs.budget + 1, "", f"{fs.text}: at least {fs.budget + 1:,}, counted as {fs.budget + 1}; {note}"
                    .rstrip("; "))
    return Measurement(cannot_test=f"{fs.text}, and the run ends inside [{band[0]:.3g}, {band[1]:.3g}] (steps table)",
                       runs_text="1 seed")

def _pool(by_seed: Mapping[int, Measurement]) -> Measurement:
    """One row's per-seed measurements as one over the seeds; a seed that cannot test the row makes the row
    untestable (leaving it out would choose the runs by their outcome)."""
    ms = list(by_seed.values())
    first = ms[0]
    if not first.ran:  # not run: the same at every seed (the reason is the setting's)
        return first
    runs = f"{len(ms)} seed{'s' if len(ms) != 1 else ''} ({', '.join(map(str, by_seed))})"
    note = first.note if len(ms) == 1 else "; ".join(f"seed {seed}: {m.note.strip()}" for seed, m in by_seed.items()
                                                     if m.note.strip())
    bad = {seed: m.cannot_test.strip() for seed, m in by_seed.items() if m.cannot_test.strip()}
    if len(set(bad.values())) == 1 and len(bad) == len(ms):
        cannot = next(iter(bad.values())) + ("" if len(ms) == 1 else f" (at every seed of {runs})")
    else:
        cannot = "; ".join(f"at seed {seed}, {why}" for seed, why in bad.items())
    # the short reason of the first seed that cannot test the row
    why = next(({"why": m.why, "why_numbers": m.why_numbers} for m in ms if m.cannot_test.strip() and m.why), {})
    if first.parts:
        return Measurement(parts={k: _pool({seed: m.parts[k] for seed, m in by_seed.items()}) for k in first.parts},
                           cannot_test=cannot, runs_text=runs, note=note, setting=first.setting, **why)
    values = [v for seed, m in by_seed.items() for v in m.values if np.isfinite(v)]
    return Measurement(values, cannot_test=cannot, runs_text=runs, note=note, setting=first.setting, **why)

def _alpha(x: float) -> str:
    return f"{x:.3g}" if np.isfinite(x) else "none (no tail)"

def measure(runs: Mapping[int, Mapping[tuple, Trajectory]], setup, sizes: SizeRuns | None = None
            ) -> dict[str, Measurement]:
    """One :class:`~htlib.claims.Measurement` per row of :data:`TABLE` from the cached runs ``{seed: {key:
    Trajectory}}``, one value per seed; the review's eta = 1 rows at both sizes from ``sizes``
    (:func:`~htlib.experiments.spike.sizes.run_sizes`, not run without it)."""
    per_seed = {seed: _measure_seed(r, setup) for seed, r in runs.items()}
    own = {**_slow(runs, setup),
           **_eta1_sizes(sizes, setup, {seed: r[("adam", setup.eta_adam)] for seed, r in runs.items()})}
    out = {k: own[k] if k in own else _pool({seed: m[k] for seed, m in per_seed.items()}) for k in TABLE}
    h, d, n = setup.h, setup.d, len(per_seed)
    seeds = "one seed" if n == 1 else f"{n} seeds"
    def setting(k: str, m: Measurement) -> str:
        text = m.setting or TABLE[k].setting
        if m.ran or m.setting:  # what ran, ran at every seed (a row not run keeps its own words)
            text = text.replace("one seed", seeds)
        if (h, d) != (1500, 1000):  # the records name a reduced size
            text = text.replace("the paper's sizes and protocol", f"h x d = {h} x {d} (paper: 1500 x 1000)")
        elif not changed:  # the record says "the paper's setting" itself, from the comparison below
            text = text.replace("the paper's sizes and protocol; ", "")
        return text
    changed = [f for f in PAPER_PROTOCOL if getattr(setup, f, None) != getattr(PAPER, f)]
    check = "" if changed else (f"the runs are at the paper's own sizes, learning rates and step counts (n, d, h = "
                                f"{setup.n}, {d}, {h}; App. A {setup.appA_n}, {setup.appA_d}, {setup.appA_h}): "
                                "nothing is reduced")
    big = (f"the runs are at §5.3's own size n = {BIG_FACTOR * setup.n} with the paper's d, h = {d}, {h}, "
           "learning rates and step counts, on test sets larger than the paper's: nothing is reduced")
    return {k: replace(m, setting=setting(k, m), reduction_check=(big if check and k == "review-eta1-n8000" else check),
                       deviations=tuple(changed))
            for k, m in out.items()}

FIG1_ROWS: dict[str, tuple[str, str, str, str]] = {  # optimizer -> its Fig. 1 rows: the label and KS, the label
    "gd": ("fig1-gd", "fig1-gd-first", "fig1-gd-shape", "fig1-gd-strict"),  # alone, the tail's shape, the strict rule
    "adam": ("fig1-adam", "fig1-adam-first", "fig1-adam-shape", "fig1-adam-strict")}

def _measure_seed(runs: Mapping[tuple, Trajectory], setup) -> dict[str, Measurement]:
    s, rules, h, d = setup, setup.rules(), setup.h, setup.d
    rep = lambda e: dynamics.esd_report(e, h=h, d=d, rules=rules)  # noqa: E731
    memo: dict = {}
    def heavy(key) -> list[bool]:  # each ESD of runs[key] heavy-tailed with and without lambda_1
        if key not in memo:
            memo[key] = [tail_shape(e, h=h, d=d, rules=rules).heavy for e in runs[key].esd]
        return memo[key]
    out: dict[str, Measurement] = {}
    # Fig. 4: one step of FB-Adam and of GD.
    one = {_name("adam", s.eta_adam): dynamics.step_overlaps(runs[("adam", s.eta_adam)], 0),
           _name("gd", s.eta_gd): dynamics.step_overlaps(runs[("gd", s.eta_gd)], 0)}
    before = max(dynamics.overlap_summary(ov[k], k=s.block, n_top=1).top_values[0]
                 for ov in one.values() for k in ("U_before", "V_before"))
    out["fig4"] = Measurement(parts={
        "fig4-after": _one(min(float(ov[k][0, 0]) for ov in one.values() for k in ("U_after", "V_after")), "", "; ".join(
            f"{n}: O_U(1,1) {ov['U_after'][0, 0]:.3f}, O_V(1,1) {ov['V_after'][0, 0]:.3f}" for n, ov in one.items())),
        "fig4-before": _one(before, "")})
    out.update(_alignment(runs, s, {("adam", s.eta_adam): one[_name("adam", s.eta_adam)],
                                    ("gd", s.eta_gd): one[_name("gd", s.eta_gd)]}))
    # Figs. 5-6: ten steps of FB-Adam, plain and with WN.
    plain, wn, gd = runs[("adam", s.eta_adam)], runs[("adam-wn", s.eta_adam)], runs[("gd", s.eta_gd)]
    late = {"plain": dynamics.step_overlaps(plain, s.steps - 1), "WN": dynamics.step_overlaps(wn, s.steps - 1)}
    w = {"plain": dynamics.spectrum_width(plain.esd[-1]), "WN": dynamics.spectrum_width(wn.esd[-1])}
    out["fig6b"] = _one(w["WN"].bulk_decades - w["plain"].bulk_decades, "", f"{w['WN'].bulk_decades:.3g} (WN) vs "
                        f"{w['plain'].bulk_decades:.3g} (plain); lambda_max/mean {w['WN'].max_over_mean:.3g} vs "
                        f"{w['plain'].max_over_mean:.3g}")
    sp = spread_summaries(late, block=s.block)
    uv = ("U_after", "V_after")
    spread = "; ".join(f"{n} {k[0]}: diag {x.diag_fraction:.3g}, |i-j| {x.mean_index_distance:.3g}" for (n, k), x in sp.items())
    out["fig6cd"] = Measurement(parts={
        "fig6cd-diag": _one(max(sp[("WN", k)].diag_fraction - sp[("plain", k)].diag_fraction for k in uv), "", spread),
        "fig6cd-distance": _one(min(sp[("WN", k)].mean_index_distance - sp[("plain", k)].mean_index_distance
                                    for k in uv), "")})
    v10, v1 = float(np.max(late["plain"]["V_after"])), float(np.max(one[_name("adam", s.eta_adam)]["V_after"]))
    out["fig5d"] = _one(v10 / v1, "", f"{v10:.3f} against {v1:.3f}")
    a_null = spectra.fit_power_law(np.diag(one[_name("adam", s.eta_adam)]["V_before"])).alpha
    out["fig5cd"] = _one(spectra.fit_power_law(np.diag(late["plain"]["V_after"])).alpha,
                         "the power-law fit of the diagonal entries failed (late overlaps table)",
                         f"the same fit on diag O(V_W0, V_M0), no alignment: {a_null:.3g}")
    t_gd, t_adam = rep(gd.esd[-1]), rep(plain.esd[-1])
    no_tail = "a spectrum has no tail beyond the bulk edge, so no tail alpha (Fig. 1 and width tables)"
    out["fig5b"] = _one(t_gd.tail_alpha - t_adam.tail_alpha, no_tail, f"{t_gd.tail_alpha:.3g} - {t_adam.tail_alpha:.3g}; "
                        f"standard errors {plain_number(t_gd.tail_alpha_sigma, fmt='.2g', undefined='no tail fit')} and "
                        f"{plain_number(t_adam.tail_alpha_sigma, fmt='.2g', undefined='no tail fit')}")
    h_gd, h_adam = float(gd.alpha_hill[-1]), float(plain.alpha_hill[-1])
    out["fig5b-hill"] = _one(h_gd - h_adam, "PL_Alpha_Hill is undefined", f"{h_gd:.3g} - {h_adam:.3g}")
    out["fig5b-ks"] = _one(t_gd.alpha - t_adam.alpha, "PL_Alpha_KS is undefined", f"{t_gd.alpha:.3g} - {t_adam.alpha:.3g}")
    # App. A.
    for opt, key in (("gd", "appA-gd"), ("adam", "appA-adam")):
        fit = spectra.fit_power_law(runs[("appA", opt)].esd[-1])
        out[key] = _one(fit.alpha, "the power-law fit failed (App. A table)",
                        f"fit standard error {plain_number(fit.sigma, fmt='.2g', undefined='no fit')}")
    # Fig. 1: the label with and without lambda_1, the tail's shape and the stricter option.
    tails = []
    for tag, tr in (("gd", gd), ("adam", runs[("adam", s.eta_adam_fig1)])):
        key, first, shape, strict = FIG1_ROWS[tag]
        r, sh = rep(tr.esd[-1]), tail_shape(tr.esd[-1], h=h, d=d, rules=rules)
        tails.append(r.tail_alpha)
        hill = float(tr.alpha_hill[-1])
        out[key] = Measurement(parts={
            f"{key}-label": _one(
                sh.heavy, "", f"{r.phase}: tail of {r.tail_size} to "
                f"{plain_number(r.tail_reach, fmt='.3g', undefined='no tail')} lambda_+, tail alpha "
                f"{_alpha(r.tail_alpha)}; without lambda_1 {sh.label_without_top}, to "
                f"{plain_number(sh.reach_without_top, fmt='.3g', undefined='no tail without the top')} lambda_+, "
                f"tail alpha {_alpha(sh.alpha_without_top)}"),
            f"{key}-ks": _one(bool(np.isfinite(r.alpha) and r.alpha < rules.heavy_alpha), "",
                              f"PL_Alpha_KS {r.alpha:.3g} on {r.n_tail} eigenvalues; PL_Alpha_Hill {hill:.3g}")})
        out[first] = out[key].parts[f"{key}-label"]  # the label alone
        out[shape] = _one(sh.ratio, "the likelihood ratio is undefined on this tail (tail-shape table)",
                          f"R = {sh.ratio:.3g}, p = {sh.pvalue:.2g} on {sh.n_tail} eigenvalues: {sh.shape}")
        out[strict] = _one(r.heavy_tailed_strict, "", f"PL_Alpha_KS {r.alpha:.3g} on {r.n_tail} "
                           f"eigenvalues, p(top) {r.spike_pvalue:.2g}")
    out["fig1-mild"] = _one(min(tails), no_tail)
    # §6: the traced runs.
    keys = [("adam", e) for e in s.etas_adam_track] + [("gd", e) for e in s.etas_gd_track]
    tracks = {_name(*k): dynamics.phase_track(runs[k].steps, runs[k].esd, h=h, d=d, rules=rules) for k in keys}
    reads = {lab: bridge_reading(tr, heavy_alpha=rules.heavy_alpha) for lab, tr in tracks.items()}
    decided = {lab: r for lab, r in reads.items() if r["bridged"] is not None}
    in_band = {lab: float(r["ks"][r["bs_index"]]) for lab, r in reads.items()
               if r["bs"] is not None and DECAY_KS[0] <= r["ks"][r["bs_index"]] < DECAY_KS[1]}
    passage = "; ".join(f"{lab}: no bulk+spikes step" if r["bs"] is None else f"{lab}: bulk+spikes at t = {r['bs']}, "
                        + (f"PL_KS never < {rules.heavy_alpha:g}" if r["ht"] is None else f"PL_KS < {rules.heavy_alpha:g} "
                           f"at t = {r['ht']}, in the band at t = {', '.join(map(str, r['decay'])) or 'none'}")
                        for lab, r in reads.items())
    out["s6-bridge"] = Measurement(
        [float(all(r["bridged"] for r in decided.values()))] if decided else [], runs_text="1 seed", note=passage,
        cannot_test=f"no traced run reaches PL_Alpha_KS < {rules.heavy_alpha:g} after a bulk+spikes step within the "
        "recorded steps (phase tables)" if not decided else "" if not in_band else
        f"a spike alone lands in the band [{DECAY_KS[0]:g}, {DECAY_KS[1]:g}): the first bulk+spikes step reads PL_Alpha_KS " + ", ".join(f"{k:.3g} ({lab})" for lab, k in in_band.items())
        + ", so a step in the band does not show a decaying bulk edge (phase tables)",
        why="spike_in_band" if decided and in_band else "")
    reached = [(lab, tracks[lab]) for lab, k in zip(tracks, keys) if any(heavy(k))]
    out["s6-single"] = Measurement(
        [float(all(tr.reports[1].num_detached == 1 for _, tr in reached))] if reached else [], runs_text="1 seed",
        cannot_test="" if reached else "no traced run becomes heavy-tailed (phase tables)",
        note="; ".join(f"{lab}: {tr.reports[1].num_detached} detached, phase {tr.phase[1]}" for lab, tr in reached))
    # §6 (2) and the steps to a heavy tail: the run at eta_adam that records every step.
    ht = runs[("ht", s.eta_adam)]
    rd = readings(ht, h=h, d=d, rules=rules)
    train = np.asarray(ht.metric(f"train_loss@{s.readout}"), dtype=float)
    lo_loss, budget = float(np.min(train)), int(ht.config.steps)
    if rd["label"].first is None:
        out["s6-early"] = Measurement(cannot_test=f"no step of the {budget}-step run is heavy-tailed with and without "
                                      "lambda_1 (steps table)", runs_text="1 seed")
    else:
        i = list(ht.steps).index(rd["label"].first)
        done = (train[0] - train[i]) / (train[0] - lo_loss) if train[0] > lo_loss else float("nan")
        top = float(np.max(train)) / lo_loss
        out["s6-early"] = replace(_one(train[i] / lo_loss, "", f"t = {rd['label'].first}: {train[i]:.3g} against "
                                       f"{lo_loss:.3g}"), cannot_test="" if top > TABLE["s6-early"].level else
                                  f"even the largest probe loss of the run is only {top:.3g} times its lowest, so no step "
                                  f"can pass the level; at the first heavy-tailed step {done:.0%} of the run's loss drop "
                                  "is done (steps table)", why="" if top > TABLE["s6-early"].level else "flat_loss",
                                  why_numbers={"ratio": f"{top:.3g}"})
    fw, fp = (next((int(t) for t, x in zip(runs[k].steps, heavy(k)) if x), None)
              for k in (("adam-wn", s.eta_adam), ("adam", s.eta_adam)))
    a_wn, a_plain = rep(wn.esd[-1]).tail_alpha, t_adam.tail_alpha
    show = lambda t: "none" if t is None else f"t = {t}"  # noqa: E731
    out["s6-wn"] = replace(
        _one((s.steps + 1 if fp is None else fp) - (s.steps + 1 if fw is None else fw), "", f"first heavy-tailed step "
             f"{show(fw)} (WN), {show(fp)} (plain), none counted as {s.steps + 1}; tail alpha of the last step "
             f"{a_wn:.3g} (WN) vs {a_plain:.3g} (plain)"),
        cannot_test="" if (fw, fp) != (None, None) else "neither run is heavy-tailed within its steps (width table)")
    band = TABLE["steps-1"].level
    at_top = tail_shape(ht.esd[i], h=h, d=d, rules=rules) if rd["label"].first is not None else None
    out["steps-1"] = _first(rd["Hill"], band, "every step recorded")
    out["steps-1-label"] = _first(rd["label"], band, "every step recorded" + (
        "" if at_top is None else f"; at that step without lambda_1 the tail reaches {plain_number(at_top.reach_without_top, fmt='.3g', undefined='no tail')} "
        f"lambda_+ against {rules.heavy_reach:g}, tail alpha {_alpha(at_top.alpha_without_top)} against {rules.heavy_alpha:g}"))
    out["steps-1-ks"] = _first(rd["KS"], band, "every step recorded")
    out["steps-001"] = Measurement.not_run(
        f"10^6 full-batch steps at these sizes take about {1e6 * SLOW_TIMING['s_per_step'] / 86400:.1f} days per seed at "
        f"the measured {SLOW_TIMING['s_per_step']:.2g} s per step on one thread (the authors report more than 24 h); the "
        "chapter does not run them", why="too_slow",
        time=f"about {1e6 * SLOW_TIMING['s_per_step'] / 86400:.1f} days per seed")
    out.update(_review(runs, s, rep, heavy))
    out["review-eta1-first"] = _review_eta1(runs, s, "review-eta1-first")
    return out

HILL_LEVELS = (2.3, 2.2, 2.16, 2.15, 2.1, HILL_HEAVY)
"""PL_Alpha_Hill levels at which the slow run's record names its first step, beside the counted level
:data:`HILL_HEAVY` (what the first step would be at a nearby level; a description, never a second criterion)."""

CENSORED_FACTOR = 10
"""A censored seed (no crossing within its budget) counts as budget + 1; the verdict must stand with the censored
seeds at ``CENSORED_FACTOR`` times that, and with each crossing seed anywhere in its record bracket."""

SLOW_ROWS = {"steps-01": "Hill", "steps-01-label": "label", "steps-01-ks": "KS"}
"""The slow run's rows and the reading of :func:`readings` each counts."""

def hill_path(tr: Trajectory, levels=HILL_LEVELS) -> str:
    """One slow run's PL_Alpha_Hill in words: its first value, its value at the review's 10^4 steps where recorded,
    its last and lowest, and its first record below each of ``levels``.

    Examples
    --------
    >>> tr = type("T", (), {"steps": np.array([0, 5000, 10000, 15000]), "alpha_hill": np.array([2.45, 2.2, 2.16, 2.15])})
    >>> hill_path(tr, levels=(2.3, 2.0))
    'PL_Alpha_Hill 2.45 at step 0, 2.16 at 10,000, 2.15 at 15,000 (lowest 2.15); first record below 2.3 at 5,000, below 2 none'
    """
    steps, hill = np.asarray(tr.steps, dtype=int), np.asarray(tr.alpha_hill, dtype=float)
    at = [f"{hill[0]:.4g} at step {steps[0]:,}"] + [f"{hill[i]:.4g} at {t:,}" for i, t in enumerate(steps)
                                                    if t == 10_000 and i not in (0, len(steps) - 1)]
    at.append(f"{hill[-1]:.4g} at {steps[-1]:,}")
    below = [f"below {lvl:g} " + (f"at {steps[np.flatnonzero(hill < lvl)[0]]:,}" if (hill < lvl).any() else "none")
             for lvl in levels]
    return f"PL_Alpha_Hill {', '.join(at)} (lowest {np.nanmin(hill):.4g}); first record {', '.join(below)}"

def _corners(fs: Mapping[int, FirstStep]) -> tuple[tuple[float, ...], ...]:
    """The values the seeds' first steps could take: each crossing at either end of its record bracket (the
    t-interval's ends are concave and convex in the values, so its extremes over the brackets are at these corners),
    the censored seeds together at budget + 1 or at :data:`CENSORED_FACTOR` times that (they are lower bounds, whose
    spread the t-interval cannot read; the row counts them at budget + 1, fixed with it).

    Examples
    --------
    >>> _corners({0: FirstStep(3500, 3000, 30000), 1: FirstStep(None, None, 30000)})
    ((3001.0, 30001.0), (3500.0, 30001.0), (3001.0, 300010.0), (3500.0, 300010.0))
    """
    ends = [(float(f.previous + 1), float(f.first)) if f.first is not None and f.previous is not None else
            (float(f.first),) if f.first is not None else None for f in fs.values()]
    out = []
    for factor in (1, CENSORED_FACTOR):
        cens = [(float(factor * (f.budget + 1)),) for f in fs.values()]
        out += itertools.product(*[e if e is not None else c for e, c in zip(ends, cens)])
    return tuple(dict.fromkeys(out))

def _slow(runs: Mapping[int, Mapping[tuple, Trajectory]], s) -> dict[str, Measurement]:
    """The review's 10^4 steps at eta = 0.1 (:data:`SLOW_ROWS`): the slow run's first record with PL_Alpha_Hill below
    :data:`HILL_HEAVY` (and the two other readings), over the seeds it is trained at (the first ``slow_seeds``);
    each seed's Hill path in the note, and the corners its censored seeds and record brackets could take instead
    (:func:`_corners`).  A run stops at its first Hill crossing, so the other readings see only the steps before it."""
    key, band, every = ("slow", s.slow_eta), TABLE["steps-01"].level, int(s.slow_record_every)
    trained = {seed: r[key] for seed, r in runs.items() if key in r}
    seeds = f"{len(trained)} seed{'s' if len(trained) != 1 else ''} ({', '.join(map(str, trained))})"
    read = {seed: readings(tr, h=s.h, d=s.d, rules=s.rules()) for seed, tr in trained.items()}
    if s.slow_budget < band[0] and all(rd["Hill"].first is None for rd in read.values()):
        m = replace(Measurement.not_run(
            f"the default budget of {s.slow_budget} steps ends before the criterion's lower end {band[0]:.0f}; "
            f"slow_budget = {PAPER.slow_budget} (make paper) runs it: {slow_run_time()}", why="short_budget",
            steps=f"{s.slow_budget:,}"),
            setting=f"the paper's sizes and protocol; {seeds}; {s.slow_budget} steps; 10^4 steps take about "
                    f"{1e4 * SLOW_TIMING['s_per_step'] / 60:.0f} min on one thread (measured)")
        return {k: m for k in SLOW_ROWS}
    common = (f"n, d, h = {s.n}, {s.d}, {s.h} (§4's sizes; Table 4 of the review gives neither its n nor its step "
              f"grid, so its 10,000 may be a grid point); {seeds}; at most {s.slow_budget:,} steps recorded every "
              f"{every}, each run stopped at its first record with PL_Alpha_Hill below {HILL_HEAVY:g}; a seed that "
              "never gets there counts as its budget + 1, a lower bound, and the verdict must hold at every corner "
              f"of the seeds' record brackets and with the censored seeds at {CENSORED_FACTOR} times that; only a "
              "row whose every seed is censored can disagree, and then it says that no seed got there")
    out = {}
    for row, name in SLOW_ROWS.items():
        fs = {seed: rd[name] if rd[name].first is not None or name == "Hill"
              else FirstStep(None, None, int(trained[seed].steps[-1]))  # stopped at the Hill crossing: seen so far
              for seed, rd in read.items()}
        m = _pool({seed: _first(f, band, hill_path(trained[seed]) if name == "Hill" else "") for seed, f in fs.items()})
        if m.values and len(m.values) == len(fs):
            m = replace(m, bound_cases=tuple(c for c in _corners(fs) if c != tuple(m.values)),
                        bounded="its record brackets and censored seeds")
            if all(f.first is None for f in fs.values()):  # every value a lower bound: say so before the seeds
                m = replace(m, note=f"no seed gets there within its {max(f.budget for f in fs.values()):,} steps, "
                                    f"so each value is a lower bound; {m.note}")
        level_note = ("the level fixed with the row on 2026-12-03, before any run longer than the default "
                      f"{Setup().slow_budget} steps; " if name == "Hill" else f"{TABLE[row].setting}; ")
        out[row] = replace(m, setting=f"the paper's sizes and protocol; {level_note}{common}")
    return out

def slow_run_time(setup=PAPER) -> str:
    """The slow run of ``setup`` (default :data:`~htlib.experiments.spike.compute.PAPER`) timed by
    :data:`SLOW_TIMING`: the text of its extrapolated wall time per seed and over its seeds and workers."""
    n, d, h = SLOW_TIMING["sizes"]
    records = setup.slow_budget // setup.slow_record_every + 1
    per_seed = setup.slow_budget * SLOW_TIMING["s_per_step"] + records * SLOW_TIMING["s_per_record"]
    rounds = -(-setup.slow_seeds // setup.workers)
    return (f"measured {SLOW_TIMING['s_per_step']:.2g} s per FB-Adam step and {SLOW_TIMING['s_per_record']:.2g} s per "
            f"record on one thread at n, d, h = {n}, {d}, {h} ({SLOW_TIMING['measured']}), so 10^4 steps take about "
            f"{1e4 * SLOW_TIMING['s_per_step'] / 60:.0f} min and {setup.slow_budget} steps recorded every "
            f"{setup.slow_record_every} at most {per_seed / 3600:.1f} h per seed, {rounds * per_seed / 3600:.1f} h for "
            f"{setup.slow_seeds} seeds on {setup.workers} workers (a run stops at its first heavy-tailed record)")

def alignments(runs: Mapping[tuple, Trajectory], s, known: Mapping | None = None) -> dict[str, dict[float, float]]:
    """§5.1's alignment after one step, ``{"adam" | "gd": {eta: value}}`` over the traced learning rates (ascending):
    the smaller of the largest entries of O(U_W1, U_M0) and O(V_W1, V_M0) (``known``: overlaps already computed, by
    run key)."""
    known = known or {}
    def align(key) -> float:
        ov = known[key] if key in known else dynamics.step_overlaps(runs[key], 0)
        return min(float(np.max(ov["U_after"])), float(np.max(ov["V_after"])))
    return {opt: {float(e): align((opt, e)) for e in sorted(etas)}
            for opt, etas in (("adam", s.etas_adam_track), ("gd", s.etas_gd_track))}

def _alignment(runs, s, known: dict) -> dict[str, Measurement]:
    """§5.1: :func:`alignments` compared between the smallest and the largest traced learning rate, and along the grid."""
    al = alignments(runs, s, known)
    text = {opt: ", ".join(f"eta={e:g}: {x:.4f}" for e, x in a.items()) for opt, a in al.items()}
    one = lambda opt: Measurement(cannot_test=f"one traced {NAMES[opt]} learning rate only (etas_{opt}_track)",  # noqa: E731
                                  runs_text="1 seed")
    parts = {f"align-eta-{opt}": _one(list(a.values())[-1] - list(a.values())[0], "", text[opt]) if len(a) > 1
             else one(opt) for opt, a in al.items()}
    grows = all(x < y for a in al.values() for x, y in zip(list(a.values()), list(a.values())[1:]))
    short = [opt for opt, a in al.items() if len(a) < 2]
    return {"align-eta": Measurement(parts=parts),
            "align-eta-steps": one(short[0]) if short else _one(grows, "", "; ".join(f"{NAMES[o]}: {x}"
                                                                                     for o, x in text.items()))}

def _review_eta1(runs, s, key: str = "review-eta1-first") -> Measurement:
    """The review on Figs. 5 and 24 read on one seed's chapter runs (``runs[("adam", eta)]``): see
    :func:`eta1_reading`, against the learning rates of ``etas_review`` below ``eta_adam``."""
    trajs = {float(e): runs[("adam", e)] for e in s.etas_review if e < s.eta_adam}
    return eta1_reading(runs[("adam", s.eta_adam)], trajs, eta=s.eta_adam, readout=s.readout, key=key)

def eta1_reading(tr: Trajectory, smaller: Mapping[float, Trajectory], *, eta: float, readout: str = "d",
                 key: str = "review-eta1") -> Measurement:
    """The review on Figs. 5 and 24 for one seed: at eta = 1 (``tr``, every step recorded) PL_Alpha_Hill after the
    steps, the test-loss change, that change against the ``smaller`` learning rates without a heavy tail by
    PL_Alpha_Hill, and the share of steps whose test loss falls; the parts keyed ``<key>-hill`` and so on."""
    test = np.asarray(tr.metric(f"test_loss@{readout}"), dtype=float)
    change, hill = float(test[-1] / test[0] - 1), float(tr.alpha_hill[-1])
    calm = {}
    for e in sorted(smaller):
        other = smaller[e]
        if float(other.alpha_hill[-1]) >= HILL_HEAVY:
            t_e = other.metric(f"test_loss@{readout}")
            calm[e] = float(t_e[-1] / t_e[0] - 1)
    steps = [int(t) for t in tr.steps]
    falls = np.diff(test) < 0
    every = steps == list(range(steps[0], steps[-1] + 1))
    return Measurement(parts={
        f"{key}-hill": _one(hill, "PL_Alpha_Hill is undefined", f"eta = {eta:g}: PL_Alpha_Hill {hill:.3g}"),
        f"{key}-drop": _one(change, "", f"eta = {eta:g}: test loss {test[0]:.3g} -> {test[-1]:.3g} ({change:+.1%})"),
        f"{key}-smaller": (
            _one(change - min(calm.values()), "", "; ".join(f"eta={e:g}: {c:+.1%}" for e, c in calm.items())) if calm
            else Measurement(cannot_test="every smaller learning rate is heavy-tailed by PL_Alpha_Hill after the steps, "
                             "or there is none", runs_text="1 seed")),
        f"{key}-gradual": (
            _one(float(np.mean(falls)), "", f"{int(falls.sum())} of {falls.size} steps fall; test loss per step "
                 + " ".join(f"{x:.3g}" for x in test)) if every and falls.size
            else Measurement(cannot_test="the run does not record every step", runs_text="1 seed"))})

ETA1_SIZES = ("review-eta1", "review-eta1-n8000")
"""The rows of the review's eta = 1 sentence read on :data:`~htlib.experiments.spike.sizes.N_TEST`-point test sets:
at the chapter's n and at four times it (§5.3's n = 8000)."""

ETA1_OTHER_READOUT = "review-eta1-other-readout"
"""The variant of review-eta1: the same runs at the chapter's n, their test losses under the readout convention the
chapter's ``readout`` does not use (``d``, the published figures', against ``sqrt_d``, the written formula's)."""

READOUTS = {"d": "features tanh(X Wᵀ/d)/sqrt(h), the published figures'",
            "sqrt_d": "features tanh(X Wᵀ/sqrt(d))/sqrt(h), the paper's formula"}

def _eta1_sizes(sizes: SizeRuns | None, s, chapter: Mapping[int, Trajectory]) -> dict[str, Measurement]:
    """:data:`ETA1_SIZES` from ``sizes`` pooled over its seeds; where a seed is also one of the chapter's, its
    PL_Alpha_Hill is compared with the chapter's run (``chapter``: ``{seed: eta_adam run}``), the same training."""
    if sizes is None:
        why = ("the runs on test sets of N_TEST points (sizes.run_sizes) are not given to this reading; the chapter's "
               "claims cell reads them")
        return {k: Measurement.not_run(why) for k in (*ETA1_SIZES, ETA1_OTHER_READOUT)}
    out = {}
    other = "sqrt_d" if s.readout == "d" else "d"
    for key, n, readout in (*zip(ETA1_SIZES, sizes.sizes, (s.readout, s.readout)), (ETA1_OTHER_READOUT, s.n, other)):
        by_seed = sizes.runs[n]
        per = {seed: eta1_reading(r[float(s.eta_adam)], {e: tr for e, tr in r.items() if e < s.eta_adam},
                                  eta=s.eta_adam, readout=readout, key=key) for seed, r in by_seed.items()}
        m = _pool(per)
        shared = [seed for seed in by_seed if seed in chapter and n == s.n]
        note = m.note
        if shared:
            gap = max(abs(float(by_seed[seed][float(s.eta_adam)].alpha_hill[-1]) - float(chapter[seed].alpha_hill[-1]))
                      for seed in shared)
            note = (f"seeds {shared[0]}-{shared[-1]} are the chapter's trainings with a larger test set (PL_Alpha_Hill "
                    + ("identical)" if gap == 0 else f"within {gap:.2g})") + (f"; {note}" if note else ""))
        smaller = sorted({e for r in by_seed.values() for e in r if e < s.eta_adam})
        where = ("the paper's sizes and protocol; " if n == s.n else
                 f"the paper's sizes and protocol at §5.3's n = {n}, with Fig. 7's learning rates below "
                 f"{s.eta_adam:g} ({', '.join(f'{e:g}' for e in smaller)}); ")
        seeds = list(by_seed)
        convention = ("" if readout == s.readout else
                      f"the test losses under the readout {READOUTS[readout]} (the chapter's: {READOUTS[s.readout]}); ")
        setting = (f"{convention}{where}test sets of {N_TEST} points (paper: 200); {len(seeds)} seeds "
                   f"({seeds[0]}-{seeds[-1]}); the paper shows one run")
        out[key] = replace(m, note=note, setting=setting)
    return out

def _review(runs, s, rep, heavy) -> dict[str, Measurement]:
    """The review's three learning-rate cases after ``s.steps`` steps, and its PL alpha below 2 for eta > 10."""
    rows = {}
    for eta in s.etas_review:
        tr = runs[("adam", eta)]
        test = tr.metric(f"test_loss@{s.readout}")
        rows[float(eta)] = (float(test[-1] / test[0] - 1), rep(tr.esd[-1]), float(tr.alpha_hill[-1]),
                            heavy(("adam", eta))[-1])
    txt = lambda es: "; ".join(f"eta={e:g}: test {rows[e][0]:+.1%}, {rows[e][1].phase}, tail alpha "  # noqa: E731
                               f"{_alpha(rows[e][1].tail_alpha)}, Hill {rows[e][2]:.3g}, KS {rows[e][1].alpha:.3g}" for e in es)
    low, mid, high = ([e for e in rows if e < 0.01], [e for e in rows if 0.01 <= e <= 1], [e for e in rows if e > 1])
    none = lambda what: Measurement.not_run(f"no learning rate {what} in etas_review")  # noqa: E731
    out = {"review-1": none("below 0.01"), "review-2": none("in [0.01, 1]"), "review-3": none("above 1"),
           "review-large": none("above 1"), "review-large-tail": none("above 1")}
    if low:
        out["review-1"] = Measurement(parts={"review-1-gen": _one(max(abs(rows[e][0]) for e in low), "", txt(low)),
                                             "review-1-ht": _one(any(rows[e][3] for e in low), "")})
    if mid:
        slow = [e for e in mid if PAPER_STEPS[min(PAPER_STEPS, key=lambda k: abs(np.log(k / e)))] > s.steps]
        late = (f"; the review's reply expects about 10^4-10^6 steps at eta = {', '.join(f'{e:g}' for e in slow)}, "
                f"which its case (2) after {s.steps} steps does not say (steps-01, steps-001 rows)") if slow else ""
        out["review-2"] = Measurement(parts={
            "review-2-gen": _one(max(rows[e][0] for e in mid), "", txt(mid)),
            "review-2-ht": _one(all(rows[e][3] for e in mid), "", ", ".join(f"eta={e:g}: Hill {rows[e][2]:.3g}"
                                                                           for e in mid) + late)})
    if high:
        best = min((rows[e][0] for e in mid), default=0.0)
        out["review-3"] = Measurement(parts={"review-3-gen": _one(min(rows[e][0] for e in high) - best, "", txt(high)),
                                             "review-3-ht": _one(all(rows[e][3] for e in high), "")})
        top = max(high)
        r = rows[top][1]
        out["review-large"] = _one(r.alpha, f"no power-law fit at eta = {top:g} (learning-rate table)",
                                   f"eta = {top:g}: KS {r.alpha:.3g}, Hill {rows[top][2]:.3g}, tail alpha "
                                   f"{_alpha(r.tail_alpha)}, test {rows[top][0]:+.1%}")
        out["review-large-tail"] = _one(r.tail_alpha, f"no tail beyond the bulk edge at eta = {top:g}, so no tail "
                                        "alpha (learning-rate table)", f"eta = {top:g}: tail alpha {_alpha(r.tail_alpha)}, "
                                        f"standard error {plain_number(r.tail_alpha_sigma, fmt='.2g', undefined='no tail fit')}")
    return out

def claims(runs: Mapping[int, Mapping[tuple, Trajectory]], setup, sizes: SizeRuns | None = None) -> list[Claim]:
    """The chapter's records, judged by :func:`htlib.claims.judge`; a row these runs do not reach (the slow run's
    10^4 steps) is read from its archived run where one exists (:mod:`htlib.archive`); the review's eta = 1 rows at
    both sizes from ``sizes`` (:func:`~htlib.experiments.spike.sizes.run_sizes`)."""
    return judge_table(TABLE, archive.merge(measure(runs, setup, sizes), __name__))

def measured(setup: Setup) -> dict[str, Measurement]:
    """:func:`measure` of the chapter's own runs at ``setup`` (:func:`~htlib.experiments.spike.compute.run_training`
    and :func:`~htlib.experiments.spike.sizes.run_sizes`), through the result cache: keyed on ``setup`` and on the
    code of this module and of every htlib module it imports (the runs' among them), so a rerun refits nothing and
    an edited measure or run measures again.  A level or a sentence lives outside the key (``claims.toml``)."""
    return cached_call(_measured, setup)

def _measured(setup: Setup) -> dict[str, Measurement]:
    return measure(run_training(setup), setup, run_sizes(setup))

def claims_of(setup: Setup) -> list[Claim]:
    """:func:`claims` of the chapter's own runs at ``setup``, from their cached measures (:func:`measured`)."""
    return judge_table(TABLE, archive.merge(measured(setup), __name__))

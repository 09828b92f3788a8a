"""What the linear-network Hessians chapter measures in its cached runs: one :class:`~htlib.claims.Measurement` per row
of its claims table (``claims.toml``, read into :data:`TABLE`) from :func:`measure`, judged by :func:`claims`. Every
fit and test the chapter's claims read happens here; the page (:mod:`htlib.experiments.linear_hessian.reading`) only
words and draws. Outside the result-cache key."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np

from htlib import archive
from htlib.claims import Measurement, judge, judge_table, read_table
from htlib.records import Claim
from htlib.experiments.linear_hessian.compute import (FIG5_FRESH_N, PATH_FAMILIES, Count, Fig12, Fig3, Fig4, Fig5, Fig6,
                                                      Fig7, Fig8, PAPER, PAPER_EPOCHS, Setup, convergence, log_slopes)
from htlib.experiments.linear_hessian.extra import RAW_CUTOFF, Fig3Starts, Fig7Raw, Trajectory

TABLE = read_table(Path(__file__).with_name("claims.toml"))  # every level, criterion and sentence, written once

def position_decreases(positions: Sequence[float], tol: float = 1e-9) -> int:
    """How often a sequence falls by more than ``tol`` from one entry to the next (0: non-decreasing).

    Examples
    --------
    >>> position_decreases([0.0, 0.1, 0.5, 1.0]), position_decreases([0.0, 0.6, 0.5, 1.0])
    (0, 1)
    """
    p = np.asarray(positions, dtype=float)
    if p.ndim != 1 or p.size < 2 or not np.all(np.isfinite(p)):
        raise ValueError(f"positions must be a finite 1-D sequence of at least 2 values, got {p!r}")
    return int(np.sum(np.diff(p) < -tol))

def floats_passes(position: Sequence[float], raw_at_most: float, white_at_least: float) -> int:
    """Fig. 5 (iii) on one path: 1 when the position never falls, starts ``<= raw_at_most``, ends ``>= white_at_least``.

    Examples
    --------
    >>> floats_passes([0.0, 0.3, 0.95], 0.1, 0.9), floats_passes([0.0, 0.5, 0.4, 0.95], 0.1, 0.9)
    (1, 0)
    >>> floats_passes([0.2, 0.5, 1.0], 0.1, 0.9), floats_passes([0.0, 0.5, 0.8], 0.1, 0.9)
    (0, 0)
    """
    p = np.asarray(position, dtype=float)
    if p.ndim != 1 or p.size < 2 or not np.all(np.isfinite(p)):
        raise ValueError(f"position must be a finite 1-D sequence of at least 2 values, got {p!r}")
    return int(position_decreases(p) == 0 and p[0] <= raw_at_most and p[-1] >= white_at_least)

def crossover_passes(lam: Sequence[float]) -> int:
    """Fig. 6 middle on one draw: ``lam`` at three depths at or below the crossover and three at or above it; 1 when
    ``ln lam`` falls on both steps below and rises on both steps above.

    Examples
    --------
    >>> crossover_passes([3.0, 2.0, 1.5, 1.6, 2.0, 2.5]), crossover_passes([3.0, 2.0, 2.1, 1.9, 2.0, 2.5])
    (1, 0)
    """
    steps = np.diff(np.log(np.asarray(lam, dtype=float)))
    if steps.size != 5 or not np.all(np.isfinite(steps)):
        raise ValueError(f"lam must hold 6 positive finite values, got {lam!r}")
    return int(steps[0] < 0 and steps[1] < 0 and steps[3] > 0 and steps[4] > 0)

def roundoff(x: float) -> str:
    """A round-off level as the power of ten at or above it (its digits vary from run to run).

    Examples
    --------
    >>> roundoff(4.4e-16), roundoff(0.0), roundoff(2e-3)
    ('1e-15', '0', '0.01')
    """
    return "0" if x == 0 else format(10.0 ** math.ceil(math.log10(abs(x))), "g")

def _not_minimum(runs: Sequence[dict], table: str) -> str:
    """Empty when every run reached the OLS loss of its data, else why the point judged is not a minimum."""
    bad = [c for c in map(convergence, runs) if not c["converged"]]
    if not bad:
        return ""
    r = [c["lr_end"] for c in bad if c["stalled"]]
    down = f"; in {len(r)} of them the halving rule had collapsed the learning rate (down to {min(r):.1g})" if r else ""
    return (f"{len(bad)} of {len(runs)} runs have not reached the OLS loss of their data (excess up to "
            f"{max(c['excess'] for c in bad):.2g} of the zero map's loss){down}, so the point judged is not a minimum "
            f"({table})")

def _trained(values, runs: Sequence[dict], table: str, **kw) -> Measurement:
    bad = sum(not convergence(r)["converged"] for r in runs)
    return Measurement(np.ravel(values), cannot_test=_not_minimum(runs, table),
                       why="not_converged" if bad else "", why_numbers={"k": bad, "n": len(runs)}, **kw)

def _approach(key: str, gap0: float, gap: float, **kw) -> Measurement:
    """``<gap> < level`` and ``<gap> / <gap at epoch 0> < 1``: the closed form is close at the end, and closer."""
    return Measurement(parts={f"{key}-end": Measurement([gap], note=kw.get("note", "")),
                              f"{key}-falls": Measurement([gap / gap0])}, **kw)

def _whitening_settings(setup: Setup, rank: int) -> tuple[str, str, str]:
    hess = "" if setup.hessian_at == "all" else "LOBPCG at the first and last measurement only (exact GGN at every one)"
    return hess, f"row-space whitening ({rank} inputs, the rank of X, instead of {setup.d0} pixels: C = I holds)", (
        f"rank-correct whitening, the paper's recipe sqrt(n) U_X V_X^T with the SVD restricted to the {rank} nonzero "
        f"singular values ({setup.d0} pixels of rank {rank}: C = P, not I)")

def measure_fig12(setup: Setup, fig12: Fig12) -> dict[str, Measurement]:
    """Figs. 1-2 (checks) on the run held at ``eta_max`` (else the paper-schedule run); rank-whitened variants."""
    (hess, row, rankw), eR = _whitening_settings(setup, int(fig12.runs["rowspace"]["rank"])), fig12.end("rank")
    schedule = (f"learning rate held at eta_max for {setup.converged_epochs} epochs, so that the run reaches the OLS "
                f"loss (paper: halved on a 0.1% plateau over 100 epochs, {PAPER_EPOCHS} epochs)")
    out, one = {}, f"1 run (seed {setup.seed})"
    if "converged" in fig12.runs:
        rows = [("converged", ("fig1", "fig2"), setup.deviations(row, hess, schedule, trained=False)),
                ("rowspace", ("fig1_paper_schedule", "fig2_paper_schedule"),
                 setup.deviations(row, hess, "the paper's schedule (halving)"))]
    else:
        rows = [("rowspace", ("fig1", "fig2"), setup.deviations(row, hess))]
        out.update({key: Measurement.not_run(f"converged_epochs is 0, so the paper-schedule run is the one {k} is "
                                             "judged on") for key, k in (("fig1_paper_schedule", "fig1"),
                                                                          ("fig2_paper_schedule", "fig2"))})
    for name, (key1, key2), setting in rows:
        e, kw = fig12.end(name), {"setting": setting, "runs_text": one,
                                  "cannot_test": _not_minimum([fig12.runs[name]], "Figs. 1-2 convergence table")}
        run = (f"loss {e['loss0']:.3g} -> {e['loss']:.3g} (OLS {e['ols']:.3g}); GGN vs LOBPCG {e['gap_ggn']:.1g} "
               "at the end")
        out[key1] = _approach(key1, e["gap0"], e["gap"], **kw,
                                      note=f"gap {e['gap0']:.2g} at epoch 0, {e['gap']:.2g} at the end; {run}")
        out[key2] = Measurement([abs(e["lam"] / e["sum"] - 1)], **kw,
                                        note=f"{run}; LOBPCG {e['lam']:.4g}, sum {e['sum']:.4g}, max {e['max']:.4g}")
    blank = (f"W1's weight on the directions X does not span ({eR['blank']:.1%} of ||W1||_F^2, never trained) enters "
             "the closed form but not the Hessian")
    out["fig1_rank"] = _approach("fig1_rank", eR["gap0"], eR["gap"], setting=rankw,
                                 note=f"1 run; {blank}: with C = P the gap is {eR['gap_P']:.1g} (Fig. 1 table)")
    out["fig2_rank"] = Measurement([abs(eR["lam"] / eR["sum"] - 1)], setting=rankw, runs_text=one,
                                   note=f"{eR['reference']} {eR['lam']:.4g}, sum {eR['sum']:.4g}; {blank}: ||W1 P||^2 + "
                                        f"||W2||^2 = {eR['sum_P']:.4g} (Fig. 2 table)")
    return out

def measure_fig3(setup: Setup, fig3: Fig3, starts: Fig3Starts | None = None) -> dict[str, Measurement]:
    """Fig. 3 on every start's runs (``starts``; else the figure's, one per network) that the conservation law does not
    force; the forced two-layer runs as a check."""
    starts = Fig3Starts.of(fig3) if starts is None else starts
    st, forced, drift, ratio = starts.seed_stats(), starts.seed_forced(), starts.seed_drift(), starts.drop_ratio()
    setting, k = setup.deviations(), len(starts.seed_runs[0])
    runs = [(i, j) for i in range(len(st)) for j in range(len(st[i]))]
    tested, checks = [r for r in runs if not forced[r[0]][r[1]]], [st[i][j]["corr_diff"] for i, j in runs if forced[i][j]]
    span = [f"{min(d):.1g}" + (f" to {max(d):.1g}" if f"{min(d):.1g}" != f"{max(d):.1g}" else "") for d in drift]
    drifts = ", ".join(f"{name}: {d}" for name, d in zip(starts.names, span))
    of = (f"{k} starts (seeds {setup.seed} to {setup.seed + k - 1}) of each network" if k > 1 else
          f"seed {setup.seed}")
    out = {"fig3": Measurement(setting=setting, cannot_test=f"the conservation law forces every run (drift {drifts} of "
                               "the squared norm's own movement), so none can fail (Fig. 3 tables)"),
           "fig3_two_layer": Measurement.not_run(f"the conservation law forces no run (drift {drifts})")}
    if tested:
        corr = [st[i][j]["corr_diff"] for i, j in tested]
        same = [float(st[i][j]["dip_trace"] == st[i][j]["dip_norm"] and
                      (not st[i][j]["dip_trace"] or abs(st[i][j]["argmin_trace"] - st[i][j]["argmin_norm"]) <= 1))
                for i, j in tested]
        nets = sorted({starts.names[i] for i, _ in tested})
        text = f"{len(tested)} run{'s' if len(tested) != 1 else ''}: " + ", ".join(nets) + f", {of}"
        const = "" if np.all(np.isfinite(corr)) else ("a series is constant, so the correlation of its changes is "
                                                      "undefined (Fig. 3 table)")
        gap = [f"{ratio[i][j]:.3g}" for i, j in tested]
        gap = gap[0] if len(set(gap)) == 1 else f"{min(gap, key=float)} to {max(gap, key=float)}"
        hutch = (f"{setup.trace_points} log-spaced points; Hutchinson within "
                 f"{max(st[i][j]['hutch_z'] for i, j in tested):.2g} s.e. of the exact trace; from the start to the "
                 f"trace's minimum the trace falls {gap} times as much as the total squared "
                 "norm (relative falls): the curves move together at very different rates (Fig. 3 seed table)")
        out["fig3"] = Measurement(parts={"fig3-corr": Measurement(corr, cannot_test=const, runs_text=text, note=hutch),
                                         "fig3-dips": Measurement(same, runs_text=text)}, setting=setting)
    if checks:
        out["fig3_two_layer"] = Measurement(
            [min(checks)], setting=setting, cannot_test="" if np.all(np.isfinite(checks)) else "a series is constant",
            runs_text=f"{len(checks)} run{'s' if len(checks) != 1 else ''}, {of}",
            note=f"two layers conserve ||W2||_F^2 - ||W1||_F^2 (drift {drifts} of the squared norm's own movement), so "
                 "the trace and the total norm are both affine in ||W1||_F^2 (Fig. 3 tables)")
    return out

def measure_fig4(setup: Setup, fig4: Fig4) -> dict[str, Measurement]:
    """Fig. 4 on the balanced row-space runs held to the OLS loss (one per seed); the paper-schedule run, the rank and
    Kaiming twins are variants."""
    row = _whitening_settings(setup, int(fig4.runs[("balanced", "rowspace")]["rank"]))[1]
    held = fig4.held()
    if not held:
        return {"fig4": Measurement.not_run("no run was held to the OLS loss; make paper runs them", why="off"),
                **{k: v for k, v in _fig4_variants(setup, fig4).items()}}
    bad = [h for h in held if not h["converged"]]
    runs = f"{len(held)} seeds, each held to the OLS loss"
    out = {"fig4": Measurement(
        parts={"fig4-end": Measurement([h["gap"] for h in held], runs_text=runs,
                                       note="excess over the OLS loss at the end " + ", ".join(
                                           f"{h['excess']:.1g}" for h in held) + " of the zero map's loss after "
                                       + ", ".join(f"{h['epochs']:,}" for h in held) + " epochs (Fig. 4 held-run table)"),
               "fig4-falls": Measurement([h["gap"] / h["gap0"] for h in held], runs_text=runs)},
        setting=setup.deviations(row, f"learning rate held at eta_max until the OLS loss (at most {setup.held4_epochs:,} "
                                      f"epochs; paper: halved on a plateau, {PAPER_EPOCHS} epochs), trained in exact "
                                      "reduced coordinates; the Hessian is LOBPCG's at the start and the exact GGN at the "
                                      "end (an OLS point, where the two are equal)", trained=False),
        cannot_test=(f"{len(bad)} of {len(held)} held runs have not reached the OLS loss within {setup.held4_epochs:,} "
                     f"epochs (excess up to {max(h['excess'] for h in bad):.2g} of the zero map's loss; Fig. 4 held-run "
                     "table)") if bad else "")}
    return {**out, **_fig4_variants(setup, fig4)}

def _fig4_variants(setup: Setup, fig4: Fig4) -> dict[str, Measurement]:
    """Fig. 4's variants: the paper's schedule on row-space features, the rank-whitened twin, the Kaiming start."""
    hess, row, rankw = _whitening_settings(setup, int(fig4.runs[("balanced", "rowspace")]["rank"]))
    b, bR, k4 = fig4.end("balanced", "rowspace"), fig4.end("balanced", "rank"), fig4.end("kaiming", "rowspace")
    one, out = f"1 run (seed {setup.seed})", {}
    out["fig4_paper_schedule"] = _approach(
        "fig4_paper_schedule", b["gap0"], b["gap"], setting=setup.deviations(row, hess), runs_text=one,
        cannot_test=_not_minimum([fig4.runs[("balanced", "rowspace")]], "Fig. 4 convergence table"),
        note=f"gap {b['gap0']:.2g} at epoch 0, {b['gap']:.2g} at the end; final loss {b['final loss']:.3g} (OLS "
             f"{b['OLS loss']:.3g}), learning rate {b['lr_end']:.2g}")
    out["fig4_rank"] = _approach("fig4_rank", bR["gap0"], bR["gap"], setting=rankw, note=(
        f"C = P, not I: at the exactly balanced start the closed form is {bR['closed_ggn0']:.1%} off the exact GGN "
        "(Fig. 4 table)"))
    out["fig4_kaiming"] = Measurement([k4["gap"]], runs_text=one, note=(
        f"balance gap {k4['balance0']:.2f} -> {k4['balance']:.2f}: gradient flow conserves W_(l+1)^T W_(l+1) - W_l "
        "W_l^T, so GD with a small step keeps the start's imbalance (Fig. 4 table)"))
    return out

def measure_fig5(setup: Setup, fig5: Fig5) -> dict[str, Measurement]:
    """Fig. 5 under reading B ``[t_1, L t_1]`` (counted) and reading A ``[max t_l, sum t_l]`` (variants)."""
    tab, imb = fig5.table(), fig5.imbalance_table()
    reading_b = setup.deviations("bounds read as [t_1, L t_1] (the theorem is lost in the text we have)", trained=False)
    path = (f"the anisotropy path X_t = U_r S^(1-t) (sqrt n)^t V_r^T from the raw pixels' SVD (t = 0) to the whitened "
            f"features (t = 1) at t in {list(setup.aniso_ts)}, a path of the book's own")
    lower = np.r_[tab["B: lam/low"].iloc[0], imb.loc["raw", "lam/t_1"].to_numpy()]
    out = {"fig5_lower": Measurement(lower, setting=reading_b, runs_text=f"{lower.size} feature sets (the path on all "
                                                                        f"images, {lower.size - 1} imbalanced subsets)")}
    min_width = TABLE["fig5_lower"].level - 1  # the tolerance of (i): a narrower interval has no readable position
    for r, upper, key, setting in (("B", "fig5_upper", "fig5_floats_seen", reading_b),
                                   ("A", "fig5_upper_a", "fig5_floats_a", TABLE["fig5_upper_a"].setting)):
        up = np.r_[tab[f"{r}: up/lam"].iloc[-1], imb.loc["whitened", f"{r}: up/lam"].to_numpy()]
        out[upper] = Measurement([up.max()], setting=setting)
        pos, width = tab[f"{r}: position"].to_numpy(), tab[f"{r}: width/lam"].iloc[0]
        narrow = (f"on raw pixels the interval is only {width:.1e} lambda wide, narrower than the {min_width:.0%} "
                  f"that the tightness test (i) allows, so the truth's position in it cannot be read (Fig. 5 table)")
        out[key] = Measurement(setting=f"{setting}; {path}", parts={
            f"{key}-monotone": Measurement([position_decreases(pos)],
                                           note="positions " + " ".join(f"{p:.3g}" for p in pos) + " (Fig. 5 table)"),
            f"{key}-raw": Measurement([pos[0]], cannot_test=narrow if width < min_width else ""),
            f"{key}-white": Measurement([pos[-1]])})
    seen = {p.key.rpartition("-")[2]: p.level for p in TABLE["fig5_floats_seen"].parts}  # the same levels, fixed first
    if not fig5.paths:
        out["fig5_floats"] = Measurement.not_run("no fresh path was drawn; make paper runs them", why="off")
        return out
    pt = fig5.paths_table()
    # One value per fresh subset (every family passes on it): the families share a subset's data, so paths of one
    # subset are not independent runs.
    by_subset = {j: all(floats_passes(pos, seen["raw"], seen["white"]) for pos in grp.to_numpy())
                 for j, grp in pt.groupby(level="subset")}
    passes = [float(v) for v in by_subset.values()]
    out["fig5_floats"] = Measurement(passes, runs_text=f"{len(passes)} fresh subsets", setting=setup.deviations(
        "bounds read as [t_1, L t_1] (the theorem is lost in the text we have)", trained=False, data=(
            f"{len(fig5.paths)} fresh class-balanced subsets of {setup.data_name}, {min(FIG5_FRESH_N, setup.n_bal)} "
            f"images each, paths {', '.join(PATH_FAMILIES)} at t in {list(fig5.fresh_ts)}, paths of the book's own")),
        note="positions at t = 0: " + ", ".join(f"{v:.2g}" for v in pt.iloc[:, 0]) + "; at t = 1: "
             + ", ".join(f"{v:.3g}" for v in pt.iloc[:, -1]) + " (Fig. 5 fresh-path table)")
    return out

def measure_fig6(setup: Setup, fig6: Fig6) -> dict[str, Measurement]:
    """Fig. 6: the exact case and the depth sweep (checks), imbalance on the exact minimizers (trained: a variant)."""
    im, draw = fig6.imbalance, f"1 draw (seed {setup.seed}); round-off level"
    mini = log_slopes(im.m(), im.minimizer())
    # round-off errors as the power of ten at or above them: their digits vary from run to run
    left, middle = (10.0 ** math.ceil(math.log10(x)) if x > 0 else 0.0 for x in (fig6.err_left, fig6.err_middle))
    return {
        "fig6_left": Measurement([left], note=draw),
        "fig6_middle": Measurement([middle], note=draw, setting=(
            "a setup of the book's own (the caption is lost in the text we have): Gaussian X of 100 x 20 whitened at "
            f"sigma_x in {list(setup.sigma_xs)}, labels of a random linear teacher, width 20, depths {list(setup.depths)}")),
        "fig6_crossover": Measurement(
            [crossover_passes(c["lam"]) for c in fig6.crossover], runs_text=f"{len(fig6.crossover)} fresh draws",
            note="crossovers " + ", ".join(f"{c['crossover']:.2f}" for c in fig6.crossover) + "; depths judged "
                 + ", ".join(f"{c['depths'][0]}-{c['depths'][-1]}" for c in fig6.crossover) + " (Fig. 6 crossover table)")
        if fig6.crossover else Measurement.not_run("no crossover draw was run; make paper runs them", why="off"),
        "fig6_right": Measurement(mini, runs_text=f"{mini.size} subset series", setting=setup.deviations(
            "exact balanced minimizers (the OLS solution as a balanced net) in place of GD-trained nets, which do not "
            "converge (Fig. 6 convergence table)", imbalanced=True, trained=False), note=(
            "the minimizers' lambda_max equals L (||P_X Y||^2 / n)^(3/4) to "
            f"{roundoff(np.abs(im.minimizer() / im.minimizer('formula_proj') - 1).max())} (relative); the formula L m^(3/4) alone has "
            f"exponent {np.mean(log_slopes(im.m(), im.minimizer('formula'))):.3g} (mean; Fig. 6 table)")),
        "fig6_right_trained": _trained(log_slopes(im.m("balanced"), im.lam("balanced")), im.trained["balanced"],
                                       "Fig. 6 convergence table", setting=setup.deviations(imbalanced=True))}

def measure_fig7(setup: Setup, fig7: Fig7, fig6: Fig6 | None = None, fig7_raw: Fig7Raw | None = None
                 ) -> dict[str, Measurement]:
    """Fig. 7: the ablations (trained); the Kaiming panel also against Fig. 6's band where its minimizers meet it; the
    left panel's minimizers at a second pseudo-inverse cut-off and unbalanced (``fig7_raw``) where they were computed."""
    im7, table, raw = fig7.imbalance, "Fig. 7 convergence table", fig7.imbalance.lam("no whitening")
    if fig7.raw_minimizers:
        lam_raw, stable = fig7.raw(), 2.0 / 1e-2
        changes = [int(np.sum(np.diff(np.sign(np.diff(v))) != 0)) for v in lam_raw]
        left = Measurement(
            changes, runs_text=f"{fig7.raw_seeds} subset series",
            cannot_test=(f"the sentence is about the learnt solution, and gradient descent at eta = 1e-2 cannot sit at "
                         f"any of these balanced minimizers (lambda_max {lam_raw.min():.2g} to {lam_raw.max():.2g} "
                         f"against 2/eta = {stable:g}); their lambda_max is set by the smallest singular values of the "
                         "raw pixels kept, so its steps over m are not a reading of the learnt solution (Fig. 7 text)")
            if lam_raw.min() > stable else "", why="not_at_minimum" if lam_raw.min() > stable else "",
            setting=setup.deviations(f"exact balanced minimizers on raw pixels (the OLS solution as a balanced net) in "
                                     f"place of GD-trained nets: their lambda_max, {lam_raw.min():.2g} to "
                                     f"{lam_raw.max():.2g}, lies far above 2/eta = {stable:g}, so no balanced minimizer "
                                     "is stable for GD at the paper's rate",
                                     imbalanced=True, trained=False),
            note="seed-median lambda_max " + " ".join(f"{v:.3g}" for v in np.median(lam_raw, 0)) + (
                _raw_sensitivity(fig7_raw, lam_raw, changes, stable, im7.trained["no whitening"]) if fig7_raw is not None
                else "") + " (Fig. 7 text)")
    else:
        left = Measurement.not_run("no exact minimizer on raw pixels was computed; make paper computes them",
                                   why="off")
    out = {"fig7_left": left,
        "fig7_left_trained": _trained([int(np.sum(np.diff(np.sign(np.diff(v))) != 0)) for v in raw],
                                 im7.trained["no whitening"], table, setting=setup.deviations(imbalanced=True),
                                 note="seed-median lambda_max " + " ".join(f"{v:.3g}" for v in np.median(raw, 0)))}
    qualitative = ("qualitative reading: judged only on whether the sharpness increases (fitted exponent > 0), not on "
                   "the theory's exponent 3/4")
    for name, key in (("Kaiming init", "fig7_middle"), ("tanh MLP", "fig7_right")):
        ex, runs = log_slopes(im7.m(name), im7.lam(name)), im7.trained[name]
        cut = name == "tanh MLP" and setup.tanh_epochs < PAPER.tanh_epochs
        extra = f"{setup.tanh_epochs} epochs (paper: {PAPER_EPOCHS}), {setup.tanh_seeds} seed(s)" if cut else ""
        out[key] = m = _trained(ex, runs, table, setting=setup.deviations(extra, qualitative + (
            " (the quantitative reading is a variant)" if name == "Kaiming init" else ""), imbalanced=True))
        if cut and m.cannot_test:
            cs = [convergence(r) for r in runs]
            out[key] = Measurement(m.values, setting=m.setting, why=m.why, why_numbers=m.why_numbers,
                                   cannot_test=m.cannot_test + (
                f"; the tanh runs have {setup.tanh_epochs} epochs, {PAPER.tanh_epochs / setup.tanh_epochs:.3g}x fewer "
                f"than the paper's {PAPER.tanh_epochs}, and their last {cs[0]['tail_epochs']} epochs still remove "
                f"{min(c['tail_drop'] for c in cs):.2g} to {max(c['tail_drop'] for c in cs):.2g} of the zero map's loss "
                f"({table})"))
    ex = log_slopes(im7.m("Kaiming init"), im7.lam("Kaiming init"))
    band = _trained(ex, im7.trained["Kaiming init"], table, setting=setup.deviations(imbalanced=True))
    if fig6 is not None and not band.cannot_test:
        mini = log_slopes(fig6.imbalance.m(), fig6.imbalance.minimizer())
        inside = judge(TABLE["fig6_right"], Measurement(mini)).verdict == "agrees"
        ref = f"the balanced minimizers of the same subsets have exponent {np.mean(mini):.3g} (mean; Fig. 6 table)"
        band = Measurement(ex, setting=band.setting, **(
            {"reduction_check": f"{ref}, inside the band, so the subset size does not explain the Kaiming runs' exponent"}
            if inside else {"cannot_test": f"{ref}, not inside the band, so the band cannot test the Kaiming runs"}))
    return {**out, "fig7_middle_band": band}

def _raw_sensitivity(raw: Fig7Raw, lam_raw: np.ndarray, changes: Sequence[int], stable: float,
                     trained: Sequence[dict]) -> str:
    """Fig. 7 left's note: how its minimizers move with the pseudo-inverse cut-off, and that only balanced
    minimizers are unstable (an unbalanced one is not, and GD from a balanced start stays balanced)."""
    if not np.allclose(raw.raw(), lam_raw, rtol=1e-9):
        raise ValueError("the raw-pixel minimizers of Fig. 7 and of its cut-off check must be the same subsets")
    cut, unbal = raw.raw("lam_raw_cut"), raw.raw("lam_raw_unbalanced")
    changes_cut = [int(np.sum(np.diff(np.sign(np.diff(v))) != 0)) for v in cut]
    moved = np.abs(np.log(cut / lam_raw)) > 1e-9
    bal = max(float(np.max(r["balance"][-1])) for r in trained)
    return (f"; with the pseudo-inverse cut at {RAW_CUTOFF:g} of the largest singular value instead of the numerical "
            f"rank, {int(moved.sum())} of {moved.size} values change, by up to a factor "
            f"{float(np.max(np.maximum(cut / lam_raw, lam_raw / cut))):.2g}, and the sign changes per series read "
            + " ".join(map(str, changes_cut)) + " instead of " + " ".join(map(str, changes))
            + f" ({sum(a != b for a, b in zip(changes, changes_cut))} of {len(changes)} series differ); 'no minimizer "
            "is stable' holds for balanced minimizers only: the unbalanced exact minimizer of the same data with W1 = "
            f"[W; 0] and partial identities after it has lambda_max {unbal.min():.3g} to {unbal.max():.3g}, "
            f"{'below' if unbal.max() < stable else 'not all below'} 2/eta, and GD from a balanced start stays balanced "
            f"(the trained runs' largest balance gap at the end is {bal:.1g}), so it cannot reach that minimizer")

def measure_fig8(setup: Setup, fig8: Fig8) -> dict[str, Measurement]:
    """Fig. 8: the size dependence of the exact minimizers, one slope per subset series (trained: a variant)."""
    sl, sizes, mm, (lo, hi) = fig8.slopes(), fig8.sizes, fig8.minimizer("majority_share"), TABLE["fig8"].level
    decades = math.log10(sizes[-1] / sizes[0])
    span = f"n from {sizes[0]} to {sizes[-1]} ({decades:.2g} decade{'' if decades == 1 else 's'}) (paper: sizes not given)"
    band = f"the band [{lo:g}, {hi:g}] on the slope is the book's reading of 'independent' (the paper gives no tolerance)"
    uniform_band = band
    if np.ptp(mm[:, -1]) == 0:
        uniform_band += (f"; at n = {sizes[-1]} every subset is the whole pool (majority share {mm[0, -1]:.4f} in all), "
                         "so part of the slope is a finite-pool effect")
    formula = (f"the paper's own formula with each subset's majority share predicts slopes {sl['formula'].min():.2g} to "
               f"{sl['formula'].max():.2g}: small random subsets have a larger majority share "
               f"({mm[:, 0].min():.3f}-{mm[:, 0].max():.3f} at n = {sizes[0]}) (Fig. 8 table)")
    st = fig8.stratified_slopes() if fig8.stratified else np.zeros(0)
    if st.size:
        lam_st = fig8.stratified_minimizer()
        one = float(np.polyfit(np.log(np.array(sizes, dtype=float)), np.log(lam_st).mean(0), 1)[0])
        same = [float(np.ptp(lam_st[:, k]) / lam_st[:, k].min()) for k in (0, -1)]
    return {
        "fig8": Measurement.not_run("no stratified series was drawn; make paper draws them", why="off") if not st.size else
        Measurement([one], runs_text=f"one fit over {st.size} fresh series", note=(
            f"the series' own slopes {st.min():.3g} to {st.max():.3g}; at each point lambda_max = L (||P_X Y||^2 / n)^(3/4) "
            "by algebra, so the slope measures how much label energy lies outside the span of the pixels; the smallest "
            "subsets interpolate and the largest is the whole pool, so both ends are the same in every series (their "
            f"lambda_max agree to {roundoff(max(same))} relative): the series differ only at the middle "
            "sizes, so no interval is drawn over them; the contrast with trained networks (Cohen et al.) is not "
            "tested"), setting=setup.deviations(
            "exact balanced minimizers in place of GD-trained nets, which do not converge (Fig. 8 convergence table)",
            band, trained=False, data=f"class-stratified subsets of {setup.data_name} (every class 10%, the paper's "
                                      f"premise m = 0.1), {st.size} series drawn with fresh seeds, {span}")),
        "fig8_uniform": Measurement(sl["minimizer"], runs_text=f"{sl['minimizer'].size} subset series", note=formula,
                            setting=setup.deviations("exact balanced minimizers in place of GD-trained nets, which do not "
                                                     "converge (Fig. 8 convergence table)", uniform_band, trained=False,
                                                     data=f"{setup.subsets} uniform random subsets of {setup.data_name} "
                                                          f"per size, {span}")),
        "fig8_trained": _trained(sl["trained"], fig8.trained, "Fig. 8 convergence table", setting=setup.deviations(
            data=f"{setup.seeds} uniform random subsets of {setup.data_name} per size, {span}"))}

def measure_trajectory(setup: Setup, traj: Trajectory) -> dict[str, Measurement]:
    """Figs. 1 and 4 along fresh paper-schedule runs: per run, Kendall's tau between the epoch and the closed form's
    gap to LOBPCG (the direction), and that gap at the last measurement (the approximation).  No convergence gate: the
    claim is about the path, not the end point."""
    rank = int(traj.runs["fig1"][0]["rank"])
    row = _whitening_settings(setup, rank)[1]
    epochs = traj.epochs("fig1")
    out = {}
    for fig, key in (("fig1", "fig1_trajectory"), ("fig4", "fig4_trajectory")):
        g, tau = traj.gaps(fig), traj.taus(fig)
        ggn = np.array([np.max(np.abs(r["closed_I"] - r["ggn"]).max(1) / r["ggn"][:, 0]) for r in traj.runs[fig]])
        falls = int(np.sum(np.all(np.diff(g, axis=1) < 0, axis=1)))
        runs = f"{len(tau)} fresh runs (seeds {traj.seeds[0]} to {traj.seeds[-1]})"
        out[key] = Measurement(
            parts={f"{key}-falls": Measurement(tau, runs_text=runs), f"{key}-end": Measurement(g[:, -1], runs_text=runs)},
            setting=setup.deviations(row, f"the paper's schedule; LOBPCG at epochs {', '.join(map(str, epochs))}"),
            note=(f"median gap {np.median(g[:, 0]):.2g} at epoch 0 and {np.median(g[:, -1]):.2g} at epoch {epochs[-1]:,}; "
                  f"the gap falls at every step in {falls} of {len(tau)} runs; tau from {tau.min():.2g} to "
                  f"{tau.max():.2g}; along every run the closed form is within {ggn.max():.1g} of the exact GGN, so "
                  "the gap measures the Hessian's residual term as it fades"
                  + (f"; every run sees all {setup.n_bal:,} images, so the runs differ in their start only"
                     if setup.n_bal >= setup.labels.size else "") + " (trajectory table)"))
    return out

def measure_count(count: Count) -> dict[str, Measurement]:
    """The paper's bound on the number of nonzero eigenvalues, at the paper's own architectures (exact counts)."""
    allc = list(count.small.values()) + list(count.paper.values())
    nets = "; ".join(f"{name}: {c['measured']} nonzero vs bound {c['paper']}" for name, c in count.paper.items())
    small = "; ".join(f"{list(d)}: {c['measured']} = r(d0 + dL - r)" for d, c in count.small.items())
    return {"count": Measurement([max(c["measured"] - c["paper"] for c in allc)], note=(
        f"{nets}; eigenvalues above 1e-10 lambda_max; the edge values s_i^(2(L-1)) with multiplicity (d0 - r) + "
        f"(dL - r) are nonzero too, so r(d0 + dL - r) are: dense autograd Hessians {small} (count table)"))}

def measure(setup, fig12, fig3, fig4, fig5, fig6, fig7, fig8, count, fig3_starts=None,
            fig7_raw=None, trajectory=None) -> dict[str, Measurement]:
    traj = (measure_trajectory(setup, trajectory) if trajectory is not None else
            {k: Measurement.not_run("the trajectory runs were not passed to the reading")
             for k in ("fig1_trajectory", "fig4_trajectory")})
    return {**traj, **measure_fig12(setup, fig12), **measure_fig3(setup, fig3, fig3_starts), **measure_fig4(setup, fig4),
            **measure_fig5(setup, fig5), **measure_fig6(setup, fig6), **measure_fig7(setup, fig7, fig6, fig7_raw),
            **measure_fig8(setup, fig8), **measure_count(count)}

def claims(*results, **extra) -> list[Claim]:
    """The chapter's records: :data:`TABLE` judged by :func:`htlib.claims.judge` on :func:`measure` of ``results``
    (and its keyword results ``fig3_starts``, ``fig7_raw``, ``trajectory``)."""
    return judge_table(TABLE, archive.merge(measure(*results, **extra), __name__))

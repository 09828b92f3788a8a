"""The spike-to-heavy-tail chapter (paper 003, §1, §5, §6, App. A): runs, tables, figures and claims.

Built on :func:`htlib.two_layer.train` and the trajectory analysis of :mod:`htlib.dynamics`
(overlaps, spectrum widths, the one spectrum report and its phase tracks), which name no figure.
Here live the chapter's run configurations (keyed by what each figure needs), its tables
(DataFrames), its figures (on :mod:`htlib.plotting`) and its claim records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from htlib import dynamics, plotting, spectra
from htlib.claims import Claim
from htlib.two_layer import READOUT_SCALES, Trajectory, TwoLayerConfig

NAMES = {"gd": "GD", "adam": "FB-Adam"}
ABBREV = {"random-like": "RL", "bleeding-out": "BO", "bulk+spikes": "BS", "bulk-decay": "BD",
          "heavy-tailed": "HT", "rank-collapse": "RC"}
PAPER_APP_A = {"gd": 1.58, "adam": 1.59}
"""PL_Alpha_KS the paper reports in App. A (weight normalization, 10 steps)."""
OVERLAP_KEYS = ("U_before", "V_before", "U_after", "V_after")


@dataclass(frozen=True)
class SpikeSetup:
    """The chapter's settings (its parameters cell), from which :func:`chapter_configs` builds every run."""

    n: int
    d: int
    h: int
    seed: int
    steps: int
    eta_gd: float
    eta_adam: float
    eta_adam_fig1: float
    etas_adam_track: tuple[float, ...]
    etas_gd_track: tuple[float, ...]
    appA_n: int
    appA_d: int
    appA_h: int
    appA_eta_gd: float
    appA_eta_adam: float
    ht_etas: tuple[float, ...]
    ht_budget: int
    ht_record_every: int
    device: str = "cpu"
    readout: str = "d"


def chapter_configs(s: SpikeSetup) -> dict[tuple, TwoLayerConfig]:
    """Every run of the chapter, keyed ``("long", eta)`` (steps-to-heavy-tail search), ``("appA", opt)``
    (App. A, weight normalization), ``("adam", eta)``/``("gd", eta)`` (``steps``-step runs that record
    every step and keep ``W_0, W_1, W_{T-1}, W_T``) and ``("adam-wn", eta_adam)``; the long runs first
    (they set the wall time)."""
    def short_run(optimizer, eta, **kw):
        return TwoLayerConfig(n=s.n, d=s.d, h=s.h, seed=s.seed, device=s.device, optimizer=optimizer, eta=float(eta),
                              steps=s.steps, keep_weights=(0, 1, s.steps - 1, s.steps), readout_scale=s.readout, **kw)

    configs = {}
    for eta in s.ht_etas:
        configs[("long", eta)] = TwoLayerConfig(n=s.n, d=s.d, h=s.h, seed=s.seed, device=s.device, optimizer="adam",
                                                eta=float(eta), steps=s.ht_budget, record_every=s.ht_record_every)
    for opt, eta in (("gd", s.appA_eta_gd), ("adam", s.appA_eta_adam)):
        configs[("appA", opt)] = TwoLayerConfig(n=s.appA_n, d=s.appA_d, h=s.appA_h, seed=s.seed, device=s.device,
                                                optimizer=opt, eta=float(eta), steps=s.steps, weight_norm=True,
                                                record_every=s.steps, record_initial=False)
    for eta in sorted({*s.etas_adam_track, s.eta_adam, s.eta_adam_fig1}):
        configs[("adam", eta)] = short_run("adam", eta)
    for eta in sorted({*s.etas_gd_track, s.eta_gd}):
        configs[("gd", eta)] = short_run("gd", eta)
    configs[("adam-wn", s.eta_adam)] = short_run("adam", s.eta_adam, weight_norm=True)
    return configs


def _name(opt: str, eta: float) -> str:
    return f"{NAMES[opt]} eta={eta:g}"


# ----------------------------------------------------------------------------- Fig. 1


def report_table(esds: Mapping[str, np.ndarray], *, h: int, d: int, rules: spectra.PhaseRules) -> pd.DataFrame:
    """The spectrum report of each ESD of ``WᵀW`` (raw scale), one row per name."""
    rows = []
    for name, eigs in esds.items():
        r = dynamics.esd_report(eigs, h=h, d=d, rules=rules)
        rows.append({"run": name, "PL_KS": f"{r.alpha:.3g}", "PL_Hill": f"{spectra.alpha_hill(eigs):.3g}",
                     "xmin": f"{r.xmin:.3g}", "tail": r.n_tail, "outliers": r.num_outliers,
                     "p(top)": f"{r.spike_pvalue:.2g}", "phase": r.phase,
                     "strict": "yes" if r.heavy_tailed_strict else "no"})
    return pd.DataFrame(rows)


def esd_fit_figure(esds: Mapping[str, np.ndarray], *, title: str, cut_top: bool = False):
    """One row per ESD: linear histogram, (optionally) the histogram without its largest 1%, and the
    log-log histogram with the fitted power law (PL_Alpha_KS) and ``xmin``."""
    import matplotlib.pyplot as plt

    ncols = 3 if cut_top else 2
    fig, axes = plt.subplots(len(esds), ncols, figsize=(13 if cut_top else 10, 3.5 * len(esds)), squeeze=False)
    for row, (name, eigs) in zip(axes, esds.items()):
        fit = spectra.fit_power_law(eigs)
        plotting.esd_hist(row[0], eigs, bins=120)
        row[0].set_title(f"{name}: linear")
        if cut_top:
            plotting.esd_hist(row[1], eigs[eigs <= np.quantile(eigs, 0.99)], bins=120)
            row[1].set_title(f"{name}: largest 1% cut")
        plotting.esd_hist(row[-1], eigs, log=True)
        plotting.power_law_line(row[-1], eigs, fit.alpha, fit.xmin, label=rf"PL_Alpha_KS = {fit.alpha:.2f}")
        if not cut_top:
            row[-1].axvline(fit.xmin, color="k", ls=":", lw=1, label=r"$x_{\min}$")
        row[-1].set_title(f"{name}: log-log")
        row[-1].legend()
    if title:
        fig.suptitle(title)
    return fig


# ----------------------------------------------------------------------------- Fig. 4: overlaps of one step


def _overlap_title(key: str, w: str, m: str) -> str:
    return rf"$\mathcal{{O}}({key[0]}_{{W_{{{w}}}}}, {key[0]}_{{M_{{{m}}}}})$"


def top_overlaps_table(overlaps: Mapping[str, Mapping[str, np.ndarray]], *, block: int) -> pd.DataFrame:
    """The three largest entries (value @ (row, col), 0-based) of each one-step overlap matrix."""
    rows = []
    for name, ov in overlaps.items():
        for key, O in ov.items():
            s = dynamics.overlap_summary(O, k=block, n_top=3)
            rows.append({"run": name, "overlap": f"O({key[0]}_W{0 if 'before' in key else 1}, {key[0]}_M0)",
                         **{f"top {i + 1}": f"{v:.3f} @ ({a}, {b})"
                            for i, (v, (a, b)) in enumerate(zip(s.top_values, s.top_index))}})
    return pd.DataFrame(rows)


def one_step_overlap_figures(overlaps: Mapping[str, Mapping[str, np.ndarray]], *, block: int, d: int) -> None:
    """Fig. 4: the four overlap heatmaps of each run, then the diagonals after the step (shown)."""
    import matplotlib.pyplot as plt

    for name, ov in overlaps.items():
        fig, axes = plt.subplots(2, 2, figsize=(9, 8))
        for ax, (key, O) in zip(axes.flat, ov.items()):
            plotting.overlap_heatmap(ax, O, k=block, title=_overlap_title(key, "0" if "before" in key else "1", "0"))
        fig.suptitle(f"{name}: overlaps before and after one step")
        plt.show()
    fig, axes = plt.subplots(1, len(overlaps), figsize=(11, 3.8), sharey=True)
    for ax, (name, ov) in zip(np.atleast_1d(axes), overlaps.items()):
        for key in ("U_after", "V_after"):
            ax.semilogy(np.arange(1, block + 1), np.clip(np.diag(ov[key])[:block], 1e-8, None), ".",
                        label=_overlap_title(key, "1", "0").replace("mathcal{O}", "mathrm{diag}\\,\\mathcal{O}"))
        ax.axhline(1 / d, color="k", ls=":", lw=1, label="$1/d$")
        ax.set(xlabel="index $j$", title=f"{name}: diagonal entries")
        ax.legend()
    plt.show()


# ----------------------------------------------------------------------------- Figs. 5-6: ten steps, with and without WN


def width_table(runs: Mapping[str, Trajectory], *, h: int, d: int, rules: spectra.PhaseRules) -> pd.DataFrame:
    """Scale-free widths of the last ESD of each run, its PL_Alpha_KS and heavy-tail label."""
    rows = []
    for name, tr in runs.items():
        w = dynamics.spectrum_width(tr.esd[-1])
        chk = dynamics.esd_report(tr.esd[-1], h=h, d=d, rules=rules)
        rows.append({"run": name, "decades": f"{w.decades:.3g}", "bulk decades": f"{w.bulk_decades:.3g}",
                     "max/mean": f"{w.max_over_mean:.3g}", "cv": f"{w.cv:.3g}", "PL_KS": f"{chk.alpha:.3g}",
                     "heavy-tailed": "yes" if chk.heavy_tailed else "no"})
    return pd.DataFrame(rows)


def spread_summaries(late: Mapping[str, Mapping[str, np.ndarray]], *, block: int) -> dict:
    """``{(run, "U_after" | "V_after"): OverlapSummary}`` of the leading ``block`` of the late overlaps."""
    return {(name, k): dynamics.overlap_summary(ov[k], k=block, n_top=1) for name, ov in late.items()
            for k in ("U_after", "V_after")}


def spread_table(spread: Mapping, *, steps: int) -> pd.DataFrame:
    """Diagonal share, mean index distance, participation and top entry of each late overlap matrix."""
    rows = []
    for (name, key), s in spread.items():
        i, j = s.top_index[0]
        rows.append({"run": name, "overlap": f"O({key[0]}_W{steps}, {key[0]}_M{steps - 1})",
                     "diag share": f"{s.diag_fraction:.3g}", "mean |i-j|": f"{s.mean_index_distance:.3g}",
                     "participation": f"{s.participation:.3g}", "top entry": f"{s.top_values[0]:.3f} @ ({i}, {j})"})
    return pd.DataFrame(rows)


def late_figures(runs: Mapping[str, Trajectory], late: Mapping[str, Mapping[str, np.ndarray]], *, readout: str,
                 steps: int, block: int) -> None:
    """Figs. 5-6: losses per step and the scaled last ESD (plain vs WN), then the late overlap heatmaps (shown)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for c, (name, tr) in enumerate(runs.items()):
        axes[0].plot(tr.steps, tr.metric(f"train_loss@{readout}"), "-o", ms=3, color=plotting.color(c),
                     label=f"{name}: train (probe)")
        axes[0].plot(tr.steps, tr.metric(f"test_loss@{readout}"), "--s", ms=3, color=plotting.color(c),
                     label=f"{name}: test")
        eigs = tr.esd[-1]
        plotting.esd_hist(axes[1], eigs / eigs.mean(), log=True, color_index=c, label=name,
                          xlabel=r"$\lambda / \bar\lambda$")
    axes[0].set(xlabel="step $t$", ylabel="MSE", title=f"losses (readout s = {readout})")
    axes[0].legend()
    axes[1].legend()
    axes[1].set_title(rf"ESD of $W_{{{steps}}}^\top W_{{{steps}}}$ (scaled by its mean)")
    plt.show()
    fig, axes = plt.subplots(2, 2, figsize=(10, 8.5))
    for row, (name, ov) in zip(axes, late.items()):
        for ax, key in zip(row, ("U_after", "V_after")):
            plotting.overlap_heatmap(ax, ov[key], k=block, title=f"{name}: " + _overlap_title(key, str(steps), str(steps - 1)))
    plt.show()


def readout_loss_figure(runs: Mapping[str, Trajectory]):
    """Train and test loss per step of each run under both readout conventions."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for ax, s in zip(axes, READOUT_SCALES):
        for c, (name, tr) in enumerate(runs.items()):
            ax.plot(tr.steps, tr.metric(f"train_loss@{s}"), "-o", ms=3, color=plotting.color(c), label=f"{name}: train")
            ax.plot(tr.steps, tr.metric(f"test_loss@{s}"), "--s", ms=3, color=plotting.color(c), label=f"{name}: test")
        ax.set(xlabel="step $t$", ylabel="MSE", title=f"s = {'d (figures)' if s == 'd' else 'sqrt(d) (formula)'}")
        ax.legend()
    return fig


# ----------------------------------------------------------------------------- phases


def phase_tables(labels: Sequence[str], tracks: Sequence[dynamics.PhaseTrack]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The phase of every recorded step (abbreviated; ``*``: the stricter heavy-tail option holds too)
    and ``lambda_1 / lambda_+`` per step (3 significant digits), one row per traced run."""
    steps = [int(s) for s in tracks[0].steps]
    phases = pd.DataFrame([[ABBREV[p] + ("*" if ok else "") for p, ok in zip(tr.phase, tr.heavy_tailed_strict)]
                           for tr in tracks], index=list(labels), columns=steps)
    ratio = pd.DataFrame([[f"{x:.3g}" for x in tr.top[:, 0] / tr.bulk_edge] for tr in tracks],
                         index=list(labels), columns=steps)
    return phases, ratio


def phase_figures(labels: Sequence[str], tracks: Sequence[dynamics.PhaseTrack], *, strict_alpha: float) -> None:
    """The top eigenvalue over the MP edge and PL_Alpha_KS per step, then the phase strip (shown)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for c, (lab, tr) in enumerate(zip(labels, tracks)):
        ls = "-" if lab.startswith("FB") else "--"
        axes[0].semilogy(tr.steps, tr.top[:, 0] / tr.bulk_edge, ls, marker="o", ms=3, color=plotting.color(c), label=lab)
        axes[1].plot(tr.steps, tr.alpha_ks, ls, marker="o", ms=3, color=plotting.color(c), label=lab)
    axes[0].axhline(1, color="k", lw=1, ls=":")
    axes[0].set(xlabel="step $t$", ylabel=r"$\lambda_1 / \lambda_+$", title="top eigenvalue over the MP edge")
    axes[1].axhline(strict_alpha, color="k", lw=1, ls=":", label=rf"$\alpha = {strict_alpha:g}$")
    axes[1].set(yscale="log", xlabel="step $t$", ylabel="PL_Alpha_KS", title="PL_Alpha_KS")
    axes[1].legend(fontsize=8)
    plt.show()
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(tracks) + 1.6))
    plotting.phase_strip(ax, tracks[0].steps, [tr.phase for tr in tracks], list(labels),
                         marks=[tr.heavy_tailed_strict for tr in tracks])
    ax.set_title("5+1 phase at every step")
    plt.show()


# ----------------------------------------------------------------------------- App. A


def app_a_table(runs: Mapping[str, Trajectory], etas: Mapping[str, float], *, h: int, d: int,
                rules: spectra.PhaseRules) -> pd.DataFrame:
    """PL_Alpha_KS of the App. A runs (``runs`` and ``etas`` keyed by optimizer) next to the paper's."""
    rows = []
    for opt, tr in runs.items():
        eigs = tr.esd[-1]
        chk = dynamics.esd_report(eigs, h=h, d=d, rules=rules)
        rows.append({"run": _name(opt, etas[opt]), "PL_KS paper": f"{PAPER_APP_A[opt]:.3g}",
                     "PL_KS here": f"{chk.alpha:.3g}", "PL_Hill": f"{spectra.alpha_hill(eigs):.3g}",
                     "tail": chk.n_tail, "heavy-tailed": "yes" if chk.heavy_tailed else "no"})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- steps to a heavy tail


def _bracket(first: int | None, prev: int | None) -> str:
    return "not reached" if first is None else (f"t = {first}" if prev is None else f"t in ({prev}, {first}]")


_PAPER_STEPS = {1.0: "~10", 0.1: "~10^4", 0.01: "~10^6"}


def heavy_tail_table(runs: Mapping[float, Trajectory], *, h: int, d: int, rules: spectra.PhaseRules) -> pd.DataFrame:
    """Per learning rate of the long FB-Adam runs: the first heavy-tailed record, the first record with
    PL_Alpha_Hill < 2 (each bracketed by the record before), the end values, and the paper's step count."""
    rows = []
    for eta, tr in runs.items():
        end = dynamics.esd_report(tr.esd[-1], h=h, d=d, rules=rules)
        hill = np.flatnonzero(tr.alpha_hill < 2.0)
        hill_first = ((int(tr.steps[hill[0]]), int(tr.steps[hill[0] - 1]) if hill[0] > 0 else None)
                      if hill.size else (None, None))
        track = dynamics.phase_track(tr.steps, tr.esd, h=h, d=d, rules=rules)
        rows.append({"eta": f"{eta:g}", "first heavy-tailed record": _bracket(*dynamics.steps_to_heavy_tail(track)),
                     "PL_KS at end": f"{end.alpha:.3g}", "tail at end": end.n_tail,
                     "first PL_Hill < 2": _bracket(*hill_first), "PL_Hill at end": f"{tr.alpha_hill[-1]:.3g}",
                     "paper": _PAPER_STEPS.get(eta, "-")})
    return pd.DataFrame(rows)


def heavy_tail_figure(runs: Mapping[float, Trajectory], *, h: int, d: int, rules: spectra.PhaseRules,
                      strict_alpha: float):
    """PL_Alpha_KS along the long FB-Adam runs, heavy-tailed records circled."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for c, (eta, tr) in enumerate(runs.items()):
        reports = dynamics.phase_track(tr.steps, tr.esd, h=h, d=d, rules=rules).reports
        t = np.maximum(tr.steps, 0.5)  # step 0 drawn at 0.5 on the log axis
        alphas = np.array([r.alpha for r in reports])
        ax.plot(t, alphas, "-o", ms=4, color=plotting.color(c), label=rf"$\eta$={eta:g}")
        hit = np.array([r.heavy_tailed for r in reports])
        ax.plot(t[hit], alphas[hit], "o", ms=10, mfc="none", color="k")
    ax.axhline(strict_alpha, color="k", ls=":", lw=1)
    ax.set(xscale="log", yscale="log", xlabel="step $t$ (step 0 drawn at 0.5)", ylabel="PL_Alpha_KS",
           title="FB-Adam: PL_Alpha_KS along training (circled: heavy-tailed)")
    ax.legend()
    return fig


# ----------------------------------------------------------------------------- claims


def chapter_claims(*, one_step: Mapping[str, Mapping[str, np.ndarray]], late_runs: Mapping[str, Trajectory],
                   spread: Mapping, app_a: Mapping[str, Trajectory], fig1: Mapping[str, Trajectory],
                   labels: Sequence[str], tracks: Sequence[dynamics.PhaseTrack], long_runs: Mapping[float, Trajectory],
                   block: int, h: int, d: int, rules: spectra.PhaseRules, ht_budget: int) -> list[Claim]:
    """The chapter's claims (Figs. 4-6 and 9, Fig. 1, §6, the review's step counts), each with its criterion."""
    before_max = max(dynamics.overlap_summary(ov[k], k=block, n_top=1).top_values[0]
                     for ov in one_step.values() for k in ("U_before", "V_before"))
    after_11 = {name: (ov["U_after"][0, 0], ov["V_after"][0, 0]) for name, ov in one_step.items()}
    width = {name: dynamics.spectrum_width(tr.esd[-1]) for name, tr in late_runs.items()}
    late_top = {key: s.top_values[0] for key, s in spread.items()}
    appA = {opt: spectra.fit_power_law(tr.esd[-1]).alpha for opt, tr in app_a.items()}
    f4 = "; ".join(f"{k}: O_U(1,1) {u:.3f}, O_V(1,1) {v:.3f}" for k, (u, v) in after_11.items())
    wn_spread = all(spread[("WN", k)].diag_fraction < spread[("plain", k)].diag_fraction and
                    spread[("WN", k)].mean_index_distance > spread[("plain", k)].mean_index_distance
                    for k in ("U_after", "V_after"))
    claims = [
        Claim("003", "§5.1, Fig. 4", "after one step the spike of W1 is the update's top direction; before it, no outlier overlaps",
              "O(U_W1, U_M0)(1,1) and O(V_W1, V_M0)(1,1) > 0.5 for both runs; every entry before the step < 0.05",
              f"{f4}; largest entry before {before_max:.3f}",
              "agrees" if min(min(v) for v in after_11.values()) > 0.5 and before_max < 0.05 else "disagrees", section="spike-fig4"),
        Claim("003", "§5.2, Fig. 6(b)", "weight normalization gives a wider ESD of W10ᵀW10",
              "decades of the middle 90% of the eigenvalues larger with WN",
              f"{width['WN'].bulk_decades:.3g} (WN) vs {width['plain'].bulk_decades:.3g} (plain); lambda_max/mean "
              f"{width['WN'].max_over_mean:.3g} vs {width['plain'].max_over_mean:.3g}",
              "agrees" if width["WN"].bulk_decades > width["plain"].bulk_decades else "disagrees", section="spike-fig56"),
        Claim("003", "§5.2, Fig. 6(c-d)", "with WN the overlaps spread more off the diagonal",
              "for U and V: smaller diagonal share and larger mean |i-j| of the leading block with WN",
              "; ".join(f"{n} {k[0]}: diag {s.diag_fraction:.3g}, |i-j| {s.mean_index_distance:.3g}" for (n, k), s in spread.items()),
              "agrees" if wn_spread else "disagrees", section="spike-fig56"),
        Claim("003", "§5.2, Fig. 5(c-d)", "after 10 steps the overlaps show no outlier alignment like the one-step case",
              "largest entry of O(U_W10, U_M9) and O(V_W10, V_M9) below 0.5 (plain and WN)",
              "; ".join(f"{n} {k[0]}: {v:.3f}" for (n, k), v in late_top.items()),
              "agrees" if max(late_top.values()) < 0.5 else ("partly" if min(late_top.values()) < 0.5 else "disagrees"),
              reason="" if max(late_top.values()) < 0.5 or min(late_top.values()) >= 0.5 else
              "some overlap matrices keep an outlier above 0.5", section="spike-fig56"),
        Claim("003", "App. A, Fig. 9", "with WN, PL_Alpha_KS 1.58 (GD eta=5000) and 1.59 (FB-Adam eta=3): very heavy-tailed",
              "PL_Alpha_KS within 0.2 of the paper's and below 2",
              f"GD {appA['gd']:.3g}, FB-Adam {appA['adam']:.3g}",
              "agrees" if abs(appA["gd"] - 1.58) <= 0.2 and abs(appA["adam"] - 1.59) <= 0.2 and max(appA.values()) < 2 else "disagrees",
              section="spike-appA"),
    ]
    for name, tr in fig1.items():
        chk = dynamics.esd_report(tr.esd[-1], h=h, d=d, rules=rules)
        claims.append(Claim(
            "003", "§1, Fig. 1", f"10 steps of {name} give a heavy-tailed ESD",
            "the spectrum report labels W10ᵀW10 heavy-tailed; agrees if the stricter option holds too, partly if only the label",
            f"{chk.phase}; tail reach {chk.tail_reach_tw:.3g} TW widths; PL_Alpha_KS {chk.alpha:.3g} on a {chk.n_tail}-eigenvalue tail, p(top) {chk.spike_pvalue:.2g}",
            ("agrees" if chk.heavy_tailed_strict else "partly") if chk.heavy_tailed else "disagrees",
            reason="" if (chk.heavy_tailed_strict or not chk.heavy_tailed) else "labelled heavy-tailed, but PL_Alpha_KS >= 4 or the top eigenvalue is an outlier of the fit (stricter option fails)",
            section="spike-fig1"))
    bridge = [lab for lab, tr in zip(labels, tracks) if "bulk-decay" in tr.phase and tr.phase[-1] == "heavy-tailed"
              and list(tr.phase).index("bulk-decay") < len(tr.phase) - 1]
    claims.append(Claim("003", "§6", "the bulk-decay phase bridges bulk+spikes and heavy tails",
                        "some traced run passes through bulk-decay before it ends heavy-tailed",
                        f"{len(bridge)} of {len(tracks)} traced runs: {', '.join(bridge) if bridge else 'none'}",
                        "agrees" if len(bridge) == len(tracks) else ("partly" if bridge else "disagrees"),
                        reason="" if len(bridge) in (0, len(tracks)) else "seen only for some learning rates", section="spike-phases"))
    first = {eta: dynamics.steps_to_heavy_tail(dynamics.phase_track(tr.steps, tr.esd, h=h, d=d, rules=rules))[0]
             for eta, tr in long_runs.items()}
    for eta, paper in ((1.0, 10), (0.1, 10_000)):
        if eta not in first:
            continue
        got = first[eta]
        tested = paper <= ht_budget
        claims.append(Claim("003", "review discussion of 003", f"FB-Adam eta={eta:g} needs about {paper:g} steps to a heavy tail",
                            f"first heavy-tailed record within 3x of {paper:g} steps" if tested else f"needs a budget >= {paper:g} steps",
                            "not reached" if got is None else f"first heavy-tailed record at step {got}",
                            ("agrees" if got is not None and got <= 3 * paper else "disagrees") if tested else "not tested",
                            reason="" if tested else f"ht_budget = {ht_budget} < {paper:g}", section="spike-steps"))
    return claims

"""What the mp_baseline chapter reads from its cached results: claims, measurements, tables, figures and
glue.  Outside the result-cache key (:mod:`htlib.cache`): editing a level, a gate or a sentence here
recomputes nothing; what computes lives in :mod:`htlib.experiments.mp_baseline.compute`."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from htlib import plotting, spectra
from htlib.claims import Claim, Criterion
from htlib.random_matrices import MPComparison
from htlib.experiments.mp_baseline.compute import GammaPanel, PAPER, Setup, SizeSweep


KS_BOUND = 0.01
"""Criterion of the MP claim: KS distance of the ESD of ``W0`` to MP below this."""
TW_BOUND = 4.0
"""Criterion of the Tracy-Widom claim: mean ``|lambda_max - lambda_+| / s_TW`` below this at every size."""
RIGID_SLOPE = -0.65
"""Criterion of the rigidity claim: fitted slope of log KS against log h below this (rigid rate -1)."""
IID_SLOPE = -0.5
"""The i.i.d.-sample rate of the KS distance; a slope between it and :data:`RIGID_SLOPE` is "partly"."""


def size_phrase(setup: Setup) -> str:
    """Where the chapter's ``W0`` stands against the paper's: for the prose.

    Examples
    --------
    >>> size_phrase(PAPER)
    "the paper's size, 1500 × 1000"
    >>> size_phrase(Setup(h=300, d=200))
    "300 × 200 (the paper's size is 1500 × 1000)"
    """
    size = f"{setup.h} × {setup.d}"
    paper = f"{PAPER.h} × {PAPER.d}"
    return f"the paper's size, {size}" if size == paper else f"{size} (the paper's size is {paper})"


# --------------------------------------------------------------------------- W0 at the paper's size


def w0_table(c: MPComparison):
    """The comparison of one matrix with MP: extreme eigenvalues against the edges, Tracy-Widom gap, KS."""
    rows = [("gamma = d/h", f"{c.gamma:.4f}", ""),
            ("largest eigenvalue", f"{c.lambda_max:.4f}", f"MP edge lambda_+ = {c.lambda_plus:.4f}"),
            ("smallest eigenvalue", f"{c.lambda_min:.4f}", f"MP edge lambda_- = {c.lambda_minus:.4f}"),
            ("(lambda_max - lambda_+) / s_TW", f"{c.edge_gap_tw:.2f}", f"s_TW = {c.tw_scale:.4f}"),
            ("KS distance to MP", f"{c.ks_distance:.4f}", ""),
            ("spikes found by fit_mp", c.num_spikes, "")]
    return plotting.table(rows, ["quantity", "measured", "MP"], index="quantity")


def w0_figure(eigs: np.ndarray, c: MPComparison, *, bins: int = 80):
    """The ESD of ``W0ᵀW0/h`` on the MP density, linear and log-log, edges dotted."""
    import matplotlib.pyplot as plt

    x = np.linspace(max(c.lambda_minus * 0.5, 1e-6), c.lambda_plus * 1.1, 800)
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.4), layout="constrained")
    for ax, log in zip(axes, (False, True)):
        plotting.esd_hist(ax, eigs, bins=bins, log=log, label=r"ESD of $W_0^\top W_0/h$")
        ax.plot(x, spectra.mp_density(x, c.gamma), color=plotting.color(1), lw=2, label="MP density")
        for edge in (c.lambda_minus, c.lambda_plus):
            ax.axvline(edge, color=plotting.color(2), ls=":", lw=1.5)
        ax.set_title("log-log view" if log else "linear view")
        ax.set_xlabel(r"eigenvalue $\lambda$")
    axes[0].legend()
    return fig


def comparison_table(comparisons: Sequence[MPComparison]):
    """One row per matrix: size, top eigenvalue against the edge, Tracy-Widom gap, KS, spikes."""
    rows = [(c.gamma, c.p, c.q, c.lambda_max, c.lambda_plus, c.edge_gap_tw, c.ks_distance, c.num_spikes)
            for c in comparisons]
    return plotting.table(rows, ["gamma", "rows", "cols", "lambda_max", "lambda_+", "gap/s_TW", "KS", "spikes"], index="gamma",
                          formats={"gamma": ".3f", "lambda_max": ".4f", "lambda_+": ".4f", "gap/s_TW": ".2f",
                                   "KS": ".4f"})


def gamma_table(panels: Sequence[GammaPanel]):
    """:func:`comparison_table` of the aspect-ratio panels."""
    return comparison_table([p.comparison for p in panels])


def gamma_figure(panels: Sequence[GammaPanel], *, bins: int = 80):
    """At most three panels a row: each ESD on its MP density."""
    import matplotlib.pyplot as plt

    ncols = 2 if len(panels) == 4 else min(3, len(panels))
    nrows = -(-len(panels) // ncols)
    # At most 8 inches wide: the book's text column shows 8 inches at full size.
    fig, axes = plt.subplots(nrows, ncols, figsize=(8 * ncols / 3, 2.6 * nrows), squeeze=False, layout="constrained")
    for ax, p in zip(axes.flat, panels):
        plotting.esd_hist(ax, p.eigs, bins=bins)
        plotting.mp_overlay(ax, p.comparison.gamma, edge=False, label="MP")
        ax.set_title(rf"$\gamma$ = {p.comparison.gamma:.3g}")
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    return fig


def size_table(sw: SizeSweep):
    """One row per size: seed means of the KS distance and of the top eigenvalue's distance to the edge."""
    rows = zip(sw.raw.p, sw.raw.q, sw.ks_mean, sw.gap_abs, sw.gap_tw)
    return plotting.table(rows, ["rows", "cols", "KS mean", "|lmax - l+| mean", "|gap|/s_TW mean"], index="rows",
                          formats={"KS mean": ".5f", "|lmax - l+| mean": ".5f", "|gap|/s_TW mean": ".2f"})


def size_figure(sw: SizeSweep):
    """KS distance and ``|lambda_max - lambda_+|`` against h (log-log), every seed, with reference rates."""
    import matplotlib.pyplot as plt

    from matplotlib.ticker import NullFormatter

    fig, axes = plt.subplots(1, 2, figsize=(8, 3.4), layout="constrained")
    raw = sw.raw
    for j in range(raw.ks_distance.shape[1]):
        axes[0].plot(raw.p, raw.ks_distance[:, j], "o", color=plotting.color(0), alpha=0.5)
        axes[1].plot(raw.p, np.abs(raw.edge_gap[:, j]), "o", color=plotting.color(0), alpha=0.5)
    ref = raw.p.astype(float)
    axes[0].plot(ref, sw.ks_mean[0] * (ref / ref[0]) ** -1.0, color=plotting.color(1), label=r"$\propto h^{-1}$")
    axes[0].plot(ref, sw.ks_mean[0] * (ref / ref[0]) ** -0.5, color=plotting.color(2), ls="--",
                 label=r"$\propto h^{-1/2}$ (i.i.d. samples)")
    axes[1].plot(ref, sw.gap_abs[0] * (ref / ref[0]) ** (-2 / 3), color=plotting.color(1),
                 label=r"$\propto h^{-2/3}$ (Tracy–Widom)")
    for ax, title in zip(axes, ("KS distance of the ESD to MP", r"$|\lambda_{\max} - \lambda_+|$")):
        ax.set_xscale("log"); ax.set_yscale("log"); ax.set_xlabel("rows h"); ax.set_title(title); ax.legend()
        # A log axis over less than a decade labels its minor ticks, and they collide: label the sizes.
        ax.set_xticks(raw.p, [str(p) for p in raw.p])
        ax.xaxis.set_minor_formatter(NullFormatter())
    return fig


# --------------------------------------------------------------------------- claims


def chapter_claims(w0: MPComparison, panels: Sequence[GammaPanel], sw: SizeSweep) -> list[Claim]:
    """The chapter's claim records, with the criteria fixed above.

    The MP and Tracy-Widom statements are limit theorems; the records say at which finite sizes and
    with how many seeds the chapter checks them.
    """
    spikes = w0.num_spikes + sum(p.comparison.num_spikes for p in panels)
    raw = sw.raw
    logp = np.log(raw.p.astype(float))
    # The seed-to-seed spread of the rigidity slope: one fit per seed column.
    per_seed = [np.polyfit(logp, np.log(raw.ks_distance[:, j]), 1)[0] for j in range(raw.ks_distance.shape[1])]
    slope, lo, hi = sw.ks_slope, min(per_seed), max(per_seed)
    n_seeds = raw.ks_distance.shape[1]
    sizes = f"{int(raw.p[0])} to {int(raw.p[-1])} rows at gamma = {w0.gamma:.3g}, {n_seeds} seeds per size"
    rigid_crit = Criterion("fitted slope of log KS against log h", "<", RIGID_SLOPE, fmt="g")
    rigid = rigid_crit.judge(slope, (lo, hi))
    if rigid == "disagrees":
        # Finite sizes cannot refute a limit law: steeper than i.i.d. is partly, else inconclusive.
        rigid = "partly" if hi < IID_SLOPE else "inconclusive"
    rigid_cause = {"agrees": "",
                   "inconclusive": rigid_crit.straddle_cause((lo, hi)) + " (the finite-size sweep)",
                   "partly": "the slope lies between the i.i.d. rate -1/2 and the rigid rate (finite-size sweep)",
                   }[rigid]
    if rigid == "inconclusive" and lo >= RIGID_SLOPE:
        rigid_cause = ("the slope is no steeper than the rigid rate at these sizes (finite-size sweep); finite "
                       "sizes cannot refute a limit law")
    ks_crit = Criterion(f"KS distance of the ESD to MP at {w0.p} x {w0.q}", "<", KS_BOUND, fmt="g")
    tw_crit = Criterion("largest per-size seed mean of |lambda_max - lambda_+| / s_TW", "<", TW_BOUND, fmt="g")
    return [
        Claim("MP", "Marchenko & Pastur (1967)", "the ESD of WᵀW/p for i.i.d. N(0, 1) entries converges to the MP law of ratio gamma = q/p",
              ks_crit, f"{w0.ks_distance:.2g}", "agrees" if ks_crit.holds(w0.ks_distance) else "inconclusive",
              setting=f"one Gaussian matrix of {w0.p} x {w0.q} (the theorem is a limit)",
              uncertainty=f"one seed; the finite-size sweep shows the seed spread ({n_seeds} seeds per size)",
              cause="" if ks_crit.holds(w0.ks_distance) else "the KS distance exceeds the bound at this one size "
              "(W0 table); one finite size cannot refute a limit law",
              section="mp-w0"),
        Claim("MP", "Tracy & Widom (1994)", "the top eigenvalue fluctuates around lambda_+ on the Tracy-Widom scale ~ h^(-2/3)",
              tw_crit, f"largest mean {sw.gap_tw.max():.2f}", "agrees" if tw_crit.holds(sw.gap_tw.max()) else "inconclusive",
              setting=f"Gaussian matrices of {sizes} (the theorem is a limit)", uncertainty=f"{n_seeds} seeds per size",
              cause="" if tw_crit.holds(sw.gap_tw.max()) else "the edge gap exceeds the bound at some size (size "
              "table); finite sizes cannot refute a limit law",
              section="mp-finite-size"),
        Claim("MP", "eigenvalue rigidity", "the KS distance of the ESD to MP shrinks like 1/h up to logarithms, faster than h^(-1/2)",
              rigid_crit, f"{slope:.2f} (per-seed fits {lo:.2f} to {hi:.2f})", rigid,
              setting=f"Gaussian matrices of {sizes}", uncertainty=f"range of the {n_seeds} per-seed slopes",
              cause=rigid_cause,
              section="mp-finite-size"),
        Claim("MM21", "§3", "pure noise is random-like: no eigenvalue beyond the edge plus its Tracy-Widom margin",
              "fit_mp finds no spike in W0 nor in any aspect-ratio panel", f"{spikes} spikes",
              "agrees" if spikes == 0 else "disagrees",
              setting=f"Gaussian W0 of {w0.p} x {w0.q} and {len(panels)} aspect-ratio panels, one seed each",
              cause="" if spikes == 0 else "fit_mp reports spikes in pure noise (W0 and aspect-ratio tables)",
              reduction_check="" if spikes == 0 else "W0 is at the size of paper 003's student (h x d)",
              section="mp-gammas"),
    ]

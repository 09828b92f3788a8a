"""The Marchenko-Pastur baseline chapter's page: the tables, figures and prose numbers its notebook shows, from the
runs (:mod:`htlib.experiments.mp_baseline.compute`) and the measures
(:mod:`htlib.experiments.mp_baseline.measures`).  Outside the result-cache key."""

from __future__ import annotations

from typing import Sequence

from htlib import plotting
from htlib.random_matrices import MPComparison
from htlib.experiments.mp_baseline.compute import GammaPanel, SizeSweep

def w0_table(c: MPComparison):
    """The comparison of one matrix with MP: extreme eigenvalues against the edges, Tracy-Widom gap, KS."""
    rows = [("gamma = d/h", f"{c.gamma:.4f}", ""),
            ("largest eigenvalue", f"{c.lambda_max:.4f}", f"MP edge lambda_+ = {c.lambda_plus:.4f}"),
            ("smallest eigenvalue", f"{c.lambda_min:.4f}", f"MP edge lambda_- = {c.lambda_minus:.4f}"),
            ("(lambda_max - lambda_+) / s_TW", f"{c.edge_gap_tw:.2f}", f"s_TW = {c.tw_scale:.4f}"),
            ("KS distance to MP", f"{c.ks_distance:.4f}", ""), ("spikes found by fit_mp", c.num_spikes, "")]
    return plotting.table(rows, ["quantity", "measured", "MP"], index="quantity")

def gamma_table(panels: Sequence[GammaPanel]):
    """One row per aspect-ratio panel: size, top eigenvalue against the edge, Tracy-Widom gap, KS, spikes."""
    rows = [(c.gamma, c.p, c.q, c.lambda_max, c.lambda_plus, c.edge_gap_tw, c.ks_distance, c.num_spikes)
            for c in (p.comparison for p in panels)]
    return plotting.table(rows, ["gamma", "rows", "cols", "lambda_max", "lambda_+", "gap/s_TW", "KS", "spikes"], index="gamma",
                          formats={"gamma": ".3f", "lambda_max": ".4f", "lambda_+": ".4f", "gap/s_TW": ".2f",
                                   "KS": ".4f"})

def size_table(sw: SizeSweep):
    """One row per size: seed means of the KS distance and of the top eigenvalue's distance to the edge."""
    rows = zip(sw.raw.p, sw.raw.q, sw.ks_mean, sw.gap_abs, sw.gap_tw)
    return plotting.table(rows, ["rows", "cols", "KS mean", "|lmax - l+| mean", "|gap|/s_TW mean"], index="rows",
                          formats={"KS mean": ".5f", "|lmax - l+| mean": ".5f", "|gap|/s_TW mean": ".2f"})

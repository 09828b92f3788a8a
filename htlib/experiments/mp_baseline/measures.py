"""What the Marchenko-Pastur baseline chapter measures in its cached runs: one :class:`~htlib.claims.Measurement` per
row of its claims table (``claims.toml``, read into :data:`TABLE`) from :func:`measure`, judged by :func:`claims`.
Every fit and test the chapter's claims read happens here; the page (:mod:`htlib.experiments.mp_baseline.reading`)
only words and draws. Outside the result-cache key, which covers :mod:`htlib.experiments.mp_baseline.compute` alone."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from htlib import archive
from htlib.claims import Measurement, judge_table, read_table
from htlib.records import Claim
from htlib.random_matrices import MPComparison
from htlib.experiments.mp_baseline.compute import GammaPanel, PAPER, SizeSweep

TABLE = read_table(Path(__file__).with_name("claims.toml"))
"""The chapter's claims table: each claim's sentence, measurement, statistic and level."""

def per_seed_slopes(sw: SizeSweep) -> np.ndarray:
    """The least-squares slope of log KS against log h of each seed of the sweep (one per column)."""
    logp = np.log(sw.raw.p.astype(float))
    return np.array([np.polyfit(logp, np.log(col), 1)[0] for col in sw.raw.ks_distance.T])

def measure(w0s: Sequence[MPComparison], panels: Sequence[GammaPanel], sw: SizeSweep) -> dict[str, Measurement]:
    """What each row of :data:`TABLE` reads.  The runs are independent draws: the draws of ``W0`` (the chapter's
    first) for the MP row, the sweep's seeds for its rows (its sizes share seeds), and the draws of ``W0`` with the
    aspect-ratio panels for the spike count."""
    w0s = list(w0s)
    if not w0s:
        raise ValueError("measure needs at least one draw of W0")
    w0 = w0s[0]
    if any((c.p, c.q) != (w0.p, w0.q) for c in w0s):
        raise ValueError(f"every draw of W0 must have the same size, got {[(c.p, c.q) for c in w0s]}")
    raw, (n_sizes, n_seeds) = sw.raw, sw.raw.ks_distance.shape
    sizes = f"{int(raw.p[0])} to {int(raw.p[-1])} rows at gamma = {w0.gamma:.3g}, {n_seeds} seeds per size"
    slopes = Measurement(per_seed_slopes(sw), runs_text=f"{n_seeds} seeds, one fit over {n_sizes} sizes each")
    paper_size = (w0.p, w0.q) == (PAPER.h, PAPER.d)
    draws = "one matrix" if len(w0s) == 1 else f"{len(w0s)} independent draws"
    w0_text = "W0" if len(w0s) == 1 else f"{len(w0s)} draws of W0"
    return {
        "mp_law": Measurement([c.ks_distance for c in w0s], runs_text=draws,
                              setting=f"{'one Gaussian matrix' if len(w0s) == 1 else f'{len(w0s)} Gaussian matrices'} "
                                      f"of {w0.p} x {w0.q} (the theorem is a limit)"),
        "tw_edge": Measurement(np.abs(raw.edge_gap_tw).mean(axis=0),
                               runs_text=f"{n_seeds} seeds, one mean over {n_sizes} sizes each",
                               setting=f"Gaussian matrices of {sizes} (the theorem is a limit)"),
        "ks_rigidity": Measurement(parts={"ks_rigidity-iid": slopes, "ks_rigidity-rigid": slopes},
                                   setting=f"Gaussian matrices of {sizes}"),
        "no_spikes": Measurement([*(c.num_spikes for c in w0s), *(p.comparison.num_spikes for p in panels)],
                                 runs_text=f"{w0_text} and {len(panels)} aspect-ratio panels, one matrix each",
                                 setting=f"Gaussian {w0_text} of {w0.p} x {w0.q} and {len(panels)} aspect-ratio "
                                         "panels, one seed each",
                                 reduction_check="W0 is at the size of the student of Kothapalli et al. (h x d)" if paper_size else ""),
    }

def claims(w0s: Sequence[MPComparison], panels: Sequence[GammaPanel], sw: SizeSweep) -> list[Claim]:
    """The chapter's claim records: :data:`TABLE` judged on :func:`measure` (``w0s``: the draws of ``W0``)."""
    return judge_table(TABLE, archive.merge(measure(w0s, panels, sw), __name__))

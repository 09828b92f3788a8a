"""The 5+1 phases chapter's page: the tables, figures and prose numbers its notebook shows, from the runs
(:mod:`htlib.experiments.phases.compute`) and the measures (:mod:`htlib.experiments.phases.measures`).  Outside the
result-cache key."""

from __future__ import annotations

import numpy as np

from htlib import plotting, spectra
from htlib.experiments.phases.compute import Confusion, EXPECTED_PHASES, LARGE, expected_phases
from htlib.experiments.phases.measures import _span, count_phrase

SHORT_PHASES: tuple[str, ...] = ("random", "bleed", "spikes", "decay", "heavy", "collapse")
"""Column names of the confusion table, in the order of :data:`htlib.spectra.PHASES`."""

def confusion_table(conf: Confusion):
    """Rows: case and its accepted labels; columns: how often each phase was returned; ok."""
    rows = [[n, "/".join(expected_phases(n, conf.h, conf.d)), *conf.counts[i], conf.ok[n]]
            for i, n in enumerate(conf.labels)]
    return plotting.table(rows, ["case", "expected", *SHORT_PHASES, "ok"], index="case")

PLANTED_THETAS: dict[str, tuple[float, ...]] = {"rank1-1.0": (1.0,), "rank1-1.1": (1.1,), "rank1-1.4": (1.4,),
                                                "bleed": (1.0, 1.05, 1.1, 1.15)}
"""The signal strengths of the boundary families whose outliers have a closed-form position."""

def predicted_outlier_tw(theta: float, h: int, d: int) -> float:
    """Where the outlier of a rank-one signal ``theta`` is predicted, in TW widths past the MP edge of an ``h x d``
    Gaussian matrix: ``(1 + theta²)(gamma + theta²)/theta²`` above BBP ``gamma**(1/4)``, else nan.

    Examples
    --------
    >>> round(predicted_outlier_tw(1.0, 1500, 1000), 2)
    1.86
    >>> predicted_outlier_tw(0.5, 1500, 1000)
    nan
    """
    g = d / h
    if theta <= g ** 0.25:
        return float("nan")
    spike = (1 + theta ** 2) * (g + theta ** 2) / theta ** 2
    return float((spike - spectra.mp_edges(g)[1]) / spectra.tracy_widom_scale(h, d))

def boundary_evidence(name: str, conf: Confusion) -> str:
    """What the run measured (and theory predicts, for planted signals) for case ``name`` at the confusion's size."""
    reps = conf.reports[name]
    parts = []
    if name in PLANTED_THETAS:
        z = [predicted_outlier_tw(t, conf.h, conf.d) for t in PLANTED_THETAS[name]]
        parts.append("outlier(s) predicted " + ", ".join("below BBP" if np.isnan(x) else f"{x:.1f}" for x in z)
                     + " s_TW past the edge")
    parts.append(f"top eigenvalue {_span([r.edge_margin_tw for r in reps], '.1f')} s_TW from the edge")
    counts = [r.num_outliers for r in reps]
    parts.append(count_phrase(counts[0], "outlier") if len(set(counts)) == 1 else f"{_span(counts, 'd')} outliers")
    if any(r.tail_size for r in reps) and any(np.isfinite(r.tail_alpha) for r in reps):
        parts.append(f"tail alpha {_span([r.tail_alpha for r in reps if np.isfinite(r.tail_alpha)], '.1f')}")
    return ", ".join(parts) + f" ({count_phrase(len(reps), 'seed')})"

def undecidable_table(*confs: Confusion):
    """The families with several accepted labels at each size: labels, why, :func:`boundary_evidence`, labels got."""
    rows = []
    for conf in confs:
        for n in conf.labels:
            allowed = expected_phases(n, conf.h, conf.d)
            if len(allowed) < 2:
                continue
            e = EXPECTED_PHASES[n]
            small = conf.h * conf.d < LARGE[0] * LARGE[1] and "small" in e
            why = "; ".join(w for w in (e.get("why") if "undecidable" in e else "",
                                        e.get("why_small") if small else "") if w)
            labels = ", ".join(f"{lab} ({k})" for lab, k in zip(*np.unique(conf.labels[n], return_counts=True)))
            rows.append((n, f"{conf.h} x {conf.d}", "/".join(allowed), why, boundary_evidence(n, conf), labels))
    return plotting.table(rows, ["case", "size", "accepted", "why", "measured at this size", "labels"], index="case")

def reliability(conf: Confusion) -> str:
    """One clause on how the labelled set fares at the confusion's size, from its labels."""
    missed = [n for n, ok in conf.ok.items() if not ok]
    if not missed:
        return "every family of the set gets an accepted label"
    return (f"{len(missed)} of {len(conf.ok)} families get a label outside their accepted set ("
            + "; ".join(f"{n} labelled {'/'.join(sorted(set(conf.labels[n])))}" for n in missed) + ")")

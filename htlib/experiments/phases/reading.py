"""What the phases chapter reads from its cached results: the claims table (``claims.toml``), its measurements,
tables and the numbers of the prose; outside the result-cache key, so editing a level recomputes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from htlib import archive, plotting, spectra
from htlib.claims import Measurement, judge_table, read_table
from htlib.records import Claim
from htlib.experiments.phases.compute import Confusion, EXPECTED_PHASES, LARGE, expected_phases

TABLE = read_table(Path(__file__).with_name("claims.toml"))
"""The chapter's claims table: each claim's sentence, measurement, statistic and level."""

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

def _span(values: Sequence[float], fmt: str) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:{fmt}}" if f"{lo:{fmt}}" == f"{hi:{fmt}}" else f"{lo:{fmt}}-{hi:{fmt}}"

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

def count_phrase(n: int, noun: str) -> str:
    """``"1 outlier"``, ``"5 outliers"``, ``"no outlier"``: a count that reads right at any value.

    Examples
    --------
    >>> count_phrase(1, "outlier"), count_phrase(5, "outlier"), count_phrase(0, "outlier")
    ('1 outlier', '5 outliers', 'no outlier')
    """
    return f"no {noun}" if n == 0 else f"{n} {noun}" + ("" if n == 1 else "s")

def reliability(conf: Confusion) -> str:
    """One clause on how the labelled set fares at the confusion's size, from its labels."""
    missed = [n for n, ok in conf.ok.items() if not ok]
    if not missed:
        return "every family of the set gets an accepted label"
    return (f"{len(missed)} of {len(conf.ok)} families get a label outside their accepted set ("
            + "; ".join(f"{n} labelled {'/'.join(sorted(set(conf.labels[n])))}" for n in missed) + ")")

LABEL_ROWS: dict[str, tuple[tuple[str, ...], str]] = {
    "random_like": (("gaussian", "rank1-0.5", "rank1-0.8", "zeros5"), "random-like"),
    "spikes": (("rank1-1.4", "rank1-2.0", "rank1-4.0", "rank5", "rank15", "rank60"), "bulk+spikes"),
    "heavy_mu24": (("t2.5", "t3", "pareto2.5", "t2.5+spike"), "heavy-tailed"),
    "bulk_decay_mu4": (("t6", "pareto5"), "bulk-decay"),
    "rank_collapse": (("zeros20", "zeros50", "collapse"), "rank-collapse"),
}
"""The families each label row of :data:`TABLE` draws from, and the taxonomy's label for them."""

def measure(big: Confusion) -> dict[str, Measurement]:
    """What each row of :data:`TABLE` reads from ``big``: every draw (family x seed) is one run; a label row reads
    1 where the draw got the taxonomy's label (else 0), an exponent row its PL_Alpha_KS."""
    seeds = len(next(iter(big.labels.values())))
    setting = (f"synthetic matrices of the laws the taxonomy names, {big.h} x {big.d}, "
               f"{count_phrase(seeds, 'seed')} per family (the paper reads trained layers)")
    def draws(families: Sequence[str], values: Sequence[float], note: str = "") -> Measurement:
        runs = (f"{count_phrase(seeds, 'seed')} of {families[0]}" if len(families) == 1 else
                f"{len(families) * seeds} draws: {len(families)} families x {count_phrase(seeds, 'seed')}")
        return Measurement(values, note=note, setting=setting, runs_text=runs)
    def alphas(*families: str, note: str = "") -> Measurement:
        a = [r.alpha for n in families for r in big.reports[n]]
        failed = sum(not np.isfinite(x) for x in a)
        if failed == len(a):
            return Measurement(setting=setting, cannot_test="no draw has a power-law fit (PL_Alpha_KS is nan)")
        notes = [note, f"{count_phrase(failed, 'draw')} without a power-law fit left out" if failed else ""]
        return draws(families, [x for x in a if np.isfinite(x)], "; ".join(n for n in notes if n))
    out = {}
    for key, (families, want) in LABEL_ROWS.items():
        missed = "; ".join(f"{n} labelled {x}" for n in families for x in big.labels[n] if x != want)
        notes = [f"labels that differ: {missed}" if missed else "", "top eigenvalue " + _span(
            [r.edge_margin_tw for n in families for r in big.reports[n]], ".1f") + " s_TW from the edge"
            if key == "bulk_decay_mu4" else ""]
        out[key] = draws(families, [float(x == want) for n in families for x in big.labels[n]],
                         "; ".join(n for n in notes if n))
    mu24 = ("t3", "pareto2.5")
    tail = [r.tail_alpha for n in mu24 for r in big.reports[n] if np.isfinite(r.tail_alpha)]
    out["alpha_mu24"] = alphas(*mu24, note=f"the tail exponent the label reads is {_span(tail, '.1f')}" if tail else "")
    out["alpha_mu2"] = Measurement(setting=setting, parts={"alpha_mu2-t1_5": alphas("t1.5"),
                                                           "alpha_mu2-pareto1": alphas("pareto1")})
    return out

def claims(big: Confusion) -> list[Claim]:
    """The chapter's claim records (Martin & Mahoney 2021): :data:`TABLE` judged on :func:`measure`."""
    return judge_table(TABLE, archive.merge(measure(big), __name__))

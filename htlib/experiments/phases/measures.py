"""What the 5+1 phases chapter measures in its cached runs: one :class:`~htlib.claims.Measurement` per row of its
claims table (``claims.toml``, read into :data:`TABLE`) from :func:`measure`, judged by :func:`claims`. Every fit
and test the chapter's claims read happens here; the page (:mod:`htlib.experiments.phases.reading`) only words and
draws. Outside the result-cache key."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from htlib import archive
from htlib.claims import Measurement, judge_table, read_table
from htlib.records import Claim
from htlib.experiments.phases.compute import Confusion

TABLE = read_table(Path(__file__).with_name("claims.toml"))
"""The chapter's claims table: each claim's sentence, measurement, statistic and level."""

def _span(values: Sequence[float], fmt: str) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:{fmt}}" if f"{lo:{fmt}}" == f"{hi:{fmt}}" else f"{lo:{fmt}}-{hi:{fmt}}"

def count_phrase(n: int, noun: str) -> str:
    """``"1 outlier"``, ``"5 outliers"``, ``"no outlier"``: a count that reads right at any value.

    Examples
    --------
    >>> count_phrase(1, "outlier"), count_phrase(5, "outlier"), count_phrase(0, "outlier")
    ('1 outlier', '5 outliers', 'no outlier')
    """
    return f"no {noun}" if n == 0 else f"{n} {noun}" + ("" if n == 1 else "s")

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

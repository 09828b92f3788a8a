"""The HTMP densities chapter's page: the tables, figures and prose numbers its notebook shows, from the runs
(:mod:`htlib.experiments.htmp.compute`) and the measures (:mod:`htlib.experiments.htmp.measures`).  Outside the
result-cache key."""

from __future__ import annotations

import numpy as np

from htlib.experiments.htmp.gof_power import run_power  # noqa: F401 - the notebook's ch.run_power
from htlib.experiments.htmp.refits import REFIT_FIELDS, run_refits  # noqa: F401 - the notebook's ch.run_refits
from htlib.experiments.htmp import replicates
from htlib.experiments.htmp.replicates import SubsetsResult, phase_runs, run_subsets  # noqa: F401 - ch.run_subsets
from htlib.experiments.htmp.measures import TABLE, _fmt

def mp_delta() -> float:
    """The MP rule's delta: the fit "finds MP" at delta >= this (1 / the level of the MP rows)."""
    return 1.0 / TABLE["minialexnet-1000"].level

def _span(v, f=lambda x: f"{x:.3g}") -> str:
    return f"{f(v[0])} [{f(v[1])}, {f(v[2])}]"  # (median, lowest, highest) as "m [lo, hi]"

def subset_table(sub: SubsetsResult) -> list[dict]:
    """Per protocol and batch size of the subset runs: the runs, the lowest train and mean test accuracy, the seed
    median of the whole-spectrum kappa and delta per subset, the outliers and the bulk kappa (medians)."""
    rows = []
    for p in replicates.PROTOCOLS:
        for b in replicates.SUBSET_BATCHES:
            by = sub.of(p, b)
            rs = [r for v in by.values() for r in v]
            if not rs:
                continue
            rows.append({"protocol": "book's LeNet" if p == "book" else "public code's", "batch": b, "runs": len(rs),
                         "steps": rs[0].fit.steps, "train acc lo": min(r.fit.train_acc for r in rs),
                         "test acc": float(np.mean([r.fit.test_acc for r in rs])),
                         "kappa per subset (seed median)": "; ".join(
                             _fmt(float(np.median([r.fit.kappa for r in v]))) for v in by.values()),
                         "delta per subset (seed median)": "; ".join(
                             _fmt(float(np.median([r.fit.delta for r in v]))) for v in by.values()),
                         "outliers": float(np.median([r.outliers for r in rs])),
                         "bulk kappa": float(np.median([r.bulk_kappa for r in rs]))})
    return rows

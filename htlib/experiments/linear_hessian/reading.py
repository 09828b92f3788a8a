"""The linear-network Hessians chapter's page: the tables, figures and prose numbers its notebook shows, from the runs
(:mod:`htlib.experiments.linear_hessian.compute`) and the measures
(:mod:`htlib.experiments.linear_hessian.measures`).  Outside the result-cache key."""

from __future__ import annotations

from typing import Sequence

def distinct_digits(values: Sequence[float], lo: int = 2, hi: int = 6) -> int:
    """The fewest significant digits (at least ``lo``, at most ``hi``) at which unequal ``values`` print unequal.

    Examples
    --------
    >>> distinct_digits([0.106111, 0.111563]), distinct_digits([0.5, 0.5]), distinct_digits([1.23451, 1.23459])
    (3, 2, 5)
    """
    v = [float(x) for x in values]
    return next((d for d in range(lo, hi + 1) if all(format(a, f".{d}g") != format(b, f".{d}g")
                                                     for i, a in enumerate(v) for b in v[i + 1:] if a != b)), hi)

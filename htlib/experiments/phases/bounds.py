"""The phases chapter's cost model: the memory and time its Setup implies, so sizes and worker counts no machine
runs are refused before any compute (:mod:`htlib.params`).  It lives beside ``compute.py``, not in it: that file is
in the result-cache key of the results it computes, which a new bound must not recompute."""

from __future__ import annotations

from htlib.experiments.phases import compute
from htlib.params import FLOP_RATE, Cost, extend_setup

MATRIX_COPIES = 4
"""``h x d`` float64 arrays alive at once in one case (the matrix, its Gram or SVD workspace, a centred copy)."""


def costs(setup: compute.Setup) -> list[Cost]:
    families = len(compute.LABELLED_CASES)
    def flops(h: int, d: int) -> float:  # the Gram matrix and its eigenvalues
        return 2.0 * h * d * d + 10.0 * d**3
    big = len(compute.EXAMPLES) + families * setup.confusion_seeds
    return [Cost("the phase cases", ("h", "d", "confusion_seeds", "small_h", "small_d", "small_seeds", "workers"),
                 memory=setup.workers * 8.0 * MATRIX_COPIES * max(setup.h * setup.d, setup.small_h * setup.small_d),
                 seconds=(big * flops(setup.h, setup.d)
                          + families * setup.small_seeds * flops(setup.small_h, setup.small_d)) / FLOP_RATE / 2)]


extend_setup(compute.Setup, costs=costs)

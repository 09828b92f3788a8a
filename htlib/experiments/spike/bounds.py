"""The spike chapter's further rule: ``device = "cuda"`` only where torch sees a CUDA device, refused before any
compute (:mod:`htlib.params`) as the htmp chapter refuses it.  It lives beside ``compute.py``, not in it: that file
is in the result-cache key of the results it computes, which a new rule must not recompute."""

from __future__ import annotations

from htlib.experiments.spike import compute
from htlib.params import Cost, ParameterError, extend_setup

SIZE_RUN_SECONDS = (3.9, 8e-4)
"""One run of ``sizes.py`` recorded at its two ends (the ESD and both readouts on 4,000 test points), on one idle
thread: ``a + b * n`` seconds, fitted to 5.5 s at n = 2000 and 10.3 s at n = 8000 (2026-12-06, load 0.3); the run
at eta = 1, recorded at every step, about three times that."""


def check(setup: compute.Setup) -> None:
    from htlib.small_nets import resolve_device

    try:
        resolve_device(setup.device)
    except ValueError as err:
        raise ParameterError(f"parameter 'device' {err}") from None


def costs(setup: compute.Setup) -> list[Cost]:
    from htlib.experiments.spike import sizes

    a, b = SIZE_RUN_SECONDS
    runs = sum((3 + len(sizes.smaller_etas(setup, n))) * (a + b * n) for n in sizes.sizes(setup))
    return [Cost("the review's eta = 1 at two sizes on 4,000-point test sets", ("n", "seed"),
                 seconds=sizes.SEEDS * runs / 2)]


extend_setup(compute.Setup, check=check, costs=costs)

"""The spike chapter's further rule: ``device = "cuda"`` only where torch sees a CUDA device, refused before any
compute (:mod:`htlib.params`) as the htmp chapter refuses it.  It lives beside ``compute.py``, not in it: that file
is in the result-cache key of the results it computes, which a new rule must not recompute."""

from __future__ import annotations

from htlib.experiments.spike import compute
from htlib.params import ParameterError, extend_setup


def check(setup: compute.Setup) -> None:
    from htlib.small_nets import resolve_device

    try:
        resolve_device(setup.device)
    except ValueError as err:
        raise ParameterError(f"parameter 'device' {err}") from None


extend_setup(compute.Setup, check=check)

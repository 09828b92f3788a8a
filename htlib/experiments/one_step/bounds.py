"""The one-step chapter's cost model: the memory and time its Setup implies, so a size no machine runs is refused
before any compute (:mod:`htlib.params`).  It lives beside ``compute.py``, not in it: that file is in the
result-cache key of the results it computes, which a new bound must not recompute."""

from __future__ import annotations

import dataclasses

from htlib import two_layer
from htlib.experiments.one_step import compute
from htlib.params import FLOP_RATE, Cost, extend_setup

_SIZES = ("n", "d", "h", "n_test", "seeds", "etas", "fig2_gd_etas", "fig2_adam_etas")
_SCALING = ("scaling_h", "scaling_ds", "scaling_hs", "scaling_seeds")


def costs(setup: compute.Setup) -> list[Cost]:
    """The training runs of Figs. 2 and 3 (one step each, their initializations, the autograd check's ten steps)
    and the first-step sweep of Theorem 4.1 (one gradient, its Adam directions and their spectral norms per size)."""
    runs = [*compute.init_configs(setup), *compute.fig2_configs(setup), *compute.fig3_configs(setup)]
    base = two_layer.TwoLayerConfig(**setup.base, seed=0)
    checks = [dataclasses.replace(base, optimizer=o, steps=10, keep_weights=tuple(range(11)), record_esd=False)
              for o in compute.OPTIMIZERS]
    train = [two_layer.run_cost(c) for c in (*runs, base, *checks, *checks)]  # the autograd trainer as much again
    scaling = [*compute.scaling_configs(setup), *compute.scaling_configs(setup, "h")]
    # first_step_norms: the gradient and four directions' norms; spike_ratios (the "h" sweep): one spectral norm
    # at each of the onset grid's points
    sweep = [two_layer.run_cost(c) for c in scaling]
    onsets = len(compute.ONSET_CS) * sum(f for _, f in sweep[len(compute.scaling_configs(setup)):])
    return [Cost("the training runs of Figs. 2 and 3", (*_SIZES, "workers"),
                 memory=max(b for b, _ in train) * setup.workers, seconds=sum(f for _, f in train) / FLOP_RATE),
            Cost("the first-step sweep of Theorem 4.1", (*_SCALING, "n", "d", "workers"),
                 memory=max(b for b, _ in sweep) * setup.workers,
                 seconds=(5 * sum(f for _, f in sweep) + onsets) / FLOP_RATE)]


extend_setup(compute.Setup, costs=costs)

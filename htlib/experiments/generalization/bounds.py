"""The generalization chapter's cost model and its rules between seed counts, so a size no machine runs, or a
seed count the chapter would silently raise, is refused before any compute (:mod:`htlib.params`).  It lives beside
``compute.py``, not in it: that file is in the result-cache key of the results it computes, which a new bound must
not recompute."""

from __future__ import annotations

from dataclasses import replace

from htlib import two_layer
from htlib.experiments.generalization import compute
from htlib.params import FLOP_RATE, Cost, ParameterError, extend_setup

_SHAPE = ("n", "d", "h", "n_test", "steps")


def configs(setup: compute.Setup) -> list[two_layer.TwoLayerConfig]:
    """The training runs of Figs. 7 and 8 as :func:`compute.run_fig7` and :func:`compute.run_fig8` list them, up to
    their seeds and rates (the same sizes; each recording the most its panel records)."""
    steps = setup.steps
    plain = two_layer.TwoLayerConfig(**setup.shape, dtype="float32", optimizer="adam", eta=setup.fig8_eta,
                                     record_every=1)
    fig7 = [replace(plain, record_every=steps, record_initial=False)] * (
        len(compute.OPTIMIZERS) * len(setup.etas) * setup.seeds * (1 + setup.weight_norm_repeat))
    per_seed = [replace(plain, keep_weights=tuple(range(steps + 1))),
                *(replace(plain, n=n) for n in setup.ns),
                *[replace(plain, keep_weights=(steps - 1, steps))] * len(setup.rhos),
                *[plain] * len(setup.steplr_gammas),
                *[replace(plain, record_every=steps, record_initial=False)] * (len(setup.steplr_gammas) + 1)]
    seeds = max(setup.fig8_seeds, setup.fig8a_seeds, setup.fig8cd_seeds)
    return [*fig7, *per_seed * seeds]


def costs(setup: compute.Setup) -> list[Cost]:
    runs = [two_layer.run_cost(c) for c in configs(setup)]
    readouts = setup.fig8_seeds * len(setup.lams) * (setup.steps + 1)  # Fig. 8(b): a ridge readout per kept W_t
    flops = sum(f for _, f in runs) + readouts * two_layer.run_cost(
        two_layer.TwoLayerConfig(**{**setup.shape, "steps": 0}))[1]
    return [Cost("the training runs of Figs. 7 and 8", (*_SHAPE, "seeds", "etas", "fig8_seeds", "fig8a_seeds",
                                                        "fig8cd_seeds", "ns", "rhos", "steplr_gammas", "lams",
                                                        "workers"),
                 memory=max(b for b, _ in runs) * setup.workers, seconds=flops / FLOP_RATE)]


OVERLAP_SVD_SECONDS = 1.0
"""One thin SVD of a 1500 x 1000 float64 matrix (SciPy's ``gesdd``, one thread), as :func:`htlib.dynamics.
update_overlaps` takes two per label-noise run: 1.03 s at load 3 on the two-core AMD EPYC (2026-12-07)."""


def more_seeds_costs(setup: compute.Setup) -> list[Cost]:
    """:func:`extra.run_more_seeds` at its defaults: the trainings its seeds add beyond Fig. 8's own (the rest are
    cached runs of the chapter), their ridge readouts on the larger test sets, and two SVDs per label-noise run."""
    from htlib.experiments.generalization import extra

    steps = setup.steps
    last = two_layer.TwoLayerConfig(**setup.shape, dtype="float32", optimizer="adam", eta=setup.fig8_eta,
                                    record_every=steps, keep_weights=(max(steps - 1, 0), steps))
    runs = (max(extra.NOISE_SEEDS - setup.fig8cd_seeds, 0) * len(extra.NOISE_PAIR)
            + max(extra.RIDGE_SEEDS - setup.fig8_seeds, 0))
    readout = two_layer.run_cost(replace(last, steps=0, keep_weights=(), n_test=extra.N_TEST))[1]
    flops = runs * two_layer.run_cost(last)[1] + extra.RIDGE_SEEDS * len(setup.lams) * readout
    scale = setup.h * setup.d * min(setup.h, setup.d) / (1500 * 1000 * 1000)
    svds = 2 * extra.NOISE_SEEDS * len(extra.NOISE_PAIR) * OVERLAP_SVD_SECONDS * scale
    return [Cost("the ridge readings and label-noise overlaps over more seeds", (*_SHAPE, "lams"),
                 seconds=(flops / FLOP_RATE + svds) / 2)]


def check(setup: compute.Setup) -> None:
    """The extra seeds of Fig. 8(a) and of Figs. 8(c)-(d) add to Fig. 8's own: fewer would silently run as
    ``fig8_seeds``."""
    for name in ("fig8a_seeds", "fig8cd_seeds"):
        if getattr(setup, name) < setup.fig8_seeds:
            raise ParameterError(f"parameter {name!r} must be ≥ fig8_seeds = {setup.fig8_seeds} (those panels read "
                                 f"Fig. 8's own seeds and add the extra ones); got {getattr(setup, name)}")


extend_setup(compute.Setup, costs=lambda s: [*costs(s), *more_seeds_costs(s)], check=check)

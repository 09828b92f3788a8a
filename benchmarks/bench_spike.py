"""Speed of the spike-to-heavy-tail chapter: full-batch steps, recorded steps, long-run projections.

Run: ``python benchmarks/bench_spike.py`` (add ``--chapter`` to also time the whole chapter at its
default parameters with an empty result cache; that takes minutes).  Prints a markdown table.

Every figure is a ratio against a baseline of the same run: a step's FLOP rate against the
machine's fp32 GEMM rate, a recorded step against a plain step.  Absolute seconds are printed for
the projections only, which is what they are for.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import gemm_rate_fp32, machine_line, timeit, today  # noqa: E402

from htlib import spectra  # noqa: E402
from htlib.two_layer import (  # noqa: E402
    AdamState,
    TwoLayerConfig,
    adam_step,
    full_batch_gradient,
    init_weights,
    make_data,
    READOUT_SCALES,
    readout_metrics,
)

ROOT = Path(__file__).resolve().parent.parent


def step_and_record_times(config: TwoLayerConfig) -> tuple[float, float]:
    """Median seconds of one FB-Adam step and of the work ``train`` adds at a recorded step
    (ridge readout + KTA, ESD, top alignment, the two PL exponents)."""
    data = make_data(config)
    W, a = init_weights(config)
    state = AdamState.zeros_like(W)

    def step():
        G = full_batch_gradient(W, a, data.X_train, data.y_train)
        return adam_step(W, G, state, config.eta)

    def record():
        for scale in READOUT_SCALES:  # train() reads out under both conventions
            readout_metrics(W, data, config.lam, scale)
        W64 = W.double()
        eigs = spectra.esd(W64)
        spectra.top_alignment(W64, data.beta.double())
        spectra.alpha_hill(eigs)
        spectra.fit_power_law(eigs)

    with torch.no_grad():
        t_step = timeit(step, repeats=5)
        t_rec = timeit(record, repeats=3)
    return t_step, t_rec


def chapter_seconds() -> float:
    """Wall time of the chapter at default parameters with an empty cache (papermill)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, HTLIB_CACHE_DIR=tmp, TQDM_DISABLE="1")
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "papermill", str(ROOT / "book" / "spike_to_heavy_tail.ipynb"),
             str(Path(tmp) / "out.ipynb"), "--log-level", "WARNING"],
            check=True, env=env, cwd=ROOT,
        )
        return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapter", action="store_true", help="also time the chapter at default parameters")
    args = parser.parse_args()

    gemm = gemm_rate_fp32(2048)
    rows = []
    for name, cfg in (("§4: n=2000, d=1000, h=1500", TwoLayerConfig()),
                      ("App. A: n=4000, d=500, h=3000", TwoLayerConfig(n=4000, d=500, h=3000))):
        t_step, t_rec = step_and_record_times(cfg)
        flops = 4.0 * cfg.n * cfg.d * cfg.h  # two GEMMs of 2 n h d FLOPs
        rows.append((name, cfg, t_step, t_rec, flops / t_step / gemm))

    print(f"Measured {today()} on {machine_line()}; fp32 GEMM rate {gemm / 1e9:.1f} GFLOP/s (2048^3).\n")
    print("| sizes | steps/s | step FLOP rate / GEMM rate | recorded step / plain step |")
    print("|---|---|---|---|")
    for name, _, t_step, t_rec, frac in rows:
        print(f"| {name} | {1 / t_step:.2f} | {frac:.2f} | {(t_step + t_rec) / t_step:.1f} |")
    name, cfg, t_step, t_rec, _ = rows[0]
    print("\nProjected FB-Adam runs at the §4 sizes on this machine:\n")
    print("| steps | record every | projected time |")
    print("|---|---|---|")
    for steps, k in ((100, 20), (10_000, 20), (10_000, 500), (1_000_000, 10_000)):
        sec = steps * t_step + (steps // k + 1) * t_rec
        print(f"| {steps:,} | {k:,} | {sec / 60:.1f} min ({sec / 3600:.2f} h) |")
    if args.chapter:
        print(f"\nChapter at default parameters, empty cache: {chapter_seconds():.0f} s wall.")


if __name__ == "__main__":
    main()

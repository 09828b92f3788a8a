"""Speed of a recorded step's ridge readouts: both conventions at once against each alone, in the same run.

At n = 8000, d = 1000, h = 1500 on one thread (a pool worker's setting): the baseline is the plain float64 Gram
``Zᵀ Z`` of one convention's probe features (a general matrix product), against :func:`htlib.two_layer.gram`
(BLAS syrk); then :func:`htlib.two_layer.readout_metrics_all` (both conventions, the products ``X Wᵀ`` shared)
against two calls of :func:`htlib.two_layer.readout_metrics`.  Ratios, with the load average printed.

Run: ``python benchmarks/bench_readout.py``; prints a markdown table.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine_line, timeit, today  # noqa: E402

from htlib.sweep import limit_threads  # noqa: E402
from htlib.two_layer import (TwoLayerConfig, gram, init_weights, make_data, readout_features,  # noqa: E402
                             readout_metrics, readout_metrics_all)


def main() -> None:
    limit_threads(1)
    cfg = TwoLayerConfig(n=8000, d=1000, h=1500, seed=0)
    data = make_data(cfg)
    W, _ = init_weights(cfg)
    Z = readout_features(W, data.X_probe, "d").to(torch.float64)
    rows = [("Gram of the probe features", timeit(lambda: Z.T @ Z), timeit(lambda: gram(Z))),
            ("both readouts of a recorded step",
             timeit(lambda: [readout_metrics(W, data, cfg.lam, s) for s in ("d", "sqrt_d")]),
             timeit(lambda: readout_metrics_all(W, data, cfg.lam)))]
    print(f"{today()}, {machine_line()}, load average {os.getloadavg()[0]:.2f} at the start, one thread\n")
    print("| what | before (s) | now (s) | ratio |\n|---|---:|---:|---:|")
    for what, before, now in rows:
        print(f"| {what} | {before:.3f} | {now:.3f} | {before / now:.2f} |")
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()

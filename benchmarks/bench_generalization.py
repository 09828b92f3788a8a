"""Benchmark of the generalization chapter's sweeps (paper 003, Fig. 7 runs).

Measures, in one run of this script:

1. the fp32 and fp64 GEMM rates of this machine (the baselines);
2. one Fig. 7 run (10 steps at n=8000, metrics of W_10) against its GEMM-bound floor;
3. a small sweep of Fig. 7 runs: one process with threaded BLAS (``executor="serial"``)
   against ``htlib.sweep.process_executor`` (one process per core, one BLAS thread each);
4. the peak resident memory of a worker and of this process;

and extrapolates the chapter at default parameters.  Prints a markdown table.

    python benchmarks/bench_generalization.py [--n 8000] [--runs 4]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import gemm_rate_fp32, machine_line, timeit, today  # noqa: E402

from htlib.experiments import generalization as gen  # noqa: E402
from htlib.two_layer import train  # noqa: E402


def gemm_rate_fp64(n: int = 2048, repeats: int = 3) -> float:
    gen_ = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=gen_, dtype=torch.float64)
    b = torch.randn(n, n, generator=gen_, dtype=torch.float64)
    return 2.0 * n**3 / timeit(lambda: a @ b, repeats=repeats)


def run_flops(n: int, d: int, h: int, n_test: int, steps: int, records: int) -> tuple[float, float]:
    """(fp32 FLOPs, fp64 FLOPs) of the GEMMs of one run of htlib.two_layer.train.

    Per step: forward ``X Wᵀ`` and the gradient ``Δᵀ X``, ``4 n d h``.  Per recorded step:
    probe and test features under each of the two readout conventions and the train-set loss
    (fp32, ``2 (2 (n + n_test) + n) d h``); the ridge Gram ``ZᵀZ`` (which also gives the KTA) per
    convention (fp64, ``2 * 2 n h^2``); two ``WᵀW`` Grams (fp64, ``2 * 2 h d^2``) and their
    eigendecompositions (fp64, about ``2 * 4/3 d^3 * 3``, counted as GEMM FLOPs).
    """
    f32 = steps * 4.0 * n * d * h + records * 2.0 * (2 * (n + n_test) + n) * d * h
    f64 = records * (4.0 * n * h * h + 4.0 * h * d * d + 8.0 * d**3)
    return f32, f64


def sweep_time(configs, executor: str, workers: int) -> float:
    t0 = time.perf_counter()
    gen.run_trainings(configs, executor=executor, workers=workers, use_cache=False)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8000)
    ap.add_argument("--runs", type=int, default=4, help="runs in the executor comparison")
    args = ap.parse_args()
    os.environ.setdefault("TQDM_DISABLE", "1")
    d, h, n_test, steps = 1000, 1500, 200, 10
    workers = os.cpu_count() or 1

    r32 = gemm_rate_fp32(2048, repeats=3)
    r64 = gemm_rate_fp64()
    f32, f64 = run_flops(args.n, d, h, n_test, steps, records=1)
    floor_steps = steps * 4.0 * args.n * d * h / r32
    floor_run = f32 / r32 + f64 / r64

    cfg = gen.fig7_configs(etas=[1.0], optimizers=["adam"], seeds=1, n=args.n, d=d, h=h, n_test=n_test,
                           steps=steps)[0]
    t0 = time.perf_counter()
    train(cfg)
    t_run = time.perf_counter() - t0

    configs = gen.fig7_configs(etas=[1.0, 1000.0], optimizers=["gd", "adam"], seeds=max(1, args.runs // 4),
                               n=args.n, d=d, h=h, n_test=n_test, steps=steps)[: args.runs]
    t_serial = sweep_time(configs, "serial", workers)
    t_proc = sweep_time(configs, "process", workers)
    rss_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    rss_child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20

    per_run = min(t_serial, t_proc) / len(configs)
    fig7 = 90 * per_run
    print(f"# bench_generalization ({today()}; {machine_line()}; n={args.n})\n")
    print("| quantity | value | ratio |")
    print("|---|---|---|")
    print(f"| fp32 GEMM rate | {r32 / 1e9:.0f} GFLOP/s | baseline |")
    print(f"| fp64 GEMM rate | {r64 / 1e9:.0f} GFLOP/s | {r64 / r32:.2f} x fp32 |")
    print(f"| GEMM-bound floor, 10 steps only | {floor_steps:.2f} s | 1 |")
    print(f"| GEMM-bound floor, 10 steps + metrics of W_10 | {floor_run:.2f} s | {floor_run / floor_steps:.2f} |")
    print(f"| one Fig. 7 run (serial, {torch.get_num_threads()} BLAS threads) | {t_run:.2f} s | "
          f"{t_run / floor_run:.2f} x floor |")
    print(f"| {len(configs)} runs, serial (threaded BLAS) | {t_serial:.1f} s | 1 |")
    print(f"| {len(configs)} runs, {workers} processes x 1 thread | {t_proc:.1f} s | "
          f"{t_serial / t_proc:.2f} x faster |")
    print(f"| Fig. 7 (90 runs) extrapolated, best executor | {fig7 / 60:.1f} min | {fig7 / (90 * floor_run):.2f} x floor |")
    print(f"| peak RSS: this process / largest worker | {rss_self:.2f} / {rss_child:.2f} GiB | |")


if __name__ == "__main__":
    main()

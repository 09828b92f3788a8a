"""Speed of one full-batch two-layer step, and of the one-step chapter.

1. One FB-Adam step at n=8000, d=1000, h=1500 (forward, closed-form gradient, update),
   as a fraction of the fp32 GEMM rate measured in the same run.  FLOPs are counted
   explicitly: the two GEMMs ``X Wᵀ`` and ``Dᵀ X`` are ``2 n d h`` each; the element-wise
   work (tanh, derivative, Adam update) is O(n h + h d) and not counted.  Also shown:
   the same step with autograd + ``torch.optim.Adam`` (a ratio in the same run).
2. With ``--chapter``: the wall and CPU time of executing ``book/one_step_adam.ipynb`` at its
   default parameters with an empty result cache (papermill, TQDM_DISABLE=1).

Run: ``python benchmarks/bench_two_layer.py [--chapter]``; prints markdown tables.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import gemm_rate_fp32, machine_line, timeit, today  # noqa: E402

from htlib.two_layer import (  # noqa: E402
    AdamState,
    TwoLayerConfig,
    adam_step,
    full_batch_gradient,
    init_weights,
    make_data,
    student_mse,
)

ROOT = Path(__file__).resolve().parent.parent


def step_benchmark(n: int = 8000, d: int = 1000, h: int = 1500, repeats: int = 5) -> list[tuple[str, float, float]]:
    cfg = TwoLayerConfig(n=n, d=d, h=h, n_test=8, optimizer="adam", eta=0.1)
    data = make_data(cfg)
    W0, a = init_weights(cfg)
    X, y = data.X_train, data.y_train
    flops = 4.0 * n * d * h

    state = {"W": W0.clone(), "s": AdamState.zeros_like(W0)}

    def closed_form() -> None:
        G = full_batch_gradient(state["W"], a, X, y)
        state["W"], state["s"] = adam_step(state["W"], G, state["s"], 0.1)

    Wp = W0.clone().requires_grad_(True)
    opt = torch.optim.Adam([Wp], lr=0.1)

    def autograd_step() -> None:
        opt.zero_grad()
        student_mse(Wp, a, X, y).backward()
        opt.step()

    def gemms_only() -> None:
        S = X @ W0.T
        S.T @ X

    rate = gemm_rate_fp32()
    rows = []
    for name, fn in (("two GEMMs only (X Wᵀ, Sᵀ X)", gemms_only), ("closed form + explicit Adam (htlib)", closed_form),
                     ("autograd + torch.optim.Adam", autograd_step)):
        with torch.no_grad() if fn is not autograd_step else torch.enable_grad():
            t = timeit(fn, repeats=repeats)
        rows.append((name, t, flops / t / rate))
    return rows, rate, flops


def chapter_benchmark() -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "HTLIB_CACHE_DIR": tmp, "TQDM_DISABLE": "1"}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "papermill", "--log-level", "ERROR", str(ROOT / "book" / "one_step_adam.ipynb"),
             str(Path(tmp) / "out.ipynb")],
            check=True, env=env, cwd=ROOT,
        )
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapter", action="store_true", help="also time the chapter at its defaults")
    args = parser.parse_args()

    rows, rate, flops = step_benchmark()
    print(f"Measured {today()} on {machine_line()}")
    print(f"fp32 GEMM rate: {rate / 1e9:.1f} GFLOP/s; one step at n=8000, d=1000, h=1500 counts 4ndh = {flops / 1e9:.1f} GFLOP\n")
    print("| step | median time (s) | fraction of GEMM rate |")
    print("|---|---:|---:|")
    for name, t, frac in rows:
        print(f"| {name} | {t:.3f} | {frac:.2f} |")
    if args.chapter:
        wall, cpu = chapter_benchmark()
        print("\n| chapter at defaults, empty cache | wall (s) | CPU, all threads (s) |")
        print("|---|---:|---:|")
        print(f"| book/one_step_adam.ipynb | {wall:.0f} | {cpu:.0f} |")


if __name__ == "__main__":
    main()

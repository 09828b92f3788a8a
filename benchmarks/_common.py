"""Shared benchmark utilities: timing and the machine's fp32 GEMM rate.

Every speed figure in this project is a ratio against a baseline measured in
the same run (the GEMM rate, a reference library, or a naive method), because
absolute times on a shared 2-core machine drift from run to run.
"""

from __future__ import annotations

import datetime as _dt
import statistics
import time
from typing import Callable

import torch


def timeit(fn: Callable[[], object], *, repeats: int = 5, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` in seconds over ``repeats`` calls, after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def gemm_rate_fp32(n: int = 4096, repeats: int = 5) -> float:
    """FLOP/s of a float32 ``n x n`` @ ``n x n`` torch matmul (2 n^3 FLOPs)."""
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=gen)
    b = torch.randn(n, n, generator=gen)
    seconds = timeit(lambda: a @ b, repeats=repeats)
    return 2.0 * n**3 / seconds


def today() -> str:
    return _dt.date.today().isoformat()


def machine_line() -> str:
    import os
    import platform

    return f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__} ({torch.get_num_threads()} threads)"

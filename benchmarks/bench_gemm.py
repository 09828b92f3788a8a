"""The machine's float32 GEMM rate: the baseline every other throughput figure is a fraction of.

Usage: python benchmarks/bench_gemm.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import gemm_rate_fp32, machine_line, today  # noqa: E402


def main() -> None:
    rates = {n: gemm_rate_fp32(n) for n in (1024, 2048, 4096)}
    print(f"### fp32 GEMM rate ({today()}; {machine_line()})\n")
    print("| matmul size | GFLOP/s | fraction of the 4096 rate |")
    print("|---|---|---|")
    for n, r in rates.items():
        print(f"| {n} x {n} | {r / 1e9:.1f} | {r / rates[4096]:.2f} |")


if __name__ == "__main__":
    main()

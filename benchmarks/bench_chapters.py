"""Wall time of every chapter at its default parameters, with an empty result cache.

Each chapter is executed with papermill into a temporary file, with
``HTLIB_CACHE_DIR`` pointed at a fresh temporary folder, so nothing is reused
from earlier runs: this is the time CI's nbval run spends on the chapter.
The budget column is the goal set for each chapter.

Usage: python benchmarks/bench_chapters.py [book/x.ipynb ...]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import gemm_rate_fp32, machine_line, today  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from htlib import book  # noqa: E402

BUDGET_MIN = {
    "mp_baseline": 1, "phases": 1, "one_step_adam": 3, "spike_to_heavy_tail": 5,
    "generalization": 12, "htmp": 8, "linear_hessian": 6,
}


def main() -> None:
    import papermill as pm

    paths = [Path(p).resolve() for p in sys.argv[1:]] or book.chapters()
    gemm = gemm_rate_fp32()
    rows = []
    for path in paths:
        with tempfile.TemporaryDirectory() as tmp:
            os.environ["HTLIB_CACHE_DIR"] = tmp
            os.environ["TQDM_DISABLE"] = "1"
            t0 = time.perf_counter()
            pm.execute_notebook(str(path), str(Path(tmp) / path.name), cwd=str(path.parent),
                                kernel_name="python3", progress_bar=False)
            rows.append((path.stem, time.perf_counter() - t0))
    print(f"### Chapters at default parameters, empty cache ({today()}; {machine_line()}; "
          f"fp32 GEMM {gemm / 1e9:.0f} GFLOP/s)\n")
    print("| chapter | wall time (min) | budget (min) | fraction of budget |")
    print("|---|---:|---:|---:|")
    for name, seconds in rows:
        budget = BUDGET_MIN.get(name)
        frac = f"{seconds / 60 / budget:.2f}" if budget else "-"
        print(f"| {name} | {seconds / 60:.2f} | {budget or '-'} | {frac} |")
    print(f"| **all** | {sum(s for _, s in rows) / 60:.2f} | {sum(BUDGET_MIN.values())} | |")


if __name__ == "__main__":
    main()

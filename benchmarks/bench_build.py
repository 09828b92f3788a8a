"""Wall time of the README's commands from a fresh clone, optionally with busy loops beside them.

`make book` (environment setup, then chapter execution and rendering), `make test`, `make html` or `.ci/run`, each
in a fresh clone with its own .venv (pip's local wheel cache still helps).  ``--busy N`` starts N one-core busy
loops for the whole run (a reader's laptop doing other work); the load average is printed at the start and the end.
This takes as long as a CI run or longer, so `make bench` skips it; run it with `make bench-build` or directly::

    .venv/bin/python benchmarks/bench_build.py --steps venv ci
    .venv/bin/python benchmarks/bench_build.py --steps venv book test --busy 2
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine_line, today  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {"venv": ["make", "venv"], "book": ["make", "book"], "html": ["make", "html"], "test": ["make", "test"],
            "ci": ["bash", ".ci/run"]}


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def timed(cmd: list[str], cwd: Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    code = subprocess.run(cmd, cwd=cwd).returncode
    return time.perf_counter() - t0, code


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", nargs="+", choices=list(COMMANDS), default=["venv", "book", "test"])
    parser.add_argument("--busy", type=int, default=0, help="one-core busy loops beside the run (default 0)")
    parser.add_argument("--keep", help="clone into this folder (kept) instead of a temporary one")
    args = parser.parse_args(argv)
    if not 0 <= args.busy <= 64:
        parser.error(f"--busy must be from 0 to 64, got {args.busy}")
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            clone = Path(args.keep) if args.keep else Path(tmp) / "clone"
            subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
            for step in args.steps:
                start = load()
                seconds, code = timed(COMMANDS[step], clone)
                rows.append((step, seconds, code, start, load()))
                print(f"{step}: {seconds / 60:.1f} min, exit {code}, load {start} -> {load()}", flush=True)
    finally:
        for loop in loops:
            loop.kill()
    print(f"\n### Fresh clone, {args.busy} busy loop(s) beside ({today()}; {machine_line()})\n")
    print("| step | wall time | exit | load average (1, 5, 15 min) at start -> end |")
    print("|---|---|---|---|")
    for step, seconds, code, start, end in rows:
        print(f"| `{' '.join(COMMANDS[step])}` | {seconds / 60:.1f} min | {code} | {start} -> {end} |")


if __name__ == "__main__":
    main()

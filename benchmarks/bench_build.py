"""Wall time of the two commands from a fresh clone: `make book` (environment setup,
then chapter execution and rendering) and `make test`.

This takes as long as a CI run (tens of minutes), so `make bench` skips it;
run it with `make bench-build`.  The clone gets its own .venv, so the setup
time includes every install step (pip's local wheel cache still helps).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine_line, today  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def timed(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True)
    return time.perf_counter() - t0


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "clone"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        setup = timed(["make", "venv"], clone)
        book = timed(["make", "book"], clone)
        test = timed(["make", "test"], clone)
    print(f"### Fresh-clone build ({today()}; {machine_line()})\n")
    print("| step | wall time |")
    print("|---|---|")
    print(f"| environment setup (`make venv`) | {setup / 60:.1f} min |")
    print(f"| execute + render (`make book` after setup) | {book / 60:.1f} min |")
    print(f"| `make test` (unit + nbval) | {test / 60:.1f} min |")


if __name__ == "__main__":
    main()

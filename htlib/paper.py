"""Rerun every chapter at the papers' own settings, then build the claims scoreboard of that run.

::

    python -m htlib.paper              # make paper: every chapter into runs/paper/, then the scoreboard
    python -m htlib.paper --dry-run    # validate every parameter set, print the plan, compute nothing
    python -m htlib.paper --only spike_to_heavy_tail,generalization

The chapters' defaults fit a CI budget; where a paper used more (steps, seeds, grid points, data), the
paper's value is one parameter away, and :data:`PAPER_OVERRIDES` collects those parameters per chapter.
Each chapter goes through :func:`htlib.run.run_chapter` (validated before any compute, executed with
papermill, rendered with the book's configuration) into ``runs/paper/``.  Expensive results go through
:mod:`htlib.cache`, so an interrupted ``make paper`` resumes where it stopped: finished training runs are
read back, not recomputed.  Before it starts it prints each chapter's estimated time, scaled from the
benchmarked default run (:data:`DEFAULT_MINUTES`) by :data:`WORK_SCALE`.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from htlib import book, run

__all__ = ["PAPER_OVERRIDES", "WORK_SCALE", "DEFAULT_MINUTES", "plan", "validate_all", "estimate_minutes", "main"]

REPO_ROOT = Path(__file__).resolve().parent.parent
SCOREBOARD = "scoreboard"

PAPER_OVERRIDES: dict[str, dict[str, Any]] = {
    # The Marchenko-Pastur baseline and the phase guide have no paper-scale setting: defaults = paper.
    "mp_baseline": {},
    "phases": {},
    # Paper 003 §4: n=2000, d=1000, h=1500, the nine-rate grid and 5 runs are already the defaults.
    "one_step_adam": {},
    # Paper 003 §5 and its review discussion: eta=0.1 needs about 10^4 FB-Adam steps to a heavy tail.
    "spike_to_heavy_tail": {"ht_budget": 10_000, "ht_record_every": 500},
    # Paper 003 §5.3: the weight-normalized repeat of the Fig. 7 grid (n=8000, 10 steps are defaults).
    "generalization": {"weight_norm_repeat": True},
    # Paper 001, Fig. 5 protocol on the bundled MNIST-5k (htlib.experiments.htmp.PAPER): both
    # architectures at 200 epochs on all 4,000 training images, three repeats (batch sizes, lr and
    # momentum are already the paper's).  With --cifar-dir, the same on all of CIFAR-10 from that folder.
    "htmp": {"n_train": 4000, "alex_repeats": 3, "alex_epochs": 200, "alex_n_train": 4000, "alex_n_test": 1000},
    # Paper 004: n=5000 and 10,000 GD epochs are already the defaults; the tanh runs also train 10,000
    # epochs, and LOBPCG measures the Hessian at every measurement point, not only at the ends.
    "linear_hessian": {"tanh_epochs": 10_000, "hessian_at": "all"},
}
"""Per chapter (notebook stem), the parameters that turn its defaults into the paper's setting."""

WORK_SCALE: dict[str, float] = {
    "mp_baseline": 1.0,
    "phases": 1.0,
    "one_step_adam": 1.0,
    # the steps-to-heavy-tail search dominates: 100x its default budget, about half the default time
    "spike_to_heavy_tail": 50.0,
    # the Fig. 7 grid twice
    "generalization": 1.8,
    # MiniAlexNet (two thirds of the default run) does 800x its default work, LeNet about 67x
    "htmp": 300.0,
    # tanh runs 20x longer, LOBPCG at every measurement point instead of two
    "linear_hessian": 3.0,
}
"""Rough ratio of the paper setting's work to the default's, per chapter (1 where nothing changes)."""

DEFAULT_MINUTES: dict[str, float] = {
    "mp_baseline": 0.32, "phases": 0.29, "one_step_adam": 1.41, "spike_to_heavy_tail": 2.08,
    "generalization": 8.66, "htmp": 3.76, "linear_hessian": 4.57, SCOREBOARD: 0.13,
}
"""Fallback default-parameter times (minutes, 2 idle cores, empty cache) where benchmarks/README.md has none."""


def _benchmark_minutes(root: Path = REPO_ROOT) -> dict[str, float]:
    """Per-chapter default wall times (minutes) from the chapters tables of ``benchmarks/README.md``.

    The README records its tables in the order they were taken, so the last row of a chapter wins.
    """
    readme = root / "benchmarks" / "README.md"
    if not readme.exists():
        return {}
    out: dict[str, float] = {}
    for m in re.finditer(r"^\|\s*([a-z_]+)\s*\|\s*([0-9.]+)\s*\|", readme.read_text(), re.M):
        out[m.group(1)] = float(m.group(2))
    return out


def estimate_minutes(chapter: str, root: Path = REPO_ROOT) -> float:
    """Estimated wall time of ``chapter`` at the paper's setting, in minutes (cold cache)."""
    base = _benchmark_minutes(root).get(chapter, DEFAULT_MINUTES.get(chapter, 1.0))
    return base * WORK_SCALE.get(chapter, 1.0)


def _overrides(chapter: str, cifar_dir: str | None) -> dict[str, Any]:
    overrides = dict(PAPER_OVERRIDES[chapter])
    if chapter == "htmp" and cifar_dir:
        overrides.update(dataset="cifar10", data_dir=str(Path(cifar_dir).resolve()), n_train=50_000,
                         alex_n_train=50_000, alex_n_test=10_000)
    return overrides


def plan(only: list[str] | None = None, *, cifar_dir: str | None = None,
         root: Path = REPO_ROOT) -> list[tuple[Path, dict[str, Any]]]:
    """The chapters to run, in table-of-contents order, with their validated paper overrides.

    Raises
    ------
    run.ParameterError
        Naming the chapter and the parameter, for an override the chapter does not accept, or a
        chapter of the book that has no entry in :data:`PAPER_OVERRIDES`.
    """
    chapters = [p for p in book.chapters(root) if p.stem != SCOREBOARD]
    missing = [p.stem for p in chapters if p.stem not in PAPER_OVERRIDES]
    if missing:
        raise run.ParameterError(f"chapter(s) {missing} have no entry in htlib.paper.PAPER_OVERRIDES "
                                 "(use {} when the defaults are the paper's setting)")
    unknown = sorted(set(PAPER_OVERRIDES) - {p.stem for p in chapters})
    if unknown:
        raise run.ParameterError(f"PAPER_OVERRIDES names chapter(s) {unknown} that are not in _toc.yml")
    if only:
        bad = sorted(set(only) - {p.stem for p in chapters})
        if bad:
            raise run.ParameterError(f"--only: unknown chapter(s) {bad}; chapters: {[p.stem for p in chapters]}")
        chapters = [p for p in chapters if p.stem in only]
    out = []
    for path in chapters:
        params = run.read_parameters(path)
        overrides = _overrides(path.stem, cifar_dir)
        for name, value in overrides.items():
            try:
                run.validate(params, {name: value})
            except run.ParameterError as err:
                first = str(err).splitlines()[0]
                raise run.ParameterError(
                    f"chapter {path.stem!r}, parameter {name!r} = {value!r}: {first}") from None
        out.append((path, run.validate(params, overrides)))
    return out


def validate_all(root: Path = REPO_ROOT) -> list[tuple[Path, dict[str, Any]]]:
    """Every chapter's paper overrides, validated (what ``--dry-run`` checks)."""
    return plan(root=root)


def _fmt_minutes(minutes: float) -> str:
    return f"{minutes:.1f} min" if minutes < 90 else f"{minutes / 60:.1f} h"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m htlib.paper", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="validate every parameter set and print the plan")
    parser.add_argument("--output-dir", default=str(REPO_ROOT / "runs" / "paper"), help="default: runs/paper")
    parser.add_argument("--only", default="", help="comma-separated chapter stems (default: every chapter)")
    parser.add_argument("--cifar-dir", default=None, help="local CIFAR-10 folder (cifar-10-batches-py) for htmp")
    args = parser.parse_args(argv)
    only = [c for c in args.only.split(",") if c] or None
    try:
        todo = plan(only, cifar_dir=args.cifar_dir, root=REPO_ROOT)
    except run.ParameterError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    out_dir = Path(args.output_dir)
    total = sum(estimate_minutes(p.stem, REPO_ROOT) for p, _ in todo)
    print(f"make paper: {len(todo)} chapter(s) into {out_dir}, then the scoreboard; estimated times on two "
          "idle cores with an empty result cache (a resumed run is faster):")
    for path, overrides in todo:
        shown = ", ".join(f"{k}={v!r}" for k, v in overrides.items()) or "defaults are the paper's setting"
        print(f"  {path.stem:<22} ~{_fmt_minutes(estimate_minutes(path.stem, REPO_ROOT)):>9}   {shown}")
    print(f"  {'total':<22} ~{_fmt_minutes(total):>9}")
    if args.dry_run:
        print("dry run: every parameter set is valid; nothing was computed")
        return 0
    # Progress is papermill's bar over each chapter's cells; bars inside the chapters would only
    # clutter the rendered pages of the run.
    os.environ.setdefault("HTLIB_PROGRESS", "0")
    start = time.monotonic()
    failed = []
    for i, (path, overrides) in enumerate(todo, 1):
        elapsed = (time.monotonic() - start) / 60
        print(f"\n[{i}/{len(todo)}] {path.stem} (elapsed {elapsed:.1f} min, "
              f"this chapter ~{_fmt_minutes(estimate_minutes(path.stem, REPO_ROOT))})", flush=True)
        try:
            run.run_chapter(path, overrides, output_dir=out_dir, progress=True)
        except Exception as err:  # keep going: the other chapters and the scoreboard still say something
            print(f"{path.stem} failed ({type(err).__name__}); continuing", file=sys.stderr)
            failed.append(path.stem)
    print(f"\n[scoreboard] from {out_dir}", flush=True)
    run.run_chapter(REPO_ROOT / "book" / f"{SCOREBOARD}.ipynb", {"source": str(out_dir.resolve())},
                    output_dir=out_dir, progress=False)
    print(f"\nmake paper finished in {(time.monotonic() - start) / 60:.1f} min"
          + (f"; failed: {failed}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

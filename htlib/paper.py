"""Rerun every chapter at the papers' own settings, then build the claims scoreboard of that run.

::

    python -m htlib.paper              # make paper: every chapter into runs/paper/, then the scoreboard
    python -m htlib.paper --dry-run    # check everything the run would refuse, print the plan, compute nothing
    python -m htlib.paper --only spike_to_heavy_tail,generalization
    python -m htlib.paper --scheduler tcp://10.0.0.5:8786   # the sweeps on a Dask cluster (or HTLIB_SCHEDULER)

The chapters' defaults fit a CI budget; where a paper used more (steps, seeds, grid points, data), the
paper's value is one parameter away.  A chapter's paper setting is the ``PAPER`` Setup of its experiments
module (:mod:`htlib.experiments._setup`); transitionally, for chapters without a ``Setup``,
:data:`PAPER_OVERRIDES` lists those parameters.  Each chapter goes through :func:`htlib.run.run_chapter`
(validated before any compute, executed with papermill, rendered with the book's configuration) into
``runs/paper/``.  Expensive results go through :mod:`htlib.cache`, so an interrupted ``make paper``
resumes where it stopped: finished training runs are read back, not recomputed.  Before it starts it
prints each chapter's estimated time, scaled from the benchmarked default run (:data:`DEFAULT_MINUTES`)
by :data:`WORK_SCALE`, and, with a Dask scheduler, by the number of its workers.
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

__all__ = ["PAPER_OVERRIDES", "WORK_SCALE", "DEFAULT_MINUTES", "LOCAL_WORKERS", "paper_setting", "parse_only", "plan",
           "validate_all", "estimate_minutes", "main"]

REPO_ROOT = Path(__file__).resolve().parent.parent
SCOREBOARD = "scoreboard"

PAPER_OVERRIDES: dict[str, dict[str, Any]] = {
    # Transitional, now empty: every chapter's experiments module declares its ``PAPER`` Setup.  A new
    # chapter without one would be listed here until it has one.
}
"""Per chapter without a ``PAPER`` Setup (notebook stem), the parameters that turn its defaults into the
paper's setting (transitional)."""

WORK_SCALE: dict[str, float] = {
    "mp_baseline": 1.0,
    "phases": 1.0,
    "one_step_adam": 1.0,
    # the steps-to-heavy-tail search dominates: 100x its default budget, about half the default time
    "spike_to_heavy_tail": 50.0,
    # the Fig. 7 grid twice
    "generalization": 1.8,
    # the default already runs LeNet and the NTK runs at the paper's protocol; PAPER adds MiniAlexNet at 200 epochs
    # x 4,000 images x 3 repeats (about 7 h on two idle cores, htlib.experiments.htmp.alex_paper_hours) on top of
    # the default's 14 min (benchmarks/README.md, idle): (14 + 420) / 14, about 31x
    "htmp": 31.0,
    # tanh runs 20x longer, LOBPCG at every measurement point instead of two
    "linear_hessian": 3.0,
}
"""Rough ratio of the paper setting's work to the default's, per chapter (1 where nothing changes)."""

DEFAULT_MINUTES: dict[str, float] = {
    "mp_baseline": 0.32, "one_step_adam": 1.41, "generalization": 8.66, "htmp": 3.76, SCOREBOARD: 0.13,
    # Derived 2026-12-03, not yet re-timed idle: phases at 3 draws per family (1.7 x the 1-draw CPU time, measured
    # under load), spike at 3 seeds (3 x its 1-seed idle 2.08 min).
    "phases": 0.5, "spike_to_heavy_tail": 6.2,
    # 4.57 min measured idle (benchmarks/README.md) + about 0.47 min for Fig. 8's 108 extra exact minimizers
    # (30 subsets per size instead of 3; 0.52 s of CPU each on two workers), derived, not yet re-timed idle
    "linear_hessian": 5.04,
}
"""Fallback default-parameter times (minutes, 2 idle cores, empty cache) where benchmarks/README.md has none."""


LOCAL_WORKERS = 2
"""Worker processes of the benchmarked default runs: a Dask cluster of N workers scales estimates by this / N."""


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


def _check_cifar_dir(cifar_dir: str) -> str:
    folder = Path(cifar_dir).expanduser().resolve()
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    missing = [n for n in names if not (folder / n).is_file()]
    if not folder.is_dir() or missing:
        what = "is not a folder" if not folder.is_dir() else f"lacks {', '.join(missing)}"
        raise run.ParameterError(f"--cifar-dir {cifar_dir}: {what}; it must be the unpacked "
                                 "cifar-10-batches-py folder (nothing is downloaded)")
    return str(folder)


def paper_setting(path: Path, decl: run.Declaration | None = None, *, cifar_dir: str | None = None) -> dict[str, Any]:
    """The overrides that turn chapter ``path``'s defaults into the paper's setting (not yet validated).

    From the ``PAPER`` Setup of the chapter's experiments module where it has a ``Setup``; transitionally
    from :data:`PAPER_OVERRIDES`.
    """
    decl = decl or run.declared_parameters(path)
    if decl.setup is not None:
        module = sys.modules[decl.setup.__module__]
        setting = getattr(module, "PAPER", None)
        if not isinstance(setting, decl.setup):
            raise run.ParameterError(f"chapter {path.stem!r}: {module.__name__} has a Setup but no PAPER = Setup(...)")
        if path.stem in PAPER_OVERRIDES:
            raise run.ParameterError(f"chapter {path.stem!r} has a PAPER Setup and an entry in "
                                     "htlib.paper.PAPER_OVERRIDES: delete the entry (each setting exists once)")
        overrides = setting.differs_from_default()
        if path.stem == "htmp" and cifar_dir:  # the same protocol on all of CIFAR-10 from that folder
            overrides.update(getattr(module, "cifar_overrides")(_check_cifar_dir(cifar_dir)))
        return overrides
    if path.stem not in PAPER_OVERRIDES:
        raise run.ParameterError(f"chapter(s) {[path.stem]} have no entry in htlib.paper.PAPER_OVERRIDES "
                                 "(use {} when the defaults are the paper's setting) and no PAPER Setup")
    overrides = dict(PAPER_OVERRIDES[path.stem])
    return overrides


def parse_only(text: str | None, chapters: list[str]) -> list[str] | None:
    """The chapters ``--only`` selects (spaces stripped), ``None`` for all; an empty selection is refused.

    Examples
    --------
    >>> parse_only(" htmp , phases", ["phases", "htmp"])
    ['htmp', 'phases']
    >>> parse_only(None, ["phases"]) is None
    True
    """
    if text is None:
        return None
    names = [c.strip() for c in text.split(",") if c.strip()]
    if not names:
        raise run.ParameterError(f"--only {text!r} selects no chapter; name one or more of {chapters}, "
                                 "comma-separated")
    bad = [c for c in names if c not in chapters]
    if bad:
        raise run.ParameterError(f"--only: unknown chapter(s) {bad}; chapters: {chapters}")
    return names


def plan(only: list[str] | None = None, *, cifar_dir: str | None = None, scheduler: str | None = None,
         root: Path = REPO_ROOT) -> list[tuple[Path, dict[str, Any]]]:
    """The chapters to run, in table-of-contents order, with their validated paper overrides.

    With ``scheduler`` (a Dask address), every chapter whose declaration has an ``executor`` that takes
    it gets ``executor=<scheduler>``.

    Raises
    ------
    run.ParameterError
        Naming the chapter and the parameter, for an override the chapter does not accept, or a
        chapter of the book that has neither a ``PAPER`` Setup nor an entry in :data:`PAPER_OVERRIDES`.
    """
    chapters = [p for p in book.chapters(root) if p.stem != SCOREBOARD]
    stems = [p.stem for p in chapters]
    unknown = sorted(set(PAPER_OVERRIDES) - set(stems))
    if unknown:
        raise run.ParameterError(f"PAPER_OVERRIDES names chapter(s) {unknown} that are not in _toc.yml")
    if only is not None:
        only = parse_only(",".join(only), stems)
        chapters = [p for p in chapters if p.stem in only]
    decls = {p: run.declared_parameters(p) for p in chapters}
    missing = [p.stem for p, d in decls.items() if d.setup is None and p.stem not in PAPER_OVERRIDES]
    if missing:
        raise run.ParameterError(f"chapter(s) {missing} have no entry in htlib.paper.PAPER_OVERRIDES "
                                 "(use {} when the defaults are the paper's setting) and no PAPER Setup")
    out = []
    for path, decl in decls.items():
        overrides = paper_setting(path, decl, cifar_dir=cifar_dir)
        if scheduler and "executor" in decl.names:
            try:
                decl.check({"executor": scheduler})
                overrides["executor"] = scheduler
            except run.ParameterError:
                pass  # transitional: a chapter whose executor does not take Dask yet runs locally
        for name, value in overrides.items():
            try:
                decl.check({name: value})
            except run.ParameterError as err:
                first = str(err).splitlines()[0]
                raise run.ParameterError(
                    f"chapter {path.stem!r}, parameter {name!r} = {value!r}: {first}") from None
        try:
            out.append((path, decl.check(overrides)))
        except run.ParameterError as err:  # a rule between parameters (d <= h)
            raise run.ParameterError(f"chapter {path.stem!r}, paper setting {overrides}: "
                                     f"{str(err).splitlines()[0]}") from None
    return out


def validate_all(root: Path = REPO_ROOT) -> list[tuple[Path, dict[str, Any]]]:
    """Every chapter's paper overrides, validated (what ``--dry-run`` checks)."""
    return plan(root=root)


def _fmt_minutes(minutes: float) -> str:
    return f"{minutes:.1f} min" if minutes < 90 else f"{minutes / 60:.1f} h"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m htlib.paper", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true",
                        help="check everything the run would refuse and print the plan; compute nothing")
    parser.add_argument("--output-dir", default=str(REPO_ROOT / "runs" / "paper"), help="default: runs/paper")
    parser.add_argument("--only", default=None, help="comma-separated chapter stems (default: every chapter)")
    parser.add_argument("--cifar-dir", default=None, help="local CIFAR-10 folder (cifar-10-batches-py) for htmp")
    parser.add_argument("--scheduler", default=os.environ.get("HTLIB_SCHEDULER") or None,
                        help="Dask scheduler address tcp://host:port for the chapters' sweeps "
                             "(default: $HTLIB_SCHEDULER; none: local worker processes)")
    args = parser.parse_args(argv)
    workers = None
    try:
        out_dir = run.check_output_dir(args.output_dir)
        if args.scheduler:
            from htlib.sweep import executor_kind

            try:
                if executor_kind(args.scheduler) != "dask":
                    raise ValueError
            except ValueError:
                raise run.ParameterError(f"--scheduler must be a Dask scheduler address tcp://host:port; "
                                         f"got {args.scheduler!r}") from None
            workers = run.check_scheduler(args.scheduler)
            if workers < 1:
                raise run.ParameterError(f"the Dask scheduler at {args.scheduler} has no workers; start some "
                                         f"with `dask worker {args.scheduler} --nthreads 1`")
        only = None
        if args.only is not None:
            stems = [p.stem for p in book.chapters(REPO_ROOT) if p.stem != SCOREBOARD]
            only = parse_only(args.only, stems)
        todo = plan(only, cifar_dir=args.cifar_dir, scheduler=args.scheduler, root=REPO_ROOT)
    except (run.ParameterError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2

    def minutes(path: Path, overrides: dict[str, Any]) -> float:
        base = estimate_minutes(path.stem, REPO_ROOT)
        return base * LOCAL_WORKERS / workers if workers and overrides.get("executor") == args.scheduler else base

    total = sum(minutes(p, o) for p, o in todo)
    where = (f"with the sweeps on the {workers} Dask worker(s) at {args.scheduler} (estimates x {LOCAL_WORKERS}/"
             f"{workers}: the benchmarks ran {LOCAL_WORKERS} local worker processes)" if workers
             else "on two idle cores")
    print(f"make paper: {len(todo)} chapter(s) into {out_dir}, then the scoreboard; estimated times {where}, "
          "with an empty result cache (a resumed run is faster):")
    for path, overrides in todo:
        shown = ", ".join(f"{k}={v!r}" for k, v in overrides.items()) or "defaults are the paper's setting"
        print(f"  {path.stem:<22} ~{_fmt_minutes(minutes(path, overrides)):>9}   {shown}")
    print(f"  {'total':<22} ~{_fmt_minutes(total):>9}")
    local = [p.stem for p, o in todo if workers and o.get("executor") != args.scheduler]
    if local:
        print(f"  (run locally, without the scheduler: {', '.join(local)}; a chapter without sweeps has "
              "nothing to send, the others take the scheduler once they are on their Setup)")
    if args.dry_run:
        print("dry run: every parameter set is valid, the output folder is writable"
              + (", the scheduler answers" if workers else "") + "; nothing was computed")
        return 0
    # Progress is papermill's bar over each chapter's cells; bars inside the chapters would only
    # clutter the rendered pages of the run.
    os.environ.setdefault("HTLIB_PROGRESS", "0")
    start = time.monotonic()
    failed = []
    for i, (path, overrides) in enumerate(todo, 1):
        elapsed = (time.monotonic() - start) / 60
        print(f"\n[{i}/{len(todo)}] {path.stem} (elapsed {elapsed:.1f} min, "
              f"this chapter ~{_fmt_minutes(minutes(path, overrides))})", flush=True)
        try:
            run.run_chapter(path, overrides, output_dir=out_dir, progress=True)
        except Exception as err:  # keep going: the other chapters and the scoreboard still say something
            print(f"{path.stem} failed: {err if isinstance(err, run.RunFailed) else run.failure_reason(err)}; "
                  "continuing", file=sys.stderr)
            failed.append(path.stem)
    print(f"\n[scoreboard] from {out_dir}", flush=True)
    try:
        run.run_chapter(REPO_ROOT / "book" / f"{SCOREBOARD}.ipynb", {"source": str(out_dir)},
                        output_dir=out_dir, progress=False)
    except Exception as err:
        print(f"the scoreboard failed: {err if isinstance(err, run.RunFailed) else run.failure_reason(err)}",
              file=sys.stderr)
        failed.append(SCOREBOARD)
    print(f"\nmake paper finished in {(time.monotonic() - start) / 60:.1f} min"
          + (f"; failed: {failed}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

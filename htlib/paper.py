"""Rerun every chapter at the papers' own settings, then build the claims scoreboard of that run.

::

    python -m htlib.paper              # make paper: every chapter into runs/paper/, then the scoreboard
    python -m htlib.paper --dry-run    # check everything the run would refuse, print the plan, compute nothing
    python -m htlib.paper --only spike_to_heavy_tail,generalization --scheduler tcp://10.0.0.5:8786  # Dask sweeps

A chapter's paper setting is the ``PAPER`` Setup of its experiments module.  Results go through
:mod:`htlib.cache`, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from htlib import book, run
from htlib.sweep import executor_kind

__all__ = ["PAPER_OVERRIDES", "WORK_SCALE", "DEFAULT_MINUTES", "LOCAL_WORKERS", "paper_setting", "parse_only", "plan",
           "validate_all", "estimate_minutes", "main"]

REPO_ROOT = Path(__file__).resolve().parent.parent
SCOREBOARD = "scoreboard"

PAPER_OVERRIDES: dict[str, dict[str, Any]] = {}
"""Per chapter without a ``PAPER`` Setup (notebook stem), the parameters of the paper's setting (now none)."""

WORK_SCALE: dict[str, float] = {
    "mp_baseline": 1.0, "phases": 1.0, "one_step_adam": 1.0,
    "spike_to_heavy_tail": 50.0,  # the steps-to-heavy-tail search: 100x its budget, about half the default time
    "generalization": 1.8,  # the Fig. 7 grid twice
    "htmp": 31.0,  # + MiniAlexNet, 200 epochs x 4,000 images x 3 repeats (7 h, alex_paper_hours): (14 + 420) / 14
    "linear_hessian": 3.0,  # tanh runs 20x longer, LOBPCG at every measurement point instead of two
}
"""Rough ratio of the paper setting's work to the default's, per chapter (1 where nothing changes)."""

DEFAULT_MINUTES: dict[str, float] = {
    "mp_baseline": 0.32, "one_step_adam": 1.41, "generalization": 8.66, "htmp": 3.76, SCOREBOARD: 0.13,
    # derived, not re-timed idle: phases 1.7 x its 1-draw time, spike 3 seeds x 2.08 min, linear_hessian 4.57 + 0.47 min
    "phases": 0.5, "spike_to_heavy_tail": 6.2, "linear_hessian": 5.04,
}
"""Fallback default-parameter times (minutes, 2 idle cores, empty cache) where benchmarks/README.md has none."""

LOCAL_WORKERS = 2
"""Worker processes of the benchmarked default runs: a Dask cluster of N workers scales estimates by this / N."""


def _benchmark_minutes(root: Path = REPO_ROOT) -> dict[str, float]:
    """Per-chapter default wall times (minutes) from ``benchmarks/README.md``'s tables (the last row wins)."""
    readme = root / "benchmarks" / "README.md"
    if not readme.exists():
        return {}
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r"^\|\s*([a-z_]+)\s*\|\s*([0-9.]+)\s*\|", readme.read_text(), re.M)}


def estimate_minutes(chapter: str, root: Path = REPO_ROOT) -> float:
    """Estimated wall time of ``chapter`` at the paper's setting, in minutes (cold cache)."""
    return _benchmark_minutes(root).get(chapter, DEFAULT_MINUTES.get(chapter, 1.0)) * WORK_SCALE.get(chapter, 1.0)


def _check_cifar_dir(cifar_dir: str) -> str:
    folder = Path(cifar_dir).expanduser().resolve()
    missing = [n for n in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"] if not (folder / n).is_file()]
    if not folder.is_dir() or missing:
        what = "is not a folder" if not folder.is_dir() else f"lacks {', '.join(missing)}"
        raise run.ParameterError(f"--cifar-dir {cifar_dir}: {what}; it must be the unpacked "
                                 "cifar-10-batches-py folder (nothing is downloaded)")
    return str(folder)


def paper_setting(path: Path, decl: run.Declaration | None = None, *, cifar_dir: str | None = None) -> dict[str, Any]:
    """The overrides that turn chapter ``path``'s defaults into the paper's setting (not yet validated): its
    ``PAPER`` Setup, or its :data:`PAPER_OVERRIDES`."""
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
    return dict(PAPER_OVERRIDES[path.stem])


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
    if not (names := [c.strip() for c in text.split(",") if c.strip()]):
        raise run.ParameterError(f"--only {text!r} selects no chapter; name one or more of {chapters}, comma-separated")
    if bad := [c for c in names if c not in chapters]:
        raise run.ParameterError(f"--only: unknown chapter(s) {bad}; chapters: {chapters}")
    return names


def plan(only: list[str] | None = None, *, cifar_dir: str | None = None, scheduler: str | None = None,
         root: Path = REPO_ROOT) -> list[tuple[Path, dict[str, Any]]]:
    """The chapters to run, in table-of-contents order, with their validated paper overrides (with a Dask
    ``scheduler``, ``executor=<scheduler>`` for every chapter whose ``executor`` takes it).

    Raises
    ------
    run.ParameterError
        Naming the chapter and parameter, for an override the chapter refuses or a chapter without a paper setting.
    """
    chapters = [p for p in book.chapters(root) if p.stem != SCOREBOARD]
    stems = [p.stem for p in chapters]
    if unknown := sorted(set(PAPER_OVERRIDES) - set(stems)):
        raise run.ParameterError(f"PAPER_OVERRIDES names chapter(s) {unknown} that are not in _toc.yml")
    if only is not None:
        only = parse_only(",".join(only), stems)
        chapters = [p for p in chapters if p.stem in only]
    decls = {p: run.declared_parameters(p) for p in chapters}
    if missing := [p.stem for p, d in decls.items() if d.setup is None and p.stem not in PAPER_OVERRIDES]:
        raise run.ParameterError(f"chapter(s) {missing} have no entry in htlib.paper.PAPER_OVERRIDES "
                                 "(use {} when the defaults are the paper's setting) and no PAPER Setup")
    out = []
    for path, decl in decls.items():
        overrides = paper_setting(path, decl, cifar_dir=cifar_dir)
        if scheduler and "executor" in decl.names:
            with contextlib.suppress(run.ParameterError):  # a chapter whose executor does not take Dask runs locally
                decl.check({"executor": scheduler})
                overrides["executor"] = scheduler
        for name, value in overrides.items():
            try:
                decl.check({name: value})
            except run.ParameterError as err:
                first = str(err).splitlines()[0]
                raise run.ParameterError(f"chapter {path.stem!r}, parameter {name!r} = {value!r}: {first}") from None
        try:
            out.append((path, decl.check(overrides)))
        except run.ParameterError as err:  # a rule between parameters (d <= h)
            raise run.ParameterError(f"chapter {path.stem!r}, paper setting {overrides}: "
                                     f"{str(err).splitlines()[0]}") from None
    return out


def validate_all(root: Path = REPO_ROOT) -> list[tuple[Path, dict[str, Any]]]:
    """Every chapter's paper overrides, validated (what ``--dry-run`` checks)."""
    return plan(root=root)


def archive_keys(text: str | None, todo: list[tuple[Path, dict[str, Any]]]) -> list[str]:
    """The claim keys ``--archive`` names, checked against the claims table of the one chapter ``todo`` holds."""
    if text is None:
        return []
    keys = [k.strip() for k in text.split(",") if k.strip()]
    if len(todo) != 1:
        raise run.ParameterError(f"--archive needs exactly one chapter in --only (it names that chapter's claim "
                                 f"keys); got {len(todo)}")
    from htlib.claims import read_table

    setup = run.declared_parameters(todo[0][0]).setup
    package = sys.modules[setup.__module__].__name__.rpartition(".")[0] if setup is not None else ""
    table = Path(sys.modules[package].__file__).parent / "claims.toml" if package else None
    if table is None or not table.is_file():
        raise run.ParameterError(f"--archive: chapter {todo[0][0].stem!r} has no claims table")
    rows = read_table(table)
    if not keys or (bad := [k for k in keys if k not in rows]):
        raise run.ParameterError(f"--archive {text!r}: name one or more of the chapter's claim keys, comma-separated; "
                                 f"unknown: {bad if keys else 'none given'}; keys: {', '.join(rows)}")
    return keys


def _archived_run(path: Path, overrides: dict[str, Any], keys: list[str], out_dir: Path, argv) -> None:
    """Run the chapter with its kernel writing ``keys``' measurements into a staging folder; once it has finished,
    stamp their provenance and move them into ``book/archive/`` (a failed run leaves the archive as it was)."""
    import shutil
    import tempfile

    from htlib import archive

    out_dir.mkdir(parents=True, exist_ok=True)  # the dry run's writability probe leaves no folder behind
    staging = Path(tempfile.mkdtemp(prefix="archive-", dir=out_dir))
    saved = {k: os.environ.get(k) for k in ("HTLIB_ARCHIVE", "HTLIB_ARCHIVE_DIR")}
    os.environ.update(HTLIB_ARCHIVE=",".join(keys), HTLIB_ARCHIVE_DIR=str(staging))  # the kernel inherits them
    start, commit = time.monotonic(), archive.version()  # the checkout before this run writes into book/archive
    try:
        run.run_chapter(path, overrides, output_dir=out_dir, progress=True)
        wall = time.monotonic() - start
        written = sorted(staging.rglob("*.json"))
        if missing := sorted(set(keys) - {f.stem for f in written}):
            raise run.RunFailed(f"the chapter finished without archiving {missing}")
        command = "make paper ARGS='" + " ".join(sys.argv[1:] if argv is None else argv) + "'"
        shown = {k: v for k, v in overrides.items() if k != "executor"}
        for f in written:
            archive.stamp(f, parameters=shown, command=command, wall_s=wall, commit=commit)
            target = archive.ARCHIVE_DIR / f.relative_to(staging)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(f, target)
            print(f"archived {target}", flush=True)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(staging, ignore_errors=True)


def _fmt_minutes(minutes: float) -> str:
    return f"{minutes:.1f} min" if minutes < 90 else f"{minutes / 60:.1f} h"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m htlib.paper", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true",
                        help="check everything the run would refuse and print the plan; compute nothing")
    parser.add_argument("--output-dir", default=str(REPO_ROOT / "runs" / "paper"), help="default: runs/paper")
    parser.add_argument("--only", default=None, help="comma-separated chapter stems (default: every chapter)")
    parser.add_argument("--cifar-dir", default=None, help="local CIFAR-10 folder (cifar-10-batches-py) for htmp")
    parser.add_argument("--archive", default=None, metavar="KEYS",
                        help="comma-separated claim keys of the one --only chapter: keep their measurements, with "
                             "their provenance, under book/archive/ (htlib.archive), where the chapter reads them")
    parser.add_argument("--scheduler", default=os.environ.get("HTLIB_SCHEDULER") or None,
                        help="Dask scheduler address tcp://host:port for the chapters' sweeps "
                             "(default: $HTLIB_SCHEDULER; none: local worker processes)")
    args = parser.parse_args(argv)
    workers = None
    try:
        out_dir = run.check_output_dir(args.output_dir)
        run.probe_output_dir(out_dir)  # the dry run's "writable" is a test, not a guess
        if args.scheduler:
            try:
                if executor_kind(args.scheduler) != "dask":
                    raise ValueError
            except ValueError:
                raise run.ParameterError(f"--scheduler must be a Dask scheduler address tcp://host:port (its "
                                         f"default: $HTLIB_SCHEDULER); got {args.scheduler!r}") from None
            workers = run.check_scheduler(args.scheduler)
            if workers < 1:
                raise run.ParameterError(f"the Dask scheduler at {args.scheduler} has no workers; start some "
                                         f"with `dask worker {args.scheduler} --nthreads 1`")
        only = parse_only(args.only, [p.stem for p in book.chapters(REPO_ROOT) if p.stem != SCOREBOARD])
        todo = plan(only, cifar_dir=args.cifar_dir, scheduler=args.scheduler, root=REPO_ROOT)
        keep = archive_keys(args.archive, todo)
    except (run.ParameterError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2

    def minutes(path: Path, overrides: dict[str, Any]) -> float:
        base = estimate_minutes(path.stem, REPO_ROOT)
        return base * LOCAL_WORKERS / workers if workers and overrides.get("executor") == args.scheduler else base

    where = (f"with the sweeps on the {workers} Dask worker(s) at {args.scheduler} (estimates x {LOCAL_WORKERS}/"
             f"{workers}: the benchmarks ran {LOCAL_WORKERS} local worker processes)" if workers
             else "on two idle cores")
    print(f"make paper: {len(todo)} chapter(s) into {out_dir}, then the scoreboard; estimated times {where}, "
          "with an empty result cache (a resumed run is faster):")
    for path, overrides in todo:
        shown = ", ".join(f"{k}={v!r}" for k, v in overrides.items()) or "defaults are the paper's setting"
        print(f"  {path.stem:<22} ~{_fmt_minutes(minutes(path, overrides)):>9}   {shown}")
    print(f"  {'total':<22} ~{_fmt_minutes(sum(minutes(p, o) for p, o in todo)):>9}")
    if local := [p.stem for p, o in todo if workers and o.get("executor") != args.scheduler]:
        print(f"  (run locally, without the scheduler: {', '.join(local)}; a chapter without sweeps has "
              "nothing to send, the others take the scheduler once they are on their Setup)")
    if args.dry_run:
        print("dry run: every parameter set is valid, the output folder is writable"
              + (", the scheduler answers" if workers else "") + "; nothing was computed")
        return 0
    # Progress is papermill's bar over each chapter's cells; bars inside would clutter the rendered pages.
    os.environ.setdefault("HTLIB_PROGRESS", "0")
    start = time.monotonic()
    failed = []
    try:
        for i, (path, overrides) in enumerate(todo, 1):
            print(f"\n[{i}/{len(todo)}] {path.stem} (elapsed {(time.monotonic() - start) / 60:.1f} min, "
                  f"this chapter ~{_fmt_minutes(minutes(path, overrides))})", flush=True)
            try:
                if keep:
                    _archived_run(path, overrides, keep, out_dir, argv)
                else:
                    run.run_chapter(path, overrides, output_dir=out_dir, progress=True)
            except Exception as err:  # keep going: the other chapters and the scoreboard still say something
                print(f"{path.stem} failed: {err if isinstance(err, run.RunFailed) else run.failure_reason(err)}; "
                      "continuing", file=sys.stderr)
                failed.append(path.stem)
        print(f"\n[scoreboard] from {out_dir}", flush=True)
        run.run_chapter(REPO_ROOT / "book" / f"{SCOREBOARD}.ipynb", {"source": str(out_dir)},
                        output_dir=out_dir, progress=False)
    except KeyboardInterrupt as err:  # Ctrl-C or SIGTERM: one line, and where to resume from
        print(f"\n{err if isinstance(err, run.Interrupted) else 'interrupted'}; make paper stopped, a rerun "
              "resumes from the result cache", file=sys.stderr)
        return 130
    except Exception as err:
        print(f"the scoreboard failed: {err if isinstance(err, run.RunFailed) else run.failure_reason(err)}",
              file=sys.stderr)
        failed.append(SCOREBOARD)
    print(f"\nmake paper finished in {(time.monotonic() - start) / 60:.1f} min"
          + (f"; failed: {failed}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    run.on_sigterm_interrupt()
    sys.exit(run.quiet_exit(main()))

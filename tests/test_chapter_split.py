"""Each chapter computes in ``compute.py``, measures in ``measures.py`` and writes its page in ``reading.py``; the
result cache keys on the first alone.

So a level, a gate or a sentence of a claim can change without recomputing a run (issue 35), while an edit to
what computes still invalidates the chapter's results.  Checked three ways: the files the key covers, the key's
hash on an edited copy of the package, and a real cached run in a subprocess on that copy.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import htlib
from htlib import cache

PKG = Path(htlib.__file__).resolve().parent
CHAPTERS = sorted(p.name for p in (PKG / "experiments").iterdir() if (p / "compute.py").is_file())


def test_every_chapter_is_split():
    assert CHAPTERS == sorted(["generalization", "htmp", "linear_hessian", "mp_baseline", "one_step", "phases",
                               "spike"])
    for ch in CHAPTERS:
        assert (PKG / "experiments" / ch / "reading.py").is_file()
        assert (PKG / "experiments" / ch / "measures.py").is_file()
        assert not (PKG / "experiments" / f"{ch}.py").exists(), f"{ch}.py beside the package {ch}/"


RUN_MODULES = sorted(f"{p.parent.name}.{p.stem}" for ch in CHAPTERS for p in (PKG / "experiments" / ch).glob("*.py")
                     if p.stem not in ("__init__", "measures", "reading", "bounds"))
"""Every module of a chapter that can hold runs: compute.py and the modules of runs kept beside it."""


@pytest.mark.parametrize("module", RUN_MODULES)
def test_no_run_module_keys_on_reading_bounds_or_the_package_face(module):
    """A module beside compute.py that imports it as ``from htlib.experiments.<ch> import compute`` runs the
    package's __init__, which imports reading.py and bounds.py; none of those is in the key of its runs."""
    files = {p.relative_to(PKG).as_posix() for p in cache._result_files(PKG, f"htlib.experiments.{module}")}
    chapter = module.split(".")[0]
    assert f"experiments/{module.replace('.', '/')}.py" in files
    assert not any(f.endswith((f"{chapter}/reading.py", f"{chapter}/measures.py", f"{chapter}/bounds.py",
                               f"{chapter}/__init__.py", "_facade.py")) for f in files), files


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_key_covers_compute_and_never_reading(chapter):
    files = {p.relative_to(PKG).as_posix() for p in cache._result_files(PKG, f"htlib.experiments.{chapter}.compute")}
    assert f"experiments/{chapter}/compute.py" in files
    assert not any(f.endswith(("reading.py", "measures.py", "claims.toml", f"{chapter}/__init__.py"))
                   for f in files), files
    # the chapter is complete through its face: Setup and PAPER from compute, the claims from reading
    import importlib

    ch = importlib.import_module(f"htlib.experiments.{chapter}")
    assert ch.Setup.__module__ == f"htlib.experiments.{chapter}.compute" and isinstance(ch.PAPER, ch.Setup)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_measures_read_the_runs_and_never_the_page(chapter):
    """Data flows runs -> measures -> judge -> page: the measures import no page module, the runs no measure, and
    the chapter's claims are judged in its measures (so an archived measurement is bound to their code)."""
    measures = {p.relative_to(PKG).as_posix() for p in cache._result_files(PKG, f"htlib.experiments.{chapter}.measures")}
    assert f"experiments/{chapter}/compute.py" in measures
    assert not any(f.endswith(("reading.py", "scoreboard.py")) for f in measures), measures
    import importlib

    m = importlib.import_module(f"htlib.experiments.{chapter}.measures")
    assert m.claims.__module__ == m.__name__ and m.measure.__module__ == m.__name__


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "copy"
    shutil.copytree(PKG, root / "htlib", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _edit_first_level(chapter: Path) -> None:
    """Change the first numeric level of the chapter's claims table (``claims.toml``), and check the table
    read back has it."""
    from htlib.claims import read_table

    table = chapter / "claims.toml"
    src = table.read_text()
    m = re.search(r"(?m)^level\s*=\s*(-?[0-9][0-9_.eE+-]*)\s*$", src)
    assert m, f"{table} has no numeric level to edit"
    old = float(m.group(1))
    new = old * 2 if old else 1.0
    table.write_text(src[:m.start(1)] + repr(new) + src[m.end(1):])
    assert new in [s.level for row in read_table(table).values() for s in (row, *row.parts)]


def _edit_first_run(path: Path) -> str:
    """Append a statement to the first ``run_*`` function of ``path`` (else its first function); returns its name."""
    src = path.read_text()
    fns = [n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef)]
    fn = next((n for n in fns if n.name.startswith("run_")), fns[0])
    lines = src.splitlines(keepends=True)
    lines.insert(fn.end_lineno, "    _edited = None\n")
    path.write_text("".join(lines))
    return fn.name


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_a_level_edit_keeps_the_key_and_a_run_edit_changes_it(chapter, tmp_path):
    root = _copy(tmp_path) / "htlib"
    module = f"htlib.experiments.{chapter}.compute"
    key = cache.source_hash.__wrapped__(str(root), "results", module)
    _edit_first_level(root / "experiments" / chapter)
    assert cache.source_hash.__wrapped__(str(root), "results", module) == key
    _edit_first_run(root / "experiments" / chapter / "compute.py")
    assert cache.source_hash.__wrapped__(str(root), "results", module) != key


_RUN = textwrap.dedent("""
    from htlib import cache
    from htlib.experiments import phases as ch
    from htlib.sweep import run_sweep

    case = sorted(ch.compute.LABELLED_CASES)[0]
    run_sweep(ch.run_phase_case, [ch.PhaseCase(case, h=60, d=40, seed=0)], progress=False)
    print(sum(1 for _ in cache.cache_dir().rglob("*.htc")))
""")


def test_a_cached_run_survives_a_level_edit_and_not_a_run_edit(tmp_path):
    """The issue's test: change a level, the second run makes no new cache entry; change the run, it does."""
    root = _copy(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(root), "HTLIB_CACHE_DIR": str(tmp_path / "cache")}

    def entries() -> int:
        proc = subprocess.run([sys.executable, "-c", _RUN], env=env, capture_output=True, text=True, timeout=300,
                              cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return int(proc.stdout.split()[-1])

    first = entries()
    assert first >= 1
    _edit_first_level(root / "htlib" / "experiments" / "phases")
    assert entries() == first
    src = root / "htlib" / "experiments" / "phases" / "compute.py"
    src.write_text(src.read_text().replace(
        "    return PhaseResult(eigs=raw / cfg.h,", "    _edited = None\n    return PhaseResult(eigs=raw / cfg.h,", 1))
    assert entries() == first + 1


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_a_search_for_a_row_key_finds_the_code_that_measures_it(chapter):
    """Every row of a chapter's claims table is named by a literal string in its measures.py (a key built in a loop,
    such as f"{model}-{b}", would leave a search for "lenet-250" with no code to find)."""
    import importlib

    m = importlib.import_module(f"htlib.experiments.{chapter}.measures")
    src = Path(m.__file__).read_text(encoding="utf-8")
    assert not [k for k in m.TABLE if f'"{k}"' not in src]

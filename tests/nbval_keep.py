"""Hand the chapters nbval has just executed to the book build, so that ``make test-book`` renders them
instead of executing every chapter a second time.

With ``--keep-executed`` (the Makefile's ``nbval`` target passes it), each notebook under ``book/`` whose
every cell passed is written, with the outputs nbval's kernel produced, into Jupyter Book's execution cache
(:func:`htlib.book.execution_cache_path`, keyed by htlib's whole source), exactly as myst-nb would have
stored it after executing the notebook itself: same code cells, so the same jupyter-cache hash.  The book
build then finds it there and executes nothing.  A notebook with a failed, skipped or missing cell is not
kept, so the build executes it as before.  What nbval compares is unchanged.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

_runs: dict[Path, dict] = {}


def pytest_addoption(parser) -> None:
    parser.addoption("--keep-executed", action="store_true",
                     help="store the chapters nbval executed in the book's execution cache (make test-book reuses them)")


def _is_chapter_cell(item) -> bool:
    from nbval.plugin import IPyNbCell  # nbval_numbers' cells are a subclass

    return (isinstance(item, IPyNbCell) and item.config.getoption("keep_executed")
            and Path(str(item.parent.fspath)).resolve().parent == item.config.rootpath / "book")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if not _is_chapter_cell(item):
        return
    report = outcome.get_result()
    run = _runs.setdefault(Path(str(item.parent.fspath)).resolve(), {"outputs": {}, "ok": True, "t0": time.time()})
    if report.failed or report.skipped:
        run["ok"] = False
    if call.when == "call" and report.passed and item.test_outputs is not None:
        run["outputs"][item.cell_num] = item.test_outputs


def pytest_runtest_teardown(item, nextitem) -> None:
    if not _is_chapter_cell(item) or (nextitem is not None and nextitem.parent is item.parent):
        return
    path = Path(str(item.parent.fspath)).resolve()
    run = _runs.pop(path, None)
    if run is not None and run["ok"]:
        keep(path, run["outputs"], time.time() - run["t0"], item.config.rootpath)


def keep(path: Path, outputs: dict[int, list], seconds: float, root: Path) -> bool:
    """Store ``path`` with ``outputs`` (code-cell index -> outputs) in the execution cache of the book at ``root``.

    Returns False (and stores nothing) unless every code cell has its outputs.
    """
    from htlib.book import store_execution

    if sorted(outputs) != list(range(len(outputs))):
        return False
    return store_execution(path, [outputs[i] for i in range(len(outputs))], seconds, root)

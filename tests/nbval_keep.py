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
    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    from htlib.book import execution_cache_path

    nb = nbformat.read(str(path), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    if sorted(outputs) != list(range(len(code))):
        return False
    for i, cell in enumerate(code):
        cell.outputs = [nbformat.from_dict(dict(o)) for o in outputs[i]]
        cell.execution_count = i + 1
        for out in cell.outputs:
            if out.get("output_type") == "execute_result":
                out["execution_count"] = i + 1
    nbformat.validate(nb)
    cache = get_cache(str(execution_cache_path(root)))
    for attempt in range(5):  # two nbval workers may finish a chapter at the same moment (one SQLite file)
        try:
            cache.cache_notebook_bundle(CacheBundleIn(nb, str(path), data={"execution_seconds": seconds}),
                                        check_validity=False, overwrite=True)
            return True
        except Exception as err:  # sqlite3.OperationalError ("database is locked") through SQLAlchemy
            if "locked" not in str(err) or attempt == 4:
                raise
            time.sleep(1 + attempt)
    return False

"""Book build helpers: reference-output refresh, the execution cache, and the build that always renders a book.

:func:`refresh` is the one deliberate way to update a chapter's committed reference outputs (written back only
if every cell succeeded, without images and run-specific metadata).  :func:`build` executes, one at a time and
with a progress line for each, the chapters that the execution cache (:func:`execution_cache_path`, named after
all of htlib's files, its claims tables included: Jupyter Book keys its cache on code cells only) lacks, then
renders the book.  A chapter that fails is rendered from its committed outputs under a banner, the build ends
non-zero naming it and its cell (:func:`failure_advice`).  ``build(execute=False)`` (``make html``) executes
nothing.

Command line: ``python -m htlib.book refresh book/mp_baseline.ipynb [...]``, ``python -m htlib.book build``,
``python -m htlib.book html``.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import importlib.util
import os
import shutil
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import yaml

from htlib.archive import version
from htlib.cache import source_hash

__all__ = ["strip_for_commit", "refresh", "execution_cache_path", "write_build_config", "build", "chapters", "pages",
           "cell_timeout", "failure_advice", "execute_chapters", "store_execution", "is_cached", "BuildInputError"]

REPO_ROOT = Path(__file__).resolve().parent.parent

# Run-specific notebook metadata that would make every refresh a diff.
_VOLATILE_NB_META = ("papermill", "widgets")
_VOLATILE_CELL_META = ("papermill", "execution", "ExecuteTime", "collapsed", "scrolled")


def chapters(root: Path = REPO_ROOT) -> list[Path]:
    """The executable chapters, in table-of-contents order."""
    return [p for p in pages(root) if p.suffix == ".ipynb"]


def pages(root: Path = REPO_ROOT) -> list[Path]:
    """Every page of the book (root, ``.md`` and ``.ipynb``), in table-of-contents order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files: list[str] = [toc["root"]] if toc.get("root") else []

    def walk(entries: list[dict]) -> None:
        for entry in entries:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections", []))

    for part in toc.get("parts", [{"chapters": toc.get("chapters", [])}]):
        walk(part.get("chapters", []))
    out = []
    for f in files:
        for suffix in (".ipynb", ".md"):
            if (root / f"{f}{suffix}").exists():
                out.append(root / f"{f}{suffix}")
                break
    return out


def strip_for_commit(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` without images, widget state or run-specific metadata; text outputs (``text/plain`` of
    figures included) stay: they are what nbval compares."""
    nb = copy.deepcopy(nb)
    for key in _VOLATILE_NB_META:
        nb.metadata.pop(key, None)
    for cell in nb.cells:
        for key in _VOLATILE_CELL_META:
            cell.metadata.pop(key, None)
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.get("outputs", []):
            data = out.get("data")
            if data is not None:
                # glued figures carry their image as application/papermill.record/image/png
                for mime in [m for m in data if m.startswith("image/") or "/image/" in m or "widget" in m]:
                    del data[mime]
                if not data:  # an image-only output: drop it entirely
                    continue
                # Image sizes go; glue's name stays (the scoreboard and the prose checks read it).
                out["metadata"] = {k: v for k, v in out.get("metadata", {}).items() if k == "scrapbook"}
            kept.append(out)
        cell.outputs = kept
    return nb


def refresh(path: str | Path, *, timeout: int | None = None) -> None:
    """Re-execute chapter ``path`` and write it back as the new reference; if any cell fails, nothing is
    written and the partial run is kept in a temporary file whose location is printed.

    ``timeout``: seconds per cell, default :func:`cell_timeout` (``HTLIB_CELL_TIMEOUT``; no limit when unset), as
    in ``make book``: a fixed limit failed a cold htmp refresh on a busy two-core machine (its LeNet grid ran past
    1,800 s at load 9 on 2026-12-06), and a limit cannot tell a busy machine from a hung cell.

    The write-back is atomic (:func:`htlib.cache.atomic_write`): a kill, a full disk or a file-size limit leaves
    the committed chapter as it was.  On Ctrl-C the kernel is stopped and :class:`htlib.run.Interrupted` names the
    partial notebook."""
    import papermill as pm

    from htlib.cache import atomic_write

    path = Path(path).resolve()
    if not path.exists():
        raise FileNotFoundError(f"no such chapter: {path}")
    fd, tmp = tempfile.mkstemp(suffix=f"-{path.name}")
    os.close(fd)
    os.environ.setdefault("TQDM_DISABLE", "1")
    from htlib.run import Interrupted, _literal_path, kernel_manager_class, stop_kernels

    log = Path(f"{tmp}.kernel.log")  # the kernel's own stderr (its teardown chatter), not the cells' output
    managers = kernel_manager_class(log)
    try:
        pm.execute_notebook(_literal_path(path), _literal_path(tmp), cwd=str(path.parent), kernel_name="python3",
                            progress_bar=False, execution_timeout=cell_timeout() if timeout is None else timeout,
                            kernel_manager_class=managers)  # IPC
    except KeyboardInterrupt:
        stop_kernels(managers)
        log.unlink(missing_ok=True)
        raise Interrupted(f"refresh of {path.name} interrupted; nothing written back, the partial notebook is "
                          f"{tmp}") from None
    except Exception:
        kept = log.exists() and log.stat().st_size > 0
        print(f"refresh of {path.name} failed; partial output kept in {tmp}"
              + (f" (kernel log: {log})" if kept else ""), file=sys.stderr)
        if not kept:
            log.unlink(missing_ok=True)
        raise
    log.unlink(missing_ok=True)
    text = nbformat.writes(strip_for_commit(nbformat.read(tmp, as_version=4)))
    atomic_write(path, text if text.endswith("\n") else text + "\n")  # as nbformat.write ends it
    os.unlink(tmp)
    print(f"refreshed {path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path}")


def execution_cache_path(root: Path = REPO_ROOT, package_dir: str | None = None) -> Path:
    """Jupyter Book's execution cache for the current source of ``package_dir`` (htlib)."""
    return root / "_build" / ".jupyter_cache" / source_hash(package_dir, "all")[:16]


def local_mathjax(root: Path = REPO_ROOT) -> Path | None:
    """Copy MathJax 3 (shipped by the ``django-static-mathjax`` wheel) under ``_build``: the book renders its
    math with no network.  The folder to add to ``html_static_path`` (it holds ``mathjax/tex-chtml.js``), or
    ``None`` when the package is not installed."""
    spec = importlib.util.find_spec("mathjax")
    if spec is None or not spec.submodule_search_locations:
        return None
    es5 = Path(list(spec.submodule_search_locations)[0]) / "static" / "mathjax" / "es5"
    if not (es5 / "tex-chtml.js").exists():
        return None
    static = root / "_build" / "static-extra"
    target = static / "mathjax"
    if not (target / "tex-chtml.js").exists():
        shutil.copytree(es5, target, dirs_exist_ok=True)
    return static


def absolute_paths(config: dict, root: Path = REPO_ROOT) -> dict:
    """Point ``config`` (a loaded ``_config.yml``) at the book's local extensions, its ``_static`` folder (htlib.css)
    and the local MathJax by absolute paths, for a build whose configuration lives in another folder; returns it."""
    local = config.get("sphinx", {}).get("local_extensions") or {}
    for name, folder in local.items():
        local[name] = str((root / folder).resolve())
    sphinx_config = config.setdefault("sphinx", {}).setdefault("config", {})
    own_static = root / "book" / "_static"
    static_paths = [str(own_static.resolve())] if own_static.is_dir() else []
    static = local_mathjax(root)
    if static is not None:
        static_paths.append(str(static))
        sphinx_config["mathjax_path"] = "mathjax/tex-chtml.js"
    if static_paths:
        sphinx_config["html_static_path"] = static_paths
    return config

def write_build_config(root: Path = REPO_ROOT, package_dir: str | None = None,
                       not_executed: dict[str, str] | None = None) -> Path:
    """``_config.yml`` with the execution cache at :func:`execution_cache_path`, MathJax served locally, and the
    pages ``not_executed`` (docname -> banner text) rendered from their committed outputs under a banner."""
    config = yaml.safe_load((root / "_config.yml").read_text())
    execute = config.setdefault("execute", {})
    execute["cache"] = str(execution_cache_path(root, package_dir))
    execute["timeout"] = cell_timeout()
    absolute_paths(config, root)
    if not_executed:
        execute["exclude_patterns"] = sorted(f"{doc}.ipynb" for doc in not_executed)
        sphinx = config.setdefault("sphinx", {})
        sphinx.setdefault("local_extensions", {})["not_executed"] = str(REPO_ROOT / "book" / "_ext")
        sphinx.setdefault("config", {})["htlib_not_executed"] = dict(not_executed)
    config.setdefault("html", {})["extra_footer"] = footer(root)
    out = root / "_build" / "_config.generated.yml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(config, sort_keys=False))
    return out


def footer(root: Path = REPO_ROOT) -> str:
    """The footer of every page: the code version and the build date, and where to find how to cite."""
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    return (f'<p>htlib version <code>{version(root)}</code>, built {date}. '
            f'See <a href="index.html#how-to-cite">how to cite</a> this book.</p>')


def jupyter_book_command() -> str:
    """The ``jupyter-book`` script of this environment (it has no ``__main__`` module)."""
    beside = Path(sys.executable).with_name("jupyter-book")
    return str(beside) if beside.exists() else "jupyter-book"


class BuildInputError(ValueError):
    """A setting of the book build that is refused before anything runs (its message is one line)."""


def cell_timeout() -> int:
    """``HTLIB_CELL_TIMEOUT``, the book build's per-cell timeout in whole seconds; -1 (no limit) when unset.

    No limit is the default: a per-cell timeout cannot tell a slow or busy machine from a hung cell.

    Examples
    --------
    >>> import os
    >>> os.environ["HTLIB_CELL_TIMEOUT"] = "600"; cell_timeout()
    600
    >>> os.environ["HTLIB_CELL_TIMEOUT"] = "inf"; cell_timeout()
    Traceback (most recent call last):
    ...
    htlib.book.BuildInputError: HTLIB_CELL_TIMEOUT must be a whole number of seconds from 1 to 604800 (unset: no limit), got 'inf'
    >>> del os.environ["HTLIB_CELL_TIMEOUT"]; cell_timeout()
    -1
    """
    text = os.environ.get("HTLIB_CELL_TIMEOUT", "").strip()
    if not text:
        return -1  # nbclient and myst-nb read -1 as "no timeout"
    if not re.fullmatch(r"\d{1,6}", text) or not 1 <= int(text) <= _MAX_TIMEOUT:
        raise BuildInputError(f"HTLIB_CELL_TIMEOUT must be a whole number of seconds from 1 to {_MAX_TIMEOUT} "
                              f"(unset: no limit), got {text!r}")
    return int(text)


_MAX_TIMEOUT = 7 * 24 * 3600


def _shown(path: Path, root: Path) -> str:
    path, root = Path(path).resolve(), Path(root).resolve()
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def _cell_named(cells: list, index: int | None) -> str:
    """``cell N (`first line`)``, N counting every cell from 1 as the notebook shows them, or "a cell"."""
    if index is None or not 0 <= index < len(cells):
        return "a cell"
    first = next((line.strip() for line in cells[index].source.splitlines() if line.strip()), "")
    return f"cell {index + 1} (`{first}`)" if first else f"cell {index + 1}"


def failure_advice(notebook: Path, error: str, cell: str, root: Path = REPO_ROOT, *, detail: str = "",
                   limit: int | None = None) -> str:
    """What the build says when executing ``notebook`` failed in ``cell`` (:func:`_cell_named`) with ``error``
    (nbclient's class name, or the cell's exception): the chapter, the cell, and what to do."""
    shown = _shown(notebook, root)
    rerun = f"`python -m htlib.run {shown} --no-html` reruns this chapter alone, keeping its partial notebook"
    if error == "CellTimeoutError":
        return (f"chapter {shown}, {cell}, ran past the per-cell timeout of {limit} s (HTLIB_CELL_TIMEOUT): unset it "
                f"for no limit, or raise it; {rerun}.")
    what = f"{error}: {detail}" if detail else error
    return f"chapter {shown}, {cell}, raised {what}; {rerun}."


def _banner(advice: str) -> str:
    """The text of the banner on a chapter that failed in this build."""
    return (f"This build did not execute this chapter: {advice}\n\nThe page shows the outputs committed with the "
            "book instead: its tables, numbers and verdicts are the ones the book's regression checks against the "
            "code, and its figures are not drawn.")


def html_banner(path: Path, root: Path = REPO_ROOT) -> str:
    """The text of the banner on a chapter that ``make html`` rendered from its committed outputs."""
    # two lines at 1280 px: the chapter's findings box must still end on the first screen below it
    return f"The outputs committed with the book, which its regression checks; `make run NB={_shown(path, root)}` executes it."


def cold_minutes(chapter: Path, root: Path = REPO_ROOT) -> float:
    """The chapter's measured wall time at its defaults with an empty result cache (minutes, two idle cores)."""
    from htlib.paper import DEFAULT_MINUTES, _benchmark_minutes

    return _benchmark_minutes(root).get(chapter.stem, DEFAULT_MINUTES.get(chapter.stem, 1.0))


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def _cache(root: Path, package_dir: str | None):
    from jupyter_cache import get_cache

    return get_cache(str(execution_cache_path(root, package_dir)))


def is_cached(path: Path, root: Path = REPO_ROOT, package_dir: str | None = None) -> bool:
    """Whether the book's execution cache holds an execution of ``path``'s code cells for this source."""
    nb = nbformat.read(str(path), as_version=4)
    try:
        _cache(root, package_dir).match_cache_notebook(nb)
    except KeyError:
        return False
    return True


def store_execution(path: Path, outputs: list[list], seconds: float, root: Path = REPO_ROOT,
                    package_dir: str | None = None) -> bool:
    """Store ``outputs`` (one list per code cell of the chapter at ``path``) in the book's execution cache, as
    myst-nb would after executing it itself: the chapter's own cells, so the same jupyter-cache hash.  The build
    then renders them and executes nothing.  False (nothing stored) unless every code cell has its outputs."""
    import time

    from jupyter_cache.base import CacheBundleIn

    nb = nbformat.read(str(path), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    if len(outputs) != len(code):
        return False
    for i, (cell, outs) in enumerate(zip(code, outputs), 1):
        cell.outputs = [nbformat.from_dict(dict(o)) for o in outs]
        cell.execution_count = i
        for out in cell.outputs:
            if out.get("output_type") == "execute_result":
                out["execution_count"] = i
    nbformat.validate(nb)
    cache = _cache(root, package_dir)
    for attempt in range(5):  # two processes may store a chapter at the same moment (one SQLite file)
        try:
            cache.cache_notebook_bundle(CacheBundleIn(nb, str(path), data={"execution_seconds": seconds}),
                                        check_validity=False, overwrite=True)
            return True
        except Exception as err:  # sqlite3.OperationalError ("database is locked") through SQLAlchemy
            if "locked" not in str(err) or attempt == 4:
                raise
            time.sleep(1 + attempt)
    return False


def execute_chapter(path: Path, timeout: int, root: Path = REPO_ROOT) -> tuple[list[list] | None, str]:
    """Execute the chapter at ``path`` as myst-nb would (its folder as working directory, one kernel, no
    parameters): its code cells' outputs and "", or ``None`` and the advice naming the failing cell."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    from htlib.run import kernel_manager_class, stop_kernels

    nb = nbformat.read(str(path), as_version=4)
    current: list[int] = []
    managers = kernel_manager_class()
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=False,
                            resources={"metadata": {"path": str(path.parent)}}, kernel_manager_class=managers,
                            on_cell_start=lambda cell, cell_index: current.append(cell_index))
    try:
        client.execute()
    except CellTimeoutError:
        return None, failure_advice(path, "CellTimeoutError", _cell_named(nb.cells, current[-1] if current else None),
                                    root, limit=timeout)
    except CellExecutionError as err:
        return None, failure_advice(path, err.ename or "an error", _cell_named(nb.cells, current[-1] if current else
                                                                               None), root,
                                    detail=(err.evalue or "").strip().splitlines()[0][:300] if err.evalue else "")
    except DeadKernelError as err:
        return None, failure_advice(path, "DeadKernelError", _cell_named(nb.cells, current[-1] if current else None),
                                    root, detail=f"the kernel died ({str(err).strip()[:200]})")
    except KeyboardInterrupt:
        stop_kernels(managers)
        raise
    return [c.outputs for c in nb.cells if c.cell_type == "code"], ""


def execute_chapters(root: Path = REPO_ROOT, package_dir: str | None = None, *,
                     timeout: int = -1) -> dict[Path, str]:
    """Execute every chapter the execution cache lacks, one at a time, printing a line as each starts and ends;
    store each success in the cache.  The chapters that failed, each with the advice naming its cell."""
    import time

    todo = [p for p in chapters(root) if not is_cached(p, root, package_dir)]
    every = len(chapters(root))
    total = sum(cold_minutes(p, root) for p in todo)
    print(f"make book: {every} chapters, {every - len(todo)} already executed for this source (served from the "
          f"execution cache), {len(todo)} to execute: about {total:.0f} min with an empty result cache on two idle "
          "cores, less where results are cached, more on a busy machine"
          + ("" if timeout == -1 else f"; each cell may run {timeout} s"), flush=True)
    failed: dict[Path, str] = {}
    start = time.monotonic()
    for n, path in enumerate(todo, 1):
        name = f"[{n}/{len(todo)}] {_shown(path, root)}"
        print(f"{name}: executing (about {cold_minutes(path, root):.1f} min cold)", flush=True)
        t0 = time.monotonic()
        outputs, advice = execute_chapter(path, timeout, root)
        seconds = time.monotonic() - t0
        if outputs is not None and store_execution(path, outputs, seconds, root, package_dir):
            print(f"{name}: done in {_minutes(seconds)} (build so far {_minutes(time.monotonic() - start)})",
                  flush=True)
        else:
            failed[path] = advice or "its outputs could not be stored in the execution cache"
            print(f"{name}: FAILED after {_minutes(seconds)}: {failed[path]}", flush=True)
    return failed


def _docname(path: Path, root: Path) -> str:
    return Path(path).resolve().relative_to(Path(root).resolve()).with_suffix("").as_posix()


def render(root: Path, config: Path) -> int:
    """Run ``jupyter-book build`` with ``config`` (warnings are errors); its exit code."""
    cmd = [jupyter_book_command(), "build", str(root), "--config", str(config), "--toc", str(root / "_toc.yml"),
           "-W", "--keep-going"]
    return subprocess.run(cmd, cwd=root, env=dict(os.environ, TQDM_DISABLE="1")).returncode


def build(root: Path = REPO_ROOT, package_dir: str | None = None, *, execute: bool = True) -> int:
    """Render the book into ``_build/html``; 0 when every chapter was executed (or served from the cache) and the
    render succeeded.

    With ``execute``, every chapter the execution cache lacks is executed first, one at a time, with no per-cell
    limit unless ``HTLIB_CELL_TIMEOUT`` sets one; a chapter that fails is rendered from its committed outputs under
    a banner saying so, the others as executed, and the build ends non-zero naming it.  Without ``execute``
    (``make html``) nothing runs: each chapter is rendered from the cache where it holds an execution for this
    source, else from its committed outputs under a banner.

    Raises
    ------
    BuildInputError
        Before anything runs, for an ``HTLIB_CELL_TIMEOUT`` that is not a whole number of seconds.
    """
    timeout = cell_timeout()
    if execute:
        failed = execute_chapters(root, package_dir, timeout=timeout)
        banners = {_docname(p, root): _banner(advice) for p, advice in failed.items()}
    else:
        failed = {}
        banners = {_docname(p, root): html_banner(p, root) for p in chapters(root) if not is_cached(p, root, package_dir)}
    print(f"rendering the book ({len(banners)} chapter(s) from their committed outputs)" if banners
          else "rendering the book", flush=True)
    code = render(root, write_build_config(root, package_dir, not_executed=banners))
    index = root / "_build" / "html" / "index.html"
    if code != 0:
        print(f"\nbook build failed: the render exited {code}; see the log above", file=sys.stderr)
    elif index.exists():
        print(f"\nThe book is at {index}")
    for path, advice in failed.items():
        print(f"\nbook build: {advice} The page shows its committed outputs under a banner.", file=sys.stderr)
    if failed:
        print(f"\nbook build failed: {len(failed)} chapter(s) not executed: "
              + ", ".join(_shown(p, root) for p in failed), file=sys.stderr)
        return code or 2
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m htlib.book", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_refresh = sub.add_parser("refresh", help="re-execute chapters and write back their reference outputs")
    p_refresh.add_argument("notebooks", nargs="*", help="chapters to refresh (default: all in _toc.yml)")
    sub.add_parser("build", help="execute and render the whole book into _build/html")
    sub.add_parser("html", help="render the book into _build/html, executing nothing")
    sub.add_parser("cache-path", help="print the execution-cache folder for the current htlib source")
    args = parser.parse_args(argv)
    if args.command == "refresh":
        from htlib.run import Interrupted, on_sigterm_interrupt

        on_sigterm_interrupt()
        try:
            for nb in args.notebooks or chapters():
                refresh(nb)
        except KeyboardInterrupt as err:  # one line naming the partial notebook, not the traceback
            print(f"\n{err}" if isinstance(err, Interrupted) else "\nrefresh interrupted", file=sys.stderr)
            return 130
        return 0
    if args.command in ("build", "html"):
        try:
            return build(execute=args.command == "build")
        except BuildInputError as err:
            print(f"make book: {err}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("make book: interrupted; the chapters that finished are kept in the execution cache",
                  file=sys.stderr)
            return 130
    print(execution_cache_path())
    return 0


if __name__ == "__main__":
    from htlib.run import quiet_exit

    sys.exit(quiet_exit(main()))

"""Book build helpers: reference-output refresh and the execution-cache key.

:func:`refresh` is the one deliberate way to update a chapter's committed reference outputs (written back only
if every cell succeeded, without images and run-specific metadata).  :func:`build` renders the book with an
execution cache named after :func:`htlib.cache.source_hash` of *all* of htlib (:func:`execution_cache_path`:
Jupyter Book keys its cache on code cells only) and names a failing chapter and cell (:func:`failure_advice`).

Command line: ``python -m htlib.book refresh book/mp_baseline.ipynb [...]``, ``python -m htlib.book build``.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
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

from htlib.cache import source_hash

__all__ = ["strip_for_commit", "refresh", "execution_cache_path", "write_build_config", "build", "chapters", "pages",
           "cell_timeout", "failure_advice"]

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


def refresh(path: str | Path, *, timeout: int = 1800) -> None:
    """Re-execute chapter ``path`` and write it back as the new reference; if any cell fails, nothing is
    written and the partial run is kept in a temporary file whose location is printed."""
    import papermill as pm

    path = Path(path).resolve()
    if not path.exists():
        raise FileNotFoundError(f"no such chapter: {path}")
    fd, tmp = tempfile.mkstemp(suffix=f"-{path.name}")
    os.close(fd)
    os.environ.setdefault("TQDM_DISABLE", "1")
    from htlib.run import kernel_manager_class

    try:
        pm.execute_notebook(str(path), tmp, cwd=str(path.parent), kernel_name="python3", progress_bar=False,
                            execution_timeout=timeout, kernel_manager_class=kernel_manager_class())  # IPC
    except Exception:
        print(f"refresh of {path.name} failed; partial output kept in {tmp}", file=sys.stderr)
        raise
    nbformat.write(strip_for_commit(nbformat.read(tmp, as_version=4)), str(path))
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

def write_build_config(root: Path = REPO_ROOT, package_dir: str | None = None) -> Path:
    """``_config.yml`` with the execution cache at :func:`execution_cache_path` and MathJax served locally."""
    config = yaml.safe_load((root / "_config.yml").read_text())
    config.setdefault("execute", {})["cache"] = str(execution_cache_path(root, package_dir))
    if (timeout := cell_timeout()) is not None:
        config["execute"]["timeout"] = timeout
    absolute_paths(config, root)
    config.setdefault("html", {})["extra_footer"] = footer(root)
    out = root / "_build" / "_config.generated.yml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(config, sort_keys=False))
    return out


def version(root: Path = REPO_ROOT) -> str:
    """``git describe`` of the checkout the book is built from ("unknown" outside a git checkout)."""
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty", "--tags"], cwd=root,
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def footer(root: Path = REPO_ROOT) -> str:
    """The footer of every page: the code version and the build date, and where to find how to cite."""
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    return (f'<p>htlib version <code>{version(root)}</code>, built {date}. '
            f'See <a href="index.html#how-to-cite">how to cite</a> this book.</p>')


def jupyter_book_command() -> str:
    """The ``jupyter-book`` script of this environment (it has no ``__main__`` module)."""
    beside = Path(sys.executable).with_name("jupyter-book")
    return str(beside) if beside.exists() else "jupyter-book"


def cell_timeout() -> int | None:
    """``HTLIB_CELL_TIMEOUT`` as the book build's per-cell timeout in seconds (-1: none), ``None`` if unset."""
    text = os.environ.get("HTLIB_CELL_TIMEOUT", "").strip()
    if not text:
        return None
    try:
        seconds = int(float(text))
    except ValueError:
        raise ValueError(f"HTLIB_CELL_TIMEOUT must be a number of seconds (0: no limit), got {text!r}") from None
    return seconds if seconds > 0 else -1  # nbclient reads -1 as "no timeout"


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# myst-nb's one line per failed notebook; the traceback it shows follows it.
_EXEC_FAILED = re.compile(r"^(\S+\.ipynb): WARNING: Executing notebook failed: (\w+)")
_RULE = re.compile(r"^-{10,}\s*$")  # nbclient frames the failing cell's source between such rules


def _failing_cell(notebook: Path, log: list[str]) -> str:
    """``cell N (`first line`)`` of the cell whose source nbclient quotes in ``log``, or "a cell"."""
    first = next((log[i + 1].strip() for i, line in enumerate(log[:-1]) if _RULE.match(line)), "")
    if first.startswith("['"):  # a long cell is previewed as the list of its lines
        with contextlib.suppress(ValueError, SyntaxError, IndexError):
            first = str(ast.literal_eval(first)[0]).strip()
    try:
        cells = nbformat.read(str(notebook), as_version=4).cells
    except Exception:  # the message must not fail on an unreadable notebook
        cells = []
    for n, cell in enumerate(cells, 1):
        lines = cell.source.strip().splitlines()
        if cell.cell_type == "code" and first and lines and lines[0].strip() == first:
            return f"cell {n} (`{first}`)"
    return f"the cell starting `{first}`" if first else "a cell"


def failure_advice(notebook: Path, error: str, log: list[str], root: Path = REPO_ROOT) -> str:
    """What the build says when executing ``notebook`` failed with ``error`` (nbclient's class name), given
    the log lines myst-nb printed after its failure line: the chapter, the cell, and what to do."""
    notebook, root = Path(notebook).resolve(), Path(root).resolve()
    shown = notebook.relative_to(root) if notebook.is_relative_to(root) else notebook
    cell = _failing_cell(notebook, log)
    rerun = f"`python -m htlib.run {shown} --no-html` reruns this chapter alone, keeping its partial notebook"
    if error == "CellTimeoutError":
        limit = next((m.group(1) for line in log if (m := re.search(r"after (\d+) seconds", line))), "?")
        return (f"book build failed: chapter {shown}, {cell}, ran past the per-cell timeout of {limit} s, which "
                "this machine is too slow or busy for: raise it with `HTLIB_CELL_TIMEOUT=<seconds> make book` "
                f"(0: no limit); {rerun}, with no timeout.")
    return f"book build failed: chapter {shown}, {cell}, raised an error ({error}; its traceback is above); {rerun}."


def build(root: Path = REPO_ROOT, package_dir: str | None = None) -> int:
    """Execute every chapter (or reuse the cache for this htlib source) and render HTML; any cell error fails
    the build.  The log is echoed and read for myst-nb's execution failures, so that a failed build ends by
    naming the chapter and the cell and saying what to do (:func:`failure_advice`)."""
    config = write_build_config(root, package_dir)
    cmd = [jupyter_book_command(), "build", str(root), "--config", str(config), "--toc", str(root / "_toc.yml"),
           "-W", "--keep-going"]
    failed: list[tuple[Path, str, list[str]]] = []  # (notebook, nbclient's error, the log lines after it)
    with subprocess.Popen(cmd, cwd=root, env=dict(os.environ, TQDM_DISABLE="1"), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace") as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            plain = _ANSI.sub("", line).rstrip("\n")
            m = _EXEC_FAILED.match(plain)
            if m:
                failed.append((Path(m.group(1)), m.group(2), []))
            elif failed and len(failed[-1][2]) < 2000:
                failed[-1][2].append(plain)
    code = proc.returncode
    if code == 0:
        print(f"\nThe book is at {root / '_build' / 'html' / 'index.html'}")
    else:
        sys.stdout.flush()
        for notebook, error, log in failed:
            print(f"\n{failure_advice(notebook, error, log, root)}", file=sys.stderr)
        print(f"\nbook build failed (exit {code}); see the log above", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m htlib.book", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_refresh = sub.add_parser("refresh", help="re-execute chapters and write back their reference outputs")
    p_refresh.add_argument("notebooks", nargs="*", help="chapters to refresh (default: all in _toc.yml)")
    sub.add_parser("build", help="execute and render the whole book into _build/html")
    sub.add_parser("cache-path", help="print the execution-cache folder for the current htlib source")
    args = parser.parse_args(argv)
    if args.command == "refresh":
        for nb in args.notebooks or chapters():
            refresh(nb)
        return 0
    if args.command == "build":
        return build()
    print(execution_cache_path())
    return 0


if __name__ == "__main__":
    sys.exit(main())

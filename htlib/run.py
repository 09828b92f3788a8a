"""Rerun a chapter with your own parameters, safely.

::

    python -m htlib.run book/phases.ipynb --list                  # the parameters, their types and defaults
    python -m htlib.run book/phases.ipynb -p small_h 400 --dry-run # validate only, compute nothing
    python -m htlib.run book/phases.ipynb -p executor tcp://10.0.0.5:8786   # sweeps on a Dask cluster

A chapter's parameters are declared by the ``Setup`` of the experiments module its notebook imports
(:mod:`htlib.params`); a notebook without one (the scoreboard) declares them in its
``parameters`` cell (:func:`read_parameters`).  Anything a run would refuse is refused before any compute
(``--dry-run`` checks just that).  The run goes to ``runs/<chapter>-<hash of parameters>.ipynb`` plus an
``.html`` page rendered with the book's configuration, opening with a note of the parameters that differ
from the book's (:func:`rerun_banner`); nothing is written into ``book/``.  A failed or interrupted run
keeps its partial notebook and names it; reruns may run at once.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import datetime
import hashlib
import importlib
import io
import json
import operator
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tokenize
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import nbformat

from htlib.params import ParameterError, SetupBase

__all__ = ["Parameter", "ParameterError", "RunFailed", "Interrupted", "chapter_setup", "declared_parameters",
           "read_parameters", "validate", "check_overrides", "check_output_dir", "preflight", "output_path",
           "rerun_banner", "verdict_changes", "changes_text", "add_banner", "run_chapter", "render_html", "main"]

REPO_ROOT = Path(__file__).resolve().parent.parent

_COMPARATORS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
_CONSTRAINT = re.compile(r"\[([^\[\]]*)\]\s*$")


class RunFailed(RuntimeError):
    """A chapter's execution (or its rendering) failed; the message says why and where its partial output is."""


class Interrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C (SIGINT); the message says where its partial notebook is."""


@dataclass(frozen=True)
class Parameter:
    """One parameter declared in a parameters cell's comment (transitional: chapters without a ``Setup``)."""

    name: str
    default: Any
    description: str = ""
    bounds: tuple[tuple[str, float], ...] = ()  # (comparator, value) pairs
    choices: tuple[Any, ...] | None = None
    each: bool = False  # constraints apply to list elements
    constraint_text: str = ""
    is_dir: bool = False  # described as a "folder ...": must exist when given (the scoreboard's source)

    @property
    def type_name(self) -> str:
        if isinstance(self.default, (list, tuple)):
            return f"list[{'|'.join(sorted({type(v).__name__ for v in self.default})) or 'any'}]"
        return "any" if self.default is None else type(self.default).__name__

    def describe(self) -> str:
        extra = f" [{self.constraint_text}]" if self.constraint_text else ""
        return f"  {self.name}: {self.type_name} = {self.default!r}{extra}  {self.description}".rstrip()


def _parse_constraint(text: str, name: str) -> dict[str, Any]:
    text = text.strip()
    out: dict[str, Any] = {"constraint_text": text}
    if text.startswith("each "):
        out["each"] = True
        text = text[5:].strip()
    if text.startswith("in "):
        choices = ast.literal_eval(text[3:].strip())
        out["choices"] = tuple(sorted(choices, key=repr))
        return out
    bounds = []
    for clause in filter(None, (c.strip() for c in text.split(","))):
        if clause.startswith("each "):  # "each > 0, each < 1" reads as "each > 0, < 1"
            out["each"] = True
            clause = clause[5:].strip()
        m = re.fullmatch(r"(>=|<=|>|<)\s*(.+)", clause)
        if not m:
            raise SyntaxError(f"parameter {name!r}: cannot read constraint clause {clause!r}")
        bounds.append((m.group(1), float(ast.literal_eval(m.group(2)))))
    out["bounds"] = tuple(bounds)
    return out


def read_parameters(notebook: str | Path) -> dict[str, Parameter]:
    """The parameters declared in the comments of a notebook's parameters cell, in order (notebooks without a
    ``Setup``).  A string parameter described as "folder ..." names a folder that must exist when given."""
    cells = [c for c in nbformat.read(str(notebook), as_version=4).cells
             if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])]
    if len(cells) != 1:
        raise ParameterError(f"a chapter needs exactly one cell tagged 'parameters', found {len(cells)}")
    source = cells[0].source
    comments = {tok.start[0]: tok.string.lstrip("#").strip()
                for tok in tokenize.generate_tokens(io.StringIO(source).readline) if tok.type == tokenize.COMMENT}
    params: dict[str, Parameter] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            name = node.target.id
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
        else:
            continue
        default = ast.literal_eval(node.value)
        comment = comments.get(node.end_lineno or node.lineno, "")
        m = _CONSTRAINT.search(comment)
        kwargs: dict[str, Any] = _parse_constraint(m.group(1), name) if m else {}
        comment = comment[: m.start()].strip() if m else comment
        is_dir = isinstance(default, str) and bool(re.match(r"(folder|directory)\b", comment, re.I))
        params[name] = Parameter(name=name, default=default, description=comment, is_dir=is_dir, **kwargs)
    return params


def _listing(params: dict[str, Parameter]) -> str:
    return "valid parameters (name: type = default [constraint]):\n" + "\n".join(p.describe() for p in params.values())


def _coerce_scalar(value: Any, like: Any, name: str) -> Any:
    number = isinstance(like, float) and isinstance(value, (int, float))  # an int is a valid float, a bool is not
    same = isinstance(value, bool) == isinstance(like, bool) and (number or isinstance(value, type(like)))
    if like is None or same:
        return float(value) if number else value
    raise ParameterError(f"parameter {name!r} must be of type {type(like).__name__}, got {value!r}")


def _check_value(param: Parameter, value: Any) -> None:
    if param.choices is not None and value not in param.choices:
        raise ParameterError(f"parameter {param.name!r} must be one of {list(param.choices)}, got {value!r}")
    for op, bound in param.bounds:
        if not _COMPARATORS[op](value, bound):
            raise ParameterError(f"parameter {param.name!r} must be {op} {bound:g}, got {value!r}")


def validate(params: dict[str, Parameter], overrides: dict[str, Any]) -> dict[str, Any]:
    """Check ``overrides`` against the declarations; return them coerced.

    Raises
    ------
    ParameterError
        For an unknown name, a wrong type or an out-of-range value; the message lists the valid parameters.
    """
    clean: dict[str, Any] = {}
    for name, value in overrides.items():
        if name not in params:
            raise ParameterError(f"unknown parameter {name!r}\n{_listing(params)}")
        p = params[name]
        try:
            if isinstance(p.default, (list, tuple)):
                if not isinstance(value, (list, tuple)):
                    raise ParameterError(f"parameter {name!r} must be a list, got {value!r}")
                like = p.default[0] if p.default else None
                value = [_coerce_scalar(v, like, name) for v in value]
                for v in value if p.each else []:
                    _check_value(p, v)
            else:
                value = _coerce_scalar(value, p.default, name)
                _check_value(p, value)
            if p.is_dir and value:  # absolute: the kernel runs in the notebook's folder, not where it was typed
                value = str(Path(value).expanduser().resolve())
                if not Path(value).is_dir():
                    raise ParameterError(f"parameter {name!r} must be an existing folder, got {value} "
                                         f"({'a file' if Path(value).exists() else 'no such folder'})")
        except ParameterError as err:
            raise ParameterError(f"{err}\n{_listing(params)}") from None
        clean[name] = value
    return clean


_IMPORT = re.compile(r"^\s*from\s+htlib\.experiments\s+import\s+(\w+)\s+as\s+(\w+)\s*$", re.M)


def _check_notebook(notebook: str | Path) -> Path:
    """``notebook`` resolved, if it is a readable ``.ipynb`` file; otherwise a message saying what it is."""
    path = Path(notebook).expanduser().resolve()
    chapters = ", ".join(str(p.relative_to(REPO_ROOT)) for p in sorted((REPO_ROOT / "book").glob("*.ipynb")))
    if not path.exists():
        raise FileNotFoundError(f"no such chapter: {path}" + (f"; chapters: {chapters}" if chapters else ""))
    if path.is_dir():
        raise ParameterError(f"{notebook} is a folder; name one chapter notebook (.ipynb)"
                             + (f", one of: {chapters}" if chapters else ""))
    if path.suffix != ".ipynb":
        raise ParameterError(f"{notebook} is not a chapter notebook (.ipynb)" + (f"; chapters: {chapters}" if chapters else ""))
    return path


def chapter_setup(notebook: str | Path) -> type[SetupBase] | None:
    """The ``Setup`` of the module the notebook imports as ``from htlib.experiments import <module> as <alias>``
    and builds with ``<alias>.Setup.from_namespace(...)``, or ``None`` (a notebook without a ``Setup``)."""
    path = _check_notebook(notebook)
    try:
        nb = nbformat.read(str(path), as_version=4)
    except Exception as err:  # not JSON, not a notebook: say so instead of a traceback
        raise ParameterError(f"cannot read {path} as a notebook: {type(err).__name__}: {err}") from None
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    for module, alias in _IMPORT.findall(code):
        if f"{alias}.Setup.from_namespace(" in code:
            cls = getattr(importlib.import_module(f"htlib.experiments.{module}"), "Setup", None)
            if isinstance(cls, type) and issubclass(cls, SetupBase):
                return cls
            raise ParameterError(f"{notebook} calls {alias}.Setup.from_namespace but htlib.experiments.{module} "
                                 "has no Setup (a subclass of htlib.experiments.SetupBase)")
    return None


@dataclass(frozen=True)
class Declaration:
    """A chapter's declared parameters: its ``Setup`` or, transitionally, its parameters cell."""

    notebook: Path
    setup: type[SetupBase] | None
    cell: dict[str, Parameter] | None = None

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.setup.parameters()] if self.setup else list(self.cell or {})

    def listing(self) -> str:
        return self.setup.listing() if self.setup is not None else _listing(self.cell or {})

    def is_str(self, name: str) -> bool:
        if self.setup is not None:
            return any(p.name == name and p.type_name == "str" for p in self.setup.parameters())
        return isinstance(getattr((self.cell or {}).get(name), "default", None), str)

    def defaults(self) -> dict[str, Any]:
        """Every declared parameter's default, as the literal a parameters cell holds."""
        return self.setup().literals() if self.setup else {n: p.default for n, p in (self.cell or {}).items()}

    def parse_cli(self, name: str, text: str) -> Any:
        """A ``-p NAME VALUE`` value: a Python literal, strings verbatim (no quoting needed)."""
        if self.is_str(name):
            return text
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            lowered = text.strip().lower()
            return lowered == "true" if lowered in ("true", "false") else text

    def build(self, overrides: dict[str, Any], base: SetupBase | None = None) -> SetupBase:
        """The chapter's Setup with ``overrides`` (Setup chapters only); errors carry the listing."""
        assert self.setup is not None
        try:
            return self.setup.from_overrides(overrides, base=base)
        except ParameterError as err:
            text = str(err)
            raise ParameterError(text if "valid parameters" in text else f"{text}\n{self.listing()}") from None

    def check(self, overrides: dict[str, Any]) -> dict[str, Any]:
        """``overrides`` validated and coerced to the literals papermill injects; folders made absolute (the
        kernel runs in ``book/``, not where you typed them)."""
        if self.setup is None:
            return validate(self.cell or {}, overrides)
        setup = self.build(overrides)
        clean = {name: setup.literals()[name] for name in overrides}
        for spec in setup.parameters():  # a data folder (``*_dir``) as well: its Setup checked it from here
            if (spec.meta.is_dir or spec.name.endswith("_dir")) and clean.get(spec.name):
                clean[spec.name] = str(Path(clean[spec.name]).expanduser().resolve())
        return clean


def declared_parameters(notebook: str | Path) -> Declaration:
    """The :class:`Declaration` of a chapter notebook (its ``Setup``, or transitionally its cell)."""
    path = _check_notebook(notebook)
    setup = chapter_setup(path)
    return Declaration(path, setup, None if setup is not None else read_parameters(path))


def check_overrides(notebook: str | Path, overrides: dict[str, Any]) -> dict[str, Any]:
    """``overrides`` of ``notebook``'s parameters, validated (:meth:`Declaration.check`)."""
    return declared_parameters(notebook).check(overrides)


def check_output_dir(output_dir: str | Path | None, notebook: str | Path | None = None) -> Path:
    """Where reruns go, resolved: ``runs/`` (or a folder under it) or a folder outside the repository.

    Refused: an empty path, the repository root and every other folder of the repository (``book/``, where the
    committed chapters live, ``htlib/``, ``tests/``, ``.git/``...), the chapter's own folder, a file."""
    in_checkout = (REPO_ROOT / "pyproject.toml").exists()
    if output_dir is not None and not str(output_dir).strip():
        raise ParameterError("--output-dir must name a folder, got an empty path (default: runs/)")
    out_dir = (Path(output_dir).expanduser().resolve() if output_dir is not None
               else (REPO_ROOT if in_checkout else Path.cwd()) / "runs")
    runs = REPO_ROOT / "runs"
    book_dir = REPO_ROOT / "book"
    beside = notebook is not None and out_dir == Path(notebook).resolve().parent
    if out_dir == book_dir or book_dir in out_dir.parents or beside:
        raise ParameterError(f"refusing to write reruns into {out_dir}: committed chapters live there; "
                             "use --output-dir outside book/ (default: runs/)")
    in_repo = in_checkout and (out_dir == REPO_ROOT or REPO_ROOT in out_dir.parents)
    if in_repo and not (out_dir == runs or runs in out_dir.parents):
        raise ParameterError(f"refusing to write reruns into {out_dir}: --output-dir must be runs/ or a folder "
                             "under it, or a folder outside the repository (its other folders hold code, tests "
                             "and history)")
    if out_dir.exists() and not out_dir.is_dir():
        raise ParameterError(f"--output-dir {out_dir} is a file, not a folder")
    return out_dir


def _literal_path(path: str | Path) -> str:
    """``path`` for papermill, which formats its paths with the parameters: braces escaped, so a folder named
    ``{x}`` is that folder.

    Examples
    --------
    >>> _literal_path("runs/{nope}/a.ipynb").format()
    'runs/{nope}/a.ipynb'
    """
    return str(path).replace("{", "{{").replace("}", "}}")


def check_scheduler(address: str) -> int:
    """The number of workers of the Dask scheduler at ``address``; a :class:`ParameterError` when none answers."""
    from htlib.sweep import dask_workers

    try:
        return dask_workers(address)
    except (ConnectionError, ValueError) as err:
        raise ParameterError(f"{err}; start one with `dask scheduler` and workers with "
                             "`dask worker <address> --nthreads 1`") from None


def preflight(notebook: str | Path, overrides: dict[str, Any],
              output_dir: str | Path | None = None) -> tuple[Path, dict[str, Any], Path]:
    """Everything a run would refuse (what ``--dry-run`` does), before any compute: a chapter, valid parameters,
    an output folder outside ``book/``, an answering Dask ``executor``.  ``(notebook, clean overrides, output)``."""
    from htlib.cache import CacheDirError, cache_dir

    decl = declared_parameters(notebook)
    clean = decl.check(overrides)
    if decl.setup is not None:
        try:  # the data files a run reads (a Setup may describe a setting this machine lacks)
            decl.build(clean).check_environment()
        except ParameterError as err:
            raise ParameterError(f"{err}\n{decl.listing()}") from None
    out_dir = check_output_dir(output_dir, decl.notebook)
    try:
        cache_dir()  # the kernel would refuse it at its first cached result
    except CacheDirError as err:
        raise ParameterError(str(err)) from None
    probe_output_dir(out_dir)
    executor = clean.get("executor")
    if isinstance(executor, str) and executor.startswith("tcp://"):
        check_scheduler(executor)
    return decl.notebook, clean, output_path(decl.notebook, clean, out_dir)


def probe_output_dir(out_dir: Path) -> None:
    """Create ``out_dir`` and a file in it, then remove what this made: a folder the run could not write is refused
    before any compute (a dry run leaves nothing behind)."""
    made = [p for p in (out_dir, *out_dir.parents) if not p.exists()]
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=out_dir, prefix=".htlib-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise ParameterError(f"--output-dir {out_dir} cannot be written: {err.strerror or err}") from None
    finally:
        for folder in made:  # deepest first
            with contextlib.suppress(OSError):
                folder.rmdir()


def output_path(notebook: str | Path, overrides: dict[str, Any], output_dir: str | Path) -> Path:
    """``<output_dir>/<chapter>-<8-hex hash of the parameters>.ipynb``."""
    digest = hashlib.sha256(json.dumps(overrides, sort_keys=True, default=repr).encode()).hexdigest()[:8]
    return Path(output_dir) / f"{Path(notebook).stem}-{digest}.ipynb"


# A Unix socket's path holds at most 107 bytes; the kernel's are <runtime folder>/kernel-ipc-<port>.
_IPC_FOLDER_MAX = 107 - len("/kernel-ipc-65535")
_KERNEL_PREFIX = f"htlib-kernel-{os.getpid()}-"
_STALE_WORK = re.compile(r"\.running-(\d+)\.(?:ipynb|kernel\.log|progress)$")
_STALE_KERNEL = re.compile(r"^htlib-kernel-(\d+)-")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: alive
        return True
    return pid > 0


def remove_stale(out_dir: str | Path) -> list[Path]:
    """Remove what runs killed without a chance to clean up left behind: the ``<run>.running-<pid>`` files of
    ``out_dir`` and the kernels' runtime folders (``htlib-kernel-<pid>-*`` in the temporary folder) of processes
    that are gone, unless a live kernel still names its connection file.  What was removed."""
    removed = []
    for path in Path(out_dir).glob("*.running-*"):
        m = _STALE_WORK.search(path.name)
        if m and not _alive(int(m.group(1))):
            with contextlib.suppress(OSError):
                path.unlink()
                removed.append(path)
    for tmp in dict.fromkeys((tempfile.gettempdir(), "/tmp")):
        for folder in Path(tmp).glob("htlib-kernel-*") if os.path.isdir(tmp) else ():
            m = _STALE_KERNEL.match(folder.name)
            if m and folder.is_dir() and not _alive(int(m.group(1))) \
                    and not _pids_naming(str(folder / "kernel.json")):
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
    return removed


def kernel_manager_class(log: str | Path | None = None):
    """The kernel manager of papermill's runs: IPC sockets (no "running over TCP without encryption" notice) in
    a private runtime folder of each kernel (jupyter_client would put ``kernel-ipc-<n>`` in ``book/``, where
    kernels started at once race for them), and the kernel's own log (not the cells' output) in ``log``."""
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    class RunKernelManager(AsyncKernelManager):
        launched: list[AsyncKernelManager] = []  # noqa: RUF012 - this class's kernels (stop_kernels)

        @default("transport")
        def _default_transport(self) -> str:  # no IPC on Windows, nor where no short folder can hold the sockets
            return "tcp" if os.name == "nt" or len(self._runtime) > _IPC_FOLDER_MAX else "ipc"

        @property
        def _runtime(self) -> str:
            if "_htlib_runtime" not in self.__dict__:
                folder = tempfile.mkdtemp(prefix=_KERNEL_PREFIX)  # its owner's pid: remove_stale reads it
                if len(folder) > _IPC_FOLDER_MAX and os.path.isdir("/tmp"):  # a deep TMPDIR: sockets would not fit
                    os.rmdir(folder)
                    folder = tempfile.mkdtemp(prefix=_KERNEL_PREFIX, dir="/tmp")
                self.__dict__["_htlib_runtime"] = folder
                RunKernelManager.launched.append(self)  # from its folder on: Ctrl-C before the launch leaves none
                weakref.finalize(self, shutil.rmtree, folder, ignore_errors=True)  # also if never cleaned up
            return self.__dict__["_htlib_runtime"]

        @default("connection_file")
        def _default_connection_file(self) -> str:
            return os.path.join(self._runtime, "kernel.json")

        @default("ip")
        def _default_ip(self) -> str:
            return os.path.join(self._runtime, "kernel-ipc") if self.transport == "ipc" else "127.0.0.1"

        async def _async_launch_kernel(self, kernel_cmd, **kw):
            if log is not None:
                kw["stderr"] = open(log, "ab")  # noqa: SIM115 - held by the kernel process until it exits
            if self not in RunKernelManager.launched:
                RunKernelManager.launched.append(self)
            return await super()._async_launch_kernel(kernel_cmd, **kw)

        async def _async_cleanup_resources(self, restart: bool = False) -> None:
            await super()._async_cleanup_resources(restart=restart)
            if not restart and "_htlib_runtime" in self.__dict__:
                shutil.rmtree(self.__dict__["_htlib_runtime"], ignore_errors=True)

    return RunKernelManager


def _pids_naming(path: str) -> list[int]:
    """The processes whose command line names ``path`` (Linux's ``/proc``; elsewhere none are found)."""
    pids, needle = [], os.fsencode(path)
    for entry in Path("/proc").glob("[0-9]*/cmdline") if os.path.isdir("/proc") else ():
        try:
            if needle in entry.read_bytes().split(b"\0"):
                pids.append(int(entry.parent.name))
        except OSError:  # the process ended meanwhile
            continue
    return [p for p in pids if p != os.getpid()]


def stop_kernels(manager_class) -> None:
    """Kill what is left of the kernels of a :func:`kernel_manager_class` and remove their runtime folders
    (after Ctrl-C while a kernel starts, nbclient never shuts it down and Ctrl-C does not reach it).

    Ctrl-C can land after the kernel's process started and before its provisioner recorded it; such a kernel is
    found by its connection file on its command line, else it would go on binding sockets in the folder being
    removed."""
    import signal
    import time

    for km in manager_class.launched:
        proc = getattr(getattr(km, "provisioner", None), "process", None)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(10)
        folder = km.__dict__.get("_htlib_runtime", "")
        if not folder:
            continue
        # Until nothing has named the connection file and the folder has stayed gone for a moment: a kernel
        # forked when Ctrl-C landed names it only once it has exec'd, and then writes the file and its folder
        # again; a kernel killed just now may leave a socket file for a moment.
        conn, deadline, quiet = os.path.join(folder, "kernel.json"), time.monotonic() + 5.0, None
        while time.monotonic() < deadline:
            pids = _pids_naming(conn)
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            shutil.rmtree(folder, ignore_errors=True)
            if pids or os.path.exists(folder):
                quiet = None
            elif quiet is None:
                quiet = time.monotonic()
            elif time.monotonic() - quiet > 0.5:
                break
            time.sleep(0.02)


def on_sigterm_interrupt() -> None:
    """Treat SIGTERM like Ctrl-C (a ``KeyboardInterrupt``) in this process: a killed run or refresh stops its
    kernel, keeps and names its partial notebook, instead of dying silently with its kernel left behind."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.default_int_handler)


def failure_reason(err: BaseException) -> str:
    """One line saying why a run failed: the failing cell's exception for papermill, else the error."""
    ename, evalue = getattr(err, "ename", None), getattr(err, "evalue", None)
    if ename:
        cell = getattr(err, "exec_count", None)
        text = (f"{ename}: {evalue}" if evalue else str(ename)).strip().splitlines()[0][:500]
        return f"cell [{cell}] raised {text}" if cell is not None else text
    text = str(err).strip()
    return f"{type(err).__name__}: {text.splitlines()[0][:500]}" if text else type(err).__name__


def rerun_banner(notebook: str | Path, overrides: dict[str, Any], *, when: Any = None,
                 changes: Sequence[str] | None = None) -> str:
    """The note a rerun's page opens with: the parameters that differ from the book's, the code version, the date,
    and with ``changes`` (:func:`verdict_changes`) every verdict that moved from the book's page.

    Examples
    --------
    >>> text = rerun_banner("book/phases.ipynb", {"h": 400, "seed": 0})
    >>> "`h = 400`" in text and "seed" not in text  # seed 0 is the default: not a difference
    True
    """
    from htlib.archive import version

    defaults = declared_parameters(notebook).defaults()
    changed = [f"`{k} = {v!r}`" for k, v in overrides.items() if defaults.get(k) != v]
    when = when or datetime.datetime.now(datetime.timezone.utc)
    differs = ("Parameters that differ from the book's defaults: " + ", ".join(changed) + "."
               if changed else "It uses the book's default parameters.")
    return ("```{admonition} A rerun, not the book's page\n:class: important\n"
            f"This page was executed by `python -m htlib.run` on {when:%Y-%m-%d at %H:%M} UTC with htlib version "
            f"`{version(REPO_ROOT)}`. {differs} Every number, table, figure and verdict on it is this rerun's own; "
            "the conventions and the bibliography it links to are copied beside it, and links to other chapters "
            "show as plain text." + (changes_text(changes) if changes is not None else "") + "\n```")


_FIGURE_DATA_LINK = re.compile(r"(?<=<)_figure-data/(?=[^/<>]+>)")


def verdict_changes(book_notebook: str | Path, rerun_notebook: str | Path) -> list[str]:
    """The records whose verdict the rerun moved from the book's committed page, one line each with both values
    (a record only one of them has is listed as added or gone).

    Examples
    --------
    >>> verdict_changes("book/phases.ipynb", "book/phases.ipynb")
    []
    """
    from htlib.records import read_claims

    old = {c.key: c for c in read_claims(book_notebook) if c.key}
    new = {c.key: c for c in read_claims(rerun_notebook) if c.key}
    lines = []
    for key, c in new.items():
        if key not in old:
            lines.append(f"{c.where} ({key}): {c.verdict}, a record the book's page does not have")
        elif old[key].verdict != c.verdict:
            lines.append(f"{c.where} ({key}): the book's page reads {old[key].verdict}, this rerun {c.verdict}")
    lines += [f"{c.where} ({key}): in the book's page ({c.verdict}), not in this rerun"
              for key, c in old.items() if key not in new]
    return lines


def changes_text(lines: Sequence[str]) -> str:
    """The banner's list of the verdicts a rerun moved (:func:`verdict_changes`)."""
    if not lines:
        return "\n\nNo verdict differs from the book's page."
    return ("\n\nVerdicts that differ from the book's page:\n" + "\n".join(f"- {line}" for line in lines))


def add_banner(path: str | Path, text: str, *, figure_data: str | None = None) -> None:
    """Insert ``text`` as a markdown cell right under the executed notebook's title (in place: the title line is
    split from the rest of its cell, so the banner is the first thing a reader sees); with ``figure_data``, the
    prose's links to ``_figure-data/<name>`` point into the run's own ``_figure-data/<figure_data>/`` (two reruns
    of a chapter never share a CSV)."""
    from htlib.cache import atomic_write

    nb = nbformat.read(str(path), as_version=4)
    first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"), -1)
    if first >= 0:
        title, _, rest = nb.cells[first].source.lstrip("\n").partition("\n")
        if title.startswith("# ") and rest.strip():
            nb.cells[first].source = title
            nb.cells.insert(first + 1, nbformat.v4.new_markdown_cell(rest.lstrip("\n")))
    nb.cells.insert(first + 1, nbformat.v4.new_markdown_cell(text, metadata={"tags": ["htlib-rerun-banner"]}))
    for cell in nb.cells if figure_data else ():
        if cell.cell_type == "markdown":
            cell.source = _FIGURE_DATA_LINK.sub(f"_figure-data/{figure_data}/", cell.source)
    atomic_write(path, nbformat.writes(nb) + "\n")


class _ProgressRelay:
    """Print, every ``every`` seconds, the newest state of the progress bars the kernel writes to ``path`` (one
    line each, on stderr), until :meth:`stop`."""

    def __init__(self, path: Path, every: float = 10.0) -> None:
        import threading

        self.path, self.every, self.done = path, every, threading.Event()
        self.thread = threading.Thread(target=self._run, name="htlib-progress", daemon=True)
        self.thread.start()

    def _latest(self, seen: str) -> str:
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return seen
        states = [s.strip() for s in re.split(r"[\r\n]+", text) if s.strip()]
        if states and states[-1] != seen:
            print(f"\n  {states[-1]}", file=sys.stderr, flush=True)  # below papermill's cell bar
            return states[-1]
        return seen

    def _run(self) -> None:
        seen = ""
        while not self.done.wait(self.every):
            seen = self._latest(seen)

    def stop(self) -> None:
        self.done.set()
        self.thread.join(timeout=5)


def run_chapter(notebook: str | Path, overrides: dict[str, Any], *, output_dir: str | Path | None = None,
                progress: bool = True, html: bool = True) -> Path:
    """Validate ``overrides`` (:func:`preflight`), execute with papermill, render HTML; the executed notebook.

    Raises
    ------
    ParameterError
        Before any compute, for anything :func:`preflight` refuses.
    RunFailed
        When a cell or the HTML rendering fails (the message names the exception and the partial notebook).
    Interrupted
        On Ctrl-C during the execution (a ``KeyboardInterrupt`` naming the partial notebook).
    """
    import papermill as pm

    notebook, clean, out = preflight(notebook, overrides, output_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(out.parent)  # of runs killed (SIGKILL, a power cut) before they could clean up
    # Reruns with the same parameters may run at once: each writes its own files, moved into place at its end.
    work = out.with_name(f"{out.stem}.running-{os.getpid()}.ipynb")
    work_log, log = work.with_suffix(".kernel.log"), out.with_suffix(".kernel.log")
    # The numbers behind the figures go beside the run, not into book/ (the kernel inherits the variable).
    from htlib.plotting import FIGURE_DATA_DIR

    before = os.environ.get("HTLIB_FIGURE_DATA")
    os.environ["HTLIB_FIGURE_DATA"] = str(out.parent.resolve() / FIGURE_DATA_DIR / out.stem)  # this run's own
    # The sweeps' progress bars go to a file the kernel inherits by name and this process relays to the terminal:
    # in the kernel's own stderr they would be written into the page.
    bars = work.with_suffix(".progress")
    os.environ["HTLIB_PROGRESS_FILE"] = str(bars) if progress else ""
    relay = _ProgressRelay(bars) if progress else None
    managers = kernel_manager_class(work_log)
    try:
        pm.execute_notebook(_literal_path(notebook), _literal_path(work), parameters=clean, cwd=str(notebook.parent),
                            kernel_name="python3", progress_bar=progress, kernel_manager_class=managers)
    except (Exception, KeyboardInterrupt) as err:
        stop_kernels(managers)
        if work.exists():
            os.replace(work, out)
        # After Ctrl-C the kernel's log holds only its own KeyboardInterrupt: not worth keeping.
        has_log = not isinstance(err, KeyboardInterrupt) and work_log.exists() and work_log.stat().st_size > 0
        if has_log:
            os.replace(work_log, log)
        work_log.unlink(missing_ok=True)
        if isinstance(err, KeyboardInterrupt):  # Ctrl-C: where the partial run is, not papermill's traceback
            raise Interrupted(f"interrupted: the partial notebook of {notebook.name} is {out}") from None
        raise RunFailed(f"the run of {notebook.name} failed: {failure_reason(err)}; the partial notebook is {out}"
                        + (f" (kernel log: {log})" if has_log else "")) from err
    finally:
        if relay is not None:
            relay.stop()
        bars.unlink(missing_ok=True)
        os.environ.pop("HTLIB_PROGRESS_FILE", None)
        if before is None:
            os.environ.pop("HTLIB_FIGURE_DATA", None)
        else:
            os.environ["HTLIB_FIGURE_DATA"] = before
    work_log.unlink(missing_ok=True)
    add_banner(work, rerun_banner(notebook, clean, changes=verdict_changes(notebook, work)), figure_data=out.stem)
    os.replace(work, out)
    log.unlink(missing_ok=True)  # the log of an earlier failed run with these parameters
    if html:
        try:
            render_html(out)
        except Exception as err:
            raise RunFailed(f"the run of {notebook.name} succeeded ({out}) but rendering its HTML failed: "
                            f"{failure_reason(err)}") from err
    print(f"executed notebook: {out}")
    if html:
        print(f"rendered HTML:     {out.with_suffix('.html')}")
    return out


_PAGES_BESIDE = ("conventions", "execution", "bibliography")  # the book's text pages rendered beside a rerun, for its links


_EXEC_TABLE = "```{nb-exec-table}\n```"


def rerun_execution_table(notebook: str | Path) -> str:
    """The execution of one rerun, as a Markdown table for the execution page rendered beside it (the book's
    ``nb-exec-table`` lists the book's own executions, none of which a page built alone has): the page, when it
    ran, its wall time, its parameters.

    Examples
    --------
    >>> import nbformat, tempfile, pathlib
    >>> nb = nbformat.v4.new_notebook(metadata={"papermill": {"parameters": {"seed": 1}, "duration": 31.6,
    ...     "start_time": "2026-12-07T05:00:00.1", "end_time": "2026-12-07T05:00:31.7"}})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = pathlib.Path(d) / "phases-seed1.ipynb"
    ...     nbformat.write(nb, path)
    ...     print(rerun_execution_table(path))
    This page was rendered beside a rerun, whose execution was:
    <BLANKLINE>
    | page | executed (UTC) | wall time | parameters |
    |---|---|---|---|
    | phases-seed1 | 2026-12-07 05:00:31 | 32 s | seed = 1 |
    """
    import nbformat

    path = Path(notebook)
    meta = nbformat.read(str(path), as_version=4).metadata.get("papermill", {})
    when = str(meta.get("end_time") or "not recorded").replace("T", " ")[:19]
    wall = meta.get("duration")
    wall = "not recorded" if not isinstance(wall, (int, float)) else f"{wall:.0f} s" if wall < 90 else f"{wall / 60:.1f} min"
    params = ", ".join(f"{k} = {v}" for k, v in (meta.get("parameters") or {}).items()) or "the chapter's defaults"
    return ("This page was rendered beside a rerun, whose execution was:\n\n| page | executed (UTC) | wall time | "
            f"parameters |\n|---|---|---|---|\n| {path.stem} | {when} | {wall} | {params} |")


def render_html(notebook: str | Path, *, timeout: int = 600) -> Path:
    """Render an executed notebook to ``<notebook>.html`` with a one-page build of the book's configuration.

    (Plain nbconvert would leave ``{glue}``, ``{cite}`` and ``{ref}`` as raw markup.)  The pages and their asset
    folders are copied next to the notebook; links to other chapters stay plain text.
    """
    import yaml

    from htlib.book import absolute_paths, jupyter_book_command
    from htlib.cache import atomic_write
    from htlib.plotting import FIGURE_DATA_DIR

    notebook = Path(notebook).resolve()
    target = notebook.with_suffix(".html")
    with tempfile.TemporaryDirectory(prefix="htlib-page-") as tmp:
        root = Path(tmp)
        shutil.copy2(notebook, root / notebook.name)
        # The captions' {download} links resolve against the run's own CSVs: its folder _figure-data/<run>/ (whose
        # path names the run, so Sphinx's _downloads/<md5 of the path>/ differs between reruns), else the CSVs of
        # a run without one directly in _figure-data/.
        data = notebook.parent / FIGURE_DATA_DIR
        if (data / notebook.stem).is_dir():
            shutil.copytree(data / notebook.stem, root / FIGURE_DATA_DIR / notebook.stem)
        elif data.is_dir():
            shutil.copytree(data, root / FIGURE_DATA_DIR, ignore=lambda d, names: [n for n in names
                                                                                    if (Path(d) / n).is_dir()])
        toc: dict[str, Any] = {"format": "jb-book", "root": notebook.stem}
        for extra in ("references.bib", *(f"{page}.md" for page in _PAGES_BESIDE)):
            if (REPO_ROOT / "book" / extra).exists():
                shutil.copy2(REPO_ROOT / "book" / extra, root / extra)
        if (root / "execution.md").exists():  # the book's table of executions is empty for a page built alone
            head, found, rest = (root / "execution.md").read_text().partition(_EXEC_TABLE)
            if found:  # the title, then this run's execution in place of the book's paragraph and table
                (root / "execution.md").write_text(f"{head.splitlines()[0]}\n\n{rerun_execution_table(notebook)}{rest}")
        pages = [page for page in _PAGES_BESIDE if (root / f"{page}.md").exists()]
        if pages:
            toc["chapters"] = [{"file": page} for page in pages]
        # The book's _config.yml, adapted to render one already-executed page.
        config = yaml.safe_load((REPO_ROOT / "_config.yml").read_text())
        config["only_build_toc_files"] = True
        config["exclude_patterns"] = ["_build/*"]
        config.setdefault("execute", {})["execute_notebooks"] = "off"  # the run has executed it already
        config["execute"].pop("cache", None)
        absolute_paths(config, REPO_ROOT)  # the book's extensions, CSS and MathJax, as `make book` has them
        config.pop("bibtex_bibfiles", None)  # set below once the .bib is copied beside the page
        if (root / "references.bib").exists():
            config["bibtex_bibfiles"] = ["references.bib"]
        (root / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
        (root / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
        proc = subprocess.run([jupyter_book_command(), "build", str(root), "-q"], cwd=root, capture_output=True,
                              text=True, timeout=timeout, env={**os.environ, "TQDM_DISABLE": "1"})
        html_dir = root / "_build" / "html"
        page = html_dir / f"{notebook.stem}.html"
        if proc.returncode != 0 or not page.exists():
            raise RuntimeError(f"rendering {notebook.name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        for item in html_dir.iterdir():  # each file whole or not at all: a page beside may be read meanwhile
            if item.is_dir() and item.name.startswith("_"):
                shutil.copytree(item, target.parent / item.name, dirs_exist_ok=True,
                                copy_function=lambda src, dst: atomic_write(dst, Path(src).read_bytes(),
                                                                            durable=False))
        # The search box and the index link these; the one-page build makes them, so they go beside the page too,
        # each page with its own search page and index (search-<run>.html, searchindex-<run>.js; not <run>-*, which
        # globs of a chapter's runs would match): another rerun beside it rewrites search.html and searchindex.js.
        for name in (*(f"{p}.html" for p in pages), "search.html", "genindex.html", "searchindex.js"):
            if (html_dir / name).exists():
                atomic_write(target.parent / name, (html_dir / name).read_bytes())
        own = {"search.html": f"search-{notebook.stem}.html", "searchindex.js": f"searchindex-{notebook.stem}.js"}
        if (html_dir / "searchindex.js").exists():
            atomic_write(target.parent / own["searchindex.js"], (html_dir / "searchindex.js").read_bytes())
        if (html_dir / "search.html").exists():
            text = (html_dir / "search.html").read_text(encoding="utf-8")
            atomic_write(target.parent / own["search.html"], _own_search(text, own), encoding="utf-8")
        text = _own_search(page.read_text(encoding="utf-8"), own)
    atomic_write(target, _unlink_chapters(text), encoding="utf-8")
    return target


def _own_search(page: str, names: dict[str, str]) -> str:
    """``page`` with its links to ``search.html`` and ``searchindex.js`` renamed by ``names``.

    Examples
    --------
    >>> _own_search('<form action="search.html"><script src="searchindex.js">', {"search.html": "r-search.html",
    ...             "searchindex.js": "r-searchindex.js"})
    '<form action="r-search.html"><script src="r-searchindex.js">'
    """
    for name, new in names.items():
        page = re.sub(rf'(?<=["/]){re.escape(name)}(?=["?#])', new, page)
    return page


_CHAPTER_LINK = re.compile(r'<a\b[^>]*\bhref="#?[\w-]+\.(?:ipynb|md)(?:#[^"]*)?"[^>]*>(.*?)</a>', re.S)


def _unlink_chapters(page: str) -> str:
    """Links to other chapters as plain text: a rerun's page has no book beside it to point to.

    Examples
    --------
    >>> _unlink_chapters('see <a class="reference internal" href="#phases.ipynb"><span>the phases</span></a>.')
    'see <span>the phases</span>.'
    """
    return _CHAPTER_LINK.sub(r"\1", page)


def _without_parameters(argv: list[str], pairs: list[tuple[str, str]]) -> list[str]:
    """``argv`` without its ``-p NAME VALUE`` triples, which go to ``pairs``: a VALUE that starts with ``-``
    (``-1e-3``, ``-inf``) is a value, where argparse would take it for an option.

    Examples
    --------
    >>> found = []
    >>> _without_parameters(["ch.ipynb", "-p", "lam", "-1e-3", "--dry-run"], found), found
    (['ch.ipynb', '--dry-run'], [('lam', '-1e-3')])
    """
    rest, i = [], 0
    while i < len(argv):
        if argv[i] in ("-p", "--parameter") and i + 2 < len(argv):  # else argparse says what is missing
            pairs.append((argv[i + 1], argv[i + 2]))
            i += 3
        else:
            rest.append(argv[i])
            i += 1
    return rest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m htlib.run", description="Rerun a book chapter with new "
                                     "parameters; outputs go to runs/, never into book/.")
    parser.add_argument("notebook", help="chapter notebook, e.g. book/phases.ipynb")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                        help="override one parameter (repeatable); VALUE is a Python literal, strings verbatim")
    parser.add_argument("--list", action="store_true", help="list the chapter's parameters and exit")
    parser.add_argument("--output-dir", default=None, help="where to write (default: runs/ at the repository root)")
    parser.add_argument("--no-html", action="store_true", help="skip the standalone HTML rendering")
    parser.add_argument("--dry-run", action="store_true",
                        help="check everything the run would refuse, print where it would go, compute nothing")
    args = parser.parse_args(_without_parameters(sys.argv[1:] if argv is None else argv, pairs := []))
    args.parameter = pairs
    try:
        names = [name for name, _ in args.parameter]
        for name in dict.fromkeys(n for n in names if names.count(n) > 1):  # argparse would keep the last
            given = " and ".join(f"-p {n} {v}" for n, v in args.parameter if n == name)
            raise ParameterError(f"parameter {name!r} is given {names.count(name)} times ({given}); give it once")
        decl = declared_parameters(args.notebook)
        if args.list:
            print(decl.listing())
            return 0
        overrides = {name: decl.parse_cli(name, text) for name, text in args.parameter}
        if args.dry_run:
            _, clean, out = preflight(args.notebook, overrides, args.output_dir)
            print(f"parameters valid: {clean or 'the defaults'}\nwould write: {out}")
            return 0
        run_chapter(args.notebook, overrides, output_dir=args.output_dir, html=not args.no_html)
    except (ParameterError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:  # one line, not the traceback of wherever Ctrl-C landed
        print(f"\n{err}" if isinstance(err, Interrupted) else "\ninterrupted", file=sys.stderr)
        return 130
    except Exception as err:  # a failed run, or anything else: its reason, never a silent exit
        print(f"\nerror: {err if isinstance(err, RunFailed) else failure_reason(err)}", file=sys.stderr)
        return 1
    return 0


def quiet_exit(code: int) -> int:
    """``code``; after an interruption (130) what the interpreter's teardown would print is dropped (asyncio's
    "Task exception was never retrieved" and nbclient's traceback, about a hundred lines after the one that names
    the partial notebook).  For a ``__main__`` only: it closes this process's standard error."""
    if code == 130:
        sys.stderr.flush()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
    return code


if __name__ == "__main__":
    on_sigterm_interrupt()
    sys.exit(quiet_exit(main()))

"""Rerun a chapter with your own parameters, safely.

::

    python -m htlib.run book/phases.ipynb --list                  # the parameters, their types and defaults
    python -m htlib.run book/phases.ipynb -p small_h 400 --dry-run # validate only, compute nothing
    python -m htlib.run book/phases.ipynb -p executor tcp://10.0.0.5:8786   # sweeps on a Dask cluster

A chapter's parameters are declared once, by the ``Setup`` of its experiments module
(:mod:`htlib.experiments._setup`): the module is the one the notebook imports as
``from htlib.experiments import <module> as ch`` and whose ``ch.Setup.from_namespace(globals())``
it calls.  The ``Setup`` generates the notebook's ``parameters`` cell, gives ``--list``, and
validates the overrides here, before any compute (and once more in the kernel).

Every chapter has its ``Setup``.  A notebook without one (the scoreboard page, which runs no
experiment and takes one folder name) is read from its ``parameters`` cell instead, one
``name = <literal>  # description [constraint]`` a line (:func:`read_parameters`).

Before any compute, an unknown name, a value of the wrong type or an out-of-range value is refused
with a message listing the valid parameters (papermill itself would only warn); so are an output
folder inside ``book/``, a file that is not a chapter notebook and a Dask scheduler that does not
answer.  ``--dry-run`` checks all of that and computes nothing.  The run goes to
``runs/<chapter>-<hash of parameters>.ipynb`` plus an ``.html`` page rendered by a one-page
Jupyter Book build of the book's own configuration (so glued numbers, citations and math
render as in the book; its asset folders sit beside it), which opens with a note of the parameters that
differ from the book's, the code version and the date (:func:`rerun_banner`); nothing is ever written
into ``book/``.  A failed run keeps its partial
notebook, says where it is and why it failed; Ctrl-C prints one line naming it.  A repeated ``-p NAME`` is
refused, and so is a folder parameter (the scoreboard's ``source``) naming no folder.  Reruns may run at
once: each kernel keeps its connection files in a private temporary folder, and each run writes its own
working notebook, moved into place when it ends.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import io
import json
import operator
import os
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from htlib.experiments._setup import ParameterError, SetupBase

__all__ = [
    "Parameter", "ParameterError", "RunFailed", "Interrupted", "chapter_setup", "declared_parameters",
    "read_parameters", "validate", "check_overrides", "check_output_dir", "preflight", "output_path", "rerun_banner",
    "add_banner", "run_chapter", "render_html", "main",
]

REPO_ROOT = Path(__file__).resolve().parent.parent

_COMPARATORS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
_CONSTRAINT = re.compile(r"\[([^\[\]]*)\]\s*$")


class RunFailed(RuntimeError):
    """A chapter's execution (or its rendering) failed; the message says why and where its partial output is."""


class Interrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C (SIGINT); the message says where its partial notebook is."""


# --------------------------------------------------------------------------- notebooks without a Setup
# A notebook that runs no experiment (the scoreboard) declares its few parameters in the comments of its
# parameters cell; every chapter declares them in its Setup.


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
            inner = {type(v).__name__ for v in self.default}
            return f"list[{'|'.join(sorted(inner)) or 'any'}]"
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


def _parameters_cell(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    cells = [c for c in nb.cells if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])]
    if len(cells) != 1:
        raise ParameterError(f"a chapter needs exactly one cell tagged 'parameters', found {len(cells)}")
    return cells[0]


def read_parameters(notebook: str | Path) -> dict[str, Parameter]:
    """The parameters declared in a chapter's parameters cell, in its order (transitional: the comment DSL
    of chapters without a ``Setup``; :func:`declared_parameters` is what the tools call).  A string
    parameter whose description starts with "folder" names a folder that must exist when given."""
    nb = nbformat.read(str(notebook), as_version=4)
    source = _parameters_cell(nb).source
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
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
        kwargs: dict[str, Any] = {}
        m = _CONSTRAINT.search(comment)
        if m:
            kwargs = _parse_constraint(m.group(1), name)
            comment = comment[: m.start()].strip()
        is_dir = isinstance(default, str) and bool(re.match(r"(folder|directory)\b", comment, re.I))
        params[name] = Parameter(name=name, default=default, description=comment, is_dir=is_dir, **kwargs)
    return params


def _listing(params: dict[str, Parameter]) -> str:
    return "valid parameters (name: type = default [constraint]):\n" + "\n".join(p.describe() for p in params.values())


def _coerce_scalar(value: Any, like: Any, name: str) -> Any:
    if like is None:
        return value
    if isinstance(like, bool):
        if isinstance(value, bool):
            return value
    elif isinstance(like, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(like, float):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif isinstance(like, str):
        if isinstance(value, str):
            return value
    elif isinstance(value, type(like)):
        return value
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
        For an unknown name, a wrong type or an out-of-range value; the message
        lists every valid parameter with its type and default.
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


def _parse_cli_value(text: str, is_str: bool) -> Any:
    if is_str:
        return text  # strings are taken verbatim, no quoting needed
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        lowered = text.strip().lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        return text


# --------------------------------------------------------------------------- a chapter's declaration

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


def _read_notebook(path: Path) -> nbformat.NotebookNode:
    try:
        return nbformat.read(str(path), as_version=4)
    except Exception as err:  # not JSON, not a notebook: say so instead of a traceback
        raise ParameterError(f"cannot read {path} as a notebook: {type(err).__name__}: {err}") from None


def chapter_setup(notebook: str | Path) -> type[SetupBase] | None:
    """The ``Setup`` class that declares a chapter's parameters, or ``None`` (transitional: comment DSL).

    It is the ``Setup`` of the experiments module the notebook imports as
    ``from htlib.experiments import <module> as <alias>``, provided the notebook builds its setup
    with ``<alias>.Setup.from_namespace(...)``.
    """
    import importlib

    nb = _read_notebook(_check_notebook(notebook))
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
        if self.setup is not None:
            return self.setup.listing()
        return _listing(self.cell or {})

    def is_str(self, name: str) -> bool:
        if self.setup is not None:
            return any(p.name == name and p.type_name == "str" for p in self.setup.parameters())
        param = (self.cell or {}).get(name)
        return param is not None and isinstance(param.default, str)

    def defaults(self) -> dict[str, Any]:
        """Every declared parameter's default, as the literal a parameters cell holds."""
        if self.setup is not None:
            return self.setup().literals()
        return {name: param.default for name, param in (self.cell or {}).items()}

    def parse_cli(self, name: str, text: str) -> Any:
        """A ``-p NAME VALUE`` value: a Python literal, strings verbatim."""
        return _parse_cli_value(text, self.is_str(name))

    def build(self, overrides: dict[str, Any], base: SetupBase | None = None) -> SetupBase:
        """The chapter's Setup with ``overrides`` (Setup chapters only); errors carry the listing."""
        assert self.setup is not None
        try:
            return self.setup.from_overrides(overrides, base=base)
        except ParameterError as err:
            text = str(err)
            raise ParameterError(text if "valid parameters" in text else f"{text}\n{self.listing()}") from None

    def check(self, overrides: dict[str, Any]) -> dict[str, Any]:
        """``overrides`` validated and coerced to the literals papermill injects.

        Directory parameters are made absolute: the kernel runs in ``book/``, not where you typed them.
        """
        if self.setup is None:
            return validate(self.cell or {}, overrides)
        setup = self.build(overrides)
        clean = {name: setup.literals()[name] for name in overrides}
        for spec in setup.parameters():
            if spec.meta.is_dir and clean.get(spec.name):
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
    """Where reruns go, resolved; refused inside ``book/`` (committed chapters live there) or on a file."""
    out_dir = Path(output_dir).expanduser().resolve() if output_dir is not None else _default_output_dir()
    book_dir = REPO_ROOT / "book"
    beside = notebook is not None and out_dir == Path(notebook).resolve().parent
    if out_dir == book_dir or book_dir in out_dir.parents or beside:
        raise ParameterError(f"refusing to write reruns into {out_dir}: committed chapters live there; "
                             "use --output-dir outside book/ (default: runs/)")
    if out_dir.exists() and not out_dir.is_dir():
        raise ParameterError(f"--output-dir {out_dir} is a file, not a folder")
    return out_dir


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
    """Everything a run would refuse, checked before any compute: ``(notebook, clean overrides, output)``.

    The notebook must be a chapter, the parameters valid for its declaration, the output folder
    outside ``book/``, and a Dask scheduler named by ``executor`` must answer.  ``--dry-run`` is
    exactly this.
    """
    decl = declared_parameters(notebook)
    clean = decl.check(overrides)
    out_dir = check_output_dir(output_dir, decl.notebook)
    executor = clean.get("executor")
    if isinstance(executor, str) and executor.startswith("tcp://"):
        check_scheduler(executor)
    return decl.notebook, clean, output_path(decl.notebook, clean, out_dir)


def output_path(notebook: str | Path, overrides: dict[str, Any], output_dir: str | Path) -> Path:
    """``<output_dir>/<chapter>-<8-hex hash of the parameters>.ipynb``."""
    payload = json.dumps(overrides, sort_keys=True, default=repr)
    digest = hashlib.sha256(payload.encode()).hexdigest()[:8]
    return Path(output_dir) / f"{Path(notebook).stem}-{digest}.ipynb"


def _default_output_dir() -> Path:
    return REPO_ROOT / "runs" if (REPO_ROOT / "pyproject.toml").exists() else Path.cwd() / "runs"


def kernel_manager_class(log: str | Path | None = None):
    """The kernel manager of papermill's runs: IPC sockets where the platform has them, in a private
    runtime folder of each kernel, and the kernel's own log (not the cells' output) written to ``log``
    when given.

    Over TCP the kernel prints "Kernel is running over TCP without encryption" on every run, which reads
    as if something were wrong; a local run has no reason to open TCP ports.  jupyter_client names IPC
    sockets ``kernel-ipc-<n>`` relative to the kernel's working folder (``book/``) and picks ``n`` by
    looking for a free name, so two kernels started at once raced for the same sockets there (``Kernel
    didn't respond``, ``Invalid Signature``) and left stale files in ``book/``: each kernel's connection
    file and sockets go to a fresh temporary folder instead, removed when the kernel is cleaned up.  The
    kernel process's own log lines (for example the "KeyboardInterrupt caught in kernel" that
    jupyter_client's shutdown interrupt can provoke) say nothing about the chapter; with ``log`` they go
    to that file, which a failed run names.
    """
    import shutil
    import tempfile
    import weakref

    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    class RunKernelManager(AsyncKernelManager):
        launched: list[AsyncKernelManager] = []  # noqa: RUF012 - this class's kernels (stop_kernels)

        @default("transport")
        def _default_transport(self) -> str:
            return "tcp" if os.name == "nt" else "ipc"  # no IPC transport on Windows

        @property
        def _runtime(self) -> str:
            if "_htlib_runtime" not in self.__dict__:
                self.__dict__["_htlib_runtime"] = folder = tempfile.mkdtemp(prefix="htlib-kernel-")
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
            RunKernelManager.launched.append(self)
            return await super()._async_launch_kernel(kernel_cmd, **kw)

        async def _async_cleanup_resources(self, restart: bool = False) -> None:
            await super()._async_cleanup_resources(restart=restart)
            if not restart and "_htlib_runtime" in self.__dict__:
                shutil.rmtree(self.__dict__["_htlib_runtime"], ignore_errors=True)

    return RunKernelManager


def stop_kernels(manager_class) -> None:
    """Kill what is left of the kernels of a :func:`kernel_manager_class` and remove their runtime folders.

    After Ctrl-C while a kernel starts, nbclient never shuts it down, and Ctrl-C does not reach it
    (jupyter_client starts kernels in a session of their own): it would stay, an orphan, holding its folder.
    """
    import shutil

    for km in manager_class.launched:
        proc = getattr(getattr(km, "provisioner", None), "process", None)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(10)
        shutil.rmtree(km.__dict__.get("_htlib_runtime", ""), ignore_errors=True)


def failure_reason(err: BaseException) -> str:
    """One line saying why a run failed: the failing cell's exception for papermill, else the error."""
    ename, evalue = getattr(err, "ename", None), getattr(err, "evalue", None)
    if ename:
        cell = getattr(err, "exec_count", None)
        text = (f"{ename}: {evalue}" if evalue else str(ename)).strip().splitlines()[0][:500]
        return f"cell [{cell}] raised {text}" if cell is not None else text
    text = str(err).strip()
    return f"{type(err).__name__}: {text.splitlines()[0][:500]}" if text else type(err).__name__


def rerun_banner(notebook: str | Path, overrides: dict[str, Any], *, when: Any = None) -> str:
    """The note a rerun's page opens with: the parameters that differ from the book's, the code version
    and the date, so that a reader never takes a rerun for the book's page.

    Examples
    --------
    >>> text = rerun_banner("book/phases.ipynb", {"h": 400, "seed": 0})
    >>> "`h = 400`" in text and "seed" not in text  # seed 0 is the default: not a difference
    True
    """
    import datetime as _dt

    from htlib.book import version

    decl = declared_parameters(notebook)
    defaults = decl.defaults()
    changed = [f"`{k} = {v!r}`" for k, v in overrides.items() if defaults.get(k) != v]
    when = when or _dt.datetime.now(_dt.timezone.utc)
    differs = ("Parameters that differ from the book's defaults: " + ", ".join(changed) + "."
               if changed else "It uses the book's default parameters.")
    return ("```{admonition} A rerun, not the book's page\n:class: important\n"
            f"This page was executed by `python -m htlib.run` on {when:%Y-%m-%d at %H:%M} UTC with htlib version "
            f"`{version(REPO_ROOT)}`. {differs} Every number, table, figure and verdict on it is this rerun's own; "
            "the conventions and the bibliography it links to are copied beside it, and links to other chapters "
            "show as plain text.\n```")


def add_banner(path: str | Path, text: str) -> None:
    """Insert ``text`` as a markdown cell after the executed notebook's title cell (in place)."""
    nb = nbformat.read(str(path), as_version=4)
    first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"), -1)
    nb.cells.insert(first + 1, nbformat.v4.new_markdown_cell(text, metadata={"tags": ["htlib-rerun-banner"]}))
    nbformat.write(nb, str(path))


def run_chapter(
    notebook: str | Path,
    overrides: dict[str, Any],
    *,
    output_dir: str | Path | None = None,
    progress: bool = True,
    html: bool = True,
) -> Path:
    """Validate ``overrides`` (:func:`preflight`), execute the chapter with papermill, render HTML.

    Returns the path of the executed notebook.

    Raises
    ------
    ParameterError
        Before any compute, for anything :func:`preflight` refuses.
    RunFailed
        When a cell fails (the message names the cell's exception and the partial notebook) or the
        HTML rendering fails.
    Interrupted
        On Ctrl-C during the execution (a ``KeyboardInterrupt`` naming the partial notebook).
    """
    import papermill as pm

    notebook, clean, out = preflight(notebook, overrides, output_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    # Papermill rewrites the notebook as it goes: two reruns with the same parameters at once (one output
    # path) would write into one file.  Each runs into its own working files, moved into place when it ends
    # (os.replace is atomic), the partial notebook and the kernel log included when it fails.
    work = out.with_name(f"{out.stem}.running-{os.getpid()}.ipynb")
    work_log, log = work.with_suffix(".kernel.log"), out.with_suffix(".kernel.log")
    # The numbers behind the figures go beside the run, not into book/ (the kernel inherits the variable).
    from htlib.plotting import FIGURE_DATA_DIR

    before = os.environ.get("HTLIB_FIGURE_DATA")
    os.environ["HTLIB_FIGURE_DATA"] = str(out.parent.resolve() / FIGURE_DATA_DIR)
    managers = kernel_manager_class(work_log)
    try:
        pm.execute_notebook(
            str(notebook), str(work), parameters=clean, cwd=str(notebook.parent),
            kernel_name="python3", progress_bar=progress, kernel_manager_class=managers,
        )
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
        if before is None:
            os.environ.pop("HTLIB_FIGURE_DATA", None)
        else:
            os.environ["HTLIB_FIGURE_DATA"] = before
    work_log.unlink(missing_ok=True)
    add_banner(work, rerun_banner(notebook, clean))
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


def _page_config() -> dict[str, Any]:
    """The book's ``_config.yml``, adapted to render one already-executed page."""
    import yaml

    config = yaml.safe_load((REPO_ROOT / "_config.yml").read_text())
    config["only_build_toc_files"] = True
    config["exclude_patterns"] = ["_build/*"]
    config.setdefault("execute", {})["execute_notebooks"] = "off"  # the run has executed it already
    config["execute"].pop("cache", None)
    sphinx = config.setdefault("sphinx", {})
    local = sphinx.get("local_extensions") or {}
    for name, folder in local.items():
        local[name] = str((REPO_ROOT / folder).resolve())
    config.pop("bibtex_bibfiles", None)  # set by render_html once the .bib is copied beside the page
    from htlib.book import local_mathjax

    static = local_mathjax(REPO_ROOT)
    if static is not None:
        sphinx.setdefault("config", {})["html_static_path"] = [str(static)]
        sphinx["config"]["mathjax_path"] = "mathjax/tex-chtml.js"
    return config


_PAGES_BESIDE = ("conventions", "bibliography")
"""Text pages of the book rendered beside a rerun, so that its links to them resolve."""


def render_html(notebook: str | Path, *, timeout: int = 600) -> Path:
    """Render an executed notebook to ``<notebook>.html`` with a one-page build of the book's configuration.

    Plain nbconvert leaves myst-nb's ``{glue}`` roles, ``{cite}`` and ``{ref}`` as raw markup: the
    prose of a rerun would not state its own numbers.  This runs Jupyter Book (Sphinx + myst-nb, the
    book's own configuration, execution off) on a temporary one-page book holding the notebook and
    the book's text pages it links to (:data:`_PAGES_BESIDE`: the conventions and the bibliography), then
    copies the pages and their asset folders (``_static``, ``_images``, ``_sources``, ...) next to the
    notebook.  Links to other chapters of the book stay plain text.
    """
    import shutil
    import subprocess
    import tempfile

    import yaml

    from htlib.book import jupyter_book_command

    notebook = Path(notebook).resolve()
    target = notebook.with_suffix(".html")
    with tempfile.TemporaryDirectory(prefix="htlib-page-") as tmp:
        root = Path(tmp)
        shutil.copy2(notebook, root / notebook.name)
        toc: dict[str, Any] = {"format": "jb-book", "root": notebook.stem}
        for extra in ("references.bib", *(f"{page}.md" for page in _PAGES_BESIDE)):
            if (REPO_ROOT / "book" / extra).exists():
                shutil.copy2(REPO_ROOT / "book" / extra, root / extra)
        pages = [page for page in _PAGES_BESIDE if (root / f"{page}.md").exists()]
        if pages:
            toc["chapters"] = [{"file": page} for page in pages]
        config = _page_config()
        if (root / "references.bib").exists():
            config["bibtex_bibfiles"] = ["references.bib"]
        (root / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
        (root / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
        proc = subprocess.run(
            [jupyter_book_command(), "build", str(root), "-q"], cwd=root, capture_output=True, text=True,
            timeout=timeout, env={**os.environ, "TQDM_DISABLE": "1"},
        )
        html_dir = root / "_build" / "html"
        page = html_dir / f"{notebook.stem}.html"
        if proc.returncode != 0 or not page.exists():
            raise RuntimeError(f"rendering {notebook.name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        for item in html_dir.iterdir():
            if item.is_dir() and item.name.startswith("_"):
                shutil.copytree(item, target.parent / item.name, dirs_exist_ok=True)
        for name in (page.name, *(f"{p}.html" for p in pages)):
            if (html_dir / name).exists():
                shutil.copy2(html_dir / name, target.parent / name)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m htlib.run",
        description="Rerun a book chapter with new parameters; outputs go to runs/, never into book/.",
    )
    parser.add_argument("notebook", help="chapter notebook, e.g. book/phases.ipynb")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                        help="override one parameter (repeatable); VALUE is a Python literal, strings verbatim")
    parser.add_argument("--list", action="store_true", help="list the chapter's parameters and exit")
    parser.add_argument("--output-dir", default=None, help="where to write (default: runs/ at the repository root)")
    parser.add_argument("--no-html", action="store_true", help="skip the standalone HTML rendering")
    parser.add_argument("--dry-run", action="store_true",
                        help="check everything the run would refuse, print where it would go, compute nothing")
    args = parser.parse_args(argv)
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
            print(f"parameters valid: {clean or 'the defaults'}")
            print(f"would write: {out}")
            return 0
        run_chapter(args.notebook, overrides, output_dir=args.output_dir, html=not args.no_html)
    except (ParameterError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except RunFailed as err:
        print(f"\nerror: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as err:  # one line, not the traceback of wherever Ctrl-C landed
        print(f"\n{err}" if isinstance(err, Interrupted) else "\ninterrupted", file=sys.stderr)
        return 130
    except Exception as err:  # anything else: its reason, never a silent exit
        print(f"\nerror: {failure_reason(err)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

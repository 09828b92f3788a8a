"""Rerun a chapter with your own parameters, safely.

::

    python -m htlib.run book/one_step_adam.ipynb -p seeds 2 -p etas "[0.1, 1.0]"
    python -m htlib.run book/one_step_adam.ipynb --list      # the parameters, their types and defaults
    python -m htlib.run book/one_step_adam.ipynb -p seeds 2 --dry-run   # validate only, compute nothing

Each chapter's single cell tagged ``parameters`` declares every knob, one per
line, as ``name = <literal>  # description [constraint]``.  The type is the
default's type (a float parameter also takes an int; a list takes elements of
its default's element type).  The optional bracketed constraint is a
comma-separated list of ``> x``, ``>= x``, ``< x``, ``<= x`` or one
``in {...}``, each optionally prefixed by ``each`` to apply to list elements.

Before any compute, an unknown name, a value of the wrong type or an
out-of-range value is refused with a message listing the valid parameters
(papermill itself would only warn).  The run goes to
``runs/<chapter>-<hash of parameters>.ipynb`` plus an ``.html`` page rendered by a one-page
Jupyter Book build of the book's own configuration (so glued numbers, citations and math
render as in the book; its asset folders sit beside it);
nothing is ever written into ``book/``.  A failed run keeps its partial
notebook and says where it is.
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

__all__ = [
    "Parameter", "ParameterError", "read_parameters", "validate", "output_path", "run_chapter", "render_html", "main",
]

REPO_ROOT = Path(__file__).resolve().parent.parent

_COMPARATORS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
_CONSTRAINT = re.compile(r"\[([^\[\]]*)\]\s*$")


class ParameterError(ValueError):
    """A rerun parameter was unknown, mistyped or out of range."""


@dataclass(frozen=True)
class Parameter:
    """One declared chapter parameter."""

    name: str
    default: Any
    description: str = ""
    bounds: tuple[tuple[str, float], ...] = ()  # (comparator, value) pairs
    choices: tuple[Any, ...] | None = None
    each: bool = False  # constraints apply to list elements
    constraint_text: str = ""

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
    """The declared parameters of a chapter, in the order of its parameters cell."""
    nb = nbformat.read(str(notebook), as_version=4)
    source = _parameters_cell(nb).source
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
    params: dict[str, Parameter] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name = node.targets[0].id
        default = ast.literal_eval(node.value)
        comment = comments.get(node.end_lineno or node.lineno, "")
        kwargs: dict[str, Any] = {}
        m = _CONSTRAINT.search(comment)
        if m:
            kwargs = _parse_constraint(m.group(1), name)
            comment = comment[: m.start()].strip()
        params[name] = Parameter(name=name, default=default, description=comment, **kwargs)
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
        except ParameterError as err:
            raise ParameterError(f"{err}\n{_listing(params)}") from None
        clean[name] = value
    return clean


def _parse_cli_value(text: str, param: Parameter | None) -> Any:
    if param is not None and isinstance(param.default, str):
        return text  # strings are taken verbatim, no quoting needed
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        lowered = text.strip().lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        return text


def output_path(notebook: str | Path, overrides: dict[str, Any], output_dir: str | Path) -> Path:
    """``<output_dir>/<chapter>-<8-hex hash of the parameters>.ipynb``."""
    payload = json.dumps(overrides, sort_keys=True, default=repr)
    digest = hashlib.sha256(payload.encode()).hexdigest()[:8]
    return Path(output_dir) / f"{Path(notebook).stem}-{digest}.ipynb"


def _default_output_dir() -> Path:
    return REPO_ROOT / "runs" if (REPO_ROOT / "pyproject.toml").exists() else Path.cwd() / "runs"


def run_chapter(
    notebook: str | Path,
    overrides: dict[str, Any],
    *,
    output_dir: str | Path | None = None,
    progress: bool = True,
    html: bool = True,
) -> Path:
    """Validate ``overrides``, execute the chapter with papermill, render HTML.

    Returns the path of the executed notebook.  Raises :class:`ParameterError`
    before any compute if the parameters are invalid.
    """
    import papermill as pm

    notebook = Path(notebook).resolve()
    if not notebook.exists():
        raise FileNotFoundError(f"no such chapter: {notebook}")
    params = read_parameters(notebook)
    clean = validate(params, overrides)
    out_dir = Path(output_dir).resolve() if output_dir is not None else _default_output_dir()
    book_dir = REPO_ROOT / "book"
    if out_dir == book_dir or book_dir in out_dir.parents or out_dir == notebook.parent:
        raise ParameterError(f"refusing to write reruns into {out_dir}: committed chapters live there")
    out_dir.mkdir(parents=True, exist_ok=True)
    out = output_path(notebook, clean, out_dir)
    try:
        pm.execute_notebook(
            str(notebook), str(out), parameters=clean, cwd=str(notebook.parent),
            kernel_name="python3", progress_bar=progress,
        )
    except Exception as err:
        print(f"\nthe run failed: {type(err).__name__}; the partial notebook is {out}", file=sys.stderr)
        raise
    if html:
        try:
            render_html(out)
        except Exception as err:
            print(f"\nthe run succeeded ({out}) but rendering its HTML failed: {err}", file=sys.stderr)
            raise
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


def render_html(notebook: str | Path, *, timeout: int = 600) -> Path:
    """Render an executed notebook to ``<notebook>.html`` with a one-page build of the book's configuration.

    Plain nbconvert leaves myst-nb's ``{glue}`` roles, ``{cite}`` and ``{ref}`` as raw markup: the
    prose of a rerun would not state its own numbers.  This runs Jupyter Book (Sphinx + myst-nb, the
    book's own configuration, execution off) on a temporary one-page book holding the notebook and
    the bibliography, then copies the page and its asset folders (``_static``, ``_images``,
    ``_sources``, ...) next to the notebook.  Links to other chapters of the book stay plain text.
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
        for extra in ("references.bib", "bibliography.md"):
            if (REPO_ROOT / "book" / extra).exists():
                shutil.copy2(REPO_ROOT / "book" / extra, root / extra)
        if (root / "bibliography.md").exists():
            toc["chapters"] = [{"file": "bibliography"}]
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
        for name in (page.name, "bibliography.html"):
            if (html_dir / name).exists():
                shutil.copy2(html_dir / name, target.parent / name)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m htlib.run",
        description="Rerun a book chapter with new parameters; outputs go to runs/, never into book/.",
    )
    parser.add_argument("notebook", help="chapter notebook, e.g. book/one_step_adam.ipynb")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                        help="override one parameter (repeatable); VALUE is a Python literal")
    parser.add_argument("--list", action="store_true", help="list the chapter's parameters and exit")
    parser.add_argument("--output-dir", default=None, help="where to write (default: runs/ at the repository root)")
    parser.add_argument("--no-html", action="store_true", help="skip the standalone HTML rendering")
    parser.add_argument("--dry-run", action="store_true",
                        help="validate the parameters, print where the run would go, and compute nothing")
    args = parser.parse_args(argv)
    try:
        params = read_parameters(args.notebook)
        if args.list:
            print(_listing(params))
            return 0
        overrides = {name: _parse_cli_value(text, params.get(name)) for name, text in args.parameter}
        if args.dry_run:
            clean = validate(params, overrides)
            out_dir = Path(args.output_dir) if args.output_dir else _default_output_dir()
            print(f"parameters valid: {clean or 'the defaults'}")
            print(f"would write: {output_path(args.notebook, clean, out_dir)}")
            return 0
        run_chapter(args.notebook, overrides, output_dir=args.output_dir, html=not args.no_html)
    except (ParameterError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except Exception:  # the failure is already reported with the partial output's path
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

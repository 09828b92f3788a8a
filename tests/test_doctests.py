"""The numerics modules are documented for their users: every public function and class has a NumPy-style
docstring (Parameters, Returns, Examples; Attributes for dataclasses), every Example runs as a doctest, and the
README's example on a user's own weight matrix runs as written."""

from __future__ import annotations

import ast
import dataclasses
import doctest
import importlib
import inspect
import os
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent

NUMERICS = ["random_matrices", "spectra", "htmp", "linear", "two_layer", "two_layer_autograd", "small_nets",
            "teacher_student", "dynamics", "generalization", "stats", "datasets"]

FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


def _module(name: str):
    return importlib.import_module(f"htlib.{name}")


def _public(module) -> list[tuple[str, object]]:
    """The public functions and classes of ``module``: its ``__all__`` (else the names without a leading
    underscore) that are functions or classes defined in it."""
    names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
    out = []
    for name in names:
        obj = getattr(module, name)
        if (inspect.isfunction(obj) or inspect.isclass(obj)) and getattr(obj, "__module__", None) == module.__name__:
            out.append((name, obj))
    return out


def _sections(doc: str) -> set[str]:
    """Names of the numpydoc sections of a docstring (a title line underlined with dashes)."""
    lines = inspect.cleandoc(doc or "").splitlines()
    return {lines[i].strip() for i in range(len(lines) - 1)
            if lines[i].strip() and re.fullmatch(r"-{3,}", lines[i + 1].strip())}


def _returns_something(fn) -> bool:
    """Whether a function's body returns a value (or yields) in its own scope."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError):
        return True
    func = tree.body[0]

    def walk(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(child, (ast.Yield, ast.YieldFrom)):
                return True
            if isinstance(child, ast.Return) and child.value is not None and not (
                    isinstance(child.value, ast.Constant) and child.value.value is None):
                return True
            if walk(child):
                return True
        return False

    return walk(func)


def _missing(name: str, obj) -> list[str]:
    """The sections ``obj``'s docstring lacks."""
    found = _sections(inspect.getdoc(obj) if inspect.isclass(obj) else obj.__doc__)
    need = ["Examples"]
    if inspect.isclass(obj):
        if dataclasses.is_dataclass(obj) or (issubclass(obj, tuple) and hasattr(obj, "_fields")):
            need.append("Attributes")
    else:
        params = [p for p in inspect.signature(obj).parameters if p not in ("self", "cls")]
        if params:
            need.append("Parameters")
        if _returns_something(obj):
            need.append("Yields" if inspect.isgeneratorfunction(obj) else "Returns")
    return [f"{name}: {section}" for section in need if section not in found]


def undocumented() -> list[str]:
    """Every missing section of every public function and class of the numerics modules, as ``module.name:
    section``."""
    out = []
    for mod_name in NUMERICS:
        module = _module(mod_name)
        out += [f"{mod_name}.{m}" for name, obj in _public(module) for m in _missing(name, obj)]
    return out


def test_every_public_function_has_parameters_returns_and_examples():
    missing = undocumented()
    assert not missing, f"{len(missing)} missing docstring sections:\n" + "\n".join(missing)


@pytest.mark.parametrize("mod_name", NUMERICS)
def test_doctests(mod_name, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "1"))
    module = _module(mod_name)
    result = doctest.testmod(module, optionflags=FLAGS, verbose=False, report=True)
    assert result.attempted > 0, f"htlib.{mod_name} has no doctest"
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctest examples of htlib.{mod_name} fail"


def _readme_snippet() -> str:
    """The README's Python block that uses htlib on a user's own weight matrix."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "htlib" in b and "W" in b]
    assert blocks, "the README has no Python example of htlib on a weight matrix"
    return blocks[0]


def test_readme_weight_matrix_example_runs(tmp_path, monkeypatch, capsys):
    """The README's five lines, exactly as written, on a random Gaussian matrix saved where they load it."""
    from htlib.spectra import PHASES

    snippet = _readme_snippet()
    assert len([ln for ln in snippet.splitlines() if ln.strip()]) <= 5
    rng = np.random.default_rng(0)
    np.save(tmp_path / "W.npy", rng.standard_normal((300, 200)) / np.sqrt(200))
    monkeypatch.chdir(tmp_path)
    exec(compile(snippet, "README.md", "exec"), {"__name__": "__readme__"})
    printed = capsys.readouterr().out
    assert printed.split(" | ")[0] in PHASES and printed.startswith("random-like"), printed

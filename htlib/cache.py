"""On-disk result cache for expensive runs.

A result is stored under a key built from (a) the name of the function that
produced it, (b) its configuration, serialised canonically, and (c) a hash of
the source that computes results -- htlib's numerics and experiments layers --
and of the numeric libraries' versions.  A cached result is therefore never
returned for a different config, nor after the code that computed it has
changed.

What the key hashes (:func:`source_hash` with ``scope="results"``): every
``.py`` file of htlib except the book tooling of :data:`TOOLING_MODULES`
(``run``, ``book``, ``paper``, ``cache``, ``sweep``, ``claims``, ``plotting``).
Those draw, tabulate, schedule and store results but compute none, so restyling
a figure or a claims table keeps the (hours of) cached training runs.  A new
module is hashed unless it is added to that list: the safe default.  The book's
execution cache (:func:`htlib.book.execution_cache_path`) keys on
``scope="all"`` instead, since a chapter's figures and tables do depend on the
tooling.

The cache lives in ``$HTLIB_CACHE_DIR`` when set; otherwise in
``<repository>/_build/htlib-cache`` when htlib runs from a source checkout
(so a fresh clone starts empty), else in ``~/.cache/htlib``.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import json
import math
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any, Callable

__all__ = [
    "TOOLING_MODULES",
    "cache_dir",
    "source_hash",
    "config_key",
    "load",
    "store",
    "cached_call",
]

_PACKAGE_DIR = Path(__file__).resolve().parent

TOOLING_MODULES: frozenset[str] = frozenset({"run", "book", "paper", "cache", "sweep", "claims", "plotting"})
"""Top-level htlib modules that compute no result, left out of the result-cache key."""


def cache_dir() -> Path:
    """Directory of the result cache (created on demand)."""
    env = os.environ.get("HTLIB_CACHE_DIR")
    if env:
        path = Path(env)
    elif (_PACKAGE_DIR.parent / "pyproject.toml").exists():
        path = _PACKAGE_DIR.parent / "_build" / "htlib-cache"
    else:
        path = Path.home() / ".cache" / "htlib"
    path.mkdir(parents=True, exist_ok=True)
    return path


@functools.lru_cache(maxsize=8)
def source_hash(package_dir: str | None = None, scope: str = "results") -> str:
    """SHA-256 of htlib's ``.py`` files (path and content) and of the installed
    numpy / scipy / torch versions.

    ``scope="results"`` (the result cache) hashes the numerics and experiments
    layers: every file but the top-level :data:`TOOLING_MODULES`.
    ``scope="all"`` (the book's execution cache) hashes every file.
    """
    if scope not in ("results", "all"):
        raise ValueError(f"scope must be one of 'results', 'all'; got {scope!r}")
    root = Path(package_dir) if package_dir else _PACKAGE_DIR
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if scope == "results" and len(rel.parts) == 1 and path.stem in TOOLING_MODULES:
            continue
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    for module in ("numpy", "scipy", "torch"):
        try:
            version = __import__(module).__version__
        except ImportError:  # pragma: no cover - optional dependency
            version = "absent"
        digest.update(f"{module}={version};".encode())
    return digest.hexdigest()


def _canonical(value: Any) -> Any:
    """JSON-able canonical form; floats keep their exact repr."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            "__dataclass__": type(value).__qualname__,
            **{f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)},
        }
    if isinstance(value, enum.Enum):
        return _canonical(value.value)
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, float):
        return repr(value) if not math.isfinite(value) else float.hex(value)
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return _canonical(value.item())
    raise TypeError(f"cannot build a cache key from a value of type {type(value).__name__}")


def config_key(name: str, config: Any) -> str:
    """Cache key of ``config`` for the producer called ``name``."""
    payload = json.dumps(
        {"name": name, "config": _canonical(config), "source": source_hash()},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def _path(key: str) -> Path:
    return cache_dir() / key[:2] / f"{key}.pkl"


_MISSING = object()


def load(key: str) -> Any:
    """The cached value for ``key``, or the module-level ``MISSING`` sentinel."""
    path = _path(key)
    if not path.exists():
        return _MISSING
    try:
        with path.open("rb") as fh:
            return pickle.load(fh)
    except (EOFError, pickle.UnpicklingError):  # a torn write: recompute
        return _MISSING


MISSING = _MISSING


def store(key: str, value: Any) -> None:
    """Write ``value`` atomically (temp file + rename), so an interrupted
    sweep never leaves a half-written entry behind."""
    path = _path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def cached_call(fn: Callable[[Any], Any], config: Any, *, use_cache: bool = True) -> Any:
    """``fn(config)``, served from the cache when the same (fn, config, code) ran before."""
    if not use_cache:
        return fn(config)
    key = config_key(f"{fn.__module__}.{fn.__qualname__}", config)
    value = load(key)
    if value is _MISSING:
        value = fn(config)
        store(key, value)
    return value

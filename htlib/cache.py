"""On-disk result cache for expensive runs.

A result is stored under a key built from the producing function's name, its canonical configuration and
:func:`source_hash` of the code that computes it (the syntax trees, without docstrings, of its module and of
every htlib module that imports, transitively; the tooling of :data:`TOOLING_MODULES` left out) and of the
numeric libraries' versions.  The cache lives in
``$HTLIB_CACHE_DIR`` (relative to the repository root), else ``<repository>/_build/htlib-cache`` in a
source checkout, else ``~/.cache/htlib``.  Entries are never unpickled: each is a NumPy ``.npz`` archive
(``allow_pickle=False``) of the arrays plus a JSON description of the structure around them, behind a
header with its key and a SHA-256 checksum.  A damaged or unreadable entry is recomputed and a failed
write returns the value anyway, each with a :class:`CacheWarning`.

Trust: the checksum detects damage, not tampering (it has no secret key), so the cache folder is trusted like the
code: whoever can write it can change the numbers it serves.  What an odd entry can do is bounded: it is never
unpickled, it is not expanded beyond :data:`MAX_EXPANSION` times its size, and every dataclass rebuilt from it
passes its own ``__post_init__`` checks, else it is recomputed.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import enum
import functools
import hashlib
import importlib
import io
import json
import math
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

__all__ = ["TOOLING_MODULES", "CacheWarning", "CacheDirError", "cache_dir", "source_hash", "config_key", "load",
           "store", "cached_call", "MISSING", "atomic_write"]

_PACKAGE_DIR = Path(__file__).resolve().parent

TOOLING_MODULES: frozenset[str] = frozenset({"run", "book", "paper", "cache", "sweep", "claims", "records", "scoreboard",
                                             "archive", "plotting", "params"})
"""Top-level htlib modules that compute no result, left out of the result-cache key."""

MAGIC = b"htlib-cache 2\n"  # first line of every entry; an entry of another format is not read
SUFFIX = ".htc"
TEMP_PREFIX = ".tmp-"
STALE_TEMP_SECONDS = 3600.0  # a temp file older than this is a killed write (a write takes seconds): removed


class CacheWarning(RuntimeWarning):
    """An entry could not be read (it is recomputed) or written (the value is returned uncached)."""


class CacheDirError(ValueError):
    """``HTLIB_CACHE_DIR`` names something that cannot be a directory."""


@functools.lru_cache(maxsize=None)
def _resolve(env: str | None) -> Path:
    # Memoised per value: a chdir after the first call never moves the cache.
    root = _PACKAGE_DIR.parent if (_PACKAGE_DIR.parent / "pyproject.toml").exists() else None
    if env:
        path = Path(env).expanduser()
        if not path.is_absolute():
            path = (root if root is not None else Path.cwd()) / path
        return Path(os.path.abspath(path))
    if root is not None:
        return root / "_build" / "htlib-cache"
    return Path.home() / ".cache" / "htlib"


def cache_dir() -> Path:
    """Directory of the result cache (created on demand; see the module docstring).

    Raises
    ------
    CacheDirError
        If ``HTLIB_CACHE_DIR`` (or one of its parents) is an existing file.
    """
    env = os.environ.get("HTLIB_CACHE_DIR") or None
    path = _resolve(env)
    p = next((p for p in (path, *path.parents) if p.exists()), None)
    if p is not None and not p.is_dir():
        what = "is a file" if p == path else f"lies under the file {p}"
        raise CacheDirError(f"HTLIB_CACHE_DIR={env!r} ({path}) {what}; set HTLIB_CACHE_DIR to a directory "
                            f"(created if missing), or unset it for the default {_resolve(None)}")
    return path


class _StripDocstrings(ast.NodeTransformer):
    """Drops every statement that is a bare string (docstrings, attribute docstrings): they do nothing."""

    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            kept = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                            and isinstance(s.value.value, str))]
            node.body = kept or [ast.Pass()]
        return node


def _code_text(source: str) -> str:
    """What :func:`source_hash` hashes of one file: the syntax tree, without docstrings or positions."""
    tree = _StripDocstrings().visit(ast.parse(source))
    return ast.dump(tree, include_attributes=False)


def _module_file(module: str, root: Path) -> Path | None:
    """The source file of ``module``: inside ``root`` for htlib's own modules, else its ``__file__``."""
    parts = module.split(".")
    if parts[0] == "htlib":
        base = root.joinpath(*parts[1:])
        for cand in (base.with_suffix(".py"), base / "__init__.py"):
            if cand.is_file():
                return cand
        return None
    mod = sys.modules.get(module)
    file = getattr(mod, "__file__", None)
    return Path(file) if file and file.endswith(".py") and os.path.isfile(file) else None


def _htlib_imports(tree: ast.AST) -> set[str]:
    """The htlib modules a module imports, also inside functions (absolute imports, as htlib writes them):
    ``import htlib.x``, ``from htlib import x`` and ``from htlib.x import y`` all name ``htlib.x``."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("htlib."))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("htlib."):
                out.add(node.module)
            if node.module == "htlib" or node.module.startswith("htlib."):
                out.update(f"{node.module}.{a.name}" for a in node.names)  # a submodule, if the name is one
    return out


def _result_files(root: Path, module: str | None) -> list[Path]:
    """The files whose code a result of ``module`` can depend on: its own and every htlib module it imports,
    transitively, book tooling (:data:`TOOLING_MODULES`) left out; ``None``: every numerics module."""
    if module is None:
        return sorted(p for p in root.glob("*.py") if p.stem not in TOOLING_MODULES)
    files: set[Path] = set()
    todo, seen = [module], set()
    while todo:
        name = todo.pop()
        if name in seen or (name.startswith("htlib.") and name.split(".")[1] in TOOLING_MODULES):
            continue
        seen.add(name)
        path = _module_file(name, root)
        # A package's own __init__ is not followed: ``from htlib.experiments.<ch> import compute`` runs the
        # chapter's, which imports its reading and bounds beside its runs, and would key the runs on them.
        if path is None or (path.name == "__init__.py" and name != module):
            continue
        files.add(path)
        todo.extend(_htlib_imports(ast.parse(path.read_text())))
    return sorted(p for p in files if p.is_file())


@functools.lru_cache(maxsize=64)
def source_hash(package_dir: str | None = None, scope: str = "results", module: str | None = None) -> str:
    """SHA-256 of htlib's source and of the installed Python / numpy / scipy / torch versions.

    Parameters
    ----------
    package_dir
        The package to hash (default: this htlib).
    scope
        ``"results"`` (the result cache): the syntax trees, without docstrings, of ``module`` and of every htlib
        module it imports, transitively (tooling left out); ``"all"`` (the book's execution cache): the bytes of every
        file of the package, its claims tables and other data included (compiled ``__pycache__`` left out).
    module
        The dotted name of the module whose function computes the result; ``None``: the numerics alone.

    Examples
    --------
    >>> from htlib.cache import source_hash
    >>> source_hash(module="htlib.experiments.htmp.compute") != source_hash(module="htlib.experiments.phases.compute")
    True
    """
    if scope not in ("results", "all"):
        raise ValueError(f"scope must be one of 'results', 'all'; got {scope!r}")
    root = Path(package_dir) if package_dir else _PACKAGE_DIR
    digest = hashlib.sha256()
    if scope == "all":
        for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                           and p.suffix not in (".pyc", ".pyo")):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    else:
        for path in _result_files(root, module):
            name = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
            digest.update(name.encode() + b"\0" + _code_text(path.read_text()).encode() + b"\0")
        digest.update(f"python={sys.version_info[0]}.{sys.version_info[1]};".encode())
    for lib in ("numpy", "scipy", "torch"):
        try:
            version = __import__(lib).__version__
        except ImportError:  # pragma: no cover - optional dependency
            version = "absent"
        digest.update(f"{lib}={version};".encode())
    return digest.hexdigest()


def _canonical(value: Any) -> Any:
    """JSON-able canonical form; floats keep their exact repr."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"__dataclass__": type(value).__qualname__,
                **{f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}}
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


def _module_of(name: str) -> str | None:
    """The longest dotted prefix of ``name`` (``module.qualname``): an htlib source file or an imported module."""
    parts = name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[:i])
        if prefix in sys.modules or (parts[0] == "htlib" and _module_file(prefix, _PACKAGE_DIR)):
            return prefix
    return None


def config_key(name: str, config: Any, module: str | None = None) -> str:
    """Cache key of ``config`` for the producer ``name`` (``"module.qualname"``); the code hash covers
    ``module`` (default: the module ``name`` starts with), see :func:`source_hash`."""
    module = _module_of(name) if module is None else module
    payload = json.dumps({"name": name, "config": _canonical(config), "source": source_hash(None, "results", module)},
                         sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


class _Unstorable(TypeError):
    pass


def _encode(value: Any, arrays: list[np.ndarray]) -> Any:
    """Tagged JSON of ``value``; arrays and NumPy scalars go to ``arrays`` (exact dtype and bits)."""
    if isinstance(value, enum.Enum):  # before str and int: a str- or int-valued Enum keeps its type
        return {"enum": f"{type(value).__module__}:{type(value).__qualname__}", "value": _encode(value.value, arrays)}
    if value is None or type(value) in (bool, str, int):
        return value
    if type(value) is float:
        return {"float": float.hex(value)}
    if type(value) is complex:
        return {"complex": [float.hex(value.real), float.hex(value.imag)]}
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        if arr.dtype.hasobject:
            raise _Unstorable(f"a NumPy array of dtype {arr.dtype} (objects) cannot be stored")
        arrays.append(arr)
        return {"array" if isinstance(value, np.ndarray) else "scalar": len(arrays) - 1}
    if type(value) is list:
        return {"list": [_encode(v, arrays) for v in value]}
    if type(value) is tuple:
        return {"tuple": [_encode(v, arrays) for v in value]}
    if type(value) is dict:
        return {"dict": [[_encode(k, arrays), _encode(v, arrays)] for k, v in value.items()]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        state = vars(value) if hasattr(value, "__dict__") else {
            f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return {"dataclass": f"{cls.__module__}:{cls.__qualname__}",
                "state": {k: _encode(v, arrays) for k, v in state.items()}}
    raise _Unstorable(f"a value of type {type(value).__module__}.{type(value).__qualname__} cannot be stored")


def _lookup_type(spec: str) -> type:
    """The class named ``module:qualname``; only htlib modules are imported, others must be loaded."""
    module, _, qualname = spec.partition(":")
    if module == "htlib" or module.startswith("htlib."):
        mod = importlib.import_module(module)
    elif module in sys.modules:
        mod = sys.modules[module]
    else:
        raise ValueError(f"entry names a type of the module {module!r}, which is not imported")
    obj = functools.reduce(getattr, qualname.split("."), mod)
    if not isinstance(obj, type) or obj.__module__ != module:
        raise ValueError(f"entry names {spec!r}, which is not a class defined there")
    return obj


def _decode(node: Any, arrays: Any) -> Any:
    if node is None or isinstance(node, (bool, int, str)):
        return node
    if not isinstance(node, dict) or len(node) not in (1, 2):
        raise ValueError("malformed entry structure")
    if "float" in node:
        return float.fromhex(node["float"])
    if "complex" in node:
        re_, im = node["complex"]
        return complex(float.fromhex(re_), float.fromhex(im))
    if "array" in node:
        return arrays[f"a{int(node['array'])}"]
    if "scalar" in node:
        return arrays[f"a{int(node['scalar'])}"][()]
    if "list" in node:
        return [_decode(v, arrays) for v in node["list"]]
    if "tuple" in node:
        return tuple(_decode(v, arrays) for v in node["tuple"])
    if "dict" in node:
        return {_decode(k, arrays): _decode(v, arrays) for k, v in node["dict"]}
    if "enum" in node:
        cls = _lookup_type(node["enum"])
        if not issubclass(cls, enum.Enum):
            raise ValueError(f"entry names {node['enum']!r}, which is not an Enum")
        return cls(_decode(node["value"], arrays))
    if "dataclass" in node:
        cls = _lookup_type(node["dataclass"])
        if not dataclasses.is_dataclass(cls):
            raise ValueError(f"entry names {node['dataclass']!r}, which is not a dataclass")
        state = {k: _decode(v, arrays) for k, v in node["state"].items()}
        if not {f.name for f in dataclasses.fields(cls)} <= set(state):
            raise ValueError(f"entry's fields of {node['dataclass']} do not match the class")
        obj = object.__new__(cls)  # like pickle: no __init__ ...
        for k, v in state.items():
            object.__setattr__(obj, k, v)
        post = getattr(cls, "__post_init__", None)
        if post is not None:  # ... but its own checks: an entry never serves a value its class would refuse
            try:
                post(obj)
            except Exception as err:
                raise ValueError(f"entry's {node['dataclass']} fails its own checks ({type(err).__name__}: "
                                 f"{str(err).splitlines()[0] if str(err) else ''})") from None
        return obj
    raise ValueError("malformed entry structure")


def _serialize(key: str, value: Any) -> bytes:
    arrays: list[np.ndarray] = []
    structure = json.dumps(_encode(value, arrays), separators=(",", ":")).encode()
    buf = io.BytesIO()
    np.savez(buf, structure=np.frombuffer(structure, dtype=np.uint8), **{f"a{i}": a for i, a in enumerate(arrays)})
    body = buf.getvalue()
    return MAGIC + key.encode() + b"\n" + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


MAX_EXPANSION = 2.0
"""Entries are written uncompressed: one whose archive declares more than this many times its own size (plus
:data:`EXPANSION_SLACK`) once decompressed is refused unread, never expanded (a 255-KiB entry could hold 256 MiB)."""
EXPANSION_SLACK = 1 << 20


def _check_expansion(body: bytes) -> None:
    """Refuse an archive whose members decompress to more than :data:`MAX_EXPANSION` times its size, or whose
    arrays' headers declare more bytes than their members hold (``zipfile`` stops each member at its declared size)."""
    import zipfile

    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        members = archive.infolist()
        total = sum(m.file_size for m in members)
        if total > MAX_EXPANSION * len(body) + EXPANSION_SLACK:
            raise ValueError(f"the entry's {len(body):,} bytes would expand to {total:,} (at most "
                             f"{MAX_EXPANSION:g} times its size is read)")
        for m in members:
            with archive.open(m) as member:
                fmt = np.lib.format
                readers = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}
                read = readers.get(fmt.read_magic(member))
                if read is None:  # format 3.0 (utf-8 field names): the total's cap alone
                    continue
                shape, _, dtype = read(member)
            if math.prod(shape) * dtype.itemsize > m.file_size:
                raise ValueError(f"array {m.filename} declares {math.prod(shape) * dtype.itemsize:,} bytes in a "
                                 f"member of {m.file_size:,}")


def _deserialize(key: str, blob: bytes) -> Any:
    head = len(MAGIC)
    if not blob.startswith(MAGIC):
        raise ValueError("not an htlib cache entry (bad header)")
    if blob[head:head + 65] != key.encode() + b"\n":
        raise ValueError("the entry belongs to another key")
    digest, body = blob[head + 65:head + 130], blob[head + 130:]
    if digest != hashlib.sha256(body).hexdigest().encode() + b"\n":
        raise ValueError("checksum mismatch")
    _check_expansion(body)
    with np.load(io.BytesIO(body), allow_pickle=False) as arrays:
        structure = json.loads(bytes(arrays["structure"]).decode())
        return _decode(structure, {name: arrays[name] for name in arrays.files if name != "structure"})


def _path(key: str) -> Path:
    return cache_dir() / key[:2] / f"{key}{SUFFIX}"


MISSING = _MISSING = object()  # what load returns for a key with no (valid) entry


def load(key: str) -> Any:
    """The cached value for ``key``, or :data:`MISSING`: a damaged entry is never served, it warns instead."""
    path = _path(key)
    try:
        blob = path.read_bytes()
    except FileNotFoundError:
        return _MISSING
    except Exception as err:  # a directory at the path, no permission, an I/O error
        warnings.warn(f"cache entry {path} cannot be read ({type(err).__name__}: {err}); recomputing",
                      CacheWarning, stacklevel=2)
        return _MISSING
    try:
        return _deserialize(key, blob)
    except Exception as err:
        warnings.warn(f"cache entry {path} is damaged ({type(err).__name__}: {err}); recomputing",
                      CacheWarning, stacklevel=2)
        return _MISSING


_CLEANED: set[Path] = set()


def _remove_stale_temps(root: Path) -> None:
    """Remove temp files that killed writes left behind (once per process and cache directory)."""
    if root in _CLEANED:
        return
    _CLEANED.add(root)
    now = time.time()
    for tmp in root.glob(f"*/{TEMP_PREFIX}*"):
        with contextlib.suppress(OSError):  # another process removed or still owns it
            if now - tmp.stat().st_mtime > STALE_TEMP_SECONDS:
                tmp.unlink()


def atomic_write(path: str | Path, data: bytes | str, *, encoding: str = "utf-8", durable: bool = True) -> Path:
    """Write ``data`` to ``path`` whole or not at all: into a temporary file beside it, then ``os.replace``.

    A kill, a full disk or a file-size limit mid-write leaves the previous file as it was (the temporary file is
    removed where the process lives on).  The file keeps the previous file's mode (else the umask's).  ``durable``:
    on disk (``fsync``) before it replaces the old one, so a power cut leaves one of the two, never an empty file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
    >>> atomic_write(target, "whole").read_text()
    'whole'
    """
    path = Path(path)
    blob = data.encode(encoding) if isinstance(data, str) else bytes(data)
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{TEMP_PREFIX}{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def store(key: str, value: Any) -> bool:
    """Write ``value`` atomically (temp file + rename); whether it was written (a failure warns, never raises)."""
    path = _path(key)
    tmp: str | None = None
    try:
        blob = _serialize(key, value)
        path.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_temps(path.parent.parent)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=TEMP_PREFIX, suffix=SUFFIX)
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
        os.replace(tmp, path)
        tmp = None
        return True
    except Exception as err:
        warnings.warn(f"result not cached: writing {path} failed ({type(err).__name__}: {err})",
                      CacheWarning, stacklevel=2)
        return False
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def cached_call(fn: Callable[[Any], Any], config: Any, *, use_cache: bool = True) -> Any:
    """``fn(config)``, served from the cache when the same (fn, config, code) ran before.

    Examples
    --------
    >>> import math
    >>> from htlib.cache import cached_call
    >>> cached_call(math.sqrt, 4.0, use_cache=False)
    2.0
    """
    if not use_cache:
        return fn(config)
    key = config_key(f"{fn.__module__}.{fn.__qualname__}", config, fn.__module__)
    value = load(key)
    if value is _MISSING:
        value = fn(config)
        store(key, value)
    return value

"""One declaration per chapter parameter: the ``Setup`` of a chapter, validated once (book tooling: it computes no
result, so it stays out of the result-cache key; a Setup's values are in it).

Each field, declared with :func:`param`, drives the notebook's ``parameters`` cell, ``htlib.run --list``, the
validation before any compute (a :class:`ParameterError` naming parameter, value and what is allowed) and the code,
which reads ``setup.x``.  Lists are stored as tuples (a Setup is hashable); ``int`` fields never truncate.

Examples
--------
>>> @dataclass(frozen=True)
... class Demo(SetupBase):
...     h: int = param(300, "rows", ge=10)
...     d: int = param(200, "columns (needs d ≤ h)", ge=10)
...     gammas: tuple[float, ...] = param([0.1, 0.5], "aspect ratios", gt=0, le=1)
...     def _check(self):
...         if self.d > self.h:
...             raise ParameterError(f"parameter 'd' must be <= h = {self.h}; got {self.d}")
>>> Demo(gammas=[0.2]).gammas
(0.2,)
>>> Demo(h=2.7)
Traceback (most recent call last):
...
htlib.params.ParameterError: parameter 'h' must be an integer ≥ 10; got 2.7
>>> print(Demo.parameters_cell())
h: int = 300                     # rows [≥ 10]
d: int = 200                     # columns (needs d ≤ h) [≥ 10]
gammas: list[float] = [0.1, 0.5]  # aspect ratios [each > 0, ≤ 1]
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import numbers
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator, Mapping

import numpy as np

__all__ = ["MIN_WIDTH", "ParameterError", "ParameterSpec", "param", "SetupBase", "SweepSetup", "INT_MAX", "check_executor",
           "Cost", "MEMORY_LIMIT", "TIME_LIMIT", "FLOP_RATE", "WORKER_MEMORY", "extend_setup"]

INT_MAX = 10**9
"""Largest magnitude of an ``int`` parameter unless its declaration says otherwise (far from int64 overflow)."""

MEMORY_LIMIT = 32 * 2**30
"""Bytes a chapter's Setup may imply at once (its largest arrays, all workers together): a workstation's memory."""

TIME_LIMIT = 30 * 86400.0
"""Seconds a chapter's Setup may imply on two idle cores: a month (``make paper``'s longest run, LeNet and MiniAlexNet
on all of CIFAR-10 at the paper's protocol, is estimated at about five days)."""

FLOP_RATE = 5e10
"""Floating-point operations per second of two idle one-thread workers in the estimates of :class:`Cost` (the spike
chapter's default runs count about 3e13 flops against about 6 minutes idle: 8e10)."""

WORKER_MEMORY = 350 * 2**20
"""Bytes of one pool worker process once it has imported torch, NumPy and SciPy (344 MiB measured), before any
array of its own: ``workers`` of them count against :data:`MEMORY_LIMIT`."""

MIN_WIDTH = 10
"""Fewest rows and columns of a trained layer whose spectrum a chapter reads: a 5 x 5 Gaussian matrix sometimes has
fewer than ``htlib.spectra.MIN_POSITIVE`` eigenvalues above the power-law floor."""

_META_KEY = "htlib_param"
_SCALARS = (bool, int, float, str)
_CELL_COMMENT_COLUMN = 33  # where the generated cell's comments start, when the code is shorter

@dataclass(frozen=True)
class Cost:
    """One part of a chapter's run as its Setup implies it: peak memory (bytes, all workers together) and time
    (seconds on two idle cores), and the parameters that set them.  Estimates from the sizes, to refuse a value
    that could never finish (:data:`MEMORY_LIMIT`, :data:`TIME_LIMIT`), not timings."""

    what: str
    parameters: tuple[str, ...]
    memory: float = 0.0
    seconds: float = 0.0

    def excess(self) -> str:
        """What exceeds a limit, in words ("" if nothing)."""
        over = []
        if self.memory > MEMORY_LIMIT:
            over.append(f"about {_size(self.memory)} of memory (the limit: {_size(MEMORY_LIMIT)})")
        if self.seconds > TIME_LIMIT:
            over.append(f"about {_duration(self.seconds)} on two idle cores (the limit: {_duration(TIME_LIMIT)})")
        return " and ".join(over)

def _size(b: float) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if b >= scale:
            return f"{b / scale:.3g} {unit}"
    return f"{b:.3g} bytes"

def _duration(s: float) -> str:
    for unit, scale in (("years", 365 * 86400.0), ("days", 86400.0), ("hours", 3600.0), ("minutes", 60.0)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s:.3g} s"

class ParameterError(ValueError):
    """A chapter parameter was unknown, mistyped or out of range."""

@dataclass(frozen=True)
class _Meta:
    doc: str
    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    choices: tuple | None = None
    each: bool = False
    min_len: int | None = None
    max_len: int | None = None
    is_dir: bool = False
    validator: Callable[[str, Any], Any] | None = None
    constraint: str | None = None

def param(default: Any, doc: str, *, gt: float | None = None, ge: float | None = None, lt: float | None = None,
          le: float | None = None, choices: typing.Iterable | None = None, each: bool = False,
          min_len: int | None = None, max_len: int | None = None, is_dir: bool = False,
          validator: Callable[[str, Any], Any] | None = None, constraint: str | None = None) -> Any:
    """Declare one field of a chapter's ``Setup``: its default, description and constraints.

    Parameters
    ----------
    default, doc
        The default (a list is stored as a tuple) and a one-line description without ``=``.
    gt, ge, lt, le, choices, each, min_len, max_len, is_dir
        Bounds and allowed values (of every element, on a list field), list length limits (``min_len`` 1 by
        default), ``""`` or an existing directory.
    validator, constraint
        A further check ``validator(name, value) -> value``, and the constraint text shown in the cell.

    Examples
    --------
    >>> @dataclass(frozen=True)
    ... class S(SetupBase):
    ...     seeds: int = param(3, "seeds per size", ge=1, le=20)
    >>> S(seeds=4).seeds
    4
    >>> S(seeds=0)
    Traceback (most recent call last):
    ...
    htlib.params.ParameterError: parameter 'seeds' must be an integer ≥ 1, ≤ 20; got 0
    """
    if isinstance(default, list):
        default = tuple(default)
    meta = _Meta(doc=doc, gt=gt, ge=ge, lt=lt, le=le, choices=None if choices is None else tuple(choices),
                 each=each, min_len=min_len, max_len=max_len, is_dir=is_dir, validator=validator,
                 constraint=constraint)
    return field(default=default, metadata={_META_KEY: meta})

def _fmt_number(x: float) -> str:
    return repr(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(x)

def _literal(value: Any) -> Any:
    """The value as a plain Python literal (tuples as lists): what papermill injects and JSON stores."""
    return [_literal(v) for v in value] if isinstance(value, (tuple, list)) else value

def _source(value: Any) -> str:
    """Python source of a literal; strings in double quotes like the hand-written cells."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_source(v) for v in value) + "]"
    return repr(value)

@dataclass(frozen=True)
class ParameterSpec:
    """One declared chapter parameter, as ``htlib.run --list`` prints it and the cell shows it; ``constraint`` is the
    text between the brackets of the cell's comment ("" when unconstrained)."""
    name: str
    type_name: str
    default: Any
    constraint: str
    description: str
    scalar: type = field(repr=False, compare=False, default=float)
    is_list: bool = field(repr=False, compare=False, default=False)
    meta: _Meta = field(repr=False, compare=False, default=_Meta(""))

    def describe(self) -> str:
        """``  name: type = default [constraint]  description`` (one line of the listing)."""
        extra = f" [{self.constraint}]" if self.constraint else ""
        return f"  {self.name}: {self.type_name} = {_source(self.default)}{extra}  {self.description}".rstrip()

    def cell_code(self) -> str:
        """``name: type = literal``, the code part of the parameters-cell line."""
        return f"{self.name}: {self.type_name} = {_source(self.default)}"

    def cell_comment(self) -> str:
        """``# description [constraint]``."""
        extra = f" [{self.constraint}]" if self.constraint else ""
        return f"# {self.description}{extra}"

    def _refuse(self, value: Any, what: str) -> ParameterError:
        return ParameterError(f"parameter {self.name!r} must be {what}; got {value!r}")

    def _allowed_scalar(self) -> str:
        kind = {bool: "True or False", int: "an integer", float: "a finite number", str: "a string"}[self.scalar]
        text = _constraint_text(self.meta, self.scalar, element=False)
        return f"{kind} {text}" if text else kind

    def _coerce_scalar(self, value: Any, shown: Any) -> Any:
        m, kind = self.meta, self.scalar
        what = self._allowed_scalar()
        if self.is_list:
            what = f"a list of {_plural(kind)}, each {_constraint_text(m, kind, element=False) or 'of that type'}"
        if kind is bool:
            if not isinstance(value, (bool, np.bool_)):
                raise self._refuse(shown, what)
            value = bool(value)
        elif kind is int:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
                raise self._refuse(shown, what)
            if not isinstance(value, numbers.Integral):
                v = float(value)
                if not (math.isfinite(v) and v.is_integer()):
                    raise self._refuse(shown, what)  # never truncated
                value = v
            value = int(value)
            cap = min(INT_MAX, m.le) if m.le is not None else INT_MAX
            floor = max(-INT_MAX, m.ge) if m.ge is not None else -INT_MAX
            if value > cap or value < floor:
                beyond = (value > cap and m.le is None) or (value < floor and m.ge is None)
                raise self._refuse(shown, f"{what} (integers are limited to ±{INT_MAX:.0e})" if beyond else what)
        elif kind is float:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
                raise self._refuse(shown, what)
            value = float(value)
            if not math.isfinite(value):
                raise self._refuse(shown, what)
        elif kind is str:
            if not isinstance(value, str):
                raise self._refuse(shown, what)
        if kind in (int, float):
            for bound, ok in ((m.gt, lambda b: value > b), (m.ge, lambda b: value >= b),
                              (m.lt, lambda b: value < b), (m.le, lambda b: value <= b)):
                if bound is not None and not ok(bound):
                    raise self._refuse(shown, what)
        if m.choices is not None and value not in m.choices:
            raise self._refuse(shown, what)
        if m.is_dir and value and not Path(value).expanduser().is_dir():
            raise self._refuse(shown, "\"\" or an existing directory")
        if m.validator is not None:
            value = m.validator(self.name, value)
        return value

    def coerce(self, value: Any) -> Any:
        """The value in the field's type (lists as tuples), or a :class:`ParameterError`."""
        if not self.is_list:
            return self._coerce_scalar(value, value)
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise self._refuse(value, f"a list of {_plural(self.scalar)}")
        m = self.meta
        lo = 1 if m.min_len is None else m.min_len
        if len(value) < lo or (m.max_len is not None and len(value) > m.max_len):
            span = f"at least {lo}" if m.max_len is None else f"{lo} to {m.max_len}"
            raise self._refuse(value, f"a list of {span} {_plural(self.scalar)}")
        return tuple(self._coerce_scalar(v, value) for v in value)

def _plural(kind: type) -> str:
    return {bool: "booleans", int: "integers", float: "numbers", str: "strings"}[kind]

def _constraint_text(m: _Meta, kind: type, *, element: bool) -> str:
    """The bracketed text of the cell's comment (``element``: prefix ``each`` for list fields)."""
    if m.constraint is not None:
        return m.constraint
    parts = []
    for bound, sym in ((m.gt, ">"), (m.ge, "≥"), (m.lt, "<"), (m.le, "≤")):
        if bound is not None:
            parts.append(f"{sym} {_fmt_number(bound)}")
    if m.choices is not None:
        parts.append("in {" + ", ".join(_source(c) for c in m.choices) + "}")
    if m.is_dir:
        parts.append("empty or an existing directory")
    text = ", ".join(parts)
    if element and text:
        text = f"each {text}"
    if element and (m.min_len not in (None, 1) or m.max_len is not None):
        lo = 1 if m.min_len is None else m.min_len
        length = f"{lo} to {m.max_len} entries" if m.max_len is not None else f"at least {lo} entries"
        text = f"{text}, {length}" if text else length
    return text

def _scalar_of(name: str, annotation: Any) -> tuple[type, bool]:
    """(scalar type, is a list) of a field annotation: a scalar or ``tuple[scalar, ...]``."""
    if annotation in _SCALARS:
        return annotation, False
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis and args[0] in _SCALARS:
        return args[0], True
    raise TypeError(f"Setup field {name!r}: type {annotation!r} is not one of bool, int, float, str or "
                    "tuple[<one of them>, ...]")

@dataclass(frozen=True)
class SetupBase:
    """Base of every chapter's ``Setup``: a frozen dataclass validated once, at construction (:meth:`_check`: rules
    between fields).

    Examples
    --------
    >>> @dataclass(frozen=True)
    ... class S(SetupBase):
    ...     eta: float = param(0.5, "learning rate", gt=0)
    ...     etas: tuple[float, ...] = param([0.1, 1.0], "rate grid", gt=0)
    >>> s = S(eta=2, etas=[1, 2])
    >>> s.eta, s.etas, hash(s) == hash(S(eta=2.0, etas=(1.0, 2.0)))
    (2.0, (1.0, 2.0), True)
    >>> s.differs_from_default()
    {'eta': 2.0, 'etas': [1.0, 2.0]}
    >>> S(eta=float("inf"))
    Traceback (most recent call last):
    ...
    htlib.params.ParameterError: parameter 'eta' must be a finite number > 0; got inf
    """
    _specs_cache: ClassVar[dict[type, list[ParameterSpec]]] = {}

    def __post_init__(self) -> None:
        for spec in self.parameters():
            object.__setattr__(self, spec.name, spec.coerce(getattr(self, spec.name)))
        self._check()
        self._check_costs()

    def _check(self) -> None:
        """Rules between fields; raise :class:`ParameterError` naming the parameter.  None by default."""

    def costs(self) -> list[Cost]:
        """The parts of the chapter's run whose memory or time grows with a size or count parameter; none by
        default."""
        return []

    def _all_costs(self) -> list[Cost]:
        """:meth:`costs` and the costs every Setup of its kind has (:class:`SweepSetup`: its worker processes)."""
        return self.costs()

    def check_environment(self) -> None:
        """What a run of this Setup needs of this machine (data files): ``htlib.run`` checks it before any compute;
        not at construction, so a Setup may describe a setting this machine lacks.  Nothing by default."""

    def _check_costs(self) -> None:
        """Refuse a Setup any of whose :meth:`costs` exceeds a limit, naming the parameter furthest above its
        default and the largest value of it that fits at the other settings."""
        for cost in self._all_costs():
            excess = cost.excess()
            if not excess:
                continue
            specs = {p.name: p for p in self.parameters()}
            def growth(name: str) -> float:
                value, default = getattr(self, name), specs[name].default
                value, default = (max(value), max(default)) if specs[name].is_list else (value, default)
                return float(value) / max(float(default), 1.0)
            name = max(cost.parameters, key=growth)
            changed = [n for n in cost.parameters if n != name and _literal(getattr(self, n)) != specs[n].default]
            values = ", ".join(f"{n} = {_source(_literal(getattr(self, n)))}" for n in [name, *changed])
            fit = self._largest_fitting(name, cost.what)
            allowed = f"; at the other settings {name} must be at most {fit}" if fit is not None else ""
            raise ParameterError(f"parameter {name!r} is too large: {values} would need {excess} for {cost.what}"
                                 f"{allowed}")

    def _largest_fitting(self, name: str, what: str) -> int | None:
        """The largest value of the int parameter ``name`` (bisection from 1) at which the cost ``what`` fits."""
        spec = next(p for p in self.parameters() if p.name == name)
        if spec.scalar is not int or spec.is_list:
            return None
        def fits(v: int) -> bool:
            probe = object.__new__(type(self))
            probe.__dict__.update(self.__dict__)
            object.__setattr__(probe, name, v)
            return not any(c.excess() for c in probe._all_costs() if c.what == what)
        lo, hi = 1, int(getattr(self, name))
        if not fits(lo):
            return None
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        return lo

    @classmethod
    def parameters(cls) -> list[ParameterSpec]:
        """The declared parameters: the subclass's own fields first, then inherited ones (executor last).

        Examples
        --------
        >>> [p.name for p in SweepSetup.parameters()]
        ['executor', 'workers']
        """
        if cls in SetupBase._specs_cache:
            return SetupBase._specs_cache[cls]
        if not dataclasses.is_dataclass(cls) or "__dataclass_fields__" not in cls.__dict__:
            raise TypeError(f"{cls.__name__} must be decorated with @dataclass(frozen=True)")
        hints = typing.get_type_hints(cls)
        by_name = {f.name: f for f in dataclasses.fields(cls)}
        order: list[str] = []
        for klass in cls.__mro__:
            for name in klass.__dict__.get("__annotations__", {}):
                if name in by_name and name not in order:
                    order.append(name)
        specs = []
        for name in order:
            f = by_name[name]
            meta = f.metadata.get(_META_KEY)
            if meta is None:
                raise TypeError(f"Setup field {name!r} of {cls.__name__} must be declared with param(...)")
            if "=" in meta.doc or "=" in (meta.constraint or ""):
                raise TypeError(f"Setup field {name!r}: its description may not contain '=' "
                                "(papermill reads the parameters cell line by line); write ≤, ≥ or words")
            if hasattr(SetupBase, name):
                raise TypeError(f"Setup field {name!r} shadows a method of SetupBase")
            scalar, is_list = _scalar_of(name, hints[name])
            if meta.each and not is_list:
                raise TypeError(f"Setup field {name!r}: each=True needs a tuple[...] field")
            if is_list != isinstance(f.default, tuple):
                raise TypeError(f"Setup field {name!r}: a {'list' if is_list else 'scalar'} field needs a "
                                f"{'list' if is_list else 'scalar'} default, got {f.default!r}")
            specs.append(ParameterSpec(
                name=name, type_name=f"list[{scalar.__name__}]" if is_list else scalar.__name__,
                default=_literal(f.default), constraint=_constraint_text(meta, scalar, element=is_list),
                description=meta.doc, scalar=scalar, is_list=is_list, meta=meta))
        SetupBase._specs_cache[cls] = specs
        return specs

    @classmethod
    def parameters_cell(cls) -> str:
        """The exact source of the notebook's ``parameters`` cell, generated from the declaration.

        Examples
        --------
        >>> print(SweepSetup.parameters_cell())
        executor: str = "process"        # where the sweeps run (a scheduler address: on that Dask cluster) ["serial", "process" or "tcp://host:port"]
        workers: int = 2                 # worker processes when executor is "process" [≥ 1, ≤ 256]
        """
        lines = []
        for spec in cls.parameters():
            code = spec.cell_code()
            pad = max(_CELL_COMMENT_COLUMN - len(code), 2)
            lines.append(f"{code}{' ' * pad}{spec.cell_comment()}")
        return "\n".join(lines)

    @classmethod
    def listing(cls) -> str:
        """What ``htlib.run --list`` prints: every parameter with its type, default and constraint."""
        return "valid parameters (name: type = default [constraint]):\n" + "\n".join(
            p.describe() for p in cls.parameters())

    @classmethod
    def from_namespace(cls, namespace: Mapping[str, Any]):
        """The Setup of the parameters cell's names in ``namespace`` (``globals()``); every field must be present.

        Examples
        --------
        >>> ns = {}
        >>> exec(SweepSetup.parameters_cell(), ns)
        >>> SweepSetup.from_namespace(ns) == SweepSetup()
        True
        """
        names = [p.name for p in cls.parameters()]
        missing = [n for n in names if n not in namespace]
        if missing:
            raise ParameterError(f"the parameters cell does not define {missing}; regenerate it with "
                                 f"{cls.__module__}.{cls.__qualname__}.parameters_cell()")
        return cls(**{n: namespace[n] for n in names})

    @classmethod
    def from_overrides(cls, overrides: Mapping[str, Any], base: SetupBase | None = None):
        """``base`` (default: the defaults) with ``overrides`` applied; an unknown name is a :class:`ParameterError`."""
        names = {p.name for p in cls.parameters()}
        unknown = [n for n in overrides if n not in names]
        if unknown:
            raise ParameterError(f"unknown parameter {unknown[0]!r}\n{cls.listing()}")
        return dataclasses.replace(base if base is not None else cls(), **overrides)

    def replace(self, **changes: Any):
        """A copy with ``changes`` applied and validated (:func:`dataclasses.replace`, unknown names refused).

        Examples
        --------
        >>> SweepSetup().replace(executor="serial").executor
        'serial'
        """
        return type(self).from_overrides(changes, base=self)

    def differs_from_default(self) -> dict[str, Any]:
        """``{name: value}`` of the fields that differ from the declared defaults, as plain literals."""
        return {p.name: _literal(getattr(self, p.name)) for p in self.parameters()
                if _literal(getattr(self, p.name)) != p.default}

    def literals(self) -> dict[str, Any]:
        """Every field as a plain literal (what a parameters cell would hold)."""
        return {p.name: _literal(getattr(self, p.name)) for p in self.parameters()}

def check_executor(name: str, value: str) -> str:
    """``value`` if it is ``"serial"``, ``"process"`` or a Dask scheduler address ``tcp://host:port``.

    Examples
    --------
    >>> check_executor("executor", "tcp://10.0.0.5:8786")
    'tcp://10.0.0.5:8786'
    >>> check_executor("executor", "threads")
    Traceback (most recent call last):
    ...
    htlib.params.ParameterError: parameter 'executor' must be "serial", "process" or a Dask scheduler address tcp://host:port; got 'threads'
    """
    from htlib.sweep import executor_kind
    try:
        executor_kind(value)
    except ValueError:
        raise ParameterError(f"parameter {name!r} must be \"serial\", \"process\" or a Dask scheduler address "
                             f"tcp://host:port; got {value!r}") from None
    return value

@dataclass(frozen=True)
class SweepSetup(SetupBase):
    """A :class:`SetupBase` with the one executor option of every chapter that runs sweeps.

    ``executor`` is ``"serial"``, ``"process"`` (``workers`` one-thread processes, the default) or a Dask scheduler
    ``tcp://host:port`` (results come back to the kernel and are cached there).

    Examples
    --------
    >>> s = SweepSetup(executor="serial")
    >>> with s.executor_context() as pool:
    ...     pool is None
    True
    """
    executor: str = param("process", "where the sweeps run (a scheduler address: on that Dask cluster)",
                          validator=check_executor, constraint='"serial", "process" or "tcp://host:port"')
    workers: int = param(2, 'worker processes when executor is "process"', ge=1, le=256)

    def _all_costs(self) -> list[Cost]:
        if self.executor != "process":
            return self.costs()
        return [Cost(f"the worker processes (about {_size(WORKER_MEMORY)} each once they have imported torch and "
                     "NumPy)", ("workers",), memory=self.workers * WORKER_MEMORY), *self.costs()]

    @contextlib.contextmanager
    def executor_context(self) -> Iterator[Any]:
        """The ``concurrent.futures`` executor of this Setup, closed on exit (:func:`htlib.sweep.executor_for`)."""
        from htlib.sweep import executor_for
        with executor_for(self.executor, self.workers) as pool:
            yield pool


def extend_setup(cls: type[SetupBase], *, costs: Callable[[Any], list[Cost]] | None = None,
                 check: Callable[[Any], None] | None = None, environment: Callable[[Any], None] | None = None) -> None:
    """Add a cost model (``costs(setup)``, after ``cls.costs()``), rules between fields (``check(setup)``, after
    ``cls._check()``) and checks of the machine (``environment(setup)``: :meth:`SetupBase.check_environment`) to a
    chapter's ``Setup`` from a module beside its ``compute.py``: that file is part of the result-cache key of the
    results it computes (:mod:`htlib.cache`), so a bound added there would recompute them.  The chapter's package
    imports that module, so every import of the Setup has them.  Idempotent."""
    done = cls.__dict__.get("_htlib_extended", set())
    if environment is not None and environment not in done:
        cls.check_environment = environment  # type: ignore[method-assign]
    if costs is not None and costs not in done:
        own_costs = cls.costs
        cls.costs = lambda self: [*own_costs(self), *costs(self)]  # type: ignore[method-assign]
    if check is not None and check not in done:
        own_check = cls._check
        def _check(self) -> None:
            own_check(self)
            check(self)
        cls._check = _check  # type: ignore[method-assign]
    cls._htlib_extended = done | {f for f in (costs, check, environment) if f is not None}  # type: ignore[attr-defined]

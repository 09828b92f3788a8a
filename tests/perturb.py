"""Round-off perturbations of a test's data: a verdict or label that a relative change of 1e-9 flips sits on an edge.

A test that asserts a verdict or a label read from fitted or trained data passes its data through :func:`stable`,
which reruns the reading on ``draws`` copies of the data with every float multiplied by ``1 + rel * N(0, 1)``
(elementwise, seeded) and fails unless every copy gives what the data gave.  Another processor rounds differently
by about this much; a verdict that moves under it passed or failed by the machine's rounding, not by its data.
"""

from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np

REL = 1e-9  # the relative size of a perturbation (a few hundred ulps of a double: any processor's rounding)
DRAWS = 3  # perturbed copies per check: a verdict on an edge flips in about half of them


def perturb(x, rng: np.random.Generator, rel: float = REL, keep: tuple[str, ...] = ()):
    """A copy of ``x`` with every float multiplied by ``1 + rel * N(0, 1)``, drawn from ``rng`` independently.

    Parameters
    ----------
    x : object
        Floats (Python or NumPy), float or complex arrays, and lists, tuples, dicts and dataclass instances holding
        them, nested to any depth.  Integers, booleans, strings, ``inf`` and ``nan`` stay as they are, as does any
        other object (returned as is, not copied).  Float32 data (a training run's) come back as float64: a change
        of 1e-9 is below float32's rounding (1.2e-7) and would vanish there.
    rng : numpy.random.Generator
        The source of the factors.
    rel : float
        The relative size of the perturbation.
    keep : tuple of str
        Names of dict keys and dataclass fields left unchanged at any depth: settings of a run (a grid, a cut-off)
        that the reading compares exactly, not values it measured.

    Returns
    -------
    object
        ``x`` perturbed; dataclass instances are shallow copies with their fields replaced (``__post_init__`` is
        not run again, frozen ones included).

    Examples
    --------
    >>> y = perturb({"a": [1.0, 2], "b": np.ones(2)}, np.random.default_rng(0))
    >>> y["a"][1], bool(np.all(np.abs(y["b"] - 1) < 1e-8)), bool(np.all(y["b"] != 1))
    (2, True, True)
    """
    def go(v):
        if isinstance(v, (bool, np.bool_, int, np.integer, str, bytes)) or v is None:
            return v
        if isinstance(v, (float, np.floating)):
            if not math.isfinite(v):
                return v
            x = float(v) * (1.0 + rel * rng.standard_normal())
            return type(v)(x) if np.finfo(type(v)).eps < rel else x  # float32 cannot hold the change: a float
        if isinstance(v, np.ndarray):
            if v.dtype.kind not in "fc":
                return v
            wide = v if np.finfo(v.dtype).eps < rel else v.astype(np.complex128 if v.dtype.kind == "c" else np.float64)
            return wide * (1.0 + rel * rng.standard_normal(v.shape))
        if isinstance(v, dict):
            return type(v)((k, w if k in keep else go(w)) for k, w in v.items())
        if isinstance(v, tuple) and hasattr(v, "_fields"):  # a named tuple
            return type(v)(*(getattr(v, f) if f in keep else go(getattr(v, f)) for f in v._fields))
        if isinstance(v, (list, tuple)):
            return type(v)(go(w) for w in v)
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            out = copy.copy(v)
            for f in dataclasses.fields(v):
                if f.name not in keep:
                    object.__setattr__(out, f.name, go(getattr(v, f.name)))
            return out
        return v

    return go(x)


def stable(fn, *args, draws: int = DRAWS, rel: float = REL, seed: int = 0, keep: tuple[str, ...] = (), **kwargs):
    """``fn(*args, **kwargs)``, after checking that ``draws`` perturbed copies of the arguments give the same.

    Parameters
    ----------
    fn : callable
        Reads a verdict or a label (or a tuple or dict of them) from the data; its result is compared with ``==``.
    *args, **kwargs
        The data, perturbed by :func:`perturb` (positional and keyword arguments alike).
    draws, rel, seed, keep
        How many perturbed copies, their relative size, the seed of the first (``seed + i`` for the ``i``-th) and
        the names :func:`perturb` leaves unchanged.

    Returns
    -------
    object
        ``fn`` of the unperturbed data, for the test to assert on.

    Raises
    ------
    AssertionError
        Naming every draw whose result differs from the unperturbed one, and what it gave.

    Examples
    --------
    >>> stable(lambda x: "high" if x > 1.0 else "low", 1.5)
    'high'
    >>> stable(lambda x: "high" if x > 1.0 else "low", 1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    AssertionError: the result 'low' changes under relative perturbations of 1e-09: draw 0 gives 'high'; ...
    """
    base = fn(*args, **kwargs)
    moved = []
    for i in range(draws):
        rng = np.random.default_rng(seed + i)
        got = fn(*perturb(args, rng, rel, keep), **perturb(kwargs, rng, rel, keep))
        if got != base:
            moved.append(f"draw {i} gives {got!r}")
    if moved:
        raise AssertionError(f"the result {base!r} changes under relative perturbations of {rel:g}: "
                             + "; ".join(moved))
    return base

"""Argument checks shared by every numerics module: each names the refused argument and states what is allowed."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def check_int(name: str, value: object, low: int = 0) -> int:
    """``value`` as an ``int`` that is ``>= low``; NumPy integers pass, floats and bools are refused."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def check_float(name: str, value: object, *, low: float | None = None, high: float | None = None,
                strict: bool = True, posinf: bool = False) -> float:
    """``value`` as a finite float in ``(low, high)`` (closed unless ``strict``; ``+inf`` if ``posinf``); no complex."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if posinf and v == math.inf:
        return v
    below = low is not None and (v <= low if strict else v < low)
    above = high is not None and (v >= high if strict else v > high)
    if not math.isfinite(v) or below or above:
        lo = "" if low is None else f"{'>' if strict else '>='} {low}"
        hi = "" if high is None else f"{'<' if strict else '<='} {high}"
        bounds = " and ".join(b for b in (lo, hi) if b)
        what = "finite" + (" (or +inf)" if posinf else "")
        raise ValueError(f"{name} must be {what}{' and ' + bounds if bounds else ''}, got {value!r}")
    return v


def check_ints(name: str, values: object, low: int = 0, *, min_len: int = 0) -> tuple[int, ...]:
    """A sequence of integers ``>= low`` (at least ``min_len``) as a tuple of ``int``; floats are refused.

    >>> check_ints("dims", [3, 2], 1, min_len=2)
    (3, 2)
    """
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ValueError(f"{name} must be a sequence of integers >= {low}, got {values!r}")
    items = list(values)
    if len(items) < min_len:
        raise ValueError(f"{name} must hold at least {min_len} integers >= {low}, got {values!r}")
    for v in items:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < low:
            raise ValueError(f"{name} must hold integers >= {low}, got {v!r} in {values!r}")
    return tuple(int(v) for v in items)


def to_numpy(x: Any, name: str, dtype: Any = np.float64) -> np.ndarray:
    """A NumPy copy of an array-like or a (detached, CPU) torch tensor, in ``dtype``; complex input is refused."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    try:
        raw = np.asarray(x)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be numeric array-like, got {type(x).__name__}") from err
    if np.iscomplexobj(raw):
        raise ValueError(f"{name} must be real, got complex values (dtype {raw.dtype}); "
                         "pass the real part, the modulus or a stacked real array explicitly")
    try:
        return np.array(raw, dtype=dtype)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be numeric array-like, got {type(x).__name__}") from err


def check_vector(name: str, x: Any, *, finite: bool = True, min_size: int = 1) -> np.ndarray:
    """``x`` flattened to a float64 vector of at least ``min_size`` values, all finite unless ``finite=False``."""
    arr = to_numpy(x, name).ravel()
    if arr.size < min_size:
        raise ValueError(f"{name} must hold at least {min_size} value(s), got {arr.size}")
    if finite and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} holds NaN or inf entries; only finite values are allowed")
    return arr


def check_matrix(name: str, a: Any, *, finite: bool = True, dtype: Any = np.float64) -> np.ndarray:
    """A 2-D, non-empty (and by default finite) matrix as a NumPy array in ``dtype``."""
    arr = to_numpy(a, name, dtype)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    if finite and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} holds NaN or inf entries; only finite values are allowed")
    return arr


def check_choice(name: str, value: object, allowed: tuple[str, ...]) -> str:
    """``value`` if it is one of ``allowed``; otherwise a message that lists them."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")
    return str(value)

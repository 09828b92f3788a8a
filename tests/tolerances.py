"""How far a measured number may move between machines before the regression calls it a change.

The one place where the regression's tolerances are written down (``tests/nbval_numbers.py`` applies
them; ``tests/portability.py`` measures the deviations they come from).  Only *decimals* are compared
within a tolerance; words, verdicts, phase labels, counts and table shapes are always compared exactly.
A decimal pair ``a``, ``b`` agrees when ``|a - b| <= atol + rtol * max(|a|, |b|) + q``, ``q`` being
the unit of the last printed digit (what printing adds near a rounding boundary).

Where each tolerance comes from
-------------------------------
Filled in from the portability measurements below.

Overriding one cell
-------------------
A cell whose numbers need another tolerance than its chapter's is listed in :data:`CELLS` by its cell id,
or carries the tolerance in its own metadata, with the reason:
``{"htlib": {"rtol": 0.05, "atol": 0.01, "integers": true, "reason": "..."}}``.  :func:`for_cell`
refuses an override without a reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

__all__ = ["Tolerance", "CLOSED_FORM", "SAFETY", "MEASURED", "CHAPTERS", "CELLS", "DEFAULT", "for_cell"]


@dataclass(frozen=True)
class Tolerance:
    """A relative and an absolute tolerance for the decimals of a cell, and where they come from.

    Parameters
    ----------
    rtol : float
        Relative tolerance, ``>= 0``.
    atol : float
        Absolute tolerance, ``>= 0`` (for numbers that scatter around zero).
    reason : str
        The quantity and the measurement the values come from.
    integers : bool
        Whether integers are measurements too (compared within ``rtol``/``atol``, without the
        printing allowance), not counts or labels compared exactly.  For a cell that prints counts
        taken from a chaotic run, or floats of 3 significant digits above 100.

    Examples
    --------
    >>> Tolerance(1e-9).describe()
    'rtol 1e-09'
    >>> Tolerance(-1)
    Traceback (most recent call last):
    ...
    ValueError: rtol must be a finite number >= 0, got -1
    """

    rtol: float
    atol: float = 0.0
    reason: str = ""
    integers: bool = False

    def __post_init__(self) -> None:
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")

    def describe(self) -> str:
        return (f"rtol {self.rtol:.3g}" + (f", atol {self.atol:.3g}" if self.atol else "")
                + (", integers too" if self.integers else ""))


CLOSED_FORM = Tolerance(
    1e-9, 1e-12,
    "closed forms, quadrature and seeded sampling without training: only the last bits of a float move")
"""Chapters and cells whose numbers are closed forms, quadratures or seeded draws (no training loop)."""

SAFETY = 10.0
"""How far beyond the largest deviation measured across arithmetic variants a chapter's tolerance sits."""

MEASURED: dict[str, float] = {
    "mp_baseline": 0.0,
    "phases": 0.0,
    "one_step_adam": 0.0,
    "spike_to_heavy_tail": 0.0,
    "generalization": 0.0,
    "htmp": 0.0,
    "linear_hessian": 0.0,
}
"""Per chapter, the largest relative deviation beyond the last printed digit (``needed rtol`` of
``tests/portability.py``) seen across the arithmetic variants; 0 where every variant reproduced the
reference digit for digit."""


def _measured(chapter: str, quantity: str) -> Tolerance:
    value = MEASURED[chapter]
    if value == 0.0:
        return Tolerance(CLOSED_FORM.rtol, CLOSED_FORM.atol, f"{quantity}; every variant reproduced the "
                         "reference digit for digit, so the closed-form tolerance")
    return Tolerance(SAFETY * value, 0.0, f"{quantity}; {SAFETY:g} x the largest deviation measured, {value:.2g}")


CHAPTERS: dict[str, Tolerance] = {
    "mp_baseline": CLOSED_FORM,
    "phases": CLOSED_FORM,
    "one_step_adam": _measured("one_step_adam", "one step of GD or Adam from seeded weights, seed means"),
    "spike_to_heavy_tail": _measured("spike_to_heavy_tail", "training runs, seed means"),
    "generalization": _measured("generalization", "training runs, seed means and rank correlations"),
    "htmp": _measured("htmp", "trained LeNet/MiniAlexNet layers: fitted exponents"),
    "linear_hessian": _measured("linear_hessian", "trained linear networks: Hessian spectra"),
}
"""The tolerance of each chapter's decimals (see the module docstring for the measurements)."""

DEFAULT = CLOSED_FORM
"""The tolerance of a notebook that is not a chapter of the book (fixtures, other notebooks)."""


CELLS: dict[tuple[str, str], Tolerance] = {}
"""Cells whose numbers need their own tolerance, keyed by ``(chapter, cell id)`` (the ``id`` of the cell
in the notebook; ``tests/test_regression_controls.py`` checks that each still exists)."""


def for_cell(chapter: str, metadata: Mapping | None = None, cell_id: str | None = None) -> Tolerance:
    """The tolerance of a code cell of ``chapter``: its metadata's override, else :data:`CELLS`', else the
    chapter's.

    Parameters
    ----------
    chapter : str
        Notebook stem (``"htmp"``); unknown names get :data:`DEFAULT`.
    metadata : mapping, optional
        The cell's metadata; ``metadata["htlib"]`` may hold ``rtol``, ``atol``, ``integers`` and a
        ``reason``.
    cell_id : str, optional
        The cell's ``id``, looked up in :data:`CELLS`.

    Examples
    --------
    >>> for_cell("no_such_chapter") is DEFAULT
    True
    >>> for_cell("x", {"htlib": {"rtol": 0.1, "reason": "a sign-like step"}}).rtol
    0.1
    """
    base = CELLS.get((chapter, cell_id)) or CHAPTERS.get(chapter, DEFAULT)
    own = dict((metadata or {}).get("htlib", {}) or {})
    keys = {"rtol", "atol", "integers"} & set(own)
    if not keys:
        return base
    reason = str(own.get("reason", "")).strip()
    if not reason:
        raise ValueError(f"a cell of {chapter} overrides {sorted(keys)} in its metadata 'htlib' without a "
                         "'reason': say which quantity needs it and which measurement gave the value")
    integers = own.get("integers", base.integers)
    if not isinstance(integers, bool):
        raise ValueError(f"'integers' in the metadata 'htlib' of a cell of {chapter} must be true or false, "
                         f"got {integers!r}")
    return Tolerance(float(own.get("rtol", base.rtol)), float(own.get("atol", base.atol)), reason, integers)

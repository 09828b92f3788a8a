"""How far a measured number may move between machines before the regression calls it a change.

The one place where the regression's tolerances are written down (``tests/nbval_numbers.py`` applies
them; ``tests/portability.py`` measures the deviations they come from).  Only *decimals* are compared
within a tolerance; words, verdicts, phase labels, counts and table shapes are always compared exactly.
A decimal pair ``a``, ``b`` agrees when ``|a - b| <= atol + rtol * max(|a|, |b|) + q``, ``q`` being
the unit of the last printed digit (what printing adds near a rounding boundary).

Where each tolerance comes from
-------------------------------
* **Closed forms, quadrature, seeded sampling** (:data:`CLOSED_FORM`, rtol 1e-9): only the last bits of
  a float move between machines, far below any printed digit.  The default of every chapter.
* **Training runs** (:func:`measured`): :data:`SAFETY` times the largest relative deviation that a cold
  rerun under other arithmetic showed, measured cell by cell with ``tests/portability.py``.  Only the
  cells that moved get one (:data:`CELLS`); the rest of the chapter stays at the closed-form tolerance,
  so that a 2% change of the numbers still fails in every chapter.  A seed median's tolerance is also
  a small fraction of its own seed-to-seed spread (htmp: kappa 25.5, seeds from 23 to 42).

Measured: cold runs (``HTLIB_CACHE_DIR`` empty), 2026-12-01, this repository's main at 590fa49, x86_64 with
AVX-512, 2 cores shared with five other sessions (load average 6-16 while they ran), torch 2.13.0+cpu
(MKL 2024.2, oneDNN 3.12), NumPy's OpenBLAS.  "identical" means every printed character equal to the
committed reference; "as printed" is the largest relative difference of two printed decimals, "beyond"
the part of it beyond one unit of the last printed digit (what the tolerance must cover).

====================  ======================================  ==========================================
chapter               variant (``tests/portability.py``)      result against the committed outputs
====================  ======================================  ==========================================
mp_baseline           default, threads1, avx2                 identical
phases                default, threads1, avx2                 identical
one_step_adam         default, threads1, avx2                 identical
one_step_adam         mkl-compatible                          cells 7, 14 moved one printed unit
                                                              (2.63 -> 2.629, 0.738 -> 0.739): as
                                                              printed 1.35e-3, beyond 0; the cells
                                                              of issue 20's fresh machine
one_step_adam         avx2-machine (1436053, 18:55)          cells 7, 14, 15: values near zero moved
                                                              up to 1.0e-7 absolute (3.65e-06 ->
                                                              3.55e-06, -1.49e-09 -> -6.85e-10): the
                                                              atol of ADAM_FIRST_STEP; the rest within
                                                              one printed unit
htmp                  avx2-machine                            cells 10, 12, 13, 20: LeNet batch-100
                                                              kappa median 25.48 -> 25.89, as printed
                                                              1.58e-2, beyond 1.54e-2; cell 16 one
                                                              printed unit; the rest identical
spike_to_heavy_tail   avx2-machine (2da2e29, 21:20)           cells 27, 28 (the review's eta sweep and the
                                                              claims read from it): +171.1 -> +150.5
                                                              (12%) at the largest eta, the rest within
                                                              1%; every other cell identical
linear_hessian        avx2-machine                            cell 9: Hutchinson z 1.148 -> 1.968 and
                                                              1.093 -> 0.465 (a z-score: absolute
                                                              0.82 of its unit); cell 13: 5.90e-16 ->
                                                              5.99e-16 (round-off, inside atol 1e-12);
                                                              the rest identical
====================  ======================================  ==========================================

Issue 20's fresh machine (same kind, other CPU) moved the same cells of one_step_adam, htmp (LeNet kappa
25.712 against 25.48, 0.9%) and linear_hessian, inside these deviations.  htmp and linear_hessian have been
rewritten since (every cell id changed): :data:`HTMP_TRAINED` and :data:`HUTCHINSON_Z` keep their
measurements but wait, unattached, for the new cells to be measured (``tests/portability.py htmp
avx2-machine``); until then those chapters are compared at the closed-form tolerance.  generalization and
spike_to_heavy_tail were not measured (a cold run under load takes over half an hour each).

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

__all__ = ["Tolerance", "CLOSED_FORM", "SAFETY", "measured", "CHAPTERS", "CELLS", "DEFAULT", "for_cell"]


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
    measured : float
        The relative deviation measured under other arithmetic that the tolerance is built from (0 for
        closed forms); the controls jitter the committed numbers by this much.

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
    measured: float = 0.0

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

SAFETY = 3.0
"""How far beyond the largest deviation measured across arithmetic variants a measured tolerance sits."""


def measured(deviation: float, quantity: str, source: str, *, integers: bool = False,
             absolute: float = 0.0) -> Tolerance:
    """The tolerance of a quantity whose printed value moved by ``deviation`` (relative, beyond the last
    printed digit) under other arithmetic: :data:`SAFETY` times it.

    ``absolute`` is the largest *absolute* move measured on values that scatter around zero (a loss drop
    of ``1e-9``, an interval endpoint next to 0), where a relative deviation means nothing; the
    tolerance's ``atol`` is :data:`SAFETY` times it (and never below :data:`CLOSED_FORM`'s).

    Examples
    --------
    >>> measured(0.01, "a trained net's exponent", "avx2-machine").rtol
    0.03
    >>> measured(0.01, "a KTA difference", "avx2-machine", absolute=1e-7).atol
    3e-07
    """
    return Tolerance(SAFETY * deviation, max(SAFETY * absolute, CLOSED_FORM.atol),
                     f"{quantity}: {SAFETY:g} x the deviation {deviation:.2g} measured"
                     + (f", and {SAFETY:g} x the absolute move {absolute:.2g} of values near zero" if absolute else "")
                     + f" ({source})", integers=integers, measured=deviation)


HTMP_TRAINED = measured(0.0154, "seed medians of kappa of LeNet layers trained at batch 100, and what is "
                        "glued from them", "avx2-machine, 2026-12-01", integers=True)
"""Measured on the LeNet cells of the previous HTMP chapter; to be attached to the rewritten chapter's trained
cells (listed in :data:`CELLS`) once they are measured again: the rewrite changed every cell id."""


CHAPTERS: dict[str, Tolerance] = {
    "mp_baseline": CLOSED_FORM,
    "phases": CLOSED_FORM,
    "one_step_adam": CLOSED_FORM,
    "spike_to_heavy_tail": CLOSED_FORM,
    "generalization": CLOSED_FORM,
    # The rewritten chapter's trained cells are not measured yet (HTMP_TRAINED named the old cells): strict
    # until they are, so that the 2% control still fails here.
    "htmp": CLOSED_FORM,
    "linear_hessian": CLOSED_FORM,
    "scoreboard": Tolerance(CLOSED_FORM.rtol, CLOSED_FORM.atol,
                            "reads the committed chapters' records: nothing is recomputed"),
}
"""The tolerance of each chapter's decimals outside the cells of :data:`CELLS`."""

DEFAULT = CLOSED_FORM
"""The tolerance of a notebook that is not a chapter of the book (fixtures, other notebooks)."""

HUTCHINSON_Z = Tolerance(
    0.0, 2.5,
    "the largest |Hutchinson - trace| / s.e. along the training of a linear net, a z-score whose unit is its own "
    "seed-to-seed spread: AVX2 arithmetic (avx2-machine, 2026-12-01) moved it by 0.82 (1.148 -> 1.968) and 0.63 "
    "(1.093 -> 0.465); 3 x 0.82.  An atol of 2.5 resolves nothing else of a cell: attach it only to a cell that "
    "shows this z alone",
    measured=0.0)
"""Measured on the previous linear-Hessian chapter (cell 343fd99e, gone in the rewrite, which glues the same z
as ``lh3_hz_*`` in a cell with the correlations); not attached until a cell shows the z alone."""

ADAM_FIRST_STEP = measured(
    1.35e-3, "seed means after one FB-Adam step, and the largest entry of its deviation from sign G0 (a sign-like "
    "step flips an entry whenever a gradient entry near zero changes in its last bit)",
    "MKL_CBWR=COMPATIBLE, 2026-12-01: 0.738 -> 0.739 and 2.63 -> 2.629, one unit of the last printed digit; "
    "taken as printed, not beyond the digit, because the flips are discrete.  avx2-machine, 2026-12-01: values "
    "that scatter around zero moved by up to 1.0e-7 (a KTA-difference interval endpoint 3.65e-06 -> 3.55e-06, a "
    "GD loss drop at eta 0.001 -1.49e-09 -> -6.85e-10): the float32 round-off of statistics of order one "
    "(2**-23 = 1.2e-7), so a relative tolerance cannot hold them",
    absolute=1.0e-7)

SPIKE_REVIEW = measured(
    0.12, "the review's learning-rate sweep of the spike chapter (10 FB-Adam steps up to eta = 10: the test-loss change "
    "in percent, the tail exponents) and the claim records read from it; at the largest rates the run is chaotic",
    "avx2-machine, 2026-12-01 (2da2e29, cold, load 8.9): +171.1% -> +150.5% at the largest eta, the rest of the two cells "
    "within 1%; every other cell of the chapter identical")

CELLS: dict[tuple[str, str], Tolerance] = {
    # The same seed means after one step as the measured cells 13192977 and ae42f97d of the chapter before its
    # rewrite: the Fig. 3 table, its glued numbers and the claim records built from them.
    # The robustness table (7a02e75e) shows the variants' records of the same claims cell.
    **{("one_step_adam", cell): ADAM_FIRST_STEP for cell in ("307f5e82", "c6b5f823", "afd4e3cb", "7a02e75e")},
    # The review table (d3ccde8b) and the claims built from it (6f0150a4).
    **{("spike_to_heavy_tail", cell): SPIKE_REVIEW for cell in ("d3ccde8b", "6f0150a4")},
}
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
    return Tolerance(float(own.get("rtol", base.rtol)), float(own.get("atol", base.atol)), reason, integers,
                     base.measured)

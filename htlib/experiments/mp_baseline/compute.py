"""The Marchenko-Pastur baseline chapter: ``W0``, other aspect ratios and a finite-size sweep against the MP law."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from htlib import spectra
from htlib.params import ParameterError, SetupBase, param
from htlib.random_matrices import MPComparison, MPSizeSweep, compare_with_mp, gaussian_matrix, mp_size_sweep

@dataclass(frozen=True)
class Setup(SetupBase):
    """The chapter's parameters (its ``parameters`` cell), validated once.

    Examples
    --------
    >>> Setup().d, Setup(h=600, d=400).gamma
    (1000, 0.6666666666666666)
    >>> Setup(d=2000)
    Traceback (most recent call last):
    ...
    htlib.params.ParameterError: parameter 'd' must be ≤ h = 1500 (MP of ratio d/h ≤ 1); got 2000
    """
    h: int = param(1500, "rows of W0 (the student width of Kothapalli et al.)", ge=spectra.MIN_POSITIVE, le=20_000)
    d: int = param(1000, "columns of W0 (the input dimension; needs d ≤ h)", ge=spectra.MIN_POSITIVE, le=20_000)
    seed: int = param(0, "seed of W0", ge=0)
    w0_draws: int = param(3, "independent draws of W0 at h x d that the MP row reads (seeds seed, seed + 1000, ...)",
                          ge=1, le=20)
    gammas: tuple[float, ...] = param([0.1, 0.25, 0.5, 0.9], "aspect ratios d/h of the comparison panels",
                                      gt=0, le=1, max_len=12)
    gamma_rows: int = param(2000, "rows of the matrices in the aspect-ratio panels", ge=spectra.MIN_POSITIVE,
                            le=20_000)
    sweep_rows: tuple[int, ...] = param([250, 500, 1000, 2000, 4000],
                                        "row counts of the finite-size sweep, at gamma d/h",
                                        ge=spectra.MIN_POSITIVE, le=20_000, min_len=2, max_len=12)
    sweep_seeds: int = param(3, "seeds per size in the finite-size sweep", ge=1, le=20)
    bins: int = param(80, "histogram bins", ge=10, le=1000)

    @property
    def gamma(self) -> float:
        """``d / h``, the aspect ratio of ``W0`` and of the finite-size sweep."""
        return self.d / self.h

    def _check(self) -> None:
        if self.d > self.h:
            raise ParameterError(f"parameter 'd' must be ≤ h = {self.h} (MP of ratio d/h ≤ 1); got {self.d}")
        least = spectra.MIN_POSITIVE
        for g in self.gammas:
            if max(1, round(g * self.gamma_rows)) < least:
                raise ParameterError(f"parameter 'gammas': gamma {g!r} x gamma_rows {self.gamma_rows} gives fewer "
                                     f"than {least} columns (the MP fit needs {least} eigenvalues); raise gamma_rows "
                                     f"or the ratio")
        for rows in self.sweep_rows:
            if max(1, round(self.gamma * rows)) < least:
                raise ParameterError(f"parameter 'sweep_rows': {rows} rows at gamma d/h {self.gamma:.3g} give fewer "
                                     f"than {least} columns (the MP fit needs {least} eigenvalues); got {list(self.sweep_rows)}")
        if len(set(self.sweep_rows)) < 2:
            raise ParameterError(f"parameter 'sweep_rows' needs two or more different sizes (the fitted slope); "
                                 f"got {list(self.sweep_rows)}")

PAPER = Setup()
"""The papers' setting: the defaults (W0 at Kothapalli et al.'s 1500 x 1000; the rest has no paper scale)."""

W0_SEED_STRIDE = 1000
"""Seed step between the draws of ``W0``, away from the panels' ``seed + 1, seed + 2, ...`` (no shared streams)."""

def w0_seeds(seed: int, draws: int) -> list[int]:
    """The seeds of the ``draws`` independent draws of ``W0``; the first is ``seed``, the chapter's ``W0``.

    Examples
    --------
    >>> w0_seeds(0, 3)
    [0, 1000, 2000]
    """
    return [seed + k * W0_SEED_STRIDE for k in range(draws)]

def w0_comparisons(h: int, d: int, seed: int, draws: int) -> list[MPComparison]:
    """:func:`htlib.random_matrices.compare_with_mp` of each draw of ``W0`` (``h x d``, seeds :func:`w0_seeds`)."""
    return [compare_with_mp(gaussian_matrix(h, d, seed=s)) for s in w0_seeds(seed, draws)]

@dataclass(frozen=True)
class GammaPanel:
    """One aspect-ratio panel: the MP comparison and the ESD of ``WᵀW/p``."""
    comparison: MPComparison
    eigs: np.ndarray

def gamma_panels(gammas: Sequence[float], rows: int, seed: int) -> list[GammaPanel]:
    """A ``rows x round(gamma rows)`` Gaussian matrix per ratio, seeded ``seed + 1 + i``."""
    out = []
    for i, g in enumerate(gammas):
        W = gaussian_matrix(rows, max(1, round(g * rows)), seed=seed + 1 + i)
        out.append(GammaPanel(compare_with_mp(W), spectra.esd(W, normalize="rows")))
    return out

@dataclass(frozen=True)
class SizeSweep:
    """The finite-size sweep (:class:`htlib.random_matrices.MPSizeSweep`), seed means, slope of log KS on log h."""
    raw: MPSizeSweep
    ks_mean: np.ndarray
    gap_abs: np.ndarray
    gap_tw: np.ndarray
    ks_slope: float

def size_sweep(rows: Sequence[int], gamma: float, seeds: int) -> SizeSweep:
    """The sweep over ``rows`` at ratio ``gamma``, seeds ``100, 101, ...``, with its :class:`SizeSweep` means."""
    s = mp_size_sweep(rows, gamma=gamma, seeds=list(range(100, 100 + seeds)))
    ks_mean = s.ks_distance.mean(axis=1)
    return SizeSweep(raw=s, ks_mean=ks_mean, gap_abs=np.abs(s.edge_gap).mean(axis=1),
                     gap_tw=np.abs(s.edge_gap_tw).mean(axis=1),
                     ks_slope=float(np.polyfit(np.log(s.p), np.log(ks_mean), 1)[0]))

"""Weight-matrix spectra: ESDs, power-law fits, the Marchenko-Pastur law, spikes and the 5+1 phases.

This module owns every spectral measurement of the book (conventions: REFERENCE §B):

- :func:`esd` -- the eigenvalues of ``WᵀW`` (squared singular values) in float64;
- :func:`mp_edges`, :func:`mp_density`, :func:`mp_cdf`, :func:`ks_distance_mp` -- the
  Marchenko-Pastur (MP) law of ``WᵀW/p`` for a ``p x q`` matrix, ``gamma = q/p <= 1``;
- :func:`fit_mp` -- fitted MP scale, bulk edge and the spikes beyond a Tracy-Widom margin;
- :func:`alpha_hill` and :func:`fit_power_law` -- WeightWatcher's ``PL_Alpha_Hill`` and
  ``PL_Alpha_KS`` (the "WWFit" Clauset-Shalizi-Newman scan, vectorized over all ``xmin``);
- :func:`layer_metrics` -- the per-layer values under their WeightWatcher names;
- :func:`classify_phase` -- the 5+1 phases of Martin & Mahoney (JMLR 2021) by explicit rules;
- :func:`overlaps`, :func:`kernel_target_alignment`, :func:`top_alignment` -- alignments.

Every function accepts NumPy arrays or torch tensors and returns float64 NumPy arrays or
Python floats.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg
import scipy.optimize

__all__ = [
    "PHASES",
    "MPFit",
    "PowerLawFit",
    "esd",
    "mp_edges",
    "mp_density",
    "mp_cdf",
    "mp_quantile",
    "ks_distance_mp",
    "tracy_widom_scale",
    "fit_mp",
    "alpha_hill",
    "fit_power_law",
    "layer_metrics",
    "metrics_from_esd",
    "PhaseTrial",
    "run_phase_trial",
    "classify_phase",
    "phase_diagnostics",
    "phase_example",
    "PHASE_EXAMPLES",
    "overlaps",
    "kernel_target_alignment",
    "top_alignment",
]

PHASES: tuple[str, ...] = (
    "random-like",
    "bleeding-out",
    "bulk+spikes",
    "bulk-decay",
    "heavy-tailed",
    "rank-collapse",
)
"""The 5+1 phases of Martin & Mahoney (2021), the values :func:`classify_phase` returns."""

EIG_FLOOR = 1e-5
"""WeightWatcher drops eigenvalues ``<= 1e-5`` before a power-law fit."""

MIN_POSITIVE = 5
"""Fewest positive eigenvalues any spectral fit accepts."""

TW_MARGIN = 4.0
"""Spike rule: an eigenvalue is a spike when it exceeds ``lambda_plus + TW_MARGIN * s_TW``."""

# Block size (float64 elements) of the vectorized KS scan: 512 KiB per temporary, cache-resident.
_KS_CHUNK_ELEMS = 1 << 16


# --------------------------------------------------------------------------- input checks


def _to_numpy(x: Any, name: str) -> np.ndarray:
    """Float64 NumPy copy of an array-like or torch tensor (no torch import needed)."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        x = x.detach().cpu()
        if hasattr(x, "double"):
            x = x.double()
        x = x.numpy()
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a real numeric array, got {type(x).__name__}") from exc
    return arr


def _check_matrix(W: Any, name: str = "W") -> np.ndarray:
    arr = _to_numpy(W, name)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got an array with ndim={arr.ndim}")
    if arr.size == 0:
        raise ValueError(f"{name} must be non-empty, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    return arr


def _check_eigs(eigs: Any, name: str = "eigs", *, min_positive: int = MIN_POSITIVE) -> np.ndarray:
    """Sorted float64 copy of a spectrum; tiny negative round-off is clipped to 0."""
    arr = _to_numpy(eigs, name)
    if arr.ndim != 1:
        arr = arr.reshape(-1) if arr.ndim == 0 else arr
        if arr.ndim != 1:
            raise ValueError(f"{name} must be a 1-D array of eigenvalues, got ndim={arr.ndim}")
    if arr.size == 0:
        raise ValueError(f"{name} must be non-empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    arr = np.sort(arr)
    top = float(np.max(np.abs(arr)))
    if top == 0.0:
        raise ValueError(f"{name} is all zeros; a spectrum needs positive eigenvalues")
    if arr[0] < -1e-8 * top:
        raise ValueError(f"{name} must be non-negative (eigenvalues of WᵀW); min is {arr[0]:.3g}")
    arr = np.maximum(arr, 0.0)
    npos = int(np.count_nonzero(arr > 0))
    if npos < min_positive:
        raise ValueError(f"{name} needs at least {min_positive} positive eigenvalues, got {npos}")
    return arr


def _check_gamma(gamma: float) -> float:
    g = float(gamma)
    if not (math.isfinite(g) and 0.0 < g <= 1.0):
        raise ValueError(f"gamma must be the aspect ratio q/p in (0, 1], got {gamma!r}")
    return g


def _check_sigma2(sigma2: float) -> float:
    s = float(sigma2)
    if not (math.isfinite(s) and s > 0.0):
        raise ValueError(f"sigma2 must be a finite value > 0, got {sigma2!r}")
    return s


# --------------------------------------------------------------------------- ESD


def esd(W: Any, *, normalize: str | None = None) -> np.ndarray:
    """Ascending eigenvalues of ``WᵀW`` (the squared singular values of ``W``), float64.

    The ``min(h, d)`` squared singular values are returned (for ``h < d`` the ``d - h``
    structural zeros of ``WᵀW`` are omitted, as in WeightWatcher).  Method: the Gram matrix
    of the smaller side is formed in float64 and diagonalized by a symmetric eigensolver
    (absolute accuracy ``~1e-16 * lambda_max``; round-off negatives are clipped to 0).  When
    the spectrum is so spread that this would swamp the lower half (the median eigenvalue is
    below ``1e-6 * lambda_max``: rank-collapsed or extremely heavy-tailed matrices), the
    values are recomputed from a float64 SVD, whose eigenvalue error is only
    ``~1e-16 * sigma_max * sigma_i``.

    Parameters
    ----------
    W : array_like or torch.Tensor, shape (h, d)
        The weight matrix (any real dtype; computed in float64 on the CPU).
    normalize : {None, "rows"}
        ``None`` returns the raw eigenvalues; ``"rows"`` divides them by ``h``, the row
        count (the ESD of ``WᵀW/p`` that the MP law describes for ``p = h >= d``).

    Returns
    -------
    np.ndarray, shape (min(h, d),)
        Eigenvalues sorted ascending.
    """
    if normalize not in (None, "rows"):
        raise ValueError(f"normalize must be None or 'rows', got {normalize!r}")
    A = _check_matrix(W)
    h, d = A.shape
    G = A.T @ A if h >= d else A @ A.T
    eigs = scipy.linalg.eigvalsh(G, overwrite_a=True, check_finite=False, driver="evd")
    eigs = np.maximum(np.asarray(eigs, dtype=np.float64), 0.0)
    if eigs[eigs.size // 2] < 1e-6 * eigs[-1]:
        sv = scipy.linalg.svdvals(A, check_finite=False)
        eigs = np.sort(np.square(sv))
    if normalize == "rows":
        eigs = eigs / float(h)
    return eigs


# --------------------------------------------------------------------------- Marchenko-Pastur


def mp_edges(gamma: float, sigma2: float = 1.0) -> tuple[float, float]:
    """Edges ``(lambda_minus, lambda_plus) = sigma2 (1 -+ sqrt(gamma))**2`` of the MP law.

    Parameters
    ----------
    gamma : float
        Aspect ratio ``q/p`` in (0, 1] of a ``p x q`` matrix (ESD of ``WᵀW/p``).
    sigma2 : float
        Entry variance, > 0.
    """
    g = _check_gamma(gamma)
    s = _check_sigma2(sigma2)
    r = math.sqrt(g)
    return s * (1.0 - r) ** 2, s * (1.0 + r) ** 2


def mp_density(x: Any, gamma: float, sigma2: float = 1.0) -> np.ndarray:
    """MP density ``sqrt((l+ - x)(x - l-)) / (2 pi sigma2 gamma x)`` on ``[l-, l+]``, 0 elsewhere."""
    lo, hi = mp_edges(gamma, sigma2)
    x = _to_numpy(x, "x")
    out = np.zeros_like(x, dtype=np.float64)
    inside = (x > lo) & (x < hi) & (x > 0)
    xi = x[inside]
    out[inside] = np.sqrt((hi - xi) * (xi - lo)) / (2.0 * np.pi * float(sigma2) * float(gamma) * xi)
    return out


def mp_cdf(x: Any, gamma: float, sigma2: float = 1.0) -> np.ndarray:
    """Closed-form MP distribution function ``F(x)`` (no atom for ``gamma <= 1``).

    With ``x = c + r cos(theta)``, ``c = sigma2 (1 + gamma)``, ``r = 2 sigma2 sqrt(gamma)``,
    ``F = 1 - G(theta) / (2 pi sigma2 gamma)`` where
    ``G = c theta - r sin(theta) - 2 sigma2 (1 - gamma) arctan(t tan(theta/2))`` and
    ``t = (1 - sqrt(gamma)) / (1 + sqrt(gamma))``.
    """
    g = _check_gamma(gamma)
    s = _check_sigma2(sigma2)
    x = _to_numpy(x, "x")
    c = s * (1.0 + g)
    r = 2.0 * s * math.sqrt(g)
    t = (1.0 - math.sqrt(g)) / (1.0 + math.sqrt(g))
    theta = np.arccos(np.clip((x - c) / r, -1.0, 1.0))
    with np.errstate(over="ignore", invalid="ignore"):
        half = np.tan(theta / 2.0)
        at = np.where(theta >= np.pi, np.pi / 2.0, np.arctan(t * half))
    G = c * theta - r * np.sin(theta) - 2.0 * s * (1.0 - g) * at
    F = 1.0 - G / (2.0 * np.pi * s * g)
    return np.clip(F, 0.0, 1.0)


@functools.lru_cache(maxsize=256)
def _mp_quantile_unit(q: float, gamma: float) -> float:
    lo, hi = mp_edges(gamma, 1.0)
    if q <= 0.0:
        return lo
    if q >= 1.0:
        return hi
    return float(scipy.optimize.brentq(lambda x: float(mp_cdf(np.array(x), gamma, 1.0)) - q, lo, hi, xtol=1e-14, rtol=1e-14))


def mp_quantile(q: float, gamma: float, sigma2: float = 1.0) -> float:
    """The ``q``-quantile of the MP law (``q`` in [0, 1]), by root finding on :func:`mp_cdf`."""
    qf = float(q)
    if not (0.0 <= qf <= 1.0):
        raise ValueError(f"q must be a probability in [0, 1], got {q!r}")
    return _check_sigma2(sigma2) * _mp_quantile_unit(qf, _check_gamma(gamma))


def ks_distance_mp(eigs: Any, gamma: float, sigma2: float = 1.0) -> float:
    """Kolmogorov-Smirnov distance ``sup |F_n - F_MP|`` between a spectrum and the MP law."""
    x = _check_eigs(eigs, min_positive=1)
    n = x.size
    F = mp_cdf(x, gamma, sigma2)
    k = np.arange(n, dtype=np.float64)
    return float(max(np.max((k + 1.0) / n - F), np.max(F - k / n)))


def tracy_widom_scale(p: float, q: float, sigma2: float = 1.0) -> float:
    """Tracy-Widom fluctuation scale of the top eigenvalue of ``WᵀW/p`` (Johnstone 2001).

    ``s_TW = sigma2 (sqrt(p) + sqrt(q)) (1/sqrt(p) + 1/sqrt(q))**(1/3) / p``, of order
    ``p**(-2/3)``; the largest null eigenvalue is ``lambda_plus + s_TW * TW1`` to leading order.
    """
    if not (p > 0 and q > 0):
        raise ValueError(f"p and q must be > 0, got p={p!r}, q={q!r}")
    sp, sq = math.sqrt(p), math.sqrt(q)
    return float(sigma2) * (sp + sq) * (1.0 / sp + 1.0 / sq) ** (1.0 / 3.0) / p


@dataclass(frozen=True)
class MPFit:
    """Result of :func:`fit_mp`.

    Attributes
    ----------
    sigma2 : float
        Fitted entry variance (the MP scale).
    lambda_plus, lambda_minus : float
        MP bulk edges for the fitted ``sigma2``.
    num_spikes : int
        Number of eigenvalues above ``lambda_plus + TW_MARGIN * tw_scale``.
    spikes : np.ndarray
        Those eigenvalues, ascending.
    tw_scale : float
        Tracy-Widom scale ``s_TW`` used for the margin.
    """

    sigma2: float
    lambda_plus: float
    lambda_minus: float
    num_spikes: int
    spikes: np.ndarray
    tw_scale: float = 0.0

    @property
    def threshold(self) -> float:
        """The spike threshold ``lambda_plus + TW_MARGIN * tw_scale``."""
        return self.lambda_plus + TW_MARGIN * self.tw_scale


def fit_mp(eigs: Any, gamma: float, *, max_iter: int = 20) -> MPFit:
    """Fit the MP scale ``sigma2`` to a spectrum and count the spikes beyond its edge.

    Rule (robust to spikes and tails, exact in the large-N limit for pure noise):

    1. ``sigma2`` is fitted by matching the median of the bulk to the MP median,
       ``sigma2 = median(bulk) / m(gamma)``, where ``m(gamma)`` is the median of MP(gamma, 1).
    2. The bulk edge is ``lambda_plus = sigma2 (1 + sqrt(gamma))**2``.
    3. Spikes are the eigenvalues above ``lambda_plus + TW_MARGIN * s_TW`` with ``TW_MARGIN = 4``
       and the Tracy-Widom scale ``s_TW`` of :func:`tracy_widom_scale` for ``q = len(eigs)``,
       ``p = q / gamma`` (``P(TW1 > 4)`` is below ``1e-3``: pure noise almost never shows a spike).
    4. The bulk is the spectrum without the spikes; steps 1-3 repeat until the spike count stops
       changing (at most ``max_iter`` times).

    Parameters
    ----------
    eigs : array_like
        Eigenvalues of ``WᵀW/p`` (any overall scale; ``sigma2`` absorbs it).
    gamma : float
        Aspect ratio ``q/p`` in (0, 1].
    """
    x = _check_eigs(eigs)
    g = _check_gamma(gamma)
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter!r}")
    q = float(x.size)
    p = q / g
    med_unit = _mp_quantile_unit(0.5, g)
    n_bulk = x.size
    for _ in range(int(max_iter)):
        sigma2 = float(np.median(x[:n_bulk])) / med_unit
        if sigma2 <= 0.0:
            raise ValueError("eigs: the median eigenvalue is 0; fit_mp needs a bulk (rank-collapsed spectrum?)")
        lo, hi = mp_edges(g, sigma2)
        tw = tracy_widom_scale(p, q, sigma2)
        new_bulk = int(np.searchsorted(x, hi + TW_MARGIN * tw, side="right"))
        if new_bulk == n_bulk:
            break
        n_bulk = max(new_bulk, 1)
    spikes = x[n_bulk:].copy()
    return MPFit(sigma2=sigma2, lambda_plus=hi, lambda_minus=lo, num_spikes=int(spikes.size), spikes=spikes,
                 tw_scale=tw)


# --------------------------------------------------------------------------- power laws


def alpha_hill(eigs: Any) -> float:
    """``PL_Alpha_Hill``: the Hill estimator at the median threshold (REFERENCE §B).

    With eigenvalues ascending and ``i = floor(N/2)``, ``m = N - i``:
    ``alpha = 1 + m / sum_{j >= i} ln(l_j / l_i)``.  Zeros are kept (as in the paper's code),
    but the threshold eigenvalue ``l_i`` must be positive.
    """
    x = _check_eigs(eigs)
    n = x.size
    i = n // 2
    if x[i] <= 0.0:
        raise ValueError("eigs: the median eigenvalue is 0; alpha_hill needs positive eigenvalues above the median")
    s = float(np.sum(np.log(x[i:] / x[i])))
    if s <= 0.0:
        raise ValueError("eigs: the upper half of the spectrum is constant; alpha_hill is undefined")
    return 1.0 + (n - i) / s


@dataclass(frozen=True)
class PowerLawFit:
    """Result of :func:`fit_power_law` (continuous power law ``p(x) ~ x^-alpha`` for ``x >= xmin``).

    Attributes
    ----------
    alpha : float
        Maximum-likelihood exponent (``PL_Alpha_KS`` when ``xmin`` was scanned).
    xmin : float
        Lower threshold of the tail.
    ks_distance : float
        KS distance ``D`` between the tail and the fitted law.
    n_tail : int
        Number of eigenvalues in the tail (``>= xmin``).
    sigma : float
        Standard error ``(alpha - 1) / sqrt(n_tail)``.
    n_fit : int
        Number of eigenvalues left after dropping ``<= 1e-5`` (and ``> xmax``).
    """

    alpha: float
    xmin: float
    ks_distance: float
    n_tail: int
    sigma: float
    n_fit: int = 0


def _ks_alphas(logx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``alpha_i`` for every candidate ``i = 0..N-2``, from one reverse cumulative sum (O(N)).

    Returns ``(alpha, b, ok)`` with ``b_i = 1 - alpha_i`` (0 where invalid) and ``ok`` the candidates
    with a finite ``alpha_i > 1`` (the others get ``D_i = 1``).
    """
    n = logx.size
    m = (n - np.arange(n - 1)).astype(np.float64)
    # reverse cumulative sums, accumulated from the top so short tails carry no large sums
    rc = np.cumsum(logx[::-1])[::-1]
    s = rc[:-1] - m * logx[:-1]
    valid = s > 0.0
    alpha = np.where(valid, 1.0 + m / np.where(valid, s, 1.0), np.inf)
    ok = valid & (alpha > 1.0)
    return alpha, np.where(ok, 1.0 - alpha, 0.0), ok


def _ks_exact(logx: np.ndarray, b: np.ndarray, ok: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Exact ``D_i`` for the (ascending) candidate indices ``rows``, in cache-sized blocks.

    Each block of rows is evaluated over the columns ``j >= min(rows)``; columns ``j < i`` are
    clipped to ``L_j - L_i = 0`` and ``k = 0``, where the term vanishes.
    """
    n = logx.size
    out = np.ones(rows.size)
    start = 0
    while start < rows.size:
        i0 = int(rows[start])
        width = n - i0
        stop = start + 1
        limit = max(1, _KS_CHUNK_ELEMS // width)
        while stop < rows.size and stop - start < limit:
            stop += 1
        r = rows[start:stop]
        delta = logx[None, i0:] - logx[r, None]
        np.maximum(delta, 0.0, out=delta)
        delta *= b[r, None]
        theo = np.expm1(delta, out=delta)  # -(1 - (x_j/x_i)^(1-alpha_i))
        kk = np.arange(i0, n, dtype=np.float64)[None, :] - r[:, None].astype(np.float64)
        np.maximum(kk, 0.0, out=kk)
        kk /= (n - r)[:, None].astype(np.float64)  # k/m
        theo += kk  # k/m - F_theo
        np.abs(theo, out=theo)
        out[start:stop] = np.where(ok[r], theo.max(axis=1), 1.0)
        start = stop
    return out


def _ks_lower(logx: np.ndarray, b: np.ndarray, ok: np.ndarray, cand: np.ndarray, grid: int) -> np.ndarray:
    """Lower bounds ``LB_i <= D_i`` for the candidates ``cand``: the maximum over ``grid`` evenly
    spaced ``k`` only (including ``k = 0`` and ``k = m - 1``)."""
    n = logx.size
    m = (n - cand).astype(np.float64)
    frac = np.linspace(0.0, 1.0, grid)
    lb = np.empty(cand.size)
    step = max(1, _KS_CHUNK_ELEMS // grid)
    for c0 in range(0, cand.size, step):
        c = cand[c0:c0 + step]
        mc = m[c0:c0 + step, None]
        k = np.floor(frac[None, :] * (mc - 1.0))
        j = c[:, None] + k.astype(np.intp)
        with np.errstate(over="ignore"):
            theo = np.expm1(b[c, None] * (logx[j] - logx[c, None]))
        lb[c0:c0 + step] = np.max(np.abs(theo + k / mc), axis=1)
    return np.where(ok[cand], lb, 1.0)


def _ks_scan(logx: np.ndarray, *, grids: tuple[int, ...] = (128, 1024), batch: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """All WWFit candidates ``i = 0..N-2`` (ascending ``logx``): ``alpha_i`` and ``D_i``.

    ``D_i = max_k |1 - exp((1 - alpha_i)(L_{i+k} - L_i)) - k/m|``.  Exact branch and bound:

    1. lower bounds ``LB_i <= D_i`` from ``grids[0]`` evenly spaced ``k`` per candidate;
    2. the exact ``D`` of the ``batch`` candidates with the smallest bounds gives a first ``best``;
    3. the candidates whose bound is still ``<= best`` get a finer bound (``grids[1]`` points),
       and so on for every grid;
    4. exact ``D_i`` in batches, in increasing bound order, until the next bound exceeds the
       smallest exact ``D`` found: no candidate left can reach it (``LB_i == best`` is still
       evaluated, so ties resolve as in the full scan).

    Entries of ``D`` never evaluated hold a lower bound strictly above the minimum, so
    ``argmin(D)`` is the same index, with the same value, as for the full ``O(N^2)`` scan.
    Memory stays ``O(N * block)``; no ``N x N`` array is formed.
    """
    alpha, b, ok = _ks_alphas(logx)
    n = logx.size
    if n - 1 <= 2 * grids[0]:
        return alpha, _ks_exact(logx, b, ok, np.arange(n - 1))
    cand = np.arange(n - 1)
    D = _ks_lower(logx, b, ok, cand, grids[0])
    exact = np.zeros(n - 1, dtype=bool)
    first = np.sort(np.argsort(D, kind="stable")[:batch])
    D[first] = _ks_exact(logx, b, ok, first)
    exact[first] = True
    best = float(D[first].min())
    for grid in grids[1:]:
        live = np.flatnonzero((D <= best) & ~exact)
        if live.size == 0:
            break
        D[live] = np.maximum(D[live], _ks_lower(logx, b, ok, live, grid))
    live = np.flatnonzero((D <= best) & ~exact)
    order = live[np.argsort(D[live], kind="stable")]
    pos = 0
    while pos < order.size and D[order[pos]] <= best:
        take = order[pos:pos + batch]
        rows = np.sort(take[D[take] <= best])
        D[rows] = _ks_exact(logx, b, ok, rows)
        best = min(best, float(D[rows].min()))
        pos += batch
    return alpha, D


def _ks_scan_full(logx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ``D_i`` exactly (O(N^2) flops in blocks); the reference for :func:`_ks_scan`."""
    alpha, b, ok = _ks_alphas(logx)
    return alpha, _ks_exact(logx, b, ok, np.arange(logx.size - 1))


def fit_power_law(eigs: Any, *, xmin: float | None = None, xmax: float | None = None) -> PowerLawFit:
    """Power-law tail fit of a spectrum, WeightWatcher's "WWFit" (``PL_Alpha_KS``), REFERENCE §B.

    Eigenvalues ``<= 1e-5`` are dropped first (as WeightWatcher does), and those ``> xmax`` when
    ``xmax`` is given.  With ``x_0 <= ... <= x_{N-1}`` left, for every candidate ``i = 0..N-2``
    (``m = N - i``)::

        alpha_i = 1 + m / sum_{j >= i} ln(x_j / x_i)
        D_i     = max_{k = 0..m-1} |1 - (x_{i+k} / x_i)^(1 - alpha_i) - k/m|

    with ``D_i = 1`` where ``alpha_i <= 1`` or the tail is constant (``alpha_i`` infinite).  The fit
    is the candidate of smallest ``D_i`` (the first one on ties).  All ``alpha_i`` come from one
    reverse cumulative sum; the smallest ``D_i`` is found by an exact branch and bound (lower
    bounds from 128, then 1024 evenly spaced ``k`` per candidate; exact, vectorized ``D_i`` only
    for the candidates whose bound is not above the best exact ``D`` so far; ``O(N * block)``
    memory, never ``N x N``), identical to the candidate-by-candidate loop up to round-off.

    With ``xmin`` given, only that threshold is fitted: the tail is ``x >= xmin`` and the formulas
    above use ``xmin`` itself in place of ``x_i`` (as ``powerlaw.Fit(data, xmin=xmin)`` does).

    Parameters
    ----------
    eigs : array_like
        Eigenvalues (any order).
    xmin : float, optional
        Fixed tail threshold (> 0).
    xmax : float, optional
        Upper cut-off: eigenvalues above it are dropped before fitting.

    Returns
    -------
    PowerLawFit
        ``alpha``, ``xmin``, ``ks_distance``, ``n_tail`` and ``sigma = (alpha - 1)/sqrt(n_tail)``.
    """
    x = _check_eigs(eigs)
    x = x[x > EIG_FLOOR]
    if xmax is not None:
        xm = float(xmax)
        if not (math.isfinite(xm) and xm > EIG_FLOOR):
            raise ValueError(f"xmax must be a finite value > {EIG_FLOOR}, got {xmax!r}")
        x = x[x <= xm]
    if x.size < MIN_POSITIVE:
        raise ValueError(
            f"eigs needs at least {MIN_POSITIVE} eigenvalues > {EIG_FLOOR} (and <= xmax) to fit a power law, got {x.size}"
        )
    n_fit = int(x.size)
    if xmin is not None:
        x0 = float(xmin)
        if not (math.isfinite(x0) and x0 > 0.0):
            raise ValueError(f"xmin must be a finite value > 0, got {xmin!r}")
        tail = x[x >= x0]
        m = tail.size
        if m < 2:
            raise ValueError(f"xmin={xmin!r} leaves {m} eigenvalue(s) in the tail; need at least 2")
        lr = np.log(tail / x0)
        s = float(np.sum(lr))
        if s <= 0.0:
            raise ValueError(f"xmin={xmin!r}: the tail is constant, alpha is undefined")
        alpha = 1.0 + m / s
        theo = -np.expm1((1.0 - alpha) * lr)
        D = float(np.max(np.abs(theo - np.arange(m) / m)))
        return PowerLawFit(alpha=alpha, xmin=x0, ks_distance=D, n_tail=int(m),
                           sigma=(alpha - 1.0) / math.sqrt(m), n_fit=n_fit)
    alphas, Ds = _ks_scan(np.log(x))
    i = int(np.argmin(Ds))
    alpha = float(alphas[i])
    m = n_fit - i
    return PowerLawFit(alpha=alpha, xmin=float(x[i]), ks_distance=float(Ds[i]), n_tail=int(m),
                       sigma=(alpha - 1.0) / math.sqrt(m), n_fit=n_fit)


# --------------------------------------------------------------------------- phases


ZERO_GAP_DECADES = 6.0
"""Rank-collapse rule: a jump of at least this many decades between consecutive eigenvalues."""

COLLAPSE_FRACTION = 0.10
"""Rank-collapse rule: at least this share of the eigenvalues lies below that jump."""

FEW_SPIKES_FRACTION = 0.01
"""At most ``max(3, 1% of N)`` eigenvalues beyond the MP edge count as isolated spikes."""

HEAVY_FRACTION = 0.05
"""Heavy-tailed rule: at least 5% of the eigenvalues lie beyond the MP edge ..."""

HEAVY_ALPHA = 4.0
"""... and the power-law tail is steep enough: ``PL_Alpha_KS < 4``."""

SEPARATION = 0.2
"""A spike is separated from the bulk when it exceeds ``(1 + SEPARATION) * lambda_plus``."""


def _zero_block(x: np.ndarray) -> int:
    """Number of eigenvalues below the highest jump of >= ``ZERO_GAP_DECADES`` decades (0 if none)."""
    top = x[-1]
    logs = np.log10(np.maximum(x, top * 1e-300))
    jumps = np.flatnonzero(np.diff(logs) >= ZERO_GAP_DECADES)
    return int(jumps[-1] + 1) if jumps.size else 0


def phase_diagnostics(eigs: Any, gamma: float) -> dict[str, Any]:
    """The quantities :func:`classify_phase` decides on, with the label (for reports and the book).

    Returns a dict with ``n``, ``n_zero`` (eigenvalues below a >= 6-decade jump),
    ``num_spikes`` and ``lambda_plus`` (from :func:`fit_mp`), ``frac_out = num_spikes / n``,
    ``max_over_edge = lambda_max / lambda_plus``, ``alpha`` (``PL_Alpha_KS``) and ``phase``.
    """
    x = _check_eigs(eigs)
    g = _check_gamma(gamma)
    n = x.size
    out: dict[str, Any] = {"n": n, "n_zero": _zero_block(x)}
    if out["n_zero"] >= COLLAPSE_FRACTION * n:
        out.update(num_spikes=None, lambda_plus=None, frac_out=None, max_over_edge=None, alpha=None,
                   phase="rank-collapse")
        return out
    mp = fit_mp(x, g)
    pl = fit_power_law(x)
    k = mp.num_spikes
    out.update(num_spikes=k, lambda_plus=mp.lambda_plus, frac_out=k / n, max_over_edge=float(x[-1] / mp.lambda_plus),
               alpha=pl.alpha)
    if k == 0:
        phase = "random-like"
    elif k / n >= HEAVY_FRACTION and pl.alpha < HEAVY_ALPHA:
        phase = "heavy-tailed"
    elif k > max(3.0, FEW_SPIKES_FRACTION * n):
        phase = "bulk-decay"
    elif x[-1] > (1.0 + SEPARATION) * mp.lambda_plus:
        phase = "bulk+spikes"
    else:
        phase = "bleeding-out"
    out["phase"] = phase
    return out


def classify_phase(eigs: Any, gamma: float) -> str:
    """Label a spectrum with one of the 5+1 phases of Martin & Mahoney (2021).

    ``eigs`` is the ESD of ``WᵀW/p`` (any overall scale) of a ``p x q`` matrix, ``gamma = q/p``.
    The rules, applied in this order (``N = len(eigs)``, MP fit by :func:`fit_mp`, whose spikes
    are the eigenvalues above ``lambda_plus + 4 s_TW``):

    1. ``"rank-collapse"``: at least 10% of the eigenvalues sit below a jump of at least
       6 decades between consecutive eigenvalues (exact or numerical zeros; scale-free, so a
       continuous heavy tail is never mistaken for zeros).
    2. ``"random-like"``: no eigenvalue beyond the MP edge plus the Tracy-Widom margin.
    3. ``"heavy-tailed"``: at least 5% of the eigenvalues lie beyond that edge and the
       power-law fit is steep, ``PL_Alpha_KS < 4`` (``< 2``: very heavy-tailed).
    4. ``"bulk-decay"``: more than ``max(3, 1% of N)`` eigenvalues beyond the edge (a tail
       decaying out of an MP bulk, not a few isolated spikes).
    5. ``"bulk+spikes"``: a few outliers, the largest separated from the bulk:
       ``lambda_max > 1.2 lambda_plus``.
    6. ``"bleeding-out"``: a few outliers, all hugging the edge (``lambda_max <= 1.2 lambda_plus``).

    The thresholds are module constants (``ZERO_GAP_DECADES``, ``COLLAPSE_FRACTION``,
    ``HEAVY_FRACTION``, ``HEAVY_ALPHA``, ``FEW_SPIKES_FRACTION``, ``SEPARATION``, ``TW_MARGIN``);
    :func:`phase_diagnostics` returns the quantities the rules use.
    """
    return str(phase_diagnostics(eigs, gamma)["phase"])


PHASE_EXAMPLES: dict[str, str] = {
    "random-like": "i.i.d. Gaussian entries",
    "bleeding-out": "Gaussian plus rank-one signals just above the BBP threshold (theta = 1.0, 1.05, 1.1, 1.15)",
    "bulk+spikes": "Gaussian plus rank-one signals of growing strength (theta = 1.5, 2.5, 4)",
    "bulk-decay": "entries |w| ~ Pareto(mu = 2.5) with random signs (tail index mu in (2, 4))",
    "heavy-tailed": "entries |w| ~ Pareto(mu = 1) with random signs (tail index mu in (0, 2))",
    "rank-collapse": "a low-rank product A B, A (h x r), B (r x d), r = d / 10",
}
"""The synthetic family :func:`phase_example` draws for each phase."""


def phase_example(phase: str, *, h: int = 1500, d: int = 1000, seed: int = 0,
                  mu: float | None = None, thetas: tuple[float, ...] | None = None) -> np.ndarray:
    """A synthetic ``h x d`` float64 matrix of the given phase (:data:`PHASE_EXAMPLES`).

    Spiked examples are ``G + sqrt(h) * sum_k theta_k u_k v_kᵀ`` with ``G`` standard Gaussian and
    orthonormal ``u_k``, ``v_k``: each ``theta_k`` above the BBP threshold ``gamma**(1/4)``
    (``gamma = d/h``) produces an outlier at ``(1 + theta²)(gamma + theta²)/theta²`` in the ESD of
    ``WᵀW/h``.  ``mu`` overrides the Pareto tail index, ``thetas`` the signal strengths.
    """
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, got {phase!r}")
    if not (isinstance(h, (int, np.integer)) and isinstance(d, (int, np.integer)) and h >= d >= 10):
        raise ValueError(f"h and d must be integers with h >= d >= 10, got h={h!r}, d={d!r}")
    rng = np.random.default_rng(seed)
    if phase in ("bulk-decay", "heavy-tailed"):
        m = float(mu) if mu is not None else (2.5 if phase == "bulk-decay" else 1.0)
        if not m > 0:
            raise ValueError(f"mu must be > 0, got {mu!r}")
        return (rng.pareto(m, (h, d)) + 1.0) * rng.choice(np.array([-1.0, 1.0]), (h, d))
    if phase == "rank-collapse":
        r = max(1, d // 10)
        return rng.standard_normal((h, r)) @ rng.standard_normal((r, d)) / math.sqrt(r)
    G = rng.standard_normal((h, d))
    if phase == "random-like":
        return G
    if thetas is None:
        thetas = (1.5, 2.5, 4.0) if phase == "bulk+spikes" else (1.0, 1.05, 1.1, 1.15)
    th = np.asarray(thetas, dtype=np.float64)
    if th.ndim != 1 or th.size == 0 or th.size > d or not np.all(th > 0):
        raise ValueError(f"thetas must be a non-empty sequence of values > 0, got {thetas!r}")
    U = np.linalg.qr(rng.standard_normal((h, th.size)))[0]
    V = np.linalg.qr(rng.standard_normal((d, th.size)))[0]
    return G + math.sqrt(h) * (U * th) @ V.T


# --------------------------------------------------------------------------- per-layer metrics


def layer_metrics(W: Any) -> dict[str, Any]:
    """WeightWatcher-named spectral metrics of one weight matrix ``W`` (h x d).

    Computed on the raw ESD ``l`` of ``WᵀW`` (:func:`esd`, ``min(h, d)`` values):

    - ``alpha``: ``PL_Alpha_KS`` of :func:`fit_power_law`; ``alpha_hill``: :func:`alpha_hill`;
    - ``alpha_weighted = alpha * log10(l_max)``; ``log_spectral_norm = log10(l_max)``;
    - ``stable_rank = sum(l) / l_max``; ``log_norm = log10(sum(l))``;
    - ``num_spikes``: :func:`fit_mp` on ``l / max(h, d)`` with ``gamma = min(h, d) / max(h, d)``;
    - ``mp_softrank = lambda_plus / l_max`` (both on that scale);
    - ``phase``: :func:`classify_phase` on the same normalized ESD.
    """
    A = _check_matrix(W)
    return metrics_from_esd(esd(A), *A.shape)


def metrics_from_esd(eigs: Any, h: int, d: int) -> dict[str, Any]:
    """:func:`layer_metrics` from an already computed raw ESD of an ``h x d`` matrix."""
    x = _check_eigs(eigs)
    if not (int(h) >= 1 and int(d) >= 1 and x.size == min(int(h), int(d))):
        raise ValueError(f"eigs must hold min(h, d) eigenvalues for h={h!r}, d={d!r}; got {x.size}")
    lmax = float(x[-1])
    total = float(np.sum(x))
    pl = fit_power_law(x)
    p, q = max(int(h), int(d)), min(int(h), int(d))
    g = q / p
    norm = x / p
    diag = phase_diagnostics(norm, g)
    mp = fit_mp(norm, g) if diag["num_spikes"] is not None else None
    return {
        "alpha": pl.alpha,
        "alpha_hill": alpha_hill(x),
        "alpha_weighted": pl.alpha * math.log10(lmax),
        "log_spectral_norm": math.log10(lmax),
        "stable_rank": total / lmax,
        "log_norm": math.log10(total),
        "num_spikes": int(mp.num_spikes) if mp is not None else 0,
        "mp_softrank": float(mp.lambda_plus / norm[-1]) if mp is not None else 0.0,
        "phase": diag["phase"],
    }


@dataclass(frozen=True)
class PhaseTrial:
    """One synthetic example of :func:`phase_example`: the phase it is drawn for, its size and seed."""

    phase: str
    h: int = 1500
    d: int = 1000
    seed: int = 0

    def __post_init__(self) -> None:
        if self.phase not in PHASES:
            raise ValueError(f"phase must be one of {PHASES}, got {self.phase!r}")
        if not (isinstance(self.h, int) and isinstance(self.d, int) and self.h >= self.d >= 10):
            raise ValueError(f"h and d must be integers with h >= d >= 10, got h={self.h!r}, d={self.d!r}")
        if not (isinstance(self.seed, int) and self.seed >= 0):
            raise ValueError(f"seed must be an integer >= 0, got {self.seed!r}")


def run_phase_trial(cfg: PhaseTrial) -> dict[str, Any]:
    """Draw ``phase_example(cfg)``, and return its ESD of ``WᵀW/h`` (``"eigs"``), the
    :func:`phase_diagnostics` (``"diagnostics"``), the :func:`fit_mp` scale (``"sigma2"``,
    ``None`` when rank-collapsed) and the :func:`layer_metrics` (``"metrics"``)."""
    W = phase_example(cfg.phase, h=cfg.h, d=cfg.d, seed=cfg.seed)
    raw = esd(W)
    eigs = raw / cfg.h
    g = cfg.d / cfg.h
    diag = phase_diagnostics(eigs, g)
    sigma2 = fit_mp(eigs, g).sigma2 if diag["num_spikes"] is not None else None
    return {"eigs": eigs, "diagnostics": diag, "sigma2": sigma2, "metrics": metrics_from_esd(raw, cfg.h, cfg.d)}


# --------------------------------------------------------------------------- alignments


def overlaps(J: Any, Q: Any) -> np.ndarray:
    """Squared overlaps ``(JᵀQ)∘2`` between two sets of column vectors.

    ``J`` (n x a) and ``Q`` (n x b), e.g. singular vectors; returns the ``a x b`` matrix of
    squared inner products, in [0, 1] for unit columns.
    """
    A = _check_matrix(J, "J")
    B = _check_matrix(Q, "Q")
    if A.shape[0] != B.shape[0]:
        raise ValueError(f"J and Q must have the same number of rows, got {A.shape[0]} and {B.shape[0]}")
    return np.square(A.T @ B)


def kernel_target_alignment(Z: Any, y: Any) -> float:
    """Uncentered kernel-target alignment of the linear kernel ``K = Z Zᵀ`` with ``Y Yᵀ``.

    ``KTA = <K, YYᵀ>_F / (||K||_F ||YYᵀ||_F) = ||ZᵀY||_F^2 / (||ZᵀZ||_F ||YᵀY||_F)``
    (Cristianini et al. 2002), computed from the ``d x d`` (or ``n x n`` if smaller) Gram,
    never an ``n x n`` matrix when ``n > d``.

    Parameters
    ----------
    Z : array_like, shape (n, d)
        Features.
    y : array_like, shape (n,) or (n, c)
        Targets.
    """
    Zn = _check_matrix(Z, "Z")
    Y = _to_numpy(y, "y")
    if Y.ndim == 1:
        Y = Y[:, None]
    if Y.ndim != 2 or Y.shape[0] != Zn.shape[0]:
        raise ValueError(f"y must have shape (n,) or (n, c) with n = {Zn.shape[0]}, got {Y.shape}")
    if not np.all(np.isfinite(Y)):
        raise ValueError("y must contain only finite values (found NaN or inf)")
    n, d = Zn.shape
    gram = Zn.T @ Zn if d <= n else Zn @ Zn.T
    kn = float(np.linalg.norm(gram))
    yn = float(np.linalg.norm(Y.T @ Y))
    if kn == 0.0 or yn == 0.0:
        raise ValueError("Z and y must be non-zero for the alignment to be defined")
    num = float(np.sum(np.square(Zn.T @ Y)))
    return num / (kn * yn)


def top_alignment(W: Any, beta: Any) -> float:
    """``|v1ᵀ beta|`` with ``v1`` the top right singular vector of ``W`` (h x d), ``beta`` in R^d.

    ``beta`` is used as given (unit norm gives a cosine in [0, 1]); ``v1`` is the top
    eigenvector of the float64 ``WᵀW``.
    """
    A = _check_matrix(W)
    b = _to_numpy(beta, "beta").reshape(-1)
    if b.size != A.shape[1]:
        raise ValueError(f"beta must have length d = {A.shape[1]}, got {b.size}")
    if not np.all(np.isfinite(b)):
        raise ValueError("beta must contain only finite values (found NaN or inf)")
    d = A.shape[1]
    G = A.T @ A
    _, v = scipy.linalg.eigh(G, subset_by_index=[d - 1, d - 1], check_finite=False)
    return float(abs(v[:, 0] @ b))

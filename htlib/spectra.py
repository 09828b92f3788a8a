"""Weight-matrix spectra: ESDs, power-law fits, the Marchenko-Pastur law, spikes and the 5+1 phases.

Every spectral measurement of the book: :func:`esd`, the MP law (:func:`mp_cdf`, :func:`fit_mp`), power-law fits
(:func:`alpha_hill`, :func:`fit_power_law`), the one spectrum report :func:`analyze_spectrum` (phase and heavy-tail
verdict), :func:`layer_metrics` and alignments.  Inputs may be NumPy arrays or torch tensors; outputs are float64.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg
import scipy.optimize
import scipy.stats

from htlib._checks import check_float, check_int, check_matrix, check_vector, to_numpy

__all__ = [
    "PHASES", "MPFit", "PowerLawFit", "PhaseRules", "PHASE_RULES", "SpectrumReport", "esd", "ESDModes", "esd_modes",
    "mp_edges", "mp_density", "mp_cdf", "mp_quantile", "ks_distance_mp", "tracy_widom_scale", "zero_block", "fit_mp",
    "alpha_hill", "fit_power_law", "power_law_vs_exponential", "top_outlier_pvalue", "analyze_spectrum", "classify_phase", "layer_metrics",
    "metrics_from_esd", "report_metrics", "overlaps", "kernel_target_alignment", "top_alignment",
]

PHASES: tuple[str, ...] = ("random-like", "bleeding-out", "bulk+spikes", "bulk-decay", "heavy-tailed", "rank-collapse")
"""The 5+1 phases of Martin & Mahoney (2021), the values :func:`classify_phase` returns."""

EIG_FLOOR = 1e-5
"""WeightWatcher drops eigenvalues ``<= 1e-5`` before a power-law fit."""

MIN_POSITIVE = 5
"""Fewest positive eigenvalues any spectral fit accepts."""

TW_MARGIN = 4.0
"""Spike rule: an eigenvalue is a spike when it exceeds ``lambda_plus + TW_MARGIN * s_TW``."""

# Block size (float64 elements) of the vectorized KS scan: 512 KiB per temporary, cache-resident.
_KS_CHUNK_ELEMS = 1 << 16


def _check_eigs(eigs: Any, name: str = "eigs", *, min_positive: int = MIN_POSITIVE) -> np.ndarray:
    """Sorted float64 copy of a spectrum (non-negative, not all zero); round-off negatives are clipped to 0."""
    arr = to_numpy(eigs, name)
    if arr.ndim == 0:
        arr = arr.reshape(-1)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of eigenvalues, got ndim={arr.ndim}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} holds NaN or inf entries; only finite values are allowed")
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
    """The MP aspect ratio ``q/p`` in ``(0, 1]``."""
    g = check_float("gamma", gamma, low=0.0)
    if g > 1.0:
        raise ValueError(f"gamma must be the aspect ratio q/p in (0, 1], got {gamma!r}")
    return g


def esd(W: Any, *, normalize: str | None = None) -> np.ndarray:
    """Ascending eigenvalues of ``WᵀW`` (the squared singular values of ``W``), float64.

    The ``min(h, d)`` values (no structural zeros, as in WeightWatcher), from a float64 symmetric eigensolver on the
    smaller Gram matrix; when the median is below ``1e-6 * lambda_max`` (rank-collapsed or very heavy-tailed) they
    are recomputed from a float64 SVD, accurate to ``~1e-16 * sigma_max * sigma_i``.

    Parameters
    ----------
    W : array_like or torch.Tensor, shape (h, d)
    normalize : {None, "rows"}
        ``"rows"`` divides by ``h`` (the ESD of ``WᵀW/p`` that the MP law describes).

    Returns
    -------
    numpy.ndarray
        The ``min(h, d)`` eigenvalues, ascending, float64 (divided by ``h`` with ``normalize="rows"``).

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.spectra import esd
    >>> W = np.random.default_rng(0).standard_normal((300, 200))
    >>> eigs = esd(W)
    >>> eigs.shape, bool(np.all(np.diff(eigs) >= 0))
    ((200,), True)
    >>> bool(np.isclose(eigs.sum(), np.sum(W ** 2)))   # trace of WᵀW = squared Frobenius norm
    True
    >>> bool(np.isclose(esd(W, normalize="rows")[-1], eigs[-1] / 300))
    True
    """
    if normalize not in (None, "rows"):
        raise ValueError(f"normalize must be None or 'rows', got {normalize!r}")
    A = check_matrix("W", W)
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


@dataclass(frozen=True)
class ESDModes:
    """The modes of a kernel density estimate of ``log10`` of the eigenvalues (:func:`esd_modes`).

    ``locations`` (``log10 lambda`` of each mode, ascending), ``masses`` (fraction of the eigenvalues in each
    mode's basin), ``dip`` (density at the deepest antimode between the two heaviest modes over the lower of their
    peaks; NaN with fewer than two modes) and the kernel ``bandwidth`` in decades.

    Attributes
    ----------
    locations : numpy.ndarray
        ``log10 lambda`` of each mode, ascending.
    masses : numpy.ndarray
        Fraction of the eigenvalues in each mode's basin.
    dip : float
        Deepest antimode between the two heaviest modes over the lower of their peaks (NaN with one mode).
    bandwidth : float
        Kernel bandwidth in decades.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.spectra import esd_modes
    >>> m = esd_modes(10 ** np.random.default_rng(1).normal(1.0, 0.2, 1000))   # one mode at 10
    >>> m.count, round(float(m.locations[0]), 1), round(float(m.masses.sum()), 2)
    (1, 1.0, 1.0)
    """
    locations: np.ndarray
    masses: np.ndarray
    dip: float
    bandwidth: float

    @property
    def count(self) -> int:
        """Number of counted modes."""
        return int(self.locations.size)


def esd_modes(eigs: Any, *, min_mass: float = 0.1, grid: int = 2048) -> ESDModes:
    """The modes of the ESD on a ``log10`` axis, each holding at least ``min_mass`` of the eigenvalues.

    A Gaussian KDE (Scott's bandwidth) of ``log10 lambda`` is split at its local minima into basins; a basin holding
    ``>= min_mass`` (in ``(0, 0.5]``) is a mode, so a detached spike never is.  Two or more modes is "bimodal".
    ``grid`` (``>= 64``) is the number of evaluation points.

    Parameters
    ----------
    eigs : array_like
        Non-negative eigenvalues (at least 5 positive).
    min_mass : float, default 0.1
        Smallest fraction of the eigenvalues a basin must hold to count as a mode, in ``(0, 0.5]``.
    grid : int, default 2048
        Number of evaluation points of the density.

    Returns
    -------
    ESDModes
        Locations, masses, dip and bandwidth of the modes.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> esd_modes(10 ** rng.normal(0, 0.3, 2000)).count
    1
    >>> two = np.concatenate([10 ** rng.normal(0, 0.2, 1000), 10 ** rng.normal(2, 0.2, 1000)])
    >>> m = esd_modes(two)
    >>> m.count, bool(m.dip < 0.1)
    (2, True)
    """
    import scipy.stats

    x = _check_eigs(eigs)
    min_mass = check_float("min_mass", min_mass, low=0.0, high=0.5, strict=False)
    if min_mass <= 0:
        raise ValueError(f"min_mass must be in (0, 0.5], got {min_mass!r}")
    if int(grid) != grid or grid < 64:
        raise ValueError(f"grid must be an integer >= 64, got {grid!r}")
    logx = np.log10(x[x > 0])
    kde = scipy.stats.gaussian_kde(logx)
    bw = float(np.sqrt(kde.covariance[0, 0]))
    t = np.linspace(logx.min() - 3 * bw, logx.max() + 3 * bw, int(grid))
    f = kde(t)
    interior = np.arange(1, t.size - 1)
    minima = interior[(f[1:-1] < f[:-2]) & (f[1:-1] <= f[2:])]
    cuts = np.concatenate([[0], minima, [t.size - 1]])
    cdf = np.concatenate([[0.0], np.cumsum((f[1:] + f[:-1]) / 2 * np.diff(t))])
    cdf /= cdf[-1]
    basins = [(lo, hi) for lo, hi in zip(cuts[:-1], cuts[1:]) if cdf[hi] - cdf[lo] >= min_mass]
    peaks = np.array([lo + int(np.argmax(f[lo:hi + 1])) for lo, hi in basins], dtype=int)
    masses = np.array([cdf[hi] - cdf[lo] for lo, hi in basins])
    dip = math.nan
    if peaks.size >= 2:
        a, b = sorted(peaks[np.argsort(masses)[-2:]])
        dip = float(f[a:b + 1].min() / min(f[a], f[b]))
    return ESDModes(locations=t[peaks], masses=masses, dip=dip, bandwidth=bw)


def mp_edges(gamma: float, sigma2: float = 1.0) -> tuple[float, float]:
    """Edges ``(lambda_minus, lambda_plus) = sigma2 (1 -+ sqrt(gamma))**2`` of the MP law, ``gamma = q/p`` in (0, 1].

    Parameters
    ----------
    gamma : float
        Aspect ratio ``q / p`` in ``(0, 1]``.
    sigma2 : float, default 1.0
        Entry variance.

    Returns
    -------
    tuple of float
        ``(lambda_minus, lambda_plus)``.

    Examples
    --------
    >>> from htlib.spectra import mp_edges
    >>> lo, hi = mp_edges(0.25)       # (1 -+ 1/2)**2
    >>> round(lo, 4), round(hi, 4)
    (0.25, 2.25)
    >>> lo, hi = mp_edges(1.0, sigma2=2.0)   # square case: the bulk reaches 0
    >>> round(lo, 4), round(hi, 4)
    (0.0, 8.0)
    """
    g = _check_gamma(gamma)
    s = check_float("sigma2", sigma2, low=0.0)
    r = math.sqrt(g)
    return s * (1.0 - r) ** 2, s * (1.0 + r) ** 2


def mp_density(x: Any, gamma: float, sigma2: float = 1.0) -> np.ndarray:
    """MP density ``sqrt((l+ - x)(x - l-)) / (2 pi sigma2 gamma x)`` on ``[l-, l+]``, 0 elsewhere.

    Parameters
    ----------
    x : array_like
        Points at which to evaluate the density.
    gamma : float
        Aspect ratio ``q / p`` in ``(0, 1]``.
    sigma2 : float, default 1.0
        Entry variance.

    Returns
    -------
    numpy.ndarray
        The density at ``x``, float64, same shape.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.integrate import quad
    >>> from htlib.spectra import mp_density, mp_edges
    >>> lo, hi = mp_edges(0.5)
    >>> total, _ = quad(lambda t: float(mp_density(np.array([t]), 0.5)[0]), lo, hi)
    >>> round(total, 4)          # a probability density
    1.0
    >>> mean, _ = quad(lambda t: t * float(mp_density(np.array([t]), 0.5)[0]), lo, hi)
    >>> round(mean, 4)           # its mean is sigma2 = 1
    1.0
    >>> mp_density(np.array([0.0, 10.0]), 0.5).tolist()   # zero outside the edges
    [0.0, 0.0]
    """
    lo, hi = mp_edges(gamma, sigma2)
    x = to_numpy(x, "x")
    out = np.zeros_like(x, dtype=np.float64)
    inside = (x > lo) & (x < hi) & (x > 0)
    xi = x[inside]
    out[inside] = np.sqrt((hi - xi) * (xi - lo)) / (2.0 * np.pi * float(sigma2) * float(gamma) * xi)
    return out


_MP_SERIES_MAX_ROOT = 0.5
""":func:`mp_cdf` sums a Fourier series for ``sqrt(gamma) <= 0.5``; the closed form above."""


def mp_cdf(x: Any, gamma: float, sigma2: float = 1.0) -> np.ndarray:
    """Marchenko-Pastur distribution function ``F(x)`` (no atom for ``gamma <= 1``), float64; NaN gives NaN.

    With ``x = sigma2 (1 + gamma + 2 u cos(theta))``, ``u = sqrt(gamma)``, ``t = (1 - u) / (1 + u)``, for
    ``u > 0.5`` the closed form ``F = 1 - G(theta) / (2 pi gamma)``,
    ``G = (1 + gamma) theta - 2 u sin(theta) - 2 (1 - gamma) arctan(t tan(theta/2))``.  It cancels terms of order ``1/gamma``, so for ``u <= 0.5`` the integral is summed
    through the Poisson-kernel series instead (terms down to 1e-17; exact as ``gamma -> 0``).

    Parameters
    ----------
    x : array_like
        Points at which to evaluate ``F``.
    gamma : float
        Aspect ratio ``q / p`` in ``(0, 1]``.
    sigma2 : float, default 1.0
        Entry variance.

    Returns
    -------
    numpy.ndarray
        ``F(x)`` in ``[0, 1]``, float64, same shape as ``x``.

    Examples
    --------
    >>> from htlib.spectra import mp_cdf
    >>> round(float(mp_cdf(1.0, 1e-17)), 6)   # the middle of a law of width 1.3e-8 around 1
    0.5
    >>> float(mp_cdf(0.5, 1e-17))
    0.0
    """
    g = _check_gamma(gamma)
    s = check_float("sigma2", sigma2, low=0.0)
    x = to_numpy(x, "x")
    u = math.sqrt(g)
    with np.errstate(invalid="ignore"):
        theta = np.arccos(np.clip((x / s - 1.0 - g) / (2.0 * u), -1.0, 1.0))
    if u <= _MP_SERIES_MAX_ROOT:
        n_terms = max(2, math.ceil(-17.0 / math.log10(u)))
        th = theta.reshape(-1, 1)
        m = np.arange(1, n_terms + 3)
        c = np.concatenate([np.pi - th, -np.sin(m * th) / m], axis=1)  # int_theta^pi cos(m phi)
        n = np.arange(1, n_terms + 1)
        j = 0.5 * c[:, n] - 0.25 * (c[:, n + 2] + c[:, np.abs(n - 2)])  # int_theta^pi sin^2 cos(n phi)
        s0 = 0.5 * (np.pi - th[:, 0]) + 0.25 * np.sin(2.0 * th[:, 0])
        F = (2.0 / np.pi) * (s0 + 2.0 * (j @ (-u) ** n)) / (1.0 - g)
        F = F.reshape(theta.shape)
    else:
        t = (1.0 - u) / (1.0 + u)
        with np.errstate(over="ignore", invalid="ignore"):
            at = np.where(theta >= np.pi, np.pi / 2.0, np.arctan(t * np.tan(theta / 2.0)))
        G = (1.0 + g) * theta - 2.0 * u * np.sin(theta) - 2.0 * (1.0 - g) * at
        F = 1.0 - G / (2.0 * np.pi * g)
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
    """The ``q``-quantile of the MP law (``q`` in [0, 1]), by root finding on :func:`mp_cdf`.

    Parameters
    ----------
    q : float
        Probability in ``[0, 1]``.
    gamma : float
        Aspect ratio ``q / p`` in ``(0, 1]``.
    sigma2 : float, default 1.0
        Entry variance.

    Returns
    -------
    float
        The ``x`` with ``mp_cdf(x) = q``; the edges for ``q = 0`` and ``q = 1``.

    Examples
    --------
    >>> from htlib.spectra import mp_cdf, mp_edges, mp_quantile
    >>> med = mp_quantile(0.5, 0.25)
    >>> round(float(mp_cdf(med, 0.25)), 6)     # the inverse of mp_cdf
    0.5
    >>> round(mp_quantile(1.0, 0.25, sigma2=2.0), 4) == round(mp_edges(0.25, 2.0)[1], 4)
    True
    """
    qf = check_float("q", q, low=0.0, high=1.0, strict=False)
    return check_float("sigma2", sigma2, low=0.0) * _mp_quantile_unit(qf, _check_gamma(gamma))


def ks_distance_mp(eigs: Any, gamma: float, sigma2: float = 1.0) -> float:
    """Kolmogorov-Smirnov distance ``sup |F_n - F_MP|`` between a spectrum and the MP law.

    Parameters
    ----------
    eigs : array_like
        Eigenvalues of ``WᵀW/p``.
    gamma : float
        Aspect ratio ``q / p`` in ``(0, 1]``.
    sigma2 : float, default 1.0
        Entry variance of the MP law.

    Returns
    -------
    float
        The KS distance, in ``[0, 1]``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.spectra import esd, ks_distance_mp
    >>> W = np.random.default_rng(0).standard_normal((800, 200))
    >>> eigs = esd(W, normalize="rows")
    >>> bool(ks_distance_mp(eigs, 0.25) < 0.05), bool(ks_distance_mp(4 * eigs, 0.25) > 0.5)   # right and wrong scale
    (True, True)
    """
    x = _check_eigs(eigs, min_positive=1)  # sorted ascending
    return ks_distance_sorted(mp_cdf(x, gamma, sigma2))


def tracy_widom_scale(p: float, q: float, sigma2: float = 1.0) -> float:
    """Tracy-Widom scale ``s_TW = sigma2 (sqrt(p) + sqrt(q)) (1/sqrt(p) + 1/sqrt(q))**(1/3) / p`` of the top
    eigenvalue of ``WᵀW/p`` (Johnstone 2001).

    Parameters
    ----------
    p, q : float
        Rows and columns of ``W``.
    sigma2 : float, default 1.0
        Entry variance.

    Returns
    -------
    float
        The scale ``s_TW``.

    Examples
    --------
    >>> from htlib.spectra import tracy_widom_scale
    >>> round(tracy_widom_scale(400, 100), 4)    # (20 + 10) * (1/20 + 1/10)**(1/3) / 400
    0.0398
    >>> round(tracy_widom_scale(400, 100, sigma2=2.0) / tracy_widom_scale(400, 100), 4)
    2.0
    """
    sp, sq = math.sqrt(check_float("p", p, low=0.0)), math.sqrt(check_float("q", q, low=0.0))
    return check_float("sigma2", sigma2, low=0.0) * (sp + sq) * (1.0 / sp + 1.0 / sq) ** (1.0 / 3.0) / p


@dataclass(frozen=True)
class MPFit:
    """Result of :func:`fit_mp`.

    ``sigma2`` (fitted MP scale), the bulk edges ``lambda_plus, lambda_minus`` for ``gamma_fit``, the ``num_spikes``
    outliers above :attr:`threshold` (``spikes``, ascending), the Tracy-Widom scale ``tw_scale``, the ``n_zero``
    eigenvalues of the zero block left out, and ``gamma_fit = gamma * (N - n_zero) / N``.

    Attributes
    ----------
    sigma2 : float
        Fitted MP scale.
    lambda_plus, lambda_minus : float
        Bulk edges ``sigma2 (1 ± sqrt(gamma_fit))**2``.
    num_spikes : int
        Outliers above :attr:`threshold`.
    spikes : numpy.ndarray
        Those outliers, ascending.
    tw_scale : float
        Tracy-Widom scale at the fitted ``sigma2``.
    n_zero : int
        Eigenvalues of the zero block left out of the fit.
    gamma_fit : float
        Aspect ratio of the non-zero part, ``gamma (N - n_zero) / N``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.spectra import esd, fit_mp
    >>> W = np.random.default_rng(0).standard_normal((400, 100)) * 2.0   # entry variance 4
    >>> fit = fit_mp(esd(W, normalize="rows"), 0.25)
    >>> round(fit.sigma2, 1), fit.num_spikes, fit.n_zero
    (4.0, 0, 0)
    >>> bool(fit.threshold > fit.lambda_plus)
    True
    """
    sigma2: float
    lambda_plus: float
    lambda_minus: float
    num_spikes: int
    spikes: np.ndarray
    tw_scale: float = 0.0
    n_zero: int = 0
    gamma_fit: float = float("nan")

    @property
    def threshold(self) -> float:
        """The spike threshold ``lambda_plus + TW_MARGIN * tw_scale``."""
        return self.lambda_plus + TW_MARGIN * self.tw_scale


ZERO_FLOOR = 1e-13
"""Eigenvalues below ``ZERO_FLOOR * lambda_max`` are numerically zero (below :func:`esd`'s accuracy)."""

ZERO_GAP_DECADES = 2.0
"""Zero-block rule: a jump of at least two decades between consecutive eigenvalues (an MP bulk with ``gamma <= 0.9``
spans only about three decades in all)."""

ZERO_MIN_ABOVE = 0.01
"""The jump leaves ``>= max(MIN_POSITIVE, 1% of N)`` eigenvalues above it (the top of a heavy tail is not a block)."""


def zero_block(eigs: Any) -> int:
    """Number of (numerical) zero eigenvalues: those below the highest jump of ``>= ZERO_GAP_DECADES`` decades that
    leaves ``>= max(MIN_POSITIVE, 1% of N)`` above it (0 without one); exact zeros, round-off and a noise floor alike.

    Parameters
    ----------
    eigs : array_like
        Non-negative eigenvalues.

    Returns
    -------
    int
        Size of the zero block (0 when there is none).

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.spectra import zero_block
    >>> eigs = np.concatenate([np.full(10, 1e-18), np.linspace(1.0, 4.0, 90)])
    >>> zero_block(eigs), zero_block(np.linspace(1.0, 4.0, 90))
    (10, 0)
    """
    x = _check_eigs(eigs, min_positive=1)
    n = x.size
    top = x[-1]
    y = np.log10(np.maximum(x, top * ZERO_FLOOR))
    max_block = n - max(MIN_POSITIVE, math.ceil(ZERO_MIN_ABOVE * n))
    if max_block < 1:
        return 0
    jumps = np.diff(y)[:max_block]  # jumps[i] lies between x[i] and x[i+1]: block size i + 1
    big = np.flatnonzero(jumps >= ZERO_GAP_DECADES)
    return int(big[-1] + 1) if big.size else 0


def fit_mp(eigs: Any, gamma: float, *, max_iter: int = 20, n_zero: int | None = None) -> MPFit:
    """Fit the MP scale ``sigma2`` to the non-zero part of a spectrum and count the outliers.

    The zero block (``n_zero``, :func:`zero_block` unless given) is left out, with ratio
    ``gamma_fit = gamma (q - n_zero) / q``.  Then, until the outlier count stops changing (``max_iter`` times at
    most): ``sigma2 = median(bulk) / median(MP(gamma_fit, 1))``, ``lambda_plus = sigma2 (1 + sqrt(gamma_fit))**2``,
    and the outliers are the eigenvalues above ``lambda_plus + TW_MARGIN * s_TW`` (:func:`tracy_widom_scale`).
    ``eigs`` are eigenvalues of ``WᵀW/p`` at any scale; ``gamma = q/p`` with ``q = len(eigs)``.

    Parameters
    ----------
    eigs : array_like
        Eigenvalues of ``WᵀW/p`` (or ``WᵀW``) of a ``p x q`` matrix.
    gamma : float
        Aspect ratio ``q / p`` in ``(0, 1]``.
    max_iter : int, default 20
        Most refits.
    n_zero : int, optional
        Size of the zero block; :func:`zero_block` when not given.

    Returns
    -------
    MPFit
        Scale, edges, outliers and zero block.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.spectra import esd, fit_mp
    >>> rng = np.random.default_rng(0)
    >>> G = rng.standard_normal((400, 200))
    >>> u, v = np.ones(400) / 20.0, np.ones(200) / np.sqrt(200)
    >>> W = G + 3.0 * np.sqrt(400) * np.outer(u, v)         # a rank-one signal far above the BBP threshold
    >>> fit = fit_mp(esd(W, normalize="rows"), 0.5)
    >>> fit.num_spikes, round(fit.sigma2, 1)
    (1, 1.0)
    """
    x = _check_eigs(eigs)
    g = _check_gamma(gamma)
    max_iter = check_int("max_iter", max_iter, 1)
    nz = zero_block(x) if n_zero is None else check_int("n_zero", n_zero, 0)
    if not (0 <= nz <= x.size - MIN_POSITIVE):
        raise ValueError(f"n_zero must be in [0, len(eigs) - {MIN_POSITIVE}], got {n_zero!r}")
    q_all = float(x.size)
    p = q_all / g
    x = x[nz:]
    q = float(x.size)
    g_fit = q / p
    med_unit = _mp_quantile_unit(0.5, g_fit)
    n_bulk = x.size
    for _ in range(int(max_iter)):
        sigma2 = float(np.median(x[:n_bulk])) / med_unit
        if sigma2 <= 0.0:
            raise ValueError("eigs: the median non-zero eigenvalue is 0; fit_mp needs a bulk")
        lo, hi = mp_edges(g_fit, sigma2)
        tw = tracy_widom_scale(p, q, sigma2)
        new_bulk = int(np.searchsorted(x, hi + TW_MARGIN * tw, side="right"))
        if new_bulk == n_bulk:
            break
        n_bulk = max(new_bulk, 1)
    spikes = x[n_bulk:].copy()
    return MPFit(sigma2=sigma2, lambda_plus=hi, lambda_minus=lo, num_spikes=int(spikes.size), spikes=spikes,
                 tw_scale=tw, n_zero=nz, gamma_fit=g_fit)


def alpha_hill(eigs: Any) -> float:
    """``PL_Alpha_Hill``: the Hill estimator at the median threshold (TempBalance, Zhou et al. 2023).

    ``alpha = 1 + m / sum_{j >= i} ln(l_j / l_i)`` with ``i = floor(N/2)``, ``m = N - i``; ``l_i`` must be positive.

    Parameters
    ----------
    eigs : array_like
        Non-negative eigenvalues (at least 5 positive, positive median).

    Returns
    -------
    float
        The Hill exponent of the density, ``p(x) ~ x^-alpha``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.spectra import alpha_hill
    >>> x = 1.0 + np.random.default_rng(0).pareto(2.0, 4000)   # P(X > x) = x**-2: density exponent 3
    >>> bool(abs(alpha_hill(x) - 3.0) < 0.15)
    True
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
    """Result of :func:`fit_power_law` (``p(x) ~ x^-alpha`` for ``x >= xmin``).

    ``alpha`` (``PL_Alpha_KS`` when ``xmin`` was scanned), ``xmin``, the KS distance ``ks_distance``, the ``n_tail``
    eigenvalues ``>= xmin``, ``sigma = (alpha - 1) / sqrt(n_tail)`` and the ``n_fit`` eigenvalues left after dropping
    ``<= 1e-5`` (and ``> xmax``).

    Attributes
    ----------
    alpha : float
        Exponent of the density ``p(x) ~ x^-alpha``.
    xmin : float
        Lower end of the fitted tail.
    ks_distance : float
        KS distance of the tail to the fitted power law.
    n_tail : int
        Eigenvalues ``>= xmin``.
    sigma : float
        Standard error ``(alpha - 1) / sqrt(n_tail)``.
    n_fit : int
        Eigenvalues left after the floor (and ``xmax``).

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.spectra import fit_power_law
    >>> x = 1.0 + np.random.default_rng(0).pareto(1.5, 2000)   # density ~ x**-2.5 from x = 1
    >>> fit = fit_power_law(x, xmin=1.0)
    >>> fit.n_tail, bool(abs(fit.alpha - 2.5) < 3 * fit.sigma)
    (2000, True)
    """
    alpha: float
    xmin: float
    ks_distance: float
    n_tail: int
    sigma: float
    n_fit: int = 0


def _ks_alphas(logx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``alpha_i`` for every candidate ``i = 0..N-2`` and ``(b, ok)``: ``b_i = 1 - alpha_i`` where ``ok`` (finite
    ``alpha_i > 1``), else 0."""
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
    """Exact ``D_i`` for the ascending candidate indices ``rows``, in cache-sized blocks (columns ``j < i`` clipped to
    a vanishing term)."""
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
    """Lower bounds ``LB_i <= D_i`` for ``cand``: the maximum over ``grid`` evenly spaced ``k`` only."""
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
    """All WWFit candidates ``i = 0..N-2`` (ascending ``logx``): ``alpha_i`` and ``D_i``, by exact branch and bound.

    Lower bounds from ``grids[0]`` evenly spaced ``k``, refined on the live candidates with each later grid; exact
    ``D`` in ``batch``es in increasing bound order until the next bound exceeds the best exact ``D`` (ties are still
    evaluated).  ``argmin(D)`` is the full ``O(N^2)`` scan's, in ``O(N * block)`` memory.
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
    """Power-law tail fit of a spectrum, WeightWatcher's "WWFit" (``PL_Alpha_KS``), Clauset, Shalizi & Newman (2009).

    Eigenvalues ``<= 1e-5`` (and ``> xmax``) are dropped.  For every candidate ``i`` of the ``N`` left
    (``m = N - i``)::

        alpha_i = 1 + m / sum_{j >= i} ln(x_j / x_i)
        D_i     = max_{k = 0..m-1} |1 - (x_{i+k} / x_i)^(1 - alpha_i) - k/m|

    (``D_i = 1`` where ``alpha_i <= 1`` or infinite); the fit is the first smallest ``D_i``, found by
    :func:`_ks_scan`.  A given ``xmin`` is fitted alone, as ``powerlaw.Fit(data, xmin=xmin)`` does.

    Parameters
    ----------
    eigs : array_like
        Non-negative eigenvalues (at least 5 above ``1e-5``).
    xmin : float, optional
        Fixed lower end of the tail; scanned (the KS minimum) when not given.
    xmax : float, optional
        Eigenvalues above it are dropped.

    Returns
    -------
    PowerLawFit
        Exponent, threshold, KS distance and tail size.

    Raises
    ------
    ValueError
        Fewer than 5 eigenvalues above the floor, or all of them equal.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.spectra import fit_power_law
    >>> rng = np.random.default_rng(0)
    >>> x = np.concatenate([rng.uniform(0.1, 1.0, 500), 1.0 + rng.pareto(2.0, 1500)])  # tail p(x) ~ x**-3
    >>> fit = fit_power_law(x)
    >>> bool(abs(fit.alpha - 3.0) < 0.3), bool(0.5 <= fit.xmin <= 2.0)
    (True, True)
    """
    x = _check_eigs(eigs)
    x = x[x > EIG_FLOOR]
    if xmax is not None:
        xm = check_float("xmax", xmax, low=EIG_FLOOR)
        x = x[x <= xm]
    if x.size < MIN_POSITIVE:
        raise ValueError(
            f"eigs needs at least {MIN_POSITIVE} eigenvalues > {EIG_FLOOR} (and <= xmax) to fit a power law, got {x.size}"
        )
    if x[0] == x[-1]:
        raise ValueError(f"eigs: the {x.size} eigenvalues above {EIG_FLOOR} are all equal ({x[0]:.6g}); "
                         "a constant spectrum has no power-law tail, alpha is undefined")
    n_fit = int(x.size)
    if xmin is not None:
        x0 = check_float("xmin", xmin, low=0.0)
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


def power_law_vs_exponential(x, xmin: float) -> tuple[float, float]:
    """Log-likelihood ratio ``R`` of a power law against an exponential (maximum likelihood on ``x >= xmin``) and
    its two-sided p-value (Vuong's normal approximation, as Clauset, Shalizi & Newman 2009); ``R > 0``: power law.

    Parameters
    ----------
    x : array_like
        The sample.
    xmin : float
        Lower end of the tail compared; values below it are dropped.

    Returns
    -------
    tuple of float
        ``(R, p)``: the log-likelihood ratio and its p-value (both NaN for fewer than 3 values at or above ``xmin``).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> r, p = power_law_vs_exponential(1.0 + rng.pareto(1.5, 2000), 1.0)   # a power-law sample
    >>> bool(r > 0 and p < 0.01)
    True
    >>> r, p = power_law_vs_exponential(1.0 + rng.exponential(1.0, 2000), 1.0)  # an exponential one
    >>> bool(r < 0 and p < 0.01)
    True
    """
    x = np.asarray(x, dtype=float)
    x = x[x >= xmin]
    if x.size < 3 or not np.all(np.isfinite(x)):
        return float("nan"), float("nan")
    alpha = 1.0 + x.size / float(np.sum(np.log(x / xmin)))
    rate = 1.0 / float(np.mean(x - xmin))
    diff = (scipy.stats.pareto.logpdf(x / xmin, alpha - 1.0) - np.log(xmin)
            - scipy.stats.expon.logpdf(x - xmin, scale=1.0 / rate))
    r, sd = float(diff.sum()), float(diff.std())
    return r, (float(2.0 * scipy.stats.norm.sf(abs(r) / (np.sqrt(x.size) * sd))) if sd > 0 else 1.0)


@dataclass(frozen=True)
class PhaseRules:
    """The thresholds of :func:`analyze_spectrum` (reasons on the conventions page).

    Attributes
    ----------
    collapse_fraction : float
        Rank collapse: at least this share of the eigenvalues is in the zero block.
    separation_tw : float
        Outliers are detached when the lowest lies at least this many TW widths above the largest bulk eigenvalue
        (a tail growing out of the bulk leaves at most about 5); the same gap between neighbouring outliers
        detaches spikes from a group too small to be a continuum.
    heavy_reach : float
        An attached tail is heavy only when its top lies at least this many times ``lambda_plus`` out ...
    heavy_alpha : float
        ... and its fitted ``tail_alpha < heavy_alpha`` (Martin & Mahoney's heavy-tailed range).
    decay_min, decay_fraction : int, float
        A continuum holds at least ``max(decay_min, decay_fraction * N)`` eigenvalues; fewer is bleeding-out.
    renyi_pvalue : float
        Level of the (Bonferroni-corrected) Renyi spacing test that detaches top outliers from a tail.
    strict_alpha, strict_pvalue : float
        ``heavy_tailed_strict`` also asks ``PL_Alpha_KS < strict_alpha`` and ``spike_pvalue >= strict_pvalue``.

    Examples
    --------
    >>> from htlib.spectra import PHASE_RULES, PhaseRules
    >>> PHASE_RULES.heavy_alpha, PhaseRules(heavy_alpha=3.0).heavy_alpha
    (4.0, 3.0)
    >>> PhaseRules(collapse_fraction=0.0)
    Traceback (most recent call last):
    ...
    ValueError: PhaseRules.collapse_fraction must be in (0, 1], got 0.0
    """

    collapse_fraction: float = 0.10
    separation_tw: float = 10.0
    heavy_reach: float = 2.0
    heavy_alpha: float = 4.0
    decay_min: int = 5
    decay_fraction: float = 0.005
    renyi_pvalue: float = 0.01
    strict_alpha: float = 4.0
    strict_pvalue: float = 0.01

    def __post_init__(self) -> None:
        checks = {
            "collapse_fraction": 0.0 < self.collapse_fraction <= 1.0,
            "separation_tw": self.separation_tw > TW_MARGIN,
            "heavy_reach": self.heavy_reach > 1.0,
            "heavy_alpha": self.heavy_alpha > 1.0,
            "decay_min": isinstance(self.decay_min, (int, np.integer)) and self.decay_min >= 1,
            "decay_fraction": 0.0 <= self.decay_fraction < 1.0,
            "renyi_pvalue": 0.0 < self.renyi_pvalue < 1.0,
            "strict_alpha": self.strict_alpha > 1.0,
            "strict_pvalue": 0.0 <= self.strict_pvalue < 1.0,
        }
        allowed = {"collapse_fraction": "in (0, 1]", "separation_tw": f"> TW_MARGIN = {TW_MARGIN}",
                   "heavy_reach": "> 1 (a multiple of lambda_plus)", "heavy_alpha": "> 1", "decay_min": "an integer >= 1",
                   "decay_fraction": "in [0, 1)", "renyi_pvalue": "in (0, 1)", "strict_alpha": "> 1",
                   "strict_pvalue": "in [0, 1)"}
        for name, ok in checks.items():
            if not ok:
                raise ValueError(f"PhaseRules.{name} must be {allowed[name]}, got {getattr(self, name)!r}")


PHASE_RULES = PhaseRules()
"""The book's rules (the defaults of :class:`PhaseRules`)."""


def top_outlier_pvalue(eigs: Any, alpha: float, xmin: float) -> float:
    """``1 - (1 - (l_max / xmin)^(1 - alpha))^m``: the probability that the top of the ``m`` tail eigenvalues
    ``>= xmin`` is at least as large as observed under the fitted power law (tiny: a spike).

    Parameters
    ----------
    eigs : array_like
        Eigenvalues.
    alpha : float
        Exponent of the fitted power law (``> 1``).
    xmin : float
        Lower end of the fitted tail.

    Returns
    -------
    float
        The p-value in ``[0, 1]``.

    Examples
    --------
    >>> from htlib.spectra import top_outlier_pvalue
    >>> round(top_outlier_pvalue([1.0, 2.0, 4.0], alpha=2.0, xmin=1.0), 4)   # 1 - (1 - 1/4)**3
    0.5781
    """
    e = check_vector("eigs", eigs)
    alpha, xmin = check_float("alpha", alpha, low=1.0), check_float("xmin", xmin, low=0.0)
    tail = e[e >= xmin]
    if tail.size == 0:
        raise ValueError("no eigenvalue is >= xmin")
    m = tail.size
    ccdf = (tail.max() / xmin) ** (1.0 - alpha)
    return float(-math.expm1(m * math.log1p(-ccdf))) if ccdf < 1 else 1.0


def _renyi_detached(outliers: np.ndarray, edge: float, pvalue: float) -> int:
    """Number of top outliers that stand apart from the rest of an attached tail (0 if none).

    Renyi's representation: over the edge and outliers, the weighted log spacing ``E`` below the top ``m``, against
    the mean of the ``k - m`` below it, is F(2, 2(k - m)); the smallest p-value over ``m``, times ``k - 1``
    (Bonferroni), below ``pvalue`` detaches the top ``m``.
    """
    k = outliers.size
    if k < 2:
        return 0
    y = np.log(np.concatenate(([edge], outliers)))
    E = (k - np.arange(k)) * np.diff(y)  # E[i-1]: weighted spacing below o_i, i = 1..k
    cum = np.cumsum(E)
    best_p, best_m = 1.0, 0
    for m in range(1, k):
        n_low = k - m
        lower = cum[n_low - 1] / n_low
        if lower <= 0.0:
            continue
        t = E[n_low] / lower
        p = (1.0 + t / n_low) ** (-n_low)
        if p < best_p:
            best_p, best_m = p, m
    return best_m if best_p * (k - 1) < pvalue else 0


@dataclass(frozen=True)
class SpectrumReport:
    """Everything :func:`analyze_spectrum` measured on one ESD, and the phase it concludes.

    Attributes
    ----------
    phase, reason : str
        One of :data:`PHASES`, and the rule that decided, in words with its numbers.
    n, gamma, n_zero : int, float, int
        Number of eigenvalues ``q``, the ratio ``q/p`` and the size of the zero block.
    mp : MPFit or None
        The MP fit on the non-zero part (None for a rank collapse that leaves fewer than 5 non-zero eigenvalues).
    lambda_max, edge_margin_tw : float
        Largest eigenvalue and ``(lambda_max - lambda_plus) / s_TW``.
    bulk_gap_tw : float
        Gap between the largest bulk eigenvalue and the lowest outlier, in TW widths (nan without outliers).
    num_detached, tail_size : int
        Outliers detached from the bulk, and those attached to it (the tail).
    tail_reach_tw, tail_reach : float
        Top of the attached tail beyond ``lambda_plus`` in TW widths, and in units of ``lambda_plus`` (nan without).
    tail_alpha : float
        Hill exponent of the attached tail with the MP edge as threshold (nan for fewer than 2).
    pl, spike_pvalue : PowerLawFit or None, float
        WeightWatcher's ``PL_Alpha_KS`` fit (None below 5 eigenvalues over ``1e-5``) and its
        :func:`top_outlier_pvalue`.
    rules : PhaseRules

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.spectra import analyze_spectrum, esd
    >>> W = np.random.default_rng(0).standard_normal((400, 200))
    >>> rep = analyze_spectrum(esd(W), 0.5)
    >>> rep.phase, rep.num_outliers, rep.heavy_tailed
    ('random-like', 0, False)
    >>> bool(rep.edge_margin_tw < 4)   # the top eigenvalue lies within 4 TW widths of the fitted edge
    True
    """
    phase: str
    reason: str
    n: int
    gamma: float
    n_zero: int
    mp: MPFit | None
    lambda_max: float
    edge_margin_tw: float
    bulk_gap_tw: float
    num_detached: int
    tail_size: int
    tail_reach_tw: float
    pl: PowerLawFit | None
    spike_pvalue: float
    rules: PhaseRules = PHASE_RULES
    tail_reach: float = float("nan")
    tail_alpha: float = float("nan")

    @property
    def zero_fraction(self) -> float:
        """Share of the eigenvalues in the zero block."""
        return self.n_zero / self.n

    @property
    def num_outliers(self) -> int:
        """Eigenvalues beyond ``lambda_plus + 4 s_TW`` (``mp.num_spikes``; 0 without an MP fit)."""
        return int(self.mp.num_spikes) if self.mp is not None else 0

    @property
    def outliers(self) -> np.ndarray:
        """Those eigenvalues, ascending."""
        return self.mp.spikes if self.mp is not None else np.zeros(0)

    @property
    def lambda_plus(self) -> float:
        """Fitted MP bulk edge (nan when too few non-zero eigenvalues remain to fit one)."""
        return float(self.mp.lambda_plus) if self.mp is not None else float("nan")

    @property
    def bulk_edge(self) -> float:
        """Alias of :attr:`lambda_plus`."""
        return self.lambda_plus

    @property
    def tw_scale(self) -> float:
        """Tracy-Widom width ``s_TW`` at the fitted scale (nan without an MP fit)."""
        return float(self.mp.tw_scale) if self.mp is not None else float("nan")

    @property
    def alpha(self) -> float:
        """WeightWatcher's ``PL_Alpha_KS`` (nan when no power law can be fitted)."""
        return float(self.pl.alpha) if self.pl is not None else float("nan")

    @property
    def xmin(self) -> float:
        """Threshold of the power-law fit (nan without one)."""
        return float(self.pl.xmin) if self.pl is not None else float("nan")

    @property
    def n_tail(self) -> int:
        """Eigenvalues in the fitted power law (``>= xmin``; 0 without one)."""
        return int(self.pl.n_tail) if self.pl is not None else 0

    @property
    def heavy_tailed(self) -> bool:
        """The book's one heavy-tail verdict: the phase is ``"heavy-tailed"``."""
        return self.phase == "heavy-tailed"

    @property
    def tail_alpha_sigma(self) -> float:
        """Standard error ``(tail_alpha - 1) / sqrt(tail_size)`` of :attr:`tail_alpha` (nan without one)."""
        return (self.tail_alpha - 1.0) / math.sqrt(self.tail_size) if self.tail_size >= 2 else float("nan")

    @property
    def very_heavy_tailed(self) -> bool:
        """Heavy-tailed with ``tail_alpha < 2`` (Martin & Mahoney's very heavy-tailed range)."""
        return self.heavy_tailed and self.tail_alpha < 2.0

    @property
    def heavy_tailed_strict(self) -> bool:
        """The stricter named option: heavy-tailed, ``PL_Alpha_KS < rules.strict_alpha`` and the top
        eigenvalue absorbed by the fitted power law (``spike_pvalue >= rules.strict_pvalue``)."""
        return (self.heavy_tailed and self.alpha < self.rules.strict_alpha
                and bool(np.isfinite(self.spike_pvalue)) and self.spike_pvalue >= self.rules.strict_pvalue)


def _tail_alpha(tail: np.ndarray, edge: float) -> float:
    """Maximum-likelihood power-law exponent of ``tail`` (all ``> edge``) with the threshold at ``edge``."""
    if tail.size < 2:
        return float("nan")
    s = float(np.sum(np.log(tail / edge)))
    return 1.0 + tail.size / s if s > 0.0 else float("inf")


def _gap_detached(outliers: np.ndarray, below: float, tw: float, separation_tw: float) -> int:
    """Top outliers standing at least ``separation_tw`` TW widths above their lower neighbour (0 if none), for a
    group too small for the spacing test."""
    y = np.concatenate(([below], outliers))
    big = np.flatnonzero(np.diff(y) >= separation_tw * tw)
    return int(outliers.size - big[-1]) if big.size else 0


def analyze_spectrum(eigs: Any, gamma: float, *, rules: PhaseRules = PHASE_RULES) -> SpectrumReport:
    """One analysis of an ESD: MP fit, outliers, tail, zero mass and the 5+1 phase (Martin & Mahoney 2021).

    ``eigs`` are the eigenvalues of ``WᵀW`` or ``WᵀW/p`` of a ``p x q`` matrix (``gamma = q/p <= 1``); the phase is
    scale-free.  Pass the raw ESD of ``WᵀW`` to get WeightWatcher's ``alpha``.  The rules, in order (thresholds
    in :class:`PhaseRules`; a *continuum* holds at least ``max(decay_min, decay_fraction N)`` eigenvalues):

    1. **rank-collapse**: the zero block holds ``>= collapse_fraction`` of the eigenvalues.
    2. **random-like**: no eigenvalue beyond ``lambda_plus + 4 s_TW`` (MP fit on the non-zero part).
    3. **bulk+spikes**: the lowest outlier is ``>= separation_tw`` TW widths above the bulk.
    4. Otherwise top outliers separated by the Renyi test (or, in a group too small to be a continuum, by
       ``separation_tw``) are spikes on top of the tail; the tail is what remains.
    5. **heavy-tailed**: the tail is a continuum reaching ``>= heavy_reach`` ``lambda_plus`` with
       ``tail_alpha < heavy_alpha``.
    6. **bulk+spikes**: detached spikes above a tail that is not heavy.
    7. **bulk-decay**: a continuum that is not heavy.
    8. **bleeding-out**: a few eigenvalues (fewer than a continuum) just past the edge.

    Sizes and boundary cases are on the conventions page and in ``tests/test_phases.py``.

    Parameters
    ----------
    eigs : array_like
        Eigenvalues of ``WᵀW`` (or ``WᵀW/p``) of a ``p x q`` matrix, ``q <= p``.
    gamma : float
        Aspect ratio ``q / p`` in ``(0, 1]``.
    rules : PhaseRules, default PHASE_RULES
        Thresholds of the rules above.

    Returns
    -------
    SpectrumReport
        The phase, the reason in words, and every number the rules read.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.spectra import analyze_spectrum, esd
    >>> rng = np.random.default_rng(0)
    >>> G = rng.standard_normal((400, 200))
    >>> analyze_spectrum(esd(G), 0.5).phase
    'random-like'
    >>> u, v = np.ones(400) / 20.0, np.ones(200) / np.sqrt(200)
    >>> rep = analyze_spectrum(esd(G + 3.0 * np.sqrt(400) * np.outer(u, v)), 0.5)   # one strong spike
    >>> rep.phase, rep.num_outliers, rep.num_detached
    ('bulk+spikes', 1, 1)
    """
    x = _check_eigs(eigs)
    g = _check_gamma(gamma)
    if not isinstance(rules, PhaseRules):
        raise ValueError(f"rules must be a PhaseRules, got {type(rules).__name__}")
    n = x.size
    pl: PowerLawFit | None = None
    pval = float("nan")
    try:
        pl = fit_power_law(x)
        pval = top_outlier_pvalue(x, pl.alpha, pl.xmin)
    except ValueError:  # fewer than MIN_POSITIVE eigenvalues above WeightWatcher's floor, or an undefined p-value
        pass
    n_floor = int(np.count_nonzero(x <= x[-1] * ZERO_FLOOR))
    nz = max(zero_block(x), n_floor)
    lmax = float(x[-1])
    if nz > n - MIN_POSITIVE:  # fewer non-zero eigenvalues than any fit needs: collapsed beyond measure
        return SpectrumReport(phase="rank-collapse", reason=f"only {n - nz} non-zero eigenvalues of {n}", n=n, gamma=g,
                              n_zero=nz, mp=None, lambda_max=lmax, edge_margin_tw=float("nan"), bulk_gap_tw=float("nan"),
                              num_detached=0, tail_size=0, tail_reach_tw=float("nan"), pl=pl, spike_pvalue=pval,
                              rules=rules)
    mp = fit_mp(x, g, n_zero=nz)
    tw = mp.tw_scale
    lp = mp.lambda_plus
    margin = (lmax - lp) / tw
    common = dict(n=n, gamma=g, n_zero=nz, mp=mp, lambda_max=lmax, edge_margin_tw=margin, pl=pl,
                  spike_pvalue=pval, rules=rules)
    if nz >= rules.collapse_fraction * n:
        return SpectrumReport(phase="rank-collapse", reason=f"{nz} of {n} eigenvalues in the zero block "
                              f"(>= {rules.collapse_fraction:.0%})", bulk_gap_tw=float("nan"), num_detached=0,
                              tail_size=0, tail_reach_tw=float("nan"), **common)
    k = mp.num_spikes
    if k == 0:
        return SpectrumReport(phase="random-like", reason=f"no eigenvalue beyond lambda_+ + {TW_MARGIN:g} s_TW "
                              f"(top at {margin:.1f} s_TW)", bulk_gap_tw=float("nan"), num_detached=0,
                              tail_size=0, tail_reach_tw=float("nan"), **common)
    nonzero = x[nz:]
    bulk_top = float(nonzero[nonzero.size - k - 1]) if nonzero.size > k else float(lp)
    gap = (float(mp.spikes[0]) - bulk_top) / tw
    if gap >= rules.separation_tw:
        return SpectrumReport(phase="bulk+spikes", reason=f"{k} outlier(s) detached: gap {gap:.1f} s_TW above "
                              f"the bulk (>= {rules.separation_tw:g})", bulk_gap_tw=gap, num_detached=k,
                              tail_size=0, tail_reach_tw=float("nan"), **common)
    need = max(rules.decay_min, math.ceil(rules.decay_fraction * n))
    m = _renyi_detached(mp.spikes, lp, rules.renyi_pvalue)
    if k - m < need:
        m += _gap_detached(mp.spikes[: k - m], bulk_top, tw, rules.separation_tw)
    tail = mp.spikes[: k - m]
    reach = float(tail[-1]) / lp
    alpha = _tail_alpha(tail, lp)
    rest = dict(bulk_gap_tw=gap, num_detached=m, tail_size=int(tail.size), tail_reach_tw=(float(tail[-1]) - lp) / tw,
                tail_reach=reach, tail_alpha=alpha, **common)
    spikes = f"; {m} spike(s) detached on top" if m else ""
    if tail.size >= need and reach >= rules.heavy_reach and alpha < rules.heavy_alpha:
        return SpectrumReport(phase="heavy-tailed", reason=f"tail of {tail.size} outliers grows out of the bulk to "
                              f"{reach:.3g} lambda_+ (>= {rules.heavy_reach:g}) with tail alpha {alpha:.3g} "
                              f"(< {rules.heavy_alpha:g}){spikes}", **rest)
    if m > 0:
        return SpectrumReport(phase="bulk+spikes", reason=f"{m} spike(s) detached above a tail of {tail.size} that is "
                              f"not heavy (reaches {reach:.3g} lambda_+, tail alpha {alpha:.3g})", **rest)
    if tail.size >= need:
        why = (f"reaches only {reach:.3g} lambda_+ (< {rules.heavy_reach:g})" if reach < rules.heavy_reach else
               f"tail alpha {alpha:.3g} (>= {rules.heavy_alpha:g})")
        return SpectrumReport(phase="bulk-decay", reason=f"tail of {tail.size} outliers (>= {need}) grows out of the "
                              f"bulk but {why}", **rest)
    return SpectrumReport(phase="bleeding-out", reason=f"{tail.size} outlier(s) (< {need}) just past the edge, "
                          f"reaching {reach:.3g} lambda_+", **rest)


def classify_phase(eigs: Any, gamma: float, *, rules: PhaseRules = PHASE_RULES) -> str:
    """The 5+1 phase of an ESD: ``analyze_spectrum(eigs, gamma).phase`` (rules and sizes there).

    Parameters
    ----------
    eigs : array_like
        Eigenvalues of ``WᵀW`` (or ``WᵀW/p``) of a ``p x q`` matrix, ``q <= p``.
    gamma : float
        Aspect ratio ``q / p`` in ``(0, 1]``.
    rules : PhaseRules, default PHASE_RULES
        Thresholds of the rules.

    Returns
    -------
    str
        One of :data:`PHASES`.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.spectra import classify_phase, esd
    >>> rng = np.random.default_rng(0)
    >>> classify_phase(esd(rng.standard_normal((300, 150))), 0.5)
    'random-like'
    >>> low_rank = rng.standard_normal((300, 5)) @ rng.standard_normal((5, 150))   # rank 5 of 150
    >>> classify_phase(esd(low_rank), 0.5)
    'rank-collapse'
    """
    return analyze_spectrum(eigs, gamma, rules=rules).phase


def layer_metrics(W: Any) -> dict[str, Any]:
    """Per-layer spectral metrics of one weight matrix ``W`` (h x d), from one :func:`analyze_spectrum`.

    On the raw ESD ``l`` of ``WᵀW``, WeightWatcher's: ``alpha`` (``PL_Alpha_KS``), ``alpha_hill``,
    ``alpha_weighted = alpha * log10(l_max)``, ``log_spectral_norm = log10(l_max)``, ``stable_rank = sum(l) / l_max``,
    ``log_norm = log10(sum(l))``; the book's: ``mp_outliers`` (beyond ``lambda_plus + 4 s_TW``),
    ``mp_edge_ratio = lambda_plus / l_max``, ``phase`` and ``heavy_tailed``.  ``alpha`` and ``alpha_weighted`` are
    NaN when no power law can be fitted (fewer than 5 eigenvalues above ``1e-5``, or all equal).

    Parameters
    ----------
    W : array_like or torch.Tensor
        A weight matrix, ``h x d`` (either orientation).

    Returns
    -------
    dict
        The metrics named above.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.spectra import layer_metrics
    >>> m = layer_metrics(np.random.default_rng(0).standard_normal((300, 200)))
    >>> m["phase"], m["mp_outliers"], m["heavy_tailed"]
    ('random-like', 0, False)
    >>> 1.0 <= m["stable_rank"] <= 200       # sum(l) / l_max lies between 1 and the rank
    True
    """
    A = check_matrix("W", W)
    return metrics_from_esd(esd(A), *A.shape)


def metrics_from_esd(eigs: Any, h: int, d: int) -> dict[str, Any]:
    """:func:`layer_metrics` from an already computed raw ESD of an ``h x d`` matrix.

    Parameters
    ----------
    eigs : array_like
        The ``min(h, d)`` eigenvalues of ``WᵀW`` (:func:`esd`).
    h, d : int
        Shape of the matrix.

    Returns
    -------
    dict
        The :func:`layer_metrics` dictionary.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.spectra import esd, layer_metrics, metrics_from_esd
    >>> W = np.random.default_rng(0).standard_normal((300, 200))
    >>> m = metrics_from_esd(esd(W), 300, 200)
    >>> sorted(m) == sorted(layer_metrics(W)), round(m["log_norm"], 2)   # log10 of ||W||_F**2, about 300 * 200
    (True, 4.78)
    """
    x = _check_eigs(eigs)
    h, d = check_int("h", h, 1), check_int("d", d, 1)
    if x.size != min(h, d):
        raise ValueError(f"eigs must hold min(h, d) eigenvalues for h={h!r}, d={d!r}; got {x.size}")
    rep = analyze_spectrum(x, min(h, d) / max(h, d))
    return report_metrics(rep, x)


def report_metrics(rep: SpectrumReport, eigs: Any) -> dict[str, Any]:
    """The :func:`layer_metrics` dictionary of a report and the raw ESD it was computed from.

    Parameters
    ----------
    rep : SpectrumReport
        A report of :func:`analyze_spectrum`.
    eigs : array_like
        The raw ESD the report was computed from.

    Returns
    -------
    dict
        The :func:`layer_metrics` dictionary.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.spectra import analyze_spectrum, esd, report_metrics
    >>> eigs = esd(np.random.default_rng(0).standard_normal((300, 200)))
    >>> rep = analyze_spectrum(eigs, 200 / 300)
    >>> m = report_metrics(rep, eigs)
    >>> m["phase"] == rep.phase, m["mp_outliers"] == rep.num_outliers
    (True, True)
    >>> round(m["log_spectral_norm"], 3) == round(float(np.log10(eigs[-1])), 3)
    True
    """
    x = _check_eigs(eigs)
    lmax = float(x[-1])
    total = float(np.sum(x))
    return {
        "alpha": rep.alpha,
        "alpha_hill": alpha_hill(x),
        "alpha_weighted": rep.alpha * math.log10(lmax),
        "log_spectral_norm": math.log10(lmax),
        "stable_rank": total / lmax,
        "log_norm": math.log10(total),
        "mp_outliers": rep.num_outliers,
        "mp_edge_ratio": rep.lambda_plus / rep.lambda_max,
        "phase": rep.phase,
        "heavy_tailed": rep.heavy_tailed,
    }


def overlaps(J: Any, Q: Any) -> np.ndarray:
    """Squared overlaps ``(JᵀQ)∘2`` (``a x b``) between the columns of ``J`` (n x a) and ``Q`` (n x b).

    Parameters
    ----------
    J : array_like, shape (n, a)
        First set of column vectors.
    Q : array_like, shape (n, b)
        Second set of column vectors.

    Returns
    -------
    numpy.ndarray, shape (a, b)
        The squared inner products of each column of ``J`` with each column of ``Q``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.spectra import overlaps
    >>> Q = np.linalg.qr(np.random.default_rng(0).standard_normal((6, 3)))[0]
    >>> O = overlaps(Q, Q)        # orthonormal columns: the identity
    >>> O.shape, bool(np.allclose(O, np.eye(3)))
    ((3, 3), True)
    """
    A = check_matrix("J", J)
    B = check_matrix("Q", Q)
    if A.shape[0] != B.shape[0]:
        raise ValueError(f"J and Q must have the same number of rows, got {A.shape[0]} and {B.shape[0]}")
    return np.square(A.T @ B)


def kernel_target_alignment(Z: Any, y: Any) -> float:
    """Uncentered kernel-target alignment ``||ZᵀY||_F^2 / (||ZᵀZ||_F ||YᵀY||_F)`` of ``K = Z Zᵀ`` (Z: n x d) with
    ``Y Yᵀ`` (y: (n,) or (n, c)), never forming an ``n x n`` matrix when ``n > d``.

    Parameters
    ----------
    Z : array_like, shape (n, d)
        Features; the kernel is ``Z Zᵀ``.
    y : array_like, shape (n,) or (n, c)
        Targets.

    Returns
    -------
    float
        The alignment, in ``[0, 1]``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.spectra import kernel_target_alignment
    >>> y = np.random.default_rng(0).standard_normal(50)
    >>> round(kernel_target_alignment(y[:, None], y), 6)   # the kernel of the target itself
    1.0
    >>> round(kernel_target_alignment(np.eye(50), y), 3) <= 1.0
    True
    """
    Zn = check_matrix("Z", Z)
    Y = to_numpy(y, "y")
    if Y.ndim == 1:
        Y = Y[:, None]
    if Y.ndim != 2 or Y.shape[0] != Zn.shape[0]:
        raise ValueError(f"y must have shape (n,) or (n, c) with n = {Zn.shape[0]}, got {Y.shape}")
    if not np.all(np.isfinite(Y)):
        raise ValueError("y holds NaN or inf entries; only finite values are allowed")
    n, d = Zn.shape
    gram = Zn.T @ Zn if d <= n else Zn @ Zn.T
    kn = float(np.linalg.norm(gram))
    yn = float(np.linalg.norm(Y.T @ Y))
    if kn == 0.0 or yn == 0.0:
        raise ValueError("Z and y must be non-zero for the alignment to be defined")
    num = float(np.sum(np.square(Zn.T @ Y)))
    return num / (kn * yn)


def top_alignment(W: Any, beta: Any) -> float:
    """``|v1ᵀ beta|`` with ``v1`` the top right singular vector of ``W`` (h x d), ``beta`` in R^d as given.

    Parameters
    ----------
    W : array_like, shape (h, d)
        A matrix.
    beta : array_like, shape (d,)
        A direction (used as given, not normalized).

    Returns
    -------
    float
        ``|v1ᵀ beta|``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.spectra import top_alignment
    >>> rng = np.random.default_rng(0)
    >>> beta = rng.standard_normal(20)
    >>> beta /= np.linalg.norm(beta)
    >>> W = 10.0 * np.outer(rng.standard_normal(30), beta) + 0.01 * rng.standard_normal((30, 20))
    >>> round(top_alignment(W, beta), 3)   # the top right singular vector is beta
    1.0
    """
    A = check_matrix("W", W)
    b = to_numpy(beta, "beta").reshape(-1)
    if b.size != A.shape[1]:
        raise ValueError(f"beta must have length d = {A.shape[1]}, got {b.size}")
    if not np.all(np.isfinite(b)):
        raise ValueError("beta holds NaN or inf entries; only finite values are allowed")
    d = A.shape[1]
    G = A.T @ A
    _, v = scipy.linalg.eigh(G, subset_by_index=[d - 1, d - 1], check_finite=False)
    return float(abs(v[:, 0] @ b))


def ks_distance_sorted(cdf_at_sorted: Any) -> float:
    """Kolmogorov-Smirnov distance ``sup |F_n - F|`` of a sample, given ``cdf_at_sorted[i] = F(x_(i))`` at the
    sample sorted ascending."""
    F = check_vector("cdf_at_sorted", cdf_at_sorted)
    n = F.size
    k = np.arange(n, dtype=np.float64)
    return float(max(np.max((k + 1.0) / n - F), np.max(F - k / n)))

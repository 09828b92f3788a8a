"""The high-temperature Marchenko-Pastur (HTMP) family of paper 001: density, CDF, Stieltjes transform, moments,
tail exponents, the inverse law, the beta-Laguerre sampler, the KS and histogram fits of ``kappa``, and :data:`htmp`.

With ``a = kappa/2``, ``beta = kappa/(2 gamma)``, ``t = beta x`` and ``delta = kappa (1-gamma)/(2 gamma)``,
``rho(x) = beta t^(delta-1) e^(-t) / (Gamma(a+1) Gamma(beta) |U(a, 1-delta, -t)|^2)``.  ``U(a, 1-delta, -t - i0)``
(:func:`_u_eval`) comes from the connection formula through SciPy's ``hyp1f1`` (patched: :func:`_checked_hyp1f1`;
interpolated near integer ``delta``), the large-t expansion, a Riccati continuation above the bulk and mpmath
(``hyperu``, else the connection formula: :func:`_u_connection_mp`); within :data:`EXACT_RANGE` accurate to ~1e-8
relative or better, and finite on every grid tested (``tests/test_htmp.py``, ``tests/test_reliability.py``,
``tests/test_htmp_edges.py``).  Beyond it the densities and the CDFs refuse.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import mpmath
import numpy as np
from scipy import integrate, optimize, special, stats
from scipy.linalg import eigh_tridiagonal

from htlib._checks import check_choice, check_float, check_int, check_ints, check_vector, to_numpy
from htlib.spectra import ks_distance_sorted

__all__ = ["htmp_pdf", "htmp_logpdf", "htmp_cdf", "htmp_sf", "htmp_logsf", "htmp_logcdf", "EXACT_RANGE", "htmp_stieltjes",
           "htmp_moments", "HTMPMoments", "inverse_htmp_pdf", "inverse_tail_slope", "tail_exponents", "TailExponents",
           "sample_htmp", "HTMPFit", "fit_htmp", "fit_scale_ks", "HistFit", "fit_htmp_l1", "InverseFit",
           "fit_inverse_htmp", "hist_l1", "kappa_from_moments", "ks_distance", "quadrature_moments", "htmp_gen", "htmp",
           "spiked_htmp_spectrum", "GoFResult", "inverse_htmp_gof", "GOF_SAMPLERS"]

_INT_TOL = 1e-4  # interpolate in delta where |delta - round(delta)| < _INT_TOL
_TINY_DELTA = 1e-5  # below: mpmath (the connection formula loses ~2e-14/delta)
_MP_DPS = 25
EXACT_RANGE = ((1000.0, 1600.0), (500.0, 1.0e4))
"""``(kappa_max, beta_max)`` pairs: the routes of :func:`_u_eval` are exact where ``kappa <= kappa_max`` and
``beta = kappa/(2 gamma) <= beta_max`` for one pair (within 2e-8 of mpmath).  Beyond, the connection formula cancels
completely and the continuations stall (minutes a call at kappa = 1e4; mpmath's ``hyperu`` does not converge): the
densities, CDFs, survival functions and quantiles refuse with a ValueError.  The Marchenko-Pastur limit
(``htlib.spectra``) is no stand-in: its CDF is 0.2 off at kappa = 0.5, beta = 1e4, and no bound below 1 is proven."""

# ----------------------------------------------------------------------------- validation
def _check_params(kappa: float, gamma: float, *, mp_limit: bool = False) -> tuple[float, float]:
    """``kappa > 0`` finite (``+inf``, Marchenko-Pastur, too with ``mp_limit``) and ``0 < gamma < 1``."""
    # scipy.stats hands shape parameters over as 0-d arrays
    kappa, gamma = (v.item() if isinstance(v, np.ndarray) and v.ndim == 0 else v for v in (kappa, gamma))
    return (check_float("kappa", kappa, low=0.0, posinf=mp_limit), check_float("gamma", gamma, low=0.0, high=1.0))

def _check_scale(scale: float) -> float:
    return check_float("scale", scale, low=0.0)

@dataclass(frozen=True)
class _P:
    kappa: float
    gamma: float

    @property
    def a(self) -> float:
        return self.kappa / 2

    @property
    def beta(self) -> float:
        return self.kappa / (2 * self.gamma)

    @property
    def delta(self) -> float:
        return self.kappa * (1 - self.gamma) / (2 * self.gamma)

    @property
    def log_norm(self) -> float:
        return math.log(self.beta) - special.gammaln(self.a + 1) - special.gammaln(self.beta)

# ----------------------------------------------------------------------------- U(a, 1-delta, -t - i0)
def _hyp1f1(a: float, b: float, z: np.ndarray, exact: bool = True) -> np.ndarray:
    """SciPy's ``hyp1f1``, patched where ``a - b`` is an exact integer and ``b < 0`` (``hyp1f1(20.5, -19.5, -2)`` gives
    12.095, not 11.339): there the mean at ``a +- eps`` (error about 1e-16 relative)."""
    if b < 0 and abs((a - b) - round(a - b)) < 1e-12 * max(1.0, abs(a)):
        eps = 1e-9 * max(1.0, abs(a))
        zz = np.asarray(z, dtype=np.float64)
        return 0.5 * (_checked_hyp1f1(a + eps, b, zz, exact) + _checked_hyp1f1(a - eps, b, zz, exact))
    return _checked_hyp1f1(a, b, np.asarray(z, dtype=np.float64), exact)

def _scipy_suspect(a: float, b: float, z: np.ndarray) -> np.ndarray:
    """SciPy's undetectable bad ``hyp1f1`` window: ``a < 1.5``, ``-400 <= b <= -15``, ``0.3 |b| <= -z <= 3 |b|``."""
    if a < 1.5 and -400.0 <= b <= -15.0:
        return (z <= -0.3 * abs(b)) & (z >= -3.0 * abs(b))
    return np.zeros(np.shape(z), dtype=bool)

def _checked_hyp1f1(a: float, b: float, z: np.ndarray, exact: bool = True) -> np.ndarray:
    """``special.hyp1f1(a, b, z)``, re-done with mpmath where SciPy is wrong (mapped against mpmath at 30 digits):
    ``a >= 5``, ``b > 0``, ``-1 < z < 0`` (``hyp1f1(5, 0.95, -0.8)`` gives -1.14, not -0.29) where SciPy lies outside
    the rounding bound of the Taylor series (or that exceeds 1e-7 relative); with ``exact``, every point of
    :func:`_scipy_suspect` (errors up to 1e8; for HTMP ``kappa < 3``, ``16 <= delta <= 400``); and every NaN at a
    finite ``z``: for ``b`` below about -500 SciPy returns NaN at isolated points (3 in 20,000 of ``z`` in
    [-2e4, -10] at ``a = 0.05``, ``b = -9998``) and, at ``a = 1`` exactly (``kappa = 2``), through most of the bulk,
    where the routes after the fast one failed or were wrong (``kappa = 2``, ``gamma = 3e-4``: the density 97% low at
    ``x = 1.014``, inside the bulk, and the CDF's branch off where its coarse grid interpolated over the gap)."""
    out = np.asarray(special.hyp1f1(a, b, z), dtype=np.float64)
    flat = z.ravel()
    redo = _scipy_suspect(a, b, flat) if exact else np.zeros(flat.shape, dtype=bool)
    redo |= np.isnan(out.ravel()) & np.isfinite(flat)
    small = np.flatnonzero(np.abs(flat) < 1.0) if b > 0 else np.zeros(0, dtype=np.int64)
    if small.size:
        zs = flat[small]
        n_terms = int(60 + 4 * math.sqrt(abs(a)))
        n = np.arange(n_terms - 1, dtype=np.float64)
        ratio = ((a + n) / ((b + n) * (n + 1)))[None, :] * zs[:, None]
        terms = np.concatenate([np.ones((zs.size, 1)), np.cumprod(ratio, axis=1)], axis=1)
        series, bound = terms.sum(axis=1), 1e-16 * n_terms * np.abs(terms).sum(axis=1)
        got = out.ravel()[small]
        redo[small] = ~(np.abs(got - series) <= bound + 1e-13 * np.abs(series)) | (bound > 1e-7 * np.abs(series))
    if redo.any():
        out = out.copy()
        with mpmath.workdps(_MP_DPS):
            for i in np.flatnonzero(redo):
                try:
                    out.flat[i] = float(mpmath.hyp1f1(a, b, float(flat[i]), maxterms=10**6))
                except (mpmath.libmp.NoConvergence, ValueError, ZeroDivisionError):
                    out.flat[i] = np.nan  # the routes after the fast one take over
    return out

def _u_fast(t: np.ndarray, a: float, d: float, log_t: np.ndarray | None = None,
            exact: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(log scale L, re, im) with U(a, 1-d, -t-i0) = e^L (re + i im); non-finite where the fast route fails.
    ``log_t`` keeps ``log t`` exact where ``t`` underflows."""
    with np.errstate(all="ignore"):
        if log_t is None:
            log_t = np.log(t)
        m1 = _hyp1f1(a, 1 - d, -t, exact)
        m2 = _checked_hyp1f1(a + d, 1 + d, -t, exact)
        # M(a+d, 1+d, -t) underflows in the upper tail (subnormals too): Kummer, e^-t M(1-a, 1+d, t), in logs
        under = np.abs(m2) < 1e-290
        log_m2 = np.log(np.abs(m2))
        if under.any():
            m2k = special.hyp1f1(1 - a, 1 + d, t[under])
            log_m2[under] = np.log(np.abs(m2k)) - t[under]
            m2[under] = np.sign(m2k)
        la = special.gammaln(d) - special.gammaln(a + d) + np.log(np.abs(m1))
        lb = special.gammaln(-d) - special.gammaln(a) + d * log_t + log_m2
        big = np.maximum(la, lb)
        A = np.sign(m1) * np.exp(la - big)
        B = special.gammasgn(-d) * np.sign(m2) * np.exp(lb - big)
        re = A + B * math.cos(math.pi * d)
        im = -B * math.sin(math.pi * d)
        # renormalize so that re^2 + im^2 neither under- nor overflows
        s = np.maximum(np.abs(re), np.abs(im))
        s = np.where((s > 0) & np.isfinite(s), s, 1.0)
        big = big + np.log(s)
        re = re / s
        im = im / s
    return big, re, im

def _log_s_asym(t: np.ndarray, a: float, beta: float, nmax: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Large-t expansion ``U(a, 1-delta, -t-i0) ~ t^-a e^(i pi a) S``, ``S = sum_n (a)_n (beta)_n / (n! t^n)``, positive
    terms optimally truncated; returns ``log S`` and the log of the relative error estimate."""
    t = np.asarray(t, dtype=np.float64)
    ls = np.empty(t.shape)
    err = np.empty(t.shape)
    if t.size == 0:
        return ls, err
    if nmax is None:  # the smallest term sits near n = t - a - beta when t is large
        nmax = int(min(max(4000.0, 1.2 * float(np.max(t)) + 100.0), 100000.0))
    n = np.arange(nmax, dtype=np.float64)[None, :]
    rows = max(1, 4_000_000 // nmax)
    for lo in range(0, t.size, rows):  # chunks keep the (points x terms) table small
        tc = t[lo : lo + rows, None]
        lr = np.log(a + n) + np.log(beta + n) - np.log(n + 1) - np.log(tc)  # log term_{n+1}/term_n
        lt = np.concatenate([np.zeros((tc.shape[0], 1)), np.cumsum(lr, axis=1)[:, :-1]], axis=1)
        pk = np.argmax(lt, axis=1)
        stop = np.argmin(np.where(n >= pk[:, None], lt, np.inf), axis=1)
        keep = n < np.maximum(stop, 1)[:, None]
        m = np.max(np.where(keep, lt, -np.inf), axis=1, keepdims=True)
        s = m[:, 0] + np.log(np.sum(np.where(keep, np.exp(lt - m), 0.0), axis=1))
        ls[lo : lo + rows] = s
        e = np.take_along_axis(lt, stop[:, None], 1)[:, 0] - s
        # stopped by the cap while still falling: the rest is at most a geometric series
        ratio = np.take_along_axis(lr, stop[:, None], 1)[:, 0]
        capped = stop >= nmax - 1
        e = np.where(capped, np.where(ratio < -1e-3, e - np.log1p(-np.exp(np.minimum(ratio, -1e-3))), np.inf), e)
        err[lo : lo + rows] = e
    return ls, err

_ASYM_OK = -36.0  # accept the large-t expansion where its error estimate is below e^-36 (2e-16)

def _t_huge(a: float, beta: float) -> float:
    """Beyond this t the expansion is exact within a few terms (SciPy's Kummer series can loop for ever there)."""
    return 1e3 * (a + 2.0) * (beta + 2.0) + 1e4

def _u_ode(t_out: np.ndarray, p: "_P", t1: float) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Continue ``w(t) = U(a, 1-delta, -t-i0)`` from ``t1`` to ``t_out > t1`` by the Riccati equation of ``y = w'/w``,
    ``y' = -y^2 - (1 + b/t) y - a/t`` (DOP853), from the fast route; stable above the bulk, where ``w`` dominates."""
    from scipy.integrate import solve_ivp
    a, d = p.a, p.delta
    b = 1.0 - d
    # start at the largest t <= t1 where both U(a, 1-d) and U(a+1, 2-d) come out of the fast route
    cand = t1 * 0.995 ** np.arange(0, 300)
    cand = cand[cand >= 0.5 * p.beta]
    if cand.size == 0:
        return None
    v0 = _u_fast(cand, a, d)
    v1 = _u_fast(cand, a + 1.0, d - 1.0)
    fin = np.isfinite(v0[0] + v0[1] + v0[2] + v1[0] + v1[1] + v1[2]) & (np.abs(v0[1]) + np.abs(v0[2]) > 0)
    if not fin.any():
        return None
    j = int(np.argmax(fin))
    t1 = float(cand[j])
    L0, r0, i0 = (float(v[j]) for v in v0)
    L1, r1, i1 = (float(v[j]) for v in v1)
    y0 = a * math.exp(L1 - L0) * complex(r1, i1) / complex(r0, i0)
    w0 = complex(r0, i0)
    l0 = complex(L0 + math.log(abs(w0)), math.atan2(w0.imag, w0.real))
    def rhs(t, s):
        y = complex(s[0], s[1])
        dy = -y * y - (1.0 + b / t) * y - a / t
        return [dy.real, dy.imag, y.real, y.imag]
    ts = np.unique(t_out)
    sol = solve_ivp(rhs, (t1, float(ts[-1])), [y0.real, y0.imag, l0.real, l0.imag], method="DOP853",
                    t_eval=ts, rtol=1e-12, atol=1e-14)
    if not sol.success:
        return None
    lr = np.interp(t_out, ts, sol.y[2])
    ph = np.interp(t_out, ts, sol.y[3])
    return lr, np.cos(ph), np.sin(ph)

def _u_connection_mp(t: float, a: float, d: float) -> mpmath.mpc | None:
    """``U(a, 1-d, -t-i0)`` in mpmath by the connection formula (DLMF 13.2.42) with Kummer's transformation:
    ``Gamma(d)/Gamma(a+d) M(a, 1-d, -t) + Gamma(-d)/Gamma(a) t^d e^(-i pi d) e^(-t) M(1-a, 1+d, t)``.

    The working precision is raised by the digits the two terms cancel, so about ``_MP_DPS - 5`` digits are right;
    ``None`` where a series does not converge or the cancellation is total.  The route of :func:`_u_mp` where
    ``hyperu`` gives up: for ``d`` in the thousands its hypercomb stalls (``NoConvergence``, then ``ValueError`` with
    more terms) while these two series converge in milliseconds to seconds."""
    extra = 0
    for _ in range(4):
        with mpmath.workdps(_MP_DPS + extra):
            am, dm, tm = mpmath.mpf(a), mpmath.mpf(d), mpmath.mpf(t)
            try:
                first = mpmath.gamma(dm) / mpmath.gamma(am + dm) * mpmath.hyp1f1(am, 1 - dm, -tm, maxterms=10**6)
                second = (mpmath.gamma(-dm) / mpmath.gamma(am) * mpmath.exp(dm * mpmath.log(tm) - tm)
                          * mpmath.hyp1f1(1 - am, 1 + dm, tm, maxterms=10**6) * mpmath.expjpi(-dm))
            except (mpmath.libmp.NoConvergence, ValueError, ZeroDivisionError):
                return None
            u = first + second
            if u == 0:
                return None
            lost = float(mpmath.log10(max(abs(first), abs(second)) / abs(u)))
            if lost <= extra + 5:  # at least _MP_DPS - 5 digits survive the cancellation
                return u
            extra = int(math.ceil(lost)) + 5
    return None

def _u_mp(t: float, p: _P, connection: bool = True) -> tuple[float, float, float]:
    """mpmath version of :func:`_u_fast` at one point (the last resort): ``hyperu``, else (with ``connection``)
    :func:`_u_connection_mp`; nan where both fail."""
    with mpmath.workdps(_MP_DPS):
        try:
            u = mpmath.conj(mpmath.hyperu(mpmath.mpf(p.a), 1 - mpmath.mpf(p.delta), -mpmath.mpf(float(t))))
        except Exception:  # hypsum did not converge (NoConvergence, ValueError, ...)
            u = _u_connection_mp(float(t), p.a, p.delta) if connection else None
            if u is None:
                return np.nan, np.nan, np.nan
        mag = abs(u)
        if mag == 0:
            return -np.inf, 1.0, 0.0
        lg = float(mpmath.log(mag))
        return lg, float(u.real / mag), float(u.imag / mag)

def _u_eval(t: np.ndarray, p: _P, log_t: np.ndarray | None = None,
            exact: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """U(a, 1-delta, -t-i0) = e^L (re + i im) at t > 0: the large-t expansion beyond :func:`_t_huge`, else the fast
    route; where it fails the expansion (error below e^-36), the Riccati continuation above the bulk, finally mpmath
    (without ``exact``, for the coarse CDF grid, which interpolates over failures, ``hyperu`` only: the connection
    formula takes seconds a point at delta ~ 1e4)."""
    t = np.asarray(t, dtype=np.float64)
    if log_t is None:
        with np.errstate(divide="ignore"):
            log_t = np.log(t)
    big = np.full(t.shape, np.nan)
    re = np.full(t.shape, np.nan)
    im = np.full(t.shape, np.nan)
    huge = t > _t_huge(p.a, p.beta)
    ca, sa = math.cos(math.pi * p.a), math.sin(math.pi * p.a)
    if huge.any():
        th = t[huge]
        ls, _ = _log_s_asym(np.minimum(th, 1e300), p.a, p.beta, nmax=64)
        big[huge] = -p.a * log_t[huge] + ls
        re[huge], im[huge] = ca, sa
    rest = ~huge
    if rest.any():
        big[rest], re[rest], im[rest] = _u_fast(t[rest], p.a, p.delta, log_t[rest], exact)
    with np.errstate(all="ignore"):
        mag2 = re * re + im * im
    bad = ~(np.isfinite(big) & np.isfinite(mag2) & (mag2 > 0))
    if bad.any():
        ls, err = _log_s_asym(t[bad], p.a, p.beta)
        ok = err < _ASYM_OK
        idx = np.flatnonzero(bad)[ok]
        big[idx] = -p.a * log_t[idx] + ls[ok]
        re[idx], im[idx] = ca, sa
        bad[idx] = False
    if bad.any():
        good_below = ~bad & (t < t[bad].min()) & (t >= 0.5 * p.beta) & np.isfinite(big)
        upper = bad & (t > p.beta)
        t1 = float(t[good_below].max()) if good_below.any() else p.beta
        if upper.any() and t1 < t[upper].min():
            res = _u_ode(t[upper], p, t1)
            if res is not None:
                big[upper], re[upper], im[upper] = res
                bad[upper] = ~np.isfinite(res[0])
    if bad.any():
        for i in np.flatnonzero(bad):
            big.flat[i], re.flat[i], im.flat[i] = _u_mp(t.flat[i], p, connection=exact)
    return big, re, im

def _near_integer_delta(kappa: float, gamma: float) -> bool:
    """True where delta is within ``_INT_TOL`` of an integer n >= 1 (the connection formula cancels there)."""
    d = kappa * (1 - gamma) / (2 * gamma)
    return round(d) >= 1 and abs(d - round(d)) < _INT_TOL

def _integer_delta_combine(fn, kappa: float, gamma: float):
    """``fn(kappa')`` at delta = n +- h, n +- 2h (h = 1e-3), Lagrange-interpolated to delta: error O(h^4) + 2e-14/h."""
    d = kappa * (1 - gamma) / (2 * gamma)
    n = round(d)
    h = 1e-3
    nodes = np.array([-2.0, -1.0, 1.0, 2.0]) * h
    u = d - n
    out = 0.0
    for j, nj in enumerate(nodes):
        w = np.prod([(u - nk) / (nj - nk) for k, nk in enumerate(nodes) if k != j])
        k_j = (n + nj) * 2 * gamma / (1 - gamma)
        out = out + w * fn(k_j)
    return out

def _mp_limit(kappa: float, gamma: float) -> bool:
    return not any(kappa <= k and kappa / (2 * gamma) <= b for k, b in EXACT_RANGE)

def _check_exact(kappa: float, gamma: float, what: str = "density", limit: str = "mp_density") -> None:
    """Refuse ``what`` (the density, the CDF, ...) outside :data:`EXACT_RANGE`: the MP law there is off by up to 100%
    relative in the density and 0.2 in the CDF, and the exact routes do not converge."""
    if _mp_limit(kappa, gamma):
        k_max = max(min(k, 2 * gamma * b) for k, b in EXACT_RANGE)
        ranges = " or ".join(f"kappa <= {k:g} with beta <= {b:g}" for k, b in EXACT_RANGE)
        raise ValueError(f"the HTMP {what} is computed exactly only for {ranges}, beta = kappa/(2 gamma) (at gamma = "
                         f"{gamma:g}: kappa <= {k_max:.4g}), got kappa = {kappa:g}, gamma = {gamma:g} (beta = "
                         f"{kappa / (2 * gamma):.4g}); its kappa -> inf limit is htlib.spectra.{limit}")

def _logpdf_unit(x: np.ndarray, kappa: float, gamma: float) -> np.ndarray:
    """log rho at finite x > 0 (scale 1), all the special cases but the MP limit handled."""
    if _near_integer_delta(kappa, gamma):
        return _integer_delta_combine(lambda k: _logpdf_unit(x, k, gamma), kappa, gamma)
    p = _P(kappa, gamma)
    log_t = math.log(p.beta) + np.log(x)
    t = p.beta * x
    if p.delta < _TINY_DELTA:
        big, re, im = (np.array(v) for v in zip(*[_u_mp(ti, p) for ti in t.ravel()])) if t.size else (t, t, t)
        big, re, im = big.reshape(t.shape), re.reshape(t.shape), im.reshape(t.shape)
    else:
        big, re, im = _u_eval(t, p, log_t)
    log_u2 = 2 * big + np.log(re * re + im * im)
    return p.log_norm + (p.delta - 1) * log_t - t - log_u2

# ----------------------------------------------------------------------------- density
def htmp_logpdf(x, kappa: float, gamma: float, scale: float = 1.0) -> np.ndarray:
    """Log of the HTMP density at ``x`` (vectorized; ``-inf`` for ``x <= 0`` and ``x = inf``).

    Parameters
    ----------
    x : array_like
        Points; with ``scale = c`` the density is ``rho(x/c)/c``.
    kappa : float
        ``> 0``, within :data:`EXACT_RANGE` (``kappa <= 1000``, ``beta = kappa/(2 gamma) <= 1600``, or
        ``kappa <= 500``, ``beta <= 1e4``).
    gamma : float
        Aspect ratio in (0, 1).
    scale : float
        ``c > 0``, the mean of the law.

    Returns
    -------
    numpy.ndarray
        ``log rho`` with the shape of ``x``.

    Raises
    ------
    ValueError
        ``kappa``, ``gamma`` or ``scale`` out of range, or ``(kappa, gamma)`` outside :data:`EXACT_RANGE`.

    Examples
    --------
    >>> round(float(htmp_logpdf(1.0, 200.0, 0.05)), 4)  # beta = 2000
    0.3443
    >>> htmp_logpdf(1.0, 1e4, 0.5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: the HTMP density is computed exactly only for ... (at gamma = 0.5: kappa <= 1000), got kappa = 10000, ...
    """
    kappa, gamma = _check_params(kappa, gamma)
    scale = _check_scale(scale)
    x = to_numpy(x, "x") / scale
    _check_exact(kappa, gamma)
    out = np.full(x.shape, -np.inf)
    pos = (x > 0) & np.isfinite(x)
    if pos.any():
        out[pos] = _logpdf_unit(x[pos], kappa, gamma)
    out[np.isnan(x)] = np.nan
    return out - math.log(scale)

def htmp_pdf(x, kappa: float, gamma: float, scale: float = 1.0) -> np.ndarray:
    """The HTMP density ``rho(x/scale)/scale`` (vectorized, float64); see :func:`htmp_logpdf`.

    Parameters
    ----------
    x : array_like
        Points; with ``scale = c`` the law is that of ``c X``, ``X ~ HTMP(kappa, gamma)``.
    kappa, gamma : float
        As for :func:`htmp_logpdf`: ``kappa > 0``, ``0 < gamma < 1``, the pair within :data:`EXACT_RANGE`.
    scale : float, default 1.0
        ``c > 0``, the mean of the law.

    Returns
    -------
    numpy.ndarray
        The density at ``x`` (0 at ``x <= 0``).

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.htmp import htmp_cdf, htmp_pdf
    >>> h = 1e-4                          # the density is the derivative of the CDF
    >>> slope = (htmp_cdf(1.0 + h, 2.0, 0.5) - htmp_cdf(1.0 - h, 2.0, 0.5)) / (2 * h)
    >>> bool(np.isclose(slope, htmp_pdf(1.0, 2.0, 0.5), rtol=1e-6))
    True
    >>> bool(np.isclose(htmp_pdf(2.0, 2.0, 0.5, scale=2.0), htmp_pdf(1.0, 2.0, 0.5) / 2))   # rho(x/c)/c
    True
    >>> htmp_pdf(np.array([-1.0, 0.0]), 2.0, 0.5).tolist()
    [0.0, 0.0]
    """
    return np.exp(htmp_logpdf(x, kappa, gamma, scale))

def inverse_htmp_pdf(y, kappa: float, gamma: float) -> np.ndarray:
    """Density ``rho(1/y)/y^2`` of ``1/X``, ``X ~ HTMP(kappa, gamma)``; its upper tail has exponent ``1 + delta``.
    Refuses ``(kappa, gamma)`` outside :data:`EXACT_RANGE`, as :func:`htmp_logpdf` does.

    Parameters
    ----------
    y : array_like
        Points (the density is 0 at ``y <= 0``).
    kappa, gamma : float
        ``kappa > 0``, ``0 < gamma < 1``, the pair within :data:`EXACT_RANGE`.

    Returns
    -------
    numpy.ndarray
        The density of ``1/X`` at ``y``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.htmp import htmp_pdf, inverse_htmp_pdf
    >>> bool(np.isclose(inverse_htmp_pdf(2.0, 2.0, 0.5), htmp_pdf(0.5, 2.0, 0.5) / 4))   # rho(1/y) / y**2
    True
    """
    _check_exact(*_check_params(kappa, gamma))
    y = to_numpy(y, "y")
    out = np.zeros(y.shape)
    pos = y > 0
    out[pos] = np.exp(htmp_logpdf(1.0 / y[pos], kappa, gamma) - 2 * np.log(y[pos]))
    out[np.isnan(y)] = np.nan
    return out

def inverse_tail_slope(y, kappa: float, gamma: float) -> np.ndarray:
    """Local slope ``d log f / d log y`` of the inverse law's density (central differences): to ``-(1 + delta)``.

    Parameters
    ----------
    y : array_like
        Points ``> 0``.
    kappa, gamma : float
        ``kappa > 0``, ``0 < gamma < 1``, the pair within :data:`EXACT_RANGE`.

    Returns
    -------
    numpy.ndarray
        The local log-log slope at ``y``.

    Examples
    --------
    >>> from htlib.htmp import inverse_tail_slope
    >>> round(float(inverse_tail_slope(1e6, 2.0, 0.5)), 2)   # delta = 1: slope -> -2
    -2.0
    """
    y = to_numpy(y, "y")
    h = 1e-4
    up = np.log(inverse_htmp_pdf(y * math.exp(h), kappa, gamma))
    down = np.log(inverse_htmp_pdf(y * math.exp(-h), kappa, gamma))
    return (up - down) / (2 * h)

@dataclass(frozen=True)
class TailExponents:
    """``htmp_lower``: rho(x) ~ x^htmp_lower as x -> 0; the inverse law's density decays like y^(-inverse_alpha).

    Attributes
    ----------
    htmp_lower : float
        Exponent of the density near zero, ``delta - 1``.
    inverse_alpha : float
        Decay exponent of the inverse law's density, ``1 + delta``.

    Examples
    --------
    >>> from htlib.htmp import tail_exponents
    >>> t = tail_exponents(1.0, 0.25)   # delta = 1 * 0.75 / 0.5 = 1.5
    >>> round(t.htmp_lower, 4), round(t.inverse_alpha, 4)
    (0.5, 2.5)
    """
    htmp_lower: float
    inverse_alpha: float

def tail_exponents(kappa: float, gamma: float) -> TailExponents:
    """Tail exponents: ``delta - 1`` near zero for HTMP, ``1 + delta`` for the inverse law.

    Parameters
    ----------
    kappa : float
        ``> 0``.
    gamma : float
        Aspect ratio in (0, 1).

    Returns
    -------
    TailExponents
        ``htmp_lower = delta - 1`` and ``inverse_alpha = 1 + delta``, ``delta = kappa (1 - gamma) / (2 gamma)``.

    Examples
    --------
    >>> from htlib.htmp import tail_exponents
    >>> t = tail_exponents(2.0, 0.5)    # delta = 2 * 0.5 / 1 = 1
    >>> round(t.htmp_lower, 4), round(t.inverse_alpha, 4)
    (0.0, 2.0)
    """
    kappa, gamma = _check_params(kappa, gamma)
    d = _P(kappa, gamma).delta
    return TailExponents(htmp_lower=d - 1.0, inverse_alpha=1.0 + d)

@dataclass(frozen=True)
class HTMPMoments:
    """Result of :func:`htmp_moments`: ``mean`` (= 1), ``second`` moment and ``variance``.

    Attributes
    ----------
    mean : float
        The mean, 1.
    second : float
        The second moment ``1 + gamma + 2 gamma / kappa``.
    variance : float
        ``second - 1``.

    Examples
    --------
    >>> from htlib.htmp import htmp_moments
    >>> m = htmp_moments(1.0, 0.25)                 # 1 + 0.25 + 0.5
    >>> round(m.second, 4), round(m.variance, 4)
    (1.75, 0.75)
    """
    mean: float
    second: float
    variance: float

def htmp_moments(kappa: float, gamma: float) -> HTMPMoments:
    """Mean (= 1), second moment ``1 + gamma + 2 gamma/kappa`` and variance of HTMP.

    Parameters
    ----------
    kappa : float
        ``> 0``.
    gamma : float
        Aspect ratio in (0, 1).

    Returns
    -------
    HTMPMoments
        Mean, second moment and variance.

    Examples
    --------
    >>> from htlib.htmp import htmp_moments
    >>> m = htmp_moments(2.0, 0.5)              # 1 + 0.5 + 2 * 0.5 / 2
    >>> m.mean, round(m.second, 4), round(m.variance, 4)
    (1.0, 2.0, 1.0)
    """
    kappa, gamma = _check_params(kappa, gamma)
    m2 = 1.0 + gamma + 2.0 * gamma / kappa
    return HTMPMoments(mean=1.0, second=m2, variance=m2 - 1.0)

def kappa_from_moments(eigs, gamma: float) -> tuple[float, float]:
    """Moment estimator ``(kappa, scale)``: ``scale = mean``, ``kappa = 2 gamma/(m2/m1^2 - 1 - gamma)``, ``inf`` (MP)
    when the denominator is <= 0; sensitive to outliers.

    Parameters
    ----------
    eigs : array_like
        Non-negative eigenvalues, not all zero.
    gamma : float
        Aspect ratio in (0, 1).

    Returns
    -------
    tuple of float
        ``(kappa, scale)``.

    Examples
    --------
    >>> from htlib.htmp import kappa_from_moments, sample_htmp
    >>> k, c = kappa_from_moments(sample_htmp(2000, 2.0, 0.5, seed=0), 0.5)
    >>> bool(1.6 < k < 2.4), round(c, 6)       # the sample is normalized to mean 1
    (True, 1.0)
    """
    _check_params(1.0, gamma)
    e = check_vector("eigs", eigs)
    if np.any(e < 0) or not np.any(e > 0):
        raise ValueError("eigs must be eigenvalues of WᵀW: non-negative and not all zero")
    m1 = float(e.mean())
    denom = float(np.mean(e * e) / (m1 * m1)) - 1.0 - gamma
    return (2.0 * gamma / denom if denom > 0 else math.inf), m1

def quadrature_moments(kappa: float, gamma: float, orders=(0, 1, 2)) -> np.ndarray:
    """``int x^k rho(x) dx`` for k in ``orders`` by quadrature: the independent check of :func:`htmp_moments`.

    Parameters
    ----------
    kappa : float
        ``> 0``.
    gamma : float
        Aspect ratio in (0, 1).
    orders : sequence of int, default (0, 1, 2)
        Moment orders.

    Returns
    -------
    numpy.ndarray
        One moment per order.

    Examples
    --------
    >>> from htlib.htmp import htmp_moments, quadrature_moments
    >>> m2 = quadrature_moments(2.0, 0.5, orders=(2,))
    >>> round(float(m2[0]), 6) == round(htmp_moments(2.0, 0.5).second, 6)   # 1 + 0.5 + 2 * 0.5 / 2 = 2
    True
    """
    kappa, gamma = _check_params(kappa, gamma)
    orders = check_ints("orders", orders, 0, min_len=1)
    pts = [0.0, 1e-12, 1e-8, 1e-5, 1e-3, 0.1, 0.5, 1.0, 2.0, 4.0, np.inf]
    out = []
    for k in orders:
        f = lambda x, k=k: x**k * htmp_pdf(x, kappa, gamma)  # noqa: E731
        out.append(sum(integrate.quad(f, lo, hi, limit=200, epsabs=1e-13, epsrel=1e-11)[0] for lo, hi in zip(pts[:-1], pts[1:])))
    return np.array(out)

def ks_distance(eigs, kappa: float, gamma: float, scale: float = 1.0) -> float:
    """KS distance between the empirical CDF of ``eigs`` and HTMP's CDF (``kappa = inf``: Marchenko-Pastur's).

    Parameters
    ----------
    eigs : array_like
        The sample.
    kappa : float
        ``> 0``, or ``inf`` for Marchenko-Pastur.
    gamma : float
        Aspect ratio in (0, 1).
    scale : float, default 1.0
        The mean of the law.

    Returns
    -------
    float
        The KS distance, in ``[0, 1]``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.htmp import ks_distance, sample_htmp
    >>> x = sample_htmp(1000, 2.0, 0.5, seed=0)
    >>> bool(ks_distance(x, 2.0, 0.5) < 0.05), bool(ks_distance(x, np.inf, 0.5) > 0.1)   # its own law, and MP
    (True, True)
    """
    x = np.sort(check_vector("eigs", eigs))
    kappa, gamma = _check_params(kappa, gamma, mp_limit=True)
    if math.isinf(kappa):
        from htlib import spectra
        return ks_distance_sorted(spectra.mp_cdf(x, gamma, _check_scale(scale)))
    return ks_distance_sorted(htmp_cdf(x, kappa, gamma, scale))

# ----------------------------------------------------------------------------- CDF
def _upper_t(p: _P) -> float:
    """A t above which the mass is negligible: Gamma-like tail, and past the MP upper edge."""
    shape = p.delta + 2 * p.a
    edge = p.beta * (1.0 + math.sqrt(p.gamma)) ** 2
    return max(shape + 25.0 * math.sqrt(shape), 1.2 * edge + 25.0 * math.sqrt(edge)) + 60.0

def _u_any(t: np.ndarray, p: _P, log_t: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_u_eval`, or mpmath point by point where delta < ``_TINY_DELTA``."""
    if p.delta >= _TINY_DELTA:
        return _u_eval(t, p, log_t)
    vals = [_u_mp(ti, p) for ti in np.ravel(t)]
    return tuple(np.array([v[j] for v in vals], dtype=np.float64).reshape(np.shape(t)) for j in range(3))

@functools.lru_cache(maxsize=64)
def _approx_cdf_grid(kappa: float, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """A coarse CDF (trapezoid on a log grid in t) used only to pick the branch of the phase."""
    p = _P(kappa, gamma)
    t_lo = p.beta * 1e-30 if p.delta < 10 else 0.01 * p.delta  # below: mass < (0.03)^delta
    log_t = np.linspace(math.log(t_lo), math.log(_upper_t(p)), 3000)
    t = np.exp(log_t)
    big, re, im = _u_eval(t, p, log_t, exact=False)
    with np.errstate(all="ignore"):
        lu = 2 * big + np.log(re * re + im * im)  # log |U|^2
    ok = np.isfinite(lu)
    suspect = _scipy_suspect(p.a, 1.0 - p.delta, -t)
    if suspect.any():  # SciPy's bad window: exact values at every 16th point, interpolated between
        ok &= ~suspect
        sub = np.flatnonzero(suspect)[::16]
        bs, rs, is_ = _u_eval(t[sub], p, log_t[sub])
        with np.errstate(all="ignore"):
            lu[sub] = 2 * bs + np.log(rs * rs + is_ * is_)
        ok[sub] = np.isfinite(lu[sub])
    if not ok.all():  # coarse grid only: log|U|^2 interpolated over the points that failed
        lu = np.interp(log_t, log_t[ok], lu[ok])
    log_rho_t = p.log_norm - math.log(p.beta) + (p.delta - 1) * log_t - t - lu
    f = np.exp(log_rho_t + log_t)  # density in log t
    cum = np.concatenate([[0.0], np.cumsum(0.5 * (f[1:] + f[:-1]) * np.diff(log_t))])
    # the mass below the grid is what it misses of 1 (not f[0]/delta: for small delta |U|^2 ~ log^2 t there)
    cum += max(0.0, 1.0 - cum[-1])
    return t, cum

def _cdf_t(t: np.ndarray, p: _P, log_t: np.ndarray) -> np.ndarray:
    big, re, im = _u_any(t, p, log_t)
    w = np.mod(np.arctan2(im, re), np.pi)  # phase modulo pi
    if p.a < 0.9:
        k = np.zeros_like(w)  # phi in [0, 0.9 pi): no branch to choose
    else:
        grid_t, grid_f = _approx_cdf_grid(p.kappa, p.gamma)
        f_approx = np.interp(t, grid_t, grid_f, left=0.0, right=1.0)
        k = np.round((math.pi * p.a * f_approx - w) / math.pi)
    return np.clip((k * math.pi + w) / (math.pi * p.a), 0.0, 1.0)

def _cdf_unit(x: np.ndarray, kappa: float, gamma: float) -> np.ndarray:
    """F at finite x > 0 (scale 1), integer delta interpolated."""
    if _near_integer_delta(kappa, gamma):
        return np.clip(_integer_delta_combine(lambda k: _cdf_unit(x, k, gamma), kappa, gamma), 0.0, 1.0)
    p = _P(kappa, gamma)
    return _cdf_t(p.beta * x, p, math.log(p.beta) + np.log(x))

_GL_X, _GL_W = np.polynomial.legendre.leggauss(20)
_SF_PANELS = np.array([0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 48.0])

def _tail_mass(x: np.ndarray, kappa: float, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """``int_x^inf rho`` beyond the mode with relative accuracy: Gauss-Legendre panels ``x + [0, .25, ..., 48]/r`` of
    ``rho(u)/rho(x)``, ``r`` the local decay rate of ``log rho`` (all but e^-48 of the tail)."""
    lx = _logpdf_unit(x, kappa, gamma)
    h = 1e-6 * x
    r = -(_logpdf_unit(x + h, kappa, gamma) - _logpdf_unit(x - h, kappa, gamma)) / (2 * h)
    r = np.where(r > 0, r, np.nan)
    lo, hi = _SF_PANELS[:-1], _SF_PANELS[1:]
    nodes = (0.5 * (hi - lo))[:, None] * _GL_X[None, :] + (0.5 * (hi + lo))[:, None]  # (panels, 20)
    wts = (0.5 * (hi - lo))[:, None] * _GL_W[None, :]
    u = x[:, None] + nodes.ravel()[None, :] / r[:, None]
    lu = _logpdf_unit(np.where(np.isfinite(u), u, 1.0).ravel(), kappa, gamma).reshape(u.shape)
    s = np.sum(np.exp(lu - lx[:, None]) * wts.ravel()[None, :], axis=1) / r
    return np.exp(lx) * s, lx + np.log(s)

def _sf_unit(x: np.ndarray, kappa: float, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """(sf, log sf) at finite x > 0: ``1 - F`` where ``F < 0.99``, the tail integral beyond."""
    f = _cdf_unit(x, kappa, gamma)
    sf = 1.0 - f
    with np.errstate(divide="ignore"):
        lsf = np.log(sf)
    far = f > 0.99
    if far.any():
        s, ls = _tail_mass(x[far], kappa, gamma)
        okk = np.isfinite(ls)
        sf[np.flatnonzero(far)[okk]] = s[okk]
        lsf[np.flatnonzero(far)[okk]] = ls[okk]
    return sf, lsf

def htmp_cdf(x, kappa: float, gamma: float, scale: float = 1.0) -> np.ndarray:
    """The HTMP CDF ``F(x) = (2/(pi kappa)) arg U(kappa/2, 1-delta, -beta x - i0)``, unwrapped: the phase modulo pi
    exactly, its branch from a coarse integral of the density.

    Parameters
    ----------
    x : array_like
        Points; with ``scale = c`` the CDF is ``F(x/c)``.
    kappa, gamma : float
        As for :func:`htmp_logpdf`: ``kappa > 0``, ``0 < gamma < 1``, the pair within :data:`EXACT_RANGE`.
    scale : float
        ``c > 0``, the mean of the law.

    Returns
    -------
    numpy.ndarray
        ``F`` with the shape of ``x``: 0 at ``x <= 0``, 1 at ``x = inf``.  Against a 50-digit mpmath reference at
        the bulk edges across :data:`EXACT_RANGE` (``tests/test_htmp_edges.py``) within 1.1e-9 absolute, at
        ``kappa = 2``, ``beta = 1e4`` (``delta = 9999``, interpolated), and 3.1e-11 or better elsewhere on that grid;
        :func:`htmp_sf` for the upper tail.

    Raises
    ------
    ValueError
        ``kappa``, ``gamma`` or ``scale`` out of range, or ``(kappa, gamma)`` outside :data:`EXACT_RANGE` (the
        Marchenko-Pastur CDF, the kappa -> inf limit, is ``htlib.spectra.mp_cdf``).

    Examples
    --------
    >>> round(float(htmp_cdf(1.0, 2.0, 0.5)), 4)
    0.6214
    >>> htmp_cdf(1.0, 0.5, 2e-5)  # beta = 12500  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: the HTMP CDF is computed exactly only for ... got kappa = 0.5, gamma = 2e-05 (beta = 1.25e+04); ...
    """
    kappa, gamma = _check_params(kappa, gamma)
    scale = _check_scale(scale)
    x = to_numpy(x, "x") / scale
    _check_exact(kappa, gamma, "CDF", "mp_cdf")
    out = np.where(x == np.inf, 1.0, 0.0)
    pos = (x > 0) & np.isfinite(x)
    if pos.any():
        out[pos] = _cdf_unit(x[pos], kappa, gamma)
    out[np.isnan(x)] = np.nan
    return out

def htmp_sf(x, kappa: float, gamma: float, scale: float = 1.0) -> np.ndarray:
    """Survival function ``1 - F(x)``, relatively accurate in the upper tail (a tail integral where ``F > 0.99``);
    refuses outside :data:`EXACT_RANGE` as :func:`htmp_cdf` does.

    Parameters
    ----------
    x : array_like
        Points; with ``scale = c`` the law is that of ``c X``, ``X ~ HTMP(kappa, gamma)``.
    kappa, gamma : float
        As for :func:`htmp_logpdf`: ``kappa > 0``, ``0 < gamma < 1``, the pair within :data:`EXACT_RANGE`.
    scale : float, default 1.0
        ``c > 0``, the mean of the law.

    Returns
    -------
    numpy.ndarray
        ``1 - F(x)`` with the shape of ``x``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.htmp import htmp_cdf, htmp_sf
    >>> x = np.array([0.5, 1.0, 3.0])
    >>> bool(np.allclose(htmp_sf(x, 2.0, 0.5) + htmp_cdf(x, 2.0, 0.5), 1.0))
    True
    >>> bool(0.0 < htmp_sf(50.0, 2.0, 0.5) < 1e-30)   # far in the tail, still resolved
    True
    """
    return np.exp(htmp_logsf(x, kappa, gamma, scale))

def htmp_logsf(x, kappa: float, gamma: float, scale: float = 1.0) -> np.ndarray:
    """``log(1 - F(x))``, finite far into the upper tail (see :func:`htmp_sf`).

    Parameters
    ----------
    x : array_like
        Points; with ``scale = c`` the law is that of ``c X``, ``X ~ HTMP(kappa, gamma)``.
    kappa, gamma : float
        As for :func:`htmp_logpdf`: ``kappa > 0``, ``0 < gamma < 1``, the pair within :data:`EXACT_RANGE`.
    scale : float, default 1.0
        ``c > 0``, the mean of the law.

    Returns
    -------
    numpy.ndarray
        ``log(1 - F(x))`` with the shape of ``x`` (``-inf`` at ``x = inf``).

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.htmp import htmp_logsf, htmp_sf
    >>> bool(np.isclose(np.exp(htmp_logsf(2.0, 2.0, 0.5)), htmp_sf(2.0, 2.0, 0.5)))
    True
    >>> ls = htmp_logsf(np.array([50.0, 200.0]), 2.0, 0.5)   # beyond float64's smallest survival probability
    >>> bool(np.all(np.isfinite(ls))), bool(ls[1] < ls[0] < -80)
    (True, True)
    """
    kappa, gamma = _check_params(kappa, gamma)
    scale = _check_scale(scale)
    x = to_numpy(x, "x") / scale
    _check_exact(kappa, gamma, "survival function", "mp_cdf")
    out = np.where(x == np.inf, -np.inf, 0.0)
    pos = (x > 0) & np.isfinite(x)
    if pos.any():
        out[pos] = _sf_unit(x[pos], kappa, gamma)[1]
    out[np.isnan(x)] = np.nan
    return out

def htmp_logcdf(x, kappa: float, gamma: float, scale: float = 1.0) -> np.ndarray:
    """``log F(x)``: relatively accurate in the lower tail, ``log1p(-sf)`` in the upper.

    Parameters
    ----------
    x : array_like
        Points; with ``scale = c`` the law is that of ``c X``, ``X ~ HTMP(kappa, gamma)``.
    kappa, gamma : float
        As for :func:`htmp_logpdf`: ``kappa > 0``, ``0 < gamma < 1``, the pair within :data:`EXACT_RANGE`.
    scale : float, default 1.0
        ``c > 0``, the mean of the law.

    Returns
    -------
    numpy.ndarray
        ``log F(x)`` with the shape of ``x``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.htmp import htmp_cdf, htmp_logcdf
    >>> x = np.array([0.1, 1.0, 5.0])
    >>> bool(np.allclose(np.exp(htmp_logcdf(x, 2.0, 0.5)), htmp_cdf(x, 2.0, 0.5)))
    True
    """
    kappa, gamma = _check_params(kappa, gamma)
    scale = _check_scale(scale)
    x = to_numpy(x, "x") / scale
    with np.errstate(divide="ignore"):
        f = np.log(htmp_cdf(x, kappa, gamma))
        upper = f > math.log(0.5)
        if upper.any():
            f[upper] = np.log1p(-htmp_sf(x[upper], kappa, gamma))
    return f

# ----------------------------------------------------------------------------- Stieltjes
def htmp_stieltjes(z, kappa: float, gamma: float) -> np.ndarray:
    """Stieltjes transform ``m(z) = int rho(l) / (l - z) dl`` for ``z`` off ``[0, inf)``, in closed form
    ``beta U(a+1, 2-delta, -beta z) / U(a, 1-delta, -beta z)`` by mpmath (about 1 ms a point).

    Parameters
    ----------
    z : array_like of complex
        Points off the support ``[0, inf)``.
    kappa, gamma : float
        ``kappa > 0``, ``0 < gamma < 1``.

    Returns
    -------
    numpy.ndarray of complex
        ``m(z)`` with the shape of ``z``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.htmp import htmp_stieltjes
    >>> z = -1e4
    >>> round(float((-z * htmp_stieltjes(z, 2.0, 0.5)).real), 3)   # -z m(z) -> 1 (the total mass) as z -> -inf
    1.0
    >>> m = htmp_stieltjes(np.array([1j]), 2.0, 0.5)
    >>> bool(m[0].imag > 0)     # Im m(z) > 0 above the real axis
    True
    """
    kappa, gamma = _check_params(kappa, gamma)
    p = _P(kappa, gamma)
    z = np.asarray(z, dtype=np.complex128)
    on_support = (z.imag == 0) & (z.real >= 0)
    if on_support.any():
        raise ValueError("z must lie off the support [0, inf) of HTMP (Im z != 0 or Re z < 0)")
    out = np.empty(z.shape, dtype=np.complex128)
    with mpmath.workdps(_MP_DPS):
        a = mpmath.mpf(p.a)
        d = mpmath.mpf(p.delta)
        beta = mpmath.mpf(p.beta)
        for idx in np.ndindex(z.shape):
            w = -beta * mpmath.mpc(z[idx].real, z[idx].imag)
            out[idx] = complex(beta * mpmath.hyperu(a + 1, 2 - d, w) / mpmath.hyperu(a, 1 - d, w))
    return out

# ----------------------------------------------------------------------------- sampler
def _log_chi(dof: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """log of chi_dof samples, exact for tiny dof: log G(k) = log G(k+1) + log(U)/k."""
    k = dof / 2.0
    lg = np.log(rng.standard_gamma(k + 1.0)) + np.log(rng.random(k.shape)) / k
    return 0.5 * (math.log(2.0) + lg)

def sample_htmp(n: int, kappa: float, gamma: float, *, seed: int) -> np.ndarray:
    """``n`` eigenvalues of the beta-Laguerre model, normalized to mean 1 (ascending).

    Lower-bidiagonal ``B`` with ``d_i ~ chi_{kappa/gamma - b(i-1)}``, ``s_i ~ chi_{b(n-i)}``, ``b = kappa/n``
    (Dumitriu-Edelman), chi variables in logs; eigenvalues of ``B B^T`` by LAPACK sterf, those below ``1e-6`` of the
    largest as squared singular values of ``B`` (stebz).  Below about ``1e-290`` of the largest they underflow to 0.

    Parameters
    ----------
    n : int
        Number of eigenvalues, ``>= 2``.
    kappa : float
        ``> 0``.
    gamma : float
        Aspect ratio in (0, 1).
    seed : int
        Seed of NumPy's generator, ``>= 0``.

    Returns
    -------
    numpy.ndarray
        The ``n`` eigenvalues, ascending, with mean 1.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.htmp import sample_htmp
    >>> x = sample_htmp(1000, 2.0, 0.5, seed=0)
    >>> x.shape, round(float(x.mean()), 6), bool(np.all(np.diff(x) >= 0))
    ((1000,), 1.0, True)
    >>> bool(abs(np.mean(x ** 2) - 2.0) < 0.2)   # the law's second moment 1 + gamma + 2 gamma / kappa = 2
    True
    """
    kappa, gamma = _check_params(kappa, gamma)
    n = check_int("n", n, 2)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    b = kappa / n
    i = np.arange(1, n + 1, dtype=np.float64)
    log_d = _log_chi(kappa / gamma - b * (i - 1), rng)
    log_s = _log_chi(b * (n - i[:-1]), rng)
    # the scale drops out; the max over both diagonals keeps every entry <= 1 (tiny kappa: s_i >> d_i)
    shift = float(max(np.max(log_d), np.max(log_s, initial=-np.inf)))
    d = np.exp(log_d - shift)
    s = np.exp(log_s - shift)
    diag = d * d
    diag[1:] += s * s
    lam = eigh_tridiagonal(diag, d[:-1] * s, eigvals_only=True, lapack_driver="sterf")
    lam = np.sort(np.maximum(lam, 0.0))
    # sterf is accurate to eps * max(lam): the small ones by bisection on the Golub-Kahan tridiagonal of B
    cut = 1e-6 * lam[-1]
    n_small = int(np.searchsorted(lam, cut))
    if n_small:
        e = np.empty(2 * n - 1)
        e[0::2] = d
        e[1::2] = s
        sv = eigh_tridiagonal(np.zeros(2 * n), e, eigvals_only=True, select="v",
                              select_range=(0.0, math.sqrt(cut)), lapack_driver="stebz")
        small = np.sort(sv[sv > 0] ** 2)[:n_small]
        lam[n_small - small.size : n_small] = small
        lam[: n_small - small.size] = 0.0  # exact zeros (below the float64 range)
        lam.sort()
    return lam / lam.mean()

# ----------------------------------------------------------------------------- fit
@dataclass(frozen=True)
class HTMPFit:
    """Result of :func:`fit_htmp`: ``kappa`` (``inf``: MP won), ``scale`` and ``ks`` of HTMP; ``mp_scale``/``mp_ks`` of
    MP on the same data; ``kappa_moment`` the moment estimate.

    Attributes
    ----------
    kappa : float
        Fitted ``kappa`` (``inf``: Marchenko-Pastur fits at least as well).
    scale : float
        Fitted scale (the mean of the law).
    ks : float
        KS distance of the fitted law.
    mp_scale, mp_ks : float
        Scale and KS distance of the best Marchenko-Pastur law.
    kappa_moment : float
        The moment estimate of ``kappa``.
    gamma : float
        The aspect ratio used.

    Examples
    --------
    >>> from htlib.htmp import fit_htmp, sample_htmp
    >>> f = fit_htmp(sample_htmp(1000, 2.0, 0.5, seed=0), 0.5, method="moments")
    >>> bool(1.5 < f.kappa < 2.5), f.ks < f.mp_ks, f.gamma
    (True, True, 0.5)
    """
    kappa: float
    scale: float
    ks: float
    mp_scale: float
    mp_ks: float
    kappa_moment: float
    gamma: float

def fit_scale_ks(x: np.ndarray, cdf_of_x, c0: float) -> tuple[float, float]:
    """The scale ``c`` minimizing the KS distance of ``x / c`` to ``cdf_of_x`` within ``c0 e^(+-0.7)``: ``(c, KS)``
    (not ``htlib.spectra.fit_mp``, which matches the bulk median).

    Parameters
    ----------
    x : numpy.ndarray
        The sample, sorted ascending.
    cdf_of_x : callable
        CDF of the unit-scale law, vectorized.
    c0 : float
        Centre of the searched range of scales, ``> 0``.

    Returns
    -------
    tuple of float
        ``(c, KS)``: the scale and the KS distance of ``x / c``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.htmp import fit_scale_ks
    >>> x = np.sort(2.5 * np.random.default_rng(0).exponential(size=2000))   # an exponential law of scale 2.5
    >>> c, ks = fit_scale_ks(x, lambda y: 1.0 - np.exp(-y), c0=2.0)
    >>> bool(abs(c - 2.5) < 0.1), bool(ks < 0.03)
    (True, True)
    """
    c0 = check_float("c0", c0, low=0.0)
    def obj(lc: float) -> float:
        return ks_distance_sorted(cdf_of_x(x / math.exp(lc)))
    grid = math.log(c0) + np.linspace(-0.7, 0.7, 15)
    vals = [obj(g) for g in grid]
    j = int(np.argmin(vals))
    lo, hi = grid[max(j - 1, 0)], grid[min(j + 1, len(grid) - 1)]
    res = optimize.minimize_scalar(obj, bounds=(lo, hi), method="bounded", options={"xatol": 1e-4})
    if res.fun < vals[j]:
        return math.exp(res.x), float(res.fun)
    return math.exp(grid[j]), float(vals[j])

def _cdf_interpolant(kappa: float, gamma: float, lo: float, hi: float):
    """Exact CDF on a log grid over [lo, hi], interpolated (monotone, cheap to rescale)."""
    xs = np.geomspace(lo, hi, 1500)
    fs = htmp_cdf(xs, kappa, gamma)
    lx = np.log(xs)
    return lambda x: np.interp(np.log(x), lx, fs, left=0.0, right=1.0)

def fit_htmp(eigs, gamma: float, *, method: str = "ks", kappa_bounds: tuple[float, float] | None = None) -> HTMPFit:
    """Fit HTMP's ``kappa`` and scale to an empirical spectrum by minimal KS distance.

    Parameters
    ----------
    eigs : array_like
        Eigenvalues (positive ones are used).
    gamma : float
        Aspect ratio in (0, 1), fixed.
    method : {"ks", "moments"}
        ``"ks"``: minimize KS over ``kappa`` in ``kappa_bounds`` and the scale; ``kappa = inf`` when the MP fit is at
        least as close.  ``"moments"``: the moment estimator (:func:`kappa_from_moments`).
    kappa_bounds : (float, float), optional
        Default ``(0.1, min(50, 300 gamma))``: beyond ``kappa ~ 50`` HTMP is within KS noise of MP at 1000 eigenvalues.

    Returns
    -------
    HTMPFit
        The fitted ``kappa`` and scale with their KS distance, and the MP fit on the same data.

    Examples
    --------
    >>> from htlib.htmp import fit_htmp, sample_htmp
    >>> f = fit_htmp(sample_htmp(1000, 2.0, 0.5, seed=0), 0.5)
    >>> bool(1.5 < f.kappa < 2.5), bool(f.ks < 0.05), bool(f.mp_ks > 2 * f.ks)
    (True, True, True)
    """
    from htlib import spectra
    _check_params(1.0, gamma)
    check_choice("method", method, ("ks", "moments"))
    if kappa_bounds is None:
        kappa_bounds = (0.1, min(50.0, 300.0 * gamma))
    lo_k, hi_k = map(float, kappa_bounds)
    if not (0 < lo_k < hi_k < math.inf):
        raise ValueError(f"kappa_bounds must satisfy 0 < low < high < inf, got {kappa_bounds}")
    x = np.sort(check_vector("eigs", eigs))  # NaN/inf or complex values: a computation upstream failed
    x = x[x > 0]
    if x.size < 10:
        raise ValueError(f"eigs must hold at least 10 positive finite values, got {x.size}")
    k_mom, m1 = kappa_from_moments(x, gamma)
    def mp_cdf(y):
        return spectra.mp_cdf(y, gamma, 1.0)
    mp_scale, mp_ks = fit_scale_ks(x, mp_cdf, m1)
    if method == "moments":
        k = k_mom if (math.isinf(k_mom) or k_mom <= hi_k) else math.inf
        ks = mp_ks if math.isinf(k) else ks_distance_sorted(htmp_cdf(x / m1, max(k, lo_k), gamma))
        return HTMPFit(k, m1 if math.isfinite(k) else mp_scale, ks, mp_scale, mp_ks, k_mom, gamma)
    lo_x, hi_x = x[0] / m1 / 4.0, x[-1] / m1 * 4.0
    def profile(log_k: float) -> tuple[float, float]:
        cdf = _cdf_interpolant(math.exp(log_k), gamma, lo_x, hi_x)
        return fit_scale_ks(x, cdf, m1)
    grid = np.linspace(math.log(lo_k), math.log(hi_k), 12)
    prof = [profile(g) for g in grid]
    j = int(np.argmin([p[1] for p in prof]))
    a, b = grid[max(j - 1, 0)], grid[min(j + 1, len(grid) - 1)]
    res = optimize.minimize_scalar(lambda g: profile(g)[1], bounds=(a, b), method="bounded", options={"xatol": 0.01})
    best_lk, (best_c, best_ks) = (res.x, profile(res.x)) if res.fun < prof[j][1] else (grid[j], prof[j])
    # exact KS at the optimum (the interpolant was only used for the search)
    best_k = math.exp(best_lk)
    best_ks = ks_distance_sorted(htmp_cdf(x / best_c, best_k, gamma))
    if mp_ks <= best_ks:
        return HTMPFit(math.inf, mp_scale, mp_ks, mp_scale, mp_ks, k_mom, gamma)
    return HTMPFit(best_k, best_c, best_ks, mp_scale, mp_ks, k_mom, gamma)

# ----------------------------------------------------------------------------- histogram-L1 fit
@dataclass(frozen=True)
class HistFit:
    """Result of :func:`fit_htmp_l1`: ``kappa``, the L1 distances ``l1`` (HTMP) and ``mp_l1`` (MP, mean 1) to the
    histogram, the ``shift`` subtracted and the ``scale`` divided by, ``ks`` its KS, ``at_bound`` at the top.

    Attributes
    ----------
    kappa : float
        Fitted ``kappa``.
    l1, mp_l1 : float
        L1 distances of the HTMP and MP densities to the histogram.
    shift, scale : float
        The shift subtracted and the scale divided by.
    ks : float
        KS distance of the fitted law.
    gamma : float
        The aspect ratio used.
    at_bound : bool
        The optimum is at the upper end of ``kappa_bounds``.

    Examples
    --------
    >>> from htlib.htmp import fit_htmp_l1, sample_htmp
    >>> f = fit_htmp_l1(sample_htmp(2000, 1.0, 0.5, seed=1), 0.5, shift=False)
    >>> f.shift, f.at_bound, bool(f.l1 < f.mp_l1)
    (0.0, False, True)
    """
    kappa: float
    l1: float
    mp_l1: float
    shift: float
    scale: float
    ks: float
    gamma: float
    at_bound: bool

def hist_l1(x, kappa: float, gamma: float, *, bins: int = 50) -> float:
    """L1 distance ``sum_i |h_i - rho(c_i)| w`` between the density histogram of ``x`` (``bins`` equal bins) and the
    HTMP density at the bin centres (``kappa = inf``: Marchenko-Pastur, mean 1).

    Parameters
    ----------
    x : array_like
        Sample (scaled to mean 1).
    kappa : float
        ``> 0``, or ``inf`` for Marchenko-Pastur.
    gamma : float
        Aspect ratio in (0, 1).
    bins : int, default 50
        Equal-width histogram bins.

    Returns
    -------
    float
        The L1 distance.

    Examples
    --------
    >>> x = sample_htmp(2000, 2.0, 0.5, seed=0)
    >>> hist_l1(x, 2.0, 0.5) < hist_l1(x, 20.0, 0.5)
    True
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    bins = check_int("bins", bins, 2)
    h, edges = np.histogram(x, bins=bins, density=True)
    c = 0.5 * (edges[1:] + edges[:-1])
    if math.isinf(kappa):
        from htlib import spectra
        _check_params(1.0, gamma)
        rho = spectra.mp_density(c, gamma, 1.0)
    else:
        rho = htmp_pdf(c, kappa, gamma)
    return float(np.sum(np.abs(h - rho)) * (edges[1] - edges[0]))

def fit_htmp_l1(eigs, gamma: float, *, bins: int = 50, kappa_bounds: tuple[float, float] = (0.01, 10.0),
                shift: bool = True) -> HistFit:
    """Fit HTMP's ``kappa`` by the L1 distance between a histogram of the spectrum and the density.

    The spectrum is shifted by its minimum (``shift``; this moves MP's hard lower edge to zero, so pure noise gets a
    small finite ``kappa``), divided by its mean, and ``kappa`` minimizes :func:`hist_l1` over ``kappa_bounds``.
    ``at_bound``: the optimum is at the upper end, where HTMP and MP are not told apart.

    Parameters
    ----------
    eigs : array_like
        Eigenvalues (finite ones, at least 10).
    gamma : float
        Aspect ratio in (0, 1), fixed.
    bins : int
        Histogram bins over ``[min x, max x]``.
    kappa_bounds : (float, float)
        Searched interval, ``0 < low < high < inf``.
    shift : bool
        Subtract the smallest eigenvalue first.

    Returns
    -------
    HistFit
        The fitted ``kappa``, the L1 distances of HTMP and MP, and the transform applied.

    Examples
    --------
    >>> x = sample_htmp(3000, 1.0, 0.5, seed=1)
    >>> f = fit_htmp_l1(x, 0.5, shift=False)
    >>> 0.7 < f.kappa < 1.4, f.l1 < f.mp_l1
    (True, True)
    """
    _check_params(1.0, gamma)
    bins = check_int("bins", bins, 2)
    lo_k, hi_k = map(float, kappa_bounds)
    if not (0 < lo_k < hi_k < math.inf):
        raise ValueError(f"kappa_bounds must satisfy 0 < low < high < inf, got {kappa_bounds}")
    x = check_vector("eigs", eigs)
    if x.size < 10:
        raise ValueError(f"eigs must hold at least 10 finite values, got {x.size}")
    sh = float(x.min()) if shift else 0.0
    x = x - sh
    scale = float(x.mean())
    if not scale > 0:
        raise ValueError("eigs must not all be equal")
    x = x / scale
    def obj(lk: float) -> float:
        return hist_l1(x, math.exp(lk), gamma, bins=bins)
    grid = np.linspace(math.log(lo_k), math.log(hi_k), 40)
    vals = np.array([obj(g) for g in grid])
    j = int(np.argmin(vals))
    a, b = grid[max(j - 1, 0)], grid[min(j + 1, grid.size - 1)]
    res = optimize.minimize_scalar(obj, bounds=(a, b), method="bounded", options={"xatol": 1e-3})
    lk, l1 = (float(res.x), float(res.fun)) if res.fun < vals[j] else (float(grid[j]), float(vals[j]))
    k = math.exp(lk)
    ks = ks_distance_sorted(htmp_cdf(np.sort(x), k, gamma))
    return HistFit(kappa=k, l1=l1, mp_l1=hist_l1(x, math.inf, gamma, bins=bins), shift=sh, scale=scale, ks=ks,
                   gamma=float(gamma), at_bound=bool(k >= hi_k * math.exp(-1e-2)))

# ----------------------------------------------------------------------------- inverse law
@dataclass(frozen=True)
class InverseFit:
    """Result of :func:`fit_inverse_htmp`: eigenvalues ``y = 1/X`` with ``X/scale ~ HTMP(kappa, gamma)``; ``ks`` its KS,
    ``mp_ks``/``mp_gamma`` the best inverse MP law's, ``n`` eigenvalues fitted, ``n_zero`` left out (below ``rtol``).

    Attributes
    ----------
    kappa, gamma, scale : float
        The fitted law: ``1/(scale y) ~ HTMP(kappa, gamma)``.
    ks : float
        Its KS distance.
    mp_ks, mp_gamma : float
        KS distance and aspect ratio of the best inverse MP law.
    n, n_zero : int
        Eigenvalues fitted and left out below ``rtol``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.htmp import InverseFit, inverse_htmp_pdf
    >>> f = InverseFit(kappa=2.0, gamma=0.5, scale=1.0, ks=0.02, mp_ks=0.1, mp_gamma=0.5, n=500, n_zero=0)
    >>> bool(np.isclose(f.pdf(3.0), inverse_htmp_pdf(3.0, 2.0, 0.5)))
    True
    """
    kappa: float
    gamma: float
    scale: float
    ks: float
    mp_ks: float
    mp_gamma: float
    n: int
    n_zero: int

    def pdf(self, y) -> np.ndarray:
        """The fitted density of the eigenvalues at ``y``."""
        y = np.asarray(y, dtype=np.float64)
        if math.isinf(self.kappa):
            from htlib import spectra
            out = np.zeros(y.shape)
            pos = y > 0
            out[pos] = spectra.mp_density(1.0 / (self.scale * y[pos]), self.gamma) / (self.scale * y[pos] ** 2)
            return out
        return self.scale * inverse_htmp_pdf(self.scale * y, self.kappa, self.gamma)

def fit_inverse_htmp(eigs, gammas=(0.1, 0.3, 0.5, 0.7, 0.9), *, rtol: float = 1e-9) -> InverseFit:
    """Fit the inverse HTMP law (of ``1/X``, ``X ~ HTMP``) to a spectrum with a heavy upper tail.

    KS is invariant under ``y -> 1/y``, so this is :func:`fit_htmp` on ``1/y`` at each of ``gammas``, keeping the best
    (``kappa = inf``: inverse MP fits at least as well).  Eigenvalues at or below ``rtol * max`` are left out as null.

    Parameters
    ----------
    eigs : array_like
        Eigenvalues with a heavy upper tail (finite ones used).
    gammas : sequence of float, default (0.1, 0.3, 0.5, 0.7, 0.9)
        Aspect ratios tried, each in (0, 1).
    rtol : float, default 1e-9
        Eigenvalues at or below ``rtol * max`` are left out.

    Returns
    -------
    InverseFit
        The best fit over ``gammas``.

    Examples
    --------
    >>> y = 1.0 / sample_htmp(1500, 2.0, 0.5, seed=0)
    >>> f = fit_inverse_htmp(y, gammas=(0.3, 0.5, 0.7))
    >>> f.gamma, f.ks < 0.05
    (0.5, True)
    """
    y = np.asarray(eigs, dtype=np.float64).ravel()
    y = y[np.isfinite(y)]
    if y.size == 0:
        raise ValueError("eigs must hold finite values")
    check_float("rtol", rtol, low=0.0)
    gs = [float(g) for g in gammas]
    if not gs:
        raise ValueError("gammas must not be empty")
    for g in gs:
        _check_params(1.0, g)
    keep = y > rtol * y.max()
    if keep.sum() < 10:
        raise ValueError(f"eigs must hold at least 10 eigenvalues above rtol * max, got {int(keep.sum())}")
    x = 1.0 / y[keep]
    fits = [fit_htmp(x, g) for g in gs]
    j = int(np.argmin([f.ks for f in fits]))
    jm = int(np.argmin([f.mp_ks for f in fits]))
    f = fits[j]
    return InverseFit(f.kappa, gs[j], f.scale, f.ks, fits[jm].mp_ks, gs[jm], int(keep.sum()), int((~keep).sum()))

@dataclass(frozen=True)
class GoFResult:
    """Result of :func:`inverse_htmp_gof`.

    ``fit`` is the observed fit (:func:`fit_inverse_htmp`); ``ks`` its KS distance, ``null`` the KS distances of the
    ``reps`` refitted samples of the fitted law and ``p = (1 + #{null >= ks}) / (reps + 1)``; ``mp_ks``, ``mp_null``,
    ``mp_p`` the same for the best inverse Marchenko-Pastur law (``fit.mp_gamma``).  ``null_n`` counts the eigenvalues
    each HTMP replicate kept above ``rtol`` (``fit.n`` unless the law itself reaches below the cut-off); ``sampler``
    how the nulls were drawn.

    Attributes
    ----------
    fit : InverseFit
        The observed fit.
    ks : float
        Its KS distance.
    null : numpy.ndarray
        KS distances of the refitted replicates of the fitted law.
    p : float
        ``(1 + #{null >= ks}) / (reps + 1)``.
    mp_ks, mp_null, mp_p
        The same for the best inverse Marchenko-Pastur law.
    null_n : numpy.ndarray
        Eigenvalues each HTMP replicate kept.
    rtol : float
        The cut-off used.
    seed : int
        The seed of both nulls.
    sampler : str
        How the nulls were drawn.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.htmp import GoFResult, InverseFit
    >>> fit = InverseFit(kappa=2.0, gamma=0.5, scale=1.0, ks=0.02, mp_ks=0.1, mp_gamma=0.5, n=300, n_zero=0)
    >>> r = GoFResult(fit, 0.02, np.array([0.01, 0.03, 0.04]), 0.75, 0.1, np.array([0.02, 0.03, 0.02]), 0.25,
    ...               np.array([300, 300, 300]), 1e-9, 0)
    >>> r.reps, r.sampler
    (3, 'beta-laguerre')
    """
    fit: InverseFit
    ks: float
    null: np.ndarray
    p: float
    mp_ks: float
    mp_null: np.ndarray
    mp_p: float
    null_n: np.ndarray
    rtol: float
    seed: int
    sampler: str = "beta-laguerre"

    @property
    def reps(self) -> int:
        return int(self.null.size)


def _inverse_mp_ks(y: np.ndarray, gammas: list, rtol: float) -> float:
    """The inverse-MP KS of :func:`fit_inverse_htmp` alone (its ``mp_ks``: the KS-fitted scale at each gamma, the
    best gamma), without the HTMP fits."""
    from htlib import spectra
    y = y[np.isfinite(y)]
    x = np.sort(1.0 / y[y > rtol * y.max()])
    m1 = float(x.mean())
    return min(fit_scale_ks(x, lambda v, g=g: spectra.mp_cdf(v, g, 1.0), m1)[1] for g in gammas)


GOF_SAMPLERS = ("beta-laguerre", "iid")


def inverse_htmp_gof(eigs, gammas=(0.1, 0.3, 0.5, 0.7, 0.9), *, rtol: float = 1e-9, reps: int = 99,
                     seed: int = 0, sampler: str = "beta-laguerre") -> GoFResult:
    """Goodness of fit of the inverse HTMP law to a spectrum: a parametric-bootstrap KS test against the fitted law.

    The spectrum is fitted by :func:`fit_inverse_htmp` (``gammas``, ``rtol``).  The null draws ``reps`` spectra of the
    fitted law at the same size ``n = fit.n``: beta-Laguerre eigenvalues :func:`sample_htmp` ``(n, kappa, gamma)``
    (the matrix model, not i.i.d. draws), inverted and divided by the fitted scale; each is refitted exactly as the
    data were (:func:`fit_inverse_htmp` with the same ``gammas`` and ``rtol``, so the gamma is chosen again and the
    cut-off applied again) and its KS recorded.  ``p = (1 + k) / (reps + 1)``, ``k`` the null KS values at or above
    the observed one: a valid p-value up to the error of estimating the law (the test's calibration is measured in
    ``tests/test_htmp_gof.py``).  The same for the inverse Marchenko-Pastur law: ``reps`` real-Wishart spectra
    (beta = 1, ``n x n/mp_gamma``; ``sample_htmp(n, n, mp_gamma)``), refitted over ``gammas`` as ``fit.mp_ks`` was.
    Where MP fits best (``fit.kappa = inf``) the HTMP null draws these Wishart spectra too.  ``sampler="iid"`` draws
    both nulls as i.i.d. samples of the fitted laws instead (inverse CDF: ``htmp.ppf``, MP by interpolation): the
    matrix model's eigenvalues are more regular than i.i.d. draws (at ``n = 1000``, ``kappa = 20``, ``gamma = 0.7`` the
    refitted KS has median 0.009 against 0.016), so the default null is the stricter one: a spectrum whose eigenvalues
    scatter like i.i.d. draws of the law is rejected by it more often than the nominal rate.

    With a small fitted ``kappa`` the law reaches below ``rtol`` x its largest eigenvalue: replicates then lose
    eigenvalues to the cut-off (``null_n``) and fit worse, so the p-value errs on the large side (less power).

    Cost: one fit per replicate, 0.25 to 0.5 s CPU per gamma whatever ``n`` (n = 250 to 1000; 2 to 4 s for 8 gammas);
    the MP null is ~50x cheaper.  The zero eigenvalues (``fit.n_zero``, at or below ``rtol`` x the largest) are not drawn: the test is
    conditional on them.

    Parameters
    ----------
    eigs : array_like
        Eigenvalues with a heavy upper tail (finite ones used; those at or below ``rtol * max`` left out).
    gammas : sequence of float
        Aspect ratios tried by the fit, each in (0, 1).
    rtol : float
        Relative cut-off for null eigenvalues, ``> 0``.
    reps : int
        Replicates of each null, ``>= 1`` (``p >= 1/(reps + 1)``; 19 decides at 0.05, 99 or more to report ``p``).
    seed : int
        Seeds both nulls (``>= 0``).
    sampler : {"beta-laguerre", "iid"}
        The matrix model (:func:`sample_htmp`; a real Wishart for MP) or i.i.d. draws of the fitted laws.

    Returns
    -------
    GoFResult

    Examples
    --------
    >>> y = 1.0 / sample_htmp(300, 2.0, 0.5, seed=0)   # a sample of the law: not rejected
    >>> r = inverse_htmp_gof(y, gammas=(0.5,), reps=9, seed=0)
    >>> r.null.shape, r.p > 0.1, r.mp_p   # inverse MP is rejected at the smallest p of 9 replicates
    ((9,), True, 0.1)
    """
    reps = check_int("reps", reps, 1)
    seed = check_int("seed", seed, 0)
    check_choice("sampler", sampler, GOF_SAMPLERS)
    fit = fit_inverse_htmp(eigs, gammas, rtol=rtol)
    gs = [float(g) for g in gammas]
    n = int(fit.n)
    ss_htmp, ss_mp = np.random.SeedSequence(seed).spawn(2)
    seeds_htmp = ss_htmp.generate_state(reps, dtype=np.uint32)
    seeds_mp = ss_mp.generate_state(reps, dtype=np.uint32)

    def mp_draw(gamma: float, s: int) -> np.ndarray:
        if sampler == "beta-laguerre":
            return sample_htmp(n, float(n), gamma, seed=int(s))
        from htlib import spectra
        lo, hi = spectra.mp_edges(gamma)
        grid = np.linspace(lo, hi, 20_001)
        return np.interp(np.random.default_rng(int(s)).random(n), spectra.mp_cdf(grid, gamma), grid)

    null, null_n = np.empty(reps), np.empty(reps, dtype=np.int64)
    for r, s in enumerate(seeds_htmp):
        if math.isinf(fit.kappa):
            x = mp_draw(fit.gamma, s)
        elif sampler == "beta-laguerre":
            x = sample_htmp(n, fit.kappa, fit.gamma, seed=int(s))
        else:
            x = htmp.ppf(np.random.default_rng(int(s)).random(n), fit.kappa, fit.gamma)
        with np.errstate(divide="ignore"):
            y = 1.0 / (fit.scale * x)  # an exact zero (below 1e-290 of the largest) becomes inf: left out as non-finite
        f = fit_inverse_htmp(y, gs, rtol=rtol)
        null[r], null_n[r] = f.ks, f.n
    mp_null = np.empty(reps)
    for r, s in enumerate(seeds_mp):
        with np.errstate(divide="ignore"):
            mp_null[r] = _inverse_mp_ks(1.0 / mp_draw(fit.mp_gamma, s), gs, float(rtol))
    p = (1.0 + np.count_nonzero(null >= fit.ks)) / (reps + 1.0)
    mp_p = (1.0 + np.count_nonzero(mp_null >= fit.mp_ks)) / (reps + 1.0)
    return GoFResult(fit, float(fit.ks), null, float(p), float(fit.mp_ks), mp_null, float(mp_p), null_n,
                     float(rtol), seed, sampler)

# ----------------------------------------------------------------------------- scipy.stats
class htmp_gen(stats.rv_continuous):
    """HTMP as a ``scipy.stats`` distribution, ``htmp(kappa, gamma, scale=c)``: closed forms for the densities and
    CDFs, ``.ppf`` by bisection in log x, ``.rvs`` i.i.d. through ``.ppf`` (the matrix model is :func:`sample_htmp`).

    Examples
    --------
    >>> from htlib.htmp import htmp, htmp_cdf
    >>> round(float(htmp.mean(2.0, 0.5)), 4), round(float(htmp.var(2.0, 0.5)), 4)   # 1, 2 gamma / kappa + gamma
    (1.0, 1.0)
    >>> q = htmp.ppf(0.3, 2.0, 0.5)
    >>> round(float(htmp_cdf(q, 2.0, 0.5)), 6)
    0.3
    """

    def _shape_info(self):
        from scipy.stats._distn_infrastructure import _ShapeInfo
        return [_ShapeInfo("kappa", False, (0, np.inf), (False, False)),
                _ShapeInfo("gamma", False, (0, 1), (False, False))]

    def _argcheck(self, kappa, gamma):
        return (np.asarray(kappa) > 0) & np.isfinite(kappa) & (np.asarray(gamma) > 0) & (np.asarray(gamma) < 1)

    @staticmethod
    def _by_params(fn, x, kappa, gamma):
        x, kappa, gamma = np.broadcast_arrays(x, kappa, gamma)
        out = np.empty(x.shape)
        for k, g in set(zip(kappa.ravel().tolist(), gamma.ravel().tolist())):
            m = (kappa == k) & (gamma == g)
            out[m] = fn(x[m], k, g)
        return out

    def _pdf(self, x, kappa, gamma):
        return np.exp(self._logpdf(x, kappa, gamma))

    def _logpdf(self, x, kappa, gamma):
        return self._by_params(htmp_logpdf, x, kappa, gamma)

    def _cdf(self, x, kappa, gamma):
        return self._by_params(htmp_cdf, x, kappa, gamma)

    def _logcdf(self, x, kappa, gamma):
        return self._by_params(htmp_logcdf, x, kappa, gamma)

    def _sf(self, x, kappa, gamma):
        return self._by_params(htmp_sf, x, kappa, gamma)

    def _logsf(self, x, kappa, gamma):
        return self._by_params(htmp_logsf, x, kappa, gamma)

    def _ppf(self, q, kappa, gamma):
        return self._by_params(_ppf_one, q, kappa, gamma)

    def _stats(self, kappa, gamma):
        return 1.0, 2.0 * gamma / kappa + gamma, None, None

def _ppf_one(q: np.ndarray, kappa: float, gamma: float) -> np.ndarray:
    _check_exact(kappa, gamma, "quantile function", "mp_quantile")
    p = _P(kappa, gamma)
    lo = np.full(q.shape, math.log(1e-300))
    hi_x = _upper_t(p) / p.beta
    while float(htmp_cdf(np.array([hi_x]), kappa, gamma)[0]) < min(float(np.max(q, initial=0.0)), 1 - 1e-15):
        hi_x *= 2.0  # the bracket must hold the largest quantile asked for
    hi = np.full(q.shape, math.log(hi_x))
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        below = htmp_cdf(np.exp(mid), kappa, gamma) < q
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
        if np.max(hi - lo, initial=0.0) < 1e-13:
            break
    return np.exp(0.5 * (lo + hi))

htmp = htmp_gen(a=0.0, name="htmp", shapes="kappa, gamma")
"""The HTMP distribution in the SciPy idiom: ``htmp.pdf(x, kappa, gamma, scale=c)``."""

# ----------------------------------------------------------------------------- spikes through a covariance
def spiked_htmp_spectrum(n: int, kappa: float, gamma: float, spikes=(), *, null_fraction: float = 0.0, seed: int) -> np.ndarray:
    """Eigenvalues of ``S^(1/2) O diag(lam) O^T S^(1/2)``: an HTMP bulk seen through a covariance.

    ``lam``: ``n`` HTMP eigenvalues (``kappa = inf``: MP); ``O`` Haar; ``S`` the identity but ``spikes`` on the first
    directions (``l > 1 + sqrt(gamma)`` gives an outlier near ``l (1 + gamma/(l - 1))``) and 0 on the last
    ``null_fraction * n`` (rank loss).

    Parameters
    ----------
    n : int
        Number of eigenvalues, ``>= 10``.
    kappa : float
        ``> 0``, or ``inf`` for Marchenko-Pastur.
    gamma : float
        Aspect ratio in (0, 1).
    spikes : sequence of float, default ()
        Covariance eigenvalues ``l > 0`` of the first directions (at most ``n / 2``).
    null_fraction : float, default 0.0
        Share of directions with covariance 0, in ``[0, 1)``.
    seed : int
        Seed, ``>= 0``.

    Returns
    -------
    numpy.ndarray
        The ``n`` eigenvalues, ascending.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.htmp import spiked_htmp_spectrum
    >>> e = spiked_htmp_spectrum(400, np.inf, 0.25, spikes=(4.0,), seed=0)
    >>> bool(abs(e[-1] - 4.0 * (1 + 0.25 / 3.0)) < 0.3), bool(e[-2] < 2.6)   # the outlier; the MP edge is 2.25
    (True, True)
    >>> int(np.sum(spiked_htmp_spectrum(200, np.inf, 0.25, null_fraction=0.1, seed=0) < 1e-8))
    20
    """
    n = check_int("n", n, 10)
    kappa, gamma = _check_params(kappa, gamma, mp_limit=True)
    if check_float("null_fraction", null_fraction, low=0.0, strict=False) >= 1.0:
        raise ValueError(f"null_fraction must lie in [0, 1), got {null_fraction!r}")
    sp = check_vector("spikes", spikes, min_size=0)
    if sp.size > n // 2 or np.any(sp <= 0):
        raise ValueError(f"spikes must be at most n/2 values > 0, got {spikes!r}")
    rng = np.random.default_rng(check_int("seed", seed, 0))
    if math.isinf(kappa):
        G = rng.standard_normal((int(round(n / gamma)), n))
        lam = np.linalg.eigvalsh(G.T @ G) / G.shape[0]
    else:
        lam = sample_htmp(n, kappa, gamma, seed=int(rng.integers(2**31)))
    Q, R = np.linalg.qr(rng.standard_normal((n, n)))
    O = Q * np.sign(np.diag(R))  # Haar
    s = np.ones(n)
    s[: sp.size] = np.sqrt(sp)
    n_null = int(round(null_fraction * n))
    if n_null:
        s[n - n_null :] = 0.0
    M = (s[:, None] * (O * lam) @ O.T) * s[None, :]
    return np.sort(np.maximum(np.linalg.eigvalsh(0.5 * (M + M.T)), 0.0))

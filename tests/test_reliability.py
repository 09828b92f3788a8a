"""Issue 25: the numerical APIs never return a silently wrong number.

- the HTMP and MP distribution functions are exact as gamma -> 1 (delta -> 0) and gamma -> 0,
  checked against quadrature of the density (an independent reference: the CDF is a phase of U,
  the density a modulus);
- every numerical API refuses what it cannot compute (complex input, non-integer counts, NaN/inf,
  empty arrays, parameters out of range) with an error that names the argument.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

from htlib import htmp as H
from htlib import spectra


# --- HTMP and MP CDFs against quadrature of the density --------------------------------------------


def _mass_above(xs: np.ndarray, kappa: float, gamma: float) -> np.ndarray:
    """``int_x^inf rho`` at each ``x`` (ascending), by adaptive quadrature of :func:`H.htmp_pdf` in
    ``log x``, split at the points and at the Marchenko-Pastur edges (where the MP limit has its
    square-root edges)."""
    edges = [math.log(e) for e in spectra.mp_edges(gamma) if e > 0]
    f = lambda u: math.exp(u) * float(H.htmp_pdf(math.exp(u), kappa, gamma))  # noqa: E731
    logs = np.log(xs)
    top = math.log(xs[-1]) + 50.0  # e^-t beyond: the upper tail is Gamma-like, far below 1e-20 there
    bounds = list(logs) + [top]
    pieces = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        pts = [e for e in edges if lo < e < hi] or None
        pieces.append(integrate.quad(f, lo, hi, points=pts, limit=400, epsabs=1e-13, epsrel=1e-11)[0])
    return np.cumsum(pieces[::-1])[::-1]


CDF_GRID = [
    (2.0, 0.9998),   # the audit's case: delta = 2e-4
    (2.0, 0.9999),
    (0.5, 0.9999),
    (8.0, 0.9999),
    (30.0, 0.999),
    (2.0, 0.5),
    (8.0, 0.01),
    (2.0, 1e-6),     # beta = 1e6: the Marchenko-Pastur limit (see htmp.BETA_MP)
    (30.0, 1e-6),
    (0.5, 1e-4),
    (10.0, 0.99),    # SciPy's hyp1f1(5, 0.95, -t) is wrong for 0.65 < t < 0.95 (x in 0.13-0.19)
    (0.1, 0.001),    # ... and hyp1f1(0.05, -48.95, -t) for 27 < t < 100 (in the bulk)
    (5.0, 0.003),    # M(a + delta, 1 + delta, -t) is subnormal below the bulk
]


@pytest.mark.slow
@pytest.mark.parametrize("kappa,gamma", CDF_GRID)
def test_htmp_cdf_matches_quadrature_of_the_density(kappa, gamma):
    sd = math.sqrt(gamma * (1 + 2 / kappa))
    bulk = 1.0 + sd * np.arange(-4.0, 6.0)
    xs = np.unique(np.concatenate([[1e-12, 1e-6, 1e-3, 0.1, 0.5, 2.0, 4.0], bulk[bulk > 0]]))
    ours = H.htmp_cdf(xs, kappa, gamma)
    ref = 1.0 - _mass_above(xs, kappa, gamma)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=2e-7)


def _mp_logpdf(x: float, kappa: float, gamma: float) -> float:
    """The closed form at 30 digits (mpmath's hyperu)."""
    import mpmath as mp

    with mp.workdps(30):
        k, g, x = mp.mpf(kappa), mp.mpf(gamma), mp.mpf(x)
        beta, d = k / (2 * g), k * (1 - g) / (2 * g)
        u = mp.hyperu(k / 2, 1 - d, -beta * x)
        return float(mp.log(beta) - mp.loggamma(k / 2 + 1) - mp.loggamma(beta) + (d - 1) * mp.log(beta * x)
                     - beta * x - 2 * mp.log(abs(u)))


@pytest.mark.parametrize("kappa,gamma,xs", [
    (10.0, 0.99, np.linspace(0.13, 0.19, 7)),     # SciPy hyp1f1 at a = 5, 0 < b < 1, -1 < z < 0
    (0.1, 0.001, np.linspace(0.78, 0.80, 5)),     # SciPy hyp1f1 at a = 0.05, b = -48.95, z ~ -40
    (0.795, 0.00658, np.linspace(0.52, 0.63, 6)),   # b = -59, z from -31 to -38
    (5.0, 0.003, np.array([0.8887, 0.8889, 0.89])),  # a subnormal M(a + delta, 1 + delta, -t)
])
def test_density_where_scipy_hyp1f1_fails(kappa, gamma, xs):
    ours = H.htmp_logpdf(xs, kappa, gamma)
    ref = np.array([_mp_logpdf(x, kappa, gamma) for x in xs])
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-8)


def test_htmp_cdf_of_the_audit_case():
    # The density integrates to 0.2744 over [0.5, 2] (quadrature, above); main returned [1, 1].
    f = H.htmp_cdf([0.5, 2.0], 2.0, 0.9998)
    ref = integrate.quad(lambda x: float(H.htmp_pdf(x, 2.0, 0.9998)), 0.5, 2.0, epsabs=1e-12)[0]
    assert f[1] - f[0] == pytest.approx(ref, abs=1e-8)
    assert 0 < f[0] < f[1] < 1


def test_ks_distance_of_a_sample_of_the_law_is_small_near_gamma_one():
    x = H.sample_htmp(2000, 2.0, 0.9998, seed=0)
    assert H.ks_distance(x, 2.0, 0.9998) < 0.05  # main: 0.988


@pytest.mark.parametrize("gamma", [1e-17, 1e-12, 1e-8, 1e-6, 1e-3, 0.04, 0.3, 0.9, 1.0])
def test_mp_cdf_matches_quadrature_of_the_density(gamma):
    lo, hi = spectra.mp_edges(gamma)
    u = math.sqrt(gamma)
    xs = np.concatenate([[0.5 * lo if lo > 0 else 0.0, lo], lo + (hi - lo) * np.array([1e-6, 0.1, 0.3, 0.5, 0.9, 0.999]), [hi, 2 * hi]])
    ours = spectra.mp_cdf(xs, gamma)
    # In theta (x = 1 + gamma + 2 sqrt(gamma) cos theta) the density is smooth: quadrature there.
    dens = lambda th: 2 * math.sin(th) ** 2 / (math.pi * ((1 - u) ** 2 + 4 * u * math.cos(th / 2) ** 2))  # noqa: E731
    ref = []
    for x in xs:
        c = np.clip((x - 1 - gamma) / (2 * u), -1, 1)
        th = math.acos(c)
        ref.append(integrate.quad(dens, th, math.pi, epsabs=1e-15, epsrel=1e-13)[0] if th < math.pi else 0.0)
    # x itself only resolves the bulk (width 4 sqrt(gamma)) to 1e-16/sqrt(gamma)
    tol = 1e-13 + 1e-15 / u
    np.testing.assert_allclose(ours, ref, rtol=0, atol=tol)
    assert ours[0] == 0.0 and ours[-1] == 1.0


def test_mp_cdf_tiny_gamma_is_zero_below_the_bulk():
    assert float(spectra.mp_cdf(0.5, 1e-17)) == 0.0  # main: 1.0
    assert float(spectra.mp_cdf(1.5, 1e-17)) == 1.0
    assert float(spectra.mp_cdf(1.0, 1e-17)) == pytest.approx(0.5, abs=1e-7)

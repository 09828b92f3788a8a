"""The HTMP density and CDF near the edges of the bulk across ``htmp.EXACT_RANGE`` against a 50-digit mpmath reference
(issue 53, item 5), and the CDF's refusal outside the range.

The reference is the closed form ``rho = beta t^(delta-1) e^(-t) / (Gamma(a+1) Gamma(beta) |U|^2)`` and
``F = arg U / (pi a)`` with ``U = U(a, 1-delta, -t-i0)`` from the connection formula (DLMF 13.2.42, the second
``M`` by Kummer's transformation) in mpmath, its working precision raised by the digits the two terms cancel; it is
itself checked against mpmath's ``hyperu``, the contour integral of ``tests/test_htmp.py`` and an mpmath quadrature
of the density.  Tolerances: the density's is the one :data:`htlib.htmp.EXACT_RANGE` documents (2e-8 relative); the
CDF's follows from it, since ``rho ~ |U|^-2`` puts U's relative error at half the density's and an error ``e`` in
``U`` moves ``arg U`` by at most ``e`` radians, so ``F = arg U/(pi a)`` by at most ``e/(pi a)`` (the reference adds
below 1e-40)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest

from htlib import htmp as H

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_htmp import _contour_logpdf  # noqa: E402

REF_DPS = 50
RTOL_PDF = 2e-8  # EXACT_RANGE's documented accuracy of the density


def _atol_cdf(kappa: float) -> float:
    """``|dF| <= |dU/U| / (pi a)`` with ``|dU/U| <= RTOL_PDF / 2`` and ``a = kappa/2`` (module docstring)."""
    return RTOL_PDF / 2 / (math.pi * kappa / 2)


def _ref_u(x: float, kappa: float, gamma: float):
    """``(a, U(a, 1-delta, -t-i0), log of rho |U|^2)`` at ``REF_DPS`` digits or more.  At an integer ``delta`` (a
    pole of each term) the mean at ``delta +- 1e-30``: ``U`` is smooth in ``delta``, the error O(1e-60)."""
    extra = 0
    for _ in range(8):
        with mp.workdps(REF_DPS + extra):
            k, g, xm = mp.mpf(kappa), mp.mpf(gamma), mp.mpf(x)
            a, beta = k / 2, k / (2 * g)
            d0, t = beta - a, beta * xm
            ds = [d0] if abs(d0 - mp.nint(d0)) > mp.mpf(10) ** -20 else [d0 + mp.mpf(10) ** -30, d0 - mp.mpf(10) ** -30]
            us, lost = [], 0
            for d in ds:
                first = mp.gamma(d) / mp.gamma(a + d) * mp.hyp1f1(a, 1 - d, -t, maxterms=10**7)
                second = (mp.gamma(-d) / mp.gamma(a) * mp.exp(d * mp.log(t) - t)
                          * mp.hyp1f1(1 - a, 1 + d, t, maxterms=10**7) * mp.expjpi(-d))
                us.append(first + second)
                lost = max(lost, mp.log10(max(abs(first), abs(second)) / abs(us[-1])))
            if lost <= extra:  # REF_DPS digits survive the cancellation
                u = sum(us) / len(us)
                log_pre = mp.log(beta) - mp.loggamma(a + 1) - mp.loggamma(beta) + (d0 - 1) * mp.log(t) - t
                return a, u, log_pre
            extra = int(mp.ceil(lost)) + 10
    raise AssertionError("the reference's cancellation did not settle")


def _ref_logpdf(x: float, kappa: float, gamma: float) -> float:
    a, u, log_pre = _ref_u(x, kappa, gamma)
    with mp.workdps(REF_DPS):
        return log_pre - 2 * mp.log(abs(u))


def _ref_cdf_mod(x: float, kappa: float, gamma: float):
    """``(arg U / (pi a), 2/a)``: F up to a multiple of ``2/a``, with ``arg U`` in [0, 2 pi); F itself for ``a <= 1``
    (then ``F`` in [0, 1] puts ``arg U = pi a F`` in [0, pi])."""
    a, u, _ = _ref_u(x, kappa, gamma)
    with mp.workdps(REF_DPS):
        phi = mp.arg(u)
        return (phi if phi >= 0 else phi + 2 * mp.pi) / (mp.pi * a), 2 / a


def _edges(gamma: float) -> list[float]:
    """The Marchenko-Pastur edges of the bulk, and 5% either side of each."""
    lo, hi = (1 - math.sqrt(gamma)) ** 2, (1 + math.sqrt(gamma)) ** 2
    return [lo * 0.95, lo, lo * 1.05, hi * 0.95, hi, hi * 1.05]


def _assert_pdf(xs, kappa, gamma):
    xs = np.asarray(xs, dtype=np.float64)
    ours = H.htmp_logpdf(xs, kappa, gamma)
    assert np.all(np.isfinite(ours)), (kappa, gamma, xs[~np.isfinite(ours)])
    ref = np.array([float(_ref_logpdf(float(x), kappa, gamma)) for x in xs])
    # log rho - log rho_ref = log(1 + relative error): the test holds where rho underflows too
    np.testing.assert_array_less(np.abs(np.expm1(ours - ref)), RTOL_PDF, err_msg=f"kappa={kappa}, gamma={gamma}")
    pdf = H.htmp_pdf(xs, kappa, gamma)
    assert np.all(np.isfinite(pdf))
    np.testing.assert_allclose(pdf, np.exp(ref), rtol=RTOL_PDF, atol=0)


def test_the_reference_agrees_with_independent_routes():
    # mpmath's hyperu (small delta), the contour integral (a >= 1, large beta), an mpmath quadrature of the density
    with mp.workdps(REF_DPS):
        k, g = mp.mpf(0.1), mp.mpf(0.05)
        a, beta = k / 2, k / (2 * g)
        for x in (0.3, 1.0):
            u = mp.conj(mp.hyperu(a, 1 - (beta - a), -beta * x))
            assert abs(_ref_u(x, 0.1, 0.05)[1] / u - 1) < mp.mpf(10) ** -40
    x = 0.80564196
    assert abs(_contour_logpdf(x, 2.0, 1e-4, dps=REF_DPS) - float(_ref_logpdf(x, 2.0, 1e-4))) < 1e-12
    lo, hi = _edges(0.05)[1], _edges(0.05)[4]
    with mp.workdps(20):
        mass = mp.quad(lambda y: mp.exp(_ref_logpdf(y, 0.1, 0.05)), [0, lo, hi])
    assert abs(mass - _ref_cdf_mod(hi, 0.1, 0.05)[0]) < 1e-15


def test_no_nan_at_the_referees_point():
    # kappa = 2, gamma = 1e-4 (beta = 1e4, inside EXACT_RANGE), x = 0.80564196: delta = 9999 is interpolated from
    # delta = 9999 +- 1e-3, 2e-3, and at 9998.999 SciPy's hyp1f1(a, 1 - delta, -t) returns NaN; mpmath's hyperu,
    # the last route, does not converge there: NaN came out of htmp_logpdf and htmp_cdf
    x, kappa, gamma = 0.80564196, 2.0, 1e-4
    _assert_pdf([x], kappa, gamma)
    f = H.htmp_cdf(x, kappa, gamma)
    ref, _ = _ref_cdf_mod(x, kappa, gamma)  # a = 1: F itself
    assert np.isfinite(f) and abs(f - float(ref)) <= _atol_cdf(kappa) and f > 0


def test_the_last_route_where_hyperu_gives_up():
    # U at that node (delta = 9998.999) by the last route alone: hyperu raises, the connection formula in mpmath
    x, gamma = 0.80564196, 1e-4
    kappa = 9998.999 * 2 * gamma / (1 - gamma)
    p = H._P(kappa, gamma)
    log_mag, re, im = H._u_mp(p.beta * x, p)
    _, u, _ = _ref_u(x, kappa, gamma)
    with mp.workdps(REF_DPS):
        ref_log, ref_dir = mp.log(abs(u)), u / abs(u)
    eps = np.finfo(float).eps  # the float64 roundings of log|U| and of the unit vector (re, im)
    assert abs(log_mag - float(ref_log)) <= 4 * eps * max(1.0, abs(float(ref_log)))
    assert abs(complex(re, im) - complex(ref_dir)) <= 4 * eps


# a <= 1 (the CDF's reference needs no branch); beta up to 1e4, the top of EXACT_RANGE; the corner kappa = 0.1,
# gamma = 0.05.  At kappa = 2, gamma = 3e-4 (a = 1 exactly) SciPy's hyp1f1(1, 1 - delta, -t) is NaN through the bulk:
# the density was NaN at x = 1 and at the lower edge, 97% low at 1.05 x the lower edge and 86% at the upper edge (the
# Riccati continuation, run inside the bulk), the CDF 1.0 for 1.2e-5 at 0.95 x the lower edge and 0.96 for 0.70 at
# 1.05 x (its branch picked from a coarse grid that interpolated over the gap)
SMALL_A = [(0.1, 0.05), (0.1, 5e-6), (0.5, 2.5e-5), (2.0, 1e-4), (2.0, 3e-4), (1.3, 0.02)]


@pytest.mark.slow
@pytest.mark.parametrize("kappa,gamma", SMALL_A)
def test_density_and_cdf_at_the_edges(kappa, gamma):
    xs = _edges(gamma)
    _assert_pdf(xs, kappa, gamma)
    ours = H.htmp_cdf(np.array(xs), kappa, gamma)
    ref = np.array([float(_ref_cdf_mod(x, kappa, gamma)[0]) for x in xs])
    np.testing.assert_allclose(ours, ref, rtol=0, atol=_atol_cdf(kappa), err_msg=f"kappa={kappa}, gamma={gamma}")


# a > 1 at the tops of EXACT_RANGE (beta = 1e4 at kappa = 50 and 500; kappa = 1000, beta = 1600, delta = 1100 an
# integer): the density, and the CDF up to its branch (tests/test_reliability.py checks branches by quadrature)
LARGE_A = [(50.0, 0.0025), (500.0, 0.025), (1000.0, 0.3125)]


@pytest.mark.slow
@pytest.mark.parametrize("kappa,gamma", LARGE_A)
def test_large_kappa_at_the_edges(kappa, gamma):
    xs = [_edges(gamma)[1], _edges(gamma)[4]]  # the reference takes 10-40 s a point here
    _assert_pdf(xs, kappa, gamma)
    ours = H.htmp_cdf(np.array(xs), kappa, gamma)
    for x, f in zip(xs, ours):
        ref, period = _ref_cdf_mod(x, kappa, gamma)
        off = float((mp.mpf(f) - ref) / period)
        assert abs(off - round(off)) * float(period) <= _atol_cdf(kappa), (x, f, ref)


OUTSIDE = [(0.5, 2e-5), (1e4, 0.5), (1000.0, 0.05), (600.0, 0.1)]


@pytest.mark.parametrize("kappa,gamma", OUTSIDE)
def test_cdf_refuses_outside_the_exact_range(kappa, gamma):
    # the Marchenko-Pastur CDF it returned before was 0.2 off at kappa = 0.5, beta = 1e4, its bound 0.5/kappa vacuous
    rng = r"kappa <= 1000 with beta <= 1600 or kappa <= 500 with beta <= 10000"
    got = rf"got kappa = {kappa:g}, gamma = {gamma:g}"
    calls = {"CDF": [lambda: H.htmp_cdf(1.0, kappa, gamma), lambda: H.htmp_logcdf(1.0, kappa, gamma),
                     lambda: H.htmp.cdf(1.0, kappa, gamma), lambda: H.ks_distance([0.5, 1.0, 2.0], kappa, gamma)],
             "survival function": [lambda: H.htmp_sf(1.0, kappa, gamma), lambda: H.htmp_logsf(1.0, kappa, gamma)],
             "quantile function": [lambda: H.htmp.ppf(0.5, kappa, gamma)]}
    for what, fns in calls.items():
        for fn in fns:
            with pytest.raises(ValueError, match=rf"the HTMP {what} is computed exactly only for {rng}.*{got}"):
                fn()


def test_cdf_at_the_border_of_the_range_is_exact():
    # beta = 1e4 exactly is inside: the exact CDF, not the Marchenko-Pastur one (0.2 apart here)
    from htlib import spectra

    xs = np.linspace(0.95, 1.05, 201)  # the MP bulk is [0.990, 1.010]
    f = H.htmp_cdf(xs, 0.5, 2.5e-5)
    assert np.all(np.isfinite(f)) and np.all(np.diff(f) >= 0)
    assert np.max(np.abs(f - spectra.mp_cdf(xs, 2.5e-5))) > 0.19  # 0.199 at x = 0.991

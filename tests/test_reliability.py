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
    (0.5, 1e-4),     # (beta = 1e6 lies outside htmp.EXACT_RANGE: the density refuses, tests/test_htmp.py)
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


# --- the numerical APIs refuse what they cannot compute, naming the argument ------------------------

import torch  # noqa: E402

from htlib import dynamics as D  # noqa: E402
from htlib import generalization as G  # noqa: E402
from htlib import linear as L  # noqa: E402
from htlib import random_matrices as R  # noqa: E402

_rng = np.random.default_rng(0)
A, B = _rng.standard_normal((60, 30)), _rng.standard_normal((60, 30))
EIGS = spectra.esd(A) / 60
X5, Y2 = _rng.standard_normal((40, 5)), _rng.standard_normal((40, 2))
NAN, INF = float("nan"), float("inf")


def _param():
    return torch.ones(3, dtype=torch.float64, requires_grad=True)


def _quadratic(*params):
    return sum((p**2).sum() for p in params)


def _weights():
    return [torch.zeros(3, 5, dtype=torch.float64), torch.zeros(2, 3, dtype=torch.float64)]


BAD_CALLS = {
    # complex input: cast to its real part (with a ComplexWarning at most) on main
    "esd complex": ("W", lambda: spectra.esd(A + 1j * B)),
    "esd complex tensor": ("W", lambda: spectra.esd(torch.tensor(A + 1j * B))),
    "mp_cdf complex": ("x", lambda: spectra.mp_cdf(np.array([1 + 1j]), 0.5)),
    "mp_density complex": ("x", lambda: spectra.mp_density(np.array([1 + 1j]), 0.5)),
    "fit_mp complex": ("eigs", lambda: spectra.fit_mp(EIGS + 1j, 0.5)),
    "fit_power_law complex": ("eigs", lambda: spectra.fit_power_law(EIGS + 1j)),
    "alpha_hill complex": ("eigs", lambda: spectra.alpha_hill(EIGS + 1j)),
    "layer_metrics complex": ("W", lambda: spectra.layer_metrics(A + 1j * B)),
    "overlaps complex": ("J", lambda: spectra.overlaps(A + 1j, A)),
    "kernel_target_alignment complex": ("Z", lambda: spectra.kernel_target_alignment(A + 1j, np.ones(60))),
    "htmp_cdf complex": ("x", lambda: H.htmp_cdf(np.array([1 + 1j]), 2.0, 0.5)),
    "htmp_pdf complex": ("x", lambda: H.htmp_pdf(np.array([1 + 1j]), 2.0, 0.5)),
    "htmp ks_distance complex": ("eigs", lambda: H.ks_distance(EIGS + 1j, 2.0, 0.5)),
    "kappa_from_moments complex": ("eigs", lambda: H.kappa_from_moments(EIGS + 1j, 0.5)),
    "fit_htmp complex": ("eigs", lambda: H.fit_htmp(EIGS + 1j, 0.5)),
    "fit_htmp NaN": ("eigs", lambda: H.fit_htmp(np.append(EIGS, NAN), 0.5)),
    "fit_htmp_l1 NaN": ("eigs", lambda: H.fit_htmp_l1(np.append(EIGS, NAN), 0.5)),
    "fit_scale_ks c0 NaN": ("c0", lambda: H.fit_scale_ks(np.sort(EIGS), lambda y: spectra.mp_cdf(y, 0.5), NAN)),
    "whiten complex": ("X", lambda: L.whiten(X5 + 1j)),
    "feature_gram complex": ("X", lambda: L.feature_gram(X5 + 1j)),
    "spectrum_width complex": ("eigs", lambda: D.spectrum_width(EIGS + 1j)),
    "svd_bases complex": ("W", lambda: D.svd_bases(A + 1j)),
    "top_singular_ratio complex": ("eigs", lambda: G.top_singular_ratio(EIGS + 1j)),
    "spike_over_bulk complex": ("eigs", lambda: G.spike_over_bulk(EIGS + 1j)),
    "compare_with_mp complex": ("W", lambda: R.compare_with_mp(A + 1j)),
    # non-integer counts: truncated on main
    "fit_mp max_iter": ("max_iter", lambda: spectra.fit_mp(EIGS, 0.5, max_iter=2.7)),
    "fit_mp n_zero": ("n_zero", lambda: spectra.fit_mp(EIGS, 0.5, n_zero=1.5)),
    "metrics_from_esd h": ("h", lambda: spectra.metrics_from_esd(EIGS[:20], 20.7, 20)),
    "metrics_from_esd d": ("d", lambda: spectra.metrics_from_esd(EIGS, 60, 30.5)),
    "esd_report h": ("h", lambda: D.esd_report(EIGS, h=60.5, d=30)),
    "kaiming dims": ("dims", lambda: L.kaiming_uniform_weights([3.7, 2], seed=0)),
    "kaiming seed": ("seed", lambda: L.kaiming_uniform_weights([3, 2], seed=0.5)),
    "train_gd record_at": ("record_at", lambda: L.train_gd(_weights(), torch.tensor(X5), torch.tensor(Y2), lr=0.01,
                                                           epochs=3, record_at=[1.5])),
    "one_hot num_classes": ("num_classes", lambda: L.one_hot(np.array([0, 1]), 2.5)),
    "sample_htmp seed": ("seed", lambda: H.sample_htmp(10, 2.0, 0.5, seed=0.5)),
    "quadrature_moments orders": ("orders", lambda: H.quadrature_moments(2.0, 0.5, orders=(0.5,))),
    # rtol outside (0, 1): whiten(X, rtol=nan) returned zeros on main
    "whiten rtol nan": ("rtol", lambda: L.whiten(X5, rtol=NAN)),
    "whiten rtol 2": ("rtol", lambda: L.whiten(X5, rtol=2.0)),
    "whiten rtol 0": ("rtol", lambda: L.whiten(X5, rtol=0.0)),
    "numerical_rank rtol nan": ("rtol", lambda: L.numerical_rank(X5, rtol=NAN)),
    "numerical_rank rtol negative": ("rtol", lambda: L.numerical_rank(X5, rtol=-1.0)),
    "feature_gram rtol nan": ("rtol", lambda: L.feature_gram(X5, rtol=NAN)),
    # kappa <= 0 including -inf ("Marchenko-Pastur" on main), NaN and empty samples
    "ks_distance kappa -inf": ("kappa", lambda: H.ks_distance(EIGS, -INF, 0.5)),
    "ks_distance NaN sample": ("eigs", lambda: H.ks_distance([1.0, NAN], 2.0, 0.5)),
    "ks_distance empty": ("eigs", lambda: H.ks_distance([], 2.0, 0.5)),
    "ks_distance MP scale nan": ("scale", lambda: H.ks_distance(EIGS, INF, 0.5, NAN)),
    "kappa_from_moments empty": ("eigs", lambda: H.kappa_from_moments([], 0.5)),
    "kappa_from_moments NaN": ("eigs", lambda: H.kappa_from_moments([1.0, NAN, 2.0], 0.5)),
    "kappa_from_moments zeros": ("eigs", lambda: H.kappa_from_moments(np.zeros(10), 0.5)),
    "kappa_from_moments negative": ("eigs", lambda: H.kappa_from_moments(-EIGS, 0.5)),
    "ks_distance_sorted NaN": ("cdf_at_sorted", lambda: spectra.ks_distance_sorted(np.array([0.1, NAN]))),
    "spiked_htmp spikes NaN": ("spikes", lambda: H.spiked_htmp_spectrum(100, 2.0, 0.5, spikes=(NAN,), seed=0)),
    "largest_imbalanced_n shares NaN": ("shares", lambda: L.largest_imbalanced_n(np.array([0, 1, 1, 0]), [NAN, 0.5])),
    "first_eta_above NaN": ("etas", lambda: __import__("htlib.two_layer").two_layer.first_eta_above([NAN, 1.0], [1.0, 2.0], 1.5)),
    # the same patterns in sibling functions
    "class_imbalanced_subset seed": ("seed", lambda: L.class_imbalanced_subset(X5, np.arange(40) % 2, 10, 0.6, seed=0.5)),
    "class_imbalanced_subset labels": ("labels", lambda: L.class_imbalanced_subset(X5, np.arange(40) % 2 + 0.5, 10, 0.6,
                                                                                   seed=0)),
    "hessian_eigensolve seed": ("seed", lambda: L.hessian_eigensolve(_quadratic, [_param()], 1, seed=0.5)),
    "hutchinson_trace seed": ("seed", lambda: L.hutchinson_trace(_quadratic, [_param()], 4, seed=0.5)),
    "mp_size_sweep seeds": ("seeds", lambda: R.mp_size_sweep([20], 0.5, [0.5])),
    "phase_track steps": ("steps", lambda: D.phase_track([0.5], [EIGS], h=60, d=30)),
    "spectral_norm complex": ("M", lambda: __import__("htlib.two_layer").two_layer.spectral_norm(torch.tensor(A + 1j))),
    "top_eigenpair complex": ("W", lambda: __import__("htlib.two_layer").two_layer.top_eigenpair(A + 1j)),
    "spearman_bootstrap complex": ("x", lambda: G.spearman_bootstrap(np.ones((4, 3)) + 1j, np.ones((4, 3)), n_boot=10)),
    "spearman_bootstrap seed": ("seed", lambda: G.spearman_bootstrap(np.ones((4, 3)), np.ones((4, 3)), n_boot=10, seed=0.5)),
    # a constant spectrum: alpha = inf on main
    "fit_power_law constant": ("eigs", lambda: spectra.fit_power_law(np.ones(200))),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_input_is_refused_naming_the_argument(case):
    arg, call = BAD_CALLS[case]
    with pytest.raises(ValueError, match=rf"\b{arg}\b"):
        call()


def test_layer_metrics_of_a_rank_one_matrix_documents_nan():
    """Fewer than 5 eigenvalues above WeightWatcher's floor leave no power law to fit: ``alpha``
    (and ``alpha_weighted``) are NaN, as :func:`spectra.layer_metrics` documents; the rest is finite."""
    W = np.outer(np.arange(1.0, 61.0), np.arange(1.0, 31.0))
    m = spectra.layer_metrics(W)
    assert math.isnan(m["alpha"]) and math.isnan(m["alpha_weighted"])
    assert m["stable_rank"] == pytest.approx(1.0) and math.isfinite(m["log_spectral_norm"])
    assert "alpha" in (spectra.layer_metrics.__doc__ or "") and "NaN" in spectra.layer_metrics.__doc__


def test_plus_infinity_still_means_marchenko_pastur():
    assert H.ks_distance(EIGS, INF, 0.5) == pytest.approx(spectra.ks_distance_mp(EIGS, 0.5))
    assert H.ks_distance(EIGS, INF, 0.5) == spectra.ks_distance_sorted(spectra.mp_cdf(np.sort(EIGS), 0.5))

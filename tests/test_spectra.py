"""Tests of htlib.spectra against independent references.

References: the WWFit candidate loop of REFERENCE §B written out below, the real ``powerlaw``
package, closed forms and quadrature of the MP law, SciPy's KS test, NumPy's SVD, and the
BBP outlier formula for spiked matrices.
"""

from __future__ import annotations

import math
import sys
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.integrate
import scipy.stats
import torch

from htlib import spectra as S

sys.path.insert(0, str(Path(__file__).resolve().parent))
import perturb  # noqa: E402


def _phase(e, gamma):
    """The phase label and the detached-spike count of an ESD, checked under round-off perturbations of the ESD
    (``tests/perturb.py``): a label that rounding can flip fails here."""
    def read(x):
        rep = S.analyze_spectrum(x, gamma)
        return rep.phase, rep.num_detached

    return perturb.stable(read, e)

RTOL = 1e-10


# --------------------------------------------------------------------------- references


def wwfit_loop(eigs: np.ndarray) -> tuple[float, float, float]:
    """REFERENCE §B, candidate by candidate: (alpha, xmin, D) of the smallest D."""
    x = np.sort(np.asarray(eigs, dtype=np.float64))
    x = x[x > 1e-5]
    n = x.size
    best = (math.inf, math.nan, math.nan)  # (D, alpha, xmin)
    for i in range(n - 1):
        m = n - i
        tail = x[i:]
        s = float(np.sum(np.log(tail / x[i])))
        alpha = 1.0 + m / s if s > 0 else math.inf
        if not math.isfinite(alpha) or alpha <= 1.0:
            D = 1.0
        else:
            D = float(np.max(np.abs(1.0 - (tail / x[i]) ** (1.0 - alpha) - np.arange(m) / m)))
        if D < best[0]:
            best = (D, alpha, x[i])
    return best[1], best[2], best[0]


def pareto_sample(n: int, alpha: float, seed: int) -> np.ndarray:
    """Continuous power law p(x) ~ x^-alpha on x >= 1 (NumPy's Lomax + 1)."""
    return np.random.default_rng(seed).pareto(alpha - 1.0, n) + 1.0


def gaussian_esd(h: int, d: int, seed: int, var: float = 1.0) -> np.ndarray:
    W = np.random.default_rng(seed).standard_normal((h, d)) * math.sqrt(var)
    return S.esd(W, normalize="rows")


def spiked(h: int, d: int, thetas, seed: int) -> np.ndarray:
    """Gaussian plus ``sqrt(h) U diag(thetas) Vᵀ`` with orthonormal ``U``, ``V``."""
    rng = np.random.default_rng(seed)
    th = np.asarray(thetas, dtype=np.float64)
    U = np.linalg.qr(rng.standard_normal((h, th.size)))[0]
    V = np.linalg.qr(rng.standard_normal((d, th.size)))[0]
    return rng.standard_normal((h, d)) + math.sqrt(h) * (U * th) @ V.T


def heavy_wishart_esd(h: int, d: int, mu: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    W = (rng.pareto(mu, (h, d)) + 1.0) * rng.choice([-1.0, 1.0], (h, d))
    return S.esd(W)


def bbp_outlier(theta: float, gamma: float) -> float:
    return (1.0 + theta**2) * (gamma + theta**2) / theta**2


# --------------------------------------------------------------------------- fit_power_law


@pytest.mark.parametrize(
    "eigs",
    [
        pareto_sample(1200, 2.5, 0),
        pareto_sample(800, 4.0, 1) * 3.0,
        gaussian_esd(600, 400, 2),
        heavy_wishart_esd(600, 400, 1.5, 3),
        heavy_wishart_esd(600, 400, 3.0, 4),
    ],
    ids=["pareto2.5", "pareto4", "gauss-esd", "wishart-mu1.5", "wishart-mu3"],
)
def test_fit_power_law_equals_wwfit_loop(eigs):
    a_ref, xmin_ref, d_ref = wwfit_loop(eigs)
    fit = S.fit_power_law(eigs)
    assert fit.alpha == pytest.approx(a_ref, rel=RTOL)
    assert fit.xmin == pytest.approx(xmin_ref, rel=RTOL)
    assert fit.ks_distance == pytest.approx(d_ref, rel=RTOL)
    x = np.sort(eigs[eigs > 1e-5])
    assert fit.n_tail == int(np.sum(x >= fit.xmin))
    assert fit.sigma == pytest.approx((fit.alpha - 1.0) / math.sqrt(fit.n_tail), rel=1e-14)


def test_fit_power_law_small_blocks_agree(monkeypatch):
    """The block size of the vectorized scan must not change the result."""
    eigs = heavy_wishart_esd(300, 200, 2.5, 5)
    full = S.fit_power_law(eigs)
    monkeypatch.setattr(S, "_KS_CHUNK_ELEMS", 7)
    tiny = S.fit_power_law(eigs)
    assert (tiny.alpha, tiny.xmin, tiny.ks_distance) == pytest.approx((full.alpha, full.xmin, full.ks_distance), rel=1e-13)


@pytest.mark.parametrize(
    "x",
    [
        pareto_sample(3000, 2.5, 20),
        np.round(pareto_sample(2000, 3.0, 21), 2),  # many ties
        gaussian_esd(900, 600, 22),
        np.concatenate([np.linspace(1.0, 2.0, 900), [5.0, 9.0, 30.0]]),  # bulk plus a few spikes
    ],
    ids=["pareto", "ties", "gauss-esd", "spikes"],
)
def test_branch_and_bound_equals_full_scan(x):
    """The pruned scan returns the full scan's argmin and value, and only lower bounds elsewhere."""
    logx = np.log(np.sort(x[x > 1e-5]))
    a1, d1 = S._ks_scan(logx)
    a2, d2 = S._ks_scan_full(logx)
    np.testing.assert_array_equal(a1, a2)
    assert np.argmin(d1) == np.argmin(d2)
    assert d1.min() == d2.min()
    assert np.all(d1 <= d2 + 1e-15)


def _powerlaw_fit(data, **kw):
    import powerlaw
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # powerlaw 2.0 restricts alpha to [0, 3] by default; widen it to the plain MLE
        return powerlaw.Fit(data, verbose=False, parameter_ranges={"alpha": [1.0, 1e9]}, **kw)


@pytest.mark.parametrize("q", [0.0, 0.3, 0.6, 0.9])
def test_fixed_xmin_matches_powerlaw_package(q):
    eigs = heavy_wishart_esd(600, 400, 2.0, 6)
    xmin = float(np.quantile(eigs, q, method="lower"))  # an eigenvalue: the candidate sets coincide
    ref = _powerlaw_fit(eigs, xmin=xmin)
    fit = S.fit_power_law(eigs, xmin=xmin)
    assert fit.alpha == pytest.approx(ref.power_law.alpha, rel=RTOL)
    assert fit.ks_distance == pytest.approx(ref.power_law.D, rel=1e-9)
    assert fit.n_tail == int(np.sum(eigs >= xmin))


def test_scan_matches_powerlaw_package():
    eigs = pareto_sample(300, 3.0, 7)  # continuous sample: unique values, same candidates
    ref = _powerlaw_fit(eigs)
    fit = S.fit_power_law(eigs)
    assert fit.xmin == ref.xmin
    assert fit.alpha == pytest.approx(ref.power_law.alpha, rel=RTOL)
    assert fit.ks_distance == pytest.approx(ref.power_law.D, rel=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("alpha", [2.5, 3.5])
def test_alpha_recovers_pareto_exponent(alpha, seed):
    x = pareto_sample(6000, alpha, 100 + seed)
    fit = S.fit_power_law(x)
    assert abs(fit.alpha - alpha) < 3.0 * fit.sigma
    fixed = S.fit_power_law(x, xmin=1.0)
    assert fixed.n_tail == x.size
    assert abs(fixed.alpha - alpha) < 3.0 * fixed.sigma


def test_fit_power_law_drops_small_and_xmax():
    x = pareto_sample(500, 3.0, 8)
    padded = np.concatenate([x, np.zeros(50), np.full(10, 1e-6)])
    assert S.fit_power_law(padded).alpha == pytest.approx(S.fit_power_law(x).alpha, rel=1e-14)
    cut = float(np.quantile(x, 0.9))
    assert S.fit_power_law(x, xmax=cut).n_fit == int(np.sum(x <= cut))
    a_ref, _, _ = wwfit_loop(x[x <= cut])
    assert S.fit_power_law(x, xmax=cut).alpha == pytest.approx(a_ref, rel=RTOL)


def test_ks_scan_memory_is_not_quadratic():
    x = pareto_sample(8192, 2.5, 9)
    tracemalloc.start()
    S.fit_power_law(x)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 32 * 2**20  # an N x N float64 matrix would be 512 MiB


# --------------------------------------------------------------------------- alpha_hill


def test_alpha_hill_hand_made():
    # N = 6, i = 3: tail (1, e, e^2) over l_i = 1 -> sum of logs 3, m = 3 -> alpha = 2
    assert S.alpha_hill([0.5, 0.7, 0.9, 1.0, math.e, math.e**2]) == pytest.approx(2.0, rel=1e-14)
    # N = 7, i = 3: tail (2, 2e, 2e, 2e^3) -> sum 5, m = 4 -> alpha = 1.8; input order irrelevant
    x = [2 * math.e**3, 0.1, 2 * math.e, 0.3, 2.0, 0.2, 2 * math.e]
    assert S.alpha_hill(x) == pytest.approx(1.8, rel=1e-14)
    assert S.alpha_hill(torch.tensor(x)) == pytest.approx(1.8, rel=1e-6)


# --------------------------------------------------------------------------- ESD


@pytest.mark.parametrize("shape", [(60, 40), (40, 60), (50, 50)])
def test_esd_matches_numpy_svd(shape):
    W = np.random.default_rng(10).standard_normal(shape)
    ref = np.sort(np.linalg.svd(W, compute_uv=False) ** 2)
    np.testing.assert_allclose(S.esd(W), ref, rtol=1e-10, atol=1e-12 * ref[-1])
    np.testing.assert_allclose(S.esd(W, normalize="rows"), ref / shape[0], rtol=1e-10, atol=1e-12 * ref[-1])
    Wt = torch.from_numpy(W).float()
    ref32 = np.sort(np.linalg.svd(Wt.double().numpy(), compute_uv=False) ** 2)
    got = S.esd(Wt)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, ref32, rtol=1e-9, atol=1e-12 * ref[-1])


def test_esd_low_rank_and_heavy_keep_accuracy():
    rng = np.random.default_rng(11)
    A = rng.standard_normal((80, 5)) @ rng.standard_normal((5, 60))
    e = S.esd(A)
    ref = np.sort(np.linalg.svd(A, compute_uv=False) ** 2)
    np.testing.assert_allclose(e[-5:], ref[-5:], rtol=1e-10)
    assert np.all(e[:-5] < 1e-20 * e[-1])
    H = (rng.pareto(0.5, (80, 60)) + 1) * rng.choice([-1.0, 1.0], (80, 60))
    refh = np.sort(np.linalg.svd(H, compute_uv=False) ** 2)
    np.testing.assert_allclose(S.esd(H), refh, rtol=1e-8)


# --------------------------------------------------------------------------- Marchenko-Pastur


@pytest.mark.parametrize("gamma,sigma2", [(0.25, 2.0), (2 / 3, 1.0), (1.0, 0.5)])
def test_mp_law_against_quadrature(gamma, sigma2):
    lo, hi = S.mp_edges(gamma, sigma2)
    assert (lo, hi) == pytest.approx((sigma2 * (1 - math.sqrt(gamma)) ** 2, sigma2 * (1 + math.sqrt(gamma)) ** 2))
    f = lambda x: float(S.mp_density(np.array([x]), gamma, sigma2)[0])  # noqa: E731
    pts = [lo + (hi - lo) * t for t in (0.2, 0.5, 0.8)]
    mass = scipy.integrate.quad(f, lo, hi, limit=200)[0]
    mean = scipy.integrate.quad(lambda x: x * f(x), lo, hi, limit=200)[0]
    assert mass == pytest.approx(1.0, abs=1e-6)
    assert mean == pytest.approx(sigma2, rel=1e-6)  # E[l] = sigma2 for the ESD of WᵀW/p
    for x in pts:
        assert float(S.mp_cdf(np.array([x]), gamma, sigma2)[0]) == pytest.approx(
            scipy.integrate.quad(f, lo, x, limit=200)[0], abs=1e-6)
    assert S.mp_quantile(0.5, gamma, sigma2) == pytest.approx(
        scipy.optimize.brentq(lambda x: scipy.integrate.quad(f, lo, x, limit=200)[0] - 0.5, lo, hi), rel=1e-6)


def test_ks_distance_mp_matches_scipy_kstest():
    e = gaussian_esd(300, 200, 12)
    ref = scipy.stats.kstest(e, lambda x: S.mp_cdf(x, 2 / 3)).statistic
    assert S.ks_distance_mp(e, 2 / 3) == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fit_mp_pure_noise(seed):
    e = gaussian_esd(1500, 1000, seed, var=2.0)
    fit = S.fit_mp(e, 2 / 3)
    assert fit.sigma2 == pytest.approx(2.0, rel=0.01)
    assert fit.num_spikes == 0 and fit.spikes.size == 0
    assert (fit.lambda_minus, fit.lambda_plus) == pytest.approx(S.mp_edges(2 / 3, fit.sigma2))


@pytest.mark.parametrize("thetas", [(2.0,), (1.5, 3.0), (1.6, 2.2, 5.0)])
def test_fit_mp_finds_k_spikes(thetas):
    W = spiked(1500, 1000, thetas, seed=len(thetas))
    fit = S.fit_mp(S.esd(W, normalize="rows"), 2 / 3)
    assert fit.num_spikes == len(thetas)
    assert fit.sigma2 == pytest.approx(1.0, rel=0.02)
    want = sorted(bbp_outlier(t, 2 / 3) for t in thetas)
    np.testing.assert_allclose(fit.spikes, want, rtol=0.05)


# --------------------------------------------------------------------------- zeros, phases


def test_fit_mp_ignores_zero_block():
    """Zero columns: the fit on the non-zero part is the MP fit of the smaller matrix (independent reference:
    the same Gaussian block without the zero columns, fitted with its own ratio)."""
    rng = np.random.default_rng(31)
    G = rng.standard_normal((1500, 1000))
    G[:, :80] = 0.0
    e = S.esd(G, normalize="rows")
    ref = S.fit_mp(S.esd(G[:, 80:], normalize="rows"), 920 / 1500)
    fit = S.fit_mp(e, 2 / 3)
    assert fit.n_zero == 80 and fit.gamma_fit == pytest.approx(920 / 1500)
    assert fit.sigma2 == pytest.approx(ref.sigma2, rel=1e-12) and fit.num_spikes == 0
    assert S.classify_phase(e, 2 / 3) == "random-like"


def test_zero_block_finds_noise_floor_and_ignores_heavy_tops():
    x = np.concatenate([1e-6 * np.linspace(1.0, 2.0, 900), np.linspace(1.0, 3.0, 100)])
    assert S.zero_block(x) == 900
    assert S.zero_block(np.linspace(1.0, 3.0, 200)) == 0
    heavy = np.concatenate([np.linspace(1.0, 2.0, 995), [1e3, 1e5, 1e7, 1e9, 1e11]])  # 100-fold jumps at the top
    assert S.zero_block(heavy) == 0


def test_rank_three_matrix_is_rank_collapse_without_fits():
    """Fewer non-zero eigenvalues than any fit needs: the report still labels it, with nan evidence."""
    rng = np.random.default_rng(8)
    e = S.esd(rng.standard_normal((300, 3)) @ rng.standard_normal((3, 200)))
    rep = S.analyze_spectrum(e, 2 / 3)
    assert _phase(e, 2 / 3)[0] == rep.phase == "rank-collapse" and rep.n_zero == 197 and rep.mp is None
    assert math.isnan(rep.lambda_plus) and not rep.heavy_tailed and not rep.heavy_tailed_strict


def test_classify_phase_is_scale_free():
    e = gaussian_esd(300, 200, 13)
    assert S.classify_phase(e, 2 / 3) == S.classify_phase(1e4 * e, 2 / 3) == "random-like"
    assert perturb.stable(S.classify_phase, e, 2 / 3) == "random-like"


def test_report_evidence_is_consistent():
    """The report's numbers against direct computations on the same spectrum."""
    W = spiked(300, 200, (3.0,), seed=5)
    e = S.esd(W, normalize="rows")
    rep = S.analyze_spectrum(e, 2 / 3)
    mp = S.fit_mp(e, 2 / 3)
    assert rep.lambda_plus == pytest.approx(mp.lambda_plus, rel=1e-12) and rep.num_outliers == 1
    assert rep.edge_margin_tw == pytest.approx((e[-1] - mp.lambda_plus) / mp.tw_scale, rel=1e-12)
    assert rep.bulk_gap_tw == pytest.approx((e[-1] - e[-2]) / mp.tw_scale, rel=1e-12)
    assert rep.alpha == pytest.approx(S.fit_power_law(e).alpha, rel=1e-12)
    assert rep.phase == "bulk+spikes" and rep.num_detached == 1 and not rep.heavy_tailed
    assert _phase(e, 2 / 3) == ("bulk+spikes", 1)
    assert rep.tw_scale == pytest.approx(S.tracy_widom_scale(300, 200, mp.sigma2), rel=1e-12)


def test_renyi_spacing_test_detaches_a_spike_from_a_tail():
    """A continuous Pareto tail keeps its top; the same tail with its top multiplied by 1e4 loses it."""
    rng = np.random.default_rng(3)
    tail = np.sort(1.0 + rng.pareto(1.5, 40))
    assert S._renyi_detached(tail, 1.0, 0.01) == 0
    spiked_tail = tail.copy()
    spiked_tail[-1] *= 1e4
    assert S._renyi_detached(spiked_tail, 1.0, 0.01) == 1


def test_renyi_false_detection_rate_matches_its_level():
    """Under a continuous Pareto tail the test detaches in at most about 1% of draws (its level)."""
    rng = np.random.default_rng(4)
    hits = sum(S._renyi_detached(np.sort(1.0 + rng.pareto(1.2, 30)), 1.0, 0.01) > 0 for _ in range(2000))
    assert hits / 2000 < 0.02


def _with_top(k: int, values_over_edge, seed: int = 21) -> tuple[np.ndarray, float]:
    """A 600 x 400 Gaussian ESD in which ``k`` eigenvalues, taken evenly across the bulk (so its shape and
    median barely move), are replaced by ``values_over_edge`` times the MP edge of the entries' law
    (``(1 + sqrt(2/3))**2``): a bulk with a tail or spikes of known shape."""
    e = np.sort(gaussian_esd(600, 400, seed))
    edge = S.mp_edges(2 / 3)[1]
    drop = np.linspace(0, e.size - 2, k).astype(int)
    kept = np.delete(e, drop)
    return np.sort(np.r_[kept, np.asarray(values_over_edge, dtype=np.float64) * edge]), edge


def _pareto_quantiles(m: int, alpha: float) -> np.ndarray:
    """``m`` evenly spaced quantiles of the power law ``p(x) ~ x^(-alpha)`` on ``x >= 1``."""
    u = (np.arange(m) + 0.5) / m
    return (1.0 - u) ** (-1.0 / (alpha - 1.0))


def test_a_spread_edge_under_a_spike_is_bulk_plus_spikes():
    """One large sign step of FB-Adam: an edge spread to 1.3 lambda_+ under a spike at 100 lambda_+.
    The spike is detached, the continuum under it is not a heavy tail (it stays within 2 lambda_+)."""
    e, _ = _with_top(21, np.r_[np.linspace(1.0, 1.3, 20), 100.0])
    rep = S.analyze_spectrum(e, 2 / 3)
    assert rep.phase == "bulk+spikes" and rep.num_detached == 1 and not rep.heavy_tailed
    assert rep.tail_reach < S.PHASE_RULES.heavy_reach and _phase(e, 2 / 3) == ("bulk+spikes", 1)


def test_heavy_tail_needs_reach_and_exponent():
    """A power-law continuum from the edge is heavy-tailed with alpha = 2.5, bulk-decay with alpha = 6
    (steeper than Martin & Mahoney's range)  and bulk-decay when compressed within 1.5 lambda_+."""
    esds = [_with_top(40, _pareto_quantiles(40, 2.5))[0], _with_top(60, _pareto_quantiles(60, 6.0))[0],
            _with_top(40, np.linspace(1.0, 1.5, 40))[0]]
    heavy, steep, short = (S.analyze_spectrum(e, 2 / 3) for e in esds)
    assert heavy.phase == "heavy-tailed" and heavy.tail_reach > 2 and abs(heavy.tail_alpha - 2.5) < 0.5
    assert steep.tail_reach >= 2 and steep.tail_alpha >= 4 and steep.phase == "bulk-decay"
    assert short.phase == "bulk-decay" and short.tail_reach < 2 and "reaches only" in short.reason
    assert [_phase(e, 2 / 3)[0] for e in esds] == ["heavy-tailed", "bulk-decay", "bulk-decay"]


def test_tail_alpha_is_the_fixed_threshold_fit_of_the_tail():
    """tail_alpha equals the power-law fit with xmin fixed at lambda_+ on the tail (a second code path),
    and its standard error is (alpha - 1)/sqrt(m)."""
    rep = S.analyze_spectrum(_with_top(40, _pareto_quantiles(40, 3.0))[0], 2 / 3)
    tail = rep.outliers[: rep.tail_size]
    fit = S.fit_power_law(tail, xmin=rep.lambda_plus)
    assert rep.tail_alpha == pytest.approx(fit.alpha, rel=1e-12)
    assert rep.tail_alpha_sigma == pytest.approx(fit.sigma, rel=1e-12)


def test_a_spike_over_one_bleeding_eigenvalue_is_not_a_tail():
    """Two outliers, one just past the edge and one at 20 lambda_+ (GD after three steps): too few for a
    continuum, and the top one stands far above the other, so it is a spike."""
    edge = S.mp_edges(2 / 3)[1]
    e, _ = _with_top(2, [1.0 + 6 * S.tracy_widom_scale(600, 400) / edge, 20.0])  # 6 widths past the edge
    rep = S.analyze_spectrum(e, 2 / 3)
    assert rep.num_outliers == 2 and rep.bulk_gap_tw < S.PHASE_RULES.separation_tw
    assert rep.phase == "bulk+spikes" and rep.num_detached == 1 and _phase(e, 2 / 3) == ("bulk+spikes", 1)


def test_phase_rules_validate():
    for kw, match in [({"collapse_fraction": 0.0}, "collapse_fraction"), ({"separation_tw": 2.0}, "separation_tw"),
                      ({"heavy_reach": 1.0}, "heavy_reach"), ({"heavy_alpha": 0.5}, "heavy_alpha"), ({"decay_min": 0}, "decay_min"),
                      ({"renyi_pvalue": 1.5}, "renyi_pvalue"), ({"strict_alpha": 1.0}, "strict_alpha")]:
        with pytest.raises(ValueError, match=match):
            S.PhaseRules(**kw)
    with pytest.raises(ValueError, match="rules"):
        S.analyze_spectrum(gaussian_esd(60, 40, 1), 2 / 3, rules="strict")


# --------------------------------------------------------------------------- layer metrics


def test_layer_metrics_against_direct_formulas():
    W = spiked(300, 200, (1.5, 2.5, 4.0), seed=14)
    got = S.layer_metrics(torch.from_numpy(W))
    ev = np.sort(np.linalg.svd(W, compute_uv=False) ** 2)
    assert set(got) == {"alpha", "alpha_hill", "alpha_weighted", "log_spectral_norm", "stable_rank",
                        "log_norm", "mp_outliers", "mp_edge_ratio", "phase", "heavy_tailed"}
    a_ref, _, _ = wwfit_loop(ev)
    assert got["alpha"] == pytest.approx(a_ref, rel=1e-9)
    assert got["log_spectral_norm"] == pytest.approx(math.log10(ev[-1]), rel=1e-12)
    assert got["alpha_weighted"] == pytest.approx(a_ref * math.log10(ev[-1]), rel=1e-9)
    assert got["stable_rank"] == pytest.approx(ev.sum() / ev[-1], rel=1e-10)
    assert got["log_norm"] == pytest.approx(math.log10(np.sum(W**2)), rel=1e-12)
    assert got["mp_outliers"] == 3 and got["phase"] == "bulk+spikes" and not got["heavy_tailed"]
    def labels(w):  # the count and the labels, under round-off perturbations of W (tests/perturb.py)
        m = S.layer_metrics(torch.from_numpy(w))
        return m["mp_outliers"], m["phase"], bool(m["heavy_tailed"])

    assert perturb.stable(labels, W) == (3, "bulk+spikes", False)
    assert got["mp_edge_ratio"] == pytest.approx(S.fit_mp(ev / 300, 2 / 3).lambda_plus / (ev[-1] / 300), rel=1e-9)


# --------------------------------------------------------------------------- alignments


def test_overlaps_and_alignments():
    rng = np.random.default_rng(15)
    Q = np.linalg.qr(rng.standard_normal((30, 30)))[0]
    np.testing.assert_allclose(S.overlaps(Q, Q), np.eye(30), atol=1e-12)
    J = rng.standard_normal((30, 4))
    ref = np.array([[np.dot(J[:, a], Q[:, b]) ** 2 for b in range(30)] for a in range(4)])
    np.testing.assert_allclose(S.overlaps(J, Q), ref, rtol=1e-12)
    np.testing.assert_allclose(S.overlaps(J, Q).sum(axis=1), (J**2).sum(axis=0), rtol=1e-12)

    Z = rng.standard_normal((200, 7))
    y = rng.standard_normal(200)
    K = Z @ Z.T
    Y = np.outer(y, y)
    kta = np.sum(K * Y) / (np.linalg.norm(K) * np.linalg.norm(Y))
    assert S.kernel_target_alignment(Z, y) == pytest.approx(kta, rel=1e-12)
    Zw = rng.standard_normal((20, 50))  # d > n
    Kw = Zw @ Zw.T
    Yw = np.outer(y[:20], y[:20])
    assert S.kernel_target_alignment(Zw, y[:20]) == pytest.approx(
        np.sum(Kw * Yw) / (np.linalg.norm(Kw) * np.linalg.norm(Yw)), rel=1e-12)

    W = rng.standard_normal((40, 25))
    beta = rng.standard_normal(25)
    beta /= np.linalg.norm(beta)
    v1 = np.linalg.svd(W)[2][0]
    assert S.top_alignment(W, beta) == pytest.approx(abs(v1 @ beta), rel=1e-10)
    assert S.top_alignment(W, v1) == pytest.approx(1.0, rel=1e-12)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "fn",
    [S.alpha_hill, S.fit_power_law, lambda e: S.fit_mp(e, 0.5), lambda e: S.classify_phase(e, 0.5),
     lambda e: S.ks_distance_mp(e, 0.5)],
    ids=["alpha_hill", "fit_power_law", "fit_mp", "classify_phase", "ks_distance_mp"],
)
@pytest.mark.parametrize(
    "bad,match",
    [
        (np.array([]), "eigs must not be empty"),
        (np.array([1.0, np.nan, 2.0, 3.0, 4.0, 5.0]), "eigs holds NaN or inf"),
        (np.array([1.0, np.inf, 2.0, 3.0, 4.0, 5.0]), "eigs holds NaN or inf"),
        (np.zeros(10), "eigs is all zeros"),
        (np.array([-1.0, 1.0, 2.0, 3.0, 4.0, 5.0]), "eigs must be non-negative"),
        (np.ones((3, 4)), "eigs must be a 1-D array"),
        ("abc", "eigs must be numeric"),
    ],
)
def test_bad_spectra_raise(fn, bad, match):
    with pytest.raises(ValueError, match=match):
        fn(bad)


@pytest.mark.parametrize("fn", [S.alpha_hill, S.fit_power_law, lambda e: S.fit_mp(e, 0.5),
                                lambda e: S.classify_phase(e, 0.5)])
def test_too_few_positive_eigenvalues_raise(fn):
    with pytest.raises(ValueError, match="at least 5"):
        fn(np.array([0.0, 0.0, 0.0, 1.0, 2.0, 3.0]))


def test_bad_matrices_and_arguments_raise():
    # The shared checks of htlib._checks: every message names the argument.
    for bad, match in [(np.ones(5), "W must be a 2-D"), (np.ones((2, 2, 2)), "W must be a 2-D"),
                       (np.ones((0, 3)), "W must not be empty"),
                       (np.array([[1.0, np.nan], [0.0, 1.0]]), "W holds NaN or inf"),
                       (torch.tensor([[1.0, float("inf")], [0.0, 1.0]]), "W holds NaN or inf")]:
        with pytest.raises(ValueError, match=match):
            S.esd(bad)
    with pytest.raises(ValueError, match="normalize"):
        S.esd(np.eye(3), normalize="cols")
    with pytest.raises(ValueError, match=r"gamma must be the aspect ratio q/p in \(0, 1\]"):
        S.mp_edges(1.5)
    with pytest.raises(ValueError, match="gamma must be finite and > 0"):
        S.mp_edges(0.0)
    with pytest.raises(ValueError, match="gamma must be a real number"):
        S.mp_edges("0.5")
    with pytest.raises(ValueError, match="sigma2 must be finite and > 0"):
        S.mp_density(np.ones(3), 0.5, sigma2=-1.0)
    with pytest.raises(ValueError, match="J must be a 2-D"):
        S.overlaps(np.ones(3), np.ones((3, 2)))
    with pytest.raises(ValueError, match="xmin"):
        S.fit_power_law(pareto_sample(50, 3.0, 0), xmin=-1.0)
    with pytest.raises(ValueError, match="xmax"):
        S.fit_power_law(pareto_sample(50, 3.0, 0), xmax=float("nan"))
    with pytest.raises(ValueError, match="same number of rows"):
        S.overlaps(np.ones((3, 2)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="beta"):
        S.top_alignment(np.ones((4, 3)), np.ones(4))
    with pytest.raises(ValueError, match="y must"):
        S.kernel_target_alignment(np.ones((4, 3)), np.ones(5))


def test_metrics_from_esd_fits_power_law_and_mp_once(monkeypatch):
    """One spectrum report feeds every metric: each fit runs once per matrix (issue 15)."""
    W = np.random.default_rng(5).standard_t(3.0, (300, 200))
    expected = S.layer_metrics(W)
    calls = {"fit_power_law": 0, "fit_mp": 0}
    for name in calls:
        original = getattr(S, name)

        def counted(*args, _name=name, _original=original, **kwargs):
            calls[_name] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(S, name, counted)
    got = S.metrics_from_esd(S.esd(W), 300, 200)
    assert calls == {"fit_power_law": 1, "fit_mp": 1}
    assert got == expected

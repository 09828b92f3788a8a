"""Tests of htlib.random_matrices: the Gaussian baseline, its MP comparison and the labelled families."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from htlib import random_matrices as R
from htlib import spectra as S


def test_gaussian_matrix_is_seeded_and_scaled():
    a = R.gaussian_matrix(400, 300, seed=1, sigma2=2.0)
    b = R.gaussian_matrix(400, 300, seed=1, sigma2=2.0)
    assert torch.equal(a, b) and a.shape == (400, 300)
    assert float(a.double().var()) == pytest.approx(2.0, rel=0.02)


def test_compare_with_mp_against_direct_formulas():
    W = R.gaussian_matrix(600, 300, seed=2, dtype=torch.float64)
    c = R.compare_with_mp(W)
    e = np.sort(np.linalg.svd(W.numpy(), compute_uv=False) ** 2) / 600
    assert c.lambda_max == pytest.approx(e[-1], rel=1e-10)
    assert c.lambda_plus == pytest.approx((1 + math.sqrt(0.5)) ** 2, rel=1e-12)
    assert c.edge_gap_tw == pytest.approx((e[-1] - c.lambda_plus) / S.tracy_widom_scale(600, 300), rel=1e-9)
    assert c.num_spikes == 0 and abs(c.edge_gap_tw) < 6


@pytest.mark.parametrize("name", list(R.LABELLED_CASES))
def test_labelled_matrices_shape_and_seed(name):
    W = R.labelled_matrix(name, 120, 80, seed=3)
    assert W.shape == (120, 80) and W.dtype == np.float64 and np.all(np.isfinite(W))
    assert np.array_equal(W, R.labelled_matrix(name, 120, 80, seed=3))
    assert not np.array_equal(W, R.labelled_matrix(name, 120, 80, seed=4))


@pytest.mark.parametrize("pct", [5, 20, 50])
def test_zero_families_have_that_share_of_zero_singular_values(pct):
    W = R.labelled_matrix(f"zeros{pct}", 300, 200, seed=0)
    sv = np.linalg.svd(W, compute_uv=False)
    assert int(np.sum(sv < 1e-10 * sv[0])) == round(pct / 100 * 200)


def test_collapse_family_is_low_rank_above_a_noise_floor():
    sv = np.linalg.svd(R.labelled_matrix("collapse", 300, 200, seed=0), compute_uv=False)
    assert sv[19] / sv[20] > 30 and sv[-1] > 0  # rank d/10 = 20 signal, positive noise floor


def test_spiked_family_outlier_at_bbp_location():
    g = 200 / 300
    e = S.esd(R.labelled_matrix("rank1-4.0", 300, 200, seed=0), normalize="rows")
    assert e[-1] == pytest.approx((1 + 16.0) * (g + 16.0) / 16.0, rel=0.03)


def test_bad_input_raises():
    with pytest.raises(ValueError, match="name must be one of"):
        R.labelled_matrix("cauchy")
    with pytest.raises(ValueError, match="h and d must satisfy h >= d"):
        R.labelled_matrix("gaussian", 10, 20)
    with pytest.raises(ValueError, match="d must be an integer >= 10"):
        R.labelled_matrix("gaussian", 30, 5)
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        R.labelled_matrix("gaussian", 30, 20, seed=-1)
    with pytest.raises(ValueError, match="p must be an integer >= 1"):
        R.gaussian_matrix(0, 3, seed=0)
    with pytest.raises(ValueError, match="q must be an integer >= 1"):
        R.gaussian_matrix(3, 2.5, seed=0)
    with pytest.raises(ValueError, match="sigma2 must be finite and > 0"):
        R.gaussian_matrix(3, 2, seed=0, sigma2=0.0)
    with pytest.raises(ValueError, match=r"gamma must be in \(0, 1\]"):
        R.mp_size_sweep([20], 1.5, [0])
    with pytest.raises(ValueError, match="p >= q"):
        R.compare_with_mp(np.ones((3, 5)))


def test_compare_with_mp_lower_edge_and_gamma_closed_form():
    c = R.compare_with_mp(R.gaussian_matrix(500, 125, seed=4, dtype=torch.float64), sigma2=1.0)
    assert c.gamma == 0.25 and (c.p, c.q) == (500, 125)
    assert c.lambda_minus == pytest.approx((1 - 0.5) ** 2, rel=1e-12)
    assert c.lambda_plus == pytest.approx((1 + 0.5) ** 2, rel=1e-12)
    assert c.tw_scale == pytest.approx((math.sqrt(500) + math.sqrt(125)) * (1 / math.sqrt(500) + 1 / math.sqrt(125)) ** (1 / 3) / 500)
    assert c.lambda_min <= c.lambda_max and c.ks_distance < 0.05


def test_compare_with_mp_known_variance_scales_the_edges():
    W = R.gaussian_matrix(400, 200, seed=5, sigma2=3.0, dtype=torch.float64)
    c = R.compare_with_mp(W, sigma2=3.0)
    assert c.lambda_plus == pytest.approx(3.0 * (1 + math.sqrt(0.5)) ** 2, rel=1e-12)
    assert abs(c.edge_gap_tw) < 6 and c.ks_distance < 0.05  # the right variance: MP holds


def test_mp_size_sweep_is_compare_with_mp_per_size_and_seed():
    out = R.mp_size_sweep([30, 60], gamma=0.5, seeds=[7, 8])
    assert out.p.tolist() == [30, 60] and out.q.tolist() == [15, 30]
    for i, p in enumerate((30, 60)):
        for j, seed in enumerate((7, 8)):
            c = R.compare_with_mp(R.gaussian_matrix(p, p // 2, seed=seed))
            assert out.ks_distance[i, j] == c.ks_distance
            assert out.edge_gap[i, j] == pytest.approx(c.lambda_max - c.lambda_plus)
            assert out.edge_gap_tw[i, j] == c.edge_gap_tw


def _hill(x: np.ndarray, k: int) -> float:
    """Hill's estimator of the tail index from the k largest of |x|."""
    a = np.sort(np.abs(x).ravel())[::-1]
    return 1.0 / float(np.mean(np.log(a[:k] / a[k])))


@pytest.mark.parametrize("name,mu", [("pareto1", 1.0), ("pareto2.5", 2.5), ("pareto5", 5.0), ("t3", 3.0), ("t6", 6.0)])
def test_heavy_tailed_families_have_their_tail_index(name, mu):
    """P(|w| > x) ~ x^(-mu): Hill's estimator on the entries recovers mu (Student-t(nu): mu = nu)."""
    W = R.labelled_matrix(name, 1000, 500, seed=0)
    # exact Pareto: the top 2% are in the tail; Student-t approaches its power law slowly, so take fewer
    k = 10_000 if name.startswith("pareto") else 1_000
    assert _hill(W, k) == pytest.approx(mu, rel=0.15)


def test_profile_family_column_variances_are_gamma_25():
    W = R.labelled_matrix("profile", 4000, 200, seed=1)
    v = W.var(axis=0)
    assert v.mean() == pytest.approx(1.0, abs=0.03)       # Gamma(25, 1/25): mean 1
    assert v.var() == pytest.approx(1 / 25, rel=0.3)      # ... variance 1/25 (plus sampling noise 2/4000)


def test_spiked_family_rank_and_bbp_threshold():
    """Below the BBP threshold gamma^(1/4) no outlier leaves the bulk; above, one does, where predicted."""
    g = 400 / 1200
    e_low = S.esd(R.labelled_matrix("rank1-0.5", 1200, 400, seed=0), normalize="rows")
    assert e_low[-1] < S.mp_edges(g)[1] + 6 * S.tracy_widom_scale(1200, 400)
    tops = []
    for seed in range(4):
        e_hi = S.esd(R.labelled_matrix("rank1-2.0", 1200, 400, seed=seed), normalize="rows")
        assert e_hi[-2] < S.mp_edges(g)[1] + 6 * S.tracy_widom_scale(1200, 400)  # rank one: one outlier
        tops.append(e_hi[-1])
    # the outlier fluctuates on the h^(-1/2) scale (about 2% here): compare the mean over seeds
    assert np.mean(tops) == pytest.approx((1 + 4.0) * (g + 4.0) / 4.0, rel=0.02)

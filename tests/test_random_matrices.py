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

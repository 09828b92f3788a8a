"""Tests of the reduced exact GGN route, the FeatureGram reuse and the chapter's experiment helpers."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from htlib import linear as lin
from htlib.experiments import linear_hessian as lh


def _rank_deficient(rng, n=80, d0=30, blank=(3, 7, 20)):
    X = rng.standard_normal((n, d0)) * rng.uniform(0.1, 3.0, d0)
    X[:, list(blank)] = 0.0  # always-blank "pixels": rank d0 - 3
    return X


@pytest.mark.parametrize("depth", [1, 2, 4])
@pytest.mark.parametrize("whitened", [False, True])
def test_reduced_ggn_spectrum_matches_dense_kronecker_matrix(depth, whitened):
    rng = np.random.default_rng(depth)
    X = _rank_deficient(rng)
    if whitened:
        X = lin.whiten(X)
    dims = [30] + [9] * (depth - 1) + [7]
    Ws = [rng.standard_normal((b, a)) / np.sqrt(a) for a, b in zip(dims[:-1], dims[1:])]
    ref = np.linalg.eigvalsh(lin.ggn_kronecker_matrix(Ws, X))[::-1]  # the full d0*dL matrix, C^(1/2) by eigh
    for method in ("lanczos", "dense"):
        top = lin.ggn_spectrum(Ws, X, k=10, method=method)
        assert np.max(np.abs(top - ref[:10])) / ref[0] < 1e-12
    full = lin.ggn_spectrum(Ws, lin.feature_gram(X))  # all d0*dL values, zeros padded for the null space
    assert full.size == 30 * 7 and np.max(np.abs(full - ref)) / ref[0] < 1e-12
    assert np.all(full[-3 * 7:] == 0.0)  # the three blank features contribute exact zeros


def test_feature_gram_gives_the_same_numbers_as_x():
    rng = np.random.default_rng(3)
    X = _rank_deficient(rng)
    G = lin.feature_gram(X)
    assert G.c.size == lin.numerical_rank(X) == 27
    Ws = [rng.standard_normal((9, 30)), rng.standard_normal((9, 9)), rng.standard_normal((7, 9))]
    W = Ws[2] @ Ws[1] @ Ws[0]
    # ggn_trace against the definition, (1/n) sum_l ||X B_l^T||_F^2 ||A_l||_F^2
    B = [np.eye(30), Ws[0], Ws[1] @ Ws[0]]
    A = [Ws[2] @ Ws[1], Ws[2], np.eye(7)]
    direct = sum(np.sum((X @ b.T) ** 2) * np.sum(a * a) for a, b in zip(A, B)) / X.shape[0]
    assert abs(lin.ggn_trace(Ws, G) - direct) < 1e-10 * direct
    terms = [np.linalg.norm(X @ b.T, 2) ** 2 * np.linalg.norm(a, 2) ** 2 / X.shape[0] for a, b in zip(A, B)]
    np.testing.assert_allclose(lin.layer_sharpness_terms(Ws, G), terms, rtol=1e-10)
    s = np.linalg.svd(X, compute_uv=False)
    core = 3 * np.linalg.norm(W, 2) ** (2 - 2 / 3)
    np.testing.assert_allclose(lin.sharpness_bounds(X, W, 3), (s[26] ** 2 / 80 * core, s[0] ** 2 / 80 * core), rtol=1e-9)
    np.testing.assert_allclose(lin.balanced_prediction(Ws, X, k=5), lin.balanced_prediction(Ws, G, k=5), rtol=1e-12)


def test_ols_on_whitened_rank_deficient_features_is_the_row_space_solution():
    # pinv's default cutoff once inverted the rounding noise of whitened rank-deficient X (norm ~1e13);
    # at the OLS solution on whitened X the s_min pair must then coincide with the exact sharpness
    rng = np.random.default_rng(5)
    X = lin.whiten(_rank_deficient(rng, n=60, d0=40, blank=tuple(range(10, 20))))
    Y = rng.standard_normal((60, 4))
    Ws = lin.ols_balanced_weights(X, Y, [40, 6, 4], seed=0)
    W = Ws[1] @ Ws[0]
    np.testing.assert_allclose(W.T, np.linalg.pinv(X, rcond=1e-10) @ Y, atol=1e-10)
    lam = lin.ggn_spectrum(Ws, X, k=1)[0]
    lo, hi = lin.sharpness_bounds(X, W, 2)
    assert abs(lam / lo - 1) < 1e-10 and abs(hi / lam - 1) < 1e-10


def test_anisotropy_path_from_one_svd_matches_direct_route():
    X0, Y, _ = lh.prepare_data("digits", 300, None, whitening="none", seed=1)
    U, s, V = lh._svd_gram(X0)
    for t in (0.0, 0.5, 1.0):
        G, W = lh._ols_from_svd(U, s ** (1 - t) * np.sqrt(300) ** t, V, Y)
        fast = lh._ols_point(G, W, Y, 16, 2, seed=0)
        Xt = lin.interpolate_whitening(X0, t)
        Ws = lin.ols_balanced_weights(Xt, Y, [64, 16, 10], seed=0)
        assert abs(fast["ggn"] - lin.ggn_spectrum(Ws, Xt, k=1)[0]) < 1e-9 * fast["ggn"]
        np.testing.assert_allclose((fast["t_max"], fast["t_sum"]), lin.weyl_sharpness_bounds(Ws, Xt), rtol=1e-9)


def test_result_types_are_frozen():
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((20, 3)), rng.standard_normal((20, 2))
    res = lin.train_gd([rng.standard_normal((4, 3)), rng.standard_normal((2, 4))], X, Y, lr=0.01, epochs=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.losses = None
    out = lin.hessian_eigensolve(lambda w: (w * w * torch.arange(1.0, 4.0, dtype=torch.float64)).sum(),
                                 [torch.ones(3, dtype=torch.float64)], 1, method="eigsh")
    assert isinstance(out, lin.HessianEigenResult) and out.hvps > 0
    np.testing.assert_allclose(out.values, [6.0], rtol=1e-8)


def test_hessian_at_ends_measures_only_first_and_last():
    cfg = lh.LinearExperiment(depth=2, width=8, n=200, epochs=30, measure_points=3, dataset="digits", k=2,
                              hessian_at="ends", lr=0.05)
    r = lh.run_linear_experiment(cfg)
    measured = ~np.isnan(r["numeric"][:, 0])
    assert measured.tolist() == [True, False, False, True] and np.all(np.isfinite(r["ggn"]))
    with pytest.raises(ValueError, match="hessian_at"):
        lh.LinearExperiment(hessian_at="middle")

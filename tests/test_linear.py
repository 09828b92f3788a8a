"""htlib.linear against full autograd Hessians of tiny float64 networks (paper 004's formulas)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from htlib import linear as lin
from htlib.experiments import linear_hessian as lh


def _product(Ws):
    W = Ws[0]
    for V in Ws[1:]:
        W = V @ W
    return W


def _full_hessian(Ws, X, Y, activation="linear"):
    shapes = [W.shape for W in Ws]
    f = lin.flat_params_loss(shapes, torch.as_tensor(X), torch.as_tensor(Y), activation)
    theta = torch.cat([torch.as_tensor(W).reshape(-1) for W in Ws])
    return torch.autograd.functional.hessian(f, theta).numpy()


def _hessian_eigs(Ws, X, Y):
    return np.sort(np.linalg.eigvalsh(_full_hessian(Ws, X, Y)))[::-1]


def _zero_loss_labels(Ws, X):
    return X @ _product(Ws).T


@pytest.mark.parametrize("seed", [0, 1])
def test_two_layer_any_weights_whitened(seed):
    rng = np.random.default_rng(seed)
    n, d0, d1, d2 = 30, 5, 7, 4
    sigma_x = 1.7
    X = lin.whiten(rng.standard_normal((n, d0)), sigma_x)
    W1, W2 = rng.standard_normal((d1, d0)), rng.standard_normal((d2, d1))
    h = _hessian_eigs([W1, W2], X, _zero_loss_labels([W1, W2], X))
    closed = lin.two_layer_ntk_spectrum(W1, W2, sigma_x)
    exact = lin.ggn_spectrum([W1, W2], X)
    scale = h[0]
    np.testing.assert_allclose(h[: d0 * d2], closed, atol=1e-8 * scale)
    np.testing.assert_allclose(exact, closed, atol=1e-8 * scale)
    assert np.abs(h[d0 * d2 :]).max() < 1e-8 * scale
    top = sigma_x**2 * (np.linalg.norm(W1, 2) ** 2 + np.linalg.norm(W2, 2) ** 2)
    assert abs(h[0] - top) < 1e-8 * scale


def test_two_layer_bottleneck_zero_padding():
    # d1 < d0, d2: many pairs have a zero singular value on one side
    rng = np.random.default_rng(3)
    X = lin.whiten(rng.standard_normal((25, 6)))
    W1, W2 = rng.standard_normal((2, 6)), rng.standard_normal((5, 2))
    h = _hessian_eigs([W1, W2], X, _zero_loss_labels([W1, W2], X))
    closed = lin.two_layer_ntk_spectrum(W1, W2)  # 30 values, but only p = 22 parameters
    np.testing.assert_allclose(h, closed[: h.size], atol=1e-8 * h[0])
    assert np.all(closed[h.size :] == 0.0)


@pytest.mark.parametrize("dims", [[5, 5, 5, 5], [6, 8, 5, 7], [7, 4, 9, 6, 5]])
def test_balanced_deep_spectrum_and_multiplicities(dims):
    rng = np.random.default_rng(len(dims))
    r = min(dims)
    s = rng.uniform(0.5, 1.5, r)
    L, d0, dL = len(dims) - 1, dims[0], dims[-1]
    sigma_x = 0.8
    Ws = lin.balanced_weights(dims, s, seed=4)
    X = lin.whiten(rng.standard_normal((40, d0)), sigma_x)
    h = _hessian_eigs(Ws, X, _zero_loss_labels(Ws, X))
    closed = lin.balanced_spectrum(s, L, d0, dL, sigma_x)
    assert closed.size == d0 * dL
    np.testing.assert_allclose(h[: d0 * dL], closed, atol=1e-8 * h[0])
    np.testing.assert_allclose(lin.ggn_spectrum(Ws, X), closed, atol=1e-8 * h[0])
    # r (d0 + dL - r) nonzero eigenvalues in all; the edge value s_i^(2(L-1)) appears (d0-r)+(dL-r) extra times
    assert np.sum(h > 1e-8 * h[0]) == r * (d0 + dL - r)
    for si in s:
        edge = sigma_x**2 * si ** (2 * (L - 1))
        count = np.sum(np.abs(h - edge) < 1e-7 * h[0])
        core = np.sum(np.abs(sigma_x**2 * np.array([sum(a ** (2 * (l - 1)) * b ** (2 * (L - l)) for l in range(1, L + 1)) for a in s for b in s]) - edge) < 1e-7 * h[0])
        assert count == core + (d0 - r) + (dL - r)
    # lambda_ii = L s_i^(2(L-1)) and the top eigenvalue is L s_max^(2(L-1))
    assert abs(h[0] - sigma_x**2 * L * s.max() ** (2 * (L - 1))) < 1e-8 * h[0]


def test_ggn_spectrum_anisotropic_matches_hessian_at_zero_loss():
    rng = np.random.default_rng(5)
    Ws = [rng.standard_normal((6, 5)), rng.standard_normal((4, 6)), rng.standard_normal((3, 4))]
    X = rng.standard_normal((20, 5)) * np.array([3.0, 1.0, 0.4, 2.0, 0.1])
    h = _hessian_eigs(Ws, X, _zero_loss_labels(Ws, X))
    g = lin.ggn_spectrum(Ws, X)
    np.testing.assert_allclose(h[:15], g, atol=1e-8 * h[0])
    np.testing.assert_allclose(lin.ggn_spectrum(Ws, X, k=4), g[:4], atol=1e-10 * h[0])


def test_ggn_spectrum_equals_jacobian_ggn_away_from_minimum():
    # GGN = (1/n) J^T J at any point (nonzero loss): compare with the Jacobian computed by autograd
    rng = np.random.default_rng(6)
    Ws = [rng.standard_normal((4, 3)), rng.standard_normal((5, 4)), rng.standard_normal((2, 5))]
    X = rng.standard_normal((11, 3))
    Xt = torch.as_tensor(X)
    shapes = [W.shape for W in Ws]
    sizes = [a * b for a, b in shapes]

    def f(theta):
        parts = torch.split(theta, sizes)
        return lin.forward([p.reshape(s) for p, s in zip(parts, shapes)], Xt).reshape(-1)

    theta = torch.cat([torch.as_tensor(W).reshape(-1) for W in Ws])
    J = torch.autograd.functional.jacobian(f, theta).numpy()
    G = J.T @ J / X.shape[0]
    ev = np.sort(np.linalg.eigvalsh(G))[::-1]
    np.testing.assert_allclose(ev[:6], lin.ggn_spectrum(Ws, X), atol=1e-9 * ev[0])
    assert abs(np.trace(G) - lin.ggn_trace(Ws, X)) < 1e-10 * np.trace(G)


def test_trace_formula_two_layer_and_deep():
    rng = np.random.default_rng(7)
    X = lin.whiten(rng.standard_normal((30, 5)))
    W1, W2 = rng.standard_normal((6, 5)), rng.standard_normal((3, 6))
    H = _full_hessian([W1, W2], X, _zero_loss_labels([W1, W2], X))
    assert abs(np.trace(H) - lin.ggn_trace([W1, W2], X)) < 1e-10 * np.trace(H)
    assert abs(np.trace(H) - (3 * np.sum(W1**2) + 5 * np.sum(W2**2))) < 1e-10 * np.trace(H)
    Ws = [rng.standard_normal((4, 5)), rng.standard_normal((4, 4)), rng.standard_normal((2, 4))]
    Xa = rng.standard_normal((9, 5))
    H = _full_hessian(Ws, Xa, _zero_loss_labels(Ws, Xa))
    assert abs(np.trace(H) - lin.ggn_trace(Ws, Xa)) < 1e-10 * np.trace(H)


@pytest.mark.parametrize("seed", range(4))
def test_anisotropic_bounds_hold(seed):
    rng = np.random.default_rng(10 + seed)
    dims = [5, 6, 4, 3] if seed % 2 else [4, 4, 4]
    L = len(dims) - 1
    s = rng.uniform(0.3, 2.0, min(dims))
    Ws = lin.balanced_weights(dims, s, seed=seed)
    X = rng.standard_normal((15, dims[0])) * rng.uniform(0.1, 4.0, dims[0])
    lam = _hessian_eigs(Ws, X, _zero_loss_labels(Ws, X))[0]
    b = lin.sharpness_bounds(X, _product(Ws), L)
    lo, hi = b.lower, b.upper
    assert lo <= lam * (1 + 1e-10) and lam <= hi * (1 + 1e-10)
    assert lo < hi


def test_isotropic_sharpness_at_balanced_interpolating_minimizer():
    rng = np.random.default_rng(11)
    dims, sigma_x = [5, 5, 5, 5, 5], 2.5
    L = len(dims) - 1
    Ws = lin.balanced_weights(dims, rng.uniform(0.2, 1.2, 5), seed=1)
    X = lin.whiten(rng.standard_normal((25, 5)), sigma_x)
    Y = _zero_loss_labels(Ws, X)
    lam = _hessian_eigs(Ws, X, Y)[0]
    assert abs(lin.sharpness_isotropic(X, Y, L) - lam) < 1e-8 * lam
    # with isotropic X both bounds coincide with the truth
    b = lin.sharpness_bounds(X, _product(Ws), L)
    lo, hi = b.lower, b.upper
    assert abs(lo - lam) < 1e-8 * lam and abs(hi - lam) < 1e-8 * lam


def test_one_hot_alpha_form():
    # lambda = L s_x^(2/L) alpha_max^(1-1/L) when Y is one-hot and X is whitened
    rng = np.random.default_rng(12)
    labels = rng.integers(0, 4, 40)
    Y = lin.one_hot(labels, 4)
    X = lin.whiten(rng.standard_normal((40, 6)), 1.5)
    alpha = np.bincount(labels).max() / 40
    for L in (1, 2, 5):
        assert abs(lin.sharpness_isotropic(X, Y, L) - L * 1.5 ** (2 / L) * alpha ** (1 - 1 / L)) < 1e-12 * L


def test_block_diagonal_gives_max_not_sum():
    rng = np.random.default_rng(13)
    X = lin.whiten(rng.standard_normal((30, 4)))
    W1, W2 = rng.standard_normal((5, 4)), rng.standard_normal((3, 5))
    H = _full_hessian([W1, W2], X, _zero_loss_labels([W1, W2], X))
    p1 = W1.size
    Hb = H.copy()
    Hb[:p1, p1:] = 0.0
    Hb[p1:, :p1] = 0.0
    a, b = np.linalg.norm(W1, 2) ** 2, np.linalg.norm(W2, 2) ** 2
    assert abs(np.linalg.eigvalsh(Hb)[-1] - lin.block_diagonal_sharpness(W1, W2)) < 1e-9 * (a + b)
    assert abs(lin.block_diagonal_sharpness(W1, W2) - max(a, b)) < 1e-12 * (a + b)
    assert abs(np.linalg.eigvalsh(H)[-1] - (a + b)) < 1e-9 * (a + b)


def _nonzero_loss_problem(seed=14):
    rng = np.random.default_rng(seed)
    Ws = [rng.standard_normal((8, 6)), rng.standard_normal((7, 8)), rng.standard_normal((4, 7))]
    X = rng.standard_normal((20, 6))
    Y = rng.standard_normal((20, 4))
    Xt, Yt = torch.as_tensor(X), torch.as_tensor(Y)
    return Ws, X, Y, (lambda *w: lin.half_mse_loss(w, Xt, Yt)), [torch.as_tensor(W) for W in Ws]


@pytest.mark.parametrize("method", ["lobpcg", "eigsh"])
def test_hessian_top_eigenvalues_match_full_hessian(method):
    Ws, X, Y, loss_fn, params = _nonzero_loss_problem()
    h = _hessian_eigs(Ws, X, Y)
    top = lin.hessian_top_eigenvalues(loss_fn, params, 5, method=method, tol=1e-10, maxiter=2000)
    np.testing.assert_allclose(top, h[:5], rtol=1e-6)


def test_power_iteration_top1():
    Ws, X, Y, loss_fn, params = _nonzero_loss_problem()
    h = _hessian_eigs(Ws, X, Y)
    top = lin.hessian_top_eigenvalues(loss_fn, params, 1, method="power", tol=1e-12, maxiter=5000)
    assert abs(top[0] - h[0]) < 1e-6 * h[0]


def test_hutchinson_within_three_standard_errors():
    Ws, X, Y, loss_fn, params = _nonzero_loss_problem()
    exact = np.trace(_full_hessian(Ws, X, Y))
    est, se = lin.hutchinson_trace(loss_fn, params, 300, seed=0)
    assert se > 0
    assert abs(est - exact) < 3 * se


def test_gram_loss_and_training():
    rng = np.random.default_rng(15)
    X, Y = rng.standard_normal((30, 5)), rng.standard_normal((30, 3))
    Ws = [rng.standard_normal((4, 5)) * 0.5, rng.standard_normal((3, 4)) * 0.5]
    Xt, Yt = torch.as_tensor(X), torch.as_tensor(Y)
    stats = (Xt.T @ Xt / 30, Xt.T @ Yt / 30, float((Yt * Yt).sum()) / 30)
    P = [torch.as_tensor(W) for W in Ws]
    assert abs(lin.gram_loss(P, *stats).item() - lin.half_mse_loss(P, Xt, Yt).item()) < 1e-12
    # one GD step equals W - lr * grad of the plain loss
    Pg = [p.clone().requires_grad_(True) for p in P]
    grads = torch.autograd.grad(lin.half_mse_loss(Pg, Xt, Yt), Pg)
    res = lin.train_gd(Ws, X, Y, lr=0.05, epochs=1)
    for W, p, g in zip(res.weights, P, grads):
        np.testing.assert_allclose(W, (p - 0.05 * g).numpy(), atol=1e-12)
    res = lin.train_gd(Ws, X, Y, lr=0.05, epochs=300, record_at=[0, 300])
    assert res.losses[-1] < res.losses[0]
    np.testing.assert_allclose(res.snapshots[300][0], res.weights[0])
    # a learning rate so small the loss stalls: halved at every patience boundary
    res = lin.train_gd(Ws, X, Y, lr=1e-9, epochs=250, patience=100)
    assert res.lrs[99] == 1e-9 and res.lrs[100] == 0.5e-9 and res.lrs[200] == 0.25e-9
    # tanh network trains too
    res = lin.train_gd(Ws, X, Y, lr=0.05, epochs=50, activation="tanh")
    assert res.losses[-1] < res.losses[0]


def test_data_preparation():
    rng = np.random.default_rng(16)
    X = rng.standard_normal((50, 7))
    Xw = lin.whiten(X, 2.0)
    np.testing.assert_allclose(Xw.T @ Xw, 50 * 4.0 * np.eye(7), atol=1e-10)
    # same column space / polar factor: Xw = sqrt(n) sigma U V^T
    U, _, Vt = np.linalg.svd(X, full_matrices=False)
    np.testing.assert_allclose(Xw, np.sqrt(50) * 2.0 * U @ Vt, atol=1e-12)
    s = np.array([2.0, 1.0, 0.5])
    Ws = lin.balanced_weights([6, 5, 4, 3], s, seed=0)
    for W in Ws:
        np.testing.assert_allclose(np.linalg.svd(W, compute_uv=False)[:3], s, atol=1e-12)
    for A, B in zip(Ws[:-1], Ws[1:]):
        np.testing.assert_allclose(B.T @ B, A @ A.T, atol=1e-12)  # balancedness
    labels = np.repeat(np.arange(10), 40)
    Xs, ls = lin.class_imbalanced_subset(rng.standard_normal((400, 3)), labels, 100, 0.37, seed=1)
    counts = np.bincount(ls, minlength=10)
    assert Xs.shape == (100, 3) and counts.sum() == 100
    assert np.all(counts[1:] == 7) and counts[0] == 37
    np.testing.assert_array_equal(lin.one_hot(np.array([2, 0]), 3), [[0, 0, 1], [1, 0, 0]])
    # OLS as a balanced network
    Xo, Yo = rng.standard_normal((30, 5)), rng.standard_normal((30, 3))
    Wo = lin.ols_balanced_weights(Xo, Yo, [5, 8, 3], seed=0)
    np.testing.assert_allclose(_product(Wo).T, np.linalg.lstsq(Xo, Yo, rcond=None)[0], atol=1e-10)


def test_bad_input():
    with pytest.raises(ValueError, match="sigma_x"):
        lin.whiten(np.ones((4, 2)), 0.0)
    with pytest.raises(ValueError, match="singular_values"):
        lin.balanced_weights([3, 2], np.ones(3), seed=0)
    with pytest.raises(ValueError, match="majority_share"):
        lin.class_imbalanced_subset(np.ones((20, 2)), np.arange(20) % 4, 8, 0.1, seed=0)
    with pytest.raises(ValueError, match="method"):
        lin.hessian_top_eigenvalues(lambda w: (w * w).sum(), [torch.ones(3, dtype=torch.float64)], 1, method="x")
    with pytest.raises(ValueError, match="activation"):
        lh.LinearExperiment(activation="relu")
    with pytest.raises(ValueError, match="k must"):
        lin.ggn_spectrum([np.eye(2)], None, k=9)


def test_run_linear_experiment_small():
    cfg = lh.LinearExperiment(depth=2, width=16, n=200, majority_share=0.3, epochs=40, measure_points=2, dataset="digits",
                               k=3, hutchinson_probes=4, lr=0.05, eig_method="eigsh")
    r = lh.run_linear_experiment(cfg)
    assert r["numeric"].shape == (3, 3) and r["ggn"].shape == (3, 3)
    assert abs(r["majority_share"] - (1 - 9 * (140 // 9) / 200)) < 1e-12  # floor((1-alpha) n / 9) per other class
    assert np.all(np.isfinite(r["hutch"])) and r["closed_I"].shape == (3, 3)
    assert r["ols_loss"] <= r["loss"][-1] + 1e-12 <= r["zero_loss"] + 1e-12  # no linear map beats OLS


def test_lower_bound_with_rank_deficient_features_at_ols():
    # constant-zero feature columns (like blank pixels): smallest NONZERO singular value, OLS solution
    rng = np.random.default_rng(17)
    X = rng.standard_normal((12, 6)) * np.array([2.0, 1.0, 0.3, 0.0, 1.5, 0.0])
    Y = rng.standard_normal((12, 3))
    Ws = lin.ols_balanced_weights(X, Y, [6, 5, 3], seed=0)
    ggn_top = lin.ggn_spectrum(Ws, X, k=1)[0]
    b = lin.sharpness_bounds(X, _product(Ws), 2)
    lo, hi = b.lower, b.upper
    assert 0 < lo <= ggn_top * (1 + 1e-10) and ggn_top <= hi * (1 + 1e-10)
    # the OLS map's rows lie in the row space: the pair is the s_min formula itself
    assert b.pair == "s_min"
    sx = np.linalg.svd(X, compute_uv=False)[:4]
    core = 2 * np.linalg.norm(_product(Ws), 2)
    np.testing.assert_allclose((lo, hi), (sx[-1] ** 2 / 12 * core, sx[0] ** 2 / 12 * core), rtol=1e-12)


def test_depth_sweep_and_exact_case():
    r = lh.depth_sweep([1, 2, 5], [0.5, 4.0], n=30, d=4, width=5)
    np.testing.assert_allclose(r["numeric"], r["theory"], rtol=1e-7)
    assert r["crossover"][1] > r["crossover"][0]
    e = lh.exact_ggn_case(n=20, d=4, depth=3, sigma_x=2.0)
    np.testing.assert_allclose(e["numeric"][:16], e["theory"], atol=1e-9 * e["theory"][0])


# ---------------------------------------------------------------------------------------------
# Rank-correct whitening, robustness, the reconstructed Fig. 5 bounds, the fast exact route
# ---------------------------------------------------------------------------------------------


def _rank_deficient_features(seed=20):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((30, 7)) * np.array([2.0, 1.0, 0.0, 0.5, 3.0, 0.0, 1.0])  # two blank "pixels"
    X[:, 6] = X[:, 0] + X[:, 1]  # and one linearly dependent feature: rank 4
    return X


def test_whiten_is_rank_correct():
    X = _rank_deficient_features()
    assert lin.numerical_rank(X) == 4
    Xw = lin.whiten(X, 1.5)
    n = X.shape[0]
    assert lin.numerical_rank(Xw) == 4
    np.testing.assert_allclose(Xw[:, [2, 5]], 0.0, atol=1e-12)  # blank features stay blank (to round-off)
    # X^T X = n sigma^2 P with P the projector on the row space of X
    P = np.linalg.pinv(X) @ X
    np.testing.assert_allclose(Xw.T @ Xw, n * 1.5**2 * P, atol=1e-10)
    # same column space as X
    np.testing.assert_allclose(X @ np.linalg.pinv(X) @ Xw, Xw, atol=1e-10)


@pytest.mark.parametrize("seed", [0, 1])
def test_whiten_commutes_with_row_permutation(seed):
    X = _rank_deficient_features(30 + seed)
    perm = np.random.default_rng(seed).permutation(X.shape[0])
    np.testing.assert_allclose(lin.whiten(X[perm]), lin.whiten(X)[perm], atol=1e-10)
    np.testing.assert_allclose(lin.whiten(X[::-1]), lin.whiten(X)[::-1], atol=1e-10)


def test_interpolate_whitening_endpoints_and_condition_number():
    X = _rank_deficient_features()
    np.testing.assert_allclose(lin.interpolate_whitening(X, 0.0), X, atol=1e-10)
    np.testing.assert_allclose(lin.interpolate_whitening(X, 1.0), lin.whiten(X), atol=1e-10)
    s = np.linalg.svd(X, compute_uv=False)[:4]
    sh = np.linalg.svd(lin.interpolate_whitening(X, 0.5), compute_uv=False)[:4]
    assert abs(sh[0] / sh[-1] - np.sqrt(s[0] / s[-1])) < 1e-8 * sh[0] / sh[-1]


def test_bad_inputs_name_the_argument():
    rng = np.random.default_rng(21)
    Ws = [rng.standard_normal((4, 3)), rng.standard_normal((2, 4))]
    X = rng.standard_normal((10, 3))
    bad = [W.copy() for W in Ws]
    bad[1][0, 0] = np.nan
    loss = _gram_loss(X, rng.standard_normal((10, 2)))
    for fn in (lambda: lin.ggn_spectrum(bad, X), lambda: lin.ggn_trace(bad, X)):
        with pytest.raises(ValueError, match=r"weights\[1\].*NaN or inf"):
            fn()
    inf_params = [torch.as_tensor(W) for W in Ws]
    inf_params[0] = inf_params[0].clone()
    inf_params[0][0, 0] = float("inf")
    with pytest.raises(ValueError, match=r"params\[0\].*NaN or inf"):
        lin.hessian_top_eigenvalues(loss, inf_params, 1)
    with pytest.raises(ValueError, match=r"params\[0\].*NaN or inf"):
        lin.hutchinson_trace(loss, inf_params, 4, seed=0)
    with pytest.raises(ValueError, match="X must not be empty"):
        lin.whiten(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="X must not be empty"):
        lin.ggn_spectrum(Ws, np.zeros((0, 3)))
    with pytest.raises(ValueError, match=r"X has shape \(10, 5\); it must be n x d0 with d0=3 columns") as err:
        lin.ggn_trace(Ws, rng.standard_normal((10, 5)))
    assert "transposed" not in str(err.value)  # X.T would not fit either
    with pytest.raises(ValueError, match="X is required"):
        lin.ggn_trace(Ws, None)
    with pytest.raises(ValueError, match="X is all zero"):
        lin.sharpness_bounds(np.zeros((5, 3)), Ws[1] @ Ws[0], 2)
    with pytest.raises(ValueError, match="labels must not be empty"):
        lin.one_hot([])
    with pytest.raises(ValueError, match=r"weights\[1\] has 5 columns"):
        lin.block_diagonal_sharpness(rng.standard_normal((4, 3)), rng.standard_normal((2, 5)))
    with pytest.raises(ValueError, match="same number of rows"):
        lin.sharpness_isotropic(X, rng.standard_normal((9, 2)), 2)
    with pytest.raises(ValueError, match="same number of rows"):
        lin.train_gd(Ws, X, rng.standard_normal((9, 2)), lr=0.1, epochs=1)
    with pytest.raises(ValueError, match="same number of rows"):
        lin.ols_balanced_weights(X, rng.standard_normal((9, 2)), [3, 4, 2], seed=0)
    with pytest.raises(ValueError, match="k must be an integer"):
        lin.ggn_spectrum(Ws, X, k=2.0)
    with pytest.raises(ValueError, match="k must be an integer"):
        lin.hessian_top_eigenvalues(loss, [torch.as_tensor(W) for W in Ws], 1.5)
    for fn in (lambda: lin.balanced_spectrum([1.0], 2.5, 2, 2), lambda: lin.sharpness_isotropic(X, X, 2.0),
               lambda: lin.sharpness_bounds(X, Ws[1] @ Ws[0], "2")):
        with pytest.raises(ValueError, match="L must be an integer"):
            fn()


def _gram_loss(X, Y):
    Xt, Yt = torch.as_tensor(X), torch.as_tensor(Y)
    n = X.shape[0]
    stats = (Xt.T @ Xt / n, Xt.T @ Yt / n, float((Yt * Yt).sum()) / n)
    return lambda *w: lin.gram_loss(w, *stats)


def test_train_gd_reports_divergence():
    rng = np.random.default_rng(22)
    X, Y = rng.standard_normal((20, 4)) * 3, rng.standard_normal((20, 2))
    Ws = [rng.standard_normal((5, 4)), rng.standard_normal((2, 5))]
    for activation in ("linear", "tanh"):
        with pytest.raises(lin.TrainingDiverged, match=r"diverged at epoch \d+: loss = "):
            lin.train_gd(Ws, X, Y, lr=10.0, epochs=500, activation=activation)
    assert issubclass(lin.TrainingDiverged, ValueError)


def test_linear_training_matches_plain_autograd_gd():
    # the eigenbasis/sufficient-statistics trainer against a plain torch GD loop on the full data
    rng = np.random.default_rng(23)
    X = rng.standard_normal((40, 6)) * rng.uniform(0.1, 2.0, 6)
    Y = rng.standard_normal((40, 3))
    Ws = lin.kaiming_uniform_weights([6, 5, 4, 3], seed=1)
    res = lin.train_gd(Ws, X, Y, lr=0.05, epochs=200, patience=10_000, record_at=[100])
    Wt = [torch.tensor(W, requires_grad=True) for W in Ws]
    Xt, Yt = torch.as_tensor(X), torch.as_tensor(Y)
    for t in range(200):
        if t == 100:
            for a, b in zip(res.snapshots[100], Wt):
                np.testing.assert_allclose(a, b.detach().numpy(), atol=1e-12)
        g = torch.autograd.grad(lin.half_mse_loss(Wt, Xt, Yt), Wt)
        with torch.no_grad():
            for W, gw in zip(Wt, g):
                W -= 0.05 * gw
    for a, b in zip(res.weights, Wt):
        np.testing.assert_allclose(a, b.detach().numpy(), atol=1e-12)
    assert abs(res.losses[-1] - lin.half_mse_loss(Wt, Xt, Yt).item()) < 1e-12


def test_ols_balanced_weights_refuses_narrow_layers():
    rng = np.random.default_rng(24)
    X, Y = rng.standard_normal((30, 6)), rng.standard_normal((30, 4))
    with pytest.raises(ValueError, match=r"dims: every layer must be at least rank\(W\) = 4 wide"):
        lin.ols_balanced_weights(X, Y, [6, 3, 4], seed=0)
    Ws = lin.ols_balanced_weights(X, Y, [6, 4, 4], seed=0)
    np.testing.assert_allclose(_product(Ws).T, np.linalg.lstsq(X, Y, rcond=None)[0], atol=1e-10)


def test_power_returns_largest_algebraic_on_indefinite_hessian():
    # quadratic loss with a known indefinite Hessian whose largest-magnitude eigenvalue is negative
    rng = np.random.default_rng(25)
    Q, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    evals = np.array([3.0, 2.0, 1.0, 0.5, 0.0, -1.0, -4.0, -6.0])
    A = torch.as_tensor(Q @ np.diag(evals) @ Q.T)
    loss = lambda w: 0.5 * w @ (A @ w)  # noqa: E731
    top = lin.hessian_top_eigenvalues(loss, [torch.ones(8, dtype=torch.float64)], 2, method="power",
                                      tol=1e-13, maxiter=20000)
    np.testing.assert_allclose(top, [3.0, 2.0], atol=1e-6)
    # and on a real linear network away from a minimum (indefinite Hessian), against the dense Hessian
    Ws, X, Y, loss_fn, params = _nonzero_loss_problem()
    h = _hessian_eigs(Ws, X, Y)
    assert h[-1] < 0
    top = lin.hessian_top_eigenvalues(loss_fn, params, 1, method="power", tol=1e-12, maxiter=20000)
    assert abs(top[0] - h[0]) < 1e-6 * h[0]


@pytest.mark.parametrize("case", ["balanced", "random", "rank_deficient"])
def test_lanczos_route_matches_dense(case):
    rng = np.random.default_rng(26)
    if case == "balanced":  # degenerate spectrum: edge values with multiplicity (d0-r)+(dL-r)
        Ws = lin.balanced_weights([12, 6, 6, 7], rng.uniform(0.5, 1.5, 6), seed=0)
        X = lin.whiten(rng.standard_normal((50, 12)))
    else:
        Ws = [rng.standard_normal((6, 12)), rng.standard_normal((5, 6)), rng.standard_normal((7, 5))]
        X = rng.standard_normal((50, 12)) * rng.uniform(0.1, 3.0, 12)
        if case == "rank_deficient":
            X[:, :3] = 0.0
    dense = lin.ggn_spectrum(Ws, X, method="dense")
    fast = lin.ggn_spectrum(Ws, X, k=8, method="lanczos")
    np.testing.assert_allclose(fast, dense[:8], atol=1e-10 * dense[0])


@pytest.mark.parametrize("seed", range(6))
def test_weyl_bounds_against_dense_hessian(seed):
    rng = np.random.default_rng(40 + seed)
    dims = [5, 6, 4, 3] if seed % 2 else [4, 5, 3]
    Ws = [rng.standard_normal((b, a)) for a, b in zip(dims[:-1], dims[1:])]
    X = rng.standard_normal((15, dims[0])) * np.exp(rng.uniform(-3, 1, dims[0]))
    lam = _hessian_eigs(Ws, X, _zero_loss_labels(Ws, X))[0]
    lo, hi = lin.weyl_sharpness_bounds(Ws, X)
    assert lo <= lam * (1 + 1e-10) and lam <= hi * (1 + 1e-10)
    # t_1 = ||X||^2 ||W_L..W_2||^2 / n by hand
    t = lin.layer_sharpness_terms(Ws, X)
    A1 = _product(Ws[1:])
    assert abs(t[0] - np.linalg.norm(X, 2) ** 2 * np.linalg.norm(A1, 2) ** 2 / 15) < 1e-10 * t[0]


def test_weyl_bounds_tight_at_the_two_extremes():
    rng = np.random.default_rng(27)
    Y = lin.one_hot(rng.integers(0, 4, 200), 4)
    X0 = rng.standard_normal((200, 12)) * np.arange(1.0, 13) ** -3.0  # highly anisotropic
    for t, which in ((1.0, "upper"), (0.0, "lower")):
        X = lin.interpolate_whitening(X0, t)
        Ws = lin.ols_balanced_weights(X, Y, [12, 8, 8, 4], seed=0)
        lam = _hessian_eigs(Ws, X, X @ _product(Ws).T)[0]  # zero-loss labels: Hessian = GGN
        lo, hi = lin.weyl_sharpness_bounds(Ws, X)
        if which == "upper":  # isotropic + balanced: attained; lower is L = 3 times smaller
            assert abs(hi - lam) < 1e-8 * lam and abs(lam / lo - 3.0) < 1e-8
        else:
            assert lam / lo < 1.01 and lo < hi


def test_balance_and_balanced_prediction():
    rng = np.random.default_rng(28)
    s = rng.uniform(0.3, 1.5, 4)
    Ws = lin.balanced_weights([6, 4, 5, 7], s, seed=0)
    assert lin.balance_gaps(Ws).max() < 1e-12
    X = lin.whiten(rng.standard_normal((40, 6)), 1.3)
    np.testing.assert_allclose(lin.balanced_prediction(Ws, X, 1.3), lin.ggn_spectrum(Ws, X), atol=1e-10)
    K = lin.kaiming_uniform_weights([6, 4, 5, 7], seed=0)
    assert lin.balance_gaps(K).min() > 0.1


def test_nonzero_eigenvalue_count_is_r_d0_plus_dL_minus_r():
    for dims in ([6, 2, 5], [5, 3, 3, 4]):
        c = lh.nonzero_eigenvalue_counts(dims)
        r = min(dims)
        assert c["measured"] == r * (dims[0] + dims[-1] - r) == c["formula"]
        assert c["measured"] > c["paper"] == r * r


def test_largest_imbalanced_n_is_largest():
    labels = np.repeat(np.arange(10), 500)
    alphas = [0.1, 0.3, 0.5]
    m = lin.largest_imbalanced_n(labels, alphas)
    X = np.zeros((labels.size, 1))
    for a in alphas:
        lin.class_imbalanced_subset(X, labels, m, a, seed=0)
    with pytest.raises(ValueError, match="lower n"):
        for a in alphas:
            lin.class_imbalanced_subset(X, labels, m + 1, a, seed=0)


def test_trace_norm_agreement():
    x = np.array([5.0, 4.0, 3.0, 3.5, 6.0])
    st = lh.trace_norm_agreement(x, 2 * x + 1, x + 0.1, np.full(5, 0.05))
    assert st["dip_trace"] and st["dip_norm"] and abs(st["corr_diff"] - 1) < 1e-12 and abs(st["hutch_z"] - 2) < 1e-12
    st = lh.trace_norm_agreement(np.array([1.0, 2.0, 4.0, 5.0, 9.0]), np.array([1.0, 2.0, 2.0, 5.0, 5.0]))
    assert not st["dip_trace"] and st["corr_diff"] < 0.9


def test_eigenbasis_loss_has_the_same_hessian_spectrum():
    rng = np.random.default_rng(29)
    X = rng.standard_normal((25, 5)) * rng.uniform(0.2, 2.0, 5)
    Y = rng.standard_normal((25, 3))
    Ws = [rng.standard_normal((4, 5)), rng.standard_normal((3, 4))]
    Q, loss = lin.eigenbasis_loss(X, Y)
    H = lin.hessian_matrix(loss, [torch.as_tensor(Ws[0] @ Q), torch.as_tensor(Ws[1])])
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(H))[::-1], _hessian_eigs(Ws, X, Y), atol=1e-10)


# ---------------------------------------------------------------------------------------------
# Input checks and docstrings that once misled (each test failed before its fix)
# ---------------------------------------------------------------------------------------------


def test_balanced_weights_refuses_nan_singular_values():
    # once returned NaN weights silently
    with pytest.raises(ValueError, match="singular_values must be finite"):
        lin.balanced_weights([4, 3, 2], [1.0, np.nan], seed=0)
    with pytest.raises(ValueError, match="singular_values must be finite and >= 0"):
        lin.balanced_weights([4, 3, 2], [1.0, -0.5], seed=0)


def test_sharpness_bounds_blames_w_for_its_shape():
    # a W with the wrong number of columns was reported as a wrongly shaped X
    X = np.random.default_rng(0).standard_normal((20, 5))
    with pytest.raises(ValueError, match=r"W must have d0 = 5 columns"):
        lin.sharpness_bounds(X, np.ones((3, 4)), 2)
    with pytest.raises(ValueError, match=r"W must have d0 = 5 columns"):
        lin.sharpness_bounds(lin.feature_gram(X), np.ones((3, 4)), 2)


def test_docstring_examples_hold():
    # the docstring of largest_imbalanced_n once said 1000 where the function returns 995
    import doctest

    res = doctest.testmod(lin, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert res.attempted > 0 and res.failed == 0
    labels = np.repeat(np.arange(10), 500)
    shares = [0.1, 0.2, 0.3, 0.4, 0.5]
    X = np.zeros((labels.size, 1))
    for a in shares:  # independent check: 995 can be drawn for every share, 996..1000 cannot for some
        lin.class_imbalanced_subset(X, labels, 995, a, seed=0)
    for m in range(996, 1001):
        with pytest.raises(ValueError, match="lower n"):
            for a in shares:
                lin.class_imbalanced_subset(X, labels, m, a, seed=0)


def test_row_space_trainer_matches_plain_gd_on_rank_deficient_features():
    # blank and dependent features: the trainer drops them from W1's trained columns; the iterates must not change
    X = _rank_deficient_features()
    Y = np.random.default_rng(30).standard_normal((30, 3))
    for dims in ([7, 5, 3], [7, 6, 4, 3]):
        Ws = lin.kaiming_uniform_weights(dims, seed=2)
        res = lin.train_gd(Ws, X, Y, lr=0.02, epochs=150, patience=10_000, record_at=[75])
        Wt = [torch.tensor(W, requires_grad=True) for W in Ws]
        Xt, Yt = torch.as_tensor(X), torch.as_tensor(Y)
        for t in range(150):
            if t == 75:
                for a, b in zip(res.snapshots[75], Wt):
                    np.testing.assert_allclose(a, b.detach().numpy(), atol=1e-11)
            g = torch.autograd.grad(lin.half_mse_loss(Wt, Xt, Yt), Wt)
            with torch.no_grad():
                for W, gw in zip(Wt, g):
                    W -= 0.02 * gw
        for a, b in zip(res.weights, Wt):
            np.testing.assert_allclose(a, b.detach().numpy(), atol=1e-11)


# ---------------------------------------------------------------------------------------------
# Issue 38 (item 5): preconditions checked against dense autograd; each test failed before its fix
# ---------------------------------------------------------------------------------------------


def _whitened_rank_deficient(rng, n, d0, rank, sigma_x):
    """Whitened features of rank ``rank < d0`` whose row space is a random subspace (no blank coordinate)."""
    X = rng.standard_normal((n, rank)) @ rng.standard_normal((rank, d0))
    return lin.whiten(X, sigma_x)


def _spectra_agree(closed, h, atol):
    # the dense Hessian has p eigenvalues, the closed forms d0*dL: the longer tail must be zero
    m = min(closed.size, h.size)
    np.testing.assert_allclose(closed[:m], h[:m], rtol=0, atol=atol)
    assert np.abs(closed[m:]).max(initial=0.0) < atol and np.abs(h[m:]).max(initial=0.0) < atol


@pytest.mark.parametrize("dims", [[6, 4, 3], [6, 5, 4, 3], [5, 3, 3, 3, 4]])
def test_balanced_prediction_inside_and_outside_the_row_space(dims):
    rng = np.random.default_rng(50 + len(dims))
    L, d0, dL, sigma_x = len(dims) - 1, dims[0], dims[-1], 1.3
    X = _whitened_rank_deficient(rng, 30, d0, d0 - 2, sigma_x)
    E = lin.feature_gram(X).E
    P = E @ E.T
    s = rng.uniform(0.4, 1.6, min(dims))
    outside = lin.balanced_weights(dims, s, seed=1)  # Haar right singular vectors: partly outside the row space
    inside = lin.balanced_weights([E.shape[1]] + dims[1:], s[: min([E.shape[1]] + dims[1:])], seed=1)
    inside = [inside[0] @ E.T] + inside[1:]  # W1 = W1 P, still strongly balanced
    assert np.abs(inside[0] - inside[0] @ P).max() < 1e-12 and np.abs(outside[0] - outside[0] @ P).max() > 0.1
    assert max(lin.balance_gaps(inside).max(), lin.balance_gaps(outside).max()) < 1e-12
    for Ws in (inside, outside):
        h = _hessian_eigs(Ws, X, _zero_loss_labels(Ws, X))  # zero loss: Hessian = GGN
        _spectra_agree(lin.balanced_prediction(Ws, X, sigma_x), h, 1e-10 * h[0])
    # the closed form of W P, which the function once returned outside the row space, misses the top value
    closed = lin.balanced_spectrum(np.linalg.svd(_product(outside) @ P, compute_uv=False)[: min(dims)] ** (1 / L),
                                   L, d0 - 2, dL, sigma_x)
    assert abs(closed[0] - h[0]) > 0.01 * h[0]  # h: the dense Hessian at the outside weights (last in the loop)


@pytest.mark.parametrize("whitened", [True, False])
def test_sharpness_bounds_hold_for_balanced_weights_outside_the_row_space(whitened):
    # the s_min pair L ||W||^(2-2/L) (c_min, c_max) needs W's top right singular vector in the row space of X
    rng = np.random.default_rng(60)
    overstated = 0
    for case in range(6):
        dims = [6, 5, 4, 3] if case % 2 else [6, 4, 4]
        L = len(dims) - 1
        Ws = lin.balanced_weights(dims, rng.uniform(0.3, 2.0, min(dims)), seed=case)
        X = _whitened_rank_deficient(rng, 15, 6, 4, 1.0)
        if not whitened:
            X = X * rng.uniform(0.95, 1.05, 6)  # mildly anisotropic, still rank 4
        lam = _hessian_eigs(Ws, X, _zero_loss_labels(Ws, X))[0]
        W = _product(Ws)
        b = lin.sharpness_bounds(X, W, L)
        lo, hi = b.lower, b.upper
        assert lo <= lam * (1 + 1e-10) and lam <= hi * (1 + 1e-10)
        if whitened:  # c_min = c_max: the pair is the sharpness itself
            assert abs(lo - lam) < 1e-10 * lam and abs(hi - lam) < 1e-10 * lam
        c = np.linalg.svd(X, compute_uv=False)[:4] ** 2 / X.shape[0]
        over = c[-1] * L * np.linalg.norm(W, 2) ** (2 - 2 / L) > lam * (1 + 1e-6)
        overstated += over
        assert not over or b.pair == "C=P"  # where the formula overstates, the pair says it was replaced
    assert overstated >= 3  # the formula's lower end lies above lambda_max in these cases


def test_spectra_refuse_nonpositive_sigma_x_and_negative_singular_values():
    rng = np.random.default_rng(61)
    W1, W2 = rng.standard_normal((4, 3)), rng.standard_normal((2, 4))
    for sigma_x in (0.0, -1.5):
        for fn in (lambda: lin.two_layer_ntk_spectrum(W1, W2, sigma_x), lambda: lin.balanced_spectrum([1.0], 2, 2, 2, sigma_x),
                   lambda: lin.balanced_prediction([W1, W2], None, sigma_x), lambda: lin.block_diagonal_sharpness(W1, W2, sigma_x)):
            with pytest.raises(ValueError, match="sigma_x must be finite and > 0"):
                fn()
    with pytest.raises(ValueError, match=r"^s must hold singular values >= 0"):
        lin.balanced_spectrum([1.0, -0.5], 3, 4, 4)


def test_transposed_x_is_named():
    rng = np.random.default_rng(62)
    Ws = [rng.standard_normal((4, 5)), rng.standard_normal((3, 4))]
    X, Y = rng.standard_normal((100, 5)), rng.standard_normal((100, 3))
    calls = (lambda: lin.ggn_spectrum(Ws, X.T), lambda: lin.ggn_trace(Ws, X.T), lambda: lin.balanced_prediction(Ws, X.T),
             lambda: lin.weyl_sharpness_bounds(Ws, X.T), lambda: lin.sharpness_bounds(X.T, Ws[1] @ Ws[0], 2))
    for fn in calls:
        with pytest.raises(ValueError, match=r"^X has shape \(5, 100\); .*d0=5 columns.*did you pass X transposed\?"):
            fn()
    with pytest.raises(ValueError, match=r"^X and Y must have the same number of rows.*did you pass X transposed\?"):
        lin.train_gd(Ws, X.T, Y, lr=0.1, epochs=1)
    with pytest.raises(ValueError, match=r"^X and Y must have the same number of rows.*did you pass X transposed\?"):
        lin.sharpness_isotropic(X.T, Y, 2)
    with pytest.raises(ValueError, match=r"^X must have d0=4 features"):
        lin.ggn_spectrum([rng.standard_normal((3, 4))], lin.feature_gram(X))


def test_sharpness_bounds_is_a_named_frozen_pair():
    rng = np.random.default_rng(71)
    X = rng.standard_normal((20, 4)) * [3.0, 1.0, 0.5, 0.2]
    Ws = lin.ols_balanced_weights(X, rng.standard_normal((20, 2)), [4, 3, 2], seed=0)
    b = lin.sharpness_bounds(X, _product(Ws), 2)
    assert isinstance(b, lin.SharpnessBounds) and b.pair == "s_min" and b.lower < b.upper
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.lower = 0.0
    with pytest.raises(ValueError, match="pair"):
        lin.SharpnessBounds(1.0, 2.0, "C=I")
    with pytest.raises(ValueError, match="lower <= upper"):
        lin.SharpnessBounds(2.0, 1.0, "s_min")


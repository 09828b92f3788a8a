"""htlib.linear against full autograd Hessians of tiny float64 networks (paper 004's formulas)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from htlib import linear as lin


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
    lo, hi = lin.sharpness_bounds(X, _product(Ws), L)
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
    lo, hi = lin.sharpness_bounds(X, _product(Ws), L)
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
    return Ws, X, Y, (lambda *w: lin.mse_loss(w, Xt, Yt)), [torch.as_tensor(W) for W in Ws]


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
    assert abs(lin.gram_loss(P, *stats).item() - lin.mse_loss(P, Xt, Yt).item()) < 1e-12
    # one GD step equals W - lr * grad of the plain loss
    Pg = [p.clone().requires_grad_(True) for p in P]
    grads = torch.autograd.grad(lin.mse_loss(Pg, Xt, Yt), Pg)
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
    with pytest.raises(ValueError, match="alpha_max"):
        lin.class_imbalanced_subset(np.ones((20, 2)), np.arange(20) % 4, 8, 0.1, seed=0)
    with pytest.raises(ValueError, match="method"):
        lin.hessian_top_eigenvalues(lambda w: (w * w).sum(), [torch.ones(3, dtype=torch.float64)], 1, method="x")
    with pytest.raises(ValueError, match="activation"):
        lin.LinearExperiment(activation="relu")
    with pytest.raises(ValueError, match="k must"):
        lin.ggn_spectrum([np.eye(2)], None, k=9)


def test_run_linear_experiment_small():
    cfg = lin.LinearExperiment(depth=2, width=16, n=200, alpha_max=0.3, epochs=40, measure_points=2,
                               k=3, hutchinson_probes=4, lr=0.05, eig_method="eigsh")
    r = lin.run_linear_experiment(cfg)
    assert r["numeric"].shape == (3, 3) and r["ggn"].shape == (3, 3)
    assert abs(r["alpha"] - (1 - 9 * (140 // 9) / 200)) < 1e-12  # floor((1-alpha) n / 9) per other class
    assert np.all(np.isfinite(r["hutch"])) and r["lower"] <= r["upper"]


def test_lower_bound_with_rank_deficient_features_at_ols():
    # constant-zero feature columns (like blank pixels): smallest NONZERO singular value, OLS solution
    rng = np.random.default_rng(17)
    X = rng.standard_normal((12, 6)) * np.array([2.0, 1.0, 0.3, 0.0, 1.5, 0.0])
    Y = rng.standard_normal((12, 3))
    Ws = lin.ols_balanced_weights(X, Y, [6, 5, 3], seed=0)
    ggn_top = lin.ggn_spectrum(Ws, X, k=1)[0]
    lo, hi = lin.sharpness_bounds(X, _product(Ws), 2)
    assert 0 < lo <= ggn_top * (1 + 1e-10) and ggn_top <= hi * (1 + 1e-10)


def test_depth_sweep_and_exact_case():
    r = lin.depth_sweep([1, 2, 5], [0.5, 4.0], n=30, d=4, width=5)
    np.testing.assert_allclose(r["numeric"], r["theory"], rtol=1e-7)
    assert r["crossover"][1] > r["crossover"][0]
    e = lin.exact_ggn_case(n=20, d=4, depth=3, sigma_x=2.0)
    np.testing.assert_allclose(e["numeric"][:16], e["theory"], atol=1e-9 * e["theory"][0])

"""Tests of htlib.teacher_student and htlib.two_layer against independent references:
torch.optim.SGD/Adam (+ StepLR) on an autograd loss, autograd gradients, numpy lstsq,
dense SVDs, and htlib.spectra's own KTA."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from htlib import spectra
from htlib.teacher_student import make_single_index_data
from htlib.two_layer import (
    AdamState,
    TwoLayerConfig,
    adam_direction,
    first_update,
    full_batch_gradient,
    init_weights,
    make_data,
    student_mse,
    readout_features,
    readout_metrics,
    ridge_losses,
    ridge_readout,
    ridge_solve,
    spectral_norm,
    student_features,
    train,
)

SMALL = dict(n=64, d=20, h=30, n_test=16)


def small(**kw) -> TwoLayerConfig:
    return TwoLayerConfig(**{**SMALL, "dtype": "float64", **kw})


def rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


# ---------------------------------------------------------------- data and model


def test_data_shapes_unit_beta_and_label_model():
    data = make_single_index_data(500, 12, 40, 0.0, seed=3, dtype=torch.float64)
    assert data.X_train.shape == (500, 12) and data.y_probe.shape == (500,) and data.X_test.shape == (40, 12)
    assert abs(float(torch.linalg.vector_norm(data.beta)) - 1) < 1e-12
    # rho_e = 0: labels are exactly softplus(beta . x), recomputed with numpy
    x, b = data.X_train.numpy(), data.beta.numpy()
    np.testing.assert_allclose(data.y_train.numpy(), np.logaddexp(0.0, x @ b), rtol=1e-12)
    # the three sets are independent draws
    assert not torch.allclose(data.X_train, data.X_probe)


def test_label_noise_level():
    noisy = make_single_index_data(4000, 5, seed=1, rho_e=0.5, dtype=torch.float64)
    clean = make_single_index_data(4000, 5, seed=1, rho_e=0.0, dtype=torch.float64)
    resid = (noisy.y_train - clean.y_train).numpy()
    assert abs(resid.std() - 0.5) < 0.03  # sd 0.5, 4000 samples: standard error ~0.006


def test_closed_form_gradient_matches_autograd():
    cfg = small()
    data = make_data(cfg)
    W, a = init_weights(cfg)
    Wg = W.clone().requires_grad_(True)
    student_mse(Wg, a, data.X_train, data.y_train).backward()
    G = full_batch_gradient(W, a, data.X_train, data.y_train)
    assert rel(G, Wg.grad) < 1e-12


def test_gradient_is_minus_twice_paper_G0():
    """The paper's §4.2 expression (its loss has a 1/2; the display is the negative gradient)."""
    cfg = small()
    data = make_data(cfg)
    W, a = init_weights(cfg)
    X, y = data.X_train.numpy(), data.y_train.numpy()
    Wn, an = W.numpy(), a.numpy()
    n, d = X.shape
    h = Wn.shape[0]
    pre = Wn @ X.T / np.sqrt(d)  # h x n
    G0 = ((np.outer(an, y) - np.outer(an, an) @ np.tanh(pre) / np.sqrt(h)) / np.sqrt(h) * (1 - np.tanh(pre) ** 2)) @ X
    G0 /= n * np.sqrt(d)
    G = full_batch_gradient(W, a, data.X_train, data.y_train)
    assert rel(G, -2 * G0) < 1e-12


# ---------------------------------------------------------------- optimizers vs torch.optim


def _reference_run(cfg: TwoLayerConfig, steps: int) -> list[np.ndarray]:
    """W_0..W_steps from torch.optim on the autograd loss (the independent reference)."""
    data = make_data(cfg)
    W, a = init_weights(cfg)
    W = W.clone().requires_grad_(True)
    if cfg.optimizer == "gd":
        opt = torch.optim.SGD([W], lr=cfg.eta)
    else:
        opt = torch.optim.Adam([W], lr=cfg.eta)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=cfg.steplr_gamma)
    out = [W.detach().numpy().copy()]
    def normalize():
        with torch.no_grad():
            W.mul_(math.sqrt(W.numel()) / torch.linalg.matrix_norm(W))

    for _ in range(steps):
        if cfg.weight_norm and cfg.weight_norm_order == "before_forward":
            normalize()  # the authors' order: normalize, then the forward pass; W is measured raw
        opt.zero_grad()
        student_mse(W, a, data.X_train, data.y_train).backward()
        opt.step()
        sched.step()
        if cfg.weight_norm and cfg.weight_norm_order == "after_update":
            normalize()
        out.append(W.detach().numpy().copy())
    return out


@pytest.mark.parametrize(
    "optimizer,eta,gamma,wn",
    [("gd", 50.0, 1.0, None), ("gd", 300.0, 0.5, "after_update"), ("adam", 0.05, 1.0, None),
     ("adam", 0.3, 0.6, "after_update"), ("gd", 300.0, 0.5, "before_forward"), ("adam", 0.3, 0.6, "before_forward")],
)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_updates_match_torch_optim(optimizer, eta, gamma, wn, dtype):
    steps = 4
    wn_kw = dict(weight_norm=False) if wn is None else dict(weight_norm=True, weight_norm_order=wn)
    cfg = small(optimizer=optimizer, eta=eta, steps=steps, steplr_gamma=gamma, dtype=dtype, **wn_kw,
                keep_weights=tuple(range(steps + 1)), record_esd=False)
    traj = train(cfg)
    ref = _reference_run(cfg, steps)
    tol = 1e-10 if dtype == "float64" else 1e-6
    for t in range(steps + 1):
        # compare the accumulated updates W_t - W_0 (relative to their own size)
        if t:  # float32: W_t - W_0 carries the rounding of W (|W| ~ 1) on a ~0.05 update
            assert rel(traj.weights[t] - traj.weights[0], ref[t] - ref[0]) < (1e-10 if dtype == "float64" else 2e-5)
        assert rel(traj.weights[t], ref[t]) < tol
    np.testing.assert_allclose(traj.lr, eta * gamma ** np.arange(steps), rtol=1e-15)
    assert traj.diverged_at is None


def test_adam_first_direction_is_sign_with_and_without_bias_correction():
    cfg = small()
    data = make_data(cfg)
    W, a = init_weights(cfg)
    G = full_batch_gradient(W, a, data.X_train, data.y_train)
    s = torch.sign(G)
    with_bc, _ = adam_direction(G, AdamState.zeros_like(W))
    without, _ = adam_direction(G, AdamState.zeros_like(W), bias_correction=False)
    # eps = 1e-8 against |G| >= ~1e-6 here: agreement to eps/min|G|
    slack = 1e-8 / float(G.abs().min())
    assert float((with_bc - s).abs().max()) <= 2 * slack
    assert float((without - (0.1 / math.sqrt(0.001)) * s).abs().max()) <= 2 * 3.17 * slack / math.sqrt(0.001)
    # first_update agrees, and W1 - W0 = -eta * first_update
    traj = train(small(eta=0.7, keep_weights=(0, 1), record_esd=False))
    assert rel(traj.update(0), -0.7 * first_update(small(eta=0.7)).numpy()) < 1e-12


# ---------------------------------------------------------------- readout and metrics


def test_ridge_matches_lstsq_on_augmented_system():
    rng = np.random.default_rng(0)
    n, h, lam = 80, 30, 0.05
    Z = rng.standard_normal((n, h)) / np.sqrt(h)
    y = rng.standard_normal(n)
    a = ridge_readout(torch.from_numpy(Z), torch.from_numpy(y), lam).numpy()
    # (1/n)||y - Z a||^2 + (lam/h)||a||^2  <=>  || [Z; sqrt(lam n/h) I] a - [y; 0] ||^2
    A = np.vstack([Z, np.sqrt(lam * n / h) * np.eye(h)])
    b = np.concatenate([y, np.zeros(h)])
    ref, *_ = np.linalg.lstsq(A, b, rcond=None)
    assert rel(a, ref) < 1e-10


def test_ridge_solve_falls_back_to_lu_when_the_shifted_gram_is_not_spd():
    rng = np.random.default_rng(1)
    h, n, lam = 6, 10, 0.1
    gram = -np.diag(rng.uniform(1.0, 2.0, h))  # not SPD even after the ridge shift (lam n / h < 1)
    rhs = rng.standard_normal(h)
    a = ridge_solve(torch.from_numpy(gram), torch.from_numpy(rhs), lam, n).numpy()
    ref = np.linalg.solve(gram + lam * n / h * np.eye(h), rhs)
    assert rel(a, ref) < 1e-12


@pytest.mark.parametrize("scale", ["sqrt_d", "d"])
def test_ridge_losses_match_readout_metrics_and_lstsq(scale):
    cfg = small()
    data = make_data(cfg)
    W, _ = init_weights(cfg)
    out = ridge_losses(W, data, [cfg.lam, 0.3], scale)
    m = readout_metrics(W, data, cfg.lam, scale)
    assert out[cfg.lam] == (pytest.approx(m["train_loss"], rel=1e-12), pytest.approx(m["test_loss"], rel=1e-12))
    Zp = readout_features(W, data.X_probe, scale).numpy()
    n, h = Zp.shape
    A = np.vstack([Zp, np.sqrt(0.3 * n / h) * np.eye(h)])
    a, *_ = np.linalg.lstsq(A, np.concatenate([data.y_probe.numpy(), np.zeros(h)]), rcond=None)
    assert out[0.3][0] == pytest.approx(np.mean((Zp @ a - data.y_probe.numpy()) ** 2), rel=1e-9)
    with pytest.raises(ValueError, match="lams"):
        ridge_losses(W, data, [0.0], scale)


@pytest.mark.parametrize("shape", [(7, 3), (3, 7), (200, 150)])
def test_gram_by_syrk_is_the_plain_product(shape):
    from htlib.two_layer import gram

    rng = np.random.default_rng(1)
    Z = torch.from_numpy(rng.standard_normal(shape))
    G = gram(Z)
    ref = Z.numpy().T @ Z.numpy()  # NumPy's general product, not the triangle
    assert G.dtype == torch.float64 and torch.equal(G, G.T)  # mirrored exactly
    np.testing.assert_allclose(G.numpy(), ref, rtol=1e-13, atol=1e-13 * np.abs(ref).max())
    # a transposed view (not C-ordered) and float32 take the other paths and agree too
    np.testing.assert_allclose(gram(Z.T.contiguous().T).numpy(), ref, rtol=1e-13, atol=1e-13 * np.abs(ref).max())
    np.testing.assert_allclose(gram(Z.float()).numpy(), ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def test_readout_metrics_all_is_each_convention_bit_for_bit():
    from htlib.two_layer import readout_metrics_all

    cfg = small()
    data = make_data(cfg)
    W, _ = init_weights(cfg)
    both = readout_metrics_all(W, data, cfg.lam)
    assert set(both) == {"d", "sqrt_d"}
    for scale in ("d", "sqrt_d"):
        assert both[scale] == readout_metrics(W, data, cfg.lam, scale)
    with pytest.raises(ValueError, match="readout_scale"):
        readout_metrics_all(W, data, cfg.lam, ("d", "sqrt"))


@pytest.mark.parametrize("scale", ["sqrt_d", "d"])
def test_readout_metrics_against_numpy_and_spectra(scale):
    """Both conventions against features computed here in NumPy: tanh(X Wᵀ/s)/sqrt(h), s = sqrt(d) or d."""
    cfg = small()
    data = make_data(cfg)
    W, _ = init_weights(cfg)
    m = readout_metrics(W, data, cfg.lam, scale)
    Wn = W.numpy()
    s = math.sqrt(cfg.d) if scale == "sqrt_d" else float(cfg.d)
    Zp = np.tanh(data.X_probe.numpy() @ Wn.T / s) / math.sqrt(cfg.h)
    Zt = np.tanh(data.X_test.numpy() @ Wn.T / s) / math.sqrt(cfg.h)
    if scale == "sqrt_d":  # the model's own features
        np.testing.assert_allclose(student_features(W, data.X_probe).numpy(), Zp, rtol=1e-12, atol=1e-15)
    yp, yt = data.y_probe.numpy(), data.y_test.numpy()
    n, h = Zp.shape
    A = np.vstack([Zp, np.sqrt(cfg.lam * n / h) * np.eye(h)])
    a, *_ = np.linalg.lstsq(A, np.concatenate([yp, np.zeros(h)]), rcond=None)
    assert m["train_loss"] == pytest.approx(np.mean((Zp @ a - yp) ** 2), rel=1e-9)
    assert m["test_loss"] == pytest.approx(np.mean((Zt @ a - yt) ** 2), rel=1e-9)
    # KTA against the spectra module and against the explicit n x n definition
    K = Zp @ Zp.T
    Y = np.outer(yp, yp)
    kta_nn = np.sum(K * Y) / (np.linalg.norm(K) * np.linalg.norm(Y))
    assert m["kta"] == pytest.approx(kta_nn, rel=1e-10)
    assert m["kta"] == pytest.approx(spectra.kernel_target_alignment(Zp, yp), rel=1e-10)


def test_recorded_metrics_against_dense_svd():
    cfg = small(optimizer="adam", eta=0.5, steps=2, keep_weights=(0, 1, 2))
    traj = train(cfg)
    beta = make_data(cfg).beta.numpy()
    for i, t in enumerate(traj.steps):
        W = traj.weights[int(t)]
        U, s, Vt = np.linalg.svd(W, full_matrices=False)
        np.testing.assert_allclose(traj.esd[i], np.sort(s**2), rtol=1e-9, atol=1e-9 * s[0] ** 2)
        assert traj.lambda_max[i] == pytest.approx(s[0] ** 2, rel=1e-10)
        assert traj.sim[i] == pytest.approx(abs(Vt[0] @ beta), rel=1e-8)
        assert traj.sim[i] == pytest.approx(spectra.top_alignment(W, beta), rel=1e-8)
        assert traj.alpha_hill[i] == pytest.approx(spectra.alpha_hill(s**2), rel=1e-12)


def test_spectral_norm_arpack_matches_dense():
    rng = np.random.default_rng(1)
    M = rng.standard_normal((300, 200)) + 0.3 * np.outer(rng.standard_normal(300), rng.standard_normal(200))
    assert spectral_norm(M) == pytest.approx(np.linalg.svd(M, compute_uv=False)[0], rel=1e-10)
    assert spectral_norm(torch.from_numpy(M[:40, :30])) == pytest.approx(
        np.linalg.svd(M[:40, :30], compute_uv=False)[0], rel=1e-12
    )


def test_without_esd_lambda_max_still_exact():
    cfg = small(eta=0.3, record_esd=False, record_initial=False, keep_weights=(1,))
    traj = train(cfg)
    assert traj.steps.tolist() == [1] and traj.esd[0].size == 0 and np.isnan(traj.alpha_hill).all()
    s = np.linalg.svd(traj.weights[1], compute_uv=False)
    assert traj.lambda_max[0] == pytest.approx(s[0] ** 2, rel=1e-9)


# ---------------------------------------------------------------- divergence, determinism, caching


@pytest.mark.parametrize("optimizer", ["gd", "adam"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_divergence_is_reported_not_raised(optimizer, dtype):
    cfg = small(optimizer=optimizer, eta=1e300, steps=3, dtype=dtype)
    traj = train(cfg)
    assert traj.diverged_at == 1
    assert traj.steps.tolist() == [0]
    for arr in (traj.train_loss, traj.test_loss, traj.kta, traj.sim, traj.alpha_hill, traj.lambda_max):
        assert arr.shape == (1,) and np.all(np.isfinite(arr))


def test_deterministic_under_seed_and_seed_matters():
    cfg = small(optimizer="adam", eta=0.2, steps=2, keep_weights=(2,))
    t1, t2 = train(cfg), train(cfg)
    np.testing.assert_array_equal(t1.weights[2], t2.weights[2])
    for f in ("train_loss", "test_loss", "kta", "sim", "alpha_hill", "alpha_ks"):
        np.testing.assert_array_equal(getattr(t1, f), getattr(t2, f))
    t3 = train(dataclasses.replace(cfg, seed=1))
    assert not np.array_equal(t1.weights[2], t3.weights[2])
    # same seed, another eta: same data and W0 (common random numbers)
    t4 = train(dataclasses.replace(cfg, eta=0.4, keep_weights=(0,)))
    assert t4.train_loss[0] == t1.train_loss[0]


def test_run_sweep_cache_never_mixes_configs(tmp_path, monkeypatch):
    from htlib.sweep import run_sweep

    monkeypatch.setenv("HTLIB_CACHE_DIR", str(tmp_path))
    configs = [small(optimizer=o, eta=e, record_esd=False) for o in ("gd", "adam") for e in (0.1, 100.0)]
    first = run_sweep(train, configs, progress=False)
    from htlib import cache

    assert any(tmp_path.rglob(f"*{cache.SUFFIX}"))
    # reversed order, plus one config that differs only in a late field: each result must be its own
    more = [dataclasses.replace(configs[0], bias_correction=False, optimizer="adam")] + configs[::-1]
    second = run_sweep(train, more, progress=False)
    for cfg, traj in zip(more, second):
        assert traj.config == cfg
    for cfg, a, b in zip(configs, first, second[1:][::-1]):
        assert a.config == b.config == cfg
        np.testing.assert_array_equal(a.test_loss, b.test_loss)
    fresh = train(more[0])
    np.testing.assert_array_equal(second[0].test_loss, fresh.test_loss)
    assert not np.array_equal(second[0].test_loss, second[-1].test_loss)


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "field,value",
    [
        ("n", 0), ("d", -1), ("h", 1.5), ("n_test", 0), ("rho_e", -0.1), ("lam", 0.0),
        ("optimizer", "sgd"), ("eta", 0.0), ("eta", float("inf")), ("steps", -1),
        ("steplr_gamma", 1.5), ("steplr_gamma", 0.0), ("seed", -3), ("device", "tpu"),
        ("dtype", "float16"), ("record_every", 0), ("keep_weights", (5,)), ("keep_weights", [0]),
        ("weight_norm", 1), ("bias_correction", "yes"), ("stop_alpha_hill", -1.0), ("stop_alpha_hill", "2"),
    ],
)
def test_config_validation_names_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        TwoLayerConfig(**{field: value})


def test_stop_alpha_hill_needs_the_esd():
    with pytest.raises(ValueError, match="stop_alpha_hill needs record_esd"):
        TwoLayerConfig(stop_alpha_hill=2.0, record_esd=False)


def test_stop_alpha_hill_ends_the_run_at_the_first_record_below_and_changes_nothing_before():
    """The stopped run is the unstopped run cut after its first recorded PL_Alpha_Hill below the level (read off
    the full run, not off the stop's own code); a level never reached runs every step."""
    full = train(small(eta=0.5, steps=8, record_every=2, keep_weights=(0, 8)))
    hill = full.alpha_hill
    level = float((hill[1] + hill[0]) / 2) if hill[1] < hill[0] else float(hill.min()) + 1e-6
    first = int(np.flatnonzero(hill < level)[0])
    assert 0 < first < len(hill) - 1, "the stand-in run must cross the level inside its recording"
    cut = train(small(eta=0.5, steps=8, record_every=2, keep_weights=(0, 8), stop_alpha_hill=level))
    assert cut.steps.tolist() == full.steps[:first + 1].tolist() and cut.diverged_at is None
    for name in ("train_loss", "test_loss", "alpha_hill", "alpha_ks", "lambda_max"):
        np.testing.assert_array_equal(cut.metric(name), full.metric(name)[:first + 1])
    assert set(cut.weights) == {0}  # step 8 is never reached
    never = train(small(eta=0.5, steps=8, record_every=2, stop_alpha_hill=float(hill.min()) / 2))
    np.testing.assert_array_equal(never.alpha_hill, hill)


def test_recorded_steps():
    assert TwoLayerConfig(steps=7, record_every=3).recorded_steps() == [0, 3, 6, 7]
    assert TwoLayerConfig(steps=1, record_initial=False).recorded_steps() == [1]
    assert TwoLayerConfig(steps=0).recorded_steps() == [0]


def test_update_needs_kept_weights():
    traj = train(small(keep_weights=(1,), record_esd=False))
    with pytest.raises(ValueError, match="keep_weights"):
        traj.update(0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_matches_cpu():
    cpu = train(small(eta=0.3, keep_weights=(1,)))
    gpu = train(small(eta=0.3, keep_weights=(1,), device="cuda"))
    assert rel(gpu.weights[1], cpu.weights[1]) < 1e-10


def test_first_eta_above_and_run_grid():
    from htlib.two_layer import first_eta_above, run_grid

    etas = np.array([0.1, 1.0, 10.0])
    assert first_eta_above(etas, np.array([0.0, 2.0, 3.0]), 1.0) == 1.0
    assert first_eta_above(etas, np.array([0.0, 0.5, 0.9]), 1.0) is None
    with pytest.raises(ValueError, match="shape"):
        first_eta_above(etas, np.zeros(2), 1.0)
    runs = [train(small(optimizer=o, eta=e, seed=s, record_esd=False, record_initial=False))
            for o in ("gd", "adam") for e in (1.0, 0.1) for s in (1, 0)]
    grid = run_grid(runs)
    assert grid.optimizers == ("gd", "adam")
    assert grid.etas.tolist() == [0.1, 1.0] and grid.seeds.tolist() == [0, 1]
    for r in runs:
        i, j = grid.etas.tolist().index(r.config.eta), grid.seeds.tolist().index(r.config.seed)
        assert grid.get("test_loss", r.config.optimizer)[i, j] == r.test_loss[-1]
        assert grid.get("sim", r.config.optimizer)[i, j] == r.sim[-1]
        assert grid.get("test_loss@sqrt_d", r.config.optimizer)[i, j] == r.readouts["sqrt_d"]["test_loss"][-1]
    assert not grid.diverged.any()
    assert np.allclose(grid.mean("sim", "adam"), grid.get("sim", "adam").mean(axis=1))
    with pytest.raises(ValueError, match="duplicate"):
        run_grid(runs + runs[:1])
    with pytest.raises(ValueError, match="cover"):
        run_grid(runs[1:])
    with pytest.raises(ValueError, match="optimizer"):
        grid.get("sim", "sgd")


# ---------------------------------------------------------------- readout conventions


def test_forward_hook_with_inplace_division_stores_scaled_preactivations():
    """The pattern of the authors' code, rebuilt here: a forward hook keeps ``out.detach()`` of the
    first layer, and the forward pass divides that output in place by sqrt(d).  ``detach`` shares
    storage, so the kept tensor ends up as X Wᵀ/sqrt(d); an evaluation that divides it by sqrt(d)
    again feeds tanh(X Wᵀ/d)/sqrt(h) to the readout, i.e. the ``"d"`` convention."""
    torch.manual_seed(0)
    d, h, n = 12, 7, 9
    layer = torch.nn.Linear(d, h, bias=False)
    kept = {}
    layer.register_forward_hook(lambda mod, inp, out: kept.__setitem__("z", out.detach()))

    def forward(X):
        Z = layer(X)
        Z /= math.sqrt(d)  # in place: the hooked tensor changes too
        return torch.tanh(Z)

    X = torch.randn(n, d)
    with torch.no_grad():
        forward(X)
        W = layer.weight.detach().clone()
        stored = kept["z"].clone()
        np.testing.assert_allclose(stored.numpy(), (X @ W.T / math.sqrt(d)).numpy(), rtol=1e-6, atol=1e-7)
        assert not torch.allclose(stored, X @ W.T)  # the raw output is gone
        evaluated = torch.tanh(kept["z"] / math.sqrt(d)) / math.sqrt(h)  # what the evaluation then computes
    np.testing.assert_allclose(evaluated.numpy(), readout_features(W, X, "d").numpy(), rtol=1e-6, atol=1e-7)
    ref_d = np.tanh(X.double().numpy() @ W.double().numpy().T / d) / math.sqrt(h)
    np.testing.assert_allclose(evaluated.double().numpy(), ref_d, rtol=1e-5, atol=1e-7)
    # without the in-place division (out-of-place Z = Z / sqrt(d)) the kept tensor stays X Wᵀ
    kept.clear()
    with torch.no_grad():
        Z = layer(X)
        Z = Z / math.sqrt(d)
    np.testing.assert_allclose(kept["z"].numpy(), (X @ W.T).numpy(), rtol=1e-6, atol=1e-6)


def test_d_convention_equals_independent_ridge_and_losses():
    """One recorded run: the "d" losses and KTA equal a NumPy computation from tanh(X Wᵀ/d)/sqrt(h),
    a ridge solve of the augmented least-squares system and the two MSEs; both conventions recorded."""
    cfg = small(optimizer="adam", eta=0.3, steps=2, keep_weights=(0, 2))
    traj = train(cfg)
    data = make_data(cfg)
    assert traj.config.readout_scale == "d"
    for t, i in ((0, 0), (2, 2)):
        W = traj.weights[t]
        Zp = np.tanh(data.X_probe.numpy() @ W.T / cfg.d) / math.sqrt(cfg.h)
        Zt = np.tanh(data.X_test.numpy() @ W.T / cfg.d) / math.sqrt(cfg.h)
        yp, yt = data.y_probe.numpy(), data.y_test.numpy()
        n, h = Zp.shape
        A = np.vstack([Zp, np.sqrt(cfg.lam * n / h) * np.eye(h)])
        a, *_ = np.linalg.lstsq(A, np.concatenate([yp, np.zeros(h)]), rcond=None)
        assert traj.train_loss[i] == pytest.approx(np.mean((Zp @ a - yp) ** 2), rel=1e-9)
        assert traj.test_loss[i] == pytest.approx(np.mean((Zt @ a - yt) ** 2), rel=1e-9)
        kta = np.sum((Zp.T @ yp) ** 2) / (np.linalg.norm(Zp.T @ Zp) * (yp @ yp))
        assert traj.kta[i] == pytest.approx(kta, rel=1e-9)
        assert traj.metric("test_loss@d")[i] == traj.test_loss[i]
        other = readout_metrics(torch.as_tensor(W), data, cfg.lam, "sqrt_d")
        assert traj.metric("test_loss@sqrt_d")[i] == pytest.approx(other["test_loss"], rel=1e-12)
        assert abs(other["train_loss"] - traj.train_loss[i]) > 1e-3  # the conventions do differ
    # the config's readout picks the plain fields; training is the same
    alt = train(dataclasses.replace(cfg, readout_scale="sqrt_d"))
    np.testing.assert_array_equal(alt.weights[2], traj.weights[2])
    np.testing.assert_array_equal(alt.train_loss, traj.metric("train_loss@sqrt_d"))
    with pytest.raises(ValueError, match="readout_scale"):
        small(readout_scale="sqrtd")
    with pytest.raises(ValueError, match="weight_norm_order"):
        small(weight_norm_order="after")
    with pytest.raises(ValueError, match="metric"):
        traj.metric("loss@d")


def test_weight_norm_orders_share_normalized_iterates():
    """Authors' order (normalize before each gradient, record raw) against the after-update order:
    both record the raw W_0; only the after-update order records normalized W_t (the exact update
    arithmetic of both orders is checked against torch.optim above)."""
    base = small(optimizer="adam", eta=0.5, steps=3, weight_norm=True, keep_weights=(0, 1, 2, 3))
    before = train(base)
    after = train(dataclasses.replace(base, weight_norm_order="after_update"))
    target = math.sqrt(base.h * base.d)
    np.testing.assert_array_equal(before.weights[0], after.weights[0])  # both record the raw W_0
    for t in (1, 2, 3):
        assert np.linalg.norm(after.weights[t]) == pytest.approx(target, rel=1e-10)
        assert abs(np.linalg.norm(before.weights[t]) - target) > 1e-3 * target  # raw, not normalized


# ---------------------------------------------------------------- training spec vs recording spec


def test_restrict_recording_equals_a_run_with_that_recording():
    from htlib.two_layer import recording_covers, restrict_recording, training_spec

    stored = small(eta=0.3, steps=4, keep_weights=(0, 2, 3, 4))
    wanted = small(eta=0.3, steps=4, record_every=2, keep_weights=(3,), record_esd=False, readout_scale="sqrt_d",
                   record_initial=False)
    assert training_spec(stored) == training_spec(wanted) and recording_covers(stored, wanted)
    assert not recording_covers(wanted, stored)
    assert not recording_covers(stored, small(eta=0.4, steps=4))  # another training spec
    got = restrict_recording(train(stored), wanted)
    direct = train(wanted)
    assert got.config == wanted and got.steps.tolist() == direct.steps.tolist() == [2, 4]
    for name in ("train_loss", "test_loss", "kta", "sim", "lambda_max", "update_loss", "test_loss@d"):
        np.testing.assert_array_equal(got.metric(name), direct.metric(name))
    assert np.isnan(got.alpha_ks).all() and all(e.size == 0 for e in got.esd)
    np.testing.assert_array_equal(got.weights[3], direct.weights[3])
    with pytest.raises(ValueError, match="cover"):
        restrict_recording(direct, stored)


def test_run_cost_counts_the_recorded_steps_and_six_gemm_passes_a_step():
    from htlib.two_layer import TwoLayerConfig, run_cost
    base = dict(n=32, d=10, h=12)
    for steps, every, initial in [(1, 1, True), (9, 2, True), (10, 5, False), (11, 3, False), (30, 30, True)]:
        cfg = TwoLayerConfig(steps=steps, record_every=every, record_initial=initial, **base)
        one = run_cost(TwoLayerConfig(steps=0, **base))[1]  # one record, no step
        assert run_cost(cfg)[1] == pytest.approx(len(cfg.recorded_steps()) * one + 6.0 * 32 * 10 * 12 * steps)

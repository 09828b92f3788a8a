"""Tests of htlib.small_nets: configs validate themselves (with messages that name the argument),
the architectures have the paper's FC1 shapes, training is deterministic and learns, the test set
can be capped, and the initialization readings differ as stated.  The batch-size experiment built
on it (presets, grids) is tested with the HTMP chapter's experiments in ``test_htmp.py``."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from htlib.small_nets import SmallNetConfig, build_model, first_linear, train_small_net


def test_config_validation():
    with pytest.raises(ValueError, match="batch_size"):
        SmallNetConfig(batch_size=0)
    with pytest.raises(ValueError, match="model"):
        SmallNetConfig(model="resnet")
    with pytest.raises(ValueError, match="dataset"):
        SmallNetConfig(dataset="imagenet")
    with pytest.raises(ValueError, match="data_dir"):
        SmallNetConfig(dataset="cifar10")
    with pytest.raises(ValueError, match="init"):
        SmallNetConfig(init="xavier")
    with pytest.raises(ValueError, match="digits"):
        SmallNetConfig(model="minialexnet", dataset="digits")
    with pytest.raises(ValueError, match="momentum"):
        SmallNetConfig(momentum=1.0)
    with pytest.raises(ValueError, match="lr"):
        SmallNetConfig(lr=0.0)
    with pytest.raises(ValueError, match="n_test"):
        SmallNetConfig(n_test=0)
    with pytest.raises(ValueError, match="widths"):
        SmallNetConfig(model="mlp", widths=(10, 0))
    with pytest.raises(ValueError, match="epochs"):
        SmallNetConfig(epochs=2.0)


@pytest.mark.parametrize("model,dataset,fc1", [("minialexnet", "cifar10", (1000, 192 * 4 * 4)),
                                               ("minialexnet", "mnist5k", (1000, 192 * 3 * 3)),
                                               ("lenet", "mnist5k", (120, 400)), ("lenet", "cifar10", (120, 400))])
def test_architectures_and_fc1_shapes(model, dataset, fc1):
    cfg = SmallNetConfig(model=model, dataset=dataset, data_dir="/nonexistent")
    net = build_model(cfg)
    c, s = (3, 32) if dataset == "cifar10" else (1, 28)
    assert net(torch.zeros(2, c * s * s)).shape == (2, 10)
    assert tuple(first_linear(net).weight.shape) == fc1


def test_initialization_readings():
    # "std": N(0, 1/fan_in); "variance": N(0, sqrt(1/fan_in)), i.e. std fan_in^(-1/4)
    for init, expect in [("std", 400 ** -0.5), ("variance", 400 ** -0.25)]:
        torch.manual_seed(0)
        W = first_linear(build_model(SmallNetConfig(model="lenet", init=init))).weight.detach().numpy()
        assert W.std() == pytest.approx(expect, rel=0.02)


def test_training_is_deterministic_and_learns():
    cfg = SmallNetConfig(model="lenet", dataset="mnist5k", batch_size=50, epochs=2, n_train=600)
    a, b = train_small_net(cfg), train_small_net(cfg)
    assert a.weights.shape == (120, 400)
    np.testing.assert_array_equal(a.weights, b.weights)
    assert a.train_acc > 0.5 and a.test_acc > 0.5  # well above chance (0.1) after 24 SGD steps
    assert a.gamma == pytest.approx(0.3)


def test_n_test_caps_the_test_set_and_changes_nothing_else():
    # the test images are never trained on: capping them leaves the weights bit-identical, and the
    # accuracy on 7 images is a multiple of 1/7
    cfg = SmallNetConfig(model="lenet", dataset="mnist5k", batch_size=100, epochs=1, n_train=300)
    full, capped = train_small_net(cfg), train_small_net(SmallNetConfig(**{**cfg.__dict__, "n_test": 7}))
    np.testing.assert_array_equal(full.weights, capped.weights)
    assert full.train_acc == capped.train_acc
    assert math.isclose(capped.test_acc * 7, round(capped.test_acc * 7), abs_tol=1e-6)


def test_conv_widths_set_minialexnet_fc1_and_are_validated():
    cfg = SmallNetConfig(model="minialexnet", conv_widths=(8, 16, 24))
    net = build_model(cfg)
    assert tuple(first_linear(net).weight.shape) == (1000, 24 * 9)
    assert net(torch.zeros(2, 784)).shape == (2, 10)
    with pytest.raises(ValueError, match="conv_widths"):
        SmallNetConfig(conv_widths=(8, 16))
    with pytest.raises(ValueError, match="channels_last"):
        SmallNetConfig(channels_last=1)


def test_channels_last_is_the_same_model_and_weight_change_is_measured():
    # the memory format changes the kernels, not the model: a few SGD steps agree to float32 rounding;
    # weight_change is ||W - W0|| / ||W0|| against an independently rebuilt initialization
    cfg = SmallNetConfig(model="lenet", dataset="mnist5k", batch_size=100, epochs=1, n_train=300, n_test=10)
    a = train_small_net(cfg)
    b = train_small_net(SmallNetConfig(**{**cfg.__dict__, "channels_last": False}))
    np.testing.assert_allclose(a.weights, b.weights, atol=1e-5)
    torch.manual_seed(cfg.seed)
    W0 = first_linear(build_model(cfg)).weight.detach().double().numpy()
    assert a.weight_change == pytest.approx(np.linalg.norm(a.weights - W0) / np.linalg.norm(W0), rel=1e-4)
    assert 0 < a.weight_change < 1


def _dense_ntk(model, X):
    # the reference: one autograd call per example and output, the full Jacobian, then J Jᵀ traced over outputs
    import copy

    model = copy.deepcopy(model).double()
    X = X.double()
    params = [p for p in model.parameters()]
    rows = []
    for i in range(X.shape[0]):
        out = model(X[i : i + 1])[0]
        rows.append(torch.stack([torch.cat([g.reshape(-1) for g in torch.autograd.grad(out[c], params, retain_graph=True)])
                                 for c in range(out.shape[0])]))
    J = torch.stack(rows)  # n x outputs x P, float64
    return torch.einsum("icp,jcp->ij", J, J).numpy()


def test_empirical_ntk_matches_a_dense_autograd_jacobian():
    from htlib.small_nets import empirical_ntk

    torch.manual_seed(0)
    net = build_model(SmallNetConfig(model="lenet"))
    X = torch.randn(5, 784)
    K, ref = empirical_ntk(net, X, chunk=2), _dense_ntk(net, X)
    assert K.dtype == np.float64
    np.testing.assert_allclose(K, ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max())


def test_logistic_ntk_is_the_closed_form_and_cosine_schedule_trains():
    # logistic regression: f = W x + b, so K = (outputs) (X Xᵀ + 1) whatever the weights
    from htlib.small_nets import empirical_ntk, ntk_spectrum

    cfg = SmallNetConfig(model="logistic", batch_size=64, epochs=3, lr=0.05, schedule="cosine", n_train=120, n_test=50)
    sp = ntk_spectrum(cfg)
    from htlib.small_nets import _load

    Xtr = _load(cfg, torch.Generator().manual_seed(cfg.seed))[0].double()
    ref = np.linalg.eigvalsh((10 * (Xtr @ Xtr.T + 1)).numpy())
    np.testing.assert_allclose(sp.eigs, ref, rtol=1e-9, atol=1e-12 * ref.max())
    assert sp.n_params == 7850 and sp.train_acc > 0.5
    with pytest.raises(ValueError, match="schedule"):
        SmallNetConfig(schedule="step")


def test_ntk_small_eigenvalues_are_float64_accurate():
    # an ill-conditioned logistic regression: singular values of [X, 1] from 1 down to 1e-5, so the
    # NTK 3 (XXᵀ + 1) has eigenvalues from ~3 down to ~3e-10; float32 round-off (~1e-7 of the
    # largest) would swamp every eigenvalue below ~1e-6, float64 keeps them to ~1e-12 relative
    from htlib.small_nets import empirical_ntk

    rng = np.random.default_rng(0)
    n, d = 12, 20
    U, _ = np.linalg.qr(rng.standard_normal((n, n)))
    V, _ = np.linalg.qr(rng.standard_normal((d, d)))
    s = np.geomspace(1.0, 1e-5, n)
    X = (U * s) @ V[:n]
    net = torch.nn.Sequential(torch.nn.Linear(d, 3))
    lam = np.linalg.eigvalsh(empirical_ntk(net, torch.from_numpy(X)))
    ref = np.linalg.eigvalsh(3 * (X @ X.T + 1))
    assert ref.min() < 1e-8 * ref.max()  # the check reaches eigenvalues float32 cannot resolve
    np.testing.assert_allclose(lam, ref, rtol=1e-6)


# ----------------------------------------------------------------------------- device
def test_device_is_validated_and_auto_resolves_before_keying(monkeypatch):
    # the rule, on both branches of torch.cuda.is_available (patched, so it runs on any machine); the refused
    # "cuda" is refused when the config is built, i.e. before any data are loaded or any step is taken
    import htlib.small_nets as sn
    from htlib.cache import config_key

    with pytest.raises(ValueError, match="device"):
        SmallNetConfig(device="gpu")
    with pytest.raises(ValueError, match="device"):
        SmallNetConfig(device=None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert SmallNetConfig().device == "cpu" and sn.resolve_device("auto") == "cpu"
    with pytest.raises(ValueError, match="device='cuda'"):
        SmallNetConfig(device="cuda")
    with pytest.raises(ValueError, match="device='cuda'"):
        sn.empirical_ntk(torch.nn.Linear(3, 2), torch.zeros(2, 3), device="cuda")
    called = []
    monkeypatch.setattr(sn, "_load", lambda *a: called.append(a))
    with pytest.raises(ValueError, match="device='cuda'"):
        train_small_net(SmallNetConfig(device="cuda"))
    assert not called
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert sn.resolve_device("auto") == "cuda" and SmallNetConfig().device == "cuda"
    monkeypatch.undo()
    # the resolved device is in the config, hence in the result-cache key: "auto" never names two devices
    cpu = SmallNetConfig(device="cpu")
    gpu = SmallNetConfig(device="cpu")
    object.__setattr__(gpu, "device", "cuda")  # a CUDA config, built without a CUDA device
    assert config_key("htlib.small_nets.train_small_net", cpu) != config_key("htlib.small_nets.train_small_net", gpu)
    if not torch.cuda.is_available():
        assert SmallNetConfig() == cpu
        assert config_key("htlib.small_nets.train_small_net", SmallNetConfig()) == \
            config_key("htlib.small_nets.train_small_net", cpu)


@pytest.mark.skipif(torch.cuda.is_available(), reason="'auto' means CUDA on this machine: see the CUDA test")
def test_auto_is_the_cpu_path_bit_for_bit_without_cuda():
    from htlib.small_nets import empirical_ntk

    kw = dict(model="lenet", dataset="mnist5k", batch_size=100, epochs=1, n_train=300, n_test=50)
    a, b = train_small_net(SmallNetConfig(**kw)), train_small_net(SmallNetConfig(**kw, device="cpu"))
    assert a.config.device == "cpu" and isinstance(a.weights, np.ndarray) and a.weights.dtype == np.float64
    np.testing.assert_array_equal(a.weights, b.weights)
    assert (a.train_acc, a.test_acc, a.weight_change) == (b.train_acc, b.test_acc, b.weight_change)
    torch.manual_seed(0)
    net, X = build_model(SmallNetConfig(model="lenet")), torch.randn(4, 784)
    np.testing.assert_array_equal(empirical_ntk(net, X), empirical_ntk(net, X, device="cpu"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (torch.cuda.is_available() is False)")
def test_cuda_path_agrees_with_the_cpu_path():
    # the same split, initialization and batch order on both devices: a few SGD steps agree to float32 rounding
    # (TF32 off); the float64 NTK agrees to float64 rounding; the logistic NTK is the closed form 10 (X Xᵀ + 1)
    from htlib.small_nets import _load, empirical_ntk, ntk_spectrum

    kw = dict(model="lenet", dataset="mnist5k", batch_size=100, epochs=1, n_train=300, n_test=50)
    cpu, gpu = train_small_net(SmallNetConfig(**kw, device="cpu")), train_small_net(SmallNetConfig(**kw, device="cuda"))
    assert gpu.config.device == "cuda" and SmallNetConfig(**kw).device == "cuda"  # "auto" picks CUDA here
    assert isinstance(gpu.weights, np.ndarray) and gpu.weights.dtype == np.float64
    np.testing.assert_allclose(gpu.weights, cpu.weights, atol=1e-5)
    assert gpu.weight_change == pytest.approx(cpu.weight_change, rel=1e-2)
    assert abs(gpu.train_acc - cpu.train_acc) <= 0.02
    torch.manual_seed(0)
    net, X = build_model(SmallNetConfig(model="lenet", device="cpu")), torch.randn(6, 784)
    K = empirical_ntk(net, X, device="cuda", chunk=4)
    assert isinstance(K, np.ndarray) and K.dtype == np.float64
    ref = empirical_ntk(net, X, device="cpu")
    np.testing.assert_allclose(K, ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max())
    cfg = SmallNetConfig(model="logistic", batch_size=64, epochs=2, lr=0.05, schedule="cosine", n_train=120, n_test=50,
                         device="cuda")
    sp = ntk_spectrum(cfg)
    Xtr = _load(cfg, torch.Generator().manual_seed(cfg.seed))[0].double()
    ref = np.linalg.eigvalsh((10 * (Xtr @ Xtr.T + 1)).numpy())
    assert sp.eigs.dtype == np.float64
    np.testing.assert_allclose(sp.eigs, ref, rtol=1e-9, atol=1e-12 * ref.max())

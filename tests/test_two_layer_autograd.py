"""htlib.two_layer against a second, independent trainer (htlib.two_layer_autograd: autograd, torch.optim.SGD /
torch.optim.Adam, the mean squared error without 1/2, the ridge readout with features tanh(X Wᵀ/s)/sqrt(h)),
on the book's data and W0, for 10 full-batch steps.

Tolerances
----------
* float32: ``SAFETY`` (3, the factor tests/tolerances.py puts on a measured deviation) times the float32 round-off of
  the run, measured in the test: for each code, the largest relative deviation of its float32 run from the same code
  run in float64 (only the precision differs), over the steps and the compared quantities; the larger of the two
  codes', and at least float32's machine epsilon.  Two float32 runs that each lie within their round-off of one exact
  run differ by at most the sum of the two; a convention that differs leaves each code's float32-float64 gap small
  and their difference large.  Measured at the sizes here, seeds 0-5: the float32 difference is at most 1.9 times
  that round-off, which itself ranges from 1e-7 (GD, eta = 1) to 1e-2 (FB-Adam at eta = 10, seed 4: ten steps
  amplify a rounding error up to 2e5 times).
* float64: ``RTOL64 = 1e-9`` on every W_t and every loss.  float64 rounds 2^29 (5e8) times finer than float32, so
  the largest float32 round-off above, 1e-2, becomes about 2e-11 (measured: at most 2.8e-11 between the two codes,
  1e-15 to 1e-12 at seeds 0 and 1); 1e-9 leaves a factor 35 for other arithmetic and is still far below the change
  of any convention these tests try (relative differences of order 1).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from htlib import two_layer as tl
from htlib import two_layer_autograd as ag

STEPS = 10
SMALL = dict(n=200, d=50, h=75, n_test=40)  # the book's data, W0 and rho_e, lam at a size that runs in a second
EPS32 = float(np.finfo(np.float32).eps)
RTOL64 = 1e-9
SAFETY = 3.0
CASES = [("gd", 1.0), ("gd", 2000.0), ("adam", 0.1), ("adam", 10.0)]  # the chapter's learning rates


def _config(optimizer: str, eta: float, dtype: str, seed: int = 0, **kw) -> tl.TwoLayerConfig:
    return tl.TwoLayerConfig(**SMALL, optimizer=optimizer, eta=eta, steps=STEPS, dtype=dtype, seed=seed,
                             record_esd=False, keep_weights=tuple(range(STEPS + 1)), **kw)


def _reference(config: tl.TwoLayerConfig) -> dict[str, np.ndarray]:
    """htlib.two_layer.train's W_t, update losses and readout losses (both scales), t = 0..STEPS."""
    traj = tl.train(config)
    assert traj.diverged_at is None and traj.steps.tolist() == list(range(STEPS + 1))
    out = {"W": np.stack([traj.weights[t] for t in range(STEPS + 1)]), "loss": traj.update_loss}
    out.update({f"{m}@{s}": traj.readouts[s][m] for s in ag.READOUT_SCALES for m in ("train_loss", "test_loss")})
    return out


def _autograd(config: tl.TwoLayerConfig, **kw) -> dict[str, np.ndarray]:
    """The same quantities from htlib.two_layer_autograd, on htlib.two_layer's data and W0, a0."""
    data = tl.make_data(config)
    W0, a0 = tl.init_weights(config)
    run = ag.train_autograd(data.X_train, data.y_train, W0, a0, optimizer=config.optimizer, eta=config.eta,
                            steps=STEPS, **kw)
    out = {"W": run.weights, "loss": run.losses}
    for s in ag.READOUT_SCALES:
        ro = np.array([ag.readout_losses(W, data.X_probe, data.y_probe, data.X_test, data.y_test, lam=config.lam,
                                         scale=s) for W in run.weights])
        out[f"train_loss@{s}"], out[f"test_loss@{s}"] = ro[:, 0], ro[:, 1]
    return out


def _largest(a: dict, b: dict) -> dict[str, float]:
    """Per quantity, the largest relative difference over the steps (b the reference)."""
    return {k: max(ag.relative_difference(a[k][t], b[k][t]) for t in range(STEPS + 1)) for k in b}


def _roundoff32(optimizer: str, eta: float, seed: int = 0) -> float:
    """The float32 round-off of this run: each code's float32 run against the same code in float64, the largest
    relative deviation over the steps, the quantities and the two codes (at least float32's epsilon)."""
    c32, c64 = _config(optimizer, eta, "float32", seed), _config(optimizer, eta, "float64", seed)
    own = [_largest(_reference(c32), _reference(c64)), _largest(_autograd(c32), _autograd(c64))]
    return max(EPS32, *(v for d in own for v in d.values()))


@pytest.mark.parametrize("optimizer,eta", CASES)
def test_float64_runs_agree_to_round_off(optimizer, eta):
    cfg = _config(optimizer, eta, "float64")
    diff = _largest(_autograd(cfg), _reference(cfg))
    assert max(diff.values()) <= RTOL64, diff


@pytest.mark.parametrize("optimizer,eta", CASES)
@pytest.mark.parametrize("seed", [0, 1])
def test_float32_runs_agree_within_float32_round_off(optimizer, eta, seed):
    cfg = _config(optimizer, eta, "float32", seed)
    diff = _largest(_autograd(cfg), _reference(cfg))
    tol = SAFETY * _roundoff32(optimizer, eta, seed)
    assert tol < 1e-2  # a round-off at these seeds (at most 1e-3), not an order-one allowance
    assert max(diff.values()) <= tol, (tol, diff)


def test_the_runs_move_so_that_the_comparison_means_something():
    """Every compared quantity changes over the ten steps by far more than the float32 tolerance."""
    for optimizer, eta in CASES[1:]:
        ref = _reference(_config(optimizer, eta, "float32"))
        tol = SAFETY * _roundoff32(optimizer, eta)
        assert ag.relative_difference(ref["W"][-1], ref["W"][0]) > 1e3 * tol
        assert ag.relative_difference(ref["loss"][-1], ref["loss"][0]) > 1e2 * tol


def test_the_loss_with_one_half_fails_for_gd():
    """The written loss 1/(2n) sum (y - f)^2 halves GD's steps: the comparison must fail, by far."""
    cfg = _config("gd", 2000.0, "float32")
    diff = _largest(_autograd(cfg, loss_factor=0.5), _reference(cfg))
    tol = SAFETY * _roundoff32("gd", 2000.0)
    assert diff["W"] > 1e3 * tol and diff["loss"] > 1e3 * tol, (tol, diff)


def test_adam_without_bias_correction_fails():
    """torch.optim.Adam corrects its moments' bias; htlib's FB-Adam without it (first step 3.16 times larger)
    must not match."""
    cfg = _config("adam", 0.1, "float32")
    other = _reference(dataclasses.replace(cfg, bias_correction=False))
    diff = _largest(_autograd(cfg), other)
    tol = SAFETY * _roundoff32("adam", 0.1)
    assert diff["W"] > 1e3 * tol and diff["loss"] > 1e2 * tol, (tol, diff)


def test_first_adam_step_is_eta_times_the_sign_of_the_gradient():
    """A convention check that reads only the formulas: with bias correction the first step is eta G/(|G| + eps)."""
    cfg = _config("adam", 0.1, "float64")
    data = tl.make_data(cfg)
    W0, a0 = tl.init_weights(cfg)
    run = ag.train_autograd(data.X_train, data.y_train, W0, a0, optimizer="adam", eta=0.1, steps=1)
    W = W0.clone().requires_grad_(True)
    ag.student_loss(W, a0, data.X_train, data.y_train).backward()
    G = W.grad.numpy()
    np.testing.assert_allclose(run.weights[1] - run.weights[0], -0.1 * G / (np.abs(G) + 1e-8), rtol=1e-9, atol=1e-15)


def test_gd_gradient_is_the_closed_form_with_the_factor_two():
    """Autograd's gradient of the MSE without 1/2 is 2/(n sqrt(hd)) [(r aᵀ) ⊙ tanh'(X Wᵀ/sqrt(d))]ᵀ X with
    residuals r = f(X) - y (the written gradient, which has the 1/2, times 2)."""
    cfg = _config("gd", 1.0, "float64")
    data = tl.make_data(cfg)
    W0, a0 = tl.init_weights(cfg)
    X, y = data.X_train, data.y_train
    n, (h, d) = X.shape[0], W0.shape
    pre = X @ W0.T / math.sqrt(d)
    r = torch.tanh(pre) @ a0 / math.sqrt(h) - y
    G = 2.0 / (n * math.sqrt(h * d)) * ((r[:, None] * a0[None, :]) * (1 - torch.tanh(pre) ** 2)).T @ X
    run = ag.train_autograd(X, y, W0, a0, optimizer="gd", eta=1.0, steps=1)
    np.testing.assert_allclose(run.weights[0] - run.weights[1], G.numpy(), rtol=1e-9, atol=1e-14)


def test_run_shapes_and_inputs_are_not_modified():
    cfg = _config("adam", 0.1, "float32")
    data = tl.make_data(cfg)
    W0, a0 = tl.init_weights(cfg)
    W_before = W0.clone()
    run = ag.train_autograd(data.X_train, data.y_train, W0, a0, optimizer="adam", eta=0.1, steps=3)
    assert run.weights.shape == (4, SMALL["h"], SMALL["d"]) and run.weights.dtype == np.float32
    assert run.losses.shape == (4,) and run.steps == 3
    assert torch.equal(W0, W_before)
    np.testing.assert_array_equal(run.weights[0], W_before.numpy())
    zero = ag.train_autograd(data.X_train, data.y_train, W0, a0, optimizer="gd", eta=1.0, steps=0)
    assert zero.weights.shape == (1, SMALL["h"], SMALL["d"]) and zero.losses.shape == (1,)


@pytest.mark.parametrize("kwargs,name", [
    (dict(optimizer="sgd"), "optimizer"),
    (dict(eta=0.0), "eta"),
    (dict(eta=math.nan), "eta"),
    (dict(steps=-1), "steps"),
    (dict(steps=2.0), "steps"),
    (dict(loss_factor=-1.0), "loss_factor"),
    (dict(X=np.zeros((5, 4))), "X"),
    (dict(y=np.zeros(6)), "y"),
    (dict(a=np.zeros(2)), "a"),
    (dict(W0=np.zeros(3)), "W0"),
    (dict(W0=np.full((3, 3), np.inf)), "W0"),
    (dict(X=np.zeros((5, 3), dtype=np.int64)), "X"),
])
def test_arguments_are_checked_at_the_edge(kwargs, name):
    args = dict(X=np.zeros((5, 3)), y=np.zeros(5), W0=np.ones((4, 3)), a=np.ones(4), optimizer="gd", eta=1.0,
                steps=1)
    args.update(kwargs)
    with pytest.raises(ValueError, match=rf"^{name} "):
        ag.train_autograd(args.pop("X"), args.pop("y"), args.pop("W0"), args.pop("a"), **args)


@pytest.mark.parametrize("kwargs,name", [(dict(lam=0.0), "lam"), (dict(scale="d2"), "scale"),
                                         (dict(X_test=np.zeros((2, 4))), "X_test"), (dict(y_probe=np.zeros(3)), "y_probe"),
                                         (dict(W=np.ones(3)), "W")])
def test_readout_arguments_are_checked(kwargs, name):
    args = dict(W=np.ones((4, 3)), X_probe=np.zeros((5, 3)), y_probe=np.zeros(5), X_test=np.zeros((2, 3)),
                y_test=np.zeros(2), lam=0.01, scale="d")
    args.update(kwargs)
    with pytest.raises(ValueError, match=rf"^{name} "):
        ag.readout_losses(args.pop("W"), args.pop("X_probe"), args.pop("y_probe"), args.pop("X_test"),
                          args.pop("y_test"), **args)


def test_relative_difference():
    assert ag.relative_difference([1.0, 2.0], [1.0, 2.0]) == 0.0
    assert ag.relative_difference([3.0, 4.0], [0.0, 0.0]) == math.inf
    assert math.isclose(ag.relative_difference([1.0, 1.0], [1.0, 0.0]), 1.0)
    with pytest.raises(ValueError, match="shape"):
        ag.relative_difference([1.0], [1.0, 2.0])


def test_student_loss_checks_its_arguments():
    W, a, X, y = torch.ones(4, 3), torch.ones(4), torch.zeros(5, 3), torch.zeros(5)
    assert float(ag.student_loss(W, a, X, y)) == 0.0
    with pytest.raises(ValueError, match="^loss_factor "):
        ag.student_loss(W, a, X, y, 0.0)
    with pytest.raises(ValueError, match="^a "):
        ag.student_loss(W, a.double(), X, y)
    with pytest.raises(ValueError, match="^X "):
        ag.student_loss(W, a, np.zeros((5, 3)), y)
    with pytest.raises(ValueError, match="^shapes "):
        ag.student_loss(W, a, torch.zeros(5, 2), y)

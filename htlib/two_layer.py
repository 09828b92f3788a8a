"""The two-layer student of paper 003: features, full-batch GD / FB-Adam on W, ridge readout, trajectories.

Student ``f(x) = aᵀ tanh(W x / sqrt(d)) / sqrt(h)``, ``W0, a0`` i.i.d. ``N(0, 1)``, no biases, ``a`` frozen while
W is updated.  The loss of the updates is the authors' code's ``(1/n) sum_i (y_i - f(x_i))^2``, WITHOUT the paper's
1/2, so every gradient is twice the paper's ``G_0``.  FB-Adam uses PyTorch's defaults with bias correction (first
update ``~ eta sign(G)``); ``bias_correction=False`` gives the paper's eq. (2), ``~ 3.16 sign(G_0)``.

The readout ``a`` is then refitted by ridge regression on the probe set, with features ``tanh(X Wᵀ/sqrt(d))/sqrt(h)``
(``"sqrt_d"``, the paper's formula) or ``tanh(X Wᵀ/d)/sqrt(h)`` (``"d"``: the authors' evaluation code divided a
hooked view of the first layer's output by ``sqrt(d)`` twice, so the published figures use it); every recorded step
stores both.  Training runs in the config's dtype; the readout solve and every spectrum are float64.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
import torch

from htlib._checks import check_choice, check_float, check_int, check_vector, to_numpy
from htlib.teacher_student import SingleIndexData, derived_seed, make_single_index_data, resolve_device, resolve_dtype

__all__ = ["TwoLayerConfig", "Trajectory", "AdamState", "make_data", "init_weights", "student_features",
           "student_output", "student_mse", "full_batch_gradient", "adam_direction", "gd_step", "adam_step",
           "normalize_weights", "first_update", "ridge_readout", "readout_metrics", "readout_metrics_all", "gram",
           "readout_features",
           "READOUT_SCALES", "RECORDING_FIELDS", "training_spec", "run_cost", "recording_covers", "restrict_recording",
           "READOUT_METRICS", "WEIGHT_NORM_ORDERS", "spectral_norm", "top_eigenpair", "train", "RunGrid", "run_grid",
           "last_step_metrics", "ridge_solve", "ridge_losses", "first_eta_above", "ADAM_BETAS", "ADAM_EPS"]

ADAM_BETAS: tuple[float, float] = (0.9, 0.999)
"""PyTorch's default Adam decay factors (beta1, beta2)."""
ADAM_EPS: float = 1e-8
"""PyTorch's default Adam epsilon."""

_OPTIMIZERS = ("gd", "adam")

READOUT_SCALES: tuple[str, ...] = ("d", "sqrt_d")
"""Readout-feature conventions: ``"d"`` -> ``tanh(X Wᵀ/d)/sqrt(h)`` (the authors' code, hence the
paper's figures); ``"sqrt_d"`` -> ``tanh(X Wᵀ/sqrt(d))/sqrt(h)`` (the paper's formula)."""
READOUT_METRICS: tuple[str, ...] = ("train_loss", "test_loss", "kta")
"""The metrics that depend on the readout convention; ``"<metric>@<scale>"`` names one under a convention."""
RECORDING_FIELDS: tuple[str, ...] = ("readout_scale", "record_every", "keep_weights", "record_initial", "record_esd")
"""The fields of :class:`TwoLayerConfig` that say what :func:`train` records, not what it computes: two configs
that differ only here train the same ``W_t`` (the others are the training spec, :func:`training_spec`)."""

WEIGHT_NORM_ORDERS: tuple[str, ...] = ("before_forward", "after_update")
"""Where weight normalization acts: before each gradient (the authors' code; the recorded ``W_t`` is raw) or after
each update (the recorded ``W_t`` has ``||W_t||_F^2 = h d``)."""


@dataclass(frozen=True)
class TwoLayerConfig:
    """One run of the two-stage procedure of paper 003.

    Attributes
    ----------
    n, d, h, n_test
        Train/probe size, input dimension, width, test size.
    rho_e, lam
        Label-noise standard deviation; ridge constant of ``(1/n)||y - Z a||^2 + (lam/h)||a||^2``.
    optimizer, eta, steps
        ``"gd"`` or ``"adam"``, learning rate, number of full-batch updates of W.
    weight_norm, weight_norm_order
        ``W <- sqrt(h d) W / ||W||_F``, before each gradient (default, the authors' order: every recorded
        ``W_t`` is the raw post-update matrix) or after each update.  Both give the same normalized iterates; the
        recorded matrices differ by a scalar factor, so scale-free spectral numbers agree and the losses do not.
    readout_scale
        The convention of :attr:`Trajectory.train_loss`, ``test_loss`` and ``kta`` (both are recorded in
        :attr:`Trajectory.readouts`).
    steplr_gamma, bias_correction
        The learning rate is multiplied by ``gamma`` after every step; Adam's bias correction.
    seed
        Seeds the data and the initialization by independent sub-streams (one seed: same data and ``W0``).
    record_every, keep_weights, record_initial
        Metrics at steps ``0, k, 2k, ...`` and the last; the steps whose ``W_t`` is kept; whether step 0 is recorded.
    record_esd
        Record the full ESD and the power-law exponents (else empty arrays and NaN).
    stop_alpha_hill
        Stop after the first recorded step whose PL_Alpha_Hill is below this (``None``: every step runs): a run
        that asks only when its ESD first reaches a level need not train past it.  Needs ``record_esd``.

    Examples
    --------
    >>> from htlib.two_layer import TwoLayerConfig
    >>> cfg = TwoLayerConfig(n=40, d=20, h=30, n_test=10, steps=5, record_every=2)
    >>> cfg.recorded_steps()                  # every 2nd step and the last
    [0, 2, 4, 5]
    >>> TwoLayerConfig(steplr_gamma=2.0)
    Traceback (most recent call last):
    ...
    ValueError: steplr_gamma must be in (0, 1], got 2.0
    """

    n: int = 2000
    d: int = 1000
    h: int = 1500
    n_test: int = 200
    rho_e: float = 0.3
    lam: float = 0.01
    optimizer: str = "adam"
    eta: float = 1.0
    steps: int = 1
    weight_norm: bool = False
    weight_norm_order: str = "before_forward"
    readout_scale: str = "d"
    steplr_gamma: float = 1.0
    bias_correction: bool = True
    seed: int = 0
    device: str = "cpu"
    dtype: str = "float32"
    record_every: int = 1
    keep_weights: tuple[int, ...] = ()
    record_initial: bool = True
    record_esd: bool = True
    stop_alpha_hill: float | None = None

    def __post_init__(self) -> None:
        for name in ("n", "d", "h", "n_test"):
            check_int(name, getattr(self, name), 1)
        check_int("steps", self.steps, 0)
        check_int("seed", self.seed, 0)
        check_int("record_every", self.record_every, 1)
        check_float("rho_e", self.rho_e, low=0.0, strict=False)
        check_float("lam", self.lam, low=0.0)
        check_float("eta", self.eta, low=0.0)
        check_float("steplr_gamma", self.steplr_gamma, low=0.0)
        if self.steplr_gamma > 1:
            raise ValueError(f"steplr_gamma must be in (0, 1], got {self.steplr_gamma!r}")
        check_choice("optimizer", self.optimizer, _OPTIMIZERS)
        check_choice("weight_norm_order", self.weight_norm_order, WEIGHT_NORM_ORDERS)
        check_choice("readout_scale", self.readout_scale, READOUT_SCALES)
        check_choice("dtype", self.dtype, ("float32", "float64"))
        if not isinstance(self.device, str) or not (self.device == "cpu" or self.device.startswith("cuda")):
            raise ValueError(f"device must be 'cpu' or 'cuda[:k]', got {self.device!r}")
        for name in ("weight_norm", "bias_correction", "record_initial", "record_esd"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if self.stop_alpha_hill is not None:
            check_float("stop_alpha_hill", self.stop_alpha_hill, low=0.0)
            if not self.record_esd:
                raise ValueError("stop_alpha_hill needs record_esd=True: the stop reads the recorded PL_Alpha_Hill")
        if not isinstance(self.keep_weights, tuple):
            raise ValueError(f"keep_weights must be a tuple of ints, got {self.keep_weights!r}")
        for t in self.keep_weights:
            if not isinstance(t, (int, np.integer)) or isinstance(t, bool) or not 0 <= t <= self.steps:
                raise ValueError(f"keep_weights entries must be integers in [0, steps={self.steps}], got {t!r}")

    def recorded_steps(self) -> list[int]:
        """The steps at which :func:`train` records metrics."""
        steps = list(range(0, self.steps + 1, self.record_every))
        if steps[-1] != self.steps:
            steps.append(self.steps)
        if not self.record_initial and self.steps > 0:
            steps = steps[1:]
        return steps


@dataclass(frozen=True)
class Trajectory:
    """What :func:`train` records.  Arrays are indexed like ``steps`` (recording stops at a divergence).

    ``train_loss``, ``test_loss``, ``kta``: probe and test MSE after the ridge readout and the probe features' KTA,
    under ``config.readout_scale`` (``readouts``: ``{scale: {metric: array}}`` under both); ``sim``: ``|v1ᵀ beta*|``;
    ``esd``: ascending eigenvalues of ``W_tᵀW_t``; ``weights``: ``{t: W_t}`` for ``keep_weights``; ``lr``: per step;
    ``diverged_at``: the first non-finite step or ``None``; ``update_loss``: the MSE the updates minimise.

    Attributes
    ----------
    config : TwoLayerConfig
        The run.
    steps : numpy.ndarray of int
        The recorded steps.
    train_loss, test_loss, kta : numpy.ndarray
        Probe and test MSE after the ridge readout, and the probe features' KTA, under ``config.readout_scale``.
    sim : numpy.ndarray
        ``|v1ᵀ beta*|``.
    alpha_hill, alpha_ks : numpy.ndarray
        Power-law exponents of the ESD (NaN without ``record_esd``).
    esd : tuple of numpy.ndarray
        Ascending eigenvalues of ``W_tᵀW_t`` at each recorded step.
    weights : dict of int to numpy.ndarray
        ``W_t`` for the steps of ``keep_weights``.
    lr : numpy.ndarray
        Learning rate of each step.
    diverged_at : int or None
        The first non-finite step.
    lambda_max, update_loss : numpy.ndarray
        ``||W_t||_2^2`` and the MSE the updates minimise.
    readouts : dict
        ``{scale: {metric: array}}`` under both readout conventions.

    Examples
    --------
    >>> from htlib.two_layer import TwoLayerConfig, train
    >>> traj = train(TwoLayerConfig(n=40, d=20, h=30, n_test=10, steps=3, keep_weights=(0, 1), dtype="float64"))
    >>> traj.steps.tolist(), traj.diverged_at, traj.esd[0].shape, traj.update(0).shape
    ([0, 1, 2, 3], None, (20,), (30, 20))
    >>> traj.metric("test_loss@sqrt_d").shape
    (4,)
    """

    config: TwoLayerConfig
    steps: np.ndarray
    train_loss: np.ndarray
    test_loss: np.ndarray
    kta: np.ndarray
    sim: np.ndarray
    alpha_hill: np.ndarray
    alpha_ks: np.ndarray
    esd: tuple
    weights: dict
    lr: np.ndarray
    diverged_at: int | None
    lambda_max: np.ndarray = field(default_factory=lambda: np.zeros(0))
    update_loss: np.ndarray = field(default_factory=lambda: np.zeros(0))
    readouts: dict = field(default_factory=dict)

    def metric(self, name: str) -> np.ndarray:
        """A recorded metric by name; ``"<metric>@<scale>"`` (e.g. ``"test_loss@sqrt_d"``) picks
        a readout metric under a given convention, a plain name the config's convention."""
        if "@" in name:
            base, scale = name.split("@", 1)
            if base not in READOUT_METRICS or scale not in READOUT_SCALES:
                raise ValueError(f"metric {name!r}: expected one of {READOUT_METRICS} '@' one of {READOUT_SCALES}")
            return self.readouts[scale][base]
        if not hasattr(self, name) or name in ("config", "esd", "weights", "readouts"):
            raise ValueError(f"unknown metric {name!r}")
        return getattr(self, name)

    def update(self, t: int) -> np.ndarray:
        """The update ``M_t = W_{t+1} - W_t`` (both steps must be in ``keep_weights``)."""
        if t not in self.weights or t + 1 not in self.weights:
            raise ValueError(f"update({t}) needs steps {t} and {t + 1} in keep_weights, kept: {sorted(self.weights)}")
        return self.weights[t + 1] - self.weights[t]

    def at(self, t: int) -> dict:
        """The recorded metrics of step ``t`` as a dict."""
        idx = np.flatnonzero(self.steps == t)
        if idx.size == 0:
            raise ValueError(f"step {t} was not recorded; recorded steps: {self.steps.tolist()}")
        i = int(idx[0])
        return {"train_loss": float(self.train_loss[i]), "test_loss": float(self.test_loss[i]),
                "kta": float(self.kta[i]), "sim": float(self.sim[i]), "alpha_hill": float(self.alpha_hill[i]),
                "alpha_ks": float(self.alpha_ks[i]), "lambda_max": float(self.lambda_max[i]),
                "update_loss": float(self.update_loss[i]),
                **{f"{m}@{s}": float(self.readouts[s][m][i]) for s in self.readouts for m in READOUT_METRICS}}


def make_data(config: TwoLayerConfig) -> SingleIndexData:
    """The exact data :func:`train` uses for ``config``.

    Parameters
    ----------
    config : TwoLayerConfig
        Its ``n``, ``d``, ``n_test``, ``rho_e``, ``seed``, ``dtype`` and ``device`` are used.

    Returns
    -------
    SingleIndexData
        Train, probe and test sets and the teacher direction.

    Examples
    --------
    >>> import torch
    >>> from htlib.two_layer import TwoLayerConfig, make_data
    >>> cfg = TwoLayerConfig(n=40, d=20, h=30, n_test=10, steps=3, dtype="float64")
    >>> data = make_data(cfg)
    >>> tuple(data.X_train.shape), tuple(data.y_probe.shape), tuple(data.X_test.shape), data.X_train.dtype
    ((40, 20), (40,), (10, 20), torch.float64)
    >>> round(float(torch.linalg.vector_norm(data.beta)), 6)
    1.0
    """
    return make_single_index_data(config.n, config.d, config.n_test, config.rho_e, seed=config.seed, dtype=config.dtype,
                                  device=config.device)


def init_weights(config: TwoLayerConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """``W0`` (h x d) and ``a0`` (h,), i.i.d. ``N(0, 1)``, drawn in float64 from the config's seed
    (a sub-stream independent of the data) and cast to the config's dtype and device.

    Parameters
    ----------
    config : TwoLayerConfig
        Its ``h``, ``d``, ``seed``, ``dtype`` and ``device`` are used.

    Returns
    -------
    tuple of torch.Tensor
        ``W0`` of shape ``(h, d)`` and ``a0`` of shape ``(h,)``.

    Examples
    --------
    >>> import torch
    >>> from htlib.two_layer import TwoLayerConfig, init_weights
    >>> cfg = TwoLayerConfig(n=40, d=20, h=30, n_test=10, steps=3, dtype="float64")
    >>> W, a = init_weights(cfg)
    >>> tuple(W.shape), tuple(a.shape), bool(torch.equal(W, init_weights(cfg)[0]))    # deterministic under the seed
    ((30, 20), (30,), True)
    """
    gen = torch.Generator().manual_seed(derived_seed(config.seed, 100))
    W = torch.randn(config.h, config.d, generator=gen, dtype=torch.float64)
    a = torch.randn(config.h, generator=gen, dtype=torch.float64)
    dev, dt = resolve_device(config.device), resolve_dtype(config.dtype)
    return W.to(device=dev, dtype=dt), a.to(device=dev, dtype=dt)


def student_features(W: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """Post-activation features ``Z = tanh(X Wᵀ / sqrt(d)) / sqrt(h)``, shape ``(n, h)``.

    Parameters
    ----------
    W : torch.Tensor, shape (h, d)
        First layer.
    X : torch.Tensor, shape (n, d)
        Inputs.

    Returns
    -------
    torch.Tensor, shape (n, h)
        The features.

    Examples
    --------
    >>> import math, torch
    >>> from htlib.two_layer import student_features
    >>> g = torch.Generator().manual_seed(0)
    >>> W, X = torch.randn(30, 20, generator=g), torch.randn(40, 20, generator=g)
    >>> Z = student_features(W, X)
    >>> tuple(Z.shape), bool(Z.abs().max() <= 1 / math.sqrt(30))     # tanh is bounded by 1
    ((40, 30), True)
    """
    h, d = W.shape
    Z = X @ W.T
    if torch.is_grad_enabled() and (W.requires_grad or X.requires_grad):  # autograd-safe path
        return torch.tanh(Z / math.sqrt(d)) / math.sqrt(h)
    return Z.mul_(1.0 / math.sqrt(d)).tanh_().mul_(1.0 / math.sqrt(h))


def readout_features(W: torch.Tensor, X: torch.Tensor, readout_scale: str = "d") -> torch.Tensor:
    """Readout features ``tanh(X Wᵀ / s) / sqrt(h)``, ``s = d`` (``"d"``) or ``sqrt(d)`` (``"sqrt_d"``).

    ``"sqrt_d"`` equals :func:`student_features` (the model the updates train); ``"d"`` is
    what the authors' evaluation code fed to the ridge readout, the losses and the KTA.

    Parameters
    ----------
    W : torch.Tensor, shape (h, d)
        First layer.
    X : torch.Tensor, shape (n, d)
        Inputs.
    readout_scale : {"d", "sqrt_d"}, default "d"
        Feature convention.

    Returns
    -------
    torch.Tensor, shape (n, h)
        The features.

    Examples
    --------
    >>> import torch
    >>> from htlib.two_layer import readout_features, student_features
    >>> g = torch.Generator().manual_seed(0)
    >>> W, X = torch.randn(30, 20, generator=g), torch.randn(40, 20, generator=g)
    >>> bool(torch.allclose(readout_features(W, X, "sqrt_d"), student_features(W, X)))
    True
    >>> bool(readout_features(W, X, "d").abs().max() < student_features(W, X).abs().max())   # d > sqrt(d): smaller
    True
    """
    check_choice("readout_scale", readout_scale, READOUT_SCALES)
    h, d = W.shape
    return _features_of(X @ W.T, readout_scale, h, d)


def _features_of(P: torch.Tensor, readout_scale: str, h: int, d: int) -> torch.Tensor:
    """:func:`readout_features` from the product ``P = X Wᵀ`` (which both conventions share)."""
    scale = float(d) if readout_scale == "d" else math.sqrt(d)
    return torch.tanh(P / scale) / math.sqrt(h)


def student_output(W: torch.Tensor, a: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """``f(X) = tanh(X Wᵀ/sqrt(d)) a / sqrt(h)``, shape ``(n,)``.

    Parameters
    ----------
    W : torch.Tensor, shape (h, d)
        First layer.
    a : torch.Tensor, shape (h,)
        Readout.
    X : torch.Tensor, shape (n, d)
        Inputs.

    Returns
    -------
    torch.Tensor, shape (n,)
        The outputs.

    Examples
    --------
    >>> import torch
    >>> from htlib.two_layer import student_features, student_output
    >>> g = torch.Generator().manual_seed(0)
    >>> W, a, X = torch.randn(30, 20, generator=g), torch.randn(30, generator=g), torch.randn(40, 20, generator=g)
    >>> bool(torch.allclose(student_output(W, a, X), student_features(W, X) @ a))
    True
    """
    return student_features(W, X) @ a


def student_mse(W: torch.Tensor, a: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The loss of the updates, the plain mean squared error ``(1/n) sum_i (y_i - f(x_i))^2``
    (no 1/2, as in the authors' code; :func:`htlib.linear` losses carry the 1/2).

    Parameters
    ----------
    W : torch.Tensor, shape (h, d)
        First layer.
    a : torch.Tensor, shape (h,)
        Readout.
    X : torch.Tensor, shape (n, d)
        Inputs.
    y : torch.Tensor, shape (n,)
        Labels.

    Returns
    -------
    torch.Tensor
        The scalar loss.

    Examples
    --------
    >>> import torch
    >>> from htlib.two_layer import student_mse, student_output
    >>> g = torch.Generator().manual_seed(0)
    >>> W, a, X = torch.randn(30, 20, generator=g), torch.randn(30, generator=g), torch.randn(40, 20, generator=g)
    >>> y = student_output(W, a, X)
    >>> round(float(student_mse(W, a, X, y)), 6), round(float(student_mse(W, a, X, y + 2.0)), 4)   # no 1/2: (2)**2
    (0.0, 4.0)
    """
    return torch.mean((student_output(W, a, X) - y) ** 2)


def full_batch_gradient(W: torch.Tensor, a: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Closed-form ``d(student_mse)/dW``:

    ``G = (2 / (n sqrt(h d))) [ (r aᵀ) ∘ tanh'(X Wᵀ/sqrt(d)) ]ᵀ X``,  ``r = f(X) - y``,

    i.e. ``-2`` times the paper's ``G_0`` expression of §4.2 (the paper's loss has a 1/2
    and its displayed formula is the negative gradient).  Two GEMMs of ``2 n h d`` FLOPs
    each and ``O(n h)`` element-wise work.

    Parameters
    ----------
    W : torch.Tensor, shape (h, d)
        First layer.
    a : torch.Tensor, shape (h,)
        Readout (frozen).
    X : torch.Tensor, shape (n, d)
        Inputs.
    y : torch.Tensor, shape (n,)
        Labels.

    Returns
    -------
    torch.Tensor, shape (h, d)
        The gradient of :func:`student_mse` in ``W``.

    Examples
    --------
    >>> import torch
    >>> from htlib.two_layer import full_batch_gradient, student_mse
    >>> g = torch.Generator().manual_seed(0)
    >>> W = torch.randn(30, 20, generator=g, dtype=torch.float64)
    >>> a, X, y = (torch.randn(*s, generator=g, dtype=torch.float64) for s in [(30,), (40, 20), (40,)])
    >>> Wg = W.clone().requires_grad_(True)
    >>> (auto,) = torch.autograd.grad(student_mse(Wg, a, X, y), Wg)        # autograd agrees with the closed form
    >>> bool(torch.allclose(full_batch_gradient(W, a, X, y), auto))
    True
    """
    n, d = X.shape
    h = W.shape[0]
    S = (X @ W.T).mul_(1.0 / math.sqrt(d)).tanh_()  # (n, h)
    r = S @ a
    r.mul_(1.0 / math.sqrt(h)).sub_(y)  # f - y
    # S <- (1 - S^2) * r[:, None]; the factor (c a)[:, None] is applied to the h x d product
    c = 2.0 / (n * math.sqrt(h * d))
    S.square_().sub_(1.0).mul_(-r[:, None])
    return (S.T @ X).mul_((c * a)[:, None])


@dataclass(frozen=True)
class AdamState:
    """Adam's moving averages ``m`` (first moment), ``v`` (second moment) and step count ``t``.

    Attributes
    ----------
    m, v : torch.Tensor
        First and second moment estimates.
    t : int
        Steps taken.

    Examples
    --------
    >>> import torch
    >>> from htlib.two_layer import AdamState, adam_direction
    >>> state = AdamState.zeros_like(torch.zeros(2, 3))
    >>> _, state = adam_direction(torch.ones(2, 3), state)
    >>> state.t, round(float(state.m[0, 0]), 4), round(float(state.v[0, 0]), 4)    # 1 - beta1, 1 - beta2
    (1, 0.1, 0.001)
    """

    m: torch.Tensor
    v: torch.Tensor
    t: int = 0

    @staticmethod
    def zeros_like(W: torch.Tensor) -> "AdamState":
        return AdamState(torch.zeros_like(W), torch.zeros_like(W), 0)


def adam_direction(G: torch.Tensor, state: AdamState, *, betas: tuple[float, float] = ADAM_BETAS, eps: float = ADAM_EPS,
                   bias_correction: bool = True) -> tuple[torch.Tensor, AdamState]:
    """The FB-Adam direction ``G~`` (the update is ``-lr * G~``) and the new state.

    ``m <- b1 m + (1-b1) G``, ``v <- b2 v + (1-b2) G∘G``; with bias correction (PyTorch's
    ``torch.optim.Adam`` arithmetic) ``G~ = m / (1-b1^t) / (sqrt(v)/sqrt(1-b2^t) + eps)``,
    without it (paper eq. (2)) ``G~ = m / (sqrt(v) + eps)``.

    Parameters
    ----------
    G : torch.Tensor
        The gradient.
    state : AdamState
        The moments before this step.
    betas : tuple of float, default ADAM_BETAS
        Decay factors ``(b1, b2)``.
    eps : float, default ADAM_EPS
        Denominator constant.
    bias_correction : bool, default True
        PyTorch's bias correction (False: the paper's eq. (2)).

    Returns
    -------
    tuple
        The direction ``G~`` (same shape as ``G``) and the new :class:`AdamState`.

    Examples
    --------
    >>> import torch
    >>> from htlib.two_layer import AdamState, adam_direction
    >>> G = torch.tensor([[0.5, -2.0]], dtype=torch.float64)
    >>> d, _ = adam_direction(G, AdamState.zeros_like(G))           # the first step is sign(G)
    >>> d.round(decimals=4).tolist()
    [[1.0, -1.0]]
    >>> d, _ = adam_direction(G, AdamState.zeros_like(G), bias_correction=False)   # 0.1 / sqrt(0.001)
    >>> round(float(d[0, 0]), 3)
    3.162
    """
    b1, b2 = betas
    t = state.t + 1
    m = state.m * b1 + G * (1 - b1)
    v = state.v * b2 + G * G * (1 - b2)
    if bias_correction:
        bc1 = 1 - b1**t
        bc2 = 1 - b2**t
        direction = (m / bc1) / (v.sqrt() / math.sqrt(bc2) + eps)
    else:
        direction = m / (v.sqrt() + eps)
    return direction, AdamState(m, v, t)


def gd_step(W: torch.Tensor, G: torch.Tensor, lr: float) -> torch.Tensor:
    """``W - lr G``.

    Parameters
    ----------
    W : torch.Tensor
        The weights.
    G : torch.Tensor
        The gradient.
    lr : float
        Learning rate.

    Returns
    -------
    torch.Tensor
        The updated weights.

    Examples
    --------
    >>> import torch
    >>> from htlib.two_layer import gd_step
    >>> gd_step(torch.tensor([1.0, 2.0]), torch.tensor([1.0, -1.0]), 0.5).tolist()
    [0.5, 2.5]
    """
    return W - lr * G


def adam_step(W: torch.Tensor, G: torch.Tensor, state: AdamState, lr: float, *, betas: tuple[float, float] = ADAM_BETAS,
              eps: float = ADAM_EPS, bias_correction: bool = True) -> tuple[torch.Tensor, AdamState]:
    """One FB-Adam step ``W - lr G~`` (see :func:`adam_direction`) and the new state.

    Parameters
    ----------
    W : torch.Tensor
        The weights.
    G : torch.Tensor
        The gradient.
    state : AdamState
        The moments before this step.
    lr : float
        Learning rate.
    betas, eps, bias_correction
        As for :func:`adam_direction`.

    Returns
    -------
    tuple
        The updated weights and the new :class:`AdamState`.

    Examples
    --------
    >>> import torch
    >>> from htlib.two_layer import AdamState, adam_step
    >>> W, G = torch.zeros(1, 2, dtype=torch.float64), torch.tensor([[3.0, -0.1]], dtype=torch.float64)
    >>> W1, state = adam_step(W, G, AdamState.zeros_like(W), lr=0.5)    # each entry moves by lr against its sign
    >>> W1.round(decimals=4).tolist(), state.t
    ([[-0.5, 0.5]], 1)
    """
    direction, state = adam_direction(G, state, betas=betas, eps=eps, bias_correction=bias_correction)
    return W - lr * direction, state


def normalize_weights(W: torch.Tensor) -> torch.Tensor:
    """Weight normalization ``sqrt(h d) W / ||W||_F``.

    Parameters
    ----------
    W : torch.Tensor, shape (h, d)
        The weights.

    Returns
    -------
    torch.Tensor
        ``W`` rescaled to ``||W||_F^2 = h d``.

    Examples
    --------
    >>> import torch
    >>> from htlib.two_layer import normalize_weights
    >>> W = normalize_weights(torch.full((3, 4), 5.0, dtype=torch.float64))
    >>> round(float((W ** 2).sum()), 6), round(float(W[0, 0]), 6)    # h d = 12: every entry 1
    (12.0, 1.0)
    """
    h, d = W.shape
    return W * (math.sqrt(h * d) / torch.linalg.matrix_norm(W))


def first_update(config: TwoLayerConfig) -> torch.Tensor:
    """The first update direction at unit learning rate for ``config``'s data and init:
    ``G_0`` for GD, ``G~_0`` for FB-Adam (so ``W_1 = W_0 - eta * first_update``).

    Parameters
    ----------
    config : TwoLayerConfig
        The run (its ``optimizer`` and ``bias_correction`` choose the direction).

    Returns
    -------
    torch.Tensor, shape (h, d)
        The first update direction.

    Examples
    --------
    >>> import dataclasses, torch
    >>> from htlib.two_layer import TwoLayerConfig, first_update, full_batch_gradient, init_weights, make_data
    >>> cfg = TwoLayerConfig(n=40, d=20, h=30, n_test=10, steps=3, dtype="float64")
    >>> U = first_update(cfg)                                  # FB-Adam: about sign(G_0)
    >>> round(float(U.abs().mean()), 2)
    1.0
    >>> gd = dataclasses.replace(cfg, optimizer="gd")
    >>> W, a = init_weights(gd)
    >>> data = make_data(gd)
    >>> bool(torch.allclose(first_update(gd), full_batch_gradient(W, a, data.X_train, data.y_train)))
    True
    """
    data = make_data(config)
    W, a = init_weights(config)
    G = full_batch_gradient(W, a, data.X_train, data.y_train)
    if config.optimizer == "gd":
        return G
    direction, _ = adam_direction(G, AdamState.zeros_like(W), bias_correction=config.bias_correction)
    return direction


def ridge_solve(gram: torch.Tensor, Zty: torch.Tensor, lam: float, n: int) -> torch.Tensor:
    """The ridge readout from the Gram: ``(gram + (lam/h) n I)^{-1} Zty`` with ``gram = ZᵀZ``,
    ``Zty = Zᵀy`` (float64) for ``n`` samples; Cholesky, LU if the shifted Gram is not SPD.
    The one ridge solve of the package (:func:`ridge_readout`, :func:`readout_metrics` and
    :func:`ridge_losses` call it).

    Parameters
    ----------
    gram : torch.Tensor, shape (h, h)
        ``ZᵀZ``, float64.
    Zty : torch.Tensor, shape (h,)
        ``Zᵀy``, float64.
    lam : float
        Ridge constant.
    n : int
        Number of samples.

    Returns
    -------
    torch.Tensor, shape (h,)
        The readout.

    Examples
    --------
    >>> import torch
    >>> from htlib.two_layer import ridge_solve
    >>> G, b = torch.eye(2, dtype=torch.float64) * 3.0, torch.tensor([4.0, 8.0], dtype=torch.float64)
    >>> ridge_solve(G, b, lam=0.5, n=4).round(decimals=6).tolist()     # (3 + 0.5 * 4 / 2)**-1 * b
    [1.0, 2.0]
    """
    h = gram.shape[0]
    A = gram.clone()
    A.diagonal().add_(lam * n / h)
    rhs = Zty.unsqueeze(1)
    L, info = torch.linalg.cholesky_ex(A)
    if int(info) == 0:
        return torch.cholesky_solve(rhs, L).squeeze(1)
    return torch.linalg.solve(A, rhs).squeeze(1)


def ridge_readout(Z: torch.Tensor, y: torch.Tensor, lam: float) -> torch.Tensor:
    """Ridge readout ``a = (ZᵀZ + (lam/h) n I_h)^{-1} Zᵀ y``, the minimiser of
    ``(1/n)||y - Z a||^2 + (lam/h)||a||^2``; solved in float64 by Cholesky, returned in float64.

    Parameters
    ----------
    Z : torch.Tensor, shape (n, h)
        Features.
    y : torch.Tensor, shape (n,)
        Targets.
    lam : float
        Ridge constant, ``> 0``.

    Returns
    -------
    torch.Tensor, shape (h,)
        The readout, float64.

    Examples
    --------
    >>> import torch
    >>> from htlib.two_layer import ridge_readout
    >>> g = torch.Generator().manual_seed(0)
    >>> Z, y = torch.randn(40, 10, generator=g, dtype=torch.float64), torch.randn(40, generator=g, dtype=torch.float64)
    >>> a = ridge_readout(Z, y, lam=0.5)
    >>> lhs = (Z.T @ Z + 0.5 * 40 / 10 * torch.eye(10, dtype=torch.float64)) @ a   # the normal equations
    >>> bool(torch.allclose(lhs, Z.T @ y))
    True
    """
    check_float("lam", lam, low=0.0)
    n, h = Z.shape
    Z64 = Z.to(torch.float64)
    return ridge_solve(gram(Z64), Z64.T @ y.to(torch.float64), lam, n)


def gram(Z: torch.Tensor) -> torch.Tensor:
    """``ZᵀZ`` in float64 for a float64 ``Z``.

    On the CPU by BLAS ``dsyrk`` (one triangle: half the multiply-adds of the general product, which was most of a
    recorded training step), then mirrored; elsewhere the plain product.  Agrees with ``Z.T @ Z`` to rounding.

    Parameters
    ----------
    Z : torch.Tensor, shape (n, h)
        Features.

    Returns
    -------
    torch.Tensor, shape (h, h)
        ``ZᵀZ``.

    Examples
    --------
    >>> Z = torch.arange(6, dtype=torch.float64).reshape(3, 2)
    >>> gram(Z)
    tensor([[20., 26.],
            [26., 35.]], dtype=torch.float64)
    """
    if Z.dtype != torch.float64 or Z.device.type != "cpu" or Z.ndim != 2 or Z.requires_grad:
        return Z.T @ Z
    from scipy.linalg.blas import dsyrk

    # Z is n x h, C-ordered: its transpose is an F-ordered h x n array, so syrk reads it without a copy.
    upper = dsyrk(1.0, Z.numpy().T, trans=0, lower=0)
    full = np.triu(upper) + np.triu(upper, 1).T
    return torch.from_numpy(full)


def _readout(Pp: torch.Tensor, Pt: torch.Tensor, data: SingleIndexData, lam: float, readout_scale: str, h: int,
             d: int) -> dict:
    """:func:`readout_metrics` from the products ``X_probe Wᵀ`` and ``X_test Wᵀ`` (shared by both conventions)."""
    Zp = _features_of(Pp, readout_scale, h, d).to(torch.float64)
    yp = data.y_probe.to(torch.float64)
    n = Zp.shape[0]
    G = gram(Zp)
    Zty = Zp.T @ yp
    a = ridge_solve(G, Zty, lam, n)
    train_loss = torch.mean((Zp @ a - yp) ** 2).item()
    Zt = _features_of(Pt, readout_scale, h, d).to(torch.float64)
    test_loss = torch.mean((Zt @ a - data.y_test.to(torch.float64)) ** 2).item()
    kta = (torch.dot(Zty, Zty) / (torch.linalg.matrix_norm(G) * torch.dot(yp, yp))).item()
    return {"train_loss": train_loss, "test_loss": test_loss, "kta": kta}


def readout_metrics(W: torch.Tensor, data: SingleIndexData, lam: float, readout_scale: str = "d") -> dict:
    """Fit the ridge readout on the probe set and report ``{"train_loss", "test_loss", "kta"}``
    (probe-set MSE, test-set MSE, KTA of the probe features), as Python floats, with the
    features :func:`readout_features` of convention ``readout_scale``.

    The features are computed in W's dtype, everything after in float64.  The KTA is
    ``||Zᵀy||^2 / (||ZᵀZ||_F ||y||^2)`` (the definition of
    :func:`htlib.spectra.kernel_target_alignment`), read off the Gram matrix (:func:`gram`) the ridge
    solve needs anyway, so the ``h x h`` Gram is formed once.

    Parameters
    ----------
    W : torch.Tensor, shape (h, d)
        First layer.
    data : SingleIndexData
        Probe and test sets.
    lam : float
        Ridge constant, ``> 0``.
    readout_scale : {"d", "sqrt_d"}, default "d"
        Feature convention.

    Returns
    -------
    dict
        ``{"train_loss", "test_loss", "kta"}`` as floats.

    Examples
    --------
    >>> from htlib.two_layer import TwoLayerConfig, init_weights, make_data, readout_metrics
    >>> cfg = TwoLayerConfig(n=40, d=20, h=30, n_test=10, steps=3, dtype="float64")
    >>> m = readout_metrics(init_weights(cfg)[0], make_data(cfg), lam=0.01)
    >>> sorted(m), 0.0 <= m["kta"] <= 1.0
    (['kta', 'test_loss', 'train_loss'], True)
    """
    return readout_metrics_all(W, data, lam, (readout_scale,))[readout_scale]


def readout_metrics_all(W: torch.Tensor, data: SingleIndexData, lam: float,
                        readout_scales=READOUT_SCALES) -> dict[str, dict]:
    """:func:`readout_metrics` under each convention of ``readout_scales`` (``{scale: metrics}``), with the
    products ``X Wᵀ`` of the probe and test sets formed once for all of them (the same numbers, bit for bit).

    Parameters
    ----------
    W : torch.Tensor, shape (h, d)
        First layer.
    data : SingleIndexData
        Probe and test sets.
    lam : float
        Ridge constant, ``> 0``.
    readout_scales : sequence of str, default READOUT_SCALES
        Feature conventions.

    Returns
    -------
    dict
        ``{scale: metrics}``.

    Examples
    --------
    >>> from htlib.two_layer import TwoLayerConfig, init_weights, make_data, readout_metrics, readout_metrics_all
    >>> cfg = TwoLayerConfig(n=40, d=20, h=30, n_test=10, steps=3, dtype="float64")
    >>> W, data = init_weights(cfg)[0], make_data(cfg)
    >>> both = readout_metrics_all(W, data, 0.01)
    >>> sorted(both), both["sqrt_d"] == readout_metrics(W, data, 0.01, "sqrt_d")
    (['d', 'sqrt_d'], True)
    """
    check_float("lam", lam, low=0.0)
    for s in readout_scales:
        check_choice("readout_scale", s, READOUT_SCALES)
    h, d = W.shape
    Pp, Pt = data.X_probe @ W.T, data.X_test @ W.T
    return {s: _readout(Pp, Pt, data, lam, s, h, d) for s in readout_scales}


def ridge_losses(W: torch.Tensor, data: SingleIndexData, lams, readout_scale: str = "d") -> dict[float, tuple[float, float]]:
    """Probe (train) and test MSE of the ridge readout of ``W`` for several ridge constants.

    The readout of :func:`readout_metrics` (:func:`ridge_solve` on the probe set, float64,
    features :func:`readout_features` of convention ``readout_scale``), with the ``h x h``
    Gram formed once and only the solve repeated per ``lam``.  Returns
    ``{lam: (train_loss, test_loss)}``.

    Parameters
    ----------
    W : torch.Tensor, shape (h, d)
        First layer.
    data : SingleIndexData
        Probe and test sets.
    lams : sequence of float
        Ridge constants, each ``> 0``.
    readout_scale : {"d", "sqrt_d"}, default "d"
        Feature convention.

    Returns
    -------
    dict
        ``{lam: (train_loss, test_loss)}``.

    Examples
    --------
    >>> from htlib.two_layer import TwoLayerConfig, init_weights, make_data, ridge_losses
    >>> cfg = TwoLayerConfig(n=40, d=20, h=30, n_test=10, steps=3, dtype="float64")
    >>> out = ridge_losses(init_weights(cfg)[0], make_data(cfg), [0.01, 1.0, 100.0])
    >>> train = [out[lam][0] for lam in (0.01, 1.0, 100.0)]
    >>> sorted(out), train == sorted(train)            # the fit's own loss grows with the penalty
    ([0.01, 1.0, 100.0], True)
    """
    lams = [check_float("lams", lam, low=0.0) for lam in lams]
    Zp = readout_features(W, data.X_probe, readout_scale).to(torch.float64)
    Zt = readout_features(W, data.X_test, readout_scale).to(torch.float64)
    yp = data.y_probe.to(torch.float64)
    yt = data.y_test.to(torch.float64)
    G = gram(Zp)
    Zty = Zp.T @ yp
    out = {}
    for lam in lams:
        a = ridge_solve(G, Zty, lam, Zp.shape[0])
        out[lam] = (torch.mean((Zp @ a - yp) ** 2).item(), torch.mean((Zt @ a - yt) ** 2).item())
    return out


def spectral_norm(M: torch.Tensor | np.ndarray, *, tol: float = 1e-12) -> float:
    """Operator norm ``||M||_2`` (largest singular value) in float64.

    Small matrices (``min(shape) <= 64``) use a dense SVD; larger ones ARPACK
    (``scipy.sparse.linalg.svds``, ``k=1``) from a fixed start vector, so the result is
    deterministic and costs a few dozen matrix-vector products instead of a full SVD.

    Parameters
    ----------
    M : torch.Tensor or numpy.ndarray
        A finite, non-empty matrix.
    tol : float, default 1e-12
        ARPACK tolerance.

    Returns
    -------
    float
        The largest singular value.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.two_layer import spectral_norm
    >>> round(spectral_norm(np.diag([3.0, -1.0])), 6)
    3.0
    >>> A = np.random.default_rng(0).standard_normal((80, 70))                   # the ARPACK route
    >>> bool(np.isclose(spectral_norm(A), np.linalg.norm(A, 2)))
    True
    """
    import scipy.sparse.linalg

    A = to_numpy(M, "M")
    if A.ndim != 2 or A.size == 0:
        raise ValueError(f"M must be a non-empty 2-D matrix, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError("M must contain only finite values")
    if min(A.shape) <= 64:
        return float(np.linalg.svd(A, compute_uv=False)[0])
    v0 = np.linspace(1.0, 2.0, min(A.shape))
    s = scipy.sparse.linalg.svds(A, k=1, tol=tol, v0=v0, return_singular_vectors=False, maxiter=10_000)
    return float(s[0])


def top_eigenpair(W: torch.Tensor | np.ndarray) -> tuple[float, np.ndarray]:
    """Largest eigenvalue of ``WᵀW`` (``||W||_2^2``) and its unit eigenvector ``v1`` (the top right
    singular vector of W), from the float64 ``d x d`` Gram by LAPACK's ``syevr`` (one eigenpair).

    Parameters
    ----------
    W : torch.Tensor or numpy.ndarray, shape (h, d)
        A matrix.

    Returns
    -------
    tuple
        The eigenvalue (float) and the unit eigenvector (``(d,)`` array).

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.two_layer import top_eigenpair
    >>> lam, v = top_eigenpair(np.array([[3.0, 0.0], [0.0, 1.0], [0.0, 0.0]]))
    >>> round(lam, 6), np.abs(v).round(6).tolist()
    (9.0, [1.0, 0.0])
    """
    import scipy.linalg

    A = to_numpy(W, "W")
    d = A.shape[1]
    vals, vecs = scipy.linalg.eigh(A.T @ A, subset_by_index=[d - 1, d - 1], check_finite=False)
    return float(vals[0]), vecs[:, 0]


def _record(W: torch.Tensor, a: torch.Tensor, data: SingleIndexData, config: TwoLayerConfig) -> dict | None:
    """Every metric of one recorded step; ``None`` when any of them is non-finite."""
    from htlib import spectra

    if not bool(torch.isfinite(W).all()):
        return None
    W64 = W.detach().to(device="cpu", dtype=torch.float64)
    if not math.isfinite(float(torch.sum(W64 * W64))):  # finite W whose Gram overflows
        return None
    readouts = readout_metrics_all(W, data, config.lam)
    out = dict(readouts[config.readout_scale])
    out["readouts"] = readouts
    out["update_loss"] = student_mse(W, a, data.X_train, data.y_train).item()
    beta = data.beta.detach().to(device="cpu", dtype=torch.float64).numpy()
    lam_max, v1 = top_eigenpair(W64)
    out["sim"] = float(abs(v1 @ beta))  # = spectra.top_alignment(W, beta), sharing the eigensolve
    out["lambda_max"] = lam_max
    if config.record_esd:
        eigs = np.asarray(spectra.esd(W64), dtype=np.float64)
        out["esd"] = eigs
        out["alpha_hill"] = float(spectra.alpha_hill(eigs))
        out["alpha_ks"] = float(spectra.fit_power_law(eigs).alpha)
    else:
        out["esd"] = np.zeros(0)
        out["alpha_hill"] = math.nan
        out["alpha_ks"] = math.nan
    scalars = ("train_loss", "test_loss", "kta", "sim", "lambda_max", "update_loss")
    if not all(math.isfinite(out[k]) for k in scalars) or not all(
            math.isfinite(v) for r in readouts.values() for v in r.values()):
        return None
    return out


def train(config: TwoLayerConfig) -> Trajectory:
    """Run ``config.steps`` full-batch updates of W (a frozen) and record the metrics.

    GD / FB-Adam on the closed-form gradient; at the recorded steps the ridge readout is refitted and every metric
    recorded.  When W or a metric becomes non-finite the run stops there (``diverged_at``); with
    ``config.stop_alpha_hill`` it also stops after the first recorded step whose PL_Alpha_Hill is below that level.
    Deterministic under ``config.seed``; module-level, so ``htlib.sweep.run_sweep`` caches it.

    Parameters
    ----------
    config : TwoLayerConfig
        The run.

    Returns
    -------
    Trajectory
        The recorded metrics.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.two_layer import TwoLayerConfig, train
    >>> traj = train(TwoLayerConfig(n=40, d=20, h=30, n_test=10, steps=3, optimizer="gd", eta=0.5, dtype="float64"))
    >>> traj.steps.tolist(), traj.diverged_at
    ([0, 1, 2, 3], None)
    >>> bool(np.all(np.diff(traj.update_loss) < 0))    # small GD steps lower the loss they minimise
    True
    >>> full = train(TwoLayerConfig(n=40, d=20, h=30, n_test=10, steps=6, eta=0.5, dtype="float64"))
    >>> first = int(np.argmax(full.alpha_hill < 2.6))        # the first recorded step below 2.6
    >>> cut = train(TwoLayerConfig(n=40, d=20, h=30, n_test=10, steps=6, eta=0.5, dtype="float64", stop_alpha_hill=2.6))
    >>> cut.steps.tolist() == full.steps[:first + 1].tolist(), bool(np.all(cut.alpha_hill == full.alpha_hill[:first + 1]))
    (True, True)
    """
    data = make_data(config)
    W, a = init_weights(config)
    record_at = set(config.recorded_steps())
    keep = set(int(t) for t in config.keep_weights)
    lrs = np.array([config.eta * config.steplr_gamma**t for t in range(config.steps)], dtype=np.float64)

    rows: list[tuple[int, dict]] = []
    weights: dict[int, np.ndarray] = {}
    state = AdamState.zeros_like(W) if config.optimizer == "adam" else None
    diverged_at: int | None = None

    def observe(t: int) -> bool:
        nonlocal diverged_at
        if not bool(torch.isfinite(W).all()):
            diverged_at = t
            return False
        if t in record_at:
            row = _record(W, a, data, config)
            if row is None:
                diverged_at = t
                return False
            rows.append((t, row))
        if t in keep:
            weights[t] = W.detach().cpu().numpy().copy()
        if t in record_at and config.stop_alpha_hill is not None and row["alpha_hill"] < config.stop_alpha_hill:
            return False  # the level is reached: the run stops here, not diverged
        return True

    with torch.no_grad():
        if observe(0):
            for t in range(config.steps):
                if config.weight_norm and config.weight_norm_order == "before_forward":
                    W = normalize_weights(W)
                G = full_batch_gradient(W, a, data.X_train, data.y_train)
                if config.optimizer == "gd":
                    W = gd_step(W, G, float(lrs[t]))
                else:
                    W, state = adam_step(W, G, state, float(lrs[t]), bias_correction=config.bias_correction)
                if config.weight_norm and config.weight_norm_order == "after_update":
                    W = normalize_weights(W)
                if not observe(t + 1):
                    break

    def col(key: str) -> np.ndarray:
        return np.array([row[key] for _, row in rows], dtype=np.float64)

    return Trajectory(config=config, steps=np.array([t for t, _ in rows], dtype=np.int64), train_loss=col("train_loss"),
                      test_loss=col("test_loss"), kta=col("kta"), sim=col("sim"), alpha_hill=col("alpha_hill"),
                      alpha_ks=col("alpha_ks"), esd=tuple(row["esd"] for _, row in rows), weights=weights, lr=lrs,
                      diverged_at=diverged_at, lambda_max=col("lambda_max"), update_loss=col("update_loss"),
                      readouts={s: {m: np.array([row["readouts"][s][m] for _, row in rows], dtype=np.float64)
                                    for m in READOUT_METRICS} for s in READOUT_SCALES})


def training_spec(config: TwoLayerConfig) -> TwoLayerConfig:
    """``config`` with every field of :data:`RECORDING_FIELDS` at its default: what the run computes.

    Parameters
    ----------
    config : TwoLayerConfig
        A run.

    Returns
    -------
    TwoLayerConfig
        The same run with the default recording.

    Examples
    --------
    >>> from htlib.two_layer import TwoLayerConfig, training_spec
    >>> training_spec(TwoLayerConfig(eta=2.0, record_every=5)) == TwoLayerConfig(eta=2.0)
    True
    """
    defaults = {f.name: f.default for f in dataclasses.fields(TwoLayerConfig) if f.name in RECORDING_FIELDS}
    return dataclasses.replace(config, **defaults)


def run_cost(config: TwoLayerConfig) -> tuple[float, float]:
    """``(bytes, flops)`` of :func:`train` on ``config`` to leading order: the arrays alive at once (data, features,
    weights, Adam moments, kept ``W_t``, recorded ESDs) and the multiply-adds of the steps (two GEMMs forward, four
    backward) and of each record (ridge readout on both sets, the ESD of ``W``).  An estimate for refusing sizes
    that could never run, not a timing.

    Parameters
    ----------
    config : TwoLayerConfig
        A run.

    Returns
    -------
    tuple of float
        ``(bytes, flops)``.

    Examples
    --------
    >>> b, f = run_cost(TwoLayerConfig(n=2000, d=1000, h=1500, steps=10))
    >>> f"{b / 2**20:.0f} MiB, {f:.2g} flops"
    '57 MiB, 5.3e+11 flops'
    """
    c = config
    item = 4 if c.dtype == "float32" else 8
    records = c.steps // c.record_every + 1 + (c.steps % c.record_every != 0) - (not c.record_initial and c.steps > 0)
    q, rows = min(c.h, c.d), c.n + c.n_test  # records: len(c.recorded_steps()) without building the list
    memory = item * (rows * (c.d + 2 * c.h) + (4 + len(c.keep_weights)) * c.h * c.d) + 8 * records * q
    flops = 6.0 * c.n * c.d * c.h * c.steps + records * (2.0 * rows * c.h * (c.d + c.h) + 10.0 * c.h * c.d * q)
    return float(memory), float(flops)


def recording_covers(stored: TwoLayerConfig, wanted: TwoLayerConfig) -> bool:
    """Whether a run of ``stored`` records everything a run of ``wanted`` would: the same training
    spec, every step ``wanted`` records and every ``W_t`` it keeps, and the ESD if it records it.
    (The readout convention of the plain metric names does not matter: both are recorded.)

    Parameters
    ----------
    stored : TwoLayerConfig
        The run that exists.
    wanted : TwoLayerConfig
        The run asked for.

    Returns
    -------
    bool
        Whether ``stored`` records all that ``wanted`` would.

    Examples
    --------
    >>> from htlib.two_layer import TwoLayerConfig, recording_covers
    >>> every, second = TwoLayerConfig(steps=4), TwoLayerConfig(steps=4, record_every=2)
    >>> recording_covers(every, second), recording_covers(second, every)
    (True, False)
    """
    return (training_spec(stored) == training_spec(wanted)
            and set(wanted.recorded_steps()) <= set(stored.recorded_steps())
            and set(wanted.keep_weights) <= set(stored.keep_weights)
            and (stored.record_esd or not wanted.record_esd))


def restrict_recording(traj: Trajectory, wanted: TwoLayerConfig) -> Trajectory:
    """The trajectory a run of ``wanted`` records, read off ``traj``, a finished run whose config
    covers it (:func:`recording_covers`) and that did not diverge.

    A diverged run is refused: divergence is detected at the recorded steps, so where it stops
    depends on the recording.

    Parameters
    ----------
    traj : Trajectory
        A finished, not diverged run.
    wanted : TwoLayerConfig
        A config that ``traj.config`` covers.

    Returns
    -------
    Trajectory
        The recording of ``wanted``.

    Examples
    --------
    >>> import dataclasses
    >>> from htlib.two_layer import TwoLayerConfig, restrict_recording, train
    >>> cfg = TwoLayerConfig(n=40, d=20, h=30, n_test=10, steps=4, dtype="float64")
    >>> sub = restrict_recording(train(cfg), dataclasses.replace(cfg, record_every=2, record_esd=False))
    >>> sub.steps.tolist(), sub.esd[0].shape
    ([0, 2, 4], (0,))
    """
    if not recording_covers(traj.config, wanted):
        raise ValueError("traj.config must cover wanted: the same training spec and a superset of its recording")
    if traj.diverged_at is not None:
        raise ValueError(f"traj diverged at step {traj.diverged_at}; train wanted itself")
    rows = [int(np.flatnonzero(traj.steps == t)[0]) for t in wanted.recorded_steps()]
    readouts = {s: {m: v[rows] for m, v in r.items()} for s, r in traj.readouts.items()}
    plain = readouts[wanted.readout_scale]
    nan = np.full(len(rows), np.nan)
    return Trajectory(
        config=wanted, steps=traj.steps[rows], train_loss=plain["train_loss"], test_loss=plain["test_loss"],
        kta=plain["kta"], sim=traj.sim[rows],
        alpha_hill=traj.alpha_hill[rows] if wanted.record_esd else nan,
        alpha_ks=traj.alpha_ks[rows] if wanted.record_esd else nan,
        esd=tuple(traj.esd[i] if wanted.record_esd else np.zeros(0) for i in rows),
        weights={int(t): traj.weights[int(t)] for t in wanted.keep_weights}, lr=traj.lr, diverged_at=None,
        lambda_max=traj.lambda_max[rows], update_loss=traj.update_loss[rows], readouts=readouts)


def last_step_metrics(traj: Trajectory) -> dict[str, float]:
    """The recorded metrics of the last step (:meth:`Trajectory.at`); all NaN when the run
    stopped before ``config.steps`` (diverged).

    Parameters
    ----------
    traj : Trajectory
        A run.

    Returns
    -------
    dict of str to float
        The last step's metrics (NaN for a diverged run).

    Examples
    --------
    >>> from htlib.two_layer import TwoLayerConfig, last_step_metrics, train
    >>> traj = train(TwoLayerConfig(n=40, d=20, h=30, n_test=10, steps=2, dtype="float64"))
    >>> m = last_step_metrics(traj)
    >>> m["sim"] == float(traj.sim[-1]), "test_loss@sqrt_d" in m
    (True, True)
    """
    names = ("train_loss", "test_loss", "kta", "sim", "lambda_max", "alpha_hill", "alpha_ks", "update_loss",
             *(f"{m}@{s}" for s in READOUT_SCALES for m in READOUT_METRICS))
    if traj.steps.size == 0 or int(traj.steps[-1]) != traj.config.steps:
        return {m: math.nan for m in names}
    return traj.at(int(traj.steps[-1]))


@dataclass(frozen=True)
class RunGrid:
    """Last-step numbers of a sweep over (optimizer, learning rate, seed).

    Attributes
    ----------
    optimizers : tuple of str
        In the order of ``_OPTIMIZERS`` (``"gd"`` before ``"adam"``).
    etas, seeds : ndarray
        Ascending.
    values : dict
        Metric name -> ``(len(optimizers), len(etas), len(seeds))`` float64 array, NaN where
        the run diverged.
    diverged : ndarray of bool, same shape

    Examples
    --------
    >>> from htlib.two_layer import TwoLayerConfig, run_grid, train
    >>> runs = [train(TwoLayerConfig(n=40, d=20, h=30, n_test=10, eta=0.5, seed=s, dtype="float64")) for s in (0, 1)]
    >>> grid = run_grid(runs)
    >>> grid.optimizers, grid.seeds.tolist(), grid.get("test_loss", "adam").shape, grid.mean("sim", "adam").shape
    (('adam',), [0, 1], (1, 2), (1,))
    """

    optimizers: tuple[str, ...]
    etas: np.ndarray
    seeds: np.ndarray
    values: dict[str, np.ndarray]
    diverged: np.ndarray

    def get(self, metric: str, optimizer: str) -> np.ndarray:
        """``(len(etas), len(seeds))`` array of ``metric`` for ``optimizer``."""
        check_choice("metric", metric, tuple(sorted(self.values)))
        check_choice("optimizer", optimizer, self.optimizers)
        return self.values[metric][self.optimizers.index(optimizer)]

    def mean(self, metric: str, optimizer: str) -> np.ndarray:
        """Mean over seeds (ignoring diverged runs), one value per eta."""
        v = self.get(metric, optimizer)
        out = np.full(v.shape[0], np.nan)
        ok = np.isfinite(v).any(axis=1)
        out[ok] = np.nanmean(v[ok], axis=1)
        return out


def run_grid(trajectories, metrics=last_step_metrics) -> RunGrid:
    """Arrange finished runs by (optimizer, eta, seed): the one grid of the package.

    ``metrics(traj)`` gives a run's numbers (default :func:`last_step_metrics`; NaN for a
    diverged run).  Every (optimizer, eta, seed) combination the runs mention must appear
    exactly once.

    Parameters
    ----------
    trajectories : iterable of Trajectory
        Finished runs, one per (optimizer, eta, seed).
    metrics : callable, default last_step_metrics
        ``metrics(traj) -> dict`` of a run's numbers.

    Returns
    -------
    RunGrid
        The runs arranged by (optimizer, eta, seed).

    Examples
    --------
    >>> from htlib.two_layer import TwoLayerConfig, run_grid, train
    >>> runs = [train(TwoLayerConfig(n=40, d=20, h=30, n_test=10, optimizer="gd", eta=e, dtype="float64"))
    ...         for e in (0.5, 0.1)]
    >>> grid = run_grid(runs)
    >>> grid.etas.tolist(), grid.values["sim"].shape, bool(grid.diverged.any())
    ([0.1, 0.5], (1, 2, 1), False)
    """
    trajectories = list(trajectories)
    if len(trajectories) == 0:
        raise ValueError("trajectories must be non-empty")
    opts = tuple(o for o in _OPTIMIZERS if any(t.config.optimizer == o for t in trajectories))
    etas = np.array(sorted({t.config.eta for t in trajectories}))
    seeds = np.array(sorted({t.config.seed for t in trajectories}))
    shape = (len(opts), etas.size, seeds.size)
    values: dict[str, np.ndarray] = {}
    diverged = np.zeros(shape, dtype=bool)
    filled = np.zeros(shape, dtype=bool)
    for t in trajectories:
        idx = (opts.index(t.config.optimizer), int(np.searchsorted(etas, t.config.eta)),
               int(np.searchsorted(seeds, t.config.seed)))
        if filled[idx]:
            raise ValueError(f"duplicate run for optimizer={t.config.optimizer}, eta={t.config.eta}, seed={t.config.seed}")
        filled[idx] = True
        diverged[idx] = t.diverged_at is not None
        for m, v in metrics(t).items():
            values.setdefault(m, np.full(shape, np.nan))[idx] = v
    if not filled.all():
        raise ValueError("trajectories must cover every (optimizer, eta, seed) combination they mention")
    return RunGrid(optimizers=opts, etas=etas, seeds=seeds, values=values, diverged=diverged)


def first_eta_above(etas: np.ndarray, values: np.ndarray, level: float) -> float | None:
    """The smallest learning rate whose value exceeds ``level`` (``None`` if none does);
    ``etas`` ascending, ``values`` aligned with them (e.g. a seed mean).

    Parameters
    ----------
    etas : array_like
        Learning rates, ascending.
    values : array_like
        One value per learning rate (NaN: not measured).
    level : float
        The threshold.

    Returns
    -------
    float or None
        The first learning rate above ``level``.

    Examples
    --------
    >>> from htlib.two_layer import first_eta_above
    >>> first_eta_above([0.1, 1.0, 10.0], [0.2, 0.5, 3.0], 0.4), first_eta_above([0.1, 1.0], [0.2, 0.3], 5.0)
    (1.0, None)
    """
    etas = check_vector("etas", etas)
    values = to_numpy(values, "values").ravel()  # NaN: a value not measured (e.g. every seed diverged)
    level = check_float("level", level)
    if etas.shape != values.shape:
        raise ValueError(f"etas and values must have the same shape, got {etas.shape} and {values.shape}")
    hits = np.flatnonzero(values > level)
    return float(etas[hits[0]]) if hits.size else None

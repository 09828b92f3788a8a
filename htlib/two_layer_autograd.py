"""A second, independent trainer of the two-layer student: PyTorch autograd and ``torch.optim``.

The student is ``f(x) = aᵀ tanh(W x / sqrt(d)) / sqrt(h)`` with ``W`` (h x d) trained and ``a`` (h,) frozen.  The loss
of the updates is the mean squared error ``(1/n) sum_i (y_i - f(x_i))^2``, without a factor 1/2 (``loss_factor``
rescales it, ``0.5`` giving the written ``1/(2n)`` form).  Its gradient comes from autograd; gradient descent is
``torch.optim.SGD`` without momentum (``W <- W - eta G``) and full-batch Adam is ``torch.optim.Adam`` with its
defaults (``betas = (0.9, 0.999)``, ``eps = 1e-8``, bias correction), one full-batch step per iteration.

The readout refits ``a`` by ridge regression on a probe set, ``a = (ZᵀZ + (lam/h) n I)^(-1) Zᵀ y`` with
``Z = tanh(X Wᵀ / s) / sqrt(h)``, and reports the probe and test mean squared errors; ``s = d`` (``scale="d"``) is the
scale of the original authors' evaluation code, ``s = sqrt(d)`` (``"sqrt_d"``) the student's own.  The readout is
computed in float64.

Nothing here calls :mod:`htlib.two_layer`: the module exists to check it from the formulas alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from htlib._checks import check_choice, check_float, check_int

__all__ = ["AutogradRun", "student_loss", "train_autograd", "readout_losses", "relative_difference",
           "OPTIMIZERS", "READOUT_SCALES"]

OPTIMIZERS: tuple[str, ...] = ("gd", "adam")
"""``"gd"``: ``torch.optim.SGD`` (no momentum); ``"adam"``: ``torch.optim.Adam`` with PyTorch's defaults."""
READOUT_SCALES: tuple[str, ...] = ("d", "sqrt_d")
"""The divisor ``s`` of the readout features ``tanh(X Wᵀ/s)/sqrt(h)``: ``d`` or ``sqrt(d)``."""


@dataclass(frozen=True)
class AutogradRun:
    """What :func:`train_autograd` returns.

    Attributes
    ----------
    optimizer : str
        ``"gd"`` or ``"adam"``.
    eta : float
        The learning rate.
    loss_factor : float
        The factor in front of the mean squared error that was minimised.
    weights : numpy.ndarray
        ``W_0, ..., W_steps``, shape ``(steps + 1, h, d)``, in the dtype of the run.
    losses : numpy.ndarray
        ``loss_factor`` times the mean squared error of the train set at each ``W_t``, shape ``(steps + 1,)``
        (entry ``t < steps`` is the loss whose gradient step ``t`` took; float64 copies of the run's values).

    Examples
    --------
    >>> import torch
    >>> from htlib.two_layer_autograd import train_autograd
    >>> g = torch.Generator().manual_seed(0)
    >>> X, y, W0, a = (torch.randn(*s, generator=g, dtype=torch.float64) for s in [(20, 4), (20,), (3, 4), (3,)])
    >>> run = train_autograd(X, y, W0, a, optimizer="gd", eta=0.5, steps=2)
    >>> run.steps, run.weights.shape, bool(run.losses[2] < run.losses[0])
    (2, (3, 3, 4), True)
    """

    optimizer: str
    eta: float
    loss_factor: float
    weights: np.ndarray
    losses: np.ndarray

    @property
    def steps(self) -> int:
        """The number of updates."""
        return int(self.losses.shape[0]) - 1


def _tensor(name: str, x, ndim: int, dtype: torch.dtype | None = None) -> torch.Tensor:
    """``x`` as a detached real floating CPU tensor of ``ndim`` dimensions, finite, non-empty."""
    t = x.detach() if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x))
    if not (t.is_floating_point() and t.dtype in (torch.float32, torch.float64)):
        raise ValueError(f"{name} must hold float32 or float64 numbers, got dtype {t.dtype}")
    if t.ndim != ndim or t.numel() == 0:
        raise ValueError(f"{name} must be a non-empty {ndim}-D array, got shape {tuple(t.shape)}")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} must be finite")
    return t.to(device="cpu", dtype=dtype or t.dtype)


def _check_data(X, y, W: torch.Tensor, names: tuple[str, str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs ``(m, d)`` and labels ``(m,)`` that fit the first layer ``W`` (h x d), in ``W``'s dtype."""
    nx, ny = names
    X, y = _tensor(nx, X, 2, W.dtype), _tensor(ny, y, 1, W.dtype)
    h, d = W.shape
    if X.shape[1] != d:
        raise ValueError(f"{nx} must have d = {d} columns (the first layer is {h} x {d}), got shape {tuple(X.shape)}")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"{ny} must have one entry per row of {nx} ({X.shape[0]}), got {y.shape[0]}")
    return X, y


def student_loss(W: torch.Tensor, a: torch.Tensor, X: torch.Tensor, y: torch.Tensor,
                 loss_factor: float = 1.0) -> torch.Tensor:
    """``loss_factor`` times the mean squared error of ``f(x) = aᵀ tanh(W x / sqrt(d)) / sqrt(h)``, differentiable.

    Parameters
    ----------
    W : torch.Tensor
        First layer, ``(h, d)`` (may require grad).
    a : torch.Tensor
        Second layer, ``(h,)``.
    X, y : torch.Tensor
        Inputs ``(n, d)`` and labels ``(n,)``.
    loss_factor : float
        ``1`` for the mean squared error, ``0.5`` for the written ``1/(2n) sum (y - f)^2``.

    Returns
    -------
    torch.Tensor
        A 0-d tensor.

    Raises
    ------
    ValueError
        For arguments that are not float32/float64 tensors of one dtype with matching shapes, or a non-positive
        ``loss_factor``.

    Examples
    --------
    >>> import torch
    >>> from htlib.two_layer_autograd import student_loss
    >>> g = torch.Generator().manual_seed(0)
    >>> W, a, X, y = (torch.randn(*s, generator=g, dtype=torch.float64) for s in [(3, 4), (3,), (20, 4), (20,)])
    >>> full, half = student_loss(W, a, X, y), student_loss(W, a, X, y, loss_factor=0.5)
    >>> bool(torch.isclose(half, full / 2))
    True
    """
    loss_factor = check_float("loss_factor", loss_factor, low=0.0)
    for name, t, ndim in (("W", W, 2), ("a", a, 1), ("X", X, 2), ("y", y, 1)):
        if not isinstance(t, torch.Tensor) or t.dtype not in (torch.float32, torch.float64) or t.ndim != ndim:
            raise ValueError(f"{name} must be a {ndim}-D float32 or float64 torch tensor, got {t!r:.60}")
        if t.dtype != W.dtype:
            raise ValueError(f"{name} must have W's dtype {W.dtype}, got {t.dtype}")
    if X.shape[1] != W.shape[1] or a.shape[0] != W.shape[0] or y.shape[0] != X.shape[0]:
        raise ValueError(f"shapes do not fit: W {tuple(W.shape)}, a {tuple(a.shape)}, X {tuple(X.shape)}, "
                         f"y {tuple(y.shape)} (need a (h,), X (n, d), y (n,) for W (h, d))")
    return _loss(W, a, X, y, loss_factor)


def _loss(W: torch.Tensor, a: torch.Tensor, X: torch.Tensor, y: torch.Tensor, loss_factor: float) -> torch.Tensor:
    """:func:`student_loss` without the checks (the training loop's inputs are checked once, before it)."""
    h, d = W.shape
    hidden = torch.tanh(X @ W.T / math.sqrt(d))
    prediction = hidden @ a / math.sqrt(h)
    return loss_factor * torch.mean((y - prediction) ** 2)


def train_autograd(X, y, W0, a, *, optimizer: str, eta: float, steps: int, loss_factor: float = 1.0) -> AutogradRun:
    """Full-batch training of the first layer ``W`` (``a`` frozen) with autograd and a ``torch.optim`` optimizer.

    Every step takes the gradient of :func:`student_loss` on the whole of ``(X, y)`` by autograd and lets the
    optimizer update ``W``: ``torch.optim.SGD(lr=eta)`` (``W <- W - eta G``) or ``torch.optim.Adam(lr=eta)``
    with PyTorch's defaults (first step ``eta G / (|G| + eps)``, about ``eta sign(G)``).

    Parameters
    ----------
    X, y : array-like or torch.Tensor
        Train inputs ``(n, d)`` and labels ``(n,)``; cast to ``W0``'s dtype.
    W0 : array-like or torch.Tensor
        Initial first layer ``(h, d)``, float32 or float64: the dtype of the run.  Not modified.
    a : array-like or torch.Tensor
        The frozen second layer ``(h,)``.
    optimizer : {"gd", "adam"}
        Gradient descent or full-batch Adam.
    eta : float
        Learning rate, finite and ``> 0``.
    steps : int
        Number of updates, ``>= 0``.
    loss_factor : float
        Factor in front of the mean squared error, finite and ``> 0`` (``0.5``: the loss with the 1/2).

    Returns
    -------
    AutogradRun
        ``W_0, ..., W_steps`` and the loss at each.

    Raises
    ------
    ValueError
        For an unknown optimizer, a non-positive or non-finite ``eta`` or ``loss_factor``, a negative ``steps``,
        arrays of the wrong shape, dtype or with non-finite entries.

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> X, y = torch.randn(40, 6, generator=g), torch.randn(40, generator=g)
    >>> W0, a = torch.randn(5, 6, generator=g), torch.randn(5, generator=g)
    >>> run = train_autograd(X, y, W0, a, optimizer="adam", eta=0.01, steps=3)
    >>> run.weights.shape, run.losses.shape
    ((4, 5, 6), (4,))
    >>> round(float(np.abs(run.weights[1] - run.weights[0]).max()), 6)  # Adam's first step: eta sign(G)
    0.01
    """
    check_choice("optimizer", optimizer, OPTIMIZERS)
    eta = check_float("eta", eta, low=0.0)
    steps = check_int("steps", steps, 0)
    loss_factor = check_float("loss_factor", loss_factor, low=0.0)
    W0 = _tensor("W0", W0, 2)
    X, y = _check_data(X, y, W0, ("X", "y"))
    a = _tensor("a", a, 1, W0.dtype)
    if a.shape[0] != W0.shape[0]:
        raise ValueError(f"a must have h = {W0.shape[0]} entries (W0 is {W0.shape[0]} x {W0.shape[1]}), "
                         f"got {a.shape[0]}")

    W = torch.nn.Parameter(W0.clone())
    opt = torch.optim.SGD([W], lr=eta) if optimizer == "gd" else torch.optim.Adam([W], lr=eta)
    weights, losses = [W.detach().numpy().copy()], []
    for _ in range(steps):
        opt.zero_grad()
        loss = _loss(W, a, X, y, loss_factor)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        weights.append(W.detach().numpy().copy())
    with torch.no_grad():
        losses.append(float(_loss(W, a, X, y, loss_factor)))
    return AutogradRun(optimizer=optimizer, eta=eta, loss_factor=loss_factor, weights=np.stack(weights),
                       losses=np.asarray(losses, dtype=np.float64))


def readout_losses(W, X_probe, y_probe, X_test, y_test, *, lam: float, scale: str = "d") -> tuple[float, float]:
    """Probe (train) and test mean squared errors after the ridge refit of the second layer, in float64.

    Features ``Z = tanh(X Wᵀ / s) / sqrt(h)``; ``a = (ZᵀZ + (lam/h) n I_h)^(-1) Zᵀ y`` on the probe set (the
    minimiser of ``(1/n)||y - Z a||^2 + (lam/h)||a||^2``), then the mean squared error of ``Z a`` on each set.

    Parameters
    ----------
    W : array-like or torch.Tensor
        First layer ``(h, d)``.
    X_probe, y_probe : array-like or torch.Tensor
        The probe set ``(n, d)``, ``(n,)`` that the ridge fit uses.
    X_test, y_test : array-like or torch.Tensor
        The test set ``(m, d)``, ``(m,)``.
    lam : float
        Ridge constant, finite and ``> 0``.
    scale : {"d", "sqrt_d"}
        ``s = d`` or ``s = sqrt(d)``.

    Returns
    -------
    (float, float)
        The probe and the test loss.

    Examples
    --------
    >>> import torch
    >>> from htlib.two_layer_autograd import readout_losses
    >>> g = torch.Generator().manual_seed(0)
    >>> W = torch.randn(30, 5, generator=g, dtype=torch.float64)
    >>> Xp, Xt = torch.randn(40, 5, generator=g, dtype=torch.float64), torch.randn(10, 5, generator=g, dtype=torch.float64)
    >>> yp, yt = Xp[:, 0], Xt[:, 0]
    >>> small, big = (readout_losses(W, Xp, yp, Xt, yt, lam=lam, scale="sqrt_d")[0] for lam in (1e-3, 10.0))
    >>> bool(small < big)        # the probe loss grows with the ridge penalty
    True
    """
    lam = check_float("lam", lam, low=0.0)
    check_choice("scale", scale, READOUT_SCALES)
    W = _tensor("W", W, 2, torch.float64)
    h, d = W.shape
    Xp, yp = _check_data(X_probe, y_probe, W, ("X_probe", "y_probe"))
    Xt, yt = _check_data(X_test, y_test, W, ("X_test", "y_test"))
    s = float(d) if scale == "d" else math.sqrt(d)
    Zp = torch.tanh(Xp @ W.T / s) / math.sqrt(h)
    Zt = torch.tanh(Xt @ W.T / s) / math.sqrt(h)
    n = Xp.shape[0]
    A = Zp.T @ Zp + (lam / h) * n * torch.eye(h, dtype=torch.float64)
    a_hat = torch.linalg.solve(A, Zp.T @ yp)
    return float(torch.mean((yp - Zp @ a_hat) ** 2)), float(torch.mean((yt - Zt @ a_hat) ** 2))


def relative_difference(A, B) -> float:
    """``||A - B||_F / ||B||_F`` in float64 (``B`` is the reference; ``0`` when both are zero).

    Parameters
    ----------
    A, B : array-like
        Arrays of one shape (a scalar, a vector, a matrix, a stack of matrices).

    Returns
    -------
    float

    Examples
    --------
    >>> from htlib.two_layer_autograd import relative_difference
    >>> relative_difference([3.0, 4.0], [0.0, 0.0]), relative_difference([0.0, 0.0], [0.0, 0.0])
    (inf, 0.0)
    >>> round(relative_difference([1.0, 1.0], [1.0, 0.0]), 6)      # ||(0, 1)|| / ||(1, 0)||
    1.0
    """
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    if A.shape != B.shape:
        raise ValueError(f"A and B must have one shape, got {A.shape} and {B.shape}")
    ref = float(np.linalg.norm(B.ravel()))
    diff = float(np.linalg.norm((A - B).ravel()))
    if ref == 0.0:
        return 0.0 if diff == 0.0 else math.inf
    return diff / ref

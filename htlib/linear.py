"""Exact Hessian/GGN spectra, traces and sharpness bounds of linear networks (paper 004).

Owns: the data preparation of paper 004's section 7 (polar-factor whitening,
balanced weight sampling, class-imbalanced subsets), full-batch GD training of
linear and tanh MLPs with the halve-on-plateau learning rate, the closed-form
spectra (two layers, strongly balanced deep networks), the exact GGN spectrum
through a ``d0*dL`` Kronecker sum, the trace, the sharpness of balanced
interpolating minimizers and its anisotropic bounds, and the numerical Hessian
tools that check them (LOBPCG, ARPACK Lanczos and power iteration on Hessian-vector products,
Hutchinson's trace).

Conventions: samples are rows, ``X`` is ``(n, d0)``, ``Y`` is ``(n, dL)``;
``weights = [W1, ..., WL]`` with ``W_l`` of shape ``(d_l, d_{l-1})``; the network is
``f(X) = X W1^T ... WL^T`` and the loss ``(1/2n) ||f(X) - Y||_F^2``.  The GGN is
``(1/n) J^T J``; at a zero-loss point it equals the Hessian.  Closed forms are
computed in float64 NumPy and accept NumPy arrays or torch tensors.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch

__all__ = [
    "whiten",
    "one_hot",
    "balanced_weights",
    "kaiming_uniform_weights",
    "class_imbalanced_subset",
    "ols_balanced_weights",
    "forward",
    "mse_loss",
    "TrainResult",
    "train_gd",
    "ggn_spectrum",
    "ggn_kronecker_matrix",
    "two_layer_ntk_spectrum",
    "balanced_spectrum",
    "block_diagonal_sharpness",
    "ggn_trace",
    "sharpness_isotropic",
    "sharpness_bounds",
    "hessian_top_eigenvalues",
    "hutchinson_trace",
    "hessian_matrix",
    "exact_ggn_case",
    "depth_sweep",
    "ols_sharpness",
    "trace_norm_agreement",
    "largest_imbalanced_n",
    "anisotropy_sweep",
    "numerical_rank",
    "TrainingDiverged",
    "layer_sharpness_terms",
    "weyl_sharpness_bounds",
    "balance_gaps",
    "balanced_prediction",
    "interpolate_whitening",
    "nonzero_eigenvalue_counts",
    "flat_params_loss",
    "gram_loss",
    "LinearExperiment",
    "run_linear_experiment",
    "prepare_data",
]

ArrayLike = np.ndarray | torch.Tensor


def _np(a: ArrayLike) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        return a.detach().cpu().numpy().astype(np.float64)
    return np.asarray(a, dtype=np.float64)


def _check_2d(name: str, a: np.ndarray) -> None:
    if a.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got shape {a.shape}")


def _check_matrix(name: str, a: np.ndarray) -> None:
    """2-D, non-empty and finite: the preconditions of every formula here."""
    _check_2d(name, a)
    if a.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} holds NaN or inf entries")


def _check_int(name: str, value: object, low: int) -> int:
    """An integer ``>= low`` (NumPy integers accepted; floats and bools refused)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value}")
    return int(value)


def _check_rows(X: np.ndarray, Y: np.ndarray, names: tuple[str, str] = ("X", "Y")) -> None:
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"{names[0]} and {names[1]} must have the same number of rows (samples), "
                         f"got {X.shape[0]} and {Y.shape[0]}")


def numerical_rank(X: ArrayLike, rtol: float | None = None) -> int:
    """Number of singular values of ``X`` above ``rtol * s_max``.

    The default ``rtol = max(n, d) * eps`` (float64 machine epsilon) is NumPy's ``matrix_rank``
    tolerance: singular values below it are indistinguishable from round-off of a rank-deficient matrix.
    """
    Xn = _np(X)
    _check_matrix("X", Xn)
    s = np.linalg.svd(Xn, compute_uv=False)
    tol = (max(Xn.shape) * np.finfo(np.float64).eps if rtol is None else float(rtol)) * s[0]
    return int(np.sum(s > tol))


# ----------------------------------------------------------------------------------------------
# Data preparation (paper 004, section 7)
# ----------------------------------------------------------------------------------------------


def whiten(X: ArrayLike, sigma_x: float = 1.0, rtol: float | None = None) -> np.ndarray:
    """Replace ``X = U S V^T`` (``n x d0``, rank ``r``) by ``sqrt(n) sigma_x U_r V_r^T``.

    Only the ``r`` singular directions with singular value above ``rtol * s_max`` are kept
    (default ``rtol = max(n, d0) * eps``, see :func:`numerical_rank`), so the result has the rank
    and the row and column spaces of ``X``: ``X^T X = n sigma_x^2 P`` with ``P`` the projector on
    the row space of ``X`` (the identity when ``X`` has full column rank).  Features that are
    constant zero stay zero, and permuting the rows of ``X`` permutes the rows of the result.

    Raises
    ------
    ValueError
        If ``X`` is not a non-empty finite matrix, is all zero, or ``sigma_x <= 0``.
    """
    Xn = _np(X)
    _check_matrix("X", Xn)
    if not sigma_x > 0:
        raise ValueError(f"sigma_x must be > 0, got {sigma_x}")
    n = Xn.shape[0]
    U, s, Vt = np.linalg.svd(Xn, full_matrices=False)
    if s[0] == 0.0:
        raise ValueError("X is all zero; it has no directions to whiten")
    tol = (max(Xn.shape) * np.finfo(np.float64).eps if rtol is None else float(rtol)) * s[0]
    r = int(np.sum(s > tol))
    return math.sqrt(n) * sigma_x * (U[:, :r] @ Vt[:r])


def one_hot(labels: ArrayLike, num_classes: int | None = None) -> np.ndarray:
    """One-hot encode integer labels 0..C-1 into an ``(n, C)`` float64 matrix."""
    lab = np.asarray(labels.detach().cpu().numpy() if isinstance(labels, torch.Tensor) else labels)
    if lab.size == 0:
        raise ValueError("labels must not be empty")
    if lab.ndim != 1 or not np.issubdtype(lab.dtype, np.integer):
        raise ValueError(f"labels must be a 1-D array of integers, got dtype {lab.dtype} and shape {lab.shape}")
    if lab.size and lab.min() < 0:
        raise ValueError("labels must be >= 0")
    C = int(lab.max()) + 1 if num_classes is None else int(num_classes)
    if lab.size and lab.max() >= C:
        raise ValueError(f"num_classes must exceed the largest label {lab.max()}, got {C}")
    out = np.zeros((lab.size, C))
    out[np.arange(lab.size), lab] = 1.0
    return out


def _orthonormal_columns(rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((rows, cols)))
    return q * np.sign(np.diag(r))  # Haar-distributed


def balanced_weights(dims: Sequence[int], singular_values: ArrayLike, *, seed: int) -> list[np.ndarray]:
    """Strongly balanced weights ``W_l = U_l S V_l^T`` with ``V_{l+1} = U_l`` (section 7 sampler).

    Parameters
    ----------
    dims
        ``(d0, d1, ..., dL)``.
    singular_values
        The ``k = min(dims)`` shared singular values (fewer are allowed: ``k = len``).
    seed
        Seed of the Gaussian matrices that are orthogonalized.
    """
    dims = [int(d) for d in dims]
    if len(dims) < 2 or min(dims) < 1:
        raise ValueError(f"dims must hold >= 2 positive sizes, got {dims}")
    s = _np(singular_values).ravel()
    k = s.size
    if k < 1 or k > min(dims):
        raise ValueError(f"singular_values must hold between 1 and min(dims) = {min(dims)} values, got {k}")
    rng = np.random.default_rng(seed)
    V = _orthonormal_columns(dims[0], k, rng)
    weights = []
    for d in dims[1:]:
        U = _orthonormal_columns(d, k, rng)
        weights.append((U * s) @ V.T)
        V = U
    return weights


def kaiming_uniform_weights(dims: Sequence[int], *, seed: int) -> list[np.ndarray]:
    """PyTorch's default ``nn.Linear`` weight initialization (Kaiming uniform with ``a = sqrt(5)``):
    entries uniform on ``[-1/sqrt(fan_in), 1/sqrt(fan_in)]``."""
    dims = [int(d) for d in dims]
    if len(dims) < 2 or min(dims) < 1:
        raise ValueError(f"dims must hold >= 2 positive sizes, got {dims}")
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.0, 1.0, size=(dout, din)) / math.sqrt(din) for din, dout in zip(dims[:-1], dims[1:])]


def class_imbalanced_subset(
    X: ArrayLike, labels: ArrayLike, n: int, alpha_max: float | None, *, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Subsample ``n`` points; with ``alpha_max`` set, class 0 gets the proportion ``alpha_max``.

    Classes ``1..C-1`` each get ``floor((1 - alpha_max) n / (C - 1))`` samples and class 0
    the rest (paper 004 writes ``floor((1 - alpha_max) n)`` per class, which cannot sum to
    ``n``; we read it as the share of all other classes together).  With ``alpha_max=None``
    a uniformly random subset of size ``n`` is drawn.
    """
    Xn = _np(X)
    lab = np.asarray(labels.detach().cpu().numpy() if isinstance(labels, torch.Tensor) else labels)
    if Xn.shape[0] != lab.shape[0]:
        raise ValueError(f"X has {Xn.shape[0]} rows but labels has {lab.shape[0]} entries")
    if not 1 <= n <= lab.size:
        raise ValueError(f"n must be in [1, {lab.size}], got {n}")
    rng = np.random.default_rng(seed)
    if alpha_max is None:
        idx = np.sort(rng.choice(lab.size, size=n, replace=False))
        return Xn[idx], lab[idx]
    classes = np.unique(lab)
    C = classes.size
    if not 1.0 / C <= alpha_max <= 1.0:
        raise ValueError(f"alpha_max must be in [1/C, 1] = [{1.0 / C:.4g}, 1], got {alpha_max}")
    per_class = int(math.floor((1.0 - alpha_max) * n / (C - 1)))
    counts = {int(c): per_class for c in classes[1:]}
    counts[int(classes[0])] = n - per_class * (C - 1)
    picks = []
    for c, m in counts.items():
        pool = np.flatnonzero(lab == c)
        if m > pool.size:
            raise ValueError(
                f"class {c} has only {pool.size} samples but n={n}, alpha_max={alpha_max} needs {m}; lower n"
            )
        picks.append(rng.choice(pool, size=m, replace=False))
    idx = np.sort(np.concatenate(picks))
    return Xn[idx], lab[idx]


def largest_imbalanced_n(labels: ArrayLike, alphas: Sequence[float]) -> int:
    """The largest ``n`` for which :func:`class_imbalanced_subset` can draw every ``alpha_max`` in
    ``alphas`` from ``labels`` (class 0 gets ``n - (C-1) floor((1-alpha) n/(C-1))``, the others
    ``floor((1-alpha) n/(C-1))`` each).  For 500 images per class and ``alpha_max <= 0.5`` it is 1000."""
    lab = np.asarray(labels)
    if lab.size == 0:
        raise ValueError("labels must not be empty")
    counts = np.bincount(lab)
    C = counts.size
    if C < 2 or len(alphas) == 0:
        raise ValueError(f"need >= 2 classes and >= 1 alpha, got {C} classes and alphas={list(alphas)}")
    for n in range(lab.size, 0, -1):
        ok = True
        for a in alphas:
            per = int(math.floor((1.0 - a) * n / (C - 1)))
            if n - per * (C - 1) > counts[0] or per > counts[1:].min():
                ok = False
                break
        if ok:
            return n
    raise ValueError(f"no subset size fits alphas={list(alphas)}")


def ols_balanced_weights(X: ArrayLike, Y: ArrayLike, dims: Sequence[int], *, seed: int) -> list[np.ndarray]:
    """A strongly balanced network whose product is the OLS solution ``W^T = X^+ Y``.

    ``W = U diag(s) V^T``; every layer gets singular values ``s^(1/L)``; ``V_1 = V`` and
    ``U_L = U``, the hidden singular vectors are random (seeded).
    """
    Xn, Yn = _np(X), _np(Y)
    _check_matrix("X", Xn)
    _check_matrix("Y", Yn)
    _check_rows(Xn, Yn)
    dims = [_check_int(f"dims[{i}]", d, 1) for i, d in enumerate(dims)]
    if len(dims) < 2:
        raise ValueError(f"dims must hold >= 2 sizes, got {dims}")
    if dims[0] != Xn.shape[1] or dims[-1] != Yn.shape[1]:
        raise ValueError(f"dims must start with d0={Xn.shape[1]} and end with dL={Yn.shape[1]}, got {dims}")
    W = (np.linalg.pinv(Xn) @ Yn).T  # (dL, d0)
    U, s, Vt = np.linalg.svd(W, full_matrices=False)
    k = int(np.sum(s > max(W.shape) * np.finfo(np.float64).eps * s[0])) if s[0] > 0 else 0
    if k == 0:
        raise ValueError("the OLS solution X^+ Y is zero (Y orthogonal to the column space of X)")
    if min(dims) < k:
        # a narrower layer would silently truncate W: the network would not be the OLS solution
        raise ValueError(f"dims: every layer must be at least rank(W) = {k} wide to represent the OLS "
                         f"solution, got dims={dims}")
    U, s, V = U[:, :k], s[:k], Vt[:k].T
    L = len(dims) - 1
    root = s ** (1.0 / L)
    rng = np.random.default_rng(seed)
    weights, Vl = [], V
    for l, d in enumerate(dims[1:], start=1):
        Ul = U if l == L else _orthonormal_columns(d, k, rng)
        weights.append((Ul * root) @ Vl.T)
        Vl = Ul
    return weights


# ----------------------------------------------------------------------------------------------
# Model and training
# ----------------------------------------------------------------------------------------------

_ACTIVATIONS = ("linear", "tanh")


def forward(weights: Sequence[torch.Tensor], X: torch.Tensor, activation: str = "linear") -> torch.Tensor:
    """``X W1^T ... WL^T`` with ``activation`` after every layer but the last."""
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation must be in {_ACTIVATIONS}, got {activation!r}")
    H = X
    for i, W in enumerate(weights):
        H = H @ W.T
        if activation == "tanh" and i < len(weights) - 1:
            H = torch.tanh(H)
    return H


def mse_loss(weights: Sequence[torch.Tensor], X: torch.Tensor, Y: torch.Tensor, activation: str = "linear") -> torch.Tensor:
    """``(1/2n) ||f(X) - Y||_F^2``."""
    R = forward(weights, X, activation) - Y
    return 0.5 * (R * R).sum() / X.shape[0]


def gram_loss(weights: Sequence[torch.Tensor], Sxx: torch.Tensor, Sxy: torch.Tensor, syy: float) -> torch.Tensor:
    """The linear network's loss from sufficient statistics: with ``W = WL..W1``,
    ``(1/2)[tr(W Sxx W^T) - 2 tr(W Sxy) + syy]``, ``Sxx = X^T X/n``, ``Sxy = X^T Y/n``, ``syy = ||Y||_F^2/n``.

    The same function of the weights as :func:`mse_loss` (linear case), at ``O(d0^2 width)`` per
    evaluation instead of ``O(n d0 width)``.
    """
    W = weights[0]
    for V in weights[1:]:
        W = V @ W
    return 0.5 * ((W @ Sxx * W).sum() - 2.0 * (W.T * Sxy).sum() + syy)


def flat_params_loss(
    shapes: Sequence[tuple[int, int]], X: torch.Tensor, Y: torch.Tensor, activation: str = "linear"
) -> Callable[[torch.Tensor], torch.Tensor]:
    """The loss as a function of one flat parameter vector (for ``torch.autograd.functional.hessian``)."""
    sizes = [a * b for a, b in shapes]

    def fn(theta: torch.Tensor) -> torch.Tensor:
        parts = torch.split(theta, sizes)
        return mse_loss([p.reshape(s) for p, s in zip(parts, shapes)], X, Y, activation)

    return fn


class TrainingDiverged(ValueError):
    """:func:`train_gd` met a non-finite or exploding loss; the message names the epoch and the loss."""


@dataclass
class TrainResult:
    """Outcome of :func:`train_gd`: final weights, per-epoch loss and learning rate, snapshots."""

    weights: list[np.ndarray]
    losses: np.ndarray
    lrs: np.ndarray
    snapshots: dict[int, list[np.ndarray]] = field(default_factory=dict)


def _linear_gd_numpy(Ws, Sxx, Sxy, syy, *, lr, epochs, patience, min_rel_improvement, record, blowup):
    """Full-batch GD of a linear network on sufficient statistics, in the eigenbasis of ``Sxx``.

    GD is equivariant under an orthogonal change of input coordinates (``X -> X Q``,
    ``W1 -> W1 Q``): the iterates map onto each other exactly.  In the eigenbasis ``Sxx`` is
    diagonal, so the loss and the gradient cost ``O(sum_l d_l d_{l-1})`` per epoch instead of
    ``O(d0^2 dL)``; the weights are rotated back on output.
    """
    c, Q = np.linalg.eigh(Sxx)
    c = np.clip(c, 0.0, None)
    Ws = [W.copy() for W in Ws]
    Ws[0] = Ws[0] @ Q
    Sxy_q = Q.T @ Sxy  # (d0, dL)
    L = len(Ws)
    losses = np.empty(epochs + 1)
    lrs = np.empty(epochs + 1)
    snapshots: dict[int, list[np.ndarray]] = {}
    eta = float(lr)
    for t in range(epochs + 1):
        if t in record:
            snapshots[t] = [Ws[0] @ Q.T] + [W.copy() for W in Ws[1:]]
        prefix = [Ws[0]]  # prefix[l] = W_{l+1} ... W_1
        for W in Ws[1:]:
            prefix.append(W @ prefix[-1])
        P = prefix[-1]  # (dL, d0)
        PC = P * c
        loss = 0.5 * (float(np.sum(PC * P)) - 2.0 * float(np.sum(P * Sxy_q.T)) + syy)
        losses[t] = loss
        if not np.isfinite(loss) or loss > blowup:
            raise TrainingDiverged(f"train_gd diverged at epoch {t}: loss = {loss:.4g} (initial loss "
                                   f"{losses[0]:.4g}, learning rate {eta:.4g}); lower lr")
        if t > 0 and t % patience == 0 and losses[t] > (1.0 - min_rel_improvement) * losses[t - patience]:
            eta *= 0.5
        lrs[t] = eta
        if t == epochs:
            break
        G = PC - Sxy_q.T  # dLoss/dP, (dL, d0); dLoss/dW_l = A_l^T G B_l^T
        grads = []
        At = np.eye(G.shape[0])  # A_l^T for the top layer, then W_{l+1}^T A_{l+1}^T going down
        for l in range(L - 1, -1, -1):
            GB = G @ prefix[l - 1].T if l > 0 else G
            grads.append(At @ GB)
            At = Ws[l].T @ At
        for W, g in zip(Ws, reversed(grads)):
            W -= eta * g
    Ws[0] = Ws[0] @ Q.T
    return TrainResult(Ws, losses, lrs, snapshots)


def train_gd(
    weights: Sequence[ArrayLike],
    X: ArrayLike,
    Y: ArrayLike,
    *,
    lr: float,
    epochs: int,
    activation: str = "linear",
    patience: int = 100,
    min_rel_improvement: float = 1e-3,
    record_at: Sequence[int] = (),
    dtype: torch.dtype = torch.float64,
    device: str | torch.device = "cpu",
    blowup: float = 1e12,
) -> TrainResult:
    """Full-batch GD on the MSE loss with the halve-on-plateau schedule of paper 004.

    Every ``patience`` epochs the loss is compared with its value ``patience`` epochs
    earlier; if it improved by less than ``min_rel_improvement`` (relative), the learning
    rate is halved.  ``record_at`` lists epochs (0 = initialization, ``epochs`` = end) whose
    weights are kept in ``snapshots``.  Linear networks train in float64 NumPy on the
    sufficient statistics ``X^T X/n``, ``X^T Y/n`` (same iterates, see :func:`gram_loss`);
    tanh networks in torch on the full data.

    Raises
    ------
    TrainingDiverged
        (a ``ValueError``) when the loss becomes NaN/inf or exceeds ``blowup`` times
        ``max(1, initial loss)``; the message gives the epoch and the loss.
    """
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    epochs = _check_int("epochs", epochs, 0)
    patience = _check_int("patience", patience, 1)
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation must be in {_ACTIVATIONS}, got {activation!r}")
    record = {int(e) for e in record_at}
    if any(e < 0 or e > epochs for e in record):
        raise ValueError(f"record_at must lie in [0, epochs={epochs}], got {sorted(record)}")
    Xn, Yn = _np(X), _np(Y)
    _check_matrix("X", Xn)
    _check_matrix("Y", Yn)
    _check_rows(Xn, Yn)
    W0 = _validated_weights(weights)
    if W0[0].shape[1] != Xn.shape[1] or W0[-1].shape[0] != Yn.shape[1]:
        raise ValueError(f"weights must map d0={Xn.shape[1]} to dL={Yn.shape[1]}, got "
                         f"{W0[0].shape[1]} -> {W0[-1].shape[0]}")
    n = Xn.shape[0]
    if activation == "linear" and dtype == torch.float64 and str(device) == "cpu":
        syy = float(np.sum(Yn * Yn)) / n
        limit = blowup * max(1.0, 0.5 * syy)
        return _linear_gd_numpy(W0, Xn.T @ Xn / n, Xn.T @ Yn / n, syy, lr=lr, epochs=epochs, patience=patience,
                                min_rel_improvement=min_rel_improvement, record=record, blowup=limit)
    Xt = torch.as_tensor(Xn, dtype=dtype, device=device)
    Yt = torch.as_tensor(Yn, dtype=dtype, device=device)
    if activation == "linear":  # same loss and gradients from d0 x d0 sufficient statistics
        stats = (Xt.T @ Xt / n, Xt.T @ Yt / n, float((Yt * Yt).sum()) / n)

        def objective(ws):
            return gram_loss(ws, *stats)
    else:

        def objective(ws):
            return mse_loss(ws, Xt, Yt, activation)

    Ws = [torch.tensor(W, dtype=dtype, device=device, requires_grad=True) for W in W0]
    losses = np.empty(epochs + 1)
    lrs = np.empty(epochs + 1)
    snapshots: dict[int, list[np.ndarray]] = {}
    eta = float(lr)
    limit = None
    for t in range(epochs + 1):
        if t in record:
            snapshots[t] = [W.detach().cpu().numpy().astype(np.float64) for W in Ws]
        loss = objective(Ws)
        losses[t] = loss.item()
        if limit is None:
            limit = blowup * max(1.0, losses[0])
        if not np.isfinite(losses[t]) or losses[t] > limit:
            raise TrainingDiverged(f"train_gd diverged at epoch {t}: loss = {losses[t]:.4g} (initial loss "
                                   f"{losses[0]:.4g}, learning rate {eta:.4g}); lower lr")
        if t > 0 and t % patience == 0 and losses[t] > (1.0 - min_rel_improvement) * losses[t - patience]:
            eta *= 0.5
        lrs[t] = eta
        if t == epochs:
            break
        grads = torch.autograd.grad(loss, Ws)
        with torch.no_grad():
            for W, g in zip(Ws, grads):
                W -= eta * g
    return TrainResult([W.detach().cpu().numpy().astype(np.float64) for W in Ws], losses, lrs, snapshots)


# ----------------------------------------------------------------------------------------------
# Exact spectra
# ----------------------------------------------------------------------------------------------


def _chain(weights: Sequence[np.ndarray], d0: int, lo: int, hi: int) -> np.ndarray:
    """``W_hi ... W_{lo}`` (1-based, inclusive); the identity of the right size when empty."""
    if hi < lo:
        size = weights[lo - 2].shape[0] if lo >= 2 else d0
        return np.eye(size)
    P = weights[lo - 1]
    for W in weights[lo:hi]:
        P = W @ P
    return P


def _validated_weights(weights: Sequence[ArrayLike]) -> list[np.ndarray]:
    Ws = [_np(W) for W in weights]
    if not Ws:
        raise ValueError("weights must hold at least one matrix")
    for i, W in enumerate(Ws):
        _check_matrix(f"weights[{i}]", W)
        if i and W.shape[1] != Ws[i - 1].shape[0]:
            raise ValueError(f"weights[{i}] has {W.shape[1]} columns but weights[{i - 1}] has {Ws[i - 1].shape[0]} rows")
    return Ws


def _feature_root(X: ArrayLike | None, d0: int) -> np.ndarray:
    """``C^(1/2)`` with ``C = X^T X / n``; the identity for ``X=None`` (whitened, sigma_x = 1)."""
    if X is None:
        return np.eye(d0)
    Xn = _np(X)
    _check_matrix("X", Xn)
    if Xn.shape[1] != d0:
        raise ValueError(f"X must have d0={d0} columns (the input width of weights[0]), got {Xn.shape[1]}")
    C = Xn.T @ Xn / Xn.shape[0]
    evals, evecs = np.linalg.eigh(C)
    return (evecs * np.sqrt(np.clip(evals, 0.0, None))) @ evecs.T


def ggn_kronecker_matrix(weights: Sequence[ArrayLike], X: ArrayLike | None = None) -> np.ndarray:
    """``M = sum_l (C^(1/2) B_l^T B_l C^(1/2)) kron (A_l A_l^T)``, a ``d0*dL`` square matrix whose
    eigenvalues are the GGN's possibly-nonzero eigenvalues (``A_l = W_L..W_{l+1}``, ``B_l = W_{l-1}..W_1``)."""
    Ws = _validated_weights(weights)
    L, d0, dL = len(Ws), Ws[0].shape[1], Ws[-1].shape[0]
    R = _feature_root(X, d0)
    M = np.zeros((d0 * dL, d0 * dL))
    for l in range(1, L + 1):
        BR = _chain(Ws, d0, 1, l - 1) @ R
        A = _chain(Ws, d0, l + 1, L)
        M += np.kron(BR.T @ BR, A @ A.T)
    return M


def _kronecker_operator(weights: list[np.ndarray], R: np.ndarray):
    """``V -> sum_l (B_l R)^T (B_l R) V (A_l A_l^T)`` on ``d0 x dL`` matrices: ``M`` without forming it.

    One product costs ``O(sum_l d_{l-1} d0 dL + d0 dL^2)``; row-major ``vec(V)`` matches ``np.kron(P, Q)``.
    """
    L, d0 = len(weights), weights[0].shape[1]
    BRs = [_chain(weights, d0, 1, l - 1) @ R for l in range(1, L + 1)]
    Qs = [(lambda A: A @ A.T)(_chain(weights, d0, l + 1, L)) for l in range(1, L + 1)]
    dL = weights[-1].shape[0]

    def matvec(v: np.ndarray) -> np.ndarray:
        V = np.asarray(v).reshape(d0, dL)
        out = np.zeros_like(V)
        for BR, Q in zip(BRs, Qs):
            out += BR.T @ ((BR @ V) @ Q)
        return out.ravel()

    return matvec


_SPECTRUM_METHODS = ("auto", "dense", "lanczos")


def ggn_spectrum(
    weights: Sequence[ArrayLike], X: ArrayLike | None = None, k: int | None = None, *, method: str = "auto",
    dense_max: int = 200,
) -> np.ndarray:
    """The exact GGN / NTK eigenvalues of a linear network, largest first.

    Computed as the eigenvalues of the ``d0*dL`` matrix
    ``M = sum_l (C^(1/2) B_l^T B_l C^(1/2)) kron (A_l A_l^T)`` with ``C = X^T X / n``
    (``C = I`` for ``X=None``, i.e. data whitened with ``sigma_x = 1``).  All other
    ``p - d0*dL`` GGN eigenvalues are zero.  At a zero-loss point these are the Hessian's.

    Parameters
    ----------
    weights
        ``[W1, ..., WL]`` (finite).
    X
        ``(n, d0)`` features, or ``None`` for whitened data.
    k
        Return only the top ``k`` (default: all ``d0*dL``).
    method
        ``"dense"``: form ``M`` and diagonalize it (LAPACK ``syevd``), ``O((d0 dL)^3)``;
        ``"lanczos"`` (top-``k`` only): ARPACK's implicitly restarted Lanczos on the matrix-free
        product of :func:`_kronecker_operator`, to machine precision (``tol=0``);
        ``"auto"``: dense when ``d0*dL <= dense_max``, ``k`` is None or ``k`` is more than a quarter of
        ``d0*dL``; Lanczos otherwise (falling back to dense if ARPACK does not converge).
    """
    if method not in _SPECTRUM_METHODS:
        raise ValueError(f"method must be in {_SPECTRUM_METHODS}, got {method!r}")
    Ws = _validated_weights(weights)
    d0, dL = Ws[0].shape[1], Ws[-1].shape[0]
    size = d0 * dL
    if k is not None:
        k = _check_int("k", k, 1)
        if k > size:
            raise ValueError(f"k must be in [1, d0*dL = {size}], got {k}")
    if method == "auto":
        method = "dense" if (size <= dense_max or k is None or 4 * k > size) else "lanczos"
    if method == "lanczos" and (k is None or k >= size - 1):
        raise ValueError(f"method='lanczos' needs 1 <= k < d0*dL - 1 = {size - 1}, got k={k}")
    if method == "dense":
        ev = np.linalg.eigvalsh(ggn_kronecker_matrix(Ws, X))[::-1]
        return ev[: (size if k is None else k)].copy()
    from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

    op = LinearOperator((size, size), matvec=_kronecker_operator(Ws, _feature_root(X, d0)), dtype=np.float64)
    v0 = np.random.default_rng(0).standard_normal(size)  # fixed start: deterministic results
    try:
        vals = eigsh(op, k=k, which="LA", tol=0.0, v0=v0, ncv=min(size, max(2 * k + 1, 20)),
                     maxiter=50 * size, return_eigenvectors=False)
    except ArpackNoConvergence:  # rare; the dense route is slower but always converges
        return np.linalg.eigvalsh(ggn_kronecker_matrix(Ws, X))[::-1][:k].copy()
    return np.sort(vals)[::-1]


def two_layer_ntk_spectrum(W1: ArrayLike, W2: ArrayLike, sigma_x: float = 1.0) -> np.ndarray:
    """Closed form for two layers and whitened data: all ``sigma_x^2 (s_i(W1)^2 + s_j(W2)^2)``,
    ``i <= d0``, ``j <= d2``, singular values zero-padded; ``d0*d2`` values, largest first."""
    A, B = _np(W1), _np(W2)
    _check_2d("W1", A)
    _check_2d("W2", B)
    if B.shape[1] != A.shape[0]:
        raise ValueError(f"W2 must have {A.shape[0]} columns, got {B.shape[1]}")
    d0, d2 = A.shape[1], B.shape[0]
    s1 = np.zeros(d0)
    s2 = np.zeros(d2)
    sv1, sv2 = np.linalg.svd(A, compute_uv=False), np.linalg.svd(B, compute_uv=False)
    s1[: min(d0, sv1.size)] = sv1[:d0]
    s2[: min(d2, sv2.size)] = sv2[:d2]
    ev = sigma_x**2 * (s1[:, None] ** 2 + s2[None, :] ** 2).ravel()
    return np.sort(ev)[::-1]


def block_diagonal_sharpness(W1: ArrayLike, W2: ArrayLike, sigma_x: float = 1.0) -> float:
    """Top eigenvalue when the cross-layer blocks are dropped: ``sigma_x^2 max(||W1||^2, ||W2||^2)``."""
    _validated_weights([W1, W2])
    return float(sigma_x**2 * max(np.linalg.norm(_np(W1), 2) ** 2, np.linalg.norm(_np(W2), 2) ** 2))


def balanced_spectrum(s: ArrayLike, L: int, d0: int, dL: int, sigma_x: float = 1.0) -> np.ndarray:
    """Closed-form GGN spectrum of a strongly balanced depth-``L`` network on whitened data.

    ``lambda_ij = sigma_x^2 sum_{l=1..L} s_i^(2(l-1)) s_j^(2(L-l))`` for ``i, j <= r``, plus
    ``sigma_x^2 s_i^(2(L-1))`` with multiplicity ``(d0 - r) + (dL - r)``, plus zeros, ``d0*dL`` values
    in all, largest first.
    """
    sv = _np(s).ravel()
    r = sv.size
    L = _check_int("L", L, 1)
    d0, dL = _check_int("d0", d0, 1), _check_int("dL", dL, 1)
    if r == 0 or not np.all(np.isfinite(sv)):
        raise ValueError("s must hold at least one finite singular value")
    if not (r <= d0 and r <= dL):
        raise ValueError(f"len(s) = {r} must be <= d0 = {d0} and <= dL = {dL}")
    l = np.arange(1, L + 1)
    pw_i = sv[:, None] ** (2 * (l - 1))[None, :]  # (r, L)
    pw_j = sv[:, None] ** (2 * (L - l))[None, :]
    core = (pw_i @ pw_j.T).ravel()
    edge = np.repeat(sv ** (2 * (L - 1)), (d0 - r) + (dL - r)) if L > 1 else np.ones(r * ((d0 - r) + (dL - r)))
    zeros = np.zeros((d0 - r) * (dL - r)) if L > 1 else np.ones((d0 - r) * (dL - r))
    ev = sigma_x**2 * np.concatenate([core, edge, zeros])
    return np.sort(ev)[::-1]


def ggn_trace(weights: Sequence[ArrayLike], X: ArrayLike) -> float:
    """``Tr GGN = (1/n) sum_l ||X W1^T..W_{l-1}^T||_F^2 ||W_L..W_{l+1}||_F^2`` (any ``X``)."""
    Ws = _validated_weights(weights)
    if X is None:
        raise ValueError("X is required (an (n, d0) matrix); for whitened data with sigma_x pass the whitened X")
    Xn = _np(X)
    _check_matrix("X", Xn)
    L, d0 = len(Ws), Ws[0].shape[1]
    if Xn.shape[1] != d0:
        raise ValueError(f"X must have d0={d0} columns (the input width of weights[0]), got {Xn.shape[1]}")
    total = 0.0
    H = Xn
    for l in range(1, L + 1):
        A = _chain(Ws, d0, l + 1, L)
        total += float(np.sum(H * H) * np.sum(A * A))
        H = H @ Ws[l - 1].T
    return total / Xn.shape[0]


def sharpness_isotropic(X: ArrayLike, Y: ArrayLike, L: int) -> float:
    """``lambda_max = (L/n) ||X||_2^(2/L) ||Y||_2^(2(L-1)/L)`` at a balanced interpolating minimizer
    with isotropic features; for whitened ``X`` and one-hot ``Y`` this is ``L s_x^(2/L) alpha_max^(1-1/L)``."""
    Xn, Yn = _np(X), _np(Y)
    _check_matrix("X", Xn)
    _check_matrix("Y", Yn)
    _check_rows(Xn, Yn)
    L = _check_int("L", L, 1)
    n = Xn.shape[0]
    return float(L / n * np.linalg.norm(Xn, 2) ** (2.0 / L) * np.linalg.norm(Yn, 2) ** (2.0 * (L - 1) / L))


def sharpness_bounds(X: ArrayLike, W: ArrayLike, L: int) -> tuple[float, float]:
    """Bounds on ``lambda_max`` of a balanced depth-``L`` network with end-to-end map ``W`` (``dL x d0``):

    ``(s_min(X)^2/n) L ||W||_2^(2-2/L) <= lambda_max <= (||X||_2^2/n) L ||W||_2^(2-2/L)``,
    ``s_min`` the smallest nonzero singular value of ``X``.  With a rank-deficient ``X`` the lower
    bound needs the top right singular vector of ``W`` in the row space of ``X`` (true for the OLS
    solution ``W^T = X^+ Y``): the test vector ``C^(+1/2) v_1 (x) u_1`` then gives it.
    """
    Xn, Wn = _np(X), _np(W)
    _check_matrix("X", Xn)
    _check_matrix("W", Wn)
    L = _check_int("L", L, 1)
    if Wn.shape[1] != Xn.shape[1]:
        raise ValueError(f"W must have d0={Xn.shape[1]} columns, got {Wn.shape[1]}")
    n = Xn.shape[0]
    sx = np.linalg.svd(Xn, compute_uv=False)
    if sx[0] == 0.0:
        raise ValueError("X is all zero: the bounds are 0 and say nothing")
    sx_pos = sx[sx > sx[0] * max(Xn.shape) * np.finfo(np.float64).eps]
    core = L * np.linalg.norm(Wn, 2) ** (2.0 - 2.0 / L)
    return float(sx_pos[-1] ** 2 / n * core), float(sx[0] ** 2 / n * core)


def layer_sharpness_terms(weights: Sequence[ArrayLike], X: ArrayLike) -> np.ndarray:
    """``t_l = (1/n) ||X B_l^T||_2^2 ||A_l||_2^2`` for ``l = 1..L`` (``B_l = W_{l-1}..W_1``, ``A_l = W_L..W_{l+1}``).

    ``t_l`` is the top eigenvalue of the ``l``-th (positive semi-definite) Kronecker term of ``M``
    (see :func:`ggn_spectrum`), the spectral-norm analogue of the terms of :func:`ggn_trace`.
    """
    Ws = _validated_weights(weights)
    Xn = _np(X)
    _check_matrix("X", Xn)
    L, d0 = len(Ws), Ws[0].shape[1]
    if Xn.shape[1] != d0:
        raise ValueError(f"X must have d0={d0} columns (the input width of weights[0]), got {Xn.shape[1]}")
    out = np.empty(L)
    H = Xn
    for l in range(1, L + 1):
        out[l - 1] = np.linalg.norm(H, 2) ** 2 * np.linalg.norm(_chain(Ws, d0, l + 1, L), 2) ** 2 / Xn.shape[0]
        H = H @ Ws[l - 1].T
    return out


def weyl_sharpness_bounds(weights: Sequence[ArrayLike], X: ArrayLike) -> tuple[float, float]:
    """``max_l t_l <= lambda_max(GGN) <= sum_l t_l`` with ``t_l`` from :func:`layer_sharpness_terms`.

    Our reconstruction of the bounds of paper 004's Fig. 5 (the statement was lost from the text
    we have).  ``M = sum_l T_l`` with ``T_l = (C^(1/2) B_l^T B_l C^(1/2)) kron (A_l A_l^T)``
    positive semi-definite and ``lambda_max(T_l) = t_l``; Weyl's inequalities give
    ``max_l lambda_max(T_l) <= lambda_max(M) <= sum_l lambda_max(T_l)``.  Valid for any weights
    and any ``X``.  The upper bound is attained when all ``T_l`` share a top eigenvector: for a
    balanced network on isotropic features (``v_1 kron u_1``, the end-to-end map's top singular
    pair), where it equals ``L sigma_x^2 s_1^(2(L-1))``.  The lower bound is attained when one term
    dominates the others.  For two layers on whitened data the pair is
    ``max(||W1||^2, ||W2||^2) <= lambda_max <= ||W1||^2 + ||W2||^2`` (the block-diagonal value
    and the sum).
    """
    t = layer_sharpness_terms(weights, X)
    return float(t.max()), float(t.sum())


def balance_gaps(weights: Sequence[ArrayLike]) -> np.ndarray:
    """How far consecutive layers are from balanced: for ``l = 1..L-1``
    ``||W_{l+1}^T W_{l+1} - W_l W_l^T||_F / max(||W_{l+1}^T W_{l+1}||_F, ||W_l W_l^T||_F)``.

    Zero for (strongly) balanced layers; gradient flow conserves ``W_{l+1}^T W_{l+1} - W_l W_l^T``,
    so GD from a balanced start stays close to balanced, and from a Kaiming start keeps its gap.
    """
    Ws = _validated_weights(weights)
    out = np.empty(len(Ws) - 1)
    for l in range(len(Ws) - 1):
        a, b = Ws[l + 1].T @ Ws[l + 1], Ws[l] @ Ws[l].T
        out[l] = np.linalg.norm(a - b) / max(np.linalg.norm(a), np.linalg.norm(b), 1e-300)
    return out


def balanced_prediction(
    weights: Sequence[ArrayLike], X: ArrayLike | None = None, sigma_x: float = 1.0, k: int | None = None
) -> np.ndarray:
    """The balanced closed form :func:`balanced_spectrum` for the strongly balanced network with the
    same end-to-end map ``W = W_L..W_1`` on whitened data: shared singular values
    ``s_i = sigma_i(W P)^(1/L)``, ``i <= min(d)``; top ``k`` values (all ``d0*dL`` by default).

    ``P`` is the projector on the row space of ``X`` (the identity for ``X=None``): whitened
    rank-deficient features have ``X^T X / n = sigma_x^2 P``, and directions outside the row space
    (e.g. always-blank pixels) do not enter the Hessian.
    """
    Ws = _validated_weights(weights)
    L, d0 = len(Ws), Ws[0].shape[1]
    W = _chain(Ws, d0, 1, L)
    if X is not None:
        Xn = _np(X)
        _check_matrix("X", Xn)
        if Xn.shape[1] != d0:
            raise ValueError(f"X must have d0={d0} columns, got {Xn.shape[1]}")
        _, sx, Vt = np.linalg.svd(Xn, full_matrices=False)
        Vr = Vt[: int(np.sum(sx > max(Xn.shape) * np.finfo(np.float64).eps * sx[0]))].T
        W = (W @ Vr) @ Vr.T
    r = min([d0] + [V.shape[0] for V in Ws])
    s = np.linalg.svd(W, compute_uv=False)[:r] ** (1.0 / L)
    ev = balanced_spectrum(s, L, W.shape[1], W.shape[0], sigma_x)
    return ev if k is None else ev[: _check_int("k", k, 1)]


def interpolate_whitening(X: ArrayLike, t: float, sigma_x: float = 1.0) -> np.ndarray:
    """Features between ``X`` (``t = 0``) and its whitened version (``t = 1``, :func:`whiten`).

    With ``X = U_r S V_r^T`` (numerical rank ``r``) the result is ``U_r S_t V_r^T`` with
    ``S_t = S^(1-t) (sqrt(n) sigma_x)^t``: the singular values are interpolated geometrically, so the
    condition number is ``kappa(X)^(1-t)`` while the singular vectors stay those of ``X``.
    """
    Xn = _np(X)
    _check_matrix("X", Xn)
    if not 0.0 <= t <= 1.0:
        raise ValueError(f"t must be in [0, 1], got {t}")
    if not sigma_x > 0:
        raise ValueError(f"sigma_x must be > 0, got {sigma_x}")
    U, s, Vt = np.linalg.svd(Xn, full_matrices=False)
    if s[0] == 0.0:
        raise ValueError("X is all zero")
    r = int(np.sum(s > max(Xn.shape) * np.finfo(np.float64).eps * s[0]))
    st = s[:r] ** (1.0 - t) * (math.sqrt(Xn.shape[0]) * sigma_x) ** t
    return (U[:, :r] * st) @ Vt[:r]


def nonzero_eigenvalue_counts(dims: Sequence[int], *, n: int = 40, seed: int = 0, rtol: float = 1e-10) -> dict[str, int]:
    """Count the nonzero Hessian eigenvalues of a small strongly balanced linear network at zero loss.

    Whitened Gaussian features (``n x d0``), balanced layers with ``r = min(dims)`` singular values
    in ``U[0.5, 1.5]``, labels ``Y = f(X)``; the dense autograd Hessian's eigenvalues above
    ``rtol * lambda_max`` are counted.  Returns ``measured``, ``formula = r (d0 + dL - r)``,
    ``paper = min(dims)^2`` (the bound the paper states) and ``params``.
    """
    dims = [_check_int(f"dims[{i}]", d, 1) for i, d in enumerate(dims)]
    if len(dims) < 3:
        raise ValueError(f"dims must hold >= 3 sizes (>= 2 layers), got {dims}")
    rng = np.random.default_rng(seed)
    r, d0, dL = min(dims), dims[0], dims[-1]
    X = whiten(rng.standard_normal((n, d0)))
    Ws = balanced_weights(dims, rng.uniform(0.5, 1.5, r), seed=seed + 1)
    Y = X
    for W in Ws:
        Y = Y @ W.T
    ev = np.linalg.eigvalsh(hessian_matrix(_gram_loss_fn(X, Y), [torch.as_tensor(W) for W in Ws]))
    return {
        "measured": int(np.sum(ev > rtol * ev.max())),
        "formula": r * (d0 + dL - r),
        "paper": r * r,
        "params": int(sum(W.size for W in Ws)),
    }


# ----------------------------------------------------------------------------------------------
# Numerical Hessian tools
# ----------------------------------------------------------------------------------------------


class _HVP:
    """Hessian-vector products of ``loss_fn(*params)`` on flat float64 NumPy vectors."""

    def __init__(self, loss_fn: Callable[..., torch.Tensor], params: Sequence[torch.Tensor]):
        if len(params) == 0:
            raise ValueError("params must hold at least one tensor")
        for i, p in enumerate(params):
            if not bool(torch.isfinite(torch.as_tensor(p)).all()):
                raise ValueError(f"params[{i}] holds NaN or inf entries")
        self.params = [torch.as_tensor(p).detach().clone().requires_grad_(True) for p in params]
        loss = loss_fn(*self.params)
        if not bool(torch.isfinite(loss)):
            raise ValueError(f"loss_fn returned a non-finite loss ({loss.item()}) at params")
        self.grads = torch.autograd.grad(loss, self.params, create_graph=True)
        self.sizes = [p.numel() for p in self.params]
        self.dim = sum(self.sizes)
        self.dtype = self.params[0].dtype
        self.count = 0

    def __call__(self, v: np.ndarray) -> np.ndarray:
        vt = torch.as_tensor(np.ascontiguousarray(v).ravel(), dtype=self.dtype)
        parts = [c.reshape(p.shape) for c, p in zip(torch.split(vt, self.sizes), self.params)]
        hv = torch.autograd.grad(self.grads, self.params, grad_outputs=parts, retain_graph=True)
        self.count += 1
        return torch.cat([h.reshape(-1) for h in hv]).detach().cpu().numpy().astype(np.float64)

    def matmat(self, V: np.ndarray) -> np.ndarray:
        V = np.asarray(V).reshape(self.dim, -1)
        # one product per column: torch's batched (vmap) double-backward measured slower here
        return np.stack([self(V[:, j]) for j in range(V.shape[1])], axis=1)


_METHODS = ("lobpcg", "power", "eigsh")


def _power_deflated(op: Callable[[np.ndarray], np.ndarray], dim: int, k: int, *, tol: float, maxiter: int,
                    rng: np.random.Generator) -> list[float]:
    """Power iteration with deflation (PyHessian's scheme): the ``k`` largest-magnitude eigenvalues of
    ``op``; each stops when its Rayleigh quotient changes by less than ``tol`` (relative)."""
    vals: list[float] = []
    vecs: list[np.ndarray] = []
    for _ in range(k):
        v = rng.standard_normal(dim)
        v /= np.linalg.norm(v)
        lam = None
        for _ in range(maxiter):
            for u in vecs:
                v -= (u @ v) * u
            hv = op(v)
            for lu, u in zip(vals, vecs):
                hv -= lu * (u @ v) * u
            new = float(v @ hv)
            norm = np.linalg.norm(hv)
            if norm == 0.0:
                lam = 0.0
                break
            v = hv / norm
            if lam is not None and abs(new - lam) <= tol * (abs(lam) + 1e-300):
                lam = new
                break
            lam = new
        vals.append(float(lam))
        vecs.append(v)
    return vals


def _power_top_algebraic(hvp: "_HVP", k: int, *, tol: float, maxiter: int, rng: np.random.Generator) -> np.ndarray:
    """The ``k`` largest *algebraic* eigenvalues by power iteration on a shifted Hessian.

    Power iteration finds the largest-magnitude eigenvalue ``mu``; on an indefinite Hessian that can
    be a negative one.  A second run on ``|mu| I - H`` gives ``|mu| - lambda_min``, hence
    ``lambda_min``; with ``shift = max(0, -lambda_min)`` the operator ``H + shift I`` is positive
    semi-definite, its largest-magnitude eigenvalues are its largest algebraic ones, and deflation
    then returns ``lambda_1 >= ... >= lambda_k`` after subtracting the shift.
    """
    mu = _power_deflated(hvp, hvp.dim, 1, tol=tol, maxiter=maxiter, rng=rng)[0]
    a = abs(mu)
    top = _power_deflated(lambda v: a * v - hvp(v), hvp.dim, 1, tol=tol, maxiter=maxiter, rng=rng)[0]
    shift = max(0.0, -(a - top))  # lambda_min = |mu| - top
    if shift > 0.0:
        shift *= 1.0 + 1e-6  # strictly positive definite: no tie between +lambda and -lambda
    vals = _power_deflated(lambda v: hvp(v) + shift * v, hvp.dim, k, tol=tol, maxiter=maxiter, rng=rng)
    return np.sort(np.array(vals) - shift)[::-1]


def hessian_top_eigenvalues(
    loss_fn: Callable[..., torch.Tensor],
    params: Sequence[torch.Tensor],
    k: int,
    *,
    method: str = "lobpcg",
    tol: float = 1e-9,
    maxiter: int = 500,
    seed: int = 0,
    return_count: bool = False,
) -> np.ndarray | tuple[np.ndarray, int]:
    """Top-``k`` (largest algebraic) Hessian eigenvalues from Hessian-vector products.

    Parameters
    ----------
    loss_fn
        ``loss_fn(*params) -> scalar tensor``.
    params
        The point (tensors, float64 recommended); they are cloned, not modified.
    k
        Number of eigenvalues.
    method
        ``"lobpcg"`` (``scipy.sparse.linalg.lobpcg`` on a ``LinearOperator``), ``"eigsh"`` (ARPACK
        Lanczos), or ``"power"`` (PyHessian-style power iteration with deflation, on the Hessian
        shifted to be positive semi-definite so that it returns the largest *algebraic* eigenvalues
        also on indefinite Hessians; the relative change of the Rayleigh quotient below ``tol``
        stops each eigenvalue).
    tol, maxiter
        Stopping rule (the solver's residual tolerance; relative change for ``"power"``).
    seed
        Seed of the starting vectors.
    return_count
        Also return the number of Hessian-vector products used.
    """
    from scipy.sparse.linalg import LinearOperator, eigsh, lobpcg

    if method not in _METHODS:
        raise ValueError(f"method must be in {_METHODS}, got {method!r}")
    k = _check_int("k", k, 1)
    maxiter = _check_int("maxiter", maxiter, 1)
    hvp = _HVP(loss_fn, params)
    if not 1 <= k < hvp.dim:
        raise ValueError(f"k must be in [1, {hvp.dim - 1}], got {k}")
    rng = np.random.default_rng(seed)
    if method == "lobpcg":
        op = LinearOperator((hvp.dim, hvp.dim), matvec=hvp, matmat=hvp.matmat, dtype=np.float64)
        X0 = rng.standard_normal((hvp.dim, k))
        with warnings.catch_warnings():  # non-convergence warnings: accuracy is checked against exact spectra
            warnings.simplefilter("ignore", UserWarning)
            vals, _ = lobpcg(op, X0, largest=True, tol=tol, maxiter=maxiter)
        out = np.sort(vals)[::-1]
    elif method == "eigsh":
        op = LinearOperator((hvp.dim, hvp.dim), matvec=hvp, dtype=np.float64)
        vals = eigsh(op, k=k, which="LA", tol=tol, maxiter=maxiter, v0=rng.standard_normal(hvp.dim),
                     return_eigenvectors=False)
        out = np.sort(vals)[::-1]
    else:
        out = _power_top_algebraic(hvp, k, tol=tol, maxiter=maxiter, rng=rng)
    return (out, hvp.count) if return_count else out


def hessian_matrix(loss_fn: Callable[..., torch.Tensor], params: Sequence[torch.Tensor]) -> np.ndarray:
    """The dense Hessian, one Hessian-vector product per column (for small parameter counts)."""
    hvp = _HVP(loss_fn, params)
    H = hvp.matmat(np.eye(hvp.dim))
    return 0.5 * (H + H.T)


def hutchinson_trace(
    loss_fn: Callable[..., torch.Tensor], params: Sequence[torch.Tensor], probes: int, *, seed: int
) -> tuple[float, float]:
    """Hutchinson's estimate ``mean_i v_i^T H v_i`` over Rademacher probes, and its standard error."""
    probes = _check_int("probes", probes, 2)
    hvp = _HVP(loss_fn, params)
    rng = np.random.default_rng(seed)
    V = rng.choice(np.array([-1.0, 1.0]), size=(probes, hvp.dim)).T
    samples = np.sum(V * hvp.matmat(V), axis=0)
    return float(samples.mean()), float(samples.std(ddof=1) / math.sqrt(probes))


# ----------------------------------------------------------------------------------------------
# The chapter's experiments (one module-level function of one frozen config, for run_sweep)
# ----------------------------------------------------------------------------------------------


def prepare_data(
    dataset: str = "mnist5k",
    n: int = 5000,
    alpha_max: float | None = None,
    *,
    whitened: bool = True,
    sigma_x: float = 1.0,
    seed: int = 0,
    data_dir: str | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features, one-hot labels and integer labels of a (class-imbalanced) subset.

    Pixels are scaled to [0, 1] (digits: divided by 16); with ``whitened`` the features are
    replaced by their polar factor ``sqrt(n) sigma_x U V^T`` (paper 004, section 7).
    """
    from htlib import datasets

    Xall, lab = datasets.load_dataset(dataset, data_dir)
    if dataset == "digits":
        Xall = Xall / 16.0
    X, labels = class_imbalanced_subset(Xall, lab, n, alpha_max, seed=seed)
    if whitened:
        X = whiten(X, sigma_x)
    num_classes = int(lab.max()) + 1
    return X, one_hot(labels, num_classes), labels


_INITS = ("balanced", "kaiming")


@dataclass(frozen=True)
class LinearExperiment:
    """One training run of paper 004's section 7 and the spectra measured along it.

    ``init="balanced"`` draws the ``min(dims)`` shared singular values from
    ``U[0, init_scale]``; ``init="kaiming"`` is PyTorch's default ``nn.Linear`` init.
    The Hessian is measured at ``measure_points + 1`` evenly spaced epochs (0 and the last
    included): its top ``k`` eigenvalues numerically (``eig_method`` on Hessian-vector
    products, when ``numeric``) and from :func:`ggn_spectrum`; the trace exactly and, with
    ``hutchinson_probes > 0``, by Hutchinson.
    """

    depth: int = 4
    width: int = 64
    n: int = 5000
    alpha_max: float | None = None
    dataset: str = "mnist5k"
    data_dir: str | None = None
    whitened: bool = True
    sigma_x: float = 1.0
    init: str = "balanced"
    init_scale: float = 1.0
    activation: str = "linear"
    lr: float = 1e-2
    epochs: int = 1000
    patience: int = 100
    measure_points: int = 0
    log_spaced: bool = False
    k: int = 10
    numeric: bool = True
    eig_method: str = "lobpcg"
    eig_tol: float = 1e-7
    hutchinson_probes: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.depth < 1:
            raise ValueError(f"depth must be >= 1, got {self.depth}")
        if self.width < 1:
            raise ValueError(f"width must be >= 1, got {self.width}")
        if self.init not in _INITS:
            raise ValueError(f"init must be in {_INITS}, got {self.init!r}")
        if self.activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be in {_ACTIVATIONS}, got {self.activation!r}")
        if self.eig_method not in _METHODS:
            raise ValueError(f"eig_method must be in {_METHODS}, got {self.eig_method!r}")
        if not self.lr > 0 or not self.init_scale > 0 or not self.sigma_x > 0:
            raise ValueError("lr, init_scale and sigma_x must be > 0")
        if self.epochs < 0 or self.measure_points < 0 or self.hutchinson_probes < 0 or self.k < 1:
            raise ValueError("epochs, measure_points, hutchinson_probes must be >= 0 and k >= 1")
        if self.measure_points > self.epochs:
            raise ValueError(f"measure_points must be <= epochs = {self.epochs}, got {self.measure_points}")


def _measurement_epochs(epochs: int, points: int, log_spaced: bool) -> np.ndarray:
    """``points + 1`` epochs from 0 to ``epochs`` (evenly or log-spaced from 1), duplicates removed."""
    if not points:
        return np.array([epochs])
    grid = np.geomspace(1, max(epochs, 1), points) if log_spaced else np.linspace(0, epochs, points + 1)
    return np.unique(np.concatenate([[0], grid.round()]).astype(int))


def trace_norm_agreement(trace: ArrayLike, sq_norm: ArrayLike, hutch: ArrayLike | None = None,
                         hutch_se: ArrayLike | None = None, dip_tol: float = 0.01) -> dict[str, float | bool]:
    """How closely the trace follows the squared parameter norm along training (paper 004, Fig. 3).

    Returns ``corr_level`` (Pearson correlation of the two series), ``corr_diff`` (of their
    consecutive changes, which monotone series do not make trivially high), ``dip_trace`` /
    ``dip_norm`` (the series falls by more than ``dip_tol`` relative below its start and later rises by
    more than ``dip_tol`` above its minimum: flattening then sharpening) and ``hutch_z`` (largest
    ``|Hutchinson - trace| / s.e.``, NaN without Hutchinson).
    """
    a, b = _np(trace).ravel(), _np(sq_norm).ravel()
    if a.size != b.size or a.size < 3:
        raise ValueError(f"trace and sq_norm must have the same length >= 3, got {a.size} and {b.size}")

    def dip(x: np.ndarray) -> bool:
        i = int(np.argmin(x))
        return bool(x[i] < (1 - dip_tol) * x[0] and x[i:].max() > (1 + dip_tol) * x[i])

    z = np.nan
    if hutch is not None and hutch_se is not None:
        z = float(np.max(np.abs(_np(hutch) - a) / _np(hutch_se)))
    return {"corr_level": float(np.corrcoef(a, b)[0, 1]), "corr_diff": float(np.corrcoef(np.diff(a), np.diff(b))[0, 1]),
            "dip_trace": dip(a), "dip_norm": dip(b), "hutch_z": z}


def run_linear_experiment(cfg: LinearExperiment) -> dict[str, np.ndarray | float]:
    """Train as ``cfg`` says and measure the Hessian; returns a dict of NumPy arrays and floats.

    Keys: ``epochs`` (measurement epochs), ``loss`` (per epoch), ``lr`` (per epoch), and per
    measurement ``numeric`` (top-k Hessian, NaN when not computed), ``ggn`` (top-k exact GGN),
    ``sq_norm`` (squared parameter norm), ``ggn_trace``, ``hutch``/``hutch_se``,
    ``spec_norms2`` (``||W_l||_2^2`` per layer); at the end ``theory`` (isotropic sharpness
    ``(L/n)||X||^(2/L)||Y||^(2(L-1)/L)``), ``lower``/``upper`` (anisotropic bounds),
    ``alpha`` (largest class proportion).
    """
    X, Y, labels = prepare_data(cfg.dataset, cfg.n, cfg.alpha_max, whitened=cfg.whitened,
                                sigma_x=cfg.sigma_x, seed=cfg.seed, data_dir=cfg.data_dir)
    dims = [X.shape[1]] + [cfg.width] * (cfg.depth - 1) + [Y.shape[1]]
    if cfg.init == "balanced":
        s = np.random.default_rng(cfg.seed + 1).uniform(0.0, cfg.init_scale, min(dims))
        W0 = balanced_weights(dims, s, seed=cfg.seed + 2)
    else:
        W0 = kaiming_uniform_weights(dims, seed=cfg.seed + 2)
    points = _measurement_epochs(cfg.epochs, cfg.measure_points, cfg.log_spaced)
    res = train_gd(W0, X, Y, lr=cfg.lr, epochs=cfg.epochs, activation=cfg.activation,
                   patience=cfg.patience, record_at=points)
    Xt, Yt = torch.as_tensor(X), torch.as_tensor(Y)
    if cfg.activation == "linear":
        Q, loss_fn = _eigenbasis_loss(X, Y)
    else:
        Q = None

        def loss_fn(*ws: torch.Tensor) -> torch.Tensor:
            return mse_loss(ws, Xt, Yt, cfg.activation)

    k = min(cfg.k, dims[0] * dims[-1])
    keys = ("numeric", "ggn", "sq_norm", "ggn_trace", "hutch", "hutch_se", "spec_norms2", "balanced_pred", "balance")
    out: dict[str, list] = {key: [] for key in keys}
    for e in points:
        Ws = res.snapshots[int(e)]
        # linear nets: the point in the eigenbasis of X^T X (an orthogonal change of variables, so the
        # Hessian's eigenvalues and trace are unchanged); tanh nets: as they are
        params = [torch.as_tensor(Ws[0] @ Q if Q is not None else Ws[0])] + [torch.as_tensor(W) for W in Ws[1:]]
        if cfg.numeric:
            out["numeric"].append(hessian_top_eigenvalues(loss_fn, params, k, method=cfg.eig_method,
                                                          tol=cfg.eig_tol, seed=cfg.seed))
        else:
            out["numeric"].append(np.full(k, np.nan))
        out["ggn"].append(ggn_spectrum(Ws, X, k=k) if cfg.activation == "linear" else np.full(k, np.nan))
        out["sq_norm"].append(float(sum(np.sum(W * W) for W in Ws)))
        out["ggn_trace"].append(ggn_trace(Ws, X) if cfg.activation == "linear" else np.nan)
        if cfg.hutchinson_probes:
            est, se = hutchinson_trace(loss_fn, params, cfg.hutchinson_probes, seed=cfg.seed)
        else:
            est, se = np.nan, np.nan
        out["hutch"].append(est)
        out["hutch_se"].append(se)
        out["spec_norms2"].append([np.linalg.norm(W, 2) ** 2 for W in Ws])
        out["balanced_pred"].append(balanced_prediction(Ws, X, cfg.sigma_x, k) if cfg.whitened else np.full(k, np.nan))
        out["balance"].append(balance_gaps(Ws) if cfg.depth > 1 else np.zeros(1))
    W_end = res.weights[0]
    for W in res.weights[1:]:
        W_end = W @ W_end
    lower, upper = sharpness_bounds(X, W_end, cfg.depth)
    weyl = weyl_sharpness_bounds(res.weights, X) if cfg.activation == "linear" else (np.nan, np.nan)
    result: dict[str, np.ndarray | float] = {key: np.asarray(v, dtype=np.float64) for key, v in out.items()}
    result.update(
        epochs=points.astype(np.int64),
        loss=res.losses,
        lr=res.lrs,
        theory=sharpness_isotropic(X, Y, cfg.depth),
        lower=lower,
        upper=upper,
        weyl_lower=weyl[0],
        weyl_upper=weyl[1],
        alpha=float(np.bincount(labels).max() / labels.size),
    )
    return result


def _eigenbasis_loss(X: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, Callable[..., torch.Tensor]]:
    """``Q`` (eigenvectors of ``X^T X``) and the linear network's loss as a function of ``(W1 Q, W2, ..)``.

    In that basis ``X^T X / n = diag(c)``, so a loss evaluation costs ``O(dL d0)`` for the data term
    instead of ``O(dL d0^2)`` (:func:`gram_loss`); it is the same function after the orthogonal change
    of variables ``W1 -> W1 Q``, so Hessian eigenvalues and traces are unchanged.
    """
    n = X.shape[0]
    c, Q = np.linalg.eigh(X.T @ X / n)
    ct = torch.as_tensor(np.clip(c, 0.0, None))
    Sxy = torch.as_tensor(Q.T @ (X.T @ Y) / n)
    syy = float(np.sum(Y * Y)) / n

    def loss_fn(*ws: torch.Tensor) -> torch.Tensor:
        P = ws[0]
        for V in ws[1:]:
            P = V @ P
        return 0.5 * ((P * ct * P).sum() - 2.0 * (P.T * Sxy).sum() + syy)

    return Q, loss_fn


def _gram_loss_fn(X: np.ndarray, Y: np.ndarray) -> Callable[..., torch.Tensor]:
    Xt, Yt = torch.as_tensor(X), torch.as_tensor(Y)
    n = Xt.shape[0]
    stats = (Xt.T @ Xt / n, Xt.T @ Yt / n, float((Yt * Yt).sum()) / n)
    return lambda *ws: gram_loss(ws, *stats)


def exact_ggn_case(n: int = 100, d: int = 20, depth: int = 5, sigma_x: float = 3.0, *, seed: int = 0) -> dict[str, np.ndarray]:
    """Paper 004, Fig. 6 left: whitened Gaussian ``X`` (``n x d``), balanced ``d x d`` layers with
    singular values ``U[0, 1]``, labels ``Y = f(X)`` (zero loss, so Hessian = GGN).

    Returns the dense Hessian's eigenvalues (``numeric``, largest first), the closed form
    :func:`balanced_spectrum` (``theory``, ``d*d`` values) and the singular values ``s``.
    """
    rng = np.random.default_rng(seed)
    X = whiten(rng.standard_normal((n, d)), sigma_x)
    s = rng.uniform(0.0, 1.0, d)
    Ws = balanced_weights([d] * (depth + 1), s, seed=seed + 1)
    Y = X
    for W in Ws:
        Y = Y @ W.T
    H = hessian_matrix(_gram_loss_fn(X, Y), [torch.as_tensor(W) for W in Ws])
    return {
        "numeric": np.sort(np.linalg.eigvalsh(H))[::-1],
        "theory": balanced_spectrum(s, depth, d, d, sigma_x),
        "s": np.sort(s)[::-1],
    }


def depth_sweep(
    depths: Sequence[int], sigma_xs: Sequence[float], *, n: int = 100, d: int = 20, width: int = 20,
    seed: int = 0, tol: float = 1e-9,
) -> dict[str, np.ndarray]:
    """Sharpness of balanced interpolating minimizers against depth (paper 004, Fig. 6 middle).

    Labels from a random linear teacher ``Y = X0 T^T`` (``X0`` Gaussian ``n x d``, ``T`` Gaussian
    ``d x d`` scaled by ``1/sqrt(d)``), features ``X`` = ``X0`` whitened with scale ``sigma_x``
    (same column space, so zero loss is reachable); for each depth the OLS
    solution ``T`` is written as a balanced network (:func:`ols_balanced_weights`, hidden width
    ``width``) and its top Hessian eigenvalue found by ARPACK Lanczos (``eigsh``) on Hessian-vector products.  Returns ``numeric`` and ``theory``
    (shape ``(len(sigma_xs), len(depths))``) and ``crossover = 2 ln(||X||/||Y||)`` per ``sigma_x``.
    """
    rng = np.random.default_rng(seed)
    X0 = rng.standard_normal((n, d))
    T = rng.standard_normal((d, d)) / math.sqrt(d)
    Y = X0 @ T.T  # fixed labels; whitening keeps the column space, so every X below interpolates them
    numeric = np.empty((len(sigma_xs), len(depths)))
    theory = np.empty_like(numeric)
    cross = np.empty(len(sigma_xs))
    for a, sx in enumerate(sigma_xs):
        X = whiten(X0, sx)
        cross[a] = 2.0 * math.log(np.linalg.norm(X, 2) / np.linalg.norm(Y, 2))
        loss_fn = _gram_loss_fn(X, Y)
        for b, L in enumerate(depths):
            Ws = ols_balanced_weights(X, Y, [d] + [width] * (L - 1) + [d], seed=seed + b)
            numeric[a, b] = hessian_top_eigenvalues(loss_fn, [torch.as_tensor(W) for W in Ws], 1,
                                                    method="eigsh", tol=tol, seed=seed)[0]
            theory[a, b] = sharpness_isotropic(X, Y, L)
    return {"numeric": numeric, "theory": theory, "crossover": cross}


def _ols_point(X: np.ndarray, Y: np.ndarray, width: int, depth: int, seed: int, numeric: bool) -> dict[str, float]:
    dims = [X.shape[1]] + [width] * (depth - 1) + [Y.shape[1]]
    Ws = ols_balanced_weights(X, Y, dims, seed=seed)
    W = _chain(Ws, dims[0], 1, depth)
    lo, hi = sharpness_bounds(X, W, depth)
    wlo, whi = weyl_sharpness_bounds(Ws, X)
    hess = (hessian_top_eigenvalues(_gram_loss_fn(X, Y), [torch.as_tensor(V) for V in Ws], 1,
                                    method="lobpcg", tol=1e-8, seed=seed)[0] if numeric else np.nan)
    return {"ggn": ggn_spectrum(Ws, X, k=1)[0], "hessian": hess, "lower": lo, "upper": hi,
            "weyl_lower": wlo, "weyl_upper": whi, "iso": sharpness_isotropic(X, Y, depth)}


def ols_sharpness(
    alphas: Sequence[float], *, whitened: bool, n: int = 1000, width: int = 128, depth: int = 2,
    dataset: str = "mnist5k", data_dir: str | None = None, sigma_x: float = 1.0, seed: int = 0,
    numeric: bool = True,
) -> dict[str, np.ndarray]:
    """Top GGN and Hessian eigenvalues of the OLS solution written as a balanced network, and the
    bounds, for class-imbalanced subsets (paper 004, Fig. 5).

    Returns arrays over ``alphas``: ``ggn`` (exact top GGN eigenvalue), ``hessian`` (top Hessian
    eigenvalue by LOBPCG, NaN unless ``numeric``), ``lower``, ``upper`` (:func:`sharpness_bounds`),
    ``weyl_lower``, ``weyl_upper`` (:func:`weyl_sharpness_bounds`), ``iso``
    (:func:`sharpness_isotropic`).
    """
    rows = []
    for a in alphas:
        X, Y, _ = prepare_data(dataset, n, a, whitened=whitened, sigma_x=sigma_x, seed=seed, data_dir=data_dir)
        rows.append(_ols_point(X, Y, width, depth, seed, numeric))
    return {key: np.array([r[key] for r in rows]) for key in rows[0]}


def anisotropy_sweep(
    ts: Sequence[float], *, n: int = 5000, width: int = 128, depth: int = 2, dataset: str = "mnist5k",
    data_dir: str | None = None, seed: int = 0,
) -> dict[str, np.ndarray]:
    """The Fig. 5 quantities along :func:`interpolate_whitening` from raw (``t=0``) to whitened
    (``t=1``) features of one balanced subset; adds ``kappa`` (condition number of the features on
    their row space).  Exact GGN only (no Hessian-vector products)."""
    X0, Y, _ = prepare_data(dataset, n, None, whitened=False, seed=seed, data_dir=data_dir)
    rows = []
    for t in ts:
        X = interpolate_whitening(X0, float(t))
        row = _ols_point(X, Y, width, depth, seed, numeric=False)
        sv = np.linalg.svd(X, compute_uv=False)
        row["kappa"] = sv[0] / sv[sv > max(X.shape) * np.finfo(np.float64).eps * sv[0]][-1]
        rows.append(row)
    return {key: np.array([r[key] for r in rows]) for key in rows[0]}

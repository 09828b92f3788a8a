"""Exact Hessian/GGN spectra, traces and sharpness bounds of linear networks (paper 004).

Owns: the data preparation of paper 004's section 7 (polar-factor whitening,
balanced weight sampling, class-imbalanced subsets), full-batch GD training of
linear and tanh MLPs with the halve-on-plateau learning rate, the closed-form
spectra (two layers, strongly balanced deep networks), the exact GGN spectrum
through a ``d0*dL`` Kronecker sum, the trace, the sharpness of balanced
interpolating minimizers and its anisotropic bounds, and the numerical Hessian
tools that check them (LOBPCG / power iteration on Hessian-vector products,
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


# ----------------------------------------------------------------------------------------------
# Data preparation (paper 004, section 7)
# ----------------------------------------------------------------------------------------------


def whiten(X: ArrayLike, sigma_x: float = 1.0) -> np.ndarray:
    """Replace ``X = U S V^T`` (thin SVD, ``n x d0``) by ``sqrt(n) sigma_x U V^T``.

    The result has ``X^T X = n sigma_x^2 I`` when ``n >= d0`` and ``X`` has full column rank.
    """
    Xn = _np(X)
    _check_2d("X", Xn)
    if not sigma_x > 0:
        raise ValueError(f"sigma_x must be > 0, got {sigma_x}")
    n = Xn.shape[0]
    U, _, Vt = np.linalg.svd(Xn, full_matrices=False)
    return math.sqrt(n) * sigma_x * (U @ Vt)


def one_hot(labels: ArrayLike, num_classes: int | None = None) -> np.ndarray:
    """One-hot encode integer labels 0..C-1 into an ``(n, C)`` float64 matrix."""
    lab = np.asarray(labels.detach().cpu().numpy() if isinstance(labels, torch.Tensor) else labels)
    if lab.ndim != 1 or not np.issubdtype(lab.dtype, np.integer):
        raise ValueError("labels must be a 1-D array of integers")
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


def ols_balanced_weights(X: ArrayLike, Y: ArrayLike, dims: Sequence[int], *, seed: int) -> list[np.ndarray]:
    """A strongly balanced network whose product is the OLS solution ``W^T = X^+ Y``.

    ``W = U diag(s) V^T``; every layer gets singular values ``s^(1/L)``; ``V_1 = V`` and
    ``U_L = U``, the hidden singular vectors are random (seeded).
    """
    Xn, Yn = _np(X), _np(Y)
    dims = [int(d) for d in dims]
    if dims[0] != Xn.shape[1] or dims[-1] != Yn.shape[1]:
        raise ValueError(f"dims must start with d0={Xn.shape[1]} and end with dL={Yn.shape[1]}, got {dims}")
    W = (np.linalg.pinv(Xn) @ Yn).T  # (dL, d0)
    k = min(dims)
    U, s, Vt = np.linalg.svd(W, full_matrices=False)
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


@dataclass
class TrainResult:
    """Outcome of :func:`train_gd`: final weights, per-epoch loss and learning rate, snapshots."""

    weights: list[np.ndarray]
    losses: np.ndarray
    lrs: np.ndarray
    snapshots: dict[int, list[np.ndarray]] = field(default_factory=dict)


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
) -> TrainResult:
    """Full-batch GD on the MSE loss with the halve-on-plateau schedule of paper 004.

    Every ``patience`` epochs the loss is compared with its value ``patience`` epochs
    earlier; if it improved by less than ``min_rel_improvement`` (relative), the learning
    rate is halved.  ``record_at`` lists epochs (0 = initialization, ``epochs`` = end) whose
    weights are kept in ``snapshots``.
    """
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    if epochs < 0:
        raise ValueError(f"epochs must be >= 0, got {epochs}")
    if patience < 1:
        raise ValueError(f"patience must be >= 1, got {patience}")
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation must be in {_ACTIVATIONS}, got {activation!r}")
    record = {int(e) for e in record_at}
    if any(e < 0 or e > epochs for e in record):
        raise ValueError(f"record_at must lie in [0, epochs={epochs}], got {sorted(record)}")
    Xt = torch.as_tensor(_np(X), dtype=dtype, device=device)
    Yt = torch.as_tensor(_np(Y), dtype=dtype, device=device)
    if activation == "linear":  # same loss and gradients from d0 x d0 sufficient statistics
        n = Xt.shape[0]
        stats = (Xt.T @ Xt / n, Xt.T @ Yt / n, float((Yt * Yt).sum()) / n)

        def objective(ws):
            return gram_loss(ws, *stats)
    else:

        def objective(ws):
            return mse_loss(ws, Xt, Yt, activation)

    Ws = [torch.tensor(_np(W), dtype=dtype, device=device, requires_grad=True) for W in weights]
    losses = np.empty(epochs + 1)
    lrs = np.empty(epochs + 1)
    snapshots: dict[int, list[np.ndarray]] = {}
    eta = float(lr)
    for t in range(epochs + 1):
        if t in record:
            snapshots[t] = [W.detach().cpu().numpy().copy() for W in Ws]
        loss = objective(Ws)
        losses[t] = loss.item()
        if t > 0 and t % patience == 0 and losses[t] > (1.0 - min_rel_improvement) * losses[t - patience]:
            eta *= 0.5
        lrs[t] = eta
        if t == epochs:
            break
        grads = torch.autograd.grad(loss, Ws)
        with torch.no_grad():
            for W, g in zip(Ws, grads):
                W -= eta * g
    return TrainResult([W.detach().cpu().numpy() for W in Ws], losses, lrs, snapshots)


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
        _check_2d(f"weights[{i}]", W)
        if i and W.shape[1] != Ws[i - 1].shape[0]:
            raise ValueError(f"weights[{i}] has {W.shape[1]} columns but weights[{i - 1}] has {Ws[i - 1].shape[0]} rows")
    return Ws


def _feature_root(X: ArrayLike | None, d0: int) -> np.ndarray:
    """``C^(1/2)`` with ``C = X^T X / n``; the identity for ``X=None`` (whitened, sigma_x = 1)."""
    if X is None:
        return np.eye(d0)
    Xn = _np(X)
    _check_2d("X", Xn)
    if Xn.shape[1] != d0:
        raise ValueError(f"X must have d0={d0} columns, got {Xn.shape[1]}")
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


def ggn_spectrum(weights: Sequence[ArrayLike], X: ArrayLike | None = None, k: int | None = None) -> np.ndarray:
    """The exact GGN / NTK eigenvalues of a linear network, largest first.

    Computed as the eigenvalues of the ``d0*dL`` matrix
    ``M = sum_l (C^(1/2) B_l^T B_l C^(1/2)) kron (A_l A_l^T)`` with ``C = X^T X / n``
    (``C = I`` for ``X=None``, i.e. data whitened with ``sigma_x = 1``).  All other
    ``p - d0*dL`` GGN eigenvalues are zero.  At a zero-loss point these are the Hessian's.

    Parameters
    ----------
    weights
        ``[W1, ..., WL]``.
    X
        ``(n, d0)`` features, or ``None`` for whitened data.
    k
        Return only the top ``k`` (default: all ``d0*dL``).
    """
    M = ggn_kronecker_matrix(weights, X)
    size = M.shape[0]
    if k is not None and not 1 <= k <= size:
        raise ValueError(f"k must be in [1, d0*dL = {size}], got {k}")
    if k is None or k == size:
        ev = np.linalg.eigvalsh(M)
    else:
        from scipy.linalg import eigh

        ev = eigh(M, eigvals_only=True, subset_by_index=[size - k, size - 1], driver="evx")
    return ev[::-1].copy()


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
    return float(sigma_x**2 * max(np.linalg.norm(_np(W1), 2) ** 2, np.linalg.norm(_np(W2), 2) ** 2))


def balanced_spectrum(s: ArrayLike, L: int, d0: int, dL: int, sigma_x: float = 1.0) -> np.ndarray:
    """Closed-form GGN spectrum of a strongly balanced depth-``L`` network on whitened data.

    ``lambda_ij = sigma_x^2 sum_{l=1..L} s_i^(2(l-1)) s_j^(2(L-l))`` for ``i, j <= r``, plus
    ``sigma_x^2 s_i^(2(L-1))`` with multiplicity ``(d0 - r) + (dL - r)``, plus zeros, ``d0*dL`` values
    in all, largest first.
    """
    sv = _np(s).ravel()
    r = sv.size
    if L < 1:
        raise ValueError(f"L must be >= 1, got {L}")
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
    Xn = _np(X)
    _check_2d("X", Xn)
    L, d0 = len(Ws), Ws[0].shape[1]
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
    _check_2d("X", Xn)
    _check_2d("Y", Yn)
    if L < 1:
        raise ValueError(f"L must be >= 1, got {L}")
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
    _check_2d("X", Xn)
    _check_2d("W", Wn)
    if L < 1:
        raise ValueError(f"L must be >= 1, got {L}")
    if Wn.shape[1] != Xn.shape[1]:
        raise ValueError(f"W must have d0={Xn.shape[1]} columns, got {Wn.shape[1]}")
    n = Xn.shape[0]
    sx = np.linalg.svd(Xn, compute_uv=False)
    sx_pos = sx[sx > sx[0] * max(Xn.shape) * np.finfo(np.float64).eps]
    core = L * np.linalg.norm(Wn, 2) ** (2.0 - 2.0 / L)
    return float(sx_pos[-1] ** 2 / n * core), float(sx[0] ** 2 / n * core)


# ----------------------------------------------------------------------------------------------
# Numerical Hessian tools
# ----------------------------------------------------------------------------------------------


class _HVP:
    """Hessian-vector products of ``loss_fn(*params)`` on flat float64 NumPy vectors."""

    def __init__(self, loss_fn: Callable[..., torch.Tensor], params: Sequence[torch.Tensor]):
        self.params = [p.detach().clone().requires_grad_(True) for p in params]
        loss = loss_fn(*self.params)
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
        return np.stack([self(V[:, j]) for j in range(V.shape[1])], axis=1)


_METHODS = ("lobpcg", "power", "eigsh")


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
        Lanczos), or ``"power"`` (PyHessian-style power iteration with deflation; the relative
        change of the Rayleigh quotient below ``tol`` stops each eigenvalue).
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
        found_vals: list[float] = []
        found_vecs: list[np.ndarray] = []
        for _ in range(k):
            v = rng.standard_normal(hvp.dim)
            v /= np.linalg.norm(v)
            lam = None
            for _ in range(maxiter):
                for u in found_vecs:
                    v -= (u @ v) * u
                hv = hvp(v)
                for lu, u in zip(found_vals, found_vecs):
                    hv -= lu * (u @ v) * u
                new = float(v @ hv)
                v = hv / np.linalg.norm(hv)
                if lam is not None and abs(new - lam) <= tol * (abs(lam) + 1e-300):
                    lam = new
                    break
                lam = new
            found_vals.append(float(lam))
            found_vecs.append(v)
        out = np.sort(np.array(found_vals))[::-1]
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
    if probes < 2:
        raise ValueError(f"probes must be >= 2 (for a standard error), got {probes}")
    hvp = _HVP(loss_fn, params)
    rng = np.random.default_rng(seed)
    samples = np.empty(probes)
    for i in range(probes):
        v = rng.choice(np.array([-1.0, 1.0]), size=hvp.dim)
        samples[i] = v @ hvp(v)
    return float(samples.mean()), float(samples.std(ddof=1) / math.sqrt(probes))


# ----------------------------------------------------------------------------------------------
# The chapter's experiments (one module-level function of one frozen config, for run_sweep)
# ----------------------------------------------------------------------------------------------


def prepare_data(
    dataset: str = "digits",
    n: int = 1797,
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
        if n < X.shape[1]:
            raise ValueError(f"whitening needs n >= d0 = {X.shape[1]}, got n={n}")
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
    n: int = 1797
    alpha_max: float | None = None
    dataset: str = "digits"
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
    points = np.unique(np.linspace(0, cfg.epochs, cfg.measure_points + 1).round().astype(int)) if cfg.measure_points else np.array([cfg.epochs])
    res = train_gd(W0, X, Y, lr=cfg.lr, epochs=cfg.epochs, activation=cfg.activation,
                   patience=cfg.patience, record_at=points)
    Xt, Yt = torch.as_tensor(X), torch.as_tensor(Y)
    stats = (Xt.T @ Xt / Xt.shape[0], Xt.T @ Yt / Xt.shape[0], float((Yt * Yt).sum()) / Xt.shape[0])

    def loss_fn(*ws: torch.Tensor) -> torch.Tensor:
        # linear nets: the identical loss from sufficient statistics (see gram_loss), much cheaper HVPs
        return gram_loss(ws, *stats) if cfg.activation == "linear" else mse_loss(ws, Xt, Yt, cfg.activation)

    k = min(cfg.k, dims[0] * dims[-1])
    out: dict[str, list] = {key: [] for key in ("numeric", "ggn", "sq_norm", "ggn_trace", "hutch", "hutch_se", "spec_norms2")}
    for e in points:
        Ws = res.snapshots[int(e)]
        params = [torch.as_tensor(W) for W in Ws]
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
    W_end = res.weights[0]
    for W in res.weights[1:]:
        W_end = W @ W_end
    lower, upper = sharpness_bounds(X, W_end, cfg.depth)
    result: dict[str, np.ndarray | float] = {key: np.asarray(v, dtype=np.float64) for key, v in out.items()}
    result.update(
        epochs=points.astype(np.int64),
        loss=res.losses,
        lr=res.lrs,
        theory=sharpness_isotropic(X, Y, cfg.depth),
        lower=lower,
        upper=upper,
        alpha=float(np.bincount(labels).max() / labels.size),
    )
    return result


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
    ``width``) and its top Hessian eigenvalue found by LOBPCG.  Returns ``numeric`` and ``theory``
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


def ols_sharpness(
    alphas: Sequence[float], *, whitened: bool, n: int = 300, width: int = 128, depth: int = 2,
    dataset: str = "digits", data_dir: str | None = None, sigma_x: float = 1.0, seed: int = 0,
) -> dict[str, np.ndarray]:
    """Top GGN and Hessian eigenvalues of the OLS solution written as a balanced network, and the
    anisotropic bounds, for class-imbalanced subsets (paper 004, Fig. 5).

    Returns arrays over ``alphas``: ``ggn`` (exact top GGN eigenvalue), ``hessian`` (top Hessian
    eigenvalue by LOBPCG), ``lower``, ``upper`` (:func:`sharpness_bounds`), ``iso`` (the isotropic
    formula :func:`sharpness_isotropic`).
    """
    keys = ("ggn", "hessian", "lower", "upper", "iso")
    out = {k: np.empty(len(alphas)) for k in keys}
    for i, a in enumerate(alphas):
        X, Y, _ = prepare_data(dataset, n, a, whitened=whitened, sigma_x=sigma_x, seed=seed, data_dir=data_dir)
        dims = [X.shape[1]] + [width] * (depth - 1) + [Y.shape[1]]
        Ws = ols_balanced_weights(X, Y, dims, seed=seed)
        W = Ws[0]
        for V in Ws[1:]:
            W = V @ W
        out["ggn"][i] = ggn_spectrum(Ws, X, k=1)[0]
        out["hessian"][i] = hessian_top_eigenvalues(_gram_loss_fn(X, Y), [torch.as_tensor(V) for V in Ws], 1,
                                                    method="lobpcg", tol=1e-8, seed=seed)[0]
        out["lower"][i], out["upper"][i] = sharpness_bounds(X, W, depth)
        out["iso"][i] = sharpness_isotropic(X, Y, depth)
    return out

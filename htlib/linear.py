"""Exact Hessian/GGN spectra, traces and sharpness bounds of linear networks, GD training, and the numerical
Hessian tools that check them (LOBPCG, ARPACK Lanczos, power iteration, Hutchinson's trace).

Samples are rows: ``X`` is ``(n, d0)``, ``Y`` is ``(n, dL)``; ``weights = [W1, ..., WL]``, ``W_l`` of shape
``(d_l, d_{l-1})``; the network is ``f(X) = X W1^T ... WL^T``, the loss ``(1/2n) ||f(X) - Y||_F^2``, the GGN
``(1/n) J^T J`` (the Hessian at zero loss).  Closed forms are float64 NumPy and accept arrays or torch tensors.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch

from htlib._checks import check_choice, check_float, check_int, check_ints, check_matrix, check_vector, to_numpy

__all__ = [
    "FeatureGram", "feature_gram", "whiten", "one_hot", "balanced_weights", "kaiming_uniform_weights",
    "class_imbalanced_subset", "largest_imbalanced_n", "ols_balanced_weights", "balanced_factorization", "forward",
    "half_mse_loss", "gram_loss", "gram_loss_fn", "eigenbasis_loss", "flat_params_loss", "TrainResult",
    "TrainingDiverged", "train_gd", "ggn_spectrum", "ggn_kronecker_matrix", "two_layer_ntk_spectrum",
    "balanced_spectrum", "block_diagonal_sharpness", "ggn_trace", "sharpness_isotropic", "SharpnessBounds",
    "sharpness_bounds", "layer_sharpness_terms", "weyl_sharpness_bounds", "balance_gaps", "balanced_prediction",
    "interpolate_whitening", "numerical_rank", "HessianEigenResult", "hessian_eigensolve",
    "hessian_top_eigenvalues", "hutchinson_trace", "hessian_matrix",
]

ArrayLike = np.ndarray | torch.Tensor

def _np(a: ArrayLike, name: str = "array") -> np.ndarray:
    return to_numpy(a, name)

def _check_rows(X: np.ndarray, Y: np.ndarray, names: tuple[str, str] = ("X", "Y")) -> None:
    if X.shape[0] != Y.shape[0]:
        hint = f" -- did you pass {names[0]} transposed?" if X.shape[1] == Y.shape[0] else ""
        raise ValueError(f"{names[0]} and {names[1]} must have the same number of rows (samples), "
                         f"got {X.shape[0]} and {Y.shape[0]}{hint}")

def _rtol(rtol: float | None, shape: tuple[int, ...]) -> float:
    """The relative tolerance ``rtol`` in (0, 1); ``None``: NumPy's ``max(n, d) * eps``."""
    if rtol is None:
        return max(shape) * np.finfo(np.float64).eps
    return check_float("rtol", rtol, low=0.0, high=1.0)

def numerical_rank(X: ArrayLike, rtol: float | None = None) -> int:
    """Number of singular values of ``X`` above ``rtol * s_max`` (default ``max(n, d) * eps``, as ``matrix_rank``).

    Parameters
    ----------
    X : array_like
        A matrix.
    rtol : float, optional
        Relative tolerance in (0, 1).

    Returns
    -------
    int
        The numerical rank.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.linear import numerical_rank
    >>> rng = np.random.default_rng(0)
    >>> numerical_rank(rng.standard_normal((5, 2)) @ rng.standard_normal((2, 4)))   # a product of rank 2
    2
    """
    Xn = check_matrix("X", X)
    s = np.linalg.svd(Xn, compute_uv=False)
    tol = _rtol(rtol, Xn.shape) * s[0]
    return int(np.sum(s > tol))

@dataclass(frozen=True)
class FeatureGram:
    """``C = X^T X / n`` on its range: ``C = E diag(c) E^T``, ``c > 0`` (largest first), ``E`` ``d0 x r``; every
    function here that takes ``X`` also takes one (from an SVD ``X = U diag(s) V^T``: ``FeatureGram(n, s**2/n, V)``).

    Attributes
    ----------
    n : int
        Number of samples.
    c : numpy.ndarray, shape (r,)
        Nonzero eigenvalues of ``X^T X / n``, largest first.
    E : numpy.ndarray, shape (d0, r)
        Their eigenvectors.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.linear import feature_gram
    >>> X = np.random.default_rng(0).standard_normal((20, 3))
    >>> G = feature_gram(X)
    >>> G.n, G.d0, bool(np.allclose(G.factor() @ G.factor().T, X.T @ X / 20))   # F F^T = C
    (20, 3, True)
    """

    n: int
    c: np.ndarray
    E: np.ndarray

    def __post_init__(self) -> None:
        check_int("n", self.n, 1)
        if self.c.ndim != 1 or self.E.ndim != 2 or self.E.shape[1] != self.c.size:
            raise ValueError(f"FeatureGram needs c of shape (r,) and E of shape (d0, r), got {self.c.shape}, {self.E.shape}")

    @property
    def d0(self) -> int:
        return self.E.shape[0]

    def factor(self) -> np.ndarray:
        """``F = E diag(sqrt(c))`` (``d0 x r``): ``F F^T = C`` and ``F^T F = diag(c)``."""
        return self.E * np.sqrt(self.c)

def feature_gram(X: ArrayLike, rtol: float | None = None) -> FeatureGram:
    """The :class:`FeatureGram` of ``X``: eigenpairs of ``X^T X / n`` above ``rtol * c_max`` (:func:`_rtol`).

    Parameters
    ----------
    X : array_like, shape (n, d0)
        The features.
    rtol : float, optional
        Relative cut-off of the eigenvalues (default ``max(n, d0) * eps``).

    Returns
    -------
    FeatureGram
        ``C = X^T X / n`` on its range.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.linear import feature_gram
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((20, 2)) @ rng.standard_normal((2, 5))      # rank 2 of 5 features
    >>> G = feature_gram(X)
    >>> G.c.size, bool(np.isclose(G.c.sum(), np.sum(X ** 2) / 20))   # tr C = ||X||_F^2 / n
    (2, True)
    """
    Xn = check_matrix("X", X)
    c, E = np.linalg.eigh(Xn.T @ Xn / Xn.shape[0])
    c, E = c[::-1], E[:, ::-1]
    tol = _rtol(rtol, Xn.shape) * max(c[0], 0.0)
    keep = c > tol
    return FeatureGram(Xn.shape[0], c[keep].copy(), E[:, keep].copy())

def _gram(X: "ArrayLike | FeatureGram | None", d0: int, source: str = "the input width of weights[0]"
          ) -> FeatureGram | None:
    """``X`` as a :class:`FeatureGram` with ``d0`` features (``None`` stays ``None``: whitened, ``C = I``); the one
    place that refuses a wrongly shaped ``X`` (``source``: where ``d0`` comes from), before any decomposition."""
    if X is None:
        return None
    if isinstance(X, FeatureGram):
        if X.d0 != d0:
            raise ValueError(f"X must have d0={d0} features ({source}), got a FeatureGram with d0={X.d0}")
        return X
    Xn = check_matrix("X", X)
    if Xn.shape[1] != d0:
        hint = " -- did you pass X transposed?" if Xn.shape[0] == d0 else ""
        raise ValueError(f"X has shape {Xn.shape}; it must be n x d0 with d0={d0} columns ({source}){hint}")
    return feature_gram(Xn)

# --- Data preparation -------------------------------------------------------------------------

def whiten(X: ArrayLike, sigma_x: float = 1.0, rtol: float | None = None) -> np.ndarray:
    """``X = U S V^T`` (numerical rank ``r``) as ``sqrt(n) sigma_x U_r V_r^T``: ``X^T X = n sigma_x^2 P_rowspace``;
    always-zero features stay zero, and permuting the rows of ``X`` permutes those of the result.

    Parameters
    ----------
    X : array_like, shape (n, d0)
        The features.
    sigma_x : float, default 1.0
        Scale of the whitened features.
    rtol : float, optional
        Relative cut-off of the singular values (default ``max(n, d0) * eps``).

    Returns
    -------
    numpy.ndarray, shape (n, d0)
        The whitened features.

    Raises
    ------
    ValueError
        If ``X`` is not a non-empty finite matrix, is all zero, ``sigma_x <= 0`` or ``rtol`` is outside (0, 1).

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.linear import whiten
    >>> Xw = whiten(np.random.default_rng(0).standard_normal((50, 3)), sigma_x=2.0)
    >>> bool(np.allclose(Xw.T @ Xw / 50, 4.0 * np.eye(3)))          # X^T X / n = sigma_x^2 I
    True
    """
    Xn = check_matrix("X", X)
    sigma_x = check_float("sigma_x", sigma_x, low=0.0)
    _rtol(rtol, Xn.shape)
    n = Xn.shape[0]
    U, s, Vt = np.linalg.svd(Xn, full_matrices=False)
    if s[0] == 0.0:
        raise ValueError("X is all zero; it has no directions to whiten")
    tol = _rtol(rtol, Xn.shape) * s[0]
    r = int(np.sum(s > tol))
    return math.sqrt(n) * sigma_x * (U[:, :r] @ Vt[:r])

def one_hot(labels: ArrayLike, num_classes: int | None = None) -> np.ndarray:
    """One-hot encode integer labels 0..C-1 into an ``(n, C)`` float64 matrix.

    Parameters
    ----------
    labels : array_like of int, shape (n,)
        Labels ``0..C-1``.
    num_classes : int, optional
        ``C`` (default: the largest label plus one).

    Returns
    -------
    numpy.ndarray, shape (n, C)
        The one-hot matrix.

    Examples
    --------
    >>> from htlib.linear import one_hot
    >>> one_hot([0, 2, 1]).tolist()
    [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    >>> one_hot([0, 1], num_classes=4).shape
    (2, 4)
    """
    lab = np.asarray(labels.detach().cpu().numpy() if isinstance(labels, torch.Tensor) else labels)
    if lab.size == 0:
        raise ValueError("labels must not be empty")
    if lab.ndim != 1 or not np.issubdtype(lab.dtype, np.integer):
        raise ValueError(f"labels must be a 1-D array of integers, got dtype {lab.dtype} and shape {lab.shape}")
    if lab.size and lab.min() < 0:
        raise ValueError("labels must be >= 0")
    C = int(lab.max()) + 1 if num_classes is None else check_int("num_classes", num_classes, 1)
    if lab.size and lab.max() >= C:
        raise ValueError(f"num_classes must exceed the largest label {lab.max()}, got {C}")
    out = np.zeros((lab.size, C))
    out[np.arange(lab.size), lab] = 1.0
    return out

def _orthonormal_columns(rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((rows, cols)))
    return q * np.sign(np.diag(r))  # Haar-distributed

def balanced_weights(dims: Sequence[int], singular_values: ArrayLike, *, seed: int) -> list[np.ndarray]:
    """Strongly balanced weights ``W_l = U_l S V_l^T``, ``V_{l+1} = U_l``, ``dims = (d0, ..., dL)``, ``k <= min(dims)``
    shared singular values.

    Parameters
    ----------
    dims : sequence of int
        Layer widths ``(d0, ..., dL)``.
    singular_values : array_like
        The ``k`` shared singular values, ``>= 0``.
    seed : int
        Seed of the random singular vectors.

    Returns
    -------
    list of numpy.ndarray
        ``[W1, ..., WL]``, ``W_l`` of shape ``(d_l, d_{l-1})``.

    Examples
    --------
    >>> W1, W2 = balanced_weights([5, 4, 3], [2.0, 1.0], seed=0)
    >>> bool(np.allclose(W2.T @ W2, W1 @ W1.T)), np.linalg.svd(W2 @ W1, compute_uv=False)[:2].round(6).tolist()
    (True, [4.0, 1.0])
    """
    dims = [int(d) for d in dims]
    if len(dims) < 2 or min(dims) < 1:
        raise ValueError(f"dims must hold >= 2 positive sizes, got {dims}")
    s = _np(singular_values, "singular_values").ravel()
    k = s.size
    if k < 1 or k > min(dims):
        raise ValueError(f"singular_values must hold between 1 and min(dims) = {min(dims)} values, got {k}")
    if not np.all(np.isfinite(s)) or np.any(s < 0):
        raise ValueError(f"singular_values must be finite and >= 0, got {s.tolist()}")
    rng = np.random.default_rng(seed)
    V = _orthonormal_columns(dims[0], k, rng)
    weights = []
    for d in dims[1:]:
        U = _orthonormal_columns(d, k, rng)
        weights.append((U * s) @ V.T)
        V = U
    return weights

def kaiming_uniform_weights(dims: Sequence[int], *, seed: int) -> list[np.ndarray]:
    """PyTorch's default ``nn.Linear`` weight initialization: entries uniform on ``±1/sqrt(fan_in)``.

    Parameters
    ----------
    dims : sequence of int
        Layer widths ``(d0, ..., dL)``.
    seed : int
        Seed, ``>= 0``.

    Returns
    -------
    list of numpy.ndarray
        ``[W1, ..., WL]``, ``W_l`` of shape ``(d_l, d_{l-1})``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.linear import kaiming_uniform_weights
    >>> Ws = kaiming_uniform_weights([4, 3, 2], seed=0)
    >>> [W.shape for W in Ws], bool(np.abs(Ws[0]).max() <= 0.5)     # 1/sqrt(fan_in) = 1/2
    ([(3, 4), (2, 3)], True)
    """
    dims = check_ints("dims", dims, 1, min_len=2)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    return [rng.uniform(-1.0, 1.0, size=(dout, din)) / math.sqrt(din) for din, dout in zip(dims[:-1], dims[1:])]

def class_imbalanced_subset(X: ArrayLike, labels: ArrayLike, n: int, majority_share: float | None, *,
                            seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points: classes ``1..C-1`` get ``floor((1 - majority_share) n / (C - 1))`` each and class 0 the rest
    (``majority_share=None``: a uniformly random subset).  The literal reading, ``floor((1 - majority_share) n)`` per
    class, cannot sum to ``n``: the share is read as that of all other classes together.

    Parameters
    ----------
    X : array_like, shape (N, d)
        The samples.
    labels : array_like of int, shape (N,)
        Their classes; the smallest is the majority class.
    n : int
        Size of the subset.
    majority_share : float or None
        Share of the majority class, in ``[1/C, 1]``; None for a uniformly random subset.
    seed : int
        Seed, ``>= 0``.

    Returns
    -------
    tuple of numpy.ndarray
        The rows of ``X`` and their labels, in their original order.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.linear import class_imbalanced_subset
    >>> labels = np.repeat(np.arange(3), 20)
    >>> X = np.arange(60.0)[:, None]
    >>> Xs, ls = class_imbalanced_subset(X, labels, 20, 0.5, seed=0)   # floor(0.5 * 20 / 2) = 5 per minority class
    >>> Xs.shape, np.bincount(ls).tolist()
    ((20, 1), [10, 5, 5])
    """
    Xn = check_matrix("X", X, finite=False)
    lab = np.asarray(labels.detach().cpu().numpy() if isinstance(labels, torch.Tensor) else labels)
    if Xn.shape[0] != lab.shape[0]:
        raise ValueError(f"X has {Xn.shape[0]} rows but labels has {lab.shape[0]} entries")
    if lab.ndim != 1 or not np.issubdtype(lab.dtype, np.integer):
        raise ValueError(f"labels must be a 1-D array of integers, got dtype {lab.dtype} and shape {lab.shape}")
    n = check_int("n", n, 1)
    if n > lab.size:
        raise ValueError(f"n must be in [1, {lab.size}], got {n}")
    rng = np.random.default_rng(check_int("seed", seed, 0))
    if majority_share is not None:
        majority_share = check_float("majority_share", majority_share, low=0.0, high=1.0, strict=False)
    if majority_share is None:
        idx = np.sort(rng.choice(lab.size, size=n, replace=False))
        return Xn[idx], lab[idx]
    classes = np.unique(lab)
    C = classes.size
    if not 1.0 / C <= majority_share <= 1.0:
        raise ValueError(f"majority_share must be in [1/C, 1] = [{1.0 / C:.4g}, 1], got {majority_share}")
    per_class = int(math.floor((1.0 - majority_share) * n / (C - 1)))
    counts = {int(c): per_class for c in classes[1:]}
    counts[int(classes[0])] = n - per_class * (C - 1)
    picks = []
    for c, m in counts.items():
        pool = np.flatnonzero(lab == c)
        if m > pool.size:
            raise ValueError(
                f"class {c} has only {pool.size} samples but n={n}, majority_share={majority_share} needs {m}; lower n"
            )
        picks.append(rng.choice(pool, size=m, replace=False))
    idx = np.sort(np.concatenate(picks))
    return Xn[idx], lab[idx]

def largest_imbalanced_n(labels: ArrayLike, shares: Sequence[float]) -> int:
    """The largest ``n`` for which :func:`class_imbalanced_subset` can draw every share in ``shares``.

    Parameters
    ----------
    labels : array_like of int
        The classes of the pool.
    shares : sequence of float
        Majority shares, each in ``[0, 1]``.

    Returns
    -------
    int
        The largest subset size.

    Examples
    --------
    >>> largest_imbalanced_n(np.repeat(np.arange(10), 500), [0.1, 0.2, 0.3, 0.4, 0.5])  # n = 1000: class 0 needs 505
    995
    """
    lab = np.asarray(labels)
    if lab.size == 0:
        raise ValueError("labels must not be empty")
    counts = np.bincount(lab)
    C = counts.size
    shares = check_vector("shares", shares, min_size=0)
    if np.any((shares < 0) | (shares > 1)):
        raise ValueError(f"shares must lie in [0, 1], got {shares.tolist()}")
    if C < 2 or len(shares) == 0:
        raise ValueError(f"need >= 2 classes and >= 1 alpha, got {C} classes and shares={shares.tolist()}")
    for n in range(lab.size, 0, -1):
        ok = True
        for a in shares:
            per = int(math.floor((1.0 - a) * n / (C - 1)))
            if n - per * (C - 1) > counts[0] or per > counts[1:].min():
                ok = False
                break
        if ok:
            return n
    raise ValueError(f"no subset size fits shares={shares.tolist()}")

def ols_balanced_weights(X: ArrayLike, Y: ArrayLike, dims: Sequence[int], *, seed: int) -> list[np.ndarray]:
    """:func:`balanced_factorization` of the OLS solution ``W^T = X^+ Y``.

    Parameters
    ----------
    X : array_like, shape (n, d0)
        Features.
    Y : array_like, shape (n, dL)
        Targets.
    dims : sequence of int
        Layer widths ``(d0, ..., dL)``, each at least the rank of the OLS solution.
    seed : int
        Seed of the hidden singular vectors.

    Returns
    -------
    list of numpy.ndarray
        ``[W1, ..., WL]`` with ``WL ... W1`` the OLS solution.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.linear import ols_balanced_weights
    >>> rng = np.random.default_rng(0)
    >>> X, B = rng.standard_normal((20, 3)), rng.standard_normal((2, 3))
    >>> W1, W2 = ols_balanced_weights(X, X @ B.T, [3, 2, 2], seed=0)      # noiseless targets: OLS recovers B
    >>> bool(np.allclose(W2 @ W1, B))
    True
    """
    Xn, Yn = check_matrix("X", X), check_matrix("Y", Y)
    _check_rows(Xn, Yn)
    dims = [check_int(f"dims[{i}]", d, 1) for i, d in enumerate(dims)]
    if len(dims) < 2 or dims[0] != Xn.shape[1] or dims[-1] != Yn.shape[1]:
        raise ValueError(f"dims must start with d0={Xn.shape[1]} and end with dL={Yn.shape[1]}, got {dims}")
    # pinv's default cutoff (1e-15 s_max) would invert a rank-deficient X's rounding noise (norm ~1e13): cut at the rank
    pinv = np.linalg.pinv(Xn, rcond=max(Xn.shape) * np.finfo(np.float64).eps)
    return balanced_factorization((pinv @ Yn).T, dims, seed=seed)

def balanced_factorization(W: ArrayLike, dims: Sequence[int], *, seed: int) -> list[np.ndarray]:
    """A strongly balanced network ``[W1, ..., WL]`` with ``WL ... W1 = W = U diag(s) V^T`` (``dL x d0``): every
    layer has singular values ``s^(1/L)``, ``V_1 = V``, ``U_L = U``, random (seeded) hidden singular vectors.

    Parameters
    ----------
    W : array_like, shape (dL, d0)
        The end-to-end map.
    dims : sequence of int
        Layer widths ``(d0, ..., dL)``.
    seed : int
        Seed of the hidden singular vectors, ``>= 0``.

    Returns
    -------
    list of numpy.ndarray
        ``[W1, ..., WL]``.

    Raises
    ------
    ValueError
        If ``W`` is zero, or a layer is narrower than ``rank(W)`` (it would silently truncate ``W``).

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.linear import balance_gaps, balanced_factorization
    >>> W = np.random.default_rng(0).standard_normal((2, 3))
    >>> Ws = balanced_factorization(W, [3, 4, 2], seed=0)
    >>> bool(np.allclose(Ws[1] @ Ws[0], W)), bool(balance_gaps(Ws)[0] < 1e-12)
    (True, True)
    """
    Wn = check_matrix("W", W)
    dims = [check_int(f"dims[{i}]", d, 1) for i, d in enumerate(dims)]
    if len(dims) < 2:
        raise ValueError(f"dims must hold >= 2 sizes, got {dims}")
    if dims[0] != Wn.shape[1] or dims[-1] != Wn.shape[0]:
        raise ValueError(f"dims must start with d0={Wn.shape[1]} and end with dL={Wn.shape[0]}, got {dims}")
    U, s, Vt = np.linalg.svd(Wn, full_matrices=False)
    k = int(np.sum(s > max(Wn.shape) * np.finfo(np.float64).eps * s[0])) if s[0] > 0 else 0
    if k == 0:
        raise ValueError("W is zero (for OLS: Y orthogonal to the column space of X)")
    if min(dims) < k:
        raise ValueError(f"dims: every layer must be at least rank(W) = {k} wide to represent the OLS "
                         f"solution, got dims={dims}")
    U, s, V = U[:, :k], s[:k], Vt[:k].T
    L = len(dims) - 1
    root = s ** (1.0 / L)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    weights, Vl = [], V
    for l, d in enumerate(dims[1:], start=1):
        Ul = U if l == L else _orthonormal_columns(d, k, rng)
        weights.append((Ul * root) @ Vl.T)
        Vl = Ul
    return weights

# --- Model and training -----------------------------------------------------------------------

_ACTIVATIONS = ("linear", "tanh")

def forward(weights: Sequence[torch.Tensor], X: torch.Tensor, activation: str = "linear") -> torch.Tensor:
    """``X W1^T ... WL^T`` with ``activation`` after every layer but the last.

    Parameters
    ----------
    weights : sequence of torch.Tensor
        ``[W1, ..., WL]``, ``W_l`` of shape ``(d_l, d_{l-1})``.
    X : torch.Tensor, shape (n, d0)
        Inputs.
    activation : {"linear", "tanh"}, default "linear"
        Nonlinearity between layers.

    Returns
    -------
    torch.Tensor, shape (n, dL)
        The outputs.

    Examples
    --------
    >>> import torch
    >>> from htlib.linear import forward
    >>> g = torch.Generator().manual_seed(0)
    >>> W1, W2, X = torch.randn(4, 3, generator=g), torch.randn(2, 4, generator=g), torch.randn(5, 3, generator=g)
    >>> out = forward([W1, W2], X)
    >>> tuple(out.shape), bool(torch.allclose(out, X @ (W2 @ W1).T, atol=1e-5))
    ((5, 2), True)
    """
    check_choice("activation", activation, _ACTIVATIONS)
    H = X
    for i, W in enumerate(weights):
        H = H @ W.T
        if activation == "tanh" and i < len(weights) - 1:
            H = torch.tanh(H)
    return H

def half_mse_loss(weights: Sequence[torch.Tensor], X: torch.Tensor, Y: torch.Tensor, activation: str = "linear") -> torch.Tensor:
    """``(1/2n) ||f(X) - Y||_F^2``.

    Parameters
    ----------
    weights : sequence of torch.Tensor
        ``[W1, ..., WL]``.
    X : torch.Tensor, shape (n, d0)
        Inputs.
    Y : torch.Tensor, shape (n, dL)
        Targets.
    activation : {"linear", "tanh"}, default "linear"
        Nonlinearity between layers.

    Returns
    -------
    torch.Tensor
        The scalar loss.

    Examples
    --------
    >>> import torch
    >>> from htlib.linear import half_mse_loss
    >>> W, X = torch.eye(2), torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> float(half_mse_loss([W], X, X)), float(half_mse_loss([W], X, torch.zeros(2, 2)))   # (1 + 4 + 9 + 16) / 4
    (0.0, 7.5)
    """
    R = forward(weights, X, activation) - Y
    return 0.5 * (R * R).sum() / X.shape[0]

def gram_loss(weights: Sequence[torch.Tensor], Sxx: torch.Tensor, Sxy: torch.Tensor, syy: float) -> torch.Tensor:
    """:func:`half_mse_loss` of a linear network from ``Sxx = X^T X/n``, ``Sxy = X^T Y/n``, ``syy = ||Y||_F^2/n``:
    ``(1/2)[tr(W Sxx W^T) - 2 tr(W Sxy) + syy]`` with ``W = WL..W1``.

    Parameters
    ----------
    weights : sequence of torch.Tensor
        ``[W1, ..., WL]``.
    Sxx : torch.Tensor, shape (d0, d0)
        ``X^T X / n``.
    Sxy : torch.Tensor, shape (d0, dL)
        ``X^T Y / n``.
    syy : float
        ``||Y||_F^2 / n``.

    Returns
    -------
    torch.Tensor
        The scalar loss.

    Examples
    --------
    >>> import torch
    >>> from htlib.linear import gram_loss, half_mse_loss
    >>> g = torch.Generator().manual_seed(0)
    >>> X, Y = torch.randn(10, 3, generator=g, dtype=torch.float64), torch.randn(10, 2, generator=g, dtype=torch.float64)
    >>> Ws = [torch.randn(4, 3, generator=g, dtype=torch.float64), torch.randn(2, 4, generator=g, dtype=torch.float64)]
    >>> a = gram_loss(Ws, X.T @ X / 10, X.T @ Y / 10, float((Y * Y).sum()) / 10)
    >>> bool(torch.isclose(a, half_mse_loss(Ws, X, Y)))
    True
    """
    W = weights[0]
    for V in weights[1:]:
        W = V @ W
    return 0.5 * ((W @ Sxx * W).sum() - 2.0 * (W.T * Sxy).sum() + syy)

def eigenbasis_loss(X: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, Callable[..., torch.Tensor]]:
    """``Q`` (eigenvectors of ``X^T X``) and the linear network's loss as a function of ``(W1 Q, W2, ..)``: the
    same Hessian eigenvalues and trace (an orthogonal change of variables) at ``O(dL d0)`` per data term.

    Parameters
    ----------
    X : numpy.ndarray, shape (n, d0)
        Features.
    Y : numpy.ndarray, shape (n, dL)
        Targets.

    Returns
    -------
    tuple
        ``(Q, loss)``: the eigenvectors of ``X^T X / n`` (``d0 x d0``) and ``loss(W1 Q, W2, ..., WL)``.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from htlib.linear import eigenbasis_loss, half_mse_loss
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.standard_normal((10, 3)), rng.standard_normal((10, 2))
    >>> W1, W2 = torch.as_tensor(rng.standard_normal((4, 3))), torch.as_tensor(rng.standard_normal((2, 4)))
    >>> Q, loss = eigenbasis_loss(X, Y)
    >>> bool(torch.isclose(loss(W1 @ torch.as_tensor(Q), W2), half_mse_loss([W1, W2], torch.as_tensor(X), torch.as_tensor(Y))))
    True
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

def gram_loss_fn(X: np.ndarray, Y: np.ndarray) -> Callable[..., torch.Tensor]:
    """:func:`gram_loss` of ``X, Y`` as a function of the layers ``(W1, ..., WL)``.

    Parameters
    ----------
    X : numpy.ndarray, shape (n, d0)
        Features.
    Y : numpy.ndarray, shape (n, dL)
        Targets.

    Returns
    -------
    callable
        ``loss(W1, ..., WL) -> torch.Tensor``.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from htlib.linear import gram_loss_fn, half_mse_loss
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.standard_normal((10, 3)), rng.standard_normal((10, 2))
    >>> W1, W2 = torch.as_tensor(rng.standard_normal((4, 3))), torch.as_tensor(rng.standard_normal((2, 4)))
    >>> bool(torch.isclose(gram_loss_fn(X, Y)(W1, W2), half_mse_loss([W1, W2], torch.as_tensor(X), torch.as_tensor(Y))))
    True
    """
    Xt, Yt = torch.as_tensor(X), torch.as_tensor(Y)
    n = Xt.shape[0]
    stats = (Xt.T @ Xt / n, Xt.T @ Yt / n, float((Yt * Yt).sum()) / n)
    return lambda *ws: gram_loss(ws, *stats)

def flat_params_loss(shapes: Sequence[tuple[int, int]], X: torch.Tensor, Y: torch.Tensor,
                     activation: str = "linear") -> Callable[[torch.Tensor], torch.Tensor]:
    """The loss as a function of one flat parameter vector (for ``torch.autograd.functional.hessian``).

    Parameters
    ----------
    shapes : sequence of (int, int)
        Shapes of ``W1, ..., WL``.
    X : torch.Tensor, shape (n, d0)
        Inputs.
    Y : torch.Tensor, shape (n, dL)
        Targets.
    activation : {"linear", "tanh"}, default "linear"
        Nonlinearity between layers.

    Returns
    -------
    callable
        ``loss(theta) -> torch.Tensor`` of the concatenated row-major layers.

    Examples
    --------
    >>> import torch
    >>> from htlib.linear import flat_params_loss, half_mse_loss
    >>> g = torch.Generator().manual_seed(0)
    >>> X, Y = torch.randn(6, 3, generator=g), torch.randn(6, 2, generator=g)
    >>> W1, W2 = torch.randn(4, 3, generator=g), torch.randn(2, 4, generator=g)
    >>> fn = flat_params_loss([(4, 3), (2, 4)], X, Y)
    >>> bool(torch.isclose(fn(torch.cat([W1.ravel(), W2.ravel()])), half_mse_loss([W1, W2], X, Y)))
    True
    """
    sizes = [a * b for a, b in shapes]

    def fn(theta: torch.Tensor) -> torch.Tensor:
        parts = torch.split(theta, sizes)
        return half_mse_loss([p.reshape(s) for p, s in zip(parts, shapes)], X, Y, activation)

    return fn

class TrainingDiverged(ValueError):
    """:func:`train_gd` met a non-finite or exploding loss; the message names the epoch and the loss.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.linear import TrainingDiverged, kaiming_uniform_weights, train_gd, whiten
    >>> X = whiten(np.random.default_rng(0).standard_normal((50, 3)))
    >>> try:
    ...     train_gd(kaiming_uniform_weights([3, 4, 2], seed=0), X, X[:, :2], lr=100.0, epochs=50)
    ... except TrainingDiverged as e:
    ...     print(isinstance(e, ValueError), str(e).startswith("train_gd diverged at epoch"))
    True True
    """

@dataclass(frozen=True)
class TrainResult:
    """Outcome of :func:`train_gd`: final weights, per-epoch loss and learning rate, snapshots.

    Attributes
    ----------
    weights : list of numpy.ndarray
        The final ``[W1, ..., WL]``.
    losses : numpy.ndarray
        Loss at epochs ``0..epochs``.
    lrs : numpy.ndarray
        Learning rate used after each epoch.
    snapshots : dict of int to list of numpy.ndarray
        Weights at the epochs of ``record_at``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.linear import kaiming_uniform_weights, train_gd, whiten
    >>> X = whiten(np.random.default_rng(0).standard_normal((50, 3)))
    >>> r = train_gd(kaiming_uniform_weights([3, 4, 2], seed=0), X, X[:, :2], lr=0.1, epochs=20, record_at=[0, 10])
    >>> r.losses.shape, sorted(r.snapshots), [W.shape for W in r.weights]
    ((21,), [0, 10], [(4, 3), (2, 4)])
    """

    weights: list[np.ndarray]
    losses: np.ndarray
    lrs: np.ndarray
    snapshots: dict[int, list[np.ndarray]] = field(default_factory=dict)

def _next_rate(t: int, losses: np.ndarray, eta: float, *, limit: float, patience: int,
               min_rel_improvement: float) -> float:
    """The learning rate after epoch ``t`` (halved on a plateau); :class:`TrainingDiverged` if ``losses[t] > limit``."""
    if not np.isfinite(losses[t]) or losses[t] > limit:
        raise TrainingDiverged(f"train_gd diverged at epoch {t}: loss = {losses[t]:.4g} (initial loss "
                               f"{losses[0]:.4g}, learning rate {eta:.4g}); lower lr")
    if t > 0 and t % patience == 0 and losses[t] > (1.0 - min_rel_improvement) * losses[t - patience]:
        return 0.5 * eta
    return eta

def _linear_gd_numpy(Ws, Sxx, Sxy, syy, *, lr, epochs, patience, min_rel_improvement, record, blowup):
    """Full-batch GD of a linear network on sufficient statistics in the eigenbasis ``Q`` of ``Sxx`` (equivariant:
    only ``W1 Q``'s ``r`` row-space columns get gradient); gradients from the ``dL``-row side, ``O(dL r d1)``."""
    c, Q = np.linalg.eigh(Sxx)
    keep = c > Sxx.shape[0] * np.finfo(np.float64).eps * max(float(c.max()), 0.0)
    c, Qr, Qn = c[keep], Q[:, keep], Q[:, ~keep]
    Ws = [W.copy() for W in Ws]
    W1_null = Ws[0] @ Qn  # untouched by GD: the loss does not see these directions
    Ws[0] = Ws[0] @ Qr
    Sxy_t = (Qr.T @ Sxy).T  # (dL, r)
    L, dL = len(Ws), Ws[-1].shape[0]
    losses = np.empty(epochs + 1)
    lrs = np.empty(epochs + 1)
    snapshots: dict[int, list[np.ndarray]] = {}

    def rotate_back(W1r: np.ndarray) -> np.ndarray:
        return W1r @ Qr.T + W1_null @ Qn.T

    eta = float(lr)
    for t in range(epochs + 1):
        if t in record:
            snapshots[t] = [rotate_back(Ws[0])] + [W.copy() for W in Ws[1:]]
        A = [np.eye(dL)]  # A[j] = W_L .. W_{L-j+1}, i.e. A_l = A[L - l]
        for W in Ws[:0:-1]:
            A.append(A[-1] @ W)
        P = A[-1] @ Ws[0]  # end-to-end map on the row space, (dL, r)
        PC = P * c
        losses[t] = 0.5 * (float(np.sum(PC * P)) - 2.0 * float(np.sum(P * Sxy_t)) + syy)
        eta = lrs[t] = _next_rate(t, losses, eta, limit=blowup, patience=patience,
                                  min_rel_improvement=min_rel_improvement)
        if t == epochs:
            break
        H = PC - Sxy_t  # dLoss/dP = G; H_l = G B_l^T, built up layer by layer
        grads = []
        for l in range(L):
            grads.append(A[L - 1 - l].T @ H)
            if l < L - 1:
                H = H @ Ws[l].T
        for W, g in zip(Ws, grads):
            W -= eta * g
    Ws[0] = rotate_back(Ws[0])
    return TrainResult(Ws, losses, lrs, snapshots)

def train_gd(weights: Sequence[ArrayLike], X: ArrayLike, Y: ArrayLike, *, lr: float, epochs: int,
             activation: str = "linear", patience: int = 100, min_rel_improvement: float = 1e-3,
             record_at: Sequence[int] = (), dtype: torch.dtype = torch.float64, device: str | torch.device = "cpu",
             blowup: float = 1e12) -> TrainResult:
    """Full-batch GD on the MSE loss; the learning rate is halved when the loss has improved by less than
    ``min_rel_improvement`` (relative) over the last ``patience`` epochs.

    ``record_at``: epochs (0 = initialization) whose weights are kept in ``snapshots``.  Linear networks train in
    float64 NumPy on sufficient statistics (same iterates), tanh networks in torch.

    Parameters
    ----------
    weights : sequence of array_like
        Initial ``[W1, ..., WL]``, ``W_l`` of shape ``(d_l, d_{l-1})``.
    X : array_like, shape (n, d0)
        Features.
    Y : array_like, shape (n, dL)
        Targets.
    lr : float
        Initial learning rate, ``> 0``.
    epochs : int
        Number of GD steps.
    activation : {"linear", "tanh"}, default "linear"
        Nonlinearity between layers.
    patience : int, default 100
        Epochs between plateau checks.
    min_rel_improvement : float, default 1e-3
        Relative improvement below which the learning rate is halved.
    record_at : sequence of int, default ()
        Epochs whose weights are kept.
    dtype : torch.dtype, default torch.float64
        Element type of the torch route.
    device : str or torch.device, default "cpu"
        Device of the torch route.
    blowup : float, default 1e12
        Loss growth factor treated as divergence.

    Returns
    -------
    TrainResult
        Final weights, losses, learning rates and snapshots.

    Raises
    ------
    TrainingDiverged
        (a ``ValueError``) when the loss becomes NaN/inf or exceeds ``blowup * max(1, initial loss)``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.linear import kaiming_uniform_weights, train_gd, whiten
    >>> rng = np.random.default_rng(0)
    >>> X, B = whiten(rng.standard_normal((50, 3))), rng.standard_normal((2, 3))
    >>> r = train_gd(kaiming_uniform_weights([3, 4, 2], seed=0), X, X @ B.T, lr=0.1, epochs=300)
    >>> bool(r.losses[-1] < 1e-10), bool(np.allclose(r.weights[1] @ r.weights[0], B))   # it learns B
    (True, True)
    """
    lr = check_float("lr", lr, low=0.0)
    epochs = check_int("epochs", epochs, 0)
    patience = check_int("patience", patience, 1)
    check_choice("activation", activation, _ACTIVATIONS)
    record = set(check_ints("record_at", record_at, 0))
    if any(e > epochs for e in record):
        raise ValueError(f"record_at must lie in [0, epochs={epochs}], got {sorted(record)}")
    Xn, Yn = check_matrix("X", X), check_matrix("Y", Y)
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
    W1_null = None
    if activation != "linear":
        # X W1^T = (X E)(W1 E)^T with E a basis of X's row space, and W1's gradient lies in span(E): training W1 E on
        # X E gives the same iterates at r/d0 of the first layer's cost; W1's rest stays as it started.
        G = feature_gram(Xn)
        if G.c.size < Xn.shape[1]:
            E = G.E
            W1_null = W0[0] - (W0[0] @ E) @ E.T
            Xn, W0 = Xn @ E, [W0[0] @ E] + W0[1:]
    Xt = torch.as_tensor(Xn, dtype=dtype, device=device)
    Yt = torch.as_tensor(Yn, dtype=dtype, device=device)

    def full(ws: Sequence[np.ndarray]) -> list[np.ndarray]:
        return list(ws) if W1_null is None else [ws[0] @ E.T + W1_null] + list(ws[1:])

    if activation == "linear":  # same loss and gradients from d0 x d0 sufficient statistics
        stats = (Xt.T @ Xt / n, Xt.T @ Yt / n, float((Yt * Yt).sum()) / n)

        def objective(ws):
            return gram_loss(ws, *stats)
    else:
        def objective(ws):
            return half_mse_loss(ws, Xt, Yt, activation)

    Ws = [torch.tensor(W, dtype=dtype, device=device, requires_grad=True) for W in W0]
    losses = np.empty(epochs + 1)
    lrs = np.empty(epochs + 1)
    snapshots: dict[int, list[np.ndarray]] = {}
    eta = float(lr)
    limit = None
    for t in range(epochs + 1):
        if t in record:
            snapshots[t] = full([W.detach().cpu().numpy().astype(np.float64) for W in Ws])
        loss = objective(Ws)
        losses[t] = loss.item()
        if limit is None:
            limit = blowup * max(1.0, losses[0])
        eta = lrs[t] = _next_rate(t, losses, eta, limit=limit, patience=patience,
                                  min_rel_improvement=min_rel_improvement)
        if t == epochs:
            break
        grads = torch.autograd.grad(loss, Ws)
        with torch.no_grad():
            for W, g in zip(Ws, grads):
                W -= eta * g
    return TrainResult(full([W.detach().cpu().numpy().astype(np.float64) for W in Ws]), losses, lrs, snapshots)

# --- Exact spectra ----------------------------------------------------------------------------

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
    if len(weights) == 0:
        raise ValueError("weights must hold at least one matrix")
    Ws = [check_matrix(f"weights[{i}]", W) for i, W in enumerate(weights)]
    for i, W in enumerate(Ws):
        if i and W.shape[1] != Ws[i - 1].shape[0]:
            raise ValueError(f"weights[{i}] has {W.shape[1]} columns but weights[{i - 1}] has {Ws[i - 1].shape[0]} rows")
    return Ws

def ggn_kronecker_matrix(weights: Sequence[ArrayLike], X: ArrayLike | None = None) -> np.ndarray:
    """``M = sum_l (C^(1/2) B_l^T B_l C^(1/2)) kron (A_l A_l^T)``, a ``d0*dL`` square matrix whose
    eigenvalues are the GGN's possibly-nonzero eigenvalues (``A_l = W_L..W_{l+1}``, ``B_l = W_{l-1}..W_1``).

    Parameters
    ----------
    weights : sequence of array_like
        ``[W1, ..., WL]``, ``W_l`` of shape ``(d_l, d_{l-1})``.
    X : array_like, shape (n, d0), optional
        Features (None: whitened, ``C = I``).

    Returns
    -------
    numpy.ndarray, shape (d0*dL, d0*dL)
        The matrix ``M``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.linear import ggn_kronecker_matrix, ggn_spectrum
    >>> rng = np.random.default_rng(0)
    >>> Ws, X = [rng.standard_normal((4, 3)), rng.standard_normal((2, 4))], rng.standard_normal((10, 3))
    >>> M = ggn_kronecker_matrix(Ws, X)
    >>> M.shape, bool(np.allclose(np.linalg.eigvalsh(M)[::-1], ggn_spectrum(Ws, X)))
    ((6, 6), True)
    """
    Ws = _validated_weights(weights)
    L, d0, dL = len(Ws), Ws[0].shape[1], Ws[-1].shape[0]
    G = _gram(X, d0)
    R = np.eye(d0) if G is None else (G.E * np.sqrt(G.c)) @ G.E.T  # C^(1/2)
    M = np.zeros((d0 * dL, d0 * dL))
    for l in range(1, L + 1):
        BR = _chain(Ws, d0, 1, l - 1) @ R
        A = _chain(Ws, d0, l + 1, L)
        M += np.kron(BR.T @ BR, A @ A.T)
    return M

@dataclass(frozen=True)
class _ReducedKronecker:
    """``M`` on the row space of ``X``: ``M_r = sum_l (F^T B_l^T B_l F) kron (A_l A_l^T)``, ``r*dL`` square, with
    ``F = E_r diag(sqrt(c_r))``: ``M`` is ``M_r`` padded with zeros (both share the nonzero eigenvalues of
    ``K^(1/2) (C kron I) K^(1/2)``).  Terms ``l > 1`` factor through ``G = W_1 F``: ``O(d1 r dL)`` per product.
    """

    c: np.ndarray  # (r,) nonzero eigenvalues of C
    G: np.ndarray  # (d1, r) = W_1 F; empty for one layer
    P: tuple[np.ndarray, ...]  # H_l^T H_l, (d1, d1), l = 2..L
    Q: tuple[np.ndarray, ...]  # A_l A_l^T, (dL, dL), l = 1..L

    @property
    def shape(self) -> tuple[int, int]:
        return self.c.size, self.Q[0].shape[0]

    @classmethod
    def build(cls, weights: list[np.ndarray], X: ArrayLike | None) -> "_ReducedKronecker":
        L, d0 = len(weights), weights[0].shape[1]
        G = _gram(X, d0)
        c, F = (np.ones(d0), np.eye(d0)) if G is None else (G.c, G.factor())
        Q = tuple((lambda A: A @ A.T)(_chain(weights, d0, l + 1, L)) for l in range(1, L + 1))
        if L == 1:
            return cls(c, np.zeros((0, c.size)), (), Q)
        d1 = weights[0].shape[0]
        P = tuple((lambda H: H.T @ H)(_chain(weights, d0, 2, l - 1) if l > 2 else np.eye(d1)) for l in range(2, L + 1))
        return cls(c, weights[0] @ F, P, Q)

    def matvec(self, v: np.ndarray) -> np.ndarray:
        V = np.asarray(v).reshape(self.shape)  # row-major vec, matching np.kron(left, right)
        out = self.c[:, None] * (V @ self.Q[0])
        if self.P:
            Z = self.G @ V
            S = sum(P @ Z @ Q for P, Q in zip(self.P, self.Q[1:]))
            out += self.G.T @ S
        return out.ravel()

    def dense(self) -> np.ndarray:
        M = np.kron(np.diag(self.c), self.Q[0])
        for P, Q in zip(self.P, self.Q[1:]):
            M += np.kron(self.G.T @ P @ self.G, Q)
        return M

_SPECTRUM_METHODS = ("auto", "dense", "lanczos")

def ggn_spectrum(weights: Sequence[ArrayLike], X: ArrayLike | None = None, k: int | None = None, *,
                 method: str = "auto", dense_max: int = 200) -> np.ndarray:
    """The exact GGN / NTK eigenvalues of a linear network, largest first.

    The eigenvalues of :func:`ggn_kronecker_matrix` (``X=None``: whitened, ``C = I``), computed on the row space
    of ``X`` (:class:`_ReducedKronecker`); the other ``p - d0*dL`` are zero.  ``k``: only the top ``k``.

    Parameters
    ----------
    method
        ``"dense"``: diagonalize the ``r*dL`` matrix; ``"lanczos"`` (top-``k`` only): ARPACK on its matrix-free
        product, to machine precision; ``"auto"``: dense when ``r*dL <= dense_max``, ``k`` is None or
        ``4 k > r*dL``, else Lanczos (dense if ARPACK does not converge).

    Returns
    -------
    numpy.ndarray
        The ``d0*dL`` eigenvalues (or the top ``k``), largest first.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.linear import ggn_spectrum, two_layer_ntk_spectrum
    >>> rng = np.random.default_rng(0)
    >>> W1, W2 = rng.standard_normal((4, 3)), rng.standard_normal((2, 4))
    >>> ev = ggn_spectrum([W1, W2])                  # whitened data: the two-layer closed form
    >>> ev.shape, bool(np.allclose(ev, two_layer_ntk_spectrum(W1, W2)))
    ((6,), True)
    """
    check_choice("method", method, _SPECTRUM_METHODS)
    Ws = _validated_weights(weights)
    d0, dL = Ws[0].shape[1], Ws[-1].shape[0]
    full = d0 * dL
    if k is not None:
        k = check_int("k", k, 1)
        if k > full:
            raise ValueError(f"k must be in [1, d0*dL = {full}], got {k}")
    red = _ReducedKronecker.build(Ws, X)
    size = red.c.size * dL
    kk = full if k is None else k
    if method == "auto":
        method = "dense" if (size <= dense_max or k is None or 4 * k > size) else "lanczos"
    if method == "lanczos" and (k is None or k >= size - 1):
        raise ValueError(f"method='lanczos' needs 1 <= k < r*dL - 1 = {size - 1} (r = rank of X), got k={k}")
    if size == 0:  # X = 0: the GGN vanishes
        ev = np.zeros(0)
    elif method == "dense":
        ev = np.linalg.eigvalsh(red.dense())[::-1]
    else:
        from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh
        op = LinearOperator((size, size), matvec=red.matvec, dtype=np.float64)
        v0 = np.random.default_rng(0).standard_normal(size)  # fixed start: deterministic results
        try:
            ev = np.sort(eigsh(op, k=k, which="LA", tol=0.0, v0=v0, ncv=min(size, max(4 * k, 40)),
                               maxiter=50 * size, return_eigenvectors=False))[::-1]
        except ArpackNoConvergence:  # rare; the dense route is slower but always converges
            ev = np.linalg.eigvalsh(red.dense())[::-1]
    return np.concatenate([ev, np.zeros(max(0, kk - ev.size))])[:kk].copy()

def two_layer_ntk_spectrum(W1: ArrayLike, W2: ArrayLike, sigma_x: float = 1.0) -> np.ndarray:
    """Closed form for two layers and whitened data: all ``sigma_x^2 (s_i(W1)^2 + s_j(W2)^2)``,
    ``i <= d0``, ``j <= d2``, singular values zero-padded; ``d0*d2`` values, largest first (``sigma_x > 0``).

    Parameters
    ----------
    W1 : array_like, shape (d1, d0)
        First layer.
    W2 : array_like, shape (d2, d1)
        Second layer.
    sigma_x : float, default 1.0
        Scale of the whitened features.

    Returns
    -------
    numpy.ndarray
        The ``d0*d2`` eigenvalues, largest first.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.linear import two_layer_ntk_spectrum
    >>> two_layer_ntk_spectrum(np.eye(2), 2.0 * np.eye(2)).round(6).tolist()     # 1**2 + 2**2 four times
    [5.0, 5.0, 5.0, 5.0]
    """
    A, B = check_matrix("W1", W1), check_matrix("W2", W2)
    sigma_x = check_float("sigma_x", sigma_x, low=0.0)
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
    """Top eigenvalue when the cross-layer blocks are dropped: ``sigma_x^2 max(||W1||^2, ||W2||^2)``.

    Parameters
    ----------
    W1 : array_like, shape (d1, d0)
        First layer.
    W2 : array_like, shape (d2, d1)
        Second layer.
    sigma_x : float, default 1.0
        Scale of the whitened features.

    Returns
    -------
    float
        The block-diagonal top eigenvalue.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.linear import block_diagonal_sharpness, two_layer_ntk_spectrum
    >>> W1, W2 = np.eye(2), 2.0 * np.eye(2)
    >>> round(block_diagonal_sharpness(W1, W2), 6), round(float(two_layer_ntk_spectrum(W1, W2)[0]), 6)   # 4 < 1 + 4
    (4.0, 5.0)
    """
    _validated_weights([W1, W2])
    sigma_x = check_float("sigma_x", sigma_x, low=0.0)
    return float(sigma_x**2 * max(np.linalg.norm(_np(W1), 2) ** 2, np.linalg.norm(_np(W2), 2) ** 2))

def balanced_spectrum(s: ArrayLike, L: int, d0: int, dL: int, sigma_x: float = 1.0) -> np.ndarray:
    """GGN spectrum of a strongly balanced depth-``L`` net on whitened data (largest first): ``sigma_x^2 sum_l
    s_i^(2(l-1)) s_j^(2(L-l))`` (``i, j <= r``), ``sigma_x^2 s_i^(2(L-1))`` ``(d0 - r) + (dL - r)`` times, zeros
    (``s >= 0``, ``sigma_x > 0``).

    Parameters
    ----------
    s : array_like
        The ``r`` shared singular values of the layers, ``>= 0``.
    L : int
        Depth, ``>= 1``.
    d0, dL : int
        Input and output widths, each ``>= r``.
    sigma_x : float, default 1.0
        Scale of the whitened features.

    Returns
    -------
    numpy.ndarray
        The ``d0*dL`` eigenvalues, largest first.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.linear import balanced_spectrum, balanced_weights, ggn_spectrum
    >>> balanced_spectrum([2.0], L=2, d0=1, dL=1).round(6).tolist()    # 2**2 + 2**2
    [8.0]
    >>> Ws = balanced_weights([3, 2, 2], [1.5, 0.5], seed=0)
    >>> bool(np.allclose(balanced_spectrum([1.5, 0.5], 2, 3, 2), ggn_spectrum(Ws)))
    True
    """
    sv = _np(s).ravel()
    r = sv.size
    L = check_int("L", L, 1)
    d0, dL = check_int("d0", d0, 1), check_int("dL", dL, 1)
    sigma_x = check_float("sigma_x", sigma_x, low=0.0)
    if r == 0 or not np.all(np.isfinite(sv)):
        raise ValueError("s must hold at least one finite singular value")
    if np.any(sv < 0):
        raise ValueError(f"s must hold singular values >= 0, got {sv.tolist()}")
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

def ggn_trace(weights: Sequence[ArrayLike], X: "ArrayLike | FeatureGram") -> float:
    """``Tr GGN = (1/n) sum_l ||X W1^T..W_{l-1}^T||_F^2 ||W_L..W_{l+1}||_F^2`` (any ``X``).

    Parameters
    ----------
    weights : sequence of array_like
        ``[W1, ..., WL]``, ``W_l`` of shape ``(d_l, d_{l-1})``.
    X : array_like (n, d0) or FeatureGram
        The features (rows are samples), or their :class:`FeatureGram`.

    Returns
    -------
    float
        The trace of the GGN.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.linear import ggn_spectrum, ggn_trace
    >>> rng = np.random.default_rng(0)
    >>> Ws, X = [rng.standard_normal((4, 3)), rng.standard_normal((2, 4))], rng.standard_normal((10, 3))
    >>> bool(np.isclose(ggn_trace(Ws, X), ggn_spectrum(Ws, X).sum()))      # the trace is the sum of the eigenvalues
    True
    """
    Ws = _validated_weights(weights)
    if X is None:
        raise ValueError("X is required (an (n, d0) matrix); for whitened data with sigma_x pass the whitened X")
    L, d0 = len(Ws), Ws[0].shape[1]
    H = _gram(X, d0).factor()  # ||X B^T||_F^2 / n = ||B F||_F^2
    total = 0.0
    for l in range(1, L + 1):
        A = _chain(Ws, d0, l + 1, L)
        total += float(np.sum(H * H) * np.sum(A * A))
        H = Ws[l - 1] @ H
    return total

def sharpness_isotropic(X: "ArrayLike | FeatureGram", Y: ArrayLike, L: int) -> float:
    """``lambda_max = (L/n) ||X||_2^(2/L) ||Y||_2^(2(L-1)/L)`` at a balanced interpolating minimizer with isotropic
    features (whitened ``X``, one-hot ``Y``: ``L s_x^(2/L) m^(1-1/L)``, ``m`` the majority class's share).

    Parameters
    ----------
    X : array_like (n, d0) or FeatureGram
        Whitened features.
    Y : array_like, shape (n, dL)
        Targets.
    L : int
        Depth, ``>= 1``.

    Returns
    -------
    float
        ``lambda_max`` at the balanced interpolating minimizer.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.linear import ggn_spectrum, ols_balanced_weights, one_hot, sharpness_isotropic, whiten
    >>> X = whiten(np.random.default_rng(0).standard_normal((6, 10)))       # n < d0: OLS interpolates
    >>> Y = one_hot([0, 0, 0, 1, 1, 2])                                      # majority share m = 1/2
    >>> Ws = ols_balanced_weights(X, Y, [10, 4, 3], seed=0)
    >>> round(sharpness_isotropic(X, Y, 2), 4), round(float(ggn_spectrum(Ws, X, k=1)[0]), 4)   # 2 * sqrt(1/2)
    (1.4142, 1.4142)
    """
    Yn = check_matrix("Y", Y)
    L = check_int("L", L, 1)
    if isinstance(X, FeatureGram):
        n, sx2 = X.n, X.n * (X.c[0] if X.c.size else 0.0)
    else:
        Xn = check_matrix("X", X)
        n, sx2 = Xn.shape[0], np.linalg.norm(Xn, 2) ** 2
    if n != Yn.shape[0]:
        hint = (" -- did you pass X transposed?" if not isinstance(X, FeatureGram) and Xn.shape[1] == Yn.shape[0]
                else "")
        raise ValueError(f"X and Y must have the same number of rows (samples), got {n} and {Yn.shape[0]}{hint}")
    return float(L / n * sx2 ** (1.0 / L) * np.linalg.norm(Yn, 2) ** (2.0 * (L - 1) / L))

def _balanced_rowspace_spectrum(W: np.ndarray, E: np.ndarray, L: int) -> np.ndarray:
    """The ``r*dL`` GGN eigenvalues (unsorted; the other ``(d0 - r) dL`` are zero) of the strongly balanced depth-``L``
    net with end-to-end map ``W = U diag(w) V^T`` on features with ``C = P = E E^T`` (``E``: ``d0 x r``).  With
    ``B_l^T B_l = V w^(2(l-1)/L) V^T``, ``A_l A_l^T = U w^(2(L-l)/L) U^T``, ``sum_l P B_l^T B_l P kron A_l A_l^T`` splits
    over the left directions ``u_j`` (``w_j = 0`` past the rank) into ``a_j P + P V diag(d_j) V^T P``, ``a_j =
    w_j^(2(L-1)/L)``, ``d_jk = sum_(l>=2) w_j^(2(L-l)/L) w_k^(2(l-1)/L)``: on the row space ``a_j`` plus the eigenvalues of
    ``diag(sqrt d_j) Z Z^T diag(sqrt d_j)``, ``Z = V^T E``; ``W = W P`` gives ``Z Z^T = I``, :func:`balanced_spectrum`."""
    dL, r = W.shape[0], E.shape[1]
    _, w, Vt = np.linalg.svd(W, full_matrices=False)
    # round-off singular values are zeros: w^(2/L) would lift 1e-16 to 1e-8 (L = 4)
    w[w <= max(W.shape) * np.finfo(np.float64).eps * w[0]] = 0.0
    m = min(w.size, r)
    wl = np.concatenate([w, np.zeros(dL - w.size)])
    d = sum((wl[:, None] ** (2.0 * (L - l) / L) * w ** (2.0 * (l - 1) / L) for l in range(2, L + 1)),
            np.zeros((dL, w.size)))
    Z = Vt @ E
    root = np.sqrt(d)
    mu = np.linalg.eigvalsh(root[:, :, None] * (Z @ Z.T) * root[:, None, :])[:, ::-1]
    out = np.repeat((wl ** (2.0 * (L - 1) / L))[:, None], r, axis=1)
    out[:, :m] += mu[:, :m]  # Z Z^T has rank <= r: its top min(rank W, r) eigenvalues, the rest are zero
    return out.ravel()

@dataclass(frozen=True)
class SharpnessBounds:
    """``lower <= lambda_max <= upper`` from :func:`sharpness_bounds`; ``pair`` names the pair: ``"s_min"`` (the
    formula ``(s_min(X)^2/n, ||X||_2^2/n) L ||W||_2^(2-2/L)``) or ``"C=P"`` (``(c_min, c_max)`` times the exact
    ``lambda_max`` at ``C = P``, smaller than the formula's core).

    Attributes
    ----------
    lower, upper : float
        The bounds, ``0 <= lower <= upper``.
    pair : {"s_min", "C=P"}
        Which pair of bounds.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.linear import balanced_weights, ggn_spectrum, sharpness_bounds
    >>> X = np.random.default_rng(0).standard_normal((30, 3))
    >>> Ws = balanced_weights([3, 3, 2], [1.5, 0.5], seed=0)
    >>> b = sharpness_bounds(X, Ws[1] @ Ws[0], 2)
    >>> lam = float(ggn_spectrum(Ws, X, k=1)[0])
    >>> b.pair, bool(b.lower <= lam <= b.upper)
    ('s_min', True)
    """
    lower: float
    upper: float
    pair: str

    def __post_init__(self) -> None:
        check_choice("pair", self.pair, ("s_min", "C=P"))
        if not (math.isfinite(self.lower) and math.isfinite(self.upper) and 0.0 <= self.lower <= self.upper):
            raise ValueError(f"need finite 0 <= lower <= upper, got lower={self.lower!r}, upper={self.upper!r}")

def sharpness_bounds(X: "ArrayLike | FeatureGram", W: ArrayLike, L: int) -> SharpnessBounds:
    """``c_min lambda_P <= lambda_max <= c_max lambda_P`` for the top GGN eigenvalue (the Hessian's at zero loss or at
    the OLS solution) of the strongly balanced depth-``L`` net with end-to-end map ``W`` (``dL x d0``): ``c`` the nonzero
    eigenvalues of ``C = X^T X / n``, ``lambda_P`` the exact ``lambda_max`` at ``C = P``, the projector on the row space
    of ``X`` (the top of :func:`balanced_prediction` at ``sigma_x = 1``).

    ``lambda_P = L ||W||_2^(2-2/L)`` exactly when ``W``'s top right singular vector lies in the row space of ``X``
    (always for full-rank ``X``; for the OLS solution ``(X^+ Y)^T``): the pair is then the ``s_min`` pair
    ``(s_min(X)^2/n, ||X||_2^2/n) L ||W||_2^(2-2/L)``, returned as that formula.  Otherwise that formula overstates
    ``lambda_P`` and its lower end can exceed the true ``lambda_max``; the pair then uses the exact, smaller
    ``lambda_P`` and holds for every ``W``.  Returned rather than refused: the check costs as much as the valid value,
    which on whitened features (``c_min = c_max``) is the sharpness itself.

    Parameters
    ----------
    X : array (n, d0) or FeatureGram
        The features, or their :class:`FeatureGram`.
    W : array (dL, d0)
        The end-to-end map ``W_L ... W_1``.
    L : int
        The depth, ``>= 1``.

    Returns
    -------
    SharpnessBounds
        ``lower``, ``upper`` and ``pair``: ``"s_min"`` where the formula holds, ``"C=P"`` where the exact
        ``lambda_P`` replaced it.

    Raises
    ------
    ValueError
        If ``X`` is all zero, ``L`` is not an integer ``>= 1``, or ``W`` does not have ``d0`` columns (``X`` is named
        instead when ``W`` fits ``X`` transposed).

    Examples
    --------
    >>> X = whiten(np.random.default_rng(0).standard_normal((20, 4)) * [1.0, 1.0, 1.0, 0.0])  # rank 3: P != I
    >>> Ws = balanced_weights([4, 3, 2], [1.5, 0.5], seed=0)  # W's top right singular vector leaves the row space
    >>> b = sharpness_bounds(X, Ws[1] @ Ws[0], 2)
    >>> lam = float(ggn_spectrum(Ws, X, k=1)[0])  # whitened: c_min = c_max = 1, the pair is exact
    >>> b.pair, round(b.lower / lam, 10), round(b.upper / lam, 10), round(2 * 1.5**2 / lam, 2)  # the formula overstates
    ('C=P', 1.0, 1.0, 1.47)
    >>> sharpness_bounds(X, Ws[1] @ Ws[0] @ (X.T @ X / 20), 2).pair  # W = W P: the s_min formula
    's_min'
    """
    Wn = check_matrix("W", W)
    L = check_int("L", L, 1)
    rows, d0 = (None, X.d0) if isinstance(X, FeatureGram) else check_matrix("X", X).shape
    if Wn.shape[1] != d0 and Wn.shape[1] != rows:  # W fitting X^T: _gram names X as transposed
        raise ValueError(f"W must have d0 = {d0} columns (the features of X), got shape {Wn.shape}")
    G = _gram(X, Wn.shape[1], "the columns of W")
    if G.c.size == 0:
        raise ValueError("X is all zero: the bounds are 0 and say nothing")
    core = L * np.linalg.norm(Wn, 2) ** (2.0 - 2.0 / L)
    lam = float(_balanced_rowspace_spectrum(Wn, G.E, L).max())
    pair = "s_min"
    if lam < (1.0 - 1e-10) * core:  # else equal to round-off: keep the formula's own value
        core, pair = lam, "C=P"
    return SharpnessBounds(float(G.c[-1] * core), float(G.c[0] * core), pair)

def layer_sharpness_terms(weights: Sequence[ArrayLike], X: "ArrayLike | FeatureGram") -> np.ndarray:
    """``t_l = (1/n) ||X B_l^T||_2^2 ||A_l||_2^2`` for ``l = 1..L`` (``B_l = W_{l-1}..W_1``, ``A_l = W_L..W_{l+1}``):
    the top eigenvalue of the ``l``-th Kronecker term of :func:`ggn_kronecker_matrix`.

    Parameters
    ----------
    weights : sequence of array_like
        ``[W1, ..., WL]``, ``W_l`` of shape ``(d_l, d_{l-1})``.
    X : array_like (n, d0) or FeatureGram
        The features (rows are samples), or their :class:`FeatureGram`.

    Returns
    -------
    numpy.ndarray, shape (L,)
        The terms ``t_1, ..., t_L``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.linear import balanced_weights, layer_sharpness_terms, whiten
    >>> X = whiten(np.random.default_rng(0).standard_normal((30, 4)))
    >>> t = layer_sharpness_terms(balanced_weights([4, 3, 2], [1.5, 0.5], seed=0), X)
    >>> t.round(6).tolist()                           # 1 * 1.5**2 and 1.5**2 * 1
    [2.25, 2.25]
    """
    Ws = _validated_weights(weights)
    L, d0 = len(Ws), Ws[0].shape[1]
    H = _gram(X, d0).factor()  # ||X B^T||_2^2 / n = ||B F||_2^2
    out = np.empty(L)
    for l in range(1, L + 1):
        out[l - 1] = (np.linalg.norm(H, 2) ** 2 if H.size else 0.0) * np.linalg.norm(_chain(Ws, d0, l + 1, L), 2) ** 2
        H = Ws[l - 1] @ H
    return out

def weyl_sharpness_bounds(weights: Sequence[ArrayLike], X: "ArrayLike | FeatureGram") -> tuple[float, float]:
    """``max_l t_l <= lambda_max(GGN) <= sum_l t_l`` (Weyl; any weights, any ``X``), ``t_l`` from
    :func:`layer_sharpness_terms`; the upper bound is attained for a balanced network on isotropic features.

    Parameters
    ----------
    weights : sequence of array_like
        ``[W1, ..., WL]``, ``W_l`` of shape ``(d_l, d_{l-1})``.
    X : array_like (n, d0) or FeatureGram
        The features (rows are samples), or their :class:`FeatureGram`.

    Returns
    -------
    tuple of float
        ``(max_l t_l, sum_l t_l)``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.linear import balanced_weights, ggn_spectrum, weyl_sharpness_bounds, whiten
    >>> X = whiten(np.random.default_rng(0).standard_normal((30, 4)))
    >>> Ws = balanced_weights([4, 3, 2], [1.5, 0.5], seed=0)
    >>> lo, hi = weyl_sharpness_bounds(Ws, X)
    >>> round(lo, 4), round(hi, 4), round(float(ggn_spectrum(Ws, X, k=1)[0]), 4)   # balanced, isotropic: upper attained
    (2.25, 4.5, 4.5)
    """
    t = layer_sharpness_terms(weights, X)
    return float(t.max()), float(t.sum())

def balance_gaps(weights: Sequence[ArrayLike]) -> np.ndarray:
    """Distance from balanced, ``||W_{l+1}^T W_{l+1} - W_l W_l^T||_F / max(||W_{l+1}^T W_{l+1}||_F, ||W_l W_l^T||_F)``
    for ``l = 1..L-1`` (gradient flow conserves the numerator).

    Parameters
    ----------
    weights : sequence of array_like
        ``[W1, ..., WL]``, ``W_l`` of shape ``(d_l, d_{l-1})``.

    Returns
    -------
    numpy.ndarray, shape (L - 1,)
        Relative imbalance of each pair of consecutive layers.

    Examples
    --------
    >>> from htlib.linear import balance_gaps, balanced_weights, kaiming_uniform_weights
    >>> float(balance_gaps(balanced_weights([4, 3, 2], [1.5, 0.5], seed=0))[0]) < 1e-12
    True
    >>> float(balance_gaps(kaiming_uniform_weights([4, 3, 2], seed=0))[0]) > 0.1
    True
    """
    Ws = _validated_weights(weights)
    out = np.empty(len(Ws) - 1)
    for l in range(len(Ws) - 1):
        a, b = Ws[l + 1].T @ Ws[l + 1], Ws[l] @ Ws[l].T
        out[l] = np.linalg.norm(a - b) / max(np.linalg.norm(a), np.linalg.norm(b), 1e-300)
    return out

def balanced_prediction(weights: Sequence[ArrayLike], X: "ArrayLike | FeatureGram | None" = None,
                        sigma_x: float = 1.0, k: int | None = None) -> np.ndarray:
    """The GGN spectrum (top ``k`` of ``d0*dL``, largest first) of the strongly balanced net with the same end-to-end
    map ``W = W_L..W_1`` on whitened features, ``X^T X / n = sigma_x^2 P`` (``sigma_x > 0``), ``P`` the projector on the
    row space of ``X``, rank ``r`` (``X=None``: ``P = I``).

    When ``W = W P`` (``W``'s rows in the row space of ``X``; for strongly balanced weights ``W1 = W1 P``; checked to
    ``1e-10`` relative) this is the closed form :func:`balanced_spectrum` of ``s_i = sigma_i(W)^(1/L)`` on ``r``
    features, zeros padded.  Otherwise ``W``'s directions outside the row space still enter the Hessian, through the
    factors ``W_L..W_(l+1)`` and ``W_(l-1)..W_1`` of every layer, and the closed form of ``W P`` can be off by tens of
    percent: the exact spectrum of the balanced net is computed on the row space instead (small eigenproblems).
    For weights that are not balanced this is a prediction; :func:`ggn_spectrum` is their exact spectrum.

    Parameters
    ----------
    weights : sequence of array_like
        ``[W1, ..., WL]``, ``W_l`` of shape ``(d_l, d_{l-1})``.
    X : array_like (n, d0) or FeatureGram, optional
        Features whose row space is used (None: ``P = I``).
    sigma_x : float, default 1.0
        Scale of the whitened features.
    k : int, optional
        Only the top ``k``.

    Returns
    -------
    numpy.ndarray
        The ``d0*dL`` eigenvalues (or the top ``k``), largest first.

    Raises
    ------
    ValueError
        If the weights do not chain, ``X`` does not have ``d0`` columns, ``sigma_x <= 0`` or ``k < 1``.

    Examples
    --------
    >>> X = whiten(np.random.default_rng(0).standard_normal((20, 4)) * [1.0, 1.0, 1.0, 0.0])  # rank 3: P != I
    >>> Ws = balanced_weights([4, 3, 2], [1.5, 0.5], seed=0)  # rows partly outside the row space of X
    >>> bool(np.allclose(balanced_prediction(Ws, X), ggn_spectrum(Ws, X), rtol=0, atol=1e-12))
    True
    """
    Ws = _validated_weights(weights)
    sigma_x = check_float("sigma_x", sigma_x, low=0.0)
    if k is not None:
        k = check_int("k", k, 1)
    L, d0 = len(Ws), Ws[0].shape[1]
    W = _chain(Ws, d0, 1, L)
    G = _gram(X, d0)
    r, dL = d0 if G is None else G.c.size, W.shape[0]
    if G is not None and (r == 0 or np.linalg.norm(W - (W @ G.E) @ G.E.T) > 1e-10 * np.linalg.norm(W)):
        ev = sigma_x**2 * _balanced_rowspace_spectrum(W, G.E, L)
    else:
        if G is not None:
            W = (W @ G.E) @ G.E.T
        rank = min([r] + [V.shape[0] for V in Ws])
        ev = balanced_spectrum(np.linalg.svd(W, compute_uv=False)[:rank] ** (1.0 / L), L, r, dL, sigma_x)
    ev = np.sort(np.concatenate([ev, np.zeros((d0 - r) * dL)]))[::-1]
    return ev if k is None else ev[:k]

def interpolate_whitening(X: ArrayLike, t: float, sigma_x: float = 1.0) -> np.ndarray:
    """Features between ``X = U_r S V_r^T`` (``t = 0``) and :func:`whiten` of it (``t = 1``): ``U_r S_t V_r^T``
    with ``S_t = S^(1-t) (sqrt(n) sigma_x)^t``, condition number ``kappa(X)^(1-t)``.

    Parameters
    ----------
    X : array_like, shape (n, d0)
        The features.
    t : float
        In ``[0, 1]``: 0 keeps ``X``, 1 whitens it.
    sigma_x : float, default 1.0
        Scale of the whitened end.

    Returns
    -------
    numpy.ndarray, shape (n, d0)
        The interpolated features.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.linear import interpolate_whitening, whiten
    >>> X = np.random.default_rng(0).standard_normal((20, 3)) * [1.0, 2.0, 8.0]
    >>> bool(np.allclose(interpolate_whitening(X, 0.0), X)), bool(np.allclose(interpolate_whitening(X, 1.0), whiten(X)))
    (True, True)
    >>> bool(np.isclose(np.linalg.cond(interpolate_whitening(X, 0.5)), np.sqrt(np.linalg.cond(X))))
    True
    """
    Xn = check_matrix("X", X)
    t = check_float("t", t, low=0.0, high=1.0, strict=False)
    sigma_x = check_float("sigma_x", sigma_x, low=0.0)
    U, s, Vt = np.linalg.svd(Xn, full_matrices=False)
    if s[0] == 0.0:
        raise ValueError("X is all zero")
    r = int(np.sum(s > max(Xn.shape) * np.finfo(np.float64).eps * s[0]))
    st = s[:r] ** (1.0 - t) * (math.sqrt(Xn.shape[0]) * sigma_x) ** t
    return (U[:, :r] * st) @ Vt[:r]

# --- Numerical Hessian tools ------------------------------------------------------------------

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
    """The ``k`` largest *algebraic* eigenvalues: a run on ``|mu| I - H`` (``mu`` the largest-magnitude one)
    gives ``lambda_min``, then deflation on the positive semi-definite ``H + max(0, -lambda_min) I``."""
    mu = _power_deflated(hvp, hvp.dim, 1, tol=tol, maxiter=maxiter, rng=rng)[0]
    a = abs(mu)
    top = _power_deflated(lambda v: a * v - hvp(v), hvp.dim, 1, tol=tol, maxiter=maxiter, rng=rng)[0]
    shift = max(0.0, -(a - top))  # lambda_min = |mu| - top
    if shift > 0.0:
        shift *= 1.0 + 1e-6  # strictly positive definite: no tie between +lambda and -lambda
    vals = _power_deflated(lambda v: hvp(v) + shift * v, hvp.dim, k, tol=tol, maxiter=maxiter, rng=rng)
    return np.sort(np.array(vals) - shift)[::-1]

@dataclass(frozen=True)
class HessianEigenResult:
    """Outcome of :func:`hessian_eigensolve`: eigenvalues (largest first) and Hessian-vector products used.

    Attributes
    ----------
    values : numpy.ndarray
        The eigenvalues, largest first.
    hvps : int
        Hessian-vector products used.

    Examples
    --------
    >>> import torch
    >>> from htlib.linear import hessian_eigensolve
    >>> a = torch.arange(1.0, 11.0, dtype=torch.float64)          # Hessian diag(1, ..., 10)
    >>> r = hessian_eigensolve(lambda w: 0.5 * (a * w * w).sum(), [torch.zeros(10, dtype=torch.float64)], 2)
    >>> r.values.round(6).tolist(), r.hvps > 0
    ([10.0, 9.0], True)
    """

    values: np.ndarray
    hvps: int

def hessian_eigensolve(loss_fn: Callable[..., torch.Tensor], params: Sequence[torch.Tensor], k: int, *,
                       method: str = "lobpcg", tol: float = 1e-9, maxiter: int = 500, seed: int = 0
                       ) -> HessianEigenResult:
    """Top-``k`` (largest algebraic) Hessian eigenvalues from Hessian-vector products, and their cost.

    Parameters
    ----------
    params
        The point of ``loss_fn(*params) -> scalar tensor`` (float64 recommended; cloned, not modified).
    method
        ``"lobpcg"`` (SciPy's ``lobpcg``), ``"eigsh"`` (ARPACK Lanczos), or ``"power"`` (PyHessian-style power
        iteration with deflation on the Hessian shifted to be positive semi-definite).
    tol, maxiter
        Stopping rule (the solver's residual tolerance; relative change of the Rayleigh quotient for ``"power"``).

    Returns
    -------
    HessianEigenResult
        The ``k`` eigenvalues, largest first, and the number of Hessian-vector products.

    Examples
    --------
    >>> import torch
    >>> from htlib.linear import hessian_eigensolve
    >>> a = torch.arange(1.0, 11.0, dtype=torch.float64)
    >>> loss = lambda w: 0.5 * (a * w * w).sum()                   # Hessian diag(1, ..., 10)
    >>> hessian_eigensolve(loss, [torch.zeros(10, dtype=torch.float64)], 3, method="eigsh").values.round(6).tolist()
    [10.0, 9.0, 8.0]
    """
    from scipy.sparse.linalg import LinearOperator, eigsh, lobpcg
    check_choice("method", method, _METHODS)
    k = check_int("k", k, 1)
    maxiter = check_int("maxiter", maxiter, 1)
    hvp = _HVP(loss_fn, params)
    if not 1 <= k < hvp.dim:
        raise ValueError(f"k must be in [1, {hvp.dim - 1}], got {k}")
    rng = np.random.default_rng(check_int("seed", seed, 0))
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
    return HessianEigenResult(out, hvp.count)

def hessian_top_eigenvalues(loss_fn: Callable[..., torch.Tensor], params: Sequence[torch.Tensor], k: int,
                            **options) -> np.ndarray:
    """The eigenvalues of :func:`hessian_eigensolve` (same arguments), largest first.

    Parameters
    ----------
    loss_fn : callable
        ``loss_fn(*params) -> scalar tensor``.
    params : sequence of torch.Tensor
        The point.
    k : int
        Number of eigenvalues.
    **options
        ``method``, ``tol``, ``maxiter``, ``seed`` of :func:`hessian_eigensolve`.

    Returns
    -------
    numpy.ndarray
        The ``k`` largest eigenvalues, largest first.

    Examples
    --------
    >>> import torch
    >>> from htlib.linear import hessian_top_eigenvalues
    >>> a = torch.arange(1.0, 11.0, dtype=torch.float64)
    >>> ev = hessian_top_eigenvalues(lambda w: 0.5 * (a * w * w).sum(), [torch.ones(10, dtype=torch.float64)], 1,
    ...                              method="power")
    >>> round(float(ev[0]), 4)
    10.0
    """
    return hessian_eigensolve(loss_fn, params, k, **options).values

def hessian_matrix(loss_fn: Callable[..., torch.Tensor], params: Sequence[torch.Tensor]) -> np.ndarray:
    """The dense Hessian, one Hessian-vector product per column (for small parameter counts).

    Parameters
    ----------
    loss_fn : callable
        ``loss_fn(*params) -> scalar tensor``.
    params : sequence of torch.Tensor
        The point.

    Returns
    -------
    numpy.ndarray
        The symmetric ``p x p`` Hessian, ``p`` the number of parameters.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from htlib.linear import hessian_matrix
    >>> A = torch.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=torch.float64)
    >>> H = hessian_matrix(lambda w: 0.5 * w @ A @ w, [torch.zeros(2, dtype=torch.float64)])
    >>> H.round(6).tolist()
    [[2.0, 1.0], [1.0, 3.0]]
    """
    hvp = _HVP(loss_fn, params)
    H = hvp.matmat(np.eye(hvp.dim))
    return 0.5 * (H + H.T)

def hutchinson_trace(loss_fn: Callable[..., torch.Tensor], params: Sequence[torch.Tensor], probes: int, *,
                     seed: int) -> tuple[float, float]:
    """Hutchinson's estimate ``mean_i v_i^T H v_i`` over Rademacher probes, and its standard error.

    Parameters
    ----------
    loss_fn : callable
        ``loss_fn(*params) -> scalar tensor``.
    params : sequence of torch.Tensor
        The point.
    probes : int
        Number of Rademacher probes, ``>= 2``.
    seed : int
        Seed, ``>= 0``.

    Returns
    -------
    tuple of float
        The estimate and its standard error.

    Examples
    --------
    >>> import torch
    >>> from htlib.linear import hutchinson_trace
    >>> a = torch.arange(1.0, 11.0, dtype=torch.float64)            # a diagonal Hessian: every probe is exact
    >>> est, se = hutchinson_trace(lambda w: 0.5 * (a * w * w).sum(), [torch.zeros(10, dtype=torch.float64)], 8, seed=0)
    >>> round(est, 6), round(se, 6)                                  # 1 + ... + 10
    (55.0, 0.0)
    """
    probes = check_int("probes", probes, 2)
    hvp = _HVP(loss_fn, params)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    V = rng.choice(np.array([-1.0, 1.0]), size=(probes, hvp.dim)).T
    samples = np.sum(V * hvp.matmat(V), axis=0)
    return float(samples.mean()), float(samples.std(ddof=1) / math.sqrt(probes))

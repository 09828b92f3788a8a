"""Experiments of the chapter on linear-network Hessians (paper 004): Setup, cached runs, one result per figure."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from htlib import linear as lin
from htlib._checks import check_choice, check_float, check_int, check_matrix
from htlib.params import FLOP_RATE, Cost, ParameterError, SweepSetup, param

PAPER_EPOCHS = 10_000
"""Full-batch GD epochs of every training run in the paper (its section 7)."""

CONVERGED_EXCESS = 1e-3
"""A run has converged when its final loss exceeds the OLS loss by at most this fraction of ``||Y||_F^2 / 2n``."""

COLLAPSED_LR = 2.0**-10
"""The learning rate has collapsed when the halving rule has brought it below this fraction of ``eta_max``."""

DIP_FRAC = 0.05
"""A series dips when both its fall and its later rise are at least this fraction of its range ``max - min``."""

CONSERVED_DRIFT = 0.05
"""Drift of the layers' norm differences (per the total norm's movement) below which a 2-layer Fig. 3 run is forced."""

MISSING_CAPTURED = 0.5
"""An OLS output mode is *missing* from an end point that captured less than this share of it (:func:`mode_excess`)."""

FRESH_SEED = 1000
"""The pre-registered draws (Figs. 5 (iii), 6 middle, 8) use seeds from ``seed + FRESH_SEED``; no other run goes above 100."""

PREREG_DRAWS = 6
"""Draws of each pre-registered claim: a sign test over 6 decides at p = 1/64."""

HELD_CHUNK = 50_000
"""A run held in reduced coordinates (:func:`run_held_reduced`) checks its excess loss every this many epochs."""

HELD_STOP = 1e-12
"""...and stops once its excess over the OLS loss is at most this fraction of the zero map's loss (round-off level)."""

_WHITENINGS = ("rank", "rowspace", "none")
_INITS = ("balanced", "kaiming")
_ACTIVATIONS = ("linear", "tanh")
_METHODS = ("lobpcg", "power", "eigsh")
_HESSIAN_AT = ("all", "ends", "none")

def _load_images(key: tuple[str, str | None]) -> tuple[np.ndarray, np.ndarray]:
    from htlib import datasets
    X, lab = datasets.load_dataset(*key)
    return np.asarray(X / 16.0 if key[0] == "digits" else X, dtype=np.float64), np.asarray(lab)

@functools.lru_cache(maxsize=4)
def _images(dataset: str, data_dir: str | None) -> tuple[np.ndarray, np.ndarray]:
    """The data set, read-only, read once per process and cached (parsing MNIST-5k's CSV costs seconds per worker)."""
    from htlib import cache
    key = (dataset, data_dir)
    X, lab = cache.cached_call(_load_images, key) if dataset in ("mnist5k", "digits") else _load_images(key)
    X.setflags(write=False)
    lab.setflags(write=False)
    return X, lab

def prepare_data(dataset: str = "mnist5k", n: int = 5000, majority_share: float | None = None, *,
                 whitening: str = "rank", sigma_x: float = 1.0, seed: int = 0,
                 data_dir: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features, one-hot and integer labels of a subset; ``whitening``: ``"rank"``, ``"rowspace"`` or ``"none"``.

    Examples
    --------
    >>> X, Y, labels = prepare_data("digits", 300, whitening="rowspace", seed=0)
    >>> X.shape[1] < 64, bool(np.allclose(X.T @ X / 300, np.eye(X.shape[1])))
    (True, True)
    """
    check_choice("whitening", whitening, _WHITENINGS)
    Xall, lab = _images(dataset, data_dir)
    X, labels = lin.class_imbalanced_subset(Xall, lab, n, majority_share, seed=seed)
    if whitening != "none":
        X = lin.whiten(X, sigma_x)
        if whitening == "rowspace":
            X = X @ lin.feature_gram(X).E
    return X, lin.one_hot(labels, int(lab.max()) + 1), labels

def _ols_loss(gram: lin.FeatureGram, X: np.ndarray, Y: np.ndarray) -> float:
    """``min_W (1/2n)||X W^T - Y||_F^2`` on the numerical rank of ``X`` (the OLS loss)."""
    Z = (gram.E.T @ (X.T @ Y)) / (X.shape[0] * np.sqrt(gram.c[:, None]))  # C^(-1/2) X^T Y / n on the range
    return float(0.5 * (np.sum(Y * Y) / X.shape[0] - np.sum(Z * Z)))

def mode_excess(W: np.ndarray, X: np.ndarray, Y: np.ndarray, gram: lin.FeatureGram | None = None) -> dict[str, np.ndarray]:
    """Per OLS output mode: ``W``'s ``excess`` (per zero map's loss), the share ``captured``, the singular value ``sv``.

    Examples
    --------
    >>> X = np.eye(4) * 2.0; Y = np.array([[2.0, 0], [0, 1], [0, 0], [0, 0]])  # C = I, W_ols = diag(1, 0.5)
    >>> m = mode_excess(np.array([[1.0, 0, 0, 0], [0, 0, 0, 0]]), X, Y)  # mode 1 learnt, mode 2 missing
    >>> m["sv"].round(6).tolist(), m["captured"].round(6).tolist(), m["excess"].round(6).tolist()
    ([1.0, 0.5], [1.0, 0.0], [0.0, 0.2])
    """
    gram = gram or lin.feature_gram(X)
    n = X.shape[0]
    half = np.sqrt(gram.c)
    target = ((gram.E.T @ (X.T @ Y)) / (n * half[:, None])).T  # W_ols C^(1/2) on the range: dL x r
    U, sv, Vt = np.linalg.svd(target, full_matrices=False)
    WC = (W @ gram.E) * half
    per = 0.5 * np.sum((U.T @ (WC - target)) ** 2, axis=1)
    zero = 0.5 * float(np.sum(Y * Y)) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        captured = np.einsum("ij,jk,ik->i", U.T, WC, Vt) / sv
    return {"excess": per / zero, "captured": captured, "sv": sv}

@dataclass(frozen=True)
class LinearExperiment:
    """One training run of paper 004's section 7 and the spectra measured at ``measure_points + 1`` epochs along it."""
    depth: int = 4
    width: int = 64
    n: int = 5000
    majority_share: float | None = None
    dataset: str = "mnist5k"
    data_dir: str | None = None
    whitening: str = "rank"
    sigma_x: float = 1.0
    init: str = "balanced"
    init_scale: float = 1.0
    activation: str = "linear"
    lr: float = 1e-2
    epochs: int = PAPER_EPOCHS
    patience: int = 100
    plateau: float = 1e-3
    measure_points: int = 0
    log_spaced: bool = False
    k: int = 10
    hessian_at: str = "all"
    eig_method: str = "lobpcg"
    eig_tol: float = 1e-6
    hutchinson_probes: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        check_int("depth", self.depth, 1)
        check_int("width", self.width, 1)
        check_int("n", self.n, 1)
        check_choice("whitening", self.whitening, _WHITENINGS)
        check_choice("init", self.init, _INITS)
        check_choice("activation", self.activation, _ACTIVATIONS)
        check_choice("eig_method", self.eig_method, _METHODS)
        check_choice("hessian_at", self.hessian_at, _HESSIAN_AT)
        for name in ("lr", "init_scale", "sigma_x", "eig_tol"):
            check_float(name, getattr(self, name), low=0.0)
        check_float("plateau", self.plateau, low=0.0, high=1.0, strict=False)
        check_int("epochs", self.epochs, 0)
        check_int("patience", self.patience, 1)
        check_int("k", self.k, 1)
        check_int("hutchinson_probes", self.hutchinson_probes, 0)
        if check_int("measure_points", self.measure_points, 0) > self.epochs:
            raise ValueError(f"measure_points must be <= epochs = {self.epochs}, got {self.measure_points}")

def _measurement_epochs(epochs: int, points: int, log_spaced: bool) -> np.ndarray:
    """``points + 1`` epochs from 0 to ``epochs`` (evenly or log-spaced from 1), duplicates removed."""
    if not points:
        return np.array([epochs])
    grid = np.geomspace(1, max(epochs, 1), points) if log_spaced else np.linspace(0, epochs, points + 1)
    return np.unique(np.concatenate([[0], grid.round()]).astype(int))

def _closed_forms(Ws: list[np.ndarray], gram: lin.FeatureGram, sigma_x: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The closed form with ``C = I`` and with ``C = P`` (row-space projector): two layers or balanced (deeper)."""
    if len(Ws) == 2:
        iso = lin.two_layer_ntk_spectrum(Ws[0], Ws[1], sigma_x)[:k]
        row = lin.two_layer_ntk_spectrum(Ws[0] @ gram.E, Ws[1], sigma_x)
        return iso, np.concatenate([row, np.zeros(max(0, k - row.size))])[:k]
    return lin.balanced_prediction(Ws, None, sigma_x, k), lin.balanced_prediction(Ws, gram, sigma_x, k)

def run_linear_experiment(cfg: LinearExperiment) -> dict[str, np.ndarray | float]:
    """Train as ``cfg`` says; the loss, rate, spectra, norms and traces along it, the OLS loss and the end's modes."""
    X, Y, labels = prepare_data(cfg.dataset, cfg.n, cfg.majority_share, whitening=cfg.whitening,
                                sigma_x=cfg.sigma_x, seed=cfg.seed, data_dir=cfg.data_dir)
    gram = lin.feature_gram(X)  # once per run: every exact quantity below reads X through it
    dims = [X.shape[1]] + [cfg.width] * (cfg.depth - 1) + [Y.shape[1]]
    init_s = np.zeros(0)
    if cfg.init == "balanced":
        init_s = np.random.default_rng(cfg.seed + 1).uniform(0.0, cfg.init_scale, min(dims))
        W0 = lin.balanced_weights(dims, init_s, seed=cfg.seed + 2)
    else:
        W0 = lin.kaiming_uniform_weights(dims, seed=cfg.seed + 2)
    points = _measurement_epochs(cfg.epochs, cfg.measure_points, cfg.log_spaced)
    res = lin.train_gd(W0, X, Y, lr=cfg.lr, epochs=cfg.epochs, activation=cfg.activation,
                       patience=cfg.patience, min_rel_improvement=cfg.plateau, record_at=points)
    linear = cfg.activation == "linear"
    if linear:
        Q, loss_fn = lin.eigenbasis_loss(X, Y)
    else:
        Q, Xt, Yt = None, torch.as_tensor(X), torch.as_tensor(Y)
        def loss_fn(*ws: torch.Tensor) -> torch.Tensor:
            return lin.half_mse_loss(ws, Xt, Yt, cfg.activation)
    k = min(cfg.k, dims[0] * dims[-1])
    hess_epochs = {"all": set(points.tolist()), "ends": {int(points[0]), int(points[-1])},
                   "none": set()}[cfg.hessian_at]
    keys = ("numeric", "ggn", "closed_I", "closed_P", "sq_norm", "layer_sq_norms", "spec_norms2", "spec_norm2_P",
            "blank_share", "ggn_trace", "hutch", "hutch_se", "balance")
    out: dict[str, list] = {key: [] for key in keys}
    nan_k = np.full(k, np.nan)
    whitened = cfg.whitening != "none"
    for e in points:
        Ws = res.snapshots[int(e)]
        # linear nets: the point in the eigenbasis of X^T X (an orthogonal change of variables, so the
        # Hessian's eigenvalues and trace are unchanged); tanh nets: as they are
        params = [torch.as_tensor(Ws[0] @ Q if Q is not None else Ws[0])] + [torch.as_tensor(W) for W in Ws[1:]]
        measure = int(e) in hess_epochs
        out["numeric"].append(lin.hessian_top_eigenvalues(loss_fn, params, k, method=cfg.eig_method,
                                                          tol=cfg.eig_tol, seed=cfg.seed) if measure else nan_k)
        out["ggn"].append(lin.ggn_spectrum(Ws, gram, k=k) if linear else nan_k)
        closed = _closed_forms(Ws, gram, cfg.sigma_x, k) if (linear and whitened and cfg.depth > 1) else (nan_k, nan_k)
        out["closed_I"].append(closed[0])
        out["closed_P"].append(closed[1])
        layer = [float(np.sum(W * W)) for W in Ws]
        out["layer_sq_norms"].append(layer)
        out["sq_norm"].append(sum(layer))
        out["spec_norms2"].append([np.linalg.norm(W, 2) ** 2 for W in Ws])
        W1E = Ws[0] @ gram.E
        out["spec_norm2_P"].append(np.linalg.norm(W1E, 2) ** 2)
        out["blank_share"].append(1.0 - float(np.sum(W1E * W1E)) / layer[0] if layer[0] > 0 else 0.0)
        out["ggn_trace"].append(lin.ggn_trace(Ws, gram) if linear else np.nan)
        est, se = (lin.hutchinson_trace(loss_fn, params, cfg.hutchinson_probes, seed=cfg.seed)
                   if cfg.hutchinson_probes else (np.nan, np.nan))
        out["hutch"].append(est)
        out["hutch_se"].append(se)
        out["balance"].append(lin.balance_gaps(Ws) if cfg.depth > 1 else np.zeros(1))
    result: dict[str, np.ndarray | float] = {key: np.asarray(v, dtype=np.float64) for key, v in out.items()}
    if linear:  # where the end point's excess over the OLS loss sits (Fig. 4: a stalled run's missing modes)
        W_end = functools.reduce(lambda acc, W: W @ acc, res.snapshots[int(points[-1])])
        result.update({f"mode_{key}": v for key, v in mode_excess(W_end, X, Y, gram).items()})
    result.update(epochs=points.astype(np.int64), loss=res.losses, lr=res.lrs, lr_max=float(cfg.lr),
                  rank=int(gram.c.size), ols_loss=_ols_loss(gram, X, Y), zero_loss=float(0.5 * np.sum(Y * Y) / Y.shape[0]), init_s=init_s,
                  theory=lin.sharpness_isotropic(gram, Y, cfg.depth),
                  majority_share=float(np.bincount(labels).max() / labels.size))
    return result

def convergence(r: dict) -> dict[str, float | bool | int]:
    """Whether a run reached the OLS loss (:data:`CONVERGED_EXCESS`), and whether its rate collapsed before (stalled).

    Examples
    --------
    >>> r = {"loss": np.array([1.0, 0.5, 0.3]), "lr": np.array([0.1, 0.1, 1e-5]), "lr_max": 0.1,
    ...      "ols_loss": 0.1, "zero_loss": 1.0}
    >>> c = convergence(r)
    >>> c["converged"], c["stalled"], c["collapse_epoch"], round(c["excess"], 3)
    (False, True, 2, 0.2)
    """
    loss, lrs = np.asarray(r["loss"]), np.asarray(r["lr"])
    excess = (float(loss[-1]) - float(r["ols_loss"])) / float(r["zero_loss"])
    # the plateau: GD's loss decrease per step implies the squared gradient norm (L_t - L_(t+1) ~ eta ||g||^2)
    q = max(1, (loss.size - 1) // 4)
    tail = (float(loss[-1 - q]) - float(loss[-1])) / float(r["zero_loss"])
    steps = np.diff(loss[-1 - q:])
    grad2 = float(np.mean(-steps / lrs[-1 - q:-1])) if steps.size else float("nan")  # step t uses lr[t]
    low = np.flatnonzero(lrs <= COLLAPSED_LR * float(r["lr_max"]))
    converged = bool(excess <= CONVERGED_EXCESS)
    collapse = int(low[0]) if low.size else -1
    return {"final loss": float(loss[-1]), "OLS loss": float(r["ols_loss"]), "excess": excess, "lr_end": float(lrs[-1]),
            "collapse_epoch": collapse, "converged": converged, "stalled": bool(collapse >= 0 and not converged),
            "tail_drop": tail, "tail_epochs": q, "grad2_tail": grad2}

def convergence_table(runs: Sequence[dict], index: Sequence, names: Sequence[str]) -> "pd.DataFrame":
    import pandas as pd
    rows = [convergence(r) for r in runs]
    for row in rows:  # rates span 1e-2 to 1e-19: fixed-point rounding would print them all as 0
        row["lr_end"] = f"{row['lr_end']:.2g}"
        row["grad2_tail"] = f"{row['grad2_tail']:.2g}"
    idx = pd.MultiIndex.from_tuples(index, names=names) if index and isinstance(index[0], tuple) else \
        pd.Index(index, name=names[0])
    return pd.DataFrame(rows, index=idx)

def _sweep(configs: Sequence, setup: "Setup", fn=None) -> list:
    from htlib.sweep import run_sweep
    with setup.executor_context() as pool:
        return run_sweep(fn or run_linear_experiment, list(configs), executor=pool, progress=False)

def _svd_gram(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``U_r, s_r, V_r`` of ``X`` on its numerical rank (the tolerance of :func:`htlib.linear.whiten`)."""
    U, s, Vt = np.linalg.svd(X, full_matrices=False)
    r = int(np.sum(s > max(X.shape) * np.finfo(np.float64).eps * s[0]))
    return U[:, :r], s[:r], Vt[:r].T

def _ols_from_svd(U: np.ndarray, s: np.ndarray, V: np.ndarray, Y: np.ndarray) -> tuple[lin.FeatureGram, np.ndarray]:
    """The :class:`~htlib.linear.FeatureGram` of ``X = U diag(s) V^T`` and the OLS map ``(X^+ Y)^T``."""
    n = U.shape[0]
    return lin.FeatureGram(n, s**2 / n, V), ((V / s) @ (U.T @ Y)).T

def balanced_minimizer(dataset: str, n: int, majority_share: float | None, *, depth: int = 4, width: int = 64,
                       seed: int = 0, data_dir: str | None = None) -> dict[str, float]:
    """The OLS solution of a whitened subset as a balanced net (Hessian = GGN): its sharpness ``lam``, the formulas."""
    X0, Y, labels = prepare_data(dataset, n, majority_share, whitening="none", seed=seed, data_dir=data_dir)
    U, s, V = _svd_gram(X0)
    gram, W = _ols_from_svd(U, np.full(s.size, math.sqrt(n)), V, Y)  # whitened: same U, V, s = sqrt(n)
    Ws = lin.balanced_factorization(W, [W.shape[1]] + [width] * (depth - 1) + [W.shape[0]], seed=seed)
    Yp = U @ (U.T @ Y)
    gram_raw, W_raw = _ols_from_svd(U, s, V, Y)  # the same subset, raw pixels: the minimizer of Fig. 7 left
    Ws_raw = lin.balanced_factorization(W_raw, [W_raw.shape[1]] + [width] * (depth - 1) + [W_raw.shape[0]], seed=seed)
    return {"lam": float(lin.ggn_spectrum(Ws, gram, k=1)[0]), "formula": lin.sharpness_isotropic(gram, Y, depth),
            "lam_raw": float(lin.ggn_spectrum(Ws_raw, gram_raw, k=1)[0]),
            "formula_proj": lin.sharpness_isotropic(gram, Yp, depth),
            "ols_loss": float(0.5 * np.sum((Yp - Y) ** 2) / n), "rank": int(s.size),
            "majority_share": float(np.bincount(labels).max() / labels.size)}

@dataclass(frozen=True)
class _MinimizerConfig:
    dataset: str
    n: int
    majority_share: float | None
    seed: int
    data_dir: str | None = None

def _run_minimizer(cfg: _MinimizerConfig) -> dict[str, float]:
    return balanced_minimizer(cfg.dataset, cfg.n, cfg.majority_share, seed=cfg.seed, data_dir=cfg.data_dir)

@dataclass(frozen=True)
class HeldRun:
    """A balanced four-layer run on row-space features held at ``lr`` until the OLS loss (:func:`run_held_reduced`)."""
    n: int
    dataset: str = "mnist5k"
    data_dir: str | None = None
    width: int = 64
    depth: int = 4
    lr: float = 1e-2
    max_epochs: int = 1_000_000
    k: int = 10
    seed: int = 0

def reduced_coordinates(Ws: Sequence[np.ndarray], X: np.ndarray, Y: np.ndarray) -> list[np.ndarray]:
    """Orthonormal bases ``U_0, ..., U_L`` whose span full-batch GD never leaves from a low-rank start on ``C = I``.

    ``U_0`` spans the rows of ``W_1`` and of ``Y^T X`` (the gradient's rows when ``X^T X / n = I``), ``U_l`` the columns
    of ``W_l`` (``l < L``), ``U_L = I``: every gradient ``A_l^T G B_l^T`` lies in ``U_l U_l^T (.) U_(l-1) U_(l-1)^T``,
    so GD on ``U_l^T W_l U_(l-1)`` with features ``X U_0`` gives the same iterates.

    Examples
    --------
    >>> X = lin.whiten(np.random.default_rng(0).standard_normal((50, 8)))
    >>> Y = lin.one_hot(np.arange(50) % 3)
    >>> Ws = lin.balanced_weights([8, 6, 3], [1.0, 0.5], seed=1)
    >>> [U.shape for U in reduced_coordinates(Ws, X, Y)]
    [(8, 5), (6, 2), (3, 3)]
    """
    def basis(M: np.ndarray) -> np.ndarray:
        U, sv, _ = np.linalg.svd(M, full_matrices=False)
        return U[:, :int(np.sum(sv > max(M.shape) * np.finfo(np.float64).eps * sv[0]))]
    return [basis(np.hstack([Ws[0].T, X.T @ Y]))] + [basis(W) for W in Ws[:-1]] + [np.eye(Ws[-1].shape[0])]

def run_held_reduced(cfg: HeldRun) -> dict[str, np.ndarray | float]:
    """Fig. 4's balanced start held at ``lr`` in :func:`reduced_coordinates` until the OLS loss (or ``max_epochs``).

    Returns the loss every 100 epochs, the excess at each check, and at the start and the end the exact GGN, the
    balanced closed form and the balance gaps; LOBPCG on the Hessian at the start (the end is an OLS point, where the
    Hessian is the GGN: the residual is orthogonal to the columns of ``X``).
    """
    X, Y, _ = prepare_data(cfg.dataset, cfg.n, None, whitening="rowspace", seed=cfg.seed, data_dir=cfg.data_dir)
    gram = lin.feature_gram(X)
    dims = [X.shape[1]] + [cfg.width] * (cfg.depth - 1) + [Y.shape[1]]
    init_s = np.random.default_rng(cfg.seed + 1).uniform(0.0, 1.0, min(dims))  # the start of run_fig4's balanced run
    W0 = lin.balanced_weights(dims, init_s, seed=cfg.seed + 2)
    Us = reduced_coordinates(W0, X, Y)
    R = [Us[l + 1].T @ W @ Us[l] for l, W in enumerate(W0)]
    Xr = X @ Us[0]
    ols, zero = _ols_loss(gram, X, Y), float(0.5 * np.sum(Y * Y) / Y.shape[0])
    losses, checks, done = [], [], 0
    while True:
        step = min(HELD_CHUNK, cfg.max_epochs - done)
        res = lin.train_gd(R, Xr, Y, lr=cfg.lr, epochs=step, patience=100, min_rel_improvement=0.0)
        losses.append(res.losses[:-1] if done + step < cfg.max_epochs else res.losses)
        R, done = res.weights, done + step
        checks.append((float(res.losses[-1]) - ols) / zero)
        if checks[-1] <= HELD_STOP or done >= cfg.max_epochs:
            break
    loss = np.concatenate(losses)
    if loss.size != done + 1:  # the last chunk keeps its end point
        loss = np.r_[loss, float(res.losses[-1])]
    W_end = [Us[l + 1] @ Rl @ Us[l].T for l, Rl in enumerate(R)]
    k = min(cfg.k, dims[0] * dims[-1])
    Q, loss_fn = lin.eigenbasis_loss(X, Y)
    params = [torch.as_tensor(W0[0] @ Q)] + [torch.as_tensor(W) for W in W0[1:]]
    numeric0 = lin.hessian_top_eigenvalues(loss_fn, params, k, method="lobpcg", tol=1e-6, seed=cfg.seed)
    keep = np.unique(np.r_[np.arange(0, loss.size, 100), loss.size - 1])
    return {"loss_epochs": keep.astype(np.int64), "loss": loss[keep], "epochs": np.array([0, done], dtype=np.int64),
            "checks": np.array(checks), "excess": checks[-1], "ols_loss": ols, "zero_loss": zero, "lr_max": cfg.lr,
            "numeric0": numeric0, "ggn": np.array([lin.ggn_spectrum(W, gram, k=k) for W in (W0, W_end)]),
            "closed_I": np.array([lin.balanced_prediction(W, None, 1.0, k) for W in (W0, W_end)]),
            "balance": np.array([lin.balance_gaps(W).max() for W in (W0, W_end)]), "rank": int(gram.c.size)}

def depth_crossover(seed: int, *, n: int = 100, d: int = 20, width: int = 20, low: float = 3.2, high: float = 7.8,
                    margin: float = 0.2, tol: float = 1e-9) -> dict[str, np.ndarray | float]:
    """One draw of Fig. 6 middle's crossover test: ``lambda_max`` (``eigsh``) of balanced interpolating minimizers at the
    three depths at or below the predicted crossover ``2 ln(||X||_2/||Y||_2)`` and the three at or above it.

    ``sigma_x`` is set so that the crossover falls at a random point of ``[low, high]`` at least ``margin`` from an
    integer.
    """
    rng = np.random.default_rng(seed)
    X0 = rng.standard_normal((n, d))
    T = rng.standard_normal((d, d)) / math.sqrt(d)
    Y = X0 @ T.T
    while True:
        cross = float(rng.uniform(low, high))
        if abs(cross - round(cross)) >= margin:
            break
    sigma_x = np.linalg.norm(Y, 2) * math.exp(cross / 2.0) / math.sqrt(n)  # ||whiten(X0, s)||_2 = s sqrt(n)
    X = lin.whiten(X0, sigma_x)
    below, above = math.floor(cross), math.ceil(cross)
    depths = np.array([below - 2, below - 1, below, above, above + 1, above + 2])
    loss_fn = lin.gram_loss_fn(X, Y)
    lam = np.array([lin.hessian_top_eigenvalues(loss_fn, [torch.as_tensor(W) for W in lin.ols_balanced_weights(
        X, Y, [d] + [width] * (int(L) - 1) + [d], seed=seed + int(L))], 1, method="eigsh", tol=tol, seed=seed)[0]
        for L in depths])
    return {"depths": depths, "lam": lam, "crossover": 2.0 * math.log(np.linalg.norm(X, 2) / np.linalg.norm(Y, 2)),
            "sigma_x": sigma_x, "theory": np.array([lin.sharpness_isotropic(X, Y, int(L)) for L in depths])}

@dataclass(frozen=True)
class _CrossoverConfig:
    seed: int

def _run_crossover(cfg: _CrossoverConfig) -> dict:
    return depth_crossover(cfg.seed)

PATH_FAMILIES = ("geometric", "arithmetic", "shrinkage")
"""Fig. 5 (iii)'s pre-registered paths from raw (t = 0) to whitened (t = 1) singular values ``s`` of ``X``."""

def path_singular_values(s: np.ndarray, n: int, t: float, family: str) -> np.ndarray:
    """Singular values of ``X_t = U diag(s_t) V^T``: ``s^(1-t) sqrt(n)^t``, ``(1-t) s + t sqrt(n)`` or
    ``sqrt((1-t) s^2 + t n)`` (the covariance shrunk towards ``I``).

    Examples
    --------
    >>> s = np.array([4.0, 1.0])
    >>> [path_singular_values(s, 4, t, f).round(3).tolist() for f in PATH_FAMILIES for t in (0.0, 0.5, 1.0)][:3]
    [[4.0, 1.0], [2.828, 1.414], [2.0, 2.0]]
    """
    check_choice("family", family, PATH_FAMILIES)
    t = check_float("t", t, low=0.0, high=1.0, strict=False)
    root = math.sqrt(n)
    if family == "geometric":
        return s ** (1.0 - t) * root ** t
    if family == "arithmetic":
        return (1.0 - t) * s + t * root
    return np.sqrt((1.0 - t) * s ** 2 + t * n)

FIG5_FRESH_TS = (0.0, 0.25, 0.5, 0.75, 0.9, 1.0)
FIG5_FRESH_N = 2000
"""Fig. 5 (iii)'s pre-registered paths: the points ``t`` and the size of each fresh class-balanced subset."""

@dataclass(frozen=True)
class _PathConfig:
    dataset: str
    n: int
    seed: int
    ts: tuple
    data_dir: str | None = None

def _run_paths(cfg: _PathConfig) -> dict[str, np.ndarray]:
    """Every family of :data:`PATH_FAMILIES` on one class-balanced subset: reading B's position along ``ts``."""
    X0, Y, _ = prepare_data(cfg.dataset, cfg.n, 0.1, whitening="none", seed=cfg.seed, data_dir=cfg.data_dir)
    U, s, V = _svd_gram(X0)
    out = {}
    for family in PATH_FAMILIES:
        rows = [_ols_point(*_ols_from_svd(U, path_singular_values(s, cfg.n, t, family), V, Y), Y, 128, 2, cfg.seed)
                for t in cfg.ts]
        lam, t1, up = (np.array([r[key] for r in rows]) for key in ("ggn", "t_1", "L_t_1"))
        out[family] = (lam - t1) / (up - t1)
    return out

def log_slopes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares slope of ``log y`` on ``log x`` for each row (seed) of ``y`` (``x`` per row or shared).

    Examples
    --------
    >>> log_slopes([1.0, 10.0, 100.0], np.array([[2.0, 20.0, 200.0], [1.0, 1.0, 1.0]])).round(12).tolist()
    [1.0, 0.0]
    """
    x = np.broadcast_to(np.asarray(x, dtype=float), y.shape)
    return np.array([np.polyfit(np.log(xi), np.log(yi), 1)[0] for xi, yi in zip(x, y)])

def series_dip(x: Sequence[float], frac: float = DIP_FRAC) -> dict[str, float | bool | int]:
    """Whether a series dips: its minimum lies strictly inside, its fall and later rise each ``>= frac * (max - min)``.

    Examples
    --------
    >>> d = series_dip([88.93, 87.5, 86.89, 87.2, 87.57])
    >>> d["dip"], d["argmin"], round(d["rise"] / d["range"], 3)
    (True, 2, 0.333)
    >>> series_dip([1.0, 1.0, 1.0])["dip"], series_dip([3.0, 2.0, 1.0, 1.001])["dip"]
    (False, False)
    """
    a = np.asarray(x, dtype=float).ravel()
    if a.size < 3 or not np.all(np.isfinite(a)):
        raise ValueError(f"x must hold >= 3 finite values, got {a.size} values")
    frac = check_float("frac", frac, low=0.0, high=1.0)
    i = int(np.argmin(a))
    span = float(a.max() - a.min())
    fall, rise = float(a[0] - a[i]), float(a[i:].max() - a[i])
    dip = bool(0 < i < a.size - 1 and span > 0 and fall >= frac * span and rise >= frac * span)
    return {"dip": dip, "argmin": i, "fall": fall, "rise": rise, "range": span}

def conservation_drift(layer_sq_norms: np.ndarray) -> float:
    """Largest drift of ``||W_(l+1)||_F^2 - ||W_l||_F^2`` (gradient flow conserves it) per the total norm's range.

    Examples
    --------
    >>> conservation_drift(np.array([[1.0, 2.0], [0.5, 1.5], [3.0, 4.0]]))
    0.0
    >>> round(conservation_drift(np.array([[1.0, 2.0], [0.5, 2.5], [3.0, 4.0]])), 3)
    0.25
    """
    ln = check_matrix("layer_sq_norms", layer_sq_norms)
    d = np.diff(ln, axis=1)
    moved = float(np.abs(d - d[0]).max()) if d.size else 0.0
    total = ln.sum(1)
    span = float(total.max() - total.min())
    if span == 0.0:
        return 0.0 if moved == 0.0 else float("inf")
    return moved / span

def _corr(a: np.ndarray, b: np.ndarray) -> float:
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])

def trace_norm_agreement(trace, sq_norm, hutch=None, hutch_se=None, dip_frac: float = DIP_FRAC) -> dict[str, float | bool]:
    """How closely the trace follows the squared norm (Fig. 3): correlations, :func:`series_dip`s, Hutchinson's z.

    Examples
    --------
    >>> st = trace_norm_agreement([3.0, 2.0, 2.5, 4.0], [6.0, 4.1, 5.0, 8.0])
    >>> round(st["corr_diff"], 3), st["dip_trace"], st["dip_norm"]
    (0.999, True, True)
    >>> bool(np.isnan(trace_norm_agreement([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])["corr_diff"]))
    True
    """
    a, b = np.asarray(trace, dtype=float).ravel(), np.asarray(sq_norm, dtype=float).ravel()
    if a.size != b.size or a.size < 3:
        raise ValueError(f"trace and sq_norm must have the same length >= 3, got {a.size} and {b.size}")
    da, db = series_dip(a, dip_frac), series_dip(b, dip_frac)
    z = np.nan
    if hutch is not None and hutch_se is not None:
        z = float(np.max(np.abs(np.asarray(hutch) - a) / np.asarray(hutch_se)))
    return {"corr_level": _corr(a, b), "corr_diff": _corr(np.diff(a), np.diff(b)), "dip_trace": da["dip"],
            "dip_norm": db["dip"], "argmin_trace": da["argmin"], "argmin_norm": db["argmin"],
            "rise_trace": da["rise"] / a.min() if a.min() > 0 else np.nan,
            "rise_norm": db["rise"] / b.min() if b.min() > 0 else np.nan, "hutch_z": z}

def exact_ggn_case(n: int = 100, d: int = 20, depth: int = 5, sigma_x: float = 3.0, *, seed: int = 0) -> dict[str, np.ndarray]:
    """Fig. 6 left: the dense Hessian's eigenvalues of a balanced net at zero loss and their closed form."""
    rng = np.random.default_rng(seed)
    X = lin.whiten(rng.standard_normal((n, d)), sigma_x)
    s = rng.uniform(0.0, 1.0, d)
    Ws = lin.balanced_weights([d] * (depth + 1), s, seed=seed + 1)
    Y = X
    for W in Ws:
        Y = Y @ W.T
    H = lin.hessian_matrix(lin.gram_loss_fn(X, Y), [torch.as_tensor(W) for W in Ws])
    return {"numeric": np.sort(np.linalg.eigvalsh(H))[::-1], "theory": lin.balanced_spectrum(s, depth, d, d, sigma_x),
            "s": np.sort(s)[::-1]}

def depth_sweep(depths: Sequence[int], sigma_xs: Sequence[float], *, n: int = 100, d: int = 20, width: int = 20,
                seed: int = 0, tol: float = 1e-9) -> dict[str, np.ndarray]:
    """Fig. 6 middle (the book's setup): top Hessian eigenvalue of balanced OLS nets against depth, and the formula."""
    rng = np.random.default_rng(seed)
    X0 = rng.standard_normal((n, d))
    T = rng.standard_normal((d, d)) / math.sqrt(d)
    Y = X0 @ T.T  # whitening keeps the column space, so every X below interpolates these labels
    numeric = np.empty((len(sigma_xs), len(depths)))
    theory = np.empty_like(numeric)
    cross = np.empty(len(sigma_xs))
    for a, sx in enumerate(sigma_xs):
        X = lin.whiten(X0, sx)
        cross[a] = 2.0 * math.log(np.linalg.norm(X, 2) / np.linalg.norm(Y, 2))
        loss_fn = lin.gram_loss_fn(X, Y)
        for b, L in enumerate(depths):
            Ws = lin.ols_balanced_weights(X, Y, [d] + [width] * (L - 1) + [d], seed=seed + b)
            numeric[a, b] = lin.hessian_top_eigenvalues(loss_fn, [torch.as_tensor(W) for W in Ws], 1,
                                                        method="eigsh", tol=tol, seed=seed)[0]
            theory[a, b] = lin.sharpness_isotropic(X, Y, L)
    return {"numeric": numeric, "theory": theory, "crossover": cross}

def _ols_point(gram: lin.FeatureGram, W: np.ndarray, Y: np.ndarray, width: int, depth: int, seed: int) -> dict[str, float]:
    """Exact top GGN (= Hessian at OLS) eigenvalue of ``W`` as a balanced net, the layer terms ``t`` and both bounds."""
    dims = [W.shape[1]] + [width] * (depth - 1) + [W.shape[0]]
    Ws = lin.balanced_factorization(W, dims, seed=seed)
    t = lin.layer_sharpness_terms(Ws, gram)
    b = lin.sharpness_bounds(gram, W, depth)
    return {"ggn": lin.ggn_spectrum(Ws, gram, k=1)[0], "t_max": float(t.max()), "t_sum": float(t.sum()),
            "t_1": float(t[0]), "L_t_1": float(depth * t[0]), "smin_lower": b.lower, "s_upper": b.upper,
            "iso": lin.sharpness_isotropic(gram, Y, depth), "kappa": math.sqrt(gram.c[0] / gram.c[-1])}

def ols_sharpness(shares: Sequence[float], *, whitened: bool, n: int = 1000, width: int = 128, depth: int = 2,
                  dataset: str = "mnist5k", data_dir: str | None = None, sigma_x: float = 1.0,
                  seed: int = 0) -> dict[str, np.ndarray]:
    """:func:`_ols_point` for class-imbalanced subsets (paper 004, Fig. 5); arrays over ``shares``."""
    rows = []
    for a in shares:
        X, Y, _ = prepare_data(dataset, n, a, whitening="rank" if whitened else "none", sigma_x=sigma_x, seed=seed,
                               data_dir=data_dir)
        rows.append(_ols_point(*_ols_from_svd(*_svd_gram(X), Y), Y, width, depth, seed))
    return {key: np.array([r[key] for r in rows]) for key in rows[0]}

def anisotropy_sweep(ts: Sequence[float], *, n: int = 5000, width: int = 128, depth: int = 2, dataset: str = "mnist5k",
                     data_dir: str | None = None, seed: int = 0) -> dict[str, np.ndarray]:
    """:func:`_ols_point` along :func:`htlib.linear.interpolate_whitening` of one balanced subset (one SVD)."""
    X0, Y, _ = prepare_data(dataset, n, None, whitening="none", seed=seed, data_dir=data_dir)
    U, s, V = _svd_gram(X0)
    rows = []
    for t in ts:
        st = s ** (1.0 - t) * math.sqrt(n) ** t
        rows.append(_ols_point(*_ols_from_svd(U, st, V, Y), Y, width, depth, seed))
    return {key: np.array([r[key] for r in rows]) for key in rows[0]}

def nonzero_eigenvalue_counts(dims: Sequence[int], *, n: int = 40, seed: int = 0, rtol: float = 1e-10) -> dict[str, int]:
    """Nonzero Hessian eigenvalues of a small balanced net at zero loss, ``r (d0 + dL - r)`` and ``min(dims)^2``."""
    dims = [check_int(f"dims[{i}]", d, 1) for i, d in enumerate(dims)]
    if len(dims) < 3:
        raise ValueError(f"dims must hold >= 3 sizes (>= 2 layers), got {dims}")
    rng = np.random.default_rng(seed)
    r, d0, dL = min(dims), dims[0], dims[-1]
    X = lin.whiten(rng.standard_normal((n, d0)))
    Ws = lin.balanced_weights(dims, rng.uniform(0.5, 1.5, r), seed=seed + 1)
    Y = X
    for W in Ws:
        Y = Y @ W.T
    ev = np.linalg.eigvalsh(lin.hessian_matrix(lin.gram_loss_fn(X, Y), [torch.as_tensor(W) for W in Ws]))
    return {"measured": int(np.sum(ev > rtol * ev.max())), "formula": r * (d0 + dL - r), "paper": r * r,
            "params": int(sum(W.size for W in Ws))}

_DATASETS = ("mnist5k", "digits", "mnist", "fashion_mnist", "cifar10")
_DATA_SHAPES = {"mnist5k": (5000, 784), "digits": (1797, 64), "mnist": (60000, 784), "fashion_mnist": (60000, 784),
                "cifar10": (50000, 3072)}  # (images, pixels) of each training set
EPOCH_SECONDS = 5e-4
"""Seconds of one full-batch epoch of one run, upper end (a width-10 run in the reduced coordinates: 7.7e-5)."""
_DATA_NAMES = {"mnist5k": "MNIST-5k", "digits": "scikit-learn digits", "mnist": "MNIST", "fashion_mnist": "FashionMNIST",
               "cifar10": "CIFAR-10"}

@dataclass(frozen=True)
class Setup(SweepSetup):
    """The chapter's parameters (its ``parameters`` cell), declared and validated once.

    Examples
    --------
    >>> Setup(seeds=2).seeds
    2
    >>> Setup(epochs=10, trace_points=20)
    Traceback (most recent call last):
    ...
    htlib.params.ParameterError: parameter 'trace_points' must be ≤ epochs = 10; got 20
    """
    dataset: str = param("mnist5k", "data set", choices=_DATASETS)
    data_dir: str = param("", 'folder of the MNIST/FashionMNIST/CIFAR-10 files ("" for mnist5k, digits)')
    n: int = param(5000, "size of the balanced subsets (paper: 5000; 0 for all)", ge=0)
    epochs: int = param(PAPER_EPOCHS, "full-batch GD epochs of the linear runs (paper: 10000)", ge=1)
    tanh_epochs: int = param(1000, "GD epochs of the tanh runs, Fig. 7 right (paper: 10000)", ge=1)
    converged_epochs: int = param(30_000, "GD epochs of the runs of Figs. 1-2 held at their learning rate: Figs. 1-2 "
                                          "are judged on theirs (0: on the paper-schedule run)",
                                  ge=0)
    held4_epochs: int = param(1_000_000, "most GD epochs of Fig. 4's runs held at eta_max in exact reduced coordinates, "
                              "one per seed (each stops once at the OLS loss)", ge=1, le=100_000_000)
    measure_points: int = param(5, "exact-GGN measurements along training, Figs. 1, 2, 4 (at most epochs)", ge=1)
    hessian_at: str = param("ends", 'LOBPCG Hessian measurements in Figs. 1, 2, 4 (paper: "all")',
                            choices=("all", "ends"))
    trace_points: int = param(20, "trace measurements along training, Fig. 3 (at most epochs)", ge=2)
    top_k: int = param(10, "eigenvalues tracked in Figs. 1 and 4", ge=1)
    hutchinson_probes: int = param(30, "Rademacher probes of Hutchinson's trace, Fig. 3", ge=2)
    n_imbalanced: int = param(0, "subset size of the imbalance sweeps (0 for the largest allowed)", ge=0)
    majority_shares: tuple[float, ...] = param((0.1, 0.2, 0.3, 0.4, 0.5), "share of class 0 in the imbalance sweeps",
                                               ge=0.1, le=1.0)
    sizes: tuple[int, ...] = param((500, 1000, 2000, 5000), "subset sizes of Fig. 8 (those above the data set's left out)",
                                   ge=10, le=60_000)
    seeds: int = param(3, "subsets and starts per point of Figs. 6-8, and the runs of Fig. 4 held to the OLS loss", ge=1)
    subsets: int = param(10, "uniform random subsets per size for the exact minimizers of Fig. 8 (at least seeds)", ge=2)
    tanh_seeds: int = param(1, "seeds of the tanh runs, Fig. 7 right", ge=1)
    depths: tuple[int, ...] = param((1, 2, 3, 4, 6, 8, 12), "depths of Fig. 6 (middle)", ge=1)
    sigma_xs: tuple[float, ...] = param((1.0, 3.0, 10.0), "feature scales of Fig. 6 (middle)", gt=0)
    aniso_ts: tuple[float, ...] = param((0.0, 0.25, 0.5, 0.75, 0.9, 1.0), "raw-to-whitened interpolation, Fig. 5",
                                        ge=0.0, le=1.0, min_len=2)
    seed: int = param(0, "base seed", ge=0)

    def costs(self) -> list[Cost]:
        images, pixels = _DATA_SHAPES[self.dataset]
        n, shares = self.n or images, len(self.majority_shares)
        run_epochs = (self.epochs * (7 + 3 * self.seeds * shares + self.seeds * len(self.sizes))
                      + 2 * self.converged_epochs + self.held4_epochs * self.seeds // 5 + self.tanh_epochs * self.tanh_seeds * shares
                      + 8 * self.hutchinson_probes * self.trace_points + 600 * self.measure_points * self.top_k)
        minimizers = self.subsets * len(self.sizes) + self.seeds * shares * 2
        return [Cost("the gradient-descent runs and the exact minimizers",
                     ("epochs", "converged_epochs", "held4_epochs", "tanh_epochs", "seeds", "subsets", "top_k", "hutchinson_probes",
                      "trace_points", "measure_points", "tanh_seeds"),
                     memory=self.workers * 8.0 * 3 * n * pixels,
                     seconds=(run_epochs * EPOCH_SECONDS + minimizers * max(self.sizes) * pixels ** 2 / FLOP_RATE) / 2)]

    def _check(self) -> None:
        images = _DATA_SHAPES[self.dataset][0]
        for name in ("n", "n_imbalanced"):
            if getattr(self, name) > images:
                raise ParameterError(f"parameter {name!r} must be ≤ {images:,} (the {_DATA_NAMES[self.dataset]} training "
                                     f"images; 0 for the largest); got {getattr(self, name)}")
        if self.subsets < self.seeds:  # the trained runs of Fig. 8 use the first `seeds` of the subsets
            raise ParameterError(f"parameter 'subsets' must be ≥ seeds = {self.seeds}; got {self.subsets}")
        for name in ("measure_points", "trace_points"):
            if getattr(self, name) > self.epochs:
                raise ParameterError(f"parameter {name!r} must be ≤ epochs = {self.epochs}; got {getattr(self, name)}")
        if self.converged_epochs and self.measure_points > self.converged_epochs:
            raise ParameterError(f"parameter 'converged_epochs' must be 0 or ≥ measure_points = {self.measure_points}; "
                                 f"got {self.converged_epochs}")

    @property
    def held_epochs(self) -> int:
        return self.converged_epochs or self.epochs

    @property
    def ddir(self) -> str | None:
        return self.data_dir or None

    @property
    def d0(self) -> int:
        return int(_images(self.dataset, self.ddir)[0].shape[1])

    @property
    def labels(self) -> np.ndarray:
        return _images(self.dataset, self.ddir)[1]

    @property
    def n_bal(self) -> int:
        return self.n or int(self.labels.size)

    @property
    def n_imb(self) -> int:
        return self.n_imbalanced or lin.largest_imbalanced_n(self.labels, self.majority_shares)

    @property
    def sizes_ok(self) -> tuple[int, ...]:
        return tuple(m for m in self.sizes if m <= self.labels.size)

    def base(self, **over) -> dict:
        return {"dataset": self.dataset, "data_dir": self.ddir, "epochs": self.epochs, **over}

    @property
    def data_name(self) -> str:
        return _DATA_NAMES.get(self.dataset, self.dataset)

    def deviations(self, *extra: str, imbalanced: bool = False, trained: bool = True, data: str | None = None) -> str:
        """The ``setting`` of a claim: every deviation from the paper's protocol, or ``"paper"``."""
        from htlib.claims import PAPER_SETTING
        parts = []
        if data is not None:
            parts.append(data)
        elif self.dataset != "mnist" or self.n_bal != 5000:
            parts.append(f"{self.data_name} subsets of {self.n_imb if imbalanced else self.n_bal} images (paper: 5,000 "
                         "of MNIST, FashionMNIST and CIFAR-10)")
        if trained and self.epochs != PAPER_EPOCHS:
            parts.append(f"{self.epochs} GD epochs (paper: {PAPER_EPOCHS})")
        parts += [e for e in extra if e]
        return "; ".join(parts) if parts else PAPER_SETTING

PAPER = Setup(tanh_epochs=PAPER_EPOCHS, hessian_at="all")
"""The paper's settings (``make paper``): 10,000 epochs also for the tanh runs, LOBPCG at every measurement."""

def _gap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Top-k max relative gap ``max_i |a_i - b_i| / b_0`` per row (NaN where ``b`` was not measured)."""
    a, b = np.atleast_2d(a), np.atleast_2d(b)
    return np.abs(a - b).max(1) / b[:, 0]

@dataclass(frozen=True)
class Fig12:
    """Figs. 1-2: the 2-layer width-256 runs (``"rank"``, ``"rowspace"``, ``"converged"``: :func:`run_fig12`)."""
    runs: dict
    top_k: int

    def table(self, whitening: str) -> "pd.DataFrame":
        """Per measurement epoch: loss, the tops, the squared spectral norms' sum and max, the top-k gaps."""
        import pandas as pd
        r = self.runs[whitening]
        sn = r["spec_norms2"]
        return pd.DataFrame({"epoch": r["epochs"], "loss": r["loss"][r["epochs"]], "LOBPCG": r["numeric"][:, 0],
                             "GGN": r["ggn"][:, 0], "closed C=I": r["closed_I"][:, 0], "closed C=P": r["closed_P"][:, 0],
                             "sum": sn.sum(1), "sum with P": r["spec_norm2_P"] + sn[:, 1], "max": sn.max(1),
                             "gap closed C=I": _gap(r["closed_I"], r["numeric"]), "gap closed C=I vs GGN":
                             _gap(r["closed_I"], r["ggn"]), "gap GGN": _gap(r["ggn"], r["numeric"])}).set_index("epoch")

    def end(self, whitening: str) -> dict[str, float]:
        """What the claims read, against LOBPCG where the run measured the Hessian, else the exact GGN."""
        r = self.runs[whitening]
        hess = bool(np.any(np.isfinite(r["numeric"][:, 0])))
        ref = r["numeric"] if hess else r["ggn"]
        rows = np.isfinite(ref[:, 0])
        gaps, sn = _gap(r["closed_I"], ref)[rows], r["spec_norms2"][rows]
        return {"reference": "LOBPCG" if hess else "exact GGN", "gap0": float(gaps[0]), "gap": float(gaps[-1]),
                "gap_P": float(_gap(r["closed_P"], ref)[rows][-1]), "gap_ggn": float(_gap(r["ggn"], ref)[rows][-1]),
                "lam": float(ref[rows][-1, 0]), "sum": float(sn[-1].sum()),
                "sum_P": float(r["spec_norm2_P"][rows][-1] + sn[-1, 1]), "max": float(sn[-1].max()),
                "blank": float(r["blank_share"][-1]), "loss0": float(r["loss"][0]), "loss": float(r["loss"][-1]),
                "ols": float(r["ols_loss"])}

def run_fig12(setup: Setup) -> Fig12:
    """Figs. 1-2: 2-layer width-256, Kaiming start, row-space and rank-whitened, and held at ``eta_max``."""
    keys = ("rowspace", "rank") + (("converged",) if setup.converged_epochs else ())
    # the rank-whitened twin isolates the whitening (closed forms against the exact GGN): no Hessian needed
    cfgs = [LinearExperiment(depth=2, width=256, n=setup.n_bal, init="kaiming", lr=1e-3, k=setup.top_k,
                             measure_points=setup.measure_points, hessian_at="none" if key == "rank" else setup.hessian_at,
                             whitening="rank" if key == "rank" else "rowspace", plateau=0.0 if key == "converged" else 1e-3,
                             **setup.base(seed=setup.seed, **({"epochs": setup.converged_epochs} if key == "converged"
                                                              else {}))) for key in keys]
    return Fig12(dict(zip(keys, _sweep(cfgs, setup))), setup.top_k)

@dataclass(frozen=True)
class Fig3:
    """Fig. 3: the trace and the squared parameter norm along training, per run (2 layers, 4 layers)."""
    runs: tuple
    names: tuple

    @property
    def stats(self) -> list[dict]:
        return [trace_norm_agreement(r["ggn_trace"], r["sq_norm"], r["hutch"], r["hutch_se"]) for r in self.runs]

    def conservation(self) -> list[float]:
        return [conservation_drift(r["layer_sq_norms"]) for r in self.runs]

    def forced(self) -> list[bool]:
        return [_forced(r) for r in self.runs]

    def stats_table(self) -> "pd.DataFrame":
        import pandas as pd
        return pd.DataFrame(self.stats, index=list(self.names)).assign(**{"conservation drift": self.conservation()})

    def norms_table(self) -> "pd.DataFrame":
        """Per run and series (layers, total, trace): start, at the trace's minimum, end, epoch of its own minimum."""
        import pandas as pd
        rows = []
        for name, r, st in zip(self.names, self.runs, self.stats):
            i = st["argmin_trace"]
            ln = r["layer_sq_norms"]
            series = {f"W{l + 1}": ln[:, l] for l in range(ln.shape[1])}
            series.update({"total": r["sq_norm"], "trace": r["ggn_trace"]})
            for key, x in series.items():
                rows.append({"run": name, "series": key, "start": x[0], "at the trace minimum": x[i], "end": x[-1],
                             "epoch of its minimum": int(r["epochs"][int(np.argmin(x))])})
        return pd.DataFrame(rows).set_index(["run", "series"])

def run_fig3(setup: Setup) -> Fig3:
    """Fig. 3: 2-layer width-256 and 4-layer width-64 nets, Kaiming start, ``trace_points`` log-spaced epochs."""
    shapes = ((2, 256), (4, 64))
    cfgs = [LinearExperiment(depth=d, width=w, n=setup.n_bal, init="kaiming", lr=5e-4, measure_points=setup.trace_points,
                             k=1, hessian_at="none", hutchinson_probes=setup.hutchinson_probes, log_spaced=True,
                             **setup.base(seed=setup.seed)) for d, w in shapes]
    return Fig3(tuple(_sweep(cfgs, setup)), tuple(f"{d} layers, width {w}" for d, w in shapes))

@dataclass(frozen=True)
class Fig4:
    """Fig. 4: 4-layer width-64 runs by ``(start, whitening)`` (the paper's schedule), and the judged balanced row-space
    runs held at ``eta_max`` to the OLS loss in reduced coordinates, one per seed (:func:`run_held_reduced`)."""
    runs: dict
    top_k: int
    held_runs: tuple = ()

    def table(self) -> "pd.DataFrame":
        """Per run and epoch: loss, balance gap, and the closed form and GGN against the exact GGN and LOBPCG."""
        import pandas as pd
        rows = []
        for key, r in self.runs.items():
            if len(key) > 2:
                continue
            for j, e in enumerate(r["epochs"]):
                rows.append({"start": key[0], "whitening": key[1], "epoch": int(e), "loss": r["loss"][e],
                             "balance gap": r["balance"][j].max(),
                             "closed vs GGN": _gap(r["closed_I"][j], r["ggn"][j])[0],
                             "closed vs LOBPCG": _gap(r["closed_I"][j], r["numeric"][j])[0],
                             "closed C=P vs LOBPCG": _gap(r["closed_P"][j], r["numeric"][j])[0],
                             "GGN vs LOBPCG": _gap(r["ggn"][j], r["numeric"][j])[0]})
        return pd.DataFrame(rows).set_index(["start", "whitening", "epoch"]).sort_index()

    def convergence_table(self) -> "pd.DataFrame":
        keys = list(self.runs)
        return convergence_table([self.runs[k] for k in keys],
                                 [(k[0], k[1], "held at eta_max" if len(k) > 2 else "halving") for k in keys],
                                 ["start", "whitening", "schedule"])

    def modes_table(self) -> "pd.DataFrame":
        """Per run and OLS output mode: its singular value, the share captured and its excess (:func:`mode_excess`)."""
        import pandas as pd
        rows = []
        for key, r in self.runs.items():
            name = (key[0], key[1], "held at eta_max" if len(key) > 2 else "halving")
            for i, (sv, cap, ex) in enumerate(zip(r["mode_sv"], r["mode_captured"], r["mode_excess"])):
                rows.append({"start": name[0], "whitening": name[1], "schedule": name[2], "mode": i + 1,
                             "OLS singular value": sv, "captured": cap, "excess": ex})
        return pd.DataFrame(rows).set_index(["start", "whitening", "schedule", "mode"])

    def held(self) -> list[dict[str, float]]:
        """Per held run: epochs, excess over the OLS loss, the closed form's gap to the Hessian at the start (LOBPCG)
        and at the end (the exact GGN, the Hessian at an OLS point), and the balance gaps."""
        out = []
        for r in self.held_runs:
            out.append({"epochs": int(r["epochs"][-1]), "excess": float(r["excess"]),
                        "converged": bool(r["excess"] <= CONVERGED_EXCESS),
                        "gap0": float(_gap(r["closed_I"][0], r["numeric0"])[0]),
                        "gap": float(_gap(r["closed_I"][-1], r["ggn"][-1])[0]),
                        "balance0": float(r["balance"][0]), "balance": float(r["balance"][-1]),
                        "lam": float(r["ggn"][-1][0])})
        return out

    def held_table(self) -> "pd.DataFrame":
        import pandas as pd
        return pd.DataFrame(self.held(), index=pd.Index(range(len(self.held_runs)), name="seed"))

    def end(self, start: str, whitening: str) -> dict[str, float]:
        """What the claims read of one run: gaps, balance, ``s_min``, missing modes and :func:`convergence`."""
        tab = self.table().loc[(start, whitening)]
        r = self.runs[(start, whitening)]
        hess = bool(tab["closed vs LOBPCG"].notna().any())
        col = "closed vs LOBPCG" if hess else "closed vs GGN"
        m = tab.dropna(subset=[col])
        return {"reference": "LOBPCG" if hess else "exact GGN", "gap0": float(m[col].iloc[0]),
                "gap": float(m[col].iloc[-1]),
                "gap_P": float(m["closed C=P vs LOBPCG"].iloc[-1]) if hess else float("nan"),
                "gap_ggn": float(m["GGN vs LOBPCG"].iloc[-1]) if hess else 0.0,
                "closed_ggn0": float(tab["closed vs GGN"].iloc[0]), "balance0": float(tab["balance gap"].iloc[0]),
                "balance": float(tab["balance gap"].iloc[-1]), "s_min": float(r["init_s"].min()) if r["init_s"].size
                else float("nan"), **_missing_modes(r), **convergence(r)}

def _missing_modes(r: dict) -> dict:
    """The OLS output modes a run misses (captured below :data:`MISSING_CAPTURED`): count, excess, shares."""
    ex, cap = np.asarray(r["mode_excess"]), np.asarray(r["mode_captured"])
    miss = np.flatnonzero(cap < MISSING_CAPTURED)
    return {"k_modes": int(miss.size), "n_modes": int(ex.size), "modes_excess": float(ex[miss].sum()),
            "modes_total": float(ex.sum()), "modes_captured": tuple(float(c) for c in cap[miss])}

def run_fig4(setup: Setup) -> Fig4:
    """Fig. 4: balanced (row-space, rank-whitened) and Kaiming starts under the paper's schedule, and the balanced
    row-space start held at ``eta_max`` until the OLS loss, one run per seed."""
    keys = [("balanced", "rowspace"), ("balanced", "rank"), ("kaiming", "rowspace")]
    cfgs = [LinearExperiment(depth=4, width=64, n=setup.n_bal, init=key[0], whitening=key[1], lr=1e-2, k=setup.top_k,
                             measure_points=setup.measure_points,
                             hessian_at=setup.hessian_at if key[1] == "rowspace" else "none", **setup.base(seed=setup.seed))
            for key in keys]
    held = [HeldRun(setup.n_bal, setup.dataset, setup.ddir, max_epochs=setup.held4_epochs, k=setup.top_k,
                    seed=setup.seed + j) for j in range(setup.seeds)]
    return Fig4(dict(zip(keys, _sweep(cfgs, setup))), setup.top_k, tuple(_sweep(held, setup, run_held_reduced)))

@dataclass(frozen=True)
class Fig5:
    """Fig. 5: the OLS solution as a balanced 2-layer net along the anisotropy path and over the imbalance sweep."""
    aniso: dict
    ts: tuple
    ols: dict
    shares: tuple
    paths: tuple = ()  # per fresh subset: PATH_FAMILIES -> reading B's position along fresh_ts
    fresh_ts: tuple = ()

    def paths_table(self) -> "pd.DataFrame":
        """The pre-registered paths: reading B's position per (subset, family) along ``fresh_ts``."""
        import pandas as pd
        rows = {(j, fam): pos for j, p in enumerate(self.paths) for fam, pos in p.items()}
        return pd.DataFrame(rows, index=pd.Index(list(self.fresh_ts), name="t")).T.rename_axis(["subset", "path"])

    def table(self) -> "pd.DataFrame":
        """Along the path: ``kappa``, the exact sharpness, and per reading the bounds, tightness and position."""
        import pandas as pd
        a, lam = self.aniso, self.aniso["ggn"]
        out = {"kappa": a["kappa"], "exact": lam, "t_1": a["t_1"]}
        for name, lo, up in (("A", a["t_max"], a["t_sum"]), ("B", a["t_1"], a["L_t_1"])):
            out.update({f"{name}: upper": up, f"{name}: lam/low": lam / lo, f"{name}: up/lam": up / lam,
                        f"{name}: width/lam": (up - lo) / lam, f"{name}: position": (lam - lo) / (up - lo)})
        return pd.DataFrame({"t": list(self.ts), **out}).set_index("t")

    def imbalance_table(self) -> "pd.DataFrame":
        """Over the imbalance sweep, raw and whitened: the tightness of both readings and of the s_min pair."""
        import pandas as pd
        frames = {}
        for w, o in self.ols.items():
            frames["whitened" if w else "raw"] = pd.DataFrame({
                "majority share": list(self.shares), "lam/t_1": o["ggn"] / o["t_1"], "A: up/lam": o["t_sum"] / o["ggn"],
                "B: up/lam": o["L_t_1"] / o["ggn"], "s_min pair: lam/low": o["ggn"] / o["smin_lower"]})
        return pd.concat(frames, names=["features"]).droplevel(1).set_index("majority share", append=True)

def run_fig5(setup: Setup) -> Fig5:
    aniso = anisotropy_sweep(setup.aniso_ts, n=setup.n_bal, dataset=setup.dataset, data_dir=setup.ddir, seed=setup.seed)
    ols = {w: ols_sharpness(setup.majority_shares, whitened=w, n=setup.n_imb, dataset=setup.dataset,
                            data_dir=setup.ddir, seed=setup.seed) for w in (False, True)}
    fresh = [_PathConfig(setup.dataset, min(FIG5_FRESH_N, setup.n_bal), setup.seed + FRESH_SEED + j, FIG5_FRESH_TS,
                         setup.ddir) for j in range(PREREG_DRAWS)]  # one independent run per subset: six decide a sign test
    return Fig5(aniso, setup.aniso_ts, ols, setup.majority_shares, tuple(_sweep(fresh, setup, _run_paths)), FIG5_FRESH_TS)

def _grid(values: Sequence, seeds: int, base: int) -> list[tuple]:
    return [(v, base + s) for v in values for s in range(seeds)]

def _minimizer_grid(setup: Setup, n_of, share_of, grid: list[tuple]) -> list[dict]:
    cfgs = [_MinimizerConfig(setup.dataset, n_of(v), share_of(v), s, setup.ddir) for v, s in grid]
    return _sweep(cfgs, setup, _run_minimizer)

def _reshape(rows: list[dict], key: str, npoints: int, seeds: int) -> np.ndarray:
    """``rows`` (point-major, seed-minor) as a ``(seeds, points)`` array of ``key``."""
    return np.array([r[key] for r in rows], dtype=float).reshape(npoints, seeds).T

@dataclass(frozen=True)
class ImbalanceSweep:
    """Sharpness against the majority share ``m``: trained runs and exact balanced minimizers, ``(seeds, shares)``."""
    shares: tuple
    trained: dict  # name -> list of runs (share-major, seed-minor)
    minimizers: list
    seeds: dict  # name -> seeds per share

    def lam(self, name: str) -> np.ndarray:
        runs = self.trained[name]
        return _reshape([{"v": r["numeric"][-1, 0]} for r in runs], "v", len(self.shares), self.seeds[name])

    def m(self, name: str | None = None) -> np.ndarray:
        rows = self.minimizers if name is None else self.trained[name]
        s = len(rows) // len(self.shares)
        return _reshape(rows, "majority_share", len(self.shares), s)

    def minimizer(self, key: str = "lam") -> np.ndarray:
        return _reshape(self.minimizers, key, len(self.shares), len(self.minimizers) // len(self.shares))

    def convergence(self, name: str) -> "pd.DataFrame":
        runs, s = self.trained[name], self.seeds[name]
        return convergence_table(runs, [(a, j) for a in self.shares for j in range(s)], ["majority share", "seed"])

@dataclass(frozen=True)
class Fig6:
    """Fig. 6: the exact case (left), the depth sweep (middle), label imbalance (right)."""
    exact: dict
    depth: dict
    depths: tuple
    sigma_xs: tuple
    imbalance: ImbalanceSweep
    crossover: tuple = ()  # the pre-registered draws of depth_crossover

    @property
    def err_left(self) -> float:
        m = self.exact["theory"].size
        return float(np.abs(self.exact["numeric"][:m] - self.exact["theory"]).max() / self.exact["numeric"][0])

    @property
    def rest_left(self) -> float:
        m = self.exact["theory"].size
        return float(np.abs(self.exact["numeric"][m:]).max() / self.exact["numeric"][0])

    @property
    def err_middle(self) -> float:
        return float(np.abs(self.depth["numeric"] / self.depth["theory"] - 1).max())

    def right_table(self) -> "pd.DataFrame":
        """Per share, seed medians: ``m``, the minimizers, the formulas and the trained runs (with their range)."""
        import pandas as pd
        im = self.imbalance
        lam_t = im.lam("balanced")
        return pd.DataFrame({"majority share": list(im.shares), "m (median)": np.median(im.m(), 0),
                             "minimizer": np.median(im.minimizer(), 0),
                             "formula L m^(1-1/L)": np.median(im.minimizer("formula"), 0),
                             "formula, projected labels": np.median(im.minimizer("formula_proj"), 0),
                             "trained (median)": np.median(lam_t, 0), "trained min": lam_t.min(0), "trained max":
                             lam_t.max(0)}).set_index("majority share")

def _imbalance_configs(setup: Setup, seeds: int, **over) -> list[LinearExperiment]:
    return [LinearExperiment(depth=4, width=64, n=setup.n_imb, majority_share=a, lr=1e-2, k=1,
                             **{**setup.base(seed=s), "init": "balanced", **over})
            for a, s in _grid(setup.majority_shares, seeds, setup.seed)]

def run_fig6(setup: Setup) -> Fig6:
    """Fig. 6: the exact case, the depth sweep, and trained nets and exact minimizers on imbalanced subsets."""
    exact = exact_ggn_case(n=100, d=20, depth=5, sigma_x=3.0, seed=setup.seed)
    dep = depth_sweep(setup.depths, setup.sigma_xs, seed=setup.seed)
    grid = _grid(setup.majority_shares, setup.seeds, setup.seed)
    minis = _minimizer_grid(setup, lambda v: setup.n_imb, lambda v: v, grid)
    trained = _sweep(_imbalance_configs(setup, setup.seeds), setup)
    sweep = ImbalanceSweep(setup.majority_shares, {"balanced": trained}, minis, {"balanced": setup.seeds})
    cross = _sweep([_CrossoverConfig(setup.seed + FRESH_SEED + j) for j in range(PREREG_DRAWS)], setup, _run_crossover)
    return Fig6(exact, dep, setup.depths, setup.sigma_xs, sweep, tuple(cross))

FIG7_RAW_SEEDS = 5
"""Subset series of Fig. 7 left's exact minimizers: a sign test over 5 decides at p = 1/32."""

ABLATIONS = {"no whitening": {"whitening": "none"}, "Kaiming init": {"init": "kaiming"},
             "tanh MLP": {"activation": "tanh"}}
"""Fig. 7: each panel drops one assumption of the Fig. 6 right run."""

@dataclass(frozen=True)
class Fig7:
    """Fig. 7: the imbalance sweep under each ablation (trained), and exact balanced minimizers on raw pixels."""
    imbalance: ImbalanceSweep
    raw_minimizers: tuple = ()  # share-major, seed-minor, raw_seeds per share
    raw_seeds: int = 0

    def raw(self, key: str = "lam_raw") -> np.ndarray:
        """The raw-pixel minimizers' ``key`` as ``(seeds, shares)`` (``"majority_share"``: their m)."""
        return _reshape(list(self.raw_minimizers), key, len(self.imbalance.shares), self.raw_seeds)

    def table(self) -> "pd.DataFrame":
        import pandas as pd
        im = self.imbalance
        cols = {"majority share": list(im.shares), "m (median)": np.median(im.m("Kaiming init"), 0)}
        for name in im.trained:
            lam = im.lam(name)
            cols[f"{name} (median)"] = np.median(lam, 0)
            cols[f"{name} range"] = lam.max(0) - lam.min(0)
        return pd.DataFrame(cols).set_index("majority share")

    def kaiming_table(self, fig6: "Fig6") -> "pd.DataFrame":
        """Per share, seed medians: the Kaiming runs against the Fig. 6 minimizers of the same subsets."""
        import pandas as pd
        im, mi = self.imbalance, fig6.imbalance
        name = "Kaiming init"
        if not (im.m(name).shape == mi.m().shape and np.allclose(im.m(name), mi.m())):
            raise ValueError("the Kaiming runs and the minimizers of Fig. 6 must be on the same subsets")
        lam, mini, m = im.lam(name), mi.minimizer(), im.m(name)
        bal = _reshape([{"v": r["balance"][-1].max()} for r in im.trained[name]], "v", len(im.shares), im.seeds[name])
        return pd.DataFrame({"majority share": list(im.shares), "m (median)": np.median(m, 0),
                             "Kaiming (median)": np.median(lam, 0), "minimizer (median)": np.median(mini, 0),
                             "Kaiming / minimizer": np.median(lam / mini, 0),
                             "theory L m^(1-1/L)": np.median(4 * m ** 0.75, 0),
                             "balance gap (median)": np.median(bal, 0)}).set_index("majority share")

def run_fig7(setup: Setup) -> Fig7:
    trained, seeds = {}, {}
    for name, over in ABLATIONS.items():
        s = setup.tanh_seeds if name == "tanh MLP" else setup.seeds
        extra = {"epochs": setup.tanh_epochs} if name == "tanh MLP" else {}
        trained[name] = _sweep(_imbalance_configs(setup, s, **over, **extra), setup)
        seeds[name] = s
    raw_seeds = max(FIG7_RAW_SEEDS, setup.seeds)  # the first setup.seeds are Fig. 6's subsets (cached)
    raw = _minimizer_grid(setup, lambda v: setup.n_imb, lambda v: v, _grid(setup.majority_shares, raw_seeds, setup.seed))
    return Fig7(ImbalanceSweep(setup.majority_shares, trained, [], seeds), tuple(raw), raw_seeds)

@dataclass(frozen=True)
class Fig8:
    """Fig. 8: sharpness against the subset size ``n`` (uniform random subsets), ``(seeds, sizes)`` arrays."""
    sizes: tuple
    seeds: int
    trained: list
    minimizers: list
    subsets: int = 0  # subsets per size of the minimizers (0: seeds); the trained runs use the first seeds
    stratified: tuple = ()  # the pre-registered series: class-stratified subsets (m = 0.1), fresh seeds

    def stratified_minimizer(self, key: str = "lam") -> np.ndarray:
        return _reshape(list(self.stratified), key, len(self.sizes), len(self.stratified) // len(self.sizes))

    def stratified_slopes(self) -> np.ndarray:
        return log_slopes(np.array(self.sizes, dtype=float), self.stratified_minimizer())

    def minimizer(self, key: str = "lam") -> np.ndarray:
        return _reshape(self.minimizers, key, len(self.sizes), self.subsets or self.seeds)

    def lam_trained(self) -> np.ndarray:
        return _reshape([{"v": r["numeric"][-1, 0]} for r in self.trained], "v", len(self.sizes), self.seeds)

    def ggn_trained(self) -> np.ndarray:
        return _reshape([{"v": r["ggn"][-1, 0]} for r in self.trained], "v", len(self.sizes), self.seeds)

    def slopes(self) -> dict[str, np.ndarray]:
        """Slopes of log lambda_max on log n: minimizers, formula, their ratio (per subset), trained nets (per seed)."""
        x = np.array(self.sizes, dtype=float)
        lam, form = self.minimizer(), self.minimizer("formula")
        return {"minimizer": log_slopes(x, lam), "formula": log_slopes(x, form), "minimizer / formula": log_slopes(x, lam / form),
                "trained": log_slopes(x, self.lam_trained())}

    def table(self) -> "pd.DataFrame":
        import pandas as pd
        lam, lt = self.minimizer(), self.lam_trained()
        return pd.DataFrame({"n": list(self.sizes), "rank": np.median(self.minimizer("rank"), 0),
                             "m min": self.minimizer("majority_share").min(0),
                             "m max": self.minimizer("majority_share").max(0), "minimizer min": lam.min(0),
                             "minimizer max": lam.max(0), "formula (median)": np.median(self.minimizer("formula"), 0),
                             "trained min": lt.min(0), "trained max": lt.max(0),
                             "trained GGN (median)": np.median(self.ggn_trained(), 0)}).set_index("n")

    def convergence(self) -> "pd.DataFrame":
        return convergence_table(self.trained, [(m, j) for m in self.sizes for j in range(self.seeds)], ["n", "seed"])

def run_fig8(setup: Setup) -> Fig8:
    """Fig. 8: trained balanced 4-layer nets and exact minimizers on uniform subsets of each size."""
    sizes = setup.sizes_ok
    grid = _grid(sizes, setup.seeds, setup.seed)
    cfgs = [LinearExperiment(depth=4, width=64, n=m, init="balanced", lr=1e-2, k=1, **setup.base(seed=s))
            for m, s in grid]
    trained = _sweep(cfgs, setup)
    minis = _minimizer_grid(setup, lambda v: v, lambda v: None, _grid(sizes, setup.subsets, setup.seed))
    strat = _minimizer_grid(setup, lambda v: v, lambda v: 0.1, _grid(sizes, PREREG_DRAWS, setup.seed + FRESH_SEED))
    return Fig8(sizes, setup.seeds, trained, minis, setup.subsets, tuple(strat))

@dataclass(frozen=True)
class Count:
    """The nonzero eigenvalue count: small balanced nets' dense Hessians, and the paper's own architectures."""
    small: dict
    paper: dict

    def table(self) -> "pd.DataFrame":
        import pandas as pd
        rows = [{"network": str(list(d)), "how": "dense autograd Hessian", **c} for d, c in self.small.items()]
        rows += [{"network": name, "how": "exact GGN spectrum (closed form, C = I)", **c} for name, c in self.paper.items()]
        return pd.DataFrame(rows).set_index("network")

def run_count(setup: Setup) -> Count:
    """Nonzero Hessian eigenvalues: small balanced nets (dense) and the paper's Fig. 1 and 4 nets (exact GGN)."""
    small = {tuple(d): nonzero_eigenvalue_counts(d, seed=setup.seed) for d in ([6, 2, 5], [6, 3, 3, 5], [4, 7, 3])}
    W1, W2 = lin.kaiming_uniform_weights([784, 256, 10], seed=setup.seed)
    ev2 = lin.two_layer_ntk_spectrum(W1, W2)
    s = np.random.default_rng(setup.seed).uniform(0.5, 1.5, 10)  # as the small nets: no value near round-off
    ev4 = lin.balanced_spectrum(s, 4, 784, 10)
    rk1, rk2 = np.linalg.matrix_rank(W1), np.linalg.matrix_rank(W2)
    paper = {}
    for name, ev, formula, bound, params in (
            ("784-256-10", ev2, 784 * 10 - (784 - rk1) * (10 - rk2), 256 * 10, 256 * (784 + 10)),
            ("784-64-64-64-10", ev4, 10 * (784 + 10 - 10), 10 * 10, 64 * 784 + 2 * 64 * 64 + 64 * 10)):
        paper[name] = {"measured": int(np.sum(ev > 1e-10 * ev[0])), "formula": int(formula), "paper": bound,
                       "params": params}
    return Count(small, paper)

def _forced(run: dict) -> bool:
    """Whether a Fig. 3 run cannot fail: two layers conserving their norm difference (trace, norm affine in one)."""
    ln = np.asarray(run["layer_sq_norms"])
    return ln.shape[1] == 2 and conservation_drift(ln) < CONSERVED_DRIFT

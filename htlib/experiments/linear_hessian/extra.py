"""Runs of the linear-Hessian chapter added beside ``compute.py``, so that the results cached under that file stay
valid: more starts for Fig. 3 (trained by :func:`compute.run_linear_experiment`, cached under its key) and, for
Fig. 7 left, the raw-pixel minimizers at a second pseudo-inverse cut-off and an unbalanced exact minimizer of the same
data (cached under this module's key, which covers ``compute.py`` and :mod:`htlib.linear` too)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from htlib import linear as lin
from htlib._checks import check_int, check_matrix
from htlib.experiments.linear_hessian import compute

FIG3_SEEDS = 5
"""Starts per network of Fig. 3 (the first is :func:`compute.run_fig3`'s): a sign test over 5 decides at p = 1/32."""

RAW_CUTOFF = 1e-6
"""The second pseudo-inverse cut-off (relative to the largest singular value) of Fig. 7 left's raw-pixel minimizers,
whose sharpness is set by the smallest singular values kept; the first is the numerical rank."""


@dataclass(frozen=True)
class Fig3Starts:
    """Fig. 3 from several starts: per network (``names``), each start's run (the first is the base seed's)."""
    names: tuple
    seed_runs: tuple

    def seed_stats(self) -> list[list[dict]]:
        """Per network, :func:`compute.trace_norm_agreement` of each start's run."""
        return [[compute.trace_norm_agreement(r["ggn_trace"], r["sq_norm"], r["hutch"], r["hutch_se"]) for r in runs]
                for runs in self.seed_runs]

    def seed_forced(self) -> list[list[bool]]:
        return [[compute._forced(r) for r in runs] for runs in self.seed_runs]

    def seed_drift(self) -> list[list[float]]:
        return [[compute.conservation_drift(r["layer_sq_norms"]) for r in runs] for runs in self.seed_runs]

    def drop_ratio(self) -> list[list[float]]:
        """Per network and start: the trace's relative fall from the start to its minimum over the total squared
        norm's relative fall over the same epochs (how many times more the trace moves; inf where the norm stays).

        Examples
        --------
        >>> run = {"ggn_trace": np.array([8.0, 4.0, 5.0]), "sq_norm": np.array([4.0, 3.0, 3.5])}
        >>> Fig3Starts(("a",), ((run,),)).drop_ratio()  # the trace falls by 50%, the norm by 25%
        [[2.0]]
        """
        out = []
        for runs in self.seed_runs:
            row = []
            for r in runs:
                tr, sq = np.asarray(r["ggn_trace"], float), np.asarray(r["sq_norm"], float)
                i = int(np.argmin(tr))
                fall = 1.0 - sq[i] / sq[0]
                row.append(float((1.0 - tr[i] / tr[0]) / fall) if fall != 0 else float("inf"))
            out.append(row)
        return out

    @classmethod
    def of(cls, fig3: compute.Fig3) -> "Fig3Starts":
        """The runs of ``fig3`` as one start per network."""
        return cls(tuple(fig3.names), tuple((r,) for r in fig3.runs))


def run_fig3_starts(setup: compute.Setup) -> Fig3Starts:
    """:func:`compute.run_fig3`'s two networks from ``max(FIG3_SEEDS, seeds)`` starts each (seeds ``seed``,
    ``seed + 1``, ...; the first is the cached run of the figure)."""
    shapes, seeds = ((2, 256), (4, 64)), max(FIG3_SEEDS, setup.seeds)
    cfgs = [compute.LinearExperiment(depth=d, width=w, n=setup.n_bal, init="kaiming", lr=5e-4,
                                     measure_points=setup.trace_points, k=1, hessian_at="none",
                                     hutchinson_probes=setup.hutchinson_probes, log_spaced=True,
                                     **setup.base(seed=setup.seed + j)) for d, w in shapes for j in range(seeds)]
    runs = compute._sweep(cfgs, setup)
    return Fig3Starts(tuple(f"{d} layers, width {w}" for d, w in shapes),
                      tuple(tuple(runs[i * seeds:(i + 1) * seeds]) for i in range(len(shapes))))


def unbalanced_factorization(W, dims: Sequence[int]) -> list[np.ndarray]:
    """A far from balanced network with ``WL ... W1 = W`` (``dL x d0``): ``W1 = [W; 0]`` carries the whole map and
    every later layer is the partial identity ``[I 0]``, so ``||W_l||_2 = 1`` for ``l >= 2`` however large ``W`` is.

    Raises
    ------
    ValueError
        If ``dims`` does not run from ``d0`` to ``dL`` or a hidden layer is narrower than ``dL``.

    Examples
    --------
    >>> W = np.arange(6.0).reshape(2, 3)
    >>> Ws = unbalanced_factorization(W, [3, 4, 4, 2])
    >>> [w.shape for w in Ws], bool(np.allclose(Ws[2] @ Ws[1] @ Ws[0], W))
    ([(4, 3), (4, 4), (2, 4)], True)
    """
    Wn = check_matrix("W", W)
    dims = [check_int(f"dims[{i}]", d, 1) for i, d in enumerate(dims)]
    if len(dims) < 2 or dims[0] != Wn.shape[1] or dims[-1] != Wn.shape[0]:
        raise ValueError(f"dims must hold >= 2 sizes from d0={Wn.shape[1]} to dL={Wn.shape[0]}, got {dims}")
    if min(dims[1:]) < dims[-1]:
        raise ValueError(f"dims: every hidden layer must be at least dL = {dims[-1]} wide, got dims={dims}")
    W1 = np.zeros((dims[1], dims[0]))
    W1[:dims[-1]] = Wn
    return [W1] + [np.eye(d, dims[l]) for l, d in enumerate(dims[2:], start=1)]


@dataclass(frozen=True)
class _RawConfig:
    dataset: str
    n: int
    majority_share: float | None
    seed: int
    data_dir: str | None = None
    depth: int = 4
    width: int = 64


def raw_minimizer_variants(cfg: _RawConfig) -> dict[str, float]:
    """On the raw pixels of the subset of :func:`compute.balanced_minimizer`: the balanced OLS network's sharpness at
    the numerical rank (``lam_raw``, as there) and with the pseudo-inverse cut at ``RAW_CUTOFF`` (``lam_raw_cut``; its
    rank and loss), and the sharpness of the unbalanced exact minimizer :func:`unbalanced_factorization`
    (``lam_raw_unbalanced``, the Hessian's at the OLS point, where it equals the GGN) with its balance gap."""
    X0, Y, labels = compute.prepare_data(cfg.dataset, cfg.n, cfg.majority_share, whitening="none", seed=cfg.seed,
                                         data_dir=cfg.data_dir)
    U, s, V = compute._svd_gram(X0)
    dims = [X0.shape[1]] + [cfg.width] * (cfg.depth - 1) + [Y.shape[1]]
    gram, W = compute._ols_from_svd(U, s, V, Y)
    r = int(np.sum(s > RAW_CUTOFF * s[0]))
    W_cut = compute._ols_from_svd(U[:, :r], s[:r], V[:, :r], Y)[1]
    unbal = unbalanced_factorization(W, dims)
    n = X0.shape[0]
    return {"lam_raw": float(lin.ggn_spectrum(lin.balanced_factorization(W, dims, seed=cfg.seed), gram, k=1)[0]),
            "lam_raw_cut": float(lin.ggn_spectrum(lin.balanced_factorization(W_cut, dims, seed=cfg.seed), gram, k=1)[0]),
            "rank": int(s.size), "rank_cut": r,
            "ols_loss": float(0.5 * np.sum((U @ (U.T @ Y) - Y) ** 2) / n),
            "loss_cut": float(0.5 * np.sum((U[:, :r] @ (U[:, :r].T @ Y) - Y) ** 2) / n),
            "lam_raw_unbalanced": float(lin.ggn_spectrum(unbal, gram, k=1)[0]),
            "balance_unbalanced": float(lin.balance_gaps(unbal).max()),
            "majority_share": float(np.bincount(labels).max() / labels.size)}


@dataclass(frozen=True)
class Fig7Raw:
    """Fig. 7 left's raw-pixel subsets (share-major, seed-minor rows of :func:`raw_minimizer_variants`)."""
    shares: tuple
    seeds: int
    rows: tuple

    def raw(self, key: str = "lam_raw") -> np.ndarray:
        """``key`` as a ``(seeds, shares)`` array."""
        return compute._reshape(list(self.rows), key, len(self.shares), self.seeds)


def run_fig7_raw(setup: compute.Setup) -> Fig7Raw:
    """:func:`raw_minimizer_variants` on the subsets of :func:`compute.run_fig7`'s raw-pixel minimizers."""
    seeds = max(compute.FIG7_RAW_SEEDS, setup.seeds)
    cfgs = [_RawConfig(setup.dataset, setup.n_imb, a, s, setup.ddir)
            for a, s in compute._grid(setup.majority_shares, seeds, setup.seed)]
    return Fig7Raw(tuple(setup.majority_shares), seeds, tuple(compute._sweep(cfgs, setup, raw_minimizer_variants)))


TRAJECTORY_SEEDS = 6
"""Fresh runs per figure of the trajectory rows of Figs. 1 and 4: a sign test over 6 decides at p = 1/64."""

TRAJECTORY_POINTS = 6
"""Log-spaced epochs (from 1 to the last, plus epoch 0) at which those runs measure the Hessian by LOBPCG."""

TRAJECTORY_SEED = 2 * compute.FRESH_SEED + 12
"""Their seeds start at ``seed + 2012``, which no other run of the chapter uses (``seed + 2000`` to ``2011`` were the
runs of the rows' earlier criteria, which the claims table records)."""


@dataclass(frozen=True)
class Trajectory:
    """Figs. 1 and 4 along training: per figure (``"fig1"``, ``"fig4"``), fresh runs under the paper's schedule with
    the top-k Hessian eigenvalues by LOBPCG (Hessian-vector products) and the closed form at log-spaced epochs."""
    runs: dict
    seeds: tuple

    def gaps(self, fig: str) -> np.ndarray:
        """``(runs, epochs)``: the closed form's top-k max relative gap to LOBPCG (:func:`compute._gap`)."""
        return np.array([compute._gap(r["closed_I"], r["numeric"]) for r in self.runs[fig]])

    def epochs(self, fig: str) -> np.ndarray:
        return np.asarray(self.runs[fig][0]["epochs"])

    def taus(self, fig: str) -> np.ndarray:
        """Per run, Kendall's tau between the epoch and the gap (negative: the gap falls along training)."""
        from scipy.stats import kendalltau
        return np.array([kendalltau(self.epochs(fig), g).statistic for g in self.gaps(fig)])

    def table(self) -> "pd.DataFrame":
        """The gaps per figure and seed (rows) and epoch (columns)."""
        import pandas as pd
        frames = {fig: pd.DataFrame(self.gaps(fig), index=pd.Index(self.seeds, name="seed"),
                                    columns=pd.Index(self.epochs(fig), name="epoch")) for fig in self.runs}
        return pd.concat(frames, names=["figure"])


def run_trajectory(setup: compute.Setup) -> Trajectory:
    """Figs. 1 and 4 under the paper's schedule from ``max(TRAJECTORY_SEEDS, seeds)`` fresh seeds each: Fig. 1's
    2-layer width-256 Kaiming start (rate 1e-3) and Fig. 4's balanced 4-layer width-64 start (rate 1e-2), both on
    row-space features, LOBPCG at epoch 0 and ``TRAJECTORY_POINTS`` log-spaced epochs."""
    nets = {"fig1": {"depth": 2, "width": 256, "init": "kaiming", "lr": 1e-3},
            "fig4": {"depth": 4, "width": 64, "init": "balanced", "lr": 1e-2}}
    seeds = tuple(setup.seed + TRAJECTORY_SEED + j for j in range(max(TRAJECTORY_SEEDS, setup.seeds)))
    points = min(TRAJECTORY_POINTS, setup.epochs)
    cfgs = [compute.LinearExperiment(n=setup.n_bal, whitening="rowspace", k=setup.top_k, measure_points=points,
                                     log_spaced=True, hessian_at="all", **net, **setup.base(seed=s))
            for net in nets.values() for s in seeds]
    runs = compute._sweep(cfgs, setup)
    return Trajectory({fig: tuple(runs[i * len(seeds):(i + 1) * len(seeds)]) for i, fig in enumerate(nets)}, seeds)

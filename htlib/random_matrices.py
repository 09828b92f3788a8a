"""Random matrices with known spectra: Gaussian baselines against Marchenko-Pastur, and labelled families.

:func:`gaussian_matrix`, :func:`compare_with_mp`, :func:`mp_size_sweep` compare i.i.d. Gaussian matrices with the MP
law; :data:`LABELLED_CASES` and :func:`labelled_matrix` are synthetic families of known spectrum (a phase test set).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from htlib import spectra
from htlib._checks import check_float, check_int, check_ints

__all__ = ["gaussian_matrix", "MPComparison", "compare_with_mp", "MPSizeSweep", "mp_size_sweep", "LABELLED_CASES", "labelled_matrix"]


def gaussian_matrix(p: int, q: int, *, sigma2: float = 1.0, seed: int, dtype: torch.dtype = torch.float32,
                    device: str = "cpu") -> torch.Tensor:
    """A ``p x q`` matrix with i.i.d. ``N(0, sigma2)`` entries (torch's generator, seeded)."""
    p, q = check_int("p", p, 1), check_int("q", q, 1)
    sigma2 = check_float("sigma2", sigma2, low=0.0)
    gen = torch.Generator(device=device).manual_seed(check_int("seed", seed))
    return torch.randn(p, q, generator=gen, dtype=dtype, device=device) * sigma2 ** 0.5


@dataclass(frozen=True)
class MPComparison:
    """How the ESD of ``WᵀW/p`` of one ``p x q`` matrix (``p >= q``) compares with MP; ``edge_gap_tw`` is
    ``(lambda_max - lambda_plus) / s_TW``."""

    p: int
    q: int
    gamma: float
    lambda_max: float
    lambda_plus: float
    lambda_min: float
    lambda_minus: float
    tw_scale: float
    edge_gap_tw: float
    ks_distance: float
    num_spikes: int


def compare_with_mp(W: torch.Tensor | np.ndarray, *, sigma2: float = 1.0) -> MPComparison:
    """Compare the ESD of ``WᵀW/p`` with the MP law of the known ``sigma2`` (spikes: :func:`htlib.spectra.fit_mp`)."""
    p, q = W.shape
    if p < q:
        raise ValueError(f"W must have at least as many rows as columns (p >= q), got shape {(p, q)}")
    gamma = q / p
    eigs = spectra.esd(W, normalize="rows")
    lo, hi = spectra.mp_edges(gamma, sigma2)
    tw = spectra.tracy_widom_scale(p, q, sigma2)
    return MPComparison(
        p=p, q=q, gamma=gamma, lambda_max=float(eigs[-1]), lambda_plus=hi, lambda_min=float(eigs[0]), lambda_minus=lo,
        tw_scale=tw, edge_gap_tw=(float(eigs[-1]) - hi) / tw, ks_distance=spectra.ks_distance_mp(eigs, gamma, sigma2),
        num_spikes=spectra.fit_mp(eigs, gamma).num_spikes,
    )


@dataclass(frozen=True)
class MPSizeSweep:
    """MP agreement of Gaussian matrices over sizes ``p``/``q`` (rows) and seeds (columns): ``ks_distance``,
    ``edge_gap`` (``lambda_max - lambda_plus``) and ``edge_gap_tw`` (in Tracy-Widom units)."""

    p: np.ndarray
    q: np.ndarray
    ks_distance: np.ndarray
    edge_gap: np.ndarray
    edge_gap_tw: np.ndarray


def mp_size_sweep(sizes: Sequence[int], gamma: float, seeds: Sequence[int]) -> MPSizeSweep:
    """:func:`compare_with_mp` of ``p x q`` Gaussian matrices with ``q = gamma p``, for every size and seed."""
    if check_float("gamma", gamma, low=0.0) > 1:
        raise ValueError(f"gamma must be in (0, 1], got {gamma!r}")
    ps = np.asarray([check_int("sizes", s, 1) for s in sizes])
    seeds = check_ints("seeds", seeds, 0, min_len=1)
    qs = np.maximum(1, np.rint(gamma * ps)).astype(int)
    out = {k: np.zeros((len(ps), len(seeds))) for k in ("ks_distance", "edge_gap", "edge_gap_tw")}
    for i, (p, q) in enumerate(zip(ps, qs)):
        for j, seed in enumerate(seeds):
            c = compare_with_mp(gaussian_matrix(int(p), int(q), seed=int(seed)))
            out["ks_distance"][i, j] = c.ks_distance
            out["edge_gap"][i, j] = c.lambda_max - c.lambda_plus
            out["edge_gap_tw"][i, j] = c.edge_gap_tw
    return MPSizeSweep(p=ps, q=qs, **out)


LABELLED_CASES: dict[str, str] = {
    "gaussian": "i.i.d. N(0, 1) entries",
    "rank1-0.5": "Gaussian + rank-one signal, theta = 0.5 (below BBP)",
    "rank1-0.8": "Gaussian + rank-one signal, theta = 0.8 (below BBP)",
    "rank1-1.0": "Gaussian + rank-one signal, theta = 1.0 (just above BBP)",
    "rank1-1.1": "Gaussian + rank-one signal, theta = 1.1",
    "rank1-1.4": "Gaussian + rank-one signal, theta = 1.4",
    "rank1-2.0": "Gaussian + rank-one signal, theta = 2.0",
    "rank1-4.0": "Gaussian + rank-one signal, theta = 4.0",
    "bleed": "Gaussian + four signals just above BBP, thetas (1.0, 1.05, 1.1, 1.15)",
    "rank5": "Gaussian + rank-5 signal, thetas linspace(3, 6, 5)",
    "rank15": "Gaussian + rank-15 signal, thetas linspace(3, 6, 15)",
    "rank60": "Gaussian + rank-60 signal, thetas linspace(3, 6, 60)",
    "t1.5": "Student-t entries, 1.5 degrees of freedom (tail index mu = 1.5)",
    "t2.5": "Student-t entries, 2.5 degrees of freedom (mu = 2.5)",
    "t3": "Student-t entries, 3 degrees of freedom (mu = 3)",
    "t6": "Student-t entries, 6 degrees of freedom (mu = 6)",
    "pareto1": "|w| ~ Pareto(mu = 1) with random signs",
    "pareto2.5": "|w| ~ Pareto(mu = 2.5) with random signs",
    "pareto5": "|w| ~ Pareto(mu = 5) with random signs",
    "t2.5+spike": "Student-t(2.5) entries scaled to unit variance + a rank-one signal theta = 3",
    "profile": "Gaussian with column variances drawn from Gamma(25, 1/25) (finite moments, deformed edge)",
    "zeros5": "Gaussian with 5% of the columns zero (5% zero singular values)",
    "zeros20": "Gaussian with 20% of the columns zero",
    "zeros50": "Gaussian with 50% of the columns zero",
    "collapse": "rank d/10 product A B / sqrt(r) plus a 1e-2 Gaussian noise floor",
}
"""The synthetic families of :func:`labelled_matrix` (name: recipe)."""


def labelled_matrix(name: str, h: int = 1500, d: int = 1000, *, seed: int = 0) -> np.ndarray:
    """An ``h x d`` float64 matrix of one family of :data:`LABELLED_CASES`.

    Spiked families are ``G + sqrt(h) U diag(theta) Vᵀ`` (outlier above the BBP threshold ``gamma**(1/4)``);
    tail index ``mu`` means ``P(|w| > x) ~ x**(-mu)``.
    """
    if name not in LABELLED_CASES:
        raise ValueError(f"name must be one of {tuple(LABELLED_CASES)}, got {name!r}")
    h, d, seed = check_int("h", h, 10), check_int("d", d, 10), check_int("seed", seed)
    if d > h:
        raise ValueError(f"h and d must satisfy h >= d (gamma = d/h <= 1), got h={h!r}, d={d!r}")
    rng = np.random.default_rng([int(seed), sorted(LABELLED_CASES).index(name)])
    if name == "profile":
        return rng.standard_normal((h, d)) * np.sqrt(rng.gamma(25.0, 1.0 / 25.0, d))
    if name == "t2.5+spike":
        G = rng.standard_t(2.5, (h, d)) / np.sqrt(5.0)
        thetas = np.array([3.0])
        U = np.linalg.qr(rng.standard_normal((h, 1)))[0]
        V = np.linalg.qr(rng.standard_normal((d, 1)))[0]
        return G + np.sqrt(h) * (U * thetas) @ V.T
    if name.startswith("t"):
        return rng.standard_t(float(name[1:]), (h, d))
    if name.startswith("pareto"):
        mu = float(name[len("pareto"):])
        return (rng.pareto(mu, (h, d)) + 1.0) * rng.choice(np.array([-1.0, 1.0]), (h, d))
    if name == "collapse":
        r = max(1, d // 10)
        return rng.standard_normal((h, r)) @ rng.standard_normal((r, d)) / np.sqrt(r) + 1e-2 * rng.standard_normal((h, d))
    G = rng.standard_normal((h, d))
    if name == "gaussian":
        return G
    if name.startswith("zeros"):
        k = int(round(float(name[len("zeros"):]) / 100.0 * d))
        G[:, rng.choice(d, size=k, replace=False)] = 0.0
        return G
    if name == "bleed":
        thetas = np.array([1.0, 1.05, 1.1, 1.15])
    elif name.startswith("rank1-"):
        thetas = np.array([float(name[len("rank1-"):])])
    else:
        thetas = np.linspace(3.0, 6.0, int(name[len("rank"):]))
    U = np.linalg.qr(rng.standard_normal((h, thetas.size)))[0]
    V = np.linalg.qr(rng.standard_normal((d, thetas.size)))[0]
    return G + np.sqrt(h) * (U * thetas) @ V.T

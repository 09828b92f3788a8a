"""Random-matrix baselines: Gaussian weight matrices and how closely their ESD follows Marchenko-Pastur.

This module owns the "random-like" reference of the book: i.i.d. Gaussian
matrices (the paper-003 initialisation ``W0``) and their comparison with the
MP law of :mod:`htlib.spectra` (top eigenvalue against the edge, in Tracy-Widom
units, and the KS distance of the whole ESD).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from htlib import spectra

__all__ = ["gaussian_matrix", "MPComparison", "compare_with_mp", "mp_size_sweep"]


def gaussian_matrix(
    p: int,
    q: int,
    *,
    sigma2: float = 1.0,
    seed: int,
    dtype: torch.dtype = torch.float32,
    device: str = "cpu",
) -> torch.Tensor:
    """A ``p x q`` matrix with i.i.d. ``N(0, sigma2)`` entries (torch's generator, seeded)."""
    for name, value in (("p", p), ("q", q)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if not sigma2 > 0:
        raise ValueError(f"sigma2 must be > 0, got {sigma2!r}")
    gen = torch.Generator(device=device).manual_seed(int(seed))
    return torch.randn(int(p), int(q), generator=gen, dtype=dtype, device=device) * float(sigma2) ** 0.5


@dataclass(frozen=True)
class MPComparison:
    """How the ESD of ``WᵀW/p`` of one ``p x q`` matrix (``p >= q``) compares with MP.

    ``edge_gap_tw`` is ``(lambda_max - lambda_plus) / s_TW``: the top eigenvalue's
    distance beyond the edge in Tracy-Widom units (order one for a pure bulk).
    """

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
    """Compare the ESD of ``WᵀW/p`` with the MP law of the known entry variance ``sigma2``.

    ``num_spikes`` uses :func:`htlib.spectra.fit_mp` (fitted scale, Tracy-Widom margin).
    """
    p, q = W.shape
    if p < q:
        raise ValueError(f"W must have at least as many rows as columns (p >= q), got shape {(p, q)}")
    gamma = q / p
    eigs = spectra.esd(W, normalize="rows")
    lo, hi = spectra.mp_edges(gamma, sigma2)
    tw = spectra.tracy_widom_scale(p, q, sigma2)
    return MPComparison(
        p=p, q=q, gamma=gamma,
        lambda_max=float(eigs[-1]), lambda_plus=hi,
        lambda_min=float(eigs[0]), lambda_minus=lo,
        tw_scale=tw, edge_gap_tw=(float(eigs[-1]) - hi) / tw,
        ks_distance=spectra.ks_distance_mp(eigs, gamma, sigma2),
        num_spikes=spectra.fit_mp(eigs, gamma).num_spikes,
    )


def mp_size_sweep(sizes: Sequence[int], gamma: float, seeds: Sequence[int]) -> dict[str, np.ndarray]:
    """MP agreement of ``p x q`` Gaussian matrices with ``q = gamma p``, over sizes and seeds.

    Returns arrays of shape ``(len(sizes), len(seeds))`` keyed ``"ks_distance"``,
    ``"edge_gap"`` (``lambda_max - lambda_plus``) and ``"edge_gap_tw"``, plus ``"p"`` and ``"q"``.
    """
    if not 0 < gamma <= 1:
        raise ValueError(f"gamma must be in (0, 1], got {gamma!r}")
    ps = np.asarray([int(s) for s in sizes])
    qs = np.maximum(1, np.rint(gamma * ps)).astype(int)
    out = {k: np.zeros((len(ps), len(seeds))) for k in ("ks_distance", "edge_gap", "edge_gap_tw")}
    for i, (p, q) in enumerate(zip(ps, qs)):
        for j, seed in enumerate(seeds):
            c = compare_with_mp(gaussian_matrix(int(p), int(q), seed=int(seed)))
            out["ks_distance"][i, j] = c.ks_distance
            out["edge_gap"][i, j] = c.lambda_max - c.lambda_plus
            out["edge_gap_tw"][i, j] = c.edge_gap_tw
    out["p"], out["q"] = ps, qs
    return out

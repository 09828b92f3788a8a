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
    """A ``p x q`` matrix with i.i.d. ``N(0, sigma2)`` entries (torch's generator, seeded).

    Parameters
    ----------
    p, q : int
        Number of rows and columns (at least 1).
    sigma2 : float, default 1.0
        Variance of each entry.
    seed : int
        Seed of the torch generator.
    dtype : torch.dtype, default torch.float32
        Element type.
    device : str, default "cpu"
        Torch device of the generator and of the result.

    Returns
    -------
    torch.Tensor
        The ``p x q`` matrix.

    Examples
    --------
    >>> from htlib.random_matrices import gaussian_matrix
    >>> W = gaussian_matrix(400, 300, sigma2=4.0, seed=0)
    >>> tuple(W.shape), W.dtype
    ((400, 300), torch.float32)
    >>> round(W.var().item(), 1)  # the entry variance, sigma2 = 4
    4.0
    """
    p, q = check_int("p", p, 1), check_int("q", q, 1)
    sigma2 = check_float("sigma2", sigma2, low=0.0)
    gen = torch.Generator(device=device).manual_seed(check_int("seed", seed))
    return torch.randn(p, q, generator=gen, dtype=dtype, device=device) * sigma2 ** 0.5


@dataclass(frozen=True)
class MPComparison:
    """How the ESD of ``WᵀW/p`` of one ``p x q`` matrix (``p >= q``) compares with MP; ``edge_gap_tw`` is
    ``(lambda_max - lambda_plus) / s_TW``.

    Attributes
    ----------
    p, q : int
        Shape of the matrix.
    gamma : float
        Aspect ratio ``q / p``.
    lambda_max, lambda_min : float
        Largest and smallest eigenvalues of ``WᵀW/p``.
    lambda_plus, lambda_minus : float
        MP edges ``sigma2 (1 ± sqrt(gamma))**2``.
    tw_scale : float
        Tracy-Widom scale of the largest eigenvalue.
    edge_gap_tw : float
        ``(lambda_max - lambda_plus) / tw_scale``.
    ks_distance : float
        Kolmogorov-Smirnov distance of the ESD to the MP law.
    num_spikes : int
        Eigenvalues above the fitted bulk edge (:func:`htlib.spectra.fit_mp`).

    Examples
    --------
    >>> from htlib.random_matrices import compare_with_mp, gaussian_matrix
    >>> c = compare_with_mp(gaussian_matrix(400, 100, seed=0))
    >>> type(c).__name__, c.gamma, round(c.lambda_plus, 4)  # (1 + sqrt(1/4))**2 = 2.25
    ('MPComparison', 0.25, 2.25)
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
    """Compare the ESD of ``WᵀW/p`` with the MP law of the known ``sigma2`` (spikes: :func:`htlib.spectra.fit_mp`).

    Parameters
    ----------
    W : torch.Tensor or numpy.ndarray
        A ``p x q`` matrix with ``p >= q`` and i.i.d. entries of variance ``sigma2`` under the null.
    sigma2 : float, default 1.0
        Entry variance of the MP law compared with.

    Returns
    -------
    MPComparison
        Edges, Tracy-Widom gap, KS distance and spike count.

    Examples
    --------
    >>> from htlib.random_matrices import compare_with_mp, gaussian_matrix
    >>> c = compare_with_mp(gaussian_matrix(800, 200, seed=1))
    >>> round(c.lambda_plus, 4), round(c.lambda_minus, 4)  # (1 ± 1/2)**2
    (2.25, 0.25)
    >>> abs(c.lambda_max - c.lambda_plus) < 0.2, c.ks_distance < 0.05
    (True, True)
    """
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
    ``edge_gap`` (``lambda_max - lambda_plus``) and ``edge_gap_tw`` (in Tracy-Widom units).

    Attributes
    ----------
    p, q : numpy.ndarray
        Row and column counts, one per size.
    ks_distance, edge_gap, edge_gap_tw : numpy.ndarray
        ``len(sizes) x len(seeds)`` arrays of the KS distance, ``lambda_max - lambda_plus`` and the same gap in
        Tracy-Widom units.

    Examples
    --------
    >>> from htlib.random_matrices import mp_size_sweep
    >>> s = mp_size_sweep([50, 100], gamma=0.5, seeds=[0, 1, 2])
    >>> s.q.tolist(), s.ks_distance.shape
    ([25, 50], (2, 3))
    """

    p: np.ndarray
    q: np.ndarray
    ks_distance: np.ndarray
    edge_gap: np.ndarray
    edge_gap_tw: np.ndarray


def mp_size_sweep(sizes: Sequence[int], gamma: float, seeds: Sequence[int]) -> MPSizeSweep:
    """:func:`compare_with_mp` of ``p x q`` Gaussian matrices with ``q = gamma p``, for every size and seed.

    Parameters
    ----------
    sizes : sequence of int
        Row counts ``p``.
    gamma : float
        Aspect ratio ``q / p`` in ``(0, 1]``.
    seeds : sequence of int
        Seeds of :func:`gaussian_matrix`, one column of the result each.

    Returns
    -------
    MPSizeSweep
        The comparisons, one row per size and one column per seed.

    Examples
    --------
    >>> from htlib.random_matrices import mp_size_sweep
    >>> s = mp_size_sweep([40, 320], gamma=0.25, seeds=[0, 1, 2, 3])
    >>> s.p.tolist(), s.q.tolist()
    ([40, 320], [10, 80])
    >>> bool(s.ks_distance[1].mean() < s.ks_distance[0].mean())  # closer to MP as the size grows
    True
    """
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

    Parameters
    ----------
    name : str
        A key of :data:`LABELLED_CASES`.
    h, d : int, default 1500, 1000
        Rows and columns, ``h >= d >= 10``.
    seed : int, default 0
        Seed (combined with the family, so that families differ at one seed).

    Returns
    -------
    numpy.ndarray
        The ``h x d`` matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.random_matrices import labelled_matrix
    >>> W = labelled_matrix("zeros20", h=60, d=40, seed=0)
    >>> W.shape, int((np.abs(W).sum(axis=0) == 0).sum())  # 20% of the 40 columns are zero
    ((60, 40), 8)
    >>> np.array_equal(W, labelled_matrix("zeros20", h=60, d=40, seed=0))
    True
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

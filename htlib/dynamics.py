"""Spike-to-heavy-tail dynamics of the two-layer student (paper 003, §5 and App. A).

This module owns the analysis of training trajectories made by
:func:`htlib.two_layer.train` (it trains nothing itself):

- singular-vector overlaps of a weight matrix and an optimizer update
  (Def. 5.1) and numbers that summarise them: diagonal and off-diagonal mass,
  the spread of the off-diagonal mass, the largest (outlier) overlaps;
- scale-free widths of an ESD, to compare runs with and without weight
  normalization;
- the 5+1 phase, the Marchenko-Pastur bulk edge and the top eigenvalues at
  every recorded step (the "spike movement");
- an explicit definition of "heavy-tailed" and the first recorded step that
  meets it (steps to heavy tail).

Conventions: ``W`` is ``h x d``; the ESD is the ascending eigenvalues of
``WᵀW`` (as in :class:`htlib.two_layer.Trajectory`); Marchenko-Pastur
comparisons use ``WᵀW / max(h, d)`` with ratio ``gamma = min(h, d) / max(h, d)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import scipy.linalg

from htlib import spectra

__all__ = [
    "PHASES",
    "svd_bases",
    "update_overlaps",
    "step_overlaps",
    "OverlapSummary",
    "overlap_summary",
    "SpectrumWidth",
    "spectrum_width",
    "PhaseTrack",
    "phase_track",
    "HeavyTailCriterion",
    "HeavyTailCheck",
    "heavy_tail_check",
    "steps_to_heavy_tail",
    "top_outlier_pvalue",
]

PHASES: tuple[str, ...] = spectra.PHASES
"""The 5+1 phases of Martin & Mahoney, in their order of training (from :mod:`htlib.spectra`)."""


def _as_numpy(x: Any, name: str) -> np.ndarray:
    if hasattr(x, "detach"):  # torch tensor
        x = x.detach().cpu().numpy()
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


# ----------------------------------------------------------------------------- overlaps


def svd_bases(W: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Thin SVD ``W = U diag(s) Vᵀ`` in float64, singular values descending.

    Parameters
    ----------
    W
        An ``a x c`` matrix (numpy or torch).

    Returns
    -------
    U : (a, b) ndarray, s : (b,) ndarray, V : (c, b) ndarray
        With ``b = min(a, c)``; the columns of ``U`` and ``V`` are orthonormal.
        ``V`` holds the right singular vectors as columns (the paper writes ``Vᵀ``
        for the ``b x c`` matrix).
    """
    A = _as_numpy(W, "W")
    U, s, Vt = scipy.linalg.svd(A, full_matrices=False, lapack_driver="gesdd")
    return U, s, Vt.T


def update_overlaps(W: Any, M: Any) -> tuple[np.ndarray, np.ndarray]:
    """Overlaps (Def. 5.1) of the singular vectors of a weight and an update.

    Parameters
    ----------
    W, M
        Matrices of the same shape ``h x d`` (e.g. ``W_{t+1}`` or ``W_t``, and
        ``M_t = W_{t+1} - W_t``).

    Returns
    -------
    O_U, O_V : (b, b) ndarrays, ``b = min(h, d)``
        ``O(U_W, U_M) = (U_Wᵀ U_M)∘2`` and ``O(V_W, V_M) = (V_Wᵀ V_M)∘2``; row ``j``
        belongs to the ``j``-th singular vector of ``W``, column ``k`` to the
        ``k``-th of ``M`` (both by descending singular value).
    """
    W_ = _as_numpy(W, "W")
    M_ = _as_numpy(M, "M")
    if W_.shape != M_.shape:
        raise ValueError(f"W and M must have the same shape, got {W_.shape} and {M_.shape}")
    U_w, _, V_w = svd_bases(W_)
    U_m, _, V_m = svd_bases(M_)
    return spectra.overlaps(U_w, U_m), spectra.overlaps(V_w, V_m)


def step_overlaps(traj: Any, t: int) -> dict[str, np.ndarray]:
    """The four overlaps of Fig. 4 for step ``t`` of a trajectory, with ``M_t = W_{t+1} - W_t``.

    Parameters
    ----------
    traj
        A :class:`htlib.two_layer.Trajectory` that kept ``W_t`` and ``W_{t+1}``.
    t
        The step (``>= 0``).

    Returns
    -------
    dict
        ``"U_before"``: ``O(U_{W_t}, U_{M_t})``, ``"V_before"``: ``O(V_{W_t}, V_{M_t})``,
        ``"U_after"``: ``O(U_{W_{t+1}}, U_{M_t})``, ``"V_after"``: ``O(V_{W_{t+1}}, V_{M_t})``.
    """
    if t < 0:
        raise ValueError(f"t must be >= 0, got {t}")
    M = traj.update(t)  # raises ValueError when W_t or W_{t+1} was not kept
    U_m, _, V_m = svd_bases(M)
    U_0, _, V_0 = svd_bases(traj.weights[t])
    U_1, _, V_1 = svd_bases(traj.weights[t + 1])
    return {
        "U_before": spectra.overlaps(U_0, U_m),
        "V_before": spectra.overlaps(V_0, V_m),
        "U_after": spectra.overlaps(U_1, U_m),
        "V_after": spectra.overlaps(V_1, V_m),
    }


@dataclass(frozen=True)
class OverlapSummary:
    """Numbers that describe an overlap matrix ``O`` (rows: weight, columns: update).

    Attributes
    ----------
    k : int
        Size of the leading block the block statistics refer to.
    diagonal : ndarray
        ``O[j, j]`` for ``j < k``.
    block_mass : float
        Sum of the leading ``k x k`` block.
    diag_fraction : float
        Share of the block's mass on its diagonal.
    offdiag_mass : float
        Block mass off the diagonal.
    mean_index_distance : float
        Mass-weighted mean of ``|i - j|`` over the block: how far from the
        diagonal the mass sits (0 for a diagonal block).
    participation : float
        Mean over the block's rows of the inverse participation ratio
        ``(sum_j p_ij)^2 / sum_j p_ij^2``: the effective number of update
        directions each weight direction overlaps (1 = a single partner).
    top_values : ndarray
        The ``n_top`` largest entries of the whole matrix, descending.
    top_index : ndarray
        Their ``(row, column)`` indices, shape ``(n_top, 2)``.
    """

    k: int
    diagonal: np.ndarray
    block_mass: float
    diag_fraction: float
    offdiag_mass: float
    mean_index_distance: float
    participation: float
    top_values: np.ndarray
    top_index: np.ndarray


def overlap_summary(O: np.ndarray, *, k: int = 100, n_top: int = 5) -> OverlapSummary:
    """Summarise an overlap matrix by its leading ``k x k`` block and its largest entries.

    Parameters
    ----------
    O
        A square non-negative matrix (an output of :func:`update_overlaps`).
    k
        Leading block size, ``1 <= k``; clipped to ``O``'s size.
    n_top
        Number of largest entries reported, ``>= 1``.
    """
    O = np.asarray(O, dtype=np.float64)
    if O.ndim != 2 or O.shape[0] != O.shape[1]:
        raise ValueError(f"O must be a square matrix, got shape {O.shape}")
    if O.size == 0 or np.any(O < 0) or not np.all(np.isfinite(O)):
        raise ValueError("O must be non-empty, finite and non-negative")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if n_top < 1:
        raise ValueError(f"n_top must be >= 1, got {n_top}")
    k = min(k, O.shape[0])
    block = O[:k, :k]
    diag = np.diag(block).copy()
    mass = float(block.sum())
    tr = float(diag.sum())
    i, j = np.indices(block.shape)
    dist = float((np.abs(i - j) * block).sum() / mass) if mass > 0 else 0.0
    row_sum = block.sum(axis=1)
    row_sq = (block**2).sum(axis=1)
    ok = row_sq > 0
    participation = float(np.mean(row_sum[ok] ** 2 / row_sq[ok])) if ok.any() else 0.0
    n_top = min(n_top, O.size)
    flat = np.argpartition(O.ravel(), -n_top)[-n_top:]
    flat = flat[np.argsort(O.ravel()[flat])[::-1]]
    rows, cols = np.unravel_index(flat, O.shape)
    return OverlapSummary(
        k=k,
        diagonal=diag,
        block_mass=mass,
        diag_fraction=tr / mass if mass > 0 else 0.0,
        offdiag_mass=mass - tr,
        mean_index_distance=dist,
        participation=participation,
        top_values=O.ravel()[flat].copy(),
        top_index=np.stack([rows, cols], axis=1),
    )


# ----------------------------------------------------------------------------- widths


@dataclass(frozen=True)
class SpectrumWidth:
    """Scale-free widths of an ESD (unchanged when every eigenvalue is multiplied by c > 0).

    Attributes
    ----------
    decades : float
        ``log10(l_max / l_min)`` over the positive eigenvalues.
    bulk_decades : float
        ``log10(q_0.95 / q_0.05)``: the width of the middle 90 %.
    max_over_mean : float
        ``l_max / mean(l)``: how far the top eigenvalue sits out, in units of the
        mean (with weight normalization the mean is fixed at ``h`` for ``d <= h``).
    cv : float
        Coefficient of variation ``std(l) / mean(l)``.
    """

    decades: float
    bulk_decades: float
    max_over_mean: float
    cv: float


def spectrum_width(eigs: Any) -> SpectrumWidth:
    """Scale-free widths of the ESD ``eigs`` (see :class:`SpectrumWidth`)."""
    e = np.asarray(eigs, dtype=np.float64).ravel()
    if e.size < 2 or not np.all(np.isfinite(e)):
        raise ValueError("eigs must hold at least 2 finite eigenvalues")
    pos = e[e > 0]
    if pos.size < 2:
        raise ValueError("eigs must hold at least 2 positive eigenvalues")
    q05, q95 = np.quantile(pos, [0.05, 0.95])
    mean = float(e.mean())
    return SpectrumWidth(
        decades=float(np.log10(pos.max() / pos.min())),
        bulk_decades=float(np.log10(q95 / q05)),
        max_over_mean=float(e.max() / mean),
        cv=float(e.std() / mean),
    )


# ----------------------------------------------------------------------------- heavy tails


def top_outlier_pvalue(eigs: Any, alpha: float, xmin: float) -> float:
    """Probability that the largest of the tail's eigenvalues is at least as large as observed,
    if the tail ``l >= xmin`` were i.i.d. from the fitted power law ``p(l) ~ l^(-alpha)``.

    With ``m`` tail eigenvalues and the observed maximum ``l_max`` it is
    ``1 - (1 - (l_max / xmin)^(1 - alpha))^m``. A tiny value says the top
    eigenvalue is a spike standing apart from the power-law tail.
    """
    e = np.asarray(eigs, dtype=np.float64).ravel()
    if not (alpha > 1):
        raise ValueError(f"alpha must be > 1, got {alpha}")
    if not (xmin > 0):
        raise ValueError(f"xmin must be > 0, got {xmin}")
    tail = e[e >= xmin]
    if tail.size == 0:
        raise ValueError("no eigenvalue is >= xmin")
    m = tail.size
    ccdf = (tail.max() / xmin) ** (1.0 - alpha)  # P(one draw >= l_max)
    # 1 - (1 - c)^m, accurately for small c
    return float(-math.expm1(m * math.log1p(-ccdf))) if ccdf < 1 else 1.0


@dataclass(frozen=True)
class HeavyTailCriterion:
    """The book's definition of a heavy-tailed ESD.

    An ESD is *heavy-tailed* when all three hold:

    1. its PL_Alpha_KS is below ``alpha_max`` (Martin & Mahoney's heavy-tailed
       range is alpha in [2, 4]; below 2 very heavy-tailed);
    2. the fitted power-law tail holds at least ``min_tail_fraction`` of the
       eigenvalues, so the fit describes the bulk's decay and not one spike and
       its neighbour;
    3. the spike is absorbed: the largest eigenvalue is not an outlier of the
       fitted tail, i.e. :func:`top_outlier_pvalue` is at least ``spike_pvalue``.
    """

    alpha_max: float = 4.0
    min_tail_fraction: float = 0.02
    spike_pvalue: float = 0.01

    def __post_init__(self) -> None:
        if not (self.alpha_max > 1):
            raise ValueError(f"alpha_max must be > 1, got {self.alpha_max}")
        if not (0 < self.min_tail_fraction <= 1):
            raise ValueError(f"min_tail_fraction must be in (0, 1], got {self.min_tail_fraction}")
        if not (0 <= self.spike_pvalue < 1):
            raise ValueError(f"spike_pvalue must be in [0, 1), got {self.spike_pvalue}")


@dataclass(frozen=True)
class HeavyTailCheck:
    """The three conditions of :class:`HeavyTailCriterion` evaluated on one ESD."""

    alpha: float
    xmin: float
    n_tail: int
    tail_fraction: float
    spike_pvalue: float
    alpha_ok: bool
    tail_ok: bool
    spike_absorbed: bool

    @property
    def heavy_tailed(self) -> bool:
        return self.alpha_ok and self.tail_ok and self.spike_absorbed


def heavy_tail_check(eigs: Any, criterion: HeavyTailCriterion = HeavyTailCriterion()) -> HeavyTailCheck:
    """Evaluate :class:`HeavyTailCriterion` on an ESD (PL fit by :func:`htlib.spectra.fit_power_law`)."""
    e = np.asarray(eigs, dtype=np.float64).ravel()
    if e.size < 3 or not np.all(np.isfinite(e)):
        raise ValueError("eigs must hold at least 3 finite eigenvalues")
    fit = spectra.fit_power_law(e)
    alpha, xmin, n_tail = float(fit.alpha), float(fit.xmin), int(fit.n_tail)
    frac = n_tail / e.size
    if np.isfinite(alpha) and alpha > 1 and xmin > 0:
        p = top_outlier_pvalue(e, alpha, xmin)
    else:
        p = float("nan")
    return HeavyTailCheck(
        alpha=alpha,
        xmin=xmin,
        n_tail=n_tail,
        tail_fraction=frac,
        spike_pvalue=p,
        alpha_ok=bool(np.isfinite(alpha) and alpha < criterion.alpha_max),
        tail_ok=bool(frac >= criterion.min_tail_fraction),
        spike_absorbed=bool(np.isfinite(p) and p >= criterion.spike_pvalue),
    )


def steps_to_heavy_tail(
    steps: Sequence[int], esds: Sequence[Any], criterion: HeavyTailCriterion = HeavyTailCriterion()
) -> tuple[int | None, int | None]:
    """First recorded step whose ESD is heavy-tailed, with the recorded step before it.

    Parameters
    ----------
    steps
        Recorded step indices, increasing (``Trajectory.steps``).
    esds
        The ESD at each recorded step (``Trajectory.esd``).
    criterion
        The definition of heavy-tailed.

    Returns
    -------
    (first, previous)
        ``first`` is the first recorded step that is heavy-tailed (``None`` if
        none is); the true first step lies in ``(previous, first]``, where
        ``previous`` is the recorded step before ``first`` (``None`` if ``first``
        is the first record).
    """
    steps = [int(s) for s in steps]
    if len(steps) != len(esds):
        raise ValueError(f"steps and esds must have the same length, got {len(steps)} and {len(esds)}")
    if any(b <= a for a, b in zip(steps, steps[1:])):
        raise ValueError("steps must be strictly increasing")
    for i, (s, e) in enumerate(zip(steps, esds)):
        if heavy_tail_check(e, criterion).heavy_tailed:
            return s, (steps[i - 1] if i > 0 else None)
    return None, None


# ----------------------------------------------------------------------------- phase tracking


@dataclass(frozen=True)
class PhaseTrack:
    """Spectral state of a trajectory at every recorded step.

    Eigenvalues are those of ``WᵀW / p`` with ``p = max(h, d)`` (Marchenko-Pastur
    scale; ``W0`` has its bulk in ``[(1 - sqrt(gamma))^2, (1 + sqrt(gamma))^2]``).

    Attributes
    ----------
    steps : (T,) int ndarray
    gamma : float
    top : (T, n_top) ndarray
        The ``n_top`` largest eigenvalues, descending.
    bulk_edge : (T,) ndarray
        Upper edge ``lambda_plus`` of the Marchenko-Pastur fit (:func:`htlib.spectra.fit_mp`).
    num_spikes : (T,) int ndarray
    phase : tuple of str
        :func:`htlib.spectra.classify_phase` at every step.
    alpha_ks, alpha_hill : (T,) ndarrays
    heavy_tailed : (T,) bool ndarray
        :class:`HeavyTailCriterion` at every step.
    """

    steps: np.ndarray
    gamma: float
    top: np.ndarray
    bulk_edge: np.ndarray
    num_spikes: np.ndarray
    phase: tuple[str, ...]
    alpha_ks: np.ndarray
    alpha_hill: np.ndarray
    heavy_tailed: np.ndarray


def phase_track(
    steps: Sequence[int],
    esds: Sequence[Any],
    *,
    h: int,
    d: int,
    n_top: int = 3,
    criterion: HeavyTailCriterion = HeavyTailCriterion(),
) -> PhaseTrack:
    """Top eigenvalues, MP bulk edge, spikes, phase, alphas and the heavy-tail test at every record.

    Parameters
    ----------
    steps, esds
        Recorded steps and the raw ESDs of ``W_tᵀW_t`` (``Trajectory.steps``, ``Trajectory.esd``).
    h, d
        Shape of ``W`` (``h x d``), for the Marchenko-Pastur scale and ratio.
    n_top
        Number of top eigenvalues kept, ``>= 1``.
    """
    if h < 1 or d < 1:
        raise ValueError(f"h and d must be >= 1, got h={h}, d={d}")
    if n_top < 1:
        raise ValueError(f"n_top must be >= 1, got {n_top}")
    if len(steps) != len(esds):
        raise ValueError(f"steps and esds must have the same length, got {len(steps)} and {len(esds)}")
    p, q = max(h, d), min(h, d)
    gamma = q / p
    top, edge, spikes, phases, a_ks, a_hill, ht = [], [], [], [], [], [], []
    for e in esds:
        e = np.sort(np.asarray(e, dtype=np.float64).ravel())[-q:] / p  # drop structural zeros when d > h
        mp = spectra.fit_mp(e, gamma)
        check = heavy_tail_check(e, criterion)
        t = e[::-1][:n_top]
        top.append(np.pad(t, (0, n_top - t.size), constant_values=np.nan))
        edge.append(float(mp.lambda_plus))
        spikes.append(int(mp.num_spikes))
        phases.append(str(spectra.classify_phase(e, gamma)))
        a_ks.append(check.alpha)
        a_hill.append(float(spectra.alpha_hill(e)))
        ht.append(check.heavy_tailed)
    return PhaseTrack(
        steps=np.asarray(steps, dtype=np.int64),
        gamma=gamma,
        top=np.asarray(top),
        bulk_edge=np.asarray(edge),
        num_spikes=np.asarray(spikes, dtype=np.int64),
        phase=tuple(phases),
        alpha_ks=np.asarray(a_ks),
        alpha_hill=np.asarray(a_hill),
        heavy_tailed=np.asarray(ht, dtype=bool),
    )

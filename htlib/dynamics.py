"""Spike-to-heavy-tail dynamics of the two-layer student (the analysis of paper 003's trajectories).

Singular-vector overlaps of a weight and an update (Def. 5.1) and their summaries, scale-free ESD widths, and
the book's one spectrum report (:func:`htlib.spectra.analyze_spectrum`) at every recorded step of a
:func:`htlib.two_layer.train` trajectory.  ``W`` is ``h x d``; the ESD is the ascending eigenvalues of ``WᵀW``;
Marchenko-Pastur comparisons use ``WᵀW / max(h, d)`` with ratio ``gamma = min(h, d) / max(h, d)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import scipy.linalg

from htlib import spectra
from htlib._checks import check_int, check_ints, check_matrix, to_numpy

__all__ = ["PHASES", "svd_bases", "update_overlaps", "step_overlaps", "OverlapSummary", "overlap_summary",
           "SpectrumWidth", "spectrum_width", "esd_report", "SHAPE_PVALUE", "TailShape", "tail_shape", "PhaseTrack", "phase_track", "steps_to_heavy_tail",
           "top_outlier_pvalue"]

PHASES: tuple[str, ...] = spectra.PHASES
"""The 5+1 phases of Martin & Mahoney, in their order of training (from :mod:`htlib.spectra`)."""


def svd_bases(W: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Thin SVD ``W = U diag(s) Vᵀ`` of an ``a x c`` matrix in float64, singular values descending.

    Returns ``U`` ``(a, b)``, ``s`` ``(b,)`` and ``V`` ``(c, b)`` (right singular vectors as columns),
    ``b = min(a, c)``.

    Parameters
    ----------
    W : array_like or torch.Tensor, shape (a, c)
        A matrix.

    Returns
    -------
    tuple of numpy.ndarray
        ``U`` ``(a, b)``, ``s`` ``(b,)`` descending and ``V`` ``(c, b)``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.dynamics import svd_bases
    >>> W = np.random.default_rng(0).standard_normal((5, 3))
    >>> U, s, V = svd_bases(W)
    >>> U.shape, s.shape, V.shape, bool(np.allclose((U * s) @ V.T, W))
    ((5, 3), (3,), (3, 3), True)
    """
    A = check_matrix("W", W)
    U, s, Vt = scipy.linalg.svd(A, full_matrices=False, lapack_driver="gesdd")
    return U, s, Vt.T


def update_overlaps(W: Any, M: Any) -> tuple[np.ndarray, np.ndarray]:
    """Overlaps (Def. 5.1) of the singular vectors of a weight ``W`` and an update ``M`` (both ``h x d``).

    Returns ``O(U_W, U_M) = (U_Wᵀ U_M)∘2`` and ``O(V_W, V_M) = (V_Wᵀ V_M)∘2``, ``(b, b)`` with ``b = min(h, d)``;
    row ``j`` is the ``j``-th singular vector of ``W``, column ``k`` the ``k``-th of ``M`` (descending).

    Parameters
    ----------
    W : array_like, shape (h, d)
        The weight.
    M : array_like, shape (h, d)
        The update.

    Returns
    -------
    tuple of numpy.ndarray
        ``O(U_W, U_M)`` and ``O(V_W, V_M)``, each ``(b, b)``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.dynamics import update_overlaps
    >>> W = np.random.default_rng(0).standard_normal((6, 4))
    >>> OU, OV = update_overlaps(W, 2.0 * W)          # the same singular vectors: the identity
    >>> OU.shape, bool(np.allclose(OU, np.eye(4))), bool(np.allclose(OV, np.eye(4)))
    ((4, 4), True, True)
    """
    W_ = check_matrix("W", W)
    M_ = check_matrix("M", M)
    if W_.shape != M_.shape:
        raise ValueError(f"W and M must have the same shape, got {W_.shape} and {M_.shape}")
    U_w, _, V_w = svd_bases(W_)
    U_m, _, V_m = svd_bases(M_)
    return spectra.overlaps(U_w, U_m), spectra.overlaps(V_w, V_m)


def step_overlaps(traj: Any, t: int) -> dict[str, np.ndarray]:
    """The overlaps of ``M_t = W_{t+1} - W_t`` with ``W_t`` (``"U_before"``, ``"V_before"``) and with ``W_{t+1}``
    (``"U_after"``, ``"V_after"``), for a trajectory that kept both.

    Parameters
    ----------
    traj : htlib.two_layer.Trajectory
        A run that kept ``W_t`` and ``W_{t+1}`` (``keep_weights``).
    t : int
        The step, ``>= 0``.

    Returns
    -------
    dict of str to numpy.ndarray
        ``"U_before"``, ``"V_before"``, ``"U_after"``, ``"V_after"``, each ``(b, b)``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.dynamics import step_overlaps
    >>> from htlib.two_layer import TwoLayerConfig, train
    >>> traj = train(TwoLayerConfig(n=40, d=20, h=30, n_test=10, steps=1, keep_weights=(0, 1), dtype="float64"))
    >>> O = step_overlaps(traj, 0)
    >>> sorted(O), O["V_before"].shape
    (['U_after', 'U_before', 'V_after', 'V_before'], (20, 20))
    >>> bool(np.allclose(O["V_before"].sum(axis=0), 1.0))    # V_W is a full basis of R^d: columns sum to 1
    True
    """
    if t < 0:
        raise ValueError(f"t must be >= 0, got {t}")
    M = traj.update(t)  # raises ValueError when W_t or W_{t+1} was not kept
    U_m, _, V_m = svd_bases(M)
    U_0, _, V_0 = svd_bases(traj.weights[t])
    U_1, _, V_1 = svd_bases(traj.weights[t + 1])
    return {"U_before": spectra.overlaps(U_0, U_m), "V_before": spectra.overlaps(V_0, V_m),
            "U_after": spectra.overlaps(U_1, U_m), "V_after": spectra.overlaps(V_1, V_m)}


@dataclass(frozen=True)
class OverlapSummary:
    """Numbers that describe an overlap matrix ``O`` (rows: weight, columns: update).

    ``diagonal``, ``block_mass``, ``diag_fraction`` and ``offdiag_mass`` are of the leading ``k x k`` block;
    ``mean_index_distance`` is the mass-weighted mean of ``|i - j|`` over it (0 for a diagonal block);
    ``participation`` the mean over its rows of ``(sum_j p_ij)^2 / sum_j p_ij^2`` (1 = a single partner);
    ``top_values`` and ``top_index`` (``(n_top, 2)``) the largest entries of the whole matrix, descending.

    Attributes
    ----------
    k : int
        Size of the leading block.
    diagonal : numpy.ndarray
        Its diagonal.
    block_mass, diag_fraction, offdiag_mass : float
        Its total, the diagonal's share of it, and the rest.
    mean_index_distance : float
        Mass-weighted mean of ``|i - j|`` over the block.
    participation : float
        Mean effective number of partners per row.
    top_values : numpy.ndarray
        The ``n_top`` largest entries, descending.
    top_index : numpy.ndarray, shape (n_top, 2)
        Their (row, column) positions.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.dynamics import overlap_summary
    >>> s = overlap_summary(np.eye(4), k=3, n_top=2)
    >>> s.k, s.diag_fraction, s.offdiag_mass, s.mean_index_distance, s.participation
    (3, 1.0, 0.0, 0.0, 1.0)
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
    """Summarise a square non-negative ``O`` by its leading ``k x k`` block (``k`` clipped to its size) and its
    ``n_top`` largest entries.

    Parameters
    ----------
    O : numpy.ndarray
        A square non-negative matrix.
    k : int, default 100
        Size of the leading block.
    n_top : int, default 5
        Number of largest entries reported.

    Returns
    -------
    OverlapSummary
        The block's numbers and the largest entries.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.dynamics import overlap_summary
    >>> O = np.roll(np.eye(4), 1, axis=1)          # each row's partner is the next index
    >>> s = overlap_summary(O, n_top=1)
    >>> s.diag_fraction, round(s.mean_index_distance, 4), s.top_values.tolist()
    (0.0, 1.5, [1.0])
    """
    O = check_matrix("O", O)
    if O.shape[0] != O.shape[1]:
        raise ValueError(f"O must be a square matrix, got shape {O.shape}")
    if np.any(O < 0):
        raise ValueError("O must be non-negative")
    k = check_int("k", k, 1)
    n_top = check_int("n_top", n_top, 1)
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
    return OverlapSummary(k=k, diagonal=diag, block_mass=mass, diag_fraction=tr / mass if mass > 0 else 0.0,
                          offdiag_mass=mass - tr, mean_index_distance=dist, participation=participation,
                          top_values=O.ravel()[flat].copy(), top_index=np.stack([rows, cols], axis=1))


@dataclass(frozen=True)
class SpectrumWidth:
    """Scale-free widths of an ESD: ``decades = log10(l_max / l_min)`` (positive eigenvalues), ``bulk_decades =
    log10(q_0.95 / q_0.05)``, ``max_over_mean = l_max / mean(l)`` and ``cv = std(l) / mean(l)``.

    Attributes
    ----------
    decades : float
        ``log10(l_max / l_min)`` over the positive eigenvalues.
    bulk_decades : float
        ``log10(q_0.95 / q_0.05)``.
    max_over_mean : float
        ``l_max / mean(l)``.
    cv : float
        ``std(l) / mean(l)``.

    Examples
    --------
    >>> from htlib.dynamics import spectrum_width
    >>> w = spectrum_width([1.0, 10.0, 100.0])
    >>> round(w.decades, 4), round(w.max_over_mean, 4)      # 100 / 37
    (2.0, 2.7027)
    """

    decades: float
    bulk_decades: float
    max_over_mean: float
    cv: float


def spectrum_width(eigs: Any) -> SpectrumWidth:
    """Scale-free widths of the ESD ``eigs`` (see :class:`SpectrumWidth`).

    Parameters
    ----------
    eigs : array_like
        The ESD (at least 2 positive, finite values).

    Returns
    -------
    SpectrumWidth
        The widths.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.dynamics import spectrum_width
    >>> from htlib.spectra import esd
    >>> w = spectrum_width(esd(np.random.default_rng(0).standard_normal((900, 300))))
    >>> bool(abs(w.cv - np.sqrt(1 / 3)) < 0.03)        # Marchenko-Pastur: cv = sqrt(gamma)
    True
    >>> bool(abs(w.max_over_mean - (1 + np.sqrt(1 / 3)) ** 2) < 0.1)    # lambda_plus over the mean
    True
    """
    e = to_numpy(eigs, "eigs").ravel()
    if e.size < 2 or not np.all(np.isfinite(e)):
        raise ValueError("eigs must hold at least 2 finite eigenvalues")
    pos = e[e > 0]
    if pos.size < 2:
        raise ValueError("eigs must hold at least 2 positive eigenvalues")
    q05, q95 = np.quantile(pos, [0.05, 0.95])
    mean = float(e.mean())
    return SpectrumWidth(decades=float(np.log10(pos.max() / pos.min())), bulk_decades=float(np.log10(q95 / q05)),
                         max_over_mean=float(e.max() / mean), cv=float(e.std() / mean))


top_outlier_pvalue = spectra.top_outlier_pvalue


def esd_report(eigs: Any, *, h: int, d: int, rules: spectra.PhaseRules = spectra.PHASE_RULES) -> spectra.SpectrumReport:
    """The book's one spectrum report (:func:`htlib.spectra.analyze_spectrum`) of the raw ESD of an ``h x d`` ``W``.

    ``eigs`` are the eigenvalues of ``WᵀW`` (``Trajectory.esd``); when ``d > h`` its ``d - h`` structural zeros
    are dropped first.

    Parameters
    ----------
    eigs : array_like
        The ``min(h, d)`` or ``d`` eigenvalues of ``WᵀW``.
    h, d : int
        Shape of ``W``.
    rules : htlib.spectra.PhaseRules, default PHASE_RULES
        Thresholds of the phase rules.

    Returns
    -------
    htlib.spectra.SpectrumReport
        The report.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.dynamics import esd_report
    >>> W = np.random.default_rng(0).standard_normal((200, 300))       # h < d: 100 structural zeros
    >>> rep = esd_report(np.linalg.eigvalsh(W.T @ W), h=200, d=300)
    >>> rep.n, rep.phase
    (200, 'random-like')
    """
    h, d = check_int("h", h, 1), check_int("d", d, 1)
    e = np.sort(to_numpy(eigs, "eigs").ravel())
    p, q = max(h, d), min(h, d)
    if e.size not in (q, d):
        raise ValueError(f"eigs must hold min(h, d) = {q} or d = {d} eigenvalues, got {e.size}")
    return spectra.analyze_spectrum(e[-q:], q / p, rules=rules)


SHAPE_PVALUE = 0.1
"""Level of :attr:`TailShape.shape`: the likelihood ratio of a power law against an exponential decides below it
(Clauset, Shalizi & Newman's)."""


@dataclass(frozen=True)
class TailShape:
    """The tail-shape check of one ESD (:func:`tail_shape`): the label with and without ``lambda_1``, and the
    likelihood-ratio test of the power-law tail without ``lambda_1``.

    Attributes
    ----------
    label, label_without_top : str
        The phase with and without ``lambda_1``.
    reach_without_top, alpha_without_top : float
        Tail reach (in ``lambda_plus``) and tail exponent without ``lambda_1``.
    n_tail : int
        Eigenvalues in WeightWatcher's power-law fit without ``lambda_1``.
    ratio, pvalue : float
        Log-likelihood ratio of a power law against an exponential, and its p-value.

    Examples
    --------
    >>> from htlib.dynamics import tail_shape
    >>> from htlib.random_matrices import labelled_matrix
    >>> from htlib.spectra import esd
    >>> ts = tail_shape(esd(labelled_matrix("t1.5", h=300, d=200)), h=300, d=200)   # Student-t(1.5) entries
    >>> ts.heavy, ts.shape
    (True, 'power law')
    """

    label: str
    label_without_top: str
    reach_without_top: float
    alpha_without_top: float
    n_tail: int
    ratio: float
    pvalue: float

    @property
    def heavy(self) -> bool:
        """Labelled heavy-tailed with and without ``lambda_1`` (one outlier above an MP-like bulk does not count)."""
        return self.label == "heavy-tailed" and self.label_without_top == "heavy-tailed"

    @property
    def shape(self) -> str:
        """``"power law"``, ``"exponential"`` (decided at :data:`SHAPE_PVALUE`) or ``"undecided"``."""
        if not np.isfinite(self.pvalue) or self.pvalue >= SHAPE_PVALUE:
            return "undecided"
        return "power law" if self.ratio > 0 else "exponential"


def tail_shape(eigs, *, h: int, d: int, rules: spectra.PhaseRules = spectra.PHASE_RULES) -> TailShape:
    """:class:`TailShape` of the ESD ``eigs`` of ``WᵀW`` (``W`` is ``h x d``): the report again without
    ``lambda_1``, and :func:`htlib.spectra.power_law_vs_exponential` above WeightWatcher's ``xmin`` of the rest.

    Parameters
    ----------
    eigs : array_like
        The eigenvalues of ``WᵀW``.
    h, d : int
        Shape of ``W``.
    rules : htlib.spectra.PhaseRules, default PHASE_RULES
        Thresholds of the phase rules.

    Returns
    -------
    TailShape
        The labels and the likelihood-ratio test.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((300, 200))
    >>> X += 4.0 * np.outer(rng.standard_normal(300), rng.standard_normal(200)) / np.sqrt(200)  # one spike
    >>> tail_shape(np.linalg.eigvalsh(X.T @ X), h=300, d=200).heavy
    False
    """
    full = esd_report(eigs, h=h, d=d, rules=rules)
    q, gamma = min(h, d), min(h, d) / max(h, d)
    e = np.sort(np.asarray(eigs, dtype=float))[-q:]  # the structural zeros dropped, as the report does
    rest = spectra.analyze_spectrum(e[:-1], gamma, rules=rules)
    fit = spectra.fit_power_law(e[:-1])
    r, p = spectra.power_law_vs_exponential(e[:-1], float(fit.xmin))
    return TailShape(full.phase, rest.phase, float(rest.tail_reach), float(rest.tail_alpha), int(fit.n_tail), r, p)


@dataclass(frozen=True)
class PhaseTrack:
    """Spectral state of a trajectory at every recorded step, all read from one report per step (``reports``).

    Eigenvalues are those of ``WᵀW / p``, ``p = max(h, d)``: ``top`` ``(T, n_top)`` descending, ``bulk_edge``
    the fitted MP edge, ``num_spikes`` the outliers beyond ``lambda_plus + 4 s_TW``.

    Attributes
    ----------
    steps : numpy.ndarray of int
        The recorded steps.
    gamma : float
        ``min(h, d) / max(h, d)``.
    top : numpy.ndarray, shape (T, n_top)
        The largest eigenvalues of ``WᵀW / p``, descending.
    bulk_edge : numpy.ndarray
        The fitted MP edge.
    num_spikes : numpy.ndarray of int
        Outliers beyond ``lambda_plus + 4 s_TW``.
    phase : tuple of str
        The phase at each step.
    alpha_ks, alpha_hill : numpy.ndarray
        ``PL_Alpha_KS`` and ``PL_Alpha_Hill``.
    heavy_tailed, heavy_tailed_strict : numpy.ndarray of bool
        The heavy-tail verdicts.
    reports : tuple of htlib.spectra.SpectrumReport
        One report per step.

    Examples
    --------
    >>> from htlib.dynamics import phase_track
    >>> from htlib.random_matrices import labelled_matrix
    >>> from htlib.spectra import esd
    >>> esds = [esd(labelled_matrix(name, h=300, d=200)) for name in ("gaussian", "t1.5")]
    >>> track = phase_track([0, 5], esds, h=300, d=200)
    >>> track.phase, track.heavy_tailed.tolist(), track.top.shape
    (('random-like', 'heavy-tailed'), [False, True], (2, 3))
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
    heavy_tailed_strict: np.ndarray
    reports: tuple[Any, ...]


def phase_track(steps: Sequence[int], esds: Sequence[Any], *, h: int, d: int, n_top: int = 3,
                rules: spectra.PhaseRules = spectra.PHASE_RULES) -> PhaseTrack:
    """One :func:`esd_report` per recorded step of the raw ESDs ``esds`` of an ``h x d`` ``W``, and the arrays a
    phase plot needs.

    Parameters
    ----------
    steps : sequence of int
        The recorded steps.
    esds : sequence of array_like
        The raw ESD of ``W`` at each.
    h, d : int
        Shape of ``W``.
    n_top : int, default 3
        Number of top eigenvalues kept.
    rules : htlib.spectra.PhaseRules, default PHASE_RULES
        Thresholds of the phase rules.

    Returns
    -------
    PhaseTrack
        The per-step arrays and reports.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.dynamics import phase_track
    >>> from htlib.random_matrices import labelled_matrix
    >>> from htlib.spectra import esd
    >>> track = phase_track([0], [esd(labelled_matrix("gaussian", h=300, d=200))], h=300, d=200)
    >>> round(track.gamma, 4), bool(abs(track.bulk_edge[0] - (1 + np.sqrt(2 / 3)) ** 2) < 0.3)   # the MP edge
    (0.6667, True)
    """
    h, d, n_top = check_int("h", h, 1), check_int("d", d, 1), check_int("n_top", n_top, 1)
    steps = check_ints("steps", steps, 0)
    if len(steps) != len(esds):
        raise ValueError(f"steps and esds must have the same length, got {len(steps)} and {len(esds)}")
    p, q = max(h, d), min(h, d)
    reports = tuple(esd_report(e, h=h, d=d, rules=rules) for e in esds)
    top, hill = [], []
    for e in esds:
        e = np.sort(np.asarray(e, dtype=np.float64).ravel())[-q:] / p
        t = e[::-1][:n_top]
        top.append(np.pad(t, (0, n_top - t.size), constant_values=np.nan))
        hill.append(float(spectra.alpha_hill(e)))
    return PhaseTrack(steps=np.asarray(steps, dtype=np.int64), gamma=q / p, top=np.asarray(top),
                      bulk_edge=np.asarray([r.lambda_plus / p for r in reports]),
                      num_spikes=np.asarray([r.num_outliers for r in reports], dtype=np.int64),
                      phase=tuple(r.phase for r in reports), alpha_ks=np.asarray([r.alpha for r in reports]),
                      alpha_hill=np.asarray(hill),
                      heavy_tailed=np.asarray([r.heavy_tailed for r in reports], dtype=bool),
                      heavy_tailed_strict=np.asarray([r.heavy_tailed_strict for r in reports], dtype=bool),
                      reports=reports)


def steps_to_heavy_tail(track: PhaseTrack, *, strict: bool = False) -> tuple[int | None, int | None]:
    """``(first, previous)``: the first recorded heavy-tailed step of ``track`` (``None`` if none; ``strict``: by
    ``heavy_tailed_strict``) and the record before it (``None`` for the first record).

    Parameters
    ----------
    track : PhaseTrack
        A track of :func:`phase_track`.
    strict : bool, default False
        Read ``heavy_tailed_strict`` instead of ``heavy_tailed``.

    Returns
    -------
    tuple
        ``(first, previous)``, each an int or None.

    Examples
    --------
    >>> from htlib.dynamics import phase_track, steps_to_heavy_tail
    >>> from htlib.random_matrices import labelled_matrix
    >>> from htlib.spectra import esd
    >>> esds = [esd(labelled_matrix(name, h=300, d=200)) for name in ("gaussian", "gaussian", "t1.5")]
    >>> steps_to_heavy_tail(phase_track([0, 5, 10], esds, h=300, d=200))
    (10, 5)
    """
    if not isinstance(track, PhaseTrack):
        raise ValueError(f"track must be a PhaseTrack (from phase_track), got {type(track).__name__}")
    flags = track.heavy_tailed_strict if strict else track.heavy_tailed
    steps = [int(s) for s in track.steps]
    for i, flag in enumerate(flags):
        if flag:
            return steps[i], (steps[i - 1] if i > 0 else None)
    return None, None


_REMOVED = {
    "HeavyTailCriterion": "the book has one heavy-tail rule: spectra.PhaseRules (thresholds) and "
                          "SpectrumReport.heavy_tailed / .heavy_tailed_strict",
    "HeavyTailCheck": "spectra.SpectrumReport (from dynamics.esd_report or spectra.analyze_spectrum)",
    "heavy_tail_check": "dynamics.esd_report(eigs, h=h, d=d) (same .alpha .xmin .n_tail .spike_pvalue .heavy_tailed)",
}


def __getattr__(name: str) -> Any:
    if name in _REMOVED:
        raise AttributeError(f"htlib.dynamics.{name} was removed; use {_REMOVED[name]}")
    raise AttributeError(f"module 'htlib.dynamics' has no attribute {name!r}")

"""The phases chapter: Martin & Mahoney's 5+1 phases on labelled matrices (one example per phase, the confusion
tables of :func:`htlib.spectra.analyze_spectrum`) and which label each family should get, and why."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from htlib import spectra
from htlib._checks import check_choice
from htlib.params import ParameterError, SweepSetup, param
from htlib.random_matrices import LABELLED_CASES, labelled_matrix
from htlib.sweep import run_sweep

MIN_SIZE = 60
"""Fewest rows and columns a labelled matrix can have: the ``rank60`` family plants a rank-60 signal."""

@dataclass(frozen=True)
class Setup(SweepSetup):
    """The chapter's parameters (its ``parameters`` cell), validated once.

    Examples
    --------
    >>> Setup(small_h=120, small_d=60).small_d
    60
    >>> Setup(small_d=59)
    Traceback (most recent call last):
    ...
    htlib.params.ParameterError: parameter 'small_d' must be an integer ≥ 60, ≤ 20000; got 59
    """
    h: int = param(1500, "rows p of the synthetic matrices (the student width of Kothapalli et al.)", ge=MIN_SIZE, le=20_000)
    d: int = param(1000, "columns q (needs d ≤ h)", ge=MIN_SIZE, le=20_000)
    seed: int = param(0, "seed of the six example matrices", ge=0)
    confusion_seeds: int = param(3, "seeds per family in the confusion table at h x d", ge=1, le=10)
    small_h: int = param(300, "rows of the small-size confusion table", ge=MIN_SIZE, le=20_000)
    small_d: int = param(200, "columns of the small-size confusion table (needs small_d ≤ small_h)",
                         ge=MIN_SIZE, le=20_000)
    small_seeds: int = param(3, "seeds per family at the small size", ge=1, le=20)
    bins: int = param(80, "histogram bins per panel", ge=10, le=1000)

    def _check(self) -> None:
        for rows, cols in (("h", "d"), ("small_h", "small_d")):
            if getattr(self, cols) > getattr(self, rows):
                raise ParameterError(f"parameter {cols!r} must be ≤ {rows} = {getattr(self, rows)} (gamma ≤ 1); "
                                     f"got {getattr(self, cols)}")

PAPER = Setup()
"""The papers' setting: the defaults (Martin & Mahoney give no matrix size; 1500 x 1000 is Kothapalli et al.'s)."""

EXAMPLES: dict[str, str] = {"random-like": "gaussian", "bleeding-out": "bleed", "bulk+spikes": "rank5",
                            "bulk-decay": "profile", "heavy-tailed": "t1.5", "rank-collapse": "collapse"}
"""One labelled case per phase: the chapter's six example matrices."""

_BBP = ("just above the BBP threshold: its outlier is predicted a few s_TW past the edge, at the 4 s_TW outlier "
        "margin")
_MU4 = ("tail index mu > 4: at finite size the top eigenvalue stays near the Tracy-Widom window of the edge "
        "(asymptotically the ESD is MP), so Martin & Mahoney's finite-size bulk-decay need not be visible")
_MU24 = ("tail index mu in (2, 4) with finite variance: the bulk is MP and only a few percent of the eigenvalues leave "
         "it, in a tail whose exponent sits near Martin & Mahoney's alpha = 4 boundary between heavy-tailed and "
         "bulk-decay; its top eigenvalues come from single large entries and the spacing test can detach them as spikes")

EXPECTED_PHASES: dict[str, PhaseResult] = {
    "gaussian": {"label": "random-like"},
    "rank1-0.5": {"label": "random-like", "why": "below the BBP threshold gamma**(1/4): no outlier exists"},
    "rank1-0.8": {"label": "random-like", "why": "below the BBP threshold gamma**(1/4): no outlier exists"},
    "rank1-1.0": {"label": "random-like", "undecidable": ("random-like", "bleeding-out"), "why": _BBP},
    "rank1-1.1": {"label": "bleeding-out", "undecidable": ("bleeding-out", "bulk+spikes", "random-like"),
                  "why": "its outlier is predicted near the 10 s_TW separation boundary (at small sizes inside the "
                         "4 s_TW margin)"},
    "rank1-1.4": {"label": "bulk+spikes", "small": ("bleeding-out",),
                  "why_small": "at small sizes its outlier is predicted near the 10 s_TW separation boundary"},
    "rank1-2.0": {"label": "bulk+spikes"}, "rank1-4.0": {"label": "bulk+spikes"},
    "bleed": {"label": "bleeding-out", "undecidable": ("bleeding-out", "bulk+spikes"), "small": ("random-like",),
              "why": "the theta = 1.15 outlier is predicted near the 10 s_TW separation boundary, a few s_TW above "
                     "the next one: it can stand apart as a spike",
              "why_small": "at small sizes some of the four outliers are predicted inside the 4 s_TW margin"},
    "rank5": {"label": "bulk+spikes"}, "rank15": {"label": "bulk+spikes"}, "rank60": {"label": "bulk+spikes"},
    "t1.5": {"label": "heavy-tailed", "why": "mu = 1.5 < 2: very heavy-tailed"},
    "t2.5": {"label": "heavy-tailed", "undecidable": ("heavy-tailed", "bulk-decay", "bulk+spikes"), "why": _MU24},
    "t3": {"label": "heavy-tailed", "undecidable": ("heavy-tailed", "bulk-decay", "bulk+spikes"), "why": _MU24},
    "t6": {"label": "bulk-decay", "undecidable": ("random-like", "bulk-decay"), "why": _MU4},
    "pareto1": {"label": "heavy-tailed", "why": "mu = 1 < 2: very heavy-tailed"},
    "pareto2.5": {"label": "heavy-tailed", "undecidable": ("heavy-tailed", "bulk-decay", "bulk+spikes"), "why": _MU24},
    "pareto5": {"label": "bulk-decay", "undecidable": ("random-like", "bulk-decay"), "why": _MU4},
    "t2.5+spike": {"label": "heavy-tailed", "undecidable": ("heavy-tailed", "bulk-decay", "bulk+spikes"),
                   "why": _MU24 + "; the theta = 3 spike sits inside that tail"},
    "profile": {"label": "bulk-decay", "small": ("random-like", "bleeding-out"),
                "why": "finite moments, but the MP law with a single sigma^2 does not hold: the edge is deformed and "
                       "decays into a few outliers just past lambda_+",
                "why_small": "at small sizes the deformation stays within a few s_TW of the edge"},
    "zeros5": {"label": "random-like", "why": "5% zeros is below the 10% rank-collapse share; MP holds on the rest"},
    "zeros20": {"label": "rank-collapse"}, "zeros50": {"label": "rank-collapse"},
    "collapse": {"label": "rank-collapse", "why": "90% of the eigenvalues sit on a 1e-2 noise floor"},
}
"""Martin & Mahoney's label of every case, the labels accepted where it is undecidable (below :data:`LARGE`: small)."""

LARGE = (1500, 1000)
"""The size from which on (``h * d`` at least as large) only the large-size allowances apply."""

def expected_phases(name: str, h: int, d: int) -> tuple[str, ...]:
    """Labels accepted for case ``name`` at ``h x d``: the label or the undecidable set (+ ``"small"`` below LARGE)."""
    check_choice("name", name, tuple(EXPECTED_PHASES))
    e = EXPECTED_PHASES[name]
    allowed = tuple(e.get("undecidable", (e["label"],)))
    if h * d < LARGE[0] * LARGE[1]:
        allowed = tuple(dict.fromkeys(allowed + tuple(e.get("small", ()))))
    return allowed

@dataclass(frozen=True)
class PhaseCase:
    """One labelled case of :data:`LABELLED_CASES` at a size and seed (a sweep configuration)."""
    name: str
    h: int = 1500
    d: int = 1000
    seed: int = 0

    def __post_init__(self) -> None:
        check_choice("name", self.name, tuple(LABELLED_CASES))
        if not (isinstance(self.h, int) and isinstance(self.d, int) and self.h >= self.d >= 10):
            raise ValueError(f"h and d must be integers with h >= d >= 10, got h={self.h!r}, d={self.d!r}")
        if not (isinstance(self.seed, int) and self.seed >= 0):
            raise ValueError(f"seed must be an integer >= 0, got {self.seed!r}")

@dataclass(frozen=True)
class PhaseResult:
    """One labelled matrix: ``eigs`` (the ESD of ``WᵀW/h``), ``scale = h`` and the ``report`` of the raw ESD."""
    eigs: np.ndarray
    scale: float
    report: spectra.SpectrumReport

def run_phase_case(cfg: PhaseCase) -> PhaseResult:
    """Draw the case and analyse its spectrum (:class:`PhaseResult`)."""
    raw = spectra.esd(labelled_matrix(cfg.name, cfg.h, cfg.d, seed=cfg.seed))
    return PhaseResult(eigs=raw / cfg.h, scale=float(cfg.h), report=spectra.analyze_spectrum(raw, cfg.d / cfg.h))

def confusion_counts(cases: Sequence[str], phases: Sequence[Sequence[str]]) -> np.ndarray:
    """Counts ``[case, phase]`` of the labels ``phases[i]`` (one list per case), columns as :data:`spectra.PHASES`."""
    if len(cases) != len(phases):
        raise ValueError(f"cases and phases must have the same length, got {len(cases)} and {len(phases)}")
    out = np.zeros((len(cases), len(spectra.PHASES)), dtype=int)
    for i, labels in enumerate(phases):
        for lab in labels:
            check_choice("phase", lab, tuple(spectra.PHASES))
            out[i, spectra.PHASES.index(lab)] += 1
    return out

def run_examples(setup: Setup) -> dict[str, PhaseResult]:
    """:func:`run_phase_case` of the :data:`EXAMPLES` at ``setup.h x setup.d``, keyed by phase."""
    cfgs = [PhaseCase(n, setup.h, setup.d, setup.seed) for n in EXAMPLES.values()]
    with setup.executor_context() as pool:
        res = run_sweep(run_phase_case, cfgs, executor=pool, progress=False, desc="phase examples")
    return dict(zip(EXAMPLES, res))

@dataclass(frozen=True)
class Confusion:
    """The classifier on every labelled family at one size: labels per seed, counts, agreement."""
    h: int
    d: int
    labels: dict[str, list[str]]
    counts: np.ndarray
    ok: dict[str, bool]
    reports: dict[str, list[spectra.SpectrumReport]]

    @property
    def n_ok(self) -> int:
        """Families whose every label is one of :func:`expected_phases`."""
        return sum(self.ok.values())

    @property
    def n_undecidable(self) -> int:
        """Families for which several labels are accepted at this size."""
        return sum(len(expected_phases(n, self.h, self.d)) > 1 for n in self.labels)

def confusion(h: int, d: int, seeds: Sequence[int], *, executor=None) -> Confusion:
    """Classify every family of :data:`LABELLED_CASES` at ``h x d`` for each seed (``executor=None``: this process)."""
    cfgs = [PhaseCase(n, h, d, s) for n in LABELLED_CASES for s in seeds]
    res = run_sweep(run_phase_case, cfgs, executor=executor, progress=False, desc=f"labelled set {h}x{d}")
    reports = {n: [r.report for c, r in zip(cfgs, res) if c.name == n] for n in LABELLED_CASES}
    labels = {n: [r.phase for r in reps] for n, reps in reports.items()}
    ok = {n: all(x in expected_phases(n, h, d) for x in lab) for n, lab in labels.items()}
    return Confusion(h, d, labels, confusion_counts(list(labels), list(labels.values())), ok, reports)

def run_confusions(setup: Setup) -> tuple[Confusion, Confusion]:
    """The :func:`confusion` at ``h x d`` and at ``small_h x small_d``, on the setup's executor."""
    with setup.executor_context() as pool:
        big = confusion(setup.h, setup.d, range(setup.confusion_seeds), executor=pool)
        small = confusion(setup.small_h, setup.small_d, range(setup.small_seeds), executor=pool)
    return big, small

"""The one judge: a chapter's claims table of :class:`Spec` rows and a :class:`Measurement` per row, through
one list of gates (:func:`judge`), to :class:`~htlib.records.Claim` records.

:func:`read_table` reads a chapter's ``claims.toml``; :func:`judge_table` judges every row and checks the records
(:func:`~htlib.records.check_records`); :func:`combine_verdicts` decides a compound claim from its parts.  The
record type, its rules and its storage in a notebook are in :mod:`htlib.records`, beneath this module; the page
(a chapter's table of records, the scoreboard, the findings box) is in :mod:`htlib.scoreboard`, above it.

Examples
--------
>>> s = Spec("spike", "003", "§4, Fig. 3", "a spike appears", "lambda_max / lambda_+", ">", 1.1, "mean")
>>> c = judge_table([s], {"spike": Measurement([2.5, 2.6, 2.7])})[0]
>>> c.verdict, c.measured
('agrees', 'mean 2.6')
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Mapping, Sequence

from htlib.records import _OPS, KINDS, PAPER_SETTING, PAPERS, REASONS, Claim, Criterion, _fmt, check_records

__all__ = ["Spec", "Measurement", "judge", "judge_table", "read_table", "combine_verdicts", "STATISTICS", "MIN_DRAWS"]

def combine_verdicts(verdicts: Sequence[str]) -> str:
    """A compound criterion's verdict: all agree or all fail decide, a mix of both is "partly", else "inconclusive".

    Examples
    --------
    >>> combine_verdicts(["agrees", "disagrees"]), combine_verdicts(["agrees", "inconclusive"])
    ('partly', 'inconclusive')
    """
    if (v := set(verdicts)) in ({"agrees"}, {"disagrees"}): return v.pop()
    return "partly" if {"agrees", "disagrees"} <= v else "inconclusive"

# The judge: Spec rows (each level written once) and a Measurement per key, through one list of gates.

STATISTICS: tuple[str, ...] = ("mean", "sign", "bootstrap", "value", "parts")
MIN_DRAWS = 100  # the fewest bootstrap refits whose percentile interval the judge reads

_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*\Z")
SHORT_WORDS = 14  # the most words of a row's ``short``: the claim as the findings box states it
_ONE_SIDED = {">": ">", ">=": ">", "<": "<", "<=": "<"}

def _level_value(name: str, level, op: str) -> float | tuple[float, float]:
    if op == "in":
        try:
            low, high = (float(v) for v in level)
        except (TypeError, ValueError):
            raise ValueError(f"{name} of op 'in' must be a pair (low, high), got {level!r}") from None
        if not (math.isfinite(low) and math.isfinite(high) and low <= high):
            raise ValueError(f"{name} of op 'in' must be finite with low <= high, got {level!r}")
        return (low, high)
    try:
        value = float(level)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite number for op {op!r}, got {level!r}") from None
    if not math.isfinite(value): raise ValueError(f"{name} must be a finite number for op {op!r}, got {level!r}")
    return value

@dataclass(frozen=True)
class Spec:
    """One row of a chapter's claims table: what the paper says and the criterion it is judged by.

    ``op="in"`` takes ``level = (low, high)``, ``"=="`` a ``tolerance``.  ``statistic``: ``"mean"`` (Student-t
    interval over runs), ``"sign"`` (exact sign test over runs), ``"bootstrap"`` (percentile interval of one fit),
    ``"value"`` (one exact number) or ``"parts"`` (``op="all"``, ``level=None``: a compound claim's ``parts``).
    ``short`` is the claim in at most :data:`SHORT_WORDS` words, as the chapter's findings box states it beside the
    book's number (the full ``claim`` stays in the claims table).

    Examples
    --------
    >>> s = Spec("spike", "003", "§4, Fig. 3", "a spike appears at eta = 1", "lambda_max / lambda_+",
    ...          ">", 1.1, "mean")
    >>> s.criterion, s.counted
    ('lambda_max / lambda_+ > 1.1', True)
    """
    key: str
    paper: str
    where: str
    claim: str
    measurement: str
    op: str
    level: float | tuple[float, float]
    statistic: str
    kind: str = "claim"
    variant_of: str = ""
    section: str = ""
    setting: str = PAPER_SETTING
    revised_from: float | tuple[float, float] | None = None
    revised_because: str = ""
    min_runs: int = 3
    fmt: str = ".3g"
    tolerance: float | None = None
    confidence: float = 0.95
    why: str = ""
    parts: tuple["Spec", ...] = ()
    share: float = 0.5
    margin: float | None = None
    short: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not _KEY.match(self.key):
            raise ValueError(f"key must be a name of letters, digits, '_' and '-' (it names glue keys), got {self.key!r}")
        if self.paper not in PAPERS: raise ValueError(f"paper must be one of {sorted(PAPERS)}, got {self.paper!r}")
        for name in ("where", "claim", "measurement", "setting"):
            if not str(getattr(self, name)).strip(): raise ValueError(f"{name} must not be empty (spec {self.key!r})")
        if self.statistic not in STATISTICS:
            raise ValueError(f"statistic must be one of {list(STATISTICS)}, got {self.statistic!r}")
        if not isinstance(self.short, str) or "\n" in self.short or "…" in self.short \
                or len(self.short.split()) > SHORT_WORDS or self.short.rstrip().endswith("."):
            raise ValueError(f"short must be the claim in at most {SHORT_WORDS} words on one line, without '…' or a "
                             f"closing period (spec {self.key!r}), got {self.short!r}")
        if self.kind not in KINDS: raise ValueError(f"kind must be one of {list(KINDS)}, got {self.kind!r}")
        object.__setattr__(self, "parts", tuple(self.parts))
        if str(self.why).strip() and self.kind != "check":
            raise ValueError(f"why (the reason an identity cannot fail) is for kind 'check' only (spec {self.key!r})")
        if (self.statistic == "parts") != bool(self.parts) or (self.statistic == "parts") != (self.op == "all"):
            raise ValueError(f"statistic 'parts', op 'all' and a non-empty parts go together (spec {self.key!r})")
        if self.statistic == "parts":
            if self.level is not None or self.revised_from is not None:
                raise ValueError(f"a compound claim's levels are its parts' (level=None; spec {self.key!r})")
            for part in self.parts:
                if not isinstance(part, Spec) or part.statistic == "parts":
                    raise ValueError(f"each part of {self.key!r} must be a Spec that is not itself compound, got {part!r}")
            if sum(bool(str(p.revised_because).strip()) for p in [self, *self.parts]) > 1:
                raise ValueError(f"at most one part of {self.key!r} may have a revised level (the record keeps one "
                                 "earlier level); split the claim")
            names = [p.key for p in self.parts]
            if len(set(names)) != len(names):
                raise ValueError(f"the parts of {self.key!r} need distinct keys, got {names}")
        else:
            if self.op not in (*_OPS, "=="): raise ValueError(f"op must be one of {[*_OPS, '==']}, got {self.op!r}")
            if (self.op == "==") != (self.tolerance is not None) or (self.op == "==" and self.statistic != "value"):
                raise ValueError(f"op '==' and tolerance go together, for statistic 'value' only (spec {self.key!r})")
            if self.statistic == "sign" and self.op not in _ONE_SIDED:
                raise ValueError(f"statistic 'sign' tests a direction: op must be one of {list(_ONE_SIDED)}, "
                                 f"got {self.op!r}")
            object.__setattr__(self, "level", _level_value("level", self.level, self.op))
        if self.statistic != "sign" and (self.share != 0.5 or self.margin is not None):
            raise ValueError(f"share and margin are for statistic 'sign' only (spec {self.key!r})")
        if self.statistic == "sign":
            from htlib.stats import _shares
            share, margin = _shares(self.share, self.margin)
            object.__setattr__(self, "share", share)
            object.__setattr__(self, "margin", None if self.margin is None else margin)
        if self.revised_from is not None:
            object.__setattr__(self, "revised_from", _level_value("revised_from", self.revised_from, self.op))
            if self.revised_from == self.level:
                raise ValueError(f"revised_from must differ from level, both are {self.level!r}")
        if self.revised_from is not None and not str(self.revised_because).strip():
            raise ValueError("revised_from (the level before the numbers were seen) needs revised_because (why it "
                             f"changed) (spec {self.key!r})")
        if self.kind == "variant":
            if not self.variant_of or self.variant_of == self.key:
                raise ValueError(f"a 'variant' needs variant_of: the key of another claim (spec {self.key!r})")
        elif self.variant_of:
            raise ValueError(f"variant_of is for kind 'variant' only, got kind {self.kind!r} (spec {self.key!r})")
        if isinstance(self.min_runs, bool) or not isinstance(self.min_runs, int) or self.min_runs < 3:
            raise ValueError(f"min_runs must be an integer >= 3 (no verdict rests on 2 runs), got {self.min_runs!r}")
        try:
            format(1.0, self.fmt)
        except (TypeError, ValueError):
            raise ValueError(f"fmt must be a format spec for a float such as '.3g', got {self.fmt!r}") from None
        if self.tolerance is not None:
            tol = float(self.tolerance)
            if not (math.isfinite(tol) and tol >= 0):
                raise ValueError(f"tolerance must be a finite number >= 0, got {self.tolerance!r}")
            object.__setattr__(self, "tolerance", tol)
        if not 0.0 < float(self.confidence) < 1.0:
            raise ValueError(f"confidence must lie in (0, 1), got {self.confidence!r}")

    def formatted(self, value) -> str:
        return _fmt(value, self.fmt)

    def criterion_at(self, level) -> str:
        if self.statistic == "parts":
            return " and ".join(p.criterion for p in self.parts)
        if self.op == "==":
            return f"{self.measurement} = {self.formatted(level)} ± {self.tolerance:.2g}"
        text = Criterion(self.measurement, self.op, level, self.fmt).text
        if self.statistic == "sign" and (self.share, self.margin) != (0.5, None):
            text += (f" on more than a share {self.margin_share:g} of runs (a share {self.share:g} under the "
                     "claim)")
        return text

    @property
    def margin_share(self) -> float:
        """The share of runs a sign test's count must beat (the claim's own share unless a margin is set)."""
        return self.share if self.margin is None else self.margin

    @property
    def criterion(self) -> str:
        return self.criterion_at(self.level)

    @property
    def counted(self) -> bool:
        return self.kind == "claim"

def _floats(name: str, x) -> tuple[float, ...]:
    import numpy as np
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 1-D sequence of numbers, got {x!r}") from None
    if a.ndim == 0: a = a[None]  # a single fit estimate given as a number
    if a.ndim != 1: raise ValueError(f"{name} must be 1-D (one value per run), got shape {a.shape}")
    return tuple(a.tolist())

@dataclass(frozen=True)
class Measurement:
    """What a chapter read for one :class:`Spec`: a value per run (or a fit and its bootstrap ``draws``), or why
    it was not run or ``cannot_test``.  A non-finite value (a diverged run, a failed fit) is kept: the judge gates it.
    Where some runs' fits sit at a search bound (``bounded``: or what else bounds them), ``bound_cases`` holds the values
    the runs could take instead (one tuple per case), and a mean or sign statistic decides only where every case agrees."""
    values: tuple[float, ...] = ()
    draws: tuple[float, ...] = ()
    ran: bool = True
    not_run_reason: str = ""
    cannot_test: str = ""
    runs_text: str = ""
    note: str = ""
    reduction_check: str = ""
    setting: str = ""
    parts: Mapping[str, "Measurement"] = dataclasses.field(default_factory=dict)
    deviations: tuple[str, ...] | None = None
    why: str = ""  # with not_run_reason or cannot_test: a code of records.REASONS, filled from why_numbers
    why_numbers: Mapping[str, object] = dataclasses.field(default_factory=dict)
    bound_cases: tuple[tuple[float, ...], ...] = ()
    bounded: str = "its fits at a search bound"  # what gives the values of ``bound_cases``, as the cause names it
    fresh: str = ""  # a post-hoc row's runs, where every one was made after its criterion was fixed

    def __post_init__(self) -> None:
        object.__setattr__(self, "why_numbers", dict(self.why_numbers))
        if self.why:
            if self.why not in REASONS:
                raise ValueError(f"why must be one of {list(REASONS)}, got {self.why!r}")
            if not (self.not_run_reason.strip() or self.cannot_test.strip()):
                raise ValueError(f"why={self.why!r} goes with not_run_reason or cannot_test, which are empty")
            try:
                REASONS[self.why].format(**self.why_numbers)
            except KeyError as exc:
                raise ValueError(f"why={self.why!r} needs why_numbers {exc}: {REASONS[self.why]!r}") from None
        object.__setattr__(self, "values", _floats("values", self.values))
        object.__setattr__(self, "bound_cases", tuple(_floats("bound_cases", c) for c in self.bound_cases))
        if any(len(c) != len(self.values) for c in self.bound_cases):
            raise ValueError("bound_cases must each hold one value per run, as values does")
        object.__setattr__(self, "parts", dict(self.parts))
        if self.deviations is not None:
            if isinstance(self.deviations, str) or not all(isinstance(d, str) and d.strip() for d in self.deviations):
                raise ValueError("deviations must be a sequence of the parameter names that differ from the "
                                 f"paper's (empty: none), got {self.deviations!r}")
            object.__setattr__(self, "deviations", tuple(self.deviations))
        if any(not isinstance(v, Measurement) for v in self.parts.values()):
            raise ValueError("parts must map part keys to Measurement objects")
        object.__setattr__(self, "draws", _floats("draws", self.draws))
        if not isinstance(self.ran, bool): raise ValueError(f"ran must be True or False, got {self.ran!r}")
        if self.ran == bool(self.not_run_reason.strip()): raise ValueError(
            f"not_run_reason is required with ran=False and only then (ran={self.ran}, not_run_reason={self.not_run_reason!r})")
        if self.ran and not self.cannot_test.strip() and not self.parts:
            if not self.values:
                raise ValueError("values must not be empty for a measurement that ran (else set cannot_test or ran=False)")
            if bad := [i for i, v in enumerate(self.draws) if not math.isfinite(v)]:  # runs' are the judge's gate
                raise ValueError(f"draws holds non-finite entries at {bad}: drop the failed refits, say so in note")

    @classmethod
    def not_run(cls, reason: str, why: str = "", **why_numbers) -> "Measurement":
        return cls(ran=False, not_run_reason=reason, why=why, why_numbers=why_numbers)

    def _why(self) -> dict:  # the reading's short reason, where the chapter gave one
        return {"why": self.why, "why_numbers": dict(self.why_numbers)} if self.why else {}

def _runs(spec: Spec, m: Measurement) -> str:
    return m.runs_text.strip() or {"bootstrap": "one fit", "value": "one exact evaluation"}.get(
        spec.statistic, f"{len(m.values)} run{'s' if len(m.values) != 1 else ''}")

_SIDE = {"agrees": "lies entirely where {crit} holds", "disagrees": "lies entirely where {crit} fails",
         "inconclusive": "straddles the level of {crit}"}
_CHOSEN = "; the criterion was chosen after the numbers were seen ({}), so this verdict is not out of sample"
_FRESH = ("; the criterion was chosen after earlier numbers were seen ({}); {} were all run after it was fixed, so the "
          "verdict is out of sample for them, and the row is still counted apart")

def _num(x, fmt: str) -> float | None:
    """``x`` as printed by ``fmt`` (the record's text and its fields agree, and nbval compares them as text)."""
    if x is None or not math.isfinite(x): return None
    try:
        return float(format(x, fmt))
    except ValueError:  # a format that does not print a plain number
        return float(f"{x:.4g}")

def _reading(spec: Spec, level, verdict: str, estimate=None, low=None, high=None, runs=None, count=None) -> dict:
    """The numbers behind one verdict, as fields (a record's ``readings``): what the page words a finding from."""
    return {"part": "", "measurement": spec.measurement, "statistic": spec.statistic, "op": spec.op,
            "level": list(level) if isinstance(level, tuple) else level, "fmt": spec.fmt, "verdict": verdict,
            "estimate": _num(estimate, spec.fmt), "low": _num(low, spec.fmt), "high": _num(high, spec.fmt), "runs": runs, "count": count,
            "gate": "", "reason": "", "first_level": None, "first_verdict": None, "unit": ""}

def _read(spec: Spec, m: Measurement, level) -> tuple[str, str, str, str, dict]:
    """The statistic of ``spec`` at ``level``: ``(verdict, cause, measured, uncertainty, reading)``."""
    from htlib import stats
    crit = spec.criterion_at(level)
    conf = f"{spec.confidence:.0%}"
    alpha = 1.0 - spec.confidence
    if spec.statistic in ("mean", "bootstrap"):
        if spec.statistic == "mean":
            iv = stats.t_interval(m.values, spec.confidence, drop_nonfinite=True)
            what, over = f"{conf} Student-t interval of the mean", f" over {iv.n} runs"
            measured = f"mean {spec.formatted(iv.estimate)}"
        else:
            if len(m.values) != 1:
                raise ValueError(f"statistic 'bootstrap' reads one fit estimate, got {len(m.values)} values "
                                 f"(spec {spec.key!r})")
            iv = stats.bootstrap_interval(m.values[0], m.draws, spec.confidence, drop_nonfinite=True)
            what, over = f"{conf} parametric-bootstrap percentile interval", f" of {iv.n} refits"
            measured = spec.formatted(iv.estimate)
        # one run has no spread: say so rather than print an interval of NaN
        ci = spec.formatted((iv.low, iv.high)) if math.isfinite(iv.low) and math.isfinite(iv.high) else "none (one run)"
        verdict = Criterion(spec.measurement, spec.op, level, spec.fmt).judge(iv.estimate, (iv.low, iv.high))
        cause = f"the {what}{over}, {ci}, " + _SIDE[verdict].format(crit=crit)
        reading = _reading(spec, level, verdict, iv.estimate, iv.low, iv.high, iv.n)
        reading["unit"] = m.runs_text.strip()  # what the runs are, where the chapter says ("3 image subsets")
        return verdict, cause, measured, f"{_runs(spec, m)}; {what} {ci}", reading
    if spec.statistic == "sign":
        t = stats.sign_test(m.values, _ONE_SIDED[spec.op], level, spec.confidence, share=spec.share,
                            margin=spec.margin, drop_nonfinite=True)
        ties = len(m.values) - t.n
        counted = f"{t.k} of {t.n} runs have {spec.measurement} {t.direction} {spec.formatted(level)}"
        plain = (t.share, t.margin) == (0.5, 0.5)  # the sign test of the median's side
        test = "exact sign test" if plain else "exact binomial test"
        against = "" if plain else f" against a share {t.margin:g}"
        opposite = "for the opposite direction" if plain else f"against the share {t.share:g} the claim gives"
        if t.p < alpha:
            verdict, cause = "agrees", f"{counted}: {test}{against}, one-sided p = {t.p:.2g} < {alpha:.2g}"
        elif t.p_opposite < alpha:
            verdict, cause = "disagrees", (f"only {counted}: {test}, p = {t.p_opposite:.2g} < {alpha:.2g} "
                                           f"{opposite}")
        elif plain:
            verdict, cause = "inconclusive", (f"{counted}, and the exact sign test decides neither direction "
                                              f"(p = {t.p:.2g} and {t.p_opposite:.2g}, not below {alpha:.2g})")
        else:
            verdict, cause = "inconclusive", (f"{counted}, and the {test} decides neither way (p = {t.p:.2g}"
                                              f"{against}, {t.p_opposite:.2g} {opposite}; neither below "
                                              f"{alpha:.2g})")
        uncertainty = (f"{_runs(spec, m)}; {test}{against}, one-sided p = {t.p:.2g} "
                       f"({'opposite direction' if plain else opposite} {t.p_opposite:.2g})"
                       + (f", {ties} ties dropped" if ties else ""))
        return (verdict, cause, f"{t.k} of {t.n} {t.direction} {spec.formatted(level)}", uncertainty,
                _reading(spec, level, verdict, runs=t.n, count=t.k))
    # "value": a check of an identity or closed form, one exact number
    if len(m.values) != 1:
        raise ValueError(f"statistic 'value' reads one number, got {len(m.values)} values (spec {spec.key!r})")
    x = m.values[0]
    if spec.op == "==":
        dev = abs(x - level)
        ok = dev <= spec.tolerance
        cause = (f"|{spec.measurement} - {spec.formatted(level)}| = {dev:.2g} "
                 f"{'<=' if ok else '>'} the tolerance {spec.tolerance:.2g}")
    else:
        ok = Criterion(spec.measurement, spec.op, level, spec.fmt).holds(x)
        cause = f"{spec.measurement} = {spec.formatted(x)} {'satisfies' if ok else 'fails'} {crit}"
    verdict = "agrees" if ok else "disagrees"
    return verdict, cause, spec.formatted(x), _runs(spec, m), _reading(spec, level, verdict, x, runs=1)

GATES: dict[str, str] = {
    "not_run": "not run", "cannot_test": "the setting cannot test it", "too_few_runs": "too few independent runs",
    "too_few_draws": "too few bootstrap refits", "reduced": "a failure at a reduced setting that no measurement rules out",
    "nonfinite": "runs with no finite value"}
"""The judge's gates, by the code a reading carries in ``gate`` (its ``reason`` holds the chapter's numbers)."""

def _assess(spec: Spec, m: Measurement) -> tuple[str, str, str, str, list[dict]]:
    """``(verdict, cause, measured, uncertainty, readings)`` from the first gate of :data:`GATES` that applies: not
    run; cannot test; too few runs or refits; else :func:`_read` ("inconclusive" for a failure at a reduced setting,
    no ``reduction_check``)."""
    if not m.ran:
        r = _reading(spec, spec.level, "not tested")
        r.update(gate="not_run", reason=m.not_run_reason.strip(), **m._why())
        return "not tested", f"not run: {m.not_run_reason.strip()}", "", "", [r]
    n, gate, code = len(m.values), "", ""
    if m.cannot_test.strip():
        gate, code = f"the setting cannot test it: {m.cannot_test.strip()}", "cannot_test"
    elif bad := sum(not math.isfinite(v) for v in m.values):  # dropping them would choose the runs by their outcome
        gate, code = f"{bad} of {n} runs give no finite value (a diverged run or a failed fit), none left out", "nonfinite"
    elif spec.statistic in ("mean", "sign") and n < spec.min_runs:
        gate, code = (f"too few independent runs: {n} ({_runs(spec, m)}) where the criterion needs at least "
                      f"{spec.min_runs}"), "too_few_runs"
    elif spec.statistic == "bootstrap" and len(m.draws) < MIN_DRAWS:
        gate, code = (f"too few bootstrap refits: {len(m.draws)} where the percentile interval needs at least "
                      f"{MIN_DRAWS}"), "too_few_draws"
    if spec.statistic == "parts":
        verdict, cause, measured, uncertainty, readings = _assess_parts(spec, m)
        if gate:
            verdict, cause = "inconclusive", gate
            readings = [dict(_reading(spec, None, verdict), gate=code, reason=m.cannot_test.strip(), **m._why())]
    elif gate:
        verdict, cause = "inconclusive", gate
        try:
            measured, uncertainty, reading = _read(spec, m, spec.level)[2:]
        except ValueError:  # nothing finite to show
            measured, uncertainty, reading = "no usable value", _runs(spec, m), _reading(spec, spec.level, "")
        reading.update(verdict=verdict, gate=code, reason=m.cannot_test.strip() if code == "cannot_test" else "",
                       **(m._why() if code == "cannot_test" else {"why": "nonfinite", "why_numbers": {"k": bad, "n": n}}
                          if code == "nonfinite" else {}))
        readings = [reading]
    else:
        verdict, cause, measured, uncertainty, reading = _read(spec, m, spec.level)
        if m.bound_cases:
            got = [_read(spec, dataclasses.replace(m, values=c, bound_cases=()), spec.level)[0] for c in m.bound_cases]
            cause += (f"; the same in {'the one case' if len(got) == 1 else f'each of the {len(got)} cases'} that {m.bounded} could take" if set(got) == {verdict}
                      else f"; but {m.bounded} decide it: of the {len(got)} cases they could take, "
                      + ", ".join(f"{got.count(v)} {v}" for v in dict.fromkeys(got)))
            verdict = reading["verdict"] = verdict if set(got) == {verdict} else "inconclusive"
        setting = m.setting.strip() or spec.setting
        if (verdict == "disagrees" and not _at_paper(spec, m) and spec.kind == "claim"
                and not m.reduction_check.strip()):
            verdict, cause = "inconclusive", (f"{cause}, but at a reduced setting ({setting}) that may explain it "
                                              "and that no measurement rules out")
            reading.update(verdict=verdict, gate="reduced", reason=setting)
        if spec.revised_from is not None:
            before = _read(spec, m, spec.revised_from)[0]
            cause += (f"; {'agrees only' if verdict == 'agrees' else 'judged'} at the level "
                      f"{spec.formatted(spec.level)}, revised after the numbers were seen from "
                      f"{spec.formatted(spec.revised_from)} ({spec.revised_because.strip()}); at "
                      f"{spec.formatted(spec.revised_from)} it would read {before}")
            reading.update(first_level=list(spec.revised_from) if isinstance(spec.revised_from, tuple)
                           else spec.revised_from, first_verdict=before)
        readings = [reading]
    # A criterion chosen after the numbers is said whichever gate decided the verdict.
    if spec.revised_because.strip() and spec.revised_from is None:
        cause += (_FRESH.format(spec.revised_because.strip(), m.fresh.strip()) if m.fresh.strip()
                  else _CHOSEN.format(spec.revised_because.strip()))
    if m.note.strip():
        uncertainty = f"{uncertainty}; {m.note.strip()}" if uncertainty else m.note.strip()
    return verdict, cause, measured, uncertainty, readings

def _assess_parts(spec: Spec, m: Measurement) -> tuple[str, str, str, str, list[dict]]:
    """A compound claim: each part through :func:`_assess`, combined by :func:`combine_verdicts`."""
    if m.cannot_test.strip() and not m.parts:
        return "inconclusive", "", "no usable value", "", []
    missing = sorted({p.key for p in spec.parts} - set(m.parts))
    extra = sorted(set(m.parts) - {p.key for p in spec.parts})
    if missing or extra:
        raise ValueError(f"compound claim {spec.key!r}: parts missing a measurement {missing}, measurements "
                         f"of no part {extra}")
    read = []
    for part in spec.parts:
        pm = m.parts[part.key]
        pm = dataclasses.replace(pm, setting=pm.setting.strip() or m.setting.strip() or spec.setting,
                                 reduction_check=pm.reduction_check.strip() or m.reduction_check.strip(),
                                 deviations=m.deviations if pm.deviations is None else pm.deviations)
        read.append((part, _assess(part, pm)))
    verdicts = [v for _, (v, *_rest) in read]
    verdict = ("not tested" if set(verdicts) == {"not tested"} else
               combine_verdicts(["inconclusive" if v == "not tested" else v for v in verdicts]))
    cause = "; ".join(f"{p.criterion}: {v}" + (f" ({c})" if v != "agrees" or p.revised_because.strip() else "")
                      for p, (v, c, *_rest) in read)
    measured = "; ".join(f"{p.measurement}: {x}" for p, (_, _, x, *_rest) in read if x)
    uncertainty = "; ".join(f"{p.measurement}: {u}" for p, (_, _, _, u, _r) in read if u)
    readings = [dict(r, part=p.key) for p, (*_rest, rs) in read for r in rs]
    return verdict, cause, measured, uncertainty, readings

def _at_paper(spec: Spec, m: Measurement) -> bool:
    """At the paper's setting: no parameter differs from the paper's, where the chapter compared them
    (``m.deviations``), else the setting its comparison wrote."""
    if m.deviations is not None: return not m.deviations
    return (m.setting.strip() or spec.setting).strip() == PAPER_SETTING

def judge(spec: Spec, measurement: Measurement) -> Claim:
    """The record of ``spec`` judged on ``measurement`` (the gates are :func:`_assess`'s).

    Examples
    --------
    >>> s = Spec("spike", "003", "§4, Fig. 3", "a spike appears", "lambda_max / lambda_+", ">", 1.1, "mean")
    >>> judge(s, Measurement([2.5, 2.6, 2.7])).verdict
    'agrees'
    >>> judge(s, Measurement([2.5, 2.6])).verdict
    'inconclusive'
    >>> judge(s, Measurement.not_run("needs the paper's width; make paper runs it")).verdict
    'not tested'
    """
    if not isinstance(spec, Spec) or not isinstance(measurement, Measurement):
        raise TypeError(f"judge takes a Spec and a Measurement, got {type(spec).__name__} and "
                        f"{type(measurement).__name__}")
    verdict, cause, measured, uncertainty, readings = _assess(spec, measurement)
    if spec.why.strip():
        cause = f"holds by algebra: {spec.why.strip()}; {cause}"
    # A compound claim's record keeps the one revised part's earlier level, naming the part.
    revised = spec if spec.revised_because.strip() else next((p for p in spec.parts if p.revised_because.strip()), None)
    revised_because = "" if revised is None else (
        revised.revised_because.strip() if revised is spec else f"{revised.measurement}: {revised.revised_because.strip()}")
    return Claim(paper=spec.paper, where=spec.where, claim=spec.claim, criterion=spec.criterion,
                 measured=measured, verdict=verdict, setting=measurement.setting.strip() or spec.setting,
                 uncertainty=uncertainty, cause=cause, section=spec.section, key=spec.key,
                 variant_of=spec.variant_of, threshold=spec.level, reduction_check=measurement.reduction_check.strip(),
                 kind=spec.kind, revised_from=None if revised is None else revised.revised_from,
                 revised_because=revised_because,
                 at_paper=None if measurement.deviations is None else not measurement.deviations,
                 readings=readings, short=spec.short.strip())

def read_table(path: str | Path) -> dict[str, Spec]:
    """A chapter's claims table, read from its TOML file: the specs by key, in the file's order.

    ``[defaults]`` holds fields every ``[[row]]`` (a :class:`Spec`) shares; a compound claim's ``[[row.parts]]``
    inherit the row's other fields (not a revision) and are keyed ``<row key>-<part key>``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> text = '''
    ... [defaults]
    ... paper = "003"
    ... [[row]]
    ... key = "spike"
    ... where = "§4"
    ... claim = "a spike appears"
    ... measurement = "ratio"
    ... op = ">"
    ... level = 1.1
    ... statistic = "mean"
    ... '''
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = pathlib.Path(d) / "claims.toml"
    ...     _ = f.write_text(text, encoding="utf-8")
    ...     table = read_table(f)
    >>> table["spike"].criterion
    'ratio > 1.1'
    """
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    path = Path(path)
    with path.open("rb") as fh:
        data = tomllib.load(fh)
    if unknown := sorted(set(data) - {"defaults", "row"}):
        raise ValueError(f"{path}: a claims table holds [defaults] and [[row]] only, got {unknown}")
    names = {f.name for f in fields(Spec)}

    def spec(row: dict, where: str) -> Spec:
        if bad := sorted(set(row) - names):
            raise ValueError(f"{path}: {where} has fields that are not Spec fields: {bad}; allowed: {sorted(names)}")
        row = {k: (tuple(v) if isinstance(v, list) and k in ("level", "revised_from") else v) for k, v in row.items()}
        if row.get("statistic") == "parts":
            row.setdefault("op", "all")
            row.setdefault("level", None)
        try:
            return Spec(**row)
        except TypeError as err:
            raise ValueError(f"{path}: {where}: {err}") from None

    table: dict[str, Spec] = {}
    defaults = dict(data.get("defaults", {}))
    for i, raw in enumerate(data.get("row", [])):
        row = {**defaults, **raw}
        parts = row.pop("parts", [])
        if parts:
            shared = {k: v for k, v in row.items() if k not in ("key", "statistic", "op", "level", "measurement",
                                                                 "fmt", "tolerance", "min_runs", "revised_from",
                                                                 "revised_because", "share", "margin", "short")}
            row["parts"] = tuple(spec({**shared, **p, "key": f"{row.get('key')}-{p.get('key')}"},
                                      f"row {i + 1}, part {j + 1}") for j, p in enumerate(parts))
        if row.get("parts"):
            row.setdefault("measurement", " and ".join(p.measurement for p in row["parts"]))
        s = spec(row, f"row {i + 1} ({row.get('key')!r})")
        if s.key in table: raise ValueError(f"{path}: key {s.key!r} appears twice")
        table[s.key] = s
    return table

def judge_table(specs: Sequence[Spec] | Mapping[str, Spec], measurements: dict[str, Measurement]) -> list[Claim]:
    """Every spec judged on its measurement (keyed by spec key); the records must pass :func:`check_records`."""
    specs = list(specs.values()) if isinstance(specs, Mapping) else specs
    keys = [s.key for s in specs]
    missing = [k for k in keys if k not in measurements]
    extra = sorted(set(measurements) - set(keys))
    if missing or extra:
        raise ValueError(f"every spec needs one measurement: missing for {missing}, no spec for {extra}")
    claims = [judge(s, measurements[s.key]) for s in specs]
    check_records(claims)
    return claims

# The chapters (book/*.ipynb) import these page and glue names from htlib.claims: looked up here on first use,
# so that importing the judge imports neither the page (htlib.scoreboard) nor the notebook tools.
_NOTEBOOK_NAMES = {
    "records": ("glue_claims", "glue_figure", "glue_text"),
    "scoreboard": ("checks_frame", "robustness_frame", "glue_findings", "publish_claims", "scoreboard", "glue_counts",
                   "counts", "differences", "variants", "checks", "revisions", "split_counts_table",
                   "write_claims_dataset"),
}

def __getattr__(name: str):
    for module, names in _NOTEBOOK_NAMES.items():
        if name in names:
            return getattr(__import__(f"htlib.{module}", fromlist=[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

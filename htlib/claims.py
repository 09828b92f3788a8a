"""Claims of the papers next to the book's measurements: one record type, one table, one scoreboard feed.

Owns: :class:`Claim` (a paper's statement, the criterion fixed before looking at the numbers,
the measured value and the verdict), :func:`claims_frame` (the one table every chapter ends with),
:func:`publish_claims` (displays that table and stores the records in the executed notebook, where the
scoreboard page reads them back with :func:`read_claims`), and :func:`glue_text` (formats a number
before it goes into the prose, so a rerun with other parameters states its own numbers).

Nothing here knows a paper's number: the chapters and their experiment code build the records.
"""

from __future__ import annotations

import dataclasses
import html as _html
import json
import math
import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Iterable, Literal, Mapping, Sequence

__all__ = [
    "Spec", "Measurement", "judge", "judge_table", "read_table", "claim_glue", "glue_claims", "KINDS", "STATISTICS",
    "combine_verdicts",
    "SeedInterval", "seed_interval",
    "Claim",
    "Criterion",
    "check_records",
    "where_key",
    "VERDICTS",
    "DIFFERENCES",
    "PAPER_SETTING",
    "PAPERS",
    "CLAIMS_GLUE_KEY",
    "claims_frame",
    "counts_table",
    "publish_claims",
    "read_claims",
    "glue_text",
    "glue_figure",
    "verdict_counts",
    "collect_claims",
    "paper_counts",
    "Scoreboard",
    "scoreboard",
    "glue_counts",
    "split_counts_table",
    "differences",
    "variants",
    "checks",
    "revisions",
    "checks_frame",
    "robustness_frame",
    "GluedText",
]

Verdict = Literal["agrees", "partly", "disagrees", "inconclusive", "not tested"]
VERDICTS: tuple[str, ...] = ("agrees", "partly", "disagrees", "inconclusive", "not tested")
"""The five verdicts, in the order the scoreboard counts them."""

DIFFERENCES: tuple[str, ...] = ("disagrees", "partly", "inconclusive")
"""The verdicts the scoreboard lists first, under "Where the book and the papers differ"."""

PAPER_SETTING = "paper"
"""The ``setting`` of a claim measured at the paper's own protocol; anything else lists the deviations."""

PAPERS: dict[str, str] = {
    "001": "Models of heavy-tailed mechanistic universality (Hodgkinson, Wang, Mahoney)",
    "003": "From spikes to heavy tails (Kothapalli, Pang, Deng, Liu, Yang)",
    "004": "How the Hessian spectrum of linear networks depends on data (authors not given in the text we have)",
    "MM21": "Martin & Mahoney (JMLR 2021): the 5+1 phases",
    "MP": "Marchenko-Pastur baseline",
}
"""Short keys of the sources whose claims the book checks."""

SCOREBOARD_ORDER: tuple[str, ...] = ("003", "001", "004", "MM21", "MP")
"""The order of the papers on the scoreboard (the three papers first, then the baselines)."""

CLAIMS_MIME = "text/x-htlib-claims+json"
"""The MIME type that carries the records (JSON text) in a notebook's outputs."""

CLAIMS_GLUE_KEY = "claims_records"
"""Name under which :func:`publish_claims` stores the records in a notebook's outputs."""

_OPS = {
    "<": lambda x, t: x < t,
    "<=": lambda x, t: x <= t,
    ">": lambda x, t: x > t,
    ">=": lambda x, t: x >= t,
    "in": lambda x, t: t[0] <= x <= t[1],
}


@dataclass(frozen=True)
class Criterion:
    """A test fixed before looking at the numbers: ``statistic op threshold``, with the threshold as data.

    The criterion text of a :class:`Claim`, the code that judges it and any prose that quotes the
    threshold all read :attr:`threshold`, so the number is written once.

    Parameters
    ----------
    statistic : str
        What is read, in words (e.g. "seed-median lambda_max / lambda_+ at eta=1").
    op : {"<", "<=", ">", ">=", "in"}
        The comparison; ``"in"`` takes a closed interval ``(low, high)`` as threshold.
    threshold : float or (float, float)
        The value the statistic is compared with.
    fmt : str, optional
        Format spec of the threshold in :attr:`text`.

    Examples
    --------
    >>> c = Criterion("slope", "<", 0.1)
    >>> c.text
    'slope < 0.1'
    >>> c.judge(0.05), c.judge(0.05, (0.02, 0.08)), c.judge(0.05, (0.02, 0.3))
    ('agrees', 'agrees', 'inconclusive')
    >>> Criterion("steps", "in", (10 / 3, 30)).judge(40, (35, 50))
    'disagrees'
    """

    statistic: str
    op: Literal["<", "<=", ">", ">=", "in"]
    threshold: float | tuple[float, float]
    fmt: str = ".3g"

    def __post_init__(self) -> None:
        if not str(self.statistic).strip():
            raise ValueError("statistic must not be empty")
        if self.op not in _OPS:
            raise ValueError(f"op must be one of {list(_OPS)}, got {self.op!r}")
        if self.op == "in":
            low, high = (float(v) for v in self.threshold)
            if not (math.isfinite(low) and math.isfinite(high) and low <= high):
                raise ValueError(f"threshold of 'in' must be a finite (low, high) with low <= high, got {self.threshold!r}")
            object.__setattr__(self, "threshold", (low, high))
        else:
            value = float(self.threshold)
            if not math.isfinite(value):
                raise ValueError(f"threshold must be finite, got {self.threshold!r}")
            object.__setattr__(self, "threshold", value)

    @property
    def text(self) -> str:
        if self.op == "in":
            low, high = self.threshold
            return f"{self.statistic} in [{format(low, self.fmt)}, {format(high, self.fmt)}]"
        return f"{self.statistic} {self.op} {format(self.threshold, self.fmt)}"

    def holds(self, value: float) -> bool:
        """Whether ``value`` satisfies the criterion (NaN never does)."""
        value = float(value)
        return bool(math.isfinite(value) and _OPS[self.op](value, self.threshold))

    def judge(self, value: float, interval: tuple[float, float] | None = None) -> str:
        """``"agrees"``, ``"disagrees"`` or ``"inconclusive"`` for a measured value and its interval.

        Without an interval the point value decides.  With one, the criterion must hold (or fail) over
        the whole interval; an interval that straddles the threshold, or a non-finite value, gives
        ``"inconclusive"``.
        """
        if not math.isfinite(float(value)):
            return "inconclusive"
        if interval is None:
            return "agrees" if self.holds(value) else "disagrees"
        low, high = sorted(float(v) for v in interval)
        if not (math.isfinite(low) and math.isfinite(high)):
            return "inconclusive"
        if self.op == "in":
            t_low, t_high = self.threshold
            if t_low <= low and high <= t_high:
                return "agrees"
            if high < t_low or low > t_high:
                return "disagrees"
            return "inconclusive"
        ends = (self.holds(low), self.holds(high))
        if all(ends):
            return "agrees"
        if not any(ends):
            return "disagrees"
        return "inconclusive"



@dataclass(frozen=True)
class Claim:
    """One claim of a paper and what the book measured for it.

    The record carries what a reader needs to weigh the verdict: the setting it was measured in,
    the uncertainty of the statistic the criterion reads, and for anything but "agrees" the cause.

    The verdict rules (enforced here where a constructor can enforce them):

    * ``"agrees"``: the criterion holds, over the statistic's interval where it has one.
    * ``"partly"``: some parts of a compound claim hold and others do not; ``cause`` says which.
    * ``"disagrees"``: the criterion fails with its interval excluding the claim, and the cause is
      established.  The setting must be the paper's, or ``reduction_check`` must name the
      measurement showing that the reduced setting does not explain the failure.
    * ``"inconclusive"``: the setting cannot test the claim (the network has not left its
      initialisation, the run has not converged, the interval straddles the threshold, the
      statistic has too few points); ``cause`` says which.
    * ``"not tested"``: the book does not measure it; ``cause`` says why (cost, missing data).

    A *variant* (another readout convention, another fit, another whitening) is a record with
    ``variant_of`` set to the ``key`` of the claim it varies: it goes into the chapter's
    robustness table and is never counted.

    Parameters
    ----------
    paper : str
        Key of the source, one of :data:`PAPERS` (``"003"``, ``"001"``, ``"004"``, ...).
    where : str
        Section or figure of the paper, e.g. ``"§4, Fig. 3"``; the scoreboard orders rows by it.
    claim : str
        The claim, in the paper's words where possible.
    criterion : str or Criterion
        The test, fixed before looking at the numbers.  A :class:`Criterion` is stored as its
        text, with its threshold in ``threshold``.
    measured : str
        The measured value(s), already formatted (3 significant digits is the book's habit).
    verdict : {"agrees", "partly", "disagrees", "inconclusive", "not tested"}
        The outcome of the criterion under the rules above.
    setting : str
        ``"paper"`` (:data:`PAPER_SETTING`) or every deviation from the paper's protocol (data set,
        sizes, steps or epochs, seeds, architecture, fit method).
    uncertainty : str, optional
        Seeds and the interval of the statistic the criterion reads (a seed range, a bootstrap
        interval, a fit's spread); required when the criterion has a threshold.
    cause : str, optional
        Required for every verdict but "agrees": what produces the difference, naming the
        measurement in the chapter that shows it.
    section : str, optional
        MyST label of the chapter section that shows the evidence (the scoreboard links to it).
    key : str, optional
        A short identifier, unique within the chapter, that variants refer to.
    variant_of : str, optional
        ``key`` of the claim this record varies; a variant is never counted.
    threshold : float or list of float, optional
        The criterion's threshold as data (set from a :class:`Criterion`).
    reduction_check : str, optional
        For "disagrees" outside the paper's setting: the measurement showing the reduction does not
        explain the failure.
    kind : {"claim", "check", "variant"}, optional
        ``"check"``: a numerical check of an identity or closed form; ``"variant"``: another convention
        or fit of the claim ``variant_of``.  Neither is counted.
    revised_from : float or list of float, optional
        The criterion's earlier threshold, where it was changed after the numbers were seen.
    revised_because : str, optional
        Why it was changed; required with ``revised_from``.  Alone, it says that the criterion was chosen
        after the numbers were seen, with no level fixed before.

    Examples
    --------
    >>> c = Claim(paper="003", where="§4, Fig. 3(a)", claim="a spike appears at eta = 1",
    ...           criterion=Criterion("seed-median lambda_max / lambda_+", ">", 1.1),
    ...           measured="2.6", verdict="agrees", setting="paper",
    ...           uncertainty="5 seeds, range [2.5, 2.7]")
    >>> c.criterion, c.threshold, c.counted, c.at_paper_setting
    ('seed-median lambda_max / lambda_+ > 1.1', 1.1, True, True)
    """

    paper: str
    where: str
    claim: str
    criterion: str
    measured: str
    verdict: Verdict
    setting: str = ""
    uncertainty: str = ""
    cause: str = ""
    section: str = ""
    key: str = ""
    variant_of: str = ""
    threshold: float | list[float] | None = None
    reduction_check: str = ""
    kind: str = "claim"
    revised_from: float | list[float] | None = None
    revised_because: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.criterion, Criterion):
            crit = self.criterion
            object.__setattr__(self, "criterion", crit.text)
            object.__setattr__(self, "threshold",
                               list(crit.threshold) if isinstance(crit.threshold, tuple) else crit.threshold)
        elif isinstance(self.threshold, tuple):
            object.__setattr__(self, "threshold", list(self.threshold))
        if isinstance(self.revised_from, tuple):
            object.__setattr__(self, "revised_from", list(self.revised_from))
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {list(KINDS)}, got {self.kind!r}")
        if self.kind == "variant" and not self.variant_of:
            raise ValueError("a record of kind 'variant' needs variant_of (the key of the claim it varies)")
        if self.kind == "check" and self.variant_of:
            raise ValueError("a record of kind 'check' cannot be a variant (variant_of must be empty)")
        if self.revised_from is not None and not self.revised_because.strip():
            raise ValueError("revised_from (the earlier level) needs revised_because (why it changed) "
                             f"(claim {self.where!r}: {self.claim[:60]!r})")
        if self.paper not in PAPERS:
            raise ValueError(f"paper must be one of {sorted(PAPERS)}, got {self.paper!r}")
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {list(VERDICTS)}, got {self.verdict!r}")
        for name in ("where", "claim", "criterion", "setting"):
            if not str(getattr(self, name)).strip():
                raise ValueError(f"{name} must not be empty (claim {self.where!r}: {self.claim[:60]!r})")
        if self.verdict != "not tested" and not str(self.measured).strip():
            raise ValueError("measured must not be empty unless the verdict is 'not tested'")
        if self.verdict != "agrees" and not self.cause.strip():
            raise ValueError(f"a {self.verdict!r} verdict needs a cause naming the measurement that shows it "
                             f"(claim {self.where!r}: {self.claim[:60]!r})")
        if (self.threshold is not None and self.verdict != "not tested"
                and not self.uncertainty.strip()):
            raise ValueError(f"a criterion with a threshold needs an uncertainty (seeds, interval) "
                             f"(claim {self.where!r}: {self.claim[:60]!r})")
        # A variant states its own setting (the convention it varies) and is never counted.
        if (self.verdict == "disagrees" and not self.at_paper_setting and not self.variant_of
                and self.kind != "check" and not self.reduction_check.strip()):
            raise ValueError(
                "a 'disagrees' outside the paper's setting needs reduction_check: the measurement that "
                f"shows the reduction does not explain the failure; else the verdict is 'inconclusive' "
                f"(claim {self.where!r}: {self.claim[:60]!r})")
        if self.variant_of and self.variant_of == self.key:
            raise ValueError("a claim cannot be a variant of itself")

    @property
    def at_paper_setting(self) -> bool:
        """Whether the record was measured at the paper's own protocol."""
        return self.setting.strip() == PAPER_SETTING

    @property
    def counted(self) -> bool:
        """Whether the scoreboard counts the record (variants and checks are never counted)."""
        return self.kind == "claim" and not self.variant_of



def combine_verdicts(verdicts: Sequence[str]) -> str:
    """The verdict of a compound criterion: "partly" when some parts hold and others fail, "inconclusive"
    when no part fails (or none holds) but some cannot be decided.

    Examples
    --------
    >>> combine_verdicts(["agrees", "disagrees"]), combine_verdicts(["agrees", "inconclusive"])
    ('partly', 'inconclusive')
    """
    v = set(verdicts)
    if v == {"agrees"}:
        return "agrees"
    if v == {"disagrees"}:
        return "disagrees"
    if {"agrees", "disagrees"} <= v:
        return "partly"
    return "inconclusive"


@dataclass(frozen=True)
class SeedInterval:
    """Means over seeds with Student-t intervals (arrays of the input's leading shape).

    Attributes
    ----------
    mean, low, high : numpy.ndarray
        The mean over the finite seeds and its ``level`` t-interval; ``low`` and ``high`` are NaN
        where fewer than two seeds are finite (one seed says nothing about the spread).
    level : float
    n_seeds : numpy.ndarray
        Finite seeds entering each mean.
    """

    mean: object
    low: object
    high: object
    level: float
    n_seeds: object

    def at(self, index=()) -> tuple[float, tuple[float, float]]:
        """``(mean, (low, high))`` at one index of the leading shape (what :meth:`Criterion.judge` takes)."""
        return float(self.mean[index]), (float(self.low[index]), float(self.high[index]))


def seed_interval(x, level: float = 0.95) -> SeedInterval:
    """The mean over the last axis (seeds) of ``x`` and its Student-t interval.

    With a handful of seeds a percentile bootstrap under-covers (with two seeds it is their range,
    about 50% coverage for normal data); the t-interval ``mean +- t(n-1) s / sqrt(n)`` keeps its
    nominal level for normal seed statistics at any ``n >= 2``.  Non-finite entries (diverged runs)
    are left out.

    Parameters
    ----------
    x : array_like, shape (..., n_seeds)
        One per-seed statistic per cell (e.g. per learning rate).
    level : float
        Confidence level in ``(0, 1)``.

    Examples
    --------
    >>> m = seed_interval([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]])
    >>> m.mean.tolist(), [round(float(v), 3) for v in (m.low[0], m.high[0])], m.at(1)
    ([2.0, 5.0], [-0.484, 4.484], (5.0, (5.0, 5.0)))
    """
    import numpy as np
    import scipy.stats

    level = float(level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < 1 or x.shape[-1] < 1:
        raise ValueError(f"x must have a non-empty last (seed) axis, got shape {x.shape}")
    ok = np.isfinite(x)
    n = ok.sum(axis=-1)
    v = np.where(ok, x, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, v.sum(axis=-1) / np.maximum(n, 1), np.nan)
        dev = np.where(ok, x - mean[..., None], 0.0)
        sd = np.sqrt((dev ** 2).sum(axis=-1) / np.maximum(n - 1, 1))
        half = scipy.stats.t.ppf(0.5 + level / 2, np.maximum(n - 1, 1)) * sd / np.sqrt(np.maximum(n, 1))
    half = np.where(n >= 2, half, np.nan)
    return SeedInterval(mean=mean, low=mean - half, high=mean + half, level=level, n_seeds=n)


def check_records(claims: Sequence[Claim]) -> None:
    """Check the rules that span records: unique keys, and every ``variant_of`` naming a key.

    Raises
    ------
    ValueError
        Naming the offending record.
    """
    keys = [c.key for c in claims if c.key]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    if dupes:
        raise ValueError(f"claim keys must be unique within a chapter, repeated: {dupes}")
    for c in claims:
        if c.variant_of and c.variant_of not in keys:
            raise ValueError(f"variant_of={c.variant_of!r} of {c.where!r} names no claim key of the chapter "
                             f"(keys: {sorted(keys)})")


_WHERE_TOKEN = re.compile(r"(§|Sec\.?|Fig\.?|Figure|Table|Thm\.?|Theorem|Cor\.?|Corollary|App\.?|Appendix|Eq\.?)\s*"
                          r"([A-Z]?)(\d+(?:\.\d+)*)?", re.IGNORECASE)


def where_key(where: str) -> tuple:
    """A sort key that puts claims in the paper's own order: sections, then figures; appendices last.

    Examples
    --------
    >>> sorted(["App. B", "§5.3, Fig. 7", "§4, Fig. 3(b)", "§4, Fig. 2", "Fig. 8(a)"], key=where_key)
    ['§4, Fig. 2', '§4, Fig. 3(b)', '§5.3, Fig. 7', 'Fig. 8(a)', 'App. B']
    """
    section: tuple = ()
    figure: tuple = ()
    appendix = ""
    for m in _WHERE_TOKEN.finditer(where):
        kind = m.group(1).lower().rstrip(".")
        number = tuple(int(p) for p in m.group(3).split(".")) if m.group(3) else ()
        if kind in ("app", "appendix"):
            appendix = appendix or (m.group(2) or (where[m.end():].strip()[:1])).upper() or "Z"
        elif kind in ("§", "sec") and not section:
            section = number
        elif kind in ("fig", "figure", "table") and not figure:
            figure = number
    # Claims that name only a figure follow the sectioned ones; appendices come last.
    return (1 if appendix else 0, appendix, section or (10**6,), figure, where)


_COLUMNS = {
    "where": "where",
    "claim": "claim",
    "criterion": "criterion (fixed in advance)",
    "setting": "setting",
    "measured": "measured",
    "uncertainty": "uncertainty",
    "verdict": "verdict",
    "cause": "cause",
}


def _frame(claims: Sequence[Claim], columns: dict[str, str]):
    import pandas as pd

    from htlib.plotting import Table

    rows = [{label: getattr(c, key) for key, label in columns.items()} for c in claims]
    frame = Table(rows, columns=list(columns.values()))
    frame.index = pd.RangeIndex(1, len(frame) + 1, name="#")
    return frame


def claims_frame(claims: Sequence[Claim]):
    """The counted claims as a :class:`pandas.DataFrame`, one row per claim, in the book's column order.

    Variants (records with ``variant_of``) are left out: :func:`robustness_frame` shows them.  It is
    a :class:`htlib.plotting.Table`, shown whole: a claim cut at pandas' 50 characters would hide the
    criterion it is judged by.
    """
    return _frame([c for c in claims if c.counted], _COLUMNS)


def robustness_frame(claims: Sequence[Claim]):
    """The variants among ``claims`` (other conventions, fits, whitenings), each next to the claim it varies."""
    by_key = {c.key: c for c in claims if c.key}
    variants = [c for c in claims if c.variant_of and c.kind != "check"]
    columns = {"variant_of": "variant of", **{k: v for k, v in _COLUMNS.items() if k != "where"}}
    frame = _frame(variants, columns)
    frame["variant of"] = [f"{by_key[c.variant_of].where}: {by_key[c.variant_of].claim}"
                           if c.variant_of in by_key else c.variant_of for c in variants]
    return frame


def checks_frame(claims: Sequence[Claim]):
    """The numerical checks among ``claims``: identities and closed forms that hold by algebra at the point
    judged, shown apart from the claims and never counted ("holds" where the check passes)."""
    checks = [c for c in claims if c.kind == "check"]
    frame = _frame(checks, {"where": "where", "claim": "identity", "criterion": "check", "measured": "measured",
                            "verdict": "result", "cause": "why it cannot fail"})
    frame["result"] = [_CHECK_RESULT[c.verdict] for c in checks]
    return frame


_CHECK_RESULT = {"agrees": "holds", "disagrees": "fails", "inconclusive": "undecided", "partly": "partly holds",
                 "not tested": "not run"}
"""How a check's verdict reads: a check holds or fails, it does not agree with a paper."""

KINDS: tuple[str, ...] = ("claim", "check", "variant")
"""The kinds of record: a counted claim, a numerical check of an identity, a variant of a claim."""

_OPTIONAL_FIELDS = {"kind": "claim", "revised_from": None, "revised_because": ""}
"""Fields added after records were first stored: left out of the stored JSON while they hold these defaults,
so the records of earlier chapters stay byte-identical (:func:`read_claims` fills them back in)."""


def _record(claim: Claim) -> dict:
    """The stored form of a record: :func:`dataclasses.asdict` less the optional fields at their defaults."""
    rec = asdict(claim)
    for name, default in _OPTIONAL_FIELDS.items():
        if rec[name] == default:
            del rec[name]
    return rec


class _ClaimsPayload:
    """What :func:`publish_claims` glues: JSON for the scoreboard, a one-line text form for nbval."""

    def __init__(self, claims: Sequence[Claim], chapter: str) -> None:
        self.records = [_record(c) for c in claims]
        self.chapter = chapter

    def _repr_mimebundle_(self, include=None, exclude=None):
        # A string under a private MIME type: nbformat accepts it under glue's key prefix, and
        # nbval compares it as exact text.
        payload = json.dumps({"chapter": self.chapter, "claims": self.records}, ensure_ascii=False,
                             sort_keys=True)
        return {"text/plain": repr(self), CLAIMS_MIME: payload}

    def __repr__(self) -> str:
        counts = verdict_counts(self.records)
        return f"<{len(self.records)} claims of {self.chapter}: " + ", ".join(
            f"{counts[v]} {v}" for v in VERDICTS) + ">"


def verdict_counts(claims: Iterable[Claim | dict]) -> dict[str, int]:
    """How many counted claims carry each verdict (every verdict appears, possibly with 0).

    Variants (``variant_of`` set) and checks (``kind="check"``) are never counted.
    """
    counts = {v: 0 for v in VERDICTS}
    for c in claims:
        rec = c if isinstance(c, dict) else asdict(c)
        if not rec.get("variant_of") and rec.get("kind", "claim") == "claim":
            counts[rec["verdict"]] += 1
    return counts


def publish_claims(claims: Sequence[Claim], *, chapter: str):
    """Store the records in the notebook (for the scoreboard) and return the table to display.

    Call it as the last line of a chapter's claims cell: the returned DataFrame is the chapter's
    claims table (variants left out; show them with :func:`robustness_frame`), and the records travel, as JSON glued under :data:`CLAIMS_GLUE_KEY`, inside the
    executed notebook, where :func:`read_claims` finds them.
    """
    claims = list(claims)
    if not claims:
        raise ValueError("claims must not be empty")
    if not all(isinstance(c, Claim) for c in claims):
        raise TypeError("claims must be Claim records")
    check_records(claims)
    from myst_nb import glue

    glue(CLAIMS_GLUE_KEY, _ClaimsPayload(claims, chapter), display=False)
    return claims_frame(claims)


def read_claims(notebook: str | Path) -> list[Claim]:
    """The claim records that :func:`publish_claims` stored in an executed notebook ([] if none)."""
    nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    names = {f.name for f in fields(Claim)}
    out: list[Claim] = []
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []):
            # The private MIME type identifies the records, with or without glue's metadata.
            for key, value in output.get("data", {}).items():
                if key.endswith(CLAIMS_MIME):
                    payload = json.loads(value if isinstance(value, str) else "".join(value))
                    out.extend(Claim(**{k: v for k, v in rec.items() if k in names})
                               for rec in payload["claims"])
    return out


def glue_text(name: str, value, fmt: str = ".3g") -> str:
    """Format ``value`` (NumPy scalars included) and glue the string under ``name`` for the prose.

    Use ``{glue:text}`name``` in markdown.  Returns the formatted string (a :class:`GluedText`, which
    shows nothing when it ends a cell), so a cell can also use it.
    ``fmt`` is a format spec (``".3g"``, ``".2f"``, ``"d"``); strings are glued as they are.
    """
    from myst_nb import glue

    if isinstance(value, str):
        text = value
    else:
        try:
            value = value.item()  # NumPy 2 scalars repr as np.float64(...)
        except AttributeError:
            pass
        text = format(value, fmt)
    glue(name, _Plain(text), display=False)
    return GluedText(text)


def glue_figure(name: str, fig) -> None:
    """Glue the matplotlib figure ``fig`` under ``name`` for a ``{glue:figure}`` directive, without showing it,
    and write the numbers drawn in it (:func:`htlib.plotting.figure_data`) to
    :func:`htlib.plotting.figure_data_path`, which the caption links with ``{download}``."""
    from myst_nb import glue

    from htlib.plotting import figure_data, figure_data_path

    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty figure name, got {name!r}")
    glue(name, fig, display=False)
    path = figure_data_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure_data(fig).to_csv(path, index=False, float_format="%.10g")


class GluedText(str):
    """The string :func:`glue_text` returns: usable as text, silent when it ends a notebook cell."""

    def _ipython_display_(self) -> None:
        # IPython calls this instead of printing the repr, so no stray quoted string appears.
        return None


class _Plain:
    """A string whose text form has no quotes, so ``{glue:text}`` pastes it as it reads."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


# ---------------------------------------------------------------------------------------------
# The scoreboard: every chapter's records, one table per paper.

def collect_claims(notebooks: Iterable[str | Path]) -> dict[Path, list[Claim]]:
    """The stored records of each executed notebook, keyed by its path (notebooks without any are left out).

    Where several notebooks of the same chapter are given (reruns with other parameters), the
    most recently modified one wins: its chapter name is the ``chapter`` of :func:`publish_claims`.
    """
    latest: dict[str, tuple[float, Path, list[Claim]]] = {}
    for path in map(Path, notebooks):
        records = read_claims(path)
        if not records:
            continue
        chapter = _stored_chapter(path) or path.stem
        mtime = path.stat().st_mtime
        if chapter not in latest or mtime > latest[chapter][0]:
            latest[chapter] = (mtime, path, records)
    return {path: records for _, path, records in latest.values()}


def _stored_chapter(notebook: Path) -> str:
    nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []):
            for key, value in output.get("data", {}).items():
                if key.endswith(CLAIMS_MIME):
                    return json.loads(value if isinstance(value, str) else "".join(value))["chapter"]
    return ""


def paper_counts(claims_by_notebook: dict[Path, list[Claim]], *, setting: str | None = None
                 ) -> dict[str, dict[str, int]]:
    """``{paper: {verdict: count}}`` for every key of :data:`PAPERS` (zeros included), variants never counted.

    ``setting="paper"`` counts only records at the paper's setting, ``setting="reduced"`` only the others.
    """
    if setting not in (None, "paper", "reduced"):
        raise ValueError(f"setting must be None, 'paper' or 'reduced', got {setting!r}")
    everything = [c for records in claims_by_notebook.values() for c in records
                  if setting is None or c.at_paper_setting == (setting == "paper")]
    return {paper: verdict_counts(c for c in everything if c.paper == paper) for paper in SCOREBOARD_ORDER}


_BADGES = {"agrees": "success", "partly": "warning", "disagrees": "danger", "inconclusive": "info",
           "not tested": "secondary"}
"""sphinx-design badge colour per verdict; the word is always shown, so colour is never the only cue."""


def _badge(verdict: str) -> str:
    return f"{{bdg-{_BADGES[verdict]}}}`{verdict}`"


def _cell(text: str) -> str:
    """A string made safe for one cell of a pipe table."""
    return " ".join(str(text).split()).replace("|", "\\|")


class Scoreboard:
    """The claims of several chapters: the differences first, then one table per paper, then the variants.

    Its ``text/markdown`` form is MyST (rendered by the book with ``nb_render_markdown_format: myst``):
    with ``links="ref"`` each claim links to its chapter section through ``{ref}`` (a missing label
    fails the strict book build); with ``links="html"`` it links to ``<notebook stem>.html#<label>``,
    for standalone reruns that sit next to each other in one folder.  Its ``text/plain`` form is a
    compact listing that nbval compares.  Within a paper, rows follow the paper's own order
    (:func:`where_key`).
    """

    def __init__(self, claims_by_notebook: dict[Path, list[Claim]], *, links: str = "ref") -> None:
        if links not in ("ref", "html"):
            raise ValueError(f"links must be 'ref' or 'html', got {links!r}")
        self.claims_by_notebook = claims_by_notebook
        self.links = links

    def rows(self, paper: str, *, variants: bool = False, kind: str | None = None) -> list[tuple[Path, Claim]]:
        """The records of ``paper`` of one ``kind`` (``"claim"``: the counted ones, the default; ``"variant"``,
        also ``variants=True``; ``"check"``), in the paper's order."""
        kind = kind or ("variant" if variants else "claim")
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {list(KINDS)}, got {kind!r}")
        rows = [(nb, c) for nb, records in self.claims_by_notebook.items() for c in records
                if c.paper == paper and _kind_of(c) == kind]
        return sorted(rows, key=lambda row: where_key(row[1].where))

    def revisions(self) -> list[tuple[Path, Claim]]:
        """Every record whose level was changed, or whose criterion was chosen, after the numbers were seen."""
        return [(nb, c) for paper in SCOREBOARD_ORDER for k in KINDS for nb, c in self.rows(paper, kind=k)
                if c.revised_because.strip()]

    def differences(self) -> list[tuple[Path, Claim]]:
        """Every counted record whose verdict is one of :data:`DIFFERENCES`, paper by paper."""
        return [(nb, c) for paper in SCOREBOARD_ORDER for nb, c in self.rows(paper) if c.verdict in DIFFERENCES]

    def _link(self, notebook: Path, claim: Claim) -> str:
        text = _cell(claim.where).replace("<", "\\<").replace("`", "'")
        if self.links == "html":
            # Raw HTML: the pages of a rerun folder are not documents of one Sphinx project.
            anchor = f"#{claim.section}" if claim.section else ""
            return f'<a href="{notebook.stem}.html{anchor}">{_html.escape(claim.where).replace("|", "&#124;")}</a>'
        if claim.section:
            return f"{{ref}}`{text} <{claim.section}>`"
        return f"{{doc}}`{text} <{notebook.stem}>`"

    @staticmethod
    def _setting(claim: Claim) -> str:
        return "paper" if claim.at_paper_setting else f"reduced: {_cell(claim.setting)}"

    def _table(self, header: list[str], rows: list[list[str]], kind: str) -> list[str]:
        # kind (differences, paper, variants) lets the page style and the browser test tell them apart.
        out = [f":::{{container}} htlib-scoreboard htlib-{kind}", "| " + " | ".join(header) + " |",
               "|" + "---|" * len(header)]
        out += ["| " + " | ".join(r) + " |" for r in rows]
        return out + [":::", ""]

    def differences_markdown(self) -> str:
        """The section body "Where the book and the papers differ": every difference with its cause."""
        rows = self.differences()
        if not rows:
            return "*Every counted claim agrees or is not tested.*"
        return "\n".join(self._table(
            ["paper", "where", "claim", "verdict", "cause", "setting"],
            [[c.paper, self._link(nb, c), _cell(c.claim), _badge(c.verdict), _cell(c.cause), self._setting(c)]
             for nb, c in rows], "differences"))

    def papers_markdown(self) -> str:
        """One table per paper, counted claims only, in the paper's order."""
        parts: list[str] = []
        for paper in SCOREBOARD_ORDER:
            rows = self.rows(paper)
            if not rows:
                continue
            counts = verdict_counts(c for _, c in rows)
            parts.append(f"**{paper}: {_cell(PAPERS[paper])}.** "
                         + ", ".join(f"{counts[v]} {v}" for v in VERDICTS) + ".\n")
            parts += self._table(
                ["#", "where", "claim", "measured", "uncertainty", "verdict", "setting", "cause"],
                [[str(i), self._link(nb, c), _cell(c.claim), _cell(c.measured), _cell(c.uncertainty),
                  _badge(c.verdict), self._setting(c), _cell(c.cause)] for i, (nb, c) in enumerate(rows, 1)],
                "paper")
        return "\n".join(parts) if parts else "*No chapter has published claims yet.*"

    def variants_markdown(self) -> str:
        """The robustness variants (never counted), each with the claim it varies."""
        rows = []
        for paper in SCOREBOARD_ORDER:
            for nb, c in self.rows(paper, variants=True):
                base = next((b for b in self.claims_by_notebook.get(nb, []) if b.key == c.variant_of), None)
                rows.append([paper, self._link(nb, c), _cell(base.claim if base else c.variant_of),
                             _cell(c.setting), _cell(c.measured), _badge(c.verdict), _cell(c.cause)])
        if not rows:
            return "*No chapter reports variants.*"
        return "\n".join(self._table(["paper", "where", "variant of the claim", "variant", "measured",
                                      "verdict", "cause"], rows, "variants"))

    def checks_markdown(self) -> str:
        """The numerical checks (identities and closed forms at the point judged), never counted."""
        rows = [[paper, self._link(nb, c), _cell(c.claim), _cell(c.criterion), _cell(c.measured),
                 _CHECK_RESULT[c.verdict]] for paper in SCOREBOARD_ORDER for nb, c in self.rows(paper, kind="check")]
        if not rows:
            return "*No chapter reports numerical checks.*"
        return "\n".join(self._table(["paper", "where", "identity", "check", "measured", "result"], rows, "checks"))

    def revisions_markdown(self) -> str:
        """The levels changed after the numbers were seen: the level judged, the one fixed first, and why."""
        rows = [[c.paper, self._link(nb, c), _cell(c.claim), _cell(c.criterion), _cell(_level_text(c.revised_from)),
                 _cell(c.revised_because), _badge(c.verdict)] for nb, c in self.revisions()]
        if not rows:
            return "*No level was changed after the numbers were seen.*"
        return "\n".join(self._table(["paper", "where", "claim", "criterion judged", "level fixed first", "why",
                                       "verdict"], rows, "revisions"))

    def _repr_markdown_(self) -> str:
        return self.papers_markdown()

    def __repr__(self) -> str:
        lines = []
        for paper in SCOREBOARD_ORDER:
            for nb, c in self.rows(paper) + self.rows(paper, variants=True) + self.rows(paper, kind="check"):
                tag = (" | check" if c.kind == "check" else f" | variant of {c.variant_of}" if c.variant_of else "")
                lines.append(f"{paper} | {nb.stem} | {c.where} | {c.verdict} | {c.measured}{tag}")
        return "\n".join(lines) if lines else "no claims"


class _Markdown:
    """A MyST string that displays as markdown (and as the same text for nbval)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_markdown_(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text


def differences(board: Scoreboard) -> _Markdown:
    """The table "Where the book and the papers differ", for display in a notebook cell."""
    return _Markdown(board.differences_markdown())


def variants(board: Scoreboard) -> _Markdown:
    """The robustness variants of every chapter, for display in a notebook cell."""
    return _Markdown(board.variants_markdown())


def checks(board: Scoreboard) -> _Markdown:
    """The numerical checks of every chapter, for display in a notebook cell."""
    return _Markdown(board.checks_markdown())


def revisions(board: Scoreboard) -> _Markdown:
    """The levels changed after the numbers were seen, for display in a notebook cell."""
    return _Markdown(board.revisions_markdown())


def _kind_of(c: Claim) -> str:
    """A record's kind: a check, a variant (``variant_of`` set), or a counted claim."""
    return "check" if c.kind == "check" else "variant" if c.variant_of else "claim"


def _level_text(level) -> str:
    if level is None:
        return "none: the criterion was chosen after the numbers were seen"
    if isinstance(level, (list, tuple)):
        return "[" + ", ".join(format(float(v), ".3g") for v in level) + "]"
    return format(float(level), ".3g")


def scoreboard(source: str | Path, *, links: str = "ref") -> Scoreboard:
    """The scoreboard of every executed notebook (``*.ipynb``) in the folder ``source``."""
    folder = Path(source)
    if not folder.is_dir():
        raise ValueError(f"source must be a folder of executed chapters, got {str(source)!r}")
    return Scoreboard(collect_claims(sorted(folder.glob("*.ipynb"))), links=links)


def glue_counts(board: Scoreboard) -> dict[str, dict[str, int]]:
    """Glue the counts of every paper, split by setting, for other pages to paste.

    ``count_<paper>_<verdict>`` (verdict with ``_`` for spaces) is the text "a / b": a claims at the
    paper's setting, b at a reduced one; ``count_<paper>_total`` likewise.  ``difference_<i>`` (i = 1,
    2, 3) is a one-line summary of the i-th listed difference of the three papers ("" if fewer), for the
    landing page.  Returns the counts over both settings.
    """
    split = {s: paper_counts(board.claims_by_notebook, setting=s) for s in ("paper", "reduced")}
    for paper in SCOREBOARD_ORDER:
        for verdict in VERDICTS:
            glue_text(f"count_{paper}_{verdict.replace(' ', '_')}",
                      f"{split['paper'][paper][verdict]} / {split['reduced'][paper][verdict]}")
        glue_text(f"count_{paper}_total", f"{sum(split['paper'][paper].values())} / "
                                          f"{sum(split['reduced'][paper].values())}")
    # The landing page names the papers' disagreements first, then the other differences.
    ranked = sorted((row for row in board.differences() if row[1].paper in ("003", "001", "004")),
                    key=lambda row: DIFFERENCES.index(row[1].verdict))
    for i in range(3):
        if i < len(ranked):
            nb, c = ranked[i]
            text = f"paper {c.paper}, {c.where}: {c.verdict}. {c.cause}"
        else:
            text = ""
        glue_text(f"difference_{i + 1}", " ".join(text.split()))
    return paper_counts(board.claims_by_notebook)


def counts_table(counts: dict[str, dict[str, int]]):
    """``{paper: {verdict: count}}`` (from :func:`paper_counts` or :func:`glue_counts`) as the book's
    table (:func:`htlib.plotting.table`): one row per paper, one column per verdict."""
    from htlib.plotting import table

    return table([(paper, *(by_verdict.get(v, 0) for v in VERDICTS)) for paper, by_verdict in counts.items()],
                 ["paper", *VERDICTS], index="paper")


def split_counts_table(board: Scoreboard):
    """The counts per paper and setting: rows (paper, "paper setting" / "reduced"), columns the verdicts."""
    from htlib.plotting import table

    rows = []
    for setting, label in (("paper", "paper's setting"), ("reduced", "reduced setting")):
        counts = paper_counts(board.claims_by_notebook, setting=setting)
        rows += [(paper, label, *(counts[paper][v] for v in VERDICTS)) for paper in SCOREBOARD_ORDER]
    rows.sort(key=lambda r: SCOREBOARD_ORDER.index(r[0]))
    return table(rows, ["paper", "setting", *VERDICTS], index="paper")


# ---------------------------------------------------------------------------------------------
# The one judge.  A chapter declares its claims table as Spec rows (each level written once, as a value),
# its measure_* functions return a Measurement per key, and judge() turns each pair into a Claim record
# through one fixed list of gates.  No chapter decides or words a verdict anywhere else.

STATISTICS: tuple[str, ...] = ("mean", "sign", "bootstrap", "value", "parts")
"""How a :class:`Spec` reads its measurement: the mean over runs with its Student-t interval, an exact
sign test of a direction over runs, a parametric-bootstrap interval of one fit, one deterministic value (a
check, or a quantity no random draw enters), or the parts of a compound claim, each judged on its own."""

MIN_DRAWS = 100
"""The fewest bootstrap refits whose percentile interval the judge reads."""

_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*\Z")
_ONE_SIDED = {">": ">", ">=": ">", "<": "<", "<=": "<"}


def _level_value(name: str, level, op: str) -> float | tuple[float, float]:
    """``level`` as a finite float, or as a finite ``(low, high)`` with ``low <= high`` for ``op == "in"``."""
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
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number for op {op!r}, got {level!r}")
    return value


def _threshold(level):
    return list(level) if isinstance(level, tuple) else level


@dataclass(frozen=True)
class Spec:
    """One row of a chapter's claims table: what the paper says and the criterion it is judged by.

    Parameters
    ----------
    key : str
        Unique within the chapter; letters, digits, ``_`` and ``-`` (it names the glue keys).
    paper : str
        One of :data:`PAPERS`.
    where : str
        Section or figure of the paper.
    claim : str
        The paper's sentence.
    measurement : str
        What is read, in words (e.g. "lambda_max / lambda_+ at eta = 1").
    op : {"<", "<=", ">", ">=", "in", "=="}
        The comparison; ``"in"`` takes ``level = (low, high)``; ``"=="`` (checks only) takes a ``tolerance``.
    level : float or (float, float)
        The level, fixed before the runs.
    statistic : {"mean", "sign", "bootstrap", "value"}
        ``"mean"``: the Student-t interval of the mean over runs must lie on one side;
        ``"sign"``: an exact sign test over runs of the direction ``op`` against ``level``;
        ``"bootstrap"``: the parametric-bootstrap percentile interval of a single fit;
        ``"value"``: one deterministic number: a check's identity, or a quantity no random draw enters
        (a count or a closed form at given sizes), where one evaluation is the whole measurement;
        ``"parts"``: a compound claim whose ``parts`` are judged each on its own and combined
        (all agree: agrees; some agree and some disagree: partly; else inconclusive).
    kind : {"claim", "check", "variant"}, optional
        Only ``"claim"`` is counted.  A ``"check"`` is a numerical check of an identity or closed form;
        a ``"variant"`` is another convention or fit of the claim ``variant_of``.
    variant_of : str, optional
        The key of the claim a variant varies (kind ``"variant"`` only).
    section : str, optional
        MyST label of the chapter section that shows the evidence.
    setting : str, optional
        ``"paper"`` or what differs from the paper's protocol (a :class:`Measurement` may override it).
    revised_from : float or (float, float), optional
        The earlier level, where ``level`` was changed after the numbers were seen.
    revised_because : str, optional
        Why; required with ``revised_from``.  Without ``revised_from``: the criterion (the statistic or the
        reading, not only its level) was chosen after the numbers were seen and nothing was fixed before;
        the record says so and the scoreboard lists it with the revisions.
    min_runs : int, optional
        The fewest independent runs a ``"mean"`` or ``"sign"`` verdict rests on (at least 3).
    fmt : str, optional
        Format spec of the numbers in the record's text.
    tolerance : float, optional
        For ``op == "=="``: the largest accepted ``|value - level|``.
    confidence : float, optional
        The confidence level of the interval or test, in ``(0, 1)``.
    why : str, optional
        For kind ``"check"``: why the identity holds by algebra where it is evaluated (the checks table
        shows it first in the record's cause).
    parts : tuple of Spec, optional
        For statistic ``"parts"`` (with ``op="all"`` and ``level=None``): the parts of the compound
        claim, each with its own measurement, level and statistic.

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

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not _KEY.match(self.key):
            raise ValueError(f"key must be a name of letters, digits, '_' and '-' (it names glue keys), got {self.key!r}")
        if self.paper not in PAPERS:
            raise ValueError(f"paper must be one of {sorted(PAPERS)}, got {self.paper!r}")
        for name in ("where", "claim", "measurement", "setting"):
            if not str(getattr(self, name)).strip():
                raise ValueError(f"{name} must not be empty (spec {self.key!r})")
        if self.statistic not in STATISTICS:
            raise ValueError(f"statistic must be one of {list(STATISTICS)}, got {self.statistic!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {list(KINDS)}, got {self.kind!r}")
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
            return self._post_init_common()
        if self.op not in (*_OPS, "=="):
            raise ValueError(f"op must be one of {[*_OPS, '==']}, got {self.op!r}")
        if (self.op == "==") != (self.tolerance is not None) or (self.op == "==" and self.statistic != "value"):
            raise ValueError(f"op '==' and tolerance go together, for statistic 'value' only (spec {self.key!r})")
        if self.statistic == "sign" and self.op not in _ONE_SIDED:
            raise ValueError(f"statistic 'sign' tests a direction: op must be one of {list(_ONE_SIDED)}, got {self.op!r}")
        object.__setattr__(self, "level", _level_value("level", self.level, self.op))
        self._post_init_common()

    def _post_init_common(self) -> None:
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
        """A number, or a ``(low, high)`` pair, in the spec's format."""
        if isinstance(value, (tuple, list)):
            return "[" + ", ".join(format(float(v), self.fmt) for v in value) + "]"
        return format(float(value), self.fmt)

    def criterion_at(self, level) -> str:
        """The criterion's text at ``level`` (the spec's level or its earlier one)."""
        if self.statistic == "parts":
            return " and ".join(p.criterion for p in self.parts)
        if self.op == "==":
            return f"{self.measurement} = {self.formatted(level)} ± {self.tolerance:.2g}"
        return Criterion(self.measurement, self.op, level, self.fmt).text

    @property
    def criterion(self) -> str:
        """The criterion's text, e.g. ``'lambda_max / lambda_+ > 1.1'``."""
        return self.criterion_at(self.level)

    @property
    def counted(self) -> bool:
        """Whether the record of this spec counts on the scoreboard (kind ``"claim"`` only)."""
        return self.kind == "claim"


def _floats(name: str, x) -> tuple[float, ...]:
    import numpy as np

    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 1-D sequence of numbers, got {x!r}") from None
    if a.ndim == 0:  # a single fit estimate given as a number
        a = a[None]
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one value per run), got shape {a.shape}")
    return tuple(a.tolist())


@dataclass(frozen=True)
class Measurement:
    """What a chapter's ``measure_*`` function read from cached results, for one :class:`Spec`.

    Parameters
    ----------
    values : sequence of float
        The statistic of each independent run (seed, data draw), or the single fit estimate
        (statistic ``"bootstrap"``) or exact value (``"value"``).
    draws : sequence of float, optional
        The bootstrap refits (statistic ``"bootstrap"``).
    ran : bool, optional
        False where the run was not made at this setting.
    not_run_reason : str, optional
        Why not (required with ``ran=False``), e.g. "3 seeds do not fit the default budget; make paper runs it".
    cannot_test : str, optional
        Empty, or why the setting cannot test the claim (not trained, not converged, reduced where the
        reduction matters), naming the measurement that shows it.
    runs_text : str, optional
        The runs in words, e.g. "5 seeds" (default: the number of runs).
    note : str, optional
        Appended to the record's uncertainty.
    reduction_check : str, optional
        For a failure outside the paper's setting: the measurement showing the reduction does not explain it.
    setting : str, optional
        The setting of this run where it differs from the spec's (e.g. a rerun at the paper's protocol).
    parts : dict of str to Measurement, optional
        For a compound spec (statistic ``"parts"``): one measurement per part key.  The parts inherit this
        measurement's ``setting`` and ``reduction_check`` where they set none.

    Non-finite values are refused unless ``cannot_test`` says why (a diverged run must not vanish).
    """

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

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", _floats("values", self.values))
        object.__setattr__(self, "parts", dict(self.parts))
        if any(not isinstance(v, Measurement) for v in self.parts.values()):
            raise ValueError("parts must map part keys to Measurement objects")
        object.__setattr__(self, "draws", _floats("draws", self.draws))
        if not isinstance(self.ran, bool):
            raise ValueError(f"ran must be True or False, got {self.ran!r}")
        if self.ran == bool(self.not_run_reason.strip()):
            raise ValueError("not_run_reason is required with ran=False and only then "
                             f"(ran={self.ran}, not_run_reason={self.not_run_reason!r})")
        if self.ran and not self.cannot_test.strip() and not self.parts:
            if not self.values:
                raise ValueError("values must not be empty for a measurement that ran (else set cannot_test or ran=False)")
            for name in ("values", "draws"):
                bad = [i for i, v in enumerate(getattr(self, name)) if not math.isfinite(v)]
                if bad:
                    raise ValueError(f"{name} holds non-finite entries at {bad} (a diverged run or a failed fit?): "
                                     "set cannot_test naming it, or drop them and say so in note")

    @classmethod
    def not_run(cls, reason: str) -> "Measurement":
        """A measurement that was not made, with the reason."""
        return cls(ran=False, not_run_reason=reason)


def _runs(spec: Spec, m: Measurement) -> str:
    if m.runs_text.strip():
        return m.runs_text.strip()
    if spec.statistic == "bootstrap":
        return "one fit"
    n = len(m.values)
    return f"{n} run{'s' if n != 1 else ''}" if spec.statistic != "value" else "one exact evaluation"


_SIDE = {"agrees": "lies entirely where {crit} holds", "disagrees": "lies entirely where {crit} fails",
         "inconclusive": "straddles the level of {crit}"}


def _read(spec: Spec, m: Measurement, level) -> tuple[str, str, str, str]:
    """The statistic of ``spec`` at ``level``: ``(verdict, cause, measured, uncertainty)``."""
    from htlib import stats

    crit = spec.criterion_at(level)
    conf = f"{spec.confidence:.0%}"
    alpha = 1.0 - spec.confidence
    if spec.statistic in ("mean", "bootstrap"):
        if spec.statistic == "mean":
            iv = stats.t_interval(m.values, spec.confidence, drop_nonfinite=True)
            what = f"{conf} Student-t interval of the mean"
            over = f" over {iv.n} runs"
            measured = f"mean {spec.formatted(iv.estimate)}"
        else:
            if len(m.values) != 1:
                raise ValueError(f"statistic 'bootstrap' reads one fit estimate, got {len(m.values)} values "
                                 f"(spec {spec.key!r})")
            iv = stats.bootstrap_interval(m.values[0], m.draws, spec.confidence, drop_nonfinite=True)
            what = f"{conf} parametric-bootstrap percentile interval"
            over = f" of {iv.n} refits"
            measured = spec.formatted(iv.estimate)
        # one run has no spread: say so rather than print an interval of NaN
        ci = spec.formatted((iv.low, iv.high)) if math.isfinite(iv.low) and math.isfinite(iv.high) else "none (one run)"
        verdict = Criterion(spec.measurement, spec.op, level, spec.fmt).judge(iv.estimate, (iv.low, iv.high))
        cause = f"the {what}{over}, {ci}, " + _SIDE[verdict].format(crit=crit)
        return verdict, cause, measured, f"{_runs(spec, m)}; {what} {ci}"
    if spec.statistic == "sign":
        t = stats.sign_test(m.values, _ONE_SIDED[spec.op], level, spec.confidence, drop_nonfinite=True)
        ties = len(m.values) - t.n
        counted = f"{t.k} of {t.n} runs have {spec.measurement} {t.direction} {spec.formatted(level)}"
        if t.p < alpha:
            verdict, cause = "agrees", f"{counted}: exact sign test, one-sided p = {t.p:.2g} < {alpha:.2g}"
        elif t.p_opposite < alpha:
            verdict, cause = "disagrees", (f"only {counted}: exact sign test, p = {t.p_opposite:.2g} < {alpha:.2g} "
                                           "for the opposite direction")
        else:
            verdict, cause = "inconclusive", (f"{counted}, and the exact sign test decides neither direction "
                                              f"(p = {t.p:.2g} and {t.p_opposite:.2g}, not below {alpha:.2g})")
        uncertainty = (f"{_runs(spec, m)}; exact sign test, one-sided p = {t.p:.2g} "
                       f"(opposite direction {t.p_opposite:.2g})" + (f", {ties} ties dropped" if ties else ""))
        return verdict, cause, f"{t.k} of {t.n} {t.direction} {spec.formatted(level)}", uncertainty
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
    return ("agrees" if ok else "disagrees"), cause, spec.formatted(x), _runs(spec, m)


def _assess(spec: Spec, m: Measurement) -> tuple[str, str, str, str]:
    """The verdict, its one-sentence reason and the measured and uncertainty text: the one place they are made.

    The gates, in order; the first that applies decides:

    1. not run: "not tested";
    2. the setting cannot test the claim: "inconclusive";
    3. too few independent runs (``"mean"``, ``"sign"``) or bootstrap refits: "inconclusive";
    4. the statistic (:func:`_read`); a failure outside the paper's setting stays "disagrees" only with a
       ``reduction_check``, else it is "inconclusive" naming the setting (checks and variants excepted).

    A level revised after the numbers were seen is stated in the reason, with the verdict at the old level.
    A compound claim (statistic ``"parts"``) passes its parts through the same gates and combines them.
    """
    if not m.ran:
        return "not tested", f"not run: {m.not_run_reason.strip()}", "", ""
    if spec.statistic == "parts":
        verdict, cause, measured, uncertainty = _assess_parts(spec, m)
        if m.cannot_test.strip():
            verdict, cause = "inconclusive", f"the setting cannot test it: {m.cannot_test.strip()}"
        elif spec.revised_because.strip():
            cause += (f"; the criterion was chosen after the numbers were seen ({spec.revised_because.strip()}), "
                      "so this verdict is not out of sample")
        if m.note.strip():
            uncertainty = f"{uncertainty}; {m.note.strip()}" if uncertainty else m.note.strip()
        return verdict, cause, measured, uncertainty
    n = len(m.values)
    if m.cannot_test.strip():
        gate = f"the setting cannot test it: {m.cannot_test.strip()}"
    elif spec.statistic in ("mean", "sign") and n < spec.min_runs:
        gate = f"too few independent runs: {n} ({_runs(spec, m)}) where the criterion needs at least {spec.min_runs}"
    elif spec.statistic == "bootstrap" and len(m.draws) < MIN_DRAWS:
        gate = f"too few bootstrap refits: {len(m.draws)} where the percentile interval needs at least {MIN_DRAWS}"
    else:
        gate = ""
    if gate:
        verdict, cause = "inconclusive", gate
        try:
            measured, uncertainty = _read(spec, m, spec.level)[2:]
        except ValueError:  # nothing finite to show
            measured, uncertainty = "no usable value", _runs(spec, m)
    else:
        verdict, cause, measured, uncertainty = _read(spec, m, spec.level)
        setting = m.setting.strip() or spec.setting
        if (verdict == "disagrees" and setting != PAPER_SETTING and spec.kind == "claim"
                and not m.reduction_check.strip()):
            verdict, cause = "inconclusive", (f"{cause}, but at a reduced setting ({setting}) that may explain it "
                                              "and that no measurement rules out")
        if spec.revised_from is not None:
            before = _read(spec, m, spec.revised_from)[0]
            cause += (f"; {'agrees only' if verdict == 'agrees' else 'judged'} at the level "
                      f"{spec.formatted(spec.level)}, revised after the numbers were seen from "
                      f"{spec.formatted(spec.revised_from)} ({spec.revised_because.strip()}); at "
                      f"{spec.formatted(spec.revised_from)} it would read {before}")
        elif spec.revised_because.strip():
            cause += (f"; the criterion was chosen after the numbers were seen ({spec.revised_because.strip()}), "
                      "so this verdict is not out of sample")
    if m.note.strip():
        uncertainty = f"{uncertainty}; {m.note.strip()}"
    return verdict, cause, measured, uncertainty


def _assess_parts(spec: Spec, m: Measurement) -> tuple[str, str, str, str]:
    """A compound claim: each part through :func:`_assess`, combined by :func:`combine_verdicts`."""
    if m.cannot_test.strip() and not m.parts:
        return "inconclusive", "", "no usable value", ""
    missing = sorted({p.key for p in spec.parts} - set(m.parts))
    extra = sorted(set(m.parts) - {p.key for p in spec.parts})
    if missing or extra:
        raise ValueError(f"compound claim {spec.key!r}: parts missing a measurement {missing}, measurements "
                         f"of no part {extra}")
    read = []
    for part in spec.parts:
        pm = m.parts[part.key]
        pm = dataclasses.replace(pm, setting=pm.setting.strip() or m.setting.strip() or spec.setting,
                                 reduction_check=pm.reduction_check.strip() or m.reduction_check.strip())
        read.append((part, _assess(part, pm)))
    verdicts = [v for _, (v, *_rest) in read]
    if set(verdicts) == {"not tested"}:
        verdict = "not tested"
    else:
        verdict = combine_verdicts(["inconclusive" if v == "not tested" else v for v in verdicts])
    cause = "; ".join(f"{p.criterion}: {v}" + (f" ({c})" if v != "agrees" or p.revised_because.strip() else "")
                      for p, (v, c, _, _) in read)
    measured = "; ".join(f"{p.measurement}: {x}" for p, (_, _, x, _) in read if x)
    uncertainty = "; ".join(f"{p.measurement}: {u}" for p, (_, _, _, u) in read if u)
    return verdict, cause, measured, uncertainty


def judge(spec: Spec, measurement: Measurement) -> Claim:
    """The record of ``spec`` judged on ``measurement``, through the one fixed list of gates (see :func:`_assess`).

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
    verdict, cause, measured, uncertainty = _assess(spec, measurement)
    if spec.why.strip():
        cause = f"holds by algebra: {spec.why.strip()}; {cause}"
    # A compound claim's record keeps the one revised part's earlier level, naming the part.
    revised = spec if spec.revised_because.strip() else next((p for p in spec.parts if p.revised_because.strip()), None)
    revised_because = "" if revised is None else (
        revised.revised_because.strip() if revised is spec else f"{revised.measurement}: {revised.revised_because.strip()}")
    return Claim(paper=spec.paper, where=spec.where, claim=spec.claim, criterion=spec.criterion,
                 measured=measured, verdict=verdict, setting=measurement.setting.strip() or spec.setting,
                 uncertainty=uncertainty, cause=cause, section=spec.section, key=spec.key,
                 variant_of=spec.variant_of, threshold=None if spec.level is None else _threshold(spec.level),
                 reduction_check=measurement.reduction_check.strip(), kind=spec.kind,
                 revised_from=None if revised is None or revised.revised_from is None else _threshold(revised.revised_from),
                 revised_because=revised_because)


def read_table(path: str | Path) -> dict[str, Spec]:
    """A chapter's claims table, read from its TOML file: the specs by key, in the file's order.

    The file has an optional ``[defaults]`` table (fields every row shares, e.g. ``paper``) and one
    ``[[row]]`` per claim, check or variant, with the fields of :class:`Spec`.  A compound claim
    (``statistic = "parts"``) lists its parts as ``[[row.parts]]``, each with at least ``key``,
    ``measurement``, ``op``, ``level`` and ``statistic``; a part inherits the row's other fields (its kind
    and ``variant_of`` among them; not a revision) and its key is ``<row key>-<part key>``.  One part may
    carry ``revised_from`` and ``revised_because``.  Levels given as arrays become ``(low, high)`` pairs.

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
    unknown = sorted(set(data) - {"defaults", "row"})
    if unknown:
        raise ValueError(f"{path}: a claims table holds [defaults] and [[row]] only, got {unknown}")
    names = {f.name for f in fields(Spec)}

    def spec(row: dict, where: str) -> Spec:
        bad = sorted(set(row) - names)
        if bad:
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
                                                                 "revised_because")}
            row["parts"] = tuple(spec({**shared, **p, "key": f"{row.get('key')}-{p.get('key')}"},
                                      f"row {i + 1}, part {j + 1}") for j, p in enumerate(parts))
        if row.get("parts"):
            row.setdefault("measurement", " and ".join(p.measurement for p in row["parts"]))
        s = spec(row, f"row {i + 1} ({row.get('key')!r})")
        if s.key in table:
            raise ValueError(f"{path}: key {s.key!r} appears twice")
        table[s.key] = s
    return table


def judge_table(specs: Sequence[Spec] | Mapping[str, Spec], measurements: dict[str, Measurement]) -> list[Claim]:
    """Every spec of a claims table judged on its measurement (``measurements`` keyed by spec key).

    Raises
    ------
    ValueError
        If a spec has no measurement or a measurement no spec, or the records break
        :func:`check_records` (repeated keys, a variant of no claim).
    """
    if isinstance(specs, Mapping):
        specs = list(specs.values())
    keys = [s.key for s in specs]
    missing = [k for k in keys if k not in measurements]
    extra = sorted(set(measurements) - set(keys))
    if missing or extra:
        raise ValueError(f"every spec needs one measurement: missing for {missing}, no spec for {extra}")
    claims = [judge(s, measurements[s.key]) for s in specs]
    check_records(claims)
    return claims


_GLUED = ("verdict", "measured", "uncertainty", "cause", "criterion", "level")


def claim_glue(claims: Sequence[Claim], prefix: str = "") -> dict[str, str]:
    """The glue names and texts of each record: ``<prefix><key>_<field>`` for verdict, measured, uncertainty,
    cause and criterion, read from the record (so the prose cannot say other than the table).

    Examples
    --------
    >>> s = Spec("spike", "003", "§4", "a spike appears", "ratio", ">", 1.1, "mean")
    >>> claim_glue([judge(s, Measurement([2.5, 2.6, 2.7]))], "ch_")["ch_spike_verdict"]
    'agrees'
    """
    claims = list(claims)
    check_records(claims)
    unnamed = [c.where for c in claims if not c.key]
    if unnamed:
        raise ValueError(f"records to glue need a key; none for {unnamed}")
    def text(c: Claim, name: str) -> str:
        if name == "level":  # the level as the record states it: one number, or "low to high"
            t = c.threshold
            return "" if t is None else (f"{t[0]:.3g} to {t[1]:.3g}" if isinstance(t, list) else f"{t:.3g}")
        return " ".join(str(getattr(c, name)).split())

    return {f"{prefix}{c.key}_{name}": text(c, name) for c in claims for name in _GLUED}


def glue_claims(claims: Sequence[Claim], prefix: str = "") -> dict[str, str]:
    """Glue :func:`claim_glue`'s texts for the prose (``{glue:text}`<prefix><key>_verdict```) and return them."""
    names = claim_glue(claims, prefix)
    for name, text in names.items():
        glue_text(name, text)
    return names

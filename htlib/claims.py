"""Claims of the papers next to the book's measurements: the one judge, the claims tables and the scoreboard.

A chapter's :class:`Spec` rows (:func:`read_table`) and a :class:`Measurement` per row go through :func:`judge`
to :class:`Claim` records; :func:`publish_claims` stores them in the notebook, where :func:`scoreboard` reads them."""

from __future__ import annotations

import dataclasses
import functools
import html as _html
import json
import math
import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Iterable, Literal, Mapping, Sequence

__all__ = [
    "Spec", "Measurement", "judge", "judge_table", "read_table", "claim_glue", "glue_claims", "KINDS", "STATISTICS",
    "combine_verdicts", "SeedInterval", "seed_interval", "Claim", "Criterion", "check_records", "where_key",
    "VERDICTS", "DIFFERENCES", "PAPER_SETTING", "PAPERS", "CLAIMS_GLUE_KEY", "claims_frame", "publish_claims",
    "read_claims", "glue_text", "glue_figure", "verdict_counts", "collect_claims", "paper_counts", "Scoreboard",
    "scoreboard", "glue_counts", "split_counts_table", "differences", "variants", "checks", "revisions",
    "checks_frame", "robustness_frame", "GluedText", "PAPER_NAMES", "paper_name", "counts",
    "clip_words", "short_reason", "render_math", "findings_markdown", "glue_findings",
]

Verdict = Literal["agrees", "partly", "disagrees", "inconclusive", "not tested"]
VERDICTS: tuple[str, ...] = ("agrees", "partly", "disagrees", "inconclusive", "not tested")  # scoreboard order
DIFFERENCES: tuple[str, ...] = ("disagrees", "partly", "inconclusive")  # listed first on the scoreboard
PAPER_SETTING = "paper"  # the ``setting`` of a claim measured at the paper's own protocol

SCOREBOARD_ORDER: tuple[str, ...] = ("003", "001", "004", "MM21", "MP")
# The papers as the scoreboard and the landing page name them: short title and authors (book/references.bib).
PAPER_NAMES: dict[str, tuple[str, str]] = {
    "003": ("Kothapalli et al.", "From spikes to heavy tails"),
    "001": ("Hodgkinson, Wang & Mahoney", "Heavy-tailed mechanistic universality"),
    "004": ("HiLD 2026, authors not given", "Hessian spectra of linear networks"),
    "MM21": ("Martin & Mahoney", "Implicit self-regularization: the 5+1 phases"),
    "MP": ("Marchenko & Pastur", "Eigenvalues of random matrices"),
}

def paper_name(paper: str, *, markup: str = "myst") -> str:
    """The short title and authors of ``paper`` (``markup``: "myst", "html" or "text").

    Examples
    --------
    >>> paper_name("003", markup="text")
    'From spikes to heavy tails (Kothapalli et al.)'
    """
    if paper not in PAPER_NAMES: raise ValueError(f"paper must be one of {list(PAPER_NAMES)}, got {paper!r}")
    if markup not in ("myst", "html", "text"):
        raise ValueError(f"markup must be 'myst', 'html' or 'text', got {markup!r}")
    who, title = PAPER_NAMES[paper]
    title = {"myst": f"*{title}*", "html": f"<em>{_html.escape(title)}</em>", "text": title}[markup]
    return f"{title} ({_html.escape(who) if markup == 'html' else who})"

# The papers a record may name (the keys), each by its short title and authors.
PAPERS: dict[str, str] = {paper: paper_name(paper, markup="text") for paper in PAPER_NAMES}
CLAIMS_MIME = "text/x-htlib-claims+json"  # carries the records (JSON text) in a notebook's outputs
CLAIMS_GLUE_KEY = "claims_records"
KINDS: tuple[str, ...] = ("claim", "check", "variant")  # only a "claim" is counted

_OPS = {"<": lambda x, t: x < t, "<=": lambda x, t: x <= t, ">": lambda x, t: x > t, ">=": lambda x, t: x >= t,
        "in": lambda x, t: t[0] <= x <= t[1]}

def _fmt(value, fmt: str = ".3g") -> str:
    """A number, or a ``(low, high)`` pair as ``[low, high]``, in the format ``fmt``."""
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(format(float(v), fmt) for v in value) + "]"
    return format(float(value), fmt)

@dataclass(frozen=True)
class Criterion:
    """A test fixed before looking at the numbers: ``statistic op threshold``, with the threshold as data.

    ``op`` is one of ``"<", "<=", ">", ">=", "in"``; ``"in"`` takes a closed interval ``(low, high)``.

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
        if not str(self.statistic).strip(): raise ValueError("statistic must not be empty")
        if self.op not in _OPS: raise ValueError(f"op must be one of {list(_OPS)}, got {self.op!r}")
        if self.op == "in":
            low, high = (float(v) for v in self.threshold)
            if not (math.isfinite(low) and math.isfinite(high) and low <= high):
                raise ValueError(f"threshold of 'in' must be a finite (low, high) with low <= high, got {self.threshold!r}")
            object.__setattr__(self, "threshold", (low, high))
        else:
            value = float(self.threshold)
            if not math.isfinite(value): raise ValueError(f"threshold must be finite, got {self.threshold!r}")
            object.__setattr__(self, "threshold", value)

    @property
    def text(self) -> str:
        return f"{self.statistic} {self.op} {_fmt(self.threshold, self.fmt)}"

    def holds(self, value: float) -> bool:
        """Whether ``value`` satisfies the criterion (NaN never does)."""
        value = float(value)
        return bool(math.isfinite(value) and _OPS[self.op](value, self.threshold))

    def judge(self, value: float, interval: tuple[float, float] | None = None) -> str:
        """The verdict for a value and its interval: the criterion must hold (or fail) over the whole interval."""
        if not math.isfinite(float(value)):
            return "inconclusive"
        if interval is None:
            return "agrees" if self.holds(value) else "disagrees"
        low, high = sorted(float(v) for v in interval)
        if not (math.isfinite(low) and math.isfinite(high)):
            return "inconclusive"
        if self.op == "in":
            t_low, t_high = self.threshold
            agrees, disagrees = t_low <= low and high <= t_high, high < t_low or low > t_high
        else:
            ends = (self.holds(low), self.holds(high))
            agrees, disagrees = all(ends), not any(ends)
        return "agrees" if agrees else "disagrees" if disagrees else "inconclusive"

@dataclass(frozen=True)
class Claim:
    """One claim of a paper and what the book measured for it; the verdict rules are on book/conventions.md.

    ``setting`` is ``"paper"`` or every deviation from the paper's protocol; a :class:`Criterion` is stored as
    its text and ``threshold``; ``revised_from`` is the threshold before the numbers were seen, and
    ``revised_because`` why (alone: the criterion was chosen after the numbers were seen).

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
    at_paper: bool | None = None

    def __post_init__(self) -> None:
        if isinstance(self.criterion, Criterion):
            object.__setattr__(self, "threshold", self.criterion.threshold)
            object.__setattr__(self, "criterion", self.criterion.text)
        for name in ("threshold", "revised_from"):
            if isinstance(getattr(self, name), tuple):
                object.__setattr__(self, name, list(getattr(self, name)))
        at = f"(claim {self.where!r}: {str(self.claim)[:60]!r})"
        if self.kind not in KINDS: raise ValueError(f"kind must be one of {list(KINDS)}, got {self.kind!r}")
        if self.kind == "variant" and not self.variant_of:
            raise ValueError("a record of kind 'variant' needs variant_of (the key of the claim it varies)")
        if self.kind == "check" and self.variant_of:
            raise ValueError("a record of kind 'check' cannot be a variant (variant_of must be empty)")
        if self.revised_from is not None and not self.revised_because.strip():
            raise ValueError(f"revised_from (the earlier level) needs revised_because (why it changed) {at}")
        if self.paper not in PAPERS: raise ValueError(f"paper must be one of {sorted(PAPERS)}, got {self.paper!r}")
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {list(VERDICTS)}, got {self.verdict!r}")
        for name in ("where", "claim", "criterion", "setting"):
            if not str(getattr(self, name)).strip(): raise ValueError(f"{name} must not be empty {at}")
        if self.verdict != "not tested" and not str(self.measured).strip():
            raise ValueError("measured must not be empty unless the verdict is 'not tested'")
        if self.verdict != "agrees" and not self.cause.strip():
            raise ValueError(f"a {self.verdict!r} verdict needs a cause naming the measurement that shows it {at}")
        if self.threshold is not None and self.verdict != "not tested" and not self.uncertainty.strip():
            raise ValueError(f"a criterion with a threshold needs an uncertainty (seeds, interval) {at}")
        # A variant states its own setting (the convention it varies) and is never counted.
        if (self.verdict == "disagrees" and not self.at_paper_setting and not self.variant_of
                and self.kind != "check" and not self.reduction_check.strip()):
            raise ValueError(
                "a 'disagrees' outside the paper's setting needs reduction_check: the measurement that "
                f"shows the reduction does not explain the failure; else the verdict is 'inconclusive' {at}")
        if self.variant_of and self.variant_of == self.key: raise ValueError("a claim cannot be a variant of itself")

    @property
    def at_paper_setting(self) -> bool:
        """Whether the record was measured at the paper's own protocol: ``at_paper`` where the chapter compared
        its parameters with the paper's (its ``setting`` then says more, such as the runs), else whether the
        chapter's comparison wrote :data:`PAPER_SETTING` as the setting."""
        return self.at_paper if self.at_paper is not None else self.setting.strip() == PAPER_SETTING

    @property
    def post_hoc(self) -> bool:
        """Whether the criterion (its measurement, level or statistic) was chosen or changed after the runs were
        seen: such a verdict is never "fixed in advance", and every tally counts it apart."""
        return bool(self.revised_because.strip())

    @property
    def setting_text(self) -> str:
        """The setting as a page shows it: the paper's, or "reduced" and how."""
        if not self.at_paper_setting:
            return f"reduced: {self.setting.strip()}"
        extra = self.setting.strip()
        return "the paper's setting" + ("" if extra == PAPER_SETTING else f" ({extra})")

    @property
    def counted(self) -> bool:
        """Whether the scoreboard counts the record (variants and checks are never counted)."""
        return self.kind == "claim" and not self.variant_of

def combine_verdicts(verdicts: Sequence[str]) -> str:
    """A compound criterion's verdict: all agree or all fail decide, a mix of both is "partly", else "inconclusive".

    Examples
    --------
    >>> combine_verdicts(["agrees", "disagrees"]), combine_verdicts(["agrees", "inconclusive"])
    ('partly', 'inconclusive')
    """
    v = set(verdicts)
    if v in ({"agrees"}, {"disagrees"}):
        return v.pop()
    return "partly" if {"agrees", "disagrees"} <= v else "inconclusive"

@dataclass(frozen=True)
class SeedInterval:
    """Means over seeds with Student-t intervals (NaN with fewer than two finite seeds), per leading index."""
    mean: object
    low: object
    high: object
    level: float
    n_seeds: object

    def at(self, index=()) -> tuple[float, tuple[float, float]]:
        """``(mean, (low, high))`` at one index of the leading shape (what :meth:`Criterion.judge` takes)."""
        return float(self.mean[index]), (float(self.low[index]), float(self.high[index]))

def seed_interval(x, level: float = 0.95) -> SeedInterval:
    """The mean over the last axis (seeds) of ``x`` and its Student-t interval; non-finite entries are left out.

    Examples
    --------
    >>> m = seed_interval([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]])
    >>> m.mean.tolist(), [round(float(v), 3) for v in (m.low[0], m.high[0])], m.at(1)
    ([2.0, 5.0], [-0.484, 4.484], (5.0, (5.0, 5.0)))
    """
    import numpy as np
    import scipy.stats
    level = float(level)
    if not 0.0 < level < 1.0: raise ValueError(f"level must lie in (0, 1), got {level!r}")
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < 1 or x.shape[-1] < 1: raise ValueError(f"x must have a non-empty last (seed) axis, got shape {x.shape}")
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
    """Check the rules that span records (unique keys, every ``variant_of`` naming a key); ValueError if not."""
    keys = [c.key for c in claims if c.key]
    if dupes := sorted({k for k in keys if keys.count(k) > 1}):
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
    section, figure, appendix = (), (), ""
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

_COLUMNS = {"where": "where", "claim": "claim", "criterion": "criterion", "setting": "setting",
            "measured": "measured", "uncertainty": "uncertainty", "verdict": "verdict", "cause": "cause"}

_CHECK_RESULT = {"agrees": "holds", "disagrees": "fails", "inconclusive": "undecided", "partly": "partly holds",
                 "not tested": "not run"}  # a check holds or fails, it does not agree with a paper

def _frame(claims: Sequence[Claim], columns: dict[str, str], bases: dict[str, Claim] | None = None):
    import pandas as pd
    rows = [{label: getattr(c, key) for key, label in columns.items()} for c in claims]
    frame = _RecordTable(rows, columns=list(columns.values()))
    frame.index = pd.RangeIndex(1, len(frame) + 1, name="#")
    board = Scoreboard({})
    frame.attrs["markdown"] = "\n".join(
        board.record_markdown(Path("."), c, base=(bases or {}).get(c.variant_of), evidence=bool(c.section))
        for c in claims) or "*None in this run.*"
    return frame

@functools.cache
def _record_table():
    """The class, made once on first use (htlib.plotting, and with it matplotlib, loads only then)."""
    from htlib.plotting import Table

    class RecordTable(Table):
        """A table of claim records that a page shows as one closed dropdown per record (a wide table of long
        texts does not fit the text column); the rows stay a DataFrame for code and for its text form."""

        @property
        def _constructor(self):
            return Table  # a slice or a computed frame is a plain table again

        def _repr_html_(self) -> None:
            return None

        def _repr_markdown_(self) -> str:
            return self.attrs.get("markdown", "")

    return RecordTable

def _RecordTable(*args, **kwargs):
    return _record_table()(*args, **kwargs)

def claims_frame(claims: Sequence[Claim]):
    """The counted claims, one row each, as a :class:`htlib.plotting.Table` (shown whole, never cut)."""
    return _frame([c for c in claims if c.counted], _COLUMNS)

def robustness_frame(claims: Sequence[Claim]):
    """The variants among ``claims`` (other conventions, fits, whitenings), each next to the claim it varies."""
    by_key = {c.key: c for c in claims if c.key}
    variants = [c for c in claims if c.variant_of and c.kind != "check"]
    columns = {"variant_of": "variant of", **{k: v for k, v in _COLUMNS.items() if k != "where"}}
    frame = _frame(variants, columns, by_key)
    frame["variant of"] = [f"{by_key[c.variant_of].where}: {by_key[c.variant_of].claim}"
                           if c.variant_of in by_key else c.variant_of for c in variants]
    return frame

def checks_frame(claims: Sequence[Claim]):
    """The numerical checks among ``claims`` (identities that hold by algebra), shown apart and never counted."""
    checks = [c for c in claims if c.kind == "check"]
    frame = _frame(checks, {"where": "where", "claim": "identity", "criterion": "check", "measured": "measured",
                            "verdict": "result", "cause": "why it cannot fail"})
    frame["result"] = [_CHECK_RESULT[c.verdict] for c in checks]
    return frame

# Left out of the stored JSON at these defaults, so older records stay byte-identical.
_OPTIONAL_FIELDS = {"kind": "claim", "revised_from": None, "revised_because": "", "at_paper": None}

def _record(claim: Claim) -> dict:
    return {k: v for k, v in asdict(claim).items() if not (k in _OPTIONAL_FIELDS and v == _OPTIONAL_FIELDS[k])}

class _ClaimsPayload:
    """What :func:`publish_claims` glues: JSON for the scoreboard, a one-line text form for nbval."""
    def __init__(self, claims: Sequence[Claim], chapter: str) -> None:
        self.records = [_record(c) for c in claims]
        self.chapter = chapter

    def _repr_mimebundle_(self, include=None, exclude=None):
        # A private MIME type: nbformat accepts it under glue's key prefix, and nbval compares it as exact text.
        payload = json.dumps({"chapter": self.chapter, "claims": self.records}, ensure_ascii=False, sort_keys=True)
        return {"text/plain": repr(self), CLAIMS_MIME: payload}

    def __repr__(self) -> str:
        counts = ", ".join(f"{n} {v}" for v, n in verdict_counts(self.records).items())
        later = ", ".join(f"{n} {v}" for v, n in verdict_counts(self.records, post_hoc=True).items() if n)
        return f"<{len(self.records)} claims of {self.chapter}: {counts}" + (f"; after the runs: {later}>" if later
                                                                             else ">")

def verdict_counts(claims: Iterable[Claim | dict], *, post_hoc: bool = False) -> dict[str, int]:
    """How many counted claims decided in advance (with ``post_hoc``: decided on a criterion chosen after the
    runs) carry each verdict; every verdict appears, variants and checks never count."""
    counts = {v: 0 for v in VERDICTS}
    for c in claims:
        rec = c if isinstance(c, dict) else asdict(c)
        if (not rec.get("variant_of") and rec.get("kind", "claim") == "claim"
                and bool(str(rec.get("revised_because", "")).strip()) == post_hoc):
            counts[rec["verdict"]] += 1
    return counts

def publish_claims(claims: Sequence[Claim], *, chapter: str):
    """Store the records in the notebook (glued under :data:`CLAIMS_GLUE_KEY`) and return the claims table."""
    claims = list(claims)
    if not claims: raise ValueError("claims must not be empty")
    if not all(isinstance(c, Claim) for c in claims): raise TypeError("claims must be Claim records")
    check_records(claims)
    from myst_nb import glue
    glue(CLAIMS_GLUE_KEY, _ClaimsPayload(claims, chapter), display=False)
    return claims_frame(claims)

def _payloads(notebook: str | Path):
    nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []):
            # The private MIME type identifies the records, with or without glue's metadata.
            for key, value in output.get("data", {}).items():
                if key.endswith(CLAIMS_MIME):
                    yield json.loads(value if isinstance(value, str) else "".join(value))

def read_claims(notebook: str | Path) -> list[Claim]:
    """The claim records that :func:`publish_claims` stored in an executed notebook ([] if none)."""
    names = {f.name for f in fields(Claim)}
    return [Claim(**{k: v for k, v in rec.items() if k in names})
            for payload in _payloads(notebook) for rec in payload["claims"]]

def glue_text(name: str, value, fmt: str = ".3g") -> str:
    """Format ``value`` (strings as they are) and glue it under ``name`` for the prose; return the text."""
    from myst_nb import glue
    if hasattr(value, "item"):
        value = value.item()  # NumPy 2 scalars repr as np.float64(...)
    text = value if isinstance(value, str) else format(value, fmt)
    glue(name, _Plain(text), display=False)
    return GluedText(text)

def glue_figure(name: str, fig) -> None:
    """Glue ``fig`` under ``name`` without showing it; write its numbers to :func:`htlib.plotting.figure_data_path`."""
    from myst_nb import glue
    from htlib.cache import atomic_write
    from htlib.plotting import figure_data, figure_data_path
    if not isinstance(name, str) or not name: raise ValueError(f"name must be a non-empty figure name, got {name!r}")
    glue(name, fig, display=False)
    path = figure_data_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, figure_data(fig).to_csv(index=False, float_format="%.10g"))  # a reader never sees half

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

class _Markdown(_Plain):
    """A MyST string that displays as markdown (and as the same text for nbval)."""
    def _repr_markdown_(self) -> str:
        return self.text

# The scoreboard: every chapter's records, one table per paper.

def collect_claims(notebooks: Iterable[str | Path]) -> dict[Path, list[Claim]]:
    """The stored records of each notebook that has any, by path; of one chapter's reruns, the newest wins."""
    latest: dict[str, tuple[float, Path, list[Claim]]] = {}
    for path in map(Path, notebooks):
        if not (records := read_claims(path)):
            continue
        chapter = next(_payloads(path))["chapter"] or path.stem
        mtime = path.stat().st_mtime
        if chapter not in latest or mtime > latest[chapter][0]:
            latest[chapter] = (mtime, path, records)
    return {path: records for _, path, records in latest.values()}

def paper_counts(claims_by_notebook: dict[Path, list[Claim]], *, setting: str | None = None,
                 post_hoc: bool = False) -> dict[str, dict[str, int]]:
    """``{paper: {verdict: count}}`` of the counted records decided in advance (``post_hoc``: those decided on a
    criterion chosen after the runs; ``setting``: only "paper" or only "reduced" ones)."""
    if setting not in (None, "paper", "reduced"):
        raise ValueError(f"setting must be None, 'paper' or 'reduced', got {setting!r}")
    everything = [c for records in claims_by_notebook.values() for c in records
                  if setting is None or c.at_paper_setting == (setting == "paper")]
    return {paper: verdict_counts((c for c in everything if c.paper == paper), post_hoc=post_hoc)
            for paper in SCOREBOARD_ORDER}

# sphinx-design badge colour per verdict; the word is always shown, so colour is never the only cue.
_BADGES = {"agrees": "success", "partly": "warning", "disagrees": "danger", "inconclusive": "info",
           "not tested": "secondary"}

def _badge(verdict: str) -> str:
    return f"{{bdg-{_BADGES[verdict]}}}`{verdict}`"

def _html_badge(verdict: str) -> str:
    tone = _BADGES[verdict]
    return f'<span class="sd-sphinx-override sd-badge sd-bg-{tone} sd-bg-text-{tone}">{verdict}</span>'

def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")

CLAIM_WORDS = 20  # the most words of a claim in the scoreboard's first section
REASON_WORDS = 25  # the most words of its reason there
TITLE_WORDS = 12  # the most words of a claim in a closed record's title

def clip_words(text: str, n: int) -> str:
    """``text`` cut to its first ``n`` words, with an ellipsis where it was cut.

    Examples
    --------
    >>> clip_words("one two three four", 2), clip_words("one two", 2)
    ('one two…', 'one two')
    """
    if n < 1: raise ValueError(f"n must be a positive number of words, got {n!r}")
    words = str(text).split()
    return " ".join(words) if len(words) <= n else " ".join(words[:n]) + "…"

def _top_level(text: str, sep: str = "; ") -> list[str]:
    """``text`` split at ``sep`` outside parentheses and brackets."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        depth += ch in "([" and 1 or ch in ")]" and -1 or 0
        if depth <= 0 and text.startswith(sep, i):
            parts.append(text[start:i]); start = i + len(sep); i += len(sep); continue
        i += 1
    return [p for p in parts + [text[start:]] if p.strip()]

_AGREEING_PART = re.compile(r":\s*agrees\s*$")

def short_reason(cause: str, n: int = REASON_WORDS) -> str:
    """The reason of a verdict in at most ``n`` words: of a compound cause ("a: agrees; b: disagrees (...)")
    the parts that do not agree come first; the full cause stays in the record.

    Examples
    --------
    >>> short_reason("x > 0: agrees; y < 1: disagrees (interval [2, 3])", 5)
    'y < 1: disagrees (interval…'
    """
    parts = _top_level(" ".join(str(cause).split()))
    differing = [p for p in parts if not _AGREEING_PART.search(p)]
    return clip_words("; ".join(differing if 0 < len(differing) < len(parts) else parts), n)

# ASCII math of the records (lambda_+, s_i^(2(L-1)), sqrt(hd)) as TeX, for the rendered pages.
_GREEK = ("alpha|beta|gamma|delta|epsilon|zeta|eta|theta|kappa|lambda|mu|rho|sigma|tau|phi|psi|omega")
_POWER = r"(?:\^\((?:[^()]|\([^()]*\))*\)|\^[A-Za-z0-9]+)?"
_ASCII_MATH = re.compile(
    rf"(?<![A-Za-z0-9_])(?:(?P<greek>{_GREEK})(?:_(?P<gsub>[A-Za-z0-9+]+))?(?P<gpow>{_POWER})"
    rf"|(?P<var>[A-Za-z])(?=[_^][A-Za-z0-9+(])(?:_(?P<vsub>[A-Za-z0-9+]+))?(?P<vpow>{_POWER})"
    r"|sqrt\((?P<root>[A-Za-z0-9 ]+)\))(?![A-Za-z0-9_])")

_SIGNS = {" >= ": " ≥ ", " <= ": " ≤ ", " != ": " ≠ "}

def _tex(m: re.Match) -> str:
    def sub(s):
        if not s: return ""
        s = {"max": r"\max", "min": r"\min"}.get(s, s if len(s) <= 2 or not s.isalpha() else rf"\mathrm{{{s}}}")
        return f"_{{{s}}}"
    def power(p):
        if not p: return ""
        body = p[1:]
        return "^{" + (body[1:-1] if body.startswith("(") else body) + "}"
    if m.group("root") is not None:
        return rf"\sqrt{{{m.group('root')}}}"
    if m.group("greek"):
        return "\\" + m.group("greek") + sub(m.group("gsub")) + power(m.group("gpow"))
    return m.group("var") + sub(m.group("vsub")) + power(m.group("vpow"))

def render_math(text: str, markup: str = "myst") -> str:
    """``text`` with its ASCII math (Greek names, ``x_i^(k)``, ``sqrt(.)``) as TeX: ``$..$`` in MyST, MathJax
    spans in HTML (the rest escaped); a text that already holds ``$`` is left as it is.

    Examples
    --------
    >>> render_math("s_i^(2(L-1)) above lambda_+ at eta = 1")
    '$s_{i}^{2(L-1)}$ above $\\\\lambda_{+}$ at $\\\\eta$ = 1'
    """
    if markup not in ("myst", "html"): raise ValueError(f"markup must be 'myst' or 'html', got {markup!r}")
    text = " ".join(str(text).split())
    for ascii_, sign in _SIGNS.items():
        text = text.replace(ascii_, sign)
    if markup == "myst":
        return text if "$" in text else _ASCII_MATH.sub(lambda m: f"${_tex(m)}$", text)
    out, at = [], 0
    for m in ([] if "$" in text else _ASCII_MATH.finditer(text)):
        out += [_html.escape(text[at:m.start()]),
                f'<span class="math notranslate nohighlight">\\({_html.escape(_tex(m))}\\)</span>']
        at = m.end()
    return "".join(out + [_html.escape(text[at:])])

def _anchor(section: str) -> str:
    from docutils.nodes import make_id
    return make_id(section)

class _Html(_Plain):
    """An HTML fragment that displays as HTML (its text form for nbval), for the landing page's glue."""
    def __init__(self, html: str, text: str) -> None:
        super().__init__(text)
        self.html = html

    def _repr_html_(self) -> str:
        return self.html

class Scoreboard:
    """The claims of several chapters: counts per paper, the differences one line each, and every record in
    a closed dropdown, linking each claim to its section (``links="ref"``) or to ``<notebook stem>.html#<label>``
    (``links="html"``, for standalone reruns in one folder)."""
    def __init__(self, claims_by_notebook: dict[Path, list[Claim]], *, links: str = "ref") -> None:
        if links not in ("ref", "html"): raise ValueError(f"links must be 'ref' or 'html', got {links!r}")
        self.claims_by_notebook = claims_by_notebook
        self.links = links

    def rows(self, paper: str, *, variants: bool = False, kind: str | None = None) -> list[tuple[Path, Claim]]:
        """The records of ``paper`` of one ``kind`` (``variants=True``: ``"variant"``), in the paper's order."""
        kind = kind or ("variant" if variants else "claim")
        if kind not in KINDS: raise ValueError(f"kind must be one of {list(KINDS)}, got {kind!r}")
        rows = [(nb, c) for nb, records in self.claims_by_notebook.items() for c in records if c.paper == paper
                and ("check" if c.kind == "check" else "variant" if c.variant_of else "claim") == kind]
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

    def _html_link(self, notebook: Path, claim: Claim) -> str:
        anchor = f"#{_anchor(claim.section)}" if claim.section else ""
        return f'<a href="{notebook.stem}.html{anchor}">{_html.escape(" ".join(claim.where.split()))}</a>'

    @staticmethod
    def _setting(claim: Claim) -> str:
        return _cell(claim.setting_text)

    # -- the first screen: counts per paper, then the differences one line each

    def counts_html(self) -> str:
        """The counted claims per paper and verdict: a paper's name heads its row of counts (five columns) of the
        claims decided in advance; the claims decided on a criterion chosen after the runs follow in a row apart."""
        counts = paper_counts(self.claims_by_notebook)
        later = paper_counts(self.claims_by_notebook, post_hoc=True)
        head = "".join(f"<th>{v}</th>" for v in VERDICTS)
        body = []
        for paper in SCOREBOARD_ORDER:
            n, m = sum(counts[paper].values()), sum(later[paper].values())
            after = f" (+{m} chosen after the runs)" if m else ""  # their verdicts: the paper's own lines
            body.append(f'<tr class="htlib-counts-paper"><th colspan="{len(VERDICTS)}" scope="colgroup">'
                        f'{paper_name(paper, markup="html")}: {n} counted claim{"" if n == 1 else "s"}{after}'
                        "</th></tr>")
            body.append("<tr>" + "".join(f"<td>{counts[paper][v]}</td>" for v in VERDICTS) + "</tr>")
        return (f'<div class="htlib-scoreboard htlib-counts"><table><thead><tr>{head}</tr></thead>'
                f'<tbody>{"".join(body)}</tbody></table></div>')

    def counts_text(self) -> str:
        counts = paper_counts(self.claims_by_notebook)
        later = paper_counts(self.claims_by_notebook, post_hoc=True)
        return "\n".join(f"{paper}: " + ", ".join(f"{n} {v}" for v, n in counts[paper].items())
                         + "; after the runs: " + ", ".join(f"{n} {v}" for v, n in later[paper].items())
                         for paper in SCOREBOARD_ORDER)

    def difference_line(self, notebook: Path, claim: Claim, markup: str = "myst") -> str:
        """One line: the verdict, the claim (at most :data:`CLAIM_WORDS` words), the reason (at most
        :data:`REASON_WORDS`) and the link to the evidence."""
        text, reason = clip_words(claim.claim, CLAIM_WORDS), short_reason(claim.cause)
        if markup == "html":
            return (f"{_html_badge(claim.verdict)} {render_math(text, 'html')} "
                    f"— <span class=\"htlib-reason\">{render_math(reason, 'html')}</span> "
                    f"({self._html_link(notebook, claim)})")
        return (f"{_badge(claim.verdict)} {_cell(render_math(text))} "
                f"— <span class=\"htlib-reason\">{_cell(render_math(reason))}</span> ({self._link(notebook, claim)})")

    def not_agreeing(self) -> list[tuple[Path, Claim]]:
        """Every counted record whose verdict is not "agrees" (the differences, then those not tested), paper
        by paper: the first section of the scoreboard."""
        return [(nb, c) for paper in SCOREBOARD_ORDER for nb, c in self.rows(paper) if c.verdict != "agrees"]

    def differences_markdown(self) -> str:
        """The first section: one line per :meth:`not_agreeing` record, paper by paper."""
        parts: list[str] = []
        for paper in SCOREBOARD_ORDER:
            if rows := [(nb, c) for nb, c in self.not_agreeing() if c.paper == paper]:
                parts.append(f"**{paper_name(paper)}**\n")
                parts.append("\n".join(f"- {self.difference_line(nb, c)}" for nb, c in rows) + "\n")
        if not parts:
            return "*Every counted claim agrees.*"
        return "\n".join([":::{container} htlib-scoreboard htlib-differences", *parts, ":::", ""])

    def differences_html(self, verdicts: Sequence[str] = ("disagrees",)) -> str:
        """The differences of ``verdicts`` as an HTML list, paper by paper (for the landing page)."""
        items = [f"<li><strong>{paper_name(c.paper, markup='html')}.</strong> {self.difference_line(nb, c, 'html')}"
                 "</li>" for nb, c in self.differences() if c.verdict in verdicts]
        return f'<ul class="htlib-scoreboard htlib-landing-differences">{"".join(items)}</ul>' if items else ""

    # -- the full records, each in a closed dropdown

    def _fields(self, notebook: Path, c: Claim, base: Claim | None = None) -> list[tuple[str, str]]:
        first = "none: the criterion was chosen after the numbers were seen"
        fields_ = [("variant of", base.claim if base else c.variant_of) if c.variant_of else None,
                   ("identity" if c.kind == "check" else "claim", c.claim),
                   ("check" if c.kind == "check" else "criterion (chosen after the runs)" if c.post_hoc
                    else "criterion (fixed in advance)", c.criterion),
                   ("setting", c.setting_text) if c.kind != "variant"
                   and not c.variant_of else ("variant", c.setting),
                   ("measured", c.measured) if str(c.measured).strip() else None,
                   ("uncertainty", c.uncertainty) if c.uncertainty.strip() else None,
                   ("result" if c.kind == "check" else "verdict", _CHECK_RESULT[c.verdict] if c.kind == "check"
                    else c.verdict),
                   ("why it cannot fail" if c.kind == "check" else "cause", c.cause) if c.cause.strip() else None,
                   ("level fixed first", first if c.revised_from is None else _fmt(c.revised_from))
                   if c.revised_because.strip() else None,
                   ("why it changed", c.revised_because) if c.revised_because.strip() else None]
        return [f for f in fields_ if f]

    def record_markdown(self, notebook: Path, c: Claim, *, colons: int = 3, base: Claim | None = None,
                        evidence: bool = True) -> str:
        """One record as a closed dropdown: verdict, where and the claim in its title, every field inside (and,
        with ``evidence``, the link to the section that holds the evidence)."""
        fence = ":" * colons
        verdict = _CHECK_RESULT[c.verdict] if c.kind == "check" else c.verdict
        title = (f"{{bdg-{_BADGES[c.verdict]}}}`{verdict}` {_cell(c.where)}: "
                 f"{_cell(clip_words(c.setting if c.variant_of else c.claim, TITLE_WORDS))}")
        # The record's own text, as the chapter stored it (the first section renders its math).
        body = [f"{name}\n: {_cell(value)}\n" for name, value in self._fields(notebook, c, base)]
        if evidence:
            body.append(f"evidence\n: {self._link(notebook, c)}\n")
        return "\n".join([f"{fence}{{dropdown}} {title}", f":class-container: htlib-record", "", *body, fence, ""])

    def papers_markdown(self) -> str:
        """Every counted record, paper by paper in the paper's order, each in a closed dropdown."""
        parts: list[str] = []
        for paper in SCOREBOARD_ORDER:
            if not (rows := self.rows(paper)):
                continue
            parts.append(f"**{paper_name(paper)}.** {_tally(c for _, c in rows)}.\n")
            parts += [self.record_markdown(nb, c) for nb, c in rows]
        if not parts:
            return "*No chapter has published claims yet.*"
        return "\n".join([":::::{container} htlib-scoreboard htlib-paper", *parts, ":::::", ""])

    def _section(self, title: str, records: list[str], kind: str, empty: str) -> str:
        if not records:
            return empty
        return "\n".join([f"::::{{dropdown}} {title} ({len(records)})", f":class-container: htlib-section htlib-{kind}",
                          "", *records, "::::", ""])

    def variants_markdown(self) -> str:
        records = []
        for paper in SCOREBOARD_ORDER:
            for nb, c in self.rows(paper, variants=True):
                base = next((b for b in self.claims_by_notebook.get(nb, []) if b.key == c.variant_of), None)
                records.append(self.record_markdown(nb, c, base=base))
        return self._section("Variants of the claims, never counted", records, "variants",
                             "*No chapter reports variants.*")

    def checks_markdown(self) -> str:
        records = [self.record_markdown(nb, c)
                   for paper in SCOREBOARD_ORDER for nb, c in self.rows(paper, kind="check")]
        return self._section("Numerical checks, never counted", records, "checks",
                             "*No chapter reports numerical checks.*")

    def revisions_markdown(self) -> str:
        first = "none: the criterion was chosen after the numbers were seen"
        items = [f"- {_badge(c.verdict)} {self._link(nb, c)}: {_cell(clip_words(c.claim, CLAIM_WORDS))}"
                 f" — level fixed first: {_cell(first if c.revised_from is None else _fmt(c.revised_from))}; "
                 f"judged: {_cell(c.criterion)}. Why: {_cell(c.revised_because)}"
                 for nb, c in self.revisions()]
        if not items:
            return "*No level was changed after the numbers were seen.*"
        return "\n".join([f"::::{{dropdown}} Levels changed after the runs ({len(items)})",
                          ":class-container: htlib-section htlib-revisions", "", *items, "", "::::", ""])

    def _repr_markdown_(self) -> str:
        return self.papers_markdown()

    def __repr__(self) -> str:
        lines = []
        for paper in SCOREBOARD_ORDER:
            for nb, c in self.rows(paper) + self.rows(paper, variants=True) + self.rows(paper, kind="check"):
                tag = (" | check" if c.kind == "check" else f" | variant of {c.variant_of}" if c.variant_of else "")
                lines.append(f"{paper} | {nb.stem} | {c.where} | {c.verdict} | {c.measured}{tag}")
        return "\n".join(lines) if lines else "no claims"

def _tally(claims: Iterable[Claim], badge: bool = False) -> str:
    """The verdicts of the counted claims decided in advance, then apart those on a criterion chosen after the
    runs (verdicts with a count of 0 left out)."""
    claims = list(claims)

    def listed(post_hoc: bool) -> str:
        counts = verdict_counts(claims, post_hoc=post_hoc).items()
        return ", ".join(f"{_badge(v)} {n}" if badge else f"{n} {v}" for v, n in counts if n)

    ahead, later = listed(False), listed(True)
    return "; ".join(filter(None, (ahead or "none decided in advance",
                                   f"on a criterion chosen after the runs: {later}" if later else "")))

FINDING_GROUPS = 8  # the most lines of a chapter's findings box
FINDING_CLAIM_WORDS = 14  # a differing claim in the box, in words
FINDING_REASON_WORDS = 20  # its reason there
POSTHOC = "criterion chosen after the numbers were seen"  # how the box marks a revised criterion

def findings_markdown(claims: Sequence[Claim]) -> str:
    """A chapter's "what the book finds" box, from its records alone: one line per section of evidence (at most
    :data:`FINDING_GROUPS`) with its counted claims' verdicts, and under it one line per claim that does not agree
    or whose criterion was chosen after the numbers were seen (the claim and its reason, both clipped; the record
    itself is in the chapter's claims table).

    Examples
    --------
    >>> rows = [Claim("003", "Fig. 1", "a spike appears", "x > 0", "x = 1", "agrees", setting="paper",
    ...               section="s-fig1"),
    ...         Claim("003", "Fig. 2", "the tail is heavy", "a < 2", "a = 3", "disagrees", setting="paper",
    ...               cause="a = 3 > 2", section="s-fig2")]
    >>> print(findings_markdown(rows))
    :::{container} htlib-findings
    - {ref}`s-fig1`: {bdg-success}`agrees` 1
    - {ref}`s-fig2`: {bdg-danger}`disagrees` 1
      - {bdg-danger}`disagrees` the tail is heavy — <span class="htlib-reason">a = 3 > 2</span>
    :::
    """
    counted = [c for c in claims if c.counted]
    if not counted:
        return "*No counted claim in this run.*"
    groups: dict[str, list[Claim]] = {}
    for c in counted:
        groups.setdefault(c.section, []).append(c)
    keys = list(groups)
    if len(keys) > FINDING_GROUPS:  # the last line gathers the sections beyond the box's length
        keys, rest = keys[:FINDING_GROUPS - 1], keys[FINDING_GROUPS - 1:]
        groups[rest[0]] = [c for k in rest for c in groups[k]]
        keys.append(rest[0])
    lines = []
    for key in keys:
        rows = groups[key]
        tally = _tally(rows, badge=True)
        where = f"{{ref}}`{key}`" if key else "elsewhere in the chapter"
        lines.append(f"- {where}: {tally}")
        same: dict[tuple[str, str], list[Claim]] = {}  # claims of one verdict and one reason share a line
        for c in rows:
            posthoc = bool(c.revised_because.strip())
            if c.verdict != "agrees" or posthoc:
                reason = short_reason(c.cause, FINDING_REASON_WORDS) if c.cause.strip() else ""
                if posthoc and POSTHOC not in reason:
                    reason = "; ".join(filter(None, (reason, POSTHOC)))
                same.setdefault((c.verdict, reason), []).append(c)
        for (verdict, reason), cs in same.items():
            words = FINDING_CLAIM_WORDS if len(cs) == 1 else max(5, FINDING_CLAIM_WORDS // len(cs))
            what = "; ".join(clip_words(c.claim, words) for c in cs) + (f" ({len(cs)} claims)" if len(cs) > 1 else "")
            lines.append(f"  - {_badge(verdict)} {_cell(render_math(what))}"
                         f" — <span class=\"htlib-reason\">{_cell(render_math(reason))}</span>")
    return "\n".join([":::{container} htlib-findings", *lines, ":::"])

def glue_findings(claims: Sequence[Claim], name: str = "findings") -> str:
    """Glue :func:`findings_markdown` under ``name`` (shown by ``{glue:md}`` at the top of the chapter)."""
    from myst_nb import glue
    text = findings_markdown(claims)
    glue(name, _Markdown(text), display=False)
    return GluedText(text)

def counts(board: Scoreboard) -> _Html:
    """The counts per paper and verdict (an HTML table whose columns fit the text column)."""
    return _Html(board.counts_html(), board.counts_text())

def differences(board: Scoreboard) -> _Markdown:
    """"Where the book and the papers differ": one line per counted claim whose verdict is not "agrees"."""
    return _Markdown(board.differences_markdown())

def variants(board: Scoreboard) -> _Markdown:
    """The robustness variants of every chapter, in one closed section, for display in a notebook cell."""
    return _Markdown(board.variants_markdown())

def checks(board: Scoreboard) -> _Markdown:
    """The numerical checks of every chapter, in one closed section, for display in a notebook cell."""
    return _Markdown(board.checks_markdown())

def revisions(board: Scoreboard) -> _Markdown:
    """The levels changed after the numbers were seen, in one closed section, for display in a notebook cell."""
    return _Markdown(board.revisions_markdown())

def scoreboard(source: str | Path, *, links: str = "ref") -> Scoreboard:
    """The scoreboard of every executed notebook (``*.ipynb``) in the folder ``source``."""
    folder = Path(source)
    if not folder.is_dir(): raise ValueError(f"source must be a folder of executed chapters, got {str(source)!r}")
    return Scoreboard(collect_claims(sorted(folder.glob("*.ipynb"))), links=links)

def glue_counts(board: Scoreboard) -> dict[str, dict[str, int]]:
    """Glue ``count_<paper>_<verdict>`` ("a / b": at the paper's / a reduced setting), and for the landing
    page ``landing_counts`` (the counts table) and ``landing_differences`` (every counted claim that disagrees,
    one line each, math rendered); return the counts over both settings."""
    from myst_nb import glue
    split = {s: paper_counts(board.claims_by_notebook, setting=s) for s in ("paper", "reduced")}
    for paper in SCOREBOARD_ORDER:
        at, off = split["paper"][paper], split["reduced"][paper]
        for verdict in VERDICTS:
            glue_text(f"count_{paper}_{verdict.replace(' ', '_')}", f"{at[verdict]} / {off[verdict]}")
        glue_text(f"count_{paper}_total", f"{sum(at.values())} / {sum(off.values())}")
    glue("landing_counts", counts(board), display=False)
    later = paper_counts(board.claims_by_notebook, post_hoc=True)
    for paper in SCOREBOARD_ORDER:
        glue_text(f"count_{paper}_posthoc", f"{sum(later[paper].values())}")
    rows = [f"{c.paper} | {c.where} | {c.verdict}" for _, c in board.differences() if c.verdict == "disagrees"]
    glue("landing_differences", _Html(board.differences_html() or "<p><em>No counted claim disagrees.</em></p>",
                                      "\n".join(rows) or "none"), display=False)
    n_other = sum(c.verdict != "disagrees" for _, c in board.differences())
    glue_text("landing_n_other", f"{n_other}")
    return paper_counts(board.claims_by_notebook)

def split_counts_table(board: Scoreboard) -> _Markdown:
    """The counts per paper, split by setting (the paper's own or a reduced one), in a closed section."""
    items = []
    for paper in SCOREBOARD_ORDER:
        for setting, label in (("paper", "at the paper's setting"), ("reduced", "in a reduced setting")):
            c = paper_counts(board.claims_by_notebook, setting=setting)[paper]
            items.append(f"- {paper_name(paper)}, {label}: " + ", ".join(f"{n} {v}" for v, n in c.items()))
    return _Markdown("\n".join(["::::{dropdown} Counts by setting", ":class-container: htlib-section htlib-split",
                                "", *items, "", "::::", ""]))


# The one judge: Spec rows (each level written once) and a Measurement per key, through one list of gates.

STATISTICS: tuple[str, ...] = ("mean", "sign", "bootstrap", "value", "parts")
MIN_DRAWS = 100  # the fewest bootstrap refits whose percentile interval the judge reads

_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*\Z")
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

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not _KEY.match(self.key):
            raise ValueError(f"key must be a name of letters, digits, '_' and '-' (it names glue keys), got {self.key!r}")
        if self.paper not in PAPERS: raise ValueError(f"paper must be one of {sorted(PAPERS)}, got {self.paper!r}")
        for name in ("where", "claim", "measurement", "setting"):
            if not str(getattr(self, name)).strip(): raise ValueError(f"{name} must not be empty (spec {self.key!r})")
        if self.statistic not in STATISTICS:
            raise ValueError(f"statistic must be one of {list(STATISTICS)}, got {self.statistic!r}")
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
    if a.ndim == 0:  # a single fit estimate given as a number
        a = a[None]
    if a.ndim != 1: raise ValueError(f"{name} must be 1-D (one value per run), got shape {a.shape}")
    return tuple(a.tolist())

@dataclass(frozen=True)
class Measurement:
    """What a chapter read for one :class:`Spec`: a value per run (or a fit and its bootstrap ``draws``), or why
    it was not run or ``cannot_test``.  Non-finite values are refused unless ``cannot_test`` says why."""
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

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", _floats("values", self.values))
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
        if self.ran == bool(self.not_run_reason.strip()):
            raise ValueError("not_run_reason is required with ran=False and only then "
                             f"(ran={self.ran}, not_run_reason={self.not_run_reason!r})")
        if self.ran and not self.cannot_test.strip() and not self.parts:
            if not self.values:
                raise ValueError("values must not be empty for a measurement that ran (else set cannot_test or ran=False)")
            for name in ("values", "draws"):
                if bad := [i for i, v in enumerate(getattr(self, name)) if not math.isfinite(v)]:
                    raise ValueError(f"{name} holds non-finite entries at {bad} (a diverged run or a failed fit?): "
                                     "set cannot_test naming it, or drop them and say so in note")

    @classmethod
    def not_run(cls, reason: str) -> "Measurement":
        return cls(ran=False, not_run_reason=reason)

def _runs(spec: Spec, m: Measurement) -> str:
    n = len(m.values)
    return m.runs_text.strip() or {"bootstrap": "one fit", "value": "one exact evaluation"}.get(
        spec.statistic, f"{n} run{'s' if n != 1 else ''}")

_SIDE = {"agrees": "lies entirely where {crit} holds", "disagrees": "lies entirely where {crit} fails",
         "inconclusive": "straddles the level of {crit}"}
_CHOSEN = "; the criterion was chosen after the numbers were seen ({}), so this verdict is not out of sample"

def _read(spec: Spec, m: Measurement, level) -> tuple[str, str, str, str]:
    """The statistic of ``spec`` at ``level``: ``(verdict, cause, measured, uncertainty)``."""
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
        return verdict, cause, measured, f"{_runs(spec, m)}; {what} {ci}"
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
    """``(verdict, cause, measured, uncertainty)`` from the first gate that applies: not run; cannot test; too few
    runs or refits; else :func:`_read` ("inconclusive" for a failure at a reduced setting, no ``reduction_check``)."""
    if not m.ran:
        return "not tested", f"not run: {m.not_run_reason.strip()}", "", ""
    n, gate = len(m.values), ""
    if m.cannot_test.strip():
        gate = f"the setting cannot test it: {m.cannot_test.strip()}"
    elif spec.statistic in ("mean", "sign") and n < spec.min_runs:
        gate = f"too few independent runs: {n} ({_runs(spec, m)}) where the criterion needs at least {spec.min_runs}"
    elif spec.statistic == "bootstrap" and len(m.draws) < MIN_DRAWS:
        gate = f"too few bootstrap refits: {len(m.draws)} where the percentile interval needs at least {MIN_DRAWS}"
    if spec.statistic == "parts":
        verdict, cause, measured, uncertainty = _assess_parts(spec, m)
        if gate:
            verdict, cause = "inconclusive", gate
        elif spec.revised_because.strip():
            cause += _CHOSEN.format(spec.revised_because.strip())
    elif gate:
        verdict, cause = "inconclusive", gate
        try:
            measured, uncertainty = _read(spec, m, spec.level)[2:]
        except ValueError:  # nothing finite to show
            measured, uncertainty = "no usable value", _runs(spec, m)
    else:
        verdict, cause, measured, uncertainty = _read(spec, m, spec.level)
        setting = m.setting.strip() or spec.setting
        if (verdict == "disagrees" and not _at_paper(spec, m) and spec.kind == "claim"
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
            cause += _CHOSEN.format(spec.revised_because.strip())
    if m.note.strip():
        uncertainty = f"{uncertainty}; {m.note.strip()}" if uncertainty else m.note.strip()
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
                                 reduction_check=pm.reduction_check.strip() or m.reduction_check.strip(),
                                 deviations=m.deviations if pm.deviations is None else pm.deviations)
        read.append((part, _assess(part, pm)))
    verdicts = [v for _, (v, *_rest) in read]
    verdict = ("not tested" if set(verdicts) == {"not tested"} else
               combine_verdicts(["inconclusive" if v == "not tested" else v for v in verdicts]))
    cause = "; ".join(f"{p.criterion}: {v}" + (f" ({c})" if v != "agrees" or p.revised_because.strip() else "")
                      for p, (v, c, _, _) in read)
    measured = "; ".join(f"{p.measurement}: {x}" for p, (_, _, x, _) in read if x)
    uncertainty = "; ".join(f"{p.measurement}: {u}" for p, (_, _, _, u) in read if u)
    return verdict, cause, measured, uncertainty

def _at_paper(spec: Spec, m: Measurement) -> bool:
    """At the paper's setting: no parameter differs from the paper's, where the chapter compared them
    (``m.deviations``), else the setting its comparison wrote."""
    if m.deviations is not None:
        return not m.deviations
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
                 variant_of=spec.variant_of, threshold=spec.level, reduction_check=measurement.reduction_check.strip(),
                 kind=spec.kind, revised_from=None if revised is None else revised.revised_from,
                 revised_because=revised_because,
                 at_paper=None if measurement.deviations is None else not measurement.deviations)

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
                                                                 "revised_because", "share", "margin")}
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

_GLUED = ("verdict", "measured", "uncertainty", "cause", "criterion", "level")

def claim_glue(claims: Sequence[Claim], prefix: str = "") -> dict[str, str]:
    """The glue names ``<prefix><key>_<field>`` and texts of each record's ``_GLUED`` fields.

    Examples
    --------
    >>> s = Spec("spike", "003", "§4", "a spike appears", "ratio", ">", 1.1, "mean")
    >>> claim_glue([judge(s, Measurement([2.5, 2.6, 2.7]))], "ch_")["ch_spike_verdict"]
    'agrees'
    """
    claims = list(claims)
    check_records(claims)
    if unnamed := [c.where for c in claims if not c.key]:
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

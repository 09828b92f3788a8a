"""The claim records: the :class:`Claim` type and its rules, and how a notebook stores, reads and glues them.

A chapter's records come from :func:`htlib.claims.judge`; :func:`htlib.scoreboard.publish_claims` stores them in
the notebook under :data:`CLAIMS_MIME`, where :func:`read_claims` and :func:`collect_claims` read them back for the
scoreboard.  :func:`glue_text`, :func:`glue_figure` and :func:`glue_claims` hand a chapter's numbers, figures and
verdicts to its prose.  This module imports no other htlib module at import time: the judge
(:mod:`htlib.claims`) and the page (:mod:`htlib.scoreboard`) both build on it."""

from __future__ import annotations

import html as _html
import json
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Iterable, Literal, Sequence

__all__ = [
    "Claim", "Criterion", "check_records", "verdict_counts", "VERDICTS", "PAPER_SETTING", "PAPERS", "PAPER_NAMES",
    "paper_name", "KINDS", "REASONS", "CLAIMS_MIME", "CLAIMS_GLUE_KEY", "read_claims", "collect_claims", "glue_text",
    "glue_figure", "GluedText", "claim_glue", "glue_claims",
]

Verdict = Literal["agrees", "partly", "disagrees", "inconclusive", "not tested"]
VERDICTS: tuple[str, ...] = ("agrees", "partly", "disagrees", "inconclusive", "not tested")  # scoreboard order
PAPER_SETTING = "paper"  # the ``setting`` of a claim measured at the paper's own protocol

# The papers as the scoreboard and the landing page name them: short title and authors (book/references.bib).
PAPER_NAMES: dict[str, tuple[str, str]] = {
    "003": ("Kothapalli et al.", "From spikes to heavy tails"),
    "001": ("Hodgkinson, Wang & Mahoney", "Heavy-tailed mechanistic universality"),
    "004": ("HiLD 2026, authors not given", "How the Hessian spectrum of linear networks depends on data"),
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
# Why a claim was not run or cannot be tested here, in a few words: a code and its numbers (a reading's ``why`` and
# ``why_numbers``), worded by the scoreboard's lines and the findings box; the chapter's full reason stays in the
# record.  Each text is at most 8 words once filled, so that a line stays within its word budget.
REASONS: dict[str, str] = {
    "too_slow": "needs {time}",
    "not_in_run": "this run lacks {what}",
    "off": "off by default (make paper runs it)",
    "no_data": "needs {data}, not at hand offline",
    "short_budget": "the {steps} default steps end before the level",
    "not_converged": "{k} of {n} runs not converged",
    "not_at_minimum": "gradient descent cannot sit at these minimizers",
    "flat_loss": "the loss moves only {ratio}-fold",
    "spike_in_band": "a spike alone lands in the band",
    "nonfinite": "{k} of {n} runs give no finite value",
}

_OPS = {"<": lambda x, t: x < t, "<=": lambda x, t: x <= t, ">": lambda x, t: x > t, ">=": lambda x, t: x >= t,
        "in": lambda x, t: t[0] <= x <= t[1]}

def _fmt(value, fmt: str = ".3g") -> str:
    """A number, or a ``(low, high)`` pair as ``[low, high]``, in the format ``fmt`` (an unbounded end as ``∞``, an
    undefined value as ``–``, as :func:`htlib.plotting.plain_number` writes them)."""
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_fmt(v, fmt) for v in value) + "]"
    if value is None or not math.isfinite(float(value)):
        from htlib.plotting import plain_number
        return plain_number(value)
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
    ``revised_because`` why (alone: the criterion was chosen after the numbers were seen).  ``readings`` holds
    the numbers behind the verdict as fields, one dict per part (``htlib.claims``: estimate, interval ends, runs,
    the sign count, the gate's code, the verdict at the earlier level); the page words its findings from them.  ``short``
    is the claim in a dozen words, as the findings box states it.

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
    readings: list = field(default_factory=list)
    short: str = ""

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

def check_records(claims: Sequence[Claim]) -> None:
    """Check the rules that span records (unique keys, every ``variant_of`` naming a key); ValueError if not."""
    keys = [c.key for c in claims if c.key]
    if dupes := sorted({k for k in keys if keys.count(k) > 1}):
        raise ValueError(f"claim keys must be unique within a chapter, repeated: {dupes}")
    for c in claims:
        if c.variant_of and c.variant_of not in keys:
            raise ValueError(f"variant_of={c.variant_of!r} of {c.where!r} names no claim key of the chapter "
                             f"(keys: {sorted(keys)})")

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

# How a notebook stores its records, reads them back and glues numbers for its prose.

# Left out of the stored JSON at these defaults, so older records stay byte-identical.
_OPTIONAL_FIELDS = {"kind": "claim", "revised_from": None, "revised_because": "", "at_paper": None, "readings": [],
                    "short": ""}

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

def glue_text(name: str, value, fmt: str = ".3g", undefined: str = "not defined at these parameters") -> str:
    """Format ``value`` (strings as they are) and glue it under ``name`` for the prose; return the text.

    A value a run may leave undefined (None, NaN) or unbounded (inf) is written by
    :func:`htlib.plotting.plain_number`: ``–`` with the reason ``undefined`` in words, or ``∞``."""
    from myst_nb import glue
    if hasattr(value, "item"):
        value = value.item()  # NumPy 2 scalars repr as np.float64(...)
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        from htlib.plotting import plain_number
        text = plain_number(value, undefined=undefined)
    else:
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

_GLUED = ("verdict", "measured", "uncertainty", "cause", "criterion", "level")

def claim_glue(claims: Sequence[Claim], prefix: str = "") -> dict[str, str]:
    """The glue names ``<prefix><key>_<field>`` and texts of each record's ``_GLUED`` fields.

    Examples
    --------
    >>> from htlib.claims import Measurement, Spec, judge
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

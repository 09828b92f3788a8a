"""The page side of the claims: a chapter's table of records, its findings box, and the scoreboard.

:func:`publish_claims` stores a chapter's records (:mod:`htlib.records`) and returns its table of records
(:func:`claims_frame`; :func:`robustness_frame` and :func:`checks_frame` show the variants and checks);
:func:`findings_markdown` writes the "what the book finds" box at the top of a chapter; :func:`scoreboard` reads
every executed chapter into a :class:`Scoreboard`, which ``book/scoreboard.ipynb`` shows section by section
(:func:`counts`, :func:`differences`, :func:`variants`, :func:`checks`, :func:`revisions`,
:func:`split_counts_table`) and whose counts :func:`glue_counts` hands to the landing page."""

from __future__ import annotations

import functools
import html as _html
import re
from pathlib import Path
from typing import Iterable, Sequence

from htlib.records import (CLAIMS_GLUE_KEY, KINDS, PAPER_NAMES, REASONS, VERDICTS, Claim, GluedText, _ClaimsPayload,
                           _fmt, _Markdown, _Plain, check_records, collect_claims, glue_text, paper_name, verdict_counts)

__all__ = [
    "DIFFERENCES", "SCOREBOARD_ORDER", "where_key", "claims_frame", "robustness_frame", "checks_frame",
    "publish_claims", "paper_counts", "CLAIM_WORDS", "REASON_WORDS", "TITLE_WORDS", "DIFFERENCE_WORDS", "clip_words", "short_reason",
    "render_math", "Scoreboard", "FINDING_LINES", "reading_text", "reading_short", "finding_short", "finding_text", "findings_markdown", "glue_findings", "counts",
    "differences", "variants", "checks", "revisions", "scoreboard", "glue_counts", "split_counts_table",
    "DATASET_FIELDS", "claims_dataset", "write_claims_dataset",
]

DIFFERENCES: tuple[str, ...] = ("disagrees", "partly", "inconclusive")  # listed first on the scoreboard
SCOREBOARD_ORDER: tuple[str, ...] = ("003", "001", "004", "MM21", "MP")  # the papers in the order pages list them

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

def publish_claims(claims: Sequence[Claim], *, chapter: str):
    """Store the records in the notebook (glued under :data:`htlib.records.CLAIMS_GLUE_KEY`) and return the claims
    table (:func:`claims_frame`); the chapter's records must pass :func:`htlib.records.check_records`."""
    claims = list(claims)
    if not claims: raise ValueError("claims must not be empty")
    if not all(isinstance(c, Claim) for c in claims): raise TypeError("claims must be Claim records")
    check_records(claims)
    from myst_nb import glue
    glue(CLAIMS_GLUE_KEY, _ClaimsPayload(claims, chapter), display=False)
    return claims_frame(claims)

# The scoreboard: every chapter's records, one table per paper.

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
DIFFERENCE_WORDS = 15  # the most words of a difference line's number (after its verdict and place)

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
        """The counted claims per paper and verdict: a paper's short title heads its row of counts (five columns)
        of the claims decided in advance, on one line at 1280 px so that the first differences share the first
        screen; the claims decided on a criterion chosen after the runs are counted beside the title."""
        counts = paper_counts(self.claims_by_notebook)
        later = paper_counts(self.claims_by_notebook, post_hoc=True)
        head = "".join(f"<th>{v}</th>" for v in VERDICTS)
        body = []
        for paper in SCOREBOARD_ORDER:
            n, m = sum(counts[paper].values()), sum(later[paper].values())
            after = f" (+{m} chosen after the runs)" if m else ""  # their verdicts: the paper's own lines
            title = _html.escape(PAPER_NAMES[paper][1])  # the authors are on each paper's lines below
            body.append(f'<tr class="htlib-counts-paper"><th colspan="{len(VERDICTS)}" scope="colgroup">'
                        f'<em>{title}</em>: {n} claim{"" if n == 1 else "s"}{after}</th></tr>')
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
        """One line of at most about 15 words: the verdict, the place in the paper (the link to the evidence) and
        the deciding number (:func:`reading_short`); the claim itself is in its record below."""
        said = reading_short(claim)
        if markup == "html":
            return (f"{_html_badge(claim.verdict)} {self._html_link(notebook, claim)}: "
                    f"<span class=\"htlib-reason\">{render_math(said, 'html')}</span>")
        return (f"{_badge(claim.verdict)} {self._link(notebook, claim)}: "
                f"<span class=\"htlib-reason\">{_cell(render_math(said))}</span>")

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
                 f"{_cell(render_math(clip_words(c.setting if c.variant_of else c.claim, TITLE_WORDS)))}")
        # The record's own text, as the chapter stored it; its title renders the math.
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

FINDING_READINGS = 1  # the readings a finding words (the deciding one); the other parts are counted
FINDING_LINES = 8  # the most lines of a findings box
FINDING_MEASURE_WORDS = 10  # a finding names its measurement when the name has at most this many words
_OP_WORDS = {">": "above", ">=": "at least", "<": "below", "<=": "at most", "in": "inside", "==": "equal to"}
_PLURAL = {"agrees": "agree", "disagrees": "disagree", "partly": "partly agree"}

def _band(r: dict) -> str:
    """A reading's interval as printed after its estimate (``" [low, high]"``), or ``""`` without one."""
    fmt = r.get("fmt", ".3g")
    return f" [{_fmt(r['low'], fmt)}, {_fmt(r['high'], fmt)}]" if r.get("low") is not None and r.get("high") is not None else ""

def _counted(n: int, verdict: str) -> str:
    """``"3 agree"``, ``"1 partly agrees"``: a count of verdicts in words."""
    if n == 1:
        return f"1 {'partly agrees' if verdict == 'partly' else verdict}"
    return f"{n} {_PLURAL.get(verdict, verdict)}"

def _level(level, fmt: str) -> str:
    return f"[{_fmt(level[0], fmt)}, {_fmt(level[1], fmt)}]" if isinstance(level, (list, tuple)) else _fmt(level, fmt)

def reading_text(r: dict) -> str:
    """One reading of a record (``Claim.readings``) in words: the measurement, its number with the interval or
    the count and the runs, the level, and what moved the verdict (a gate, a level revised after the runs).

    Examples
    --------
    >>> reading_text({"measurement": "alpha", "statistic": "mean", "op": "<", "level": 2.0, "fmt": ".3g",
    ...               "estimate": 2.4, "low": 2.2, "high": 2.6, "runs": 5, "count": None, "gate": "",
    ...               "reason": "", "first_level": 3.0, "first_verdict": "agrees"})
    'alpha is 2.4 [2.2, 2.6] over 5 runs, where the claim needs below 2; at the level 3, set before the runs, it agrees'
    """
    fmt, m, gate = r.get("fmt", ".3g"), r["measurement"], r.get("gate", "")
    if gate == "not_run":
        return f"{m}: not run with these parameters ({r['reason']})"
    if gate == "cannot_test":  # the reason's first clause; the record holds the rest
        why = _top_level(r.get("reason", ""))[:1]
        return f"{m}: these runs cannot test it ({why[0]})" if why else f"{m}: cannot be tested here"
    need = f"where the claim needs {_OP_WORDS[r['op']]} {_level(r['level'], fmt)}" if r.get("level") is not None else ""
    est, low, high, runs = r.get("estimate"), r.get("low"), r.get("high"), r.get("runs")
    if r["statistic"] == "sign" and r.get("count") is not None:
        text = f"{m} {_OP_WORDS[r['op']]} {_level(r['level'], fmt)} in {r['count']} of {runs} runs"
    elif est is None:
        text = f"{m}: no usable value" + (f" ({runs} runs)" if runs else "")
    else:
        band = _band(r)
        over = {"bootstrap": " (one fit, its bootstrap interval)", "value": ""}.get(
            r["statistic"], f" over {r.get('unit') or f'{runs} run' + ('s' if runs != 1 else '')}")
        text = f"{m} is {_fmt(est, fmt)}{band}{over}, {need}"
    text += {"too_few_runs": ", too few runs to decide", "too_few_draws": ", too few bootstrap refits to decide",
             "reduced": f", at a reduced setting ({r.get('reason', '')})"}.get(gate, "")
    if r.get("first_level") is not None:
        text += (f"; at the level {_level(r['first_level'], fmt)}, set before the runs, it "
                 f"{'would read ' if r.get('first_verdict') != 'agrees' else ''}{r.get('first_verdict')}")
    return text

def finding_text(c: Claim) -> str:
    """What the book found for one record, in words: its readings that decide the verdict (the parts that do not
    agree, else those whose level was revised, else all), at most :data:`FINDING_READINGS` of them."""
    rs = list(c.readings)
    if not rs:
        return short_reason(c.cause, 60) if c.cause.strip() else c.measured
    shown = ([r for r in rs if r.get("verdict") != "agrees"] or [r for r in rs if r.get("first_level") is not None]
             or rs)
    text = "; ".join(reading_text(r) for r in shown[:FINDING_READINGS])
    rest = [r for r in rs if r not in shown[:FINDING_READINGS]]
    if rest:
        agree = sum(r.get("verdict") == "agrees" for r in rest)
        text += (f"; {len(rest)} more part{'s' if len(rest) > 1 else ''}"
                 + (f", {agree} agreeing" if agree < len(rest) else (" agree" if len(rest) > 1 else " agrees")))
    if c.revised_because.strip() and not any(r.get("first_level") is not None for r in rs):
        text += "; the criterion was chosen after the numbers were seen"
    return text

_POST_HOC_MARK = " (criterion chosen after the runs)"

def reading_short(c: Claim, mark_post_hoc: bool = True) -> str:
    """A record's deciding number in a dozen words: the number, its interval or count and runs, the level.

    Examples
    --------
    >>> r = {"measurement": "m", "statistic": "mean", "op": "in", "level": [0.35, 0.65], "fmt": ".3g",
    ...      "estimate": 0.99, "low": 0.64, "high": 1.34, "runs": 6, "count": None, "gate": "", "verdict": "disagrees"}
    >>> reading_short(Claim("003", "Fig. 8", "c", "m in [0.35, 0.65]", "0.99", "disagrees", setting="paper",
    ...                     cause="x", uncertainty="6 runs", readings=[r]))
    '0.99 [0.64, 1.34], 6 runs; the claim needs inside [0.35, 0.65]'
    """
    rs = [r for r in c.readings if r.get("verdict") != "agrees"] or list(c.readings)
    if not rs:  # a record written without its readings: its cause, cut to the line's length
        return short_reason(c.cause, DIFFERENCE_WORDS) if c.cause.strip() else c.verdict
    r = rs[0]
    fmt, gate, runs = r.get("fmt", ".3g"), r.get("gate", ""), r.get("runs")
    need = f"the claim needs {_OP_WORDS[r['op']]} {_level(r['level'], fmt)}" if r.get("level") is not None else ""
    if gate in ("not_run", "cannot_test") and r.get("why") in REASONS:
        text = (f"{'not run' if gate == 'not_run' else 'cannot test'}: "
                f"{REASONS[r['why']].format(**r.get('why_numbers', {}))}")
    elif gate in ("not_run", "cannot_test"):
        text = "not run with these parameters" if gate == "not_run" else "these runs cannot test it"
    elif r["statistic"] == "sign" and r.get("count") is not None:
        # a level of 0.5 reads a per-run 0/1 indicator: the count is of the runs where the claim's event holds
        text = (f"holds in {r['count']} of {runs} runs" if r.get("level") == 0.5 else
                f"{r['count']} of {runs} runs {_OP_WORDS[r['op']]} {_level(r['level'], fmt)}")
    elif r.get("estimate") is None:
        text = "no usable value"
    else:
        band = _band(r)
        text = f"{_fmt(r['estimate'], fmt)}{band}, {runs} run{'s' if runs != 1 else ''}; {need}"
    if gate == "too_few_runs":
        text += " (too few runs)"
    return text + (_POST_HOC_MARK if c.post_hoc and mark_post_hoc else "")

def finding_short(c: Claim, render=lambda text: text) -> str:
    """A record that does not agree (or was decided after the runs), as the findings box states it: the place, the
    claim in a dozen words (``Claim.short``), the book's deciding number (:func:`reading_short`), how many parts of
    a compound claim agree, and the verdict at the level set before the runs where the level was revised.
    ``render`` is applied to all but the short statement (the box types their ASCII math).

    Examples
    --------
    >>> r = {"measurement": "m", "statistic": "mean", "op": "<", "level": 0.5, "fmt": ".3g", "estimate": 0.66,
    ...      "low": 0.56, "high": 0.77, "runs": 5, "count": None, "gate": "", "verdict": "disagrees"}
    >>> finding_short(Claim("003", "Fig. 5(d)", "long sentence", "m < 0.5", "0.66", "disagrees", setting="paper",
    ...                     cause="x", uncertainty="5 runs", readings=[r], short="the alignment falls"))
    'Fig. 5(d), the alignment falls: m is 0.66 [0.56, 0.77], 5 runs; the claim needs below 0.5'
    """
    said = reading_short(c, mark_post_hoc=False)  # the mark goes last, after the parts
    rs = list(c.readings)
    r = next((r for r in rs if r.get("verdict") != "agrees"), rs[0] if rs else None)
    # what the number is, where its name is short enough for the box (an indicator's count says it in "holds in")
    if r is not None and len(str(r.get("measurement", "")).split()) <= FINDING_MEASURE_WORDS and not (
            r.get("gate") in ("not_run", "cannot_test") or (r["statistic"] == "sign" and r.get("level") == 0.5)):
        said = f"{r['measurement']}{': ' if r['statistic'] == 'sign' else ' is '}{said}"
    if len(rs) > 1 and (agree := sum(r.get("verdict") == "agrees" for r in rs)) < len(rs):
        said += f"; {agree} of {len(rs)} parts agree"
    if first := next((r for r in rs if r.get("first_level") is not None), None):
        # of a compound claim, the part whose level was revised (its name where short enough)
        named = len(str(first.get("measurement", "")).split()) <= FINDING_MEASURE_WORDS
        part = " it" if len(rs) == 1 or first is r else f" {first['measurement']}" if named else " its revised part"
        said += (f"; at the level {_level(first['first_level'], first.get('fmt', '.3g'))} set before the runs"
                 f"{part} {'would read ' if first.get('first_verdict') != 'agrees' else ''}{first.get('first_verdict')}")
    claim = c.short or f'"{c.claim}"'
    # ``render`` types the ASCII math of the place and the numbers; the short statement is written in TeX already
    return f"{render(c.where)}, {claim}: {render(said + (_POST_HOC_MARK if c.post_hoc else ''))}"

def _key_number(c: Claim) -> str:
    """An agreeing record's number in a word or three: its first reading's estimate (the interval is in the claims
    table), or its count."""
    r = c.readings[0]
    fmt, runs = r.get("fmt", ".3g"), r.get("runs")
    if r["statistic"] == "sign" and r.get("count") is not None:
        return f"{r['count']} of {runs} runs"
    if r.get("estimate") is None:
        return f"{runs} runs" if runs else "no number"
    return _fmt(r["estimate"], fmt)

_FINDING_ORDER = ("disagrees", "partly", "inconclusive", "not tested", "agrees")

def findings_markdown(claims: Sequence[Claim]) -> str:
    """A chapter's "what the book finds" box, from its records alone: the tally of the counted claims, then one
    sentence per claim that does not agree or was decided on a criterion chosen after the numbers were seen (the
    paper's claim, the book's numbers with their interval and runs, the verdict; nothing clipped), then where the
    claims decided in advance that agree are.

    Examples
    --------
    >>> rows = [Claim("003", "Fig. 1", "a spike appears", "x > 0", "x = 1", "agrees", setting="paper",
    ...               section="s-fig1"),
    ...         Claim("003", "Fig. 2", "the tail is heavy", "a < 2", "a = 3", "disagrees", setting="paper",
    ...               cause="a = 3 > 2", section="s-fig2")]
    >>> print(findings_markdown(rows))
    :::{container} htlib-findings
    **2 claims:** 1 agrees, 1 disagrees.
    - {bdg-danger}`disagrees` Fig. 2, "the tail is heavy": a = 3 > 2.
    - {bdg-success}`agrees` as claimed: Fig. 1.
    :::
    """
    counted = [c for c in claims if c.counted]
    if not counted:
        return "*No counted claim in this run.*"
    post = [c for c in counted if c.post_hoc]
    ahead = verdict_counts(counted, post_hoc=False)
    tally = ", ".join(_counted(n, v) for v, n in ahead.items() if n)
    if post:
        tally = (f"{tally or 'none'}, decided in advance; {len(post)} on a criterion chosen after the runs ("
                 + ", ".join(_counted(n, v) for v, n in verdict_counts(counted, post_hoc=True).items() if n) + ")")
    lines = [f"**{len(counted)} claim{'s' if len(counted) > 1 else ''}:** {tally}."]
    noted = sorted((c for c in counted if c.verdict != "agrees" or c.post_hoc),
                   key=lambda c: (_FINDING_ORDER.index(c.verdict), where_key(c.where)))
    plain = sorted((c for c in counted if c.verdict == "agrees" and not c.post_hoc), key=lambda c: where_key(c.where))
    room = FINDING_LINES - 1 - bool(plain)
    shown, rest = (noted, []) if len(noted) <= room else (noted[:room - 1], noted[room - 1:])
    from htlib.plotting import _plain_text
    for c in shown:
        said = (finding_short(c, lambda text: render_math(_plain_text(text))) if c.short
                else render_math(_plain_text(f'{c.where}, "{c.claim}": {finding_text(c)}'))).rstrip(".")
        lines.append(f"- {_badge(c.verdict)} {_cell(said)}.")
    if rest:  # whole claims move to the table below, never a cut sentence
        tally_rest: dict[tuple[str, bool], int] = {}
        for c in rest:
            tally_rest[c.verdict, c.post_hoc] = tally_rest.get((c.verdict, c.post_hoc), 0) + 1
        more = ", ".join(_counted(n, v) + (" after the runs" if later else "") for (v, later), n in tally_rest.items())
        lines.append(f"- {len(rest)} more claims ({more}) are worded in the claims table below.")
    if plain:  # grouped by place, each with its key number (the intervals are in the claims table)
        by_place: dict[str, list[str]] = {}
        for c in plain:
            by_place.setdefault(c.where, []).extend([_key_number(c)] if c.readings else [])
        keyed = " · ".join(f"{where}: {', '.join(nums)}" if nums else where for where, nums in by_place.items())
        lines.append(f"- {_badge('agrees')} as claimed: " + _cell(render_math(_plain_text(keyed))) + ".")
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


DATASET_FIELDS: tuple[str, ...] = (
    "chapter", "paper", "paper_title", "where", "key", "kind", "variant_of", "claim", "short", "criterion", "threshold",
    "measured", "uncertainty", "verdict", "cause", "setting", "at_paper", "post_hoc", "revised_from",
    "revised_because", "reduction_check", "section", "statistic", "estimate", "low", "high", "runs", "count",
    "readings")
"""The columns of the claims dataset, one row per record (:func:`claims_dataset`): the deciding reading's numbers
(``statistic``, ``estimate``, the interval ``low``/``high``, ``runs``, a sign test's ``count``) as columns, every
part's in ``readings`` (JSON in the CSV)."""

def claims_dataset(board: Scoreboard) -> "pd.DataFrame":
    """Every record of ``board`` as one row of :data:`DATASET_FIELDS`, chapter by chapter in the paper's order.

    ``criterion`` holds the level as it was judged, ``revised_from`` the level before a change made after the runs,
    ``uncertainty`` the statistic, its interval or test and the runs, and ``post_hoc`` whether the verdict rests on
    a criterion chosen after the numbers were seen.

    Examples
    --------
    >>> from htlib.records import Claim
    >>> c = Claim(paper="MP", where="Fig. 1", claim="the bulk follows MP", criterion="KS < 0.1", measured="0.02",
    ...           verdict="agrees", setting="paper", uncertainty="3 runs", cause="KS 0.02 < 0.1", key="mp")
    >>> df = claims_dataset(Scoreboard({Path("mp.ipynb"): [c]}))
    >>> df.loc[0, ["chapter", "key", "verdict"]].tolist(), bool(df.loc[0, "post_hoc"])
    (['mp', 'mp', 'agrees'], False)
    """
    import json

    import pandas as pd
    rows = []
    for notebook, records in board.claims_by_notebook.items():
        for c in sorted(records, key=lambda r: where_key(r.where)):
            row = {f: getattr(c, f) for f in DATASET_FIELDS[:DATASET_FIELDS.index("statistic")]
                   if f not in ("chapter", "paper_title", "post_hoc")}
            row.update(chapter=Path(notebook).stem, paper_title=paper_name(c.paper, markup="text"),
                       post_hoc=bool(c.post_hoc))
            if isinstance(row["revised_from"], tuple):
                row["revised_from"] = list(row["revised_from"])
            decisive = [r for r in c.readings if r.get("verdict") != "agrees"] or list(c.readings)
            first = decisive[0] if decisive else {}
            row.update({k: first.get(k) for k in ("statistic", "estimate", "low", "high", "runs", "count")},
                       readings=json.dumps(list(c.readings), ensure_ascii=False))
            rows.append(row)
    return pd.DataFrame(rows, columns=list(DATASET_FIELDS))

def write_claims_dataset(board: Scoreboard, folder: str | Path | None = None) -> tuple[Path, Path]:
    """Write :func:`claims_dataset` as ``claims.csv`` and ``claims.json`` (the records under ``"records"``, with the
    htlib version, the book's version (``git describe`` of its checkout) and the UTC date they were written) into
    ``folder`` (default: the figure-data folder of :func:`htlib.plotting.figure_data_path`), each atomically; return
    both paths."""
    import datetime
    import json
    from htlib import __version__
    from htlib.plotting import figure_data_path
    from htlib.cache import atomic_write
    out = Path(folder) if folder is not None else figure_data_path("claims").parent
    out.mkdir(parents=True, exist_ok=True)
    df = claims_dataset(board)
    csv, js = out / "claims.csv", out / "claims.json"
    atomic_write(csv, df.to_csv(index=False))
    from htlib.archive import version
    meta = {"htlib_version": __version__, "book_version": version(),
            "written": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
            "fields": list(DATASET_FIELDS), "records": json.loads(df.to_json(orient="records"))}
    atomic_write(js, json.dumps(meta, ensure_ascii=False, indent=1) + "\n")
    return csv, js

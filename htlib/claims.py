"""Claims of the papers next to the book's measurements: one record type, one table, one scoreboard feed.

Owns: :class:`Claim` (a paper's statement, the criterion fixed before looking at the numbers,
the measured value and the verdict), :func:`claims_frame` (the one table every chapter ends with),
:func:`publish_claims` (displays that table and stores the records in the executed notebook, where the
scoreboard page reads them back with :func:`read_claims`), and :func:`glue_text` (formats a number
before it goes into the prose, so a rerun with other parameters states its own numbers).

Nothing here knows a paper's number: the chapters and their experiment code build the records.
"""

from __future__ import annotations

import html as _html
import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Iterable, Literal, Sequence

__all__ = [
    "Claim",
    "VERDICTS",
    "PAPERS",
    "CLAIMS_GLUE_KEY",
    "claims_frame",
    "counts_table",
    "publish_claims",
    "read_claims",
    "glue_text",
    "verdict_counts",
    "collect_claims",
    "paper_counts",
    "Scoreboard",
    "scoreboard",
    "glue_counts",
]

Verdict = Literal["agrees", "partly", "disagrees", "not tested"]
VERDICTS: tuple[str, ...] = ("agrees", "partly", "disagrees", "not tested")
"""The four verdicts, in the order the scoreboard counts them."""

PAPERS: dict[str, str] = {
    "001": "Models of heavy-tailed mechanistic universality (Hodgkinson, Wang, Mahoney)",
    "003": "From spikes to heavy tails (Kothapalli, Pang, Deng, Liu, Yang)",
    "004": "How the Hessian spectrum of linear networks depends on data",
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


@dataclass(frozen=True)
class Claim:
    """One claim of a paper and what the book measured for it.

    Parameters
    ----------
    paper : str
        Key of the source, one of :data:`PAPERS` (``"003"``, ``"001"``, ``"004"``, ...).
    where : str
        Section or figure of the paper, e.g. ``"§4, Fig. 3"``.
    claim : str
        The claim, in the paper's words where possible.
    criterion : str
        The test, fixed before looking at the numbers (e.g. "seed-mean test loss at eta=2000 below
        its value at initialization").
    measured : str
        The measured value(s), already formatted (3 significant digits is the book's habit).
    verdict : {"agrees", "partly", "disagrees", "not tested"}
        The outcome of the criterion.
    reason : str, optional
        Why: required for ``"not tested"`` and ``"partly"``; useful for ``"disagrees"``.
    section : str, optional
        MyST label of the chapter section that shows the evidence (the scoreboard links to it).
    """

    paper: str
    where: str
    claim: str
    criterion: str
    measured: str
    verdict: Verdict
    reason: str = ""
    section: str = ""

    def __post_init__(self) -> None:
        if self.paper not in PAPERS:
            raise ValueError(f"paper must be one of {sorted(PAPERS)}, got {self.paper!r}")
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {list(VERDICTS)}, got {self.verdict!r}")
        for name in ("where", "claim", "criterion"):
            if not str(getattr(self, name)).strip():
                raise ValueError(f"{name} must not be empty")
        if self.verdict != "not tested" and not str(self.measured).strip():
            raise ValueError("measured must not be empty unless the verdict is 'not tested'")
        if self.verdict in ("not tested", "partly") and not self.reason.strip():
            raise ValueError(f"a {self.verdict!r} verdict needs a reason")


_COLUMNS = {
    "paper": "paper",
    "where": "where",
    "claim": "claim",
    "criterion": "criterion (fixed in advance)",
    "measured": "measured",
    "verdict": "verdict",
    "reason": "reason",
}


def claims_frame(claims: Sequence[Claim]):
    """The claims as a :class:`pandas.DataFrame`, one row per claim, in the book's column order.

    It is a :class:`htlib.plotting.Table`, shown whole: a claim cut at pandas' 50 characters would
    hide the criterion it is judged by.
    """
    import pandas as pd

    from htlib.plotting import Table

    rows = [{label: getattr(c, key) for key, label in _COLUMNS.items()} for c in claims]
    frame = Table(rows, columns=list(_COLUMNS.values()))
    frame.index = pd.RangeIndex(1, len(frame) + 1, name="#")
    return frame


class _ClaimsPayload:
    """What :func:`publish_claims` glues: JSON for the scoreboard, a one-line text form for nbval."""

    def __init__(self, claims: Sequence[Claim], chapter: str) -> None:
        self.records = [asdict(c) for c in claims]
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
    """How many claims carry each verdict (every verdict appears, possibly with 0)."""
    counts = {v: 0 for v in VERDICTS}
    for c in claims:
        counts[c["verdict"] if isinstance(c, dict) else c.verdict] += 1
    return counts


def publish_claims(claims: Sequence[Claim], *, chapter: str):
    """Store the records in the notebook (for the scoreboard) and return the table to display.

    Call it as the last line of a chapter's summary cell: the returned DataFrame is the chapter's
    claims table, and the records travel, as JSON glued under :data:`CLAIMS_GLUE_KEY`, inside the
    executed notebook, where :func:`read_claims` finds them.
    """
    claims = list(claims)
    if not claims:
        raise ValueError("claims must not be empty")
    if not all(isinstance(c, Claim) for c in claims):
        raise TypeError("claims must be Claim records")
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

    Use ``{glue:text}`name``` in markdown.  Returns the formatted string, so a cell can also print it.
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
    return text


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


def paper_counts(claims_by_notebook: dict[Path, list[Claim]]) -> dict[str, dict[str, int]]:
    """``{paper: {verdict: count}}`` for every key of :data:`PAPERS` (zeros included)."""
    everything = [c for records in claims_by_notebook.values() for c in records]
    return {paper: verdict_counts(c for c in everything if c.paper == paper) for paper in SCOREBOARD_ORDER}


def _cell(text: str) -> str:
    """A string made safe for one cell of a pipe table."""
    return " ".join(str(text).split()).replace("|", "\\|")


class Scoreboard:
    """The claims of several chapters, shown as one table per paper.

    Its ``text/markdown`` form is MyST (rendered by the book with ``nb_render_markdown_format: myst``):
    with ``links="ref"`` each claim links to its chapter section through ``{ref}`` (a missing label
    fails the strict book build); with ``links="html"`` it links to ``<notebook stem>.html#<label>``,
    for standalone reruns that sit next to each other in one folder.  Its ``text/plain`` form is a
    compact listing that nbval compares.
    """

    def __init__(self, claims_by_notebook: dict[Path, list[Claim]], *, links: str = "ref") -> None:
        if links not in ("ref", "html"):
            raise ValueError(f"links must be 'ref' or 'html', got {links!r}")
        self.claims_by_notebook = claims_by_notebook
        self.links = links

    def rows(self, paper: str) -> list[tuple[Path, Claim]]:
        return [(nb, c) for nb, records in self.claims_by_notebook.items() for c in records if c.paper == paper]

    def _link(self, notebook: Path, claim: Claim) -> str:
        text = _cell(claim.where).replace("<", "\\<").replace("`", "'")
        if self.links == "html":
            # Raw HTML: the pages of a rerun folder are not documents of one Sphinx project.
            anchor = f"#{claim.section}" if claim.section else ""
            return f'<a href="{notebook.stem}.html{anchor}">{_html.escape(claim.where).replace("|", "&#124;")}</a>'
        if claim.section:
            return f"{{ref}}`{text} <{claim.section}>`"
        return f"{{doc}}`{text} <{notebook.stem}>`"

    def _repr_markdown_(self) -> str:
        parts: list[str] = []
        for paper in SCOREBOARD_ORDER:
            title = PAPERS[paper]
            rows = self.rows(paper)
            if not rows:
                continue
            counts = verdict_counts(c for _, c in rows)
            parts.append(f"**{paper}: {_cell(title)}.** " + ", ".join(f"{counts[v]} {v}" for v in VERDICTS) + ".\n")
            parts.append(":::{container} htlib-scoreboard")
            parts.append("| # | chapter | where | claim | measured | verdict | reason |")
            parts.append("|---|---|---|---|---|---|---|")
            for i, (nb, c) in enumerate(rows, 1):
                parts.append(f"| {i} | {_cell(nb.stem)} | {self._link(nb, c)} | {_cell(c.claim)} | "
                             f"{_cell(c.measured)} | **{c.verdict}** | {_cell(c.reason)} |")
            parts.append(":::")
            parts.append("")
        return "\n".join(parts) if parts else "*No chapter has published claims yet.*"

    def __repr__(self) -> str:
        lines = []
        for paper in SCOREBOARD_ORDER:
            for nb, c in self.rows(paper):
                lines.append(f"{paper} | {nb.stem} | {c.where} | {c.verdict} | {c.measured}")
        return "\n".join(lines) if lines else "no claims"


def scoreboard(source: str | Path, *, links: str = "ref") -> Scoreboard:
    """The scoreboard of every executed notebook (``*.ipynb``) in the folder ``source``."""
    folder = Path(source)
    if not folder.is_dir():
        raise ValueError(f"source must be a folder of executed chapters, got {str(source)!r}")
    return Scoreboard(collect_claims(sorted(folder.glob("*.ipynb"))), links=links)


def glue_counts(board: Scoreboard) -> dict[str, dict[str, int]]:
    """Glue ``count_<paper>_<verdict>`` (verdict with ``_`` for spaces) and ``count_<paper>_total``
    for every paper, so other pages paste them with ``{glue:text}`scoreboard.ipynb::count_003_agrees```."""
    counts = paper_counts(board.claims_by_notebook)
    for paper, by_verdict in counts.items():
        for verdict, n in by_verdict.items():
            glue_text(f"count_{paper}_{verdict.replace(' ', '_')}", n, "d")
        glue_text(f"count_{paper}_total", sum(by_verdict.values()), "d")
    return counts


def counts_table(counts: dict[str, dict[str, int]]):
    """``{paper: {verdict: count}}`` (from :func:`paper_counts` or :func:`glue_counts`) as the book's
    table (:func:`htlib.plotting.table`): one row per paper, one column per verdict."""
    from htlib.plotting import table

    return table([(paper, *(by_verdict.get(v, 0) for v in VERDICTS)) for paper, by_verdict in counts.items()],
                 ["paper", *VERDICTS], index="paper")

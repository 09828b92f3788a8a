"""Find measurement-like numbers typed into the prose of the book's pages.

Used by ``tests/test_prose_numbers.py``; kept apart so a chapter owner can run it on one chapter::

    .venv/bin/python tests/prose_numbers.py book/one_step_adam.ipynb

What counts as prose: markdown cells of a notebook, the whole of a ``.md`` page.  What is not scanned,
because it cannot hold a stale measurement or is checked elsewhere:

- math, ``$...$``, ``$$...$$`` and ``\\begin{..}...\\end{..}``: **equation constants and parameter values go in
  math** (``$n = 2000$``, ``$\\eta = 0.1$``, ``$10^4$`` steps);
- code spans and fenced blocks, MyST roles with their content (``{glue:text}`x```, ``{cite}`k```), labels
  ``(name)=``, link targets, URLs, HTML tags, arXiv ids;
- references into a paper: a number after Fig./Figs./§/Section/Theorem/Corollary/Lemma/Proposition/
  Definition/Eq./App./Appendix/Table/Algorithm (lists and ranges included, "Figs. 1, 4–6");
- single-digit integers (counts in prose: "three panels", "2 layers"), years 1950–2039, "5+1".

Every other number must be on an allow-list: :data:`GLOBAL_ALLOWED`, the page's entry in
:data:`ALLOWED` (in this file), or the notebook's own metadata ``{"htlib": {"prose_numbers": ["1.58", ...]}}``
(a chapter owner extends that list in the chapter itself).  Those lists are for the paper's own quoted
values ("the paper reports 1.58") and parameters that read better in words than in math.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

GLOBAL_ALLOWED: frozenset[str] = frozenset()
"""Numbers allowed on every page (none so far: prefer math or a page's own list)."""

ALLOWED: dict[str, set[str]] = {
    # page stem -> numbers its prose may type: the paper's quoted values, parameters and setup constants
    # in words, criteria fixed in advance.  Seeded from the chapter drafts of this round (each context
    # read); a number that a rerun with other parameters would change does not belong here: glue it.
    "index": set(),
    # the one judge's fixed constants (htlib.claims): 95% intervals, the sign test's 0.05, 100 bootstrap refits
    "conventions": {"95%", "0.05", "100"},
    "bibliography": set(),
    "scoreboard": {"95%"},
    # 20 Tracy-Widom widths: a criterion
    "mp_baseline": {"20"},
    # synthetic families (ranks, degrees of freedom, zero fractions), criteria widths and thresholds
    "phases": {"10", "15", "20", "60", "1.5", "2.5", "10%", "20%", "50%"},
    # 200 test points, 90 runs (9 rates x 2 optimizers x 5 seeds), criteria 10% / 20%, the paper's 0.1
    "one_step_adam": {"200", "90", "10%", "20%", "0.1"},
    # 10 steps, the paper's 1.58 / 1.59 / 1.8, 100-step default budget, 1000 = d, middle 90 %, 20 of 1000
    "spike_to_heavy_tail": {"10", "20", "90", "100", "1000", "1.58", "1.59", "1.8"},
    # 10 steps, 45/90 runs, the 12-minute budget, 66 MB of stored W_t, criteria 0.1 and 0.7 decades
    "generalization": {"10", "12", "45", "66", "90", "0.1", "0.7"},
    # MNIST-5k (500 per class, 784 pixels), the paper's 0.1% / 100-epoch schedule, widths 128 / 256, 400
    "linear_hessian": {"100", "128", "256", "400", "500", "784", "0.1%"},
    "htmp": set(),
}
"""Per-page allow-lists, keyed by the page's file stem."""

_REF_WORDS = (r"Figs?\.|Figures?|§§?|Sec(?:tions?|s?\.)|Theorems?|Thm\.|Corollar(?:y|ies)|Cor\.|Lemmas?|"
              r"Propositions?|Prop\.|Def(?:initions?|s?\.)|Eqs?\.|eqs?\.|Equations?|App\.|Appendix|Appendices|"
              r"Tables?|Tab\.|Algorithms?|Alg\.|Chapters?|Remarks?|Assumptions?")
_MASKS = [
    re.compile(r"^(```|~~~).*?^\1", re.S | re.M),           # fenced blocks (directives included)
    re.compile(r"^:::.*?$", re.M),                            # colon-fence lines
    re.compile(r"\$\$.*?\$\$", re.S),                         # display math
    re.compile(r"\\begin\{(\w+\*?)\}.*?\\end\{\1\}", re.S),   # amsmath environments
    re.compile(r"(?<!\\)\$(?!\s).*?(?<![\\\s])\$", re.S),    # inline math
    re.compile(r"\{[\w:.-]+\}`[^`]*`"),                       # MyST roles with content
    re.compile(r"`[^`]*`"),                                   # code spans
    re.compile(r"^\([\w:.-]+\)=\s*$", re.M),                  # labels
    re.compile(r"\]\([^)]*\)"),                               # link targets
    re.compile(r"https?://\S+"),                              # URLs
    re.compile(r"<[^>]+>"),                                   # HTML tags
    re.compile(r"\b\d{4}\.\d{4,5}(v\d+)?\b"),                 # arXiv ids
    re.compile(r"^\s*:\w[\w-]*:.*$", re.M),                   # directive options
    re.compile(rf"(?:{_REF_WORDS})\s*\(?[0-9A-Z](?:[0-9.,–\-]|\s(?=\d)|\s?and\s(?=\d)|\)|\([a-z]\))*"),
    re.compile(r"\b5\+1\b"),
    re.compile(r"\b[Pp]apers?\s+0\d\d\b(?:\s*(?:,|and|or)\s*0\d\d\b)*"),   # the papers' keys (003, 001, 004)
]
_NUMBER = re.compile(r"(?<![\w.\-/])[-−+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?%?(?![\w])")


@dataclass(frozen=True)
class Hit:
    """A number found in prose."""

    page: str
    cell: int  # index of the markdown cell (0 for a .md page)
    number: str
    context: str

    def __str__(self) -> str:
        where = f"markdown cell {self.cell}" if self.cell >= 0 else "page"
        return f"{self.page}, {where}: {self.number!r} in \"...{self.context}...\""


def prose_blocks(path: Path) -> list[tuple[int, str]]:
    """(cell index, markdown text) of a page; a ``.md`` page is one block with index -1."""
    if path.suffix == ".md":
        return [(-1, path.read_text(encoding="utf-8"))]
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [(i, "".join(c["source"]) if isinstance(c["source"], list) else c["source"])
            for i, c in enumerate(nb["cells"]) if c["cell_type"] == "markdown"]


def page_allowed(path: Path) -> set[str]:
    """The allow-list of one page: global, this file's entry, and the notebook's own metadata."""
    allowed = set(GLOBAL_ALLOWED) | ALLOWED.get(path.stem, set())
    if path.suffix == ".ipynb":
        meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
        allowed |= {str(x) for x in meta.get("htlib", {}).get("prose_numbers", [])}
    return allowed


def _exempt(token: str) -> bool:
    bare = token.lstrip("+-−").rstrip("%")
    if re.fullmatch(r"\d", bare):
        return True
    return bool(re.fullmatch(r"(19[5-9]\d|20[0-3]\d)", bare))


def find_numbers(text: str) -> list[tuple[str, str]]:
    """(number, context) for every non-exempt number in the prose ``text``."""
    masked = text
    for pattern in _MASKS:
        masked = pattern.sub(lambda m: " " * len(m.group(0)), masked)
    out = []
    for m in _NUMBER.finditer(masked):
        token = m.group(0).rstrip(",")
        if _exempt(token):
            continue
        lo, hi = max(0, m.start() - 40), min(len(text), m.end() + 40)
        out.append((token, " ".join(text[lo:hi].split())))
    return out


def scan(path: str | Path) -> list[Hit]:
    """Numbers in the prose of ``path`` that are neither exempt nor on its allow-list."""
    path = Path(path)
    allowed = page_allowed(path)
    hits = []
    for cell, text in prose_blocks(path):
        for number, context in find_numbers(text):
            if number.lstrip("+").replace("−", "-") not in allowed and number not in allowed:
                hits.append(Hit(path.stem, cell, number, context))
    return hits


def glue_names_stripped(path: str | Path) -> bool:
    """True for a notebook whose glue outputs lost their names (committed by the older ``refresh``)."""
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    return any(any(k.startswith("application/papermill.record/") for k in o.get("data", {}))
               and "scrapbook" not in o.get("metadata", {})
               for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", []))


def missing_glue(path: str | Path) -> list[str]:
    """Names pasted with ``{glue...}`name``` in a notebook's prose but never glued in its outputs."""
    path = Path(path)
    if path.suffix != ".ipynb":
        return []
    nb = json.loads(path.read_text(encoding="utf-8"))
    glued = {o.get("metadata", {}).get("scrapbook", {}).get("name")
             for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])}
    used = []
    for _, text in prose_blocks(path):
        for role_or_directive in re.findall(r"\{glue(?::\w+)?\}`([^`]+)`|```\{glue(?::\w+)?\}\s+(\S+)", text):
            name = next(x for x in role_or_directive if x)
            if "::" in name:
                continue  # another page's glue: the book build checks it
            key = name.rsplit(":", 1)[0] if name.count(":") == 1 else name
            used.append(key)
    return sorted({u for u in used if u not in glued})


if __name__ == "__main__":
    status = 0
    for arg in sys.argv[1:]:
        for hit in scan(arg):
            print(hit)
            status = 1
        for name in missing_glue(arg):
            print(f"{Path(arg).stem}: glue name {name!r} is pasted but never glued")
            status = 1
    sys.exit(status)

"""No committed page names the project's own issues, referees, independent checks or commits (book/conventions:
"the book speaks of the papers").  Read are every chapter's markdown and committed outputs, and every string of
every claims table (what its records and pages show; a TOML comment reaches no page).  The papers' own review
discussion (OpenReview) is content about the papers: "review" alone is not banned."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))
TABLES = sorted((ROOT / "htlib" / "experiments").glob("*/claims.toml"))

BANNED = re.compile(r"\bissue\s*#?\d+|\breferee|\bindependent check|\bcommit [0-9a-f]{7,40}\b", re.IGNORECASE)
"""Our issues ("issue 36", "issue #36"), referees, "an independent check" and commit hashes."""


def _text(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    return json.dumps(value, ensure_ascii=False)


def notebook_texts(path: Path):
    """``(where, text)`` for each markdown source and each committed output of a notebook."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") == "markdown":
            yield f"cell {i} (markdown)", _text(cell.get("source", ""))
        for j, out in enumerate(cell.get("outputs", [])):
            if "text" in out:
                yield f"cell {i}, output {j}", _text(out["text"])
            for mime, value in out.get("data", {}).items():
                yield f"cell {i}, output {j} ({mime})", _text(value)


def table_texts(path: Path):
    """``(where, text)`` for each string value of a claims table (rows, parts, defaults)."""
    def walk(node, where):
        if isinstance(node, str):
            yield where, node
        elif isinstance(node, dict):
            for k, v in node.items():
                yield from walk(v, f"{where}.{k}" if where else k)
        elif isinstance(node, list):
            for k, v in enumerate(node):
                key = v.get("key") if isinstance(v, dict) else None
                yield from walk(v, f"{where}[{key!r}]" if key else f"{where}[{k}]")
    with path.open("rb") as fh:
        yield from walk(tomllib.load(fh), "")


def hits(texts) -> list[str]:
    """Each banned phrase as ``where: ...context...``."""
    out = []
    for where, text in texts:
        for m in BANNED.finditer(text):
            context = text[max(0, m.start() - 60):m.end() + 60].replace("\n", " ")
            out.append(f"{where}: {m.group(0)!r} in ...{context}...")
    return out


def test_the_pattern_catches_our_words_and_spares_the_papers_review():
    caught = ["see issue 36", "Issue #52", "the referee (2026-12-04)", "after an independent check's runs",
              "lowered (commit 36d7f63)", "the Referees said"]
    spared = ["review discussion of 003", "the review's case (2)", "an issue of scale", "issues", "committed outputs",
              "commit to a level", "checked independently"]
    assert all(BANNED.search(t) for t in caught), [t for t in caught if not BANNED.search(t)]
    assert not any(BANNED.search(t) for t in spared), [t for t in spared if BANNED.search(t)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_no_chapter_names_our_issues_referees_or_commits(path):
    found = hits(notebook_texts(path))
    assert not found, f"{path.relative_to(ROOT)} names our issues, referees or commits:\n" + "\n".join(found)


@pytest.mark.parametrize("path", TABLES, ids=[p.parent.name for p in TABLES])
def test_no_claims_table_names_our_issues_referees_or_commits(path):
    found = hits(table_texts(path))
    assert not found, f"{path.relative_to(ROOT)} names our issues, referees or commits:\n" + "\n".join(found)

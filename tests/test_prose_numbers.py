"""No measured number typed into the prose: every page's markdown is scanned (rules in prose_numbers.py).

A failure lists, per page, each number with its context.  To fix one: glue it
(``glue_text("name", x, ".3g")`` in a code cell, ``{glue:text}`name``` in markdown); or, if it is an
equation constant or a parameter value, write it as math (``$n = 2000$``); or, if it is the paper's
own quoted value, add it to the chapter's notebook metadata ``{"htlib": {"prose_numbers": ["1.58"]}}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest

from htlib import book

sys.path.insert(0, str(Path(__file__).resolve().parent))
import prose_numbers as pn  # noqa: E402

PAGES = book.pages()
ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_no_measured_number_in_prose(page):
    hits = pn.scan(page)
    if hits:
        pytest.fail(f"{page.name}: {len(hits)} number(s) typed in the prose (glue them, put constants in "
                      f"math, or allow-list the paper's quoted values):\n" + "\n".join(map(str, hits)), pytrace=False)


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_no_outside_document_or_dated_prose(page):
    text = "\n".join(t for _, t in pn.prose_blocks(page))
    if "REFERENCE" in text:
        pytest.fail(f"{page.name}: the prose cites an outside working document ('REFERENCE')")
    if "at the time of writing" in text.lower():
        pytest.fail(f"{page.name}: 'at the time of writing' goes stale; glue the numbers instead")


@pytest.mark.parametrize("page", [p for p in PAGES if p.suffix == ".ipynb"], ids=lambda p: p.stem)
def test_every_pasted_glue_name_is_glued(page):
    assert not pn.glue_names_stripped(page), (
        f"{page.name}: committed without its glue names; `make refresh NB={page.relative_to(ROOT)}`")
    assert pn.missing_glue(page) == [], f"{page.name}: pasted but never glued"


# --- the scanner itself, on text whose answer is known -------------------------------------------

def test_scanner_flags_measurements_and_spares_constants_references_and_glue():
    text = (
        "(one-step-fig3)=\n## Fig. 3\n"
        "The paper reports 1.58 (§5.2, Figs. 1, 4–6, Theorem 4.1, App. A), we measured 2.14 on a 397-point tail.\n"
        "With $n = 2000$ and $$\\lambda_+ = (1+\\sqrt{0.5})^2$$ the spike is {glue:text}`spike_ratio` "
        "times the edge, see {cite}`clauset2009powerlaw` and [here](https://arxiv.org/abs/2406.04657).\n"
        "Three panels, 2 layers, Martin & Mahoney 2021, the 5+1 phases, paper 003, `eta=0.25`.\n"
    )
    found = [n for n, _ in pn.find_numbers(text)]
    assert found == ["1.58", "2.14", "397"]


def test_scanner_reads_notebook_allow_list_and_md_pages(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("The paper reports 1.58; we find 1.71.")]
    nb.metadata["htlib"] = {"prose_numbers": ["1.58"]}
    path = tmp_path / "chapter.ipynb"
    nbformat.write(nb, str(path))
    hits = pn.scan(path)
    assert [h.number for h in hits] == ["1.71"]
    assert "chapter, markdown cell 0: '1.71'" in str(hits[0])
    md = tmp_path / "page.md"
    md.write_text("A ratio of 0.998 here.\n")
    assert [h.number for h in pn.scan(md)] == ["0.998"]


def test_missing_glue_is_reported(tmp_path):
    nb = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell("glue_text('a', 1.0)")
    code.outputs = [nbformat.v4.new_output("display_data", data={"text/plain": "1"},
                                           metadata={"scrapbook": {"name": "a", "mime_prefix": ""}})]
    nb.cells = [code, nbformat.v4.new_markdown_cell("{glue:text}`a` and {glue:text}`b:.2f` and "
                                                    "{glue:text}`other.ipynb::c:s`")]
    path = tmp_path / "c.ipynb"
    nbformat.write(nb, str(path))
    assert pn.missing_glue(path) == ["b"]
    assert json.loads(path.read_text())["cells"][1]["cell_type"] == "markdown"

"""Claims: the records a chapter stores, read back, and the scoreboard built from them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from htlib import claims as cl
from htlib.claims import Claim

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "tiny_chapter.ipynb"


def _claim(paper="003", verdict="agrees", **kw):
    base = dict(paper=paper, where="§4, Fig. 3", claim="the spike appears", criterion="ratio > 5",
                measured="7.1", verdict=verdict, reason="" if verdict in ("agrees", "disagrees") else "because",
                section="one-step-fig3")
    base.update(kw)
    return Claim(**base)


def _stored(path: Path, records: list[Claim], chapter: str) -> Path:
    """A notebook holding what publish_claims stores, without running a kernel."""
    bundle = cl._ClaimsPayload(records, chapter)._repr_mimebundle_()
    out = nbformat.v4.new_output("display_data", data={f"application/papermill.record/{k}": v
                                                       for k, v in bundle.items()},
                                 metadata={"scrapbook": {"name": cl.CLAIMS_GLUE_KEY, "mime_prefix": ""}})
    cell = nbformat.v4.new_code_cell("publish_claims(...)")
    cell.outputs = [out]
    nb = nbformat.v4.new_notebook()
    nb.cells = [cell]
    nbformat.write(nb, str(path))
    return path


def test_claim_validates_itself():
    with pytest.raises(ValueError, match="paper must be one of"):
        _claim(paper="999")
    with pytest.raises(ValueError, match="needs a reason"):
        _claim(verdict="partly", reason="")
    with pytest.raises(ValueError, match="verdict must be one of"):
        _claim(verdict="maybe")


def test_read_back_what_was_stored(tmp_path):
    records = [_claim(), _claim(paper="001", verdict="not tested", measured="")]
    path = _stored(tmp_path / "one_step_adam.ipynb", records, "one_step_adam")
    assert cl.read_claims(path) == records


def test_scoreboard_one_row_per_claim_grouped_by_paper_with_links(tmp_path):
    _stored(tmp_path / "one_step_adam.ipynb",
            [_claim(), _claim(verdict="disagrees", claim="a | pipe", where="§5, Fig. 5")], "one_step_adam")
    _stored(tmp_path / "htmp.ipynb", [_claim(paper="001", verdict="partly", section="htmp-fig5")], "htmp")
    nbformat.write(nbformat.v4.new_notebook(), str(tmp_path / "no_claims.ipynb"))
    board = cl.scoreboard(tmp_path)
    md = board._repr_markdown_()
    rows = [line for line in md.splitlines() if line.startswith("| ") and not line.startswith("| #")]
    assert len(rows) == 3
    assert md.index("**003:") < md.index("**001:")  # the scoreboard's paper order
    assert "{ref}`§4, Fig. 3 <one-step-fig3>`" in md and "a \\| pipe" in md
    assert "1 agrees, 0 partly, 1 disagrees, 0 not tested" in md
    assert md.count(":::{container} htlib-scoreboard") == 2
    html_md = cl.scoreboard(tmp_path, links="html")._repr_markdown_()
    assert '<a href="one_step_adam.html#one-step-fig3">§4, Fig. 3</a>' in html_md
    counts = cl.paper_counts(board.claims_by_notebook)
    assert counts["003"] == {"agrees": 1, "partly": 0, "disagrees": 1, "not tested": 0}
    assert counts["001"]["partly"] == 1 and sum(counts["004"].values()) == 0
    assert repr(board).splitlines()[0].startswith("003 | one_step_adam | §4, Fig. 3 | agrees")


def test_the_latest_rerun_of_a_chapter_wins(tmp_path):
    old = _stored(tmp_path / "ch-aaaa.ipynb", [_claim(verdict="disagrees")], "ch")
    new = _stored(tmp_path / "ch-bbbb.ipynb", [_claim(verdict="agrees")], "ch")
    os.utime(old, (1_000_000, 1_000_000))
    found = cl.collect_claims([old, new])
    assert list(found) == [new] and found[new][0].verdict == "agrees"


def test_scoreboard_refuses_a_missing_folder(tmp_path):
    with pytest.raises(ValueError, match="source must be a folder"):
        cl.scoreboard(tmp_path / "nope")
    with pytest.raises(ValueError, match="links must be"):
        cl.Scoreboard({}, links="pdf")


@pytest.mark.slow
def test_fixture_chapter_executes_and_feeds_the_scoreboard_notebook(tmp_path):
    """The real path: publish_claims in a kernel, then book/scoreboard.ipynb run on that folder."""
    import papermill as pm

    executed = tmp_path / "tiny_chapter.ipynb"
    pm.execute_notebook(str(FIXTURE), str(executed), cwd=str(tmp_path), progress_bar=False)
    assert [c.verdict for c in cl.read_claims(executed)] == ["agrees", "not tested"]
    board = tmp_path / "board.ipynb"
    pm.execute_notebook(str(ROOT / "book" / "scoreboard.ipynb"), str(board), cwd=str(tmp_path),
                        parameters={"source": str(tmp_path)}, progress_bar=False)
    nb = nbformat.read(str(board), as_version=4)
    glued = {o["metadata"]["scrapbook"]["name"]: next(v for k, v in o["data"].items() if k.endswith("text/plain"))
             for c in nb.cells if c.cell_type == "code" for o in c.outputs
             if o.get("metadata", {}).get("scrapbook")}
    assert glued["count_003_agrees"] == "1" and glued["count_001_not_tested"] == "1"
    assert glued["count_004_total"] == "0"
    shown = [o for c in nb.cells for o in c.get("outputs", []) if "text/markdown" in o.get("data", {})]
    assert shown and 'href="tiny_chapter.html#tiny-result"' in shown[-1]["data"]["text/markdown"]


def test_records_survive_the_commit_strip(tmp_path):
    """`make refresh` strips outputs before committing; the scoreboard must still find the records."""
    from htlib.book import strip_for_commit

    path = _stored(tmp_path / "ch.ipynb", [_claim()], "ch")
    stripped = strip_for_commit(nbformat.read(str(path), as_version=4))
    nbformat.write(stripped, str(path))
    assert cl.read_claims(path) == [_claim()]
    out = stripped.cells[0].outputs[0]
    out["metadata"] = {}  # even a notebook stripped by the older refresh, which dropped glue's name
    nbformat.write(stripped, str(path))
    assert cl.read_claims(path) == [_claim()] and list(cl.collect_claims([path])) == [path]


def _chapters():
    from htlib import book

    return [p for p in book.chapters() if p.stem != "scoreboard"]


@pytest.mark.parametrize("chapter", _chapters(), ids=lambda p: p.stem)
def test_each_stored_claim_links_to_a_label_of_its_chapter(chapter):
    """The scoreboard links each claim to ``section``: it must be a MyST label of that chapter."""
    import re

    records = cl.read_claims(chapter)
    if not records:
        pytest.skip(f"{chapter.name} has no stored claims yet (publish_claims, then make refresh)")
    nb = nbformat.read(str(chapter), as_version=4)
    labels = set(re.findall(r"^\(([\w:.-]+)\)=\s*$", "\n".join(c.source for c in nb.cells
                                                                if c.cell_type == "markdown"), re.M))
    missing = sorted({c.section for c in records if c.section and c.section not in labels})
    assert not missing, f"{chapter.name}: claims link to labels the chapter does not define: {missing}"


def test_counts_table_one_row_per_paper_in_verdict_order():
    from htlib.claims import VERDICTS, counts_table

    t = counts_table({"003": {"agrees": 2, "disagrees": 1}, "MP": {"agrees": 3, "partly": 0}})
    assert t.index.name == "paper" and list(t.index) == ["003", "MP"]
    assert list(t.columns) == list(VERDICTS)
    assert t.loc["003"].tolist() == ["2", "0", "1", "0"] and t.loc["MP", "agrees"] == "3"


def test_claims_table_shows_long_claims_whole():
    # pandas cuts cells at 50 characters by default; a claim cut short hides what it is judged by.
    long_claim = "the sharpness of a deep linear network floats between the two bounds " * 2
    frame = cl.claims_frame([Claim(paper="004", where="Fig. 5", claim=long_claim, criterion="c" * 90,
                                   measured="1", verdict="agrees", section="x")])
    assert long_claim.strip() in frame._repr_html_()
    assert "c" * 90 in repr(frame)

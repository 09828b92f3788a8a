"""Claims: the records a chapter stores, read back, and the scoreboard built from them."""

from __future__ import annotations

import dataclasses
import math
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

from htlib import claims as cj
from htlib import records as rc
from htlib import scoreboard as sb
from htlib.claims import Measurement, Spec, judge
from htlib.records import Claim

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "tiny_chapter.ipynb"


def _claim(paper="003", verdict="agrees", **kw):
    base = dict(paper=paper, where="§4, Fig. 3", claim="the spike appears", criterion="ratio > 5",
                measured="7.1", verdict=verdict, setting="paper",
                cause="" if verdict == "agrees" else "because", section="one-step-fig3")
    base.update(kw)
    return Claim(**base)


def _stored(path: Path, records: list[Claim], chapter: str) -> Path:
    """A notebook holding what publish_claims stores, without running a kernel."""
    bundle = rc._ClaimsPayload(records, chapter)._repr_mimebundle_()
    out = nbformat.v4.new_output("display_data", data={f"application/papermill.record/{k}": v
                                                       for k, v in bundle.items()},
                                 metadata={"scrapbook": {"name": rc.CLAIMS_GLUE_KEY, "mime_prefix": ""}})
    cell = nbformat.v4.new_code_cell("publish_claims(...)")
    cell.outputs = [out]
    nb = nbformat.v4.new_notebook()
    nb.cells = [cell]
    nbformat.write(nb, str(path))
    return path


def test_claim_validates_itself():
    with pytest.raises(ValueError, match="paper must be one of"):
        _claim(paper="999")
    with pytest.raises(ValueError, match="needs a cause"):
        _claim(verdict="partly", cause="")
    with pytest.raises(ValueError, match="verdict must be one of"):
        _claim(verdict="maybe")


def test_read_back_what_was_stored(tmp_path):
    records = [_claim(), _claim(paper="001", verdict="not tested", measured="")]
    path = _stored(tmp_path / "one_step_adam.ipynb", records, "one_step_adam")
    assert rc.read_claims(path) == records


def test_scoreboard_one_closed_dropdown_per_record_grouped_by_paper_with_links(tmp_path):
    _stored(tmp_path / "one_step_adam.ipynb",
            [_claim(), _claim(verdict="disagrees", claim="a | pipe", where="§5, Fig. 5")], "one_step_adam")
    _stored(tmp_path / "htmp.ipynb", [_claim(paper="001", verdict="partly", section="htmp-fig5")], "htmp")
    nbformat.write(nbformat.v4.new_notebook(), str(tmp_path / "no_claims.ipynb"))
    board = sb.scoreboard(tmp_path)
    md = board._repr_markdown_()
    assert _records_in(md) == 3 and ":open:" not in md
    # the papers by short title and authors, in the scoreboard's order, never by an id
    assert md.index(rc.paper_name("003")) < md.index(rc.paper_name("001")) and "**003" not in md
    assert "{ref}`§4, Fig. 3 <one-step-fig3>`" in md and "a \\| pipe" in md
    html_md = sb.scoreboard(tmp_path, links="html")._repr_markdown_()
    assert '<a href="one_step_adam.html#one-step-fig3">§4, Fig. 3</a>' in html_md
    counts = sb.paper_counts(board.claims_by_notebook)
    assert counts["003"] == {"agrees": 1, "partly": 0, "disagrees": 1, "inconclusive": 0, "not tested": 0}
    assert counts["001"]["partly"] == 1 and sum(counts["004"].values()) == 0
    assert repr(board).splitlines()[0].startswith("003 | one_step_adam | §4, Fig. 3 | agrees")
    # negative control: the old rendering, one pipe-table row per record, holds no dropdown
    old = "\n".join(f"| {c.where} | {c.claim} | {c.verdict} |" for _, c in board.rows("003"))
    assert _records_in(old) == 0


def _records_in(md: str) -> int:
    """The closed dropdowns of single records (``htlib-record``) in a scoreboard's markdown."""
    lines = md.splitlines()
    return sum(1 for i, line in enumerate(lines[:-1]) if line.startswith(":::{dropdown}")
               and lines[i + 1].strip() == ":class-container: htlib-record")


def _first_section_lines(md: str) -> list[str]:
    return [line[2:] for line in md.splitlines() if line.startswith("- ")]


def _within_limits(line: str) -> bool:
    """A first-section line: the verdict badge, the link to the evidence, the deciding number in at most
    DIFFERENCE_WORDS words."""
    import re
    m = re.fullmatch(r"\{bdg-\w+\}`[a-z ]+` (?P<link>\{ref\}`[^`]*`): <span class=\"htlib-reason\">(?P<reason>.*)</span>",
                     line)
    return bool(m) and len(m["reason"].split()) <= sb.DIFFERENCE_WORDS


def test_first_section_lists_every_non_agreeing_counted_record_with_its_deciding_number(tmp_path):
    import dataclasses

    def judged(key, where, values, **kw):
        return dataclasses.replace(_judged(key, values, **kw), where=where, section="one-step-fig3")

    records = [judged("a", "§1", [1.0, 1.1, 1.2]),
               judged("b", "§2", [-1.0, -1.2, -1.1], op="in", level=(0.35, 0.65)),
               judged("c", "§3", [1.0, -2.0, 0.5, 2.0, 1.0, 1.5], statistic="sign"),
               judged("d", "§4", [1.0, 2.0]),
               _claim(key="e", where="§5", verdict="not tested", measured="", cause="not run by default",
                      section="one-step-fig3"),
               _claim(key="f", where="§6", verdict="disagrees", variant_of="a", setting="other readout",
                      cause="a variant"),
               _claim(key="g", where="§7", verdict="disagrees", kind="check", cause="an identity")]
    _stored(tmp_path / "ch.ipynb", records, "ch")
    board = sb.scoreboard(tmp_path)
    lines = _first_section_lines(board.differences_markdown())
    # every counted record that does not agree, and only those (no agreeing claim, variant or check)
    wanted = [c for c in records if c.counted and c.verdict != "agrees"]
    assert len(lines) == len(wanted) == 4
    assert [line.split("<one-step-fig3>")[0].rsplit("`", 1)[-1].strip() for line in lines] == \
        [c.where for c in wanted]
    assert all(_within_limits(line) for line in lines), lines
    # the deciding number with the judge's interval, the count of a sign test, the gate
    r = records[1].readings[0]
    assert f"[{rc._fmt(r['low'], '.3g')}, {rc._fmt(r['high'], '.3g')}], 3 runs" in lines[0]
    assert "5 of 6 runs above 0" in lines[1] and "too few runs" in lines[2] and "…" not in "".join(lines)
    # the full texts are in the records below
    assert records[1].cause.split(";")[0] in board.papers_markdown()
    # negative control: a line with the whole cause breaks the limit
    assert not _within_limits(lines[0].replace("</span>", " " + records[1].cause + "</span>"))
    # the variants and the checks sit in their own closed sections, one record each
    board_md = board.variants_markdown()
    assert _records_in(board_md) == 1 and _records_in(board.checks_markdown()) == 1
    assert board_md.startswith("::::{dropdown}") and ":open:" not in board_md


def test_clip_words_and_the_rendered_math():
    assert sb.clip_words("a b c", 3) == "a b c" and sb.clip_words("a b c d", 3) == "a b c…"
    with pytest.raises(ValueError, match="n must be"):
        sb.clip_words("a", 0)
    md = sb.render_math("r^2 of lambda_ij and s_i^(2(L-1)) at eta >= 1 with PL_Alpha_KS and sqrt(hd)")
    assert md == ("$r^{2}$ of $\\lambda_{ij}$ and $s_{i}^{2(L-1)}$ at $\\eta$ ≥ 1 with PL_Alpha_KS and "
                  "$\\sqrt{hd}$")
    html = sb.render_math("lambda_max < 4 & eta", "html")
    assert html == ('<span class="math notranslate nohighlight">\\(\\lambda_{\\max}\\)</span> &lt; 4 &amp; '
                    '<span class="math notranslate nohighlight">\\(\\eta\\)</span>')
    assert sb.render_math("already $x_1$ math") == "already $x_1$ math"  # MyST math is left as written


def test_papers_named_by_short_title_and_authors_from_one_mapping():
    import re
    bib = (ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    assert set(rc.PAPER_NAMES) == set(rc.PAPERS) == set(sb.SCOREBOARD_ORDER)
    # each name's authors and title words are those of the bibliography entry (004 has no authors there)
    for paper, key in (("003", "kothapalli2025spikes"), ("001", "hodgkinson2025htmp"),
                       ("004", "linearhessian2026"), ("MM21", "martin2021implicit"), ("MP", "marchenko1967")):
        entry = bib[bib.index(f"{{{key},"):].split("\n}", 1)[0].lower()
        who, title = rc.PAPER_NAMES[paper]
        surnames = [w for w in re.findall(r"[A-Za-z]+", who) if w[0].isupper() and w not in ("HiLD", "et")]
        assert all(s.lower() in entry for s in surnames), (paper, who)
        assert sum(w.lower() in entry for w in re.findall(r"[A-Za-z]{4,}", title)) >= 1, (paper, title)
    assert rc.paper_name("001", markup="html").startswith("<em>") and "&amp;" in rc.paper_name("001", markup="html")


def test_landing_page_differences_are_the_disagreements_with_rendered_math(tmp_path):
    import re
    _stored(tmp_path / "ch.ipynb", [
        _claim(where="§1", verdict="disagrees", claim="the r^2 values lambda_ij match s_i^(2(L-1))",
               cause="r^2 of lambda_ij 3 < 4 of s_i^(2(L-1))", section="sec-one"),
        _claim(where="§2", verdict="inconclusive", cause="few runs"),
        _claim(where="§3")], "ch")
    board = sb.scoreboard(tmp_path)
    html = board.differences_html()
    assert html.count("<li>") == 1 and "§2" not in html
    ascii_math = re.compile(r"(?<!\\)\blambda_|\bs_i\^\(|\br\^2")  # TeX's \\lambda_{ij} is not ASCII math
    assert not ascii_math.search(html), html
    assert html.count('class="math notranslate nohighlight"') == 3 and "3 &lt; 4" in html
    assert 'href="ch.html#sec-one"' in html and rc.paper_name("003", markup="html") in html
    table = board.counts_html()
    assert table.count('<tr class="htlib-counts-paper">') == len(sb.SCOREBOARD_ORDER)
    assert "<td>1</td><td>0</td><td>1</td><td>1</td><td>0</td>" in table  # 003: agrees, ..., not tested
    # negative control: the rendering without the math conversion leaves the ASCII math in
    assert ascii_math.search(html.replace("\\lambda_{ij}", "lambda_ij"))


def test_the_latest_rerun_of_a_chapter_wins(tmp_path):
    old = _stored(tmp_path / "ch-aaaa.ipynb", [_claim(verdict="disagrees")], "ch")
    new = _stored(tmp_path / "ch-bbbb.ipynb", [_claim(verdict="agrees")], "ch")
    os.utime(old, (1_000_000, 1_000_000))
    found = rc.collect_claims([old, new])
    assert list(found) == [new] and found[new][0].verdict == "agrees"


def test_scoreboard_refuses_a_missing_folder(tmp_path):
    with pytest.raises(ValueError, match="source must be a folder"):
        sb.scoreboard(tmp_path / "nope")
    with pytest.raises(ValueError, match="links must be"):
        sb.Scoreboard({}, links="pdf")


@pytest.mark.slow
def test_fixture_chapter_executes_and_feeds_the_scoreboard_notebook(tmp_path):
    """The real path: publish_claims in a kernel, then book/scoreboard.ipynb run on that folder."""
    import papermill as pm

    executed = tmp_path / "tiny_chapter.ipynb"
    pm.execute_notebook(str(FIXTURE), str(executed), cwd=str(tmp_path), progress_bar=False)
    assert [c.verdict for c in rc.read_claims(executed)] == ["agrees", "not tested"]
    board = tmp_path / "board.ipynb"
    pm.execute_notebook(str(ROOT / "book" / "scoreboard.ipynb"), str(board), cwd=str(tmp_path),
                        parameters={"source": str(tmp_path)}, progress_bar=False)
    nb = nbformat.read(str(board), as_version=4)
    glued = {o["metadata"]["scrapbook"]["name"]: next(v for k, v in o["data"].items() if k.endswith("text/plain"))
             for c in nb.cells if c.cell_type == "code" for o in c.outputs
             if o.get("metadata", {}).get("scrapbook")}
    # "a / b": a claims at the paper's setting, b at a reduced one (the fixture's are reduced).
    assert glued["count_003_agrees"] == "0 / 1" and glued["count_001_not_tested"] == "0 / 1"
    assert glued["count_004_total"] == "0 / 0"
    shown = [o["data"]["text/markdown"] for c in nb.cells for o in c.get("outputs", [])
             if "text/markdown" in o.get("data", {})]
    assert any('href="tiny_chapter.html#tiny-result"' in md for md in shown)


def test_records_survive_the_commit_strip(tmp_path):
    """`make refresh` strips outputs before committing; the scoreboard must still find the records."""
    from htlib.book import strip_for_commit

    path = _stored(tmp_path / "ch.ipynb", [_claim()], "ch")
    stripped = strip_for_commit(nbformat.read(str(path), as_version=4))
    nbformat.write(stripped, str(path))
    assert rc.read_claims(path) == [_claim()]
    out = stripped.cells[0].outputs[0]
    out["metadata"] = {}  # even a notebook stripped by the older refresh, which dropped glue's name
    nbformat.write(stripped, str(path))
    assert rc.read_claims(path) == [_claim()] and list(rc.collect_claims([path])) == [path]


def _chapters():
    from htlib import book

    return [p for p in book.chapters() if p.stem != "scoreboard"]


@pytest.mark.parametrize("chapter", _chapters(), ids=lambda p: p.stem)
def test_each_stored_claim_links_to_a_label_of_its_chapter(chapter):
    """The scoreboard links each claim to ``section``: it must be a MyST label of that chapter."""
    import re

    records = rc.read_claims(chapter)
    assert records, f"{chapter.name} has no stored claims (publish_claims, then make refresh)"
    nb = nbformat.read(str(chapter), as_version=4)
    labels = set(re.findall(r"^\(([\w:.-]+)\)=\s*$", "\n".join(c.source for c in nb.cells
                                                                if c.cell_type == "markdown"), re.M))
    missing = sorted({c.section for c in records if c.section and c.section not in labels})
    assert not missing, f"{chapter.name}: claims link to labels the chapter does not define: {missing}"


def test_claims_table_shows_long_claims_whole():
    # pandas cuts cells at 50 characters by default; a claim cut short hides what it is judged by.
    long_claim = "the sharpness of a deep linear network floats between the two bounds " * 2
    frame = sb.claims_frame([Claim(paper="004", where="Fig. 5", claim=long_claim, criterion="c" * 90,
                                   measured="1", verdict="agrees", setting="paper", section="x")])
    # a page shows each record as a closed dropdown that holds every field whole (a wide HTML table would not fit)
    assert frame._repr_html_() is None and long_claim.strip() in frame._repr_markdown_()
    assert "{dropdown}" in frame._repr_markdown_() and "c" * 90 in frame._repr_markdown_()
    assert "c" * 90 in repr(frame)


# ---------------------------------------------------------------------------------------------
# The verdict rules of the claim record.

def test_every_verdict_but_agrees_needs_a_cause():
    for verdict in ("partly", "disagrees", "inconclusive", "not tested"):
        with pytest.raises(ValueError, match="needs a cause"):
            _claim(verdict=verdict, cause="")
        assert _claim(verdict=verdict, cause="the run stalled (Fig. 8 convergence table)").verdict == verdict
    assert _claim(verdict="agrees").cause == ""


def test_a_record_needs_a_setting_and_a_statistic_needs_an_uncertainty():
    with pytest.raises(ValueError, match="setting must not be empty"):
        _claim(setting="")
    crit = rc.Criterion("seed-median ratio", ">", 1.1)
    with pytest.raises(ValueError, match="needs an uncertainty"):
        _claim(criterion=crit)
    c = _claim(criterion=crit, uncertainty="5 seeds, range [2.5, 2.7]")
    assert c.criterion == "seed-median ratio > 1.1" and c.threshold == 1.1
    # "not tested" reads no statistic, so it needs no uncertainty
    assert _claim(criterion=crit, verdict="not tested", measured="").uncertainty == ""


def test_a_disagreement_outside_the_paper_setting_must_rule_out_the_reduction():
    with pytest.raises(ValueError, match="reduction_check"):
        _claim(verdict="disagrees", setting="1 epoch instead of 200")
    c = _claim(verdict="disagrees", setting="4,000 images instead of 50,000",
               reduction_check="the trend is flat from 1,000 to 4,000 images (size sweep)")
    assert not c.at_paper_setting
    assert _claim(verdict="disagrees").at_paper_setting


def test_a_straddling_interval_gives_inconclusive():
    crit = rc.Criterion("fitted slope", "<", 0.1)
    assert crit.judge(0.05, (0.0, 0.09)) == "agrees"
    assert crit.judge(0.13, (0.11, 0.2)) == "disagrees"
    assert crit.judge(0.13, (0.05, 0.2)) == "inconclusive"
    assert crit.judge(float("nan")) == "inconclusive"
    # a two-sided criterion: "within 3x of 10" is 10/3 to 30
    within = rc.Criterion("steps to a heavy tail", "in", (10 / 3, 30))
    assert within.judge(2) == "disagrees" and within.judge(12) == "agrees" and within.judge(40) == "disagrees"
    assert within.judge(20, (10, 40)) == "inconclusive" and within.judge(50, (35, 60)) == "disagrees"
    with pytest.raises(ValueError, match="threshold must be finite"):
        rc.Criterion("x", "<", float("inf"))
    with pytest.raises(ValueError, match="op must be one of"):
        rc.Criterion("x", "=", 1.0)


def test_variants_are_never_counted_and_must_name_their_claim(tmp_path):
    base = _claim(key="fig3a")
    variant = _claim(verdict="disagrees", key="fig3a-sqrtd", variant_of="fig3a",
                     setting="paper, with the /sqrt(d) readout", cause="the readout convention")
    assert not variant.counted
    assert rc.verdict_counts([base, variant]) == {"agrees": 1, "partly": 0, "disagrees": 0,
                                                   "inconclusive": 0, "not tested": 0}
    with pytest.raises(ValueError, match="names no claim key"):
        rc.check_records([base, _claim(variant_of="nope")])
    with pytest.raises(ValueError, match="unique"):
        rc.check_records([base, _claim(key="fig3a")])
    _stored(tmp_path / "one_step_adam.ipynb", [base, variant], "one_step_adam")
    board = sb.scoreboard(tmp_path)
    assert len(board.rows("003")) == 1 and len(board.rows("003", variants=True)) == 1
    assert board.differences() == []
    assert "the readout convention" in board.variants_markdown()
    assert len(sb.claims_frame([base, variant])) == 1 and len(sb.robustness_frame([base, variant])) == 1


def test_scoreboard_leads_with_the_differences_in_the_papers_order(tmp_path):
    _stored(tmp_path / "ch.ipynb", [
        _claim(where="§5.3, Fig. 7", verdict="inconclusive", cause="three points", section=""),
        _claim(where="§4, Fig. 2", verdict="agrees", section=""),
        _claim(where="App. B", verdict="disagrees", cause="measured in the App. B table", section=""),
        _claim(where="§4, Fig. 3(b)", verdict="partly", cause="only at eta=1", section="")], "ch")
    board = sb.scoreboard(tmp_path)
    assert [c.where for _, c in board.rows("003")] == ["§4, Fig. 2", "§4, Fig. 3(b)", "§5.3, Fig. 7", "App. B"]
    assert [c.where for _, c in board.differences()] == ["§4, Fig. 3(b)", "§5.3, Fig. 7", "App. B"]
    md = board.differences_markdown()
    assert "three points" in md and "measured in the App. B table" in md and "§4, Fig. 2" not in md  # no readings
    split = sb.paper_counts(board.claims_by_notebook, setting="reduced")
    assert sum(split["003"].values()) == 0


def test_glue_text_shows_nothing_when_it_ends_a_cell():
    text = rc.GluedText("90%")
    assert text == "90%" and text._ipython_display_() is None and f"{text}" == "90%"


def test_an_undefined_or_unbounded_number_prints_as_a_dash_with_its_reason_or_infinity():
    """What a rerun's prose and records print where a number has no value: never nan, inf or None."""
    for value, fmt, why, shown in ((float("nan"), ".3g", "no tail", "– (no tail)"), (None, ".2f", "no fit", "– (no fit)"),
                                   (float("inf"), ".3g", "unused", "∞"), (-float("inf"), ".1f", "unused", "−∞"),
                                   (1.23456, ".3g", "unused", "1.23")):
        assert rc.glue_text("x", value, fmt, undefined=why) == shown
    assert rc.glue_text("x", float("nan")).startswith("– (")  # a reason even where the caller gives none
    assert rc._fmt((14.7, float("inf"))) == "[14.7, ∞]" and rc._fmt(float("nan")) == "–"


def test_every_executed_chapter_follows_the_claim_rules():
    """The stored records of every chapter: a setting, causes, uncertainties, variants that name a claim."""
    from htlib import book

    for chapter in book.chapters():
        records = rc.read_claims(chapter)  # constructing each record re-checks the per-record rules
        if records:
            rc.check_records(records)


def test_seed_interval_is_the_student_t_interval_and_covers_with_two_seeds():
    import numpy as np

    from htlib.records import Criterion
    from htlib.stats import seed_interval

    # Hand-derived: x = 1, 2, 3 has mean 2, s = 1, and t(2 dof, 0.975) = 4.302652729911275 (tables: 4.303).
    m = seed_interval([1.0, 2.0, 3.0])
    v, (low, high) = m.at(())
    assert (v, low, high) == pytest.approx((2.0, 2.0 - 4.302652729911275 / 3 ** 0.5, 2.0 + 4.302652729911275 / 3 ** 0.5))
    # A diverged run (NaN) is left out; one finite seed gives no interval (judged inconclusive).
    one = seed_interval([[4.0, np.nan], [np.nan, np.nan]])
    assert one.n_seeds.tolist() == [1, 0] and np.isnan(one.low).all() and one.mean[0] == 4.0
    assert Criterion("x", ">", 0.0).judge(*one.at(0)) == "inconclusive"
    # Coverage with 2 normal seeds: the t-interval keeps ~95%, the two seeds' range covers only ~50%.
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20000, 2))
    t = seed_interval(x)
    assert np.mean((t.low <= 0) & (0 <= t.high)) == pytest.approx(0.95, abs=0.01)
    assert np.mean((x.min(1) <= 0) & (0 <= x.max(1))) == pytest.approx(0.5, abs=0.02)
    with pytest.raises(ValueError, match="level"):
        seed_interval([1.0, 2.0], level=1.5)


# --- the findings box at the top of a chapter ---------------------------------------------------------------------

def _judged(key, values, op=">", level=0.0, statistic="mean", **kw):
    spec = Spec(key, "003", f"Fig. {len(key)}", f"claim {key}", f"measure {key}", op, level, statistic, **kw)
    return judge(spec, Measurement(values))


def test_the_findings_box_words_each_differing_claim_with_its_number_and_never_clips():
    import re

    rows = ([_judged(f"a{k}", [1.0, 1.1, 1.2]) for k in range(4)]
            + [_judged("dis", [-1.0, -1.2, -1.1]),  # disagrees
               _judged("inc", [-1.0, 2.0, 0.5]),  # straddles 0
               _judged("rev", [1.3, 1.35, 1.4], level=1.1, revised_from=1.5, revised_because="lowered after the runs"),
               _judged("sgn", [1.0] * 6, statistic="sign")])
    box = sb.findings_markdown(rows)
    lines = [line for line in box.splitlines() if line.startswith(("- ", "**"))]
    assert "…" not in box and len(lines) <= sb.FINDING_LINES
    # each differing or post-hoc claim: its claim, its number with the interval the judge computed, its runs
    for c in rows:
        if c.verdict != "agrees" or c.post_hoc:
            r = c.readings[0]
            line = next(s for s in lines if f'"{c.claim}"' in s)
            assert c.verdict in line and f"[{rc._fmt(r['low'], '.3g')}, {rc._fmt(r['high'], '.3g')}]" in line
            assert f"over {r['runs']} runs" in line
    assert "at the level 1.5" in box and "would read disagrees" in box  # the earlier level's verdict
    # the tally counts each counted claim once, post hoc apart
    head = lines[0]
    assert re.search(r"\*\*8 claims", head) and "1 on a criterion chosen after the runs" in head
    assert sb.findings_markdown([_claim(kind="check", key="c")]) == "*No counted claim in this run.*"


def test_a_claim_with_its_short_statement_is_one_sentence_with_the_number_and_never_the_long_quote():
    long = "a sentence of the paper " * 6
    rows = [_judged("dis", [-1.0, -1.2, -1.1], short="the ratio is positive"),
            _judged("rev", [1.3, 1.35, 1.4], level=1.1, revised_from=1.5, revised_because="lowered after the runs",
                    short="the ratio exceeds one and a half"),
            _judged("ok", [1.0, 1.1, 1.2], short="the ratio is positive")]
    rows = [dataclasses.replace(c, claim=long.strip()) for c in rows]
    box = sb.findings_markdown(rows)
    assert long.strip() not in box and "…" not in box
    for c in rows[:2]:
        r = c.readings[0]
        line = next(s for s in box.splitlines() if c.short in s)
        # the place, the short claim, the measurement, the number with its interval and runs, the level
        assert line.index(c.where) < line.index(c.short) < line.index(r["measurement"]) < line.index(
            f"[{rc._fmt(r['low'], '.3g')}, {rc._fmt(r['high'], '.3g')}], {r['runs']} runs") < line.index("needs")
    assert "at the level 1.5 set before the runs it would read disagrees" in box
    assert "(criterion chosen after the runs)" in next(s for s in box.splitlines() if rows[1].short in s)
    # an agreeing claim decided in advance: its place and key number only
    assert f"{rows[2].where}: {rc._fmt(rows[2].readings[0]['estimate'], '.3g')}" in box


@pytest.mark.parametrize("table", sorted(Path(__file__).resolve().parent.parent.glob("htlib/experiments/*/claims.toml")),
                         ids=lambda p: p.parent.name)
def test_every_counted_row_states_its_claim_in_short(table):
    from htlib.claims import SHORT_WORDS, read_table
    rows = [s for s in read_table(table).values() if s.counted and not s.variant_of]
    assert rows and all(0 < len(s.short.split()) <= SHORT_WORDS for s in rows), [s.key for s in rows if not s.short]
    with pytest.raises(ValueError, match="short"):
        dataclasses.replace(rows[0], short=" ".join(["word"] * (SHORT_WORDS + 1)))


def test_a_box_with_more_claims_than_lines_moves_whole_claims_to_the_table():
    rows = [_judged(f"d{k}", [-1.0, -1.1, -1.2]) for k in range(12)] + [_judged("ok", [1.0, 1.1, 1.2])]
    box = sb.findings_markdown(rows)
    lines = [line for line in box.splitlines() if line.startswith(("- ", "**"))]
    assert len(lines) == sb.FINDING_LINES and "…" not in box
    assert "7 more claims (7 disagree)" in box  # 12 differing: 5 worded, 7 counted; the agreeing one listed


def test_the_judge_records_its_numbers_as_fields_that_an_independent_interval_reproduces():
    from scipy import stats as sst

    x = [0.8, 1.3, 0.9, 1.7, 1.1]
    c = _judged("m", x, level=0.5)
    (r,) = c.readings
    low, high = sst.t.interval(0.95, len(x) - 1, loc=np.mean(x), scale=sst.sem(x))
    assert (r["estimate"], r["low"], r["high"], r["runs"]) == (
        float(f"{np.mean(x):.3g}"), float(f"{low:.3g}"), float(f"{high:.3g}"), 5)
    k = _judged("s", [1.0, 2.0, -1.0, 3.0, 4.0, 5.0], statistic="sign").readings[0]
    assert (k["count"], k["runs"]) == (5, 6)


@pytest.mark.parametrize("measurement, code", [
    (Measurement.not_run("too slow here"), "not_run"),
    (Measurement(cannot_test="no spike to read"), "cannot_test"),
    (Measurement([1.0, 2.0]), "too_few_runs"),
])
def test_each_gate_leaves_its_code_and_a_post_hoc_row_says_so_whichever_gate_fired(measurement, code):
    spec = Spec("g", "003", "Fig. 1", "c", "m", ">", 0.0, "mean", revised_because="chosen after the runs")
    c = judge(spec, measurement)
    assert c.readings[0]["gate"] == code and code in cj.GATES
    if code != "not_run":
        assert "chosen after the numbers were seen" in c.cause


def test_a_record_title_typesets_its_math():
    board = sb.Scoreboard({Path("ch.ipynb"): [_claim(claim="a spike appears at eta = 1 above lambda_+")]})
    title = board.record_markdown(Path("ch.ipynb"), board.claims_by_notebook[Path("ch.ipynb")][0]).splitlines()[0]
    assert "$\\eta$" in title and "$\\lambda_{+}$" in title and " lambda_+" not in title


@pytest.mark.parametrize("statistic, op, level", [("mean", ">", 1.1), ("sign", ">", 0.5), ("value", "<", 10.0)])
def test_a_run_with_no_finite_value_gates_the_row_once_for_every_chapter(statistic, op, level):
    """A diverged run or a failed fit is never left out (that would choose the runs by their outcome): whichever the
    statistic, one such run makes the row inconclusive with the gate's code and numbers, however many runs agree."""
    from htlib.claims import Measurement, Spec, judge

    spec = Spec("x", "003", "§4", "a claim", "m", op, level, statistic)
    good = [2.0] * (1 if statistic == "value" else 40)
    assert judge(spec, Measurement(good)).verdict == "agrees"
    for bad in (float("nan"), float("inf"), -float("inf")):
        values = [bad] if statistic == "value" else [*good, bad]
        c = judge(spec, Measurement(values))
        assert c.verdict == "inconclusive" and c.readings[0]["gate"] == "nonfinite"
        assert c.readings[0]["why"] == "nonfinite" and c.readings[0]["why_numbers"] == {"k": 1, "n": len(values)}
    with pytest.raises(ValueError, match="draws"):
        Measurement([1.0], draws=[1.0, float("nan")])


def test_the_chapters_keep_a_diverged_seed_for_the_judge():
    """The per-seed readers of two chapters that once dropped or worded a diverged seed themselves now pass it on."""
    from htlib.experiments.generalization import measures as gen
    from htlib.experiments.one_step import measures as one

    for m in (gen._runs([1.0, float("nan"), 2.0]), one._runs([1.0, float("nan"), 2.0])):
        assert len(m.values) == 3 and not m.cannot_test and math.isnan(m.values[1])

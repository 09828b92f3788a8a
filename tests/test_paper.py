"""`make paper`: every chapter's paper-setting parameters are valid, checked without computing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from htlib import book, paper, run

ROOT = Path(__file__).resolve().parent.parent


def test_dry_run_validates_every_chapter_and_computes_nothing(tmp_path):
    out = tmp_path / "paper"
    proc = subprocess.run([sys.executable, "-m", "htlib.paper", "--dry-run", "--output-dir", str(out)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    chapters = [p.stem for p in book.chapters() if p.stem != "scoreboard"]
    for stem in chapters:  # each chapter is listed with its estimate before anything would run
        assert f"  {stem} " in proc.stdout
    assert "total" in proc.stdout and "nothing was computed" in proc.stdout
    assert not out.exists()


def test_every_chapter_has_one_paper_setting_and_estimates_are_positive():
    """A chapter's paper setting is its module's PAPER Setup, or (transitionally) a PAPER_OVERRIDES entry:
    exactly one of the two."""
    stems = {p.stem for p in book.chapters()} - {"scoreboard"}
    with_setup = {p.stem for p in book.chapters() if p.stem in stems and run.chapter_setup(p) is not None}
    assert {"mp_baseline", "phases"} <= with_setup
    assert set(paper.PAPER_OVERRIDES) == stems - with_setup
    for path in book.chapters():
        if path.stem in with_setup:
            setup = run.chapter_setup(path)
            module = __import__(setup.__module__, fromlist=["PAPER"])
            assert isinstance(module.PAPER, setup)
    assert all(paper.estimate_minutes(s) > 0 for s in stems)


def _tiny_book(root: Path) -> None:
    (root / "book").mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("steps = 10  # steps [>= 1]\neta = 0.5  # rate [> 0]")
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell]
    nbformat.write(nb, str(root / "book" / "ch.ipynb"))
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/index\nchapters:\n  - file: book/ch\n")


@pytest.mark.parametrize("overrides, message", [
    ({"stepz": 10}, "chapter 'ch', parameter 'stepz' = 10: unknown parameter 'stepz'"),
    ({"steps": -1}, "chapter 'ch', parameter 'steps' = -1: parameter 'steps' must be >= 1"),
    ({"eta": "fast"}, "chapter 'ch', parameter 'eta' = 'fast'"),
])
def test_a_bad_override_names_chapter_and_parameter(tmp_path, monkeypatch, overrides, message):
    _tiny_book(tmp_path)
    monkeypatch.setattr(paper, "PAPER_OVERRIDES", {"ch": overrides})
    with pytest.raises(run.ParameterError) as info:
        paper.plan(root=tmp_path)
    assert message in str(info.value)


def test_a_chapter_without_an_entry_is_refused(tmp_path, monkeypatch):
    _tiny_book(tmp_path)
    monkeypatch.setattr(paper, "PAPER_OVERRIDES", {})
    with pytest.raises(run.ParameterError, match=r"chapter\(s\) \['ch'\] have no entry"):
        paper.plan(root=tmp_path)


@pytest.mark.slow
def test_make_paper_end_to_end_on_a_tiny_book(tmp_path, monkeypatch, capsys):
    """Chapters rerun with their overrides, rendered, and the scoreboard of that run links to them."""
    import shutil

    (tmp_path / "book").mkdir()
    shutil.copy2(ROOT / "tests" / "fixtures" / "tiny_chapter.ipynb", tmp_path / "book" / "tiny_chapter.ipynb")
    shutil.copy2(ROOT / "book" / "scoreboard.ipynb", tmp_path / "book" / "scoreboard.ipynb")
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/index\nchapters:\n"
                                       "  - file: book/tiny_chapter\n  - file: book/scoreboard\n")
    monkeypatch.setattr(paper, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(paper, "PAPER_OVERRIDES", {"tiny_chapter": {"scale": 3.0}})
    monkeypatch.setenv("TQDM_DISABLE", "1")
    monkeypatch.setenv("HTLIB_PROGRESS", "0")  # main() sets it; monkeypatch restores it afterwards
    out = tmp_path / "runs" / "paper"
    assert paper.main(["--output-dir", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.index("tiny_chapter") < printed.index("[1/1] tiny_chapter") < printed.index("[scoreboard]")
    chapter = run.output_path(tmp_path / "book" / "tiny_chapter.ipynb", {"scale": 3.0}, out)
    assert "22.500" in chapter.with_suffix(".html").read_text()
    (board,) = out.glob("scoreboard-*.html")
    html = board.read_text()
    assert f'href="{chapter.stem}.html#tiny-result"' in html and "the product exceeds ten" in html

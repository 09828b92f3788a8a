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


# --- truthful dry runs ---------------------------------------------------------------------------


def _dry(*args: str) -> subprocess.CompletedProcess:
    """``python -m htlib.paper --dry-run ARGS`` from the repository root, in this process."""
    import contextlib
    import io
    import os

    out, err = io.StringIO(), io.StringIO()
    cwd, scheduler = os.getcwd(), os.environ.pop("HTLIB_SCHEDULER", None)
    try:
        os.chdir(ROOT)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = paper.main(["--dry-run", *args])
    finally:
        os.chdir(cwd)
        if scheduler is not None:
            os.environ["HTLIB_SCHEDULER"] = scheduler
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


@pytest.mark.parametrize("args, message", [
    (["--only", ","], "--only ',' selects no chapter"),
    (["--only", " "], "selects no chapter"),
    (["--only", "htmpp"], "--only: unknown chapter(s) ['htmpp']"),
    (["--output-dir", "book"], "refusing to write reruns into"),
    (["--output-dir", "book/paper"], "refusing to write reruns into"),
    (["--only", "htmp", "--cifar-dir", "/nonexistent"], "--cifar-dir /nonexistent: is not a folder"),
    (["--scheduler", "localhost:8786"], "--scheduler must be a Dask scheduler address tcp://host:port"),
])
def test_dry_run_refuses_what_the_run_would_refuse(args, message, tmp_path):
    proc = _dry(*args)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "nothing was computed" not in proc.stdout


def test_a_cifar_dir_without_the_batches_is_refused(tmp_path):
    (tmp_path / "data_batch_1").write_bytes(b"")
    proc = _dry("--only", "htmp", "--cifar-dir", str(tmp_path))
    assert proc.returncode == 2 and "lacks data_batch_2" in proc.stderr


def test_only_strips_spaces():
    proc = _dry("--only", " phases , mp_baseline ")
    assert proc.returncode == 0, proc.stderr
    listed = [ln.split()[0] for ln in proc.stdout.splitlines()[1:] if ln.startswith("  ") and "~" in ln]
    assert listed == ["mp_baseline", "phases", "total"]


def test_paper_settings_of_setup_chapters_come_from_their_paper_setup(monkeypatch):
    from htlib.experiments import phases

    monkeypatch.setattr(phases.compute, "PAPER", phases.Setup(confusion_seeds=4))
    (entry,) = paper.plan(["phases"])
    assert entry[1] == {"confusion_seeds": 4}
    monkeypatch.setattr(paper, "PAPER_OVERRIDES", {**paper.PAPER_OVERRIDES, "phases": {}})
    with pytest.raises(run.ParameterError, match="has a PAPER Setup and an entry"):
        paper.plan(["phases"])


def test_a_failing_chapter_prints_its_reason(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(paper, "plan", lambda *a, **k: [(ROOT / "book" / "phases.ipynb", {})])

    def fail(path, overrides, **kw):
        raise run.RunFailed("the run of phases.ipynb failed: cell [3] raised ValueError: boom; the partial notebook is x")

    monkeypatch.setattr(run, "run_chapter", fail)
    monkeypatch.setenv("HTLIB_PROGRESS", "0")
    assert paper.main(["--output-dir", str(tmp_path / "p")]) == 1
    err = capsys.readouterr().err
    assert "phases failed: the run of phases.ipynb failed: cell [3] raised ValueError: boom" in err
    assert "the scoreboard failed: the run of phases.ipynb failed" in err  # and no traceback

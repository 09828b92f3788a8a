"""Chapter reruns: parameters are validated before any compute, outputs never land in book/."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from htlib import book, run

PARAMS = '''\
n = 2000                 # training-set size [>= 1]
eta = 0.5                # learning rate [> 0]
optimizer = "adam"       # optimizer [in {"gd", "adam"}]
etas = [0.1, 1.0]        # learning-rate grid [each > 0]
weight_norm = False      # apply weight normalization
label = "x, y"           # a label with a comma
'''


@pytest.fixture()
def chapter(tmp_path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell(PARAMS)
    params.metadata["tags"] = ["parameters"]
    nb.cells = [
        nbformat.v4.new_markdown_cell("# A tiny chapter"),
        params,
        nbformat.v4.new_code_cell("print(f'{n} {eta:.3f} {optimizer} {sum(etas):.2f} {weight_norm}')"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "book" / "tiny.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, str(path))
    return path


def test_read_parameters(chapter):
    params = run.read_parameters(chapter)
    assert list(params) == ["n", "eta", "optimizer", "etas", "weight_norm", "label"]
    assert params["n"].bounds == ((">=", 1.0),)
    assert params["optimizer"].choices == ("adam", "gd")
    assert params["etas"].each and params["etas"].bounds == ((">", 0.0),)
    assert params["eta"].description == "learning rate"


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"etaa": 1.0}, "unknown parameter 'etaa'"),
        ({"n": 1.5}, "must be of type int"),
        ({"n": -3}, "must be >= 1"),
        ({"eta": 0}, "must be > 0"),
        ({"optimizer": "sgd"}, "must be one of"),
        ({"etas": [0.1, -1.0]}, "must be > 0"),
        ({"etas": 0.1}, "must be a list"),
        ({"weight_norm": 1}, "must be of type bool"),
    ],
)
def test_bad_parameters_are_refused_with_the_listing(chapter, overrides, message):
    with pytest.raises(run.ParameterError, match=message) as info:
        run.validate(run.read_parameters(chapter), overrides)
    text = str(info.value)
    assert "valid parameters" in text and "eta: float = 0.5 [> 0]" in text


def test_good_parameters_are_coerced(chapter):
    clean = run.validate(run.read_parameters(chapter), {"eta": 2, "etas": [1, 2]})
    assert clean == {"eta": 2.0, "etas": [1.0, 2.0]}
    assert isinstance(clean["eta"], float)


def test_refuses_to_write_into_book(chapter):
    with pytest.raises(run.ParameterError, match="refusing to write"):
        run.run_chapter(chapter, {}, output_dir=chapter.parent, progress=False, html=False)


def test_cli_rejects_before_compute(chapter, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "htlib.run", str(chapter), "-p", "n", "-5", "--output-dir", str(tmp_path / "runs")],
        capture_output=True, text=True,
    )
    assert proc.returncode == 2
    assert "must be >= 1" in proc.stderr and "valid parameters" in proc.stderr
    assert not (tmp_path / "runs").exists()  # nothing was executed or written


@pytest.mark.slow
def test_cli_rerun_writes_notebook_and_html_outside_book(chapter, tmp_path):
    before = chapter.read_bytes()
    out_dir = tmp_path / "runs"
    proc = subprocess.run(
        [sys.executable, "-m", "htlib.run", str(chapter), "-p", "eta", "0.25", "-p", "optimizer", "gd",
         "--output-dir", str(out_dir)],
        capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stderr
    (nb_path,) = out_dir.glob("tiny-*.ipynb")
    assert nb_path.with_suffix(".html").stat().st_size > 1000
    nb = nbformat.read(str(nb_path), as_version=4)
    printed = nb.cells[-1].outputs[0]["text"]
    assert printed.strip() == "2000 0.250 gd 1.10 False"
    assert chapter.read_bytes() == before
    # The same parameters map to the same file; different ones to another.
    assert nb_path == run.output_path(chapter, {"eta": 0.25, "optimizer": "gd"}, out_dir)
    assert nb_path != run.output_path(chapter, {"eta": 0.5}, out_dir)


def test_each_may_prefix_every_clause(tmp_path):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("gammas = [0.1, 0.5]  # ratios [each > 0, each < 1]\n")
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell]
    path = tmp_path / "c.ipynb"
    nbformat.write(nb, str(path))
    params = run.read_parameters(path)
    assert params["gammas"].each and params["gammas"].bounds == ((">", 0.0), ("<", 1.0))
    with pytest.raises(run.ParameterError, match="must be < 1"):
        run.validate(params, {"gammas": [0.5, 1.0]})


# --- reruns render their prose with the rerun's own numbers ------------------------------------

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "tiny_chapter.ipynb"


def _page_text(html_path: Path) -> str:
    return _page_text_of(html_path.read_text(encoding="utf-8"))


def _page_text_of(page: str) -> str:
    import html as _html
    import re

    body = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    text = _html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)))
    # Sphinx's smartquotes turn a glued "paper's" into "paper’s" on the page.
    text = text.translate(str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'}))
    return re.sub(r" ([,.;:)])", r"\1", text)


def _pasted_glue(nb_path: Path) -> dict[str, str]:
    """Glued text values (verbatim) of the names the notebook's prose pastes with {glue:text}."""
    import re

    nb = nbformat.read(str(nb_path), as_version=4)
    glued = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            text = next((v for k, v in out.get("data", {}).items() if k.endswith("text/plain")), None)
            if name and text is not None:
                glued[name] = text
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    used = {m.split(":")[0] for m in re.findall(r"\{glue:text\}`([^`:]+(?::[^`]*)?)`", prose)}
    return {k: v for k, v in glued.items() if k in used}


TINY_RERUNS = ({"scale": 3.0}, {})  # the tiny chapter's two reruns: at scale 3.0 (value 22.5), at its defaults (15.0)


@pytest.fixture(scope="module")
def tiny_reruns(tmp_path_factory):
    """The tiny chapter rerun twice from the command line into one folder, each page rendered: at scale 3.0, then
    at its defaults, the second under a deep TMPDIR.  One pair of reruns (kernel start and page build, about 12 s
    each) serves three tests, which until 2026-12-06 ran five: test_rerun_html_states_the_new_numbers_not_glue_markup
    (two), test_two_reruns_of_a_chapter_each_serve_their_own_numbers (two, formerly in test_faults.py) and
    test_a_rerun_under_a_deep_temporary_folder_runs (one).  Module-scoped: --dist loadfile keeps this file on one
    worker.  Returns (output folder, {parameters as JSON: the finished process}, the deep TMPDIR)."""
    import json

    tmp = tmp_path_factory.mktemp("tiny-reruns")
    out_dir = tmp / "runs"
    deep = tmp / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    procs = {}
    for overrides in TINY_RERUNS:
        args = [a for k, v in overrides.items() for a in ("-p", k, str(v))]
        env = {**os.environ, "TQDM_DISABLE": "1", **({} if overrides else {"TMPDIR": str(deep)})}
        procs[json.dumps(overrides)] = subprocess.run(
            [sys.executable, "-m", "htlib.run", str(FIXTURE), *args, "--output-dir", str(out_dir)],
            capture_output=True, text=True, timeout=300, env=env)
    return out_dir, procs, deep


@pytest.mark.slow
def test_rerun_html_states_the_new_numbers_not_glue_markup(tiny_reruns):
    import json

    out_dir, procs, _ = tiny_reruns
    for overrides, expected, stale in (({"scale": 3.0}, "22.500", "15.000"), ({}, "15.000", "22.500")):
        proc = procs[json.dumps(overrides)]
        assert proc.returncode == 0, proc.stderr
        nb_path = run.output_path(FIXTURE, overrides, out_dir)
        text = _page_text(nb_path.with_suffix(".html"))
        assert f"The product is {expected}, for a criterion" in text
        assert stale not in text and "{glue" not in text and "glue:text" not in text
        assert "A rerun, not the book's page" in text
        assert ("Parameters that differ from the book's defaults: scale = 3.0." in text) == bool(overrides)
        assert ("It uses the book's default parameters." in text) != bool(overrides)
    assert (out_dir / "_static").is_dir()  # the page's assets sit beside it


@pytest.mark.slow
def test_two_reruns_of_a_chapter_each_serve_their_own_numbers(tiny_reruns):
    """Two reruns with different parameters beside each other: each page's CSV link and search index are its own
    (before: both pages linked _downloads/<md5 of _figure-data/fig-tiny.csv>/, holding the last run's numbers).
    Issue 55, item 1 (moved here from test_faults.py to share the reruns above)."""
    import json

    out_dir, procs, _ = tiny_reruns
    pages = {}
    for overrides in TINY_RERUNS:
        assert procs[json.dumps(overrides)].returncode == 0, procs[json.dumps(overrides)].stderr
        pages[overrides.get("scale", 2.0) * 5 * 1.5] = run.output_path(FIXTURE, overrides, out_dir).with_suffix(".html")
    assert sorted(pages) == [15.0, 22.5]
    hrefs = {}
    for value, page in pages.items():
        html = page.read_text(encoding="utf-8")
        (href,) = set(re.findall(r'href="([^"]+\.csv)"', html))
        hrefs[value] = href
        rows = (out_dir / href).read_text().splitlines()
        assert rows[0].startswith("panel,kind") and any(f",{value:g}" in r for r in rows[1:]), (value, href, rows)
        assert f'search-{page.stem}.html' in html and 'action="search.html"' not in html
        search = (out_dir / f"search-{page.stem}.html").read_text(encoding="utf-8")
        assert f"searchindex-{page.stem}.js" in search
        assert page.stem in (out_dir / f"searchindex-{page.stem}.js").read_text(encoding="utf-8")
        for linking in (html, search):  # no link to a missing file
            local = {h.split("#")[0].split("?")[0] for h in re.findall(r'(?:href|src)="([^"]+)"', linking)
                     if not re.match(r"(?:[a-z]+:|#|//)", h)}
            assert local and not [h for h in local if not (out_dir / h).exists()], page
    assert len(set(hrefs.values())) == 2
    assert sorted(p.name for p in out_dir.glob("tiny_chapter-*")) == sorted(  # a glob of a chapter's runs: its runs
        name for page in pages.values() for name in (page.name, f"{page.stem}.ipynb"))
    assert sorted(p.name for p in (out_dir / "_figure-data").iterdir()) == sorted(p.stem for p in pages.values())


@pytest.mark.slow
def test_rerun_of_a_real_chapter_renders_its_glued_numbers(tmp_path):
    chapter = Path(__file__).resolve().parent.parent / "book" / "mp_baseline.ipynb"
    # W0 and the aspect-ratio panels at a fifth of the book's sizes (h = 1500, d = 1000, 3 draws, 2,000 rows) and one
    # draw, at the book's d/h (so the finite-size sweep is the same): the page is under test, not the numbers.
    overrides = ["-p", "seed", "1", "-p", "sweep_seeds", "1", "-p", "sweep_rows", "[250, 500]", "-p", "h", "300",
                 "-p", "d", "200", "-p", "w0_draws", "1", "-p", "gamma_rows", "400"]
    # Progress bars forced on (pytest's environment turns them off): they must reach the terminal, not the page.
    proc = subprocess.run([sys.executable, "-m", "htlib.run", str(chapter), *overrides, "--output-dir",
                           str(tmp_path)], capture_output=True, text=True,
                          env={**__import__("os").environ, "HTLIB_PROGRESS": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    (nb_path,) = tmp_path.glob("mp_baseline-*.ipynb")
    executed = nb_path.read_text(encoding="utf-8")
    assert "it/s]" not in executed and "%|" not in executed, "a progress bar was written into the page"
    assert not list(tmp_path.glob("*.progress"))
    text = _page_text(nb_path.with_suffix(".html"))
    assert "{glue" not in text and "glue:text" not in text
    for name, value in _pasted_glue(nb_path).items():  # empty until the chapter glues its prose
        assert value.strip("'\"") in text, f"glued {name}={value} not in the rendered rerun"
    assert ("Parameters that differ from the book's defaults: seed = 1, sweep_seeds = 1, sweep_rows = [250, 500], "
            "h = 300, d = 200, w0_draws = 1, gamma_rows = 400.") in text and f"htlib version {book.version()}" in text
    # Its links to the conventions page resolve to the copy beside it.
    html = nb_path.with_suffix(".html").read_text(encoding="utf-8")
    assert 'href="conventions.html#' in html and (tmp_path / "conventions.html").exists()
    # It renders like a book page: the book's style sheet, caption CSV links that work, no link to a missing file.
    assert 'href="_static/htlib.css' in html and (tmp_path / "_static" / "htlib.css").exists()
    csv = re.findall(r'href="([^"]+\.csv)"', html)
    assert csv and all((tmp_path / c).exists() for c in csv)
    local = {h.split("#")[0].split("?")[0] for h in re.findall(r'(?:href|src)="([^"]+)"', html)
             if not re.match(r"(?:[a-z]+:|#|//)", h)}
    assert local and not [h for h in local if not (tmp_path / h).exists()]
    assert not re.search(r'href="#?[\w-]+\.ipynb', html)


def test_the_banner_names_only_what_differs_and_says_when_nothing_does():
    import datetime as dt

    chapter = Path(__file__).resolve().parent.parent / "book" / "phases.ipynb"
    when = dt.datetime(2026, 12, 1, 20, 30, tzinfo=dt.timezone.utc)
    text = run.rerun_banner(chapter, {"h": 400, "seed": 0}, when=when)
    assert "`h = 400`." in text and "seed" not in text and "2026-12-01 at 20:30 UTC" in text
    assert "It uses the book's default parameters." in run.rerun_banner(chapter, {"seed": 0}, when=when)


def test_the_banner_lists_every_verdict_a_rerun_moved_and_opens_the_page(tmp_path):
    """A rerun's page opens with the banner under its title, and the banner gives each verdict that moved from the
    book's page with both values (here a copy of the phases page with one verdict changed and one record gone)."""
    import json

    from htlib.records import CLAIMS_MIME

    chapter = Path(__file__).resolve().parent.parent / "book" / "phases.ipynb"
    nb = json.loads(chapter.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            for key, value in out.get("data", {}).items():
                if key.endswith(CLAIMS_MIME):
                    payload = json.loads(value if isinstance(value, str) else "".join(value))
                    first, gone = payload["claims"][0], payload["claims"][-1]
                    first["verdict"] = "inconclusive" if first["verdict"] != "inconclusive" else "agrees"
                    first["cause"] = first.get("cause") or "moved"
                    payload["claims"] = payload["claims"][:-1]
                    out["data"][key] = json.dumps(payload)
    moved = tmp_path / "phases.ipynb"
    moved.write_text(json.dumps(nb), encoding="utf-8")
    lines = run.verdict_changes(chapter, moved)
    assert len(lines) == 2 and first["verdict"] in lines[0] and first["key"] in lines[0]
    assert gone["key"] in lines[1] and "not in this rerun" in lines[1]
    assert run.verdict_changes(chapter, chapter) == []
    text = run.rerun_banner(chapter, {"h": 400}, changes=lines)
    assert all(line in text for line in lines) and "No verdict differs" in run.rerun_banner(chapter, {}, changes=[])
    # the banner is the first thing under the title
    run.add_banner(moved, text)
    cells = json.loads(moved.read_text(encoding="utf-8"))["cells"]
    assert "".join(cells[0]["source"]).startswith("# ") and "\n" not in "".join(cells[0]["source"]).strip()
    assert "htlib-rerun-banner" in cells[1]["metadata"]["tags"]


# --- what a rerun refuses, it refuses in the dry run too, with its reason ----------------------

ROOT = Path(__file__).resolve().parent.parent


def _cli(*args: str) -> subprocess.CompletedProcess:
    """``python -m htlib.run ARGS`` from the repository root, in this process (its exit code and output)."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    try:
        os.chdir(ROOT)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = run.main(list(args))
    finally:
        os.chdir(cwd)
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


@pytest.mark.parametrize("target, message", [
    ("README.md", "README.md is not a chapter notebook (.ipynb); chapters: book/"),
    ("book", "book is a folder; name one chapter notebook (.ipynb), one of: book/"),
    ("book/no_such_chapter.ipynb", "no such chapter"),
])
def test_not_a_chapter_is_refused_with_a_message(target, message):
    for extra in (["--list"], ["--dry-run"], []):
        proc = _cli(target, *extra)
        assert proc.returncode == 2 and message in proc.stderr, (extra, proc.stderr)
    if target == "README.md":  # and from the command line, with its exit code
        proc = subprocess.run([sys.executable, "-m", "htlib.run", target, "--list"], capture_output=True, text=True,
                              cwd=ROOT)
        assert proc.returncode == 2 and message in proc.stderr


def test_a_file_that_is_not_a_notebook_is_refused(tmp_path):
    bad = tmp_path / "broken.ipynb"
    bad.write_text("{not json")
    proc = _cli(str(bad), "--list")
    assert proc.returncode == 2 and "cannot read" in proc.stderr and "as a notebook" in proc.stderr


@pytest.mark.parametrize("out", ["book", "book/sub"])
def test_dry_run_refuses_an_output_dir_inside_book(chapter, out):
    proc = _cli("book/phases.ipynb", "--dry-run", "--output-dir", out)
    assert proc.returncode == 2 and "refusing to write reruns into" in proc.stderr and "would write" not in proc.stdout
    with pytest.raises(run.ParameterError, match="refusing to write"):
        run.preflight(ROOT / "book" / "phases.ipynb", {}, ROOT / out)


def test_setup_chapter_listing_and_refusals_come_from_its_setup():
    from htlib.experiments import phases

    proc = _cli("book/phases.ipynb", "--list")
    assert proc.returncode == 0 and proc.stdout.strip() == phases.Setup.listing()
    for args, message in ((["-p", "small_d", "59"], "parameter 'small_d' must be an integer ≥ 60"),
                          (["-p", "d", "1600"], "parameter 'd' must be ≤ h = 1500"),
                          (["-p", "h", "1e20"], "parameter 'h' must be an integer ≥ 60, ≤ 20000"),
                          (["-p", "bins", "2.7"], "parameter 'bins' must be an integer"),
                          (["-p", "executor", "threads"], "parameter 'executor' must be"),
                          (["-p", "hh", "3"], "unknown parameter 'hh'")):
        proc = _cli("book/phases.ipynb", *args, "--dry-run")
        assert proc.returncode == 2 and message in proc.stderr and "valid parameters" in proc.stderr, proc.stderr
    proc = _cli("book/phases.ipynb", "-p", "small_h", "400", "-p", "executor", "serial", "--dry-run")
    assert proc.returncode == 0 and "parameters valid: {'small_h': 400, 'executor': 'serial'}" in proc.stdout


def test_dry_run_refuses_a_dask_scheduler_that_does_not_answer():
    import distributed  # noqa: F401
    proc = _cli("book/phases.ipynb", "-p", "executor", "tcp://127.0.0.1:9", "--dry-run")
    assert proc.returncode == 2 and "no Dask scheduler answers at tcp://127.0.0.1:9" in proc.stderr


def test_papermill_gets_the_setup_chapters_cell_without_guessing(caplog):
    """Every parameter of a Setup chapter is one papermill finds in its cell (no 'unknown parameter')."""
    from papermill.translators import PythonTranslator

    for stem in ("mp_baseline", "phases"):
        nb = nbformat.read(str(ROOT / "book" / f"{stem}.ipynb"), as_version=4)
        (cell,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        with caplog.at_level("WARNING", logger="papermill"):
            found = [p.name for p in PythonTranslator.inspect(cell)]
        assert found == run.declared_parameters(ROOT / "book" / f"{stem}.ipynb").names and not caplog.records


def test_a_failed_run_says_why_and_keeps_its_partial_output(chapter, tmp_path):
    """In process and from the command line (one kernel run each: this test holds what were two, the command
    line's run once the old test_failed_run_keeps_partial_output's)."""
    nb = nbformat.read(str(chapter), as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("raise RuntimeError('diverged at step 3')"))
    nbformat.write(nb, str(chapter))
    with pytest.raises(run.RunFailed, match=r"failed: cell \[\d+\] raised RuntimeError: diverged at step 3; "
                                            r"the partial notebook is"):
        run.run_chapter(chapter, {}, output_dir=tmp_path / "runs", progress=False, html=False)
    out_dir = tmp_path / "runs-cli"  # its own folder: the partial notebook read below is the command line's
    proc = subprocess.run([sys.executable, "-m", "htlib.run", str(chapter), "--output-dir", str(out_dir),
                           "--no-html"], capture_output=True, text=True)
    assert proc.returncode == 1 and "RuntimeError: diverged at step 3" in proc.stderr
    assert "TCP without encryption" not in proc.stderr
    assert "partial notebook" in proc.stderr
    (partial,) = out_dir.glob("tiny-*.ipynb")
    assert "diverged at step 3" in partial.read_text()


@pytest.mark.slow
def test_a_rerun_at_other_sizes_keeps_no_typed_size_of_the_defaults(tmp_path):
    """The phases chapter rerun at other sizes: no size, rank or count of the default run survives in its
    rendered prose and tables (the parameters cell shows the declared defaults as `h: int = 1500`, a form
    that none of these patterns matches)."""
    import re

    from htlib.experiments import phases

    chapter = Path(__file__).resolve().parent.parent / "book" / "phases.ipynb"
    # The sizes under test, and the counts this check does not read at their smallest (one seed per family at h x d
    # as at the small size, one pool worker): the sizes and the rank are what the prose types.
    small = dict(h=400, d=200, small_h=120, small_d=60, small_seeds=1, confusion_seeds=1, workers=1)
    args = [a for k, v in small.items() for a in ("-p", k, str(v))]
    proc = subprocess.run([sys.executable, "-m", "htlib.run", str(chapter), *args, "--output-dir", str(tmp_path)],
                          capture_output=True, text=True, env={**os.environ, "TQDM_DISABLE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    (nb_path,) = tmp_path.glob("phases-*.ipynb")
    # A glued number renders as its own element: "rank-{glue}" reads "rank- 20" in the page's text.
    text = re.sub(r"- (\d)", r"-\1", _page_text(nb_path.with_suffix(".html")))
    d = phases.Setup()
    stale = [f"{d.h} x {d.d}", f"{d.h} × {d.d}", f"{d.h}×{d.d}", f"{d.small_h} x {d.small_d}",
             f"{d.small_h} × {d.small_d}", f"rank-{d.d // 10}"]
    found = [s for s in stale if s in text]
    assert not found, f"typed sizes of the default run in the rerun at {small}: {found}"
    for s in ("400 x 200", "120 x 60", f"rank-{small['d'] // 10}", "Parameters that differ from the book's defaults"):
        assert s in text, s


def test_a_rerun_writes_the_numbers_behind_its_figures_beside_it(chapter, tmp_path):
    """A glued figure's CSV goes beside the rerun notebook, never into book/ (where the chapter runs)."""
    nb = nbformat.read(str(chapter), as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(
        "import matplotlib.pyplot as plt\nfrom htlib.records import glue_figure\nfig, ax = plt.subplots()\n"
        "ax.plot([0, 1], [n, 2 * n])\nglue_figure('fig-rerun', fig)\nplt.close(fig)"))
    nbformat.write(nb, str(chapter))
    out = run.run_chapter(chapter, {"n": 7}, output_dir=tmp_path / "runs", progress=False, html=False)
    data = (tmp_path / "runs" / "_figure-data" / out.stem / "fig-rerun.csv").read_text().splitlines()  # its own
    assert data == ["panel,kind,label,x,y", "1,line,,0,7", "1,line,,1,14"]
    assert not (chapter.parent / "_figure-data").exists()
    assert "HTLIB_FIGURE_DATA" not in os.environ


# --- concurrency and bad input at the command line (issue 40) ---------------------------------


def _listing(folder: Path) -> list[str]:
    """Every path under ``folder``, ignored files included (``git status`` would not show sockets or caches)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_two_reruns_started_at_once_both_succeed_alike_and_write_nothing_beside_the_chapter(tmp_path):
    """Both kernels run in the fixture's folder; their connection files and IPC sockets must not go there
    (jupyter_client's default, ``kernel-ipc-<n>`` in the working folder, made them race for the same names)."""
    import threading
    import time

    folder = FIXTURE.parent
    before = _listing(folder)
    seen: set[str] = set()
    running = threading.Event()
    running.set()

    def watch():  # anything that appears beside the chapter while the two run
        while running.is_set():
            seen.update(set(_listing(folder)) - set(before))
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    go = tmp_path / "go"  # each process imports everything, says it is ready, then starts its kernel on "go"
    code = ("import os, sys, time, papermill; from htlib import run; open(sys.argv[1] + '.' + str(os.getpid()), 'w')"
            ".close()\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.005)\nsys.exit(run.main(sys.argv[2:]))")
    out_dirs = [tmp_path / "a", tmp_path / "b"]
    procs = [subprocess.Popen([sys.executable, "-c", code, str(go), str(FIXTURE), "--no-html", "--output-dir",
                               str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "TQDM_DISABLE": "1"}) for out in out_dirs]
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("go.*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    results = [p.communicate(timeout=180) for p in procs]
    running.clear()
    watcher.join()
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in results]
    assert not seen and _listing(folder) == before, sorted(seen)
    texts = []
    for out in out_dirs:
        (nb_path,) = out.glob("tiny_chapter-*.ipynb")
        assert sorted(p.name for p in out.iterdir()) == ["_figure-data", nb_path.name]  # no working file left
        nb = book.strip_for_commit(nbformat.read(str(nb_path), as_version=4))
        texts.append([(o.get("text"), o.get("data")) for c in nb.cells if c.cell_type == "code" for o in c.outputs])
    assert texts[0] == texts[1] and "value = 15.000\n" in [t for t, _ in texts[0]]


def test_a_repeated_parameter_is_refused_naming_it(chapter):
    proc = _cli(str(chapter), "-p", "n", "3", "-p", "eta", "0.1", "-p", "n", "4", "--dry-run")
    assert proc.returncode == 2 and "parameter 'n' is given 2 times" in proc.stderr and "-p n 4" in proc.stderr
    assert "would write" not in proc.stdout


def test_the_scoreboards_source_must_be_an_existing_folder(tmp_path):
    scoreboard = ROOT / "book" / "scoreboard.ipynb"
    for missing in (tmp_path / "no-such-run", tmp_path / "a-file"):
        if missing.name == "a-file":
            missing.write_text("")
        proc = _cli(str(scoreboard), "-p", "source", str(missing), "--dry-run")
        assert proc.returncode == 2 and "parameter 'source' must be an existing folder" in proc.stderr
        assert str(missing) in proc.stderr, proc.stderr
    # A relative folder is taken from where it is typed (the kernel runs in book/): made absolute.
    assert run.check_overrides(scoreboard, {"source": "tests"}) == {"source": str(ROOT / "tests")}


def _sigint_default():
    """A rerun started from a terminal: Ctrl-C at its default.  A test suite launched in the background (``make test
    &``) has SIGINT ignored, and a child would inherit that and never see the Ctrl-C this test sends."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("when", ["in a cell", "while the kernel starts"])
def test_ctrl_c_during_a_rerun_prints_one_line_naming_the_partial_notebook(tmp_path, when, request):
    """One line, no traceback; and no kernel or runtime folder left (nbclient never shuts down a kernel
    interrupted while it starts, and Ctrl-C does not reach it: jupyter_client gives it its own session)."""
    import signal
    import time

    nb = nbformat.read(str(FIXTURE), as_version=4)
    nb.cells.insert(3, nbformat.v4.new_code_cell("open('started', 'w').close(); import time; time.sleep(120)"))
    chapter = tmp_path / "ch" / "slow.ipynb"
    chapter.parent.mkdir()
    nbformat.write(nb, str(chapter))
    tmp = Path(tempfile.mkdtemp(prefix="t", dir="/tmp"))  # the kernels' runtime folders appear here (a short
    request.addfinalizer(lambda: shutil.rmtree(tmp, ignore_errors=True))  # path: else they move to /tmp)
    proc = subprocess.Popen([sys.executable, "-m", "htlib.run", str(chapter), "--no-html", "--output-dir",
                             str(tmp_path / "runs")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env={**os.environ, "TQDM_DISABLE": "1", "TMPDIR": str(tmp)},
                            preexec_fn=_sigint_default)
    marker = (lambda: list(tmp.glob("htlib-kernel-*/kernel.json"))) if when != "in a cell" else (
        lambda: (chapter.parent / "started").exists())
    deadline = time.monotonic() + 120
    while not marker() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    kernels = [str(f) for f in tmp.glob("htlib-kernel-*/kernel.json")]
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole foreground group
    _, err = proc.communicate(timeout=60)
    partial = run.output_path(chapter, {}, tmp_path / "runs")
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert err.strip().splitlines() == [f"interrupted: the partial notebook of slow.ipynb is {partial}"]
    if when == "in a cell":
        assert "value = 15.000" in partial.read_text() and "time.sleep(120)" in partial.read_text()
    assert partial.exists() and kernels and not list(tmp.glob("htlib-kernel-*"))
    assert not [pid for pid in _pids() if any(k in _cmdline(pid) for k in kernels)], "a kernel process is left"


def _pids() -> list[str]:
    return [p for p in os.listdir("/proc") if p.isdigit()] if os.path.isdir("/proc") else []


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:  # gone meanwhile
        return ""


def _parents() -> dict[int, int]:
    """Every live (not zombie) process -> its parent."""
    out = {}
    for pid in _pids():
        try:
            state, ppid = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[:2]
        except (OSError, ValueError):  # gone meanwhile
            continue
        if state != "Z":
            out[int(pid)] = int(ppid)
    return out


def _descendants(root: int) -> set[int]:
    parents, found, todo = _parents(), set(), [root]
    while todo:
        p = todo.pop()
        kids = {c for c, pp in parents.items() if pp == p} - found
        found |= kids
        todo.extend(kids)
    return found


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process parents from /proc")
def test_a_killed_rerun_mid_sweep_leaves_no_process_behind(tmp_path):
    """SIGKILL of a rerun (an out-of-memory kill, ``kill -9``) while its kernel waits on a process pool: the
    kernel, the pool's workers and multiprocessing's resource tracker all exit; none lives on re-parented."""
    import signal
    import time

    nb = nbformat.read(str(FIXTURE), as_version=4)
    nb.cells.insert(3, nbformat.v4.new_code_cell(
        "import time\nfrom htlib.sweep import process_executor\npool = process_executor(2)\n"
        "futures = [pool.submit(time.sleep, 600) for _ in range(2)]\ntime.sleep(1)\n"
        "open('started', 'w').close()\n[f.result() for f in futures]"))
    chapter = tmp_path / "ch" / "sweep.ipynb"
    chapter.parent.mkdir()
    nbformat.write(nb, str(chapter))
    proc = subprocess.Popen([sys.executable, "-m", "htlib.run", str(chapter), "--no-html", "--output-dir",
                             str(tmp_path / "runs")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, env={**os.environ, "TQDM_DISABLE": "1"})
    family: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while not (chapter.parent / "started").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        family = _descendants(proc.pid)
        assert len(family) >= 3, family  # the kernel and its two pool workers (and the resource tracker)
        proc.kill()  # the rerun alone, not its process group
        proc.wait(10)
        deadline = time.monotonic() + 30
        while family & set(_parents()) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = family & set(_parents())
        assert not left, [_cmdline(str(p))[:120] for p in left]
    finally:
        for pid in family | {proc.pid}:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def test_a_rerun_under_a_deep_temporary_folder_runs(tiny_reruns):
    """A Unix socket's path holds at most 107 bytes: under a deep TMPDIR (pytest-xdist's are) the kernel's
    sockets go to a folder of their own under /tmp, and the run succeeds.  The run: tiny_reruns' second (its page
    rendered too, under the same TMPDIR)."""
    _, procs, deep = tiny_reruns
    assert len(str(deep)) > 107  # deeper than a socket's path may be
    proc = procs["{}"]
    assert proc.returncode == 0, proc.stderr
    assert not list(deep.iterdir())  # nothing left behind


def test_the_progress_relay_prints_the_newest_bar_state_once(tmp_path, capsys):
    bars = tmp_path / "x.progress"
    relay = run._ProgressRelay(bars, every=0.05)
    import time

    time.sleep(0.2)  # no file yet: nothing printed
    bars.write_text("\rruns:  10%|#  | 1/10\rruns:  20%|## | 2/10", encoding="utf-8")
    time.sleep(0.3)
    relay.stop()
    err = capsys.readouterr().err
    assert err.count("runs:  20%") == 1 and "10%" not in err

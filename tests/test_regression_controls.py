"""Controls of the number-aware regression (``tests/nbval_numbers.py``, tolerances in ``tests/tolerances.py``).

The comparison must tell a change of arithmetic from a change of the book:

* negative controls, which must fail: a 2% change of the measured numbers (what a 2% change of a learning
  rate or of a threshold constant does to them) in every chapter whose tolerance can resolve it, a flipped
  verdict or phase label whatever the tolerance, a count that moves by one, a word or a table row added or
  removed, a claim record that gains or loses a field;
* positive controls, which must pass: the committed outputs against themselves, and against themselves with
  every decimal moved by the relative jitter that the portability runs measured (reprinted at its own
  precision, so that digits flip at rounding boundaries as they do on another machine).

The outputs are the committed reference outputs of every chapter; nothing is executed except the two
end-to-end checks that run nbval itself on a small fixture notebook.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import shutil
import random
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbval.plugin import coalesce_streams

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nbval_numbers as nn  # noqa: E402
import tolerances as tl  # noqa: E402

from htlib import book  # noqa: E402
from htlib.records import CLAIMS_MIME  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = [p for p in book.chapters() if p.stem != "scoreboard"]
SANITIZE = nn.sanitizer(ROOT / "tests" / "nbval_sanitize.cfg")
ANY = tl.Tolerance(1e9, 1e9, "a tolerance that accepts any number")


def _cells(path: Path) -> list[tuple[int, nbformat.NotebookNode]]:
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    return [(i, c) for i, c in enumerate(code) if c.outputs and c.execution_count is not None]


def _compare(ref_outputs, new_outputs, tol) -> nn.Result:
    ref, new = (coalesce_streams([nbformat.from_dict(copy.deepcopy(o)) for o in outs])
                for outs in (ref_outputs, new_outputs))
    return nn.compare_outputs(ref, new, tol, sanitize=SANITIZE)


# ---------------------------------------------------------------------------------------------
# Perturbations of outputs: each maps a text to a text, and is applied to every compared string.

def _reprint(token: nn.Token, value: float) -> str:
    """``value`` printed the way ``token`` was: as many decimals (of the mantissa), the same exponent and
    sign glyph, as a fresh print of a slightly different value would show it."""
    text = token.text.replace("\u2212", "-")
    if "\u00d710" in text:  # a power of ten written out (htlib.plotting.plain_number): the same power
        mantissa, _, power = text.partition("\u00d710")
        decimals = len(mantissa.partition(".")[2])
        exponent = int(power.translate(nn._SUPER))
        return f"{value / 10 ** exponent:.{decimals}f}" + token.text[len(mantissa):]
    mantissa, e, exponent = text.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    if e:
        out = f"{value / 10 ** int(exponent):.{decimals}f}" + token.text[len(mantissa):]
    else:
        out = f"{value:.{decimals}f}"
    if text.lstrip("+-").startswith("."):
        out = re.sub(r"^(-?)0\.", r"\1.", out)
    if text.startswith("+") and not out.startswith("-"):
        out = "+" + out
    if "\u2212" in token.text:
        out = out.replace("-", "\u2212")
    return out


def scale_decimals(factor_of) -> callable:
    """A perturbation that multiplies every decimal by ``factor_of(token)`` and reprints it."""

    def perturb(text: str) -> str:
        pieces, pos = [], 0
        for m in nn._NUMBER.finditer(text):
            token = nn._number(m.group())
            pieces.append(text[pos:m.start()])
            pieces.append(m.group() if token.integer else _reprint(token, token.value * factor_of(token)))
            pos = m.end()
        return "".join(pieces) + text[pos:]

    return perturb


def perturb_outputs(outputs, perturb):
    """A copy of ``outputs`` with ``perturb`` applied to every text (the claim records field by field)."""
    outputs = copy.deepcopy(outputs)

    def walk_json(value, key=None):
        if isinstance(value, dict):
            return {k: walk_json(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [walk_json(v, key) for v in value]
        if isinstance(value, str) and key not in nn.EXACT_FIELDS:
            return perturb(value)
        return value

    for out in outputs:
        if out.get("output_type") == "stream":
            out["text"] = perturb(out["text"])
        for mime, value in out.get("data", {}).items():
            if mime.endswith(CLAIMS_MIME):
                out["data"][mime] = json.dumps(walk_json(json.loads(value)), ensure_ascii=False, sort_keys=True)
            elif isinstance(value, str):
                out["data"][mime] = perturb(value)
    return outputs


def _resolvable(outputs, tol: tl.Tolerance, change: float) -> bool:
    """Whether some decimal of ``outputs`` is printed finely enough, and ``tol`` is tight enough, to show
    a relative ``change``."""
    texts = []
    for out in outputs:
        texts.append(out.get("text", ""))
        texts.extend(v for v in out.get("data", {}).values() if isinstance(v, str))
    for text in texts:
        for t in nn.tokenize(SANITIZE(text)):
            if t.is_number and not t.integer and t.value:
                v = abs(t.value)
                # the perturbed value is reprinted: it moves by at least |change| v - q / 2
                if change * v - t.quantum / 2 > tol.atol + tol.rtol * v * (1 + change) + t.quantum:
                    return True
    return False


# ---------------------------------------------------------------------------------------------
# The tokenizer and the text comparison on small cases.

def test_claims_mime_is_htlib_s():
    assert nn.CLAIMS_MIME == CLAIMS_MIME


def test_tokens_read_signs_precision_and_hyphens():
    toks = nn.tokenize("\u22120.57 vs -0.65, CIFAR-10, d^-0.466, 1.018e+04, 2-3, 12.5%")
    numbers = [(t.text, t.value, t.integer) for t in toks if t.is_number]
    assert numbers == [("\u22120.57", -0.57, False), ("-0.65", -0.65, False), ("10", 10, True),
                       ("-0.466", -0.466, False), ("1.018e+04", 10180.0, False), ("2", 2, True),
                       ("3", 3, True), ("12.5", 12.5, False)]
    assert nn.tokenize("1.018e+04")[0].quantum == pytest.approx(10)
    assert nn.tokenize("2.63")[0].quantum == pytest.approx(0.01)


@pytest.mark.parametrize("ref, new", [
    ("test loss 2.63", "test loss 2.629"),  # a 4-significant-digit value across a rounding boundary
    ("max 0.738 and 0.831", "max 0.737 and 0.832"),
    ("rho = \u22120.57", "rho = \u22120.57"),
    ("top 1 (a %.4g float)", "top 0.9999 (a %.4g float)"),
    ("|   2.63 |", "|  2.629 |"),  # pandas' padding around a wider number
])
def test_last_digit_flips_pass_at_the_closed_form_tolerance(ref, new):
    assert nn.compare_text(ref, new, tl.CLOSED_FORM).ok


@pytest.mark.parametrize("ref, new, why", [
    ("test loss 2.63", "test loss 2.68", "a 2% change"),
    ("verdict agrees", "verdict disagrees", "a flipped verdict"),
    ("phase bulk+spikes", "phase heavy-tailed", "a flipped phase label"),
    ("diverged runs: 0", "diverged runs: 1", "a count"),
    ("611 eigenvalues above the edge", "612 eigenvalues above the edge", "a count"),
    ("the test loss 2.63", "the test loss rises 2.63", "an added word"),
    ("seeds: 3 5", "seeds: 3", "a removed number"),
    ("0.57", "rho", "a number that became a word"),
])
def test_real_changes_fail_whatever_the_tolerance_allows_them(ref, new, why):
    tight = nn.compare_text(ref, new, tl.CLOSED_FORM)
    assert not tight.ok, why
    if why != "a 2% change":
        assert not nn.compare_text(ref, new, ANY).ok, why


def test_claim_records_compare_any_field_generically():
    rec = {"paper": "003", "where": "§4, Fig. 3(a)", "verdict": "agrees", "measured": "train 0.831 vs 0.859",
           "interval": "[0.52, 0.61]", "value": 0.5731, "threshold": 0.6, "n": 5}
    jittered = {**rec, "measured": "train 0.8311 vs 0.859", "interval": "[0.5201, 0.61]", "value": 0.57311}
    tol = tl.Tolerance(1e-3)
    assert nn.compare_json(rec, jittered, tol).ok
    for field, value in [("verdict", "inconclusive"), ("paper", "001"), ("n", 6), ("threshold", 0.7),
                         ("interval", "[0.52, 0.61, 0.7]"), ("measured", "test 0.831 vs 0.859")]:
        assert not nn.compare_json(rec, {**rec, field: value}, ANY if field != "threshold" else tol).ok, field
    assert not nn.compare_json(rec, {**rec, "reason": "new field"}, ANY).ok
    assert not nn.compare_json([rec], [rec, rec], ANY).ok


def test_the_text_form_of_a_table_may_rewrap_but_keeps_its_words():
    html = '<table class="dataframe"><tr><td>2.63</td></tr></table>'
    ref = [{"output_type": "execute_result", "execution_count": 1, "metadata": {},
            "data": {"text/html": html, "text/plain": "   a     b\n0  2.63  x\n"}}]
    rewrapped = copy.deepcopy(ref)
    rewrapped[0]["data"]["text/plain"] = "   a  \\\n0  2.63  \n\n   b\n0  x\n"
    assert _compare(ref, rewrapped, tl.CLOSED_FORM).ok
    lost = copy.deepcopy(ref)
    lost[0]["data"]["text/plain"] = "   a     c\n0  2.63  x\n"
    assert not _compare(ref, lost, ANY).ok


def test_a_glued_figure_compares_by_its_text_only():
    ref = [{"output_type": "display_data", "metadata": {},
            "data": {"application/papermill.record/text/plain": "<Figure size 640x480 with 1 Axes>"}}]
    fresh = copy.deepcopy(ref)
    fresh[0]["data"]["application/papermill.record/image/png"] = "iVBOR"  # refresh strips it from references
    assert _compare(ref, fresh, tl.CLOSED_FORM).ok
    assert set(nn.GLUED_IMAGES) <= set(nn._NBVAL_SKIP)


def test_a_cell_override_needs_a_reason():
    assert tl.for_cell("htmp", {"htlib": {"rtol": 0.05, "reason": "measured: see tolerances.py"}}).rtol == 0.05
    with pytest.raises(ValueError, match="reason"):
        tl.for_cell("htmp", {"htlib": {"rtol": 0.05}})
    with pytest.raises(ValueError, match="rtol must be"):
        tl.for_cell("htmp", {"htlib": {"rtol": -1, "reason": "x"}})


def test_integers_are_measurements_only_where_a_cell_says_so():
    assert not nn.compare_text("ratio 164", "ratio 165", tl.Tolerance(0.01)).ok
    assert nn.compare_text("ratio 164", "ratio 165", tl.Tolerance(0.01, integers=True)).ok
    assert not nn.compare_text("outliers 0", "outliers 1", tl.Tolerance(0.01, integers=True)).ok


def test_every_cell_override_names_an_existing_cell():
    for (chapter, cell_id), tol in tl.CELLS.items():
        nb = nbformat.read(ROOT / "book" / f"{chapter}.ipynb", as_version=4)
        assert cell_id in {c.get("id") for c in nb.cells if c.cell_type == "code"}, \
            f"tests/tolerances.py: {chapter} has no code cell {cell_id!r} any more; move its tolerance"
        assert tol.reason.strip()


def test_every_chapter_has_a_tolerance_with_its_reason():
    for path in CHAPTERS:
        tol = tl.CHAPTERS.get(path.stem)
        assert tol is not None and tol.reason.strip(), f"tests/tolerances.py has no tolerance for {path.stem}"


# ---------------------------------------------------------------------------------------------
# The committed outputs of every chapter.

@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_committed_outputs_match_themselves(path):
    tol = tl.for_cell(path.stem)
    for i, cell in _cells(path):
        result = _compare(cell.outputs, cell.outputs, tl.Tolerance(0.0))
        assert result.ok, (i, result.problems)
    assert tol.reason


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_arithmetic_jitter_passes(path):
    """Every decimal moved by a random fraction of the measured arithmetic deviation (reprinted at its
    own precision) passes: the chapter's tolerance covers what another machine does."""
    rng = random.Random(20)
    chapter = path.stem
    for i, cell in _cells(path):
        tol = tl.for_cell(chapter, cell.metadata, cell.get("id"))
        # at least a change in the last bits, so that closed-form chapters are jittered too
        size = max(tol.measured, 1e-12)
        # one value moves one way wherever the cell prints it, as on another machine (a split table repeats its
        # row labels in every part)
        moved: dict[str, float] = {}
        jitter = perturb_outputs(cell.outputs, scale_decimals(
            lambda t: moved.setdefault(t.text, 1 + rng.uniform(-1, 1) * size)))
        result = _compare(cell.outputs, jitter, tol)
        assert result.ok, (i, result.problems)


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_a_two_percent_change_fails(path):
    """What a 2% change of a constant does to the numbers it sets: every cell whose printed digits and
    tolerance can show 2% fails, and every chapter has such cells."""
    chapter = path.stem
    caught = 0
    for i, cell in _cells(path):
        tol = tl.for_cell(chapter, cell.metadata, cell.get("id"))
        if not _resolvable(cell.outputs, tol, 0.02):
            continue
        result = _compare(cell.outputs, perturb_outputs(cell.outputs, scale_decimals(lambda t: 1.02)), tol)
        assert not result.ok, f"cell {i} of {chapter} accepts every number moved by 2%"
        caught += 1
    assert caught, f"no cell of {chapter} can show a 2% change at tolerance {tl.for_cell(chapter).describe()}"


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_a_flipped_verdict_fails_whatever_the_tolerance(path):
    flips = {"agrees": "disagrees", "disagrees": "agrees", "partly": "agrees", "not tested": "agrees",
             "inconclusive": "agrees"}
    found = 0
    for i, cell in _cells(path):
        for out in cell.outputs:
            for mime, value in out.get("data", {}).items():
                if mime.endswith(CLAIMS_MIME):
                    payload = json.loads(value)
                    first = payload["claims"][0]
                    first["verdict"] = flips[first["verdict"]]
                    flipped = copy.deepcopy(cell.outputs)
                    for o in flipped:
                        if mime in o.get("data", {}):
                            o["data"][mime] = json.dumps(payload, ensure_ascii=False, sort_keys=True)
                    assert not _compare(cell.outputs, flipped, ANY).ok
                    found += 1
                elif mime == "text/markdown" and (m := re.search(r"`(agrees|disagrees)`", "".join(value))):
                    # the claims table: one dropdown per record, its verdict in the title's badge
                    value = "".join(value)
                    swapped = "`%s`" % flips[m.group(1)]
                    flipped = copy.deepcopy(cell.outputs)
                    for o in flipped:
                        if "".join(o.get("data", {}).get("text/markdown", "")) == value:
                            o["data"]["text/markdown"] = value[:m.start()] + swapped + value[m.end():]
                    assert not _compare(cell.outputs, flipped, ANY).ok
                    found += 1
    assert found >= 2, f"{path.stem}: no claim records and claims table found"


def test_a_flipped_phase_label_fails_whatever_the_tolerance():
    hits = 0
    for i, cell in _cells(ROOT / "book" / "phases.ipynb"):
        text = json.dumps(cell.outputs)
        if "bulk+spikes" in text:
            flipped = perturb_outputs(cell.outputs, lambda s: s.replace("bulk+spikes", "heavy-tailed", 1))
            assert not _compare(cell.outputs, flipped, ANY).ok, i
            hits += 1
    assert hits


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_an_added_or_removed_table_row_fails_whatever_the_tolerance(path):
    hits = 0
    for i, cell in _cells(path):
        for out in cell.outputs:
            html = out.get("data", {}).get("text/html")
            rows = re.findall(r"<tr>.*?</tr>", html or "", re.S)
            if len(rows) < 3:
                continue
            for edit in (lambda h: h.replace(rows[-1], "", 1), lambda h: h.replace(rows[-1], rows[-1] * 2, 1)):
                changed = copy.deepcopy(cell.outputs)
                for o in changed:
                    if o.get("data", {}).get("text/html") == html:
                        o["data"]["text/html"] = edit(html)
                assert not _compare(cell.outputs, changed, ANY).ok, i
            hits += 1
    assert hits, f"{path.stem} shows no table"


# ---------------------------------------------------------------------------------------------
# Real reruns under other arithmetic (tests/portability.py --fixture): the cells that moved, both versions.

RERUNS = sorted((ROOT / "tests" / "fixtures" / "portability").glob("*.json"))


@pytest.mark.parametrize("fixture", RERUNS, ids=[p.stem for p in RERUNS])
def test_a_real_rerun_under_other_arithmetic_passes(fixture):
    """Each cell that another arithmetic moved (so that nbval's exact comparison fails it) passes at its
    tolerance."""
    data = json.loads(fixture.read_text())
    assert data["cells"], fixture.name
    for cell in data["cells"]:
        ref, new = ([nbformat.from_dict(o) for o in cell[k]] for k in ("reference", "rerun"))
        # A fixture of cells that a rewrite has since renamed names the tolerance it measured.
        tol = getattr(tl, data["tolerance"]) if "tolerance" in data else tl.for_cell(data["chapter"], {}, cell["id"])
        result = _compare(ref, new, tol)
        assert result.ok, (cell["index"], result.problems)
        assert result.max_rel > 0, f"cell {cell['index']}: no number moved"


# ---------------------------------------------------------------------------------------------
# nbval itself, through the repository's conftest.py.

NBVAL = [sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "-p", "no:cacheprovider",
         "--nbval-sanitize-with", str(ROOT / "tests" / "nbval_sanitize.cfg")]
FIXTURE = ROOT / "tests" / "fixtures" / "numbers_chapter.ipynb"


def _nbval(*args: str, cwd: Path = ROOT, **extra_env: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env.update(extra_env)
    return subprocess.run([*NBVAL, *args], capture_output=True, text=True, cwd=cwd, env=env)


def test_nbval_passes_last_digits_that_exact_comparison_fails():
    """The fixture's stored numbers differ from a fresh run in their last digits only."""
    assert _nbval("tests/fixtures/numbers_chapter.ipynb").returncode == 0
    exact = _nbval("--noconftest", "tests/fixtures/numbers_chapter.ipynb")
    assert exact.returncode != 0 and "mismatch 'stdout'" in exact.stdout


def _kept(root: Path, notebook: Path):
    import nbformat
    from jupyter_cache import get_cache

    from htlib.book import execution_cache_path

    path = execution_cache_path(root)
    if not path.exists():
        return None
    try:
        return get_cache(str(path)).merge_match_into_notebook(nbformat.read(str(notebook), as_version=4))[1]
    except KeyError:  # no record for this notebook's code
        return None


def test_the_book_build_reuses_what_nbval_executed_and_only_what_passed(tmp_path):
    """``--keep-executed`` stores a passing chapter, with its fresh outputs, where the book build looks it up;
    a chapter with a failing cell, or a run without the option, stores nothing (the build executes it)."""
    def run(name: str, text: str, *options: str) -> tuple[int, object]:
        root = tmp_path / name
        (root / "book").mkdir(parents=True)
        notebook = root / "book" / "chapter.ipynb"
        notebook.write_text(text)
        proc = _nbval("-p", "nbval_numbers", "-p", "nbval_keep", "--rootdir", str(root), *options, "book/chapter.ipynb", cwd=root,
                      PYTHONPATH=str(ROOT / "tests"))
        return proc.returncode, _kept(root, notebook)

    code, kept = run("good", FIXTURE.read_text(), "--keep-executed")
    assert code == 0 and kept is not None
    text = "".join(o.get("text", "") for c in kept.cells if c.cell_type == "code" for o in c.outputs)
    assert "verdict: agrees" in text and "100000 terms" in text
    # The stored output says "disagrees" where the fresh run prints "agrees": the cell fails, nothing is kept.
    failing = FIXTURE.read_text().replace('"verdict: agrees\\n"', '"verdict: disagrees\\n"')
    assert failing != FIXTURE.read_text()
    code, kept = run("bad", failing, "--keep-executed")
    assert code != 0 and kept is None
    code, kept = run("plain", FIXTURE.read_text())
    assert code == 0 and kept is None


EDITS = [("verdict: agrees", "verdict: disagrees"), ("100000 terms", "100001 terms"),
         ("1.644924066898229", "1.677")]


def test_nbval_fails_a_changed_word_count_or_number(tmp_path):
    """One copy of the fixture's cell per edit: a word, a count, a number 2% off; each cell must fail."""
    nb = nbformat.read(FIXTURE, as_version=4)
    cell = nb.cells[1]
    nb.cells = nb.cells[:1]
    for i, (old, new) in enumerate(EDITS):
        edited = copy.deepcopy(cell)
        edited["id"] = f"edit-{i}"
        assert old in edited.outputs[0].text
        edited.outputs[0].text = edited.outputs[0].text.replace(old, new)
        nb.cells.append(edited)
    nbformat.write(nb, tmp_path / FIXTURE.name)
    # Outside the repository its conftest.py is not read: the plugin is named instead.  No short summary
    # (-rN): under CI=1 pytest prints each failure's message there again, untruncated.
    proc = _nbval("-rN", "-p", "nbval_numbers", FIXTURE.name, cwd=tmp_path, PYTHONPATH=str(ROOT / "tests"))
    assert f"{len(EDITS)} failed" in proc.stdout, proc.stdout[-3000:]
    assert proc.stdout.count("beyond what tests/tolerances.py allows") == len(EDITS)


# ---------------------------------------------------------------------------------------------
# Another processor (issue 50): the pinned arithmetic, the second variant CI runs, and the tolerances of 2026-12-06.

EPYC = ROOT / "tests" / "fixtures" / "portability" / "linear_hessian.epyc-pinned.json"


def _rerun_cells(path: Path):
    data = json.loads(path.read_text())
    for cell in data["cells"]:
        yield data["chapter"], cell, *([nbformat.from_dict(o) for o in cell[k]] for k in ("reference", "rerun"))


def test_the_old_tolerances_fail_another_processor_and_the_current_pass():
    """The linear-Hessian chapter on an AMD EPYC against the Intel Xeon's references: each cell that failed
    ``make nbval`` there (issue 50: 6 of the chapter's cells) fails the comparison as it was (the tolerances of
    ``PREVIOUS`` and the table HTML compared as printed), and passes the current one."""
    cells = list(_rerun_cells(EPYC))
    assert len(cells) == 6
    for chapter, cell, ref, new in cells:
        before = tl.PREVIOUS.get((chapter, cell["id"]), tl.CLOSED_FORM)
        old = nn.compare_outputs(*(coalesce_streams(copy.deepcopy(o)) for o in (ref, new)), before,
                                 sanitize=SANITIZE, canonical=False)
        assert not old.ok, (cell["index"], "the comparison of before 2026-12-06 passes it")
        now = _compare(ref, new, tl.for_cell(chapter, {}, cell["id"]))
        assert now.ok, (cell["index"], now.problems)
        assert now.max_rel > 0
    # Two of the six fail on their numbers alone (the held runs' gaps, the LOBPCG gaps at round-off), whatever the
    # HTML: the old tolerances, not only the old HTML comparison, fail there.
    numbers_fail = [cell["id"] for chapter, cell, ref, new in cells
                    if not _compare(ref, new, tl.PREVIOUS.get((chapter, cell["id"]), tl.CLOSED_FORM)).ok]
    assert len(numbers_fail) >= 2, numbers_fail


def test_a_book_table_compares_its_cells_not_where_it_split_or_wrapped():
    """``table_html`` splits a wide frame where the values' full representations make it too wide, and wraps
    hyphenated or exponent tokens in spans: both follow the last bits.  The comparison joins and unwraps them; a
    changed column name, a value moved to another column or a lost row still fails."""
    import pandas as pd

    from htlib.plotting import table_html

    frame = pd.DataFrame({"runs": [15.0, 5.0], "excess": [0.173066, 0.309916], "drop": [-1.110223e-16, 4.1e-02]},
                         index=["a", "b"])
    one, two = table_html(frame), table_html(frame, width_px=150)
    assert one.count("<table") == 1 and two.count("<table") > 1
    assert nn.compare_value("text/html", one, two, tl.Tolerance(0.0), "html").ok
    assert not nn.compare_value("text/html", one, two, ANY, "html", canonical=False).ok
    for html in (table_html(frame.rename(columns={"drop": "rise"}), width_px=150), table_html(frame.iloc[:1], width_px=150)):
        assert not nn.compare_value("text/html", one, html, ANY, "html").ok
    swapped = table_html(frame.assign(drop=frame["excess"], excess=frame["drop"]), width_px=150)
    assert not nn.compare_value("text/html", one, swapped, tl.Tolerance(0.01), "html").ok
    # a wrapped exponent against a plain zero: the same table shape
    zero = table_html(frame.assign(drop=[0.0, 4.1e-02]))
    assert "<span" in one and nn.compare_value("text/html", one, zero, tl.Tolerance(0, 1e-15), "html").ok


def test_a_solver_residual_is_compared_against_its_bound():
    bound = tl.Tolerance(1e-9, below=tl.SOLVER_BOUND)
    assert nn.compare_text("LOBPCG gap 6e-10 at the end", "LOBPCG gap 8.2e-10 at the end", bound).ok
    assert not nn.compare_text("LOBPCG gap 6e-10 at the end", "LOBPCG gap 8.2e-10 at the end", tl.CLOSED_FORM).ok
    assert not nn.compare_text("LOBPCG gap 6e-10 at the end", "LOBPCG gap 2e-08 at the end", bound).ok
    assert not nn.compare_text("sharpness 1.225", "sharpness 1.25", bound).ok  # above the bound: as any decimal


def test_the_solver_bound_is_ten_times_the_eigensolver_tolerance():
    import inspect

    from htlib.linear import hessian_eigensolve

    tol = inspect.signature(hessian_eigensolve).parameters["tol"].default
    assert tl.SOLVER_BOUND == pytest.approx(10 * tol)


def test_every_trained_cell_has_a_floor_and_still_fails_two_percent():
    for key, tol in tl.CELLS.items():
        assert tol.rtol >= tl.SAFETY * tl.TRAINED_FLOOR, key
    assert tl.SAFETY * tl.TRAINED_FLOOR < 0.02 / 2


def _make_dry(target: str) -> str:
    proc = subprocess.run(["make", "-n", "-s", target], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _env_words(command: str) -> dict[str, str]:
    return dict(w.split("=", 1) for w in command.split() if re.fullmatch(r"[A-Z][A-Z0-9_]*=\S+", w))


def test_the_arithmetic_pins_are_one_line_that_the_regression_targets_use():
    import portability

    pins = portability.arith_pins()
    assert pins and set(pins) <= {"ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_CBWR"}, pins
    assert pins.get("MKL_CBWR") != "COMPATIBLE"  # a 3.3x slower GEMM (benchmarks/bench_arith_pins.py)
    for target in ("nbval", "refresh"):
        env = _env_words(_make_dry(target).splitlines()[-2 if target == "nbval" else -1])
        assert {k: env.get(k) for k in pins} == pins, (target, env)
    cold = _env_words(_make_dry("nbval-cold"))
    # CI's second arithmetic: the pins, torch's scalar kernels, one thread; what tests/portability.py calls "ci"
    assert {k: cold.get(k) for k in portability.VARIANTS["ci"]} == portability.VARIANTS["ci"], cold
    assert cold["ATEN_CPU_CAPABILITY"] == "default" and cold["OMP_NUM_THREADS"] == "1"
    for command in (_make_dry("nbval"), _make_dry("nbval-cold"), _make_dry("refresh")):
        assert "OPENBLAS_CORETYPE" not in command and "OPENBLAS_L2_SIZE" not in command
    assert not any("OPENBLAS" in k for v in portability.VARIANTS.values() for k in v)


# A seed's p-value in htmp's NTK records, as the Intel Xeon's references print it and as the AMD EPYC redrew it
# (issue 50: "0.15, <= 0.05, 0.1, 0.85, 0.3, 0.9" and "0.05, 0.15, 0.7, 0.95, 0.6, 0.7"; 5 of 6 seeds kept in both).
_NTK_RECORD = ("1 if the goodness-of-fit test of the fitted inverse HTMP law (parametric bootstrap, 19 refits) does not "
               "reject it at 0.05 (p > 0.05), else 0: 6 training seed(s) (0, 1, 2, 3, 4, 5); exact sign test, one-sided "
               "p = 0.11 (opposite direction 0.98); " + "; ".join(
                   f"seed {i}: KS 0.02 (kappa 0.1, gamma 0.05) against 19 refits 0.0145 +- 0.0033, p {{{i}}}"
                   for i in range(6)) + "; 22 eigenvalues zero: inconclusive ({kept} of 6 runs have p > 0.05)")


def _ntk(ps, kept=5, zero=22):
    return _NTK_RECORD.format(*ps, kept=kept).replace("22 eigenvalues", f"{zero} eigenvalues")


def test_a_redrawn_p_value_is_compared_through_the_count_of_seeds_kept():
    tol = tl.for_cell("htmp", {}, "76a11e12")
    assert tol.redrawn
    intel, epyc = ("0.15", "<= 0.05", "0.1", "0.85", "0.3", "0.9"), ("<= 0.05", "0.15", "0.7", "0.95", "0.6", "0.7")
    ref = _ntk(intel)
    assert nn.compare_text(ref, _ntk(epyc), tol).ok
    assert not nn.compare_text(ref, _ntk(epyc), tl.Tolerance(tol.rtol, tol.atol, "no pattern", tol.integers)).ok
    assert nn.compare_text(ref, _ntk(intel, zero=31), tol).ok  # a count of a chaotic run: within the rtol
    # what the verdict reads still fails: a flipped verdict, a seed's p that becomes a word, another test's p
    assert not nn.compare_text(ref, _ntk(epyc).replace("inconclusive", "agrees"), tol).ok
    assert not nn.compare_text(ref, _ntk(epyc).replace("p <= 0.05;", "p rejected;", 1), tol).ok
    assert not nn.compare_text(ref, _ntk(epyc).replace("p = 0.11", "p = 0.016"), tl.Tolerance(0.5, redrawn=tol.redrawn)).ok


def test_htmp_on_another_processor_passes_only_through_its_redrawn_patterns():
    """htmp's NTK table and claim records on the AMD EPYC under the pins (the cells that failed make nbval there):
    they pass, and fail with the same tolerances without the redrawn patterns (a seed's p-value, its flag)."""
    import dataclasses

    cells = list(_rerun_cells(ROOT / "tests" / "fixtures" / "portability" / "htmp.epyc-pinned.json"))
    assert len(cells) == 2
    for chapter, cell, ref, new in cells:
        tol = tl.for_cell(chapter, {}, cell["id"])
        assert _compare(ref, new, tol).ok, cell["index"]
        assert not _compare(ref, new, dataclasses.replace(tol, redrawn=())).ok, cell["index"]


def test_a_power_of_ten_written_out_compares_as_its_number():
    """The book's tables write 1.2e-15 as 1.2×10⁻¹⁵ (htlib.plotting.plain_number): the same number to the regression."""
    from htlib.plotting import plain_number

    assert nn.compare_text(f"x {plain_number(1.2e-15)}", "x 1.2e-15", tl.CLOSED_FORM).ok
    assert nn.compare_text("gap 6×10⁻¹⁰", "gap 8.2×10⁻¹⁰", tl.Tolerance(1e-9, below=tl.SOLVER_BOUND)).ok
    assert not nn.compare_text("gap 6×10⁻¹⁰", "gap 6×10⁻⁸", tl.CLOSED_FORM).ok
    assert not nn.compare_text("gap 6×10⁻¹⁰", "gap 6×10⁻¹⁰ 3", tl.CLOSED_FORM).ok


def test_htmp_on_an_intel_xeon_fails_its_old_comparison_and_passes_the_measured_one():
    """htmp's five cells that failed on the Intel Xeon against the AMD EPYC's references: each fails the comparison
    it had (one processor's moves; a seed's delta and every verdict as printed), and passes the current one, where a
    seed's delta compares through the count of seeds and the variant whose interval ends lie within the processors'
    move of its level compares through its numbers."""
    cells = list(_rerun_cells(ROOT / "tests" / "fixtures" / "portability" / "htmp.intel-avx512-pinned.json"))
    assert sorted(cell["id"] for _, cell, _, _ in cells) == ["15059596", "2846e2f2", "5e31c0bd", "76a11e12", "d09fba9f"]
    for chapter, cell, ref, new in cells:
        assert not _compare(ref, new, tl.PREVIOUS[(chapter, cell["id"])]).ok, cell["id"]
        now = _compare(ref, new, tl.for_cell(chapter, {}, cell["id"]))
        assert now.ok and now.max_rel > 0.01, (cell["id"], now.problems)


def test_a_verdict_compared_through_its_numbers_leaves_every_other_verdict_compared():
    """The Intel Xeon's robustness table passes with the variant's verdict redrawn; the same table fails when a
    verdict of any other record moves, and when the variant is not listed."""
    (_, _, ref, new), = [c for c in _rerun_cells(ROOT / "tests" / "fixtures" / "portability" /
                                                  "htmp.intel-avx512-pinned.json") if c[1]["id"] == "5e31c0bd"]
    tol = tl.for_cell("htmp", {}, "5e31c0bd")
    assert _compare(ref, new, tol).ok
    assert not _compare(ref, new, dataclasses.replace(tol, verdicts_redrawn=())).ok

    def edit(outputs, old, new_text):
        out = copy.deepcopy(outputs)
        for o in out:
            for mime, value in o.get("data", {}).items():
                text = "".join(value) if isinstance(value, list) else value
                if isinstance(text, str) and old in text:
                    o["data"][mime] = text.replace(old, new_text, 1)
        return out

    # another variant's verdict: the first "disagrees" badge of a dropdown that is not the listed variant's
    other = edit(new, "{bdg-danger}`disagrees`", "{bdg-success}`agrees`")
    assert other != new and not _compare(ref, other, tol).ok


@pytest.mark.parametrize("fixture, cell_id, moved", [
    # The linear-Hessian trajectory table (gaps along 10,000 GD epochs) had the chapter's closed-form tolerance,
    # measured on one processor; on an AVX-512 AMD EPYC its gaps moved up to 4.1%.
    ("linear_hessian.zen4-pinned.json", "ffbaa16d", 0.01),
    # The spike chapter's variants table reads the review's chaotic eta = 100 runs, yet had the chapter's
    # closed-form tolerance; on an Intel Xeon with AVX-512 its tail exponent moved 1%, its standard error 3.4%.
    ("spike_to_heavy_tail.intel-avx512-pinned.json", "ba121f83", 0.005)])
def test_a_table_fails_its_old_tolerance_on_another_processor_and_passes_its_measured_one(fixture, cell_id, moved):
    """The cell's rerun on the other processor fails the chapter's closed-form tolerance it had, and passes the
    measured one it has now."""
    cells = list(_rerun_cells(ROOT / "tests" / "fixtures" / "portability" / fixture))
    assert [cell["id"] for _, cell, _, _ in cells] == [cell_id]
    for chapter, cell, ref, new in cells:
        assert not _compare(ref, new, tl.CHAPTERS[chapter]).ok
        now = _compare(ref, new, tl.for_cell(chapter, {}, cell["id"]))
        assert now.ok and now.max_rel > moved, (now.problems, now.max_rel)

"""nbval's comparison, with measured numbers compared within a tolerance and everything else exactly.

nbval compares a cell's fresh outputs with the committed ones as exact strings.  Training is chaotic at
the fourth significant digit, so on a machine whose vector kernels or reduction orders differ from the
one that wrote the references, exact strings fail on numbers that mean nothing.  This module keeps nbval
as the runner (``pytest --nbval ...``, the README's command) and changes one thing: when nbval's exact
comparison of a cell fails, the cell is compared again here, and passes if the only differences are
measured numbers within the cell's tolerance (``tests/tolerances.py``).

What is compared, for every output nbval compares (stdout, stderr, ``text/plain``, ``text/html``,
``text/markdown``, glued values, the claim records), after nbval's sanitize rules:

* Text is split into tokens: numbers and words (whitespace separates words and is not compared, so the
  padding pandas adds around a wider number is not a difference).  The two token sequences must have the
  same length and the same words in the same places: verdicts, phase labels, column names, HTML tags
  (hence table shapes), units, every word of the prose.
* An integer (a number without a decimal point or exponent) is a count, a parameter or a label: compared
  exactly, as written -- unless the cell's tolerance says its integers are measurements too
  (``integers=True``: a count taken from a chaotic run, a float of 3 significant digits above 100).
* A decimal (``2.63``, ``-0.57``, ``\u22120.57``, ``1.018e+04``) is a measurement: ``a`` and ``b`` agree when
  ``|a - b| <= atol + rtol * max(|a|, |b|) + q``, with ``q`` the unit of the last printed digit of the
  finer of the two.  ``q`` is what printing adds: two values a hair apart on either side of a rounding
  boundary print one unit apart ("2.63" for 2.62951 and "2.629" for 2.62949 at 4 significant digits,
  the ``g`` format dropping the trailing zero).  An integer facing a decimal ("1" against "0.9999") is
  a measurement printed without digits and is compared the same way.
* The claim records (JSON under the MIME type ``text/x-htlib-claims+json``) are parsed and compared
  field by field, whatever fields a record has: the same keys, the same number of records; the
  identifying fields (:data:`EXACT_FIELDS`: the verdict, the paper, the section, the chapter) exactly;
  every other string field as text as above; JSON numbers like decimals (floats) or exactly (ints).
* A pandas table is shown twice: ``text/html`` and ``text/plain``.  The HTML is compared as above (every
  cell, the column names and the number of rows and columns, through its tags).  The ``text/plain`` form
  lays the same frame out to a width that depends on the printed numbers (a wider number can push a
  column into the next block, and each block repeats the row labels), so it is only required to hold
  the same set of words.

The functions take plain nbformat outputs, so the negative controls (``tests/test_regression_controls.py``)
and the portability script (``tests/portability.py``) call them without running nbval.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import pytest

from tolerances import Tolerance, for_cell

__all__ = [
    "Token", "tokenize", "Result", "compare_text", "compare_json", "compare_outputs", "sanitizer",
    "EXACT_FIELDS", "CLAIMS_MIME", "GLUED_IMAGES",
]

CLAIMS_MIME = "text/x-htlib-claims+json"
"""The claim records' MIME type (``htlib.claims.CLAIMS_MIME``; repeated so that collecting a notebook
needs no import of htlib, and checked equal by the controls)."""

EXACT_FIELDS = frozenset({"verdict", "paper", "section", "chapter", "key", "variant_of"})
"""Claim-record fields compared as exact strings: what the claim is, which claim a variant varies, and how it
was judged.  Every other field, present or added later (``setting``, ``uncertainty``, ``cause``, a
``threshold``), is compared generically: strings as text with numbers tolerated, JSON numbers as numbers."""

# A number: digits with an optional fraction and exponent.  A sign belongs to it only where it cannot be
# an operator or a hyphen (not right after a word, a digit or a closing bracket: "CIFAR-10", "2-3").
_NUMBER = re.compile(
    r"(?:(?<![\w)\].])[-+\u2212])?"
    r"(?:\d+(?:\.\d+)?|(?<![\d.])\.\d+)"
    r"(?:[eE][-+]?\d+)?"
)


@dataclass(frozen=True)
class Token:
    """A word, or a number with its printed precision.

    Attributes
    ----------
    text : str
        The token as printed.
    value : float or None
        The number's value; ``None`` for a word.
    integer : bool
        True for a number written without a decimal point or exponent (compared exactly).
    quantum : float
        The unit of the last printed digit (0 for a word).
    """

    text: str
    value: float | None = None
    integer: bool = False
    quantum: float = 0.0

    @property
    def is_number(self) -> bool:
        return self.value is not None


def _number(text: str) -> Token:
    plain = text.replace("\u2212", "-")
    mantissa, _, exponent = plain.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    quantum = 10.0 ** (int(exponent or 0) - decimals)
    integer = "." not in mantissa and not exponent
    return Token(text, float(plain), integer, quantum)


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into words and numbers; whitespace only separates.

    Examples
    --------
    >>> [t.text for t in tokenize("rho = \u22120.57 (CIFAR-10, 2.6e+03 steps)")]
    ['rho', '=', '\u22120.57', '(CIFAR-', '10', ',', '2.6e+03', 'steps)']
    >>> tokenize("2.629")[0].quantum
    0.001
    """
    out: list[Token] = []
    pos = 0
    for m in _NUMBER.finditer(text):
        out.extend(Token(w) for w in text[pos:m.start()].split())
        out.append(_number(m.group()))
        pos = m.end()
    out.extend(Token(w) for w in text[pos:].split())
    return out


@dataclass
class Result:
    """The outcome of a comparison.

    Attributes
    ----------
    ok : bool
        Whether the outputs agree within the tolerance.
    problems : list of str
        What differs, one line each.
    max_rel : float
        The largest relative deviation between two compared decimals, as printed.
    needed_rtol : float
        The smallest ``rtol`` that would accept every decimal pair (with ``atol = 0``): the relative
        deviation beyond the last printed digit, which is what the arithmetic moved.
    worst : str
        The pair that sets ``needed_rtol``.
    numbers : int
        How many decimal pairs were compared.
    """

    ok: bool = True
    problems: list[str] = field(default_factory=list)
    max_rel: float = 0.0
    needed_rtol: float = 0.0
    worst: str = ""
    numbers: int = 0

    def fail(self, where: str, message: str) -> None:
        self.ok = False
        self.problems.append(f"{where}: {message}")

    def merge(self, other: "Result") -> None:
        self.ok &= other.ok
        self.problems.extend(other.problems)
        self.max_rel = max(self.max_rel, other.max_rel)
        if other.needed_rtol > self.needed_rtol:
            self.needed_rtol, self.worst = other.needed_rtol, other.worst
        self.numbers += other.numbers


def _rel(a: float, b: float) -> float:
    scale = max(abs(a), abs(b))
    return abs(a - b) / scale if scale > 0 else 0.0


def _numbers_agree(ref: Token, new: Token, tol: Tolerance, result: Result) -> bool:
    both_integers = ref.integer and new.integer
    if both_integers and not tol.integers:
        return ref.text == new.text
    a, b = ref.value, new.value
    if not (math.isfinite(a) and math.isfinite(b)):
        return ref.text == new.text
    result.numbers += 1
    result.max_rel = max(result.max_rel, _rel(a, b))
    # Two integers compared as measurements (a cell's opt-in) get no printing allowance: 0 -> 1 is a change.
    q = 0.0 if both_integers else min(ref.quantum, new.quantum)
    excess = max(abs(a - b) - q, 0.0) / max(abs(a), abs(b)) if a != b else 0.0
    if excess > result.needed_rtol:
        result.needed_rtol, result.worst = excess, f"{ref.text} -> {new.text}"
    # 1e-9 of slack in the comparison itself: a quantum such as 10**-3 is not exact in binary.
    return abs(a - b) <= (tol.atol + tol.rtol * max(abs(a), abs(b)) + q) * (1 + 1e-9)


def _context(tokens: Sequence[Token], i: int, width: int = 4) -> str:
    return " ".join(t.text for t in tokens[max(0, i - width):i + width + 1])


def compare_text(ref: str, new: str, tol: Tolerance, where: str = "text") -> Result:
    """Compare two texts token by token: words and integers exactly, decimals within ``tol``.

    Examples
    --------
    >>> from tolerances import Tolerance
    >>> compare_text("test loss 2.63 (3 seeds)", "test loss  2.629 (3 seeds)", Tolerance(1e-3)).ok
    True
    >>> compare_text("verdict: agrees", "verdict: disagrees", Tolerance(1.0)).ok
    False
    """
    result = Result()
    a, b = tokenize(ref), tokenize(new)
    for i, (x, y) in enumerate(zip(a, b)):
        if x.is_number and y.is_number:
            if not _numbers_agree(x, y, tol, result):
                kind = "count" if x.integer and y.integer else "number"
                result.fail(where, f"{kind} {x.text} -> {y.text} (relative {_rel(x.value, y.value):.2g}, "
                                   f"tolerance {tol.describe()}) in '{_context(b, i)}'")
        elif x.text != y.text or x.is_number != y.is_number:
            result.fail(where, f"'{x.text}' -> '{y.text}' in '{_context(b, i)}' (was '{_context(a, i)}')")
        if len(result.problems) >= 5:
            break
    if len(a) != len(b) and result.ok:
        i = min(len(a), len(b))
        result.fail(where, f"{len(a)} tokens -> {len(b)}: from '{_context(a, i)}' / '{_context(b, i)}'")
    return result


def _layout_free(ref: str, new: str, where: str) -> Result:
    """The same set of words: the text form of a table whose cells are compared in its HTML form.

    pandas wraps a wide frame into blocks that repeat the row labels and end lines with a backslash,
    and the width of a printed number decides where a block ends; so neither the order nor the count of
    tokens is a property of the frame.
    """
    result = Result()
    words_a, words_b = ({t.text for t in tokenize(s) if not t.is_number} - {"\\"} for s in (ref, new))
    if words_a != words_b:
        result.fail(where, f"words differ: lost {sorted(words_a - words_b)[:5]}, gained {sorted(words_b - words_a)[:5]}")
    return result


def compare_json(ref: Any, new: Any, tol: Tolerance, where: str = "json", key: str | None = None) -> Result:
    """Compare parsed JSON: the same structure; :data:`EXACT_FIELDS` exactly; other strings as text.

    Examples
    --------
    >>> from tolerances import Tolerance
    >>> rec = {"verdict": "agrees", "measured": "train 0.831 vs 0.859"}
    >>> compare_json(rec, {**rec, "measured": "train 0.832 vs 0.859"}, Tolerance(0.01)).ok
    True
    >>> compare_json(rec, {**rec, "verdict": "inconclusive"}, Tolerance(1.0)).ok
    False
    """
    result = Result()
    if isinstance(ref, dict) and isinstance(new, dict):
        if set(ref) != set(new):
            result.fail(where, f"fields {sorted(set(ref) - set(new))} lost, {sorted(set(new) - set(ref))} gained")
            return result
        for k in ref:
            result.merge(compare_json(ref[k], new[k], tol, f"{where}.{k}", k))
    elif isinstance(ref, list) and isinstance(new, list):
        if len(ref) != len(new):
            result.fail(where, f"{len(ref)} entries -> {len(new)}")
            return result
        for i, (x, y) in enumerate(zip(ref, new)):
            result.merge(compare_json(x, y, tol, f"{where}[{i}]", key))
    elif isinstance(ref, str) and isinstance(new, str):
        if key in EXACT_FIELDS:
            if ref != new:
                result.fail(where, f"{ref!r} -> {new!r}")
        else:
            result.merge(compare_text(ref, new, tol, where))
    elif isinstance(ref, bool) or isinstance(new, bool) or ref is None or new is None:
        if type(ref) is not type(new) or ref != new:
            result.fail(where, f"{ref!r} -> {new!r}")
    elif isinstance(ref, (int, float)) and isinstance(new, (int, float)):
        x = Token(repr(ref), float(ref), isinstance(ref, int))
        y = Token(repr(new), float(new), isinstance(new, int))
        if key in EXACT_FIELDS and ref != new or not _numbers_agree(x, y, tol, result):
            result.fail(where, f"{ref!r} -> {new!r} (tolerance {tol.describe()})")
    else:
        result.fail(where, f"{type(ref).__name__} {ref!r:.60} -> {type(new).__name__} {new!r:.60}")
    return result


def _join(value: Any) -> Any:
    return "".join(value) if isinstance(value, list) and all(isinstance(v, str) for v in value) else value


def _is_frame_html(value: Any) -> bool:
    return isinstance(value, str) and 'class="dataframe"' in value


GLUED_IMAGES = ("application/papermill.record/image/png", "application/papermill.record/image/jpeg",
                "application/papermill.record/image/svg+xml")
"""The images of glued figures, skipped like ``image/png``: a figure glued for a numbered MyST figure
(``myst_nb.glue(name, fig, display=False)``) carries its image under these keys, which
``htlib.book.strip_for_commit`` drops like any image, so glued figures compare by their text only."""

# nbval's own list (IPyNbFile.skip_compare without --nbdime) and the glued images: keys never compared.
_NBVAL_SKIP = ("metadata", "traceback", "prompt_number", "output_type", "name", "execution_count",
               "application/vnd.jupyter.widget-view+json", "image/png", "image/jpeg", *GLUED_IMAGES)
_FRAME_TEXT = "text/plain of a table"


def _flatten(outputs: Iterable[dict], skip: Sequence[str], sanitize: Callable[[Any], Any]) -> dict[str, list]:
    """nbval's grouping: every compared key of every output, values in order (streams by stream name)."""
    flat: dict[str, list] = defaultdict(list)
    for out in outputs:
        if out.get("output_type") == "stream":
            flat[out["name"]].append(sanitize(_join(out["text"])))
            continue
        for key, value in out.items():
            if key in skip:
                continue
            if key != "data":
                flat[key].append(sanitize(_join(value)))
                continue
            frame = _is_frame_html(_join(value.get("text/html")))
            for mime, content in value.items():
                if mime in skip:
                    continue
                target = _FRAME_TEXT if frame and mime == "text/plain" else mime
                flat[target].append(sanitize(_join(content)))
    return flat


def compare_value(key: str, ref: Any, new: Any, tol: Tolerance, where: str) -> Result:
    """Compare one output value of MIME type (or stream name) ``key``."""
    if key == _FRAME_TEXT:
        return _layout_free(ref, new, where)
    if key.endswith("json") or key.endswith("+json"):
        try:
            a = json.loads(ref) if isinstance(ref, str) else ref
            b = json.loads(new) if isinstance(new, str) else new
        except json.JSONDecodeError:
            return compare_text(str(ref), str(new), tol, where)
        return compare_json(a, b, tol, where)
    if isinstance(ref, str) and isinstance(new, str):
        return compare_text(ref, new, tol, where)
    return compare_json(ref, new, tol, where)


def compare_outputs(ref: Iterable[dict], new: Iterable[dict], tol: Tolerance, *,
                    sanitize: Callable[[Any], Any] = lambda s: s, skip: Sequence[str] = _NBVAL_SKIP) -> Result:
    """Compare a cell's committed outputs ``ref`` with fresh ones ``new`` (nbformat output dicts).

    The same outputs are compared as in nbval (the same keys, as many values per key, streams
    coalesced by the caller), each value by :func:`compare_value`.
    """
    a, b = _flatten(ref, skip, sanitize), _flatten(new, skip, sanitize)
    result = Result()
    if set(a) != set(b):
        result.fail("outputs", f"kinds {sorted(set(a) - set(b))} lost, {sorted(set(b) - set(a))} gained")
        return result
    for key in a:
        if len(a[key]) != len(b[key]):
            result.fail(key, f"{len(a[key])} outputs -> {len(b[key])}")
            continue
        for i, (x, y) in enumerate(zip(a[key], b[key])):
            result.merge(compare_value(key, x, y, tol, f"{key}[{i}]" if len(a[key]) > 1 else key))
    return result


def sanitizer(path: str | Path | None) -> Callable[[Any], Any]:
    """The sanitize function of an nbval ``--nbval-sanitize-with`` file (identity for ``None``)."""
    if path is None:
        return lambda s: s
    from nbval.plugin import get_sanitize_patterns

    patterns = get_sanitize_patterns(Path(path).read_text())

    def sanitize(s: Any) -> Any:
        if not isinstance(s, str):
            return s
        for regex, replace in patterns:
            s = re.sub(regex, replace, s)
        return s

    return sanitize


# ---------------------------------------------------------------------------------------------
# The pytest plugin: loaded by the repository's conftest.py, active only when nbval collects notebooks.

def chapter_of(path: Path) -> str:
    """The chapter a notebook is a run of: its stem (``book/htmp.ipynb``, ``runs/htmp-1a2b.ipynb``)."""
    return re.split(r"[-.]", path.stem, maxsplit=1)[0]


try:
    from nbval.plugin import IPyNbCell, IPyNbFile
except ImportError:  # nbval is in the test extra; without it there are no notebooks to compare
    IPyNbCell = IPyNbFile = None

if IPyNbCell is not None:

    class NumberAwareCell(IPyNbCell):
        """An nbval cell whose failed exact comparison is retried with the numbers' tolerance."""

        def compare_outputs(self, test, ref, skip_compare=None):
            if super().compare_outputs(test, ref, skip_compare):
                return True
            exact_report = self.comparison_traceback
            chapter = chapter_of(Path(str(self.parent.path)))
            tol = for_cell(chapter, self.cell.metadata, self.cell.get("id"))
            result = compare_outputs(ref, test, tol, sanitize=self.sanitize,
                                     skip=skip_compare or self.parent.skip_compare)
            if result.ok:
                self.comparison_traceback = []
                return True
            self.comparison_traceback = [
                f"Outputs differ beyond what tests/tolerances.py allows for {chapter} "
                f"(tolerance {tol.describe()}: {tol.reason}):",
                *(f"  {p}" for p in result.problems[:12]),
                "", "nbval's exact comparison:", *exact_report,
            ]
            return False

    class NumberAwareFile(IPyNbFile):
        """nbval's notebook collector, yielding :class:`NumberAwareCell` items; glued images are skipped."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.skip_compare = self.skip_compare + GLUED_IMAGES

        def collect(self):
            for item in super().collect():
                yield NumberAwareCell.from_parent(self, name=item.name, cell_num=item.cell_num, cell=item.cell,
                                                  options=item.options)

    @pytest.hookimpl(wrapper=True)
    def pytest_collect_file(file_path, parent):
        collected = yield
        return [NumberAwareFile.from_parent(parent, path=file_path) if type(c) is IPyNbFile else c
                for c in collected]

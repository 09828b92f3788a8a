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
* A tolerance may also name a bound (``below``: two decimals both at or under it agree, a solver residual
  compared as the boolean "below its bound") and redrawn patterns (``redrawn``: replaced in both texts before
  the comparison, what a chaotic run redraws reduced to what is compared instead).
* The claim records (JSON under the MIME type ``text/x-htlib-claims+json``) are parsed and compared
  field by field, whatever fields a record has: the same keys, the same number of records; the
  identifying fields (:data:`EXACT_FIELDS`: the verdict, the paper, the section, the chapter) exactly;
  every other string field as text as above; JSON numbers like decimals (floats) or exactly (ints).
* A book table's HTML (``htlib.plotting.table_html``) is first brought to one form
  (:func:`canonical_frame_html`): its no-wrap spans unwrapped and a frame split over several tables joined
  back, since where it splits and which tokens get a span follow the printed digits alone.
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
"""The claim records' MIME type (``htlib.records.CLAIMS_MIME``; repeated so that collecting a notebook
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
    r"(?:[eE][-+]?\d+|\u00d710[\u207b\u207a]?[\u2070\u00b9\u00b2\u00b3\u2074-\u2079]+)?"
)
# A power of ten written out by the book's tables (htlib.plotting.plain_number: "1.2×10⁻¹⁵") reads as "1.2e-15".
_SUPER = str.maketrans("\u207b\u207a\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079", "-+0123456789")


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
    if "\u00d710" in plain:
        base, _, power = plain.partition("\u00d710")
        plain = f"{base}e{power.translate(_SUPER)}"
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
    if tol.below and not both_integers and max(abs(a), abs(b)) <= tol.below:
        return True  # a residual below its bound on both sides: the bound holds in both, digits aside
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
    a, b = tokenize(tol.mask(ref)), tokenize(tol.mask(new))
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


def _layout_free(ref: str, new: str, where: str, tol: Tolerance | None = None) -> Result:
    """The same set of words: the text form of a table whose cells are compared in its HTML form.

    pandas wraps a wide frame into blocks that repeat the row labels and end lines with a backslash,
    and the width of a printed number decides where a block ends; so neither the order nor the count of
    tokens is a property of the frame.
    """
    result = Result()
    if tol is not None:
        ref, new = tol.mask(ref), tol.mask(new)
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


def _record_name(out: dict) -> str:
    return str(((out.get("metadata") or {}).get("scrapbook") or {}).get("name", ""))


def _drop_verdicts(value: Any, keys: frozenset) -> Any:
    """Parsed claim records without the verdicts of the records ``keys`` (their numbers stay)."""
    if isinstance(value, list):
        return [_drop_verdicts(v, keys) for v in value]
    if not isinstance(value, dict):
        return value
    if value.get("key") in keys:
        value = {k: v for k, v in value.items() if k not in ("verdict", "cause")}
        value["readings"] = [{k: v for k, v in r.items() if k not in ("verdict", "first_verdict")}
                             for r in value.get("readings", [])]
    return {k: _drop_verdicts(v, keys) for k, v in value.items()}


def _flatten(outputs: Iterable[dict], skip: Sequence[str], sanitize: Callable[[Any], Any],
             drop: frozenset = frozenset()) -> dict[str, list]:
    """nbval's grouping: every compared key of every output, values in order (streams by stream name); the glued
    records named in ``drop`` are left out."""
    flat: dict[str, list] = defaultdict(list)
    for out in outputs:
        if drop and _record_name(out) in drop:
            continue
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


_NOWRAP = re.compile(r'<span style="white-space:nowrap">([^<]*)</span>')
_TABLE = re.compile(r'<table class="dataframe htlib-data">(.*?)</table>', re.S)
_ROW = re.compile(r"<tr[^>]*>(.*?)</tr>", re.S)
_CELL = re.compile(r"<(t[hd])([^>]*)>(.*?)</t[hd]>", re.S)


def canonical_frame_html(html: str) -> str:
    """The HTML of a book table (``htlib.plotting.table_html``) without what depends on the printed digits alone.

    ``table_html`` wraps a token with a hyphen or an exponent in a no-wrap span (``6.66e-16`` has one, ``0`` has
    none), and splits a frame estimated wider than the text column into consecutive tables, the split placed by
    the widths of the values' full representations (``0.380976`` shown, ``0.38097612345`` measured): another
    processor's last bits move a column from one table to the next.  Here the spans are unwrapped and the split
    tables joined back into one (the later tables' row labels dropped), so that the frame's shape, column names,
    row labels and cells are compared, and not where the browser was told it may break a line.  HTML that is not
    such a split frame (tables of other row counts or row labels) is returned with its spans unwrapped only.

    Examples
    --------
    >>> one = '<table class="dataframe htlib-data"><tbody><tr><th>a</th><td>1</td><td>2</td></tr></tbody></table>'
    >>> two = ('<table class="dataframe htlib-data"><tbody><tr><th>a</th><td>1</td></tr></tbody></table>'
    ...        '<table class="dataframe htlib-data"><tbody><tr><th>a</th><td>2</td></tr></tbody></table>')
    >>> canonical_frame_html(one) == canonical_frame_html(two)
    True
    """
    html = _NOWRAP.sub(r"\1", html)
    tables = _TABLE.findall(html)
    if not tables or _TABLE.sub("", html).strip():
        return html

    def rows(part: str) -> list[list[tuple[str, str, str]]]:
        return [_CELL.findall(r) for r in _ROW.findall(part)]

    parsed = []
    for t in tables:
        head, _, body = t.partition("<tbody>")
        parsed.append((rows(head) if body else [], rows(body if body else head)))
    head0, body0 = parsed[0]
    if not body0:
        return html
    levels = sum(1 for tag, _, _ in body0[0] if tag == "th")
    labels = [[c for c in r if c[0] == "th"] for r in body0]
    for head, body in parsed[1:]:
        if len(head) != len(head0) or len(body) != len(body0) or [[c for c in r if c[0] == "th"] for r in body] != labels:
            return html
    merged_head = [list(r) for r in head0]
    merged_body = [list(r) for r in body0]
    for head, body in parsed[1:]:
        for i, r in enumerate(head):
            merged_head[i] += r[levels:]
        for i, r in enumerate(body):
            merged_body[i] += [c for c in r if c[0] == "td"]

    def show(rs: list) -> str:
        return "".join("<tr>" + "".join(f"<{t}{a}>{c}</{t}>" for t, a, c in r) + "</tr>\n" for r in rs)

    return (f'<table class="dataframe htlib-data"><thead>\n{show(merged_head)}</thead><tbody>\n'
            f"{show(merged_body)}</tbody></table>")


def compare_value(key: str, ref: Any, new: Any, tol: Tolerance, where: str, *, canonical: bool = True) -> Result:
    """Compare one output value of MIME type (or stream name) ``key`` (a book table's HTML through
    :func:`canonical_frame_html` unless ``canonical`` is false, as before 2026-12-06: the controls' "before")."""
    if key == _FRAME_TEXT:
        return _layout_free(ref, new, where, tol)
    if canonical and key.endswith("text/html") and isinstance(ref, str) and isinstance(new, str) and _TABLE.search(ref):
        ref, new = canonical_frame_html(ref), canonical_frame_html(new)
    if key.endswith("json") or key.endswith("+json"):
        try:
            a = json.loads(ref) if isinstance(ref, str) else ref
            b = json.loads(new) if isinstance(new, str) else new
        except json.JSONDecodeError:
            return compare_text(str(ref), str(new), tol, where)
        if tol.verdicts_redrawn:
            keys = frozenset(k for k, _ in tol.verdicts_redrawn)
            a, b = _drop_verdicts(a, keys), _drop_verdicts(b, keys)
        return compare_json(a, b, tol, where)
    if isinstance(ref, str) and isinstance(new, str):
        return compare_text(ref, new, tol, where)
    return compare_json(ref, new, tol, where)


def compare_outputs(ref: Iterable[dict], new: Iterable[dict], tol: Tolerance, *,
                    sanitize: Callable[[Any], Any] = lambda s: s, skip: Sequence[str] = _NBVAL_SKIP,
                    canonical: bool = True) -> Result:
    """Compare a cell's committed outputs ``ref`` with fresh ones ``new`` (nbformat output dicts).

    The same outputs are compared as in nbval (the same keys, as many values per key, streams
    coalesced by the caller), each value by :func:`compare_value`.
    """
    keys = frozenset(k for k, _ in tol.verdicts_redrawn)
    drop = frozenset(f"claim_{k}_{field}" for k in keys for field in ("verdict", "cause"))
    a, b = _flatten(ref, skip, sanitize, drop), _flatten(new, skip, sanitize, drop)
    result = Result()
    if set(a) != set(b):
        result.fail("outputs", f"kinds {sorted(set(a) - set(b))} lost, {sorted(set(b) - set(a))} gained")
        return result
    for key in a:
        if len(a[key]) != len(b[key]):
            result.fail(key, f"{len(a[key])} outputs -> {len(b[key])}")
            continue
        for i, (x, y) in enumerate(zip(a[key], b[key])):
            result.merge(compare_value(key, x, y, tol, f"{key}[{i}]" if len(a[key]) > 1 else key, canonical=canonical))
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

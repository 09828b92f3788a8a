"""The one plotting style of the book, its colours, the plot helpers and the table helper every chapter shares.

Colours come from seaborn's colour-blind-safe palette (:func:`color`; :data:`SEQUENTIAL_CMAP` for heatmaps),
never from a cell; every helper takes an ``ax`` and returns it.  Chapters call :func:`use_book_style` once.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

__all__ = ["PALETTE", "use_book_style", "color", "table", "table_html", "Table", "esd_hist", "log_bins", "mean_std_plot",
           "overlap_heatmap", "power_law_line", "train_test_curves", "alpha_band_scatter", "phase_strip", "mp_overlay",
           "phase_evidence"]

PALETTE: list[tuple[float, float, float]] = sns.color_palette("colorblind", 10)
"""Okabe-Ito-like colour-blind-safe palette (seaborn 'colorblind')."""

SEQUENTIAL_CMAP = "viridis"
"""Perceptually uniform, colour-blind-safe map for heatmaps and colour-by-parameter plots."""


def use_book_style() -> None:
    """Set the book-wide matplotlib style: readable fonts, light grid, colour-blind palette."""
    sns.set_theme(context="notebook", style="ticks", palette=PALETTE)
    mpl.rcParams.update({
        "figure.figsize": (7.0, 4.2), "figure.dpi": 100, "savefig.dpi": 150, "axes.grid": True, "grid.alpha": 0.3,
        "axes.titlesize": 12, "axes.labelsize": 11, "legend.fontsize": 9, "legend.frameon": False,
        "image.cmap": SEQUENTIAL_CMAP, "figure.constrained_layout.use": True,
    })
    try:  # in a notebook, every DataFrame a cell shows is laid out to fit the text column (table_html)
        ip = get_ipython()  # type: ignore[name-defined]  # noqa: F821
    except NameError:
        return
    ip.display_formatter.formatters["text/html"].for_type(pd.DataFrame, _html_or_none)


def _html_or_none(frame: pd.DataFrame) -> str | None:
    """The notebook's HTML of a DataFrame: :func:`table_html`, unless the frame shows itself as markdown (the claim
    records, :func:`htlib.scoreboard.claims_frame`), which then wins."""
    return None if callable(getattr(frame, "_repr_markdown_", None)) else table_html(frame)


TEXT_COLUMN_PX = 660  # what a table may take of the book's text column (688 px at 1280 px)
CHAR_PX = 7.6  # one character of a table cell at the book's table font (htlib.css: .htlib-data)
CELL_PAD_PX = 14  # a cell's padding and border
BOLD_FACTOR = 1.15  # a header or row label (bold) against a cell
NOWRAP_CHARS = 30  # a cell of at most this many characters never wraps (a number is never broken)
MIN_COLUMN_PX = 120  # the narrowest column a reader's table has (htlib.css sets it): a split keeps each part wide


def _text_px(texts, *, wrap: bool, bold: bool = False) -> float:
    """Estimated width of a column of ``texts``: a header wraps between words, a long cell (> NOWRAP_CHARS) too;
    ``bold`` text (headers, row labels) is wider."""
    widest = 0
    for t in texts:
        t = str(t)
        n = max((len(w) for w in t.split()), default=0) if wrap or len(t) > NOWRAP_CHARS else len(t)
        widest = max(widest, n)
    return widest * CHAR_PX * (BOLD_FACTOR if bold else 1.0) + CELL_PAD_PX


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
_E_NUMBER = re.compile(r"(?<![\w.])(-?\d+(?:\.(\d+))?[eE][-+]?\d+)(?![\w.])|(?<![\w.])(-?)inf(?![\w.])")
"""An e-notation number, or ``inf``, in a cell's text (:func:`_plain_text`)."""


def _unsigned_zero(text: str) -> str:
    """A printed number that rounds to zero, without its sign: "-0" would read as a value below zero, and the sign is
    the round-off of the machine that computed it (another processor prints "0")."""
    return text[1:] if text.startswith("-") and not any(ch in "123456789" for ch in text.split("e")[0]) else text


def plain_number(x: float | None, digits: int = 4, *, fmt: str | None = None, undefined: str | None = None) -> str:
    """``x`` as a reader writes it: ``digits`` significant digits in positional notation, a power of ten written
    out (``1.2×10⁻¹⁵``) below 1e-4 or from 1e7 on, ``∞`` for an unbounded value, ``–`` for an undefined one.

    ``fmt`` (a format spec such as ``".3g"`` or ``"+.1%"``) writes a finite value with :func:`format` instead, so
    prose keeps its own precision; ``undefined`` is the reason, in words, that a NaN or None has no value, printed
    after the dash: the one way the book writes a number that a run may leave undefined.

    Examples
    --------
    >>> plain_number(0.012345), plain_number(10180.0), plain_number(1.2e-15), plain_number(float("inf"))
    ('0.01235', '10180', '1.2×10⁻¹⁵', '∞')
    >>> plain_number(2.345, fmt=".3g"), plain_number(float("nan"), fmt=".3g", undefined="no outlier"), plain_number(None)
    ('2.35', '– (no outlier)', '–')
    >>> plain_number(-0.0), plain_number(-0.00001, fmt=".2f")
    ('0', '0.00')
    """
    if x is None or np.isnan(x := float(x)):
        return "–" if not undefined else f"– ({undefined})"
    if np.isinf(x):
        return "∞" if x > 0 else "−∞"
    if fmt is not None:
        return _unsigned_zero(format(x, fmt))
    x += 0.0  # -0.0 becomes 0.0
    if x != 0 and not 1e-4 <= abs(x) < 1e7:
        mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}×10{str(int(exponent)).translate(_SUPERSCRIPT)}"
    return np.format_float_positional(x, precision=digits, unique=False, fractional=False, trim="-")


def _plain_text(text: str) -> str:
    """A cell's text with its e-notation numbers and its ``inf`` written as :func:`plain_number` writes them."""

    def sub(m: re.Match) -> str:
        if m.group(1) is None:
            return "−∞" if m.group(3) else "∞"
        mantissa = m.group(1).lower().split("e")[0].lstrip("-").replace(".", "").lstrip("0")
        return plain_number(float(m.group(1)), max(1, len(mantissa)))
    return _E_NUMBER.sub(sub, text)


_GREEK_LETTERS = {"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "eta": "η", "theta": "θ",
                  "kappa": "κ", "lambda": "λ", "mu": "μ", "rho": "ρ", "sigma": "σ", "tau": "τ", "phi": "φ",
                  "omega": "ω"}


def reader_header(text):
    """A column or index label as a reader reads it: ASCII Greek names as letters, ``sqrt_d``/``sqrt(hd)`` as roots.

    Examples
    --------
    >>> reader_header("lambda_max / lambda_+"), reader_header("train/sqrt_d"), reader_header("beta (meta)")
    ('λ_max / λ_+', 'train/√d', 'β (meta)')
    """
    import re
    if not isinstance(text, str):
        return text
    text = re.sub(r"sqrt_(\w+)|sqrt\(([^()]+)\)", lambda m: f"√{m.group(1) or '(' + m.group(2) + ')'}", text)
    return re.sub(r"(?<![A-Za-z])(" + "|".join(_GREEK_LETTERS) + r")(?![A-Za-z])", lambda m: _GREEK_LETTERS[m.group(1)],
                  text)


def _reader_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as a reader's table: a default index (0, 1, ...) replaced by the first column, so that every
    part of a split table repeats real row labels; numbers in :func:`plain_number`'s notation."""
    out = frame.copy()
    if isinstance(out.index, pd.RangeIndex) and out.index.name is None and out.shape[1] > 1:
        # the first column that tells the rows apart (a constant one, such as a setting shared by every row,
        # stays a column)
        varying = [c for c in out.columns[:2] if out[c].astype(str).nunique() > 1 or len(out) == 1]
        out = out.set_index(varying[0] if varying else out.columns[0])
    for j in range(out.shape[1]):
        col = out.iloc[:, j]
        if pd.api.types.is_float_dtype(col):
            out.isetitem(j, col.map(plain_number))
        elif col.dtype == object or pd.api.types.is_string_dtype(col):
            out.isetitem(j, col.map(lambda v: plain_number(v) if isinstance(v, float) else
                                    _plain_text(v) if isinstance(v, str) else v))
    if isinstance(out.columns, pd.MultiIndex):
        out.columns = pd.MultiIndex.from_tuples([tuple(map(reader_header, c)) for c in out.columns],
                                                names=[reader_header(n) for n in out.columns.names])
    else:
        out.columns = [reader_header(c) for c in out.columns]
    out.index.names = [reader_header(n) for n in out.index.names]
    if out.index.dtype == object or pd.api.types.is_string_dtype(out.index):
        out.index = out.index.map(lambda v: _plain_text(v) if isinstance(v, str) else v)
    return out


def table_html(frame: pd.DataFrame, width_px: float = TEXT_COLUMN_PX) -> str:
    """HTML of ``frame`` that fits a text column of ``width_px``: short cells never wrap (no number broken over two
    lines), no column is narrower than :data:`MIN_COLUMN_PX`, and a frame estimated wider than the column is split
    into consecutive tables of its columns, each repeating the row labels.  Every row, column and character is
    shown.

    Examples
    --------
    >>> wide = pd.DataFrame([[1.5] * 30], columns=[f"column {k}" for k in range(30)], index=["run 1"])
    >>> html = table_html(wide)
    >>> html.count("<table"), "white-space:nowrap" in html  # four 120-px columns beside the row labels a part
    (8, True)
    >>> table_html(wide.iloc[:, :3]).count("<table")
    1
    """
    import re

    frame = _reader_frame(frame)
    index = frame.index.to_frame().astype(str)
    label_px = sum(max(MIN_COLUMN_PX, _text_px([*index[c], *(n for n in [c] if n is not None)], wrap=False,
                                               bold=True)) for c in index.columns)
    groups: list[list[int]] = [[]]
    used = label_px
    for j in range(frame.shape[1]):
        head = frame.columns[j] if not isinstance(frame.columns, pd.MultiIndex) else " ".join(map(str, frame.columns[j]))
        px = max(MIN_COLUMN_PX, _text_px([head], wrap=True, bold=True),
                 _text_px(frame.iloc[:, j].astype(str), wrap=False))
        if groups[-1] and used + px > width_px:
            groups.append([])
            used = label_px
        groups[-1].append(j)
        used += px
    with pd.option_context("display.max_colwidth", None, "display.max_columns", None, "display.max_rows", None):
        parts = [frame.iloc[:, g].to_html(classes=["htlib-data"], border=0, na_rep="–") for g in groups]

    def cell(m: re.Match) -> str:
        text = re.sub(r"<[^>]+>", "", m.group(2))
        style = ' style="white-space:nowrap"' if len(text.strip()) <= NOWRAP_CHARS else ""
        return f"<td{m.group(1)}{style}>{m.group(2)}</td>"

    def unbroken(m: re.Match) -> str:  # a browser breaks lines after '-' and '/': keep such a token whole
        return m.group(1) + re.sub(r"(\S*[-/^]\S*)", r'<span style="white-space:nowrap">\1</span>', m.group(2)) + "<"

    html = (re.sub(r"<td([^>]*)>(.*?)</td>", cell, p, flags=re.S) for p in parts)
    return "\n".join(re.sub(r"(>)([^<>]*[-/^][^<>]*)<", unbroken, h) for h in html)


def color(i: int) -> tuple[float, float, float]:
    """The ``i``-th palette colour (cycled)."""
    return PALETTE[i % len(PALETTE)]


class Table(pd.DataFrame):
    """A DataFrame that shows every row, column and character: pandas' display limits (50 characters
    a cell, 20 columns) would cut a chapter's table, and the reader would see ``...``."""

    @property
    def _constructor(self):
        return Table

    def _repr_html_(self) -> str | None:
        return table_html(self)

    def __repr__(self) -> str:
        with pd.option_context("display.max_colwidth", None, "display.max_columns", None, "display.max_rows", None,
                               "display.width", 1000):
            return super().__repr__()


def number(value: float, spec: str = ".4g") -> str:
    """``value`` formatted with ``spec``; an undefined value (NaN) prints as a dash, never ``nan``, and an
    infinite one as ``∞``.

    Examples
    --------
    >>> number(0.123456, ".3g"), number(float("nan")), number(float("-inf")), number(-1e-9, ".2f")
    ('0.123', '–', '−∞', '0.00')
    """
    import numbers

    if isinstance(value, numbers.Integral):  # keeps integer specs ("03d") working
        return format(int(value), spec)
    value = float(value)
    if np.isnan(value):
        return "–"
    if np.isinf(value):
        return "∞" if value > 0 else "−∞"
    return _unsigned_zero(format(value, spec))


def table(rows: Sequence[Sequence | dict], columns: Sequence[str] | None = None, *,
          formats: dict[str, str] | None = None, index: str | None = None, default: str = ".4g"):
    """The book's one table helper: a :class:`pandas.DataFrame` of fixed-precision text.

    Parameters
    ----------
    rows : sequence of sequences or of dicts
        One entry per row; sequences are matched to ``columns`` by position, dicts by key.
    columns : sequence of str, optional
        Column names, in order (required for sequence rows; default: the first dict's keys).
    formats : dict, optional
        Format spec per column (``".4f"``, ``".3g"``, ``"d"``, ``".0%"``); numbers of other columns
        get ``default``, integers ``"d"``, booleans ``"yes"``/``"no"``; strings are kept as they are; an
        undefined number prints as a dash (:func:`number`).
    index : str, optional
        Column to use as the row index (e.g. the case name).
    default : str
        Format spec of the numbers of a column without one.

    Returns
    -------
    Table
        A :class:`pandas.DataFrame` shown whole (no ``...``); every cell a string, so the printed digits are
        exactly ``formats``', whatever pandas' display options are, and nbval compares them as text.
    """
    import numbers

    rows = list(rows)
    if columns is None:
        if not rows or not isinstance(rows[0], dict):
            raise ValueError("columns must be given unless rows are dicts")
        columns = list(rows[0])
    columns = list(columns)
    formats = dict(formats or {})
    unknown = set(formats) - set(columns)
    if unknown:
        raise ValueError(f"formats names unknown column(s) {sorted(unknown)}; columns are {columns}")
    if index is not None and index not in columns:
        raise ValueError(f"index must be one of the columns {columns}, got {index!r}")

    def cell(col: str, value) -> str:
        if isinstance(value, str):
            return value
        if isinstance(value, (bool, np.bool_)):
            return "yes" if value else "no"
        if isinstance(value, numbers.Integral) and col not in formats:
            return format(int(value), "d")
        if isinstance(value, numbers.Real):
            return number(value, formats.get(col, default))
        return str(value)

    out = []
    for r in rows:
        values = [r[c] for c in columns] if isinstance(r, dict) else list(r)
        if len(values) != len(columns):
            raise ValueError(f"each row must have {len(columns)} values ({columns}), got {len(values)}")
        out.append([cell(c, v) for c, v in zip(columns, values)])
    frame = Table(out, columns=columns)
    return frame.set_index(index) if index is not None else frame


def log_bins(values: np.ndarray, bins: int = 80) -> np.ndarray:
    """Logarithmically spaced bin edges covering the positive ``values``."""
    v = np.asarray(values, dtype=np.float64)
    v = v[v > 0]
    if v.size == 0:
        raise ValueError("log_bins needs at least one positive value")
    lo, hi = v.min(), v.max()
    if hi <= lo:
        hi = lo * 1.01
    return np.geomspace(lo, hi * (1 + 1e-9), bins + 1)


def esd_hist(ax: plt.Axes, eigs: np.ndarray, *, bins: int = 80, log: bool = False, label: str | None = None,
             color_index: int = 0, alpha: float = 0.55, xlabel: str = r"eigenvalue $\lambda$") -> plt.Axes:
    """Density histogram of an ESD; ``log=True``: log-spaced bins on log-log axes (power-law tails straight)."""
    eigs = np.asarray(eigs, dtype=np.float64)
    if log:
        edges = log_bins(eigs, bins)
        ax.hist(eigs[eigs > 0], bins=edges, density=True, alpha=alpha, color=color(color_index), label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
    else:
        ax.hist(eigs, bins=bins, density=True, alpha=alpha, color=color(color_index), label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("density")
    return ax


def power_law_line(ax: plt.Axes, eigs: np.ndarray, alpha: float, xmin: float, *, color_index: int = 3,
                   label: str | None = None) -> plt.Axes:
    """Draw the fitted density ``p(x) ~ x^(-alpha)`` over the tail ``x >= xmin``, its mass the tail's share of
    the ESD (as it sits on a density histogram)."""
    eigs = np.asarray(eigs, dtype=np.float64)
    tail = eigs[eigs >= xmin]
    if tail.size == 0:
        return ax
    share = tail.size / eigs.size
    x = np.geomspace(xmin, tail.max(), 100)
    pdf = share * (alpha - 1) / xmin * (x / xmin) ** (-alpha)
    ax.plot(x, pdf, color=color(color_index), lw=2, ls="--", label=label or rf"PL fit, $\alpha$={alpha:.2f}")
    return ax


def mean_std_plot(ax: plt.Axes, x: Sequence[float], runs: np.ndarray, *, label: str | None = None,
                  color_index: int = 0, logx: bool = True, ls: str = "-", marker: str = "o") -> plt.Axes:
    """Mean over axis 0 of ``runs`` (seeds x points) with a +-1 std band."""
    runs = np.atleast_2d(np.asarray(runs, dtype=np.float64))
    mean = np.nanmean(runs, axis=0)
    std = np.nanstd(runs, axis=0)
    c = color(color_index)
    ax.plot(x, mean, ls=ls, marker=marker, ms=4, color=c, label=label)
    ax.fill_between(x, mean - std, mean + std, color=c, alpha=0.2, lw=0)
    if logx:
        ax.set_xscale("log")
    return ax


def overlap_heatmap(ax: plt.Axes, overlap: np.ndarray, *, k: int = 100, title: str | None = None,
                    xlabel: str = "index of update's singular vector",
                    ylabel: str = "index of weight's singular vector", vmax: float | None = None) -> plt.Axes:
    """Heatmap of the leading ``k x k`` block of an overlap matrix (values in [0, 1])."""
    block = np.asarray(overlap)[:k, :k]
    im = ax.imshow(block, cmap=SEQUENTIAL_CMAP, vmin=0.0, vmax=vmax if vmax is not None else max(block.max(), 1e-12),
                   interpolation="nearest", aspect="equal")
    ax.figure.colorbar(im, ax=ax, shrink=0.8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(False)
    if title:
        ax.set_title(title)
    return ax


def train_test_curves(ax: plt.Axes, curves: "dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]", *,
                      title: str | None = None, logy: bool = False) -> plt.Axes:
    """Train (bold, solid) and test (dashed) loss per step, one colour per curve; ``curves`` maps a legend
    label to ``(steps, train_loss, test_loss)``."""
    for i, (label, (steps, train, test)) in enumerate(curves.items()):
        c = color(i)
        ax.plot(steps, train, color=c, lw=2.4, label=label)
        ax.plot(steps, test, color=c, lw=1.4, ls="--")
    ax.set_xlabel("step $t$")
    ax.set_ylabel("MSE (train solid, test dashed)")
    if logy:
        ax.set_yscale("log")
    if title:
        ax.set_title(title)
    ax.legend()
    return ax


def alpha_band_scatter(ax: plt.Axes, alpha: np.ndarray, loss: np.ndarray, eta: np.ndarray, *,
                       band: tuple[float, float] = (2.0, 4.0), marker: str = "o", label: str | None = None,
                       colorbar: bool = True) -> plt.Axes:
    """Loss against a power-law exponent, coloured by log10(eta), with the "correct range" band shaded."""
    alpha = np.ravel(np.asarray(alpha, dtype=np.float64))
    loss = np.ravel(np.asarray(loss, dtype=np.float64))
    eta = np.ravel(np.asarray(eta, dtype=np.float64))
    ax.axvspan(band[0], band[1], color="0.85", zorder=0, lw=0)
    sc = ax.scatter(alpha, loss, c=np.log10(eta), cmap=SEQUENTIAL_CMAP, marker=marker, s=28,
                    edgecolors="k", linewidths=0.3, label=label, zorder=2)
    if colorbar:
        ax.figure.colorbar(sc, ax=ax, label=r"$\log_{10}\eta$")
    ax.set_xscale("log")
    return ax


def phase_strip(ax: plt.Axes, steps: Sequence[int], phases: Sequence[Sequence[str]], labels: Sequence[str], *,
                order: Sequence[str] = ("random-like", "bleeding-out", "bulk+spikes", "bulk-decay", "heavy-tailed",
                                        "rank-collapse"),
                marks: "Sequence[Sequence[bool]] | None" = None) -> plt.Axes:
    """One row per run, one cell per recorded step, coloured by its 5+1 phase: ``phases[r][j]`` is the phase
    of run ``r`` at ``steps[j]``; ``marks[r][j]`` (optional) puts a dot where a further condition holds."""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    codes = np.array([[list(order).index(p) for p in row] for row in phases], dtype=float)
    cmap = ListedColormap([color(i) for i in range(len(order))])
    ax.imshow(codes, cmap=cmap, vmin=-0.5, vmax=len(order) - 0.5, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(steps)), [str(s) for s in steps])
    ax.set_yticks(range(len(labels)), list(labels))
    ax.set_xlabel("step $t$")
    ax.grid(False)
    if marks is not None:
        rr, cc = np.nonzero(np.asarray(marks, dtype=bool))
        ax.scatter(cc, rr, s=18, c="k", marker="o", label="meets the heavy-tail criterion")
    handles = [Patch(color=color(i), label=p) for i, p in enumerate(order)]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="phase")
    return ax


def mp_overlay(ax: plt.Axes, gamma: float, sigma2: float = 1.0, *, color_index: int = 1, label: str | None = None,
               n_points: int = 400, edge: bool = True) -> plt.Axes:
    """Overlay the Marchenko-Pastur density of ``WᵀW/p`` (ratio ``gamma``, scale ``sigma2``) on an ESD histogram;
    ``edge=True`` marks the bulk edge ``lambda_plus`` (dotted)."""
    from htlib.spectra import mp_density, mp_edges

    lo, hi = mp_edges(gamma, sigma2)
    start = max(lo, hi * 1e-6)
    x = np.geomspace(start, hi, n_points) if ax.get_xscale() == "log" else np.linspace(lo, hi, n_points)
    ax.plot(x, mp_density(x, gamma, sigma2), color=color(color_index), lw=2,
            label=label or rf"MP, $\sigma^2$={sigma2:.3g}")
    if edge:
        ax.axvline(hi, color=color(color_index), ls=":", lw=1.2)
    return ax


def phase_evidence(ax: plt.Axes, eigs: np.ndarray, report, *, scale: float = 1.0, bins: int = 80,
                   log: bool | None = None, title: str | None = None, legend: bool = True) -> plt.Axes:
    """Draw the evidence of a :class:`htlib.spectra.SpectrumReport` on its ESD.

    The non-zero part of ``eigs`` (the spectrum the report was computed on, divided by ``scale``) as a
    density histogram, the fitted MP density with its edge ``lambda_plus`` (dotted), the outlier
    threshold ``lambda_plus + 4 s_TW`` (dashed), the outliers as ticks on the axis (attached tail and
    detached spikes in two colours) and, for a heavy tail, the power-law fit.  ``log`` defaults to a
    log-log view when the top eigenvalue exceeds ``3 lambda_plus``.  ``legend=False`` leaves the key to a
    figure-level legend (:func:`figure_legend`), so that it covers no panel's data.
    """
    from htlib.spectra import TW_MARGIN

    e = np.sort(np.asarray(eigs, dtype=np.float64))
    nz = e[report.n_zero:]
    lp, tw = report.lambda_plus / scale, report.tw_scale / scale
    if log is None:
        log = bool(report.lambda_max > 3.0 * report.lambda_plus)
    esd_hist(ax, nz, bins=bins, log=log, label="ESD, non-zero part")
    mp_overlay(ax, report.mp.gamma_fit, report.mp.sigma2 / scale)
    ax.axvline(lp + TW_MARGIN * tw, color=color(2), ls="--", lw=1.2, label=r"$\lambda_+ + 4 s_{TW}$")
    out = report.outliers / scale
    n_tail = report.tail_size
    for pts, ci, lab in ((out[:n_tail], 4, "tail outliers"), (out[n_tail:], 3, "detached outliers")):
        if pts.size:
            ax.plot(pts, np.zeros(pts.size), "|", ms=14, mew=2, color=color(ci), label=lab,
                    transform=ax.get_xaxis_transform())
    if report.phase == "heavy-tailed":
        power_law_line(ax, nz, report.alpha, report.xmin / scale)
    ax.set_title(title or report.phase, fontsize=11)
    if legend:
        ax.legend(loc="upper right", fontsize=8)
    return ax


def figure_legend(fig: plt.Figure, axes, *, ncol: int = 3, rename: dict[str, str] | None = None) -> None:
    """One legend below the panels of ``fig``: every distinct label of ``axes`` once, in order of appearance.

    ``rename`` maps a label's prefix to the text shown (panels whose labels carry a fitted value, such as
    ``MP, sigma^2=0.98``, share one entry).
    """
    seen: dict[str, Any] = {}
    for ax in np.ravel(axes):
        for handle, label in zip(*ax.get_legend_handles_labels()):
            for prefix, text in (rename or {}).items():
                if label.startswith(prefix):
                    label = text
            seen.setdefault(label, handle)
    fig.legend(list(seen.values()), list(seen), loc="outside lower center", ncol=ncol, fontsize=9)


FIGURE_DATA_DIR = "_figure-data"
"""Where :func:`htlib.records.glue_figure` writes the numbers behind each figure, relative to the executing
notebook's folder (the environment variable ``HTLIB_FIGURE_DATA`` names another folder).  A caption links the
file with ``{download}`CSV <_figure-data/NAME.csv>```; nothing there is committed."""


def _panel_name(ax: plt.Axes, k: int) -> str:
    title = ax.get_title() or ax.get_title(loc="left") or ax.get_ylabel()
    return f"{k + 1}" + (f": {title}" if title else "")


def figure_data(fig: plt.Figure) -> pd.DataFrame:
    """The numbers drawn in ``fig``, one row per point, in data coordinates.

    Every axes is a ``panel`` (its number and title); in each, lines (``Line2D``: every vertex), scatter and
    marker collections (their offsets), bars and histogram bins (``Rectangle`` patches of a ``BarContainer``
    or of ``hist``: ``x`` the left edge, ``width``, ``y`` the height, ``y0`` the bottom) and images
    (``AxesImage``: ``row``, ``col``, ``value`` of the array, ``x``/``y`` the pixel centre in data
    coordinates when the image has an extent) become rows of ``kind`` ``line``, ``points``, ``bar`` or
    ``image``, with the artist's legend ``label`` (empty when it has none).  Lines drawn in axes
    coordinates (``axvline``, ``axhline``) keep their data coordinate and ``nan`` for the other.  Text,
    ticks and spans (``fill_between``) are left out: a reader can regenerate them from the rows.

    Examples
    --------
    >>> fig, ax = plt.subplots()
    >>> _ = ax.plot([1, 2, 3], [4, 5, 6], label="a line")
    >>> _ = ax.bar([0, 1], [2.0, 3.0], width=0.5)
    >>> df = figure_data(fig)
    >>> df.groupby("kind").size().to_dict()
    {'bar': 2, 'line': 3}
    >>> df[df.kind == "line"][["label", "x", "y"]].values.tolist()
    [['a line', 1.0, 4.0], ['a line', 2.0, 5.0], ['a line', 3.0, 6.0]]
    >>> plt.close(fig)
    """
    from matplotlib.collections import PathCollection
    from matplotlib.image import AxesImage
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    rows: list[dict] = []

    def label_of(artist) -> str:
        lab = artist.get_label() or ""
        return "" if lab.startswith("_") else lab

    axes = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    for k, ax in enumerate(axes):
        panel = _panel_name(ax, k)
        for line in ax.get_lines():
            if not isinstance(line, Line2D) or not line.get_visible():
                continue
            x, y = (np.asarray(v, dtype=float).ravel() for v in line.get_data(orig=False))
            if line.get_transform() == ax.get_xaxis_transform():
                y = np.full_like(x, np.nan)
            elif line.get_transform() == ax.get_yaxis_transform():
                x = np.full_like(y, np.nan)
            rows += [dict(panel=panel, kind="line", label=label_of(line), x=a, y=b) for a, b in zip(x, y)]
        for coll in ax.collections:
            if isinstance(coll, PathCollection):
                pts = np.asarray(coll.get_offsets(), dtype=float).reshape(-1, 2)
                vals = coll.get_array()
                for j, (a, b) in enumerate(pts):
                    row = dict(panel=panel, kind="points", label=label_of(coll), x=a, y=b)
                    if vals is not None and np.size(vals) == len(pts):
                        row["value"] = float(np.asarray(vals).ravel()[j])
                    rows.append(row)
        containers = {id(p): c for c in ax.containers for p in getattr(c, "patches", [])}
        for patch in ax.patches:
            if isinstance(patch, Rectangle) and patch.get_visible() and patch.get_data_transform() == ax.transData:
                c = containers.get(id(patch))
                rows.append(dict(panel=panel, kind="bar", label=label_of(c) if c is not None else label_of(patch),
                                 x=float(patch.get_x()), width=float(patch.get_width()), y=float(patch.get_height()),
                                 y0=float(patch.get_y())))
        for im in ax.images:
            if not isinstance(im, AxesImage):
                continue
            arr = np.ma.filled(np.asarray(im.get_array(), dtype=float), np.nan)
            if arr.ndim != 2:
                continue
            left, right, bottom, top = im.get_extent()
            first, last = (top, bottom) if im.origin == "upper" else (bottom, top)  # where row 0 is drawn
            nr, nc = arr.shape
            r, c = np.meshgrid(np.arange(nr), np.arange(nc), indexing="ij")
            x = left + (c + 0.5) * (right - left) / nc
            y = first + (r + 0.5) * (last - first) / nr
            rows += [dict(panel=panel, kind="image", label=label_of(im), x=a, y=b, row=i, col=j, value=v)
                     for a, b, i, j, v in zip(x.ravel(), y.ravel(), r.ravel(), c.ravel(), arr.ravel())]
    cols = ["panel", "kind", "label", "x", "y", "width", "y0", "row", "col", "value"]
    df = pd.DataFrame(rows)
    return df.reindex(columns=[c for c in cols if c in df.columns] if rows else cols[:5])


def figure_data_path(name: str) -> Path:
    """The CSV that :func:`htlib.records.glue_figure` writes for the figure ``name`` (:data:`FIGURE_DATA_DIR`)."""
    return Path(os.environ.get("HTLIB_FIGURE_DATA") or FIGURE_DATA_DIR) / f"{name}.csv"


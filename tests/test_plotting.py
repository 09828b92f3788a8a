"""Tests of htlib.plotting: the book style, the palette and the one table helper."""

from __future__ import annotations

import colorsys

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from htlib import plotting as P  # noqa: E402

# Okabe & Ito (2008), the colour-universal-design palette: seaborn's "colorblind" is built from it.
OKABE_ITO = {"#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#f0e442"}


def _hex(rgb) -> str:
    return "#" + "".join(f"{round(c * 255):02x}" for c in rgb[:3])


# --- style and palette --------------------------------------------------------------------------


def test_use_book_style_sets_palette_cmap_and_layout():
    with matplotlib.rc_context():
        P.use_book_style()
        cycle = [c["color"] for c in plt.rcParams["axes.prop_cycle"]]
        assert [_hex(matplotlib.colors.to_rgb(c)) for c in cycle[:5]] == [_hex(c) for c in P.PALETTE[:5]]
        assert plt.rcParams["image.cmap"] == P.SEQUENTIAL_CMAP
        assert plt.rcParams["figure.constrained_layout.use"] is True
        assert plt.rcParams["axes.grid"] is True


def test_palette_is_deterministic_and_cycles():
    assert P.color(0) == P.PALETTE[0] and P.color(len(P.PALETTE)) == P.PALETTE[0]
    assert P.color(13) == P.PALETTE[13 % len(P.PALETTE)]
    assert len({_hex(c) for c in P.PALETTE}) == len(P.PALETTE)  # ten distinct colours


def _rgb(hexcode: str) -> np.ndarray:
    return np.array([int(hexcode[i:i + 2], 16) / 255 for i in (1, 3, 5)])


def test_palette_leads_with_okabe_ito_colours():
    """The colours a chapter uses first are (seaborn's renderings of) Okabe & Ito's colour-blind-safe set,
    each a different one of them."""
    nearest = []
    for c in P.PALETTE[:4]:
        dist = {h: float(np.linalg.norm(np.asarray(c) - _rgb(h))) for h in OKABE_ITO}
        best = min(dist, key=dist.get)
        assert dist[best] < 0.1, (_hex(c), best, dist[best])
        nearest.append(best)
    assert len(set(nearest)) == 4


def test_first_colours_are_far_apart():
    first = [np.asarray(c) for c in P.PALETTE[:4]]
    gaps = [np.linalg.norm(a - b) for i, a in enumerate(first) for b in first[i + 1:]]
    assert min(gaps) > 0.15  # orange and vermillion are the closest pair (0.2)


def test_sequential_cmap_is_perceptually_uniform_viridis():
    assert P.SEQUENTIAL_CMAP == "viridis"
    # lightness increases monotonically along viridis (what makes it readable in greyscale)
    rgb = matplotlib.colormaps[P.SEQUENTIAL_CMAP](np.linspace(0, 1, 20))[:, :3]
    luma = rgb @ np.array([0.299, 0.587, 0.114])
    assert np.all(np.diff(luma) > 0)


def test_log_bins_cover_positive_values():
    v = np.array([0.0, 1e-3, 0.5, 2.0, 10.0])
    edges = P.log_bins(v, bins=7)
    assert edges.size == 8 and edges[0] == pytest.approx(1e-3) and edges[-1] >= 10.0
    assert np.allclose(np.diff(np.log(edges)), np.log(edges[1] / edges[0]))
    with pytest.raises(ValueError, match="positive"):
        P.log_bins(np.zeros(3))


def test_mp_overlay_draws_the_mp_density():
    from htlib import spectra

    fig, ax = plt.subplots()
    P.mp_overlay(ax, 0.5, 2.0, n_points=50)
    x, y = ax.lines[0].get_data()
    assert np.allclose(y, spectra.mp_density(x, 0.5, 2.0))
    assert ax.lines[1].get_xdata()[0] == pytest.approx(spectra.mp_edges(0.5, 2.0)[1])  # the dotted edge
    plt.close(fig)


# --- the table helper ---------------------------------------------------------------------------


def test_table_formats_each_column_with_fixed_precision():
    t = P.table([("a", 1.23456, 3, np.float64(0.5), True), ("b", 10.0, np.int64(12), 1e-5, False)],
                ["name", "x", "n", "y", "ok"], formats={"x": ".2f"}, index="name")
    assert isinstance(t, pd.DataFrame) and isinstance(t, P.Table)
    assert t.index.name == "name" and list(t.columns) == ["x", "n", "y", "ok"]
    assert t.loc["a"].tolist() == ["1.23", "3", "0.5", "yes"]
    assert t.loc["b"].tolist() == ["10.00", "12", "1e-05", "no"]


def test_table_digits_do_not_depend_on_pandas_display_options():
    rows = [(np.pi, "x" * 80)]
    with pd.option_context("display.precision", 2, "display.max_colwidth", 10):
        text = repr(P.table(rows, ["pi", "long"], formats={"pi": ".6f"}))
        html = P.table(rows, ["pi", "long"], formats={"pi": ".6f"})._repr_html_()
    assert "3.141593" in text and "x" * 80 in text and "..." not in text
    assert "3.141593" in html and "x" * 80 in html


def test_table_from_dicts_and_explicit_formats_for_integers():
    t = P.table([{"k": 1, "share": 0.25}, {"k": 2, "share": 0.5}], formats={"k": "03d", "share": ".0%"})
    assert t["k"].tolist() == ["001", "002"] and t["share"].tolist() == ["25%", "50%"]


def test_table_prints_an_undefined_value_as_a_dash_and_keeps_strings():
    t = P.table([(float("nan"), "n/a", np.inf, 2.0)], ["v", "s", "w", "x"], default=".3g")
    assert t.iloc[0].tolist() == ["–", "n/a", "∞", "2"]
    assert "nan" not in P.table([(np.float32("nan"), 1)], ["a", "b"]).to_string()


def test_number_formats_finite_values_as_format_does():
    for v in (0.0, -1.5e-9, 123456.0, 7):
        assert P.number(v, ".3g") == format(float(v), ".3g")
    assert P.number(np.nan) == "–" and P.number(-np.inf) == "−∞"


def test_table_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="each row must have 2 values"):
        P.table([(1, 2, 3)], ["a", "b"])
    with pytest.raises(ValueError, match="formats names unknown column"):
        P.table([(1, 2)], ["a", "b"], formats={"c": ".2f"})
    with pytest.raises(ValueError, match="index must be one of the columns"):
        P.table([(1, 2)], ["a", "b"], index="c")
    with pytest.raises(ValueError, match="columns must be given"):
        P.table([(1, 2)])


def test_table_slices_stay_tables():
    t = P.table([(1, 2), (3, 4)], ["a", "b"])
    assert isinstance(t[["a"]], P.Table)


def test_figure_data_holds_every_drawn_number(tmp_path, monkeypatch):
    """The CSV behind a figure: histogram bins equal numpy's, line vertices and scatter offsets as drawn, an image's
    cells with their pixel centres; glue_figure writes it where the caption links it."""
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd

    from htlib import plotting
    from htlib.records import glue_figure

    rng = np.random.default_rng(1)
    x = rng.standard_normal(400)
    fig, (a, b, c) = plt.subplots(1, 3)
    a.hist(x, bins=12)
    a.plot([0.0, 1.0], [2.0, 3.0], label="fit")
    b.scatter([1.0, 2.0, 3.0], [1.0, 4.0, 9.0], label="runs")
    b.set_title("squares")
    c.imshow(np.arange(6.0).reshape(2, 3), extent=(0, 3, 0, 2), origin="lower")
    df = plotting.figure_data(fig)
    counts, edges = np.histogram(x, bins=12)
    bars = df[df.kind == "bar"]
    np.testing.assert_allclose(bars.y, counts)
    np.testing.assert_allclose(bars.x, edges[:-1])
    np.testing.assert_allclose(bars.width, np.diff(edges))
    assert df[df.kind == "line"][["label", "x", "y"]].values.tolist() == [["fit", 0.0, 2.0], ["fit", 1.0, 3.0]]
    pts = df[df.kind == "points"]
    assert set(pts.panel) == {"2: squares"} and pts.y.tolist() == [1.0, 4.0, 9.0]
    img = df[df.kind == "image"].sort_values(["row", "col"])
    assert img.value.tolist() == list(np.arange(6.0))
    assert img[["x", "y"]].values.tolist()[:2] == [[0.5, 0.5], [1.5, 0.5]]  # origin lower: row 0 at the bottom
    monkeypatch.setenv("HTLIB_FIGURE_DATA", str(tmp_path / "data"))
    glue_figure("fig-test", fig)
    back = pd.read_csv(tmp_path / "data" / "fig-test.csv")
    assert len(back) == len(df) and np.allclose(back.y.dropna(), df.y.dropna())
    plt.close(fig)
    with pytest.raises(ValueError, match="name"):
        glue_figure("", fig)


def test_a_book_table_has_row_labels_in_every_part_and_plain_numbers():
    """A default index (0, 1, ...) is never shown: the first column labels the rows, in every part of a split
    table; no cell prints e-notation or ``inf``; a value reads back as the number it was."""
    import re

    import pandas as pd

    from htlib.plotting import plain_number, table_html

    frame = pd.DataFrame({"optimizer": ["GD", "FB-Adam"], "eta": [2000.0, 0.1], "gap": [6.1e-10, 1.234e-5],
                          "upper": [float("inf"), 14.7], "note": ["[14.7, inf]", "rtol 1e-4"],
                          **{f"wide column {k}": [1.5, 2.5] for k in range(12)}})
    html = table_html(frame)
    parts = html.split("</table>")[:-1]
    assert len(parts) > 1  # split: each part repeats the optimizer labels, none shows 0 or 1 as a label
    for part in parts:
        labels = [re.sub(r"<[^>]+>", "", x) for x in re.findall(r"<tr>\s*<th>(.*?)</th>", part, re.S)]
        assert labels[-2:] == ["GD", "FB-Adam"], labels
    cells = re.findall(r"<td[^>]*>(.*?)</td>", html, re.S)
    assert not any(re.search(r"\d[eE][-+]?\d|\binf\b", re.sub(r"<[^>]+>", "", c)) for c in cells), cells
    assert "∞" in html and "[14.7, ∞]" in html and "rtol 0.0001" in html
    assert "<th>η</th>" in html and "<th>eta</th>" not in html  # typeset headers
    for x in (6.1e-10, 1.234e-5, 0.1, 2000.0, -3.5e8):
        text = plain_number(x).replace("×10", "e").translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789"))
        assert float(text) == pytest.approx(x, rel=5e-4)
    # negative control: pandas' own rendering shows the index and the e-notation
    raw = frame.to_html()
    assert re.search(r"<th>0</th>", raw) and re.search(r"\d[eE]-\d", raw)

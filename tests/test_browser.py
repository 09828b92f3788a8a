"""The rendered book, opened page by page in headless Chromium.

Needs ``_build/html`` (``make book``) and Debian's ``chromium``; ``make test-book``
provides both.  For every page in the table of contents (at 1400 px, the width readers
use) it checks that the page loads without console errors, that every image is present
and non-empty, that every figure renders at least ``MIN_FIGURE_HEIGHT`` px tall (all
sizes are written to ``_build/screenshots/figure-sizes.txt``), that every image is a numbered
figure with a caption and a meaningful alt text, shown at no less than 90% of its pixels, whose caption links
the CSV of the numbers behind it (and the CSV loads), that MathJax has typeset
the math, that no internal link is broken, that no page mentions an outside working
document ("REFERENCE") or shows a broken citation, and that the download button offers
the page's source; it saves a screenshot of each page under ``_build/screenshots/``.
No cell shows a bare quoted string.  At 1280 x 900 the scoreboard's first screen holds the counts per paper
and the first line of those naming each claim that does not agree; every record is in a closed dropdown; it is at most
15 screens long with the dropdowns closed, and no table on it or on the landing page has a column narrower than
120 px (each check has a negative control); the landing page shows the same counts and disagreements, math typeset.
Every chapter, at 1280 px, opens with its findings box wholly on the first screen (at most FINDING_LINES lines, no cut
sentence), has no table wider than the text column or with a column narrower than 120 px, and prints no
``nan``, ``inf`` or ``None``, closed dropdowns included (a negative control injects each fault into a real chapter
page); neither do the scoreboard and the landing page.  A small rerun of the phases chapter, rendered by
``python -m htlib.run``, opens at 1280 x 900 with its banner as the first thing under the title, on the first
screen, listing every verdict it moved with both values, and prints no ``nan``, ``inf`` or ``None`` (each check with
a negative control).  The chapters of ``CHAPTER_SCREENS`` are
at most that many screens at 1280 x 900 with every dropdown closed.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import threading
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from htlib import book, plotting
from htlib import records as rc
from htlib import scoreboard as sb

pytestmark = pytest.mark.browser

# HTLIB_BOOK_ROOT points the test at another book (a small test book built from this repository).
ROOT = Path(os.environ.get("HTLIB_BOOK_ROOT") or Path(__file__).resolve().parent.parent).resolve()
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"

VIEWPORT = {"width": 1400, "height": 900}
MIN_FIGURE_HEIGHT = 250  # px: shorter figures are thin strips with unreadable labels at this width
MIN_FIGURE_SCALE = 0.9  # a figure of at most 8 in at the book's 100 dpi fits the text column unshrunk

CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def _pages() -> list[str]:
    """Site-relative URLs of every page of the table of contents (landing page first)."""
    return [f"{p.relative_to(ROOT).with_suffix('.html').as_posix()}" for p in book.pages(ROOT)]


def _source(page_path: str) -> Path:
    stem = ROOT / Path(page_path).with_suffix("")
    return next(stem.with_suffix(s) for s in (".ipynb", ".md") if stem.with_suffix(s).exists())


@pytest.fixture(scope="module", autouse=True)
def _fresh_size_log():
    (SHOTS / "figure-sizes.txt").unlink(missing_ok=True)


@pytest.fixture(scope="module")
def server():
    if not (HTML / "index.html").exists():
        pytest.fail("no rendered book in _build/html: run `make book` first (make test-book does)")
    handler = functools.partial(_QuietHandler, directory=str(HTML))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output readable
        pass


@pytest.fixture(scope="module")
def browser():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.fail("headless Chromium not found: install Debian's 'chromium' package (make test-book does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code


@pytest.mark.parametrize("page_path", _pages())
def test_page(server, browser, page_path):
    page = browser.new_page(viewport=VIEWPORT)
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    page.on("requestfailed", lambda req: errors.append(f"request failed: {req.url}"))
    page.on("response", lambda r: errors.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    url = urllib.parse.urljoin(server, page_path)
    response = page.goto(url, wait_until="load")
    assert response is not None and response.ok, f"{page_path}: HTTP {response.status if response else '?'}"

    # MathJax: wait for the typesetting promise, then require typeset output where there is math.
    # (Sphinx loads MathJax only on pages with math.)
    math_nodes = page.locator(".math").count()
    if math_nodes:
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=20000)
        page.evaluate("() => MathJax.startup.promise")
    typeset = page.locator("mjx-container").count()
    assert math_nodes == 0 or typeset >= math_nodes, f"{page_path}: {typeset} of {math_nodes} math nodes typeset"
    raw_tex = page.evaluate("() => Array.from(document.querySelectorAll('.math')).filter(e => !e.querySelector('mjx-container')).length")
    assert raw_tex == 0, f"{page_path}: {raw_tex} math elements left as raw TeX"

    # Math that MyST failed to recognise shows up as stray TeX delimiters in the prose.
    stray = page.evaluate(
        r"""() => {
            const skip = new Set(['PRE', 'CODE', 'SCRIPT', 'STYLE', 'MJX-CONTAINER', 'TEXTAREA']);
            const root = document.querySelector('main') || document.body;
            const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
            const hits = [];
            for (let n = walker.nextNode(); n; n = walker.nextNode()) {
                let p = n.parentElement, skipped = false;
                while (p && p !== root) { if (skip.has(p.tagName) || p.classList.contains('highlight')
                    || p.classList.contains('output')) { skipped = true; break; } p = p.parentElement; }
                if (!skipped && /\$|\\(frac|mathbb|mathcal|operatorname|sqrt)\b/.test(n.textContent))
                    hits.push(n.textContent.trim().slice(0, 80));
            }
            return hits;
        }"""
    )
    assert not stray, f"{page_path}: unrendered TeX in the text: {stray[:3]}"

    # Images: all present, decoded and non-empty.
    images = page.evaluate(
        "() => Array.from(document.querySelectorAll('article img, main img')).map(i => "
        "({src: i.currentSrc || i.src, w: i.naturalWidth, h: i.naturalHeight, done: i.complete}))"
    )
    for img in images:
        assert img["done"] and img["w"] > 0 and img["h"] > 0, f"{page_path}: broken image {img['src']}"
    source = _source(page_path)
    if source.suffix == ".ipynb" and source.stem != "scoreboard":
        # A chapter this build did not execute shows its committed outputs, which hold no image, under a banner
        # saying so (CI does not re-execute its three heaviest chapters: .ci/run); any other chapter has figures.
        banner = page.locator(".htlib-not-executed").count()
        assert images or banner, f"{page_path}: a chapter with no figures"
        assert not (images and banner), f"{page_path}: figures on a page that says it was not executed"

    # Figures as rendered: width and height in CSS px, recorded; none a thin strip.
    figures = page.evaluate(
        "() => Array.from(document.querySelectorAll('.cell_output img, figure img, .output img')).map(i => {"
        " const r = i.getBoundingClientRect(); return {src: i.currentSrc || i.src, w: Math.round(r.width),"
        " h: Math.round(r.height)}; })"
    )
    SHOTS.mkdir(parents=True, exist_ok=True)
    with (SHOTS / "figure-sizes.txt").open("a") as log:
        for k, fig in enumerate(figures, 1):
            log.write(f"{page_path}\tfigure {k}\t{fig['w']} x {fig['h']} px\t{fig['src'].rsplit('/', 1)[-1]}\n")
    short = [f"figure {k}: {f['w']} x {f['h']} px" for k, f in enumerate(figures, 1) if f["h"] < MIN_FIGURE_HEIGHT]
    assert not short, f"{page_path}: figures shorter than {MIN_FIGURE_HEIGHT} px at {VIEWPORT['width']} px: {short}"

    # Figures as a paper has them: every image of a chapter is a numbered figure with a caption and a
    # meaningful alt text, and is not shrunk below MIN_FIGURE_SCALE of its pixels (its 9 pt fonts stay 9 pt).
    captioned = page.evaluate(
        "() => Array.from(document.querySelectorAll('main img')).map(i => { const f = i.closest('figure');"
        " const c = f && f.querySelector('figcaption'); const r = i.getBoundingClientRect();"
        " return {src: (i.currentSrc || i.src).split('/').pop(), alt: i.getAttribute('alt') || '',"
        " number: c ? (c.querySelector('.caption-number') || {textContent: ''}).textContent.trim() : '',"
        " caption: c ? (c.querySelector('.caption-text') || c).textContent.trim() : '',"
        " scale: i.naturalWidth ? r.width / i.naturalWidth : 0,"
        " csv: c ? Array.from(c.querySelectorAll('a')).map(a => a.href).filter(h => h.endsWith('.csv')) : []}; })"
    )
    for k, fig in enumerate(captioned, 1):
        where = f"{page_path}: image {k} ({fig['src']})"
        # The numbers behind the figure: one CSV link in its caption, which the server serves.
        assert len(fig["csv"]) == 1, f"{where}: its caption links {len(fig['csv'])} CSV files, not one"
        assert _status(fig["csv"][0]) == 200, f"{where}: its data {fig['csv'][0]} does not load"
        assert fig["number"].startswith("Fig."), f"{where} is not a numbered figure"
        assert len(fig["caption"]) >= 20, f"{where} has no caption"
        assert len(fig["alt"].split()) >= 4 and not fig["alt"].endswith(".png"), f"{where}: alt text {fig['alt']!r}"
        assert fig["scale"] >= MIN_FIGURE_SCALE, f"{where} is shrunk to {fig['scale']:.0%} of its pixels"

    # No stray outputs: a cell whose result is a bare quoted string (a value that should have been glued).
    bare = page.evaluate(
        r"""() => Array.from(document.querySelectorAll('.cell_output .output.text_plain, .cell_output pre'))
            .map(e => e.textContent.trim()).filter(t => /^(['"]).*\1$/s.test(t))"""
    )
    assert not bare, f"{page_path}: bare-string outputs {bare[:3]}"

    # Self-contained pages (code included) and working citations (prose: code and outputs left out).
    everything = page.evaluate("() => (document.querySelector('main') || document.body).textContent")
    assert "REFERENCE" not in everything, f"{page_path}: mentions an outside working document"
    text = page.evaluate(
        "() => { const m = (document.querySelector('main') || document.body).cloneNode(true);"
        " m.querySelectorAll('pre, code, script, style, .cell_input, .cell_output').forEach(e => e.remove());"
        " return m.textContent; }"
    )
    for marker in ("??", "{cite}", ":cite:", "{glue", "glue:text}", "{ref}", "{doc}"):
        assert marker not in text, f"{page_path}: unresolved markup {marker!r} in the rendered text"
    broken = page.evaluate(
        "() => Array.from(document.querySelectorAll('a[href*=\"bibliography.html#\"]'))"
        ".filter(a => !a.textContent.trim()).length"
    )
    assert broken == 0, f"{page_path}: {broken} empty citation links"

    # JB1's download button offers the page's source (.ipynb for a chapter, .md for a text page).
    hrefs = page.evaluate(
        "() => Array.from(document.querySelectorAll('.dropdown-download-buttons a[href]')).map(a => a.href)"
    )
    wanted = [h for h in hrefs if h.endswith(f"_sources/{source.relative_to(ROOT).as_posix()}")]
    assert wanted, f"{page_path}: no download button for {source.name} (found {hrefs})"
    with urllib.request.urlopen(wanted[0], timeout=10) as resp:
        body = resp.read().decode("utf-8")
    if source.suffix == ".ipynb":
        assert json.loads(body)["cells"], f"{page_path}: the downloaded .ipynb has no cells"
    else:
        assert body.strip() == source.read_text(encoding="utf-8").strip(), f"{page_path}: downloaded source differs"

    # Internal links: every same-site target exists, and so does the anchor it names.
    links = page.evaluate("() => Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
    for link in sorted(set(links)):
        if not link.startswith(server):
            continue
        target, _, fragment = link.partition("#")
        assert _status(target) == 200, f"{page_path}: broken link {link}"
        if fragment and target.rstrip("/") == url.rstrip("/"):
            found = page.evaluate("(id) => !!document.getElementById(decodeURIComponent(id))", fragment)
            assert found, f"{page_path}: link to a missing anchor #{fragment}"

    shot = SHOTS / (Path(page_path).stem + ".png")
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    page.close()
    assert not errors, f"{page_path}:\n" + "\n".join(errors)


READER = {"width": 1280, "height": 900}  # the screen a reader reads the scoreboard on
MAX_SCREENS = 15  # the scoreboard, every dropdown closed, is at most this many screens at READER
MIN_COLUMN = plotting.MIN_COLUMN_PX  # px: the narrowest column of any table on the scoreboard, landing page, chapters


# the counts table's rows of numbers, one per paper (the paper's name heads each in a row of its own)
_COUNTS = ("() => Array.from(document.querySelectorAll('.htlib-counts tbody tr:not(.htlib-counts-paper)'))"
           ".map(r => Array.from(r.cells).map(c => Number(c.innerText)))")


def _height(page) -> int:
    """The page's height in px with every dropdown closed."""
    return page.evaluate("() => { document.querySelectorAll('main details[open]').forEach(d => d.open = false);"
                         " return document.documentElement.scrollHeight; }")


def _table_faults(page) -> list[str]:
    """Every visible table wider than its container, and every word of a table cell broken over two lines (a
    squeezed column: "thres/hold", "0/0/3", "6.3e-/03"; a header wrapping between its words is no fault)."""
    return page.evaluate(
        """() => { const out = []; document.querySelectorAll('main table').forEach((t, k) => {
            if (!t.getClientRects().length) return;  // inside a closed dropdown
            const box = t.parentElement.getBoundingClientRect().width, w = t.getBoundingClientRect().width;
            if (w > box + 1) out.push(`table ${k + 1} is ${Math.round(w)} px wide in a ${Math.round(box)} px column`);
            t.querySelectorAll('td, th').forEach(c => {
                const walk = document.createTreeWalker(c, NodeFilter.SHOW_TEXT);
                for (let n = walk.nextNode(); n; n = walk.nextNode()) {
                    for (const m of n.textContent.matchAll(/\\S+/g)) {
                        const r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
                        const tops = [];
                        for (const x of r.getClientRects()) if (!tops.some(y => Math.abs(y - x.top) < 4)) tops.push(x.top);
                        if (tops.length > 1) { out.push(`table ${k + 1}: '${m[0].slice(0, 30)}' broken over `
                            + `${tops.length} lines in a ${Math.round(c.getBoundingClientRect().width)} px column`); return; }
                    } } }); });
            return out; }""")


def _narrow_columns(page) -> list[str]:
    """Every visible table cell narrower than MIN_COLUMN px."""
    return page.evaluate(
        """(least) => { const out = []; document.querySelectorAll('main table').forEach((t, k) => {
            if (!t.getClientRects().length) return;
            t.querySelectorAll('tr').forEach(r => Array.from(r.cells).forEach(c => {
                const cw = c.getBoundingClientRect().width;
                if (c.colSpan === 1 && cw < least) out.push(`table ${k + 1}: a ${Math.round(cw)} px column `
                    + `(${c.innerText.trim().slice(0, 30)})`); })); });
            return out; }""", MIN_COLUMN)


def _reader(browser, server, path: str):
    page = browser.new_page(viewport=READER)
    response = page.goto(urllib.parse.urljoin(server, path), wait_until="load")
    assert response is not None and response.ok
    return page


def _first_screen(page) -> list[str]:
    """What the scoreboard's first screen at READER lacks: the whole counts table, and the first line of the
    differences (a reader learns there which claims differ without scrolling)."""
    ends = page.evaluate("() => ['.htlib-counts table', '.htlib-differences li'].map(s => {"
                         " const e = document.querySelector(s); if (!e) return null;"
                         " return e.getBoundingClientRect().bottom + window.scrollY; })")
    return [f"{what} {'is missing' if end is None else f'ends at {end:.0f} px, below the first screen'}"
            for what, end in zip(("the counts table", "the first difference line"), ends)
            if end is None or end > READER["height"]]


def test_scoreboard_reads_in_a_minute(server, browser):
    board = sb.scoreboard(ROOT / "book")  # what the chapters stored, read independently of the page
    page = _reader(browser, server, "book/scoreboard.html")
    # First screen: the counts per paper (one row of counts per paper) and the first difference line.
    assert not (faults := _first_screen(page)), faults
    counts = page.evaluate(_COUNTS)
    expected = sb.paper_counts(board.claims_by_notebook)
    assert counts == [[expected[p][v] for v in rc.VERDICTS] for p in sb.SCOREBOARD_ORDER]
    first = page.evaluate("() => document.querySelector('article.bd-article h2').innerText")
    assert first.startswith("Where the book and the papers differ"), first
    # The differences: one line per counted record that does not agree; every record in a closed dropdown.
    lines = page.evaluate(
        "() => Array.from(document.querySelectorAll('.htlib-differences li')).map(li => li.innerText)")
    assert len(lines) == len(board.not_agreeing())
    assert all(line.count("…") <= 2 for line in lines)
    records = page.evaluate("() => { const d = document.querySelectorAll('.htlib-paper details.htlib-record');"
                            " return [d.length, Array.from(d).filter(x => x.open).length]; }")
    n_counted = sum(len(board.rows(p)) for p in sb.SCOREBOARD_ORDER)
    assert records == [n_counted, 0], f"{records[0]} dropdowns ({records[1]} open) for {n_counted} records"
    sections = page.evaluate("() => Array.from(document.querySelectorAll('details.htlib-section')).map(d => d.open)")
    assert sections and not any(sections), "the variants, checks and revisions sections must start closed"
    links = page.evaluate("() => Array.from(document.querySelectorAll('.htlib-differences li a')).map(a => a.href)")
    assert len(links) >= len(lines) and all(".html" in h for h in links)
    # The length and the tables, with every dropdown closed.
    height = _height(page)
    assert height <= MAX_SCREENS * READER["height"], f"scoreboard {height} px: {height / READER['height']:.1f} screens"
    faults = _table_faults(page) + _narrow_columns(page) + _undefined(page)
    assert not faults, f"scoreboard: {faults[:5]}"
    page.close()


MIN_CONTRAST = 4.5  # WCAG AA for normal text: every verdict badge

_BADGE_COLOURS = """() => Array.from(document.querySelectorAll('.sd-badge')).filter(b => b.getClientRects().length)
    .map(b => { const s = getComputedStyle(b); return [b.innerText.trim(), s.color, s.backgroundColor]; })"""


def _contrast(fg: str, bg: str) -> float:
    """The WCAG contrast ratio of two CSS ``rgb(...)`` colours."""
    def lum(rgb: str) -> float:
        c = [int(v) / 255 for v in rgb.strip("rgba() ").split(",")[:3]]
        r, g, b = (x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in c)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b
    hi, lo = sorted((lum(fg), lum(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_verdict_badges_are_readable(server, browser):
    """Every verdict badge on the scoreboard has a contrast of at least MIN_CONTRAST, and "partly" and "not tested"
    differ in colour; a negative control injects a white-on-orange badge."""
    page = _reader(browser, server, "book/scoreboard.html")
    badges = page.evaluate(_BADGE_COLOURS)
    assert {text for text, _, _ in badges} >= {"agrees", "inconclusive"}
    low = sorted({(t, round(_contrast(fg, bg), 2)) for t, fg, bg in badges if _contrast(fg, bg) < MIN_CONTRAST})
    assert not low, f"badges below {MIN_CONTRAST}:1: {low}"
    colours = {t: bg for t, _, bg in badges}
    if "partly" in colours and "not tested" in colours:
        assert colours["partly"] != colours["not tested"]
    page.evaluate("() => document.querySelector('article.bd-article').appendChild(Object.assign("
                  "document.createElement('span'), {className: 'sd-badge', innerText: 'control',"
                  " style: 'color: rgb(255, 255, 255); background-color: rgb(232, 146, 23)'}))")
    assert any(t == "control" and _contrast(fg, bg) < MIN_CONTRAST for t, fg, bg in page.evaluate(_BADGE_COLOURS))
    page.close()


def test_the_scoreboard_checks_catch_a_long_page_and_a_squeezed_table(server, browser):
    """Negative controls: the old way (every record a row of one wide pipe table, cells broken anywhere) injected
    into the page, a page longer than the limit, and a first screen whose differences start below it, are each
    caught by the checks above."""
    page = _reader(browser, server, "book/scoreboard.html")
    page.evaluate(
        """() => { const t = document.createElement('table'); t.style.cssText = 'width:100%;table-layout:fixed';
            const head = ['#', 'where', 'claim', 'measured', 'uncertainty', 'verdict', 'setting', 'cause'];
            // the claim column squeezed to 40 px, as the old stylesheet's automatic widths left it
            t.innerHTML = '<colgroup>' + head.map((h, j) => j === 2 ? '<col style="width:40px">' : '<col>').join('')
              + '</colgroup><thead><tr>' + head.map(h => `<th>${h}</th>`).join('') + '</tr></thead><tbody>'
              + Array.from({length: 60}, (_, i) => '<tr>' + head.map((h, j) => `<td style="overflow-wrap:anywhere">`
                + (j === 2 || j === 7 ? 'a claim with a threshold at which the train and test losses reduce '
                   .repeat(4) : String(i)) + '</td>').join('') + '</tr>').join('') + '</tbody>';
            const wrap = document.createElement('div'); wrap.appendChild(t);
            document.querySelector('article.bd-article').appendChild(wrap); }""")
    assert any("broken over" in f for f in _table_faults(page)), "an 8-column table in the text column went unnoticed"
    assert _narrow_columns(page), "its narrow columns went unnoticed"
    page.evaluate("(h) => { const d = document.createElement('div'); d.style.height = h + 'px';"
                  " document.querySelector('article.bd-article').appendChild(d); }", MAX_SCREENS * READER["height"])
    assert _height(page) > MAX_SCREENS * READER["height"]
    page.close()
    # a first screen taken by one more paragraph (the old explanation under the heading, three times over)
    page = _reader(browser, server, "book/scoreboard.html")
    assert not _first_screen(page)
    page.evaluate("() => { const p = document.createElement('p'); p.style.height = '300px';"
                  " p.textContent = 'Every counted claim whose verdict is not agrees, with the reason.';"
                  " document.querySelector('.htlib-differences').before(p); }")
    assert any("first difference line ends at" in f for f in _first_screen(page)), _first_screen(page)
    page.close()


def test_landing_page_has_the_scoreboards_counts_and_disagreements(server, browser):
    board = sb.scoreboard(ROOT / "book")
    landing = _reader(browser, server, "book/index.html")
    counts = landing.evaluate(_COUNTS)
    expected = sb.paper_counts(board.claims_by_notebook)
    assert counts == [[expected[p][v] for v in rc.VERDICTS] for p in sb.SCOREBOARD_ORDER]
    names = landing.evaluate("() => Array.from(document.querySelectorAll('.htlib-counts tr.htlib-counts-paper'))"
                             ".map(r => r.innerText)")
    assert all(rc.PAPER_NAMES[p][1] in n for p, n in zip(sb.SCOREBOARD_ORDER, names)), names
    items = landing.evaluate("() => Array.from(document.querySelectorAll('.htlib-landing-differences li'))"
                             ".map(li => [li.innerText, li.querySelectorAll('mjx-container').length])")
    disagree = [c for _, c in board.differences() if c.verdict == "disagrees"]
    assert len(items) == len(disagree)
    # the math is typeset, not ASCII: no lambda_x, x_i^(..) or sqrt(..) in the text a reader sees
    import re
    ascii_math = re.compile(r"\b(lambda|eta|alpha|kappa|rho|mu)(_\w|\b)|\b[A-Za-z]_\w+\^|\bsqrt\(")
    shown = [text for text, _ in items if ascii_math.search(text)]
    assert not shown, shown[:2]
    faults = _table_faults(landing) + _narrow_columns(landing) + _undefined(landing)
    assert not faults, faults[:5]
    landing.close()



CHAPTERS = [p for p in _pages() if _source(p).suffix == ".ipynb" and Path(p).stem != "scoreboard"]
# The article's whole text, closed dropdowns included (textContent, not innerText), without scripts, styles,
# MathJax's own nodes and the code cells' source: every value printed the way Python prints an undefined or
# unbounded number (nan, inf, -inf, None) as a word ("infinite", "information" and "None of" are words of prose).
_UNDEFINED = r"""() => { const a = (document.querySelector('article.bd-article') || document.querySelector('main')
        || document.body).cloneNode(true);
    a.querySelectorAll('script, style, mjx-container, .cell_input').forEach(e => e.remove());
    const t = a.textContent, out = [];
    for (const re of [/(?<![\w.])(?:nan|-?inf)(?![\w])/gi, /(?<![\w.])None(?![\w])(?! of\b)/g])
        for (const m of t.matchAll(re)) out.push(t.slice(Math.max(0, m.index - 40), m.index + 20).replace(/\s+/g, ' '));
    return out; }"""


def _undefined(page) -> list[str]:
    """Each ``nan``, ``inf`` or ``None`` in the page's text (closed dropdowns included), with its context."""
    return [f"'{hit}'" for hit in page.evaluate(_UNDEFINED)]


def _chapter_faults(page, records) -> list[str]:
    """What a reader of a chapter should not meet: no findings box wholly on the first screen (or one longer than
    FINDING_LINES or with a cut sentence), a table that does not fit, an undefined value printed as ``nan``."""
    out = []
    if records:
        box = page.evaluate("() => { const b = document.querySelector('.htlib-findings'); if (!b) return null;"
                            " const r = b.getBoundingClientRect(); return [r.top + window.scrollY,"
                            " b.querySelectorAll(':scope > ul > li').length, b.innerText.includes('…'),"
                            " r.bottom + window.scrollY]; }")
        if box is None:
            out.append("no findings box")
        else:
            if box[0] >= READER["height"]:
                out.append(f"the findings box starts at {box[0]:.0f} px, below the first screen")
            elif box[3] > READER["height"]:
                out.append(f"the findings box ends at {box[3]:.0f} px, below the first screen")
            if box[1] > sb.FINDING_LINES - 1:  # the tally line, then at most FINDING_LINES - 1 items
                out.append(f"the findings box has {box[1]} items, more than {sb.FINDING_LINES - 1}")
            if box[2]:
                out.append("the findings box cuts a sentence ('…')")
    out += _table_faults(page) + _narrow_columns(page)
    if hits := _undefined(page):
        out.append(f"{len(hits)} undefined values printed as nan, inf or None: {hits[:3]}")
    return out


@pytest.mark.parametrize("page_path", CHAPTERS)
def test_a_chapter_opens_with_its_findings_and_its_tables_fit(server, browser, page_path):
    """At 1280 px: the findings box lies wholly on the first screen, at most FINDING_LINES long and with no cut
    sentence, no table overflows the text column or has a column narrower
    than MIN_COLUMN px, and no undefined or unbounded value prints as ``nan``, ``inf`` or ``None`` (closed
    dropdowns included)."""
    records = [c for c in rc.read_claims(_source(page_path)) if c.counted]
    page = _reader(browser, server, page_path)
    faults = _chapter_faults(page, records)
    page.close()
    assert not faults, f"{page_path}: {faults[:6]}"


CHAPTER_SCREENS = {"book/linear_hessian.html": 20}  # a chapter a reader finishes: screens at READER, dropdowns closed


@pytest.mark.parametrize("page_path", sorted(CHAPTER_SCREENS))
def test_a_chapter_fits_its_screens(server, browser, page_path):
    """With every dropdown and hidden table closed, the chapter is at most ``CHAPTER_SCREENS`` screens at 1280 x 900
    (run selection, convergence and the judging sit in dropdowns); a negative control pads the page."""
    page = _reader(browser, server, page_path)
    height, limit = _height(page), CHAPTER_SCREENS[page_path] * READER["height"]
    assert height <= limit, f"{page_path}: {height} px, {height / READER['height']:.1f} screens"
    page.evaluate("() => document.querySelector('article.bd-article').appendChild("
                  f"Object.assign(document.createElement('div'), {{style: 'height: {limit}px'}}))")
    assert _height(page) > limit
    page.close()


def test_the_chapter_checks_catch_nan_a_lost_box_and_a_wide_table(server, browser):
    """Negative controls on a real chapter page: each injected fault is reported by the check above."""
    path = CHAPTERS[0]
    records = [c for c in rc.read_claims(_source(path)) if c.counted]
    page = _reader(browser, server, path)
    assert not _undefined(page), _undefined(page)
    # each of the three in a closed dropdown, which innerText does not see; words of prose are no fault
    for shown in ("tail alpha nan", "kappa [14.7, inf]", "lowest -inf", "the reach None"):
        page.evaluate("(text) => { const d = document.createElement('details'); d.className = 'htlib-control';"
                      " d.innerHTML = '<summary>closed</summary><p></p>'; d.querySelector('p').textContent = text;"
                      " document.querySelector('article.bd-article').appendChild(d); }", shown)
        assert not page.evaluate("() => document.querySelector('details.htlib-control').open")
        assert any("undefined values" in f and shown.split()[-1] in f for f in _chapter_faults(page, records)), shown
        page.evaluate("() => document.querySelector('details.htlib-control').remove()")
    page.evaluate("() => { const d = document.createElement('details'); d.className = 'htlib-control';"
                  " d.innerHTML = '<summary>closed</summary><p>infinite information; None of the runs; nanometre</p>';"
                  " document.querySelector('article.bd-article').appendChild(d); }")
    assert not _undefined(page), _undefined(page)
    page.evaluate("() => document.querySelector('details.htlib-control').remove()")
    page.evaluate("() => { const t = document.createElement('table'); t.innerHTML = '<tr>' +"
                  " Array.from({length: 12}, () => '<td>a_long_unbreakable_column_value_here</td>').join('') + '</tr>';"
                  " document.querySelector('article.bd-article').appendChild(t); }")
    assert any("px wide" in f for f in _chapter_faults(page, records))
    page.evaluate("() => document.querySelector('article.bd-article > table:last-child').remove()")
    # a book table's column squeezed as pandas' automatic widths left it (22 px, its header on three lines)
    page.evaluate("() => { const t = document.createElement('table'); t.className = 'htlib-data';"
                  " t.innerHTML = '<tr><th style=\"min-width:0;width:22px\">ρ</th><td>a wide cell of text</td></tr>';"
                  " document.querySelector('article.bd-article').appendChild(t); }")
    assert any("a 22 px column (" in f for f in _chapter_faults(page, records)), _chapter_faults(page, records)
    page.evaluate("() => document.querySelector('.htlib-findings').appendChild("
                  "Object.assign(document.createElement('div'), {className: 'htlib-control', style: 'height: 900px'}))")
    assert any("ends at" in f for f in _chapter_faults(page, records))
    page.evaluate("() => document.querySelector('.htlib-findings .htlib-control').remove()")
    page.evaluate("() => { const b = document.querySelector('.htlib-findings'); b.parentElement.prepend("
                  "Object.assign(document.createElement('div'), {style: 'height: 2000px'})); }")
    assert any("below the first screen" in f for f in _chapter_faults(page, records))
    page.evaluate("() => document.querySelectorAll('.htlib-findings').forEach(e => e.remove())")
    assert "no findings box" in _chapter_faults(page, records)
    page.close()


# --- a rerun as a reader opens it ------------------------------------------------------------------------------------

# The phases chapter at a fraction of its sizes, one draw per family (its sign tests cannot decide on one draw, so
# verdicts move) and at a seed whose bulk-decay example has no outlier (its reach is undefined): about 30 s.
RERUN = {"h": 400, "d": 200, "seed": 1, "small_h": 120, "small_d": 60, "small_seeds": 1, "confusion_seeds": 1,
         "workers": 1}


@pytest.fixture(scope="module")
def rerun(tmp_path_factory):
    """The phases chapter rerun with ``RERUN`` by ``python -m htlib.run``, its page served: (URL, notebook)."""
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("rerun")
    args = [a for k, v in RERUN.items() for a in ("-p", k, str(v))]
    proc = subprocess.run([sys.executable, "-m", "htlib.run", str(ROOT / "book" / "phases.ipynb"), *args,
                           "--output-dir", str(out)], capture_output=True, text=True,
                          env={**os.environ, "TQDM_DISABLE": "1", "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    (notebook,) = out.glob("phases-*.ipynb")
    handler = functools.partial(_QuietHandler, directory=str(out))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/{notebook.with_suffix('.html').name}", notebook
    httpd.shutdown()


def _moved_verdicts(rerun_notebook: Path) -> list[tuple[str, str, str]]:
    """(key, the book's verdict, the rerun's) for every record whose verdict the rerun moved, read from the records."""
    old = {c.key: c.verdict for c in rc.read_claims(ROOT / "book" / "phases.ipynb") if c.key}
    new = {c.key: c.verdict for c in rc.read_claims(rerun_notebook) if c.key}
    return [(k, old[k], new[k]) for k in new if k in old and old[k] != new[k]]


def _rerun_faults(page, moved) -> list[str]:
    """What a reader of a rerun should not meet: a page whose first screen looks like the book's (the banner not the
    first thing under the title, or below the first screen), a moved verdict the banner does not name with both
    values, an undefined value printed as ``nan``, ``inf`` or ``None``."""
    out = []
    first = page.evaluate(
        """() => { const s = document.querySelector('article.bd-article section');
            const e = s && Array.from(s.children).find(x => x.tagName !== 'H1' && x.getClientRects().length);
            if (!e) return null;
            return {banner: e.classList.contains('admonition') && /rerun/i.test(e.textContent),
                    top: e.getBoundingClientRect().top + window.scrollY,
                    items: Array.from(e.querySelectorAll('li')).map(li => li.textContent)}; }""")
    if first is None or not first["banner"]:
        return ["the rerun's banner is not the first thing under the title"]
    if first["top"] >= READER["height"]:
        out.append(f"the rerun's banner starts at {first['top']:.0f} px, below the first screen")
    for key, old, new in moved:
        if not any(key in li and old in li and new in li for li in first["items"]):
            out.append(f"the banner does not list {key} with both verdicts ({old}, {new})")
    if hits := _undefined(page):
        out.append(f"{len(hits)} undefined values printed as nan, inf or None: {hits[:3]}")
    return out


def test_a_rerun_opens_with_its_banner_and_the_verdicts_it_moved(browser, rerun):
    """A small rerun of the phases chapter at 1280 x 900: the banner is the first thing under the title, on the
    first screen; it lists every verdict the rerun moved with the book's value and the rerun's; no ``nan``, ``inf``
    or ``None`` anywhere in its text, closed dropdowns included (an undefined value reads "–" with its reason)."""
    url, notebook = rerun
    moved = _moved_verdicts(notebook)
    assert moved, "the rerun moved no verdict: its changes list goes untested"
    page = browser.new_page(viewport=READER)
    response = page.goto(url, wait_until="load")
    assert response is not None and response.ok
    faults = _rerun_faults(page, moved)
    page.close()
    assert not faults, faults[:5]


def test_the_rerun_checks_catch_a_late_banner_a_lost_change_and_nan(browser, rerun):
    """Negative controls on the rerun's page: each injected fault is reported by the check above."""
    url, notebook = rerun
    moved = _moved_verdicts(notebook)
    page = browser.new_page(viewport=READER)
    page.goto(url, wait_until="load")
    assert not _rerun_faults(page, moved)
    # a moved verdict missing from the list
    page.evaluate("() => document.querySelector('article.bd-article section .admonition li').remove()")
    assert any("does not list" in f for f in _rerun_faults(page, moved))
    page.reload(wait_until="load")
    # an undefined value in a closed dropdown
    page.evaluate("() => { const d = document.createElement('details'); d.innerHTML = '<summary>s</summary>"
                  "<p>the top one at nan</p>'; document.querySelector('article.bd-article').appendChild(d); }")
    assert any("undefined values" in f for f in _rerun_faults(page, moved))
    page.reload(wait_until="load")
    # the banner below a screen of prose, as the book's page would open
    page.evaluate("() => { const b = document.querySelector('article.bd-article section .admonition');"
                  " b.parentElement.insertBefore(Object.assign(document.createElement('div'), {style: 'height: 1000px',"
                  " textContent: 'prose'}), b); }")
    assert any("not the first thing" in f for f in _rerun_faults(page, moved))
    page.evaluate("() => { const s = document.querySelector('article.bd-article section');"
                  " s.insertBefore(s.querySelector('.admonition'), s.querySelector('h1').nextElementSibling); "
                  " s.querySelector('h1').style.marginBottom = '1200px'; }")
    assert any("below the first screen" in f for f in _rerun_faults(page, moved))
    page.close()


def _execution_faults(page, notebook: Path) -> list[str]:
    """The execution page beside a rerun must list the rerun: its name, its parameters and its wall time."""
    cells = page.evaluate("() => Array.from(document.querySelectorAll('article.bd-article table td'))"
                          ".map(td => td.textContent.trim())")
    if notebook.stem not in cells:
        return [f"the execution page does not list the run {notebook.stem} (cells: {cells[:6]})"]
    return [] if any("seed = 1" in c for c in cells) and any(c.endswith((" s", " min")) for c in cells) else [
        f"the execution page lists the run without its parameters or wall time: {cells}"]


def test_the_execution_page_beside_a_rerun_lists_that_rerun(browser, rerun):
    """The book's execution table is empty for a page built alone; beside a rerun the page gives the rerun's own
    execution (a negative control empties the table)."""
    url, notebook = rerun
    page = browser.new_page(viewport=READER)
    response = page.goto(url.rsplit("/", 1)[0] + "/execution.html", wait_until="load")
    assert response is not None and response.ok
    assert not _execution_faults(page, notebook), _execution_faults(page, notebook)
    page.evaluate("() => document.querySelectorAll('article.bd-article table tbody tr').forEach(r => r.remove())")
    assert _execution_faults(page, notebook)
    page.close()

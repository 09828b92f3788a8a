"""The rendered book, opened page by page in headless Chromium.

Needs ``_build/html`` (``make book``) and Debian's ``chromium``; ``make test-book``
provides both.  For every page in the table of contents it checks that the page
loads without console errors, that every image is present and non-empty, that
MathJax has typeset the math, and that no internal link is broken; it saves a
screenshot of each page under ``_build/screenshots/``.
"""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from htlib import book

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"

CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def _pages() -> list[str]:
    """Site-relative URLs of the landing page and every chapter."""
    return ["book/index.html"] + [f"book/{p.stem}.html" for p in book.chapters()]


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
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    page.on("requestfailed", lambda req: errors.append(f"request failed: {req.url}"))
    page.on("response", lambda r: errors.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    url = urllib.parse.urljoin(server, page_path)
    response = page.goto(url, wait_until="load")
    assert response is not None and response.ok, f"{page_path}: HTTP {response.status if response else '?'}"

    # MathJax: wait for the typesetting promise, then require typeset output where there is math.
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=20000)
    page.evaluate("() => MathJax.startup.promise")
    math_nodes = page.locator(".math").count()
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
    if page_path != "book/index.html":
        assert images, f"{page_path}: a chapter with no figures"

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

    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / (Path(page_path).stem + ".png")
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    page.close()
    assert not errors, f"{page_path}:\n" + "\n".join(errors)

"""Sphinx extension: a banner on each page the build rendered from its committed outputs instead of executing it.

``htlib.book`` sets ``htlib_not_executed``, a mapping from a page's docname to the banner's text: a chapter
that failed or timed out in ``make book``, or every chapter ``make html`` found no execution of.  Backquoted parts
of the text become inline code; the banner is put right under the page's title, so the reader sees it before any number.
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from sphinx import addnodes


def _paragraph(text: str) -> nodes.paragraph:
    """``text`` as a paragraph, its backquoted parts as inline code (the commands a reader copies)."""
    para = nodes.paragraph()
    for i, part in enumerate(text.split("`")):
        if part:
            para += nodes.literal(part, part) if i % 2 else nodes.Text(part)
    return para


_FIGURE_TEXT = re.compile(r"^<Figure size \d+x\d+ with \d+ Axes>\s*$")


def unlink_missing_downloads(app, doctree: nodes.document) -> None:
    """On a page shown from its committed outputs, a caption's link to the numbers behind a figure (written only
    when the chapter is executed) becomes plain text, and the figure's text stand-in says what is missing."""
    if app.env.docname not in (app.config.htlib_not_executed or {}):
        return
    for ref in list(doctree.findall(addnodes.download_reference)):
        target = Path(app.env.relfn2path(ref["reftarget"], app.env.docname)[1])
        if not target.is_file():
            ref.replace_self(nodes.inline("", ref.astext()))
    for block in list(doctree.findall(nodes.literal_block)):
        if _FIGURE_TEXT.match(block.astext()):
            text = "(The figure is drawn when the chapter is executed.)"
            block.replace_self(nodes.paragraph("", text, classes=["htlib-figure-not-drawn"]))


def add_banner(app, doctree: nodes.document) -> None:
    text = (app.config.htlib_not_executed or {}).get(app.env.docname)
    if not text:
        return
    banner = nodes.admonition("", nodes.title("", "Not executed by this build"), classes=["warning",
                                                                                    "htlib-not-executed"])
    for paragraph in text.split("\n\n"):
        banner += _paragraph(paragraph)
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None:
        doctree.insert(0, banner)
        return
    title = next((i for i, child in enumerate(section.children) if isinstance(child, nodes.title)), -1)
    section.insert(title + 1, banner)


def setup(app):
    # "env": a change of the mapping makes Sphinx read the pages again (the banner is part of the doctree).
    app.add_config_value("htlib_not_executed", {}, "env")
    app.connect("doctree-read", add_banner)
    # Before Sphinx's collector of download files (priority 500) warns about the missing ones.
    app.connect("doctree-read", unlink_missing_downloads, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

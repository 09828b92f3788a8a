"""Sphinx extension: drop duplicate inline scripts from rendered pages.

sphinx-thebe registers its inline configuration script once per reading phase,
and Jupyter Book can trigger more than one, so pages end up declaring
``const THEBE_JS_URL`` twice, which is a JavaScript error in every page.
"""

from __future__ import annotations


def _dedupe(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen: set[tuple[str, str]] = set()
    unique = []
    for js in scripts:
        # The same inline body is registered once with filename None and once with "".
        body = getattr(js, "attributes", {}).get("body")
        key = ("body", str(body)) if body else ("file", str(getattr(js, "filename", js)))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    scripts[:] = unique


def setup(app):
    app.connect("html-page-context", _dedupe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

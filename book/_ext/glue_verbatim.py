"""Sphinx extension: paste glued text exactly as the chapter formatted it.

``{glue:text}`key``` runs the stored ``text/plain`` through ``ast.literal_eval`` before printing it, so a
value that :func:`htlib.records.glue_text` formatted as ``"15.000"`` is pasted as ``15.0``, ``"1e3"`` as
``1000.0`` and ``"1,024"`` as ``(1, 024)``.  The chapters format every number on purpose (the precision
is part of the claim), so without an explicit format spec the text is pasted verbatim; a quoted string
literal still loses its quotes.  With a format spec (``{glue:text}`key:.2f```) myst-nb's own behaviour
applies.
"""

from __future__ import annotations

import ast

from myst_nb.core import variables

_original = variables.format_plain_text


def format_plain_text(text: str, fmt_spec: str) -> str:
    if fmt_spec in ("", "s"):
        stripped = text.strip()
        if len(stripped) >= 2 and stripped[0] == stripped[-1] and stripped[0] in "'\"":
            try:
                value = ast.literal_eval(stripped)
            except (SyntaxError, ValueError):
                return text
            return value if isinstance(value, str) else text
        return text
    return _original(text, fmt_spec)


def setup(app):
    from myst_nb.ext.glue import crossref, roles

    variables.format_plain_text = format_plain_text
    for module in (roles, crossref):
        if hasattr(module, "format_plain_text"):
            module.format_plain_text = format_plain_text
    return {"parallel_read_safe": True, "parallel_write_safe": True}

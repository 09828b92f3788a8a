"""Sphinx extension: ``{build-info}``, what this build ran on (date, machine, Python and the packages that compute).

Written by the build itself, so the execution-statistics page never states a machine or a version by hand.
"""

from __future__ import annotations

import datetime
import os
import platform
from importlib import metadata

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

# The packages whose versions decide the numbers (the computing stack) and the page (the book stack).
PACKAGES = ("numpy", "scipy", "torch", "scikit-learn", "mpmath", "pandas", "matplotlib", "seaborn", "mlxtend",
            "dask", "distributed", "papermill", "nbclient", "myst-nb", "jupyter-book", "sphinx")


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown processor"


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def rows() -> list[tuple[str, str]]:
    """(what, value) of this build: date, machine, Python, and each package of :data:`PACKAGES`."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.system()} {platform.machine()}, {_cpu()}, {os.cpu_count()} logical cores"
    out = [("built", now), ("machine", machine), ("Python", platform.python_version())]
    return out + [(name, _version(name)) for name in PACKAGES]


class BuildInfo(SphinxDirective):
    """A two-column table of :func:`rows`."""

    def run(self):
        table, group = nodes.table(classes=["htlib-build-info"]), nodes.tgroup(cols=2)
        table += group
        group += [nodes.colspec(colwidth=1), nodes.colspec(colwidth=3)]
        head, body = nodes.thead(), nodes.tbody()
        head += nodes.row("", *(nodes.entry("", nodes.paragraph(text=t)) for t in ("what", "value")))
        for what, value in rows():
            body += nodes.row("", nodes.entry("", nodes.paragraph(text=what)), nodes.entry("", nodes.paragraph(text=value)))
        group += [head, body]
        return [table]


def setup(app):
    app.add_directive("build-info", BuildInfo)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""The repository's pytest configuration: nbval's comparison with measured numbers within a tolerance.

It sits at the root, not in ``tests/``, because pytest reads a ``conftest.py`` only in the folders of the
paths it is given and their parents: ``pytest --nbval book/x.ipynb`` (the README's command) never looks
in ``tests/``.  The plugin itself is ``tests/nbval_numbers.py``; the tolerances are ``tests/tolerances.py``.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "tests"))

pytest_plugins = ["nbval_numbers"]


# nbval skips ``image/png`` when it compares a chapter's outputs with the committed ones, but a figure glued
# for a numbered MyST figure (``myst_nb.glue(name, fig, display=False)``) carries its image as
# ``application/papermill.record/image/png``, which ``htlib.book.strip_for_commit`` drops like any image.
# Skip that field too, so that glued figures compare by their text only, as plain figures do.
_GLUED_IMAGES = ("application/papermill.record/image/png", "application/papermill.record/image/jpeg",
                 "application/papermill.record/image/svg+xml")


def pytest_collection_modifyitems(session, config, items):
    for item in items:
        parent = getattr(item, "parent", None)
        skip = getattr(parent, "skip_compare", None)
        if isinstance(skip, tuple) and _GLUED_IMAGES[0] not in skip:
            parent.skip_compare = skip + _GLUED_IMAGES

"""Repository-wide pytest hooks.

nbval skips ``image/png`` when it compares a chapter's outputs with the committed ones, but a figure
glued for a numbered MyST figure (``myst_nb.glue(name, fig, display=False)``) carries its image as
``application/papermill.record/image/png``, which ``htlib.book.strip_for_commit`` drops like any image.
Skip that field too, so that glued figures compare by their text only, as plain figures do.
"""

_GLUED_IMAGES = ("application/papermill.record/image/png", "application/papermill.record/image/jpeg",
                 "application/papermill.record/image/svg+xml")


def pytest_collection_modifyitems(session, config, items):
    for item in items:
        parent = getattr(item, "parent", None)
        skip = getattr(parent, "skip_compare", None)
        if isinstance(skip, tuple) and _GLUED_IMAGES[0] not in skip:
            parent.skip_compare = skip + _GLUED_IMAGES

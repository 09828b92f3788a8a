"""The repository's pytest configuration: nbval's comparison with measured numbers within a tolerance.

It sits at the root, not in ``tests/``, because pytest reads a ``conftest.py`` only in the folders of the
paths it is given and their parents: ``pytest --nbval book/x.ipynb`` (the README's command) never looks
in ``tests/``.  The plugin itself is ``tests/nbval_numbers.py``; the tolerances are ``tests/tolerances.py``.
``tests/nbval_keep.py`` hands the chapters nbval executed to the book build (``--keep-executed``).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "tests"))

pytest_plugins = ["nbval_numbers", "nbval_keep"]


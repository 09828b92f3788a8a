"""Book plumbing: the committed chapters' shape, image stripping, and the
execution cache that follows htlib's source (no stale book)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from htlib import book, cache, run

ROOT = Path(__file__).resolve().parent.parent


def test_every_toc_chapter_exists_with_one_parameters_cell():
    chapters = book.chapters()
    assert chapters, "no chapters found in _toc.yml"
    for path in chapters:
        nb = nbformat.read(str(path), as_version=4)
        tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1, f"{path.name}: {len(tagged)} parameters cells"
        params = run.read_parameters(path)  # parses, with constraints
        assert params, f"{path.name}: empty parameters cell"
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            assert cell.source == "" or cell.execution_count is not None, f"{path.name}: unexecuted cell"
            for out in cell.outputs:
                assert out.output_type != "error", f"{path.name}: committed error output"
                assert not any(k.startswith("image/") for k in out.get("data", {})), f"{path.name}: embedded image"


def test_strip_for_commit_drops_images_keeps_text():
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("plt.show()")
    cell.outputs = [
        nbformat.v4.new_output("display_data", data={"image/png": "iVBOR", "text/plain": "<Figure size 1x1 with 1 Axes>"}),
        nbformat.v4.new_output("display_data", data={"image/svg+xml": "<svg/>"}),
        nbformat.v4.new_output("stream", name="stdout", text="alpha = 2.000\n"),
    ]
    cell.metadata["papermill"] = {"duration": 1.2}
    nb.cells = [cell]
    nb.metadata["papermill"] = {"start_time": "now"}
    out = book.strip_for_commit(nb)
    outs = out.cells[0].outputs
    assert [o.output_type for o in outs] == ["display_data", "stream"]
    assert outs[0]["data"] == {"text/plain": "<Figure size 1x1 with 1 Axes>"}
    assert "papermill" not in out.metadata and "papermill" not in out.cells[0].metadata
    assert "image/png" in nb.cells[0].outputs[0]["data"]  # the input is untouched


def _tiny_book(root: Path, value: int) -> None:
    (root / "pkg").mkdir(exist_ok=True)
    (root / "pkg" / "mod.py").write_text(f"VALUE = {value}\n")
    (root / "_config.yml").write_text(
        "title: tiny\nexecute:\n  execute_notebooks: cache\n"
        "sphinx:\n  config:\n    nb_execution_raise_on_error: true\n"
    )
    (root / "_toc.yml").write_text("format: jb-book\nroot: ch\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import sys; sys.path.insert(0, '.')\nimport pkg.mod\nprint('VALUE-IS', pkg.mod.VALUE)"
    )]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(root / "ch.ipynb"))


def _build(root: Path, keyed: bool) -> str:
    if keyed:
        config = book.write_build_config(root, package_dir=str(root / "pkg"))
    else:  # Jupyter Book's own behaviour: one cache keyed on code cells only
        config = root / "_config.yml"
    subprocess.run(
        [book.jupyter_book_command(), "build", str(root), "--config", str(config), "-W", "-q"],
        cwd=root, check=True, capture_output=True,
    )
    html = (root / "_build" / "html" / "ch.html").read_text()
    (printed,) = re.findall(r"VALUE-IS (\d+)", html)  # the cell's output, not its source
    return printed


@pytest.mark.slow
@pytest.mark.parametrize("keyed", [True, False])
def test_build_reexecutes_when_library_source_changes(tmp_path, keyed):
    _tiny_book(tmp_path, 1)
    cache.source_hash.cache_clear()
    assert _build(tmp_path, keyed) == "1"
    (tmp_path / "pkg" / "mod.py").write_text("VALUE = 2\n")  # the library changes; the notebook does not
    cache.source_hash.cache_clear()
    shown = _build(tmp_path, keyed)
    if keyed:
        assert shown == "2", "the keyed cache served a stale execution"
    else:
        # The negative control: without the key, Jupyter Book serves the stale output.
        assert shown == "1"
    cache.source_hash.cache_clear()

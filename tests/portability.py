"""Run a chapter cold under another arithmetic and measure how far its outputs move.

The regression (``pytest --nbval``, extended by ``tests/nbval_numbers.py``) compares measured numbers
within the tolerances of ``tests/tolerances.py``.  Those tolerances come from this script: it executes a
chapter with an empty result cache (``HTLIB_CACHE_DIR`` in a fresh temporary folder, so every training
run is recomputed) under one named *variant* of the machine's arithmetic, then compares every cell with
the committed reference outputs and prints, per cell, the largest relative deviation among the decimals
and whether the chapter's tolerance accepts the cell.  Not collected by pytest (no ``test_`` prefix)::

    nice -n 10 .venv/bin/python tests/portability.py one_step_adam threads1
    .venv/bin/python tests/portability.py one_step_adam --compare runs/portability/one_step_adam.threads1.ipynb
    .venv/bin/python tests/portability.py --list
    .venv/bin/python tests/portability.py htmp avx2-machine --compare runs/portability/htmp.avx2-machine.ipynb \\
        --fixture tests/fixtures/portability/htmp.avx2-machine.json

Variants (each sets environment variables for the kernel, nothing else; ``OPENBLAS_CORETYPE`` and
``OPENBLAS_L2_SIZE`` are never touched: where the workplace sets them, it does so for correctness):

===========================  =====================================================================
variant                      environment
===========================  =====================================================================
``default``                  none (the machine's own thread count and instruction set, no pin)
``pinned``                   the Makefile's ``ARITH`` pins, what ``make nbval``, ``nbval-cold`` and
                             ``refresh`` run under (read from the Makefile: one place)
``ci``                       ``ARITH`` with ``ATEN_CPU_CAPABILITY=default`` and ``OMP_NUM_THREADS=1``:
                             what ``make nbval-cold`` runs under in CI (torch's scalar kernels, one thread)
``threads1``                 ``OMP_NUM_THREADS=1`` (torch, MKL, OpenBLAS: one thread each)
``avx2``                     ``ATEN_CPU_CAPABILITY=avx2`` (torch's own vector kernels at AVX2)
``aten-default``             ``ATEN_CPU_CAPABILITY=default`` (torch's own kernels without vector ISA)
``mkl-compatible``           ``MKL_CBWR=COMPATIBLE`` (MKL's SSE2 branch, the same on every x86 processor)
``mkl-avx2``                 ``MKL_CBWR=AVX2`` (on a non-Intel processor MKL takes its AUTO branch in CNR
                             mode instead)
``onednn-avx2``              ``ONEDNN_MAX_CPU_ISA=AVX2`` (oneDNN convolutions and matmuls at AVX2)
``avx2-machine``             ``ATEN_CPU_CAPABILITY=avx2``, ``MKL_CBWR=AVX2``, ``ONEDNN_MAX_CPU_ISA=AVX2``: an
                             AVX2 machine's arithmetic on an AVX-512 one (until 2026-12-06 it also set
                             ``OPENBLAS_CORETYPE=Haswell``: the measurements of ``tests/tolerances.py`` named
                             avx2-machine were made so)
===========================  =====================================================================

The executed notebook is kept under ``runs/portability/`` (ignored by git) for ``--compare``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

def arith_pins(makefile: Path = ROOT / "Makefile") -> dict[str, str]:
    """The arithmetic pins of the Makefile's ``ARITH := NAME=value ...`` line (the one place they are written).

    Examples
    --------
    >>> sorted(arith_pins())  # doctest: +SKIP
    ['ATEN_CPU_CAPABILITY', 'MKL_CBWR', 'ONEDNN_MAX_CPU_ISA']
    """
    for line in makefile.read_text().splitlines():
        name, sep, value = line.partition(":=")
        if sep and name.strip() == "ARITH":
            pairs = [word.split("=", 1) for word in value.split()]
            if not pairs or any(len(p) != 2 or not p[0] or not p[1] for p in pairs):
                raise ValueError(f"{makefile}: ARITH must be NAME=value words, got {value.strip()!r}")
            return dict(pairs)
    raise ValueError(f"{makefile} has no line 'ARITH := NAME=value ...'")


PINS = arith_pins()
"""The Makefile's arithmetic pins (``ARITH``)."""

VARIANTS: dict[str, dict[str, str]] = {
    "default": {},
    "pinned": dict(PINS),
    "ci": {**PINS, "ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1"},
    "threads1": {"OMP_NUM_THREADS": "1"},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2"},
    "aten-default": {"ATEN_CPU_CAPABILITY": "default"},
    "mkl-compatible": {"MKL_CBWR": "COMPATIBLE"},
    "mkl-avx2": {"MKL_CBWR": "AVX2"},
    "onednn-avx2": {"ONEDNN_MAX_CPU_ISA": "AVX2"},
    "avx2-machine": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
}
"""The arithmetic variants: environment variables set for the kernel that executes the chapter."""

# Variables that would pin the arithmetic of a variant to the caller's: cleared before a variant applies
# (OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are not among them: they are kept as the workplace set them).
_ARITHMETIC_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "ATEN_CPU_CAPABILITY",
                    "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")


def _chapter_path(chapter: str) -> Path:
    path = ROOT / "book" / f"{chapter}.ipynb"
    if not path.exists():
        names = sorted(p.stem for p in (ROOT / "book").glob("*.ipynb"))
        raise SystemExit(f"chapter must be one of {names}, got {chapter!r}")
    return path


def execute(chapter: str, variant: str, out_dir: Path, timeout: int = 3600) -> Path:
    """Execute ``book/<chapter>.ipynb`` cold under ``variant``; return the executed notebook's path."""
    if variant not in VARIANTS:
        raise SystemExit(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}")
    source = _chapter_path(chapter)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{chapter}.{variant}.ipynb"
    env = {k: v for k, v in os.environ.items() if k not in _ARITHMETIC_VARS}
    env.update(VARIANTS[variant])
    env.update(TQDM_DISABLE="1", PYTHONWARNINGS="ignore::DeprecationWarning", PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory(prefix="htlib-cold-") as cache:
        env["HTLIB_CACHE_DIR"] = cache  # empty: every training run of the chapter is recomputed
        code = ("import papermill as pm, sys; pm.execute_notebook(sys.argv[1], sys.argv[2], cwd=sys.argv[3], "
                "kernel_name='python3', progress_bar=False, execution_timeout=int(sys.argv[4]))")
        start = time.time()
        subprocess.run([sys.executable, "-c", code, str(source), str(target), str(source.parent), str(timeout)],
                       env=env, check=True)
        print(f"{chapter} under {variant}: executed cold in {time.time() - start:.0f} s "
              f"(load {os.getloadavg()[0]:.1f}) -> {target.relative_to(ROOT)}")
    return target


def moves(ref_outputs, new_outputs, tol, sanitize=lambda s: s, small: float = 1e-3) -> tuple[float, float, bool]:
    """How far a cell's numbers moved, split as ``tests/tolerances.py`` records it: the largest relative move
    beyond the last printed digit among decimals of magnitude ``>= small``, the largest absolute move among
    smaller ones, and whether an integer moved.  Token sequences that differ in their words are skipped (the
    comparison reports those)."""
    import json as _json

    import nbval_numbers as nn

    a, b = nn._flatten(ref_outputs, nn._NBVAL_SKIP, sanitize), nn._flatten(new_outputs, nn._NBVAL_SKIP, sanitize)
    rel = ab = 0.0
    ints = False
    for key in set(a) & set(b):
        if key == nn._FRAME_TEXT:
            continue
        for x, y in zip(a[key], b[key]):
            if not isinstance(x, str) or not isinstance(y, str):
                x, y = (_json.dumps(v, sort_keys=True, ensure_ascii=False) for v in (x, y))
            elif key.endswith("json"):
                try:
                    x, y = (_json.dumps(_json.loads(v), sort_keys=True, ensure_ascii=False) for v in (x, y))
                except ValueError:
                    pass
            if key.endswith("text/html") and nn._TABLE.search(x):
                x, y = nn.canonical_frame_html(x), nn.canonical_frame_html(y)
            tx, ty = nn.tokenize(tol.mask(x)), nn.tokenize(tol.mask(y))
            if len(tx) != len(ty):
                continue
            for t, u in zip(tx, ty):
                if not (t.is_number and u.is_number) or t.value == u.value:
                    continue
                if t.integer and u.integer:
                    ints = True
                    continue
                big = max(abs(t.value), abs(u.value))
                if big >= small:
                    rel = max(rel, max(abs(t.value - u.value) - min(t.quantum, u.quantum), 0.0) / big)
                else:
                    ab = max(ab, abs(t.value - u.value))
    return rel, ab, ints


def report(chapter: str, executed: Path) -> bool:
    """Print, per code cell, the largest relative deviation and the comparison's verdict; True if all pass."""
    import nbformat
    from nbval.plugin import coalesce_streams

    import nbval_numbers as nn
    import tolerances

    sanitize = nn.sanitizer(ROOT / "tests" / "nbval_sanitize.cfg")
    ref_nb = nbformat.read(_chapter_path(chapter), as_version=4)
    new_nb = nbformat.read(executed, as_version=4)
    if new_nb.metadata.get("papermill", {}).get("end_time") is None:
        print(f"warning: {executed.name} is a run that has not finished (or failed): later cells are empty")
    ref_cells = [c for c in ref_nb.cells if c.cell_type == "code"]
    new_cells = [c for c in new_nb.cells if c.cell_type == "code"]
    if len(ref_cells) != len(new_cells):
        print(f"{chapter}: {len(new_cells)} code cells executed, {len(ref_cells)} in the reference")
        return False
    ok = True
    worst = needed = 0.0
    print(f"{'cell':>4}  {'id':>8}  {'max rel. dev.':>13}  {'needed rtol':>11}  {'rel >=1e-3':>10}  {'abs <1e-3':>9}  "
          f"{'ints':>4}  {'tolerance':>22}  result")
    for i, (ref, new) in enumerate(zip(ref_cells, new_cells)):
        tol = tolerances.for_cell(chapter, ref.metadata, ref.get("id"))
        result = nn.compare_outputs(coalesce_streams(ref.outputs), coalesce_streams(new.outputs), tol,
                                    sanitize=sanitize)
        worst = max(worst, result.max_rel)
        needed = max(needed, result.needed_rtol)
        ok &= result.ok
        verdict = "pass" if result.ok else "FAIL: " + "; ".join(result.problems[:2])
        if result.worst:
            verdict += f"  (worst {result.worst})"
        rel, ab, ints = moves(coalesce_streams(ref.outputs), coalesce_streams(new.outputs), tol, sanitize)
        print(f"{i:>4}  {str(ref.get('id'))[:8]:>8}  {result.max_rel:>13.3g}  {result.needed_rtol:>11.3g}  {rel:>10.3g}  "
              f"{ab:>9.2g}  {'yes' if ints else '':>4}  {tol.describe():>22}  {verdict}")
    print(f"{chapter} ({executed.name}): {'all cells pass' if ok else 'some cells FAIL'}; "
          f"largest relative deviation {worst:.3g}, needed rtol {needed:.3g}")
    return ok


def write_fixture(chapter: str, variant: str, executed: Path, target: Path) -> int:
    """Keep the cells whose outputs differ from the reference, both versions (text outputs only), as a
    JSON fixture for ``tests/test_regression_controls.py``; returns how many cells were kept."""
    import nbformat
    from htlib.book import strip_for_commit

    ref_nb, new_nb = (strip_for_commit(nbformat.read(p, as_version=4)) for p in (_chapter_path(chapter), executed))
    pairs = [{"id": r.get("id"), "index": i, "reference": r.outputs, "rerun": n.outputs}
             for i, (r, n) in enumerate(zip(*([c for c in nb.cells if c.cell_type == "code"] for nb in (ref_nb, new_nb))))
             if r.outputs != n.outputs]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"chapter": chapter, "variant": variant, "environment": VARIANTS.get(variant),
                                  "cells": pairs}, indent=1, ensure_ascii=False) + "\n")
    return len(pairs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tests/portability.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("chapter", nargs="?", help="chapter stem, e.g. one_step_adam")
    parser.add_argument("variant", nargs="?", default="default", help=f"one of {sorted(VARIANTS)}")
    parser.add_argument("--compare", type=Path, help="compare this executed notebook, executing nothing")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "portability", help="where executed notebooks go")
    parser.add_argument("--list", action="store_true", help="print the variants and exit")
    parser.add_argument("--fixture", type=Path, help="also write the differing cells (both versions) to this JSON")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds one cell may run (papermill's limit)")
    args = parser.parse_args(argv)
    if args.list or not args.chapter:
        print(json.dumps(VARIANTS, indent=1))
        return 0
    if args.timeout < 1:
        raise SystemExit(f"--timeout must be a whole number of seconds >= 1, got {args.timeout}")
    executed = args.compare or execute(args.chapter, args.variant, args.out, timeout=args.timeout)
    ok = report(args.chapter, executed)
    if args.fixture:
        print(f"{write_fixture(args.chapter, args.variant, executed, args.fixture)} differing cells -> {args.fixture}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

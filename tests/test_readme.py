"""Every command the README shows runs as written: htlib.run examples (validated with --dry-run or
--list, computing nothing), the make targets it names, and its nbval command without the Makefile's
environment variables."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
# The landing page shows rerun commands too; they are held to the same rule.
COMMAND_SOURCES = README + "\n" + (ROOT / "book" / "index.md").read_text(encoding="utf-8")


def _commands() -> list[str]:
    """Shell lines of the README's fenced blocks and backticked table cells, comments stripped."""
    lines = []
    # fences at line starts, so that another language's block (the README's Python example) is skipped whole
    for lang, block in re.findall(r"^```(\w*)\n(.*?)^```", COMMAND_SOURCES, re.S | re.M):
        if lang not in ("", "bash", "sh"):
            continue
        lines += [ln.split("  #")[0].strip() for ln in block.splitlines()]
    lines += re.findall(r"\|\s*`(make [^`]+)`\s*\|", COMMAND_SOURCES)
    return [ln for ln in lines if ln]


def _run_examples() -> list[list[str]]:
    """The README's reruns as htlib.run argument lists (``make run NB=.. ARGS='..'`` included)."""
    out = []
    for line in _commands():
        if "htlib.run" in line:
            argv = shlex.split(line)
            out.append(argv[argv.index("htlib.run") + 1:])
        elif line.startswith("make run"):
            kv = dict(tok.split("=", 1) for tok in shlex.split(line)[2:])
            out.append([kv["NB"], *shlex.split(kv.get("ARGS", ""))])
    return out


EXAMPLES = _run_examples()


def test_the_readme_has_rerun_examples():
    assert len(EXAMPLES) >= 3
    assert any("--list" in ex for ex in EXAMPLES) and any("-p" in ex for ex in EXAMPLES)


@pytest.mark.parametrize("argv", EXAMPLES, ids=[" ".join(a) for a in EXAMPLES])
def test_every_rerun_example_validates(argv, tmp_path):
    if "--list" not in argv and "--dry-run" not in argv:
        argv = [*argv, "--dry-run"]
    with _scheduler_for(argv) as argv:  # a Dask address in an example: a local scheduler stands in for it
        proc = subprocess.run([sys.executable, "-m", "htlib.run", *argv, "--output-dir", str(tmp_path / "runs")],
                              capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, f"README example fails: {' '.join(argv)}\n{proc.stderr}"
    assert not (tmp_path / "runs").exists()


@contextlib.contextmanager
def _scheduler_for(argv: list[str]):
    """``argv`` with any ``tcp://host:port`` replaced by the address of a LocalCluster running meanwhile."""
    if not any(a.startswith("tcp://") for a in argv):
        yield argv
        return
    import distributed
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        yield [cluster.scheduler_address if a.startswith("tcp://") else a for a in argv]


def test_the_readme_shows_the_cluster_commands():
    commands = _commands()
    assert any(c.startswith(".venv/bin/dask scheduler") for c in commands)
    assert any(c.startswith(".venv/bin/dask worker tcp://") and "--nthreads 1" in c for c in commands)
    assert any("htlib.run" in c and "-p executor tcp://" in c for c in commands)
    assert any(c.startswith("make paper ARGS='--scheduler tcp://") for c in commands)


def test_dry_run_refuses_what_a_real_run_refuses(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "htlib.run", "book/one_step_adam.ipynb", "-p", "optimizer", "gd",
                           "--dry-run"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and "unknown parameter 'optimizer'" in proc.stderr


def test_every_make_target_named_in_the_readme_exists():
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][\w-]*):", makefile, re.M))
    named = {shlex.split(line)[1] for line in _commands() if line.startswith("make ")}
    assert named and named <= targets, f"README names missing make targets: {named - targets}"


def test_the_documented_nbval_command_passes_without_the_makefile_environment():
    """The README's pytest line, verbatim, on a fixture chapter that draws progress bars."""
    (line,) = [ln for ln in _commands() if ln.startswith(".venv/bin/pytest --nbval")]
    argv = shlex.split(line)
    argv[0] = str(ROOT / argv[0])
    argv[-1] = "tests/fixtures/progress_chapter.ipynb"  # the README's chapter takes a minute; same options
    env = {k: v for k, v in os.environ.items()
           if k not in ("TQDM_DISABLE", "PYTHONWARNINGS", "HTLIB_PROGRESS", "PYTEST_CURRENT_TEST")}
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:]
    # The negative control: with bars forced on, the same command fails on the stderr they write.
    forced = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env={**env, "HTLIB_PROGRESS": "1"})
    assert forced.returncode != 0

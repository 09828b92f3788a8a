"""Fault injection (issue 55): a committed chapter is never truncated, a rerun's page serves its own numbers, a
Dask sweep whose workers all died fails in bounded time, bad paths are refused before compute."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import os
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import nbformat
import pytest

from htlib import run

ROOT = Path(__file__).resolve().parent.parent


def _tiny_notebook(path: Path, extra_output: str = "") -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# A chapter"), nbformat.v4.new_code_cell("print(1)")]
    if extra_output:
        nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text=extra_output)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


# --- item 2: write-back is atomic -----------------------------------------------------------------------------

_UNDER_A_FILE_SIZE_LIMIT = """
import resource, signal, sys
import nbformat, papermill
from htlib import book
chapter, executed, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
big = nbformat.read(executed, as_version=4)          # what the execution "produced", read before the limit
papermill.execute_notebook = lambda *a, **k: None    # no kernel: the write-back alone is under test
nbformat.read = lambda *a, **k: big
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)        # a write past the limit fails with EFBIG, not a signal
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
try:
    book.refresh(chapter)
except OSError as err:
    print("write failed:", err.errno)
    sys.exit(3)
"""


def test_refresh_under_a_file_size_limit_leaves_the_chapter_intact(tmp_path):
    chapter = _tiny_notebook(tmp_path / "book" / "ch.ipynb")
    executed = _tiny_notebook(tmp_path / "executed.ipynb", extra_output="x" * 40_000 + "\n")
    before = chapter.read_bytes()
    assert len(before) < 4096 < executed.stat().st_size
    proc = subprocess.run([sys.executable, "-c", _UNDER_A_FILE_SIZE_LIMIT, str(chapter), str(executed), "4096"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": str(tmp_path)})
    assert proc.returncode == 3, proc.stdout + proc.stderr  # the write-back failed ...
    assert chapter.read_bytes() == before  # ... and the committed chapter is as it was (old code: cut at 4,096 B)
    json.loads(chapter.read_text())
    assert sorted(p.name for p in chapter.parent.iterdir()) == ["ch.ipynb"]  # no temporary file left beside it


def test_refresh_writes_back_whole_and_keeps_the_mode(tmp_path):
    chapter = _tiny_notebook(tmp_path / "book" / "ch.ipynb")
    chapter.chmod(0o640)
    from htlib import book

    book.refresh(chapter)
    nb = nbformat.read(str(chapter), as_version=4)
    assert nb.cells[1].outputs[0]["text"] == "1\n"
    assert chapter.read_text().endswith("}\n") and oct(chapter.stat().st_mode & 0o777) == "0o640"
    assert sorted(p.name for p in chapter.parent.iterdir()) == ["ch.ipynb"]


# --- item 1: each rerun has its own assets --------------------------------------------------------------------

FIXTURE = ROOT / "tests" / "fixtures" / "tiny_chapter.ipynb"

# Its test, test_two_reruns_of_a_chapter_each_serve_their_own_numbers, is in tests/test_run.py: it reads the tiny
# chapter's two rendered reruns that test_rerun_html_states_the_new_numbers_not_glue_markup reads (one pair of runs).


# --- item 3: a Dask sweep whose workers all died fails in bounded time ----------------------------------------

@dataclasses.dataclass(frozen=True)
class Job:
    x: int
    log: str


def slow_square(job: Job) -> int:
    """Quick for x < 2; the others take a while, so that they are still running when the workers go."""
    time.sleep(0 if job.x < 2 else 3)
    (Path(job.log) / f"done-{job.x}").touch()
    return job.x**2


def test_a_dask_sweep_whose_workers_all_die_fails_naming_the_scheduler_and_the_cached_count(tmp_path, monkeypatch):
    """The scheduler lives on, every worker is gone: the old poll saw a live scheduler and waited forever."""
    import distributed
    from htlib import cache, sweep

    monkeypatch.setenv("HTLIB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(sweep, "SCHEDULER_POLL_S", 0.5)
    log = tmp_path / "log"
    log.mkdir()
    jobs = [Job(x, str(log)) for x in range(6)]
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                                       host="127.0.0.1", dashboard_address=None)
    client = distributed.Client(cluster.scheduler_address, timeout=5)

    def kill_every_worker_when_two_finished():
        while len(list(log.glob("done-*"))) < 2:
            time.sleep(0.01)
        time.sleep(0.2)  # their results reach the client
        for worker in list(cluster.workers.values()):
            cluster.sync(worker.close, timeout=2, executor_wait=False)

    killer = threading.Thread(target=kill_every_worker_when_two_finished, daemon=True)
    killer.start()
    start = time.monotonic()
    try:
        with pytest.raises(sweep.NoWorkers) as info:
            sweep.run_sweep(slow_square, jobs, executor=client.get_executor(), progress=False, no_worker_grace_s=2)
        elapsed = time.monotonic() - start
    finally:
        killer.join(10)
        with warnings.catch_warnings(), contextlib.suppress(Exception):
            warnings.simplefilter("ignore")
            client.close(timeout=2)
            cluster.close(timeout=2)
    text = str(info.value)
    keys = [cache.config_key(f"{slow_square.__module__}.{slow_square.__qualname__}", j) for j in jobs]
    cached = sum(cache.load(k) is not cache.MISSING for k in keys)
    assert elapsed < 20 and cluster.scheduler_address in text and "no worker for" in text, (elapsed, text)
    assert cached >= 2 and f"{cached} of them kept in the result cache" in text, text
    assert isinstance(info.value, sweep.SchedulerLost)  # what callers already catch


def test_the_no_worker_grace_period_is_checked():
    from htlib import sweep

    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="no_worker_grace_s"):
            sweep.run_sweep(abs, [1], executor=None, use_cache=False, progress=False, no_worker_grace_s=bad)


# --- item 7: output paths -------------------------------------------------------------------------------------

def _chapter_with_a_parameter(path: Path) -> Path:
    nb = nbformat.read(str(_tiny_notebook(path)), as_version=4)
    params = nbformat.v4.new_code_cell("n = 3  # a count [>= 1]")
    params.metadata["tags"] = ["parameters"]
    nb.cells.insert(1, params)
    nb.cells.append(nbformat.v4.new_code_cell("print(n * 2)"))
    nbformat.write(nb, str(path))
    return path


@pytest.mark.parametrize("folder", ["", " ", ".", "htlib", "tests", ".git", "htlib/experiments", "book/_ext",
                                    "_build", "benchmarks"])
def test_an_output_folder_of_the_repository_other_than_runs_is_refused(tmp_path, folder):
    chapter = _chapter_with_a_parameter(tmp_path / "ch" / "c.ipynb")
    target = folder if not folder.strip() else str(ROOT / folder)
    with pytest.raises(run.ParameterError, match="--output-dir"):
        run.preflight(chapter, {}, target)


def test_runs_and_its_subfolders_and_folders_outside_the_repository_are_accepted(tmp_path):
    chapter = _chapter_with_a_parameter(tmp_path / "ch" / "c.ipynb")
    for folder in (None, ROOT / "runs", ROOT / "runs" / "paper", tmp_path / "elsewhere"):
        assert run.preflight(chapter, {}, folder)[2].parent == (folder or ROOT / "runs")


def test_an_output_folder_with_braces_is_that_folder(tmp_path):
    """papermill formats its paths with the parameters: ``{nope}`` failed naming a file that does not exist,
    ``{n}`` would have written into a folder named after n's value."""
    chapter = _chapter_with_a_parameter(tmp_path / "ch" / "c.ipynb")
    for name in ("{nope}", "{n}"):
        out = run.run_chapter(chapter, {"n": 4}, output_dir=tmp_path / name, progress=False, html=False)
        assert out.parent == tmp_path / name and out.exists()
        assert nbformat.read(str(out), as_version=4).cells[-1].outputs[0]["text"] == "8\n"
    assert {p.name for p in tmp_path.iterdir()} == {"ch", "{n}", "{nope}"}


# --- item 5: a cost model for every chapter, top_k at most n, no silent change of a value ----------------------

ACCEPTED_BEFORE = [  # (chapter, overrides, the parameter the refusal names): each ran (or queued for days) before
    ("one_step_adam", {"n": 100_000, "d": 20_000, "h": 20_000, "seeds": 20}, "n"),
    ("generalization", {"n": 100_000, "d": 20_000, "h": 20_000, "seeds": 20}, "d"),
    ("generalization", {"steps": 100_000}, "steps"),
    ("one_step_adam", {"workers": 256}, "workers"),
    ("generalization", {"workers": 256}, "workers"),
    ("spike_to_heavy_tail", {"workers": 256}, "workers"),
    ("phases", {"workers": 256}, "workers"),
    ("htmp", {"workers": 256}, "workers"),
    ("linear_hessian", {"workers": 256}, "workers"),
    ("linear_hessian", {"depths": [1_000_000]}, "depths"),
    ("linear_hessian", {"top_k": 1_000_000}, "top_k"),
    ("linear_hessian", {"n": 10, "top_k": 11}, "top_k"),
    ("generalization", {"fig8cd_seeds": 1}, "fig8cd_seeds"),
    ("generalization", {"fig8a_seeds": 2}, "fig8a_seeds"),
    ("phases", {"h": 20_000, "d": 20_000, "workers": 4}, "d"),  # 48 GiB: four 20,000 x 20,000 cases at once
]


@pytest.mark.parametrize("stem, overrides, name", ACCEPTED_BEFORE,
                         ids=[f"{s}-{'-'.join(o)}" for s, o, _ in ACCEPTED_BEFORE])
def test_a_size_or_count_no_machine_runs_is_refused_before_compute(stem, overrides, name):
    run.chapter_setup(ROOT / "book" / f"{stem}.ipynb")  # its imports (torch) are not the check's time
    start = time.perf_counter()
    with pytest.raises(run.ParameterError, match=rf"parameter '{name}'") as info:
        run.check_overrides(ROOT / "book" / f"{stem}.ipynb", overrides)
    assert time.perf_counter() - start < 5
    if name == "workers":
        assert "350 MiB each" in str(info.value) and "workers must be at most 93" in str(info.value)


def test_the_worker_processes_count_only_for_a_process_pool():
    from htlib.experiments.spike import compute

    assert compute.Setup(workers=93).workers == 93
    assert compute.Setup(workers=256, executor="serial").workers == 256  # no pool: the count is unused


# --- item 6: the dry run makes every check the run makes -----------------------------------------------------

def _dry(argv: list[str], capsys) -> tuple[int, str]:
    code = run.main([*argv, "--dry-run"])
    return code, capsys.readouterr().err


def test_the_dry_run_refuses_a_cache_folder_that_is_a_file(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for value in (str(blocker), str(blocker / "under")):
        monkeypatch.setenv("HTLIB_CACHE_DIR", value)
        code, err = _dry(["book/mp_baseline.ipynb", "--output-dir", str(tmp_path / "runs")], capsys)
        assert code == 2 and "HTLIB_CACHE_DIR" in err, err


def test_the_dry_run_refuses_cuda_on_a_machine_without_it(tmp_path, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    code, err = _dry(["book/spike_to_heavy_tail.ipynb", "-p", "device", "cuda", "--output-dir",
                      str(tmp_path / "runs")], capsys)
    assert code == 2 and "parameter 'device'" in err and "CUDA" in err, err


def test_the_dry_run_refuses_a_data_folder_the_run_could_not_read(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    out = ["--output-dir", str(tmp_path / "runs")]
    for args in (["-p", "dataset", "mnist"], ["-p", "dataset", "mnist", "-p", "data_dir", str(tmp_path / "none")],
                 ["-p", "dataset", "fashion_mnist", "-p", "data_dir", str(empty)],
                 ["-p", "dataset", "cifar10", "-p", "data_dir", str(empty)],
                 ["-p", "data_dir", str(tmp_path / "none")]):
        code, err = _dry(["book/linear_hessian.ipynb", *args, *out], capsys)
        assert code == 2 and "parameter 'data_dir'" in err, (args, err)
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte.gz"):
        (empty / name).write_bytes(b"")
    code, err = _dry(["book/linear_hessian.ipynb", "-p", "dataset", "mnist", "-p", "data_dir", str(empty), *out],
                     capsys)
    assert code == 0, err


def test_the_dry_run_refuses_a_cifar_folder_without_its_batches(tmp_path, capsys):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    args = ["book/htmp.ipynb", "-p", "dataset", "cifar10", "-p", "data_dir", str(folder), "--output-dir",
            str(tmp_path / "runs")]
    code, err = _dry(args, capsys)
    assert code == 2 and "parameter 'data_dir'" in err and "data_batch_1" in err, err
    for name in (*(f"data_batch_{i}" for i in range(1, 6)), "test_batch"):
        (folder / name).write_bytes(b"")
    code, err = _dry(args, capsys)
    assert code == 0, err


def test_the_dry_run_test_creates_the_output_folder_and_leaves_nothing(tmp_path, capsys):
    (tmp_path / "a-file").write_text("")
    code, err = _dry(["book/mp_baseline.ipynb", "--output-dir", str(tmp_path / "a-file" / "runs")], capsys)
    assert code == 2 and "--output-dir" in err and "cannot be written" in err, err
    code, err = _dry(["book/mp_baseline.ipynb", "--output-dir", str(tmp_path / "new" / "runs")], capsys)
    assert code == 0 and sorted(p.name for p in tmp_path.iterdir()) == ["a-file"], err


# --- item 4: one line on Ctrl-C and SIGTERM, in a run with a pool sweep; nothing stale left -------------------

_POOL_SWEEP = ("import time\nfrom htlib.params import SweepSetup\nfrom htlib.sweep import run_sweep\n"
               "open('started', 'w').close()\n"
               "with SweepSetup(workers=1).executor_context() as pool:\n"
               "    run_sweep(time.sleep, [60.0, 60.0], executor=pool, use_cache=False, progress=False)")


def _sigint_default():
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a suite started in the background has SIGINT ignored


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])
def test_an_interrupted_run_with_a_pool_sweep_prints_one_line(tmp_path, how, request):
    import shutil
    import signal
    import tempfile

    nb = nbformat.read(str(FIXTURE), as_version=4)
    nb.cells.insert(3, nbformat.v4.new_code_cell(_POOL_SWEEP))
    chapter = tmp_path / "ch" / "sweep.ipynb"
    chapter.parent.mkdir()
    nbformat.write(nb, str(chapter))
    tmp = Path(tempfile.mkdtemp(prefix="t", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(tmp, ignore_errors=True))
    proc = subprocess.Popen([sys.executable, "-m", "htlib.run", str(chapter), "--no-html", "--output-dir",
                             str(tmp_path / "runs")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env={**os.environ, "TQDM_DISABLE": "1", "TMPDIR": str(tmp)},
                            preexec_fn=_sigint_default)
    deadline = time.monotonic() + 120
    while not (chapter.parent / "started").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(3)  # the pool's worker has started its task
    if how == "SIGINT":
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal: the whole foreground group
    else:
        proc.terminate()
    _, err = proc.communicate(timeout=60)
    partial = run.output_path(chapter, {}, tmp_path / "runs")
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == [f"interrupted: the partial notebook of sweep.ipynb is {partial}"], err
    assert partial.exists() and not list((tmp_path / "runs").glob("*.running-*"))
    assert not list(tmp.glob("htlib-kernel-*"))


def test_the_next_run_removes_what_killed_runs_left(tmp_path, monkeypatch):
    """SIGKILL leaves a run's .running-<pid> files and its kernel's runtime folder: the next run removes those of
    dead processes, and keeps a live run's."""
    import tempfile

    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", None)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid, live_pid = int(dead.stdout), os.getpid()
    out = tmp_path / "runs"
    out.mkdir()
    stale = [out / f"c-0123abcd.running-{dead_pid}{ext}" for ext in (".ipynb", ".kernel.log", ".progress")]
    kept = [out / f"c-0123abcd.running-{live_pid}.ipynb", out / "c-0123abcd.ipynb"]
    for p in stale + kept:
        p.write_text("{}")
    folders = {pid: tmp_path / "tmp" / f"htlib-kernel-{pid}-x1y2" for pid in (dead_pid, live_pid)}
    for f in folders.values():
        f.mkdir()
        (f / "kernel.json").write_text("{}")
    removed = run.remove_stale(out)
    assert sorted(removed) == sorted([*stale, folders[dead_pid]])
    assert all(p.exists() for p in kept) and folders[live_pid].exists() and not folders[dead_pid].exists()


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])
def test_ctrl_c_during_make_refresh_prints_one_line_naming_the_partial_notebook(tmp_path, how):
    import signal

    chapter = _tiny_notebook(tmp_path / "book" / "ch.ipynb")
    nb = nbformat.read(str(chapter), as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(_POOL_SWEEP))
    nbformat.write(nb, str(chapter))
    before = chapter.read_bytes()
    proc = subprocess.Popen([sys.executable, "-m", "htlib.book", "refresh", str(chapter)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, cwd=ROOT,
                            env={**os.environ, "TMPDIR": str(tmp_path)}, preexec_fn=_sigint_default)
    deadline = time.monotonic() + 120
    while not (chapter.parent / "started").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(3)
    if how == "SIGINT":
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.terminate()
    _, err = proc.communicate(timeout=60)
    lines = err.strip().splitlines()
    assert proc.returncode == 130 and len(lines) == 1, err
    partial = Path(re.search(r"the partial notebook is (\S+)$", lines[0]).group(1))
    assert "refresh of ch.ipynb interrupted; nothing written back" in lines[0] and partial.exists()
    assert chapter.read_bytes() == before


# --- item 8: the cache never expands an entry far beyond its size, and rebuilds only valid dataclasses ----------

def _forge(key: str, body: bytes) -> None:
    """An entry with a valid header and checksum around ``body`` (the checksum has no key: anyone can recompute
    it; the cache folder is trusted like the code, and these checks bound what a damaged or odd entry can do)."""
    import hashlib

    from htlib import cache

    path = cache._path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(cache.MAGIC + key.encode() + b"\n" + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)


def test_an_entry_that_would_expand_far_beyond_its_size_is_not_read(tmp_path, monkeypatch):
    import io

    import numpy as np

    from htlib import cache

    monkeypatch.setenv("HTLIB_CACHE_DIR", str(tmp_path / "cache"))
    key = cache.config_key("f", 1)
    buf = io.BytesIO()
    structure = np.frombuffer(b'{"array":0}', dtype=np.uint8)
    np.savez_compressed(buf, structure=structure, a0=np.zeros(8 * 2**20))  # 64 MiB of zeros in about 64 KiB
    assert len(buf.getvalue()) < 2**20
    _forge(key, buf.getvalue())
    with pytest.warns(cache.CacheWarning, match="would expand to"):
        assert cache.load(key) is cache.MISSING  # before: a 64-MiB array was served
    buf = io.BytesIO()
    np.savez(buf, structure=structure, a0=np.arange(4.0))  # what the cache writes: uncompressed, served
    _forge(key, buf.getvalue())
    assert cache.load(key).tolist() == [0.0, 1.0, 2.0, 3.0]


def test_a_rebuilt_dataclass_passes_its_own_checks(tmp_path, monkeypatch):
    from htlib import cache
    from htlib.experiments.spike import compute
    from htlib.two_layer import TwoLayerConfig

    monkeypatch.setenv("HTLIB_CACHE_DIR", str(tmp_path / "cache"))
    for good, field, bad in ((TwoLayerConfig(n=8, d=10, h=12), "h", -5), (compute.Setup(), "h", -5),
                             (compute.Setup(), "workers", 10**6)):
        key = cache.config_key("g", repr(good) + field)
        assert cache.store(key, good) and cache.load(key) == good
        forged = object.__new__(type(good))
        forged.__dict__.update(good.__dict__)
        object.__setattr__(forged, field, bad)
        assert cache.store(key, forged)  # as if the entry's numbers were altered and its checksum recomputed
        with pytest.warns(cache.CacheWarning, match="fails its own checks"):
            assert cache.load(key) is cache.MISSING  # before: rebuilt with h = -5

"""The result cache never serves a result for another config or another code version,
and sweeps resume from it."""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import errno
import os
import pickle
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from htlib import cache, sweep


@dataclasses.dataclass(frozen=True)
class Cfg:
    x: float
    tag: str = "a"


CALLS: list[Cfg] = []


def square(cfg: Cfg) -> float:
    CALLS.append(cfg)
    return cfg.x**2


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HTLIB_CACHE_DIR", str(tmp_path / "cache"))
    CALLS.clear()
    yield


def test_key_distinguishes_every_field_and_float_bits():
    base = cache.config_key("f", Cfg(1.0))
    assert cache.config_key("f", Cfg(1.0)) == base
    assert cache.config_key("f", Cfg(1.0, "b")) != base
    assert cache.config_key("g", Cfg(1.0)) != base
    # 0.1 + 0.2 != 0.3 in binary: the key must see the difference.
    assert cache.config_key("f", Cfg(0.1 + 0.2)) != cache.config_key("f", Cfg(0.3))


def test_key_changes_with_source(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "m.py").write_text("X = 1\n")
    first = cache.source_hash(str(pkg))
    (pkg / "m.py").write_text("X = 2\n")
    cache.source_hash.cache_clear()
    assert cache.source_hash(str(pkg)) != first


@pytest.mark.parametrize("tool", sorted(cache.TOOLING_MODULES))
def test_result_key_ignores_tooling_but_the_book_key_does_not(tmp_path, tool):
    """Restyling a figure or a claims table (tooling) keeps cached results; the book's
    execution cache, whose figures depend on the tooling, is invalidated."""
    pkg = tmp_path / "pkg"
    (pkg / "experiments").mkdir(parents=True)
    (pkg / "spectra.py").write_text("X = 1\n")
    (pkg / f"{tool}.py").write_text("STYLE = 1\n")
    (pkg / "experiments" / f"{tool}.py").write_text(f"from htlib import spectra, {tool}\nCONFIG = 1\n")  # same stem
    chapter = f"htlib.experiments.{tool}"
    cache.source_hash.cache_clear()
    results, everything = cache.source_hash(str(pkg), module=chapter), cache.source_hash(str(pkg), "all")
    (pkg / f"{tool}.py").write_text("STYLE = 2\n")
    cache.source_hash.cache_clear()
    assert cache.source_hash(str(pkg), module=chapter) == results
    assert cache.source_hash(str(pkg), "all") != everything
    for changed in (pkg / "spectra.py", pkg / "experiments" / f"{tool}.py"):
        before = cache.source_hash(str(pkg), module=chapter)
        changed.write_text(changed.read_text() + "Y = 0\n")
        cache.source_hash.cache_clear()
        assert cache.source_hash(str(pkg), module=chapter) != before, f"{changed.name} must be in the result key"
    cache.source_hash.cache_clear()


CHAPTER_SOURCE = '''"""A chapter's experiments."""

from htlib.experiments.shared import helper  # the chapter uses a sibling module
from htlib import spectra

SIZE = 10
"""The matrix size."""


def run(cfg):
    """Run it."""
    # square the size
    return SIZE ** 2
'''


def _chapter_pkg(tmp_path) -> Path:
    pkg = tmp_path / "pkg"
    (pkg / "experiments").mkdir(parents=True)
    (pkg / "spectra.py").write_text('def esd(a):\n    """ESD."""\n    return a\n')
    (pkg / "experiments" / "__init__.py").write_text('"""Experiments."""\n')
    (pkg / "experiments" / "alpha.py").write_text(CHAPTER_SOURCE)
    (pkg / "experiments" / "beta.py").write_text("N = 1\n")
    (pkg / "experiments" / "shared.py").write_text("def helper():\n    return 1\n")
    return pkg


def _hashes(pkg: Path) -> dict[str, str]:
    cache.source_hash.cache_clear()
    return {m: cache.source_hash(str(pkg), module=f"htlib.experiments.{m}") for m in ("alpha", "beta")}


def test_result_key_is_per_chapter(tmp_path):
    """An edit to one chapter's experiments keeps the other chapters' results; the numerics and the
    experiments modules a chapter imports are in its key, and only those."""
    pkg = _chapter_pkg(tmp_path)
    base = _hashes(pkg)
    assert base["alpha"] != base["beta"]
    alpha = pkg / "experiments" / "alpha.py"
    alpha.write_text(CHAPTER_SOURCE.replace("SIZE = 10", "SIZE = 11"))
    after = _hashes(pkg)
    assert after["alpha"] != base["alpha"] and after["beta"] == base["beta"]
    alpha.write_text(CHAPTER_SOURCE)
    (pkg / "experiments" / "shared.py").write_text("def helper():\n    return 2\n")
    after = _hashes(pkg)
    assert after["alpha"] != base["alpha"] and after["beta"] == base["beta"]
    (pkg / "experiments" / "shared.py").write_text("def helper():\n    return 1\n")
    assert _hashes(pkg) == base
    (pkg / "spectra.py").write_text("def esd(a):\n    return -a\n")  # numerics alpha imports, beta does not
    after = _hashes(pkg)
    assert after["alpha"] != base["alpha"] and after["beta"] == base["beta"]
    (pkg / "unused.py").write_text("Z = 1\n")  # a numerics module no chapter imports: in no chapter's key
    assert _hashes(pkg) == after


@pytest.mark.parametrize("edit", [
    lambda s: s.replace("Run it.", "Runs it."),                                  # docstring typo
    lambda s: s.replace("The matrix size.", "The matrix size (rows)."),          # attribute docstring
    lambda s: s.replace('"""A chapter\'s experiments."""', '"""The chapter."""'),  # module docstring
    lambda s: s.replace("# square the size", "# the area"),                      # comment
    lambda s: s.replace("SIZE ** 2", "SIZE**2") + "\n\n",                        # layout
])
def test_docstring_comment_and_layout_edits_keep_the_key(tmp_path, edit):
    pkg = _chapter_pkg(tmp_path)
    base = _hashes(pkg)
    alpha = pkg / "experiments" / "alpha.py"
    alpha.write_text(edit(CHAPTER_SOURCE))
    assert alpha.read_text() != CHAPTER_SOURCE
    assert _hashes(pkg) == base


@pytest.mark.parametrize("edit", [
    lambda s: s.replace("SIZE ** 2", "SIZE ** 3"),
    lambda s: s.replace("def run(cfg):", "def run(config):"),
    lambda s: s.replace('    """Run it."""\n', '    """Run it."""\n    print("x")\n'),
    lambda s: s.replace("import helper", "import helper as h"),
])
def test_behavioural_edits_change_the_key(tmp_path, edit):
    pkg = _chapter_pkg(tmp_path)
    base = _hashes(pkg)
    (pkg / "experiments" / "alpha.py").write_text(edit(CHAPTER_SOURCE))
    assert _hashes(pkg)["alpha"] != base["alpha"]


def test_a_docstring_edit_in_real_numerics_keeps_results_and_a_code_edit_does_not(tmp_path):
    import shutil

    import htlib

    pkg = tmp_path / "htlib"
    shutil.copytree(Path(htlib.__file__).parent, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    chapter = "htlib.experiments.htmp"
    cache.source_hash.cache_clear()
    base = cache.source_hash(str(pkg), module=chapter)
    spectra_py = pkg / "spectra.py"
    src = spectra_py.read_text()
    spectra_py.write_text(src.replace('"""Result of :func:`fit_mp`.', '"""The result of :func:`fit_mp`.', 1))
    cache.source_hash.cache_clear()
    assert spectra_py.read_text() != src and cache.source_hash(str(pkg), module=chapter) == base
    spectra_py.write_text(src.replace("ZERO_FLOOR = 1e-13", "ZERO_FLOOR = 1e-12", 1))
    cache.source_hash.cache_clear()
    assert spectra_py.read_text() != src and cache.source_hash(str(pkg), module=chapter) != base
    cache.source_hash.cache_clear()


def test_config_key_takes_the_chapter_from_the_producer_name():
    cfg = Cfg(1.0)
    htmp_key = cache.config_key("htlib.experiments.htmp.train_and_fit", cfg)
    assert htmp_key == cache.config_key("htlib.experiments.htmp.train_and_fit", cfg, "htlib.experiments.htmp")
    assert htmp_key != cache.config_key("htlib.experiments.htmp.train_and_fit", cfg, "htlib.experiments.phases")


def test_tooling_modules_exist_and_compute_nothing_the_key_needs():
    import htlib

    pkg = Path(htlib.__file__).parent
    assert all((pkg / f"{m}.py").exists() for m in cache.TOOLING_MODULES)
    assert {"spectra", "htmp", "linear", "two_layer"}.isdisjoint(cache.TOOLING_MODULES)
    with pytest.raises(ValueError, match="scope must be one of"):
        cache.source_hash(None, "tooling")


def test_cached_call_computes_once_and_never_mixes_configs():
    assert cache.cached_call(square, Cfg(3.0)) == 9.0
    assert cache.cached_call(square, Cfg(3.0)) == 9.0
    assert cache.cached_call(square, Cfg(4.0)) == 16.0
    assert CALLS == [Cfg(3.0), Cfg(4.0)]


def test_sweep_resumes_and_keeps_order():
    configs = [Cfg(float(i)) for i in range(6)]
    sweep.run_sweep(square, configs[:3], progress=False)
    CALLS.clear()
    out = sweep.run_sweep(square, list(reversed(configs)), progress=False)
    assert out == [float(i) ** 2 for i in reversed(range(6))]
    assert sorted(c.x for c in CALLS) == [3.0, 4.0, 5.0]  # finished runs were not recomputed


def test_sweep_with_executor_matches_serial():
    configs = [Cfg(float(i), "t") for i in range(5)]
    with cf.ThreadPoolExecutor(max_workers=2) as pool:
        out = sweep.run_sweep(square, configs, executor=pool, progress=False)
    assert out == [c.x**2 for c in configs]
    assert sweep.run_sweep(square, configs, use_cache=False, progress=False) == out


def _key(fn, cfg) -> str:
    return cache.config_key(f"{fn.__module__}.{fn.__qualname__}", cfg)


def test_torn_cache_entry_is_recomputed():
    path = cache._path(_key(square, Cfg(5.0)))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x80\x05truncated")
    with pytest.warns(cache.CacheWarning, match="damaged"):
        assert cache.cached_call(square, Cfg(5.0)) == 25.0
    assert CALLS == [Cfg(5.0)]


def test_unkeyable_config_is_refused():
    with pytest.raises(TypeError, match="cache key"):
        cache.config_key("f", {"x": object()})


# --- integrity: a damaged, misplaced or hostile entry is never served, a failed write loses nothing ---


@dataclasses.dataclass(frozen=True)
class Result:
    """Shaped like the chapters' results: nested dataclasses, arrays of several dtypes, float-keyed
    dicts, tuples of arrays, None, NumPy scalars, non-finite floats."""

    config: Cfg
    eigs: np.ndarray
    counts: np.ndarray
    per_step: tuple
    readouts: dict
    note: str
    best: np.float64
    ratio: float
    missing: float
    diverged_at: int | None


def rich(cfg: Cfg) -> Result:
    CALLS.append(cfg)
    rng = np.random.default_rng(int(cfg.x))
    return Result(
        config=cfg,
        eigs=rng.standard_normal(6),
        counts=np.arange(4, dtype=np.int32).reshape(2, 2),
        per_step=(rng.standard_normal(3).astype(np.float32), np.zeros(0)),
        readouts={0.5: {"kta": rng.standard_normal(2)}, 2: [1, 2.5, -0.0]},
        note="ok",
        best=np.float64(cfg.x / 3),
        ratio=cfg.x / 7,
        missing=float("nan"),
        diverged_at=None,
    )


def _same(a, b) -> bool:
    """Bit-for-bit equality of two results, types included (an independent check of the round trip)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, (np.generic, float)):
        return np.asarray(a).tobytes() == np.asarray(b).tobytes()
    if dataclasses.is_dataclass(a):
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def test_results_round_trip_exactly():
    first = cache.cached_call(rich, Cfg(3.0))
    again = cache.cached_call(rich, Cfg(3.0))
    assert CALLS == [Cfg(3.0)]
    assert _same(again, first) and _same(again, rich(Cfg(3.0)))
    assert not _same(rich(Cfg(4.0)), first)  # the comparison can fail


def test_bit_flips_are_never_served_and_never_crash():
    """The audit's experiment: flip single bits of a real entry; every flip must be detected
    (recomputed, with a warning), none served as a different value, none raising."""
    expected = cache.cached_call(rich, Cfg(2.0))
    path = cache._path(_key(rich, Cfg(2.0)))
    good = path.read_bytes()
    rng = np.random.default_rng(0)
    positions = rng.choice(len(good) * 8, size=300, replace=False)
    for bit in positions:
        damaged = bytearray(good)
        damaged[bit // 8] ^= 1 << (bit % 8)
        path.write_bytes(bytes(damaged))
        CALLS.clear()
        with pytest.warns(cache.CacheWarning):
            got = cache.cached_call(rich, Cfg(2.0))
        assert _same(got, expected), f"bit {bit} flipped: a different value was served"
        assert CALLS == [Cfg(2.0)], f"bit {bit} flipped: the entry was served, not recomputed"
    assert path.read_bytes() == good  # the recompute rewrote the entry


def test_truncated_entries_are_recomputed():
    expected = cache.cached_call(rich, Cfg(1.0))
    path = cache._path(_key(rich, Cfg(1.0)))
    good = path.read_bytes()
    for n in sorted({0, 1, 5, len(good) // 3, len(good) // 2, len(good) - 1, *range(10, 200, 37)}):
        path.write_bytes(good[:n])
        with pytest.warns(cache.CacheWarning):
            assert _same(cache.cached_call(rich, Cfg(1.0)), expected)


def test_an_entry_copied_under_another_key_is_not_served():
    cache.cached_call(square, Cfg(2.0))
    src, dst = cache._path(_key(square, Cfg(2.0))), cache._path(_key(square, Cfg(3.0)))
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(src.read_bytes())
    with pytest.warns(cache.CacheWarning):
        assert cache.cached_call(square, Cfg(3.0)) == 9.0


class _Hostile:
    def __reduce__(self):
        return (Path.touch, (Path(os.environ["HTLIB_CACHE_DIR"]).parent / "code-ran",))


def test_a_hostile_entry_runs_no_code():
    """A shared cache directory must not be a way to run code: entries are never unpickled."""
    path = cache._path(_key(square, Cfg(6.0)))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(_Hostile()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cache.CacheWarning)
        assert cache.cached_call(square, Cfg(6.0)) == 36.0
    assert not (Path(os.environ["HTLIB_CACHE_DIR"]).parent / "code-ran").exists()


def test_an_entry_naming_a_foreign_type_is_refused():
    """Only dataclasses and enums defined in the module the entry names are rebuilt, and only htlib
    modules are imported for it: an entry whose checksum is right still cannot reach other code."""
    import subprocess  # noqa: F401  (imported, so only the type check refuses it)

    for spec in ("os:system", "htlib.cache:os.PathLike", "subprocess:Popen", "htlib.cache:CacheWarning",
                 "not_imported_module:Thing", "htlib.cache:_Unstorable"):
        with pytest.raises((ValueError, AttributeError, ImportError)):
            cache._decode({"dataclass": spec, "state": {}}, {})
    with pytest.raises(ValueError, match="do not match"):  # a dataclass whose fields changed
        cache._decode({"dataclass": f"{__name__}:Cfg", "state": {"x": 1}}, {})
    assert cache._decode({"dataclass": f"{__name__}:Cfg", "state": {"x": 1, "tag": "b"}}, {}) == Cfg(1, "b")


def test_failed_write_warns_and_returns_the_value(monkeypatch):
    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cache.tempfile, "mkstemp", full_disk)
    with pytest.warns(cache.CacheWarning, match="No space left"):
        assert cache.cached_call(square, Cfg(3.0)) == 9.0
    with pytest.warns(cache.CacheWarning):
        assert sweep.run_sweep(square, [Cfg(1.0), Cfg(2.0)], progress=False) == [1.0, 4.0]


def test_failed_rename_leaves_no_temp_file(monkeypatch):
    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(cache.os, "replace", read_only)
    with pytest.warns(cache.CacheWarning, match="Read-only"):
        assert cache.cached_call(square, Cfg(3.0)) == 9.0
    assert not [p for p in cache.cache_dir().rglob("*") if p.is_file()]


def test_unstorable_value_warns_and_is_returned():
    with pytest.warns(cache.CacheWarning, match="cannot be stored"):
        assert cache.cached_call(_opaque, Cfg(1.0)).x == 1.0


class _Opaque:
    def __init__(self, x):
        self.x = x


def _opaque(cfg: Cfg) -> _Opaque:
    return _Opaque(cfg.x)


def test_stale_temp_files_are_removed_and_fresh_ones_kept():
    root = cache.cache_dir()
    (root / "ab").mkdir(parents=True)
    stale, fresh = root / "ab" / f"{cache.TEMP_PREFIX}killed{cache.SUFFIX}", root / "ab" / f"{cache.TEMP_PREFIX}busy"
    stale.write_bytes(b"half an entry")
    fresh.write_bytes(b"being written")
    old = time.time() - 2 * cache.STALE_TEMP_SECONDS
    os.utime(stale, (old, old))
    cache._CLEANED.discard(root)
    cache.cached_call(square, Cfg(8.0))
    assert not stale.exists() and fresh.exists()


def test_cache_dir_that_is_a_file_is_refused_before_any_compute(tmp_path, monkeypatch):
    target = tmp_path / "not-a-dir"
    target.write_text("")
    for env in (target, target / "sub"):
        monkeypatch.setenv("HTLIB_CACHE_DIR", str(env))
        with pytest.raises(cache.CacheDirError, match="HTLIB_CACHE_DIR.*set HTLIB_CACHE_DIR to a directory"):
            cache.cached_call(square, Cfg(2.0))
    assert CALLS == []


def test_relative_cache_dir_is_taken_from_the_repository_root(tmp_path, monkeypatch):
    repo = Path(cache.__file__).resolve().parents[1]
    (tmp_path / "book").mkdir()
    monkeypatch.chdir(tmp_path / "book")  # where a chapter's kernel runs
    monkeypatch.setenv("HTLIB_CACHE_DIR", "_build/test-relative-cache")
    first = cache.cache_dir()
    monkeypatch.chdir(tmp_path)
    assert cache.cache_dir() == first == repo / "_build" / "test-relative-cache"
    assert not (tmp_path / "book" / "_build").exists()


def _chapter_results():
    """What the chapters really cache (every function given to cached_call / run_sweep), at tiny sizes."""
    from htlib import two_layer
    from htlib.experiments import generalization, htmp, linear_hessian, phases
    from htlib.small_nets import SmallNetConfig

    tiny = two_layer.TwoLayerConfig(n=64, d=16, h=24, n_test=32, steps=3, keep_weights=(0, 1, 2, 3))
    yield two_layer.train, tiny
    yield generalization.readout_curve, generalization.ReadoutConfig(tiny, (0.1, 1.0))
    yield phases.run_phase_case, phases.PhaseCase("rank1-2.0", 60, 30, 0)
    yield phases.run_phase_case, phases.PhaseCase("collapse", 60, 30, 0)
    yield linear_hessian.run_linear_experiment, linear_hessian.LinearExperiment(
        depth=2, width=8, n=200, epochs=3, measure_points=2, dataset="digits", k=2, lr=0.05)
    yield htmp.train_and_fit, SmallNetConfig(model="mlp", dataset="digits", widths=(32,), epochs=1, n_train=200,
                                             n_test=50, batch_size=50)


@pytest.mark.slow
def test_every_chapters_result_type_round_trips_exactly():
    for fn, cfg in _chapter_results():
        computed = cache.cached_call(fn, cfg)
        with warnings.catch_warnings():
            warnings.simplefilter("error", cache.CacheWarning)  # stored, not skipped as unstorable
            served = cache.cached_call(fn, cfg)
        assert cache._path(_key(fn, cfg)).exists(), fn.__qualname__
        assert _same(served, computed), f"{fn.__module__}.{fn.__qualname__} did not round-trip"


# --- sweeps keep what finished when one config fails ----------------------------------------------


@dataclasses.dataclass(frozen=True)
class Job:
    x: int
    log: str  # a folder: each call leaves a file there (counts calls across worker processes)


def flaky(job: Job) -> int:
    """Fails for x == 0 while ``<log>/broken`` exists; the others take a moment, so that in a pool
    they finish after the failure has arrived."""
    log = Path(job.log)
    (log / f"call-{job.x}-{os.getpid()}-{time.monotonic_ns()}").touch()
    if job.x == 0:
        if (log / "broken").exists():
            raise ValueError("x = 0 is broken")
    else:
        time.sleep(0.3)
    return job.x * 10


def _calls(log: Path) -> list[int]:
    return sorted(int(p.name.split("-")[1]) for p in log.glob("call-*"))


@pytest.mark.parametrize("pool", ["serial", "threads", "processes"])
def test_failed_config_keeps_the_others_and_the_rerun_recomputes_only_it(tmp_path, pool):
    log = tmp_path / "log"
    log.mkdir()
    (log / "broken").touch()
    jobs = [Job(x, str(log)) for x in range(4)]

    def executor():
        if pool == "serial":
            return None
        if pool == "threads":
            return cf.ThreadPoolExecutor(max_workers=2)
        import multiprocessing as mp
        return cf.ProcessPoolExecutor(max_workers=2, mp_context=mp.get_context("spawn"))

    ex = executor()
    try:
        with pytest.raises(ValueError, match="x = 0 is broken") as info:
            sweep.run_sweep(flaky, jobs, executor=ex, progress=False)
    finally:
        if ex is not None:
            ex.shutdown()
    notes = " ".join(getattr(info.value, "__notes__", []))
    assert repr(jobs[0]) in notes and "1 of 4" in notes, notes
    assert _calls(log) == [0, 1, 2, 3]
    (log / "broken").unlink()
    for p in log.glob("call-*"):
        p.unlink()
    assert sweep.run_sweep(flaky, jobs, progress=False) == [0, 10, 20, 30]
    assert _calls(log) == [0]  # only the failed config ran again


# --- cluster faults: a retry on a reused Dask client recomputes; a dead scheduler fails the sweep (issue 40) ----


@pytest.fixture()
def dask_cluster():
    """A one-worker in-process Dask cluster over TCP and a client of it (a fraction of a second to start)."""
    import distributed
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp",
                                       host="127.0.0.1", dashboard_address=None)
    client = distributed.Client(cluster.scheduler_address, timeout=5)
    yield cluster, client
    with warnings.catch_warnings(), __import__("contextlib").suppress(Exception):
        warnings.simplefilter("ignore")
        client.close(timeout=2)
        cluster.close(timeout=2)


def test_a_retry_on_a_reused_dask_client_recomputes_the_failed_config(tmp_path, dask_cluster):
    _, client = dask_cluster
    log = tmp_path / "log"
    log.mkdir()
    (log / "broken").touch()
    jobs = [Job(x, str(log)) for x in range(4)]
    executor = client.get_executor()  # as a user would pass it: Dask's default, pure tasks
    with pytest.raises(ValueError, match="x = 0 is broken") as failed:  # kept alive, as a notebook keeps it
        sweep.run_sweep(flaky, jobs, executor=executor, progress=False)
    (log / "broken").unlink()
    for p in log.glob("call-*"):
        p.unlink()
    assert sweep.run_sweep(flaky, jobs, executor=executor, progress=False) == [0, 10, 20, 30]
    assert _calls(log) == [0] and failed.value is not None  # recomputed, and the others served from the cache


def slow_square(job: Job) -> int:
    """Quick for x < 2; the others take a while, so that they are still running when the scheduler goes."""
    time.sleep(0 if job.x < 2 else 3)
    (Path(job.log) / f"done-{job.x}").touch()
    return job.x**2


def test_the_scheduler_poll_bounds_a_sweep_on_a_dead_scheduler_to_a_minute():
    assert sweep.SCHEDULER_POLL_S + sweep.SCHEDULER_ANSWER_S <= 60


@pytest.mark.parametrize("fault", ["closed", "frozen"])
def test_a_sweep_whose_scheduler_dies_fails_soon_naming_it_and_keeps_what_finished(tmp_path, dask_cluster,
                                                                                   monkeypatch, fault):
    """``closed``: the scheduler goes away (Dask cancels the tasks); ``frozen``: it stops answering, with its
    connections open (nothing is ever cancelled: a plain ``as_completed`` waits forever)."""
    import threading

    cluster, client = dask_cluster
    monkeypatch.setattr(sweep, "SCHEDULER_POLL_S", 0.5)
    monkeypatch.setattr(sweep, "SCHEDULER_ANSWER_S", 1.0)
    log = tmp_path / "log"
    log.mkdir()
    jobs = [Job(x, str(log)) for x in range(6)]
    thaw = threading.Event()

    def kill_when_two_finished():
        while len(list(log.glob("done-*"))) < 2:
            time.sleep(0.01)
        time.sleep(0.2)  # their results reach the client
        if fault == "closed":
            cluster.sync(cluster.scheduler.close)
        else:  # the scheduler's (and its worker's) event loop stops, as under SIGSTOP or a partition
            cluster.loop.add_callback(thaw.wait, 30)

    killer = threading.Thread(target=kill_when_two_finished, daemon=True)
    killer.start()
    start = time.monotonic()
    try:
        with pytest.raises(sweep.SchedulerLost) as info:
            sweep.run_sweep(slow_square, jobs, executor=client.get_executor(), progress=False)
        elapsed = time.monotonic() - start
    finally:
        thaw.set()
        killer.join(10)
    text = str(info.value)
    assert elapsed < 10 and cluster.scheduler_address in text and "result cache" in text, (elapsed, text)
    finished = int(text.split(" of 6 configs had finished")[0].rsplit(" ", 1)[1])
    keys = [cache.config_key(f"{slow_square.__module__}.{slow_square.__qualname__}", j) for j in jobs]
    assert finished >= 2 and sum(cache.load(k) is not cache.MISSING for k in keys) == finished


_ORPHAN = """
import os, sys, time
from htlib.sweep import process_executor
pool = process_executor(2)
futures = [pool.submit(time.sleep, 0.5) for _ in range(4)]
for f in futures:
    f.result()
print(" ".join(str(p) for p in pool._processes), flush=True)
time.sleep(600)
"""


def test_a_killed_pool_owner_leaves_no_worker_behind(tmp_path):
    """SIGKILL of the process that made a pool (a killed kernel): its workers exit within seconds, instead of
    living on as orphans that hold its pipes open (issue 40)."""
    import signal

    proc = subprocess.Popen([sys.executable, "-c", _ORPHAN], stdout=subprocess.PIPE, text=True)
    try:
        workers = [int(p) for p in proc.stdout.readline().split()]
        assert len(workers) == 2 and all(_alive(p) for p in workers)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 20
        while any(_alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(p) for p in workers), "a pool worker outlived the process that made the pool"
    finally:
        proc.kill()
        proc.stdout.close()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"  # a zombie has exited
    except OSError:
        return False


def test_limit_threads_reaches_every_blas_pool_scipy_included():
    # SciPy ships its own OpenBLAS, loaded on first use; a limit set before it was loaded would miss it (a pool
    # worker's BLAS-3 readout would then run two threads beside the other worker)
    code = ("from htlib.sweep import limit_threads; limit_threads(1); import scipy.linalg.blas; "
            "from threadpoolctl import threadpool_info; print(max(i['num_threads'] for i in threadpool_info()))")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "1"

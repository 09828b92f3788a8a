"""The result cache never serves a result for another config or another code version,
and sweeps resume from it."""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
from pathlib import Path

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
    (pkg / "experiments" / f"{tool}.py").write_text("CONFIG = 1\n")  # same stem, experiments layer
    cache.source_hash.cache_clear()
    results, everything = cache.source_hash(str(pkg)), cache.source_hash(str(pkg), "all")
    (pkg / f"{tool}.py").write_text("STYLE = 2\n")
    cache.source_hash.cache_clear()
    assert cache.source_hash(str(pkg)) == results
    assert cache.source_hash(str(pkg), "all") != everything
    for changed in (pkg / "spectra.py", pkg / "experiments" / f"{tool}.py"):
        before = cache.source_hash(str(pkg))
        changed.write_text(changed.read_text() + "Y = 0\n")
        cache.source_hash.cache_clear()
        assert cache.source_hash(str(pkg)) != before, f"{changed.name} must be in the result key"
    cache.source_hash.cache_clear()


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


def test_torn_cache_entry_is_recomputed():
    key = cache.config_key(f"{square.__module__}.{square.__qualname__}", Cfg(5.0))
    path = cache.cache_dir() / key[:2] / f"{key}.pkl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x80\x05truncated")
    assert cache.cached_call(square, Cfg(5.0)) == 25.0


def test_unkeyable_config_is_refused():
    with pytest.raises(TypeError, match="cache key"):
        cache.config_key("f", {"x": object()})

"""htlib.stats: the t-interval, the sign test and the bootstrap interval, each against SciPy / NumPy."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import scipy.stats

from htlib.stats import Interval, SignTest, bootstrap_interval, sign_test, t_interval


@pytest.mark.parametrize("n", [2, 3, 5, 20])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_t_interval_matches_scipy(n, level):
    rng = np.random.default_rng(n * 100 + int(level * 100))
    for _ in range(5):
        x = rng.normal(rng.normal(), rng.uniform(0.1, 3.0), size=n)
        r = t_interval(x, level)
        ci = scipy.stats.ttest_1samp(x, 0.0).confidence_interval(level)
        assert isinstance(r, Interval)
        assert (r.n, r.level) == (n, level)
        assert r.mean == pytest.approx(np.mean(x), rel=1e-12)
        assert r.sd == pytest.approx(np.std(x, ddof=1), rel=1e-12)
        assert (r.low, r.high) == pytest.approx((ci.low, ci.high), rel=1e-10, abs=1e-12)


def test_t_interval_one_run_has_no_interval():
    r = t_interval([3.0])
    assert r.mean == 3.0 and r.n == 1 and math.isnan(r.low) and math.isnan(r.high) and math.isnan(r.sd)


def test_t_interval_refuses_a_diverged_run_unless_told():
    with pytest.raises(ValueError, match="non-finite.*drop_nonfinite"):
        t_interval([1.0, np.nan, 2.0, 3.0])
    with pytest.raises(ValueError, match="non-finite"):
        t_interval([1.0, np.inf, 2.0])
    assert t_interval([1.0, np.nan, 2.0, 3.0], drop_nonfinite=True) == t_interval([1.0, 2.0, 3.0])


@pytest.mark.parametrize("kwargs, match", [
    (dict(x=[1.0, 2.0], level=1.0), "level"),
    (dict(x=[1.0, 2.0], level=0.0), "level"),
    (dict(x=[1.0, 2.0], level="high"), "level"),
    (dict(x=[[1.0, 2.0], [3.0, 4.0]]), "1-D"),
    (dict(x=[]), "at least one"),
    (dict(x=["a", "b"]), "real numbers"),
])
def test_t_interval_validates_its_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        t_interval(**kwargs)


def test_results_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        t_interval([1.0, 2.0]).low = 0.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        sign_test([1.0, 2.0], ">").p = 0.0


@pytest.mark.parametrize("direction", [">", "<"])
def test_sign_test_matches_binomtest(direction):
    rng = np.random.default_rng(7 if direction == ">" else 8)
    for n in (1, 4, 7, 12, 30):
        value = float(rng.normal(0.0, 0.5))
        x = rng.normal(0.3, 1.0, size=n)
        x[: n // 4] = value  # ties with the value are dropped
        r = sign_test(x, direction, value)
        side = x > value if direction == ">" else x < value
        k, m = int(side.sum()), int((x != value).sum())
        assert isinstance(r, SignTest)
        assert (r.k, r.n, r.direction, r.value) == (k, m, direction, value)
        if m == 0:
            assert r.p == r.p_opposite == 1.0
            continue
        assert r.p == pytest.approx(scipy.stats.binomtest(k, m, 0.5, alternative="greater").pvalue, rel=1e-12)
        assert r.p_opposite == pytest.approx(scipy.stats.binomtest(k, m, 0.5, alternative="less").pvalue,
                                             rel=1e-12)


def test_sign_test_all_ties_decides_nothing():
    r = sign_test([2.0, 2.0, 2.0], "<", value=2.0)
    assert (r.k, r.n, r.p, r.p_opposite) == (0, 0, 1.0, 1.0)


@pytest.mark.parametrize("kwargs, match", [
    (dict(x=[1.0, 2.0], direction="above"), "direction"),
    (dict(x=[1.0, 2.0], direction=">", value=np.nan), "value"),
    (dict(x=[1.0, np.nan], direction=">"), "non-finite"),
    (dict(x=[1.0, 2.0], direction=">", level=2), "level"),
])
def test_sign_test_validates_its_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        sign_test(**kwargs)


def test_bootstrap_interval_is_the_percentile_interval_of_the_draws():
    rng = np.random.default_rng(3)
    draws = rng.gamma(2.0, 1.0, size=500)
    for level in (0.8, 0.95):
        r = bootstrap_interval(1.7, draws, level)
        q = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
        assert (r.estimate, r.n, r.level) == (1.7, 500, level)
        assert (r.low, r.high) == pytest.approx(tuple(q), rel=1e-12)
        assert r.sd == pytest.approx(np.std(draws, ddof=1))


def test_bootstrap_interval_refuses_failed_refits_and_too_few_draws():
    with pytest.raises(ValueError, match="draws.*non-finite"):
        bootstrap_interval(1.0, [1.0, np.nan, 2.0])
    assert bootstrap_interval(1.0, [1.0, np.nan, 2.0], drop_nonfinite=True).n == 2
    with pytest.raises(ValueError, match="at least 2"):
        bootstrap_interval(1.0, [1.0])
    with pytest.raises(ValueError, match="estimate"):
        bootstrap_interval(np.inf, [1.0, 2.0])

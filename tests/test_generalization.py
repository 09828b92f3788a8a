"""Tests of htlib.generalization: final metrics of a run and seed-cluster bootstrap rank correlations."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.stats

from htlib import generalization as gen
from htlib.two_layer import TwoLayerConfig, train

TINY = dict(n=64, d=16, h=24, n_test=32, steps=3)


# ----------------------------------------------------------------------------- configs

def test_final_metrics_nan_when_diverged():
    t = train(TwoLayerConfig(**TINY, optimizer="gd", eta=1.0))
    t = dataclasses.replace(t, diverged_at=2)
    assert all(np.isnan(v) for v in gen.final_metrics(t).values())


# ----------------------------------------------------------------------------- correlations


def test_spearman_bootstrap_point_estimate_is_scipys():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(9, 5))
    y = 0.6 * x + rng.normal(size=(9, 5))
    r = gen.spearman_bootstrap(x, y, n_boot=200, method="pooled")
    assert r.rho == pytest.approx(scipy.stats.spearmanr(x.ravel(), y.ravel()).statistic, abs=1e-12)
    assert r.n_points == 45 and r.n_seeds == 5
    assert r.low <= r.rho <= r.high


def test_spearman_bootstrap_interval_matches_scipy_bootstrap():
    # independent reference: scipy's paired percentile bootstrap, resampling the seed axis
    rng = np.random.default_rng(2)
    x = rng.normal(size=(6, 8))
    y = 0.4 * x + rng.normal(size=(6, 8))
    ours = gen.spearman_bootstrap(x, y, n_boot=2000, seed=3, method="pooled")

    def stat(idx):  # idx: a resample of the seed indices
        idx = idx.astype(int)
        return scipy.stats.spearmanr(x[:, idx].ravel(), y[:, idx].ravel()).statistic

    ref = scipy.stats.bootstrap((np.arange(x.shape[1]),), stat, vectorized=False, n_resamples=2000,
                                method="percentile", confidence_level=0.95, rng=np.random.default_rng(4))
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=0.04)
    assert ours.high == pytest.approx(ref.confidence_interval.high, abs=0.04)


def test_spearman_bootstrap_within_seed_against_scipy():
    # seeds differ by a large offset (different data sets); within each seed y rises with x
    rng = np.random.default_rng(5)
    x = rng.normal(size=(9, 6))
    y = x + 0.8 * rng.normal(size=(9, 6)) + 10.0 * rng.normal(size=(1, 6))
    per_seed = np.array([scipy.stats.spearmanr(x[:, s], y[:, s]).statistic for s in range(6)])
    ours = gen.spearman_bootstrap(x, y, n_boot=2000, seed=1)
    assert ours.rho == pytest.approx(per_seed.mean(), abs=1e-12)
    ref = scipy.stats.bootstrap((per_seed,), np.mean, n_resamples=2000, method="percentile",
                                rng=np.random.default_rng(2))
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=0.03)
    assert ours.high == pytest.approx(ref.confidence_interval.high, abs=0.03)
    # pooled rho is dominated by the seed offsets, the within-seed rho is not
    assert abs(gen.spearman_bootstrap(x, y, n_boot=10, method="pooled").rho) < ours.rho
    with pytest.raises(ValueError, match="method"):
        gen.spearman_bootstrap(x, y, method="mean")


def test_spearman_bootstrap_monotone_and_nan():
    x = np.tile(np.arange(5.0)[:, None], (1, 3))
    y = x**3 + 1.0
    y[2, 1] = np.nan  # a diverged run is dropped
    r = gen.spearman_bootstrap(x, y, n_boot=100)
    assert r.rho == 1.0 and r.low == pytest.approx(1.0) and r.high == pytest.approx(1.0) and r.n_points == 14
    r = gen.spearman_bootstrap(x, -y, n_boot=100)
    assert r.rho == -1.0 and r.excludes_zero
    one = gen.spearman_bootstrap(x[:, :1], y[:, :1])
    assert np.isnan(one.low) and one.rho == pytest.approx(1.0)


@pytest.mark.parametrize("kwargs, name", [({"n_boot": 0}, "n_boot"), ({"level": 1.0}, "level")])
def test_spearman_bootstrap_rejects_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        gen.spearman_bootstrap(np.ones((3, 2)), np.ones((3, 2)), **kwargs)
    with pytest.raises(ValueError, match="shape"):
        gen.spearman_bootstrap(np.ones((3, 2)), np.ones((2, 3)))


def test_spike_over_bulk_on_the_eigenvalue_scale():
    # 99 bulk eigenvalues at 1 and one spike at 50: the 90th percentile is the bulk, the ratio is 50
    eigs = np.r_[np.ones(99), 50.0]
    assert gen.spike_over_bulk(eigs) == pytest.approx(50.0)
    # a flat spectrum has no spike: ratio 1; the s1/s2 rule would also say 1 here, but on a spike at 4x the
    # second eigenvalue s1/s2 = 2 while lambda_max/q90 = 4 x (second / q90)
    assert gen.spike_over_bulk(np.full(10, 3.0)) == pytest.approx(1.0)
    e = np.r_[np.linspace(1.0, 2.0, 99), 8.0]
    assert gen.spike_over_bulk(e) == pytest.approx(8.0 / np.quantile(e, 0.9))
    assert gen.top_singular_ratio(e) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="q"):
        gen.spike_over_bulk(e, q=1.0)

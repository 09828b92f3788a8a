"""Tests of htlib.experiments.generalization: the Fig. 7/8 configs, the grid of final metrics, the claim
checks and the ridge-constant panel of the generalization chapter."""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses

import numpy as np
import pytest
import scipy.stats
import torch

from htlib import generalization as gen
from htlib.experiments import generalization as exp
from htlib.sweep import run_sweep
from htlib.two_layer import (RunGrid, TwoLayerConfig, make_data, readout_metrics, recording_covers, train,
                             training_spec)

TINY = dict(n=64, d=16, h=24, n_test=32, steps=3)


@pytest.fixture
def cache_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("HTLIB_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


# ----------------------------------------------------------------------------- configs


def test_fig7_configs_grid_and_storage():
    cfgs = exp.fig7_configs(etas=[0.1, 1.0, 10.0], optimizers=["gd", "adam"], seeds=2, **TINY)
    assert len(cfgs) == 2 * 3 * 2
    # optimizer-major, then eta, then seed
    assert [(c.optimizer, c.eta, c.seed) for c in cfgs[:4]] == [("gd", 0.1, 0), ("gd", 0.1, 1), ("gd", 1.0, 0), ("gd", 1.0, 1)]
    for c in cfgs:
        assert c.recorded_steps() == [TINY["steps"]]  # only W_steps is measured
        assert c.keep_weights == ()


@pytest.mark.parametrize(
    "kwargs, name",
    [({"seeds": 0}, "seeds"), ({"etas": [1.0, -1.0]}, "etas"), ({"optimizers": ["sgd"]}, "optimizers"),
     ({"etas": []}, "etas")],
)
def test_fig7_configs_rejects_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        exp.fig7_configs(**{**TINY, **kwargs})


def test_fig8_configs_share_the_base_run():
    f8 = exp.fig8_configs(ns=[32, 64], rhos=[0.1, 0.3], steplr_gammas=[0.5], n=64, d=16, h=24, n_test=32, steps=3)
    assert training_spec(f8.by_n[64]) == training_spec(f8.base) and f8.by_n[64].keep_weights == ()
    assert recording_covers(f8.base, f8.by_n[64]) and recording_covers(f8.base, f8.by_rho[0.3])
    assert not recording_covers(f8.by_n[64], f8.base)  # the base keeps every W_t
    assert f8.base.keep_weights == (0, 1, 2, 3) and f8.base.record_every == 1
    assert f8.by_rho[0.1].keep_weights == (2, 3)
    assert f8.by_n[32].keep_weights == () and f8.by_steplr_gamma[0.5].steplr_gamma == 0.5
    assert len(f8.unique()) == 6  # base, n=32, n=64 (base's training), rho=0.1, rho=0.3 (same), gamma=0.5
    assert all(c.optimizer == "adam" and c.eta == 1.0 for c in f8.unique())


def test_run_trainings_trains_each_training_spec_once(cache_tmp, monkeypatch):
    f8 = exp.fig8_configs(ns=[64], rhos=[0.3], steplr_gammas=[0.5], n=64, d=16, h=24, n_test=32, steps=3)
    trained = []
    monkeypatch.setattr(exp.compute, "train", lambda c: trained.append(c) or train(c))
    runs = exp.run_trainings(f8.unique(), executor=None, use_cache=False)
    assert sorted(map(str, trained)) == sorted(map(str, [f8.base, f8.by_steplr_gamma[0.5]]))
    for c, got in zip(f8.unique(), runs):
        direct = train(c)  # the run trained on its own, with its own recording
        assert got.config == c and got.steps.tolist() == direct.steps.tolist()
        assert sorted(got.weights) == sorted(direct.weights)
        for name in ("train_loss", "test_loss", "kta", "sim", "alpha_ks", "lambda_max", "test_loss@sqrt_d"):
            np.testing.assert_array_equal(got.metric(name), direct.metric(name))
        for t in got.weights:
            np.testing.assert_array_equal(got.weights[t], direct.weights[t])


# ----------------------------------------------------------------------------- assembly


def test_assemble_grid_matches_trajectories_and_svd():
    cfgs = exp.fig7_configs(etas=[0.5, 5.0], optimizers=["adam"], seeds=2, **TINY)
    cfgs = [dataclasses.replace(c, keep_weights=(c.steps,)) for c in cfgs]
    trajs = [train(c) for c in cfgs]
    grid = exp.fig7_grid(trajs[::-1])  # order must not matter
    assert grid.optimizers == ("adam",)
    np.testing.assert_array_equal(grid.etas, [0.5, 5.0])
    for t in trajs:
        i, j = list(grid.etas).index(t.config.eta), t.config.seed
        assert grid.get("test_loss", "adam")[i, j] == t.test_loss[-1]
        # independent reference: singular values of the kept W_steps
        s = np.linalg.svd(t.weights[t.config.steps].astype(np.float64), compute_uv=False)
        assert grid.get("sv_ratio", "adam")[i, j] == pytest.approx(s[0] / s[1], rel=1e-6)
        assert grid.get("lambda_max", "adam")[i, j] == pytest.approx(s[0] ** 2, rel=1e-6)
        assert grid.get("alpha_weighted", "adam")[i, j] == pytest.approx(t.alpha_ks[-1] * np.log10(s[0] ** 2), rel=1e-6)
    np.testing.assert_allclose(grid.mean("kta", "adam"), grid.get("kta", "adam").mean(axis=1))
    with pytest.raises(ValueError, match="duplicate"):
        exp.fig7_grid(trajs + trajs[:1])
    with pytest.raises(ValueError, match="cover"):
        exp.fig7_grid(trajs[:3])


def _synthetic_grid(seeds: int = 4) -> RunGrid:
    etas = np.array(exp.ETA_GRID)
    rng = np.random.default_rng(0)
    shape = (2, etas.size, seeds)
    le = np.log10(etas)[None, :, None] + np.zeros(shape)
    noise = lambda: 0.0005 * rng.normal(size=shape)  # noqa: E731
    values = {m: np.zeros(shape) for m in gen.METRICS}
    values["test_loss"] = 1.0 - 0.05 * le + noise()  # loss falls with eta
    values["train_loss"] = values["test_loss"] - 0.1
    values["kta"] = 0.1 * le + noise()  # rises with eta
    values["alpha_hill"] = np.where(le >= 0, 2.0 - 0.02 * le, 2.0 - le) + noise()  # nearly flat for eta >= 1
    values["alpha_ks"] = 5.0 - 0.5 * le + noise()  # falls throughout
    values["alpha_weighted"] = values["alpha_ks"] * 2
    for m in ("train_loss", "test_loss", "kta"):
        values[f"{m}@d"] = values[m]
        values[f"{m}@sqrt_d"] = values[m][:, ::-1]  # the other readout: reversed in eta
    return RunGrid(("gd", "adam"), etas, np.arange(seeds), values, np.zeros(shape, bool))


def test_correlation_table_and_claims_on_synthetic_grid():
    grid = _synthetic_grid()
    setup = exp.Setup(n_boot=300, executor="serial")
    table = gen.correlation_table(grid, n_boot=300)
    assert set(table) == {(o, m) for o in ("gd", "adam") for m in ("alpha_hill", "alpha_ks", "alpha_weighted", "kta")}
    assert table[("gd", "kta")].rho < -0.9 and table[("adam", "alpha_ks")].rho > 0.9
    # GD: eta >= 1000 against the rest: loss down, KTA up, alphas down -> every part agrees
    c = exp.gd_contrast_claim(grid, setup, "d")
    assert c.verdict == "agrees" and c.setting == "paper" and "KS" in c.measured
    assert exp.hill_flat_claim(grid, setup).verdict == "agrees"
    # the benign band: Hill rises as eta falls, and so does the loss -> rho(hill, loss) > 0
    b = exp.benign_band_claim(grid, setup, "d")  # both contrasts pass, under a criterion set after the data
    assert b.verdict == "inconclusive" and "set after this grid had been seen" in b.cause
    assert exp.adam_correlation_claim(grid, setup, "d").verdict == "agrees"
    flipped = dataclasses.replace(grid, values={**grid.values, "alpha_ks": -grid.values["alpha_ks"]})
    assert exp.hill_flat_claim(flipped, setup).verdict == "partly"  # Hill flat, KS rising
    # the readout argument picks the convention: reversed losses flip the verdict; the record is a variant
    v = exp.gd_contrast_claim(grid, setup, "sqrt_d")
    assert v.verdict != "agrees" and v.variant_of == "gd_contrast" and v.cause.startswith("the same W")
    with pytest.raises(ValueError, match="no learning rate"):
        gen.correlation_table(grid, eta_min=1e6)


def test_benign_band_is_judged_on_the_contrast_of_eta_1_against_the_smaller_etas():
    grid = _synthetic_grid()
    hill = grid.values["alpha_hill"].copy()
    small = grid.etas < 1.0
    hill[:, small] = 2.45 + 0.003 * np.arange(small.sum())[None, :, None]  # three values within 5%: "similar"
    tied = dataclasses.replace(grid, values={**grid.values, "alpha_hill": hill})
    c = exp.benign_band_claim(tied, exp.Setup(executor="serial"), "d")
    # Hill(1) = 2.0 against 2.453 on average below, test loss 1.0 against 1.1: both contrasts negative
    assert c.verdict == "inconclusive" and "2 distinct Hill levels" in c.measured and "not judged" in c.measured
    assert "negative), while the Hill half holds" in c.cause
    assert "Hill(1) - Hill(<= 0.1) -0.453" in c.measured and "test loss(1) - test loss(<= 0.1) -0.1" in c.measured
    # eta = 1 with a higher test loss than the smaller etas, in every seed: the loss part fails
    loss = grid.values["test_loss@d"].copy()
    loss[:, grid.etas == 1.0] += 0.5
    worse = dataclasses.replace(grid, values={**grid.values, "test_loss@d": loss})
    c = exp.benign_band_claim(worse, exp.Setup(executor="serial"), "d")
    assert c.verdict == "partly" and "test loss(1) - test loss(<= 0.1)" in c.cause
    assert exp.similar_groups(np.array([2.45, 2.45, 2.44, 1.93]), 0.05) == [[3], [2, 0, 1]]


def test_benign_contrast_by_hand_and_its_bad_input():
    etas = np.array([0.001, 0.01, 0.1, 1.0, 10.0])
    v = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 0.0], [0.5, 9.0], [100.0, 100.0]])
    # seed 0: 0.5 - (1 + 3 + 5) / 3 = -2.5; seed 1: 9 - (2 + 4 + 0) / 3 = 7
    np.testing.assert_allclose(exp.benign_contrast(v, etas), [-2.5, 7.0])
    with pytest.raises(ValueError, match="etas must hold 1"):
        exp.benign_contrast(v[1:], etas[1:] * 100)


def test_rho_interval_is_fisher_z_and_stays_inside_minus_one_one():
    rho = np.array([0.2, 0.6, 1.0, 1.0, 0.8])
    # the plain t-interval of the mean rho runs past 1 here
    assert exp.seed_interval(rho).high > 1
    r = exp.rho_interval(rho, n_points=4)
    edge = 1 - 6 / (4 ** 3 - 4)  # the seeds at 1 enter at 0.9
    z = np.arctanh(np.minimum(rho, edge))
    half = scipy.stats.t.ppf(0.975, 4) * z.std(ddof=1) / np.sqrt(5)
    assert float(r.mean) == pytest.approx(np.tanh(z.mean()))
    assert (float(r.low), float(r.high)) == pytest.approx((np.tanh(z.mean() - half), np.tanh(z.mean() + half)))
    assert -1 < float(r.low) < float(r.mean) < float(r.high) < 1
    # equal seeds: the interval is the point; every seed at -1 over 3 points: the clip at -(1 - 6/24)
    m, ci = exp.rho_interval([0.5, 0.5, 0.5], n_points=9).at()
    assert (m, *ci) == pytest.approx((0.5, 0.5, 0.5))
    m, ci = exp.rho_interval([-1.0, -1.0], n_points=3).at()
    assert (m, *ci) == pytest.approx((-0.75, -0.75, -0.75))
    assert np.isnan(exp.rho_interval([0.5, 0.5], n_points=2).at()[0])  # no Spearman of 2 points
    with pytest.raises(ValueError, match="n_points"):
        exp.rho_interval([0.5, 0.5], n_points=0)


def test_welch_interval_against_scipy():
    rng = np.random.default_rng(3)
    a, b = rng.normal(1.8, 0.05, size=2), rng.normal(1.9, 0.1, size=5)
    d, (lo, hi) = exp.welch_interval(a, b, 0.95)
    ref = scipy.stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert d == pytest.approx(a.mean() - b.mean()) and (lo, hi) == pytest.approx((ref.low, ref.high))
    with pytest.raises(ValueError, match="2 or more"):
        exp.welch_interval([1.0], b)


def test_range_interval_covers_at_its_level():
    # five flat cells of seed noise sd 0.02 around 2: the true range of the cell means is 0
    rng = np.random.default_rng(1)
    x = 2.0 + 0.02 * rng.normal(size=(3, 5))
    v, (lo, hi) = exp.range_interval(x)
    assert lo <= v <= hi and v == pytest.approx(np.ptp(x.mean(axis=1)) / x.mean())
    # coverage of the true range (0) by the lower end, over repeats: at least the level
    misses = sum(exp.range_interval(2.0 + 0.02 * rng.normal(size=(3, 5)))[1][0] > 0 for _ in range(400))
    assert misses / 400 <= 0.05 + 0.02
    with pytest.raises(ValueError, match="cells >= 2"):
        exp.range_interval(x[:1])


def test_two_seed_intervals_cannot_disagree():
    parts = exp._Parts()
    parts.add_mean("two", exp.NEGATIVE, exp.seed_interval([1.0, 1.1]))  # excludes 0 on the wrong side
    assert parts.verdict == "inconclusive" and "fewer than 3 seeds" in parts.cause("here") and "2 seeds" in parts.cause("here")
    parts = exp._Parts()
    parts.add_mean("three", exp.NEGATIVE, exp.seed_interval([1.0, 1.1, 1.05]))
    assert parts.verdict == "disagrees"
    parts = exp._Parts()
    parts.add_mean("two, holds", exp.NEGATIVE, exp.seed_interval([-1.0, -1.1]))
    assert parts.verdict == "agrees"


def test_seed_intervals_of_the_claims_are_student_t():
    grid = _synthetic_grid(seeds=2)
    c = exp.gd_contrast_claim(grid, exp.Setup(executor="serial"), "d")
    assert "Student-t" in c.uncertainty and "1 degree of freedom" in c.uncertainty
    rho = exp.within_seed_rho(grid.get("alpha_ks", "adam"), grid.get("test_loss@d", "adam"))
    assert rho.shape == (2,) and np.all(rho > 0.9)


def test_compound_verdicts():
    assert exp._combine(["agrees", "agrees"]) == "agrees"
    assert exp._combine(["agrees", "disagrees"]) == "partly"
    assert exp._combine(["agrees", "inconclusive"]) == "inconclusive"
    assert exp._combine(["disagrees", "disagrees"]) == "disagrees"


def test_a_disagreement_at_a_reduced_setting_becomes_inconclusive():
    grid = _synthetic_grid()
    flipped = dataclasses.replace(grid, values={**grid.values, "kta@d": -grid.values["kta@d"],
                                                "alpha_hill": -grid.values["alpha_hill"],
                                                "alpha_ks": -grid.values["alpha_ks"]})
    paper = exp.adam_correlation_claim(flipped, exp.Setup(n_boot=300), "d")
    reduced = exp.adam_correlation_claim(flipped, exp.Setup(n_boot=300, seeds=3), "d")
    assert paper.verdict == "disagrees"
    assert reduced.setting.startswith("seeds = 3") and reduced.verdict == "inconclusive"
    assert "reduced setting" in reduced.cause


def test_setup_validates():
    assert exp.Setup() != exp.PAPER and exp.PAPER.weight_norm_repeat
    assert exp.Setup(lams=[0.001, 0.1]).lams == (0.001, 0.1)
    for bad, name in (({"seeds": 1}, "seeds"), ({"steplr_gammas": [0.0]}, "steplr_gammas"),
                      ({"ns": [0]}, "ns"), ({"readout": "sqrt"}, "readout"), ({"fig8_seeds": 21}, "fig8_seeds")):
        with pytest.raises(ValueError, match=name):
            exp.Setup(**bad)


def test_loss_rise_counts_only_increases():
    t = train(TwoLayerConfig(**TINY, optimizer="adam", eta=1.0))
    k = 2  # ceil(3 / 2)
    expected = sum(np.clip(np.diff(t.metric(f"{m}@d")[:k + 1]), 0, None).sum() / t.metric(f"{m}@d")[0]
                   for m in ("train_loss", "test_loss"))
    assert exp.loss_rise(t) == pytest.approx(expected)


# ----------------------------------------------------------------------------- readout panel and overlaps


def test_readout_curve_reuses_weights(cache_tmp):
    f8 = exp.fig8_configs(ns=[64], rhos=[0.3], steplr_gammas=[0.5], n=64, d=16, h=24, n_test=32, steps=3, lam=0.01)
    base = f8.base
    traj = train(base)
    curves = exp.readout_curves(base, [0.01, 0.3])
    # same lambda as the training run: the losses train() recorded come back
    np.testing.assert_allclose(curves[0.01]["train_loss"], traj.train_loss, rtol=1e-10)
    np.testing.assert_allclose(curves[0.01]["test_loss"], traj.test_loss, rtol=1e-10)
    # another lambda: htlib.two_layer's own readout, and an independent least-squares ridge solve
    data = make_data(base)
    W3 = torch.as_tensor(traj.weights[3])
    ref = readout_metrics(W3, data, 0.3, "d")
    assert curves[0.3]["train_loss"][3] == pytest.approx(ref["train_loss"], rel=1e-10)
    assert curves[0.3]["test_loss"][3] == pytest.approx(ref["test_loss"], rel=1e-10)
    W = W3.to(torch.float64)
    Z = (torch.tanh(data.X_probe.double() @ W.T / np.sqrt(base.d)) / np.sqrt(base.h)).numpy()  # float64 features
    y = data.y_probe.double().numpy()
    n, h = Z.shape
    A = np.vstack([Z, np.sqrt(0.3 * n / h) * np.eye(h)])
    a = np.linalg.lstsq(A, np.concatenate([y, np.zeros(h)]), rcond=None)[0]
    assert curves[0.3]["train_loss@sqrt_d"][3] == pytest.approx(np.mean((Z @ a - y) ** 2), rel=1e-5)
    Zd = (torch.tanh(data.X_probe.double() @ W.T / base.d) / np.sqrt(base.h)).numpy()  # the figures' features
    A = np.vstack([Zd, np.sqrt(0.3 * n / h) * np.eye(h)])
    a = np.linalg.lstsq(A, np.concatenate([y, np.zeros(h)]), rcond=None)[0]
    assert curves[0.3]["train_loss@d"][3] == pytest.approx(np.mean((Zd @ a - y) ** 2), rel=1e-5)
    assert base.readout_scale == "d"
    np.testing.assert_array_equal(curves[0.3]["train_loss"], curves[0.3]["train_loss@d"])
    with pytest.raises(ValueError, match="keep_weights"):
        exp.ReadoutConfig(f8.by_steplr_gamma[0.5], (0.1,))
    with pytest.raises(ValueError, match="lams"):
        exp.ReadoutConfig(base, (-1.0,))


def test_update_overlap_outlier_against_numpy():
    t = train(TwoLayerConfig(**TINY, optimizer="adam", eta=1.0, keep_weights=(2, 3)))
    u, v = exp.update_overlap_outlier(t)
    W, M = t.weights[3].astype(np.float64), (t.weights[3] - t.weights[2]).astype(np.float64)
    Uw, _, Vtw = np.linalg.svd(W, full_matrices=False)
    Um, _, Vtm = np.linalg.svd(M, full_matrices=False)
    assert u == pytest.approx(np.max(np.sum(Uw * Um, axis=0) ** 2), rel=1e-6)
    assert v == pytest.approx(np.max(np.sum(Vtw * Vtm, axis=1) ** 2), rel=1e-6)
    with pytest.raises(ValueError, match="keep"):
        exp.update_overlap_outlier(t, 0)


def test_chapter_runs_and_claims_on_a_tiny_setting(cache_tmp):
    setup = exp.Setup(n=64, d=16, h=24, n_test=32, steps=3, etas=[0.1, 1.0, 10.0, 2000.0], seeds=2, fig8_seeds=2,
                      ns=[32, 64], lams=[0.1, 0.01, 0.001], rhos=[0.3, 0.7], steplr_gammas=[0.2, 0.4, 0.6, 0.8],
                      n_boot=200, executor="serial")
    fig7, fig8 = exp.run_fig7(setup), exp.run_fig8(setup)
    assert fig7.grid_wn is None and fig8.seeds == 2
    assert set(fig8.panel("wn_by_steplr_gamma")) == {0.2, 0.4, 0.6, 0.8, 1.0}
    records = exp.claims(fig7, fig8, setup)
    keys = {c.key for c in records if c.key}
    assert all(c.variant_of in keys for c in records if c.variant_of)
    by_key = {c.key: c for c in records}
    assert by_key["gd_contrast_wn"].verdict == "not tested" and "weight_norm_repeat" in by_key["gd_contrast_wn"].cause
    assert by_key["sample_hill"].verdict == "not tested"  # needs n = 8000
    # the overlaps do not depend on the readout, but both records judge them (a straddle is inconclusive in both)
    assert "O_U ratio" in by_key["noise"].measured and "O_U ratio" in by_key["noise_sqrt_d"].measured
    table = exp.fig8_table(fig8)
    assert {"n = 32", "WN, gamma = 1", "lambda = 0.001"} <= set(table["panel"])
    numbers = {**exp.setting_numbers(setup), **exp.fig7_numbers(fig7, setup), **exp.fig8_numbers(fig8, setup)}
    assert all(isinstance(v, str) and v for v in numbers.values())


def test_odd_student_floor_against_monte_carlo():
    z = np.random.default_rng(0).normal(size=2_000_000)
    mc = np.mean((np.logaddexp(0, z) - z / 2) ** 2) + 0.09
    assert exp.odd_student_floor(0.3) == pytest.approx(mc, rel=2e-3)


# ----------------------------------------------------------------------------- executors


def test_run_sweep_on_dask_local_cluster_matches_serial_and_resumes(cache_tmp):
    distributed = pytest.importorskip("distributed")
    cfgs = exp.fig7_configs(etas=[0.5, 2.0], optimizers=["gd", "adam"], seeds=1, **TINY)
    serial = run_sweep(train, cfgs, use_cache=False, progress=False)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        remote = run_sweep(train, cfgs, executor=client.get_executor(), progress=False)
    for a, b in zip(serial, remote):
        assert a.config == b.config
        np.testing.assert_allclose(a.test_loss, b.test_loss, rtol=1e-6)
        np.testing.assert_allclose(a.alpha_ks, b.alpha_ks, rtol=1e-6)
    # every result is now cached: a rerun never submits anything
    cached = run_sweep(train, cfgs, executor=_NoExecutor(), progress=False)
    assert [c.test_loss[-1] for c in cached] == [r.test_loss[-1] for r in remote]


class _NoExecutor(cf.Executor):
    def submit(self, *args, **kwargs):  # pragma: no cover - must never be called
        raise AssertionError("a cached config was recomputed")


def test_a_part_missing_only_the_books_level_is_inconclusive():
    parts = exp._Parts()
    parts.add("train drop", exp.LOSS_IMPROVES, 0.15, (0.11, 0.2))
    parts.add("test drop", exp.LOSS_IMPROVES, 0.039, (0.0389, 0.0391), book_level=True)
    assert parts.verdict == "inconclusive" and "misses only the book's level" in parts.cause("t")
    strict = exp._Parts()
    strict.add("test drop", exp.LOSS_IMPROVES, 0.039, (0.0389, 0.0391))
    assert strict.verdict == "disagrees" and "needs >= 0.05" in strict.cause("t")
    band = exp._Parts()
    band.add("ratio", exp.OVERLAP_RATIO, 0.7, (0.6, 0.8))
    assert "straddles in [0.35, 0.65]" in band.cause("t")

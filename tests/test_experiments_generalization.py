"""Tests of htlib.experiments.generalization: the Fig. 7/8 configs, the grid of final metrics, the claim
checks and the ridge-constant panel of the generalization chapter."""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.stats
import torch

from htlib import generalization as gen
from htlib.experiments import generalization as exp
from htlib.claims import judge
from htlib.records import claim_glue

sys.path.insert(0, str(Path(__file__).resolve().parent))
import perturb  # noqa: E402
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
    values["sv_median"] = 10.0 ** le  # the scale grows with eta
    values["alpha_hill_wo_top"] = values["alpha_hill"] * 1.01
    for m in ("train_loss", "test_loss", "kta"):
        values[f"{m}@d"] = values[m]
        values[f"{m}@sqrt_d"] = values[m][:, ::-1]  # the other readout: reversed in eta
    return RunGrid(("gd", "adam"), etas, np.arange(seeds), values, np.zeros(shape, bool))


def _judged(grid: RunGrid, setup=None) -> dict:
    """The Fig. 7 records of ``grid`` through the chapter's table and the one judge."""
    setup = setup or exp.Setup(n_boot=300, executor="serial")
    measured = exp.measure_fig7(exp.Fig7Result(grid=grid, grid_wn=None), setup)
    return {k: judge(exp.TABLE[k], m) for k, m in measured.items()}


def test_correlation_table_and_claims_on_synthetic_grid():
    grid = _synthetic_grid()
    table = gen.correlation_table(grid, n_boot=300)
    assert set(table) == {(o, m) for o in ("gd", "adam") for m in ("alpha_hill", "alpha_ks", "alpha_weighted", "kta")}
    assert table[("gd", "kta")].rho < -0.9 and table[("adam", "alpha_ks")].rho > 0.9
    # GD: eta >= 1000 against the rest: loss down, KTA up, alphas down -> every part agrees
    c = _judged(grid)
    assert c["gd_contrast"].verdict == "agrees" and c["gd_contrast"].setting == "paper"
    assert c["hill_flat"].verdict == "agrees" and c["adam_corr"].verdict == "agrees"
    # the benign band: Hill and the test loss both lower at eta = 1 than at eta <= 0.1
    assert c["benign"].verdict == "agrees"
    flipped = dataclasses.replace(grid, values={**grid.values, "alpha_ks": -grid.values["alpha_ks"]})
    assert _judged(flipped)["hill_flat"].verdict == "partly"  # Hill flat, KS rising
    # the readout picks the convention: reversed losses flip the verdict; the record is a variant, never counted
    v = c["gd_contrast_sqrt_d"]
    assert v.verdict != "agrees" and v.variant_of == "gd_contrast" and v.kind == "variant" and not v.counted
    with pytest.raises(ValueError, match="no learning rate"):
        gen.correlation_table(grid, eta_min=1e6)


def test_gd_contrast_reads_each_seeds_contrast():
    grid = _synthetic_grid(seeds=3)
    m = exp.measure_fig7(exp.Fig7Result(grid=grid, grid_wn=None), exp.Setup(executor="serial"))["gd_contrast"]
    big = grid.etas >= 1000
    ks = grid.get("alpha_ks", "gd")
    np.testing.assert_allclose(m.parts["gd_contrast-ks"].values, ks[big].mean(0) - ks[~big].mean(0))
    rho = exp.within_seed_rho(grid.get("alpha_ks", "adam"), grid.get("test_loss@d", "adam"))
    assert rho.shape == (3,) and np.all(rho > 0.9)


def test_two_seeds_decide_nothing_and_three_do():
    """A row on 2 seeds reads "inconclusive" whatever its interval; the same contrasts on 3 seeds are judged."""
    assert _judged(_synthetic_grid(seeds=2))["gd_contrast"].verdict == "inconclusive"
    assert _judged(_synthetic_grid(seeds=3))["gd_contrast"].verdict == "agrees"


def test_benign_band_is_judged_on_the_contrast_of_eta_1_against_the_smaller_etas():
    grid = _synthetic_grid()
    # eta = 1 with a higher test loss than the smaller etas, in every seed: the loss part fails, Hill's holds
    loss = grid.values["test_loss@d"].copy()
    loss[:, grid.etas == 1.0] += 0.5
    worse = dataclasses.replace(grid, values={**grid.values, "test_loss@d": loss})
    m = exp.measure_fig7(exp.Fig7Result(grid=worse, grid_wn=None), exp.Setup(executor="serial"))["benign"]
    np.testing.assert_allclose(m.parts["benign-test"].values,
                               exp.benign_contrast(worse.get("test_loss@d", "adam"), worse.etas))
    assert judge(exp.TABLE["benign"], m).verdict == "partly"
    # a grid without eta = 1 cannot test the band
    narrow = dataclasses.replace(grid, etas=grid.etas * 3)
    assert _judged(narrow)["benign"].verdict == "not tested"


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


def test_a_disagreement_at_a_reduced_setting_becomes_inconclusive():
    grid = _synthetic_grid()
    flipped = dataclasses.replace(grid, values={**grid.values, "kta@d": -grid.values["kta@d"],
                                                "alpha_hill": -grid.values["alpha_hill"],
                                                "alpha_ks": -grid.values["alpha_ks"]})
    paper = _judged(flipped)["adam_corr"]
    reduced = _judged(flipped, exp.Setup(n_boot=300, seeds=3))["adam_corr"]
    assert paper.verdict == "disagrees"
    assert reduced.setting.startswith("seeds = 3") and reduced.verdict == "inconclusive"
    # the written-readout variant is another convention, not a reduction: its failing parts stand
    variant = _judged(grid)["adam_corr_sqrt_d"]
    assert variant.verdict in ("disagrees", "partly") and not variant.counted


def test_the_table_keeps_every_record_key_and_each_is_measured():
    keys = ["gd_contrast", "adam_corr", "benign", "gd_contrast_sqrt_d", "adam_corr_sqrt_d", "benign_sqrt_d",
            "hill_flat", "hill_spike", "gd_contrast_wn", "sample_hill", "sample_loss", "ridge", "ridge_first", "noise",
            "noise_esd",
            "steplr",
            "sample_loss_sqrt_d", "ridge_sqrt_d", "noise_sqrt_d", "steplr_sqrt_d", "wn_schedules"]
    assert list(exp.TABLE) == keys
    for k, spec in exp.TABLE.items():
        assert (spec.kind == "variant") == (k.endswith("_sqrt_d") or k.endswith("_first"))
        assert spec.variant_of in ("", k.removesuffix("_sqrt_d").removesuffix("_first"))
    # the ridge row's first measurement (the paper's 200 test points) stays beside the revised one, at its levels
    first, row = exp.TABLE["ridge_first"], exp.TABLE["ridge"]
    assert "first" in first.setting and "ridge_first" in row.revised_because
    assert [(p.op, p.level) for p in first.parts] == [(p.op, p.level) for p in row.parts]


def test_setup_validates():
    assert exp.Setup() != exp.PAPER and exp.PAPER.weight_norm_repeat
    assert exp.Setup(lams=[0.001, 0.1]).lams == (0.001, 0.1)
    for bad, name in (({"seeds": 1}, "seeds"), ({"steplr_gammas": [0.0]}, "steplr_gammas"),
                      ({"ns": [0]}, "ns"), ({"readout": "sqrt"}, "readout"), ({"fig8_seeds": 21}, "fig8_seeds"),
                      ({"fig8a_seeds": 0}, "fig8a_seeds")):
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
                      fig8a_seeds=3, fig8cd_seeds=3, ns=[32, 64], lams=[0.1, 0.01, 0.001], rhos=[0.3, 0.7], steplr_gammas=[0.2, 0.4, 0.6, 0.8],
                      n_boot=200, executor="serial")
    fig7, fig8 = exp.run_fig7(setup), exp.run_fig8(setup)
    assert fig7.grid_wn is None and fig8.seeds == 2
    assert set(fig8.panel("wn_by_steplr_gamma")) == {0.2, 0.4, 0.6, 0.8, 1.0}
    records, measured = exp.claims(fig7, fig8, setup), exp.measure(fig7, fig8, setup)
    keys = {c.key for c in records if c.key}
    assert all(c.variant_of in keys for c in records if c.variant_of)
    by_key = {c.key: c for c in records}
    assert by_key["gd_contrast_wn"].verdict == "not tested"  # weight_norm_repeat is off
    assert by_key["sample_hill"].verdict == "not tested"  # needs n = 8000
    # the overlaps do not depend on the readout: both records read the same per-seed ratios
    ou = measured["noise"].parts["noise-ou"].values
    assert len(ou) == 3 and ou == measured["noise_sqrt_d"].parts["noise_sqrt_d-ou"].values  # fig8cd_seeds
    # the sample-size losses read fig8a_seeds seeds, the noise and StepLR rows fig8cd_seeds, the others fig8_seeds
    ran = [m for m in measured["sample_loss"].parts.values() if m.ran]
    assert len(ran) == 2 and all(len(m.values) == 3 for m in ran)  # the sizes 500-4000 are not in this setting
    assert len(measured["noise_esd"].parts["noise_esd-hill"].values) == 3
    assert len(measured["steplr"].values) == 3
    assert len(measured["hill_spike"].parts["hill_spike-scale"].values) == 2
    # two Fig. 8 seeds decide nothing
    assert {by_key[k].verdict for k in ("ridge", "wn_schedules")} <= {"inconclusive", "not tested"}
    # every verdict holds under round-off perturbations of what the runs measured (their configs kept)
    assert perturb.stable(lambda *res: [c.verdict for c in exp.claims(*res, setup)], fig7, fig8,
                          keep=("config", "configs", "sample", "extra", "etas", "seeds")) == [c.verdict for c in records]
    assert claim_glue(records, "gen_")["gen_steplr_level"] == "0"
    numbers = {**exp.setting_numbers(setup), **exp.fig7_numbers(fig7, setup), **exp.fig8_numbers(fig8, setup)}
    assert all(isinstance(v, str) and v for v in numbers.values())


def test_fig8a_extra_seeds_record_the_ends_and_reuse_fig8s_own_runs(cache_tmp, monkeypatch):
    setup = exp.Setup(n=64, d=16, h=24, n_test=32, steps=3, fig8_seeds=1, fig8a_seeds=2, fig8a_n_test=32,
                      fig8cd_seeds=1, ns=[32, 64], rhos=[0.3], steplr_gammas=[0.5], lams=[0.01], executor="serial")
    trained = []
    monkeypatch.setattr(exp.compute, "train", lambda c: trained.append(c) or train(c))
    res = exp.run_fig8(setup)
    panel = res.sample_panel()
    assert set(panel) == {32, 64} and all(len(ts) == 2 for ts in panel.values())
    extra = [c for c in trained if c.seed == 1]
    # seed 1 adds only the two sizes, each recording step 0 and the last step, no ESD
    assert sorted(c.n for c in extra) == [32, 64]
    assert all(c.recorded_steps() == [0, 3] and not c.record_esd and c.keep_weights == () for c in extra)
    # seed 0's losses are read off Fig. 8's own runs: the same numbers
    for n in (32, 64):
        full = res.panel("by_n")[n][0]
        np.testing.assert_array_equal(panel[n][0].metric("test_loss@d"), full.metric("test_loss@d")[[0, -1]])


def test_fig7_metrics_median_singular_value_and_hill_without_the_top():
    cfg = dataclasses.replace(exp.fig7_configs(etas=[5.0], optimizers=["adam"], seeds=1, **TINY)[0],
                              keep_weights=(TINY["steps"],))
    t = train(cfg)
    m = exp.fig7_metrics(t)
    s = np.linalg.svd(t.weights[cfg.steps].astype(np.float64), compute_uv=False)
    assert m["sv_median"] == pytest.approx(np.median(s), rel=1e-5)
    e = np.sort(s ** 2)
    i = e.size // 2  # the threshold of the whole spectrum, kept; only the top term leaves the sum
    assert m["alpha_hill_wo_top"] == pytest.approx(1 + (e.size - i - 1) / np.log(e[i:-1] / e[i]).sum(), rel=1e-4)
    assert m["alpha_hill"] == pytest.approx(1 + (e.size - i) / np.log(e[i:] / e[i]).sum(), rel=1e-4)
    assert m["alpha_hill_wo_top"] != pytest.approx(m["alpha_hill"], rel=1e-9)


def test_hill_spike_reads_the_scale_spread_and_the_spike_influence():
    grid = _synthetic_grid(seeds=3)
    m = exp.measure_fig7(exp.Fig7Result(grid=grid, grid_wn=None), exp.Setup(executor="serial"))["hill_spike"]
    np.testing.assert_allclose(m.parts["hill_spike-scale"].values, 100.0)  # 10^2 over 10^0
    np.testing.assert_allclose(m.parts["hill_spike-spike"].values, 0.01)
    assert judge(exp.TABLE["hill_spike"], m).verdict == "partly"  # a 1% change is not a large influence
    grid.values["alpha_hill_wo_top"] = grid.values["alpha_hill"] * 1.2
    m = exp.measure_fig7(exp.Fig7Result(grid=grid, grid_wn=None), exp.Setup(executor="serial"))["hill_spike"]
    assert judge(exp.TABLE["hill_spike"], m).verdict == "agrees"


def test_esd_spread_sees_a_moved_esd_and_ignores_an_unmoved_one():
    from types import SimpleNamespace as NS
    rng = np.random.default_rng(0)
    eigs = np.sort(rng.chisquare(3, size=400))
    def run(e, hill=2.0):
        return NS(diverged_at=None, alpha_hill=np.array([hill]), esd=(e,))
    assert exp.esd_spread([run(eigs), run(eigs.copy())]) == (0.0, 0.0)
    top_moved = eigs.copy()
    top_moved[-1] *= 2  # only lambda_max moves
    hill, esd = exp.esd_spread([run(eigs), run(top_moved)])
    assert hill == 0.0 and esd == pytest.approx(1 / 1.5)
    assert np.isnan(exp.esd_spread([run(eigs), NS(diverged_at=2, alpha_hill=None, esd=None)])[1])


def test_odd_student_floor_against_monte_carlo():
    z = np.random.default_rng(0).normal(size=2_000_000)
    mc = np.mean((np.logaddexp(0, z) - z / 2) ** 2) + 0.09
    assert exp.odd_student_floor(0.3) == pytest.approx(mc, rel=2e-3)


# ----------------------------------------------------------------------------- executors


def test_run_sweep_on_dask_local_cluster_matches_serial_and_resumes(cache_tmp):
    import distributed
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



def test_fig8a_reads_a_larger_test_set_on_the_same_training(cache_tmp):
    """The train set has its own random stream: a larger test set leaves the training (train loss, ESD) as it is
    and only re-estimates the test loss."""
    setup = exp.Setup(n=64, d=16, h=24, n_test=32, steps=3, fig8_seeds=1, fig8a_seeds=1, fig8a_n_test=512,
                      fig8cd_seeds=1, ns=[64], rhos=[0.3], steplr_gammas=[0.5], lams=[0.01], executor="serial")
    res = exp.run_fig8(setup)
    big, small = res.sample_panel()[64][0], res.panel("by_n")[64][0]
    assert big.config.n_test == 512 and small.config.n_test == 32
    np.testing.assert_allclose(big.metric("train_loss@d"), small.metric("train_loss@d")[[0, -1]], rtol=1e-6)
    assert not np.allclose(big.metric("test_loss@d"), small.metric("test_loss@d")[[0, -1]])


def test_fig8cd_extra_seeds_run_only_the_noise_and_steplr_panels(cache_tmp, monkeypatch):
    setup = exp.Setup(n=64, d=16, h=24, n_test=32, steps=3, fig8_seeds=1, fig8a_seeds=1, fig8a_n_test=32,
                      fig8cd_seeds=3, ns=[64], rhos=[0.3, 0.7], steplr_gammas=[0.2, 0.8], lams=[0.01],
                      executor="serial")
    trained = []
    monkeypatch.setattr(exp.compute, "train", lambda c: trained.append(c) or train(c))
    res = exp.run_fig8(setup)
    for name, levels in (("by_rho", {0.3, 0.7}), ("by_steplr_gamma", {0.2, 0.8})):
        panel = res.panel_cd(name)
        assert set(panel) == levels and all(len(ts) == 3 for ts in panel.values())
        assert [t.config.seed for t in panel[min(levels)]] == [0, 1, 2]
        assert all(len(ts) == 1 for ts in res.panel(name).values())  # the figure's panels keep fig8_seeds
    extra = [c for c in trained if c.seed > 0]
    assert len(extra) == 2 * 4 and not any(c.weight_norm for c in extra)  # 2 noise levels + 2 decays, 2 seeds
    # the extra label-noise runs record the ends only, and read there what a run recording every step reads
    noise = [c for c in extra if c.steplr_gamma == 1.0]
    assert len(noise) == 4 and all(c.recorded_steps() == [0, 3] and c.keep_weights == (2, 3) for c in noise)
    assert all(c.recorded_steps() == [0, 1, 2, 3] for c in extra if c.steplr_gamma < 1.0)
    full = train(dataclasses.replace(noise[0], record_every=1))
    ends = res.panel_cd("by_rho")[noise[0].rho_e][noise[0].seed]
    for m in ("train_loss@d", "test_loss@sqrt_d", "alpha_hill"):
        assert full.metric(m)[-1] == ends.metric(m)[-1] and full.metric(m)[0] == ends.metric(m)[0]
    np.testing.assert_array_equal(full.esd[-1], ends.esd[-1])
    np.testing.assert_array_equal(full.update(2), ends.update(2))
    with pytest.raises(ValueError, match="name must be one of"):
        res.panel_cd("by_n")


# ----------------------------------------------------------------------------- more seeds, larger test sets


def test_ridge_readout_reads_the_stored_weights_on_a_larger_test_set(cache_tmp):
    """The ridge readings of extra.py against an independent least-squares ridge solve on the same W_T and a
    test set drawn with n_test = 500: the probe (train) loss is Fig. 8(b)'s, the test loss the larger set's."""
    setup = exp.Setup(**{k: v for k, v in TINY.items()}, fig8_seeds=1, lams=[0.1, 0.01])
    assert exp.extra.ridge_config(setup, 0) == exp.fig8_configs(eta=1.0, seed=0, **setup.shape).base
    lean = exp.extra.ridge_config(setup, 2)
    assert lean.keep_weights == (3,) and lean.recorded_steps() == [3] and not lean.record_esd
    out = exp.extra.ridge_readout(exp.extra.RidgeReadout(lean, (0.1, 0.01), 500))
    W = torch.as_tensor(train(lean).weights[3]).to(torch.float64)
    big = make_data(dataclasses.replace(lean, n_test=500))
    assert torch.equal(big.X_probe, make_data(lean).X_probe) and big.X_test.shape[0] == 500
    y, yt = big.y_probe.double().numpy(), big.y_test.double().numpy()
    for scale, s in (("d", lean.d), ("sqrt_d", np.sqrt(lean.d))):
        Z = (torch.tanh(big.X_probe.double() @ W.T / s) / np.sqrt(lean.h)).numpy()
        Zt = (torch.tanh(big.X_test.double() @ W.T / s) / np.sqrt(lean.h)).numpy()
        n, h = Z.shape
        for lam in (0.1, 0.01):
            A = np.vstack([Z, np.sqrt(lam * n / h) * np.eye(h)])
            a = np.linalg.lstsq(A, np.concatenate([y, np.zeros(h)]), rcond=None)[0]
            assert out[scale][lam][0] == pytest.approx(np.mean((Z @ a - y) ** 2), rel=1e-5)
            assert out[scale][lam][1] == pytest.approx(np.mean((Zt @ a - yt) ** 2), rel=1e-5)
    # the base run (every W_t kept) gives Fig. 8(b)'s train losses at its last step
    curves = exp.readout_curves(exp.extra.ridge_config(setup, 0), [0.1, 0.01])
    base = exp.extra.ridge_readout(exp.extra.RidgeReadout(exp.extra.ridge_config(setup, 0), (0.1, 0.01), 500))
    assert base["d"][0.01][0] == pytest.approx(curves[0.01]["train_loss@d"][-1], rel=1e-12)


def test_noise_outliers_match_the_chapters_reading_and_reuse_its_runs(cache_tmp):
    setup = exp.Setup(**{k: v for k, v in TINY.items()}, fig8_seeds=1)
    own, extra = exp.extra.noise_config(setup, 0, 0.7), exp.extra.noise_config(setup, 3, 0.7)
    assert own == exp.fig8_configs(eta=1.0, seed=0, **setup.shape).by_rho[0.7]
    assert extra.recorded_steps() == [0, 3] and extra.keep_weights == (2, 3)
    assert exp.extra.noise_config(setup, 0, 0.3) == exp.fig8_configs(eta=1.0, seed=0, **setup.shape).base
    for c in (own, extra, exp.extra.noise_config(setup, 0, 0.3)):
        np.testing.assert_array_equal(exp.extra.noise_outliers(c), exp.update_overlap_outlier(train(c)))
    more = exp.run_more_seeds(setup.replace(executor="serial"), ridge_seeds=2, noise_seeds=3, n_test=100)
    assert more.noise.shape == (3, 2, 2) and more.ridge_seeds == (0, 1) and more.n_test == 100
    np.testing.assert_array_equal(more.noise[2, 1], exp.extra.noise_outliers(exp.extra.noise_config(setup, 2, 0.7)))
    texts = exp.more_seeds_texts(more, setup)
    ratio = more.noise[:, 0, 0] / more.noise[:, 1, 0]
    assert texts["more_ou"].startswith(f"{ratio.mean():.3g} [") and texts["more_noise_seeds"] == "3 (0-2)"
    tr = np.array([r["d"][0.001][0] - r["d"][0.01][0] for r in more.ridge])
    assert texts["more_train_1e-3"].startswith(f"{tr.mean():.3g} [")

"""Tests of htlib.experiments.one_step: the Setup, the first-step norms, the claims table and its measurements
(judged by htlib.claims.judge), the scaling fit and the chapter's claims on small real runs."""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from htlib import spectra
from htlib.claims import judge, judge_table
from htlib.records import Claim
from htlib.experiments import one_step as ch
from htlib.two_layer import RunGrid, TwoLayerConfig, full_batch_gradient, init_weights, make_data

sys.path.insert(0, str(Path(__file__).resolve().parent))
import perturb  # noqa: E402

TINY = dict(n=64, d=20, h=30, n_test=16, etas=(0.1, 1.0, 2000.0), seeds=2, fig2_gd_etas=(2000.0,),
            fig2_adam_etas=(0.1, 10.0), scaling_h=12, scaling_ds=(16, 32, 64), scaling_hs=(8, 12, 24), scaling_seeds=2,
            executor="serial")


@pytest.fixture
def cache_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("HTLIB_CACHE_DIR", str(tmp_path / "cache"))


def test_first_step_norms_against_numpy():
    cfg = TwoLayerConfig(n=64, d=20, h=30, n_test=16, dtype="float64")
    r = ch.first_step_norms(cfg)
    data = make_data(cfg)
    W, a = init_weights(cfg)
    G = full_batch_gradient(W, a, data.X_train, data.y_train).numpy()
    # Adam's first step: m = (1-b1) G, v = (1-b2) G^2; with bias correction G / (|G| + eps), without it
    # (1-b1) G / (sqrt(1-b2) |G| + eps)
    bc = G / (np.abs(G) + 1e-8)
    nobc = 0.1 * G / (math.sqrt(0.001) * np.abs(G) + 1e-8)
    assert r.gd_spec == pytest.approx(np.linalg.norm(G, 2), rel=1e-10)
    assert r.gd_frob == pytest.approx(np.linalg.norm(G), rel=1e-12)
    assert r.adam_frob == pytest.approx(np.linalg.norm(bc), rel=1e-10)
    assert r.adam_nobc_spec == pytest.approx(np.linalg.norm(nobc, 2), rel=1e-8)
    assert r.sign_frob == pytest.approx(math.sqrt(G.size), rel=1e-12)  # no exact zeros in G
    assert r.dev_bc == pytest.approx(np.max(np.abs(bc - np.sign(G))), abs=1e-12)
    assert r.w0_spec == pytest.approx(np.linalg.norm(W.numpy(), 2), rel=1e-10)
    assert ch.SIGN_FACTOR == pytest.approx(0.1 / math.sqrt(0.001))


def test_setup_validates_and_reads_a_namespace():
    s = ch.Setup.from_namespace(_cell_namespace())
    assert s == ch.PAPER and s.deviations(ch.GRID_FIELDS) == "paper"
    assert ch.Setup(seeds=3).deviations(ch.GRID_FIELDS) == "seeds = 3 (paper: 5)"
    assert ch.Setup(seeds=9).deviations(ch.GRID_FIELDS) == "paper"  # more seeds than the paper's
    assert ch.Setup(etas=[3000, 0.1]).etas == (3000.0, 0.1)
    for bad, name in (({"seeds": 1}, "seeds"), ({"etas": [1.0, -1.0]}, "etas"), ({"readout": "x"}, "readout"),
                      ({"scaling_ds": [16, 32]}, "scaling_ds"), ({"executor": "threads"}, "executor")):
        with pytest.raises(ValueError, match=name):
            ch.Setup(**bad)
    with pytest.raises(ValueError, match="does not define"):
        ch.Setup.from_namespace({"n": 3})
    assert ch.Setup.from_namespace(_cell_namespace()) == ch.Setup()


def _cell_namespace() -> dict:
    ns: dict = {}
    exec(ch.Setup.parameters_cell(), ns)
    return ns


def test_scaling_configs_fix_h_and_keep_n_over_d():
    cfgs = ch.scaling_configs(ch.Setup(**TINY))
    assert {c.h for c in cfgs} == {12} and [(c.d, c.n, c.seed) for c in cfgs[:3]] == [(16, 51, 0), (16, 51, 1), (32, 102, 0)]


def test_mp_edge_is_sqrt_h_plus_sqrt_d_squared():
    assert ch.mp_edge(1500, 1000) == pytest.approx((math.sqrt(1500) + math.sqrt(1000)) ** 2)


def test_fit_exponent_recovers_a_power_and_its_interval_widens_with_noise():
    d = np.repeat([100.0, 200.0, 400.0, 800.0], 3)
    rng = np.random.default_rng(0)
    exact = ch.fit_exponent(d, 2.0 * d ** 0.3)
    assert exact.slope == pytest.approx(0.3, abs=1e-12) and exact.high - exact.low < 1e-9
    noisy = ch.fit_exponent(d, 2.0 * d ** 0.3 * np.exp(0.2 * rng.normal(size=d.size)))
    assert noisy.low < 0.3 < noisy.high and noisy.high - noisy.low > 0.05
    # an independent reference: numpy's least squares on the logs
    assert noisy.slope == pytest.approx(np.polyfit(np.log(d), np.log(2.0 * d ** 0.3 * np.exp(
        0.2 * np.random.default_rng(0).normal(size=d.size))), 1)[0], rel=1e-10)


_METRICS = ("lambda_max", "sim", "kta@d", "kta@sqrt_d", "train_loss@d", "train_loss@sqrt_d", "test_loss@d",
            "test_loss@sqrt_d")


def _fig3(values: dict, etas=(0.01, 0.1, 1.0, 2000.0), seeds=3) -> ch.Fig3Result:
    """A Fig3Result on a synthetic grid: ``values[metric]`` per eta (broadcast over seeds and optimizers), or of
    shape (optimizers, etas, seeds); every metric not given is 1 at every eta (sim: 0), as at W0."""
    shape = (2, len(etas), seeds)
    values = {m: [0.0 if m == "sim" else 1.0] * len(etas) for m in _METRICS} | values
    full = {m: np.broadcast_to(np.asarray(v, float).reshape(1, -1, 1) if np.ndim(v) == 1 else v, shape).copy()
            for m, v in values.items()}
    grid = RunGrid(("gd", "adam"), np.array(etas), np.arange(seeds), full, np.zeros(shape, bool))
    init = {m: 0.0 if m == "sim" else 1.0 for m in _METRICS}

    class _Init:  # a W0 run: metric(m)[0] is the initial value
        def metric(self, m):
            return np.array([init[m]])

    norms = ch.FirstStepNorms(*([1.0] * 13))
    return ch.Fig3Result(grid=grid, init=tuple(_Init() for _ in range(seeds)), edge=1.0, norms=norms)


def _judged(res: ch.Fig3Result, setup: ch.Setup = ch.PAPER) -> dict[str, Claim]:
    fig3_keys = [k for k, s in ch.TABLE.items() if s.section == "one-step-fig3"]
    measured = ch.measure_fig3(res, setup)
    assert sorted(measured) == sorted(fig3_keys)  # one measurement per row of the table, no more
    return {c.key: c for c in judge_table([ch.TABLE[k] for k in fig3_keys], measured)}


def test_table_has_each_level_once_per_rule_and_keeps_the_kta_revision():
    levels = {}
    for rule in ch.RULE_NAMES:
        for key, spec in ch.TABLE.items():
            if key.startswith(f"{rule}_") and not key.startswith("kta_rev") and not key.endswith("_onset") and "_gen" not in key:
                for part in spec.parts or (spec,):
                    levels.setdefault(rule, set()).add(part.level)
    assert levels == {"spike": {1.1}, "sim": {0.1}, "kta": {1.1}, "loss": {0.05}}
    assert ch.rule_spec("kta").level == ch.rule_spec("spike").level
    # the KTA level lowered after the runs: every row reading it keeps the earlier level on one part
    kta = [k for k in ch.TABLE if k.startswith(("kta_gd", "kta_adam", "sweet")) and not k.endswith("_onset")]
    assert len(kta) == 8
    for key in kta:
        revised = [p for p in ch.TABLE[key].parts if p.revised_from is not None]
        assert [(p.revised_from, p.level) for p in revised] == [(1.5, 1.1)] and revised[0].revised_because
    assert all(ch.TABLE[k].kind == "check" and ch.TABLE[k].why for k in ("thm_f", "thm_f_nobc"))
    assert all(p.kind == "variant" for k in ("kta_gd_sqrt_d", "sweet2_sqrt_d") for p in ch.TABLE[k].parts)
    # no level lives in the module: every one is read from the table
    assert not any(hasattr(ch.reading, n) for n in ("RISE", "LOSS_DROP", "RULES", "KTA_FIRST_LEVEL", "EXPONENT"))


def test_threshold_claims_read_the_papers_eta_and_the_grid_eta_below():
    res = _fig3({"lambda_max": [1.0, 1.0, 1.0, 1.6], "sim": [0.0, 0.0, 0.0, 0.5], "kta@d": [1, 1, 1, 1.2],
                 "train_loss@d": [1, 1, 1, 0.9], "test_loss@d": [1, 1, 1, 0.97]})
    rec = _judged(res)
    assert rec["spike_gd"].verdict == "agrees" and rec["sim_gd"].verdict == "agrees"
    # FB-Adam's rows read eta = 0.1 and the grid eta below it, 0.01: no spike there, so the "at" part fails
    assert rec["spike_adam"].verdict == "partly"
    # 1.2 > 1.1: agrees, at the level lowered after the runs; the record keeps the level fixed before them
    assert rec["kta_gd"].verdict == "agrees" and rec["kta_gd"].revised_from == 1.5
    assert rec["kta_adam"].verdict == "partly"  # nothing rises at 0.1: the "at" part fails
    # a 3% drop at 2000 misses the 5% rule while nothing moves below: one part holds, one fails
    assert rec["loss_gd"].verdict == "partly"
    assert rec["loss_gd_sqrt_d"].kind == "variant" and rec["loss_gd_sqrt_d"].variant_of == "loss_gd"
    assert ch.rule_table(res)["GD loss"].iloc[3] == "0.03"  # the smaller of the two drops
    missing = _judged(_fig3({}, etas=(0.01, 0.1, 1.0, 1000.0)))
    assert missing["spike_gd"].verdict == "not tested" and missing["kta_gd"].verdict == "not tested"


def test_threshold_claim_is_inconclusive_when_the_seed_interval_straddles_the_rule():
    spread = np.ones((2, 4, 3))
    spread[:, 3] = [0.9, 1.3, 1.1]  # at eta = 2000 the seeds sit on both sides of the rule's 1.1
    assert _judged(_fig3({"lambda_max": spread}))["spike_gd"].verdict == "inconclusive"
    spike = np.ones((2, 4, 3))
    spike[:, 3] = [1.5, 1.6, 1.7]
    assert _judged(_fig3({"lambda_max": spike}))["spike_gd"].verdict == "agrees"
    # two seeds are too few for any verdict, however clear the runs
    two = _judged(_fig3({"lambda_max": spike[:, :, :2]}, seeds=2), ch.Setup(seeds=2))
    assert two["spike_gd"].verdict == "inconclusive"


def test_review_cases_and_adam_loss_read_their_parts():
    etas = (0.001, 0.01, 0.1, 1.0, 10.0, 3000.0)
    kta = [1.0, 1.0, 1.4, 3.0, 2.8, 2.6]  # peaks at eta = 1, reverses beyond
    res = _fig3({"kta@d": kta, "kta@sqrt_d": kta, "sim": [0.03, 0.03, 0.4, 0.5, 0.5, 0.5],
                 "train_loss@d": [1, 1, 0.98, 0.97, 0.6, 0.3], "test_loss@d": [1, 1, 0.98, 0.97, 1.1, 2.0]}, etas=etas)
    rec = _judged(res)
    assert rec["sweet1"].verdict == "agrees" and rec["kta_rev"].verdict == "agrees"
    assert rec["sweet2"].verdict == "partly"  # KTA and sim rise; the 2% drop misses the loss rule's 5%
    assert rec["adam_loss"].verdict == "agrees"
    flat = _judged(_fig3({"test_loss@d": [1, 1, 0.98, 0.9, 0.85, 0.8]}, etas=etas))
    assert flat["adam_loss"].verdict == "disagrees"  # the train loss stays and the test loss falls


def test_onset_rows_read_any_move_below_the_threshold_and_the_spike_claim_compares_with_the_eta_below():
    etas, n = ch.PAPER.etas, 5  # the paper's grid: 1000 (index 6) lies below 2000 (index 7)
    spike = [1.0] * 7 + [1.6, 2.0]
    # below 2000: no spike, but every seed's test loss and KTA already move (by different amounts)
    rise = np.linspace(0.01, 0.02, n)
    test, kta = np.ones((2, 9, n)), np.ones((2, 9, n))
    test[:, 6], test[:, 7:] = 1 - rise, 0.9
    kta[:, 6], kta[:, 7:] = 1 + rise, 1.4
    setup = ch.Setup(seeds=n)
    rec = _judged(_fig3({"lambda_max": spike, "test_loss@d": test, "train_loss@d": test, "kta@d": kta}, etas=etas,
                        seeds=n), setup)
    assert rec["spike_gen"].verdict == "agrees"  # a drop with the spike, larger than the one below it
    assert rec["kta_gd_onset"].verdict == "partly" and rec["loss_gd_onset"].verdict == "partly"
    assert rec["kta_gd"].verdict == "agrees" and rec["loss_gd"].verdict == "agrees"  # 1% < 5%, 1.02 < 1.1
    test[:, 6] = 0.85  # the loss falls further without the spike than with it
    less = _judged(_fig3({"lambda_max": spike, "test_loss@d": test}, etas=etas, seeds=n), setup)
    assert less["spike_gen"].verdict == "partly"
    spiked = _judged(_fig3({"lambda_max": [1.0] * 6 + [1.5, 1.6, 2.0], "test_loss@d": test}, etas=etas, seeds=n),
                     setup)
    assert spiked["spike_gen"].verdict == "inconclusive"  # a spike below 2000: nothing to compare without one
    assert "spike rule holds" in spiked["spike_gen"].cause


def _width_result(onset: np.ndarray, cs: tuple) -> ch.ScalingResult:
    """A width sweep whose spike ratio after one step is 1 + 0.1 (c / onset)^2: the rule's 1.1 at c = onset."""
    grid = np.array(ch.ONSET_CS)
    ratios = 1 + 0.1 * (grid[None, :] / onset[:, None]) ** 2
    form = np.array([ch.finite_size_form("eta_2", c.h, c.d) for c in cs])
    return ch.ScalingResult(configs=(), norms=(), values={}, fits={}, h_configs=cs, h_values={"eta_2": form / 0.8},
                            h_ratios=ratios)


def test_width_claim_reads_the_spike_onset_over_the_finite_size_form():
    d, hs = 4000, (125, 250, 500, 1000)
    cs = tuple(TwoLayerConfig(n=2 * d, d=d, h=h, seed=s) for h in hs for s in range(3))
    form = np.array([ch.finite_size_form("eta_2", c.h, c.d) for c in cs])
    jitter = 1 + 1e-3 * np.sin(np.arange(len(cs)))
    flat = ch.measure_width(_width_result(1.2 * form * jitter, cs), ch.PAPER)
    # the onset is read off the grid to within its interpolation: eta_c sqrt(h) = 1.2 (1 + sqrt(h/d))
    np.testing.assert_allclose(ch.spike_onsets(_width_result(1.2 * form, cs)), 1.2 * form, rtol=0.02)
    assert np.allclose(flat["cor_2_h"].values, 0.0, atol=0.02)
    assert judge(ch.TABLE["cor_2_h"], flat["cor_2_h"]).verdict == "agrees"
    assert judge(ch.TABLE["thm_2_h"], flat["thm_2_h"]).verdict == "agrees"
    # an onset at (hd)^(-1/4) instead of h^(-1/2): eta_c sqrt(h) ~ h^(1/4), outside the band
    quarter = ch.measure_width(_width_result(1.0 * form * (np.array([c.h for c in cs]) / 125) ** 0.25, cs), ch.PAPER)
    assert judge(ch.TABLE["cor_2_h"], quarter["cor_2_h"]).verdict == "disagrees"
    # no crossing inside the grid: the setting cannot place the onset
    high = ch.measure_width(_width_result(np.full(len(cs), 100.0), cs), ch.PAPER)
    assert judge(ch.TABLE["cor_2_h"], high["cor_2_h"]).verdict == "inconclusive"


def test_corollary_fit_divides_out_the_finite_size_form():
    # eta_2 sqrt(h) = (1 + sqrt(h/d)) / kappa exactly: raw exponent negative, residual exponent 0.
    h, ds = 250, np.repeat([250.0, 1000.0, 4000.0], 2)
    seeds = np.tile([0, 1], 3)
    form = np.array([ch.finite_size_form("eta_2", h, int(d)) for d in ds])
    assert form == pytest.approx(1 + np.sqrt(h / ds))
    y = form / 0.8 * (1 + 1e-3 * np.array([1, -1, -1, 1, 1, -1]))
    x = ch.residual_exponents(ds, seeds, y, form)
    assert x == pytest.approx([0.0, 0.0], abs=2e-3)
    assert ch.fit_exponent(ds, y).slope < -0.1  # what the old band read as the corollary's exponent
    with pytest.raises(ValueError, match="key"):
        ch.finite_size_form("eta_x", h, 10)


def test_esd_modes_tell_a_bimodal_log_spectrum_from_marchenko_pastur():
    rng = np.random.default_rng(3)
    mp = spectra.esd(rng.normal(size=(600, 400)))
    assert spectra.esd_modes(mp).count == 1
    with_spike = np.append(mp, 1e4 * mp.max())  # one detached eigenvalue is never a mode
    assert spectra.esd_modes(with_spike).count == 1
    two = np.concatenate([10 ** rng.normal(0, 0.15, 300), 10 ** rng.normal(1.5, 0.15, 300)])
    m = spectra.esd_modes(two)
    assert m.count == 2 and m.masses == pytest.approx([0.5, 0.5], abs=0.02) and m.dip < 0.05
    with pytest.raises(ValueError, match="min_mass"):
        spectra.esd_modes(mp, min_mass=0.0)


def test_chapter_runs_and_claims_on_a_tiny_setting(cache_tmp):
    setup = ch.Setup(**TINY)
    fig2, fig3, scaling = ch.run_fig2(setup), ch.run_fig3(setup), ch.run_scaling(setup)
    assert len(fig2.init) == 2 and set(fig2.runs) == {("gd", 2000.0), ("adam", 0.1), ("adam", 10.0)}
    assert isinstance(ch.fig2_table(fig2), pd.DataFrame)
    table = ch.rule_table(fig3)
    assert list(table["eta"])[-3:] == ["rule", "first eta (mean)", "first eta (seeds)"]
    assert ch.fig3_table(fig3).iloc[0]["eta"] == "init"
    assert scaling.fits["adam_frob"].slope == pytest.approx(0.0, abs=0.05)  # ||sign G0||_F = sqrt(hd)
    records = ch.claims(fig2, fig3, scaling, setup)
    assert [c.key for c in records] == list(ch.TABLE)
    assert all(isinstance(c, Claim) for c in records)
    keys = {c.key for c in records if c.key}
    assert all(c.variant_of in keys for c in records if c.variant_of)
    assert {c.variant_of for c in records if c.variant_of} >= {"kta_gd", "loss_gd", "adam_loss", "thm_f"}
    assert all(c.setting for c in records)
    # two seeds: no mean or sign verdict agrees or disagrees; the checks are single evaluations and do
    assert all(c.verdict in ("inconclusive", "not tested") for c in records if c.kind != "check")
    assert {c.verdict for c in records if c.kind == "check"} <= {"agrees", "disagrees"}
    # every verdict holds under round-off perturbations of what the runs measured (their settings kept)
    assert perturb.stable(lambda *res: [c.verdict for c in ch.claims(*res, setup)], fig2, fig3, scaling,
                          keep=("config", "etas", "seeds", "configs", "h_configs")) == [c.verdict for c in records]
    assert all(ch.TABLE[c.key].why in c.cause for c in records if c.kind == "check")
    numbers = {**ch.fig2_numbers(fig2), **ch.fig3_numbers(fig3, "d"), **ch.scaling_numbers(scaling),
               **ch.rule_numbers(), **ch.setting_numbers(setup)}
    assert all(isinstance(v, str) and v for v in numbers.values())
    assert numbers["rule_spike_pct"] == "10%" and numbers["set_setting"].startswith("a reduced")
    assert numbers["rule_kta_first"] == "1.5"

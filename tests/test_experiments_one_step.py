"""Tests of htlib.experiments.one_step: the Theorem 4.1 norms, the thresholds and the chapter's tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from htlib.experiments import one_step as one
from htlib.two_layer import (RunGrid, TwoLayerConfig, full_batch_gradient, init_weights, make_data, run_grid,
                             train)

BASE = dict(n=64, d=20, h=30, n_test=16, rho_e=0.3, lam=0.01, bias_correction=True, readout_scale="d",
            dtype="float64")


def test_first_step_norms_against_numpy():
    cfg = TwoLayerConfig(**BASE)
    r = one.first_step_norms(cfg)
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
    assert one.SIGN_FACTOR == pytest.approx(0.1 / math.sqrt(0.001))


def test_theorem_configs_keep_the_ratios():
    cfgs = one.theorem_configs(dict(BASE, n=2000, d=1000, h=1500), [125, 250])
    assert [(c.n, c.d, c.h) for c in cfgs] == [(250, 125, 188), (500, 250, 375)]


def test_mp_edge_is_sqrt_h_plus_sqrt_d_squared():
    assert one.mp_edge(1500, 1000) == pytest.approx((math.sqrt(1500) + math.sqrt(1000)) ** 2)


def _grid(values: dict, etas=(0.1, 1.0, 10.0), seeds=2) -> RunGrid:
    shape = (2, len(etas), seeds)
    full = {m: np.broadcast_to(np.asarray(v, float)[None, :, None] if np.ndim(v) == 1 else v, shape).copy()
            for m, v in values.items()}
    return RunGrid(("gd", "adam"), np.array(etas), np.arange(seeds), full, np.zeros(shape, bool))


def test_thresholds_and_table_on_a_synthetic_grid():
    init = {"kta@d": 1.0, "kta@sqrt_d": 1.0, "test_loss@d": 1.0, "test_loss@sqrt_d": 1.0}
    grid = _grid({"lambda_max": [1.0, 2.0, 3.0], "sim": [0.0, 0.05, 0.5], "kta@d": [1.0, 2.0, 2.0],
                  "kta@sqrt_d": [1.0, 1.0, 1.0], "test_loss@d": [1.0, 0.9, 0.8], "test_loss@sqrt_d": [1.0, 1.0, 1.0]})
    thr = one.thresholds(grid, init, edge=1.5)
    assert thr["spike"] == {"gd": 1.0, "adam": 1.0}
    assert thr["sim"]["adam"] == 10.0 and thr["kta@d"]["gd"] == 1.0 and thr["kta@sqrt_d"]["gd"] is None
    assert thr["loss@d"]["adam"] == 1.0
    table = one.threshold_table(thr, {"gd": 1490.0, "adam": 0.0705})
    assert isinstance(table, pd.DataFrame) and table.iloc[4]["GD"] == "none in grid"
    assert table.iloc[-1]["FB-Adam"] == "0.0705"


def test_fig3_table_and_readout_checks_on_real_runs():
    cfgs = [TwoLayerConfig(**BASE, optimizer=o, eta=e, seed=s, record_initial=False, record_esd=False)
            for o in ("gd", "adam") for e in (1.0, 2000.0) for s in (0, 1)]
    grid = run_grid([train(c) for c in cfgs])
    init = one.init_means([train(c) for c in one.init_configs(BASE, 2)])
    table = one.fig3_table(grid, init)
    assert len(table) == 2 * 3 and table.iloc[0]["eta"] == "init"
    assert table.iloc[1]["GD test"] == f"{grid.mean('test_loss@d', 'gd')[0]:.4g}"
    checks = one.readout_checks(grid, init)
    assert checks["d"]["gd_test"] == grid.mean("test_loss@d", "gd")[1]  # eta = 2000
    assert all(isinstance(checks[s][k], bool) for s in checks for k in ("gd_ok", "adam_ok", "kta_ok"))

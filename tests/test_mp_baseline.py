"""Tests of htlib.experiments.mp_baseline: the chapter's panels, sweep summary, tables and claims."""

from __future__ import annotations

import math

import numpy as np
import pytest

from htlib import random_matrices as R
from htlib.experiments import mp_baseline as M


def test_gamma_panels_use_the_documented_sizes_and_seeds():
    panels = M.gamma_panels([0.25, 0.5], 200, seed=3)
    for i, (p, g) in enumerate(zip(panels, (0.25, 0.5))):
        direct = R.compare_with_mp(R.gaussian_matrix(200, round(g * 200), seed=3 + 1 + i))
        assert p.comparison == direct and p.eigs.size == round(g * 200)
    t = M.gamma_table(panels)
    assert t["cols"].tolist() == ["50", "100"] and t.index.tolist() == ["0.250", "0.500"]


def test_size_sweep_summary_matches_the_raw_sweep():
    sw = M.size_sweep([40, 80, 160], gamma=0.5, seeds=2)
    raw = R.mp_size_sweep([40, 80, 160], gamma=0.5, seeds=[100, 101])
    assert np.allclose(sw.ks_mean, raw.ks_distance.mean(axis=1))
    assert np.allclose(sw.gap_tw, np.abs(raw.edge_gap_tw).mean(axis=1))
    # the slope is the least-squares slope of log KS on log h (closed form)
    x, y = np.log(raw.p), np.log(sw.ks_mean)
    slope = np.sum((x - x.mean()) * (y - y.mean())) / np.sum((x - x.mean()) ** 2)
    assert sw.ks_slope == pytest.approx(slope, rel=1e-10)
    assert M.size_table(sw)["KS mean"].tolist() == [f"{v:.5f}" for v in sw.ks_mean]


def test_w0_table_and_claims_follow_the_measurements():
    c = R.compare_with_mp(R.gaussian_matrix(300, 200, seed=0))
    t = M.w0_table(c)
    assert t.loc["KS distance to MP", "measured"] == f"{c.ks_distance:.4f}"
    panels = M.gamma_panels([0.5], 100, seed=0)
    sw = M.size_sweep([40, 80], gamma=0.5, seeds=1)
    claims = M.chapter_claims(c, panels, sw)
    assert [cl.section for cl in claims] == ["mp-w0", "mp-finite-size", "mp-finite-size", "mp-gammas"]
    # a limit law is never "disagrees" at one finite size: below the bound agrees, else inconclusive
    assert claims[0].verdict == ("agrees" if c.ks_distance < M.KS_BOUND else "inconclusive")
    assert claims[2].measured.startswith(f"{sw.ks_slope:.2f} (per-seed fits")
    assert all(cl.setting and cl.verdict != "disagrees" for cl in claims[:3])
    rigid = claims[2].verdict
    # with one seed the per-seed interval is the point itself
    assert rigid == ("agrees" if sw.ks_slope < -0.65 else "partly" if sw.ks_slope < -0.5 else "inconclusive")
    assert (claims[2].cause == "") == (rigid == "agrees")
    assert math.isclose(M.IID_SLOPE, -0.5)

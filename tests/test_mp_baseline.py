"""Tests of htlib.experiments.mp_baseline: the chapter's panels, sweep summary, tables and claims."""

from __future__ import annotations


import sys
from pathlib import Path

import numpy as np
import pytest

from htlib import random_matrices as R
from htlib.experiments import mp_baseline as M

sys.path.insert(0, str(Path(__file__).resolve().parent))
import perturb  # noqa: E402

SETTINGS = ("p", "q", "gamma")  # sizes and aspect ratios: settings of a run, not measured values (tests/perturb.py)


def _verdicts(w0s, panels, sweep):
    return {cl.key: cl.verdict for cl in M.claims(w0s, panels, sweep)}


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


def test_w0_table_follows_the_measurements():
    c = R.compare_with_mp(R.gaussian_matrix(300, 200, seed=0))
    t = M.w0_table(c)
    assert t.loc["KS distance to MP", "measured"] == f"{c.ks_distance:.4f}"


def test_the_claims_table_holds_every_level_and_each_row_reads_a_standard_statistic():
    assert list(M.TABLE) == ["mp_law", "tw_edge", "ks_rigidity", "no_spikes"]
    assert all(s.statistic in ("mean", "sign", "parts") for s in M.TABLE.values())
    rigid = M.TABLE["ks_rigidity"]
    # the compound claim: steeper than i.i.d. samples (h^-1/2), and steeper than the rigid level
    assert [p.level for p in rigid.parts] == [-0.5, -0.65]
    assert not any(isinstance(v, (int, float)) and not isinstance(v, bool) for k, v in vars(M.reading).items()
                   if k.isupper()), "a level outside the claims table"


def test_measure_reads_one_run_per_seed_and_one_per_matrix():
    c = R.compare_with_mp(R.gaussian_matrix(300, 200, seed=0))
    panels = M.gamma_panels([0.5, 0.25], 100, seed=0)
    sw = M.size_sweep([40, 80, 160], gamma=0.5, seeds=3)
    m = M.measure([c], panels, sw)
    assert m["mp_law"].values == (c.ks_distance,)
    # the per-seed slopes are the least-squares slopes of each seed's log KS on log h
    x = np.log(sw.raw.p)
    for slope, ks in zip(m["ks_rigidity"].parts["ks_rigidity-rigid"].values, sw.raw.ks_distance.T):
        y = np.log(ks)
        assert slope == pytest.approx(np.sum((x - x.mean()) * (y - y.mean())) / np.sum((x - x.mean()) ** 2))
    assert np.allclose(m["tw_edge"].values, np.abs(sw.raw.edge_gap_tw).mean(axis=0))
    assert m["no_spikes"].values == (c.num_spikes, *(p.comparison.num_spikes for p in panels))


def test_claims_are_the_table_judged_on_the_measurements():
    c = R.compare_with_mp(R.gaussian_matrix(300, 200, seed=0))
    panels = M.gamma_panels([0.5], 100, seed=0)
    sweep = M.size_sweep([40, 80], gamma=0.5, seeds=3)
    claims = M.claims([c], panels, sweep)
    assert [cl.key for cl in claims] == list(M.TABLE)
    assert perturb.stable(_verdicts, [c], panels, sweep, keep=SETTINGS) == {cl.key: cl.verdict for cl in claims}
    assert [cl.section for cl in claims] == ["mp-w0", "mp-finite-size", "mp-finite-size", "mp-gammas"]
    by = {cl.key: cl for cl in claims}
    # one matrix is one run: never a verdict, whatever its KS distance
    assert by["mp_law"].verdict == "inconclusive"
    # two matrices (W0 and one panel) are too few for the sign test of the spike count
    assert by["no_spikes"].verdict == "inconclusive"
    assert all(cl.setting != "paper" for cl in claims)
    # one seed per size: the sweep's rows have one run and cannot be judged
    one = perturb.stable(_verdicts, [c], panels, M.size_sweep([40, 80], gamma=0.5, seeds=1), keep=SETTINGS)
    assert one["tw_edge"] == one["ks_rigidity"] == "inconclusive"


def test_the_mp_row_reads_every_draw_of_w0():
    """The default draws W0 three times (seeds seed, seed + 1000, seed + 2000: none is a panel's seed), and the MP
    row reads each draw's KS distance: three draws are enough for its verdict."""
    assert M.Setup().w0_draws >= 3 and M.PAPER.w0_draws == M.Setup().w0_draws
    assert M.w0_seeds(5, 3) == [5, 1005, 2005]
    assert not set(M.w0_seeds(0, 20)) & {1 + i for i in range(12)}  # the panels' seeds
    w0s = M.w0_comparisons(300, 200, seed=0, draws=3)
    assert w0s[0] == R.compare_with_mp(R.gaussian_matrix(300, 200, seed=0))
    assert w0s[2] == R.compare_with_mp(R.gaussian_matrix(300, 200, seed=2000))
    panels = M.gamma_panels([0.5], 100, seed=0)
    sw = M.size_sweep([40, 80], gamma=0.5, seeds=3)
    m = M.measure(w0s, panels, sw)
    assert m["mp_law"].values == tuple(c.ks_distance for c in w0s)
    assert m["no_spikes"].values == (*(c.num_spikes for c in w0s), panels[0].comparison.num_spikes)
    mp_law = next(cl for cl in M.claims(w0s, panels, sw) if cl.key == "mp_law")
    assert mp_law.verdict in ("agrees", "disagrees", "inconclusive") and "too few" not in mp_law.cause
    assert perturb.stable(_verdicts, w0s, panels, sw, keep=SETTINGS)["mp_law"] == mp_law.verdict
    with pytest.raises(ValueError, match="same size"):
        M.measure([w0s[0], R.compare_with_mp(R.gaussian_matrix(200, 100, seed=1))], panels, sw)

"""Tests of htlib.experiments.spike: the chapter's run configurations, tables and claims."""

from __future__ import annotations

import numpy as np
import pandas as pd

from htlib import dynamics, spectra
from htlib.experiments import spike
from htlib.two_layer import train

SETUP = spike.SpikeSetup(n=64, d=16, h=24, seed=0, steps=3, eta_gd=50.0, eta_adam=0.5, eta_adam_fig1=0.2,
                         etas_adam_track=(0.2, 0.5), etas_gd_track=(50.0,), appA_n=64, appA_d=16, appA_h=24,
                         appA_eta_gd=50.0, appA_eta_adam=0.3, ht_etas=(0.5,), ht_budget=6, ht_record_every=3)


def test_chapter_configs_cover_every_figure_once():
    cfgs = spike.chapter_configs(SETUP)
    assert list(cfgs)[0] == ("long", 0.5)  # the long runs first
    assert set(cfgs) == {("long", 0.5), ("appA", "gd"), ("appA", "adam"), ("adam", 0.2), ("adam", 0.5),
                         ("gd", 50.0), ("adam-wn", 0.5)}
    assert cfgs[("adam", 0.5)].keep_weights == (0, 1, 2, 3)
    assert cfgs[("appA", "gd")].weight_norm and cfgs[("adam-wn", 0.5)].weight_norm
    assert cfgs[("long", 0.5)].steps == 6 and cfgs[("long", 0.5)].recorded_steps() == [0, 3, 6]


def test_tables_and_claims_on_tiny_runs():
    runs = {k: train(c) for k, c in spike.chapter_configs(SETUP).items()}
    rules = spectra.PHASE_RULES
    h, d = SETUP.h, SETUP.d
    fig1 = {"GD": runs[("gd", 50.0)], "FB-Adam": runs[("adam", 0.2)]}
    report = spike.report_table({k: tr.esd[-1] for k, tr in fig1.items()}, h=h, d=d, rules=rules)
    assert isinstance(report, pd.DataFrame) and list(report["run"]) == ["GD", "FB-Adam"]
    expected = dynamics.esd_report(fig1["GD"].esd[-1], h=h, d=d, rules=rules)
    assert report.iloc[0]["PL_KS"] == f"{expected.alpha:.3g}" and report.iloc[0]["tail"] == expected.n_tail
    one_step = {"a": dynamics.step_overlaps(runs[("adam", 0.5)], 0), "g": dynamics.step_overlaps(runs[("gd", 50.0)], 0)}
    late_runs = {"plain": runs[("adam", 0.5)], "WN": runs[("adam-wn", 0.5)]}
    late = {k: dynamics.step_overlaps(tr, SETUP.steps - 1) for k, tr in late_runs.items()}
    spread = spike.spread_summaries(late, block=8)
    assert spike.spread_table(spread, steps=SETUP.steps).shape[0] == 4
    labels = ["FB-Adam eta=0.5", "GD eta=50"]
    tracks = [dynamics.phase_track(runs[k].steps, runs[k].esd, h=h, d=d, rules=rules)
              for k in (("adam", 0.5), ("gd", 50.0))]
    phases, ratio = spike.phase_tables(labels, tracks)
    assert phases.shape == ratio.shape == (2, SETUP.steps + 1)
    assert ratio.iloc[0, 0] == f"{tracks[0].top[0, 0] / tracks[0].bulk_edge[0]:.3g}"
    long_runs = {0.5: runs[("long", 0.5)]}
    ht = spike.heavy_tail_table(long_runs, h=h, d=d, rules=rules)
    assert ht.iloc[0]["tail at end"] == dynamics.esd_report(long_runs[0.5].esd[-1], h=h, d=d, rules=rules).n_tail
    claims = spike.chapter_claims(one_step=one_step, late_runs=late_runs, spread=spread,
                                  app_a={o: runs[("appA", o)] for o in ("gd", "adam")}, fig1=fig1, labels=labels,
                                  tracks=tracks, long_runs=long_runs, block=8, h=h, d=d, rules=rules, ht_budget=6)
    assert len(claims) == 5 + 2 + 1  # eta = 1 and 0.1 are not among the long runs
    assert {c.verdict for c in claims} <= {"agrees", "partly", "disagrees", "not tested"}
    assert np.isfinite(spike.PAPER_APP_A["gd"])

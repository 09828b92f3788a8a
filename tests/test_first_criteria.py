"""A row revised after its runs were seen keeps its first criterion's verdict in sight: a variant row (never counted)
reads the first criterion on the same runs, and the row's reason names it (paper 003's one-step and spike chapters)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from htlib.claims import judge
from htlib.experiments import generalization, one_step, spike
from htlib.two_layer import TwoLayerConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_experiments_one_step import _fig3, _judged, _width_result  # noqa: E402

FIRST = {  # revised row -> the variant that reads its first criterion
    (one_step, "spike_gen"): "spike_gen_first",
    (one_step, "cor_2_h"): "thm_2_h",  # the norm ratio in h at +-0.25: Theorem 4.1's ratio read in h
    (spike, "fig1-gd"): "fig1-gd-first",
    (spike, "fig1-adam"): "fig1-adam-first",
    (spike, "steps-1"): "steps-1-label",
    (spike, "review-large"): "review-large-tail",
    (spike, "review-eta1"): "review-eta1-first",  # 200-point test sets, before the 4,000-point reading
    (generalization, "ridge"): "ridge_first",
}


def test_each_revised_row_names_the_variant_that_holds_its_first_criterion():
    for (ch, key), variant in FIRST.items():
        row, first = ch.TABLE[key], ch.TABLE[variant]
        assert row.revised_because.strip() and "first" in row.revised_because, key
        assert first.kind == "variant" and first.variant_of, variant
        if variant != "thm_2_h":  # thm_2_h varies Theorem 4.1, whose ratio cor_2_h first read
            assert first.variant_of == key, variant
            assert "first" in first.setting or "other reading" in first.setting, variant
    # the first criteria, as first written
    label = spike.TABLE["fig1-gd"].parts[0]
    for tag in ("gd", "adam"):
        first = spike.TABLE[f"fig1-{tag}-first"]
        assert (first.measurement, first.op, first.level, first.statistic) == (label.measurement, ">", 0.5, "sign")
    tail = spike.TABLE["review-large-tail"]
    assert "tail alpha" in tail.measurement and (tail.op, tail.level) == ("<", 2.0)
    gen = one_step.TABLE["spike_gen_first"]
    assert [(p.key, p.op, p.level, p.statistic) for p in gen.parts] == [
        ("spike_gen_first-with", ">", 0.0, "sign"), ("spike_gen_first-without", "<=", 0.0, "sign")]
    norm = one_step.TABLE["thm_2_h"]
    assert "eta*_2 sqrt(h) / (1 + sqrt(h/d))" in norm.measurement
    assert tuple(norm.level) == tuple(one_step.TABLE["cor_2_h"].revised_from) == (-0.25, 0.25)
    # variants are never counted: the counts stay
    for ch, key in [(one_step, "spike_gen_first"), (one_step, "cor_2_h_raw"), (spike, "fig1-gd-first"),
                    (spike, "fig1-adam-first"), (spike, "review-large-tail")]:
        assert ch.TABLE[key].kind == "variant", key


def test_the_first_spike_criterion_fails_and_says_so_when_the_loss_falls_without_a_spike():
    etas, n = one_step.PAPER.etas, 5  # the paper's grid: 1000 (index 6) lies below 2000 (index 7)
    spike_ratio = [1.0] * 7 + [1.6, 2.0]
    test = np.ones((2, 9, n))
    test[:, 6], test[:, 7:] = 1 - np.linspace(0.01, 0.02, n), 0.9  # a drop at 1000 already, no spike there
    setup = one_step.Setup(seeds=n)
    rec = _judged(_fig3({"lambda_max": spike_ratio, "test_loss@d": test}, etas=etas, seeds=n), setup)
    assert rec["spike_gen"].verdict == "agrees" and rec["spike_gen_first"].verdict == "partly"
    assert "no spike" in rec["spike_gen_first"].cause and "disagrees" in rec["spike_gen_first"].cause
    assert "the improvement begins before the spike" in rec["spike_gen"].uncertainty
    assert "first criterion" in rec["spike_gen"].cause and rec["spike_gen_first"].variant_of == "spike_gen"
    test[:, 6] = 1.0 + np.linspace(0.01, 0.02, n)  # no drop without the spike: the first criterion holds too
    flat = _judged(_fig3({"lambda_max": spike_ratio, "test_loss@d": test}, etas=etas, seeds=n), setup)
    assert flat["spike_gen"].verdict == "agrees" and flat["spike_gen_first"].verdict == "agrees"
    assert "before the spike" not in flat["spike_gen"].uncertainty


def test_the_width_claim_shows_its_onset_without_the_finite_size_form():
    d, hs = 4000, (125, 250, 500, 1000)
    cs = tuple(TwoLayerConfig(n=2 * d, d=d, h=h, seed=s) for h in hs for s in range(3))
    h = np.array([c.h for c in cs], dtype=float)
    form = np.array([one_step.finite_size_form("eta_2", c.h, c.d) for c in cs])
    # eta_c sqrt(h) = 1.2 (1 + sqrt(h/d)): flat over its form, rising as the form does without it
    m = one_step.measure_width(_width_result(1.2 * form, cs), one_step.PAPER)
    slope = np.polyfit(np.log(h), np.log(form), 1)[0]
    np.testing.assert_allclose(m["cor_2_h"].values, 0.0, atol=0.02)
    np.testing.assert_allclose(m["cor_2_h_raw"].values, slope, atol=0.02)
    assert "not h^-0.5" in m["cor_2_h"].note and "finite-size form" in m["cor_2_h_raw"].setting
    # eta_c sqrt(h) constant: flat without the form, falling over it
    m = one_step.measure_width(_width_result(np.full(len(cs), 1.2), cs), one_step.PAPER)
    np.testing.assert_allclose(m["cor_2_h_raw"].values, 0.0, atol=0.02)
    np.testing.assert_allclose(m["cor_2_h"].values, -slope, atol=0.02)
    # an onset at (hd)^(-1/4): outside the band either way
    m = one_step.measure_width(_width_result(1.0 * (h / 125) ** 0.25, cs), one_step.PAPER)
    assert judge(one_step.TABLE["cor_2_h_raw"], m["cor_2_h_raw"]).verdict == "disagrees"

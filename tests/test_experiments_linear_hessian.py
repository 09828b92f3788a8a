"""Tests of the reduced exact GGN route, the FeatureGram reuse and the chapter's experiment helpers."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
import torch

from htlib import linear as lin
from htlib.claims import judge
from htlib.experiments import linear_hessian as lh


def _rank_deficient(rng, n=80, d0=30, blank=(3, 7, 20)):
    X = rng.standard_normal((n, d0)) * rng.uniform(0.1, 3.0, d0)
    X[:, list(blank)] = 0.0  # always-blank "pixels": rank d0 - 3
    return X


@pytest.mark.parametrize("depth", [1, 2, 4])
@pytest.mark.parametrize("whitened", [False, True])
def test_reduced_ggn_spectrum_matches_dense_kronecker_matrix(depth, whitened):
    rng = np.random.default_rng(depth)
    X = _rank_deficient(rng)
    if whitened:
        X = lin.whiten(X)
    dims = [30] + [9] * (depth - 1) + [7]
    Ws = [rng.standard_normal((b, a)) / np.sqrt(a) for a, b in zip(dims[:-1], dims[1:])]
    ref = np.linalg.eigvalsh(lin.ggn_kronecker_matrix(Ws, X))[::-1]  # the full d0*dL matrix, C^(1/2) by eigh
    for method in ("lanczos", "dense"):
        top = lin.ggn_spectrum(Ws, X, k=10, method=method)
        assert np.max(np.abs(top - ref[:10])) / ref[0] < 1e-12
    full = lin.ggn_spectrum(Ws, lin.feature_gram(X))  # all d0*dL values, zeros padded for the null space
    assert full.size == 30 * 7 and np.max(np.abs(full - ref)) / ref[0] < 1e-12
    assert np.all(full[-3 * 7:] == 0.0)  # the three blank features contribute exact zeros


def test_feature_gram_gives_the_same_numbers_as_x():
    rng = np.random.default_rng(3)
    X = _rank_deficient(rng)
    G = lin.feature_gram(X)
    assert G.c.size == lin.numerical_rank(X) == 27
    Ws = [rng.standard_normal((9, 30)), rng.standard_normal((9, 9)), rng.standard_normal((7, 9))]
    W = Ws[2] @ Ws[1] @ Ws[0]
    # ggn_trace against the definition, (1/n) sum_l ||X B_l^T||_F^2 ||A_l||_F^2
    B = [np.eye(30), Ws[0], Ws[1] @ Ws[0]]
    A = [Ws[2] @ Ws[1], Ws[2], np.eye(7)]
    direct = sum(np.sum((X @ b.T) ** 2) * np.sum(a * a) for a, b in zip(A, B)) / X.shape[0]
    assert abs(lin.ggn_trace(Ws, G) - direct) < 1e-10 * direct
    terms = [np.linalg.norm(X @ b.T, 2) ** 2 * np.linalg.norm(a, 2) ** 2 / X.shape[0] for a, b in zip(A, B)]
    np.testing.assert_allclose(lin.layer_sharpness_terms(Ws, G), terms, rtol=1e-10)
    # W reaches X's blank columns, so the s_min formula's precondition fails there: both routes give the same pair
    bx, bg = lin.sharpness_bounds(X, W, 3), lin.sharpness_bounds(G, W, 3)
    np.testing.assert_allclose((bx.lower, bx.upper), (bg.lower, bg.upper), rtol=1e-9)
    assert bx.pair == bg.pair == "C=P"
    np.testing.assert_allclose(lin.balanced_prediction(Ws, X, k=5), lin.balanced_prediction(Ws, G, k=5), rtol=1e-12)


def test_ols_on_whitened_rank_deficient_features_is_the_row_space_solution():
    # pinv's default cutoff once inverted the rounding noise of whitened rank-deficient X (norm ~1e13);
    # at the OLS solution on whitened X the s_min pair must then coincide with the exact sharpness
    rng = np.random.default_rng(5)
    X = lin.whiten(_rank_deficient(rng, n=60, d0=40, blank=tuple(range(10, 20))))
    Y = rng.standard_normal((60, 4))
    Ws = lin.ols_balanced_weights(X, Y, [40, 6, 4], seed=0)
    W = Ws[1] @ Ws[0]
    np.testing.assert_allclose(W.T, np.linalg.pinv(X, rcond=1e-10) @ Y, atol=1e-10)
    lam = lin.ggn_spectrum(Ws, X, k=1)[0]
    b = lin.sharpness_bounds(X, W, 2)
    lo, hi = b.lower, b.upper
    assert abs(lam / lo - 1) < 1e-10 and abs(hi / lam - 1) < 1e-10


def test_anisotropy_path_from_one_svd_matches_direct_route():
    X0, Y, _ = lh.prepare_data("digits", 300, None, whitening="none", seed=1)
    U, s, V = lh._svd_gram(X0)
    for t in (0.0, 0.5, 1.0):
        G, W = lh._ols_from_svd(U, s ** (1 - t) * np.sqrt(300) ** t, V, Y)
        fast = lh._ols_point(G, W, Y, 16, 2, seed=0)
        Xt = lin.interpolate_whitening(X0, t)
        Ws = lin.ols_balanced_weights(Xt, Y, [64, 16, 10], seed=0)
        assert abs(fast["ggn"] - lin.ggn_spectrum(Ws, Xt, k=1)[0]) < 1e-9 * fast["ggn"]
        np.testing.assert_allclose((fast["t_max"], fast["t_sum"]), lin.weyl_sharpness_bounds(Ws, Xt), rtol=1e-9)


def test_result_types_are_frozen():
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((20, 3)), rng.standard_normal((20, 2))
    res = lin.train_gd([rng.standard_normal((4, 3)), rng.standard_normal((2, 4))], X, Y, lr=0.01, epochs=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.losses = None
    out = lin.hessian_eigensolve(lambda w: (w * w * torch.arange(1.0, 4.0, dtype=torch.float64)).sum(),
                                 [torch.ones(3, dtype=torch.float64)], 1, method="eigsh")
    assert isinstance(out, lin.HessianEigenResult) and out.hvps > 0
    np.testing.assert_allclose(out.values, [6.0], rtol=1e-8)


def test_hessian_at_ends_measures_only_first_and_last():
    cfg = lh.LinearExperiment(depth=2, width=8, n=200, epochs=30, measure_points=3, dataset="digits", k=2,
                              hessian_at="ends", lr=0.05)
    r = lh.run_linear_experiment(cfg)
    measured = ~np.isnan(r["numeric"][:, 0])
    assert measured.tolist() == [True, False, False, True] and np.all(np.isfinite(r["ggn"]))
    with pytest.raises(ValueError, match="hessian_at"):
        lh.LinearExperiment(hessian_at="middle")


# ---------------------------------------------------------------------------------------------
# The chapter's statistics and claims (each of the first three failed before its fix)
# ---------------------------------------------------------------------------------------------



def _records(measurements):
    """The records the one judge makes of a chapter's measurements (a subset of the table's rows)."""
    return {k: judge(lh.TABLE[k], m) for k, m in measurements.items()}


def test_every_row_of_the_table_is_measured_and_judged():
    # the table's rows and the measurements' keys must match exactly (judge_table refuses a gap either way)
    names = {"measure_fig12", "measure_fig3", "measure_fig4", "measure_fig5", "measure_fig6", "measure_fig7",
             "measure_fig8", "measure_count", "measure_trajectory"}
    assert names <= set(dir(lh.measures)) and len(lh.TABLE) == 34
    assert {s.kind for s in lh.TABLE.values()} == {"claim", "check", "variant"}
    # the five identities of paper 004, the forced runs (two-layer Fig. 3, held Fig. 4) and the near-identities on exact
    # minimizers of whitened data (Fig. 6 crossover and right, Fig. 8) are checks, never counted
    checks = {k for k, s in lh.TABLE.items() if s.kind == "check"}
    assert checks == {"fig1", "fig2", "fig3_two_layer", "fig4", "fig5_upper", "fig6_left", "fig6_middle", "fig6_crossover",
                      "fig6_right", "fig8"}
    # a row made a check after its runs says so (it is post hoc), and every check says why it cannot fail
    for key in ("fig4", "fig6_crossover", "fig6_right", "fig8"):
        assert lh.TABLE[key].revised_because and lh.TABLE[key].why
    # Fig. 8's series share both end points: one fit, no interval over them
    assert lh.TABLE["fig8"].statistic == "value"
    # no verdict rests on fewer than 3 runs, and no level was revised after the numbers were seen
    assert all(s.min_runs >= 3 and s.revised_from is None for s in lh.TABLE.values())


def _fake_run(trace, norm, epochs=None, layers=2):
    n = len(trace)
    return {"ggn_trace": np.asarray(trace, float), "sq_norm": np.asarray(norm, float), "hutch": np.asarray(trace, float),
            "hutch_se": np.ones(n), "epochs": np.arange(n) if epochs is None else np.asarray(epochs),
            "layer_sq_norms": np.column_stack([np.asarray(norm, float) / layers] * layers)}


def test_constant_series_makes_fig3_inconclusive_not_disagrees():
    # a constant series gave NaN correlations, which the old claim turned into "disagrees"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from np.corrcoef either
        st = lh.trace_norm_agreement(np.ones(6), np.arange(1.0, 7.0))
    assert np.isnan(st["corr_diff"]) and np.isnan(st["corr_level"]) and not st["dip_trace"]
    runs = [_fake_run(np.ones(6), np.arange(1.0, 7.0), layers=4)] + [_fake_run(np.arange(1.0, 7.0), np.arange(2.0, 8.0),
                                                                                layers=4)] * 4
    m = lh.measure_fig3(lh.Setup(dataset="digits", n=1000), lh.Fig3(tuple(runs), tuple("abcde")))
    assert m["fig3"].parts["fig3-corr"].cannot_test and _records(m)["fig3"].verdict == "inconclusive"


def test_dip_is_relative_to_the_series_own_range():
    # the squared norm of the 2-layer run fell 88.93 -> 86.89 and rose to 87.57 (0.78%): the old absolute 1%
    # tolerance called that "no dip"; relative to its own range it dips, and so does the trace beside it
    norm = [88.93, 88.0, 86.89, 87.1, 87.57]
    trace = [10.0, 9.2, 8.1, 8.6, 9.0]
    st = lh.trace_norm_agreement(trace, norm)
    assert st["dip_norm"] and st["dip_trace"] and st["argmin_norm"] == st["argmin_trace"] == 2
    assert abs(st["rise_norm"] - (87.57 - 86.89) / 86.89) < 1e-12
    assert not lh.series_dip([5.0, 4.0, 3.0, 2.0])["dip"]  # monotone
    assert not lh.series_dip([5.0, 4.0, 3.0, 3.0001])["dip"]  # a rise of 1e-4 of the range is no dip
    setup = lh.Setup(dataset="digits", n=1000)

    def fig3(*runs):
        return _records(lh.measure_fig3(setup, lh.Fig3(tuple(runs), tuple(str(i) for i in range(len(runs))))))

    # two layers moving by the same amounts (the conservation law of gradient flow): a check, and nothing to test
    recs = fig3(_fake_run(trace, norm), _fake_run(trace, norm))
    assert recs["fig3"].verdict == "inconclusive" and recs["fig3_two_layer"].verdict == "agrees"
    assert recs["fig3_two_layer"].kind == "check" and not recs["fig3_two_layer"].counted
    # the deep runs (not forced by the law) carry the verdict; one of them is too few, five agree
    two, four = _fake_run(trace, norm), _fake_run(trace, norm, layers=4)
    assert fig3(two, four)["fig3"].verdict == "inconclusive"
    recs = fig3(two, *[four] * 5)
    assert recs["fig3"].verdict == "agrees" and recs["fig3_two_layer"].verdict == "agrees"
    anti = _fake_run(trace, [-t for t in norm[::-1]], layers=4)  # changes of the opposite sign: the deep runs fail
    assert fig3(two, *[anti] * 5)["fig3"].verdict != "agrees"
    # at the paper's setting (MNIST, 5000 images, 10^4 epochs) a failure is a "disagrees": no reduction to blame
    setup = lh.Setup(dataset="mnist")
    assert setup.deviations() == "paper" and fig3(two, *[anti] * 5)["fig3"].verdict == "disagrees"
    # layers that break the conservation law make it a test again (and leave no check to make)
    broken = {**_fake_run(trace, norm), "layer_sq_norms": np.column_stack([np.asarray(norm) * w for w in (0.2, 0.8)])}
    assert lh.conservation_drift(broken["layer_sq_norms"]) > lh.CONSERVED_DRIFT
    recs = fig3(*[broken] * 5)
    assert recs["fig3"].verdict == "agrees" and recs["fig3_two_layer"].verdict == "not tested"
    # the changes correlate, the trace dips, the norm does not: "partly"
    flat = [10.0, 10.01, 10.009, 11.509, 12.909]
    st = lh.trace_norm_agreement(trace, flat)
    assert st["corr_diff"] > 0.9 and st["dip_trace"] and not st["dip_norm"]
    assert fig3(*[_fake_run(trace, flat, layers=4)] * 5)["fig3"].verdict == "partly"


def _fig12_run(closed, ggn, numeric, rank=5, ols=0.2):
    ep = np.array([0, 10])
    return {"epochs": ep, "loss": np.linspace(1.0, 0.2, 11), "numeric": numeric, "ggn": ggn, "closed_I": closed,
            "closed_P": ggn, "spec_norms2": np.array([[1.0, 0.5], [1.2, 0.6]]), "spec_norm2_P": np.array([0.9, 1.0]),
            "blank_share": np.array([0.1, 0.1]), "ols_loss": ols, "zero_loss": 1.0, "lr": np.full(11, 1e-3),
            "lr_max": 1e-3, "rank": rank}


def test_fig1_claim_measures_the_closed_form_not_the_ggn():
    # claim row 1 named the closed form s_i(W1)^2 + s_j(W2)^2 but measured the exact GGN against LOBPCG
    numeric = np.array([[2.0, 1.0], [1.6, 0.8]])
    ggn = numeric.copy()  # GGN == Hessian: a GGN-based gap would be 0
    closed = numeric * np.array([[1.3], [1.05]])  # the closed form is 30% then 5% off
    run = _fig12_run(closed, ggn, numeric)
    setup = lh.Setup(dataset="digits", n=1000)
    m = lh.measure_fig12(setup, lh.Fig12({"rowspace": run, "rank": run}, 2))
    assert [p.values for p in m["fig1"].parts.values()] == [(pytest.approx(0.05),), (pytest.approx(0.05 / 0.3),)]
    assert _records(m)["fig1"].verdict == "agrees"
    bad = _fig12_run(numeric * 1.2, ggn, numeric)
    rec = _records(lh.measure_fig12(setup, lh.Fig12({"rowspace": bad, "rank": bad}, 2)))["fig1"]
    assert rec.verdict != "agrees" and rec.kind == "check"
    # the same gaps on a run that stopped 0.05 of the zero map's loss above its OLS loss: not a minimum
    far = _fig12_run(closed, ggn, numeric, ols=0.15)
    m = lh.measure_fig12(setup, lh.Fig12({"rowspace": far, "rank": far}, 2))
    assert m["fig1"].cannot_test and m["fig2"].cannot_test
    recs = _records(m)
    assert recs["fig1"].verdict == recs["fig2"].verdict == "inconclusive"
    assert recs["fig1_paper_schedule"].verdict == "not tested"  # no held run: the paper-schedule run is the judged one


def test_fig5_travel_counts_decreases():
    assert lh.position_decreases([0.0, 0.05, 0.5, 0.9, 1.0]) == 0
    assert lh.position_decreases([0.0, 0.5, 0.4, 1.0]) == 1
    with pytest.raises(ValueError, match="positions"):
        lh.position_decreases([0.5])
    with pytest.raises(Exception, match="subsets"):
        lh.Setup(dataset="digits", n=1000, seeds=5, subsets=3)


def test_mode_excess_partitions_the_excess_loss_computed_directly():
    rng = np.random.default_rng(3)
    X = _rank_deficient(rng)
    Y = lin.one_hot(rng.integers(0, 4, X.shape[0]), 4)
    n = X.shape[0]
    W_ols = np.linalg.lstsq(X, Y, rcond=None)[0].T  # an independent route: least squares on the raw features
    loss = lambda W: 0.5 * np.sum((X @ W.T - Y) ** 2) / n
    W = W_ols + 0.3 * rng.standard_normal(W_ols.shape)
    m = lh.mode_excess(W, X, Y)
    assert abs(m["excess"].sum() - (loss(W) - loss(W_ols)) / loss(np.zeros_like(W))) < 1e-10
    full = lh.mode_excess(W_ols, X, Y)
    assert np.allclose(full["captured"], 1.0) and np.all(full["excess"] < 1e-12)
    # the OLS map with its smallest mode removed: all the excess in that mode, nothing captured there
    _, sx, Vx = np.linalg.svd(X, full_matrices=False)
    keep = sx > 1e-10 * sx[0]
    U = np.linalg.svd(W_ols @ Vx[keep].T * (sx[keep] / np.sqrt(n)), full_matrices=False)[0]  # W_ols C^(1/2), row space
    lost = W_ols - np.outer(U[:, -1], U[:, -1]) @ W_ols
    m = lh.mode_excess(lost, X, Y)
    assert m["excess"][-1] > 0.99 * m["excess"].sum() and abs(m["captured"][-1]) < 1e-8


def _fig8(slopes, sizes=(100, 1000), stratified=None):
    """A Fig. 8 whose subset series have the given slopes of log lambda_max on log n (trained runs converged); the
    stratified series have ``stratified`` (default: the first PREREG_DRAWS of ``slopes``)."""
    subsets = len(slopes)
    minis = [{"lam": 2.0 * n ** s, "formula": 2.0 * n ** s, "majority_share": 0.1 + 0.01 * j, "rank": 50}
             for n in sizes for j, s in enumerate(slopes)]
    strat = list(slopes[:lh.PREREG_DRAWS]) if stratified is None else list(stratified)
    st = tuple({"lam": 3.0 * n ** s, "majority_share": 0.1} for n in sizes for s in strat)
    trained = [{"numeric": np.array([[2.0 * n ** slopes[j]]]), "loss": np.array([1.0, 0.1]), "lr": np.array([1e-2, 1e-2]),
                "lr_max": 1e-2, "ols_loss": 0.1, "zero_loss": 1.0} for n in sizes for j in range(3)]
    return lh.Fig8(tuple(sizes), 3, trained, minis, subsets, st)


def test_fig8_reads_one_fit_over_the_stratified_series_and_the_mean_slope_over_uniform_ones():
    setup = lh.Setup(dataset="digits", n=1000)
    rng = np.random.default_rng(0)
    wide = rng.normal(-0.07, 0.02, 30)  # a spread whose range straddles -0.1, around a mean well inside
    assert wide.min() < -0.1
    m = lh.measure_fig8(setup, _fig8(wide))
    np.testing.assert_allclose(m["fig8_uniform"].values, wide, rtol=1e-9)
    # the stratified series (lambda = 3 n^s): one fit to their mean log lambda, whose slope is the slopes' mean
    np.testing.assert_allclose(m["fig8"].values, [np.mean(wide[:lh.PREREG_DRAWS])], rtol=1e-9)
    recs = _records(m)
    assert recs["fig8_uniform"].verdict == "agrees" and recs["fig8_trained"].verdict != "not tested"
    assert recs["fig8_uniform"].revised_because and recs["fig8_uniform"].variant_of == "fig8"
    # outside the band: not "agrees" (a "disagrees" off the paper's protocol needs a measurement ruling out the reduction)
    far = rng.normal(-0.3, 0.02, 30)
    assert _records(lh.measure_fig8(setup, _fig8(far)))["fig8_uniform"].verdict != "agrees"
    assert _records(lh.measure_fig8(setup, _fig8(wide, stratified=far[:6])))["fig8"].verdict != "agrees"
    # one number, no interval: series whose slopes straddle the band but whose fit lies inside it hold
    assert _records(lh.measure_fig8(setup, _fig8([-0.2, -0.05, 0.0])))["fig8"].verdict == "agrees"
    assert _records(lh.measure_fig8(setup, _fig8([-0.2, -0.15, -0.1])))["fig8"].verdict == "disagrees"
    # the check reads the stratified series only: uniform series far off the band do not move it
    assert _records(lh.measure_fig8(setup, _fig8(far, stratified=wide[:6])))["fig8"].verdict == "agrees"


def test_converged_epochs_is_validated_and_zero_judges_the_paper_schedule_run():
    with pytest.raises(Exception, match="converged_epochs"):
        lh.Setup(dataset="digits", n=1000, converged_epochs=3, measure_points=5)
    assert lh.Setup(dataset="digits", n=1000, converged_epochs=0).converged_epochs == 0
    numeric = np.array([[2.0, 1.0], [1.6, 0.8]])
    closed = numeric * np.array([[1.3], [1.05]])
    far, near = _fig12_run(closed, numeric, numeric, ols=0.15), _fig12_run(closed, numeric, numeric)
    m = lh.measure_fig12(lh.Setup(dataset="digits", n=1000), lh.Fig12({"rowspace": far, "rank": far, "converged": near}, 2))
    recs = _records(m)
    assert recs["fig1"].verdict == "agrees" and "held at eta_max" in recs["fig1"].setting
    assert recs["fig1_paper_schedule"].verdict == "inconclusive" and recs["fig1_paper_schedule"].variant_of == "fig1"
    assert "paper's schedule" in recs["fig1_paper_schedule"].setting


def test_convergence_table_prints_small_rates_and_the_plateau():
    r = {"loss": np.r_[np.linspace(1.0, 0.5, 9), 0.5 - 1e-9], "lr": np.r_[np.full(5, 1e-2), np.full(5, 1e-17)],
         "lr_max": 1e-2, "ols_loss": 0.1, "zero_loss": 1.0}
    c = lh.convergence(r)
    assert c["tail_epochs"] == 2 and c["tail_drop"] == pytest.approx(0.0625 + 1e-9)
    tab = lh.convergence_table([r], ["a"], ["run"])
    assert tab.loc["a", "lr_end"] == "1e-17" and not c["converged"] and c["stalled"]

def test_row_space_whitening_is_rank_whitening_rotated():
    Xr, Y, lab = lh.prepare_data("digits", 400, None, whitening="rowspace", seed=3)
    Xw, Y2, lab2 = lh.prepare_data("digits", 400, None, whitening="rank", seed=3)
    r = lin.numerical_rank(Xw)
    assert Xr.shape == (400, r) < Xw.shape and np.array_equal(lab, lab2)
    np.testing.assert_allclose(Xr.T @ Xr / 400, np.eye(r), atol=1e-10)  # C = I: the paper's assumption
    np.testing.assert_allclose(Xr @ Xr.T, Xw @ Xw.T, atol=1e-9)  # the same samples' geometry


def test_convergence_detects_a_stalled_run_and_a_converged_one():
    # a balanced start with one tiny singular value sits on a plateau; the halving rule then freezes it
    slow = lh.run_linear_experiment(lh.LinearExperiment(depth=4, width=8, n=200, dataset="digits", lr=0.05,
                                                        init_scale=0.05, epochs=1500, hessian_at="none", k=1))
    c = lh.convergence(slow)
    assert not c["converged"] and c["stalled"] and c["lr_end"] <= lh.COLLAPSED_LR * 0.05 and c["excess"] > 0.1
    # two layers from the default start on n < d0 samples interpolate: OLS loss 0 and reached
    fast = lh.run_linear_experiment(lh.LinearExperiment(depth=2, width=64, n=40, dataset="digits", lr=0.5,
                                                        init="kaiming", epochs=3000, hessian_at="none", k=1))
    c = lh.convergence(fast)
    assert c["OLS loss"] < 1e-12 and c["converged"] and c["excess"] <= lh.CONVERGED_EXCESS


def test_balanced_minimizer_against_lobpcg_and_the_formula():
    # the minimizer's exact lambda_max against LOBPCG on the loss itself (the Hessian, not the GGN), and the paper's
    # formula: exact where the OLS solution interpolates (n <= rank), and with the projected labels in general
    for n in (40, 600):
        out = lh.balanced_minimizer("digits", n, None, depth=3, width=16, seed=1)
        X0, Y, _ = lh.prepare_data("digits", n, None, whitening="none", seed=1)
        U, s, V = lh._svd_gram(X0)
        X = np.sqrt(n) * U @ V.T
        Ws = lin.ols_balanced_weights(X, Y, [64, 16, 16, 10], seed=1)
        lob = lin.hessian_top_eigenvalues(lin.gram_loss_fn(X, Y), [torch.as_tensor(W) for W in Ws], 1, tol=1e-10)[0]
        assert abs(out["lam"] - lob) < 1e-6 * lob and abs(out["lam"] / out["formula_proj"] - 1) < 1e-10
        assert (abs(out["lam"] / out["formula"] - 1) < 1e-10) == (n <= out["rank"])


def test_count_claim_at_the_paper_architectures():
    count = lh.run_count(lh.Setup(dataset="digits", n=1000))
    assert count.paper["784-256-10"]["measured"] == count.paper["784-256-10"]["formula"] == 7840
    assert count.paper["784-64-64-64-10"]["measured"] == 10 * 784
    m = lh.measure_count(count)
    assert m["count"].values == (7840 - 100,)  # a deterministic count: statistic "value"
    rec = _records(m)["count"]
    assert lh.TABLE["count"].statistic == "value" and rec.verdict == "disagrees" and rec.at_paper_setting


def test_experiment_docstring_examples_hold():
    import doctest

    results = [doctest.testmod(m, optionflags=doctest.NORMALIZE_WHITESPACE) for m in (lh.compute, lh.reading)]
    assert sum(r.attempted for r in results) > 0 and sum(r.failed for r in results) == 0


# --- the criteria of the third review: Fig. 5 (iii) a real move, Fig. 7 middle read both ways, Fig. 4 held run ---


def _fig5_at(positions):
    """A Fig. 5 whose truth sits at ``positions`` in both readings' intervals (t_max = t_1, sum = 2 t_1, L = 2)."""
    p = np.asarray(positions, dtype=float)
    t1 = np.geomspace(100.0, 1.0, p.size)
    lam = t1 * (1.0 + p)  # (lam - t1) / (2 t1 - t1) = p
    aniso = {"kappa": np.geomspace(1e3, 1.0, p.size), "ggn": lam, "t_1": t1, "t_max": t1, "t_sum": 2 * t1,
             "L_t_1": 2 * t1}
    ols = {w: {"ggn": np.array([1.0]), "t_1": np.array([1.0]), "t_sum": np.array([1.0]), "L_t_1": np.array([1.0]),
               "smin_lower": np.array([0.5])} for w in (False, True)}
    return lh.Fig5(aniso, tuple(np.linspace(0, 1, p.size)), ols, (0.1,))


def _floats(fig5, setup=None):
    setup = setup or lh.Setup(dataset="digits", n=1000, aniso_ts=(0.0, 0.5, 1.0))
    recs = _records(lh.measure_fig5(setup, fig5))
    return recs["fig5_floats_seen"], recs["fig5_floats_a"]


def test_fig5_floats_requires_a_monotone_real_move_and_a_constant_position_fails():
    # the three tests and their levels are rows of the table (parts), not constants of the code
    levels = {p.key.rpartition("-")[2]: (p.op, p.level) for p in lh.TABLE["fig5_floats_seen"].parts}
    assert levels == {"monotone": ("<=", 0.0), "raw": ("<=", 0.1), "white": (">=", 0.9)}
    assert [r.verdict for r in _floats(_fig5_at([0.0, 0.5, 1.0]))] == ["agrees", "agrees"]
    assert [r.verdict for r in _floats(_fig5_at([8.6e-6, 8e-4, 0.049, 0.53, 0.89, 1.0]),
                                       lh.Setup(dataset="digits", n=1000, aniso_ts=(0.0, 0.25, 0.5, 0.75, 0.9, 1.0)))] == \
        ["agrees", "agrees"]
    # a position stuck at one value never moves: two of the three tests fail ("partly": both rows are variants now)
    assert [r.verdict for r in _floats(_fig5_at([0.5, 0.5, 0.5]))] == ["partly", "partly"]
    # a real move that falls back once fails the monotone test
    moved_back = _floats(_fig5_at([0.0, 0.95, 0.9, 1.0]), lh.Setup(dataset="digits", n=1000, aniso_ts=(0.0, 0.3, 0.6, 1.0)))
    assert [r.verdict for r in moved_back] == ["partly", "partly"]
    # reading A's path of the chapter: monotone and ending at 1, but starting at 0.915 (a wide interval here)
    assert _floats(_fig5_at([0.915, 0.947, 1.0]))[1].verdict == "partly"


def test_fig5_claim_states_the_path_and_that_its_criterion_came_after_the_positions():
    setup = lh.Setup(dataset="digits", n=1000, aniso_ts=(0.0, 0.5, 1.0))
    for rec in _floats(_fig5_at([0.5, 0.5, 0.5]), setup):
        assert "X_t = U_r S^(1-t)" in rec.setting and "[0.0, 0.5, 1.0]" in rec.setting
        # the criterion was chosen after the positions were seen: the record says so, with no earlier level
        assert "after the positions" in rec.revised_because and rec.revised_from is None


def test_fig5_position_in_an_interval_narrower_than_the_tightness_tolerance_cannot_be_read():
    setup = lh.Setup(dataset="digits", n=1000, aniso_ts=(0.0, 0.5, 1.0))
    fig5 = _fig5_at([0.0, 0.5, 1.0])
    a = fig5.aniso
    a["t_sum"] = a["t_1"] * np.r_[1 + 1e-5, 2.0, 2.0]  # reading A's interval on raw pixels: 1e-5 of t_1 wide
    a["ggn"] = a["t_1"] + np.r_[0.0, 0.5, 1.0] * (a["t_sum"] - a["t_1"])
    m = lh.measure_fig5(setup, fig5)
    assert m["fig5_floats_a"].parts["fig5_floats_a-raw"].cannot_test  # 1e-5 < the 5% tolerance of (i)
    assert not m["fig5_floats_seen"].parts["fig5_floats_seen-raw"].cannot_test  # reading B's interval is t_1 wide
    recs = _records(m)
    assert recs["fig5_floats_a"].verdict == "inconclusive" and recs["fig5_floats_seen"].verdict == "agrees"


def _runs(lams, shares, seeds, *, converged=True, balance=0.9):
    """Fake trained runs (share-major, seed-minor) with final LOBPCG ``lams`` and the fields the claims read."""
    out = []
    for i, m in enumerate(shares):
        for j in range(seeds):
            out.append({"numeric": np.array([[lams[i, j]]]), "loss": np.array([1.0, 0.1 if converged else 0.5]),
                        "lr": np.array([1e-2, 1e-2]), "lr_max": 1e-2, "ols_loss": 0.1, "zero_loss": 1.0,
                        "majority_share": m, "balance": np.array([[balance]])})
    return out


def _fig67(kaiming_exp, minimizer_exp, converged=True):
    shares, seeds = (0.1, 0.2, 0.3, 0.4, 0.5), 3
    m = np.array(shares)[:, None] * np.ones((1, seeds))
    kai = 1.5 * 4 * m ** kaiming_exp * (1 + 0.001 * np.arange(seeds))  # seeds differ a little
    runs = _runs(kai, shares, seeds, converged=converged)
    im7 = lh.ImbalanceSweep(shares, {"no whitening": runs, "Kaiming init": runs, "tanh MLP": runs}, [],
                            {"no whitening": seeds, "Kaiming init": seeds, "tanh MLP": seeds})
    minis = [{"lam": 4 * a ** minimizer_exp * (1 + 0.001 * s), "majority_share": a, "formula": 4 * a ** 0.75}
             for a in shares for s in range(seeds)]
    im6 = lh.ImbalanceSweep(shares, {"balanced": runs}, minis, {"balanced": seeds})
    return lh.Fig7(im7), lh.Fig6({}, {}, (), (), im6)


def test_fig7_middle_qualitative_claim_and_quantitative_variant_with_the_band_of_fig6():
    setup = lh.Setup(dataset="digits", n=1000)
    assert lh.TABLE["fig6_right"].level == lh.TABLE["fig7_middle_band"].level == (0.6, 0.9)  # one band for both

    def fig7(*args):
        return _records(lh.measure_fig7(setup, *_fig67(*args)))

    recs = fig7(0.5, 0.75)
    assert recs["fig7_middle"].verdict == "agrees" and "qualitative reading" in recs["fig7_middle"].setting  # 0.5 > 0
    band = recs["fig7_middle_band"]
    assert band.verdict == "disagrees" and band.variant_of == "fig7_middle"  # 0.5 outside [0.6, 0.9], all converged
    assert "inside the band" in band.reduction_check and "0.75" in band.reduction_check
    # the minimizers outside the band too: the band cannot test the Kaiming runs on these subsets
    assert fig7(0.5, 0.5)["fig7_middle_band"].verdict == "inconclusive"
    # unconverged runs: the setting cannot test any of the three panels
    recs = fig7(0.5, 0.75, False)
    assert all(recs[k].verdict == "inconclusive" for k in ("fig7_left_trained", "fig7_middle", "fig7_middle_band",
                                                            "fig7_right"))
    # an exponent inside the band agrees in both readings
    recs = fig7(0.75, 0.75)
    assert recs["fig7_middle"].verdict == recs["fig7_middle_band"].verdict == "agrees"


def test_fig4_held_runs_start_where_the_judged_row_space_run_starts(monkeypatch):
    seen = []
    monkeypatch.setattr(lh.compute, "_sweep", lambda cfgs, setup, fn=None: seen.append(list(cfgs)) or [{} for _ in cfgs])
    setup = lh.Setup(dataset="digits", n=200, epochs=50, held4_epochs=777, measure_points=2, trace_points=2, seeds=3)
    fig4 = lh.run_fig4(setup)
    judged, held = dict(zip(fig4.runs, seen[0]))[("balanced", "rowspace")], seen[1]
    assert [h.seed for h in held] == [0, 1, 2] and all(h.max_epochs == 777 and h.n == 200 for h in held)
    assert (held[0].lr, held[0].width, held[0].depth, held[0].k) == (judged.lr, judged.width, judged.depth, judged.k)
    assert lh.Setup(dataset="digits", n=1000, converged_epochs=0).held_epochs == lh.Setup(dataset="digits", n=1000).epochs


def test_reduced_coordinates_give_the_full_networks_gd_iterates():
    # independent reference: train_gd on the full network; the reduced run must reproduce its weights and losses
    X, Y, _ = lh.prepare_data("digits", 300, None, whitening="rowspace", seed=0)
    dims = [X.shape[1], 12, 12, 10]
    W0 = lin.balanced_weights(dims, np.random.default_rng(1).uniform(0.0, 1.0, 10), seed=2)
    Us = lh.reduced_coordinates(W0, X, Y)
    assert Us[0].shape[1] <= 20 and all(U.shape[1] == 10 for U in Us[1:])
    R = [Us[l + 1].T @ W @ Us[l] for l, W in enumerate(W0)]
    full = lin.train_gd(W0, X, Y, lr=0.05, epochs=300, patience=100, min_rel_improvement=0.0)
    red = lin.train_gd(R, X @ Us[0], Y, lr=0.05, epochs=300, patience=100, min_rel_improvement=0.0)
    lifted = [Us[l + 1] @ W @ Us[l].T for l, W in enumerate(red.weights)]
    assert max(np.abs(a - b).max() for a, b in zip(lifted, full.weights)) < 1e-10
    np.testing.assert_allclose(red.losses, full.losses, rtol=1e-10)
    # on features whose covariance is not I on U_0 the basis is not invariant: the check can fail
    Xa = X * np.linspace(0.5, 2.0, X.shape[1])
    Ua = lh.reduced_coordinates(W0, Xa, Y)
    Ra = [Ua[l + 1].T @ W @ Ua[l] for l, W in enumerate(W0)]
    fa = lin.train_gd(W0, Xa, Y, lr=0.01, epochs=100, patience=100, min_rel_improvement=0.0)
    ra = lin.train_gd(Ra, Xa @ Ua[0], Y, lr=0.01, epochs=100, patience=100, min_rel_improvement=0.0)
    assert abs(ra.losses[-1] - fa.losses[-1]) > 1e-8


def test_held_reduced_run_stops_at_the_ols_loss_and_follows_the_full_network(monkeypatch):
    monkeypatch.setattr(lh.compute, "HELD_CHUNK", 2000)
    cfg = lh.HeldRun(100, "digits", max_epochs=5000, k=3, seed=0)
    r = lh.run_held_reduced(cfg)  # below the stop: every chunk runs (2000, 2000, 1000)
    assert r["epochs"].tolist() == [0, 5000] and r["checks"].size == 3 and r["loss_epochs"][-1] == 5000
    # independent reference: the full network trained from the same start by train_gd
    X, Y, _ = lh.prepare_data("digits", 100, None, whitening="rowspace", seed=0)
    dims = [X.shape[1], 64, 64, 64, 10]
    W0 = lin.balanced_weights(dims, np.random.default_rng(1).uniform(0.0, 1.0, 10), seed=2)
    full = lin.train_gd(W0, X, Y, lr=1e-2, epochs=5000, patience=100, min_rel_improvement=0.0)
    assert abs(r["loss"][-1] - full.losses[-1]) < 1e-12 and abs(r["loss"][20] - full.losses[2000]) < 1e-12
    W_ols = np.linalg.lstsq(X, Y, rcond=None)[0]
    assert abs(r["ols_loss"] - 0.5 * np.sum((X @ W_ols - Y) ** 2) / 100) < 1e-12
    assert r["ggn"][0] == pytest.approx(r["closed_I"][0], rel=1e-10)  # balanced start: the closed form is its GGN
    monkeypatch.setattr(lh.compute, "HELD_STOP", 1.0)  # any excess stops it: one chunk
    assert lh.run_held_reduced(cfg)["epochs"].tolist() == [0, 2000]


def test_depth_crossover_brackets_the_predicted_crossover_and_matches_the_closed_form():
    c = lh.depth_crossover(7)
    assert 3.2 <= c["crossover"] <= 7.8 and abs(c["crossover"] - round(c["crossover"])) >= 0.2
    assert c["depths"][2] < c["crossover"] < c["depths"][3] and np.all(np.diff(c["depths"]) == 1)
    np.testing.assert_allclose(c["lam"], c["theory"], rtol=1e-8)  # eigsh on Hessian-vector products vs the closed form
    # d ln(lambda)/dL = (L - crossover)/L^2 of the closed form: falls below, rises above, so the draw passes
    assert lh.crossover_passes(c["lam"]) == 1
    assert lh.crossover_passes(c["lam"] * np.exp(-np.arange(6.0))) == 0  # falls everywhere: fails above
    assert lh.crossover_passes(c["lam"] * np.exp(np.arange(6.0))) == 0  # rises everywhere: fails below


def test_path_families_run_from_the_raw_to_the_whitened_singular_values():
    s, n = np.array([9.0, 3.0, 0.5]), 16
    for fam in lh.PATH_FAMILIES:
        np.testing.assert_allclose(lh.path_singular_values(s, n, 0.0, fam), s)
        np.testing.assert_allclose(lh.path_singular_values(s, n, 1.0, fam), np.full(3, 4.0))
        mid = lh.path_singular_values(s, n, 0.5, fam)
        assert np.all((mid - np.minimum(s, 4.0) >= -1e-12) & (mid - np.maximum(s, 4.0) <= 1e-12))
    with pytest.raises(ValueError, match="family"):
        lh.path_singular_values(s, n, 0.5, "cubic")
    assert lh.floats_passes([0.0, 0.5, 0.95], 0.1, 0.9) == 1 and lh.floats_passes([0.0, 0.5, 0.85], 0.1, 0.9) == 0


def test_raw_minimizer_sharpness_is_the_hessians_at_the_ols_point():
    m = lh.balanced_minimizer("digits", 200, 0.3, depth=3, width=16, seed=0)
    X, Y, _ = lh.prepare_data("digits", 200, 0.3, whitening="none", seed=0)
    Ws = lin.ols_balanced_weights(X, Y, [X.shape[1], 16, 16, Y.shape[1]], seed=0)
    lam = lin.hessian_top_eigenvalues(lin.gram_loss_fn(X, Y), [torch.as_tensor(W) for W in Ws], 1, method="eigsh",
                                      tol=1e-10, seed=0)[0]  # the Hessian itself, by Hessian-vector products
    assert abs(m["lam_raw"] / lam - 1) < 1e-6 and m["lam_raw"] > 10 * m["lam"]


def _glued_texts():
    import json
    from pathlib import Path
    nb = json.loads((Path(__file__).resolve().parents[1] / "book" / "linear_hessian.ipynb").read_text())
    out = {}
    for cell in nb["cells"]:
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            meta = o.get("metadata", {}).get("scrapbook", {})
            if "application/papermill.record/text/plain" in data and meta.get("name", "").startswith("lh"):
                out[meta["name"]] = str(data["application/papermill.record/text/plain"]).strip("'\"")
    return out


def test_no_glued_sentence_of_the_chapter_is_garbled():
    import re
    texts = _glued_texts()
    assert len(texts) > 100  # the refreshed chapter's glue
    bad = re.compile(r"\b0 of \d+\b[^;]*\(none\)|\(\s*\)|\(\s*[,;]|[,;]\s*\)|[,;:]\s*[,;:.]|\bis\s+(?:conditions|[,;.])"
                     r"|\s[,;.]\s*$")
    garbled = {k: t for k, t in texts.items() if bad.search(t)}
    assert not garbled, garbled
    # the test can fail: the three sentences the chapter once printed
    for t in ("0 of 4 runs reach it within 0.001 of the zero map's loss (none); the excess",
              "The criterion is conditions failed of three: raw", "runs reached it ( ) converged"):
        assert bad.search(t)


def test_distinct_digits_separates_different_measurements():
    a, b = 0.106111, 0.111563  # the stalled Fig. 4 excesses that two digits print alike
    d = lh.distinct_digits([a, b])
    assert format(a, f".{d}g") != format(b, f".{d}g") and format(a, f".{d - 1}g") == format(b, f".{d - 1}g")
    assert lh.distinct_digits([0.5, 0.5]) == 2 and lh.distinct_digits([1.0, 2.0, 1.5]) == 2


def test_fig3_is_judged_on_every_start_and_its_record_gives_the_gap_in_size():
    setup = lh.Setup(dataset="digits", n=1000)
    norm = [88.93, 88.0, 86.89, 87.1, 87.57]
    trace = [10.0, 9.2, 8.1, 8.6, 9.0]  # falls by 19% where the norm falls by 2.3%
    two, four = _fake_run(trace, norm), _fake_run(trace, norm, layers=4)
    fig3 = lh.Fig3((two, four), ("2 layers", "4 layers"))
    one = _records(lh.measure_fig3(setup, fig3))["fig3"]
    assert one.verdict == "inconclusive" and "too few" in one.cause  # the figure's runs alone: one start
    starts = lh.Fig3Starts(fig3.names, ((two,) * 5, (four,) * 5))
    ratio = (1 - 8.1 / 10.0) / (1 - 86.89 / 88.93)
    assert starts.drop_ratio() == [[pytest.approx(ratio)] * 5] * 2
    recs = _records(lh.measure_fig3(setup, fig3, starts))
    assert recs["fig3"].verdict == "agrees" and recs["fig3_two_layer"].verdict == "agrees"
    assert "5 starts" in recs["fig3"].uncertainty and f"{ratio:.3g} times as much" in recs["fig3"].uncertainty
    # the starts carry the verdict: five starts whose changes anti-correlate fail it
    anti = _fake_run(trace, [-t for t in norm[::-1]], layers=4)
    bad = lh.Fig3Starts(fig3.names, ((two,) * 5, (anti,) * 5))
    assert _records(lh.measure_fig3(setup, fig3, bad))["fig3"].verdict != "agrees"


def test_fig7_left_record_states_the_cut_off_sensitivity_and_the_unbalanced_minimizer():
    setup = lh.Setup(dataset="digits", n=1000)
    shares, seeds = (0.1, 0.2, 0.3, 0.4, 0.5), 5
    lam = np.array([[1e5, 2e5, 1.5e5, 3e5, 2.5e5]] * seeds) * (1 + 0.01 * np.arange(seeds))[:, None]
    cut = lam.copy()
    cut[0, 1] = 1e3  # one value of one series falls 200-fold: that series turns once less
    rows = [{"lam_raw": lam[j, i], "lam_raw_cut": cut[j, i], "lam_raw_unbalanced": 40.0 + i, "majority_share": a}
            for i, a in enumerate(shares) for j in range(seeds)]
    fig7, fig6 = _fig67(0.5, 0.75)
    fig7 = lh.Fig7(fig7.imbalance, tuple(rows), seeds)
    raw = lh.Fig7Raw(shares, seeds, tuple(rows))
    rec = _records(lh.measure_fig7(setup, fig7, fig6, raw))["fig7_left"]
    assert rec.verdict == "inconclusive" and "balanced minimizers" in rec.cause
    assert "1 of 25 values change, by up to a factor 2e+02" in rec.uncertainty
    assert "(1 of 5 series differ)" in rec.uncertainty and "40 to 44, below 2/eta" in rec.uncertainty
    assert "balanced minimizers only" in rec.uncertainty
    # other subsets than Fig. 7's own: refused
    other = lh.Fig7Raw(shares, seeds, tuple({**r, "lam_raw": 2 * r["lam_raw"]} for r in rows))
    with pytest.raises(ValueError, match="same subsets"):
        lh.measure_fig7(setup, fig7, fig6, other)


def test_raw_minimizer_variants_against_the_hessian_and_the_balanced_minimizer():
    cfg = lh.extra._RawConfig("digits", 200, 0.3, 0, depth=3, width=16)
    v = lh.raw_minimizer_variants(cfg)
    assert v["lam_raw"] == pytest.approx(lh.balanced_minimizer("digits", 200, 0.3, depth=3, width=16, seed=0)["lam_raw"],
                                         rel=1e-12)
    X, Y, _ = lh.prepare_data("digits", 200, 0.3, whitening="none", seed=0)
    W = np.linalg.lstsq(X, Y, rcond=None)[0].T
    Ws = lh.unbalanced_factorization(W, [X.shape[1], 16, 16, Y.shape[1]])
    lam = lin.hessian_top_eigenvalues(lin.gram_loss_fn(X, Y), [torch.as_tensor(M) for M in Ws], 1, method="eigsh",
                                      tol=1e-10, seed=0)[0]  # the Hessian itself at the OLS point
    assert abs(v["lam_raw_unbalanced"] / lam - 1) < 1e-6 and v["lam_raw_unbalanced"] < v["lam_raw"] / 10
    assert v["balance_unbalanced"] > 0.9 and v["rank_cut"] <= v["rank"] and v["loss_cut"] >= v["ols_loss"] - 1e-12


def test_unbalanced_factorization_carries_the_map_in_its_first_layer():
    rng = np.random.default_rng(72)
    W = rng.standard_normal((3, 7)) * 50.0
    Ws = lh.unbalanced_factorization(W, [7, 5, 4, 3])
    assert np.allclose(Ws[2] @ Ws[1] @ Ws[0], W) and all(np.isclose(np.linalg.norm(M, 2), 1.0) for M in Ws[1:])
    assert lin.balance_gaps(Ws).max() > 0.9  # far from balanced
    with pytest.raises(ValueError, match="at least dL"):
        lh.unbalanced_factorization(W, [7, 2, 3])


def _gap_run(gaps, epochs):
    """A run whose closed form sits ``gaps`` (relative to the top eigenvalue 1) above LOBPCG at ``epochs``."""
    g = np.asarray(gaps, float)
    numeric = np.column_stack([np.ones_like(g), 0.5 * np.ones_like(g)])
    return {"closed_I": numeric + g[:, None], "numeric": numeric, "ggn": numeric + g[:, None],
            "epochs": np.asarray(epochs), "rank": 5}


def _kendall_by_pairs(x, y):
    """Kendall's tau-a by counting pairs (no ties here): the reference the reading's scipy call is checked against."""
    pairs = [(i, j) for i in range(len(x)) for j in range(i + 1, len(x))]
    return sum(np.sign((x[j] - x[i]) * (y[j] - y[i])) for i, j in pairs) / len(pairs)


def test_trajectory_reads_kendalls_tau_of_the_gap_along_the_epochs():
    epochs = [0, 1, 6, 40, 251, 1585, 10000]
    falling = [0.4, 0.39, 0.35, 0.3, 0.2, 0.01, 0.001]
    wiggle = [0.4, 0.41, 0.35, 0.36, 0.2, 0.25, 0.1]
    rising = falling[::-1]
    runs = tuple(_gap_run(g, epochs) for g in (falling, wiggle, rising))
    traj = lh.Trajectory({"fig1": runs, "fig4": runs}, (1, 2, 3))
    np.testing.assert_allclose(traj.gaps("fig1"), [falling, wiggle, rising])
    taus = traj.taus("fig1")
    ref = [_kendall_by_pairs(np.asarray(epochs, float), np.asarray(g)) for g in (falling, wiggle, rising)]
    np.testing.assert_allclose(taus, ref)
    assert taus[0] == -1 and taus[2] == 1 and -1 < taus[1] < 0


def test_trajectory_row_agrees_only_when_the_gap_falls_to_an_approximation_on_enough_fresh_runs():
    epochs = [0, 1, 6, 40, 251]
    down, up = [0.4, 0.3, 0.2, 0.1, 0.005], [0.005, 0.1, 0.2, 0.3, 0.4]
    wrong = [0.45, 0.4, 0.3, 0.25, 0.2]  # falls, but ends 20% off: a closed form scaled by 0.8 on a real run does this
    near = [0.3, 0.2, 0.1, 0.07, 0.05]  # falls, ends 5% off: the top eigenvalue repeated does this on Fig. 1's runs
    setup = lh.Setup()
    def verdict(*runs_gaps):
        runs = tuple(_gap_run(g, epochs) for g in runs_gaps)
        traj = lh.Trajectory({"fig1": runs, "fig4": runs}, tuple(range(len(runs))))
        m = lh.measures.measure_trajectory(setup, traj)["fig4_trajectory"]
        return judge(lh.TABLE["fig4_trajectory"], m).verdict
    # a sign test over runs on both parts: 6 of 6 falling to below 0.01 decides (p = 1/64), 5 of 6 does not
    assert verdict(*[down] * 6) == "agrees"
    assert verdict(*[down] * 5, up) == "inconclusive"
    # the direction alone does not pass a formula that stays 20% off, and rising gaps never agree
    assert verdict(*[wrong] * 6) != "agrees" and verdict(*[near] * 6) != "agrees"
    assert verdict(*[up] * 6) in ("disagrees", "inconclusive")
    for key in ("fig1_trajectory", "fig4_trajectory"):
        spec = lh.TABLE[key]
        assert spec.counted
        # post hoc: the end part's level was lowered after runs had been seen, and the part says so
        assert [p.statistic for p in spec.parts] == ["sign", "sign"]
        assert spec.parts[1].revised_from == 0.1 and spec.parts[1].level < spec.parts[1].revised_from
        assert spec.parts[1].revised_because

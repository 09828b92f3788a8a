"""Tests of htlib.dynamics and of the training features the spike-to-heavy-tail chapter relies on
(weight normalization, StepLR, record-every-k). Small sizes: the whole file runs in seconds."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from htlib import dynamics, spectra
from htlib.two_layer import TwoLayerConfig, train

sys.path.insert(0, str(Path(__file__).resolve().parent))
import perturb  # noqa: E402

RNG = np.random.default_rng(20261130)


def _orthonormal(a: int, b: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((a, b)))
    return q


def _small(**kw) -> TwoLayerConfig:
    base = dict(n=96, d=24, h=40, n_test=32, optimizer="adam", eta=0.3, steps=6, seed=3, dtype="float64")
    base.update(kw)
    return TwoLayerConfig(**base)


# ----------------------------------------------------------------------------- overlaps


@pytest.mark.parametrize("a,b", [(50, 20), (30, 30)])
def test_overlap_rows_and_columns_sum_to_at_most_one(a, b):
    J, Q = _orthonormal(a, b, 1), _orthonormal(a, b, 2)
    O = spectra.overlaps(J, Q)
    # Row i of (JᵀQ)∘2 sums to ||Qᵀ j_i||², the squared norm of a unit vector's projection.
    np.testing.assert_allclose(O.sum(axis=1), np.sum((Q.T @ J) ** 2, axis=0), rtol=1e-12)
    assert np.all(O.sum(axis=1) <= 1 + 1e-12) and np.all(O.sum(axis=0) <= 1 + 1e-12)
    if a == b:  # square orthonormal bases: O is doubly stochastic
        np.testing.assert_allclose(O.sum(axis=1), 1.0, atol=1e-12)
        np.testing.assert_allclose(O.sum(axis=0), 1.0, atol=1e-12)
    else:  # a proper subspace: the sums fall strictly short on average, b/a of the mass
        assert O.sum() < b - 1e-6


def test_update_overlaps_of_a_weight_and_update():
    h, d = 40, 25
    W = RNG.standard_normal((h, d))
    M = RNG.standard_normal((h, d))
    O_U, O_V = dynamics.update_overlaps(W, M)
    assert O_U.shape == O_V.shape == (d, d)
    # V's are d x d orthogonal: doubly stochastic; U's span d of h dimensions: sums <= 1.
    np.testing.assert_allclose(O_V.sum(axis=0), 1.0, atol=1e-10)
    np.testing.assert_allclose(O_V.sum(axis=1), 1.0, atol=1e-10)
    assert np.all(O_U.sum(axis=0) <= 1 + 1e-10) and np.all(O_U.sum(axis=1) <= 1 + 1e-10)


def test_update_overlaps_see_a_planted_spike():
    # W1 = W0 + theta u vᵀ with theta far above the BBP threshold: the top singular vectors of W1
    # align with those of the rank-one update; the noise directions do not.
    h, d, theta = 400, 200, 60.0
    W0 = RNG.standard_normal((h, d))
    u = RNG.standard_normal(h); u /= np.linalg.norm(u)
    v = RNG.standard_normal(d); v /= np.linalg.norm(v)
    M = theta * np.outer(u, v)
    O_U, O_V = dynamics.update_overlaps(W0 + M, M)
    assert O_U[0, 0] > 0.8 and O_V[0, 0] > 0.8
    assert O_U[1:, 0].max() < 0.05 and O_V[1:, 0].max() < 0.05
    # Rectangular spiked model (Benaych-Georges & Nadakuditi): with noise X/sqrt(h), c = d/h and
    # signal strength th = theta/sqrt(h), the squared overlaps tend to
    #   |<u1,u>|^2 = 1 - (c + th^2)/(th^2 (th^2 + 1)),  |<v1,v>|^2 = 1 - c(1 + th^2)/(th^2 (th^2 + c)).
    th2, c = theta**2 / h, d / h
    left = 1 - (c + th2) / (th2 * (th2 + 1))
    right = 1 - c * (1 + th2) / (th2 * (th2 + c))
    assert O_U[0, 0] == pytest.approx(left, abs=0.03)
    assert O_V[0, 0] == pytest.approx(right, abs=0.03)


def test_overlap_summary_matches_brute_force():
    O = RNG.random((30, 30)) ** 3
    s = dynamics.overlap_summary(O, k=12, n_top=4)
    block = O[:12, :12]
    mass = sum(block[i, j] for i in range(12) for j in range(12))
    diag = sum(block[i, i] for i in range(12))
    dist = sum(abs(i - j) * block[i, j] for i in range(12) for j in range(12)) / mass
    pr = np.mean([block[i].sum() ** 2 / sum(x * x for x in block[i]) for i in range(12)])
    assert s.block_mass == pytest.approx(mass)
    assert s.diag_fraction == pytest.approx(diag / mass)
    assert s.offdiag_mass == pytest.approx(mass - diag)
    assert s.mean_index_distance == pytest.approx(dist)
    assert s.participation == pytest.approx(pr)
    order = sorted(((O[i, j], i, j) for i in range(30) for j in range(30)), reverse=True)[:4]
    np.testing.assert_allclose(s.top_values, [o[0] for o in order])
    assert [tuple(x) for x in s.top_index] == [(o[1], o[2]) for o in order]
    # an identity overlap is purely diagonal, one partner per row
    s_id = dynamics.overlap_summary(np.eye(10), k=10)
    assert s_id.diag_fraction == 1.0 and s_id.mean_index_distance == 0.0 and s_id.participation == 1.0


def test_overlap_summary_rejects_bad_input():
    with pytest.raises(ValueError, match="square"):
        dynamics.overlap_summary(np.ones((2, 3)))
    with pytest.raises(ValueError, match="k must"):
        dynamics.overlap_summary(np.ones((2, 2)), k=0)
    with pytest.raises(ValueError, match="same shape"):
        dynamics.update_overlaps(np.ones((3, 2)), np.ones((2, 3)))


# ----------------------------------------------------------------------------- widths and tails


def test_spectrum_width_closed_form_and_scale_free():
    eigs = np.logspace(0, 3, 10001)  # log-uniform over 3 decades
    w = dynamics.spectrum_width(eigs)
    assert w.decades == pytest.approx(3.0)
    assert w.bulk_decades == pytest.approx(0.9 * 3.0, abs=1e-3)
    # mean of 10^U, U ~ Uniform(0, 3): (10^3 - 1) / (3 ln 10)
    assert w.max_over_mean == pytest.approx(1e3 / (999 / (3 * np.log(10))), rel=1e-3)
    w2 = dynamics.spectrum_width(7.5 * eigs)
    assert dataclasses.astuple(w2) == pytest.approx(dataclasses.astuple(w))


def test_top_outlier_pvalue_against_simulation():
    alpha, xmin, m = 2.5, 2.0, 40
    # closed form for m = 1: the Pareto survival function
    assert dynamics.top_outlier_pvalue(np.array([1.0, 8.0]), alpha, xmin) == pytest.approx((8 / 2) ** (1 - alpha))
    # Monte Carlo: P(max of m Pareto draws >= x)
    rng = np.random.default_rng(5)
    draws = xmin * (1 - rng.random((20000, m))) ** (-1 / (alpha - 1))
    x = 30.0
    sample = np.concatenate([np.full(m - 1, xmin), [x]])
    p = dynamics.top_outlier_pvalue(sample, alpha, xmin)
    mc = np.mean(draws.max(axis=1) >= x)
    assert p == pytest.approx(mc, abs=4 * np.sqrt(mc * (1 - mc) / 20000))


def _wishart(h: int, d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return spectra.esd(rng.standard_normal((h, d)))


def _heavy_esd(h: int, d: int, seed: int) -> np.ndarray:
    """Raw ESD of a Student-t(1.5) matrix: a very heavy tail (Martin & Mahoney's mu < 2)."""
    return spectra.esd(np.random.default_rng(seed).standard_t(1.5, (h, d)))


def test_esd_report_separates_heavy_tail_mp_and_spike():
    def labels(e):  # what the tests read, checked under round-off perturbations of the ESD (tests/perturb.py)
        r = dynamics.esd_report(e, h=600, d=300)
        return r.phase, bool(r.heavy_tailed)

    heavy = _heavy_esd(600, 300, 7)
    assert perturb.stable(labels, heavy) == ("heavy-tailed", True)
    assert dynamics.esd_report(heavy, h=600, d=300).alpha < 2.5
    mp = _wishart(600, 300, 8)
    assert perturb.stable(labels, mp) == ("random-like", False)
    spiked = mp.copy()
    spiked[-1] = 1e3 * mp.max()  # a spike far from a light bulk
    assert perturb.stable(labels, spiked) == ("bulk+spikes", False)
    # structural zeros of WᵀW when d > h are dropped: same report as the h x h Gram's spectrum
    W = np.random.default_rng(9).standard_normal((300, 600))
    full = np.sort(np.linalg.eigvalsh(W.T @ W))
    assert dynamics.esd_report(full, h=300, d=600).phase == dynamics.esd_report(spectra.esd(W), h=300, d=600).phase
    with pytest.raises(ValueError, match="eigs must hold"):
        dynamics.esd_report(mp[:100], h=600, d=300)


def test_steps_to_heavy_tail_finds_the_first_record():
    mp = _wishart(600, 300, 10)
    hot = _heavy_esd(600, 300, 11)
    track = dynamics.phase_track([0, 5, 10, 15], [mp, mp, hot, hot], h=600, d=300)
    assert dynamics.steps_to_heavy_tail(track) == (10, 5)
    assert track.phase == perturb.stable(lambda es: dynamics.phase_track([0, 5, 10, 15], es, h=600, d=300).phase,
                                         [mp, mp, hot, hot]) == ("random-like", "random-like", "heavy-tailed",
                                                                 "heavy-tailed")
    assert list(track.heavy_tailed) == [r.heavy_tailed for r in track.reports]
    assert dynamics.steps_to_heavy_tail(dynamics.phase_track([0, 5], [mp, mp], h=600, d=300)) == (None, None)
    assert dynamics.steps_to_heavy_tail(dynamics.phase_track([3], [hot], h=600, d=300)) == (3, None)
    # the strict option can only drop steps
    first_strict, _ = dynamics.steps_to_heavy_tail(track, strict=True)
    assert first_strict is None or first_strict >= 10
    with pytest.raises(ValueError, match="PhaseTrack"):
        dynamics.steps_to_heavy_tail([0, 1])


def test_phase_track_of_a_random_matrix_and_a_spiked_one():
    h, d = 1200, 600
    W0 = np.random.default_rng(11).standard_normal((h, d))
    u = np.ones(h) / np.sqrt(h)
    v = np.ones(d) / np.sqrt(d)
    W1 = W0 + 3 * np.sqrt(h) * np.outer(u, v)  # strength 3 in MP units: far above the BBP threshold
    track = dynamics.phase_track([0, 1], [spectra.esd(W0), spectra.esd(W1)], h=h, d=d)
    # the labels and the spike counts hold under round-off perturbations of the ESDs (tests/perturb.py)
    def labels(es):
        t = dynamics.phase_track([0, 1], es, h=h, d=d)
        return t.phase, tuple(bool(n > 0) for n in t.num_spikes)

    assert perturb.stable(labels, [spectra.esd(W0), spectra.esd(W1)]) == (("random-like", "bulk+spikes"), (False, True))
    assert track.phase[0] == "random-like" and not track.heavy_tailed.any()
    g = d / h
    lo, hi = (1 - np.sqrt(g)) ** 2, (1 + np.sqrt(g)) ** 2
    assert track.gamma == pytest.approx(g)
    assert track.bulk_edge[0] == pytest.approx(hi, rel=0.05)
    assert track.num_spikes[0] == 0 and track.num_spikes[1] >= 1
    # BBP location of the outlier of W1ᵀW1/h for spike strength th: (1 + th^2)(th^2 + g)/th^2
    th2 = 9.0
    assert track.top[1, 0] == pytest.approx((1 + th2) * (th2 + g) / th2, rel=0.05)
    assert track.top[0, 0] < hi * 1.05 and track.top[0, 0] > lo
    assert track.phase[1] == "bulk+spikes"


# ----------------------------------------------------------------------------- training features


def test_weight_normalization_keeps_frobenius_norm_after_every_step():
    # the "after_update" order stores the normalized matrix; the authors' default order is tested below
    cfg = _small(weight_norm=True, weight_norm_order="after_update", steps=5, keep_weights=tuple(range(6)), eta=1.0)
    traj = train(cfg)
    target = np.sqrt(cfg.h * cfg.d)
    for t in range(1, 6):
        assert np.linalg.norm(traj.weights[t]) == pytest.approx(target, rel=1e-10)
    # the ESD's trace is ||W||_F^2 = h d at every recorded step after the first update
    for s, e in zip(traj.steps, traj.esd):
        if s >= 1:
            assert e.sum() == pytest.approx(cfg.h * cfg.d, rel=1e-9)


def test_weight_normalization_float32():
    cfg = _small(weight_norm=True, weight_norm_order="after_update", steps=3, keep_weights=(1, 2, 3), dtype="float32",
                 optimizer="gd", eta=50.0)
    traj = train(cfg)
    for t in (1, 2, 3):
        assert np.linalg.norm(traj.weights[t].astype(np.float64)) == pytest.approx(np.sqrt(cfg.h * cfg.d), rel=1e-5)


@pytest.mark.parametrize("gamma", [0.2, 0.6, 1.0])
def test_steplr_reproduces_torch_scheduler(gamma):
    cfg = _small(steps=7, eta=0.8, steplr_gamma=gamma)
    traj = train(cfg)
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=cfg.eta)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=gamma)
    expected = []
    for _ in range(cfg.steps):
        expected.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    np.testing.assert_allclose(traj.lr, expected, rtol=1e-12)


@pytest.mark.parametrize("optimizer", ["adam", "gd"])
def test_record_every_k_matches_record_every_step(optimizer):
    eta = 0.3 if optimizer == "adam" else 20.0
    every = train(_small(optimizer=optimizer, eta=eta, steps=10, record_every=1))
    sparse = train(_small(optimizer=optimizer, eta=eta, steps=10, record_every=4))
    assert list(sparse.steps) == [0, 4, 8, 10]  # every k-th step and the last one
    idx = {int(s): i for i, s in enumerate(every.steps)}
    for j, s in enumerate(sparse.steps):
        i = idx[int(s)]
        np.testing.assert_allclose(sparse.esd[j], every.esd[i], rtol=1e-12, atol=1e-12)
        assert sparse.alpha_ks[j] == pytest.approx(every.alpha_ks[i], rel=1e-12)
        assert sparse.train_loss[j] == pytest.approx(every.train_loss[i], rel=1e-12)


def test_step_overlaps_match_update_overlaps_of_kept_weights():
    traj = train(_small(steps=2, keep_weights=(0, 1, 2), eta=1.0))
    M = traj.weights[2] - traj.weights[1]
    got = dynamics.step_overlaps(traj, 1)
    before = dynamics.update_overlaps(traj.weights[1], M)
    after = dynamics.update_overlaps(traj.weights[2], M)
    np.testing.assert_allclose(got["U_before"], before[0], atol=1e-12)
    np.testing.assert_allclose(got["V_before"], before[1], atol=1e-12)
    np.testing.assert_allclose(got["U_after"], after[0], atol=1e-12)
    np.testing.assert_allclose(got["V_after"], after[1], atol=1e-12)
    with pytest.raises(ValueError):
        dynamics.step_overlaps(traj, 2)  # W_3 was never made

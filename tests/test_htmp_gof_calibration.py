"""The calibration of htlib.htmp.inverse_htmp_gof: samples of the law it tests are rejected at the nominal rate.

Its own file: pytest-xdist's --dist loadfile sends files with the fewest tests last, so this one slow test runs beside
the end of the others instead of lengthening the run of the faster tests of test_htmp_gof.py."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from htlib import htmp


def _uniform_sum_pmf(m: int, top: int) -> np.ndarray:
    """The law of the sum of ``m`` independent uniforms on {0, ..., top} (index: the sum), by convolution."""
    pmf = np.ones(1)
    for _ in range(m):
        pmf = np.convolve(pmf, np.full(top + 1, 1.0 / (top + 1)))
    return pmf


@pytest.mark.slow
def test_law_samples_are_rejected_at_the_nominal_rate():
    # 12 beta-Laguerre samples of three laws at the NTK chapter's size (n = 1000; gamma refitted over three values),
    # each tested against 4 refitted replicates (reps = 4: p on the grid k/5).  A fit over the three gammas costs 0.3
    # to 1.3 s whatever n, so the replicates set the cost: 5 fits a sample, ~40 s CPU (19 replicates: ~140 s).
    # If the test is calibrated, a sample's KS is exchangeable with its replicates' (ties have probability 0), so
    # k = #{replicates with KS >= the sample's} is uniform on {0, ..., 4}, independently across samples, and
    # p = (1 + k)/5 rejects at the level 1/5 with probability exactly 1/5.  Hence, derived here:
    # - rejections at 0.2 (k = 0): Binomial(12, 0.2), 6 or more with probability 0.019 (the 19-replicate version's
    #   bound: 3 or more of 12 at 0.05, probability 0.02);
    # - K = sum of k = 5 sum(p) - 12: the sum of 12 uniforms on {0..4} (mean 24, sd 4.9), exactly by convolution:
    #   P(K <= 11) = P(K >= 37) = 0.0046.  K moves with a null shifted either way; the rejections only with one too
    #   tight.
    # Both fail a miscalibrated test (this test run with the null broken, 2026-12-04): a null drawn at 1.5 n (too
    # regular: too small KS) gives 6 rejections and K = 9; the i.i.d. null (too loose) K = 37.  These samples: 1
    # rejection, K = 24.  With 19 replicates (the first 4 are these: the seeds are SeedSequence words, the same
    # prefix at any reps) the old bounds (3 rejections, mean p 0.525 +- 3.5 x 0.288/sqrt(12)) passed the i.i.d. null
    # (mean p 0.804) and failed the 1.5 n one on its mean alone (0.217).
    laws = [(1.0, 0.5), (5.0, 0.3), (20.0, 0.7)]
    p = []
    for i in range(4):
        for j, (kappa, gamma) in enumerate(laws):
            s = 100_000 * (j + 1) + i
            y = 1.0 / htmp.sample_htmp(1000, kappa, gamma, seed=s)
            p.append(htmp.inverse_htmp_gof(y, (0.3, 0.5, 0.7), reps=4, seed=s).p)
    p = np.asarray(p)
    k = np.rint(5 * p).astype(int) - 1
    np.testing.assert_allclose(p, (1 + k) / 5, rtol=0, atol=1e-12)  # p lies on the grid
    assert stats.binom.sf(5, 12, 0.2) < 0.02
    assert int(np.sum(k == 0)) <= 5, p
    pmf = _uniform_sum_pmf(12, 4)
    assert pmf[:12].sum() < 0.005 and pmf[37:].sum() < 0.005 and pmf[12:37].sum() > 0.99
    assert 12 <= int(k.sum()) <= 36, p


@pytest.mark.slow
def test_law_samples_are_rejected_at_the_nominal_rate_at_the_ntk_corner():
    # The same calibration where the chapter's NTK fits sit: kappa near the fit's lower bound 0.1, gamma 0.05 (the
    # lowest value of the grid), n = 1000, refitted over the chapter's 8-gamma grid (Setup.ntk_gammas) at its cut-off.
    # 12 samples (two laws, 6 each), 4 refitted replicates each: the bounds derived above hold unchanged (at most 5
    # rejections at 0.2; K = sum of k in [12, 36]).  Measured 2026-12-06 on the two-core AMD EPYC at load 2-3: 130 s;
    # 3 rejections at 0.2, K = 25, no replicate losing an eigenvalue to the cut-off (5 of the 12 fits choose gamma
    # 0.1 and kappa about 0.25 over gamma 0.05 and kappa 0.11: the grid's neighbours are hard to tell apart here).
    from htlib.experiments.htmp import Setup

    setup = Setup()
    laws = [(0.11, 0.05), (0.12, 0.05)]
    p, lost = [], 0
    for i in range(6):
        for j, (kappa, gamma) in enumerate(laws):
            s = 200_000 * (j + 1) + i
            y = 1.0 / htmp.sample_htmp(1000, kappa, gamma, seed=s)
            g = htmp.inverse_htmp_gof(y, setup.ntk_gammas, rtol=setup.ntk_rtols[0], reps=4, seed=s)
            p.append(g.p)
            lost += int(np.sum(g.null_n < g.fit.n))
    p = np.asarray(p)
    k = np.rint(5 * p).astype(int) - 1
    np.testing.assert_allclose(p, (1 + k) / 5, rtol=0, atol=1e-12)
    assert lost == 0  # at the claim's cut-off no replicate loses eigenvalues: the null is the data's
    assert int(np.sum(k == 0)) <= 5, p
    assert 12 <= int(k.sum()) <= 36, p

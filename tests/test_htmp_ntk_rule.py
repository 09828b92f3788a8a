"""The operating characteristic of the HTMP chapter's NTK rule, exactly, through htlib.stats directly.

Per training seed the goodness-of-fit test keeps the inverse HTMP law (p > 0.05) or rejects it.  A true law is
rejected on 5% of seeds (the test's size); a law rejected on 20% of seeds is wrong.  The row ``ntk-lenet-fits``
tests the count of seeds kept with :func:`htlib.stats.sign_test` (its share and margin).  Here every count k of n
seeds goes through ``sign_test`` with the row's own share, margin and confidence, and is weighted by its binomial
probability: P(agrees) and P(disagrees) are exact, no simulation.  Seeds are doubled (5, 10, ..., 320) because an
exact binomial rule is a saw-tooth in n (at a true law P(agrees) is 0.377 at 19 seeds and 0.358 at 20): more seeds
must not make the verdict worse from one doubling to the next.
"""

from __future__ import annotations

import pytest
import scipy.stats

from htlib import stats
from htlib.experiments import htmp as ch

DOUBLING = (5, 10, 20, 40, 80, 160, 320)


def _row():
    return ch.TABLE["ntk-lenet"].parts[0]


def oc(keep: float, n: int, *, share=None, margin=None) -> tuple[float, float]:
    """Exact (P(agrees), P(disagrees)) at ``n`` seeds, each kept with probability ``keep``, under the row's rule
    (or another ``share``/``margin``), each count read as the judge reads a sign row."""
    row = _row()
    share = row.share if share is None else share
    margin = row.margin if margin is None and share == row.share else margin
    alpha = 1.0 - row.confidence
    agree = disagree = 0.0
    for k in range(n + 1):
        t = stats.sign_test([1.0] * k + [0.0] * (n - k), ">", row.level, row.confidence, share=share, margin=margin)
        w = scipy.stats.binom.pmf(k, n, keep)
        if t.p < alpha:
            agree += w
        elif t.p_opposite < alpha:
            disagree += w
    return float(agree), float(disagree)


def test_the_row_is_a_binomial_test_against_the_tests_own_size():
    row = _row()
    assert row.statistic == "sign" and row.op == ">" and row.level == 0.5
    assert row.share == pytest.approx(1 - ch.measures.GOF_ALPHA)  # a true law is kept on 95% of seeds
    assert 0.8 < row.margin_share < row.share  # a law rejected on 20% of seeds lies below the margin


def test_a_law_rejected_on_a_fifth_of_seeds_agrees_less_and_less():
    agree = [oc(0.8, n)[0] for n in DOUBLING]
    # never above the size, falling from where agreement becomes attainable (19 seeds, all kept), towards 0
    assert max(agree) < 0.02, agree  # 0, 0, 0.0115, 0.0079, 0.0018, 0.0005, 3e-6
    first = next(i for i, a in enumerate(agree) if a > 0)
    assert all(b <= a for a, b in zip(agree[first:], agree[first + 1:])), agree
    assert agree[-2] < 1e-3 and agree[-1] < 1e-4, agree
    # and the rule tells it apart: "disagrees" grows towards 1
    disagree = [oc(0.8, n)[1] for n in DOUBLING]
    assert all(b >= a for a, b in zip(disagree, disagree[1:])) and disagree[-1] > 0.999, disagree


def test_a_true_law_agrees_no_less_often_as_seeds_are_added():
    agree = [oc(0.95, n)[0] for n in DOUBLING]
    assert all(b >= a for a, b in zip(agree, agree[1:])), agree  # 0, 0, 0.358, 0.677, 0.895, 0.997, 1
    assert agree[2] > 0.3 and agree[-2] > 0.99, agree
    # and it is rejected at most at the binomial test's size, at any number of seeds
    assert max(oc(0.95, n)[1] for n in range(5, 161)) <= 0.05


def test_the_old_rule_against_one_half_fails_both_properties():
    # the same counts tested against one half: more seeds make the wrong law agree, up to near certainty
    old = [oc(0.8, n, share=0.5, margin=0.5)[0] for n in (20, 40, 100)]
    assert old == sorted(old) and old[0] > 0.7 and old[-1] > 0.99, old


def test_the_chapters_helper_reads_the_same_numbers():
    for keep, n in ((0.95, 6), (0.8, 40), (0.95, 80)):
        assert ch.measures.rule_oc(_row(), keep, n) == pytest.approx(oc(keep, n), abs=1e-12)

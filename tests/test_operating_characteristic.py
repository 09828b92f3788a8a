"""The operating characteristic of every statistic the judge offers: P(agrees) as the number of runs grows.

Two properties for each statistic (the book's rule: more runs never make a true claim less likely to agree, nor a
false one more likely):

* a claim that holds by a stated effect agrees no less often as runs go 5 -> 10 -> 20 -> 40 (-> 80);
* a claim false by a stated effect agrees at most as often as the test's size, and less and less often as runs are
  added, towards 0.

The sign statistic is computed exactly: every count k of n runs is passed through :func:`htlib.claims.judge` itself
and weighted by its binomial probability, so the rule tested is the judge's, not a copy of it.  The t-interval and
the bootstrap are simulated (normal runs; a fit whose estimate and refits scatter as 1/sqrt(n)), with fixed seeds
and enough draws that the steps asserted are many standard errors wide.

The rule the HTMP chapter first used for its NTK claim (the share of seeds that keep a law at the 5% level, tested
against one half) is the counter-example: a law that the goodness-of-fit test rejects on 30% of seeds agrees more
and more often as seeds are added, and these tests fail it.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.stats

from htlib.claims import Measurement, Spec, judge

NS = (5, 10, 20, 40, 80)
ALPHA = 0.05


def _spec(**kw) -> Spec:
    base = dict(key="c", paper="003", where="§4", claim="a claim", measurement="x", op=">", level=0.0,
                statistic="mean")
    return Spec(**{**base, **kw})


# --- the sign statistic, exactly -------------------------------------------------------------------------------

def _agrees(spec: Spec, n: int, k: int) -> bool:
    """The judge's verdict on ``k`` of ``n`` runs on the claimed side of a sign row on a 0/1 indicator."""
    on, off = (1.0, 0.0) if spec.op in (">", ">=") else (0.0, 1.0)  # a run on the claimed side, and not
    return judge(spec, Measurement([on] * k + [off] * (n - k))).verdict == "agrees"


def sign_oc(spec: Spec, share: float, n: int) -> float:
    """P(agrees) of ``spec`` (a sign row on a 0/1 indicator at level 0.5) when each run lands on the claimed side
    with probability ``share``: the judge's verdict at each count, weighted by the binomial law.  The judge agrees
    from some count on (:func:`test_the_judge_agrees_from_one_count_on` checks it), found by bisection."""
    low, high = 0, n + 1  # agrees at no count below low; at every count from high on (n + 1: none)
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if _agrees(spec, n, mid) else (mid + 1, high)
    return float(scipy.stats.binom.sf(low - 1, n, share)) if low <= n else 0.0


def _indicator(**kw) -> Spec:
    return _spec(statistic="sign", level=0.5, fmt="g", min_runs=5, **kw)


NTK_OLD = _indicator()  # the first sign rule of the NTK claim: the share kept against one half
NTK_NEW = _indicator(share=0.95, margin=0.85)  # the share a true law keeps at the 5% level, and the margin


def holds_monotonically(oc: list[float]) -> bool:
    return all(a <= b + 1e-12 for a, b in zip(oc, oc[1:]))


def fails_towards_zero(oc: list[float], far: float) -> bool:
    """A false claim: never above the size, falling from where agreement first becomes attainable, near 0 far out."""
    first = next((i for i, v in enumerate(oc) if v > 0), len(oc))
    return max(oc) <= ALPHA and holds_monotonically(oc[first:][::-1]) and far < 0.01


@pytest.mark.parametrize("spec, true_share, false_share", [
    (_indicator(), 0.9, 0.4),  # the sign test of a median's side
    (_indicator(op="<"), 0.9, 0.4),
    (NTK_NEW, 0.95, 0.8),  # a law kept at the 5% level (share 1 - size) / a law rejected on 20% of seeds
    (NTK_NEW, 0.95, 0.7),
])
def test_the_sign_statistic_sharpens_with_runs(spec, true_share, false_share):
    true = [sign_oc(spec, true_share, n) for n in NS]
    false = [sign_oc(spec, false_share, n) for n in NS]
    assert holds_monotonically(true) and true[-1] > 0.85, true  # the NTK rule: 0, 0, 0.36, 0.68, 0.89
    assert fails_towards_zero(false, sign_oc(spec, false_share, 320)), false


def test_the_old_ntk_rule_lets_more_seeds_make_a_wrong_law_agree():
    # a law rejected on 30% of seeds, where a true law is rejected on 5%: the old rule agrees more as seeds are added
    old = [sign_oc(NTK_OLD, 0.7, n) for n in (20, 40, 100)]
    assert old == sorted(old) and old[-1] > 0.95, old
    assert not fails_towards_zero([sign_oc(NTK_OLD, 0.7, n) for n in NS], sign_oc(NTK_OLD, 0.7, 320))
    # the new rule on the same law, and on a law rejected on 20% of seeds
    for share in (0.7, 0.8):
        new = [sign_oc(NTK_NEW, share, n) for n in NS]
        assert fails_towards_zero(new, sign_oc(NTK_NEW, share, 320)), (share, new)


@pytest.mark.parametrize("n", [5, 20, 40])
def test_the_judge_agrees_from_one_count_on(n):
    for spec in (_indicator(), _indicator(op="<"), NTK_NEW, NTK_OLD):
        verdicts = [_agrees(spec, n, k) for k in range(n + 1)]
        assert verdicts == sorted(verdicts), (spec, n, verdicts)


def test_the_exact_oc_matches_the_binomial_critical_count():
    # an independent route to one value: agreement needs a count whose binomial tail at the margin is below alpha
    n = 40
    c = next(k for k in range(n + 1) if scipy.stats.binom.sf(k - 1, n, 0.85) < ALPHA)
    assert sign_oc(NTK_NEW, 0.95, n) == pytest.approx(scipy.stats.binom.sf(c - 1, n, 0.95), rel=1e-12)


def test_the_ntk_row_states_its_share_and_margin():
    from htlib.experiments import htmp as ch

    fits = ch.TABLE["ntk-lenet"].parts[0]
    assert (fits.share, fits.margin_share) == (NTK_NEW.share, NTK_NEW.margin_share)
    false = [sign_oc(fits, 0.8, n) for n in NS]
    assert fails_towards_zero(false, sign_oc(fits, 0.8, 320)), false


@pytest.mark.parametrize("share, margin", [(0.5, 0.6), (1.0, 0.5), (0.0, None), (0.9, 0.0), ("half", None)])
def test_share_and_margin_are_checked(share, margin):
    with pytest.raises(ValueError, match="share"):
        _indicator(share=share, margin=margin)


def test_share_and_margin_belong_to_the_sign_statistic():
    with pytest.raises(ValueError, match="sign"):
        _spec(share=0.9)


# --- the t-interval and the bootstrap, simulated -----------------------------------------------------------------

def _mean_oc(spec: Spec, mean: float, ns, sims: int, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    x = rng.normal(mean, 1.0, size=(sims, max(ns)))  # nested: n runs are the first n of the larger sets
    return [float(np.mean([judge(spec, Measurement(row[:n])).verdict == "agrees" for row in x])) for n in ns]


def _boot_oc(spec: Spec, theta: float, ns, sims: int, seed: int, draws: int = 200) -> list[float]:
    """A fit of a parameter from n data points: its estimate and its parametric refits scatter as 1/sqrt(n)."""
    rng = np.random.default_rng(seed)
    out = []
    for n in ns:
        est = rng.normal(theta, 1.0 / np.sqrt(n), size=sims)
        refits = est[:, None] + rng.normal(0.0, 1.0 / np.sqrt(n), size=(sims, draws))
        out.append(float(np.mean([judge(spec, Measurement([e], draws=r)).verdict == "agrees"
                                  for e, r in zip(est, refits)])))
    return out


@pytest.mark.parametrize("op", [">", "<"])
def test_the_t_interval_sharpens_with_runs(op):
    spec = _spec(op=op)
    sign = 1.0 if op == ">" else -1.0
    true = _mean_oc(spec, sign * 0.8, NS[:4], sims=1000, seed=1)
    false = _mean_oc(spec, -sign * 0.3, NS[:4], sims=1000, seed=2)
    assert holds_monotonically(true) and true[-1] > 0.95, true
    assert max(false) < 0.01 and false[-1] <= false[0], false  # the interval's one-sided error is 2.5% at the level


def test_the_t_interval_in_a_band_sharpens_with_runs():
    spec = _spec(op="in", level=(-1.0, 1.0))
    true = _mean_oc(spec, 0.0, NS[:4], sims=1000, seed=3)
    false = _mean_oc(spec, 1.5, NS[:4], sims=1000, seed=4)
    assert holds_monotonically(true) and true[-1] > 0.95, true
    assert max(false) < 0.05 and false[-1] <= false[0], false


def test_the_bootstrap_sharpens_with_the_data_of_its_fit():
    spec = _spec(statistic="bootstrap")
    ns = (5, 10, 20, 40, 80)
    true = _boot_oc(spec, 0.5, ns, sims=1000, seed=5)
    false = _boot_oc(spec, -0.3, ns, sims=1000, seed=6)
    # simulation noise: 1000 fits give a standard error of at most 0.016
    assert all(a <= b + 0.03 for a, b in zip(true, true[1:])) and true[-1] > 0.95, true
    assert max(false) < 0.05 and false[-1] < 0.01, false


def test_the_value_statistic_is_an_identity_not_a_vote():
    # one exact number: no runs to add; the operating characteristic is the identity itself
    spec = _spec(statistic="value", op="==", level=1.0, tolerance=1e-9, kind="check")
    assert judge(spec, Measurement([1.0 + 1e-12])).verdict == "agrees"
    assert judge(spec, Measurement([1.0 + 1e-6])).verdict == "disagrees"
    assert not judge(spec, Measurement([1.0])).counted


def test_a_changed_statistic_reads_as_chosen_after_the_runs():
    spec = dataclasses.replace(NTK_NEW, revised_because="the share and margin set after the runs were seen")
    rec = judge(spec, Measurement([1.0] * 20))
    assert rec.post_hoc and not judge(NTK_NEW, Measurement([1.0] * 20)).post_hoc

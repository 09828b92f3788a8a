"""The labelled test set of the 5+1 phase classifier, run as confusion tables.

Every family of ``htlib.random_matrices.LABELLED_CASES`` gets the label of Martin & Mahoney's taxonomy
(``htlib.experiments.phases.EXPECTED_PHASES``), derived from how the matrix is built (BBP threshold and outlier location for
spikes, entry tail index mu for heavy tails, share of zero singular values), never from a run of the
classifier.  Where a family sits on a boundary at a given size, the accepted labels are listed
explicitly with the reason (``undecidable``), and the test checks that the classifier returns one of
them: nothing is skipped.

Sizes: 1500 x 1000 (the width of paper 003's student, one seed) and 300 x 200 (three seeds).  The
ESDs come from the float64 Gram matrix (eigvalsh), computed once per module.
Run ``pytest tests/test_phases.py -s`` to see the confusion tables.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from htlib import random_matrices as R
from htlib import spectra as S
from htlib.experiments import phases as P

sys.path.insert(0, str(Path(__file__).resolve().parent))
import perturb  # noqa: E402

SIZES = {"large": (1500, 1000, (0,)), "small": (300, 200, (0, 1, 2))}
MAX_UNDECIDED = {"large": 9, "small": 11}


def _esd(W: np.ndarray, h: int) -> np.ndarray:
    return np.maximum(np.linalg.eigvalsh(W.T @ W), 0.0) / h


_TABLES: dict[str, tuple] = {}


def _table(size: str):
    if size not in _TABLES:
        _TABLES[size] = _build(size)
    return _TABLES[size]


def _build(size: str):
    h, d, seeds = SIZES[size]
    esds = {name: [_esd(R.labelled_matrix(name, h, d, seed=s), h) for s in seeds] for name in R.LABELLED_CASES}
    # every label holds under round-off perturbations of the ESDs (tests/perturb.py): none is decided by rounding
    labels = perturb.stable(lambda es: {n: [S.analyze_spectrum(e, d / h).phase for e in v] for n, v in es.items()},
                            esds)
    counts = P.confusion_counts(list(labels), list(labels.values()))
    short = ["random", "bleed", "spikes", "decay", "heavy", "collapse"]
    print(f"\nconfusion table at {h} x {d}, seeds {list(seeds)} (rows: case, expected; columns: classified)")
    print(f"{'case':11s} {'expected':28s}" + "".join(f"{c:>9s}" for c in short))
    for i, name in enumerate(labels):
        exp = "/".join(P.expected_phases(name, h, d))
        print(f"{name:11s} {exp:28s}" + "".join(f"{c:9d}" for c in counts[i]))
    return h, d, labels


@pytest.mark.parametrize("size", list(SIZES))
def test_every_case_gets_its_label_or_an_explicit_undecidable(size):
    h, d, labels = _table(size)
    wrong = {n: lab for n, lab in labels.items() if any(x not in P.expected_phases(n, h, d) for x in lab)}
    assert not wrong, f"at {h} x {d}: {wrong}"


@pytest.mark.parametrize("size", list(SIZES))
def test_decisive_cases_are_the_majority(size):
    """The undecidable list stays a minority: at most 9 of the 25 families at 1500 x 1000, 11 at 300 x 200.

    Nine: the two rank-one signals at the BBP margin, the four signals just above it, the two mu > 4
    families (MP at these sizes), and the four finite-variance mu in (2, 4) families, whose tail exponent
    sits on Martin & Mahoney's alpha = 4 boundary at these sizes.
    """
    h, d, _ = _table(size)
    n_undecided = sum(len(P.expected_phases(n, h, d)) > 1 for n in R.LABELLED_CASES)
    assert n_undecided <= MAX_UNDECIDED[size]


def test_every_issue_family_is_covered():
    need = {"gaussian", "rank1-0.5", "rank1-0.8", "rank1-1.4", "rank1-2.0", "rank5", "rank15", "rank60",
            "t1.5", "t3", "t6", "pareto1", "pareto2.5", "zeros5", "zeros20", "zeros50", "collapse"}
    assert need <= set(R.LABELLED_CASES)
    assert set(P.EXPECTED_PHASES) == set(R.LABELLED_CASES)
    for name, e in P.EXPECTED_PHASES.items():
        assert e["label"] in S.PHASES
        if "undecidable" in e:
            assert e.get("why"), f"{name}: an undecidable case must give its reason"
        if "small" in e:
            assert e.get("why_small") or e.get("why"), f"{name}: a size allowance must give its reason"


def test_each_phase_but_bleeding_out_is_reached_decisively_at_1500x1000():
    """Every phase but bleeding-out has a family labelled decisively (no allowance) at 1500 x 1000: bulk-decay
    by the variance profile, heavy-tailed by the mu < 2 families.  Bleeding-out is reached by the four
    signals just above BBP, whose top signal may stand apart as a spike (listed as undecidable)."""
    h, d, labels = _table("large")
    decisive = {labels[n][0] for n in labels if len(P.expected_phases(n, h, d)) == 1}
    assert decisive == set(S.PHASES) - {"bleeding-out"}
    assert {labels["t1.5"][0], labels["pareto1"][0], labels["profile"][0]} == {"heavy-tailed", "bulk-decay"}
    assert labels["bleed"][0] in P.expected_phases("bleed", h, d)


def test_expected_phases_and_confusion_counts():
    assert P.expected_phases("gaussian", 1500, 1000) == ("random-like",)
    assert "bleeding-out" in P.expected_phases("rank1-1.4", 300, 200)
    assert P.expected_phases("rank1-1.4", 1500, 1000) == ("bulk+spikes",)
    c = P.confusion_counts(["a", "b"], [["random-like", "random-like"], ["heavy-tailed"]])
    assert c.sum() == 3 and c[0, S.PHASES.index("random-like")] == 2 and c[1, S.PHASES.index("heavy-tailed")] == 1


def test_bad_input_raises():
    with pytest.raises(ValueError, match="name must be one of"):
        P.expected_phases("cauchy", 30, 20)
    with pytest.raises(ValueError, match="phase must be one of"):
        P.confusion_counts(["a"], [["spiky"]])
    with pytest.raises(ValueError, match="name must be one of"):
        P.PhaseCase("cauchy")


def test_run_phase_case_matches_a_direct_analysis():
    """The chapter's sweep function is the numerics, at the ESD scale it reports."""
    res = P.run_phase_case(P.PhaseCase("rank5", 120, 80, 1))
    raw = np.maximum(np.linalg.eigvalsh(R.labelled_matrix("rank5", 120, 80, seed=1).T
                                        @ R.labelled_matrix("rank5", 120, 80, seed=1)), 0.0)
    assert np.allclose(res.eigs * res.scale, raw, rtol=1e-9, atol=1e-9 * raw.max())
    assert res.report.phase == perturb.stable(lambda e: S.analyze_spectrum(e, 80 / 120).phase, raw) == "bulk+spikes"


def test_confusion_and_claims_on_a_small_size(tmp_path, monkeypatch):
    monkeypatch.setenv("HTLIB_CACHE_DIR", str(tmp_path))
    conf = P.confusion(150, 100, [0])  # rank60 needs d >= 60
    assert set(conf.labels) == set(R.LABELLED_CASES) and conf.counts.sum() == len(R.LABELLED_CASES)
    assert conf.n_ok == sum(conf.ok.values()) and 0 <= conf.n_undecidable <= len(R.LABELLED_CASES)
    table = P.confusion_table(conf)
    assert list(table.columns) == ["expected", *P.SHORT_PHASES, "ok"] and len(table) == len(R.LABELLED_CASES)
    assert set(table["ok"]) <= {"yes", "no"}
    measured = P.measure(conf)
    claims = P.claims(conf)
    assert [c.key for c in claims] == list(P.TABLE) and all(c.section == "phases-confusion" for c in claims)
    # a label row reads one run per draw: 1 where the draw got the taxonomy's label
    for key, (families, want) in P.LABEL_ROWS.items():
        assert measured[key].values == tuple(float(conf.labels[n][0] == want) for n in families)
    assert measured["alpha_mu24"].values == tuple(conf.reports[n][0].alpha for n in ("t3", "pareto2.5")
                                                   if np.isfinite(conf.reports[n][0].alpha))
    assert all(c.setting.startswith("synthetic matrices") and "150 x 100" in c.setting for c in claims)
    # one seed per family: the rows over two draws or one cannot be judged, whatever the labels
    by = {c.key: c for c in claims}
    assert by["bulk_decay_mu4"].verdict == by["alpha_mu24"].verdict == by["alpha_mu2"].verdict == "inconclusive"
    # the verdicts hold under round-off perturbations of the reports' values (the alpha rows read them)
    assert perturb.stable(lambda c: {x.key: x.verdict for x in P.claims(c)}, conf) == {k: c.verdict for k, c in by.items()}
    # Every undecidable family appears with its size, the reason and this run's measurement; nothing typed
    # of another size.
    und = P.undecidable_table(conf)
    assert list(und.columns) == ["size", "accepted", "why", "measured at this size", "labels"]
    assert len(und) == conf.n_undecidable and set(und["size"]) == {"150 x 100"}
    assert not any(s in " ".join(map(str, und.values.ravel())) for s in ("1500 x 1000", "300 x 200"))
    missed = [n for n, ok in conf.ok.items() if not ok]
    text = P.reliability(conf)
    assert (text == "every family of the set gets an accepted label") == (not missed)
    assert all(n in text for n in missed)


def test_predicted_outlier_position_matches_a_simulated_spike():
    """The BBP prediction in Tracy-Widom widths against the top eigenvalue of planted rank-one signals
    (independent of the formula: eigvalsh of the drawn matrices; the top eigenvalue fluctuates by
    O(1/sqrt(h)) around the prediction, a few widths at this size)."""
    h, d = 1500, 1000
    g = d / h
    width = S.tracy_widom_scale(h, d)
    for theta in (1.4, 2.0):
        tops = [_esd(R.labelled_matrix(f"rank1-{theta}", h, d, seed=s), h)[-1] for s in range(3)]
        measured = (np.mean(tops) - S.mp_edges(g)[1]) / width
        predicted = P.predicted_outlier_tw(theta, h, d)
        assert abs(measured - predicted) < 0.1 * predicted + 3, (theta, measured, predicted)
    assert np.isnan(P.predicted_outlier_tw(0.8, h, d))  # below gamma**(1/4) = 0.904: no outlier


def test_the_claims_table_holds_every_level():
    assert all(s.statistic in ("mean", "sign", "parts") for s in P.TABLE.values())
    assert set(P.LABEL_ROWS) <= set(P.TABLE) and all(P.TABLE[k].statistic == "sign" for k in P.LABEL_ROWS)
    t15, pareto1 = P.TABLE["alpha_mu2"].parts
    assert (t15.level, pareto1.level) == ((1.55, 1.95), (1.3, 1.7))  # 1 + mu/2 give or take 0.2
    assert not any(isinstance(v, (int, float)) and not isinstance(v, bool) for k, v in vars(P.reading).items()
                   if k.isupper()), "a level outside the claims table"


def test_count_phrase_reads_right_at_any_count():
    assert [P.count_phrase(n, "outlier") for n in (0, 1, 2)] == ["no outlier", "1 outlier", "2 outliers"]

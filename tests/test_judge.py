"""The one judge of htlib.claims: each gate once, the statistics, checks, revisions, stored records, glue.

No test pins the wording of a cause: a cause must be non-empty and name the values it rests on.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import asdict

import numpy as np
import pytest

from htlib import claims as cl
from htlib import records as rc
from htlib import scoreboard as sb
from htlib.claims import Measurement, Spec, judge, judge_table, read_table
from htlib.records import Claim
from htlib.stats import t_interval

ORIGINAL_FIELDS = {"paper", "where", "claim", "criterion", "measured", "verdict", "setting", "uncertainty",
                   "cause", "section", "key", "variant_of", "threshold", "reduction_check"}


def spec(**kw) -> Spec:
    base = dict(key="spike", paper="003", where="§4, Fig. 3", claim="a spike appears at eta = 1",
                measurement="lambda_max / lambda_+", op=">", level=1.1, statistic="mean")
    base.update(kw)
    return Spec(**base)


def m(values=(), **kw) -> Measurement:
    return Measurement(values=values, **kw)


def _names(cause: str, *numbers: float, fmt: str = ".3g") -> bool:
    return all(format(x, fmt) in cause for x in numbers)


# --- the gates, in order ---------------------------------------------------------------------------

def test_not_run_beats_every_other_gate():
    c = judge(spec(), m([2.0], ran=False, not_run_reason="needs the paper's width", cannot_test="untrained"))
    assert c.verdict == "not tested" and "needs the paper's width" in c.cause


def test_cannot_test_beats_too_few_runs():
    c = judge(spec(), m([2.0], cannot_test="the network has not left its initialisation (loss 2.30)"))
    assert c.verdict == "inconclusive" and "loss 2.30" in c.cause


def test_cannot_test_accepts_a_diverged_run_and_still_reports_what_was_measured():
    c = judge(spec(), m([2.0, np.nan, 2.2], cannot_test="seed 1 diverged"))
    assert c.verdict == "inconclusive" and "seed 1 diverged" in c.cause and c.measured.strip()


def test_a_gate_carries_its_short_reason_as_a_code_and_numbers():
    """The chapter's full reason stays in the cause; the code and its numbers travel in the reading, and the
    scoreboard's line is worded from them (filled from the numbers, not copied from the cause)."""
    slow = judge(spec(), Measurement.not_run("MiniAlexNet at the paper's preset takes long here", why="too_slow",
                                             time="about 7 h on two cores"))
    stuck = judge(spec(), m([2.0, 2.1, 2.2], cannot_test="2 of 3 runs have an excess loss 0.4", why="not_converged",
                            why_numbers={"k": 2, "n": 3}))
    plain = judge(spec(), m([2.0, 2.1, 2.2], cannot_test="2 of 3 runs have an excess loss 0.4"))
    assert [slow.verdict, stuck.verdict] == ["not tested", "inconclusive"]
    assert slow.readings[0]["why"] == "too_slow" and stuck.readings[0]["why_numbers"] == {"k": 2, "n": 3}
    assert sb.reading_short(slow) == "not run: needs about 7 h on two cores"
    assert sb.reading_short(stuck) == "cannot test: 2 of 3 runs not converged"
    assert "why" not in plain.readings[0] and sb.reading_short(plain) == "these runs cannot test it"
    for text in (sb.reading_short(c) for c in (slow, stuck)):
        assert len(text.split()) <= sb.DIFFERENCE_WORDS


@pytest.mark.parametrize("kw, message", [
    (dict(cannot_test="x", why="slow"), "why must be one of"),
    (dict(cannot_test="x", why="not_converged", why_numbers={"k": 1}), "needs why_numbers 'n'"),
    (dict(why="off"), "goes with not_run_reason or cannot_test")])
def test_a_short_reason_is_refused_unless_its_code_and_numbers_are_known(kw, message):
    with pytest.raises(ValueError, match=message):
        m([1.0], **kw)


def test_every_short_reason_fits_a_line():
    """Each code's text, filled with long numbers, stays at most 8 words, so a line with its prefix and the
    post-hoc mark keeps within DIFFERENCE_WORDS."""
    import string
    long = {"time": "about 2.9 days per seed", "data": "CIFAR-10 or SVHN", "steps": "10,000", "k": 15, "n": 15,
            "ratio": "1.57", "what": "eta = 1000 or 2000"}
    for code, text in rc.REASONS.items():
        fields = {f for _, f, _, _ in string.Formatter().parse(text) if f}
        assert len(text.format(**{f: long[f] for f in fields}).split()) <= 8, code


@pytest.mark.parametrize("statistic", ["mean", "sign"])
def test_too_few_runs_is_inconclusive_even_when_they_agree(statistic):
    c = judge(spec(statistic=statistic), m([5.0, 5.1]))
    assert c.verdict == "inconclusive"
    assert "2" in c.cause and "3" in c.cause  # the runs it had and the runs it needs
    c = judge(spec(statistic=statistic, min_runs=5), m([5.0, 5.1, 5.2, 5.3]))
    assert c.verdict == "inconclusive" and "4" in c.cause and "5" in c.cause


def test_too_few_bootstrap_refits_is_inconclusive():
    draws = np.linspace(2.0, 3.0, cl.MIN_DRAWS - 1)
    c = judge(spec(statistic="bootstrap"), m([2.5], draws=draws))
    assert c.verdict == "inconclusive" and str(cl.MIN_DRAWS) in c.cause


# --- the statistics ----------------------------------------------------------------------------------

@pytest.mark.parametrize("values, verdict", [
    ([1.5, 1.6, 1.7, 1.55], "agrees"),
    ([0.5, 0.6, 0.55, 0.58], "disagrees"),
    ([0.9, 1.3, 1.0, 1.4], "inconclusive"),
])
def test_mean_reads_the_t_interval(values, verdict):
    c = judge(spec(), m(values))
    iv = t_interval(values)
    assert c.verdict == verdict
    assert c.cause.strip() and _names(c.cause, iv.low, iv.high, 1.1)
    assert _names(c.uncertainty, iv.low, iv.high) and _names(c.measured, iv.mean)
    assert c.threshold == 1.1 and "1.1" in c.criterion


@pytest.mark.parametrize("values, verdict", [
    ([0.2, 0.3, 0.25], "agrees"),
    ([0.0, 0.05, 0.02], "disagrees"),
    ([0.08, 0.2, 0.14], "inconclusive"),
])
def test_in_reads_the_interval_against_both_ends(values, verdict):
    c = judge(spec(op="in", level=(0.1, 0.4)), m(values))
    assert c.verdict == verdict and c.threshold == [0.1, 0.4]


def test_a_failure_at_a_reduced_setting_needs_a_reduction_check():
    values = [0.5, 0.6, 0.55, 0.58]
    c = judge(spec(setting="width 256, 2k steps"), m(values))
    assert c.verdict == "inconclusive" and "width 256, 2k steps" in c.cause
    c = judge(spec(setting="width 256, 2k steps"), m(values, reduction_check="the ratio is flat in width"))
    assert c.verdict == "disagrees" and c.reduction_check == "the ratio is flat in width"
    # the run's own setting (a rerun at the paper's protocol) overrides the table's
    assert judge(spec(setting="width 256"), m(values, setting="paper")).verdict == "disagrees"
    # an agreement at a reduced setting stands
    assert judge(spec(setting="width 256"), m([1.5, 1.6, 1.7])).verdict == "agrees"


@pytest.mark.parametrize("values, verdict", [
    ([1.2, 1.3, 1.5, 1.15, 1.4, 1.25], "agrees"),        # 6 of 6 above: p = 1/64
    ([0.2, 0.3, 0.5, 0.15, 0.4, 0.25], "disagrees"),     # 0 of 6 above
    ([1.2, 1.3, 0.5, 1.15, 0.4, 1.25], "inconclusive"),  # 4 of 6
])
def test_sign_reads_the_exact_sign_test(values, verdict):
    c = judge(spec(statistic="sign"), m(values))
    assert c.verdict == verdict and c.cause.strip() and "1.1" in c.cause
    k = sum(v > 1.1 for v in values)
    assert f"{k} of 6" in c.measured


def test_sign_drops_ties_before_counting():
    c = judge(spec(statistic="sign", op="<", level=0.0), m([0.0, -1.0, -2.0, -0.5, -0.1, -0.3, 0.0]))
    assert c.verdict == "agrees" and "5 of 5" in c.measured


@pytest.mark.parametrize("centre, verdict", [(2.0, "agrees"), (0.5, "disagrees"), (1.1, "inconclusive")])
def test_bootstrap_reads_the_percentile_interval(centre, verdict):
    draws = np.random.default_rng(0).normal(centre, 0.1, size=400)
    c = judge(spec(statistic="bootstrap"), m(centre, draws=draws))
    lo, hi = np.quantile(draws, [0.025, 0.975])
    assert c.verdict == verdict and _names(c.cause, lo, hi)


def test_bootstrap_reads_one_fit():
    with pytest.raises(ValueError, match="one fit"):
        judge(spec(statistic="bootstrap"), m([1.0, 2.0], draws=np.ones(200)))


# --- checks and variants are never counted --------------------------------------------------------------

def test_checks_pass_or_fail_and_are_never_counted():
    chk = spec(key="frob", kind="check", statistic="value", op="==", level=8.0, tolerance=1e-9,
               measurement="Frobenius norm / sqrt(hd)", setting="h = 64")
    ok, bad = judge(chk, m(8.0 + 1e-12)), judge(chk, m(8.5))
    assert (ok.verdict, bad.verdict) == ("agrees", "disagrees")  # a failing identity stays a failure
    assert not ok.counted and not bad.counted and bad.kind == "check" and "8.5" in bad.measured
    assert bad.cause.strip() and "0.5" in bad.cause
    claim = judge(spec(), m([1.5, 1.6, 1.7]))
    assert claim.counted
    counts = rc.verdict_counts([ok, bad, claim])
    assert counts["agrees"] == 1 and counts["disagrees"] == 0
    assert rc.verdict_counts([rc._record(c) for c in (ok, bad, claim)]) == counts
    assert len(sb.claims_frame([ok, bad, claim])) == 1


def test_a_check_may_also_be_a_one_sided_value():
    c = judge(spec(key="gap", kind="check", statistic="value", op="<", level=1e-6, measurement="max error"),
              m(3e-7))
    assert c.verdict == "agrees" and not c.counted


def test_variants_are_never_counted():
    v = judge(spec(key="spike-median", kind="variant", variant_of="spike", setting="median instead of mean"),
              m([0.5, 0.6, 0.55]))
    assert v.variant_of == "spike" and v.kind == "variant" and not v.counted
    assert v.verdict == "disagrees"  # a variant states its own convention as setting; no reduction gate


# --- levels revised after the numbers were seen -----------------------------------------------------------

def test_a_revised_level_is_kept_in_the_record_and_named_in_an_agreement():
    s = spec(level=1.1, revised_from=1.5, revised_because="the paper's Fig. 3 reads 1.1, not 1.5")
    c = judge(s, m([1.3, 1.4, 1.35, 1.38]))
    assert c.verdict == "agrees"
    assert c.revised_from == 1.5 and c.revised_because == s.revised_because
    assert "1.5" in c.cause and s.revised_because in c.cause and "disagrees" in c.cause  # the old level's verdict
    stored = rc._record(c)
    assert stored["revised_from"] == 1.5 and Claim(**stored) == c


def test_a_revision_needs_its_reason_and_a_new_value():
    with pytest.raises(ValueError, match="revised_because"):
        spec(revised_from=1.5)
    with pytest.raises(ValueError, match="differ"):
        spec(revised_from=1.1, revised_because="no change")


def test_a_criterion_chosen_after_the_runs_is_recorded_and_listed_without_an_earlier_level(tmp_path):
    s = spec(revised_because="the statistic replaced a rank correlation after the grid was seen")
    c = judge(s, m([1.3, 1.4, 1.35, 1.38]))
    assert c.verdict == "agrees" and c.revised_from is None and c.revised_because == s.revised_because
    assert "chosen after" in c.cause and s.revised_because in c.cause
    path, _ = _notebook(tmp_path, [c])
    board = sb.Scoreboard(rc.collect_claims([path]))
    assert [r.key for _, r in board.revisions()] == ["spike"]
    assert "none" in board.revisions_markdown()


# --- stored records stay byte-identical -------------------------------------------------------------------

def _notebook(tmp_path, claims):
    payload = rc._ClaimsPayload(claims, "ch")._repr_mimebundle_()[rc.CLAIMS_MIME]
    path = tmp_path / "ch.ipynb"
    path.write_text(json.dumps({"cells": [{"outputs": [{"data": {rc.CLAIMS_MIME: payload}}]}]}))
    return path, payload


def test_records_at_the_defaults_store_the_original_fields_only(tmp_path):
    old = Claim(paper="003", where="§4", claim="c", criterion="x > 1", measured="2", verdict="agrees",
                setting="paper", uncertainty="5 seeds")
    path, payload = _notebook(tmp_path, [old])
    rec = json.loads(payload)["claims"][0]
    assert set(rec) == ORIGINAL_FIELDS
    assert payload == json.dumps({"chapter": "ch", "claims": [{k: v for k, v in asdict(old).items()
                                                               if k in ORIGINAL_FIELDS}]},
                                 ensure_ascii=False, sort_keys=True)
    assert rc.read_claims(path) == [old]


def test_new_records_round_trip_with_their_new_fields(tmp_path):
    records = [judge(spec(key="frob", kind="check", statistic="value", op="==", level=8.0, tolerance=1e-9),
                     m(8.0)),
               judge(spec(revised_from=(1.5), revised_because="read off the figure"), m([1.3, 1.4, 1.35])),
               judge(spec(key="v", kind="variant", variant_of="spike", setting="median"), m([1.3, 1.4, 1.35]))]
    path, payload = _notebook(tmp_path, records)
    assert rc.read_claims(path) == records


# --- validation at the edge -----------------------------------------------------------------------------

@pytest.mark.parametrize("kw, match", [
    (dict(key=""), "key"),
    (dict(key="a b"), "key"),
    (dict(paper="999"), "paper"),
    (dict(claim=" "), "claim"),
    (dict(op="=<"), "op"),
    (dict(level=float("nan")), "level"),
    (dict(op="in", level=1.0), "level"),
    (dict(op="in", level=(2.0, 1.0)), "low <= high"),
    (dict(statistic="median"), "statistic"),
    (dict(statistic="parts"), "parts"),
    (dict(op="all"), "parts"),
    (dict(statistic="sign", op="in", level=(0, 1)), "direction"),
    (dict(kind="identity"), "kind"),
    (dict(kind="variant"), "variant_of"),
    (dict(variant_of="other"), "variant_of"),
    (dict(min_runs=2), "min_runs"),
    (dict(fmt="%d"), "fmt"),
    (dict(tolerance=0.1), "tolerance"),
    (dict(kind="check", statistic="value", op="==", level=1.0), "tolerance"),
    (dict(confidence=95), "confidence"),
])
def test_spec_refuses_what_it_cannot_judge(kw, match):
    with pytest.raises(ValueError, match=match):
        spec(**kw)


@pytest.mark.parametrize("kw, match", [
    (dict(values=[1.0, 2.0, 3.0], draws=[1.0, float("inf")]), "non-finite"),  # a run's non-finite value: a gate
    (dict(values=[]), "empty"),
    (dict(values=[[1.0, 2.0]]), "1-D"),
    (dict(ran=False), "not_run_reason"),
    (dict(values=[1.0], not_run_reason="why"), "not_run_reason"),
])
def test_measurement_refuses_what_would_hide_a_run(kw, match):
    with pytest.raises(ValueError, match=match):
        Measurement(**kw)


def test_spec_and_measurement_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec().level = 2.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        m([1.0]).values = (2.0,)


# --- a table, and glue from the records ---------------------------------------------------------------

def test_judge_table_needs_one_measurement_per_spec():
    specs = [spec(), spec(key="v", kind="variant", variant_of="spike", setting="median")]
    with pytest.raises(ValueError, match="missing"):
        judge_table(specs, {"spike": m([1.5, 1.6, 1.7])})
    with pytest.raises(ValueError, match="no spec"):
        judge_table(specs[:1], {"spike": m([1.5, 1.6, 1.7]), "other": m([1.0])})
    out = judge_table(specs, {"spike": m([1.5, 1.6, 1.7]), "v": Measurement.not_run("costly")})
    assert [c.verdict for c in out] == ["agrees", "not tested"]


def test_glue_comes_from_the_records():
    records = judge_table([spec(), spec(key="v", kind="variant", variant_of="spike", setting="median")],
                          {"spike": m([0.9, 1.3, 1.0, 1.4]), "v": Measurement.not_run("costly")})
    names = rc.claim_glue(records, prefix="ch_")
    for c in records:
        for field in ("verdict", "measured", "uncertainty", "cause", "criterion"):
            assert names[f"ch_{c.key}_{field}"] == " ".join(getattr(c, field).split())
        assert names[f"ch_{c.key}_level"] == format(spec().level, ".3g")
    assert len(names) == 12


# --- more runs never make agreement less likely -----------------------------------------------------------

def _agree_rate(s: Spec, mean: float, ns, sims: int, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    x = rng.normal(mean, 1.0, size=(sims, max(ns)))  # nested runs: n runs are the first n of the larger sets
    return [np.mean([judge(s, Measurement(row[:n])).verdict == "agrees" for row in x]) for n in ns]


def test_agreement_grows_with_runs_for_the_t_interval():
    ns = (3, 5, 10, 20)
    rate = _agree_rate(spec(level=0.0), 0.8, ns, sims=1000, seed=1)
    assert all(a <= b for a, b in zip(rate, rate[1:])), rate
    assert rate[-1] > 0.85  # the power of the two-sided t-interval at n = 20 is 0.92
    # a true mean at the level: agreement as rare as the interval's one-sided error (2.5%)
    assert _agree_rate(spec(level=0.0), 0.0, (5,), sims=1000, seed=2)[0] < 0.05


def test_agreement_grows_with_runs_for_the_sign_test():
    ns = (5, 10, 20)
    rate = _agree_rate(spec(level=0.0, statistic="sign"), 1.2816, ns, sims=1000, seed=3)  # P(above) = 0.9
    assert all(a <= b for a, b in zip(rate, rate[1:])), rate
    assert rate[-1] > 0.95  # exact: 0.59, 0.74, 0.99


# --- checks and revisions on the scoreboard -----------------------------------------------------------------

def test_scoreboard_lists_checks_and_revisions_apart_from_the_counted_claims(tmp_path):
    from pathlib import Path

    check = judge(spec(key="frob", claim="||G||_F = sqrt(hd)", measurement="||G||_F / sqrt(hd)", op="==", level=1.0,
                       statistic="value", kind="check", tolerance=1e-6), m([1.0]))
    revised = judge(spec(key="kta", level=1.1, revised_from=1.5, revised_because="set after the runs"),
                    m([1.2, 1.25, 1.3]))
    plain = judge(spec(key="loss"), m([1.3, 1.4, 1.5]))
    board = sb.Scoreboard({Path("one_step_adam.ipynb"): [check, revised, plain]})
    assert [c.key for _, c in board.rows("003")] == ["kta", "loss"]
    assert [c.key for _, c in board.rows("003", kind="check")] == ["frob"]
    assert [c.key for _, c in board.revisions()] == ["kta"]
    assert "sqrt(hd)" in board.checks_markdown() and "sqrt(hd)" not in board.papers_markdown()
    assert "1.5" in board.revisions_markdown() and "set after the runs" in board.revisions_markdown()
    # the revised record is counted apart: decided on a criterion chosen after the runs
    assert rc.verdict_counts([check, revised, plain])["agrees"] == 1
    assert rc.verdict_counts([check, revised, plain], post_hoc=True)["agrees"] == 1
    frame = sb.checks_frame([check, revised, plain])
    assert list(frame["identity"]) == ["||G||_F = sqrt(hd)"] and list(frame["result"]) == ["holds"]
    assert len(sb.claims_frame([check, revised, plain])) == 2 and len(sb.robustness_frame([check, plain])) == 0
    # a board without any: the sections say so instead of showing an empty table
    empty = sb.Scoreboard({Path("x.ipynb"): [plain]})
    assert "|" not in empty.checks_markdown() and "|" not in empty.revisions_markdown()


# --- compound claims, deterministic values, the TOML table ------------------------------------------------

def _compound():
    a = spec(key="a", measurement="ratio", op=">", level=1.0)
    b = spec(key="b", measurement="slope", op="<", level=0.0, statistic="sign")
    return spec(key="both", statistic="parts", op="all", level=None, parts=(a, b))


@pytest.mark.parametrize("a_values, b_values, verdict", [
    ([2.0, 2.1, 2.2], [-1.0] * 6, "agrees"),
    ([2.0, 2.1, 2.2], [1.0] * 6, "partly"),
    ([0.1, 0.2, 0.15], [1.0] * 6, "disagrees"),
    ([2.0, 2.1], [-1.0] * 6, "inconclusive"),  # one part has too few runs: the gate applies inside the part
])
def test_a_compound_claim_passes_each_part_through_the_gates(a_values, b_values, verdict):
    c = judge(_compound(), Measurement(parts={"a": m(a_values), "b": m(b_values)}))
    assert c.verdict == verdict and c.counted and c.threshold is None
    assert "ratio > 1" in c.criterion and "slope < 0" in c.criterion


def test_a_compound_claim_needs_every_part_measured_and_no_other():
    with pytest.raises(ValueError, match="missing"):
        judge(_compound(), Measurement(parts={"a": m([2.0, 2.1, 2.2])}))


def test_a_reduced_compound_failure_is_inconclusive_without_a_reduction_check():
    c = judge(dataclasses.replace(_compound(), setting="n = 100"),
              Measurement(parts={"a": m([0.1, 0.2, 0.15]), "b": m([1.0] * 6)}))
    assert c.verdict == "inconclusive"
    c = judge(dataclasses.replace(_compound(), setting="n = 100"),
              Measurement(parts={"a": m([0.1, 0.2, 0.15]), "b": m([1.0] * 6)}, reduction_check="Fig. 2 at n = 4000"))
    assert c.verdict == "disagrees"


def test_a_deterministic_claim_reads_one_value_and_is_counted():
    s = spec(key="count", statistic="value", op="<=", level=10.0, measurement="nonzero eigenvalues")
    assert judge(s, m([12.0])).verdict == "disagrees" and judge(s, m([12.0])).counted
    assert judge(s, m([8.0])).verdict == "agrees"


def test_read_table_builds_specs_with_defaults_pairs_and_parts(tmp_path):
    f = tmp_path / "claims.toml"
    f.write_text('''
[defaults]
paper = "004"
where = "Fig. 8"
[[row]]
key = "band"
claim = "lambda stays in a band"
measurement = "lambda"
op = "in"
level = [1.0, 2.0]
statistic = "mean"
revised_from = [1.0, 3.0]
revised_because = "the band was read off the paper's figure after the runs"
[[row]]
key = "both"
claim = "two things hold"
statistic = "parts"
[[row.parts]]
key = "up"
measurement = "rise"
op = ">"
level = 0
statistic = "sign"
[[row.parts]]
key = "big"
measurement = "size"
op = ">="
level = 3
statistic = "mean"
''', encoding="utf-8")
    table = read_table(f)
    assert list(table) == ["band", "both"]
    assert table["band"].level == (1.0, 2.0) and table["band"].revised_from == (1.0, 3.0)
    assert [p.key for p in table["both"].parts] == ["both-up", "both-big"]
    assert table["both"].parts[0].paper == "004" and table["both"].parts[0].where == "Fig. 8"
    c = judge(table["both"], Measurement(parts={"both-up": m([1.0] * 6), "both-big": m([4.0, 4.1, 4.2])}))
    assert c.verdict == "agrees"


@pytest.mark.parametrize("text, match", [
    ("[[rows]]\nkey = 'a'\n", "holds"),
    ("[[row]]\nkey = 'a'\nlevle = 1\n", "levle"),
])
def test_read_table_names_what_is_wrong(tmp_path, text, match):
    f = tmp_path / "claims.toml"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        read_table(f)


def test_a_revised_part_is_kept_in_the_compound_record_and_parts_take_the_row_kind(tmp_path):
    a = spec(key="a", measurement="ratio", op=">", level=1.1, revised_from=1.5, revised_because="lowered after the runs")
    b = spec(key="b", measurement="slope", op="<", level=0.0, statistic="sign")
    c = judge(spec(key="both", statistic="parts", op="all", level=None, parts=(a, b)),
              Measurement(parts={"a": m([1.3, 1.35, 1.4]), "b": m([-1.0] * 6)}))
    assert c.verdict == "agrees" and c.revised_from == 1.5 and "ratio" in c.revised_because
    assert "would read disagrees" in c.cause  # the part at its first level
    with pytest.raises(ValueError, match="at most one part"):
        spec(key="both", statistic="parts", op="all", level=None,
             parts=(a, dataclasses.replace(b, revised_from=1.0, revised_because="x")))
    f = tmp_path / "claims.toml"
    f.write_text('''
[[row]]
key = "base"
paper = "003"
where = "Fig. 1"
claim = "c"
measurement = "m"
op = ">"
level = 0
statistic = "mean"
[[row]]
key = "v"
paper = "003"
where = "Fig. 1"
claim = "c, another readout"
kind = "variant"
variant_of = "base"
setting = "other readout"
statistic = "parts"
[[row.parts]]
key = "p"
measurement = "m"
op = ">"
level = 0
statistic = "mean"
''', encoding="utf-8")
    v = read_table(f)["v"]
    assert v.parts[0].kind == "variant" and v.parts[0].variant_of == "base"
    # a variant's failure outside the paper's setting is not turned into "inconclusive" by the reduction gate
    assert judge(v, Measurement(parts={"v-p": m([-1.0, -1.1, -1.2])})).verdict == "disagrees"


def test_a_check_states_why_it_cannot_fail_and_only_a_check_may():
    chk = spec(key="frob", kind="check", statistic="value", op="==", level=8.0, tolerance=1e-9,
               why="sign(G) has 64 entries of modulus 1")
    c = judge(chk, m([8.0]))
    assert c.kind == "check" and not c.counted and "sign(G) has 64 entries" in c.cause
    with pytest.raises(ValueError, match="why"):
        spec(why="an identity")


# --- fits at a search bound ---------------------------------------------------------------------------------

def test_a_verdict_that_holds_in_every_case_of_its_bound_fits_stands_and_says_so():
    c = judge(spec(level=0.0), m([0.5, 0.6, 0.7], bound_cases=[(0.45, 0.6, 0.7), (0.5, 0.55, 0.7)]))
    assert c.verdict == "agrees" and "2 cases" in c.cause
    assert c.readings[0]["verdict"] == "agrees"


def test_a_verdict_that_some_case_of_its_bound_fits_changes_is_inconclusive():
    c = judge(spec(level=0.0), m([0.5, 0.6, 0.7], bound_cases=[(0.5, 0.6, 0.7), (-0.9, 0.6, 0.7)]))
    assert c.verdict == "inconclusive" and c.readings[0]["verdict"] == "inconclusive"
    assert "1 agrees" in c.cause and "1 inconclusive" in c.cause
    # the same values without the cases agree: the bound, not the data, made it inconclusive
    assert judge(spec(level=0.0), m([0.5, 0.6, 0.7])).verdict == "agrees"
    # a sign statistic the same way
    s = spec(level=0.0, statistic="sign")
    assert judge(s, m([1.0] * 6)).verdict == "agrees"
    assert judge(s, m([1.0] * 6, bound_cases=[(1.0,) * 5 + (-1.0,)])).verdict == "inconclusive"


@pytest.mark.parametrize("cases, match", [([(1.0, 2.0)], "one value per run"), ([("a", 1.0, 2.0)], "bound_cases")])
def test_bound_cases_are_refused_unless_they_hold_one_number_per_run(cases, match):
    with pytest.raises(ValueError, match=match):
        Measurement([1.0, 2.0, 3.0], bound_cases=cases)


def _bound_rate(mean: float, ns, sims: int, seed: int, share: float = 0.3, step: float = 0.5,
                cases: bool = True) -> list[float]:
    """P(agrees) of a mean > 0 row when a share of the runs are fits at a bound that could read ``step`` lower."""
    rng = np.random.default_rng(seed)
    x = rng.normal(mean, 1.0, size=(sims, max(ns)))
    low = rng.random((sims, max(ns))) < share
    out = []
    for n in ns:
        out.append(np.mean([judge(spec(level=0.0), m(row[:n], bound_cases=[tuple(row[:n] - step * cut[:n])] * cases))
                            .verdict == "agrees" for row, cut in zip(x, low)]))
    return out


def test_the_bound_rule_keeps_the_t_interval_sharpening_and_never_adds_agreement():
    ns = (5, 10, 20, 40)
    rate = _bound_rate(1.0, ns, sims=400, seed=4)  # true: the mean stays above 0 in every case
    assert all(a <= b for a, b in zip(rate, rate[1:])), rate
    assert rate[-1] > 0.9
    false = _bound_rate(-0.3, ns, sims=400, seed=5)  # false by a stated effect: never more likely to agree
    assert all(a >= b for a, b in zip(false, false[1:])) and false[-1] == 0.0, false
    plain = _bound_rate(1.0, ns, sims=400, seed=4, cases=False)  # the same draws without the cases
    assert all(a <= b for a, b in zip(rate, plain)), (rate, plain)


def test_a_post_hoc_row_read_on_runs_made_after_its_criterion_says_so_and_stays_counted_apart():
    s = spec(level=0.0, revised_because="changed on day 2, after the first runs")
    old, new = judge(s, m([0.5, 0.6, 0.7])), judge(s, m([0.5, 0.6, 0.7], fresh="its 3 new seeds"))
    assert old.verdict == new.verdict == "agrees"
    assert "not out of sample" in old.cause and "not out of sample" not in new.cause
    assert "its 3 new seeds" in new.cause and "changed on day 2" in new.cause
    assert old.post_hoc and new.post_hoc  # counted apart either way

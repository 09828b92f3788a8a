"""No committed claim record sits on a rounding edge unless ``tests/edge_records.py`` lists it with its reason."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import edge_records as er  # noqa: E402


def test_every_record_on_an_edge_is_listed_with_its_reason_and_every_listed_one_is_still_there():
    found = {(c, k): why for c, k, why in er.all_edges()}
    assert not set(found) - set(er.ALLOWED), {k: found[k] for k in set(found) - set(er.ALLOWED)}
    assert not set(er.ALLOWED) - set(found), f"listed but no longer on an edge: {set(er.ALLOWED) - set(found)}"
    assert all(why.startswith(("edge: ", "not an edge: ")) for why in er.ALLOWED.values())


def _notebook(tmp_path, claims) -> Path:
    from htlib.records import CLAIMS_MIME, _record

    payload = json.dumps({"chapter": "htmp", "claims": [_record(c) for c in claims]})
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "source": "", "execution_count": 1,
                     "outputs": [{"output_type": "display_data", "metadata": {}, "data": {CLAIMS_MIME: payload}}]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "htmp.ipynb"  # the chapter is the notebook's name: htmp's claims table gives the levels
    path.write_text(json.dumps(nb))
    return path


def test_an_interval_end_at_the_level_a_tie_and_a_bound_are_found_and_a_clear_record_is_not(tmp_path):
    """A negative control on records made here: htmp's lenet-falls (mean of per-seed values > 0) with its interval's
    low end at 0 or within 1e-6 of the interval's size from it, and clear of 0; a bound named in the note."""
    from htlib.records import Claim
    from htlib.claims import read_table

    spec = read_table(er.ROOT / "htlib" / "experiments" / "htmp" / "claims.toml")["lenet-falls"]
    base = Claim(paper=spec.paper, where=spec.where, claim=spec.claim, criterion=spec.criterion, measured="mean 0.02",
                 setting=spec.setting,
                 verdict="inconclusive", cause="the interval straddles the level", key="lenet-falls",
                 threshold=spec.level, uncertainty="3 seeds; 95% Student-t interval of the mean [0.01, 0.03]")

    def flagged(**change):
        c = dataclasses.replace(base, **change)
        return [why for _, key, why in er.edges(_notebook(tmp_path, [c])) if key == "lenet-falls"]

    assert flagged() == []
    for low in ("0", "-0", "2e-9", "-1e-8"):  # within 1e-6 of the interval's size, 0.03
        unc = f"3 seeds; 95% Student-t interval of the mean [{low}, 0.03]"
        assert flagged(uncertainty=unc) and "low end" in flagged(uncertainty=unc)[0], low
    assert flagged(uncertainty="3 seeds; 95% Student-t interval of the mean [0.000123, 0.03]") == []
    assert flagged(uncertainty=base.uncertainty + "; bulk kappa 50 (at the top of its search, 50)")
    # a gated record reads no value: its interval is not judged
    assert flagged(uncertainty="3 seeds; 95% Student-t interval of the mean [0, 0.03]",
                   cause="too few independent runs: 2") == []

"""The sequential rule and the fixed-30 rule on the same recorded per-query scores (a real run: SmolLM2 on
Cranfield and halueval-qa, `fixtures/sequential/smollm2-fixed30.json`): wherever both decide, they agree; the
recorded fixed-30 verdicts are reproduced exactly from the scores."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.stats.sequential import SequentialDesign, against_fixed_n
from harness.stats._verdict import Decision

pytestmark = pytest.mark.unit
RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "sequential" / "smollm2-fixed30.json"


def _claims():
    return json.loads(RECORDED.read_text())["claims"]


def _compare(c: dict, design: SequentialDesign) -> dict:
    d = c["decision"]
    return against_fixed_n(c["candidate"], c["baseline"], design, c["comparator"], c["threshold"],
                           Decision(d["rule"], d.get("test"), d["alpha"], d["confidence"]), relative=c["relative"],
                           binary=c["binary"])


@pytest.mark.parametrize("claim", _claims(), ids=lambda c: f"{c['spec_id']}-{c['dataset']}")
def test_sequential_agrees_with_fixed_30_where_both_decide(claim):
    design = SequentialDesign.plan(len(claim["candidate"]))
    out = _compare(claim, design)
    assert out["fixed_n"] == claim["fixed_n_verdict"], "the fixed-n verdict recomputed from the recorded scores"
    assert out["agree"] in (True, None), out


def test_the_recorded_run_decides_some_claims_early():
    """What the sequential rule saves on this run: queries used against 30 for every claim."""
    outs = [_compare(c, SequentialDesign.plan(len(c["candidate"]))) for c in _claims()]
    used = sum(o["queries_used"] for o in outs)
    assert used < 30 * len(outs)  # at least one claim stopped before its last look
    assert all(o["queries_used"] in (10, 20, 30) for o in outs)


def test_an_unadjusted_rule_can_disagree():
    """The comparison can fail: peeking with the fixed-n 95% interval at looks 10 and 20 decides differently from
    the fixed-30 rule on data whose first looks mislead (a planted case)."""
    first = [0.6, 1.0] * 5 + [0.0, 0.1] * 10  # a strong early run that the later queries undo
    naive = SequentialDesign((10, 20, 30))
    object.__setattr__(naive, "bounds", (1.96, 1.96, 1.96))
    out = against_fixed_n(first, [0.5] * 30, naive, ">", 0.0, Decision("ci"), bounds=(0.0, 1.0))
    assert out["sequential"] == "supported" and out["fixed_n"] == "refuted" and out["agree"] is False
    adjusted = against_fixed_n(first, [0.5] * 30, SequentialDesign((10, 20, 30)), ">", 0.0, Decision("ci"),
                               bounds=(0.0, 1.0))
    assert adjusted["sequential"] != "supported"

"""Per-query-type judge figures, computed by hand."""
from __future__ import annotations

import math

import pytest

from harness.judge.llm_judge import AnswerJudgement
from harness.judge.study import summarize_by_type

pytestmark = pytest.mark.unit


def _j(*verdicts, abstained=False, cut=0):
    return AnswerJudgement([f"c{i}" for i in range(len(verdicts))], list(verdicts), "j", claims_cut=cut,
                           extra={"abstained": True} if abstained else {})


def test_means_over_ruled_answers_per_type():
    js = [_j(True, False), _j(True, None, cut=2), _j(abstained=True), _j(None), _j(False, False, False, True)]
    types = ["direct", "direct", "negative", "negative", "multi-hop"]
    s = summarize_by_type(js, types)
    # direct: faithfulness 1/2 and 1/1 -> 0.75; hallucination (unsupported / ruled claims) 1/2 and 0/1 -> 0.25
    assert s["direct"]["faithfulness"] == pytest.approx(0.75)
    assert s["direct"]["hallucination_rate"] == pytest.approx(0.25)
    assert (s["direct"]["n"], s["direct"]["answers"], s["direct"]["failed_rulings"], s["direct"]["claims_cut"]) \
        == (2, 2, 1, 2)
    # negative: one abstention (no claims), one answer whose only ruling failed: nothing ruled
    assert math.isnan(s["negative"]["faithfulness"]) and s["negative"]["n"] == 0
    assert (s["negative"]["abstained"], s["negative"]["failed_rulings"]) == (1, 1)
    # all: answers 1, 2 and 5 ruled: faithfulness (0.5 + 1 + 0.25) / 3
    assert s["all"]["faithfulness"] == pytest.approx(1.75 / 3)
    assert s["all"]["n"] == 3 and s["all"]["answers"] == 5


def test_lengths_must_match():
    with pytest.raises(ValueError, match="2 judgements for 1 query types"):
        summarize_by_type([_j(True), _j(False)], ["direct"])

"""RET's evaluation gates measure what the proposal names, on the subset it names (figures by hand)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from harness.techniques.ret_eval import (ArmRun, added_cost_ratio, added_latency, fingerprint_recall_lift,
                                         hypothesis_option, paired_taus, selection_tau)

pytestmark = pytest.mark.unit


def _arms(rows):
    off = [ArmRun(f"q{i}", *r[0]) for i, r in enumerate(rows)]
    on = [ArmRun(f"q{i}", *r[1]) for i, r in enumerate(rows)]
    return off, on


def test_recall_lift_counts_only_questions_the_baseline_gets_wrong():
    off, on = _arms([
        ((False, [1, 0, 0]), (False, [1, 1, 0])),  # baseline wrong: 1 -> 2
        ((False, [0, 1, 0]), (True, [1, 1, 1])),   # baseline wrong: 1 -> 3
        ((True, [1, 1, 1]), (True, [0, 0, 0])),    # baseline right: left out (pooled, the lift would be 5/5)
    ])
    fig = fingerprint_recall_lift(off, on)
    assert fig.value == pytest.approx(5 / 2) and fig.n == 2
    assert fig.detail["relevant_docs_off"] == 2 and fig.detail["relevant_docs_on"] == 5


def test_recall_lift_is_undefined_when_the_baseline_finds_nothing():
    off, on = _arms([((False, [0, 0]), (False, [1, 0]))])
    assert math.isnan(fingerprint_recall_lift(off, on).value)


def test_tau_is_paired_per_question_and_undefined_ones_are_counted_not_zero():
    off, on = _arms([
        ((True, [1, 0, 0]), (True, [0, 0, 1])),  # both defined
        ((True, [0, 1, 0]), (True, [1, 0, 1])),  # both defined
        ((True, [0, 0, 0]), (True, [1, 0, 0])),  # off undefined: dropped from both arms
        ((True, [1, 1, 0]), (True, [1, 1, 1])),  # on undefined
    ])
    t_on, t_off, undefined = paired_taus(off, on)
    rank = [0, -1, -2]
    assert t_off == pytest.approx([st.kendalltau(rank, [1, 0, 0]).statistic, st.kendalltau(rank, [0, 1, 0]).statistic])
    assert t_on == pytest.approx([st.kendalltau(rank, [0, 0, 1]).statistic, st.kendalltau(rank, [1, 0, 1]).statistic])
    assert undefined == {"off_only": 1, "on_only": 1, "both": 0}
    assert math.isnan(selection_tau([1, 1, 1])) and math.isnan(selection_tau([]))


def test_tau_with_no_question_defined_in_both_arms_is_empty_not_zero():
    off, on = _arms([((True, [0, 0]), (True, [1, 0]))])
    t_on, t_off, undefined = paired_taus(off, on)
    assert len(t_on) == len(t_off) == 0 and undefined["off_only"] == 1


def test_hypothesis_maps_to_its_best_option_not_by_substring():
    options = ["5 days", "50 days", "30 days", "14 days"]
    assert hypothesis_option("5", options) == 0  # substring matching would also accept "50 days"
    assert hypothesis_option("within 50 days of purchase", options) == 1
    assert hypothesis_option("days", options) is None  # ties across options: unmatched
    assert hypothesis_option("a refund", options) is None


def test_added_cost_is_whole_run_usd_over_baseline_and_unknown_when_unpriced():
    off = [ArmRun("a", True, cost_usd=0.010, tokens=100), ArmRun("b", True, cost_usd=0.030, tokens=300)]
    on = [ArmRun("a", True, cost_usd=0.014, tokens=150), ArmRun("b", True, cost_usd=0.031, tokens=310)]
    fig = added_cost_ratio(off, on)
    assert fig.value == pytest.approx((0.045 - 0.040) / 0.040)
    assert fig.detail["added_tokens"] == 60 and fig.detail["baseline_tokens"] == 400
    on[1].cost_usd = None
    assert math.isnan(added_cost_ratio(off, on).value) and added_cost_ratio(off, on).detail["unpriced_runs"] == 1


def test_added_latency_is_the_median_of_paired_differences():
    off = [ArmRun(q, True, seconds=s) for q, s in zip("abc", [1.0, 2.0, 10.0])]
    on = [ArmRun(q, True, seconds=s) for q, s in zip("cab", [10.5, 4.0, 2.2])]
    assert added_latency(off, on).value == pytest.approx(float(np.median([3.0, 0.2, 0.5])))


def test_gates_refuse_unmatched_arms():
    with pytest.raises(ValueError, match="matched pairs"):
        added_latency([ArmRun("a", True)], [ArmRun("b", True)])


class _NoDocs:
    def retrieve(self, query, k):
        return []


def test_budget_guard_prices_the_stage_and_never_reads_an_unpriced_model_as_free(scripted_llm):
    from harness.config import ModelPrice
    from harness.techniques.ret import RET, RETConfig

    llm = scripted_llm(lambda m, p: "1. A - because it is", name="ret-price")
    ret = RET(llm, RETConfig(enable_ret=True, max_cost_usd=0.03))
    assert ret.estimate_cost() is None  # unknown: not 0.0
    res = ret.select("q?", _NoDocs(), spent_usd=0.01)
    assert res.trace.called("ret_cost_unknown") and res.skip_reason != "budget"
    assert ret.select("q?", _NoDocs(), spent_usd=0.03).skip_reason == "budget"
    llm.price = ModelPrice(input_per_mtok=10.0, output_per_mtok=10.0)
    assert ret.estimate_cost() == pytest.approx(1720 * 10.0 / 1e6)
    assert ret.select("q?", _NoDocs(), spent_usd=0.03 - 0.01).skip_reason == "budget"  # 0.0172 > 0.01 left
    assert ret.select("q?", _NoDocs(), spent_usd=0.0).skip_reason != "budget"

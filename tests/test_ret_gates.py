"""RET's evaluation gates measure what the proposal names, on the subset it names (figures by hand)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from harness.techniques.ret.gates import (ArmRun, added_cost_ratio, added_latency, fallback_rate,
                                         fingerprint_recall_lift, gate_tau, hypothesis_alignment, hypothesis_option,
                                         paired_taus, run_fell_back, selection_tau, top_coverage_hypothesis)
from tests.pytester_kit import new_project

pytest_plugins = ["pytester"]


def _arms(rows):
    off = [ArmRun(f"q{i}", *r[0]) for i, r in enumerate(rows)]
    on = [ArmRun(f"q{i}", *r[1]) for i, r in enumerate(rows)]
    return off, on


@pytest.mark.unit
def test_recall_lift_counts_only_questions_the_baseline_gets_wrong():
    off, on = _arms([
        ((False, [1, 0, 0]), (False, [1, 1, 0])),  # baseline wrong: 1 -> 2
        ((False, [0, 1, 0]), (True, [1, 1, 1])),   # baseline wrong: 1 -> 3
        ((True, [1, 1, 1]), (True, [0, 0, 0])),    # baseline right: left out (pooled, the lift would be 5/5)
    ])
    fig = fingerprint_recall_lift(off, on)
    assert fig.value == pytest.approx(5 / 2) and fig.n == 2
    assert fig.detail["relevant_docs_off"] == 2 and fig.detail["relevant_docs_on"] == 5


@pytest.mark.unit
def test_recall_lift_is_undefined_when_the_baseline_finds_nothing():
    off, on = _arms([((False, [0, 0]), (False, [1, 0]))])
    assert math.isnan(fingerprint_recall_lift(off, on).value)


@pytest.mark.unit
def test_tau_is_paired_per_question_and_a_lost_gold_passage_is_the_worst_tau():
    off, on = _arms([
        ((True, [1, 0, 0]), (True, [0, 0, 1])),  # both defined
        ((True, [0, 1, 0]), (True, [1, 0, 1])),  # both defined
        ((True, [0, 0, 0]), (True, [1, 0, 0])),  # RET brought the gold in: the baseline scores -1
        ((True, [1, 1, 0]), (True, [1, 1, 1])),  # RET selected only relevant passages: +1
        ((True, [0, 0, 0]), (True, [0, 0, 0])),  # no gold in either arm: left out, counted
        ((True, [1, 1, 1]), (True, [1, 1, 1])),  # only gold in both: left out, counted
    ])
    t_on, t_off, counts = paired_taus(off, on)
    rank = [0, -1, -2]

    def tau(labels):
        return st.kendalltau(rank, labels).statistic

    assert t_off == pytest.approx([tau([1, 0, 0]), tau([0, 1, 0]), -1.0, tau([1, 1, 0])])
    assert t_on == pytest.approx([tau([0, 0, 1]), tau([1, 0, 1]), tau([1, 0, 0]), 1.0])
    assert counts == {"dropped": 2, "no_gold_off": 1, "no_gold_on": 0, "all_gold_off": 0, "all_gold_on": 1}
    assert math.isnan(selection_tau([1, 1, 1])) and math.isnan(selection_tau([]))


@pytest.mark.unit
def test_gate_tau_is_below_the_gold_at_the_last_rank_and_symmetric():
    last = selection_tau([0] * 9 + [1])  # -9/sqrt(45 * 9): the worst a selection that kept the gold can do
    assert last == pytest.approx(-9 / math.sqrt(45 * 9)) and gate_tau([0] * 10, [0] * 9 + [1]) == -1.0 < last
    assert gate_tau([0] * 9 + [1], [0] * 10) == pytest.approx(last)
    assert gate_tau([1], [0, 1]) == 1.0 and gate_tau([], [1, 0]) == -1.0  # one passage or none: no tau, the rule
    assert math.isnan(gate_tau([0, 0], [0])) and math.isnan(gate_tau([1, 1], [1]))


@pytest.mark.unit
def test_tau_with_no_question_scored_in_both_arms_is_empty_not_zero():
    off, on = _arms([((True, [0, 0]), (True, [0, 0]))])
    t_on, t_off, counts = paired_taus(off, on)
    assert len(t_on) == len(t_off) == 0 and counts["dropped"] == 1


@pytest.mark.unit
def test_hypothesis_maps_to_its_best_option_not_by_substring():
    options = ["5 days", "50 days", "30 days", "14 days"]
    assert hypothesis_option("5", options) == 0  # substring matching would also accept "50 days"
    assert hypothesis_option("within 50 days of purchase", options) == 1
    assert hypothesis_option("days", options) is None  # ties across options: unmatched
    assert hypothesis_option("a refund", options) is None


@pytest.mark.unit
def test_added_cost_is_whole_run_usd_over_baseline_and_unknown_when_unpriced():
    off = [ArmRun("a", True, cost_usd=0.010, tokens=100), ArmRun("b", True, cost_usd=0.030, tokens=300)]
    on = [ArmRun("a", True, cost_usd=0.014, tokens=150), ArmRun("b", True, cost_usd=0.031, tokens=310)]
    fig = added_cost_ratio(off, on)
    assert fig.value == pytest.approx((0.045 - 0.040) / 0.040)
    assert fig.detail["added_tokens"] == 60 and fig.detail["baseline_tokens"] == 400
    on[1].cost_usd = None
    assert math.isnan(added_cost_ratio(off, on).value) and added_cost_ratio(off, on).detail["unpriced_runs"] == 1


@pytest.mark.unit
def test_added_latency_is_the_median_of_paired_differences():
    off = [ArmRun(q, True, seconds=s) for q, s in zip("abc", [1.0, 2.0, 10.0])]
    on = [ArmRun(q, True, seconds=s) for q, s in zip("cab", [10.5, 4.0, 2.2])]
    assert added_latency(off, on).value == pytest.approx(float(np.median([3.0, 0.2, 0.5])))


@pytest.mark.unit
def test_gates_refuse_unmatched_arms():
    with pytest.raises(ValueError, match="matched pairs"):
        added_latency([ArmRun("a", True)], [ArmRun("b", True)])


class _NoDocs:
    def retrieve(self, query, k):
        return []


@pytest.mark.unit
def test_budget_guard_prices_the_stage_and_never_reads_an_unpriced_model_as_free(rag_scripted_llm):
    from harness.config import ModelPrice
    from harness.techniques.ret.triangulation import RET, RETConfig

    llm = rag_scripted_llm(lambda m, p: "1. A - because it is", name="ret-price")
    ret = RET(llm, RETConfig(enable_ret=True, max_cost_usd=0.03))
    assert ret.estimate_cost() is None  # unknown: not 0.0
    res = ret.select("q?", _NoDocs(), spent_usd=0.01)
    assert res.trace.called("ret_cost_unknown") and res.skip_reason != "budget"
    assert ret.select("q?", _NoDocs(), spent_usd=0.03).skip_reason == "budget"
    llm.price = ModelPrice(input_per_mtok=10.0, output_per_mtok=10.0)
    assert ret.estimate_cost() == pytest.approx(1720 * 10.0 / 1e6)
    assert ret.select("q?", _NoDocs(), spent_usd=0.03 - 0.01).skip_reason == "budget"  # 0.0172 > 0.01 left
    assert ret.select("q?", _NoDocs(), spent_usd=0.0).skip_reason != "budget"


def _res(skip_reason=None, hyps=(), fps=None, docs=()):
    from harness.techniques.ret.triangulation import Hypothesis, RetResult

    return RetResult("q?", [Hypothesis(hypothesis=h) for h in hyps], fps or {}, {}, list(docs), None, skip_reason)


@pytest.mark.unit
def test_a_run_fell_back_when_ret_skipped_in_its_arm_or_an_llm_error_was_absorbed():
    from harness.types import Trace

    failed = Trace()
    failed.event("ret_llm_error", error="timeout")
    assert run_fell_back(_res("budget"), Trace(), ret_on=True) and run_fell_back(_res("parse_failure"), Trace(), ret_on=True)
    assert not run_fell_back(_res("disabled"), Trace(), ret_on=False)  # the baseline arm is RET off by design
    assert run_fell_back(_res("disabled"), failed, ret_on=False) and not run_fell_back(_res(), Trace(), ret_on=True)


@pytest.mark.unit
def test_every_figure_carries_the_fallback_rate_of_its_own_questions():
    off = [ArmRun(f"q{i}", i < 2, [1, 0], seconds=1.0, cost_usd=0.01) for i in range(4)]
    on = [ArmRun(f"q{i}", True, [1, 1], seconds=2.0, cost_usd=0.011, fell_back=i in (0, 3)) for i in range(4)]
    on[1].fell_back, off[2].fell_back = False, True  # q2: the baseline absorbed an error
    assert fallback_rate(off, on) == 3 / 4 and math.isnan(fallback_rate([], []))
    assert added_cost_ratio(off, on).detail["fallback_rate"] == 3 / 4
    assert added_latency(off, on).detail["fallback_rate"] == 3 / 4
    assert fingerprint_recall_lift(off, on).detail["fallback_rate"] == 2 / 2  # q2, q3: the baseline answers wrongly


@pytest.mark.unit
def test_a_point_estimate_on_a_fallback_run_cannot_pass():
    from harness.stats._verdict import MAX_FALLBACK_RATE, decide_estimate

    assert decide_estimate(True).verdict == "pass" and decide_estimate(True, fallback_rate=MAX_FALLBACK_RATE).verdict == "pass"
    v = decide_estimate(True, fallback_rate=0.75)
    assert v.verdict == "inconclusive" and "75%" in v.reason and "fallback was measured" in v.reason
    assert decide_estimate(False, fallback_rate=0.75).verdict == "fail"  # a fail stands


@pytest.mark.unit
def test_a_tie_for_the_top_coverage_credits_no_hypothesis():
    from harness.types import Hit

    docs = [Hit("d", 1.0, "electronics returned within 14 days")]
    options = ["14 days", "30 days"]
    clear = _res(hyps=["14 days", "30 days"], fps={"14 days": ["electronics returned 14 days"],
                                                   "30 days": ["thirty nights furniture"]}, docs=docs)
    zero = _res(hyps=["14 days", "30 days"], fps={"14 days": ["refund card"], "30 days": ["gift voucher"]}, docs=docs)
    assert top_coverage_hypothesis(clear) == "14 days" and hypothesis_alignment(clear, options, 0)
    assert top_coverage_hypothesis(zero) is None and not hypothesis_alignment(zero, options, 0)  # 0 = 0: a tie
    assert top_coverage_hypothesis(_res(hyps=["14 days"], docs=docs)) == "14 days"  # alone at the top: no tie
    assert top_coverage_hypothesis(_res("budget", hyps=["14 days"], docs=docs)) is None


@pytest.mark.unit
def test_the_budget_guard_reads_the_questions_own_run(rag_scripted_llm):
    """Per question: the cost its trace recorded before RET, not another question's or another technique's."""
    from harness.techniques.ret.triangulation import RET, RETConfig
    from harness.types import Trace

    ret = RET(rag_scripted_llm(lambda m, p: "", name="ret-per-question"), RETConfig(enable_ret=True, max_cost_usd=0.03))
    spent = Trace()
    with spent.stage("earlier"):
        spent.record_llm_call(0, 0, 0.035)
    assert ret.select("q?", _NoDocs(), trace=spent).skip_reason == "budget"
    assert ret.select("q?", _NoDocs(), trace=Trace()).skip_reason != "budget"
    assert ret.select("q?", _NoDocs(), spent_usd=0.031).skip_reason == "budget"


@pytest.mark.integration
def test_the_check_withholds_a_pass_measured_on_a_fallback_run(pytester: pytest.Pytester):
    """The `check` fixture: an estimate spec that holds, with `fallback_rate` 0.75 in its context, reads inconclusive
    with the reason (the test passes; under --strict-verdicts it fails); at 0.05 it passes."""
    import json
    import textwrap

    new_project(pytester, """
        specs:
          - id: DEMO-COST
            title: Added cost stays under a bound
            marker: unit
            metric: added cost ratio
            comparator: "<="
            threshold: 0.18
            source: demo
    """)
    pytester.makepyfile(test_demo=textwrap.dedent("""
        import pytest

        @pytest.mark.spec("DEMO-COST")
        @pytest.mark.parametrize("rate", [0.75, 0.05])
        def test_cost(rag_check, rate):
            rag_check("DEMO-COST", 0.0, fallback_rate=rate, dataset=f"set-{rate}")
"""))
    pytester.runpytest_subprocess("--report-dir", "out").assert_outcomes(passed=2)
    rows = json.loads((pytester.path / "out" / "results.json").read_text())["specs"]
    entries = {e["dataset"]: e for e in rows[0]["datasets"]}
    assert rows[0]["verdict"] == "inconclusive" and entries["set-0.05"]["verdict"] == "pass"
    assert entries["set-0.75"]["verdict"] == "inconclusive" and "fallback was measured" in entries["set-0.75"]["reason"]
    strict = pytester.runpytest_subprocess("--report-dir", "out2", "--strict-verdicts", "-k", "0.75")
    strict.assert_outcomes(failed=1)

"""RET unit checks (a)-(f), the testable risk mitigations and the gates' own rules (hand-built cases)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from harness.techniques.ret.triangulation import (
    COVERAGE_HEADER, RET, Hypothesis, RETConfig, build_retrieval_plan, coverage_table, extract_fingerprints,
    fingerprint_coverage, generate_hypotheses, mcq_blend, synthesis_prompt,
)
from harness.types import Hit

pytestmark = pytest.mark.unit
Q = "How many days do I have to return electronics?"
WHY = "the returns page for electronics lists a fixed window counted from the day the parcel is delivered to you"
HYPS = json.dumps([{"hypothesis": "14 days", "justification": WHY}, {"hypothesis": "30 days", "justification": WHY}])
FPS = json.dumps({"14 days": ["electronics returned within 14 days of delivery", "return window electronics 14 days"],
                  "30 days": ["electronics returned within 30 days of delivery", "30 day return window electronics"]})


def script(hyps: str = HYPS, fps: str = FPS):
    return {"candidate answers": hyps, "atomic facts": fps}


@pytest.mark.spec("RET-UNIT-a")
def test_hypotheses_schema_and_empty(rag_scripted_llm, rag_check):
    hyps = generate_hypotheses(Q, rag_scripted_llm(script(), name="ret-a"))
    schema_ok = [h.hypothesis for h in hyps] == ["14 days", "30 days"] and all(h.justification for h in hyps)
    empty = generate_hypotheses(Q, rag_scripted_llm({"": ""}, name="ret-a-empty"))
    rag_check("RET-UNIT-a", schema_ok and empty == [])
    bullets = generate_hypotheses(Q, rag_scripted_llm({"": "1. 14 days - the page says so\n2. 30 days"}, name="ret-a-b"))
    assert [h.hypothesis for h in bullets] == ["14 days", "30 days"] and bullets[0].justification == "the page says so"


@pytest.mark.spec("RET-UNIT-b")
def test_fingerprints_per_hypothesis(rag_scripted_llm, rag_check):
    hyps = [Hypothesis(hypothesis="14 days"), Hypothesis(hypothesis="30 days")]
    fps = extract_fingerprints(hyps, Q, rag_scripted_llm(script(), name="ret-b"))
    rag_check("RET-UNIT-b", min(len(fps.get(h.hypothesis, [])) for h in hyps))
    bullets = extract_fingerprints(hyps, Q, rag_scripted_llm({"": "- a fact one here\n- a fact two here\n- third fact"},
                                                         name="ret-b-bul"), k=2)
    assert bullets == {"14 days": ["a fact one here", "a fact two here"], "30 days": ["third fact"]}


@pytest.mark.spec("RET-UNIT-c")
def test_coverage_prefers_more_fingerprints(rag_check):
    fps = ["electronics returned within 14 days", "restocking fee 10 percent", "refund issued after inspection by staff"]
    more = "Electronics can be returned within 14 days. A restocking fee of 10 percent applies."
    fewer = "Electronics can be returned within 14 days."
    rag_check("RET-UNIT-c", fingerprint_coverage(more, fps) - fingerprint_coverage(fewer, fps))
    assert fingerprint_coverage(more, fps) == pytest.approx(2 / 3) and fingerprint_coverage("", fps) == 0.0


@pytest.mark.spec("RET-UNIT-d")
def test_plan_has_fingerprint_queries(rag_check):
    fps = {"14 days": ["returned within 14 days"], "30 days": ["returned within 30 days"]}
    on = build_retrieval_plan(Q, fps, RETConfig(enable_ret=True))
    off = build_retrieval_plan(Q, fps, RETConfig(enable_ret=False))
    none = build_retrieval_plan(Q, {}, RETConfig(enable_ret=True))
    assert "fingerprint_queries" not in off and "fingerprint_queries" not in none
    queries = on.get("fingerprint_queries", [])
    assert all("electronics" in q for q in queries)
    rag_check("RET-UNIT-d", len(queries) == 2)


@pytest.mark.spec("RET-UNIT-e")
def test_synthesis_prompt_has_coverage_header(rag_check):
    hyps = [Hypothesis(hypothesis="14 days")]
    docs = [Hit("d", 1.0, "Electronics can be returned within 14 days of delivery.")]
    table = coverage_table(hyps, {"14 days": ["electronics returned within 14 days"]}, docs)
    prompt = synthesis_prompt(Q, docs, table)
    assert "1/1 fingerprints found" in table and len(table.split()) < 400
    assert COVERAGE_HEADER not in synthesis_prompt(Q, docs, None)
    rag_check("RET-UNIT-e", prompt.startswith(COVERAGE_HEADER))


@pytest.mark.spec("RET-UNIT-f")
def test_mcq_blend_uses_weight(rag_check):
    v = mcq_blend(0.8, 0.4, 0.5, weight=0.20)
    rag_check("RET-UNIT-f", abs(v - (0.55 * 0.8 + 0.25 * 0.4 + 0.20 * 0.5)))


@pytest.mark.spec("RET-RISK-4")
def test_weight_zero_restores_original_blend(rag_check):
    worst = max(abs(mcq_blend(a, b, c, weight=0.0) - (0.7 * a + 0.3 * b)) for a, b, c in
                [(0.1, 0.9, 1.0), (0.8, 0.2, 0.0), (0.5, 0.5, 0.5)])
    rag_check("RET-RISK-4", worst)
    assert mcq_blend(0.1, 0.9, None, weight=0.2) == pytest.approx(0.7 * 0.1 + 0.3 * 0.9)


@pytest.fixture
def ret_retriever(unit_retriever):
    return unit_retriever


@pytest.mark.spec("RET-RISK-1")
def test_skip_on_low_quality_hypotheses(rag_scripted_llm, ret_retriever, rag_check):
    short = json.dumps([{"hypothesis": "14 days", "justification": "guess"}])
    ret = RET(rag_scripted_llm(script(hyps=short), name="ret-r1"), RETConfig(enable_ret=True))
    res = ret.select(Q, ret_retriever)
    rag_check("RET-RISK-1", res.skip_reason)
    assert res.docs and res.trace.called("ret_skipped") and not res.trace.called("ret")


@pytest.mark.spec("RET-RISK-2")
def test_skip_on_parse_failure(rag_scripted_llm, ret_retriever, rag_check):
    ret = RET(rag_scripted_llm(script(fps="I am not sure what facts you mean."), name="ret-r2"), RETConfig(enable_ret=True))
    rag_check("RET-RISK-2", ret.select(Q, ret_retriever).skip_reason)


@pytest.mark.spec("RET-RISK-3")
def test_budget_guard_reads_the_runs_spend(rag_scripted_llm, ret_retriever, rag_check):
    """The registered technique, as a pipeline runs it: RET's budget is per question run (the proposal's
    "remaining run budget", a run being one question). A question whose run has spent $0.05 before RET (its trace)
    has less than RET's estimate left of `max_cost_usd` ($0.03): RET is skipped and calls no model."""
    from harness.config import HarnessConfig, ModelPrice
    from harness.llm.scripted import by_kind
    from harness.techniques._registry import Services, build_technique
    from harness.types import Query, Trace

    calls, answer = [], by_kind(script())
    llm = rag_scripted_llm(lambda m, p: calls.append(1) or answer(m, p), name="ret-r3",
                       price=ModelPrice(input_per_mtok=1.0, output_per_mtok=1.0))  # RET's estimate: $0.00172
    tech = build_technique("ret", Services(HarnessConfig(), retriever=ret_retriever, llm=llm),
                           {"enable_ret": True, "max_cost_usd": 0.03})
    first = tech.run(Query("q1", Q))  # a fresh run: nothing spent, RET runs
    assert first.detail["skip_reason"] is None and first.trace.cost_usd > 0
    earlier = Trace()
    with earlier.stage("rewrite"):  # the pipeline's work on this question before RET: $0.05
        earlier.record_llm_call(50_000, 0, 0.05)
    made = len(calls)
    second = tech.run(Query("q2", Q), trace=earlier)
    rag_check("RET-RISK-3", second.detail["skip_reason"], spent_usd=0.05, max_cost_usd=0.03)
    assert len(calls) == made, "no RET call is made once the run's budget for it is spent"
    assert [e["spent_usd"] for e in second.trace.events if e["name"] == "ret_budget"] == [pytest.approx(0.05)]


@pytest.mark.spec("RET-UNIT-d")
def test_ret_select_end_to_end(rag_scripted_llm, ret_retriever):
    res = RET(rag_scripted_llm(script(), name="ret-e2e"), RETConfig(enable_ret=True)).select(Q, ret_retriever)
    assert res.skip_reason is None and res.trace.called("ret") and res.table.startswith(COVERAGE_HEADER)
    assert all("coverage" in d.metadata for d in res.docs)
    assert res.docs == sorted(res.docs, key=lambda d: (-d.score, d.id))
    assert RET(rag_scripted_llm(script(), name="ret-off"), RETConfig()).select(Q, ret_retriever).skip_reason == "disabled"


def test_completion_variant_reads_tiny_model_lists(rag_scripted_llm, ret_retriever):
    """The few-shot variant for tiny models: the model continues a numbered list (and then rambles into a
    new example); fingerprints come one call per hypothesis as bullets, duplicates and one-word lines dropped."""
    def respond(messages, params):
        prompt = messages[-1]["content"]
        if prompt.endswith("Candidate answers:\n1."):
            return (f" 14 days - {WHY}.\n2. 30 days - {WHY} as well.\n\nQuestion: What is the fee?\n"
                    "Candidate answers:\n1. $5 - a fee")
        hyp = prompt.rsplit("Candidate answer: ", 1)[1].split("\n")[0]
        return (f" electronics returned within {hyp} of delivery\n- electronics returned within {hyp} of delivery\n"
                f"- window\n- return window for electronics is {hyp}\n\nQuestion: unrelated")

    llm = rag_scripted_llm(respond, name="ret-completion")
    hyps = generate_hypotheses(Q, llm, prompt_variant="completion")
    assert [h.hypothesis for h in hyps] == ["14 days", "30 days"] and all(len(h.justification.split()) >= 15 for h in hyps)
    fps = extract_fingerprints(hyps, Q, llm, prompt_variant="completion")
    assert fps == {"14 days": ["electronics returned within 14 days of delivery", "return window for electronics is 14 days"],
                   "30 days": ["electronics returned within 30 days of delivery", "return window for electronics is 30 days"]}
    res = RET(llm, RETConfig(enable_ret=True, prompt_variant="completion")).select(Q, ret_retriever)
    assert res.skip_reason is None and res.table.startswith(COVERAGE_HEADER)


# ---------------------------------------------------------------- the gates' own rules (issue #31), by hand
def _ret_result(hyps: list[str], fps: dict[str, list[str]], docs: list, skip_reason: str | None = None):
    from harness.techniques.ret.triangulation import RetResult

    return RetResult(Q, [Hypothesis(hypothesis=h) for h in hyps], fps, {}, docs, None, skip_reason)


@pytest.mark.spec("RET-GATES-EARNED")
def test_no_gate_passes_on_a_run_where_ret_did_not_run(rag_catalogue, rag_check):
    """20 MCQ pairs: RET ran on 5 (right where the baseline was wrong, +$0.0001 and +3 s each) and was skipped
    (`budget`) on 15 (same pick, cost and time). Unguarded, gates 1, 5 and 6 would read supported / pass."""
    from harness.stats._effect import paired_effect
    from harness.stats._verdict import decide, decide_estimate
    from harness.techniques.ret.gates import ArmRun, added_cost_ratio, added_latency, fallback_rate, run_fell_back
    from harness.types import Trace

    off, on = [], []
    for i in range(20):
        ran, right = i < 5, i >= 5 and i % 2 == 0
        res = _ret_result([], {}, [], skip_reason=None if ran else "budget")
        off.append(ArmRun(f"q{i}", right, seconds=2.0, cost_usd=0.001))
        on.append(ArmRun(f"q{i}", ran or right, seconds=2.0 + 3.0 * ran, cost_usd=0.001 + 0.0001 * ran,
                         fell_back=run_fell_back(res, Trace(), ret_on=True)))
    cost, latency = added_cost_ratio(off, on), added_latency(off, on)
    assert cost.value == pytest.approx(5 * 0.0001 / (20 * 0.001)) and latency.value == 0.0  # both under threshold
    effect = paired_effect(np.array([r.correct for r in on], float), np.array([r.correct for r in off], float),
                           binary=True, seed=1)
    g1 = rag_catalogue["RET-GATE-1"]
    verdicts = {"RET-GATE-1": decide(effect, g1.comparator, g1.threshold, g1.decision,
                                     fallback_rate=fallback_rate(off, on)).verdict}
    for sid, fig in (("RET-GATE-5", cost), ("RET-GATE-6", latency)):
        verdicts[sid] = decide_estimate(rag_catalogue[sid].holds(fig.value), fallback_rate=fig.detail["fallback_rate"]).verdict
    rag_check("RET-GATES-EARNED", sum(v in ("pass", "supported") for v in verdicts.values()), verdicts=verdicts,
          ret_skipped=15, questions=20)


@pytest.mark.spec("RET-GATE-3-LOST-GOLD")
def test_a_question_whose_gold_left_the_top_k_scores_the_worst_tau(rag_check):
    """q0: off [0,1,0] (tau 0: one concordant, one discordant pair), on [1,0,0] (tau-b 2/sqrt(3*2)); q1: RET lost the
    gold, off [1,0,0] (2/sqrt(6)), on [0,0,0] (-1 by the rule); q2: no gold in either arm (left out). The mean paired
    difference is ((2/sqrt(6) - 0) + (-1 - 2/sqrt(6))) / 2 = -0.5; dropping q1 would read +0.816."""
    from harness.techniques.ret.gates import ArmRun, paired_taus

    rows = [([0, 1, 0], [1, 0, 0]), ([1, 0, 0], [0, 0, 0]), ([0, 0, 0], [0, 0, 0])]
    off = [ArmRun(f"q{i}", True, a) for i, (a, _) in enumerate(rows)]
    on = [ArmRun(f"q{i}", True, b) for i, (_, b) in enumerate(rows)]
    t_on, t_off, counts = paired_taus(off, on)
    diff = float(np.mean(t_on - t_off)) if len(t_on) else float("nan")
    rag_check("RET-GATE-3-LOST-GOLD", abs(diff - (-0.5)), mean_paired_difference=diff, counts=counts)
    assert counts == {"dropped": 1, "no_gold_off": 0, "no_gold_on": 1, "all_gold_off": 0, "all_gold_on": 0}


@pytest.mark.spec("RET-GATE-4-TIES")
def test_a_tie_for_top_coverage_credits_no_hypothesis(rag_check):
    """Gold option "14 days" in both questions. Clear: 14 days covers 2/2 fingerprints in the passage, 30 days 0/2:
    aligned. Tie: both cover 1/1, and the first generated ("14 days") names the gold: unmatched. Rate 1/2."""
    from harness.techniques.ret.gates import hypothesis_alignment, top_coverage_hypothesis

    options, docs = ["14 days", "30 days", "60 days", "90 days"], [Hit("d", 1.0, "Electronics returned within 14 days "
                                                                             "of delivery get a refund to the card.")]
    clear = _ret_result(["14 days", "30 days"], {"14 days": ["electronics returned 14 days", "refund card delivery"],
                                                 "30 days": ["furniture swapped thirty nights", "store credit only"]}, docs)
    tie = _ret_result(["14 days", "30 days"], {"14 days": ["electronics returned 14 days"],
                                               "30 days": ["electronics returned 30 days"]}, docs)
    assert top_coverage_hypothesis(clear) == "14 days"
    aligned = [hypothesis_alignment(res, options, 0) for res in (clear, tie)]
    rag_check("RET-GATE-4-TIES", float(np.mean(aligned)), aligned=aligned)
    assert top_coverage_hypothesis(tie) is None

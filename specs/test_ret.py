"""RET unit checks (a)-(f) and the testable risk mitigations."""
from __future__ import annotations

import json

import pytest

from harness.techniques.ret import (
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
def test_hypotheses_schema_and_empty(scripted_llm, check):
    hyps = generate_hypotheses(Q, scripted_llm(script(), name="ret-a"))
    schema_ok = [h.hypothesis for h in hyps] == ["14 days", "30 days"] and all(h.justification for h in hyps)
    empty = generate_hypotheses(Q, scripted_llm({"": ""}, name="ret-a-empty"))
    bullets = generate_hypotheses(Q, scripted_llm({"": "1. 14 days - the page says so\n2. 30 days"}, name="ret-a-b"))
    assert [h.hypothesis for h in bullets] == ["14 days", "30 days"] and bullets[0].justification == "the page says so"
    check("RET-UNIT-a", schema_ok and empty == [])


@pytest.mark.spec("RET-UNIT-b")
def test_fingerprints_per_hypothesis(scripted_llm, check):
    hyps = [Hypothesis(hypothesis="14 days"), Hypothesis(hypothesis="30 days")]
    fps = extract_fingerprints(hyps, Q, scripted_llm(script(), name="ret-b"))
    bullets = extract_fingerprints(hyps, Q, scripted_llm({"": "- a fact one here\n- a fact two here\n- third fact"},
                                                         name="ret-b-bul"), k=2)
    assert bullets == {"14 days": ["a fact one here", "a fact two here"], "30 days": ["third fact"]}
    check("RET-UNIT-b", min(len(fps.get(h.hypothesis, [])) for h in hyps))


@pytest.mark.spec("RET-UNIT-c")
def test_coverage_prefers_more_fingerprints(check):
    fps = ["electronics returned within 14 days", "restocking fee 10 percent", "refund issued after inspection by staff"]
    more = "Electronics can be returned within 14 days. A restocking fee of 10 percent applies."
    fewer = "Electronics can be returned within 14 days."
    assert fingerprint_coverage(more, fps) == pytest.approx(2 / 3) and fingerprint_coverage("", fps) == 0.0
    check("RET-UNIT-c", fingerprint_coverage(more, fps) - fingerprint_coverage(fewer, fps))


@pytest.mark.spec("RET-UNIT-d")
def test_plan_has_fingerprint_queries(check):
    fps = {"14 days": ["returned within 14 days"], "30 days": ["returned within 30 days"]}
    on = build_retrieval_plan(Q, fps, RETConfig(enable_ret=True))
    off = build_retrieval_plan(Q, fps, RETConfig(enable_ret=False))
    none = build_retrieval_plan(Q, {}, RETConfig(enable_ret=True))
    assert "fingerprint_queries" not in off and "fingerprint_queries" not in none
    queries = on.get("fingerprint_queries", [])
    assert all("electronics" in q for q in queries)
    check("RET-UNIT-d", len(queries) == 2)


@pytest.mark.spec("RET-UNIT-e")
def test_synthesis_prompt_has_coverage_header(check):
    hyps = [Hypothesis(hypothesis="14 days")]
    docs = [Hit("d", 1.0, "Electronics can be returned within 14 days of delivery.")]
    table = coverage_table(hyps, {"14 days": ["electronics returned within 14 days"]}, docs)
    prompt = synthesis_prompt(Q, docs, table)
    assert "1/1 fingerprints found" in table and len(table.split()) < 400
    assert COVERAGE_HEADER not in synthesis_prompt(Q, docs, None)
    check("RET-UNIT-e", prompt.startswith(COVERAGE_HEADER))


@pytest.mark.spec("RET-UNIT-f")
def test_mcq_blend_uses_weight(check):
    v = mcq_blend(0.8, 0.4, 0.5, weight=0.20)
    check("RET-UNIT-f", abs(v - (0.55 * 0.8 + 0.25 * 0.4 + 0.20 * 0.5)))


@pytest.mark.spec("RET-RISK-4")
def test_weight_zero_restores_original_blend(check):
    worst = max(abs(mcq_blend(a, b, c, weight=0.0) - (0.7 * a + 0.3 * b)) for a, b, c in
                [(0.1, 0.9, 1.0), (0.8, 0.2, 0.0), (0.5, 0.5, 0.5)])
    assert mcq_blend(0.1, 0.9, None, weight=0.2) == pytest.approx(0.7 * 0.1 + 0.3 * 0.9)
    check("RET-RISK-4", worst)


@pytest.fixture
def ret_retriever(unit_retriever):
    return unit_retriever


@pytest.mark.spec("RET-RISK-1")
def test_skip_on_low_quality_hypotheses(scripted_llm, ret_retriever, check):
    short = json.dumps([{"hypothesis": "14 days", "justification": "guess"}])
    ret = RET(scripted_llm(script(hyps=short), name="ret-r1"), RETConfig(enable_ret=True))
    res = ret.select(Q, ret_retriever)
    assert res.docs and res.trace.called("ret_skipped") and not res.trace.called("ret")
    check("RET-RISK-1", res.skip_reason)


@pytest.mark.spec("RET-RISK-2")
def test_skip_on_parse_failure(scripted_llm, ret_retriever, check):
    ret = RET(scripted_llm(script(fps="I am not sure what facts you mean."), name="ret-r2"), RETConfig(enable_ret=True))
    check("RET-RISK-2", ret.select(Q, ret_retriever).skip_reason)


@pytest.mark.spec("RET-RISK-3")
def test_budget_guard(scripted_llm, ret_retriever, check):
    calls = []
    llm = scripted_llm(lambda m, p: calls.append(1) or HYPS, name="ret-r3")
    res = RET(llm, RETConfig(enable_ret=True, max_cost_usd=0.03)).select(Q, ret_retriever, spent_usd=0.05)
    assert calls == [], "no RET call is made once the budget is spent"
    check("RET-RISK-3", res.skip_reason)


@pytest.mark.spec("RET-UNIT-d")
def test_ret_select_end_to_end(scripted_llm, ret_retriever):
    res = RET(scripted_llm(script(), name="ret-e2e"), RETConfig(enable_ret=True)).select(Q, ret_retriever)
    assert res.skip_reason is None and res.trace.called("ret") and res.table.startswith(COVERAGE_HEADER)
    assert all("coverage" in d.metadata for d in res.docs)
    assert res.docs == sorted(res.docs, key=lambda d: (-d.score, d.id))
    assert RET(scripted_llm(script(), name="ret-off"), RETConfig()).select(Q, ret_retriever).skip_reason == "disabled"


def test_completion_variant_reads_tiny_model_lists(scripted_llm, ret_retriever):
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

    llm = scripted_llm(respond, name="ret-completion")
    hyps = generate_hypotheses(Q, llm, prompt_variant="completion")
    assert [h.hypothesis for h in hyps] == ["14 days", "30 days"] and all(len(h.justification.split()) >= 15 for h in hyps)
    fps = extract_fingerprints(hyps, Q, llm, prompt_variant="completion")
    assert fps == {"14 days": ["electronics returned within 14 days of delivery", "return window for electronics is 14 days"],
                   "30 days": ["electronics returned within 30 days of delivery", "return window for electronics is 30 days"]}
    res = RET(llm, RETConfig(enable_ret=True, prompt_variant="completion")).select(Q, ret_retriever)
    assert res.skip_reason is None and res.table.startswith(COVERAGE_HEADER)

"""JUDGE-*: answer-level metrics on hand-computed cases with a scripted judge, the agreement statistics
against their references, the judge-free baseline on the hand-labelled set, and the unreliable-judge rule."""
from __future__ import annotations

import math
import random
import re

import numpy as np
import pytest

from harness.judge import (ClaimItem, LexicalJudge, LLMJudge, answered_rate, cohen_kappa, context_precision, context_recall,
                           judge_answer, krippendorff_alpha)
from harness.judge.labelled import load_labelled_answers
from harness.judge.reliability import JudgeReliability
from harness.techniques.e2e4.evaluation import abstains

pytestmark = pytest.mark.unit

HAND = load_labelled_answers()
EXPECTED_FAITHFULNESS = {"supported": 1.0, "unsupported": 0.0, "partial": 0.5, "abstention": math.nan}


def _label_judge(scripted_llm, *, bare: bool = False):
    """A scripted judge that rules as the hand labels say (JSON, or a bare Yes/No when `bare`)."""
    table = {t: s for a in HAND for t, s in a.claims}

    def respond(messages, params):
        claim = re.search(r"^Claim: (.*)$", messages[-1]["content"], re.M).group(1)
        if bare:
            return "Yes." if table.get(claim) else "No, it is not."
        return '{"supported": %s}' % ("true" if table.get(claim) else "false")

    return LLMJudge(scripted_llm(respond, name="labels-bare" if bare else "labels").with_role("judge"))


def _err(got: float, want: float) -> float:
    return 0.0 if (math.isnan(got) and math.isnan(want)) else abs(got - want) if not math.isnan(got - want) else 1.0


@pytest.mark.spec("JUDGE-FAITHFULNESS-HAND")
def test_faithfulness_on_the_hand_labelled_set(rag_scripted_llm, rag_check):
    errors = []
    for bare in (False, True):  # the JSON reply and the lenient read of a bare yes/no give the same figures
        judge = _label_judge(rag_scripted_llm, bare=bare)
        for a in HAND:
            j = judge_answer(judge, a.question, a.context, a.answer)
            assert j.claims == [t for t, _ in a.claims] and j.failures == 0
            errors.append(_err(j.faithfulness, EXPECTED_FAITHFULNESS[a.kind]))
    rag_check("JUDGE-FAITHFULNESS-HAND", max(errors), n=len(HAND), dataset="retail_kb")


@pytest.mark.spec("JUDGE-HALLUCINATION-HAND")
def test_hallucination_rate_and_answered_negatives(rag_scripted_llm, rag_check):
    judge = _label_judge(rag_scripted_llm)
    errors = []
    for a in HAND:
        j = judge_answer(judge, a.question, a.context, a.answer)
        errors.append(_err(j.hallucination_rate, 1.0 - EXPECTED_FAITHFULNESS[a.kind]))
    # every hand answer read as the answer to an unanswerable query: the 16 abstentions are not answered
    answered = answered_rate([abstains(a.answer) for a in HAND])
    errors.append(abs(answered - (len(HAND) - 16) / len(HAND)))
    errors.append(abs(answered_rate([True, False, False, True]) - 0.5))
    rag_check("JUDGE-HALLUCINATION-HAND", max(errors), n=len(HAND), dataset="retail_kb")


@pytest.mark.spec("JUDGE-CONTEXT-HAND")
def test_context_precision_and_recall(rag_check):
    cases = [  # (ranked ids, gold ids, precision by hand, recall by hand)
        (["d1", "d2", "d3", "d4", "d5"], {"d2", "d4"}, (1 / 2 + 2 / 4) / 2, 1.0),
        (["a", "b", "c"], {"a", "c", "z"}, (1 / 1 + 2 / 3) / 2, 2 / 3),
        (["x", "y"], {"z"}, 0.0, 0.0),
        (["g", "x", "y", "z"], {"g"}, 1.0, 1.0),
    ]
    errors = [max(abs(context_precision(r, g) - p), abs(context_recall(r, g) - rc)) for r, g, p, rc in cases]
    assert math.isnan(context_recall(["a"], set()))
    rag_check("JUDGE-CONTEXT-HAND", max(errors), cases=len(cases))


@pytest.mark.spec("JUDGE-AGREEMENT-STATS")
def test_kappa_and_alpha_against_their_references(rag_check):
    from sklearn.metrics import cohen_kappa_score

    rng = random.Random(7)
    errors = []
    for p_flip in (0.1, 0.3, 0.5):
        a = [rng.random() < 0.6 for _ in range(80)]
        b = [x if rng.random() > p_flip else not x for x in a]
        errors.append(abs(cohen_kappa(a, b) - cohen_kappa_score(a, b)))
    # Krippendorff (2011), §"nominal data": 4 observers, 12 units, n = 40 pairable values with marginals
    # 9, 13, 10, 5, 3 and 8 off-diagonal coincidences: alpha = 1 - 39 * 8 / (40^2 - 384) = 0.743
    obs = [[1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None], [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
           [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None], [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]]
    errors.append(abs(krippendorff_alpha(list(zip(*obs))) - (1 - 39 * 8 / (1600 - 384))))
    # two raters on binary data: alpha and kappa differ only by the small-sample term
    assert krippendorff_alpha([[1, 1], [0, 0]]) == 1.0
    rag_check("JUDGE-AGREEMENT-STATS", max(errors))


@pytest.mark.spec("JUDGE-LEXICAL-HAND")
def test_lexical_baseline_on_the_hand_labelled_set(rag_check, rag_measure):
    claims = [c for a in HAND for c in a.claim_items()]
    judge = LexicalJudge()
    verdicts = [judge.supported(c.item) for c in claims]
    rel = JudgeReliability.measure("lexical", "retail_kb hand-labelled", verdicts, [c.supported for c in claims])
    rag_measure("judge_accuracy", rel.accuracy, judge="lexical", dataset="retail_kb", n=rel.n, ci=list(rel.accuracy_ci))
    rag_check("JUDGE-LEXICAL-HAND", rel.kappa, n=rel.n, ci=list(rel.kappa_ci), accuracy=rel.accuracy,
          dataset="retail_kb", judge="lexical")


@pytest.mark.spec("JUDGE-UNRELIABLE-FLAG")
def test_a_claim_resting_on_an_unreliable_judge_is_not_supported(rag_check):
    from harness.judge.reliability import hold_on_unreliable_judge
    from harness.stats._effect import paired_effect
    from harness.stats._verdict import Decision, decide

    effect = paired_effect([0.0] * 40, [0.5] * 20 + [1.0] * 20)  # hallucination down by 0.75, every query
    assert decide(effect, "<", 0.0, Decision(rule="ci")).verdict == "supported"
    weak = JudgeReliability("tiny", "hand", 60, 0.1, (0.0, 0.2), 0.55, (0.4, 0.7), flip_rate=0.0, flip_n=60)
    good = JudgeReliability("good", "hand", 60, 0.8, (0.7, 0.9), 0.9, (0.8, 0.95), flip_rate=0.05, flip_n=60)
    held, kept = {"verdict": "supported"}, {"verdict": "supported"}
    hold_on_unreliable_judge(held, [good.as_context(), weak.as_context()])
    rag_check("JUDGE-UNRELIABLE-FLAG", held["verdict"], reason=held.get("decided", {}).get("reason"))
    # more items are ruled by the same judge: no number of them decides it
    assert held["decided"]["queries_needed"] == "never" and "unreliable judge" in held["decided"]["needed_for"]
    strong = JudgeReliability("big", "hand", 60, 0.8, (0.7, 0.9), 0.9, (0.8, 0.95), flip_rate=0.25, flip_n=60)
    assert weak.unreliable and strong.unreliable and len(strong.reasons) == 1  # flips alone flag it
    assert not good.unreliable
    hold_on_unreliable_judge(kept, good.as_context())
    assert kept["verdict"] == "supported"
    refuted = {"verdict": "refuted"}
    hold_on_unreliable_judge(refuted, weak.as_context())
    assert refuted["verdict"] == "refuted"  # a refutation stands


def test_failed_rulings_are_counted_not_scored(rag_scripted_llm):
    llm = rag_scripted_llm(lambda m, p: "maybe, it depends", name="undecided")
    j = judge_answer(LLMJudge(llm), "q", "context", "One claim. Another claim.")
    assert j.verdicts == [None, None] and j.failures == 2 and math.isnan(j.faithfulness)


def test_answer_relevancy_with_a_scripted_judge(rag_scripted_llm):
    from harness.judge import answer_relevancy

    llm = rag_scripted_llm(lambda m, p: '{"relevant": %s}' % str("warranty" in m[-1]["content"].split("Answer:")[1]).lower(),
                       name="relevance")
    judge = LLMJudge(llm)
    verdicts = [judge.relevant("How long is the warranty?", a) for a in
                ("The warranty lasts 12 months.", "Our stores open at 10 am.", "A 2-year warranty.")]
    assert verdicts == [True, False, True]
    assert answer_relevancy(verdicts) == pytest.approx(2 / 3)


def test_hand_labelled_set_covers_every_kind_and_loads_strictly(tmp_path):
    from harness.data import DataError
    from harness.judge.labelled import load_labelled_answers

    kinds = {k: sum(a.kind == k for a in HAND) for k in ("supported", "unsupported", "partial", "abstention")}
    assert len(HAND) >= 60 and min(kinds.values()) >= 15, kinds
    assert all(abstains(a.answer) == (a.kind == "abstention") for a in HAND)
    bad = tmp_path / "labels.jsonl"
    bad.write_text('{"id": "a", "label": "supported", "question": "q", "context": "c", "answer": "x", '
                   '"claims": [{"text": "x", "supported": true}]}\n'
                   '{"id": "b", "label": "partial", "question": "q", "context": "c", "answer": "x", '
                   '"claims": [{"text": "x", "supported": true}]}\n')
    with pytest.raises(DataError, match=r"labels.jsonl:2.*label"):
        load_labelled_answers(bad)
    bad.write_text('{"id": "a", "label": "supported", "question": "q", "context": "c", "answer": "x", '
                   '"claims": [{"text": "", "supported": true}]}\n')
    with pytest.raises(DataError, match=r"labels.jsonl:1.*claims\[0\]"):
        load_labelled_answers(bad)


def test_split_claims_and_lexical_support():
    from harness.judge import lexical_support, split_claims

    assert split_claims("It costs $5. It ships free; it arrives Monday.") == ["It costs $5.", "It ships free",
                                                                             "it arrives Monday."]
    assert split_claims("Paris") == ["Paris"] and split_claims("  ") == []
    ctx = "Laptops carry a 12-month limited warranty."
    assert lexical_support("Laptops carry a 12-month warranty.", ctx)
    assert not lexical_support("Laptops carry a 24-month warranty.", ctx)  # a number not in the context
    assert not lexical_support("Phones carry a lifetime guarantee.", ctx)


def test_flip_rate_and_majority():
    from harness.judge import flip_rate, majority_verdict

    assert flip_rate([True, True, False, False], [True, False, False, True]) == 0.5
    assert majority_verdict([[1, 1, 0], [0, None, 0], [1, 0], [None]]) == [1, 0, None, None]
    rel = JudgeReliability.measure("j", "s", [True, None, False, True], [True, True, False, False],
                                   second=[True, True, True, None], perturbed=[True] * 4)
    # every item counts (the failed ruling a disagreement); flips over the 3 ruled: one changed, one failed
    assert rel.failures == 1 and rel.n == 4 and rel.flip_n == 3 and rel.flip_rate == pytest.approx(2 / 3)
    assert rel.accuracy == pytest.approx(2 / 4)
    assert np.isclose(rel.kappa, cohen_kappa([True, None, False, True], [True, True, False, False]))
    assert np.isclose(rel.kappa_ruled, cohen_kappa([True, False, True], [True, False, False]))


@pytest.mark.parametrize("reply, read", [
    ('{"supported": true}', True), ('```json\n{"supported": false}\n```', False), ("Yes.", True), ("No", False),
    ("The claim is fully supported by the context.", True), ("The claim is not supported.", False),
    ("It isn't fully supported", False), ("Unsupported.", False),
    ("The warranty on laptops is 12 months.", None),  # restates the context: no ruling, after one repair
])
def test_the_judge_reads_json_and_bare_verdicts(rag_scripted_llm, reply, read):
    llm = rag_scripted_llm(lambda m, p: reply, name=f"reply-{abs(hash(reply))}")
    assert LLMJudge(llm).supported(ClaimItem("q", "c", "x")) is read


def test_judge_spend_is_kept_apart_from_the_pipeline(rag_scripted_llm):
    from harness.llm.spend import Spend

    spend = Spend()
    llm = rag_scripted_llm(lambda m, p: '{"supported": true}', name="spend-split", spend=spend)
    llm.complete("pipeline call")
    LLMJudge(llm.with_role("judge")).supported(ClaimItem("q", "c", "x"))
    assert spend.totals("pipeline").calls == 1 and spend.totals("judge").calls == 1


def test_judge_lines_say_when_a_judge_is_unreliable():
    from harness.report.html.page import judge_lines

    weak = JudgeReliability("tiny", "halueval-qa", 400, 0.05, (0.0, 0.1), 0.52, (0.47, 0.57), flip_rate=0.0, flip_n=400)
    good = JudgeReliability("big", "halueval-qa", 400, 0.8, (0.74, 0.86), 0.9, (0.87, 0.93), flip_rate=0.01, flip_n=400)
    lines = judge_lines({"judges": {"a": weak.as_context(), "b": good.as_context()}})
    assert "JUDGE UNRELIABLE" in lines[0] and "κ 0.050 [0.000, 0.100]" in lines[0]
    assert "reliable by" in lines[1] and "UNRELIABLE" not in lines[1]


def test_several_judges_give_alpha_and_a_majority(rag_scripted_llm):
    """Two scripted judges and the lexical baseline on six labelled claims: α and the majority by hand."""
    from harness.judge.labelled import LabelledClaim
    from harness.judge.study import measure_agreement

    items = [LabelledClaim(ClaimItem("q", "The fee is 5 dollars.", c), y, f"a{i}") for i, (c, y) in enumerate(
        [("The fee is 5 dollars.", True), ("The fee is 9 dollars.", False), ("A fee of 5 dollars.", True),
         ("The fee is 7 dollars.", False), ("The fee is 5 dollars.", True), ("The fee is waived.", False)])]
    says_yes = LLMJudge(rag_scripted_llm(lambda m, p: '{"supported": true}', name="always-yes"))
    says_label = LLMJudge(rag_scripted_llm(  # the claim's line, in either wording of the rubric
        lambda m, p: '{"supported": %s}' % str(" 5 " in re.search(r"^Claim(?: to check)?: (.*)$", m[-1]["content"],
                                                                  re.M).group(1)).lower(), name="five"))
    study = measure_agreement([says_yes, says_label], items, "toy", seed=0)
    # lexical: 5-dollar claims supported (all tokens in the context), the others not (a number or "waived" missing)
    assert study.first["lexical"] == [True, False, True, False, True, False]
    assert study.first["scripted/five"] == study.first["lexical"] and study.first["scripted/always-yes"] == [True] * 6
    assert study.majority == [True, False, True, False, True, False]  # two of three agree on every unit
    # coincidences (ordered pairs / (m - 1), m = 3): each all-True unit adds 3·2/2 = 3 to o_TT; each (T, F, F)
    # unit adds 1 to o_TF, o_FT and o_FF. So o_TT = 9, o_TF = o_FT = o_FF = 3; n_T = 12, n_F = 6, n = 18;
    # alpha = 1 - (n - 1)·(o_TF + o_FT) / (2·n_T·n_F) = 1 - 17·6/144 = 7/24
    assert study.alpha == pytest.approx(7 / 24)
    assert study.reliability["scripted/always-yes"].kappa == 0.0 and study.reliability["scripted/five"].kappa == 1.0
    assert study.reliability["scripted/always-yes"].flip_rate == 0.0 and study.reliability["lexical"].flip_rate is None

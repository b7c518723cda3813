"""JUDGE-FLAG-HAND: the recorded local judge (SmolLM2-135M) on the hand-labelled retail-KB set, twice (the
second ruling with another seed, uncached): its κ, accuracy and flip rate, and the flag they imply."""
from __future__ import annotations

import pytest

from harness.judge import LLMJudge
from harness.judge.labelled import load_labelled_answers
from harness.judge.study import measure_agreement

pytestmark = [pytest.mark.integration, pytest.mark.vcr]


@pytest.mark.spec("JUDGE-FLAG-HAND")
def test_recorded_judge_on_the_hand_labelled_set(recorded_llm, check, measure):
    items = [c for a in load_labelled_answers() for c in a.claim_items()]
    judge = LLMJudge(recorded_llm.with_role("judge"))
    study = measure_agreement([judge], items, "retail_kb hand-labelled", seed=0)
    rel, lexical = study.reliability[judge.name], study.reliability["lexical"]
    for r in (rel, lexical):
        measure("judge_kappa", r.kappa, judge=r.judge, dataset="retail_kb", n=r.n, ci=list(r.kappa_ci),
                flip_rate=r.flip_rate, failed_rulings=r.failures)
        measure("judge_accuracy", r.accuracy, judge=r.judge, dataset="retail_kb", n=r.n, ci=list(r.accuracy_ci))
    measure("judges_alpha", study.alpha, dataset="retail_kb", judges=list(study.first))
    assert rel.n + rel.failures == len(items) and rel.flip_n <= len(items)
    expected = rel.kappa != rel.kappa or rel.kappa < 0.4 or (rel.flip_rate or 0.0) > 0.2  # nan kappa flags too
    check("JUDGE-FLAG-HAND", rel.unreliable == expected,
          flagged=rel.unreliable, reasons=rel.reasons, kappa=rel.kappa, flip_rate=rel.flip_rate,
          failed_rulings=rel.failures, model=recorded_llm.label, dataset="retail_kb")

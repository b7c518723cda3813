"""JUDGE-FLAG-HAND: the recorded local judge (SmolLM2-135M) on the hand-labelled retail-KB set, twice (the
second ruling in the rubric's other wording at the recheck temperature, seed + 1, uncached): its κ, accuracy and
flip rate, and whether its flag follows the rule. The rule is recomputed here apart from `JudgeReliability`:
κ by scikit-learn from the raw rulings and the hand labels, the flip rate from the raw rulings and the requests
that made them."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from harness.judge import LLMJudge
from harness.judge.labelled import load_labelled_answers
from harness.judge.study import measure_agreement

# identical claims in the labelled set send identical requests (same seed): one recorded answer serves each
pytestmark = [pytest.mark.integration, pytest.mark.vcr(allow_playback_repeats=True)]
CASSETTE = (Path(__file__).resolve().parents[1] / "fixtures" / "cassettes" / "test_judge_integration"
            / "test_recorded_judge_on_the_hand_labelled_set[JUDGE-FLAG-HAND].yaml")
# The cassette was recorded before issue 31: its second ruling is the old one (first wording, temperature 0, seed
# 1), which cannot differ from the first. Until it is re-recorded (recording asks the perturbed second ruling:
# `pytest specs/test_judge_integration.py --record-mode=new_episodes` with the local model), replay asks that old
# second ruling, and every re-ruling reads unperturbed (flip rate 1.0: nothing confirmed).
OLD_RECHECK = {"recheck_prompt": "support", "recheck_temperature": 0.0}


def _recheck(record_mode: str) -> dict:
    """The judge's recheck settings: the defaults when recording or when the cassette holds them, else the old ones."""
    if record_mode != "none" or "Claim to check:" in CASSETTE.read_text(encoding="utf-8"):
        return {}
    return OLD_RECHECK


def flag_by_the_rule(first, second, labels, kappa_floor: float = 0.4, flip_ceiling: float = 0.2) -> tuple[bool, dict]:
    """Issue 19 §3's rule, written apart from harness.judge.reliability: unreliable when Cohen's κ (scikit-learn;
    a failed ruling is the category "failed", which no label takes) is below the floor or undefined, or when more
    than the ceiling of the ruled items were not ruled the same way by a fresh re-ruling that differed in wording
    or temperature (a failed or repeated re-ruling confirms nothing)."""
    from sklearn.metrics import cohen_kappa_score

    code = {True: "yes", False: "no", None: "failed"}
    kappa = float(cohen_kappa_score([code[r.verdict] for r in first], [code[y] for y in labels]))
    ruled = [(a, b) for a, b in zip(first, second) if a.verdict is not None]
    fresh = [not b.cache and (b.request != a.request or b.temperature != a.temperature) for a, b in ruled]
    same = sum(f and b.verdict == a.verdict for f, (a, b) in zip(fresh, ruled))
    flips = (len(ruled) - same) / len(ruled) if ruled else math.nan
    flagged = not kappa >= kappa_floor or (not math.isnan(flips) and flips > flip_ceiling)
    return flagged, {"kappa": kappa, "flip_rate": flips, "ruled": len(ruled), "fresh_rechecks": sum(fresh)}


@pytest.mark.spec("JUDGE-FLAG-HAND")
def test_recorded_judge_on_the_hand_labelled_set(request, rag_recorded_llm, rag_check, rag_measure):
    items = [c for a in load_labelled_answers() for c in a.claim_items()]
    judge = LLMJudge(rag_recorded_llm.with_role("judge"), **_recheck(request.config.getoption("record_mode") or "none"))
    study = measure_agreement([judge], items, "retail_kb hand-labelled", seed=0)
    rel, lexical = study.reliability[judge.name], study.reliability["lexical"]
    for r in (rel, lexical):
        rag_measure("judge_kappa", r.kappa, judge=r.judge, dataset="retail_kb", n=r.n, ci=list(r.kappa_ci),
                flip_rate=r.flip_rate, failed_rulings=r.failures, kappa_ruled=r.kappa_ruled)
        rag_measure("judge_accuracy", r.accuracy, judge=r.judge, dataset="retail_kb", n=r.n, ci=list(r.accuracy_ci))
    rag_measure("judges_alpha", study.alpha, dataset="retail_kb", judges=list(study.first))
    first, second = study.rulings[judge.name]
    expected, recomputed = flag_by_the_rule(first, second, [i.supported for i in items])
    rag_check("JUDGE-FLAG-HAND", rel.unreliable == expected,
          flagged=rel.unreliable, by_the_rule=expected, recomputed=recomputed, reasons=rel.reasons, kappa=rel.kappa,
          flip_rate=rel.flip_rate, n=rel.n, failed_rulings=rel.failures, perturbation=rel.recheck,
          model=rag_recorded_llm.label, dataset="retail_kb")

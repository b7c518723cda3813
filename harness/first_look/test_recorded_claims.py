"""The first look's claims (`harness/first_look/claims.yaml`), decided on recorded traffic of SmolLM2-135M.

The judge claims replay the integration tier's recording of the local judge on the 68 hand-labelled retail-KB
claims (each ruled twice: the second time with another seed, uncached; `specs/test_judge_integration.py` makes the
same requests), HyDE's claim the recording of its hypothetical documents for two questions of the mini set
(`specs/test_hyde_integration.py`). A request that is not in its cassette fails with how to re-record; the
network is blocked (the integration tier's `block_network`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.control_env import active_control

pytestmark = pytest.mark.vcr(allow_playback_repeats=True)  # identical claims: identical requests (same seed)
CASSETTES = Path(__file__).resolve().parents[2] / "fixtures" / "cassettes"
JUDGE_CASSETTE = "test_judge_integration/test_recorded_judge_on_the_hand_labelled_set[JUDGE-FLAG-HAND]"
HYDE_QUERIES = ["why does a wing stall at high angle of attack", "how are refunds paid for gift card purchases"]
HYDE_CASSETTES = [f"test_hyde_integration/test_hyde_embedding_differs_from_query[HYDE-002-{q}]" for q in HYDE_QUERIES]


@pytest.fixture(scope="module")
def vcr_cassette_dir() -> str:
    """The repository's cassettes: the first look replays what the integration tier replays."""
    return str(CASSETTES)


@pytest.fixture(scope="module")
def judge_studies() -> dict[Any, Any]:
    """The judge's agreement study per negative control in force (None: the real one), computed once each."""
    return {}


def _judge_study(studies: dict[Any, Any], recorded_llm: Any) -> Any:
    from harness.judge import LLMJudge
    from harness.judge.labelled import load_labelled_answers
    from harness.judge.study import measure_agreement

    key = active_control()
    if key not in studies:
        items = [c for a in load_labelled_answers() for c in a.claim_items()]
        studies[key] = measure_agreement([LLMJudge(recorded_llm.with_role("judge"))], items,
                                         "retail_kb hand-labelled", seed=0)
    return studies[key]


def _judge_context(study: Any, rel: Any, recorded_llm: Any) -> dict[str, Any]:
    return {"model": recorded_llm.label, "dataset": "retail_kb", "judge": rel.judge, "available": len(study.items),
            "failed_rulings": rel.failures, "temperature": rel.temperature, "traffic": "replayed",
            "cassette": f"fixtures/cassettes/{JUDGE_CASSETTE}.yaml"}


@pytest.mark.default_cassette(JUDGE_CASSETTE)
@pytest.mark.spec("FIRST-LOOK-JUDGE-CONSISTENT")
def test_judge_rules_the_same_way_again(judge_studies, rag_recorded_llm, rag_check):
    from harness.judge.reliability import recheck_effect

    study = _judge_study(judge_studies, rag_recorded_llm)
    rel = next(r for name, r in study.reliability.items() if name != "lexical")
    # the figure the judge's flag (and the report's judge banner) reads, over the same claims
    flips = {k: rel.recheck.get(k, 0) for k in ("changed", "failed", "unperturbed")}
    rag_check("FIRST-LOOK-JUDGE-CONSISTENT", recheck_effect(rel), **_judge_context(study, rel, rag_recorded_llm),
          seeds=[0, 1], not_reproduced=flips)


@pytest.mark.default_cassette(JUDGE_CASSETTE)
@pytest.mark.spec("FIRST-LOOK-JUDGE-ABOVE-CHANCE", "FIRST-LOOK-JUDGE-MODERATE")
def test_judge_agrees_with_the_hand_labels(judge_studies, rag_recorded_llm, rag_spec, rag_check):
    from harness.judge.reliability import kappa_effect

    study = _judge_study(judge_studies, rag_recorded_llm)
    rel = next(r for name, r in study.reliability.items() if name != "lexical")
    lexical = study.reliability["lexical"]
    rag_check(rag_spec.id, kappa_effect(rel), **_judge_context(study, rel, rag_recorded_llm), accuracy=rel.accuracy,
          accuracy_ci=list(rel.accuracy_ci), lexical_kappa=lexical.kappa, lexical_kappa_ci=list(lexical.kappa_ci))


@pytest.mark.default_cassette(JUDGE_CASSETTE)
@pytest.mark.spec("FIRST-LOOK-LEXICAL-BEATS-JUDGE")
def test_lexical_baseline_against_the_judge(judge_studies, rag_recorded_llm, rag_check):
    import numpy as np

    from harness.stats._effect import paired_effect

    study = _judge_study(judge_studies, rag_recorded_llm)
    rel = next(r for name, r in study.reliability.items() if name != "lexical")
    labels = [i.supported for i in study.items]
    right = {name: np.array([v is not None and v == y for v, y in zip(study.first[name], labels)], dtype=float)
             for name in (rel.judge, "lexical")}
    rag_check("FIRST-LOOK-LEXICAL-BEATS-JUDGE", paired_effect(right["lexical"], right[rel.judge], binary=True, seed=1),
          **_judge_context(study, rel, rag_recorded_llm), accuracy_lexical=float(right["lexical"].mean()),
          accuracy_judge=float(right[rel.judge].mean()), per_query=_rulings_table(study, rel.judge, right),
          baseline_label=f"{rel.judge} accuracy", candidate_label="lexical accuracy")


def _rulings_table(study: Any, judge: str, right: dict[str, Any]) -> dict[str, Any]:
    """Per labelled claim: whether the judge and the lexical baseline ruled as the hand label; for the best, worst
    and median claim the question, the context and every ruling."""
    from harness.report.per_query import per_query_context

    ids = [f"{it.answer_id}/{k}" for k, it in enumerate(study.items)]
    word = {True: "supported", False: "not supported", None: "failed ruling"}
    return per_query_context(
        ids, right[judge].tolist(), right["lexical"].tolist(), texts={q: it.item.claim for q, it in zip(ids, study.items)},
        outputs={q: {"question": it.item.question, "context": it.item.context} for q, it in zip(ids, study.items)},
        rulings={q: [{"judge": "hand label", "claim": it.item.claim, "verdict": word[it.supported]},
                     *({"judge": name, "claim": it.item.claim, "verdict": word[study.first[name][k]]}
                       for name in (judge, "lexical"))]
                 for k, (q, it) in enumerate(zip(ids, study.items))},
        baseline_label=f"{judge} agrees with the hand label", candidate_label="lexical agrees with the hand label")


@pytest.mark.spec("FIRST-LOOK-HYDE-DIFFERS")
@pytest.mark.default_cassette(HYDE_CASSETTES[0])
@pytest.mark.vcr(*(f"{c}.yaml" for c in HYDE_CASSETTES[1:]))  # read as well: one test, one claim, both questions
def test_hyde_vector_differs_from_the_query(rag_recorded_llm, rag_embedder, rag_check):
    from harness.techniques.hyde import HyDE

    hyde = HyDE(rag_recorded_llm, rag_embedder)
    results = [hyde.expand(q) for q in HYDE_QUERIES]
    cosines = [float(r.vector @ rag_embedder.encode([q])[0]) for q, r in zip(HYDE_QUERIES, results)]
    # the worst question decides; a HyDE that fell back to the raw query measured the fallback (inconclusive)
    rag_check("FIRST-LOOK-HYDE-DIFFERS", max(cosines), model=rag_recorded_llm.label, dataset="mini", n=len(cosines),
          cosines=dict(zip(HYDE_QUERIES, cosines)), technique="hyde", traffic="replayed",
          fallback_rate=sum(r.used_fallback for r in results) / len(results),
          hypothetical_documents={q: (r.documents or [""])[0][:300] for q, r in zip(HYDE_QUERIES, results)})

"""CRAG-001, -002, -004, -006 and CRAG-005's mechanics: evaluator actions, web fallback, strips, combined sources
(CRAG-003 is measured with the real embedder, in test_crag_integration.py)."""
from __future__ import annotations

import re
from typing import Callable, Sequence

import numpy as np
import pytest

from harness.techniques.crag import (
    AMBIGUOUS, CORRECT, CRAG, INCORRECT, RetrievalEvaluator, knowledge_refinement, lexical_scorer,
)
from harness.types import Hit, Trace

pytestmark = pytest.mark.unit


def fixed_scorer(score: float):
    return lambda query, texts: np.full(len(texts), score)


def score_in_text(query: str, texts: list[str]) -> np.ndarray:
    """A scorer reading each document's score from its text ("score 0.9")."""
    return np.asarray([float(t.split()[-1]) for t in texts])


def scored(*scores: float) -> list[Hit]:
    """One document per score, its text naming the score."""
    return [Hit(f"d{i}", 1.0, f"score {s}") for i, s in enumerate(scores)]


# several documents with differing scores, and the action §2.1 takes (max at the 0.7 / 0.3 thresholds): by the
# mean the first reads AMBIGUOUS (0.4) and the second INCORRECT (0.25); by the min both read INCORRECT
AGGREGATION_CASES = [((0.9, 0.1, 0.2), CORRECT), ((0.6, 0.1, 0.05), AMBIGUOUS), ((0.2, 0.1), INCORRECT)]


def action_by(aggregate: Callable[[Sequence[float]], float], scores: Sequence[float]) -> str:
    """§2.1's thresholds on the scores aggregated by `aggregate` (max in the protocol)."""
    best = float(aggregate(scores))
    return CORRECT if best >= 0.7 else INCORRECT if best <= 0.3 else AMBIGUOUS


@pytest.mark.spec("CRAG-001")
def test_evaluator_three_categories(rag_check):
    """The evaluator over several documents each: the actions seen are all three only when it aggregates by max."""
    got = [RetrievalEvaluator(score_in_text).evaluate("q", scored(*s)) for s, _ in AGGREGATION_CASES]
    rag_check("CRAG-001", sorted({a for a, _ in got}), cases=[{"scores": list(s), "expected": e, "action": a, "confidence": c}
                                                         for (s, e), (a, c) in zip(AGGREGATION_CASES, got)])
    assert got == [(e, max(s)) for s, e in AGGREGATION_CASES]
    docs = [Hit("d", 1.0, "text")]
    assert RetrievalEvaluator(fixed_scorer(0.7)).evaluate("q", docs) == (CORRECT, 0.7)
    assert RetrievalEvaluator(fixed_scorer(0.3)).evaluate("q", docs) == (INCORRECT, 0.3)
    assert RetrievalEvaluator(fixed_scorer(0.9)).evaluate("q", []) == (INCORRECT, 0.0)


def test_aggregation_cases_tell_max_from_mean_min_and_one_threshold():
    """The CRAG-001 cases can fail: by mean, min or one 0.5 threshold they give fewer than three actions."""
    assert [action_by(max, s) for s, _ in AGGREGATION_CASES] == [CORRECT, AMBIGUOUS, INCORRECT]
    assert [action_by(np.mean, s) for s, _ in AGGREGATION_CASES] == [AMBIGUOUS, INCORRECT, INCORRECT]
    assert [action_by(min, s) for s, _ in AGGREGATION_CASES] == [INCORRECT] * 3
    assert [CORRECT if max(s) >= 0.5 else INCORRECT for s, _ in AGGREGATION_CASES] == [CORRECT, CORRECT, INCORRECT]


@pytest.mark.spec("CRAG-002")
def test_web_search_on_incorrect(unit_retriever, unit_web, rag_check):
    crag = CRAG(unit_retriever, unit_web, RetrievalEvaluator(fixed_scorer(0.05)), None)
    res = crag.run("why does a wing stall", generate=False)
    rag_check("CRAG-002", unit_web.calls if res.action == INCORRECT else 0, action=res.action)
    assert res.trace.called("web_search")
    assert all(h.metadata["source"] == "web" for h in res.sources)


@pytest.mark.spec("CRAG-002")
def test_no_web_search_on_correct(unit_retriever, unit_web):
    res = CRAG(unit_retriever, unit_web, RetrievalEvaluator(fixed_scorer(0.95)), None).run("stall", generate=False)
    assert res.action == CORRECT and unit_web.calls == 0 and not res.trace.called("web_search")


def test_refinement_decomposes_filters_recomposes():
    """Refinement's mechanics, hand-computed (CRAG-003 itself: test_crag_integration.py)."""
    # the lexical scorer: 4, 0, 0 and 1 of the query's content words, saturating at 3 -> 1.0, 0, 0, 1/3; at 0.5
    # only the first strip (9 whitespace words of 26) stays
    from harness.retrieval.chunking import WhitespaceTokenizer

    docs = [Hit("a", 1.0, "A wing stalls at a high angle of attack. The hangar roof is painted green."),
            Hit("b", 1.0, "Refunds take five days. Stall warning horns sound before the stall.")]
    ref = knowledge_refinement(docs, "why does a wing stall at high angle of attack", lexical_scorer(),
                               strip_threshold=0.5, tokenizer=WhitespaceTokenizer())
    assert (ref.strips, ref.kept) == (4, ["A wing stalls at a high angle of attack."])
    assert (ref.original_tokens, ref.refined_tokens) == (26, 9)


def count_sentences(text: str) -> int:
    """An oracle independent of pysbd (which the strips are cut with): terminal punctuation followed by a
    space and a capital letter or digit, or by the end of the text."""
    return len(re.findall(r"[.!?](?=\s+[A-Z0-9]|\s*$)", text.strip())) or 1


@pytest.mark.spec("CRAG-004")
def test_strips_are_one_or_two_sentences(mini, rag_check):
    from harness.retrieval.chunking import knowledge_strips

    long = ("The wing was tested in a slipstream at several angles of attack, and the lift increase was measured "
            "along the span, while the velocity ratio was varied between one and three; the results agree with theory.")
    paragraph = ("Lift rises with the angle of attack. Near the critical angle the boundary layer separates. "
                 "The wing then stalls and lift falls. Pilots recover by lowering the nose. Added power helps too.")
    texts = [d.text for d in mini.corpus.values()] + [long, paragraph]
    assert count_sentences(paragraph) == 5
    counts = [count_sentences(s) for t in texts for s in knowledge_strips(t)]
    rag_check("CRAG-004", max(counts), strips=len(counts))
    assert len(knowledge_strips(long)) > 1, "long sentences split at clauses"
    assert min(counts) >= 1


@pytest.mark.spec("CRAG-005")
def test_accuracy_delta_computation():
    """The measurement behind CRAG-005: answers scored against gold, paired per query (hand-computed)."""
    from harness.techniques.qa_eval import compare_accuracy
    from harness.types import Query

    gold = ["Paris", "1969", "oxygen", "Tolstoy", "blue whale", "Everest", "Au", "Pacific"]
    queries = [Query(f"q{i}", f"question {i}", {"answers": [g]}) for i, g in enumerate(gold)]
    base_right, crag_right = {0, 3, 5}, {0, 1, 3, 4, 5}
    answer = lambda right: lambda q: (f"It is {gold[int(q.split()[1])]}." if int(q.split()[1]) in right  # noqa: E731
                                      else "I am not sure.")
    cmp_ = compare_accuracy(queries, answer(base_right), answer(crag_right))
    assert cmp_.delta == pytest.approx(0.25) and cmp_.baseline.mean() == pytest.approx(3 / 8)
    eff = cmp_.effect()
    assert (eff.improved, eff.unchanged, eff.degraded) == (2, 6, 0)


@pytest.mark.spec("CRAG-006")
def test_ambiguous_combines_both_sources(unit_retriever, unit_web, rag_check):
    trace = Trace()
    crag = CRAG(unit_retriever, unit_web, RetrievalEvaluator(fixed_scorer(0.5)), None, strip_scorer=fixed_scorer(0.9))
    res = crag.run("does the warranty cover accidental damage", trace, generate=False)
    # the sources whose text reached the context, by kind (a source CRAG returns but leaves out does not count)
    kinds = sorted({h.metadata["source"] for h in res.sources if h.text.split(".")[0] in res.context})
    rag_check("CRAG-006", kinds if res.action == AMBIGUOUS else [], action=res.action)


@pytest.mark.spec("CRAG-001")
def test_llm_judge_scorer_parses_yes_no(rag_scripted_llm):
    from harness.techniques.crag import llm_judge_scorer

    llm = rag_scripted_llm(lambda m, p: "Yes." if "stall" in m[-1]["content"].split("Document:")[1] else "No",
                       name="judge")
    scores = llm_judge_scorer(llm)("why stall", ["wings stall when", "refunds in 5 days"])
    assert scores.tolist() == [1.0, 0.0]


def test_unparseable_judge_is_counted_never_a_middle_score(rag_scripted_llm, unit_retriever, unit_web):
    """A judge reply that is neither yes nor no scores nan (it was 0.5, a silent AMBIGUOUS); the evaluator counts
    it, takes AMBIGUOUS (both sources) only when nothing could be scored, and CRAG logs a crag_fallback event."""
    from harness.techniques.crag import llm_judge_scorer

    llm = rag_scripted_llm(lambda m, p: "Maybe" if "refunds" in m[-1]["content"] else "Yes", name="judge-unsure")
    judge = llm_judge_scorer(llm)
    scores = judge("q", ["wings stall", "refunds in 5 days"])
    assert scores[0] == 1.0 and np.isnan(scores[1])
    ev = RetrievalEvaluator(judge)
    assert ev.evaluate("q", [Hit("a", 1, "wings stall"), Hit("b", 1, "refunds in 5 days")]) == (CORRECT, 1.0)
    assert ev.last_failed == 1
    action, conf = ev.evaluate("q", [Hit("b", 1, "refunds in 5 days")])
    assert action == AMBIGUOUS and np.isnan(conf) and ev.last_failed == 1
    res = CRAG(unit_retriever, unit_web, RetrievalEvaluator(lambda q, t: np.full(len(t), np.nan)), None).run(
        "wing stall", generate=False)
    assert res.trace.called("crag_fallback") and res.action == AMBIGUOUS and res.refinement.kept == []
    assert res.refinement.unscored == res.refinement.strips > 0


@pytest.mark.spec("CRAG-005")
def test_crag_recovers_withheld_knowledge(rag_scripted_llm, rag_hashing_embedder, tmp_path):
    """CRAG-005's premise end to end on a tiny set: half the gold passages withheld from the corpus
    (`withhold_gold`), the web a BM25 search over them among distractors, a scripted generator that repeats
    its context (it is right exactly when the gold passage reaches it). Plain RAG answers the kept half;
    CRAG, which searches the web when the corpus fails its evaluator, answers all (hand-computed: +0.5)."""
    from harness.retrieval.index.lancedb_store import LanceStore
    from harness.retrieval import Retriever
    from harness.retrieval.simulated_web import withhold_gold
    from harness.techniques.crag import LocalWebSearch
    from harness.techniques.qa_eval import compare_accuracy, plain_rag
    from harness.types import Document, Query

    topics = ["glacier", "volcano", "harbour", "orchard", "lighthouse", "canyon", "monastery", "vineyard"]
    answers = ["Quendor", "Brassik", "Yolvane", "Triskel", "Mardov", "Pelnath", "Oskaro", "Zimbrel"]
    corpus = {f"g{i}": Document(f"g{i}", f"The {t} keeper is named {a}.") for i, (t, a) in enumerate(zip(topics, answers))}
    corpus |= {f"x{i}": Document(f"x{i}", f"Filler passage {i} about weather and tides.") for i in range(8)}
    qrels = {f"q{i}": {f"g{i}": 1} for i in range(8)}
    sim = withhold_gold(corpus, qrels, share=0.5, seed=3)
    internal, web = LanceStore(tmp_path / "db", "internal"), LanceStore(tmp_path / "db", "web")
    internal.index(sim.internal, rag_hashing_embedder)
    web.index(sim.web, rag_hashing_embedder)
    llm = rag_scripted_llm(lambda messages, params: messages[-1]["content"], name="repeats-context")
    corpus_ret = Retriever(internal, rag_hashing_embedder)
    crag = CRAG(corpus_ret, LocalWebSearch(Retriever(web, rag_hashing_embedder, "bm25")),
                RetrievalEvaluator(lexical_scorer()), llm, k=2)
    queries = [Query(f"q{i}", f"What is the {t} keeper named?", {"answers": [a]})
               for i, (t, a) in enumerate(zip(topics, answers))]
    cmp_ = compare_accuracy(queries, plain_rag(llm, corpus_ret, k=2), lambda q: crag.run(q).answer)
    withheld = np.array([sim.gold_withheld(qrels[q.id]) for q in queries])
    assert withheld.sum() == 4
    assert cmp_.baseline.tolist() == (~withheld).astype(float).tolist()  # plain RAG: the kept half
    assert cmp_.candidate.tolist() == [1.0] * 8  # CRAG: the web brings back the withheld half
    assert cmp_.delta == pytest.approx(0.5)

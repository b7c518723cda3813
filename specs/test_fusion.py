"""RAGF-001..006: multi-query generation, RRF, stability, recall and latency mechanics."""
from __future__ import annotations

import pytest

from harness.retrieval.rank_fusion import reciprocal_rank_fusion, rrf_scores
from harness.techniques.fusion import RAGFusion, distinct_generated, generate_multi_queries, query_set_similarity
from harness.types import Hit, Trace

pytestmark = pytest.mark.unit
Q = "why does a wing stall at high angle of attack"
ECHOING = ("Original question: why does a wing stall at high angle of attack\nGenerated queries (one per line):\n"
           "1. boundary layer separation on the upper surface\n2. \"critical angle of attack lift loss\"\n"
           "3. boundary layer separation on the upper surface\n- stall speed and wing loading\n"
           "4. adverse pressure gradient flow reversal\n5. an extra query beyond the limit")


@pytest.mark.spec("RAGF-001")
def test_multi_query_parsing_dedupes_and_strips_echoes(rag_scripted_llm):
    qs = generate_multi_queries(Q, rag_scripted_llm({"Generate": ECHOING}, name="mq"), num_queries=4)
    assert qs == [Q, "boundary layer separation on the upper surface", "critical angle of attack lift loss",
                  "stall speed and wing loading", "adverse pressure gradient flow reversal"]
    assert query_set_similarity(qs) == 0.0, "four generated queries with no word in common"


def test_query_set_similarity_hand_computed():
    """RAGF-001's per-set figure: mean pairwise Jaccard of the generated queries (the original first), 1.0 when
    fewer than two distinct generated queries differ from the original; duplicates count as pairs of 1."""
    assert query_set_similarity(["o", "a b c", "c d e", "f g"]) == pytest.approx((1 / 5 + 0 + 0) / 3)
    assert query_set_similarity(["o", "x y", "x z"]) == pytest.approx(1 / 3)
    assert query_set_similarity(["o", "a b", "a b", "a c"]) == pytest.approx((1 + 1 / 3 + 1 / 3) / 3)
    assert query_set_similarity(["o p", "O P", "a b", "a c"]) == pytest.approx((0 + 0 + 1 / 3) / 3)
    assert query_set_similarity(["o", "a b", "A  b", "a B"]) == 1.0  # one distinct query, repeated
    assert query_set_similarity(["o p", "o p", "p O", "a b"]) == 1.0  # copies of the original are not generated
    assert query_set_similarity(["o", "a b"]) == 1.0 and query_set_similarity(["o"]) == 1.0
    assert [distinct_generated(qs) for qs in (["o"], ["o", "o", "a"], ["o", "a b", "b a", "c"])] == [0, 1, 2]


def test_a_model_repeating_one_query_reads_no_diversity(rag_scripted_llm):
    """A model that writes one query four times leaves one generated query after parsing; its set counts as 1.0
    in RAGF-001's mean instead of dropping out of it."""
    qs = generate_multi_queries(Q, rag_scripted_llm({"Generate": "1. stall speed\n2. stall speed\n3. Stall speed.\n"
                                                              "4. stall speed"}, name="mq-repeat"), num_queries=4)
    assert qs == [Q, "stall speed"] and query_set_similarity(qs) == 1.0


@pytest.mark.spec("RAGF-002")
def test_rrf_formula(rag_check):
    k = 60
    lists = [[Hit(d, 0) for d in "abcde"], [Hit(d, 0) for d in "xaybz"], [Hit(d, 0) for d in "qrsta"]]
    fused = {h.id: h.score for h in reciprocal_rank_fusion(lists, k)}
    expected_a = sum(1 / (r + k) for r in [1, 2, 5])  # ranks start at 1
    expected_b = 1 / (2 + k) + 1 / (4 + k)
    err = max(abs(fused["a"] - expected_a), abs(fused["b"] - expected_b),
              abs(rrf_scores([["a"]], 60)["a"] - 1 / 61))
    rag_check("RAGF-002", err)


@pytest.mark.spec("RAGF-003")
def test_rrf_is_deterministic_with_ties():
    lists = [[Hit("b", 0), Hit("a", 0)], [Hit("a", 0), Hit("b", 0)]]
    runs = {tuple(h.id for h in reciprocal_rank_fusion(lists)) for _ in range(20)}
    assert runs == {("a", "b")}, "equal RRF scores broken by best rank, then id"


@pytest.mark.spec("RAGF-004")
def test_fusion_retrieves_and_fuses_every_query(rag_scripted_llm, unit_retriever):
    fusion = RAGFusion(rag_scripted_llm({"Generate": ECHOING}, name="mq2"), unit_retriever, top_k_per_query=5)
    res = fusion.search(Q, Trace())
    assert len(res.per_query) == 5 and all(len(p) == 5 for p in res.per_query)
    assert {h.id for p in res.per_query for h in p} == {h.id for h in res.hits}
    assert all(len(h.metadata["rrf_ranks"]) == 5 for h in res.hits)


@pytest.mark.spec("RAGF-005")
def test_original_query_always_included(rag_scripted_llm, rag_check):
    first_once = []
    for name, text in (("empty", ""), ("echo", Q), ("list", ECHOING)):
        qs = generate_multi_queries(Q, rag_scripted_llm({"": text}, name=f"orig-{name}"))
        first_once.append(qs[:1] == [Q] and qs.count(Q) == 1)
    rag_check("RAGF-005", all(first_once), cases=first_once)


@pytest.mark.spec("RAGF-006")
def test_parallel_and_sequential_retrieval_agree(unit_retriever):
    queries = [Q, "stall", "lift", "separation"]
    par = unit_retriever.retrieve_many(queries, 5, parallel=True)
    seq = unit_retriever.retrieve_many(queries, 5, parallel=False)
    assert [[h.id for h in p] for p in par] == [[h.id for h in s] for s in seq]

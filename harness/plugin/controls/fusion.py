"""Negative controls for rAG-Fusion and reciprocal rank fusion: query generation, per-query retrieval and the merge."""
from __future__ import annotations

from typing import Any, Sequence

from harness.plugin.controls.registry import control, replace_everywhere


@control("fusion-generates-one-query", breaks="multi-query generation yields one generated query beside the "
                                              "original (what is left of a model that writes one query four times)")
def _fusion_one_query(mp: Any) -> None:
    from harness.techniques import fusion

    orig = fusion.generate_multi_queries
    replace_everywhere(mp, orig, lambda q, llm, *a, **kw: orig(q, llm, *a, **kw)[:2])


@control("rrf-rank-from-0", breaks="RRF counts ranks from 0: 1/(k + 0) for the top hit")
def _rrf_zero(mp: Any) -> None:
    from harness.retrieval import rank_fusion

    def rrf_scores(rankings: Sequence[Sequence[str]], k: int = rank_fusion.RRF_K) -> dict[str, float]:
        scores: dict[str, float] = {}
        for ranking in rankings:
            for rank, doc_id in enumerate(ranking):
                scores[doc_id] = scores.get(doc_id, 0.0) + 1.0 / (rank + k)
        return scores

    replace_everywhere(mp, rank_fusion.rrf_scores, rrf_scores)


@control("fusion-merge-random", breaks="RAG-Fusion merges its per-query lists in an unseeded random order "
                                       "instead of by RRF, so each run ranks the same lists differently")
def _fusion_random_merge(mp: Any) -> None:
    import random

    from harness.techniques import fusion
    from harness.types import Hit

    def merge(result_sets: Sequence[Sequence[Hit]], k: int = 60) -> list[Hit]:
        first: dict[str, Hit] = {}
        for hits in result_sets:
            for h in hits:
                first.setdefault(h.id, h)
        order = list(first)
        random.Random().shuffle(order)  # a fresh generator seeded from the OS: no run repeats another
        return [Hit(d, 1.0 / (i + 1), first[d].text, {**first[d].metadata, "rrf_ranks": []})
                for i, d in enumerate(order)]

    mp.setattr(fusion, "reciprocal_rank_fusion", merge)


@control("fusion-searches-original-only", breaks="RAG-Fusion retrieves for the original query only")
def _fusion_original(mp: Any) -> None:
    from harness.techniques.fusion import RAGFusion

    orig = RAGFusion.search_and_fuse
    mp.setattr(RAGFusion, "search_and_fuse", lambda self, queries, trace=None, **kw: orig(self, list(queries)[:1], trace))


@control("fusion-drops-original-query", breaks="multi-query generation leaves the original query out")
def _fusion_no_original(mp: Any) -> None:
    from harness.techniques import fusion

    orig = fusion.generate_multi_queries
    replace_everywhere(mp, orig, lambda q, llm, *a, **kw: [x for x in orig(q, llm, *a, **kw) if x != q])


@control("fusion-query-generation-per-query", breaks="RAG-Fusion calls the model once per generated query "
                                                     "(num_queries multi-query calls instead of one)")
def _fusion_generation_per_query(mp: Any) -> None:
    from harness.techniques import fusion

    orig = fusion.generate_multi_queries

    def per_query(original_query, llm, num_queries=4, **kw):
        calls = [orig(original_query, llm, num_queries, **kw) for _ in range(max(1, num_queries))]
        return calls[-1]

    mp.setattr(fusion, "generate_multi_queries", per_query)

"""The plain retrieval baselines, registered as techniques: dense, BM25 and hybrid (dense and BM25 fused by RRF),
the runs HyDE, fusion and rewriting are compared with."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable

from harness.techniques._registry import Technique, TechniqueResult, TopK, register_technique
from harness.types import Query, Trace

if TYPE_CHECKING:
    from harness.retrieval._retriever import Mode


class _PlainRetrieval(Technique):
    mode: Mode = "dense"
    params: TopK

    def setup(self) -> None:
        from harness.retrieval import Retriever

        base = self.services.require("retriever")
        self.retriever = base if base.mode == self.mode else Retriever(base.store, base.embedder, self.mode)

    def _run(self, query: Query, trace: Trace) -> TechniqueResult:
        with trace.stage("retrieve"):
            hits = self.retriever.retrieve(query.text, self.params.k)
        return self.result(query, hits, trace)

    def run_many(self, queries: Iterable[Query | str], *, concurrency: int | None = None,
                 progress: Callable[[int, int], None] | None = None) -> list[TechniqueResult]:
        """One embedding batch and one multi-vector search for all queries (the same hits as `run`)."""
        qs = [q if isinstance(q, Query) else Query(id=str(q), text=str(q)) for q in queries]
        if not qs:
            return []
        all_hits = self.retriever.retrieve_many([q.text for q in qs], self.params.k)
        if progress is not None:
            progress(len(qs), len(qs))
        return [self.result(q, hits, Trace()) for q, hits in zip(qs, all_hits)]


@register_technique
class Dense(_PlainRetrieval):
    name, mode = "dense", "dense"
    summary = "dense retrieval of the query's embedding (the baseline HyDE, fusion and rewriting are compared with)"


@register_technique
class BM25(_PlainRetrieval):
    name, mode = "bm25", "bm25"
    summary = "BM25 over LanceDB's full-text index"


@register_technique
class Hybrid(_PlainRetrieval):
    name, mode = "hybrid", "hybrid"
    summary = "dense and BM25 fused with reciprocal rank fusion"

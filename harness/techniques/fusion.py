"""RAG-Fusion (Rackauckas, arXiv:2402.03367): multi-query generation, parallel retrieval, RRF."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Sequence

from harness.config import FusionConfig
from harness.llm.client import LLMClient
from harness.metrics._text import mean_pairwise_jaccard
from harness.parallel import ordered_map
from harness.prompts import load_prompts, render
from harness.retrieval.rank_fusion import RRF_K, reciprocal_rank_fusion
from harness.techniques.generation import try_complete
from harness.techniques.parsing import parse_lines
from harness.techniques._registry import Technique, TechniqueResult, register_technique
from harness.types import Hit, Query, Trace


def generate_multi_queries(original_query: str, llm: LLMClient, num_queries: int = 4, *, temperature: float = 0.8,
                           max_tokens: int = 200, prompt_variant: str = "chat", trace: Trace | None = None) -> list[str]:
    """Up to `num_queries` generated queries plus the original (always first, always included)."""
    trace = trace if trace is not None else Trace()
    prompt = render(load_prompts("fusion")[prompt_variant]["user"], query=original_query, num_queries=num_queries)
    with trace.stage("multi_query"):
        text = try_complete(llm, prompt, temperature=temperature, max_tokens=max_tokens, trace=trace,
                            error_event="multi_query_error") or ""
    generated = parse_lines(text, prompt=prompt, exclude=(original_query,))
    return [original_query, *generated[:num_queries]]


def distinct_generated(queries: Sequence[str]) -> int:
    """How many distinct generated queries (`queries[1:]`) differ from the original, as Jaccard's token sets."""
    if not queries:
        raise ValueError("a query set holds at least the original query")
    original = frozenset(queries[0].lower().split())
    return len({frozenset(q.lower().split()) for q in queries[1:]} - {original})


def query_set_similarity(queries: Sequence[str]) -> float:
    """RAGF-001's per-set figure: mean pairwise Jaccard of `queries[1:]`; 1.0 (no diversity) below 2 distinct."""
    if distinct_generated(queries) < 2:
        return 1.0
    return mean_pairwise_jaccard(list(queries[1:]))


@dataclass
class FusionResult:
    queries: list[str]
    hits: list[Hit]
    per_query: list[list[Hit]]
    trace: Trace = field(default_factory=Trace)


class RAGFusion:
    def __init__(self, llm: LLMClient, retriever, *, num_queries: int = 4, rrf_k: int = RRF_K,
                 top_k_per_query: int = 10, final_top_k: int = 5, temperature: float = 0.8, max_tokens: int = 200,
                 prompt_variant: str = "chat", parallel: bool = True):
        self.llm, self.retriever = llm, retriever
        self.num_queries, self.rrf_k = num_queries, rrf_k
        self.top_k_per_query, self.final_top_k = top_k_per_query, final_top_k
        self.temperature, self.max_tokens, self.prompt_variant = temperature, max_tokens, prompt_variant
        self.parallel = parallel

    def search_and_fuse(self, queries: Sequence[str], trace: Trace | None = None, *,
                        vectors: Sequence | None = None) -> FusionResult:
        """Retrieve for each query (in parallel) and fuse with RRF; `vectors` may replace some queries'
        embeddings (e.g. a HyDE vector), given as None where the text should be embedded."""
        trace = trace if trace is not None else Trace()
        queries = list(queries)
        with trace.stage("retrieve_multi", n=len(queries)):
            if vectors is None:
                per_query = self.retriever.retrieve_many(queries, self.top_k_per_query, parallel=self.parallel)
            else:
                def one(i: int) -> list[Hit]:
                    if vectors[i] is None:
                        return self.retriever.retrieve(queries[i], self.top_k_per_query)
                    return self.retriever.retrieve_vector(vectors[i], self.top_k_per_query, query=queries[i])

                per_query = ordered_map(one, range(len(queries)), len(queries))
        with trace.stage("rrf"):
            fused = reciprocal_rank_fusion(per_query, self.rrf_k)
        trace.event("fusion", lists=len(per_query))
        return FusionResult(queries, fused, per_query, trace)

    def search(self, query: str, trace: Trace | None = None) -> FusionResult:
        trace = trace if trace is not None else Trace()
        queries = generate_multi_queries(query, self.llm, self.num_queries, temperature=self.temperature,
                                         max_tokens=self.max_tokens, prompt_variant=self.prompt_variant, trace=trace)
        return self.search_and_fuse(queries, trace)


# ---------------------------------------------------------------- the registered technique
class FusionParams(FusionConfig):
    prompt_variant: Literal["chat", "completion"] = "chat"
    parallel: bool = True


@register_technique
class FusionTechnique(Technique):
    name, role = "rag-fusion", "rag-fusion"
    summary = "RAG-Fusion: LLM-generated queries, retrieved in parallel, fused with RRF (Rackauckas 2024)"
    Params, config_section = FusionParams, "wsop.rag_fusion"
    params: FusionParams

    def setup(self) -> None:
        p = self.params
        self.fusion = RAGFusion(self.services.require("llm"), self.services.require("retriever"),
                                num_queries=p.num_queries, rrf_k=p.rrf_k, top_k_per_query=p.top_k_per_query,
                                final_top_k=p.final_top_k, temperature=p.temperature, max_tokens=p.max_tokens,
                                prompt_variant=p.prompt_variant, parallel=p.parallel)

    def _run(self, query: Query, trace: Trace) -> TechniqueResult:
        res = self.fusion.search(query.text, trace)
        if len(res.queries) < 2:
            trace.event("multi_query_fallback", reason="no generated query survived parsing")
        return self.result(query, res.hits, trace, queries=res.queries)

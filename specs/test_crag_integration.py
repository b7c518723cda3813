"""CRAG-003 with the configured scorer (`wsop.crag.scorer`; by default `harness.reranker` over the real packaged
embedder) on the documents CRAG itself retrieves, and corrects, for each query of the mini set."""
from __future__ import annotations

import numpy as np
import pytest

from harness.retrieval import Retriever
from harness.retrieval.index.lancedb_store import LanceStore
from harness.techniques.crag import LocalWebSearch
from harness.techniques._registry import Services

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def crag_services(mini, mini_web_docs, rag_embedder, rag_reranker, rag_config, tmp_path_factory) -> Services:
    """The mini corpus and its web stand-in, indexed with the real embedder; the configured reranker."""
    root = tmp_path_factory.mktemp("crag-int")
    store, web = LanceStore(root / "db", "mini"), LanceStore(root / "web", "web")
    store.index(list(mini.corpus.values()), rag_embedder)
    web.index(mini_web_docs, rag_embedder)
    return Services(rag_config, retriever=Retriever(store, rag_embedder), embedder=rag_embedder, reranker=rag_reranker,
                    web=LocalWebSearch(Retriever(web, rag_embedder)))


@pytest.mark.spec("CRAG-003")
def test_refinement_reduces_tokens_with_the_configured_scorer(mini, crag_services, rag_make_technique, rag_config,
                                                              rag_check):
    """Per query: tokens CRAG's refinement keeps / tokens of the sources it refined (the retrieved documents, or
    the web's on INCORRECT); the mean over the queries. Every refinement must keep something: one that keeps
    nothing reduces the count by discarding the knowledge."""
    crag = rag_make_technique("crag", crag_services, generate=False)
    runs = [crag.run(q) for q in mini.queries.values()]
    refs = [r.detail["refinement"] for r in runs]
    ratios = [ref.refined_tokens / ref.original_tokens for ref in refs]
    per_query = {r.query_id: {"action": r.detail["action"], "ratio": round(x, 4), "strips": ref.strips,
                              "kept": len(ref.kept)} for r, ref, x in zip(runs, refs, ratios)}
    c = rag_config.wsop.crag
    rag_check("CRAG-003", float(np.mean(ratios)), n=len(ratios), max_ratio=max(ratios), per_query=per_query,
          scorer=c.scorer, reranker=crag_services.reranker.name, strip_threshold=c.strip_threshold,
          embedder=crag_services.embedder.name)
    assert all(ref.kept for ref in refs), f"a refinement kept no strip: {per_query}"

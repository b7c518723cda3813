"""HYDE-002 and HYDE-005 with the real packaged embedder, LanceDB and recorded local-model traffic."""
from __future__ import annotations

import pytest

from harness.index.lancedb_store import LanceStore
from harness.retrieval import Retriever
from harness.techniques.hyde import HyDE

pytestmark = [pytest.mark.integration, pytest.mark.vcr]
QUERIES = ["why does a wing stall at high angle of attack", "how are refunds paid for gift card purchases"]


@pytest.fixture(scope="module")
def real_retriever(mini, embedder, tmp_path_factory):
    store = LanceStore(tmp_path_factory.mktemp("int-db"), "mini")
    store.index(list(mini.corpus.values()), embedder)
    return Retriever(store, embedder)


@pytest.mark.spec("HYDE-002")
@pytest.mark.parametrize("query", QUERIES)
def test_hyde_embedding_differs_from_query(query, recorded_llm, embedder, check):
    res = HyDE(recorded_llm, embedder).expand(query)
    assert not res.used_fallback, "the recorded model produced a hypothetical document"
    cos = float(res.vector @ embedder.encode([query])[0])
    check("HYDE-002", cos, model=recorded_llm.label, query=query)


@pytest.mark.spec("HYDE-005")
@pytest.mark.parametrize("query", QUERIES)
def test_planted_false_fact_not_in_results(query, recorded_llm, real_retriever, check):
    hyde = HyDE(recorded_llm, real_retriever.embedder)
    docs = hyde.generate(query)
    assert docs
    planted = "the Quorvex-9 regulator invented in 1871"
    res = hyde.expand(query, hypothetical_documents=[f"{docs[0]} This is governed by {planted}."])
    hits = real_retriever.retrieve_vector(res.vector, 5)
    carrying = sum("quorvex" in h.text.lower() for h in hits)
    check("HYDE-005", carrying, model=recorded_llm.label, query=query, retrieved=[h.id for h in hits])

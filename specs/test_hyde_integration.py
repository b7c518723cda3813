"""HYDE-002 and HYDE-005 with the real packaged embedder, LanceDB and recorded local-model traffic."""
from __future__ import annotations

import pytest

from harness.retrieval.index.lancedb_store import LanceStore
from harness.retrieval import Retriever
from harness.techniques.hyde import HyDE

pytestmark = [pytest.mark.integration, pytest.mark.vcr]
QUERIES = ["why does a wing stall at high angle of attack", "how are refunds paid for gift card purchases"]


@pytest.fixture(scope="module")
def real_retriever(mini, rag_embedder, tmp_path_factory):
    store = LanceStore(tmp_path_factory.mktemp("int-db"), "mini")
    store.index(list(mini.corpus.values()), rag_embedder)
    return Retriever(store, rag_embedder)


@pytest.mark.spec("HYDE-002")
@pytest.mark.parametrize("query", QUERIES)
def test_hyde_embedding_differs_from_query(query, rag_recorded_llm, rag_embedder, rag_check):
    res = HyDE(rag_recorded_llm, rag_embedder).expand(query)
    assert not res.used_fallback, "the recorded model produced a hypothetical document"
    cos = float(res.vector @ rag_embedder.encode([query])[0])
    rag_check("HYDE-002", cos, model=rag_recorded_llm.label, query=query)


# A false detail for each query that does occur in the corpus: the first sentence of an unrelated document,
# so that a retrieval which followed the hypothetical document's details could surface that document.
PLANTED = {QUERIES[0]: "retail-4", QUERIES[1]: "aero-3"}


@pytest.mark.spec("HYDE-005")
@pytest.mark.parametrize("query", QUERIES)
def test_planted_false_fact_not_in_results(query, rag_recorded_llm, real_retriever, mini, rag_check):
    hyde = HyDE(rag_recorded_llm, real_retriever.embedder)
    docs = hyde.generate(query)
    assert docs
    source = PLANTED[query]
    planted = mini.corpus[source].text.split(". ")[0].rstrip(".") + "."
    hits = hyde.retrieve(query, real_retriever, k=3, hypothetical_documents=[f"{docs[0]} {planted}"])
    carrying = sum(h.id == source for h in hits)
    rag_check("HYDE-005", carrying, model=rag_recorded_llm.label, query=query, planted=planted,
          retrieved=[h.id for h in hits])

"""HYDE-001..005 and the HyDE mechanics."""
from __future__ import annotations

import numpy as np
import pytest

from harness.llm.client import LLMClient
from harness.llm.scripted import register
from harness.metrics._text import jaccard
from harness.prompts import render
from harness.techniques.hyde import HyDE
from harness.metrics import content_words
from harness.types import Trace

QUESTION = "why does a wing stall at high angle of attack"
PASSAGE = ("Write a passage that answers the question. Include specific facts and technical details.\n"
           "A wing stalls when the boundary layer separates from the upper surface at a high angle of attack, "
           "which destroys the suction peak so lift falls.")


def _echoes(doc: str, prompt: str) -> bool:
    """The document repeats a line of the prompt (an echo the model made and HyDE should have stripped)."""
    lines = {" ".join(ln.lower().split()) for ln in doc.splitlines()}
    return any(" ".join(p.lower().split()) in lines for p in prompt.splitlines() if p.strip())


def _valid(query: str, docs: list[str], prompt: str) -> bool:
    """Non-empty, no echo of the prompt, and at least one content word of the question (the spec's note)."""
    return bool(docs) and all(d.strip() and not _echoes(d, prompt) and content_words(d) & content_words(query)
                              for d in docs)


@pytest.mark.unit
@pytest.mark.spec("HYDE-001")
def test_generates_valid_hypothetical_document(rag_scripted_llm, rag_hashing_embedder, rag_check):
    llm = rag_scripted_llm({"Question:": PASSAGE}, name="hyde-echo")  # the model echoes the instruction line
    hyde = HyDE(llm, rag_hashing_embedder)
    docs = hyde.generate(QUESTION)
    prompt = render(hyde.template, query=QUESTION)
    rag_check("HYDE-001", _valid(QUESTION, docs, prompt), model=llm.label, echoed=[_echoes(d, prompt) for d in docs])


@pytest.mark.unit
@pytest.mark.spec("HYDE-001")
def test_generation_failure_falls_back_to_raw_query_embedding(rag_hashing_embedder):
    # the scripted provider registered (whatever ran before): the call fails on a model it does not have, an error
    # of that call, not a provider litellm cannot route at all (which stops the run before any fallback)
    register("hyde-generation-fails-elsewhere", lambda messages, params: "")
    llm = LLMClient("scripted/does-not-exist", max_attempts=1)
    trace = Trace()
    res = HyDE(llm, rag_hashing_embedder).expand(QUESTION, trace)
    assert res.used_fallback and trace.called("hyde_fallback") and trace.called("hyde_llm_error")
    np.testing.assert_allclose(res.vector, rag_hashing_embedder.encode([QUESTION])[0])


@pytest.mark.unit
@pytest.mark.spec("HYDE-002")
def test_vector_is_mean_of_query_and_documents(rag_hashing_embedder):
    docs = ["boundary layer separation on the upper surface", "loss of lift after the critical angle"]
    hyde = HyDE(LLMClient("scripted/unused"), rag_hashing_embedder, num_documents=2)
    res = hyde.expand(QUESTION, hypothetical_documents=docs)
    mean = rag_hashing_embedder.encode([QUESTION, *docs]).mean(axis=0)
    np.testing.assert_allclose(res.vector, mean / np.linalg.norm(mean), rtol=1e-6)
    assert float(res.vector @ rag_hashing_embedder.encode([QUESTION])[0]) < 0.95


@pytest.mark.unit
@pytest.mark.spec("HYDE-003")
def test_hyde_retrieval_runs_through_the_vector_path(rag_scripted_llm, unit_retriever):
    llm = rag_scripted_llm({"Question:": "Separation of the boundary layer on the upper surface causes stall."},
                       name="hyde-stall")
    trace = Trace()
    hits = HyDE(llm, unit_retriever.embedder).retrieve(QUESTION, unit_retriever, k=3, trace=trace)
    assert len(hits) == 3 and trace.called("hyde") and trace.seconds("hyde_generate") > 0


@pytest.mark.unit
@pytest.mark.spec("HYDE-004")
def test_zero_shot(rag_scripted_llm, rag_hashing_embedder, rag_check):
    hyde = HyDE(rag_scripted_llm({"": "a passage"}, name="hyde-any"), rag_hashing_embedder)
    assert not hasattr(hyde, "fit") and not hasattr(hyde, "train")
    rag_check("HYDE-004", hyde.labelled_examples_used)


@pytest.mark.unit
@pytest.mark.spec("HYDE-001")
def test_cache_key_and_ttl(rag_scripted_llm, rag_hashing_embedder, tmp_path):
    from harness.llm.cache import ResponseCache

    calls = []
    llm = rag_scripted_llm(lambda m, p: calls.append(1) or "stall passage about wings", name="hyde-count")
    hyde = HyDE(llm, rag_hashing_embedder, cache=ResponseCache(tmp_path, ttl_s=3600))
    assert hyde.cache_key(QUESTION).startswith("hyde:")
    hyde.generate(QUESTION)
    hyde.generate(QUESTION)
    assert len(calls) == 1
    assert jaccard(hyde.generate(QUESTION)[0], "stall passage about wings") == 1.0

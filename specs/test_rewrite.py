"""QRW-001..006: the LLM rewriter, the PPO reward, a policy-gradient step, web integration."""
from __future__ import annotations

import pytest

from harness.metrics._text import edit_distance
from harness.techniques.rewrite import LLMRewriter, PPORewardFunction, Seq2SeqRewriter
from harness.types import Trace

Q = "why does my wing keep stalling when I pull up hard"


@pytest.mark.unit
@pytest.mark.spec("QRW-001")
def test_rewrite_is_valid_query(rag_scripted_llm, rag_check):
    llm = rag_scripted_llm({"Query:": "Rewrite: wing stall high angle of attack causes\nRewrite: again"}, name="rw")
    rw = LLMRewriter(llm)
    out = rw.rewrite(Q)
    assert out == "wing stall high angle of attack causes"
    rag_check("QRW-001", len(rw.tokenizer.encode(out)))


@pytest.mark.unit
@pytest.mark.spec("QRW-001")
def test_rewrite_falls_back_and_truncates(rag_scripted_llm, rag_check):
    long = " ".join(["word"] * 300)
    rw = LLMRewriter(rag_scripted_llm({"": long}, name="rw-long"))
    rag_check("QRW-001", len(rw.tokenizer.encode(rw.rewrite(Q))), model_output_words=300)  # truncated below 64
    trace = Trace()
    assert LLMRewriter(rag_scripted_llm({"": ""}, name="rw-empty")).rewrite(Q, trace=trace) == Q
    assert trace.called("rewrite_fallback")


@pytest.mark.unit
@pytest.mark.spec("QRW-002")
def test_rewrite_differs(rag_scripted_llm, rag_check):
    llm = rag_scripted_llm({"Context:": "wing stall pull up g load", "Query:": "wing stall causes"}, name="rw2")
    rw = LLMRewriter(llm)
    rag_check("QRW-002", edit_distance(Q, rw.rewrite(Q)))
    assert rw.rewrite(Q, context="we were discussing gliders") == "wing stall pull up g load"


@pytest.mark.unit
@pytest.mark.spec("QRW-003")
def test_rewrite_retrieve_read_path(rag_scripted_llm, unit_retriever):
    rw = LLMRewriter(rag_scripted_llm({"Query:": "wing stall boundary layer separation"}, name="rw3"))
    hits = unit_retriever.retrieve(rw.rewrite(Q), 3)
    assert hits[0].id in {"aero-2", "aero-3"}


@pytest.mark.unit
@pytest.mark.spec("QRW-004")
@pytest.mark.parametrize("answer, truth, hit, expected", [
    ("30 days", "30 days", True, 1.0),
    ("nothing", "30 days", False, 0.0),
    ("within 30 days", "30 days", True, 0.4 * 0 + 0.4 * 0.8 + 0.2),
    ("The 30 days.", "30 days", False, 0.8),
])
def test_ppo_reward(answer, truth, hit, expected, rag_check):
    r = PPORewardFunction().compute_reward(answer, truth, hit)
    rag_check("QRW-004", r, answer=answer, retrieval_hit=hit)
    assert r == pytest.approx(expected)  # the protocol's weights (the range is what the spec claims)


@pytest.mark.unit
@pytest.mark.spec("QRW-004")
def test_reward_weights_validated():
    with pytest.raises(ValueError, match="sum to 1"):
        PPORewardFunction(0.5, 0.5, 0.5)


@pytest.mark.integration
@pytest.mark.spec("QRW-005")
def test_policy_gradient_step_changes_parameters(rag_check):
    pytest.importorskip("torch")
    rw = Seq2SeqRewriter.from_config(seed=0)
    reward = PPORewardFunction()
    # one query rewarded as a hit, one as a miss: the advantages are +-0.5 whatever the samples say
    stats = rw.policy_gradient_step(["why does a wing stall", "return window for sale items"],
                                    lambda q, t: reward.compute_reward(q, q, q.startswith("why")))
    assert 0.0 <= stats["mean_reward"] <= 1.0 and stats["no_signal"] == 0.0
    rag_check("QRW-005", stats["param_l2_change"], loss=stats["loss"])
    flat = rw.policy_gradient_step(["a b", "c d"], lambda q, t: 0.5)
    assert flat["no_signal"] == 1.0 and flat["param_l2_change"] == 0.0, "no learning signal, no step"
    assert isinstance(rw.rewrite("why does a wing stall"), str)


@pytest.mark.unit
@pytest.mark.spec("QRW-006")
def test_web_search_backend_returns_documents(unit_web):
    hits = unit_web.search("warranty accidental damage", num_results=2)
    assert len(hits) == 2 and all(h.text and h.metadata["source"] == "web" for h in hits)


@pytest.mark.integration
@pytest.mark.spec("QRW-006")
def test_web_search_with_real_embedder(mini_web_docs, rag_embedder, tmp_path, rag_check):
    from harness.retrieval.index.lancedb_store import LanceStore
    from harness.retrieval import Retriever
    from harness.techniques.crag import LocalWebSearch

    store = LanceStore(tmp_path / "web", "web")
    store.index(mini_web_docs, rag_embedder)
    web = LocalWebSearch(Retriever(store, rag_embedder))
    hits = web.search("does a limited warranty cover accidental damage", num_results=3)
    valid = [h for h in hits if h.text.strip() and h.id.startswith("web-")]
    rag_check("QRW-006", len(valid), embedder=rag_embedder.name)
    assert hits[0].id == "web-3"

"""Embedding cache, LanceDB store (vector, full text, hybrid, upsert, re-index skip, ANN) and RRF."""
from __future__ import annotations

import numpy as np
import pytest

from harness.retrieval.embed import EmbeddingCache, HashingEmbedder, RetryingEmbedder
from harness.retrieval.index.lancedb_store import LanceStore, fts_query
from harness.retrieval.rank_fusion import reciprocal_rank_fusion
from harness.retrieval import Retriever
from harness.types import Chunk, Document, Hit

pytestmark = pytest.mark.unit
DOCS = [Document("a", "wing stall and boundary layer separation", "Stall"),
        Document("b", "refunds go to the original payment method", "Refunds"),
        Document("c", "shock waves raise pressure and temperature", "Shocks")]


def test_cache_encodes_each_text_once(tmp_path):
    emb = HashingEmbedder(64, cache=EmbeddingCache(tmp_path / "e.sqlite"))
    first = emb.encode(["wing lift", "shock wave", "wing lift"])
    assert emb.encoded_count == 2 and first.shape == (3, 64)
    again = HashingEmbedder(64, cache=EmbeddingCache(tmp_path / "e.sqlite"))
    np.testing.assert_array_equal(again.encode(["shock wave", "wing lift"]), first[[1, 0]])
    assert again.encoded_count == 0
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0)


def test_uncached_twin_encodes_every_time_and_leaves_the_cache_alone(tmp_path):
    emb = HashingEmbedder(64, cache=EmbeddingCache(tmp_path / "e.sqlite"))
    emb.encode(["wing lift"])
    twin = emb.uncached()
    twin.encode(["wing lift"])
    twin.encode(["wing lift", "new text"])
    assert twin.encoded_count == 3 and emb.encoded_count == 1  # timings through the twin measure the model
    assert HashingEmbedder(64, cache=EmbeddingCache(tmp_path / "e.sqlite")).cache.get_many(
        [emb.cache.key(emb.name, "new text")]) == {}


def test_retrying_embedder_gives_up_after_three(tmp_path):
    class Broken:
        name, dim = "broken", 4

        def encode(self, texts):
            raise TimeoutError("down")

    sleeps = []
    with pytest.raises(TimeoutError):
        RetryingEmbedder(Broken(), sleep=sleeps.append).encode(["a"])
    assert sleeps == [1.0, 2.0]


def test_store_search_modes_and_reindex_skip(tmp_path):
    emb = HashingEmbedder(256)
    store = LanceStore(tmp_path, "docs")
    stats = store.index(DOCS, emb)
    assert stats.rows == 3 and not stats.skipped and len(store) == 3 and store.last_stats is stats
    assert store.index(DOCS, emb).skipped and store.index(DOCS, emb, overwrite=True).encoded == 0  # cache, no skip
    vec = emb.encode(["why does a wing stall"])[0]
    assert store.search_vector(vec, 1)[0].id == "a"
    assert store.search_text("pressure?? AND (shock", 1)[0].id == "c"
    assert store.search_hybrid("refunds payment", emb.encode(["refunds payment"])[0], 2)[0].id == "b"
    assert store.search_vector(vec, 1)[0].metadata["title"] == "Stall"


def test_upsert_updates_and_inserts(tmp_path):
    emb = HashingEmbedder(64)
    store = LanceStore(tmp_path, "chunks")
    chunks = [Chunk("c1", "d", "old text", {"section": "s"})]
    store.upsert(chunks, emb.encode(["old text"]))
    store.upsert([Chunk("c1", "d", "new text", {"section": "t"}), Chunk("c2", "d", "another passage", {})],
                 emb.encode(["new text", "another passage"]))
    hits = {h.id: h for h in store.search_vector(emb.encode(["new text"])[0], 5)}
    assert set(hits) == {"c1", "c2"} and hits["c1"].text == "new text" and hits["c1"].metadata["section"] == "t"


def test_ann_index_when_large(tmp_path):
    rng = np.random.default_rng(0)

    class Random:
        name, dim = "random-16", 16

        def encode(self, texts):
            v = rng.normal(size=(len(texts), 16)).astype(np.float32)
            return v / np.linalg.norm(v, axis=1, keepdims=True)

    docs = [Document(str(i), f"doc {i}") for i in range(600)]
    store = LanceStore(tmp_path, "big", ann_threshold=500)
    stats = store.index(docs, Random())
    assert stats.ann_index
    ids, vecs = store.vectors()
    assert store.search_vector(vecs[7], 1, exact=True)[0].id == ids[7]


def test_empty_and_duplicates(tmp_path):
    emb = HashingEmbedder(32)
    store = LanceStore(tmp_path, "none")
    assert len(store) == 0 and store.search_text("x") == [] and store.search_vector(np.ones(32), 3) == []
    with pytest.raises(ValueError, match="duplicate id 'a'"):
        store.index([DOCS[0], DOCS[0]], emb)
    assert fts_query("What's a (stall)?") == "what s a stall"


def test_retriever_modes(tmp_path):
    emb = HashingEmbedder(256)
    store = LanceStore(tmp_path, "docs")
    store.index(DOCS, emb)
    for mode in ("dense", "bm25", "hybrid"):
        assert Retriever(store, emb, mode).retrieve("shock wave pressure", 1)[0].id == "c"
    with pytest.raises(ValueError, match="unknown retrieval mode"):
        Retriever(store, emb, "sparse")


def test_rrf_keeps_first_occurrence_and_ranks():
    fused = reciprocal_rank_fusion([[Hit("x", 0, "first")], [Hit("y", 0), Hit("x", 0, "second")]])
    assert [h.id for h in fused] == ["x", "y"] and fused[0].text == "first"
    assert fused[0].metadata["rrf_ranks"] == [1, 2] and fused[1].metadata["rrf_ranks"] == [None, 1]


def test_batched_search_equals_one_by_one(tmp_path):
    """`retrieve_many` (one multi-vector LanceDB query, threaded full-text) gives, per query, exactly what
    searching each query alone gives, in every mode; `search_vectors` handles 0 and 1 vectors."""
    rng = np.random.default_rng(3)
    words = "wing stall lift drag shock wave pressure refund payment card boundary layer heat flow".split()
    docs = [Document(f"d{i}", " ".join(rng.choice(words, 8)), f"T{i}") for i in range(60)]
    emb = HashingEmbedder(64)
    store = LanceStore(tmp_path, "many")
    store.index(docs, emb)
    queries = ["shock wave", "refund card payment", "wing lift", "boundary layer heat", "drag"]
    for mode in ("dense", "bm25", "hybrid"):
        r = Retriever(store, emb, mode)
        many = r.retrieve_many(queries, 7, parallel=True)
        alone = [r.retrieve_many([q], 7)[0] for q in queries]
        assert [[h.id for h in hs] for hs in many] == [[h.id for h in hs] for hs in alone], mode
        assert [h.score for hs in many for h in hs] == pytest.approx([h.score for hs in alone for h in hs]), mode
    vecs = emb.encode(queries)
    assert store.search_vectors(vecs[:0], 3) == [] and len(store.search_vectors(vecs[:1], 3)) == 1
    assert [[h.id for h in hs] for hs in store.search_vectors(vecs, 3)] == \
        [[h.id for h in store.search_vector(v, 3)] for v in vecs]


def test_many_queries_are_searched_in_bounded_batches_sharing_each_passage_text(tmp_path, monkeypatch):
    """More query vectors than `QUERY_BATCH` are searched a batch at a time, with the same hits as one by one;
    a passage retrieved by several queries is one text string, not a copy per hit (8,000 queries at depth 100
    held 800k copies, 10.3 GB)."""
    from harness.retrieval.index import lancedb_store

    monkeypatch.setattr(lancedb_store, "QUERY_BATCH", 2)
    words = "wing stall lift drag shock wave pressure refund payment card".split()
    rng = np.random.default_rng(5)
    docs = [Document(f"d{i}", " ".join(rng.choice(words, 6)), f"T{i}") for i in range(20)]
    emb = HashingEmbedder(64)
    store = LanceStore(tmp_path, "batched")
    store.index(docs, emb)
    queries = ["shock wave", "refund card", "wing lift", "drag", "payment"]
    vecs = emb.encode(queries)
    many = store.search_vectors(vecs, 20)
    assert [[h.id for h in hs] for hs in many] == [[h.id for h in store.search_vector(v, 20)] for v in vecs]
    by_id: dict[str, list] = {}
    for h in (h for hs in many for h in hs):
        by_id.setdefault(h.id, []).append(h)
    assert all(len(hs) == 5 for hs in by_id.values())
    assert all(all(h.text is hs[0].text for h in hs) for hs in by_id.values()), "one string per passage"
    assert all(h.metadata is not hs[0].metadata for hs in by_id.values() for h in hs[1:]), "metadata is a copy"
    hybrid = store.search_hybrid_many(queries, vecs, 7)
    assert [[h.id for h in hs] for hs in hybrid] == \
        [[h.id for h in store.search_hybrid(q, v, 7)] for q, v in zip(queries, vecs)]

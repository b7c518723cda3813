"""Negative controls for the retrieval backbone: embedding (cache, retry, int8), chunking, the index, ANN search, the
reranker and multi-query retrieval."""
from __future__ import annotations

from typing import Any

import numpy as np

from harness.plugin.controls.registry import control, replace_everywhere


@control("embedding-cache-off", breaks="the embedding cache never returns a stored vector")
def _emb_cache(mp: Any) -> None:
    from harness.retrieval.embed import EmbeddingCache

    mp.setattr(EmbeddingCache, "get_many", lambda self, keys: {})


@control("embedding-no-retry", breaks="a failed embedding batch is not retried")
def _emb_no_retry(mp: Any) -> None:
    from harness.retrieval.embed import RetryingEmbedder

    mp.setattr(RetryingEmbedder, "encode", lambda self, texts: self.inner.encode(list(texts)))


@control("chunker-one-chunk-per-page", breaks="each page is indexed as a single chunk")
def _one_chunk(mp: Any) -> None:
    from harness.retrieval import chunking

    orig = chunking.chunk_markdown
    replace_everywhere(mp, orig, lambda text, name, *a, **kw: orig(text, name, *a, **kw)[:1])


@control("index-stores-wrong-vectors", breaks="the index stores each chunk with its neighbour's vector")
def _wrong_vectors(mp: Any) -> None:
    from harness.retrieval.index.lancedb_store import LanceStore

    orig = LanceStore.index

    def index(self, items, embedder, *a, **kw):
        class Rolled:
            name, dim = getattr(embedder, "name", "x") + "+rolled", getattr(embedder, "dim", None)

            def encode(self_, texts):
                return np.roll(embedder.encode(texts), 1, axis=0)

        return orig(self, items, Rolled(), *a, **kw)

    mp.setattr(LanceStore, "index", index)


@control("reranker-keeps-input-order", breaks="the reranker returns the first-stage candidates in their order")
def _rerank_noop(mp: Any) -> None:
    from harness.retrieval import rerank

    def keep(self, query, hits, top_k):
        return [rerank.Hit(h.id, h.score, h.text, {**h.metadata, "first_stage_score": h.score,
                                                  "rerank_score": h.score}) for h in list(hits)[:top_k]]

    mp.setattr(rerank._RerankBase, "rerank", keep)


@control("parallel-retrieval-serial", breaks="multi-query retrieval searches one query after another")
def _serial_retrieval(mp: Any) -> None:
    from harness.retrieval import Retriever

    orig = Retriever.retrieve_many

    def retrieve_many(self, queries, k=10, *, parallel=True):
        return [orig(self, [q], k, parallel=False)[0] for q in queries]  # one embedding call and scan per query

    mp.setattr(Retriever, "retrieve_many", retrieve_many)


@control("int8-embedder-truncates", breaks="the int8 ONNX embedder reads only the first 8 tokens of each text")
def _int8_truncates(mp: Any) -> None:
    from harness.retrieval import embed

    orig = embed.OnnxMiniLMEmbedder.__init__

    def init(self, *a, **kw):
        orig(self, *a, **kw)
        self.tokenizer.enable_truncation(8)

    mp.setattr(embed.OnnxMiniLMEmbedder, "__init__", init)


@control("ann-search-reversed", breaks="ANN vector search returns its neighbours in reverse order (the nearest last)")
def _ann_reversed(mp: Any) -> None:
    from harness.retrieval.index.lancedb_store import LanceStore

    orig = LanceStore._search_vectors  # behind search_vectors and search_hybrid_many alike

    def _search_vectors(self, vectors, k, exact, seen):
        out = orig(self, vectors, k, exact, seen)
        through_ann = exact is False or (exact is None and self.ann is not None)
        return [list(reversed(hits)) for hits in out] if through_ann else out

    mp.setattr(LanceStore, "_search_vectors", _search_vectors)

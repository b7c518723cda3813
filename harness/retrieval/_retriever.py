"""Retrievers over a LanceStore: dense (cosine), BM25 (LanceDB FTS) or hybrid (RRF of both)."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Literal, Sequence

import numpy as np

from harness.retrieval.index.lancedb_store import LanceStore
from harness.types import Hit

Mode = Literal["dense", "bm25", "hybrid"]


class Retriever:
    """`retrieve(query, k)` for one query; `retrieve_many` for many at once (see there)."""

    def __init__(self, store: LanceStore, embedder, mode: Mode = "dense", *, workers: int = 8):
        if mode not in ("dense", "bm25", "hybrid"):
            raise ValueError(f"unknown retrieval mode {mode!r}; expected dense, bm25 or hybrid")
        self.store, self.embedder, self.mode, self.workers = store, embedder, mode, workers

    @property
    def name(self) -> str:
        return f"{self.mode}:{getattr(self.embedder, 'name', '?')}" if self.mode != "bm25" else "bm25"

    def ann_context(self) -> dict[str, object]:
        """How this retriever's vector searches run (exact, or ANN with its measured recall): for every figure."""
        return self.store.ann_context() if self.mode != "bm25" else {}

    def retrieve(self, query: str, k: int = 10) -> list[Hit]:
        return self.retrieve_many([query], k)[0]

    def retrieve_vector(self, vector: np.ndarray, k: int = 10, *, query: str = "") -> list[Hit]:
        """Search with a ready vector (HyDE); hybrid mode also needs the query text."""
        if self.mode == "hybrid":
            return self.store.search_hybrid(query, vector, k)
        return self.store.search_vector(vector, k)

    def _one(self, query: str, vector: np.ndarray, k: int) -> list[Hit]:
        if self.mode == "hybrid":
            return self.store.search_hybrid(query, vector, k)
        return self.store.search_vector(vector, k)

    def retrieve_many(self, queries: Sequence[str], k: int = 10, *, parallel: bool = True) -> list[list[Hit]]:
        """All queries at once: one embedding batch; dense vectors searched in one multi-vector LanceDB
        query (one scan for all), full-text searches in parallel threads. `parallel=False` searches one
        query after another (same results)."""
        queries = list(queries)
        if self.mode == "bm25":
            if not parallel or len(queries) == 1:
                return [self.store.search_text(q, k) for q in queries]
            with ThreadPoolExecutor(max_workers=min(self.workers, len(queries))) as pool:
                return list(pool.map(lambda q: self.store.search_text(q, k), queries))
        vectors = self.embedder.encode(queries)
        if not parallel or len(queries) == 1:
            return [self._one(q, v, k) for q, v in zip(queries, vectors)]
        if self.mode == "dense":
            return self.store.search_vectors(vectors, k)
        return self.store.search_hybrid_many(queries, vectors, k, workers=self.workers)

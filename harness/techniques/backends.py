"""Stores the benchmark tier opens from the configuration: a dataset's persistent index under the cache directory,
and CRAG's internal corpus and web (the configured search, or the simulated web of
`harness.retrieval.simulated_web`)."""
from __future__ import annotations

from typing import Any

from harness.config import HarnessConfig


def persistent_index(dataset: Any, embedder: Any, harness_config: HarnessConfig):
    """`dataset` embedded into a persistent LanceDB table under the cache dir (skipped when unchanged);
    the store's `last_stats` says what indexing did."""
    from harness.retrieval.index.lancedb_store import LanceStore

    h = harness_config.harness
    store = LanceStore(h.index_db(dataset.name), "corpus", storage_options=h.index_storage_options)
    store.index(list(dataset.corpus.values()), embedder)
    return store


def crag_backends(qa: Any, embedder: Any, harness_config: HarnessConfig):
    """CRAG's web for an open-QA set with a corpus: the configured search (`harness.web_search_url`), else the
    simulation of `harness.retrieval.simulated_web` (a seeded share of gold passages moved out of the corpus
    into a BM25-searched collection among distractors). Both stores persist under the cache dir (keyed by the
    share and seed); their vectors come from the embedding cache once the set has been indexed.
    Returns (internal store, web search, the simulation or None)."""
    from harness.retrieval import Retriever
    from harness.retrieval.index.lancedb_store import LanceStore
    from harness.retrieval.simulated_web import withhold_gold
    from harness.techniques.crag import LocalWebSearch
    from harness.techniques._registry import Services

    d = harness_config.harness.datasets
    if harness_config.harness.web_search_url:  # the whole corpus, and the configured web (Services builds it)
        return persistent_index(qa, embedder, harness_config), Services(harness_config).require("web"), None
    sim = withhold_gold(qa.corpus, qa.qrels, share=d.crag_withheld_share, seed=harness_config.harness.seed)
    key = f"{qa.name}-withheld-{d.crag_withheld_share:g}-seed{sim.seed}"
    h = harness_config.harness
    internal = LanceStore(h.index_db(key), "internal", storage_options=h.index_storage_options)
    internal.index(sim.internal, embedder)
    web = LanceStore(h.index_db(key), "web", storage_options=h.index_storage_options)
    web.index(sim.web, embedder)
    return internal, LocalWebSearch(Retriever(web, embedder, "bm25"), domain="simulated-web.local"), sim

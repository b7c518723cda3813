"""RETR-WARM-CACHE with the real packaged embedder: a warm embedding cache means no encoding."""
from __future__ import annotations

import pytest

from .conftest import FIXTURES


@pytest.mark.integration
@pytest.mark.spec("RETR-WARM-CACHE")
def test_warm_cache_rerun_encodes_nothing(tmp_path, rag_check):
    """A second index of the same content (new store, same embedding cache) encodes nothing."""
    from harness.data import load_beir
    from harness.retrieval.embed import make_embedder
    from harness.retrieval.index.lancedb_store import LanceStore

    mini = load_beir(FIXTURES / "mini")
    docs = list(mini.corpus.values())
    first = make_embedder("all-MiniLM-L6-v2", tmp_path / "cache")
    s1 = LanceStore(tmp_path / "db1", "t").index(docs, first)
    assert s1.encoded == len(docs)
    again = make_embedder("all-MiniLM-L6-v2", tmp_path / "cache")  # fresh process state, warm disk cache
    s2 = LanceStore(tmp_path / "db2", "t").index(docs, again)
    same_store = LanceStore(tmp_path / "db1", "t").index(docs, again)
    assert same_store.skipped and not s2.skipped
    rag_check("RETR-WARM-CACHE", again.encoded_count, embedder=again.name)

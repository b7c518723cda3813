"""Shared fixtures for the spec tests: the project-made mini corpus, weight-free (unit) and real
(integration) retrievers over it, and a second corpus standing in for the web."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.data import load_beir
from harness.retrieval.index.lancedb_store import LanceStore
from harness.retrieval import Retriever
from harness.techniques.crag import LocalWebSearch

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SPECS_DIR = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def mini():
    return load_beir(FIXTURES / "mini")


@pytest.fixture(scope="session")
def mini_web_docs():
    return list(load_beir_corpus_only(FIXTURES / "mini_web").values())


def load_beir_corpus_only(path: Path):
    from harness.data.beir import load_corpus
    from harness.data.jsonl import SkipLog

    return load_corpus(path / "corpus.jsonl", SkipLog())


@pytest.fixture(scope="session")
def unit_retriever(mini, rag_hashing_embedder, tmp_path_factory):
    store = LanceStore(tmp_path_factory.mktemp("unit-db"), "mini")
    store.index(list(mini.corpus.values()), rag_hashing_embedder)
    return Retriever(store, rag_hashing_embedder)


@pytest.fixture
def unit_web(mini_web_docs, rag_hashing_embedder, tmp_path):
    store = LanceStore(tmp_path / "web-db", "web")
    store.index(mini_web_docs, rag_hashing_embedder)
    return LocalWebSearch(Retriever(store, rag_hashing_embedder), domain="web.local")

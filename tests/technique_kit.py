"""Weight-free services for building every registered technique in unit tests: the mini corpus under a
hashing embedder, a second corpus as the web, a fixed-score reranker and a scripted LLM that records calls."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from harness.config import HarnessConfig
from harness.data import load_beir
from harness.data.beir import load_corpus
from harness.data.jsonl import SkipLog
from harness.retrieval.embed import HashingEmbedder
from harness.retrieval.index.lancedb_store import LanceStore
from harness.llm.client import LLMClient
from harness.llm.scripted import register
from harness.retrieval import Retriever
from harness.techniques.crag import LocalWebSearch
from harness.techniques._registry import Services

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
WHY = "the returns page for electronics lists a fixed window counted from the day the parcel is delivered to you"
SCRIPT = {  # first key found in the last user message wins
    "Is the document relevant": "yes",
    "candidate answers": json.dumps([{"hypothesis": "14 days", "justification": WHY},
                                     {"hypothesis": "30 days", "justification": WHY}]),
    "atomic facts": json.dumps({"14 days": ["wing stall angle of attack 14 degrees", "boundary layer separation"],
                                "30 days": ["returned within 30 days of delivery", "refund gift card"]}),
    "Options:": "B",
    "Source 1": "The wing stalls because the flow separates [Source 1].",
    "Generate": "boundary layer separation\ncritical angle of attack\nlift loss after stall",
    "Rewrite": "wing stall causes boundary layer",
    "passage": "A wing stalls when the boundary layer separates at a high angle of attack.",
    "Sources": "The wing stalls because the flow separates [1].",
    "Context:": "The wing stalls because the boundary layer separates.",
}


class FixedReranker:
    """Scores every text `value` (the CRAG evaluator's input); reranks by input order."""

    name = "fixed"

    def __init__(self, value: float = 0.9):
        self.value = value

    def score(self, query: str, texts: list[str]) -> np.ndarray:
        return np.full(len(texts), self.value)

    def rerank(self, query: str, hits: list, k: int) -> list:
        return list(hits)[:k]


class Recorder:
    """A scripted responder that keeps every call's last user message and parameters."""

    def __init__(self, table: dict[str, str] | None = None):
        self.table = table or SCRIPT
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, messages: list[dict[str, str]], params: dict[str, Any]) -> str:
        last = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        self.calls.append((last, params))
        return next((v for k, v in self.table.items() if k in last), "")


def make_services(tmp_path: Path, config: HarnessConfig | None = None, *, score: float = 0.9, name: str = "kit",
                  recorder: Recorder | None = None, llm_cache: Any = None) -> tuple[Services, Recorder]:
    emb = HashingEmbedder(256)
    mini = load_beir(FIXTURES / "mini")
    store = LanceStore(tmp_path / "db", "mini")
    store.index(list(mini.corpus.values()), emb)
    web_store = LanceStore(tmp_path / "web", "web")
    web_store.index(list(load_corpus(FIXTURES / "mini_web" / "corpus.jsonl", SkipLog()).values()), emb)
    rec = recorder or Recorder()
    llm = LLMClient(register(name, rec), label=f"scripted/{name}", cache=llm_cache)
    services = Services(config or HarnessConfig(), retriever=Retriever(store, emb), embedder=emb, llm=llm,
                        reranker=FixedReranker(score), web=LocalWebSearch(Retriever(web_store, emb)))
    return services, rec

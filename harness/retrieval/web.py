"""Web search behind one interface (`WebSearch.search(query, num_results) -> hits`): a second corpus standing in
for the web (`LocalWebSearch`), or a live SearXNG instance (`SearxngWebSearch`, off unless configured). CRAG and the
WSOP pipeline fall back to it; `harness.techniques._registry.Services` builds the configured one."""
from __future__ import annotations

import json
import urllib.parse
import urllib.request
from typing import Protocol

from harness.types import Hit


class WebSearch(Protocol):
    def search(self, query: str, num_results: int = 10) -> list[Hit]: ...


class LocalWebSearch:
    """A second corpus standing in for the web (any retriever, e.g. a second LanceDB table)."""

    def __init__(self, retriever, *, domain: str = "web.local"):
        self.retriever, self.domain, self.calls = retriever, domain, 0

    def search(self, query: str, num_results: int = 10) -> list[Hit]:
        self.calls += 1
        return [Hit(h.id, h.score, h.text, {**h.metadata, "source": "web", "domain": self.domain})
                for h in self.retriever.retrieve(query, num_results)]


class SearxngWebSearch:
    """A live backend: a SearXNG instance's JSON API (`/search?format=json`). Off by default."""

    def __init__(self, base_url: str, *, timeout_s: float = 10.0):
        self.base_url, self.timeout_s, self.calls = base_url.rstrip("/"), timeout_s, 0

    def search(self, query: str, num_results: int = 10) -> list[Hit]:
        self.calls += 1
        url = f"{self.base_url}/search?" + urllib.parse.urlencode({"q": query, "format": "json"})
        with urllib.request.urlopen(url, timeout=self.timeout_s) as r:  # noqa: S310 - user-configured URL
            results = json.load(r).get("results", [])[:num_results]
        return [Hit(res.get("url", f"web-{i}"), 1.0 / (i + 1), f"{res.get('title', '')}. {res.get('content', '')}",
                    {"source": "web", "domain": urllib.parse.urlparse(res.get("url", "")).netloc})
                for i, res in enumerate(results)]

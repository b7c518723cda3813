"""Content-addressed on-disk cache of LLM responses, keyed by (model, messages, parameters)."""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any


def cache_key(model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    blob = json.dumps({"model": model, "messages": messages, "params": params}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    """One JSON file per key under `root/ab/abcdef....json`; writes are atomic; optional TTL."""

    def __init__(self, root: str | Path, ttl_s: float | None = None):
        self.root = Path(root)
        self.ttl_s = ttl_s
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        p = self._path(key)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            self.misses += 1
            return None
        if self.ttl_s is not None and time.time() - data.get("_stored", 0) > self.ttl_s:
            self.misses += 1
            return None
        self.hits += 1
        return data

    def put(self, key: str, value: dict[str, Any]) -> None:
        p = self._path(key)
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({**value, "_stored": time.time()}, fh)
        os.replace(tmp, p)

"""The rows a LanceStore table holds, and the content fingerprint that says whether a table holds them already.

Both `LanceStore.index` and the streaming `ingest` (and the Ray path) build rows here, so the three compute the
same rows and the same fingerprint; neither the store nor `ingest` needs the other's internals for them."""
from __future__ import annotations

import hashlib
import json
from typing import Any, Sequence

from harness.types import Chunk, Document

Row = tuple[str, str, dict[str, Any]]  # (id, text, metadata)


def as_rows(items: Sequence[Chunk | Document]) -> list[Row]:
    """(id, text, metadata) per item: a document's full text with its title, a chunk's text with its doc_id."""
    rows: list[Row] = []
    for it in items:
        if isinstance(it, Document):
            rows.append((it.id, it.full_text, {"title": it.title, **it.metadata}))
        else:
            rows.append((it.id, it.text, {"doc_id": it.doc_id, **it.metadata}))
    return rows


def metadata_json(meta: dict[str, Any]) -> str:
    """A row's metadata as the table stores it (and the fingerprint hashes it): JSON with sorted keys."""
    return json.dumps(meta, sort_keys=True, default=str)


class Fingerprint:
    """`content_fingerprint` over rows fed in parts: the same digest as over all rows at once."""

    def __init__(self, embedder_name: str):
        self.h = hashlib.sha256(embedder_name.encode())

    def update(self, rows: Sequence[Row]) -> None:
        for rid, text, meta in rows:
            self.h.update(b"\x00" + rid.encode() + b"\x01" + text.encode() + b"\x02" + metadata_json(meta).encode())

    def hexdigest(self) -> str:
        return self.h.hexdigest()


def content_fingerprint(embedder_name: str, rows: Sequence[Row]) -> str:
    """sha256 of the embedder's name and every row (id, text, metadata), in order."""
    fp = Fingerprint(embedder_name)
    fp.update(rows)
    return fp.hexdigest()


__all__ = ["Fingerprint", "Row", "as_rows", "content_fingerprint", "metadata_json"]

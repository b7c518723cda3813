"""Streaming, resumable ingestion into a LanceStore (issue #29 item 2).

A corpus is read, encoded and appended in batches of `batch` passages, so resident memory holds one batch of
texts and vectors (plus the set of ids seen, for duplicates) whatever the corpus size. The table's manifest
says `partial:<fingerprint>` while ingestion runs and `<fingerprint>` once it is complete: a run killed
mid-way (kill -9 included: each append is one LanceDB commit, whole or absent) leaves a partial table, and a
rerun over the same content reads the ids already stored, encodes only the passages the table lacks and
appends them, so the table ends with every passage exactly once.
"""
from __future__ import annotations

import hashlib
import itertools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from harness.types import Chunk, Document

PARTIAL = "partial:"


@dataclass(frozen=True)
class IngestStats:
    """What one ingestion did: rows in the table, passages encoded and appended by this run, passages found
    already stored (a resumed run), batches appended, wall seconds; `skipped` when the table was complete."""

    rows: int
    encoded: int
    already_stored: int
    batches: int
    seconds: float
    resumed: bool
    skipped: bool


def file_fingerprint(embedder_name: str, *paths: str | Path) -> str:
    """sha256 of the embedder's name and the files' bytes, read in 1 MiB blocks (no file is held in memory)."""
    h = hashlib.sha256(embedder_name.encode())
    for path in paths:
        h.update(b"\x00" + str(Path(path).name).encode() + b"\x01")
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def _batches(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    it = iter(items)
    while batch := list(itertools.islice(it, size)):
        yield batch


def stored_ids(store: Any) -> set[str]:
    """The ids already in the store's table (the id column only is read)."""
    if store.table_name not in store._tables():
        return set()
    return set(store.table.search().select(["id"]).limit(None).to_arrow().column("id").to_pylist())


def ingest(store: Any, items: Iterable[Document | Chunk], embedder: Any, *, fingerprint: str, batch: int = 1024,
           total: int | None = None, stage: str | None = None, overwrite: bool = False) -> IngestStats:
    """Encode and append `items` to `store` in batches; skip when the table holds this `fingerprint` complete,
    resume when it holds it partial (only what is missing is encoded), start afresh otherwise."""
    from harness.progress import progress
    from harness.retrieval.index.lancedb_store import _as_rows

    t0 = time.perf_counter()
    exists = store.table_name in store._tables()
    mark = store._manifest_get() if exists else None
    if exists and not overwrite and mark == fingerprint:
        store._table = store.db.open_table(store.table_name)
        return IngestStats(len(store), 0, len(store), 0, time.perf_counter() - t0, False, True)
    resumed = exists and not overwrite and mark == PARTIAL + fingerprint
    have = stored_ids(store) if resumed else set()
    if exists and not resumed:
        store.db.drop_table(store.table_name)
        store._table = None
    store._manifest_put(PARTIAL + fingerprint)
    bar = progress(stage or f"indexing {store.table_name}", total or 0)
    seen: set[str] = set()
    encoded = already = batches = 0
    try:
        for part in _batches(items, batch):
            rows = _as_rows(part)
            for rid, _, _ in rows:
                if rid in seen:
                    raise ValueError(f"duplicate id {rid!r} in items to index")
                seen.add(rid)
            new = [r for r in rows if r[0] not in have]
            already += len(rows) - len(new)
            if new:
                vectors = np.asarray(embedder.encode([r[1] for r in new]), dtype=np.float32)
                _append(store, new, vectors)
                encoded += len(new)
                batches += 1
            bar.advance(len(rows))
    finally:
        bar.close()
    if store.table_name not in store._tables():  # nothing at all to store: an empty table of the right shape
        _append(store, [], np.zeros((0, embedder.dim), np.float32))
    if batches > 1 or resumed:  # one file per append: compacted, so a search does not open one per batch
        store.table.optimize()
    store._build_indices()
    store._manifest_put(fingerprint)
    return IngestStats(len(store), encoded, already, batches, time.perf_counter() - t0, resumed, False)


def _append(store: Any, rows: Sequence[tuple[str, str, dict[str, Any]]], vectors: np.ndarray) -> None:
    data = store._arrow(rows, vectors)
    if store.table_name not in store._tables():
        store._table = store.db.create_table(store.table_name, data=data, mode="create")
    else:
        store.table.add(data)

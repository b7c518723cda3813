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
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Protocol, Sequence

import numpy as np

from harness.progress import progress
from harness.retrieval.index.rows import Row, as_rows
from harness.types import Chunk, Document

if TYPE_CHECKING:
    from harness.retrieval.embed import Embedder

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


class Target(Protocol):
    """What `ingest` writes through: `LanceStore`'s public surface for it."""

    table_name: str

    @property
    def table(self) -> Any: ...
    def __len__(self) -> int: ...
    def has_table(self) -> bool: ...
    def stored_fingerprint(self) -> str | None: ...
    def record_fingerprint(self, fingerprint: str) -> None: ...
    def drop_table(self) -> None: ...
    def reopen(self) -> None: ...
    def append(self, rows: Sequence[Row], vectors: np.ndarray) -> None: ...
    def build_indices(self) -> None: ...


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


def stored_ids(store: Target) -> set[str]:
    """The ids already in the store's table (the id column only is read)."""
    if not store.has_table():
        return set()
    return set(store.table.search().select(["id"]).limit(None).to_arrow().column("id").to_pylist())


def ingest(store: Target, items: Iterable[Document | Chunk], embedder: Embedder, *, fingerprint: str, batch: int = 1024,
           total: int | None = None, stage: str | None = None, overwrite: bool = False) -> IngestStats:
    """Encode and append `items` to `store` in batches; skip when the table holds this `fingerprint` complete,
    resume when it holds it partial (only what is missing is encoded), start afresh otherwise."""
    t0 = time.perf_counter()
    exists = store.has_table()
    mark = store.stored_fingerprint() if exists else None
    if exists and not overwrite and mark == fingerprint:
        store.reopen()
        return IngestStats(len(store), 0, len(store), 0, time.perf_counter() - t0, False, True)
    resumed = exists and not overwrite and mark == PARTIAL + fingerprint
    have = stored_ids(store) if resumed else set()
    if exists and not resumed:
        store.drop_table()
    store.record_fingerprint(PARTIAL + fingerprint)
    bar = progress(stage or f"indexing {store.table_name}", total or 0)
    seen: set[str] = set()
    encoded = already = batches = 0
    try:
        for part in _batches(items, batch):
            rows = as_rows(part)
            for rid, _, _ in rows:
                if rid in seen:
                    raise ValueError(f"duplicate id {rid!r} in items to index")
                seen.add(rid)
            new = [r for r in rows if r[0] not in have]
            already += len(rows) - len(new)
            if new:
                vectors = np.asarray(embedder.encode([r[1] for r in new]), dtype=np.float32)
                store.append(new, vectors)
                encoded += len(new)
                batches += 1
            bar.advance(len(rows))
    finally:
        bar.close()
    if not store.has_table():  # nothing at all to store: an empty table of the right shape
        store.append([], np.zeros((0, embedder.dim), np.float32))
    if batches > 1 or resumed:  # one file per append: compacted, so a search does not open one per batch
        store.table.optimize()
    store.build_indices()
    store.record_fingerprint(fingerprint)
    return IngestStats(len(store), encoded, already, batches, time.perf_counter() - t0, resumed, False)

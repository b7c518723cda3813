"""Encode a corpus on a Ray cluster and write its Lance table from the workers (issue #29 item 5).

The driver streams the corpus (`harness.data.beir.iter_corpus`) into Arrow blocks of (id, text, metadata), the
rows `LanceStore.index` would store, each put in Ray's object store as it is made (the driver holds one block),
and computes the same content fingerprint as the single-process path. A Ray Data actor pool (`map_batches(..., compute=ActorPoolStrategy(size=workers))`, one embedder per actor) adds the
vectors, and lance-ray's `write_lance` writes the table's fragments from the workers, committing once (Ray
2.60's own `Dataset.write_lance` calls pylance 14.0.2, the newest, with an argument it does not take). The
driver then builds the indices with `LanceStore`'s own code (full-text, and IVF-PQ above `ann_threshold`) and
records the fingerprint, so the benchmark tier, opening the same table, finds it complete and encodes nothing.

`ray.init(address=...)` (or the RAY_ADDRESS environment variable) runs the same code on an existing cluster;
every node needs `pip install 'pytest-rag-harness[ray]'`, and the index URI must be one every node can write to
(an object store, or a shared file system).
"""
from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np

from harness.retrieval.index.ingest import PARTIAL
from harness.retrieval.index.lancedb_store import LanceStore
from harness.retrieval.index.rows import Fingerprint, as_rows, content_fingerprint, metadata_json
from harness.types import Chunk, Document


class RayMissing(ImportError):
    """Ray Data or lance-ray is not installed."""


def _ray() -> Any:
    try:
        import lance_ray  # noqa: F401 - the Lance writer of the workers
        import ray
        import ray.data  # noqa: F401
    except ImportError as exc:
        raise RayMissing("the Ray path needs Ray Data and lance-ray: pip install 'pytest-rag-harness[ray]'") from exc
    return ray


@dataclass(frozen=True)
class RayIngestStats:
    """What one Ray ingestion did: rows in the table, actors in the pool, seconds spent encoding and writing
    (the Ray pipeline, actor start-up included), seconds building the indices, and the pipeline's passages/s."""

    rows: int
    workers: int
    pipeline_seconds: float
    index_seconds: float

    @property
    def passages_per_s(self) -> float:
        """Rows over the pipeline's wall seconds."""
        return self.rows / self.pipeline_seconds if self.pipeline_seconds > 0 else float("nan")

    @property
    def per_worker(self) -> float:
        """Passages/s divided by the number of actors."""
        return self.passages_per_s / self.workers


def start_ray(address: str | None = None, *, num_cpus: int | None = None) -> Any:
    """Connect to the cluster at `address` (else RAY_ADDRESS), or start a local one with `num_cpus` CPUs and no
    dashboard; an already-initialised Ray is kept as it is."""
    ray = _ray()
    if not ray.is_initialized():
        os.environ.setdefault("RAY_DEDUP_LOGS", "0")
        if address or os.environ.get("RAY_ADDRESS"):
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    return ray


def worker_embedder(name: str, threads: int | None = None) -> Any:
    """The embedder `make_embedder(name)` gives, with no vector cache (a worker encodes each text once), and the
    int8 ONNX model's intra-op threads set to `threads` (one actor per CPU should not oversubscribe them)."""
    from harness.retrieval.embed import ONNX_INT8_MINILM, NoCache, OnnxMiniLMEmbedder, make_embedder

    if name == ONNX_INT8_MINILM:
        return OnnxMiniLMEmbedder(cache=NoCache(), threads=threads)
    return make_embedder(name).uncached()


class Encode:
    """A Ray Data actor: one embedder, loaded once; each Arrow batch gets a `vector` column."""

    def __init__(self, embedder_name: str, threads: int | None = None):
        self.embedder = worker_embedder(embedder_name, threads)

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        vecs = np.asarray(self.embedder.encode(batch.column("text").to_pylist()), dtype=np.float32)
        vecs = vecs.reshape(batch.num_rows, self.embedder.dim)
        col = pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel(), pa.float32()), self.embedder.dim)
        return batch.append_column("vector", col)


def _blocks(items: Iterable[Document | Chunk], size: int, fp: Any) -> Iterator[Any]:
    """Arrow blocks of `size` rows (id, text, metadata JSON), feeding each row to the fingerprint hash `fp`."""
    import pyarrow as pa

    it = iter(items)
    seen: set[str] = set()
    while part := list(itertools.islice(it, size)):
        rows = as_rows(part)
        for rid, _, _ in rows:
            if rid in seen:
                raise ValueError(f"duplicate id {rid!r} in items to index")
            seen.add(rid)
        fp.update(rows)
        yield pa.table({"id": pa.array([r[0] for r in rows], pa.string()),
                        "text": pa.array([r[1] for r in rows], pa.string()),
                        "metadata": pa.array([metadata_json(r[2]) for r in rows], pa.string())})


def ray_ingest(store: LanceStore, items: Iterable[Document | Chunk], embedder_name: str, dim: int, *,
               workers: int = 2, batch: int = 256, threads: int | None = 1) -> RayIngestStats:
    """Encode `items` with a pool of `workers` Ray actors (each its own `embedder_name` embedder, `dim`-d vectors)
    and write `store`'s table from them; then build its indices and mark it complete with the fingerprint the
    single-process `store.index(items, embedder)` computes. Ray must be started (`start_ray`)."""
    import pyarrow as pa

    ray = _ray()
    fp = Fingerprint(embedder_name)
    refs = [ray.put(b) for b in _blocks(items, batch, fp)]  # into the object store block by block (it spills to disk)
    fingerprint = fp.hexdigest()
    store.drop_table()
    store.record_fingerprint(PARTIAL + fingerprint)
    schema = pa.schema([("id", pa.string()), ("text", pa.string()), ("metadata", pa.string()),
                        ("vector", pa.list_(pa.float32(), dim))])
    t0 = time.perf_counter()
    if refs:
        ds = ray.data.from_arrow_refs(refs).map_batches(
            Encode, fn_constructor_args=(embedder_name, threads), batch_size=batch, batch_format="pyarrow",
            compute=ray.data.ActorPoolStrategy(size=workers), num_cpus=1)
        from lance_ray import write_lance

        write_lance(ds, table_uri(store), schema=schema, mode="create", storage_options=store.storage_options or None)
    else:  # an empty corpus: an empty table of the right shape
        store.db.create_table(store.table_name, schema=schema)
    pipeline = time.perf_counter() - t0
    t1 = time.perf_counter()
    store.reopen()
    if store.table.count_rows() > 0:
        store.table.optimize()  # one file per worker block: compacted, as the streaming ingest does
    store.build_indices()
    store.record_fingerprint(fingerprint)
    return RayIngestStats(store.table.count_rows(), workers, pipeline, time.perf_counter() - t1)


def table_uri(store: LanceStore) -> str:
    """The Lance dataset URI of `store`'s table (`<db uri>/<table>.lance`, where LanceDB keeps it)."""
    return f"{store.uri.rstrip('/')}/{store.table_name}.lance"


def ray_index_corpus(corpus_jsonl: str | Path, store: LanceStore, embedder_name: str, dim: int, **kw: Any
                     ) -> RayIngestStats:
    """`ray_ingest` over a BEIR `corpus.jsonl`, streamed in file order (the order `load_beir` keeps)."""
    from harness.data.beir import iter_corpus

    return ray_ingest(store, iter_corpus(Path(corpus_jsonl)), embedder_name, dim, **kw)


__all__ = ["RayIngestStats", "RayMissing", "content_fingerprint", "ray_index_corpus", "ray_ingest", "start_ray",
           "table_uri", "worker_embedder"]

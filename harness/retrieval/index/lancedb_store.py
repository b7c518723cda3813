"""LanceDB vector + full-text store (embedded, on disk; `s3://`-style URIs pass through to LanceDB)."""
from __future__ import annotations

import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from harness.retrieval.index.ingest import ingest
from harness.retrieval.index.rows import Row, as_rows, content_fingerprint, metadata_json
from harness.retrieval.rank_fusion import RRF_K, reciprocal_rank_fusion
from harness.types import Chunk, Document, Hit

if TYPE_CHECKING:
    from harness.retrieval.embed import Embedder
    from harness.retrieval.index.ann import Tuned

_MANIFEST = "_rag_harness_manifest"
# tables at least this large get an IVF-PQ index: per query it beats exact search from ~3e4 rows, but its build is
# repaid only after ~16k queries at 1e5 rows (docs/benchmarks/2026-11-24-ann-threshold.md; harness._probes.ann)
ANN_MIN_ROWS = 100_000
# query vectors per multi-vector LanceDB search: bounds the rows held at once. Unbounded, halueval-qa's 8,000
# queries at depth 100 held 800k rows with their texts in one result, and its ANN benchmark peaked at 10.3 GB.
QUERY_BATCH = 256
_WORD = re.compile(r"\w+", re.UNICODE)


def _lancedb():
    # LanceDB's Rust logger prints WARN lines (e.g. "creating a new dataset") to stderr; keep the
    # console quiet unless the user asked for more. Must be set before lancedb is first imported.
    os.environ.setdefault("LANCEDB_LOG", "error")
    try:
        import lancedb
    except ImportError as exc:  # pragma: no cover
        raise ImportError("LanceDB is required for the vector store: pip install lancedb") from exc
    return lancedb


@dataclass
class IndexStats:
    rows: int
    encoded: int
    skipped: bool
    seconds: float
    ann_index: bool


def fts_query(text: str) -> str:
    """Reduce free text to plain terms, so query syntax characters never reach the FTS parser."""
    return " ".join(_WORD.findall(text.lower()))


class LanceStore:
    """One LanceDB table of (id, text, metadata, vector) with a full-text index on `text`."""

    def __init__(self, uri: str | Path, table: str = "chunks", *, ann_threshold: int = ANN_MIN_ROWS,
                 storage_options: dict[str, str] | None = None):
        self.uri = str(uri)
        self.table_name = table
        self.ann_threshold = ann_threshold
        self.storage_options = dict(storage_options or {})  # object-store settings (credentials, region, endpoint)
        self.db = _lancedb().connect(self.uri, storage_options=self.storage_options or None)
        self._table = None
        self.last_stats: IndexStats | None = None  # what the latest `index()` did
        self.ann: Tuned | None = None  # once `tune_ann` measured its recall

    # ------------------------------------------------------------------ writing
    # The public surface `harness.retrieval.index.ingest` (and the Ray path) writes through: whether the table
    # exists, its fingerprint in the manifest, dropping / reopening it, appending rows, building its indices.
    def has_table(self) -> bool:
        """Whether this store's table exists."""
        return self.table_name in self._tables()

    def stored_fingerprint(self) -> str | None:
        """The fingerprint the manifest records for this table (`partial:<fp>` while an ingestion runs), None
        when it records none."""
        if _MANIFEST not in self._tables():
            return None
        rows = self.db.open_table(_MANIFEST).to_arrow().to_pylist()
        return next((r["fingerprint"] for r in rows if r["table"] == self.table_name), None)

    def record_fingerprint(self, fingerprint: str) -> None:
        """Record `fingerprint` for this table in the manifest (replacing what it recorded)."""
        import pyarrow as pa

        rows = []
        if _MANIFEST in self._tables():
            rows = [r for r in self.db.open_table(_MANIFEST).to_arrow().to_pylist() if r["table"] != self.table_name]
        rows.append({"table": self.table_name, "fingerprint": fingerprint})
        self.db.create_table(_MANIFEST, data=pa.Table.from_pylist(rows), mode="overwrite")

    def drop_table(self) -> None:
        """Drop this store's table where it exists; the next write creates it afresh."""
        if self.has_table():
            self.db.drop_table(self.table_name)
        self._table = None

    def reopen(self) -> None:
        """Open the table afresh (after something else, e.g. Ray's workers, wrote it)."""
        self._table = self.db.open_table(self.table_name)

    def append(self, rows: Sequence[Row], vectors: np.ndarray) -> None:
        """Append rows with their vectors, creating the table with the first ones (no index is built)."""
        data = self._arrow(rows, vectors)
        if not self.has_table():
            self._table = self.db.create_table(self.table_name, data=data, mode="create")
        else:
            self.table.add(data)

    def _tables(self) -> list[str]:
        names: list[str] = []
        token = None
        while True:
            res = self.db.list_tables(page_token=token, limit=1000)
            names.extend(res.tables)
            token = res.page_token
            if not token:
                return names

    def index(self, items: Sequence[Chunk | Document], embedder: Embedder, *, overwrite: bool = False,
              batch: int = 1024) -> IndexStats:
        """Embed and store items in batches (harness.retrieval.index.ingest): skipped, with no encoding at all,
        when the same content is already indexed; resumed, encoding only what is missing, after a killed run."""
        rows = as_rows(items)
        ids = [r[0] for r in rows]
        seen: set[str] = set()
        for i in ids:
            if i in seen:
                raise ValueError(f"duplicate id {i!r} in items to index")
            seen.add(i)
        before = getattr(embedder, "encoded_count", 0)
        st = ingest(self, items, embedder, fingerprint=content_fingerprint(embedder.name, rows), batch=batch,
                    total=len(rows), stage=f"indexing {self.table_name}", overwrite=overwrite)
        self.last_stats = IndexStats(st.rows, getattr(embedder, "encoded_count", 0) - before, st.skipped, st.seconds,
                                     self._has_ann())
        return self.last_stats

    def _arrow(self, rows: Sequence[Row], vectors: np.ndarray):
        import pyarrow as pa

        dim = vectors.shape[1]
        return pa.table({
            "id": pa.array([r[0] for r in rows], pa.string()),
            "text": pa.array([r[1] for r in rows], pa.string()),
            "metadata": pa.array([metadata_json(r[2]) for r in rows], pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.astype(np.float32).ravel(), pa.float32()), dim),
        })

    def _write(self, rows, vectors: np.ndarray, mode: str) -> None:
        data = self._arrow(rows, vectors)
        self._table = self.db.create_table(self.table_name, data=data, mode=mode)
        self.build_indices()

    def build_indices(self) -> None:
        """The full-text index on `text` (once the table has rows), and IVF-PQ from `ann_threshold` rows on."""
        tbl = self.table
        if tbl.count_rows() == 0:
            return
        from lancedb.index import FTS

        tbl.create_index("text", config=FTS(), replace=True)
        if tbl.count_rows() >= self.ann_threshold:
            self.build_ann()

    def build_ann(self) -> None:
        """An IVF-PQ index on the vectors (√rows partitions, dim/8 sub-vectors). It is not searched until
        `tune_ann` has measured its recall against exact search."""
        import math

        from lancedb.index import IvfPq

        tbl = self.table
        dim = tbl.schema.field("vector").type.list_size
        tbl.create_index("vector", config=IvfPq(distance_type="cosine", num_partitions=max(1, round(math.sqrt(
            tbl.count_rows()))), num_sub_vectors=dim // 8 if dim % 8 == 0 else 1), replace=True)
        self.ann = None

    def tune_ann(self, query_vectors: np.ndarray, k: int = 10, *, target: float = 0.95) -> Tuned:
        """Choose nprobes / refine_factor by recall@k against exact search on these queries (a sample of the
        real ones); from then on vector searches go through the index, and `ann_context()` carries the recall."""
        from harness.retrieval.index.ann import lance_top_k, tune_ann

        qs = np.atleast_2d(np.asarray(query_vectors, dtype=np.float32))
        exact = lance_top_k(self.table, qs, k, exact=True)
        self.ann = tune_ann(self.table, qs, exact, k, target=target)
        return self.ann

    def ann_context(self) -> dict[str, object]:
        """How vector searches run, for every figure computed through them: exact, or ANN with its recall."""
        if self.ann is None:
            return {"vector_search": "exact"}
        return {"vector_search": "ANN (IVF-PQ)", **self.ann.setting.as_context(),
                "ann_recall_at_10_vs_exact": self.ann.recall, "ann_recall_target_reached": self.ann.reached,
                "ann_recall_queries": self.ann.queries}

    def upsert(self, items: Sequence[Chunk | Document], vectors: np.ndarray) -> None:
        """Insert or update rows by id (metadata included) and refresh the indices."""
        rows = as_rows(items)
        if not self.has_table():
            self._write(rows, vectors, mode="create")
            return
        data = self._arrow(rows, vectors)
        self.table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(data)
        self.build_indices()

    def _has_ann(self) -> bool:
        try:
            return any("vector" in list(getattr(ix, "columns", [])) for ix in self.table.list_indices())
        except Exception:  # noqa: BLE001
            return False

    # ------------------------------------------------------------------ reading
    @property
    def table(self):
        if self._table is None:
            if not self.has_table():
                raise LookupError(f"{self.uri}: table {self.table_name!r} does not exist; index something first")
            self._table = self.db.open_table(self.table_name)
        return self._table

    def __len__(self) -> int:
        return 0 if not self.has_table() else self.table.count_rows()

    @staticmethod
    def _hits(rows: list[dict[str, Any]], score_key: str, transform=lambda s: s,
              seen: dict[str, tuple[str, dict[str, Any]]] | None = None) -> list[Hit]:
        """Rows as hits. Hits of one passage share its text (one string, however many of the searches that
        share `seen` retrieved it) and each gets its own copy of the parsed metadata."""
        seen = {} if seen is None else seen
        out = []
        for r in rows:
            text, meta = seen.get(r["id"]) or seen.setdefault(r["id"], (r["text"], json.loads(r["metadata"])))
            out.append(Hit(id=r["id"], score=float(transform(r[score_key])), text=text, metadata=dict(meta)))
        return out

    def _ann_or_exact(self, q: Any, exact: bool | None) -> Any:
        """Exact unless an ANN index was tuned (then its measured setting), or as `exact` says."""
        if exact is True or (exact is None and self.ann is None):
            return q.bypass_vector_index()
        if self.ann is None:
            raise RuntimeError(f"{self.uri}: ANN search asked for, but no index was tuned (call tune_ann first)")
        s = self.ann.setting
        q = q.nprobes(s.nprobes) if s.nprobes else q
        return q.refine_factor(s.refine_factor) if s.refine_factor else q

    def search_vector(self, vector: np.ndarray, k: int = 10, *, exact: bool | None = None) -> list[Hit]:
        """Cosine top-k; score is cosine similarity. Exact unless an ANN index was tuned (`exact` forces)."""
        return self._search_vector(vector, k, exact, None)

    def _search_vector(self, vector: np.ndarray, k: int, exact: bool | None,
                       seen: dict[str, tuple[str, dict[str, Any]]] | None) -> list[Hit]:
        if len(self) == 0:
            return []
        q = self._cosine_query(np.asarray(vector, dtype=np.float32), k, exact)
        return self._hits(q.to_list(), "_distance", lambda d: 1.0 - d, seen)

    def _cosine_query(self, vectors: Any, k: int, exact: bool | None) -> Any:
        """The LanceDB query for one vector or a list of them: cosine top-k with the hit columns."""
        q = self.table.search(vectors, vector_column_name="vector")
        return self._ann_or_exact(q.distance_type("cosine").limit(k).select(["id", "text", "metadata", "_distance"]),
                                  exact)

    def search_vectors(self, vectors: np.ndarray | Sequence[np.ndarray], k: int = 10, *,
                       exact: bool | None = None) -> list[list[Hit]]:
        """Cosine top-k for many vectors, `QUERY_BATCH` at a time in one LanceDB query each (one scan, rows
        tagged by `query_index`); the same hits, in the same order, as `search_vector` on each."""
        return self._search_vectors(vectors, k, exact, {})

    def _search_vectors(self, vectors: np.ndarray | Sequence[np.ndarray], k: int, exact: bool | None,
                        seen: dict[str, tuple[str, dict[str, Any]]]) -> list[list[Hit]]:
        vs = np.atleast_2d(np.asarray(vectors, dtype=np.float32)) if len(vectors) else np.zeros((0, 0), np.float32)
        if len(self) == 0:
            return [[] for _ in vs]
        out: list[list[Hit]] = []
        for start in range(0, len(vs), QUERY_BATCH):
            batch = vs[start:start + QUERY_BATCH]
            if len(batch) == 1:
                out.append(self._search_vector(batch[0], k, exact, seen))
                continue
            q = self._cosine_query(list(batch), k, exact)
            groups: list[list[dict[str, Any]]] = [[] for _ in range(len(batch))]
            for row in q.to_list():
                groups[row["query_index"]].append(row)
            out += [self._hits(sorted(g, key=lambda r: r["_distance"]), "_distance", lambda d: 1.0 - d, seen)
                    for g in groups]
        return out

    def search_text(self, query: str, k: int = 10) -> list[Hit]:
        """BM25 full-text search (LanceDB's native FTS)."""
        return self._search_text(query, k, None)

    def _search_text(self, query: str, k: int, seen: dict[str, tuple[str, dict[str, Any]]] | None) -> list[Hit]:
        terms = fts_query(query)
        if not terms or len(self) == 0:
            return []
        q = self.table.search(terms, query_type="fts").limit(k).select(["id", "text", "metadata", "_score"])
        return self._hits(q.to_list(), "_score", seen=seen)

    def search_hybrid(self, query: str, vector: np.ndarray, k: int = 10, *, depth: int | None = None,
                      rrf_k: int = RRF_K) -> list[Hit]:
        """Vector and full-text results, each to `depth` (default max(k, 100)), fused by RRF."""
        return self.search_hybrid_many([query], [vector], k, depth=depth, rrf_k=rrf_k)[0]

    def search_hybrid_many(self, queries: Sequence[str], vectors: np.ndarray | Sequence[np.ndarray], k: int = 10, *,
                           depth: int | None = None, rrf_k: int = RRF_K, workers: int = 8,
                           exact: bool | None = None) -> list[list[Hit]]:
        """`search_hybrid` for many queries, `QUERY_BATCH` at a time: the vector lists in one multi-vector
        query, the full-text searches in parallel threads (LanceDB releases the GIL while it searches), each
        batch fused down to k before the next is searched."""
        depth = depth or max(k, 100)
        seen: dict[str, tuple[str, dict[str, Any]]] = {}
        out: list[list[Hit]] = []
        # one pool for every batch; a single query searches in this thread (search_hybrid's path)
        with ThreadPoolExecutor(max_workers=min(workers, len(queries))) if len(queries) > 1 else nullcontext() as pool:
            text_search = map if pool is None else pool.map
            for start in range(0, len(queries), QUERY_BATCH):
                batch = list(queries[start:start + QUERY_BATCH])
                dense = self._search_vectors(vectors[start:start + QUERY_BATCH], depth, exact, seen)
                texts = list(text_search(lambda q: self._search_text(q, depth, seen), batch))
                out += [reciprocal_rank_fusion([d, t], rrf_k)[:k] for d, t in zip(dense, texts)]
        return out

    def vectors(self) -> tuple[list[str], np.ndarray]:
        """All ids and vectors (for brute-force comparisons)."""
        t = self.table.to_arrow().select(["id", "vector"])
        ids = t.column("id").to_pylist()
        vecs = np.asarray(t.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False),
                          dtype=np.float32).reshape(len(ids), -1)
        return ids, vecs

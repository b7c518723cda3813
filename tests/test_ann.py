"""harness.retrieval.index.ann: the brute-force oracle, recall@k and the LanceDB searches on a small table."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from harness.retrieval.index.ann import (AnnSetting, clustered_unit_vectors, exact_top_k, lance_top_k, recall_at_k,
                                         tune_ann)

pytestmark = pytest.mark.unit


def test_clustered_unit_vectors_are_seeded_unit_and_clustered():
    v = clustered_unit_vectors(3000, 32, clusters=10, seed=1, block=700)
    assert v.dtype == np.float32 and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert np.array_equal(v, clustered_unit_vectors(3000, 32, clusters=10, seed=1, block=700))
    # points of one cluster are far closer to each other than random unit vectors (cosine ~ 0 in 32-d)
    assert float(np.mean(v[:200] @ v[:200].T)) > 0.05


def test_exact_top_k_equals_a_full_sort_across_blocks():
    rng = np.random.default_rng(2)
    base, q = rng.standard_normal((1000, 16)).astype(np.float32), rng.standard_normal((7, 16)).astype(np.float32)
    base[500] = base[20]  # a tie: the lower id first
    q[0] = base[20]
    got = exact_top_k(base, q, 5, block=130)
    s = q @ base.T
    ref = np.array([sorted(range(1000), key=lambda j: (-s[i, j], j))[:5] for i in range(7)])
    assert np.array_equal(got, ref) and got[0, 0] == 20 and got[0, 1] == 500


def test_recall_at_k_by_hand():
    exact = np.array([[1, 2, 3, 4], [5, 6, 7, 8]])
    assert recall_at_k([[1, 2, 9, 10], [8, 7, 6, 5]], exact, 4) == pytest.approx((2 / 4 + 1) / 2)
    with pytest.raises(ValueError):
        recall_at_k([[1]], exact, 4)


def test_lance_exact_and_ann_search_against_the_oracle(tmp_path):
    import lancedb
    from lancedb.index import IvfPq

    base = clustered_unit_vectors(4000, 32, clusters=20, seed=3)
    q = clustered_unit_vectors(20, 32, clusters=20, seed=3, points_seed=4)  # the same centres, other points
    tbl = lancedb.connect(tmp_path).create_table("v", data=pa.table({
        "id": pa.array(np.arange(len(base)), pa.int64()),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(base.ravel(), pa.float32()), 32)}))
    exact = exact_top_k(base, q, 10)
    assert recall_at_k(lance_top_k(tbl, q, 10, exact=True), exact, 10) == 1.0
    tbl.create_index("vector", config=IvfPq(distance_type="cosine", num_partitions=16, num_sub_vectors=4))
    coarse = recall_at_k(lance_top_k(tbl, q, 10, setting=AnnSetting(nprobes=1)), exact, 10)
    tuned = tune_ann(tbl, q, exact, 10, [AnnSetting(nprobes=1), AnnSetting(nprobes=16, refine_factor=10)])
    assert coarse < 1.0  # one partition of product-quantised vectors misses neighbours: recall is measured
    assert tuned.reached and tuned.recall >= 0.95 and len(tuned.tried) == 2 and tuned.setting.nprobes == 16


class _Lookup:
    """An embedder that maps each text to a given vector (the store's ANN is tested, not a model)."""

    name, dim = "lookup", 32

    def __init__(self, table: dict[str, np.ndarray]):
        self.table = table

    def encode(self, texts):
        return np.stack([self.table[t] for t in texts])


def test_a_store_searches_exactly_until_its_ann_recall_is_measured(tmp_path):
    from harness.retrieval.index.lancedb_store import LanceStore
    from harness.types import Document

    base = clustered_unit_vectors(3000, 32, clusters=20, seed=5)
    q = clustered_unit_vectors(30, 32, clusters=20, seed=5, points_seed=6)
    docs = [Document(id=f"d{i}", text=f"text {i}") for i in range(len(base))]
    store = LanceStore(tmp_path, "c", ann_threshold=1000)
    store.index(docs, _Lookup({d.text: v for d, v in zip(docs, base)}))
    assert store._has_ann() and store.ann_context() == {"vector_search": "exact"}
    exact = [[h.id for h in hs] for hs in store.search_vectors(q, 10)]
    assert exact == [[f"d{i}" for i in row] for row in exact_top_k(base, q, 10)]
    with pytest.raises(RuntimeError, match="no index was tuned"):
        store.search_vectors(q, 10, exact=False)
    tuned = store.tune_ann(q)
    ctx = store.ann_context()
    assert ctx["vector_search"] == "ANN (IVF-PQ)" and ctx["ann_recall_at_10_vs_exact"] == tuned.recall >= 0.95
    assert ctx["ann_recall_queries"] == 30 and ctx["nprobes"] == tuned.setting.nprobes
    found = [[h.id for h in hs] for hs in store.search_vectors(q, 10)]
    assert recall_at_k(found, exact, 10) == pytest.approx(tuned.recall)

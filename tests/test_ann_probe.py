"""harness._probes.ann's configuration comparison (issue #29 item 4) on a small table: every exact
configuration returns the oracle's top-k, and each ratio is its LanceDB time over its NumPy time."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from harness.retrieval.index.ann import clustered_unit_vectors, exact_top_k
from harness._probes.ann import compare_configs

pytestmark = pytest.mark.unit


def test_every_exact_configuration_finds_the_oracles_top_k(tmp_path):
    lancedb = pytest.importorskip("lancedb")
    base = clustered_unit_vectors(600, 16, clusters=5, seed=3)
    queries = clustered_unit_vectors(4, 16, clusters=5, seed=3, points_seed=4)
    table = lancedb.connect(tmp_path).create_table("v", data=pa.table({
        "id": pa.array(np.arange(len(base)), pa.int64()),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(base.ravel(), pa.float32()), 16)}))
    out = compare_configs(table, base, queries, exact_top_k(base, queries, 5), 5)
    assert [c["config"].split(",")[0] for c in out] == ["one query per search"] + ["the batch in one multi-vector search"] * 3
    assert all(c["recall"] == 1.0 for c in out)
    assert all(c["ratio"] == pytest.approx(c["lance_s"] / c["numpy_s"]) for c in out)

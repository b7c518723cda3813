"""`python -m harness._probes.ann N DIR [--ann]`: N seeded clustered 384-d unit vectors in a LanceDB
table under DIR; 100 queries near the same centres; NumPy brute force (the oracle) and LanceDB exact search
timed per query batch (best of 3); with --configs each way of asking LanceDB for an exact batch search timed
against NumPy, interleaved (best of 3 each); with --ann an IVF-PQ index built (sqrt(N) partitions, 48 sub-vectors) and
nprobes / refine_factor tuned to recall@10 >= 0.95 against the oracle, then timed. Prints one JSON line with
every figure and the process's peak resident memory (issue #29 item 4)."""
from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Callable, TypeVar

from harness.peak_memory import peak_rss_mib

import numpy as np



T = TypeVar("T")


def _best_of(fn: Callable[[], T], repeats: int = 3) -> tuple[float, T]:
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _one_at_a_time(table, queries: np.ndarray, k: int, distance: str) -> list[list[int]]:
    return [[r["id"] for r in table.search(v, vector_column_name="vector").distance_type(distance).limit(k)
             .select(["id", "_distance"]).bypass_vector_index().to_arrow().to_pylist()] for v in queries]


def _many_at_once(table, queries: np.ndarray, k: int, distance: str) -> list[list[int]]:
    groups: list[list[tuple[float, int]]] = [[] for _ in queries]
    q = table.search(list(queries), vector_column_name="vector").distance_type(distance).limit(k)
    for row in q.select(["id", "_distance"]).bypass_vector_index().to_arrow().to_pylist():
        groups[row["query_index"]].append((row["_distance"], row["id"]))
    return [[i for _, i in sorted(g)] for g in groups]


def compare_configs(table, base: np.ndarray, queries: np.ndarray, exact: np.ndarray, k: int) -> list[dict]:
    """Each way of asking LanceDB for an exact top-k of a query batch, timed against NumPy brute force in one run
    (interleaved, best of 3 each), with its recall against the oracle."""
    from harness.retrieval.index.ann import exact_top_k, recall_at_k

    configs = {"one query per search, cosine": (_one_at_a_time, "cosine"),
               "the batch in one multi-vector search, cosine (the store's exact path)": (_many_at_once, "cosine"),
               "the batch in one multi-vector search, dot (unit vectors)": (_many_at_once, "dot"),
               "the batch in one multi-vector search, l2": (_many_at_once, "l2")}
    out = []
    for name, (fn, distance) in configs.items():
        t_numpy, t_lance, found = math.inf, math.inf, []
        for _ in range(3):
            t0 = time.perf_counter()
            exact_top_k(base, queries, k)
            t_numpy = min(t_numpy, time.perf_counter() - t0)
            t0 = time.perf_counter()
            found = fn(table, queries, k, distance)
            t_lance = min(t_lance, time.perf_counter() - t0)
        out.append({"config": name, "numpy_s": t_numpy, "lance_s": t_lance, "ratio": t_lance / t_numpy,
                    "recall": recall_at_k(found, exact, k)})
    return out


def main(argv: list[str]) -> int:
    import lancedb
    import pyarrow as pa

    from harness.retrieval.index.ann import (clustered_unit_vectors, exact_top_k, lance_top_k,
                                             recall_at_k, tune_ann)

    n, root, ann = int(argv[0]), Path(argv[1]), "--ann" in argv
    dim, k, clusters = 384, 10, max(100, n // 1000)
    t0 = time.perf_counter()
    base = clustered_unit_vectors(n, dim, clusters=clusters, seed=0)
    queries = clustered_unit_vectors(100, dim, clusters=clusters, seed=0, points_seed=1)
    out: dict = {"vectors": n, "dim": dim, "clusters": clusters, "queries": len(queries), "k": k,
                 "generate_s": time.perf_counter() - t0}
    out["numpy_exact_s"], exact = _best_of(lambda: exact_top_k(base, queries, k))
    t0 = time.perf_counter()
    table = lancedb.connect(root).create_table("v", data=pa.table({
        "id": pa.array(np.arange(n), pa.int64()),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(base.ravel(), pa.float32()), dim)}), mode="overwrite")
    out["write_s"] = time.perf_counter() - t0
    out["lance_exact_s"], found = _best_of(lambda: lance_top_k(table, queries, k, exact=True))
    out["lance_exact_recall"] = recall_at_k(found, exact, k)
    out["lance_exact_over_numpy"] = out["lance_exact_s"] / out["numpy_exact_s"]
    if "--configs" in argv:
        out["configs"] = compare_configs(table, base, queries, exact, k)
    if ann:
        from lancedb.index import IvfPq

        partitions = int(round(math.sqrt(n)))
        t0 = time.perf_counter()
        table.create_index("vector", config=IvfPq(distance_type="cosine", num_partitions=partitions,
                                                  num_sub_vectors=dim // 8))
        out["index"] = {"type": "IVF_PQ", "num_partitions": partitions, "num_sub_vectors": dim // 8,
                        "build_s": time.perf_counter() - t0}
        tuned = tune_ann(table, queries, exact, k)
        secs, found = _best_of(lambda: lance_top_k(table, queries, k, setting=tuned.setting))
        out["ann"] = {**tuned.setting.as_context(), "recall_at_10": recall_at_k(found, exact, k),
                      "reached_0.95": tuned.reached, "seconds": secs, "speedup_over_lance_exact":
                      out["lance_exact_s"] / secs, "tried": tuned.tried}
    out["peak_rss_mib"] = peak_rss_mib()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Approximate nearest-neighbour search in LanceDB, with its recall measured against exact search (issue #29).

`clustered_unit_vectors` makes seeded 384-d vectors with cluster structure (unit-norm points scattered around
random centres, as sentence embeddings of a topical corpus are); `exact_top_k` is the NumPy brute-force oracle
(cosine = dot product on unit vectors); `lance_top_k` searches a LanceDB table exactly or through its ANN index
with given `nprobes` / `refine_factor`; `tune_ann` walks a grid of those until recall@k against the oracle
reaches the target, so every ANN figure is reported beside the recall it was measured at.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence, Union

import numpy as np


def clustered_unit_vectors(n: int, dim: int = 384, *, clusters: int = 1000, spread: float = 0.6, seed: int = 0,
                           points_seed: int | None = None, block: int = 100_000) -> np.ndarray:
    """`n` float32 unit vectors: cluster centres drawn on the sphere (from `seed`), each point its centre plus
    Gaussian noise of norm ≈ `spread`, renormalised (from `points_seed`, default `seed`: queries drawn with
    another points seed fall near the same centres); built in blocks so the float64 scratch stays small."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    if points_seed is not None:
        rng = np.random.default_rng(points_seed)
    out = np.empty((n, dim), dtype=np.float32)
    for i in range(0, n, block):
        m = min(block, n - i)
        x = centres[rng.integers(0, clusters, m)] + rng.standard_normal((m, dim)) * (spread / np.sqrt(dim))
        out[i:i + m] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


# each query's ids, best first: lists, or the rows of an array (`exact_top_k`)
IdRows = Union[Sequence[Sequence[Any]], np.ndarray]


def exact_top_k(base: np.ndarray, queries: np.ndarray, k: int, *, block: int = 200_000) -> np.ndarray:
    """Row ids of each query's k highest dot products with `base` (ties broken by the lower id), best first."""
    q = np.asarray(queries, dtype=np.float32)
    best_s = np.full((len(q), 0), -np.inf, dtype=np.float32)
    best_i = np.zeros((len(q), 0), dtype=np.int64)
    for start in range(0, len(base), block):
        s = q @ base[start:start + block].T
        kk = min(k, s.shape[1])
        part = np.argpartition(-s, kk - 1, axis=1)[:, :kk]
        best_s = np.concatenate([best_s, np.take_along_axis(s, part, axis=1)], axis=1)
        best_i = np.concatenate([best_i, part + start], axis=1)
        order = np.lexsort((best_i, -best_s), axis=1)[:, :k]
        best_s, best_i = np.take_along_axis(best_s, order, axis=1), np.take_along_axis(best_i, order, axis=1)
    return best_i


def recall_at_k(found: IdRows, exact: IdRows, k: int) -> float:
    """Mean over queries of |found top-k ∩ exact top-k| / k."""
    if len(found) != len(exact):
        raise ValueError(f"{len(found)} result lists for {len(exact)} queries")
    return float(np.mean([len(set(list(f)[:k]) & set(list(e)[:k])) / k for f, e in zip(found, exact)]))


@dataclass(frozen=True)
class AnnSetting:
    """How an ANN search is run: partitions probed, candidates re-ranked exactly (× k), HNSW's ef."""

    nprobes: int | None = None
    refine_factor: int | None = None
    ef: int | None = None

    def as_context(self) -> dict[str, Any]:
        return {k: v for k, v in (("nprobes", self.nprobes), ("refine_factor", self.refine_factor),
                                  ("ef", self.ef)) if v is not None}


def lance_top_k(table: Any, queries: np.ndarray, k: int, *, exact: bool = False,
                setting: AnnSetting = AnnSetting(), column: str = "vector", id_column: str = "id") -> list[list[int]]:
    """Each query's top-k ids from a LanceDB table by cosine, in one multi-vector query."""
    q = table.search([np.asarray(v, dtype=np.float32) for v in queries], vector_column_name=column)
    q = q.distance_type("cosine").limit(k).select([id_column, "_distance"])
    if exact:
        q = q.bypass_vector_index()
    else:
        if setting.nprobes:
            q = q.nprobes(setting.nprobes)
        if setting.refine_factor:
            q = q.refine_factor(setting.refine_factor)
        if setting.ef:
            q = q.ef(setting.ef)
    groups: list[list[tuple[float, int]]] = [[] for _ in range(len(queries))]
    for row in q.to_arrow().to_pylist():
        groups[row["query_index"]].append((row["_distance"], row[id_column]))
    return [[i for _, i in sorted(g)] for g in groups]


@dataclass
class Tuned:
    """The first setting of the grid that reached the target recall (or the best one), with what each tried gave."""

    setting: AnnSetting
    recall: float
    seconds: float
    reached: bool
    tried: list[dict[str, Any]] = field(default_factory=list)
    queries: int = 0


DEFAULT_GRID = tuple(sorted((AnnSetting(nprobes=p, refine_factor=r) for r in (None, 5, 10, 20, 50)
                             for p in (10, 20, 40, 80, 160)), key=lambda s: (s.nprobes or 0) * (s.refine_factor or 1)))


def tune_ann(table: Any, queries: np.ndarray, exact: IdRows, k: int,
             grid: Sequence[AnnSetting] = DEFAULT_GRID, *, target: float = 0.95, id_column: str = "id") -> Tuned:
    """Walk `grid` (cheapest first) until recall@k against `exact` reaches `target`; time each setting."""
    best: Tuned | None = None
    tried: list[dict[str, Any]] = []
    for setting in grid:
        t0 = time.perf_counter()
        found = lance_top_k(table, queries, k, setting=setting, id_column=id_column)
        seconds = time.perf_counter() - t0
        r = recall_at_k(found, exact, k)
        tried.append({**setting.as_context(), "recall": r, "seconds": seconds})
        if best is None or r > best.recall:
            best = Tuned(setting, r, seconds, r >= target)
        if r >= target:
            return Tuned(setting, r, seconds, True, tried, len(queries))
    assert best is not None, "an empty grid"
    best.tried, best.queries = tried, len(queries)
    return best

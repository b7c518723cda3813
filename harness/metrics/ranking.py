"""Ranking metrics over many queries at once, trec_eval conventions, NumPy-vectorised.

Inputs are plain mappings: `qrels[qid][docid] = grade` (grade > 0 is relevant) and
`run[qid] = [docid, ...]` best first (or `{docid: score}`; then ordered as trec_eval orders:
score descending, ties by docid descending). Each metric returns one value per query of
`qrels` (queries absent from the run score 0), in `sorted(qrels)` order; `mean()` averages.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence, Union

import numpy as np

Qrels = Mapping[str, Mapping[str, int]]
RunLike = Mapping[str, Union[Sequence[str], Mapping[str, float]]]


def order_run(scores: Mapping[str, float]) -> list[str]:
    """Order a {docid: score} mapping the way trec_eval does: score desc, then docid desc."""
    return [d for d, _ in sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]


@dataclass(frozen=True)
class RelevanceMatrix:
    """Graded relevance of the top-`depth` hits per query, plus what the ideal ranking holds."""

    query_ids: list[str]
    gains: np.ndarray  # (n_queries, depth) grade of the hit at each rank, 0 if not relevant / no hit
    n_relevant: np.ndarray  # (n_queries,) number of judged-relevant docs
    ideal: np.ndarray  # (n_queries, depth) grades sorted descending, zero padded
    n_retrieved: np.ndarray  # (n_queries,) hits available up to depth


def relevance_matrix(qrels: Qrels, run: RunLike, depth: int) -> RelevanceMatrix:
    qids = sorted(qrels)
    gains = np.zeros((len(qids), depth), dtype=np.float64)
    ideal = np.zeros((len(qids), depth), dtype=np.float64)
    n_rel = np.zeros(len(qids), dtype=np.float64)
    n_ret = np.zeros(len(qids), dtype=np.float64)
    for i, q in enumerate(qids):
        judged = qrels[q]
        hits = run.get(q, [])
        ranked = order_run(hits) if isinstance(hits, Mapping) else list(hits)
        ranked = ranked[:depth]
        n_ret[i] = len(ranked)
        gains[i, : len(ranked)] = [max(judged.get(d, 0), 0) for d in ranked]
        rel = sorted((g for g in judged.values() if g > 0), reverse=True)
        n_rel[i] = len(rel)
        ideal[i, : min(depth, len(rel))] = rel[:depth]
    return RelevanceMatrix(qids, gains, n_rel, ideal, n_ret)


def _safe_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.zeros_like(a, dtype=np.float64)
    np.divide(a, b, out=out, where=b > 0)
    return out


def _recall(m: RelevanceMatrix, k: int) -> np.ndarray:
    return _safe_div((m.gains[:, :k] > 0).sum(axis=1).astype(float), m.n_relevant)


def _precision(m: RelevanceMatrix, k: int) -> np.ndarray:
    return (m.gains[:, :k] > 0).sum(axis=1) / float(k)


def _hit_rate(m: RelevanceMatrix, k: int) -> np.ndarray:
    return (m.gains[:, :k] > 0).any(axis=1).astype(float)


def _ndcg(m: RelevanceMatrix, k: int) -> np.ndarray:
    disc = 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))
    return _safe_div(m.gains[:, :k] @ disc, m.ideal[:, :k] @ disc)


def _mrr(m: RelevanceMatrix, k: int) -> np.ndarray:
    rel = m.gains[:, :k] > 0
    first = rel.argmax(axis=1)
    return np.where(rel.any(axis=1), 1.0 / (first + 1.0), 0.0)


def _average_precision(m: RelevanceMatrix, k: int) -> np.ndarray:
    rel = (m.gains[:, :k] > 0).astype(np.float64)
    prec_at = np.cumsum(rel, axis=1) / np.arange(1, k + 1, dtype=np.float64)
    return _safe_div((prec_at * rel).sum(axis=1), m.n_relevant)


def recall(qrels: Qrels, run: RunLike, k: int) -> np.ndarray:
    """Recall@k: relevant docs in the top k over all judged-relevant docs."""
    return _recall(relevance_matrix(qrels, run, k), k)


def precision(qrels: Qrels, run: RunLike, k: int) -> np.ndarray:
    """P@k with trec_eval's convention: divide by k even when fewer than k hits were returned."""
    return _precision(relevance_matrix(qrels, run, k), k)


def hit_rate(qrels: Qrels, run: RunLike, k: int) -> np.ndarray:
    """1 if any relevant doc is in the top k, else 0."""
    return _hit_rate(relevance_matrix(qrels, run, k), k)


def ndcg(qrels: Qrels, run: RunLike, k: int) -> np.ndarray:
    """nDCG@k with linear gains (the grade itself) and log2(rank+1) discounts, as trec_eval's ndcg_cut."""
    return _ndcg(relevance_matrix(qrels, run, k), k)


def mrr(qrels: Qrels, run: RunLike, k: int) -> np.ndarray:
    """Reciprocal rank of the first relevant hit within the top k (0 if none)."""
    return _mrr(relevance_matrix(qrels, run, k), k)


def average_precision(qrels: Qrels, run: RunLike, k: int) -> np.ndarray:
    """AP@k as trec_eval's map_cut: sum of precision at each relevant rank <= k, over all relevant."""
    return _average_precision(relevance_matrix(qrels, run, k), k)


MATRIX_METRICS = {
    "recall": _recall, "p": _precision, "hit": _hit_rate,
    "ndcg": _ndcg, "mrr": _mrr, "map": _average_precision,
}


def mean(values: np.ndarray) -> float:
    return float(np.mean(values)) if len(values) else 0.0

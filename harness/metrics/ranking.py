"""Ranking metrics over many queries at once, trec_eval conventions, NumPy-vectorised.

Inputs are plain mappings: `qrels[qid][docid] = grade` (grade >= the relevance level, 1 unless given, is relevant;
0 judged non-relevant; < 0 in the pool but unjudged) and `run[qid] = [docid, ...]` best first (or `{docid: score}`;
then ordered as trec_eval orders: score descending, ties by docid descending). Each metric returns one value per query
of `qrels` (queries absent from the run score 0, as `trec_eval -c`), in `sorted(qrels)` order; `mean()` averages.
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


NOT_JUDGED, UNJUDGED, PAST_END = -1, -2, -3  # `rels` for a doc not in the qrels, one judged < 0, no doc at all


@dataclass(frozen=True)
class RelevanceMatrix:
    """Graded relevance of the top-`depth` hits per query, plus what the ideal ranking holds."""

    query_ids: list[str]
    gains: np.ndarray  # (n_queries, depth) grade of the hit at each rank, 0 if not relevant / no hit
    n_relevant: np.ndarray  # (n_queries,) number of judged-relevant docs (grade >= level)
    ideal: np.ndarray  # (n_queries, depth) positive grades sorted descending, zero padded
    n_retrieved: np.ndarray  # (n_queries,) hits available up to depth
    rels: np.ndarray  # (n_queries, depth) trec_eval's judgement of each hit: grade >= 0, NOT_JUDGED, UNJUDGED, PAST_END
    level_counts: np.ndarray  # (n_queries, top grade + 1) judged docs per grade >= 0
    level: int = 1  # the relevance level: grade >= level is relevant (trec_eval -l)

    @property
    def relevant(self) -> np.ndarray:
        """(n_queries, depth) True where the hit is judged relevant."""
        return self.rels >= self.level


def _judgement(grade: int | None) -> int:
    """A hit's entry in `rels`: its grade, NOT_JUDGED when the qrels lack it, UNJUDGED when judged < 0."""
    return NOT_JUDGED if grade is None else grade if grade >= 0 else UNJUDGED


def relevance_matrix(qrels: Qrels, run: RunLike, depth: int, level: int = 1) -> RelevanceMatrix:
    """The top `depth` hits of each judged query joined with their judgements (grade >= `level` is relevant)."""
    if level < 0:
        raise ValueError(f"relevance level must be >= 0, got {level}")
    qids = sorted(qrels)
    ideal = np.zeros((len(qids), depth), dtype=np.float64)
    rels = np.full((len(qids), depth), PAST_END, dtype=np.int64)
    n_rel = np.zeros(len(qids), dtype=np.float64)
    n_ret = np.zeros(len(qids), dtype=np.float64)
    top = max((g for q in qids for g in qrels[q].values()), default=0)
    counts = np.zeros((len(qids), max(top, 0) + 1), dtype=np.int64)
    for i, q in enumerate(qids):
        judged = qrels[q]
        hits = run.get(q, [])
        ranked = order_run(hits) if isinstance(hits, Mapping) else list(hits)
        ranked = ranked[:depth]
        n_ret[i] = len(ranked)
        rels[i, : len(ranked)] = [_judgement(judged.get(d)) for d in ranked]
        positive = sorted((g for g in judged.values() if g > 0), reverse=True)
        n_rel[i] = sum(g >= level for g in judged.values())
        ideal[i, : min(depth, len(positive))] = positive[:depth]
        counts[i] = np.bincount(np.array([g for g in judged.values() if g >= 0], dtype=np.int64),
                                minlength=counts.shape[1])
    gains = np.maximum(rels, 0).astype(np.float64)
    return RelevanceMatrix(qids, gains, n_rel, ideal, n_ret, rels, counts, level)


def _safe_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.zeros_like(a, dtype=np.float64)
    np.divide(a, b, out=out, where=b > 0)
    return out


def _recall(m: RelevanceMatrix, k: int) -> np.ndarray:
    return _safe_div(m.relevant[:, :k].sum(axis=1).astype(float), m.n_relevant)


def _precision(m: RelevanceMatrix, k: int) -> np.ndarray:
    return m.relevant[:, :k].sum(axis=1) / float(k)


def _hit_rate(m: RelevanceMatrix, k: int) -> np.ndarray:
    return m.relevant[:, :k].any(axis=1).astype(float)


def _ndcg(m: RelevanceMatrix, k: int) -> np.ndarray:
    disc = 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))
    return _safe_div(m.gains[:, :k] @ disc, m.ideal[:, :k] @ disc)


def _mrr(m: RelevanceMatrix, k: int) -> np.ndarray:
    rel = m.relevant[:, :k]
    first = rel.argmax(axis=1)
    return np.where(rel.any(axis=1), 1.0 / (first + 1.0), 0.0)


def _average_precision(m: RelevanceMatrix, k: int) -> np.ndarray:
    rel = m.relevant[:, :k].astype(np.float64)
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

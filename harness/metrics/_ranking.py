"""Ranking metrics over many queries at once, trec_eval conventions, NumPy-vectorised.

Inputs are plain mappings: `qrels[qid][docid] = grade` (grade >= the relevance level, 1 unless given, is relevant;
0 judged non-relevant; < 0 in the pool but unjudged) and `run[qid] = [docid, ...]` best first (or `{docid: score}`;
then ordered as trec_eval orders: score descending, ties by docid descending). Each metric returns one value per query
of `qrels` (queries absent from the run score 0, as `trec_eval -c`), in `sorted(qrels)` order; `mean()` averages.
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Mapping
from itertools import chain, islice, repeat
from typing import Callable, Iterable, Sequence, Union

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


_MISSING = -(2 ** 62)  # the grade looked up for a hit the qrels do not list


Hits = Union[Sequence[str], Mapping[str, float]]  # one query's hits: ranked docids, or {docid: score}


def _hits(run: RunLike, qids: list[str], depth: int) -> tuple[list[Hits], np.ndarray]:
    """Each query's hits (a ranked sequence cut to `depth`) and its scores, higher first: a sequence's ranks are
    scored 0, -1, -2, ... so that one sort serves both kinds of run."""
    hits: list[Hits] = []
    scores: list[Iterable[float]] = []
    for q in qids:
        h = run.get(q, ())
        if isinstance(h, Mapping):
            scores.append(h.values())
        else:
            h = list(islice(h, depth))
            scores.append(range(0, -len(h), -1))
        hits.append(h)
    total = sum(map(len, hits))
    return hits, np.fromiter(chain.from_iterable(scores), np.float64, total)


def _nan_free(hits: list[Hits], scores: np.ndarray, starts: np.ndarray) -> None:
    """Scores of a query holding a nan replaced (in place) by minus its rank in `order_run`'s order: a sort with nan
    in it follows no order NumPy can reproduce."""
    for row in np.unique(np.searchsorted(starts, np.flatnonzero(np.isnan(scores)), side="right") - 1):
        h = hits[row]
        assert isinstance(h, Mapping)  # a ranked list's scores are its ranks: only {docid: score} holds a nan
        rank = {d: i for i, d in enumerate(order_run(h))}
        scores[starts[row]:starts[row] + len(h)] = [-rank[d] for d in h]


def _docid_ranks(names: list[str]) -> np.ndarray:
    """Each docid's rank in Python's string order (NumPy's sort where it is the same: no NUL character)."""
    try:
        numpy_order = "\x00" not in "".join(names)
    except TypeError:  # docids that are not all strings
        numpy_order = False
    if numpy_order:
        return np.unique(np.array(names), return_inverse=True)[1].ravel().astype(np.int64)
    order = {d: i for i, d in enumerate(sorted(set(names)))}
    return np.fromiter(map(order.__getitem__, names), np.int64, len(names))


def _sort_rows(key: np.ndarray, docs: Callable[[np.ndarray], list[str]]) -> np.ndarray:
    """Each row's order: `key` ascending, nan (padding) last, equal keys by docid descending (trec_eval's order);
    `docs` names the docids of cells (flat indices into `key`)."""
    perm = np.argsort(key, axis=1)  # not stable: equal keys are put in docid order below
    ranked = np.sort(key, axis=1)
    same = ranked[:, 1:] == ranked[:, :-1]  # nan equals nothing: padding is never tied
    if not same.any():
        return perm
    tied = np.zeros(perm.shape, dtype=bool)  # sorted cells whose key equals a neighbour's
    tied[:, 1:] |= same
    tied[:, :-1] |= same
    cells = np.flatnonzero(tied)  # row-major, so each group of equal keys is one run of consecutive cells
    after = np.zeros(perm.shape, dtype=bool)  # tied to the cell before it in the same group
    after[:, 1:] = same
    group = np.cumsum(~after.ravel()[cells])
    placed = perm.take(cells)
    names = docs(placed + cells // perm.shape[1] * perm.shape[1])
    # within each group the higher docid first; the group's cells keep their places, their hits are reordered
    np.put(perm, cells, placed[np.lexsort((-_docid_ranks(names), group))])
    return perm


def _ranked_rels(qrels: Qrels, run: RunLike, qids: list[str], depth: int) -> tuple[np.ndarray, np.ndarray]:
    """`rels` (the judgement of each query's top `depth` hits, in trec_eval's order) and the hits counted."""
    hits, scores = _hits(run, qids, depth)
    lens = np.fromiter(map(len, hits), np.int64, len(hits))
    starts = np.concatenate(([0], np.cumsum(lens)[:-1])).astype(np.int64) if len(lens) else lens
    if np.isnan(scores).any():
        _nan_free(hits, scores, starts)
    grades = np.fromiter(chain.from_iterable(map(qrels[q].get, h, repeat(_MISSING)) for q, h in zip(qids, hits)),
                         np.int64, len(scores))
    rels = np.full((len(qids), depth), PAST_END, dtype=np.int64)
    flat: list[str] = []  # every hit's docid, listed only when some scores tie

    def docids(idx: np.ndarray) -> Callable[[np.ndarray], list[str]]:
        def pick(cells: np.ndarray) -> list[str]:
            if not flat:
                flat.extend(chain.from_iterable(hits))
            return [flat[i] for i in idx.ravel()[cells].tolist()]
        return pick

    # rows padded to the longest of their size class (lengths within a factor of 2), so padding at most doubles work
    size_class = np.ceil(np.log2(np.maximum(lens, 1))).astype(np.int64)
    for c in np.unique(size_class[lens > 0]):
        rows = np.flatnonzero((size_class == c) & (lens > 0))
        width = int(lens[rows].max())
        idx = starts[rows, None] + np.arange(width)
        pad = np.arange(width) >= lens[rows, None]
        idx[pad] = 0
        key = -scores[idx]
        key[pad] = np.nan
        top = _sort_rows(key, docids(idx))[:, :depth]
        graded = grades[np.take_along_axis(idx, top, axis=1)]
        graded = np.where(graded == _MISSING, NOT_JUDGED, np.where(graded < 0, UNJUDGED, graded))
        graded[pad[:, :top.shape[1]]] = PAST_END  # padding sorts last: a row's hits fill its first cells
        rels[rows, :top.shape[1]] = graded
    return rels, np.minimum(lens, depth).astype(np.float64)


def relevance_matrix(qrels: Qrels, run: RunLike, depth: int, level: int = 1) -> RelevanceMatrix:
    """The top `depth` hits of each judged query joined with their judgements (grade >= `level` is relevant)."""
    if level < 0:
        raise ValueError(f"relevance level must be >= 0, got {level}")
    qids = sorted(qrels)
    rels, n_ret = _ranked_rels(qrels, run, qids, depth)
    judged = [qrels[q] for q in qids]
    per_query = np.fromiter(map(len, judged), np.int64, len(judged))
    grades = np.fromiter(chain.from_iterable(j.values() for j in judged), np.int64, int(per_query.sum()))
    row = np.repeat(np.arange(len(qids)), per_query)
    n_rel = np.bincount(row[grades >= level], minlength=len(qids)).astype(np.float64)
    width = max(int(grades.max()) if len(grades) else 0, 0) + 1
    graded = grades >= 0
    counts = np.bincount(row[graded] * width + grades[graded], minlength=len(qids) * width).reshape(len(qids), width)
    positive = grades > 0
    order = np.lexsort((-grades[positive], row[positive]))
    g, r = grades[positive][order], row[positive][order]
    rank = np.arange(len(r)) - np.searchsorted(r, r)
    keep = rank < depth
    ideal = np.zeros((len(qids), depth), dtype=np.float64)
    ideal[r[keep], rank[keep]] = g[keep]
    gains = np.maximum(rels, 0).astype(np.float64)
    return RelevanceMatrix(qids, gains, n_rel, ideal, n_ret, rels, counts.astype(np.int64), level)


def _safe_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.zeros_like(a, dtype=np.float64)
    np.divide(a, b, out=out, where=b > 0)
    return out


def _recall(m: RelevanceMatrix, k: int) -> np.ndarray:
    return _safe_div(m.relevant[:, :k].sum(axis=1).astype(float), m.n_relevant)


def _precision(m: RelevanceMatrix, k: int) -> np.ndarray:
    return np.asarray(m.relevant[:, :k].sum(axis=1) / float(k))


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

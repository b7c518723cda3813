"""trec_eval's graded measures (ndcg with a gain map, ndcg_rel, Rndcg, G, rbp), pure functions of a
`RelevanceMatrix` over the whole ranking: a hit's gain is its grade (`m.gains`) unless a gain map says otherwise,
and the ideal ranking holds every positive gain, largest first (`m.ideal`), as m_ndcg.c and gain_init.c set them up.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from harness.metrics._ranking import RelevanceMatrix, _ndcg, _safe_div
from harness.metrics.trec import _persistence, _retrieved, _seqsum


def _discounted(gains: np.ndarray) -> np.ndarray:
    """Each rank's gain / log2(rank + 1), written as trec_eval divides."""
    return gains / np.log2(np.arange(2, gains.shape[1] + 2, dtype=np.float64))[None, :]


def with_gains(m: RelevanceMatrix, gain_map: tuple[tuple[int, float], ...]) -> RelevanceMatrix:
    """The matrix with grade g worth gain_map's gain for g (grades not in the map keep gain g)."""
    table = dict(gain_map)
    levels = np.arange(m.level_counts.shape[1])
    worth = np.array([table.get(int(g), float(g)) for g in levels], dtype=np.float64)
    gains = np.where(m.rels >= 0, worth[np.clip(m.rels, 0, None)], 0.0)
    ideal = np.zeros_like(m.ideal)
    for i, row in enumerate(m.level_counts):
        ranked = sorted((w for w, n in zip(worth, row) for _ in range(n) if w > 0), reverse=True)[: ideal.shape[1]]
        ideal[i, : len(ranked)] = ranked
    return dataclasses.replace(m, gains=gains, ideal=ideal)


def ndcg_gains(m: RelevanceMatrix, gain_map: tuple[tuple[int, float], ...]) -> np.ndarray:
    """nDCG over the whole ranking with a gain per grade, e.g. ndcg_1=3,2=9 (trec_eval's `ndcg` with parameters)."""
    regained = with_gains(m, gain_map)
    return _ndcg(regained, regained.gains.shape[1])


def ndcg_rel(m: RelevanceMatrix, _: Any = None) -> np.ndarray:
    """nDCG averaged over the ranks of the relevant hits (unretrieved relevant docs: the final nDCG)."""
    dcg = np.cumsum(_discounted(m.gains), axis=1)
    idcg = np.cumsum(_discounted(m.ideal), axis=1)
    hit = (m.gains > 0) & _retrieved(m)
    ratio = np.zeros_like(dcg)
    np.divide(dcg, idcg, out=ratio, where=hit & (idcg > 0))
    n_pos, n_hit = (m.ideal > 0).sum(axis=1), hit.sum(axis=1)
    final = _safe_div((n_pos - n_hit) * dcg[:, -1], idcg[:, -1]) if dcg.shape[1] else np.zeros(len(n_pos))
    total = _seqsum(ratio) + final
    return np.where(total > 0, _safe_div(total, n_pos.astype(np.float64)), 0.0)


def rndcg(m: RelevanceMatrix, _: Any = None) -> np.ndarray:
    """nDCG averaged over the ranks where the ideal ranking's gain drops (and at the end of a longer ranking)."""
    depth = m.gains.shape[1]
    dcg = np.cumsum(_discounted(m.gains), axis=1)
    idcg = np.cumsum(_discounted(m.ideal), axis=1)
    nxt = np.concatenate([m.ideal[:, 1:], np.zeros((len(m.ideal), 1))], axis=1)
    drop = (m.ideal > 0) & (nxt != m.ideal)  # the last rank at one ideal gain: nDCG there is averaged
    ratio = np.zeros_like(dcg)
    np.divide(dcg, idcg, out=ratio, where=drop & (idcg > 0))
    n_pos = (m.ideal > 0).sum(axis=1)
    longer = m.n_retrieved > n_pos + 1  # trec_eval then also averages in the nDCG of the whole ranking
    end = np.zeros(len(n_pos)) if not depth else _safe_div(dcg[:, -1], idcg[:, -1])
    total = _seqsum(ratio) + np.where(longer, end, 0.0)
    count = drop.sum(axis=1) + longer
    return np.where((m.n_relevant > 0) & (count > 0), _safe_div(total, count.astype(np.float64)), 0.0)


def g(m: RelevanceMatrix, _: Any = None) -> np.ndarray:
    """G: each hit's gain over log2(2 + ideal gain so far, at least 1 a rank, - gain so far), over the ideal total."""
    retrieved = _retrieved(m)
    cost = np.cumsum(np.where(retrieved, np.maximum(m.ideal, 1.0), 0.0), axis=1)
    got = np.cumsum(m.gains, axis=1)
    terms = np.zeros_like(cost)
    np.divide(m.gains, np.log2(2.0 + cost - got), out=terms, where=retrieved & (m.gains != 0))
    return _safe_div(_seqsum(terms), _seqsum(np.where(m.ideal > 0, m.ideal, 0.0)))


def rbp(m: RelevanceMatrix, _: Any = None, p: float = 0.9) -> np.ndarray:
    """Rank-biased precision (Moffat & Zobel), p = 0.9; grades above 1 scaled into [0, 1] by the query's top grade."""
    judged = m.level_counts > 0
    top = np.where(judged.any(axis=1), m.level_counts.shape[1] - 1 - np.argmax(judged[:, ::-1], axis=1), 0)
    scale = np.where(top > 1, top, 1).astype(np.float64)[:, None]
    powers = _persistence(m, p)[:-1]
    return (1.0 - p) * _seqsum(np.where(m.gains != 0, (m.gains / scale) * powers, 0.0))

"""trec_eval's measures beyond the cutoff family of `ranking` (map, bpref, infAP, iprec_at_recall, set_*, ...), each
a pure function of a `RelevanceMatrix` built over the whole ranking, as trec_eval 10's m_*.c computes it.

Sums run in rank order (`_seqsum`) and divisions are written as trec_eval writes them, so that the figures equal
trec_eval's to the last printed digit. Registered (with how trec_eval names and summarises each) in
`harness.metrics._registry.TREC_METRICS`.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from harness.metrics._ranking import NOT_JUDGED, PAST_END, UNJUDGED, RelevanceMatrix, _average_precision, _safe_div

MIN_GEO_MEAN = 1e-5  # trec_eval's floor on a query's value inside a geometric mean
INFAP_EPSILON = 1e-5


def _seqsum(x: np.ndarray) -> np.ndarray:
    """Row sums added left to right, as trec_eval's loops add (numpy's own sum pairs terms)."""
    return np.cumsum(x, axis=1)[:, -1] if x.shape[1] else np.zeros(x.shape[0])


def _depth(m: RelevanceMatrix) -> int:
    return int(m.rels.shape[1])


def _retrieved(m: RelevanceMatrix) -> np.ndarray:
    return np.asarray(m.rels != PAST_END)


def _judged_nonrelevant(m: RelevanceMatrix) -> np.ndarray:
    return np.asarray((m.rels >= 0) & ~m.relevant)


def _unjudged(m: RelevanceMatrix) -> np.ndarray:
    return np.asarray((m.rels == NOT_JUDGED) | (m.rels == UNJUDGED))


def _relevant_in_top(m: RelevanceMatrix, k: np.ndarray) -> np.ndarray:
    """Relevant hits among the first k[q] (k >= 0, may pass the depth) of each query."""
    cum = np.concatenate([np.zeros((len(k), 1)), np.cumsum(m.relevant, axis=1)], axis=1)
    return np.asarray(cum[np.arange(len(k)), np.minimum(k, _depth(m)).astype(np.int64)])


def _lround(x: np.ndarray) -> np.ndarray:
    """C's lround for x >= 0: halves away from zero."""
    low = np.floor(x)
    return np.asarray(low + ((x - low) >= 0.5))


def num_ret(m: RelevanceMatrix, _: Any = None) -> np.ndarray:
    """Documents retrieved."""
    return m.n_retrieved.astype(np.float64)


def num_rel(m: RelevanceMatrix, _: Any = None) -> np.ndarray:
    """Documents judged relevant."""
    return m.n_relevant.astype(np.float64)


def num_rel_ret(m: RelevanceMatrix, _: Any = None) -> np.ndarray:
    """Relevant documents retrieved."""
    return np.asarray(m.relevant.sum(axis=1), dtype=np.float64)


def num_nonrel_judged_ret(m: RelevanceMatrix, _: Any = None) -> np.ndarray:
    """Documents retrieved and judged non-relevant."""
    return np.asarray(_judged_nonrelevant(m).sum(axis=1), dtype=np.float64)


def gm_map(m: RelevanceMatrix, _: Any = None) -> np.ndarray:
    """Average precision per query; summarised by the geometric mean (floor MIN_GEO_MEAN)."""
    return _average_precision(m, _depth(m))


def rprec(m: RelevanceMatrix, _: Any = None) -> np.ndarray:
    """Precision after R documents, R the number judged relevant (fewer retrieved: the rest count non-relevant)."""
    return _safe_div(_relevant_in_top(m, m.n_relevant), m.n_relevant)


def _bpref_terms(m: RelevanceMatrix) -> np.ndarray:
    nonrel = _judged_nonrelevant(m)
    above = np.cumsum(nonrel, axis=1)  # at a relevant hit: judged non-relevant hits ranked above it
    r = m.n_relevant[:, None]
    bound = np.minimum(m.level_counts[:, : m.level].sum(axis=1)[:, None], r)
    frac = np.ones(m.rels.shape)
    np.divide(np.minimum(above, r), bound, out=frac, where=(above > 0) & (bound > 0))
    terms = np.where(above > 0, 1.0 - frac, 1.0)
    return np.where(m.relevant, terms, 0.0)


def bpref(m: RelevanceMatrix, _: Any = None) -> np.ndarray:
    """Binary preference: per relevant hit, 1 - (judged non-relevant above it, at most R) / min(R, judged non-rel)."""
    return _safe_div(_seqsum(_bpref_terms(m)), m.n_relevant)


def iprec_at_recall(m: RelevanceMatrix, level: float) -> np.ndarray:
    """Interpolated precision at a recall level: the best precision at or below the rank reaching lround(level R)."""
    if not _depth(m):
        return np.zeros(len(m.query_ids))
    rel = m.relevant
    found = rel.sum(axis=1)
    cum = np.cumsum(rel, axis=1)
    ranks = np.arange(1, _depth(m) + 1, dtype=np.float64)
    prec = np.where(_retrieved(m), cum / ranks, 0.0)
    best_below = np.maximum.accumulate(prec[:, ::-1], axis=1)[:, ::-1]  # max precision at this rank or deeper
    need = _lround(level * m.n_relevant)
    at = np.argmax(cum >= np.maximum(need, 1)[:, None], axis=1)
    ok = (found > 0) & (need <= found)
    return np.where(ok, best_below[np.arange(len(at)), at], 0.0)


def eleven_pt_avg(m: RelevanceMatrix, levels: tuple[float, ...]) -> np.ndarray:
    """Mean interpolated precision over recall levels (default 0.0, 0.1, ..., 1.0)."""
    total = np.zeros(len(m.query_ids))
    for level in sorted(levels, reverse=True):  # trec_eval adds from the highest level down
        total = total + iprec_at_recall(m, level)
    return total / float(len(levels))


def infap(m: RelevanceMatrix, _: Any = None) -> np.ndarray:
    """Inferred AP (Yilmaz & Aslam), judged docs < 0 being the pool's unjudged sample."""
    rel = m.relevant
    rel_so_far = np.cumsum(rel, axis=1) - 1  # relevant above this hit
    nonrel = np.cumsum(_judged_nonrelevant(m), axis=1)
    pool = np.cumsum(m.rels == UNJUDGED, axis=1)
    fj = np.arange(_depth(m), dtype=np.float64)[None, :]
    fj_safe = np.where(fj == 0, 1.0, fj)
    term = 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * ((rel_so_far + nonrel + pool) / fj_safe) * \
        ((rel_so_far + INFAP_EPSILON) / (rel_so_far + nonrel + 2 * INFAP_EPSILON))
    term = np.where(fj == 0, 1.0, term)
    return _safe_div(_seqsum(np.where(rel, term, 0.0)), m.n_relevant)


def rprec_mult(m: RelevanceMatrix, mult: float) -> np.ndarray:
    """Precision after int(mult R + 0.9) documents."""
    cut = np.floor(mult * m.n_relevant + 0.9)
    return _safe_div(_relevant_in_top(m, cut), cut)


def utility(m: RelevanceMatrix, coefs: tuple[float, ...]) -> np.ndarray:
    """a relret + b nonrelret + c relmissed + d nonrelmissed (collection size 0, as trec_eval by default)."""
    a, b, c, d = coefs
    ret, rel, rr = m.n_retrieved, m.n_relevant, num_rel_ret(m)
    return np.asarray(a * rr + b * (ret - rr) + c * (rel - rr) + d * (0 + rr - ret - rel))


def bin_g(m: RelevanceMatrix, _: Any = None) -> np.ndarray:
    """Binary G: each relevant hit discounted by log2(2 + non-relevant hits above it), over R."""
    rel = m.relevant
    above = np.arange(1, _depth(m) + 1)[None, :] - np.cumsum(rel, axis=1)
    terms = np.where(rel, 1.0 / np.log2(2.0 + above), 0.0)
    return np.where(rel.any(axis=1), _safe_div(_seqsum(terms), m.n_relevant), 0.0)


def relative_p(m: RelevanceMatrix, k: int) -> np.ndarray:
    """Relevant in the top k over min(k, R)."""
    return _safe_div(m.relevant[:, :k].sum(axis=1).astype(np.float64), np.minimum(float(k), m.n_relevant))


def set_p(m: RelevanceMatrix, _: Any = None) -> np.ndarray:
    """Relevant retrieved over retrieved."""
    return _safe_div(num_rel_ret(m), m.n_retrieved.astype(np.float64))


def set_relative_p(m: RelevanceMatrix, _: Any = None) -> np.ndarray:
    """Relevant retrieved over min(retrieved, R)."""
    return _safe_div(num_rel_ret(m), np.minimum(m.n_retrieved, m.n_relevant).astype(np.float64))


def set_map(m: RelevanceMatrix, _: Any = None) -> np.ndarray:
    """set_P x set_recall."""
    rr = num_rel_ret(m)
    return _safe_div(rr * rr, m.n_retrieved * m.n_relevant)


def set_f(m: RelevanceMatrix, _: Any = None) -> np.ndarray:
    """F1 of set_P and set_recall (trec_eval's default beta 1)."""
    rr = num_rel_ret(m)
    p, r = set_p(m), _safe_div(rr, m.n_relevant)
    return _safe_div(2.0 * p * r, np.where(rr > 0, 1.0 * p + r, 0.0))


def unj(m: RelevanceMatrix, k: int) -> np.ndarray:
    """Share of the top k (k in the denominator) not judged, or judged < 0."""
    return np.asarray(_unjudged(m)[:, :k].sum(axis=1) / float(k))


def _persistence(m: RelevanceMatrix, p: float) -> np.ndarray:
    """p^0, p^1, ... multiplied out one rank at a time as trec_eval does, one column past the depth."""
    return np.concatenate([[1.0], np.cumprod(np.full(_depth(m), p))])


def rbp_resid(m: RelevanceMatrix, _: Any = None, p: float = 0.9) -> np.ndarray:
    """Rank-biased precision's residual: what unjudged hits and the unretrieved tail could add (0 if none)."""
    powers = _persistence(m, p)
    unjudged = _unjudged(m)
    tail = powers[m.n_retrieved.astype(np.int64)]
    return np.where(unjudged.any(axis=1), tail + (1 - p) * _seqsum(np.where(unjudged, powers[:-1], 0.0)), 0.0)


def relstring(m: RelevanceMatrix, n: int = 10) -> list[str]:
    """trec_eval's relstring (text, not a figure): the top n hits' grades, `>` above 9, `-` not judged, `.` < 0."""
    def char(rel: int) -> str:
        return ">" if rel > 9 else str(rel) if rel >= 0 else "-" if rel == NOT_JUDGED else "."

    return ["".join(char(int(r)) for r in row[:n] if r != PAST_END) for row in m.rels]

"""Reciprocal Rank Fusion (Cormack, Clarke & Büttcher, SIGIR 2009).

score(d) = sum over lists of 1 / (k + rank(d)), rank starting at 1, k = 60 by default.
Ties are broken deterministically: by best (smallest) rank in any list, then by id.
"""
from __future__ import annotations

from typing import Sequence

from harness.types import Hit

RRF_K = 60


def rrf_scores(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> dict[str, float]:
    """Fused score per id from ranked id lists (best first)."""
    if k < 0:
        raise ValueError("k must be non-negative")
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc_id in enumerate(ranking, start=1):
            scores[doc_id] = scores.get(doc_id, 0.0) + 1.0 / (rank + k)
    return scores


def reciprocal_rank_fusion(result_sets: Sequence[Sequence[Hit]], k: int = RRF_K) -> list[Hit]:
    """Fuse ranked hit lists into one list of hits scored by RRF, best first.

    Each fused hit keeps the text/metadata of its first occurrence and records in
    `metadata['rrf_ranks']` the rank it had in each list (None where absent).
    """
    ids = [[h.id for h in hits] for hits in result_sets]
    scores = rrf_scores(ids, k)
    first: dict[str, Hit] = {}
    best_rank: dict[str, int] = {}
    ranks: dict[str, list[int | None]] = {d: [None] * len(result_sets) for d in scores}
    for li, hits in enumerate(result_sets):
        for rank, h in enumerate(hits, start=1):
            first.setdefault(h.id, h)
            best_rank[h.id] = min(best_rank.get(h.id, rank), rank)
            if ranks[h.id][li] is None:
                ranks[h.id][li] = rank
    order = sorted(scores, key=lambda d: (-scores[d], best_rank[d], d))
    return [Hit(id=d, score=scores[d], text=first[d].text,
                metadata={**first[d].metadata, "rrf_ranks": ranks[d]}) for d in order]

"""Reciprocal Rank Fusion by hand: scores, order, tie-breaking, provenance of the fused hits."""
from __future__ import annotations

import pytest

from harness.retrieval.rank_fusion import RRF_K, reciprocal_rank_fusion, rrf_scores
from harness.types import Hit

pytestmark = pytest.mark.unit


def _hits(ids, tag):
    return [Hit(d, 10.0 - i, f"{d} from {tag}", {"list": tag}) for i, d in enumerate(ids)]


def test_fused_scores_order_and_ranks_by_hand():
    a, b = _hits(["x", "y", "z"], "a"), _hits(["z", "w", "x"], "b")
    fused = reciprocal_rank_fusion([a, b], k=60)
    expected = {"x": 1 / 61 + 1 / 63, "z": 1 / 63 + 1 / 61, "y": 1 / 62, "w": 1 / 62}
    assert {h.id: h.score for h in fused} == pytest.approx(expected)
    # x and z tie on score and best rank (1): id breaks it; y and w tie on score and best rank (2): id again
    assert [h.id for h in fused] == ["x", "z", "w", "y"]
    assert [h.metadata["rrf_ranks"] for h in fused] == [[1, 3], [3, 1], [None, 2], [2, None]]
    assert fused[0].text == "x from a" and fused[1].text == "z from a" and fused[1].metadata["list"] == "a"
    assert fused[2].text == "w from b"


def test_best_rank_breaks_score_ties_before_the_id():
    lists = [["z", "b"], ["q", "b"]]  # k = 0: z = 1, q = 1, b = 1/2 + 1/2 = 1
    assert rrf_scores(lists, k=0) == {"z": 1.0, "q": 1.0, "b": 1.0}
    fused = reciprocal_rank_fusion([_hits(x, str(i)) for i, x in enumerate(lists)], k=0)
    assert [h.id for h in fused] == ["q", "z", "b"]  # best rank 1 before best rank 2, then by id (b would be first)


def test_equal_scores_with_different_best_ranks():
    # p: ranks 2 and 2 -> 2/(k+2); o: rank 1 and absent, plus rank 3 in a third list: 1/(k+1) + 1/(k+3)
    k = 1
    lists = [["o", "p"], ["n", "p"], ["m", "l", "o"]]
    s = rrf_scores(lists, k)
    assert s["p"] == pytest.approx(2 / 3) and s["o"] == pytest.approx(1 / 2 + 1 / 4)
    fused = reciprocal_rank_fusion([_hits(x, str(i)) for i, x in enumerate(lists)], k)
    assert [h.id for h in fused] == ["o", "p", "m", "n", "l"]  # o 0.75 > p 0.667 > m, n (0.5, best rank 1) > l


def test_duplicate_in_one_list_keeps_its_first_rank():
    fused = reciprocal_rank_fusion([_hits(["x", "y", "x"], "a")], k=60)
    x = next(h for h in fused if h.id == "x")
    assert x.metadata["rrf_ranks"] == [1] and x.score == pytest.approx(1 / 61 + 1 / 63)


def test_k_defaults_to_60_and_must_be_non_negative():
    assert RRF_K == 60 and rrf_scores([["a"]]) == {"a": pytest.approx(1 / 61)}
    assert rrf_scores([["a", "b"]], k=0) == {"a": 1.0, "b": 0.5}
    with pytest.raises(ValueError, match="k must be non-negative"):
        rrf_scores([["a"]], k=-1)
    assert reciprocal_rank_fusion([]) == [] and reciprocal_rank_fusion([[], []]) == []

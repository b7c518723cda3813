"""Ranking and text metrics against hand-computed values and an independent scorer (pytrec_eval)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from harness.metrics import (
    average_precision, edit_distance, evaluate, exact_match, hit_rate, jaccard, mean_pairwise_jaccard, mrr, ndcg,
    normalize_answer, parse_measure, precision, recall, token_f1,
)

pytestmark = pytest.mark.unit

QRELS = {"q1": {"a": 2, "c": 1, "z": 3}, "q2": {"b": 1}}
RUN = {"q1": ["a", "b", "c", "d"], "q2": ["x", "y"]}


def test_hand_computed_small_case():
    # q1: relevant a (2) at rank 1, c (1) at rank 3; z (3) never retrieved. q2: nothing found.
    assert recall(QRELS, RUN, 3).tolist() == [2 / 3, 0.0]
    assert precision(QRELS, RUN, 4).tolist() == [0.5, 0.0]
    assert hit_rate(QRELS, RUN, 1).tolist() == [1.0, 0.0]
    assert mrr(QRELS, RUN, 10).tolist() == [1.0, 0.0]
    dcg = 2 / math.log2(2) + 1 / math.log2(4)
    idcg = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    assert ndcg(QRELS, RUN, 10)[0] == pytest.approx(dcg / idcg, abs=1e-15)
    assert average_precision(QRELS, RUN, 10)[0] == pytest.approx((1 / 1 + 2 / 3) / 3, abs=1e-15)


def test_score_dict_runs_follow_trec_eval_tie_order():
    run = {"q1": {"a": 1.0, "c": 1.0, "b": 0.5}}
    # trec_eval: ties by docid descending -> c before a
    assert mrr({"q1": {"a": 1}}, run, 10).tolist() == [0.5]


def test_parse_measure_and_evaluate():
    assert str(parse_measure("ndcg@10")) == "nDCG@10"
    with pytest.raises(ValueError, match="unknown measure"):
        parse_measure("bleu@4")
    out = evaluate(QRELS, RUN, ["Recall@3", "MRR@10"])
    assert out["Recall@3"].tolist() == [2 / 3, 0.0]


@pytest.mark.spec("RETR-METRICS-INDEPENDENT")
def test_agree_with_pytrec_eval_on_random_runs(rag_check):
    pytrec_eval = pytest.importorskip("pytrec_eval", reason="pip install pytrec-eval-terrier (the dev extra)")
    rng = np.random.default_rng(7)
    qrels, run = {}, {}
    for q in range(300):
        docs = [f"d{i}" for i in rng.choice(200, size=60, replace=False)]
        judged = docs[: rng.integers(1, 25)]
        qrels[f"q{q}"] = {d: int(rng.integers(1, 4)) for d in judged[: max(1, len(judged) // 2)]}
        run[f"q{q}"] = {d: float(s) for d, s in zip(docs[10:] + judged, rng.random(len(docs[10:]) + len(judged)))}
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.10", "recall.100", "recip_rank",
                                                "map_cut.100", "P.5"})
    ref = ev.evaluate(run)
    ours = evaluate(qrels, run, ["nDCG@10", "Recall@10", "Recall@100", "MRR@1000", "MAP@100", "P@5"])
    names = {"nDCG@10": "ndcg_cut_10", "Recall@10": "recall_10", "Recall@100": "recall_100",
             "MRR@1000": "recip_rank", "MAP@100": "map_cut_100", "P@5": "P_5"}
    qids = sorted(qrels)
    worst = max(abs(ours[m][i] - ref[q][names[m]]) for m in names for i, q in enumerate(qids))
    rag_check("RETR-METRICS-INDEPENDENT", worst, n=len(qids) * len(names))


def test_squad_normalisation_em_f1():
    assert normalize_answer("The  Cat, sat!") == "cat sat"
    assert exact_match("the Cat sat.", ["cat sat", "dog"]) == 1.0
    assert token_f1("cat sat on mat", "the cat sat") == pytest.approx(2 * (2 / 4) * (2 / 2) / (2 / 4 + 2 / 2))
    assert token_f1("", "") == 1.0 and token_f1("x", "") == 0.0


def test_jaccard_and_edit_distance():
    assert jaccard("a b c", "b c d") == 0.5
    assert mean_pairwise_jaccard(["a b", "a b", "c d"]) == pytest.approx((1 + 0 + 0) / 3)
    assert edit_distance("kitten", "sitting") == 3
    assert edit_distance(["a", "b"], ["a", "c", "b"]) == 1
    assert edit_distance("", "abc") == 3


def test_answer_match():
    from harness.metrics import answer_match

    assert answer_match("He was born in Paris, France.", ["paris"]) == 1.0
    assert answer_match("Parisian food", ["Paris"]) == 0.0
    assert answer_match("", ["x"]) == 0.0

"""Every ranking measure at several cutoffs against pytrec_eval (an independent scorer), with graded and negative
judgements, tied scores, short runs and queries missing from the run; text metrics against hand-computed values.
Written against the mutants `scripts/mutation.sh` found surviving."""
from __future__ import annotations

import numpy as np
import pytest

from harness.metrics import _ranking as ranking
from harness.metrics._registry import Measure, evaluate, mean_scores, parse_measure
from harness.metrics._text import answer_match, edit_distance, exact_match, token_count, token_f1

pytestmark = pytest.mark.unit
PYTREC = {"ndcg": "ndcg_cut_{k}", "recall": "recall_{k}", "p": "P_{k}", "map": "map_cut_{k}"}


def _data(seed: int):
    rng = np.random.default_rng(seed)
    docs = [f"d{i:02d}" for i in range(40)]
    qrels, run = {}, {}
    for q in range(25):
        judged = rng.choice(docs, size=int(rng.integers(1, 12)), replace=False)
        qrels[f"q{q}"] = {d: int(g) for d, g in zip(judged, rng.integers(-1, 4, size=len(judged)))}
        if q % 7 == 3:
            continue  # absent from the run: scores 0
        hits = rng.choice(docs, size=int(rng.integers(0, 30)), replace=False)
        run[f"q{q}"] = {d: float(rng.integers(0, 6)) for d in hits}  # many tied scores: docid breaks the tie
    return qrels, run


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("k", [1, 3, 5, 10, 20])
def test_every_measure_agrees_with_pytrec_eval(seed, k):
    pytrec_eval = pytest.importorskip("pytrec_eval", reason="pip install pytrec-eval-terrier (the dev extra)")
    qrels, run = _data(seed)
    names = {name: tmpl.format(k=k) for name, tmpl in PYTREC.items()}
    ev = pytrec_eval.RelevanceEvaluator(qrels, set(names.values()))
    ref = ev.evaluate(run)
    qids = sorted(qrels)
    got = evaluate(qrels, run, [f"{n}@{k}" for n in names])
    for name, key in names.items():
        expected = np.array([ref.get(q, {}).get(key, 0.0) for q in qids])
        assert got[str(Measure(name, k))] == pytest.approx(expected, abs=1e-9), (name, k)


def test_rank_measures_by_hand_with_ties_and_missing_queries():
    qrels = {"a": {"x": 2, "y": 0, "z": 1, "w": -1}, "b": {"u": 1}, "c": {"v": 1}}
    run = {"a": {"w": 3.0, "z": 3.0, "y": 2.0, "x": 1.0}, "b": ["n1", "n2", "u"], "c": []}
    # query a, trec_eval order: score desc then docid desc -> z, w, y, x
    assert ranking.order_run(run["a"]) == ["z", "w", "y", "x"]
    assert ranking.mrr(qrels, run, 10).tolist() == [1.0, 1 / 3, 0.0]
    assert ranking.hit_rate(qrels, run, 2).tolist() == [1.0, 0.0, 0.0]
    assert ranking.recall(qrels, run, 3).tolist() == [0.5, 1.0, 0.0]
    assert ranking.precision(qrels, run, 4).tolist() == [0.5, 0.25, 0.0]
    dcg = 1 / np.log2(2) + 2 / np.log2(5)
    idcg = 2 / np.log2(2) + 1 / np.log2(3)
    assert ranking.ndcg(qrels, run, 4)[0] == pytest.approx(dcg / idcg)
    assert ranking.average_precision(qrels, run, 4)[0] == pytest.approx((1 / 1 + 2 / 4) / 2)
    m = ranking.relevance_matrix(qrels, run, 3)
    assert m.query_ids == ["a", "b", "c"] and m.n_relevant.tolist() == [2, 1, 1]
    assert m.n_retrieved.tolist() == [3, 3, 0] and m.gains.tolist() == [[1, 0, 0], [0, 0, 1], [0, 0, 0]]
    assert m.ideal.tolist() == [[2, 1, 0], [1, 0, 0], [1, 0, 0]]
    assert ranking.relevance_matrix({"a": {"x": 1, "y": 1, "z": 1}}, {}, 2).ideal.tolist() == [[1, 1]]


def test_no_relevant_judgement_scores_zero_not_nan():
    qrels = {"a": {"x": 0}}
    run = {"a": ["x"]}
    for f in (ranking.recall, ranking.ndcg, ranking.average_precision, ranking.mrr):
        assert f(qrels, run, 5).tolist() == [0.0]
    assert ranking.mean(np.array([])) == 0.0 and ranking.mean(np.array([0.25, 0.75])) == 0.5


def test_measure_names_parse_and_print():
    assert [str(parse_measure(s)) for s in ("nDCG@10", "recall@5", "r@5", "P@3", "precision@3", "MRR@10",
                                             "rr@10", "map@100", "AP@100", "hit@1", "success@1", " ndcg @ 7 ")] == [
        "nDCG@10", "Recall@5", "Recall@5", "P@3", "P@3", "MRR@10", "MRR@10", "MAP@100", "MAP@100", "Hit@1", "Hit@1",
        "nDCG@7"]
    for bad in ("nDCG", "bleu@10", "ndcg@0", "@10", "ndcg@-1"):  # (`ndcg` is trec_eval's: the whole ranking)
        with pytest.raises(ValueError, match="measure"):
            parse_measure(bad)
    qrels, run = _data(3)
    m = Measure("ndcg", 5)
    assert m.per_query(qrels, run) == pytest.approx(ranking.ndcg(qrels, run, 5))
    means = mean_scores(qrels, run, ["nDCG@5", Measure("recall", 10)])
    assert means == pytest.approx({"nDCG@5": ranking.ndcg(qrels, run, 5).mean(),
                                   "Recall@10": ranking.recall(qrels, run, 10).mean()})
    assert evaluate(qrels, run, []) == {} and mean_scores({}, {}, ["nDCG@5"]) == {"nDCG@5": 0.0}


def test_text_metrics_by_hand():
    assert exact_match("The Eiffel Tower!", ["eiffel tower", "x"]) == 1.0
    assert exact_match("Eiffel", "Eiffel Tower") == 0.0 and exact_match("", []) == 0.0
    assert token_f1("the cat sat", "a cat sat down") == pytest.approx(2 * (2 / 2) * (2 / 3) / (2 / 2 + 2 / 3))
    assert token_f1("cat cat", "cat") == pytest.approx(2 * 0.5 * 1.0 / 1.5)  # repeated tokens count once each
    assert token_f1("", "") == 1.0 and token_f1("", "cat") == 0.0 and token_f1("dog", "cat") == 0.0
    assert token_f1("cat", ["dog", "the cat"]) == 1.0 and token_f1("cat", []) == 0.0
    assert edit_distance("kitten", "sitting") == 3 and edit_distance("sitting", "kitten") == 3
    assert edit_distance("", "abc") == 3 and edit_distance("abc", "") == 3 and edit_distance("abc", "abc") == 0
    assert edit_distance(["a", "b", "c"], ["a", "c"]) == 1 and edit_distance("ab", "ba") == 2
    assert edit_distance("flaw", "lawn") == 2
    assert answer_match("It was built in 1889 in Paris.", ["1889"]) == 1.0
    assert answer_match("built in 18890", "1889") == 0.0 and answer_match("anything", ["", "  "]) == 0.0
    assert answer_match("The Beatles", "beatles") == 1.0
    assert token_count("one two  three") == 3

    class Chars:
        def encode(self, text):
            return list(text)

    assert token_count("abc d", Chars()) == 5

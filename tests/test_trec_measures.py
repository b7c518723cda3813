"""trec_eval's measures (harness.metrics.trec, trec_gains) against values worked out by hand on three queries:
one with graded, judged non-relevant, unjudged-in-pool and unjudged hits; one judged only non-relevant; one
missing from the run. Measure names parse from trec_eval's spelling; summaries are trec_eval's `all`."""
from __future__ import annotations

import math

import numpy as np
import pytest

from harness.metrics import trec, trec_gains
from harness.metrics._ranking import relevance_matrix
from harness.metrics._registry import Measure, evaluate, parse_measure, parse_measures, summarize

pytestmark = pytest.mark.unit
P = 0.9
# q1: R = 3 (a, b, e); c, k judged non-relevant; d judged -1 (in the pool, unjudged); x not judged.
QRELS = {"q1": {"a": 2, "b": 1, "c": 0, "d": -1, "e": 1, "k": 0}, "q2": {"f": 0}, "q3": {"h": 1}}
RUN = {"q1": ["a", "c", "x", "d", "b"], "q2": ["f", "g"], "q4": ["h"]}  # q1 ranks: 2 0 - . 1; q3 missing
L2, L3, L5, L6 = math.log2(2), math.log2(3), math.log2(5), math.log2(6)
NDCG = (2 / L2 + 1 / L6) / (2 / L2 + 1 / L3 + 1 / 2)


def _m(level: int = 1):
    return relevance_matrix(QRELS, RUN, 6, level)


def _q1(values: np.ndarray) -> float:
    return float(values[0])


def test_matrix_holds_trec_evals_judgements():
    m = _m()
    assert m.query_ids == ["q1", "q2", "q3"] and m.rels[0].tolist() == [2, 0, -1, -2, 1, -3]
    assert m.level_counts.tolist() == [[2, 2, 1], [1, 0, 0], [0, 1, 0]] and m.n_relevant.tolist() == [3, 0, 1]
    assert trec.relstring(m) == ["20-.1", "0-", ""] and trec.relstring(m, 2) == ["20", "0-", ""]


def test_counts_and_set_measures():
    m = _m()
    assert trec.num_ret(m).tolist() == [5, 2, 0] and trec.num_rel(m).tolist() == [3, 0, 1]
    assert trec.num_rel_ret(m).tolist() == [2, 0, 0] and trec.num_nonrel_judged_ret(m).tolist() == [1, 1, 0]
    assert trec.num_nonrel_judged_ret(_m(2)).tolist() == [2, 1, 0]  # at level 2, b (1) is judged non-relevant
    assert trec.set_p(m).tolist() == [0.4, 0.0, 0.0] and trec.set_relative_p(m)[0] == pytest.approx(2 / 3)
    assert trec.set_map(m)[0] == pytest.approx(4 / 15) and trec.set_f(m)[0] == pytest.approx(0.5)
    assert trec.relative_p(m, 2).tolist() == [0.5, 0.0, 0.0] and trec.relative_p(m, 5)[0] == pytest.approx(2 / 3)
    assert trec.utility(m, (1, -1, 0, 0)).tolist() == [-1.0, -2.0, 0.0]
    assert trec.utility(m, (2, -1, 0.5, 0)).tolist() == [1.5, -2.0, 0.5]
    assert trec.unj(m, 5).tolist() == [0.4, 0.2, 0.0] and trec.unj(m, 10).tolist() == [0.2, 0.1, 0.0]


def test_precision_family():
    m = _m()
    assert _q1(trec.gm_map(m)) == pytest.approx((1 / 1 + 2 / 5) / 3)
    assert trec.rprec(m).tolist() == pytest.approx([1 / 3, 0, 0])
    assert trec.bpref(m).tolist() == [0.5, 0.0, 0.0]  # a: 1; b: 1 - min(1, 3) / min(2 non-relevant, 3)
    assert trec.bpref(_m(2)).tolist() == [1.0, 0.0, 0.0]
    # precision at ranks 1..5: 1, 1/2, 1/3, 1/4, 2/5; lround(0.5 * 3) = 2 (halves away from zero)
    expected = {0.0: 1.0, 0.3: 1.0, 0.4: 1.0, 0.5: 0.4, 0.8: 0.4, 0.9: 0.0, 1.0: 0.0}
    for level, value in expected.items():
        assert trec.iprec_at_recall(m, level).tolist() == [pytest.approx(value), 0.0, 0.0], level
    assert _q1(trec.eleven_pt_avg(m, tuple(i / 10 for i in range(11)))) == pytest.approx((5 + 4 * 0.4) / 11)
    assert _q1(trec.eleven_pt_avg(m, (0.25, 0.5))) == pytest.approx((1.0 + 0.4) / 2)
    # a at rank 1: 1; b at rank 5: 1/5 + 4/5 * (1 rel + 1 nonrel + 1 pool above) / 4 * (1 + e) / (1 + 1 + 2e)
    assert trec.infap(m)[0] == pytest.approx((1 + 0.2 + 0.8 * 0.75 * 0.5) / 3, abs=1e-6)
    assert trec.rprec_mult(m, 0.2).tolist() == [1.0, 0.0, 0.0]  # int(0.2 * 3 + 0.9) = 1
    assert trec.rprec_mult(m, 1.0)[0] == pytest.approx(1 / 3) and trec.rprec_mult(m, 2.0)[0] == pytest.approx(2 / 6)
    assert trec.bin_g(m)[0] == pytest.approx((1 / L2 + 1 / L5) / 3)


def test_graded_measures():
    m = _m()
    assert trec_gains.ndcg_gains(m, ())[0] == pytest.approx(NDCG)
    # gain 3 for grade 1: a (2) b (1) at ranks 1 and 5; ideal 3, 3, 2
    assert trec_gains.ndcg_gains(m, ((1, 3.0),))[0] == pytest.approx((2 + 3 / L6) / (3 + 3 / L3 + 2 / 2))
    assert trec_gains.ndcg_rel(m)[0] == pytest.approx((1 + NDCG + (3 - 2) * NDCG) / 3)
    # ideal gains 2, 1, 1 drop after ranks 1 and 3; 5 hits > 3 + 1, so the whole ranking's nDCG counts too
    assert trec_gains.rndcg(m)[0] == pytest.approx((1 + 2 / (2 + 1 / L3 + 1 / 2) + NDCG) / 3)
    # cost per rank max(ideal gain, 1): 2, 1, 1, 1, 1; gain so far 2, 2, 2, 2, 3; ideal total 4
    assert trec_gains.g(m)[0] == pytest.approx((2 / math.log2(2 + 2 - 2) + 1 / math.log2(2 + 6 - 3)) / 4)
    assert trec_gains.rbp(m)[0] == pytest.approx((1 - P) * (2 / 2 + (1 / 2) * P ** 4))  # top grade 2: gains / 2
    assert trec.rbp_resid(m).tolist() == pytest.approx([P ** 5 + (1 - P) * (P ** 2 + P ** 3), P ** 2 + (1 - P) * P,
                                                        0.0])
    for f in (trec_gains.ndcg_rel, trec_gains.rndcg, trec_gains.g, trec_gains.rbp):
        assert f(m)[1:].tolist() == [0.0, 0.0], f.__name__


def test_rndcg_averages_the_whole_ranking_in_only_past_one_extra_hit():
    # m_Rndcg.c leaves its first loop one hit past the ideal ranking's end: with only one hit more, no last term
    for run, expected in ((["z", "a"], 0.0), (["z", "a", "y"], (0 + 1 / L3) / 2)):
        m = relevance_matrix({"q": {"a": 1}}, {"q": run}, len(run))
        assert trec_gains.rndcg(m)[0] == pytest.approx(expected), run


def test_trec_names_parse_to_one_measure_each():
    cases = {"P_10": "P@10", "recall_5": "Recall@5", "ndcg_cut_23": "nDCG@23", "map_cut_5": "MAP@5",
             "success_1": "Hit@1", "map": "map", "recip_rank": "recip_rank", "ndcg": "ndcg",
             "set_recall": "set_recall", "bpref": "bpref", "Rprec": "Rprec", "Rprec_mult_0.2": "Rprec_mult_0.20",
             "iprec_at_recall_0.10": "iprec_at_recall_0.10", "relative_P_5": "relative_P_5", "unj_20": "unj_20",
             "utility": "utility", "utility_1,-1,0,0": "utility", "utility_2,-1,0,0": "utility_2,-1,0,0",
             "11pt_avg_.25,.5,.75": "11pt_avg_0.25,0.5,0.75", "ndcg_1=3,2=9,4=4.5": "ndcg_1=3,2=9,4=4.5",
             "ndcg_rel": "ndcg_rel", "gm_map": "gm_map"}
    assert {k: str(parse_measure(k)) for k in cases} == cases
    assert parse_measure("P_10") == Measure("p", 10) and parse_measure("map") == Measure("map")
    for bad in ("NDCG", "nDCG", "P_0", "P_x", "utility_1,2", "ndcg_-1=3", "bpref_5", "iprec_at_recall_x", "relstring"):
        with pytest.raises(ValueError, match="measure"):
            parse_measure(bad)
    assert parse_measures(["map", "official", "map"])[:2] == [Measure("map"), Measure("num_ret")]


def test_whole_ranking_measures_through_evaluate():
    got = evaluate(QRELS, RUN, ["map", "recip_rank", "ndcg", "set_recall", "P_2", "bpref"])
    assert got["map"].tolist() == pytest.approx([1.4 / 3, 0, 0]) and got["recip_rank"].tolist() == [1.0, 0, 0]
    assert got["ndcg"][0] == pytest.approx(NDCG) and got["set_recall"][0] == pytest.approx(2 / 3)
    assert got["P@2"].tolist() == [0.5, 0.0, 0.0] and got["bpref"].tolist() == [0.5, 0.0, 0.0]
    regained = evaluate(QRELS, RUN, ["ndcg", "ndcg_1=3"])  # one name each: the gain map is its own measure
    assert regained["ndcg_1=3"][0] == pytest.approx((2 + 3 / L6) / (3 + 3 / L3 + 2 / 2))
    assert regained["ndcg"][0] == pytest.approx(NDCG)
    # grade 0 worth 1: c and k join the ideal ranking (2, 1, 1, 1, 1), deeper than the run's one hit
    zero = evaluate(QRELS, {"q1": ["a"]}, ["ndcg_0=1"])["ndcg_0=1"][0]
    assert zero == pytest.approx(2 / (2 + 1 / L3 + 1 / 2 + 1 / L5 + 1 / L6))
    assert evaluate(QRELS, RUN, ["map"], level=2)["map"].tolist() == [1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="relevance level"):
        evaluate(QRELS, RUN, ["map"], level=-1)


def test_summaries_as_trec_evals_all_line():
    values = np.array([0.5, 0.0, 0.25])
    assert summarize(values) == 0.25 and summarize(values, "sum") == 0.75 and summarize(np.array([]), "sum") == 0.0
    assert summarize(values, "geometric") == pytest.approx((0.5 * 1e-5 * 0.25) ** (1 / 3))
    assert parse_measure("gm_bpref").aggregate == "geometric" and parse_measure("num_ret").aggregate == "sum"
    assert parse_measure("P_5").aggregate == "mean"


# pytrec_eval's trec_eval predates 10: it rounds iprec_at_recall's and 11pt_avg's cutoff as int(x R + 0.9) where 10
# (whose published files tests/test_trec_eval_files.py matches) uses lround, and it keeps gm_*'s per-query log
PYTREC_NAMES = ["map", "Rprec", "bpref", "recip_rank", "infAP", "binG", "G", "ndcg", "ndcg_rel", "Rndcg", "set_P",
                "set_relative_P", "set_recall", "set_map", "set_F", "num_nonrel_judged_ret", "num_rel", "num_rel_ret",
                "num_ret", "utility", "P_5", "recall_10", "ndcg_cut_10", "map_cut_10", "relative_P_5", "success_1",
                "Rprec_mult_0.20", "Rprec_mult_1.00", "Rprec_mult_2.00"]


@pytest.mark.parametrize("seed", range(8))
def test_agree_with_pytrec_eval_on_random_graded_runs(seed):
    pytrec_eval = pytest.importorskip("pytrec_eval", reason="pip install pytrec-eval-terrier (the dev extra)")
    rng = np.random.default_rng(seed)
    docs = [f"d{i:02d}" for i in range(40)]
    qrels, run = {}, {}
    for q in range(12):
        judged = rng.choice(docs, size=int(rng.integers(1, 15)), replace=False)
        grades = rng.integers(-1, 4, size=len(judged))
        grades[0] = max(grades[0], 0)  # a query judged only < 0 sends pytrec_eval into an endless loop
        qrels[f"q{q}"] = {str(d): int(g) for d, g in zip(judged, grades)}
        run[f"q{q}"] = {str(d): float(rng.integers(0, 8)) for d in rng.choice(docs, size=int(rng.integers(1, 30)),
                                                                             replace=False)}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"all_trec"}).evaluate(run)
    got = evaluate(qrels, run, PYTREC_NAMES)
    for name in PYTREC_NAMES:
        theirs = [ref[q][name] for q in sorted(qrels)]
        assert got[str(parse_measure(name))] == pytest.approx(theirs, abs=1e-12), name

"""The whole-matrix relevance join (issue #29 item 6) equal to pytrec_eval to 1e-12 on the cases a vectorised
sort or join gets wrong: tied scores (docid descending breaks them), hits without judgements, queries with no
relevant document, graded and negative grades, queries only in the run or only in the qrels, runs shorter than the
cutoff; and cell for cell equal to a query-at-a-time join where pytrec_eval cannot follow (nan scores, ranked lists,
-0.0). The lean TREC readers equal the line-by-line ones; `interleaved_best` against a scripted clock."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from harness.data.trec import _lean, read_trec_qrels, read_trec_run
from harness.metrics import _ranking as ranking
from harness.metrics._registry import evaluate
from harness.stats.latency import interleaved_best

pytestmark = pytest.mark.unit
MEASURES = {"nDCG@10": "ndcg_cut_10", "Recall@10": "recall_10", "Recall@100": "recall_100", "MAP@100": "map_cut_100",
            "nDCG@3": "ndcg_cut_3", "P@5": "P_5"}


def _tricky(seed: int):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(40):
        docs = [f"d{i}" for i in rng.choice(300, 60, replace=False)]
        qid = f"q{q}"
        if q % 9 != 4:  # q4, q13, ...: only in the run
            grades = rng.integers(-1, 4, 15)
            if q % 5 == 0:
                grades = np.minimum(grades, 0)  # nothing relevant (one judged >= 0: pytrec_eval needs it)
                grades[0] = 0
            qrels[qid] = {d: int(g) for d, g in zip(docs[20:35], grades)}  # some retrieved, some not
        if q % 7 != 2:  # q2, q9, ...: only in the qrels
            n = int(rng.integers(0, 60)) if q % 3 else int(rng.integers(0, 6))  # often shorter than the cutoff
            run[qid] = {d: float(s) for d, s in zip(docs[:n], rng.integers(0, 4, n) / 4)}  # ties everywhere
    return qrels, run


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_query_equals_pytrec_eval_to_1e_12(seed):
    pytrec_eval = pytest.importorskip("pytrec_eval", reason="pip install pytrec-eval-terrier (the dev extra)")
    qrels, run = _tricky(seed)
    ours = evaluate(qrels, run, [*MEASURES, "MRR@10"])
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {*MEASURES.values(), "recip_rank"}).evaluate(run)
    top10 = {q: dict(itertools.islice(((d, hits[d]) for d in ranking.order_run(hits)), 10)) for q, hits in run.items()}
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top10)
    qids = sorted(qrels)
    assert any(q not in run for q in qids) and any(q not in qrels for q in run)
    assert any(all(g < 1 for g in qrels[q].values()) for q in qids)
    for i, q in enumerate(qids):
        ref = {**theirs.get(q, {}), "mrr": rr.get(q, {}).get("recip_rank", 0.0)}
        for ours_name, key in [*MEASURES.items(), ("MRR@10", "mrr")]:
            expected = ref.get(key, 0.0) if q in run else 0.0  # absent from the run: 0, as trec_eval -c
            assert abs(ours[ours_name][i] - expected) <= 1e-12, (q, ours_name, ours[ours_name][i], expected)


def test_ties_by_hand():
    qrels = {"a": {"b": 1, "a": 2, "c": 0}}
    run = {"a": {"a": 0.5, "b": 0.5, "c": 0.5, "zz": 0.9}}  # trec_eval order: zz, c, b, a
    m = ranking.relevance_matrix(qrels, run, 4)
    assert m.rels.tolist() == [[ranking.NOT_JUDGED, 0, 1, 2]]
    assert ranking.mrr(qrels, run, 10).tolist() == [1 / 3]


def _one_query_at_a_time(qrels, run, depth, level=1):
    """The join as it was written before it was vectorised: each query ranked with `order_run`, then looked up."""
    qids = sorted(qrels)
    rels = np.full((len(qids), depth), ranking.PAST_END, dtype=np.int64)
    ideal = np.zeros((len(qids), depth))
    top = max((g for q in qids for g in qrels[q].values()), default=0)
    counts = np.zeros((len(qids), max(top, 0) + 1), dtype=np.int64)
    n_rel, n_ret = np.zeros(len(qids)), np.zeros(len(qids))
    for i, q in enumerate(qids):
        hits = run.get(q, [])
        ranked = (ranking.order_run(hits) if isinstance(hits, dict) else list(hits))[:depth]
        n_ret[i] = len(ranked)
        grades = [qrels[q].get(d) for d in ranked]
        rels[i, :len(ranked)] = [ranking.NOT_JUDGED if g is None else g if g >= 0 else ranking.UNJUDGED for g in grades]
        positive = sorted((g for g in qrels[q].values() if g > 0), reverse=True)[:depth]
        ideal[i, :len(positive)] = positive
        n_rel[i] = sum(g >= level for g in qrels[q].values())
        counts[i] = np.bincount([g for g in qrels[q].values() if g >= 0], minlength=counts.shape[1])
    return rels, ideal, counts, n_rel, n_ret


@pytest.mark.parametrize("depth", [0, 1, 4, 10, 70])
@pytest.mark.parametrize("level", [0, 1, 2])
def test_matrix_equals_the_query_at_a_time_join(depth, level):
    rng = np.random.default_rng(depth * 10 + level)
    qrels, run = _tricky(depth + level)
    special = [float("nan"), -0.0, 0.0, float("-inf"), float("inf")]
    for n, q in enumerate(sorted(run)):
        if n % 4 == 1:
            run[q] = list(run[q])[::-1] + list(run[q])[:2]  # a ranked list, a docid twice
        elif n % 4 == 2:
            run[q] = {d: special[int(rng.integers(0, 5))] for d in run[q]}  # nan, signed zeros, infinities
    m = ranking.relevance_matrix(qrels, run, depth, level)
    rels, ideal, counts, n_rel, n_ret = _one_query_at_a_time(qrels, run, depth, level)
    assert np.array_equal(m.rels, rels) and np.array_equal(m.ideal, ideal) and np.array_equal(m.level_counts, counts)
    assert np.array_equal(m.n_relevant, n_rel) and np.array_equal(m.n_retrieved, n_ret)
    assert np.array_equal(m.gains, np.maximum(rels, 0))


def test_docids_with_nul_or_not_strings_tie_in_python_order():
    assert ranking.relevance_matrix({"q": {"a": 1}}, {"q": {"a\x00": 1.0, "a": 1.0, "b": 2.0}}, 3).rels.tolist() \
        == [[ranking.NOT_JUDGED, ranking.NOT_JUDGED, 1]]  # b, then "a\x00" > "a"
    assert ranking.relevance_matrix({"q": {10: 1}}, {"q": {9: 1.0, 10: 1.0}}, 2).rels.tolist() \
        == [[1, ranking.NOT_JUDGED]]  # 10 > 9


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_lean_readers_read_what_the_line_by_line_ones_read(tmp_path):
    run = _write(tmp_path, "r.run", "q2 Q0 b 1 2.5 t\nq2 Q0 a 2 1 t\n\nq1 Q0 c 1 -3e2 t\nq2 Q0 z 3 0 t\n")
    got = read_trec_run(run)
    assert got == {"q2": {"b": 2.5, "a": 1.0, "z": 0.0}, "q1": {"c": -300.0}}
    assert list(got) == ["q2", "q1"] and list(got["q2"]) == ["b", "a", "z"]
    assert _lean(run, 6, 2, 4, float) == got
    qrels = _write(tmp_path, "q.qrels", "q1 0 a 1\nq1 0 b -1\nq2 0 a 2\n")
    assert read_trec_qrels(qrels) == _lean(qrels, 4, 2, 3, int) == {"q1": {"a": 1, "b": -1}, "q2": {"a": 2}}


@pytest.mark.parametrize("text", ["# a comment\nq1 Q0 a 1 1.0 t\n", "#c Q0 a 1 1.0 t\nq1 Q0 a 1 1.0 t\n",
                                  "q1 Q0 a 1 1.0 t extra\n", "q1 Q0 a 1 high t\n", "q1 Q0 a 1 1.0 t\nq1 Q0 a 2 0.5 t\n"])
def test_lean_reader_leaves_irregular_lines_to_the_line_by_line_one(tmp_path, text):
    assert _lean(_write(tmp_path, "r.run", text), 6, 2, 4, float) is None


def test_lean_run_with_a_nan_score_is_still_an_error(tmp_path):
    from harness.data import DataError

    with pytest.raises(DataError, match="not a finite number"):
        read_trec_run(_write(tmp_path, "r.run", "q1 Q0 a 1 1.0 t\nq1 Q0 b 2 nan t\n"))
    assert read_trec_run(_write(tmp_path, "s.run", "# c\nq1 Q0 a 1 1.0 t x\n")) == {"q1": {"a": 1.0}}


def test_interleaved_best_alternates_and_keeps_the_shortest():
    ticks = iter([0, 5, 5, 7, 7, 10, 10, 13, 13, 15, 15, 19])  # B 5, C 2 | C 3, B 3 | B 2, C 4
    order = []
    best = interleaved_best(lambda: order.append("b"), lambda: order.append("c"), 3, clock=lambda: next(ticks))
    assert best == (2, 2) and order == ["b", "c", "c", "b", "b", "c"]

"""The protocol's technique claims over dense retrieval (HYDE-003, BENCH-HYDE-CONTRIEVER, RAGF-004, QRW-003: `_compare`
in harness/protocol/test_protocol_techniques.py) score each query in the order it was drawn. So the outcomes a look
records, cut at an earlier look, give that look's effect (what a replay of the row, or a budget that had stopped it
there, reads), and the per-query table names each query with its own two scores. Scored in query-id order, as
`evaluate` returns them by default, the first ten outcomes of look 2 were not look 1's queries."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from harness.config import HarnessConfig
from harness.metrics import evaluate
from harness.protocol.test_protocol_techniques import _compare
from harness.recorded import Outcomes
from harness.stats._effect import anytime_intervals
from harness.techniques._registry import LazyArm, TechniqueResult
from harness.types import Hit, Query

pytestmark = pytest.mark.unit

N = 30
DOCS = [f"d{i:02d}" for i in range(40)]


class _Ranker:
    """A technique that returns a fixed ranking per query (no model)."""

    def __init__(self, name: str, rankings: dict[str, list[str]]) -> None:
        self.name, self.model, self.rankings = name, None, rankings

    def run_many(self, queries: list[Query]) -> list[TechniqueResult]:
        return [TechniqueResult(q.id, q.text, [Hit(d, 1.0 / (r + 1)) for r, d in enumerate(self.rankings[q.id])],
                                technique=self.name) for q in queries]


def _setting(seed: int = 5):
    """30 queries drawn in a shuffled order (not their ids' order); each has 4 relevant documents, of which the
    baseline and the candidate rank a different number in their top ten."""
    rng = np.random.default_rng(seed)
    ids = [f"q{i:02d}" for i in range(N)]
    qrels = {q: {d: 1 for d in rng.choice(DOCS, 4, replace=False)} for q in ids}

    def ranking(q: str, hits: int) -> list[str]:
        rel, other = sorted(qrels[q]), [d for d in DOCS if d not in qrels[q]]
        return rel[:hits] + other[:10 - hits]

    base = {q: ranking(q, int(rng.integers(0, 5))) for q in ids}
    cand = {q: ranking(q, int(rng.integers(0, 5))) for q in ids}
    drawn = [Query(q, f"query {q}") for q in rng.permutation(ids)]
    dataset = SimpleNamespace(name="toy", qrels=qrels, judged_queries=lambda: ids)
    return dataset, LazyArm(_Ranker("dense", base), drawn), LazyArm(_Ranker("hyde", cand), drawn), drawn


def _score(dataset: Any, arm: LazyArm, q: str, metric: str) -> float:
    """One query's score, computed alone."""
    return evaluate({q: dataset.qrels[q]}, {q: arm.upto(N).runs[q][:10]}, [metric])[metric][0]


@pytest.mark.parametrize("metric, relative", [("Recall@10", True), ("nDCG@10", False)])
def test_a_look_s_outcomes_cut_at_an_earlier_look_give_that_look_s_effect(metric, relative, tmp_path):
    """HYDE-003's relative Recall@10 and BENCH-HYDE-CONTRIEVER's nDCG@10 difference; the baseline (the dense arm
    several claims share) already drawn further by another claim."""
    dataset, base, cand, drawn = _setting()
    assert [q.id for q in drawn] != sorted(q.id for q in drawn)
    base.upto(25)
    seen: dict[str, Any] = {}

    def check_sequential(spec_id, measure_at, n_max, *, final, **context):
        seen["measure_at"], seen["final"] = measure_at, final

    config = HarnessConfig.model_validate({"harness": {"report_dir": str(tmp_path)}})
    _compare(check_sequential, "HYDE-003", dataset, base, cand, measure=lambda *a, **k: None, harness_config=config,
             metric=metric, relative=relative)
    with anytime_intervals():  # as the plugin computes every look
        looks = {n: seen["measure_at"](n, 0.95) for n in (10, 20, 30)}
        recorded = Outcomes.from_context(looks[30][1]["outcomes"])
        for n in (10, 20):
            again = recorded.upto(n).effect(0.95)
            assert (again.estimate, list(again.ci)) == (looks[n][0].estimate, list(looks[n][0].ci)), n
    # each recorded pair is the query drawn at that position: its own candidate and baseline score
    for (c, b), q in zip(recorded.values, drawn):
        assert (c, b) == pytest.approx((_score(dataset, cand, q.id, metric), _score(dataset, base, q.id, metric)))
    # the report's per-query table: each id beside its own two scores
    table = seen["final"](30)["per_query"]
    assert table["ids"] == [q.id for q in drawn]
    for q, b, c in zip(table["ids"], table["baseline"], table["candidate"]):
        assert (c, b) == pytest.approx((_score(dataset, cand, q, metric), _score(dataset, base, q, metric)), abs=1e-4)


def test_evaluate_gives_each_query_s_value_in_the_order_asked():
    qrels = {"b": {"x": 1}, "a": {"y": 1}, "c": {"x": 1, "y": 1}}
    run = {"a": ["y"], "b": ["y"], "c": ["x"]}
    assert list(evaluate(qrels, run, ["Recall@10"])["Recall@10"]) == [1.0, 0.0, 0.5]  # a, b, c: the ids' order
    assert list(evaluate(qrels, run, ["Recall@10"], order=["c", "a", "b"])["Recall@10"]) == [0.5, 1.0, 0.0]
    with pytest.raises(KeyError, match="1 queries in `order` have no judgements, e.g. 'z'"):
        evaluate(qrels, run, ["Recall@10"], order=["a", "z"])

"""`harness.e2e4_study`: the E2/E3/E4 study drawn in looks. Its draw order's every prefix is the selection
`first_of_each_type` makes; a look draws only the queries no reader has drawn, never past what it asks for; the
rows, failures and wall time add up over the batches; a later run replays each batch as measured without setting
the run up; the cost of the rest is estimated from the batches drawn."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.data.experiment import first_of_each_type, load_experiment_inputs
from harness.e2e4_study import DrawnStudy, draw_order
from harness.replay import Replay
from harness.runner import ExperimentRun

pytestmark = pytest.mark.unit
KB = Path(__file__).resolve().parents[1] / "fixtures" / "retail_kb"
QUERIES = load_experiment_inputs(KB).queries


def test_every_prefix_of_the_draw_order_is_the_selection_first_of_each_type_makes():
    order = draw_order(QUERIES)
    assert sorted(q.query_id for q in order) == sorted(q.query_id for q in QUERIES)  # each query once
    for n in (1, 2, 3, 10, 29, 30, 104, 150):
        assert {q.query_id for q in order[:n]} == {q.query_id for q in first_of_each_type(QUERIES, n)}, n
    # the first three: one of each type, in the order the types first appear
    assert [q.query_type for q in order[:3]] == ["direct", "multi_hop", "negative"]


def _study(tmp_path: Path, n: int, replay: Replay | None = None, started: list[int] | None = None) -> DrawnStudy:
    def start() -> ExperimentRun:
        if started is not None:
            started.append(1)
        return ExperimentRun(KB, tmp_path / "out", dry_run=True, log_dir=tmp_path / "logs",
                             db_uri=tmp_path / "db", overwrite=True)

    return DrawnStudy(start, draw_order(QUERIES)[:n], look_every=10, replay=replay, replay_parts={"kb": "retail"})


def test_a_look_draws_only_the_queries_not_yet_drawn_and_never_past_what_it_asks(tmp_path):
    study = _study(tmp_path, 30)
    assert study.drawn == 0 and study.seconds_to(10) is None  # nothing drawn: nothing to estimate from
    rows = study.upto(7)
    assert study.drawn == 7 and [len(b.ids) for b in study.batches] == [7]
    assert {e: [r["query_id"] for r in rs] for e, rs in rows.items()} == {
        e: [q.query_id for q in study.queries[:7]] for e in ("e2", "e3", "e4")}
    rows = study.upto(25)  # split at the look size's multiples: 7-10, 10-20, 20-25
    assert [len(b.ids) for b in study.batches] == [7, 3, 10, 5]
    assert [r["query_id"] for r in rows["e4"]] == [q.query_id for q in study.queries[:25]]
    assert study.upto(5)["e2"] == rows["e2"][:5] and study.drawn == 25  # read again: nothing drawn
    summary = study.summary()
    assert summary.written == {"e2": 25, "e3": 25, "e4": 25} and summary.failed == {"e2": [], "e3": [], "e4": []}
    assert summary.chunks > 0 and summary.seconds == pytest.approx(sum(b.wall for b in study.batches))
    # the rest at the pace of what was drawn, the run's set-up (services, index) left out
    assert study.batches[0].setup > 0 and all(b.setup == 0 for b in study.batches[1:])
    assert study.seconds_to(30) == pytest.approx((study.wall - study.batches[0].setup) / 25 * 5)
    assert study.seconds_to(20) == 0.0 and study.upto(99)["e3"][-1]["query_id"] == study.queries[29].query_id


def test_a_later_run_replays_each_batch_without_setting_the_run_up(tmp_path):
    first_started: list[int] = []
    first = _study(tmp_path / "a", 30, Replay(tmp_path / "replay"), first_started)
    drawn = first.upto(20)
    assert first_started == [1] and first.replayed_from is None
    later_started: list[int] = []
    later = _study(tmp_path / "b", 30, Replay(tmp_path / "replay"), later_started)
    assert later.upto(20) == drawn and later_started == []  # both batches replayed: no index, no model
    assert later.replayed_from is not None and later.wall == pytest.approx(first.wall)
    later.upto(30)  # the batch the first run never drew runs now
    assert later_started == [1] and later.summary().written == {"e2": 30, "e3": 30, "e4": 30}


def test_a_failed_query_counts_once_as_failed_and_has_no_row(tmp_path):
    from harness.llm.results import LLMError

    order = draw_order(QUERIES)[:10]
    bad = order[4].query_id

    def start() -> ExperimentRun:
        run = ExperimentRun(KB, tmp_path / "out", dry_run=True, log_dir=tmp_path / "logs", db_uri=tmp_path / "db",
                            overwrite=True)
        e3 = run.techniques["e3"]
        real = e3.run

        def run_or_fail(query, *a, **kw):
            if query.id == bad:
                raise LLMError("the model failed for good")
            return real(query, *a, **kw)

        e3.run = run_or_fail
        return run

    study = DrawnStudy(start, order, look_every=5)
    rows = study.upto(10)  # two batches: the failure in the first
    assert [len(b.ids) for b in study.batches] == [5, 5]
    assert bad not in [r["query_id"] for r in rows["e3"]] and len(rows["e3"]) == 9 and len(rows["e2"]) == 10
    summary = study.summary()
    assert summary.failed == {"e2": [], "e3": [bad], "e4": []}
    assert summary.written == {"e2": 10, "e3": 9, "e4": 10} and summary.not_started == 0

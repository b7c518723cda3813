"""The run's wall-time budget (`harness.budget`): parsing, the allocator's rule on a fake clock, the cost book, and
the sequential loop stopping where the budget refuses a look."""
from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from harness.budget import (
    MEASURE_P_DECIDE,
    PRIOR_P_DECIDE,
    SAFETY,
    Allocator,
    CostBook,
    NotWithinBudget,
    Unit,
    book_from_results,
    parse_budget,
    plan_order,
    plan_within,
)
from harness.stats.sequential import SequentialDesign, replay, run_sequential

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.mark.parametrize("text, seconds", [("15m", 900.0), ("90s", 90.0), ("1.5h", 5400.0), ("2", 120.0),
                                           (" 10 M ", 600.0), ("none", None), (None, None), ("off", None)])
def test_parse_budget(text, seconds):
    assert parse_budget(text) == seconds


@pytest.mark.parametrize("text", ["15x", "-3m", "0", "fifteen", "m"])
def test_parse_budget_refuses_nonsense(text):
    with pytest.raises(ValueError, match="--budget must be a positive time"):
        parse_budget(text)


def test_no_budget_grants_everything():
    a = Allocator(None)
    assert a.request("x", 1e9) is None and a.remaining() == math.inf and not a.refused


def test_a_step_is_granted_only_where_it_fits_with_the_safety_margin():
    clock = Clock()
    a = Allocator(100.0, clock=clock, safety=1.0)
    assert a.request("a", 60.0) is None
    clock.t += 60.0  # 40 s left
    assert a.request("b", 40.0) is None  # exactly fits
    assert a.request("c", 40.01) is not None
    assert "not decided within the budget" in a.refused["c"]
    assert Allocator(100.0, clock=Clock(), safety=1.15).request("d", 90.0) is not None  # 103.5 s > 100 s


def test_waiting_claims_worth_more_are_kept_their_share():
    a = Allocator(100.0, clock=Clock(), safety=1.0)
    a.plan([Unit("cheap-likely", 30.0, 0.9), Unit("dear-unlikely", 200.0, 0.1)])
    # 80 s of a 0.5-chance claim (0.5/80 a second) leaves 20 s, less than the 30 s of the likelier, cheaper claim
    why = a.request("mid", 80.0, p_decide=0.5)
    assert why is not None and why.endswith("kept for claims worth more")
    # 70 s fits beside the 30 s claim; the dear, unlikely claim does not fit at all, so it keeps nothing
    assert a.request("small", 70.0, p_decide=0.5) is None
    assert a.request("cheap-likely", 30.0, p_decide=0.9) is None  # its own plan entry is no reservation against it
    assert a.summary()["steps_granted"] == 2 and set(a.summary()["refused"]) == {"mid"}


def test_a_comparative_claim_is_worth_its_weight():
    """Two claims as likely decided, the comparative one (weight 2) dearer: by probability per second the point
    check goes first; at weight 2 the comparative claim's decision is worth more per second, and it keeps its
    share. In a group (a study's claims) each counts at its weight."""
    check, comparative = Unit("check", 25.0, 0.9), Unit("comparative", 30.0, 0.9, weight=2.0)
    assert comparative.worth == 1.8 and check.worth == 0.9
    assert plan_within([check, Unit("comparative", 30.0, 0.9)], {}, 40.0) == ["check"]
    assert plan_within([check, comparative], {}, 40.0) == ["comparative"]
    for waiting, asks, weight, granted in [(comparative, check, 1.0, False), (check, comparative, 2.0, True),
                                           (check, comparative, 1.0, False)]:
        a = Allocator(40.0 * SAFETY, clock=lambda: 0.0)
        a.plan([waiting])
        why = a.request(asks.key, asks.cost_s, p_decide=0.9, weight=weight)
        assert (why is None) == granted and (granted or "kept for claims worth more" in why)
    # a 50 s study of two point checks (0.9 + 0.9) against a comparative claim alone (1.8 over 40 s): the claim;
    # where one of the study's claims is comparative (1.8 + 0.9 over 50 s), the study
    alone = Unit("c", 40.0, 0.9, weight=2.0)
    checks = [Unit("s1", 0.0, 0.9, frozenset({"study"})), Unit("s2", 0.0, 0.9, frozenset({"study"}))]
    assert plan_within([*checks, alone], {"study": 50.0}, 60.0) == ["c"]
    mixed = [Unit("s1", 0.0, 0.9, frozenset({"study"}), weight=2.0), checks[1]]
    assert plan_within([*mixed, alone], {"study": 50.0}, 60.0) == ["s1", "s2"]


def test_a_shared_set_up_is_costed_once_and_worth_all_its_claims():
    """A 90 s study serving three claims (0.9 each, 2.7 decisions for ~90 s) beats a 40 s claim of 0.5 (0.0125/s)
    even though each study claim alone (0.9 for 90 s, 0.01/s) would not."""
    fixtures = {"study": 90.0, "config": 0.01}
    units = [Unit(f"study-{i}", 0.0, 0.9, frozenset({"study", "config"})) for i in range(3)]
    lone = Unit("lone", 40.0, 0.5, frozenset({"config"}))
    assert plan_within([lone, *units], fixtures, 100.0) == ["study-0", "study-1", "study-2"]
    assert plan_within([lone, units[0]], fixtures, 100.0) == ["lone"]  # one claim alone: the lone one is worth more
    assert plan_within([lone, *units], fixtures, 150.0)[-1] == "lone"  # room for both: the study first
    # a member that also needs a second dear set-up does not drag it into the study's bundle
    judged = Unit("judged", 0.0, 0.1, frozenset({"study", "judge"}))
    picked = plan_within([*units, judged], {**fixtures, "judge": 200.0}, 100.0)
    assert picked == ["study-0", "study-1", "study-2"]
    a = Allocator(100.0, clock=Clock(), safety=1.0, fixture_s=fixtures)
    a.plan([lone, *units[1:]])
    assert a.request("study-0", 0.0, p_decide=0.9, fixtures={"study", "config"}) is None
    assert a.request("lone", 40.0, p_decide=0.5, fixtures={"config"}) is not None  # 10 s left after the study


def test_a_dear_unlikely_claim_does_not_drag_its_study_out_of_the_plan():
    """The main job on a machine 1.4 times slower (e31b2b2): the E2/E3/E4 study's first look (here 200 s) serves
    two likely comparative claims (a, b), one unlikely (d) and one unlikely and dear (c, 172 s of its own). All four
    together are worth 4.0 for 372 s (0.0108/s), under an index bundle's 1.8 for 160 s (0.0113/s), which then
    leaves too little for the study: the plan would decide 1.8. The study with a, b and d alone is worth 3.8 for
    200 s (0.019/s): the plan takes it first, then what still fits (e on its own index), 4.7 in all."""
    study = [Unit("a", 0.0, 0.9, frozenset({"study"}), weight=2.0), Unit("b", 0.1, 0.9, frozenset({"study"}), weight=2.0),
             Unit("c", 172.0, 0.1, frozenset({"study"}), weight=2.0), Unit("d", 0.0, 0.1, frozenset({"study"}), weight=2.0)]
    index = [Unit("e", 0.0, 0.9, frozenset({"index"})), Unit("g", 60.0, 0.9, frozenset({"index"}))]
    picked = plan_within([*index, *study], {"study": 200.0, "index": 100.0}, 330.0)
    assert picked == ["a", "d", "b", "e"]
    # with room for everything, c still runs, on its own, once the study is paid
    assert set(plan_within([*index, *study], {"study": 200.0, "index": 100.0}, 1000.0)) == {"a", "b", "c", "d", "e",
                                                                                          "g"}


def test_the_best_core_of_a_set_up_is_the_best_subset_of_its_users():
    """`_best_core` against every subset of a set-up's users (no other set-ups): the same best rate, on random
    worths and costs, zero costs and zero worths included."""
    from itertools import combinations

    from harness.budget import _best_core

    rng = np.random.default_rng(37)
    for _ in range(300):
        setup = float(rng.choice([0.0, 5.0, 50.0, 200.0]))
        users = [Unit(f"u{i}", float(rng.choice([0.0, 0.1, 3.0, 40.0, 170.0])), float(rng.choice([0.0, 0.1, 0.5, 0.9])),
                      frozenset({"s"}), weight=float(rng.choice([1.0, 2.0]))) for i in range(int(rng.integers(1, 8)))]

        def rate(group, setup=setup):
            return sum(u.worth for u in group) / max(setup + sum(u.cost_s for u in group), 1e-3)

        best = max(rate(g) for j in range(1, len(users) + 1) for g in combinations(users, j))
        core = _best_core(users, set(), {"s": setup})
        if best <= 0:
            assert core == []
        else:
            assert rate(core) == pytest.approx(best, rel=1e-12)


def test_cost_book_cost_prior_and_merge(tmp_path):
    book = CostBook({"study": 200.0, "store": 50.0}, {"t::a": 10.0}, {"t::a": True, "t::b": False})
    assert book.cost_of("t::a", ["study"], 60.0) == 210.0
    assert book.cost_of("t::new", [], 60.0) == 60.0
    assert book.cost_of("t::a", ["unknown-fixture"], 60.0) == 10.0
    assert (book.p_decide("t::a"), book.p_decide("t::b"), book.p_decide("t::c")) == (0.9, 0.1, PRIOR_P_DECIDE)
    # timed but bound to no claim (a measurement): it decides nothing, so it runs on what the claims leave
    assert CostBook({}, {"t::measure": 5.0}, {}).p_decide("t::measure") == MEASURE_P_DECIDE == 0.0
    newer = CostBook({"study": 100.0}, {"t::c": 1.0}, {}, "newer")
    m = book.merged(newer)
    assert m.fixtures == {"study": 100.0, "store": 50.0} and m.tests == {"t::a": 10.0, "t::c": 1.0}
    path = tmp_path / "costs.json"
    path.write_text(json.dumps(m.to_json()))
    assert CostBook.load(tmp_path / "missing.json", path) == m
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match=f"{path}: not a cost book"):
        CostBook.load(path)


def test_a_book_reads_each_instance_and_else_its_fixture_s_average():
    """A dataset's index is costed by its own figure; a dataset no run has indexed at the fixture's average; a
    fixture the book never saw at nothing (and as calling the model, until measured)."""
    book = CostBook({"store[ds=small]": 10.0, "store[ds=large]": 190.0, "store": 100.0, "study": 40.0},
                    fixture_calls={"store[ds=small]": 0, "store[ds=large]": 0, "store": 0, "study": 40})
    assert [book.fixture_s(k) for k in ("store[ds=small]", "store[ds=large]", "store[ds=new]", "other[ds=x]")] \
        == [10.0, 190.0, 100.0, 0.0]
    assert [book.calls_of(k) for k in ("store[ds=small]", "study", "study[judge=a]", "other")] == [0, 40, 40, 0]
    assert [book.knows(k) for k in ("store[ds=new]", "study", "other", "other[ds=x]")] == [True, True, False, False]
    assert [book.calls_the_model(k) for k in ("store[ds=new]", "study[judge=a]", "other")] == [False, True, True]
    assert book.cost_of("t::a", ["store[ds=small]", "study"], 5.0) == 55.0
    # at a slower pace, what calls the model is dearer; each index keeps its seconds
    assert book.scaled(2.0).fixture_s("store[ds=large]") == 190.0 and book.scaled(2.0).fixture_s("study") == 80.0


def test_a_figure_measured_from_the_cache_never_replaces_one_measured_without(tmp_path):
    """A run after one that was answered from the cache or replayed keeps what the work costs: a set-up or a test
    whose figure had more than a tenth of its calls from the cache does not replace one measured with its calls
    made; it does where the book has none, or only one from the cache too; a fresh run's few incidental hits do
    not count."""
    fresh = CostBook({"study": 120.0, "store": 30.0, "judged": 50.0}, {"t::a": 50.0, "t::b": 8.0, "t::d": 3.0},
                     fixture_calls={"study": 40, "judged": 10})
    replayed = CostBook({"study": 0.5, "store": 31.0, "judged": 55.0, "ret": 2.0},
                        {"t::a": 0.2, "t::b": 9.0, "t::c": 0.1, "t::d": 2.0},
                        fixture_calls={"study": 41, "judged": 11, "ret": 10},
                        cached={"study": 1.0, "judged": 0.05, "ret": 1.0, "t::a": 0.5, "t::c": 1.0, "t::d": 0.1})
    m = fresh.merged(replayed)
    assert m.fixtures == {"study": 120.0, "store": 31.0, "judged": 55.0, "ret": 2.0}
    assert m.fixture_calls == {"study": 40, "judged": 11, "ret": 10}  # with the figure it goes with
    assert m.tests == {"t::a": 50.0, "t::b": 9.0, "t::c": 0.1, "t::d": 2.0}
    # the figures kept say how they were measured: the study's with its calls made, a new one's from the cache
    assert m.cached == {"judged": 0.05, "ret": 1.0, "t::c": 1.0, "t::d": 0.1}
    assert [m.uncached(k) for k in ("study", "judged", "ret", "ret[x=1]", "t::c", "t::d")] \
        == [True, True, False, False, False, True]
    # a fresh figure replaces one from the cache, and says so
    again = m.merged(CostBook({"ret": 20.0}, {"t::c": 4.0}))
    assert (again.fixtures["ret"], again.tests["t::c"], again.cached) == (20.0, 4.0, {"judged": 0.05, "t::d": 0.1})
    path = tmp_path / "costs.json"
    path.write_text(json.dumps(m.to_json()))
    assert CostBook.load(path) == m


def test_a_fixture_s_average_is_over_every_instance_any_run_measured():
    """A run that indexed one dataset keeps the other's figure from the book, and the fixture's average (what a
    dataset never indexed reads) is over both, each once."""
    book = CostBook({"index[ds=x]": 10.0, "index[ds=y]": 190.0}, fixture_calls={"index[ds=x]": 0, "index[ds=y]": 0},
                    cached={"index[ds=y]": 0.5}).averaged()
    assert (book.fixtures["index"], book.fixture_calls["index"], book.cached["index"]) == (100.0, 0, 0.25)
    later = book.merged(CostBook({"index[ds=x]": 30.0, "index": 30.0}, fixture_calls={"index[ds=x]": 0, "index": 0}))
    assert later.fixtures == {"index[ds=x]": 30.0, "index[ds=y]": 190.0, "index": 110.0}
    assert later.fixture_s("index[ds=new]") == 110.0
    # an unparametrised fixture keeps its own figure
    assert CostBook({"study": 7.0}).averaged().fixtures == {"study": 7.0}


def test_plan_order_runs_the_plan_first_and_keeps_linked_items_together():
    # items: 0 unbudgeted (unit test), 1-2 module A (planned 3rd, unplanned), 3 module B (planned 1st),
    # 4 module C sharing a dataset instance with 1 (unplanned), 5 module D (planned 2nd), 6 module E (unplanned)
    links = [{"u.py"}, {"a.py", "ds[0]"}, {"a.py"}, {"b.py"}, {"c.py", "ds[0]"}, {"d.py"}, {"e.py"}]
    rank = [None, 2.0, math.inf, 0.0, math.inf, 1.0, math.inf]
    # by hand: the unbudgeted group first; then B (0), D (1), {A, C} (2) in their own order, then E (unplanned)
    assert plan_order(links, rank) == [0, 3, 5, 1, 2, 4, 6]
    # no plan at all: each linked group at its first member's place, in its own order
    assert plan_order(links, [None] * 7) == [0, 1, 2, 4, 3, 5, 6]
    assert plan_order([{"m"}] * 3, [math.inf, 0.0, 1.0]) == [0, 1, 2]  # one module: never split
    assert plan_order([], []) == []


def test_book_from_results_by_hand():
    results = {"timing": {"phases": [
        {"kind": "fixture", "scope": "session", "name": "fixture store", "wall_s": 30.0, "count": 2},
        {"kind": "fixture", "scope": "module", "name": "fixture study", "wall_s": 7.0, "count": 1, "llm_calls": 90,
         "cache_hits": 30},
        {"kind": "fixture", "scope": "session", "name": "fixture judged", "wall_s": 2.0, "count": 2, "cache_hits": 1},
        {"kind": "fixture", "scope": "function", "name": "fixture tmp_path", "wall_s": 5.0, "count": 9},
        # a dataset's index per dataset: each instance apart, and their average under the fixture's name
        {"kind": "fixture", "scope": "session", "name": "fixture index[ds=x]", "wall_s": 12.0, "count": 1},
        {"kind": "fixture", "scope": "session", "name": "fixture index[ds=y]", "wall_s": 180.0, "count": 2,
         "llm_calls": 1},
        {"kind": "setup", "name": "setup t.py::a", "wall_s": 0.5, "llm_calls": 2},
        {"kind": "call", "name": "call t.py::a", "wall_s": 4.0, "cache_hits": 2},
        {"kind": "teardown", "name": "teardown t.py::a", "wall_s": 0.25},
        {"kind": "call", "name": "call t.py::b", "wall_s": 1.0},
        {"kind": "call", "name": "call t.py::a2", "wall_s": 2.0},
        {"kind": "call", "name": "call t.py::crash", "wall_s": 0.5},
        {"kind": "call", "name": "call t.py::strict", "wall_s": 0.5},
        {"kind": "call", "name": "call t.py::one", "wall_s": 0.5},
        {"kind": "setup", "name": "setup t.py::c", "wall_s": 0.001},
        {"kind": "setup", "name": "setup t.py::nospec", "wall_s": 0.002},
        {"kind": "teardown", "name": "teardown t.py::nospec", "wall_s": 0.001}]},
        "specs": [{"id": "A", "verdict": "refuted", "datasets": [
                      {"dataset": "x", "verdict": "refuted", "n": 10, "queries_used": 20},
                      {"dataset": "w", "verdict": "inconclusive", "n": 30, "queries_needed": 90},
                      {"dataset": "v", "verdict": "not run"}, {"dataset": "u", "verdict": "inconclusive"}]},
                  {"id": "B", "verdict": "inconclusive", "queries_needed": 61.2, "n": 30, "datasets": [
                      {"dataset": "y", "verdict": "inconclusive", "queries_needed": 61.2, "n": 30},
                      {"dataset": "z", "verdict": "inconclusive", "queries_needed": "never", "n": 30}]},
                  {"id": "C", "verdict": "pass", "datasets": [{"dataset": "", "verdict": "pass"}]}],
        "tests": [{"nodeid": "t.py::a", "spec_id": "A", "outcome": "failed", "dataset": "x"},
                  {"nodeid": "t.py::a2", "spec_id": "A", "outcome": "passed", "dataset": "w"},
                  # broke before its check (its entry reads "not run"): it ended in error, shown early next time
                  {"nodeid": "t.py::crash", "spec_id": "A", "outcome": "failed", "dataset": "v"},
                  # inconclusive under --strict-verdicts: failed, and still undecided
                  {"nodeid": "t.py::strict", "spec_id": "A", "outcome": "failed", "dataset": "u"},
                  {"nodeid": "t.py::one", "spec_id": "C", "outcome": "passed", "dataset": ""},
                  {"nodeid": "t.py::b", "spec_id": "B", "outcome": "passed", "dataset": "z"},
                  {"nodeid": "t.py::c", "spec_id": "B", "outcome": "budget", "dataset": "y"}]}
    book = book_from_results(results, "here")
    # the average is each instance once: (12 + 90) / 2
    assert book.fixtures == {"store": 15.0, "study": 7.0, "judged": 1.0, "index[ds=x]": 12.0,
                             "index[ds=y]": 90.0, "index": 51.0}
    # model calls (cache hits included) per set-up, rounded up: an index calls none, so the pace leaves it alone
    assert book.fixture_calls == {"store": 0, "study": 120, "judged": 1, "index[ds=x]": 0, "index[ds=y]": 1,
                                  "index": 1}
    assert [book.calls_the_model(f) for f in ("store", "study", "judged", "never-seen")] == [False, True, True, True]
    assert book.tests == {"t.py::a": 4.75, "t.py::a2": 2.0, "t.py::b": 1.0, "t.py::crash": 0.5,
                          "t.py::strict": 0.5, "t.py::one": 0.5}
    # the share of each figure's calls answered from the cache (`merged` keeps one measured with its calls made)
    assert book.cached == {"study": 0.25, "judged": 1.0, "t.py::a": 0.5}
    # decided on the test's own dataset: a claim refuted on x is not decided on w
    assert book.decided == {"t.py::a": True, "t.py::a2": False, "t.py::crash": True, "t.py::strict": False,
                            "t.py::one": True, "t.py::b": False}
    # what each test's own dataset entry says of the queries its claim needs (a test the run cut measured nothing)
    assert book.needed == {"t.py::a": {"queries": 20, "why": "decided (refuted) on 20 queries"},
                           "t.py::a2": {"queries": 90, "why": "80% power, estimated from 30 queries"},
                           "t.py::b": {"queries": "never", "why": "estimate = threshold"}}
    assert CostBook.from_json(json.loads(json.dumps(book.to_json()))) == book


@pytest.mark.parametrize("entry, figure", [
    ({"verdict": "supported", "queries_used": 20, "n": 10}, {"queries": 20, "why": "decided (supported) on 20 queries"}),
    ({"verdict": "fail", "dataset": "x", "n": 6}, {"queries": 6, "why": "decided (fail) on 6 queries"}),
    ({"verdict": "inconclusive", "dataset": "x", "queries_needed": 61.2, "n": 30},
     {"queries": 62, "why": "80% power, estimated from 30 queries"}),
    ({"verdict": "inconclusive", "queries_needed": 150, "queries_used": 30, "needed_for": "the claim is about all 150"},
     {"queries": 150, "why": "the claim is about all 150"}),
    ({"verdict": "inconclusive", "dataset": "x", "queries_needed": float("inf"), "n": 10},
     {"queries": "never", "why": "estimate = threshold"}),
    ({"verdict": "inconclusive", "queries_needed": None, "n": 30}, None),
    ({"verdict": "inconclusive", "queries_needed": 80.0, "n": 0, "untestable": True},
     {"queries": "never", "why": "untestable on that data"}),
    ({"verdict": "inconclusive", "dataset": "x", "n": 60, "queries_needed": "never",
      "needed_for": "at a fallback rate of 93%, more queries measure the fallback"},
     {"queries": "never", "why": "at a fallback rate of 93%, more queries measure the fallback"}),
    # a verdict withheld for the fallback in a report from before it said so; under the limit it says nothing
    ({"verdict": "inconclusive", "dataset": "x", "n": 60, "queries_needed": None, "fallback_rate": 0.93},
     {"queries": "never", "why": "the technique fell back on 93% of queries"}),
    ({"verdict": "inconclusive", "dataset": "x", "n": 60, "queries_needed": None, "fallback_rate": 0.1}, None),
    ({"verdict": "error", "n": 30}, None),
    ({"verdict": "pass"}, None),
    ({"verdict": "pass", "dataset": "", "n": 20000}, None),  # a simulation's trials are not queries
    ({"verdict": "pass", "dataset": "cranfield", "n": 6}, {"queries": 6, "why": "decided (pass) on 6 queries"}),
])
def test_needed_of_reads_what_a_row_says_of_the_queries_a_claim_needs(entry, figure):
    from harness.budget import needed_of

    assert needed_of(entry) == figure


def test_a_book_read_at_another_pace_and_kept_with_it(tmp_path):
    """`scaled`: every test's seconds and the set-ups that call the model, an index's kept; `pace_vs_prior` survives
    a JSON round trip and a merge (the newer book's where it has one)."""
    book = CostBook({"index": 40.0, "study": 100.0, "unseen": 2.0}, {"t.py::a": 3.0}, {"t.py::a": True}, "x",
                    {"index": 0, "study": 90}, {"t.py::a": {"queries": 30, "why": "w"}})
    slow = book.scaled(2.5)
    assert slow.fixtures == {"index": 40.0, "study": 250.0, "unseen": 5.0}  # a fixture never counted: the model's
    assert slow.tests == {"t.py::a": 7.5} and slow.decided == book.decided and slow.needed == book.needed
    assert book.tests == {"t.py::a": 3.0}, "the book itself is left as it was"
    kept = CostBook(pace_vs_prior=2.5)
    path = tmp_path / "costs.json"
    path.write_text(json.dumps(kept.to_json()))
    assert CostBook.load(path).pace_vs_prior == 2.5 and "pace_vs_prior" not in CostBook().to_json()
    assert book.merged(kept).pace_vs_prior == 2.5 and kept.merged(CostBook()).pace_vs_prior == 2.5
    path.write_text(json.dumps({"pace_vs_prior": 0}))
    with pytest.raises(ValueError, match="pace_vs_prior must be a positive number, got 0"):
        CostBook.load(path)


def test_a_book_with_a_bad_needed_entry_names_it(tmp_path):
    path = tmp_path / "costs.json"
    path.write_text(json.dumps({"tests": {}, "needed": {"t.py::a": {"queries": -3, "why": "?"}}}))
    with pytest.raises(ValueError, match=r"costs.json: not a cost book .*positive number or 'never', got -3"):
        CostBook.load(path)


def test_the_packaged_prior_loads_and_names_its_source():
    from harness.plugin.budget import prior_book

    book = prior_book()
    assert book.tests and book.fixtures and "e95ec3e" in book.source and "every protocol test" in book.source
    # each dataset's index apart, and their mean for a dataset no run has indexed
    small, large = (book.fixtures[f"rag_dense_store[rag_dataset_name={d}]"] for d in ("cranfield", "halueval-qa"))
    assert small < large and book.fixture_s("rag_dense_store[rag_dataset_name=mine]") == pytest.approx(
        (small + large) / 2)


def _scores(n: int = 30, d: float = 0.02, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.2, 0.8, n)
    return np.clip(base + d + rng.normal(0, 0.3, n), 0, 1), base


def test_run_sequential_stops_where_the_budget_refuses_a_look():
    from harness.stats._effect import paired_effect
    from harness.stats._verdict import Decision, decide

    c, b = _scores()
    design = SequentialDesign((10, 20, 30), boundary="anytime")
    asked: list[tuple[int, int, float | None]] = []

    def may_continue(k: int, n: int, p: float | None) -> str | None:
        asked.append((k, n, p))
        return "not decided within the budget: test" if k == 2 else None

    out = run_sequential(design, lambda n, conf: paired_effect(c[:n], b[:n], confidence=conf, seed=1),
                         lambda e, final: decide(e, ">", 0.0, Decision("ci")), futility_threshold=None,
                         may_continue=may_continue)
    assert [k for k, _, _ in asked] == [1, 2] and [n for _, n, _ in asked] == [20, 30]
    assert all(p is None for _, _, p in asked)  # no futility: no decision probability to pass
    assert out.stopped_at == 2 and out.queries_used == 20 and out.budget_reason is not None
    ctx = out.as_context()
    assert ctx["stopped"] == "not decided within the budget at look 2" and ctx["budget"].endswith("test")
    # the looks it took are the looks the claim takes without a budget: same n, same intervals
    free = replay(c, b, design, ">", 0.0, Decision("ci"))
    assert [(lk.n, lk.ci) for lk in out.looks] == [(lk.n, lk.ci) for lk in free.looks[:2]]


def test_not_within_budget_is_not_a_model_error():
    from harness.llm.results import LLMError

    assert not issubclass(NotWithinBudget, LLMError)


def test_the_budget_line_and_section():
    from harness.report.html.page import budget_html
    from harness.report.terminal import budget_line

    b = {"limit_s": 780.0, "spent_s": 741.6, "steps_granted": 30,
         "refused": {"t.py::a": "not decided within the budget: x", "t.py::b<": "y"}}
    assert budget_line(b) == "budget: 742 s of 780 s spent; 2 claims not decided within the budget"
    assert budget_line({**b, "refused": {"t.py::a": "x"}}).endswith("1 claim not decided within the budget")
    html = budget_html(b)
    assert "<h2>The run's budget</h2>" in html and "t.py::b&lt;" in html and html.count("<tr>") == 3


def _cut_run(design: SequentialDesign, c: np.ndarray, b: np.ndarray, threshold: float, stop_at: int):
    """The production loop on recorded scores, its budget refusing every look from `stop_at` (0-based) on."""
    from harness.stats._effect import paired_effect
    from harness.stats._verdict import Decision, decide

    return run_sequential(design, lambda n, conf: paired_effect(c[:n], b[:n], confidence=conf, seed=1),
                          lambda e, final: decide(e, ">", threshold, Decision("ci"), interim=not final),
                          may_continue=lambda k, n, p: "refused" if k >= stop_at else None)


def test_a_budget_never_changes_a_decided_verdict_on_recorded_scores():
    """On real per-query scores (the harness's own dense, BM25 and hybrid runs on Cranfield and halueval-qa), 300
    claims run to the end and again under a budget that refuses a random later look: every claim the budgeted run
    decides, it decides as the free run does, at the same look; a refused one is undecided, never refuted."""
    from pathlib import Path

    from harness.stats._verdict import Decision

    sets = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "calibration" / "per_query_scores.json")
                      .read_text())["sets"]
    pairs = [(sets[s][f"{a}:nDCG@10"], sets[s]["dense:nDCG@10"]) for s in ("cranfield", "halueval-qa")
             for a in ("bm25", "hybrid")]
    rng = np.random.default_rng(37)
    design = SequentialDesign((10, 20, 30), boundary="anytime")
    decided_both = refused = 0
    for i in range(300):
        cand, base = (np.asarray(x, float) for x in pairs[i % len(pairs)])
        idx = rng.choice(len(cand), 30, replace=False)
        c, b = cand[idx], base[idx]
        threshold = float(rng.choice([-0.4, -0.1, 0.0, 0.05, 0.4]))
        free = replay(c, b, design, ">", threshold, Decision("ci"))
        stop_at = int(rng.integers(1, 4))  # 3: the budget refuses nothing

        cut = _cut_run(design, c, b, threshold, stop_at)
        if cut.budget_reason is not None:
            refused += 1
            assert cut.verdict.verdict not in ("supported", "refuted")
            assert [lk.verdict for lk in cut.looks] == [lk.verdict for lk in free.looks[:len(cut.looks)]]
        else:
            decided_both += cut.verdict.verdict in ("supported", "refuted")
            assert (cut.verdict.verdict, cut.stopped_at) == (free.verdict.verdict, free.stopped_at)
    assert refused > 50 and decided_both > 30  # both kinds of path were exercised


def test_a_later_look_of_a_comparative_claim_is_worth_its_weight():
    """A sequential claim's next look (30 s) against a waiting point check (25 s), both as likely decided, room for
    one: the look goes ahead at the comparative weight and is kept out for the check at weight 1."""
    import harness.plugin.budget as pb

    for weight, granted in ((2.0, True), (1.0, False)):
        hooks = object.__new__(pb.BudgetHooks)
        hooks.book, hooks.comparative, hooks.comparative_weight = CostBook(), {"seq"}, weight
        hooks.allocator = Allocator(40.0 * SAFETY, clock=lambda: 0.0)
        hooks.allocator.plan([Unit("check", 25.0, 0.9)])
        assert (hooks.look("seq", 30.0, 30.0, 0.9) is None) == granted


def test_the_book_is_rescaled_to_the_runs_pace():
    """Tests the book says take 10 s each take 30 s here: after 20 estimated seconds, every estimate triples; a
    slow set-up of nothing that calls the model does not move the pace."""
    import harness.plugin.budget as pb

    hooks = object.__new__(pb.BudgetHooks)
    hooks.book = CostBook({"study": 50.0, "index": 40.0}, {"a": 10.0, "b": 10.0, "c": 10.0}, {},
                          fixture_calls={"study": 120, "index": 0})
    hooks.allocator = Allocator(1000.0, fixture_s=dict(hooks.book.fixtures))
    hooks.scale, hooks._running, hooks._pace, hooks._meter, hooks.keys = 1.0, {}, [0.0, 0.0], {}, set()
    hooks._set_ups = {}

    class Report:
        def __init__(self, nodeid: str, when: str, duration: float) -> None:
            self.nodeid, self.when, self.duration = nodeid, when, duration

    from harness.llm.meter import METER

    for i, key in enumerate(("a", "b")):
        hooks._running[key], hooks._meter[key] = 10.0, METER.snapshot()
        METER.call(300, 20)  # it calls the model
        hooks.pytest_runtest_logreport(Report(key, "setup", 500.0))  # a set-up the budget never admitted: unread
        hooks.pytest_runtest_logreport(Report(key, "call", 30.0))
        assert hooks.scale == (1.0 if i == 0 else 3.0)  # 10 estimated seconds are too few to judge the pace by
    hooks._running["machine"], hooks._meter["machine"] = 10.0, METER.snapshot()
    hooks.pytest_runtest_logreport(Report("machine", "call", 10.0))  # no model call (an index-time check)
    assert hooks.scale == 3.0, "a test that calls no model says nothing of the model's pace"
    hooks._running["set-up"] = 10.0
    METER.call(300, 20)  # its fixtures' set-up called the model (a study's first look), its own call does not

    class Item:
        nodeid = "set-up"

    hooks.pytest_runtest_call(Item())
    hooks.pytest_runtest_logreport(Report("set-up", "call", 10.0))
    assert hooks.scale == 3.0, "the meter is read from the test's own call, after its fixtures"
    # a study waits on the model and triples; an index calls no model and keeps its seconds
    assert hooks.allocator.fixture_s == {"study": 150.0, "index": 40.0}
    hooks._running["free"] = 0.0
    hooks.pytest_runtest_logreport(Report("free", "call", 95.0))  # the book has it as free: no ratio to read
    assert hooks.scale == 3.0
    hooks._running["replayed"], hooks._meter["replayed"] = 10.0, METER.snapshot()
    METER.cache_hit()  # answered from the cache (or replayed), no model call: 0.1 s says nothing of the pace
    hooks.pytest_runtest_logreport(Report("replayed", "call", 0.1))
    assert hooks.scale == 3.0
    hooks._running["c"], hooks._meter["c"] = 10.0, METER.snapshot()
    METER.call(300, 20)
    hooks.pytest_runtest_logreport(Report("c", "call", 1000.0))  # far slower still: the scale is capped at 4
    assert hooks.scale == 4.0


def test_costs_are_kept_per_model(tmp_path):
    from harness.plugin.budget import costs_path

    assert costs_path(tmp_path, "local/smollm2-135m-instruct") == tmp_path / "budget" / "costs-local-smollm2-135m-instruct.json"
    assert costs_path(tmp_path, "openai/gpt-4o-mini").name == "costs-openai-gpt-4o-mini.json"


def _plan_reference(units, fixture_s, capacity_s, shared_s=5.0):
    """`plan_within` as first written (every candidate weighed again after each pick): the oracle of the one-pass
    plan where no unit needs a set-up."""
    chosen, have, left = [], set(), capacity_s
    todo = {u.key: u for u in units}
    while todo:
        candidates = [[u] for u in todo.values()]
        shared = {f for u in todo.values() for f in u.fixtures if f not in have and fixture_s.get(f, 0.0) >= shared_s}
        for f in sorted(shared):
            users = [u for u in todo.values() if f in u.fixtures]
            alone = [u for u in users if not (u.fixtures - have - {f}) & shared]
            candidates += [users] + ([alone] if alone and len(alone) < len(users) else [])
            core = _core_reference(alone, have, fixture_s)
            if 0 < len(core) < len(alone):
                candidates.append(core)
        best = None
        for group in candidates:
            setups = set().union(*(u.fixtures for u in group)) - have
            cost = sum(u.cost_s for u in group) + sum(fixture_s.get(f, 0.0) for f in setups)
            if cost > left:
                continue
            value = (sum(u.weight * u.p_decide for u in group) / max(cost, 1e-3) if len(group) > 1 or setups
                     else group[0].value)
            if best is None or value > best[0]:
                best = (value, group, setups, cost)
        if best is None:
            break
        for u in best[1]:
            chosen.append(u.key)
            del todo[u.key]
        have |= best[2]
        left -= best[3]
    return chosen


def _core_reference(alone, have, fixture_s):
    """The best-rate leading units of a set-up's lone users, ranked by worth over their own seconds and the set-ups
    not all of them need, as the plan's rule states it."""
    common = frozenset.intersection(*(u.fixtures for u in alone)) if alone else frozenset()
    ranked = sorted(alone, key=lambda u: -(u.weight * u.p_decide) / max(
        u.cost_s + sum(fixture_s.get(f, 0.0) for f in u.fixtures - have - common), 1e-3))
    rates = []
    for j in range(1, len(ranked) + 1):
        setups = set().union(*(u.fixtures for u in ranked[:j])) - have
        cost = sum(u.cost_s for u in ranked[:j]) + sum(fixture_s.get(f, 0.0) for f in setups)
        rates.append(sum(u.weight * u.p_decide for u in ranked[:j]) / max(cost, 1e-3))
    if not rates or max(rates) <= 0:
        return []
    return ranked[:rates.index(max(rates)) + 1]


@pytest.mark.parametrize("with_fixtures", [False, True])
def test_the_plan_equals_the_step_by_step_greedy_on_random_units(with_fixtures):
    """The one-pass plan (no set-ups) and the general one pick exactly what the step-by-step greedy picks, in its
    order, ties included (few distinct costs and worths, so ties are common)."""
    rng = np.random.default_rng(39)
    fixtures = {"study": 30.0, "index": 8.0, "small": 2.0, "free": 0.0}
    for _ in range(400):
        n = int(rng.integers(0, 30))
        units = [Unit(f"u{i}", float(rng.choice([0.0, 1.0, 2.5, 4.0, 10.0, 33.3])),
                      float(rng.choice([0.1, 0.5, 0.9, 0.5 * rng.random()])),
                      frozenset(f for f in fixtures if with_fixtures and rng.random() < 0.3),
                      None if rng.random() < 0.5 else float(rng.choice([4.0, 20.0, 60.0])),
                      float(rng.choice([1.0, 1.0, 2.0])))
                 for i in range(n)]
        capacity = float(rng.choice([0.0, 5.0, 20.0, 60.0, 200.0, 1e9]))
        assert plan_within(units, fixtures, capacity) == _plan_reference(units, fixtures, capacity)


def _paced_hooks(book: CostBook) -> Any:
    import harness.plugin.budget as pb

    hooks = object.__new__(pb.BudgetHooks)
    hooks.book, hooks.allocator = book, Allocator(1000.0, fixture_s=dict(book.fixtures))
    hooks.scale, hooks._running, hooks._pace, hooks._meter, hooks._set_ups = 1.0, {}, [0.0, 0.0], {}, {}
    hooks.keys = set()
    return hooks


class _SetUpReport:
    when = "setup"

    def __init__(self, nodeid: str, duration: float, passed: bool = True) -> None:
        self.nodeid, self.duration, self.passed = nodeid, duration, passed


def test_a_set_up_that_waits_on_the_model_sets_the_pace():
    """A study's first look (40 s and 40 calls in the book) that takes 80 s here doubles the pace before any
    test's own call; one partly replayed, one served partly from the cache, one mostly an index, and one that
    failed leave the pace where it was (a pace probe that read the machine wrong is corrected by the first
    study the run draws)."""
    from harness.llm.meter import METER

    book = CostBook({"study": 40.0, "index": 30.0, "small": 5.0}, {}, {},
                    fixture_calls={"study": 40, "index": 0, "small": 0})

    def set_up(hooks: Any, fixtures: set[str], calls: int, seconds: float, *, hits: int = 0,
               passed: bool = True) -> None:
        item = type("Item", (), {"nodeid": "t", "stash": {}, "user_properties": [],
                                 "get_closest_marker": lambda self, name: name == "benchmark" or None})()
        hooks.allocator.plan([], replace=True)
        hooks.items, hooks.fixtures = [item], {"t": [(f, None) for f in fixtures]}
        hooks.done, hooks.started = set(), set()
        hooks.config, hooks._probe_spend, hooks.comparative, hooks.comparative_weight = None, [], set(), 2.0
        hooks.default_s = 60.0
        hooks.pytest_runtest_setup(item)
        for _ in range(calls):
            METER.call(300, 20)
        for _ in range(hits):
            METER.cache_hit()
        hooks.pytest_runtest_logreport(_SetUpReport("t", seconds, passed))

    hooks = _paced_hooks(book)
    set_up(hooks, {"study"}, 40, 80.0)
    assert hooks.scale == 2.0
    assert hooks.allocator.fixture_s["study"] == 80.0 and hooks.allocator.fixture_s["index"] == 30.0
    hooks = _paced_hooks(book)
    set_up(hooks, {"study", "small"}, 40, 85.0)  # a small index beside it, taken at the book's 5 s
    assert hooks.scale == 2.0
    for fixtures, calls, kw in (({"study"}, 20, {}), ({"study"}, 40, {"hits": 1}), ({"study", "index"}, 40, {}),
                                ({"study"}, 40, {"passed": False}), ({"index"}, 0, {})):
        hooks = _paced_hooks(book)
        set_up(hooks, fixtures, calls, 80.0, **kw)
        assert hooks.scale == 1.0, (fixtures, calls, kw)
    # a set-up the book has as (nearly) free says nothing: 80 s against its 0.5 s would have tripled the pace
    hooks = _paced_hooks(CostBook({"tiny": 0.5, "study": 40.0}, fixture_calls={"tiny": 1, "study": 40}))
    set_up(hooks, {"tiny"}, 1, 80.0)
    set_up(hooks, {"study"}, 40, 40.0)
    assert hooks.scale == 1.0
    # a set-up that made no model call says nothing, even where the book counted none (a fixture it has no calls
    # for is read as calling the model)
    hooks = _paced_hooks(CostBook({"study": 40.0}))
    set_up(hooks, {"study"}, 0, 80.0)
    assert hooks.scale == 1.0
    # a wider fixture beside the study that the book never timed: its seconds would all read as the model's
    hooks = _paced_hooks(book)
    set_up(hooks, {"study", "wider"}, 40, 80.0)
    assert hooks.scale == 1.0
    # a book whose study was answered from the cache (a run after another): a fresh set-up would read slow
    hooks = _paced_hooks(CostBook({"study": 40.0}, fixture_calls={"study": 40}, cached={"study": 1.0}))
    set_up(hooks, {"study"}, 40, 80.0)
    assert hooks.scale == 1.0
    # a dataset's own index is taken at its own figure, not at the fixture's average
    hooks = _paced_hooks(CostBook({"study": 40.0, "index[ds=small]": 5.0, "index": 100.0},
                                  fixture_calls={"study": 40, "index": 0, "index[ds=small]": 0}))
    hooks.keys = {"index[ds=small]", "index[ds=new]"}  # the instances this run's tests need
    set_up(hooks, {"study", "index[ds=small]"}, 40, 85.0)
    assert hooks.scale == 2.0
    # and so the allocator costs each index: its own figure, a dataset never indexed at the average
    assert {k: hooks.allocator.fixture_s[k] for k in ("study", "index[ds=small]", "index[ds=new]")} \
        == {"study": 80.0, "index[ds=small]": 5.0, "index[ds=new]": 100.0}


@pytest.mark.parametrize("params, dataset", [
    ({"rag_dataset_name": "cranfield"}, "cranfield"),
    ({"rag_dataset_name": "/data/mine"}, "mine"),
    ({"rag_negatives_name": "freshqa"}, "freshqa"),  # E2E4-FR6-3-PUBLIC: one test per out-of-KB set
    ({"rag_judge": "local/x"}, ""),
    (None, ""),
])
def test_a_test_names_the_dataset_its_claim_reads(params, dataset):
    """The dataset a protocol test's record names, which its row's entries and the cost book's decision per
    dataset are read by (a test on an out-of-KB set names that set, not the row)."""
    from harness.plugin.hooks import _dataset_of

    item = type("Item", (), {"callspec": type("Spec", (), {"params": params})() if params is not None else None})()
    assert _dataset_of(item) == dataset

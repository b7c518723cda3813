"""Where the time goes: exclusive spans, the phase and claim tables by hand, the LLM meter across worker threads,
and the plugin's timing section as a user runs it."""
from __future__ import annotations

import json
import threading

import pytest

from tests.pytester_kit import new_project

from harness.llm.client import LLMClient
from harness.llm.cache import ResponseCache
from harness.llm.meter import METER
from harness.llm.scripted import register
from harness.parallel import ordered_map
from harness.report.html.page import render_html
from harness.report.timing import (
    SpanRecorder, claims, phases, queries_of, seconds_text, timing_html, timing_lines, timing_section,
)

pytest_plugins = ["pytester"]


class _Fake:
    """A hand-driven clock and meter."""

    def __init__(self) -> None:
        self.t = 0.0
        self.c = {"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cache_hits": 0}

    def step(self, seconds: float, calls: int = 0, prompt: int = 0, completion: int = 0, hits: int = 0) -> None:
        self.t += seconds
        for k, v in zip(self.c, (calls, prompt, completion, hits)):
            self.c[k] += v


# ---------------------------------------------------------------- spans
@pytest.mark.unit
def test_nested_spans_are_exclusive():
    f = _Fake()
    rec = SpanRecorder(lambda: f.c, clock=lambda: f.t)
    with rec.span(span="setup", nodeid="t"):
        f.step(1.0, calls=1, prompt=10, completion=2)
        with rec.span(span="fixture", name="arm"):
            f.step(5.0, calls=3, prompt=30, completion=6, hits=1)
            with rec.span(span="fixture", name="index"):
                f.step(2.0)
        f.step(0.5, hits=2)
    inner, arm, setup = rec.drain()
    assert inner == {"span": "fixture", "name": "index", "wall_s": 2.0, "llm_calls": 0, "prompt_tokens": 0,
                     "completion_tokens": 0, "cache_hits": 0}
    assert (arm["wall_s"], arm["llm_calls"], arm["prompt_tokens"], arm["completion_tokens"], arm["cache_hits"]) == \
        (5.0, 3, 30, 6, 1)
    assert (setup["wall_s"], setup["llm_calls"], setup["prompt_tokens"], setup["cache_hits"]) == (1.5, 1, 10, 2)
    assert rec.drain() == []


@pytest.mark.unit
def test_a_span_that_raises_is_still_recorded():
    f = _Fake()
    rec = SpanRecorder(lambda: f.c, clock=lambda: f.t)
    with pytest.raises(RuntimeError), rec.span(span="call", nodeid="t"):
        f.step(3.0, calls=2)
        raise RuntimeError("boom")
    (ev,) = rec.drain()
    assert ev["wall_s"] == 3.0 and ev["llm_calls"] == 2


@pytest.mark.unit
def test_calls_on_worker_threads_and_cache_hits_count_in_the_callers_span(tmp_path):
    llm = LLMClient(register("timing-echo", lambda m, p: "three word answer"), concurrency=4,
                    cache=ResponseCache(tmp_path))
    rec = SpanRecorder(METER.snapshot)
    threads: set[int] = set()

    def ask(prompt: str) -> str:
        threads.add(threading.get_ident())
        return llm.complete(prompt, max_tokens=4).text

    with rec.span(span="call", nodeid="t"):
        ordered_map(ask, [f"question {i}" for i in range(6)], 4)
        ask("question 0")  # answered from the cache
    (ev,) = rec.drain()
    assert len(threads) > 1  # really on several threads
    assert (ev["llm_calls"], ev["prompt_tokens"], ev["completion_tokens"], ev["cache_hits"]) == (6, 12, 18, 1)


# ---------------------------------------------------------------- the tables by hand
def _ev(span: str, nodeid: str, wall: float, calls: int = 0, prompt: int = 0, completion: int = 0, hits: int = 0,
        **labels) -> dict:
    return {"span": span, "nodeid": nodeid, "wall_s": wall, "llm_calls": calls, "prompt_tokens": prompt,
            "completion_tokens": completion, "cache_hits": hits, **labels}


A, B, C = "b.py::test_a[X-1]", "b.py::test_b[X-2]", "b.py::test_c"
EVENTS = [
    _ev("fixture", A, 40.0, 10, 1000, 200, 2, name="hyde_arm", scope="session", phase="setup", id="h1"),
    _ev("fixture", A, 0.01, name="check", scope="function", phase="setup", id="c1"),
    _ev("setup", A, 0.02),
    _ev("call", A, 1.5, 3, 300, 30, 0, uses={"hyde_arm": "h1"}),
    _ev("teardown", A, 0.03),
    _ev("fixture", B, 0.02, name="check", scope="function", phase="setup", id="c2"),
    _ev("setup", B, 0.01),
    _ev("fixture", B, 7.0, 2, 100, 10, 0, name="judges", scope="session", phase="call", id="j1"),  # lazily
    _ev("call", B, 2.5, 1, 50, 5, 4, uses={"hyde_arm": "h1", "judges": "j1"}),
    _ev("call", B, 9.0, 5, 0, 0, 0, control="broken", uses={"hyde_arm": "h1", "judges": "j1"}),
    _ev("teardown", B, 0.5),
    _ev("fixture", C, 30.0, 6, 600, 60, 0, name="hyde_arm", scope="session", phase="setup", id="h2"),  # another param
    _ev("call", C, 0.2, uses={"hyde_arm": "h2"}),
    {"span": "control", "name": "iso", "nodeid": B, "wall_s": 60.0, "llm_calls": None, "prompt_tokens": None,
     "completion_tokens": None, "cache_hits": None},
]
CHECKS = [
    {"spec_id": "X-1", "nodeid": A, "context": {"dataset": "d1", "n": 30, "available": 225}},
    {"spec_id": "X-2", "nodeid": B, "context": {"dataset": "d1", "n": 12}},
    {"spec_id": "X-3", "nodeid": B, "context": {"queries_used": 5, "queries_available": 150, "available": 9}},
]
NONE = {"wall_s": 0, "llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cache_hits": 0, "fixtures": []}


@pytest.mark.unit
def test_phases_sum_per_name_slowest_first():
    rows = phases(EVENTS)
    by = {r["name"]: r for r in rows}
    assert [r["name"] for r in rows[:3]] == ["fixture hyde_arm", "control iso (fresh pytest process)",
                                             f"call {B} [under control broken]"]
    assert by["fixture hyde_arm"] == {"name": "fixture hyde_arm", "kind": "fixture", "scope": "session", "count": 2,
                                      "wall_s": 70.0, "llm_calls": 16, "prompt_tokens": 1600,
                                      "completion_tokens": 260, "cache_hits": 2}
    assert (by["fixture check"]["count"], by["fixture check"]["wall_s"]) == (2, 0.03)
    assert (by[f"call {B}"]["wall_s"], by[f"call {B}"]["cache_hits"]) == (2.5, 4)
    assert by["control iso (fresh pytest process)"]["llm_calls"] is None  # unknown, not 0
    assert len(rows) == 12


@pytest.mark.unit
def test_queries_come_only_from_what_the_check_says():
    assert queries_of({"n": 30, "available": 225}) == {"queries_used": 30, "queries_available": 225}
    assert queries_of({"n": 12}) == {}  # n alone may count anything (simulations, rounds): not queries
    assert queries_of({"queries_used": 5, "queries_available": 150, "n": 9, "available": 9}) == \
        {"queries_used": 5, "queries_available": 150}
    assert queries_of({"available": 40}) == {"queries_available": 40}
    assert queries_of({"n": True, "available": 3.5}) == {}


@pytest.mark.unit
def test_claims_separate_their_own_call_from_setup_they_paid_and_setup_they_share():
    rows = {r["name"]: r for r in claims(EVENTS, CHECKS)}
    a, b2, b3 = rows["X-1 on d1"], rows["X-2 on d1"], rows["X-3"]
    assert (a["wall_s"], a["llm_calls"], a["prompt_tokens"], a["completion_tokens"], a["cache_hits"]) == \
        (1.5, 3, 300, 30, 0)
    assert (a["queries_used"], a["queries_available"], a["tests"]) == (30, 225, [A])
    assert a["fixture_setup"] == {"wall_s": 40.01, "llm_calls": 10, "prompt_tokens": 1000, "completion_tokens": 200,
                                  "cache_hits": 2, "fixtures": ["hyde_arm", "check"]}
    assert a["shared_setup"] == NONE and "claims_in_test" not in a  # it paid hyde_arm itself
    # B's real call only (its run under a control is a phase, not the claim's); judges, set up in its call, it paid
    assert (b2["wall_s"], b2["llm_calls"], b2["cache_hits"]) == (2.5, 1, 4)
    assert b2["fixture_setup"]["fixtures"] == ["judges", "check"] and b2["fixture_setup"]["wall_s"] == 7.02
    # the hyde_arm it used is A's setup (40 s), not C's later one for another parameter
    assert b2["shared_setup"] == {"wall_s": 40.0, "llm_calls": 10, "prompt_tokens": 1000, "completion_tokens": 200,
                                  "cache_hits": 2, "fixtures": ["hyde_arm"]}
    assert b2["claims_in_test"] == 2 and "queries_used" not in b2 and "queries_available" not in b2
    assert (b3["queries_used"], b3["queries_available"]) == (5, 150)
    assert [r["name"] for r in claims(EVENTS, CHECKS)] == ["X-2 on d1", "X-3", "X-1 on d1"]


@pytest.mark.unit
def test_section_total_lines_and_html():
    section = timing_section(EVENTS[:-1], CHECKS)  # without the control process, every count is known
    assert section["total"] == {"wall_s": 90.79, "llm_calls": 27, "prompt_tokens": 2050, "completion_tokens": 305,
                                "cache_hits": 6}
    assert timing_section(EVENTS, CHECKS)["total"]["llm_calls"] is None  # a process whose calls are unknown
    lines = timing_lines(section)
    assert lines[0] == "slowest phases of 11:"
    assert "1m10s" in lines[2] and lines[2].endswith("fixture hyde_arm (x2)")
    assert len(lines) == 1 + 1 + 5 + 1 + 1 + 3 + 1
    assert any(x.endswith("X-2 on d1  set up 7.02s (judges, check)  shared 40.00s (hyde_arm)") for x in lines)
    assert any(x.endswith("X-1 on d1  queries 30/225  set up 40.01s (hyde_arm, check)") for x in lines)
    assert lines[-1].startswith("in tests: 1m31s, 27 LLM calls, 6 cache hits")
    html = timing_html(section, top=4)
    assert html.index("fixture hyde_arm") < html.index("under control broken") < html.index("fixture judges") \
        < html.index(f"call {B}<")
    assert "7 more phases, 2.29s in all" in html and "Where the time goes" in html and f"call {A}<" not in html
    assert html.index(">X-2 on d1<") < html.index(">X-3<") < html.index(">X-1 on d1<")
    assert html.count("its test checked 2 claims") == 2
    assert timing_lines({}) == [] and timing_html(None) == ""
    evil = timing_section([_ev("fixture", "t", 1.0, name="<script>x</script>", scope="session")], [])
    page = render_html({"specs": [], "timing": evil})
    assert "<script>x" not in page and "&lt;script&gt;x" in page and "Where the time goes" in page
    assert seconds_text(0.0123) == "0.012s" and seconds_text(119.6) == "2m00s" and seconds_text(None) == ""


# ---------------------------------------------------------------- as a user runs it
CATALOGUE = """
specs:
  - id: TIME-001
    title: A study answers every item
    marker: unit
    metric: answers
    comparator: "=="
    threshold: 3
    source: demo
  - id: TIME-002
    title: The same study, read again
    marker: unit
    metric: answers
    comparator: "=="
    threshold: 3
    source: demo
"""

TESTS = """
import time
import pytest

@pytest.fixture(scope="session")
def slow_study(rag_llm):
    time.sleep(0.3)
    return [rag_llm.complete(f"study item {i}", max_tokens=8).text for i in range(3)]

@pytest.mark.spec("TIME-001")
def test_first(slow_study, rag_llm, rag_check):
    rag_llm.complete_many([f"question {i}" for i in range(2)], max_tokens=8)  # on worker threads
    rag_llm.complete("question 0", max_tokens=8)  # from the response cache
    time.sleep(0.2)
    rag_check("TIME-001", len(slow_study), dataset="alpha", n=2, available=5)

@pytest.mark.spec("TIME-002")
def test_second(slow_study, rag_check):
    rag_check("TIME-002", len(slow_study))
"""


@pytest.mark.integration
def test_timing_section_as_a_user_runs_it(pytester: pytest.Pytester):
    new_project(pytester, CATALOGUE)
    pytester.makeconftest('from harness.llm.scripted import register\n\n'
                          'register("echo", lambda messages, params: "a short answer")\n')
    (pytester.path / "cfg.yaml").write_text("harness:\n  llm:\n    model: scripted/echo\n    cache: true\n")
    pytester.makepyfile(test_demo=TESTS)
    result = pytester.runpytest_subprocess("--report-dir", "out", "--harness-config", "cfg.yaml")
    result.assert_outcomes(passed=2)
    data = json.loads((pytester.path / "out" / "results.json").read_text())
    timing = data["timing"]
    ph = {r["name"]: r for r in timing["phases"]}
    study = ph["fixture slow_study"]
    # "study item i": 3 words, "a short answer": 3 words (the scripted model counts words)
    assert (study["scope"], study["count"], study["llm_calls"], study["prompt_tokens"], study["completion_tokens"],
            study["cache_hits"]) == ("session", 1, 3, 9, 9, 0)
    assert study["wall_s"] >= 0.3
    first = ph["call test_demo.py::test_first[TIME-001]"]
    assert (first["llm_calls"], first["prompt_tokens"], first["completion_tokens"], first["cache_hits"]) == (2, 4, 6, 1)
    assert first["wall_s"] >= 0.2
    assert ph["call test_demo.py::test_second[TIME-002]"]["llm_calls"] == 0
    assert {"setup test_demo.py::test_first[TIME-001]", "teardown test_demo.py::test_second[TIME-002]",
            "fixture rag_llm", "fixture rag_check"} <= set(ph)
    assert timing["total"]["llm_calls"] == data["spend"]["total"]["calls"] == 5
    assert timing["total"]["cache_hits"] == data["spend"]["total"]["cached_calls"] == 1
    cl = {r["name"]: r for r in timing["claims"]}
    one, two = cl["TIME-001 on alpha"], cl["TIME-002"]
    assert (one["llm_calls"], one["cache_hits"], one["queries_used"], one["queries_available"]) == (2, 1, 2, 5)
    assert "slow_study" in one["fixture_setup"]["fixtures"] and one["fixture_setup"]["llm_calls"] == 3
    assert one["fixture_setup"]["wall_s"] >= 0.3 and "slow_study" not in one["shared_setup"]["fixtures"]
    # the second test paid nothing of the study: it used the first one's
    assert two["shared_setup"]["fixtures"][0] == "slow_study" and two["shared_setup"]["llm_calls"] == 3
    assert two["shared_setup"]["wall_s"] >= 0.3 and two["fixture_setup"]["llm_calls"] == 0
    assert "slow_study" not in two["fixture_setup"]["fixtures"]
    assert "queries_used" not in two and "queries_available" not in two
    result.stdout.fnmatch_lines(["*rag-harness: where the time goes*", "slowest phases of *",
                                 "*fixture slow_study*", "slowest claims of 2*",
                                 "*TIME-001 on alpha  queries 2/5  set up *(slow_study, *"])
    assert "Where the time goes" in (pytester.path / "out" / "index.html").read_text()


@pytest.mark.integration
def test_a_run_with_nothing_but_timing_writes_no_report(pytester: pytest.Pytester):
    """Every test is timed, so timing alone must not make a run that checked and measured nothing write one."""
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider -p no:randomly -p no:asyncio\nfilterwarnings = error\n")
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = pytester.runpytest_subprocess("--report-dir", "out")
    result.assert_outcomes(passed=1)
    assert not (pytester.path / "out").exists()
    assert "where the time goes" not in result.stdout.str()

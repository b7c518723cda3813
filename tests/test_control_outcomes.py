"""What counts as a negative control killed: only the spec's own check failing under it (or the code under test
raising); a test that fails on a side assert is "not killed by its check" and fails the run like a survivor."""
from __future__ import annotations

import json
import textwrap
from types import SimpleNamespace

import pytest

from tests.pytester_kit import new_project

from harness.plugin.control_runs import _control_outcome, failure_kind
from harness.report.controls import control_lines, controls_html

pytest_plugins = ["pytester"]

CATALOGUE = """
specs:
  - id: KIL-001
    title: A sum is right (its check sees the control)
    marker: unit
    control: demo-add-broken
    metric: add(2, 2)
    comparator: "=="
    threshold: 4
    source: demo
  - id: KIL-002
    title: A side assert fails first, the check never runs
    marker: unit
    control: demo-add-broken
    metric: constant
    comparator: "=="
    threshold: 4
    source: demo
  - id: KIL-003
    title: The check passes, then a side assert fails
    marker: unit
    control: demo-add-broken
    metric: constant
    comparator: "=="
    threshold: 4
    source: demo
  - id: KIL-004
    title: The code under test raises under the control
    marker: unit
    control: demo-ratio-raises
    metric: ratio(6, 3)
    comparator: "=="
    threshold: 2.0
    source: demo
  - id: KIL-005
    title: A benchmark claim whose unit test only supports it
    marker: benchmark
    decision: estimate
    control: demo-add-broken
    metric: figure
    comparator: "<"
    threshold: 5
    source: demo
"""

CONFTEST = """
import mathlib
from harness.plugin.controls import control, replace_everywhere

@control("demo-add-broken", breaks="add returns a + b + 1")
def _off(mp):
    replace_everywhere(mp, mathlib.add, lambda a, b: a + b + 1)

@control("demo-ratio-raises", breaks="ratio divides by zero")
def _raises(mp):
    replace_everywhere(mp, mathlib.ratio, mathlib.broken_ratio)
"""

MATHLIB = """
def add(a, b):
    return a + b

def ratio(a, b):
    return a / b

def broken_ratio(a, b):
    return a / 0
"""

TESTS = """
import pytest
from mathlib import add, ratio

@pytest.mark.spec("KIL-001")
def test_sum(rag_spec, rag_check):
    rag_check(rag_spec.id, add(2, 2))

@pytest.mark.spec("KIL-002")
def test_side_assert_first(rag_spec, rag_check):
    assert add(2, 2) == 4, "a side assert"
    rag_check(rag_spec.id, 4)

@pytest.mark.spec("KIL-003")
def test_side_assert_after(rag_spec, rag_check):
    rag_check(rag_spec.id, 4)
    assert add(1, 1) == 2

@pytest.mark.spec("KIL-004")
def test_ratio(rag_spec, rag_check):
    rag_check(rag_spec.id, ratio(6, 3))

@pytest.mark.unit
@pytest.mark.spec("KIL-005")
def test_supporting(rag_spec):
    assert add(2, 2) == 4
"""


@pytest.mark.integration
def test_only_the_specs_own_check_kills_its_control(pytester: pytest.Pytester):
    new_project(pytester, CATALOGUE)
    pytester.makepyfile(mathlib=MATHLIB, conftest=CONFTEST, test_kil=TESTS)
    result = pytester.runpytest_subprocess("--report-dir", "out", "--negative-controls", "-m", "unit",
                                           "--spec-coverage", "off")
    result.assert_outcomes(passed=5)  # the real runs pass...
    assert result.ret != 0  # ...but a control killed only by a side assert fails the session
    result.stdout.fnmatch_lines([
        "*negative controls*",
        "KIL-002: not killed by its check — demo-add-broken (add returns a + b + 1): its check under the control: "
        "never reached; the test failed elsewhere: AssertionError: a side assert*",
        "KIL-003: not killed by its check — demo-add-broken*its check under the control: pass (4); the test failed "
        "elsewhere: assert 3 == 2*",
        "controls: 2 killed, 2 not killed by its check",
    ])
    data = json.loads((pytester.path / "out" / "results.json").read_text())
    rows = {r["id"]: r for r in data["specs"]}
    assert rows["KIL-001"]["control"]["outcome"] == "killed"
    assert rows["KIL-004"]["control"]["outcome"] == "killed"
    assert rows["KIL-004"]["control"]["detail"].startswith("error in the code under test: ZeroDivisionError")
    assert rows["KIL-002"]["control"]["outcome"] == rows["KIL-003"]["control"]["outcome"] == "not killed by its check"
    # a unit test of a benchmark claim runs under the control, but cannot decide it: the claim's check is elsewhere
    assert rows["KIL-005"]["control"] is None and rows["KIL-005"]["verdict"] == "not run"
    assert {c["nodeid"].split("::")[1] for c in data["controls"]} >= {"test_supporting[KIL-005]"}
    html = (pytester.path / "out" / "index.html").read_text()
    assert "<h2>Negative controls</h2>" in html and "not killed by its check" in html and "KIL-004" in html


BENCH = """
specs:
  - id: KIL-B1
    title: A benchmark figure whose test asserts on the study before checking a constant
    marker: benchmark
    decision: estimate
    control: demo-study-inflated
    metric: figure
    comparator: "<"
    threshold: 2.0
    source: demo
"""


@pytest.mark.integration
def test_a_benchmark_test_failing_on_a_side_assert_is_not_killed_by_its_check(pytester: pytest.Pytester):
    """The fresh process under --under-control reads the spec's row: the test failed, but its check never
    recorded a failing verdict."""
    new_project(pytester, BENCH)
    pytester.makepyfile(mylib="def compute():\n    return 1.0\n", conftest=textwrap.dedent("""
        import mylib
        from harness.plugin.controls import control

        @control("demo-study-inflated", breaks="the study's figure is five times too large")
        def _inflate(mp):
            mp.setattr(mylib, "compute", lambda: 5.0)
    """), test_bench=textwrap.dedent("""
        import pytest
        import mylib

        @pytest.mark.spec("KIL-B1")
        def test_figure(rag_check):
            assert mylib.compute() < 2, "a side assert on the study"
            rag_check("KIL-B1", 1.0)
"""))
    result = pytester.runpytest_subprocess("--report-dir", "out", "-m", "benchmark", "--negative-controls")
    result.assert_outcomes(passed=1)
    assert result.ret != 0
    row = json.loads((pytester.path / "out" / "results.json").read_text())["specs"][0]
    assert row["verdict"] == "pass" and row["control"]["outcome"] == "not killed by its check"
    assert "AssertionError: a side assert on the study" in row["control"]["detail"]


def _report(when: str = "call") -> SimpleNamespace:
    return SimpleNamespace(when=when, failed=True)


@pytest.mark.unit
@pytest.mark.parametrize("failed, exc, verdicts, outcome", [
    ([], None, [], "survived"),
    ([_report()], "assertion", ["fail"], "killed"),  # the spec's check failed
    ([_report()], "assertion", ["refuted"], "killed"),
    ([_report()], "error", [], "killed"),  # the code under test raised
    ([_report()], "assertion", [], "not killed by its check"),  # a side assert before the check
    ([_report()], "assertion", ["pass"], "not killed by its check"),  # the check passed, a side assert failed
    ([_report()], "assertion", ["inconclusive"], "not killed by its check"),
    ([_report()], "test-error", [], "crashed"),  # the test's own code raised
    ([_report("setup")], None, [], "crashed"),
])
def test_control_outcome_table(failed, exc, verdicts, outcome):
    assert _control_outcome(failed, False, exc, verdicts) == outcome


@pytest.mark.unit
def test_an_inconclusive_check_kills_only_under_strict_verdicts():
    assert _control_outcome([_report()], False, "assertion", ["inconclusive"], strict=True) == "killed"
    assert _control_outcome([], True, None, []) == "skipped"


@pytest.mark.unit
def test_failure_kind_tells_the_test_from_the_code_under_test(tmp_path):
    def raise_here():
        raise ValueError("in this module")

    with pytest.raises(ValueError) as here:
        raise_here()
    with pytest.raises(json.JSONDecodeError) as there:
        json.loads("{")
    with pytest.raises(AssertionError) as asserted:
        assert 1 == 2
    this_module = SimpleNamespace(path=__file__)
    assert failure_kind(this_module, here) == "test-error"
    assert failure_kind(this_module, there) == "error"  # raised inside json
    assert failure_kind(this_module, asserted) == "assertion"
    assert failure_kind(SimpleNamespace(path=tmp_path / "other.py"), here) == "error"


@pytest.mark.unit
def test_control_lines_and_html_escape_and_count():
    rows = [{"id": "A-1", "control": {"name": "c", "breaks": "b", "outcome": "killed", "detail": "", "killed_by": ["t"]}},
            {"id": "A-2", "control": {"name": "c", "breaks": "<b>", "outcome": "not killed by its check",
                                      "detail": "x < y", "killed_by": []}},
            {"id": "A-3", "control": None}]
    lines = control_lines(rows)
    assert lines[:2] == ["A-2: not killed by its check — c (<b>): x < y", "controls: 1 killed, 1 not killed by its check"]
    assert lines[2].startswith("the run fails (exit 1) on its negative controls: 1 not killed by its check")
    assert control_lines(rows[:1]) == ["controls: 1 killed"]  # nothing failing: no failing line
    html = controls_html(rows)
    assert "&lt;b&gt;" in html and "x &lt; y" in html and "<b>b</b>" not in html
    assert 'class="v v-pass">killed' in html and 'class="v v-fail">not killed by its check' in html
    assert controls_html([{"id": "A-3", "control": None}]) == ""

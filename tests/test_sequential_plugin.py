"""Sequential claims as a user runs them: `check_sequential` stops drawing queries at the first deciding look."""
from __future__ import annotations

import json

import pytest

from tests.pytester_kit import new_project

pytestmark = pytest.mark.integration
pytest_plugins = ["pytester"]

CATALOGUE = """
specs:
  - id: SEQ-001
    title: A technique improves the score
    marker: unit
    decision: ci
    metric: score(technique) - score(baseline)
    comparator: ">"
    threshold: 0
    source: demo
  - id: SEQ-MIN
    title: A technique improves the score on at least 20 queries
    marker: unit
    decision: ci
    metric: score(technique) - score(baseline)
    comparator: ">"
    threshold: 0
    min_n: 20
    source: demo
  - id: SEQ-TEST
    title: A technique improves the score (a p-value rule)
    marker: unit
    decision: {rule: test, test: t, alpha: 0.05}
    metric: score(technique) - score(baseline)
    comparator: ">"
    threshold: 0
    source: demo
"""

# scores in 0..1 per query (the default bounds), candidate - baseline = d
TESTS = """
import numpy as np
import pytest
from harness.stats import paired_effect

DRAWN = []

@pytest.mark.spec("{spec}")
def test_claim(rag_check_sequential):
    d = np.array({values})
    base = np.full(len(d), 0.05)

    def measure_at(n, confidence):
        DRAWN.append(n)
        return paired_effect(base[:n] + d[:n], base[:n], bounds={bounds}, confidence=confidence), \\
            {{"fallback_rate": 0.0, "p_value": 0.001}}

    rag_check_sequential("{spec}", measure_at, len(d), available=len(d), model="scripted")
    print("DRAWN", DRAWN)
"""
RCI = "harness:\n  sequential:\n    boundary: rci\n"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return new_project(pytester, CATALOGUE)


def _row(project: pytest.Pytester, values: list[float], *args: str, spec: str = "SEQ-001",
         bounds: str = "(0.0, 1.0)") -> tuple[dict, str, dict]:
    project.makepyfile(test_seq=TESTS.format(values=values, spec=spec, bounds=bounds))
    result = project.runpytest_subprocess("--report-dir", "out", "-s", "--spec-coverage=off", *args)
    data = json.loads((project.path / "out" / "results.json").read_text())
    check = next((c for c in data["checks"] if c["spec_id"] == spec), {})
    return {r["id"]: r for r in data["specs"]}[spec], result.stdout.str(), check


def _rci(project: pytest.Pytester) -> str:
    (project.path / "rci.yaml").write_text(RCI)
    return "--harness-config=rci.yaml"


def test_a_large_effect_stops_at_the_first_look(project: pytest.Pytester):
    row, out, check = _row(project, [0.9, 0.85] * 15)
    assert row["verdict"] == "supported"
    assert "DRAWN [10]" in out  # looks 10, 20, 30 planned; queries 11-30 never drawn
    seq = row["sequential"]
    assert seq["looks"] == [10, 20, 30] and seq["stopped_at_look"] == 1 and seq["queries_used"] == 10
    assert row["queries_used"] == 10 and row["n"] == 10 and seq["boundary"] == "anytime"
    # the interval decided on is the betting confidence sequence at 95%, valid at every look at once
    assert row["interval"] == "betting" and row["confidence"] == pytest.approx(0.95)
    # the row names its query order and seed, and shows no p-value (a look's p is not adjusted for the looks)
    assert check["context"]["query_order"] == seq["query_order"] == {"order": "random", "seed": 13}
    assert "look 1/3 (10 of ≤30, random order, seed 13; betting interval)" in out  # the terminal table too
    assert row["p_value"] is None and check["effect"]["p_values"] == {} and check["context"]["p_value"] is None


def test_the_repeated_t_interval_under_boundary_rci(project: pytest.Pytester):
    row, out, _ = _row(project, [0.9, 0.85] * 15, _rci(project))
    assert row["verdict"] == "supported" and "DRAWN [10]" in out
    # the interval decided on is look 1's repeated interval (99.98%), not a fixed-n 95% one
    assert row["interval"] == "t" and row["confidence"] == pytest.approx(0.99979, abs=1e-5)


def test_no_effect_uses_every_look(project: pytest.Pytester):
    row, out, _ = _row(project, [0.3, -0.03] * 15)
    assert row["verdict"] == "inconclusive" and "DRAWN [10, 20, 30]" in out
    assert [h["n"] for h in row["sequential"]["history"]] == [10, 20, 30]
    assert row["confidence"] == pytest.approx(0.95)


def test_fixed_n_draws_everything_once(project: pytest.Pytester):
    row, out, _ = _row(project, [0.9, 0.85] * 15, "--fixed-n")
    assert row["verdict"] == "supported" and "DRAWN [30]" in out
    assert row["sequential"]["looks"] == [30] and row["confidence"] == pytest.approx(0.95) and row["interval"] == "t"


def test_min_n_holds_inside_the_looks(project: pytest.Pytester):
    """A claim that asks 20 queries cannot stop supported at the look of 10: it draws the next look."""
    row, out, _ = _row(project, [0.9, 0.85] * 15, spec="SEQ-MIN")
    assert row["verdict"] == "supported" and "DRAWN [10, 20]" in out
    assert [h["verdict"] for h in row["sequential"]["history"]] == ["inconclusive", "supported"]


def test_the_test_rule_cannot_be_sequential(project: pytest.Pytester):
    project.makepyfile(test_seq=TESTS.format(values=[0.9, 0.85] * 15, spec="SEQ-TEST", bounds="(0.0, 1.0)"))
    result = project.runpytest_subprocess("--report-dir", "out", "-s", "--spec-coverage=off")
    result.assert_outcomes(failed=1)
    assert "decided by the test rule" in result.stdout.str() and "DRAWN [" not in result.stdout.str()


def test_an_unbounded_metric_needs_the_rci_boundary(project: pytest.Pytester):
    project.makepyfile(test_seq=TESTS.format(values=[0.9, 0.85] * 15, spec="SEQ-001", bounds="None"))
    result = project.runpytest_subprocess("--report-dir", "out", "-s", "--spec-coverage=off")
    result.assert_outcomes(failed=1)
    assert "anytime-valid interval" in result.stdout.str()


def test_a_claim_no_look_can_decide_stops_futile_and_says_so(project: pytest.Pytester):
    # differences of +-0.001 around 0 against "> 0": the interval straddles 0 and can hardly leave it by look 3
    row, out, check = _row(project, [0.001, -0.001] * 15)
    seq = row["sequential"]
    assert row["verdict"] == "inconclusive" and seq["stopped"] == "futile at look 2" and seq["queries_used"] == 20
    assert "DRAWN [10, 20]" in out  # queries 21-30 never drawn
    assert 0.0 <= seq["decision_probability"] < 0.10
    assert "stopped: futile at look 2, look 2/3 (20 of ≤30" in out and row["queries_needed"]
    # it reports its stopping look's own (anytime) interval, as the calibration of that coverage reads it
    # (SequentialOutcome.reported_effect); under the control that swaps in the fixed-n interval, the row shows that
    assert row["datasets"][0]["ci"] == pytest.approx(seq["history"][-1]["ci"])
    anytime = row["datasets"][0]["ci"]
    project.makeconftest("""
import pytest
from harness.plugin.controls.registry import CONTROLS


def pytest_configure(config):
    CONTROLS["fixed-interval-at-futile-stop"].apply(pytest.MonkeyPatch())
""")
    row, _, _ = _row(project, [0.001, -0.001] * 15)
    fixed = row["datasets"][0]["ci"]
    assert row["sequential"]["stopped"] == "futile at look 2" and fixed != pytest.approx(anytime)
    assert fixed[1] - fixed[0] < anytime[1] - anytime[0]  # the fixed-n interval is the narrower one
    (project.path / "conftest.py").unlink()
    off = project.path / "nofutility.yaml"
    off.write_text("harness:\n  sequential:\n    futility: 0\n")
    row, out, _ = _row(project, [0.001, -0.001] * 15, f"--harness-config={off}")
    assert row["sequential"]["queries_used"] == 30 and "stopped" not in row["sequential"]

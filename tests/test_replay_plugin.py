"""`rag_replay` as a user runs it: a measurement drawn in one run is replayed by the next on the same code,
configuration and model (no draw, the replay in the terminal and in results.json, the claim's row saying when it
was measured), and `--no-llm-cache` draws afresh."""
from __future__ import annotations

import json

import pytest

from tests.pytester_kit import new_project

pytestmark = pytest.mark.integration
pytest_plugins = ["pytester"]

CATALOGUE = """
specs:
  - id: LAT
    title: The pipeline answers within a second
    marker: benchmark
    decision: estimate
    metric: seconds
    comparator: "<="
    threshold: 1
    source: demo
"""

TESTS = """
import pytest

pytestmark = pytest.mark.benchmark


@pytest.mark.spec("LAT")
def test_latency(rag_replay, rag_check):
    def draw():
        print("DRAWN")
        return [0.2, 0.3]

    times, replayed_from = rag_replay("latency", draw, model="demo-model")
    rag_check("LAT", sum(times), **({"replayed_from": replayed_from} if replayed_from else {}))
"""


def _run(p: pytest.Pytester, *args: str):
    result = p.runpytest_subprocess("--report-dir", "out", "-s", "--spec-coverage=off", *args)
    result.assert_outcomes(passed=1)
    return result.stdout.str(), json.loads((p.path / "out" / "results.json").read_text())


def test_a_second_run_replays_what_the_first_drew(pytester: pytest.Pytester):
    p = new_project(pytester, CATALOGUE)
    p.makepyfile(test_lat=TESTS)
    out, first = _run(p)
    assert "DRAWN" in out and "replayed" not in first
    out, second = _run(p)
    assert "DRAWN" not in out
    assert "replayed: 1 measurement of earlier runs on this code and model" in out
    assert [r["name"] for r in second["replayed"]] == ["latency"]
    (row,) = [r for r in second["specs"] if r["id"] == "LAT"]
    assert row["verdict"] == "pass" and row["value"] == pytest.approx(0.5)
    checks = [c for c in second["checks"] if c.get("spec_id", c.get("id")) == "LAT"]
    assert second["replayed"][0]["measured_at"] in json.dumps(checks)  # the claim's check says when it was measured
    out, third = _run(p, "--no-llm-cache")  # no response cache: no replay either
    assert "DRAWN" in out and "replayed" not in third

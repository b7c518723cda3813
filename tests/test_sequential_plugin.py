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
"""

TESTS = """
import numpy as np
import pytest
from harness.stats import paired_effect

DRAWN = []

@pytest.mark.spec("SEQ-001")
def test_claim(rag_check_sequential):
    d = np.array({values})

    def measure_at(n, confidence):
        DRAWN.append(n)
        return paired_effect(d[:n], np.zeros(n), bounds=None, confidence=confidence), {{"fallback_rate": 0.0}}

    rag_check_sequential("SEQ-001", measure_at, len(d), available=len(d), model="scripted")
    print("DRAWN", DRAWN)
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return new_project(pytester, CATALOGUE)


def _row(project: pytest.Pytester, values: list[float], *args: str) -> tuple[dict, str]:
    project.makepyfile(test_seq=TESTS.format(values=values))
    result = project.runpytest_subprocess("--report-dir", "out", "-s", *args)
    data = json.loads((project.path / "out" / "results.json").read_text())
    return {r["id"]: r for r in data["specs"]}["SEQ-001"], result.stdout.str()


def test_a_large_effect_stops_at_the_first_look(project: pytest.Pytester):
    row, out = _row(project, [0.9, 1.1] * 15)
    assert row["verdict"] == "supported"
    assert "DRAWN [10]" in out  # looks 10, 20, 30 planned; queries 11-30 never drawn
    seq = row["sequential"]
    assert seq["looks"] == [10, 20, 30] and seq["stopped_at_look"] == 1 and seq["queries_used"] == 10
    assert row["queries_used"] == 10 and row["n"] == 10
    # the interval decided on is look 1's repeated interval (99.98%), not a fixed-n 95% one
    assert row["confidence"] == pytest.approx(0.99979, abs=1e-5)


def test_no_effect_uses_every_look(project: pytest.Pytester):
    row, out = _row(project, [0.3, -0.3] * 15)
    assert row["verdict"] == "inconclusive" and "DRAWN [10, 20, 30]" in out
    assert [h["n"] for h in row["sequential"]["history"]] == [10, 20, 30]
    assert row["confidence"] == pytest.approx(0.95374, abs=1e-5)


def test_fixed_n_draws_everything_once(project: pytest.Pytester):
    row, out = _row(project, [0.9, 1.1] * 15, "--fixed-n")
    assert row["verdict"] == "supported" and "DRAWN [30]" in out
    assert row["sequential"]["looks"] == [30] and row["confidence"] == pytest.approx(0.95)

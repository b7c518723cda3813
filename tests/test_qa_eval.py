from __future__ import annotations

import pytest

from harness.techniques.qa_eval import compare_accuracy
from harness.types import Query

pytestmark = pytest.mark.unit


def test_compare_accuracy_paired():
    qs = [Query(str(i), f"q{i}", {"answers": [f"a{i}"]}) for i in range(6)]
    base = lambda q: "a0" if q == "q0" else "nope"  # noqa: E731
    cand = lambda q: f"it is a{q[1:]}" if q in ("q0", "q1", "q2") else "nope"  # noqa: E731
    cmp_ = compare_accuracy(qs, base, cand)
    assert cmp_.baseline.tolist() == [1, 0, 0, 0, 0, 0] and cmp_.delta == pytest.approx(2 / 6)
    ctx = cmp_.context()
    assert ctx["discordant"] == [0, 2] and ctx["p_value"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="without gold 'answers'"):
        compare_accuracy([Query("x", "q")], base, cand)


def test_llm_errors_are_failures_of_the_arm():
    """An error stays in the pairing as that arm's failure (never dropped) and counts in error_rate."""
    from harness.llm.client import LLMError

    qs = [Query(str(i), f"q{i}", {"answers": [f"a{i}"]}) for i in range(5)]

    def flaky(q: str) -> str:
        if q == "q3":
            raise LLMError("500 from the provider")
        return f"a{q[1:]}"

    cmp_ = compare_accuracy(qs, lambda q: "a3" if q == "q3" else "nope", flaky)
    assert cmp_.errors == {"baseline": [], "candidate": ["3"]} and cmp_.error_rate == pytest.approx(1 / 5)
    # q3: baseline right, candidate failed -> a degraded pair, not a dropped one
    assert cmp_.baseline.tolist() == [0, 0, 0, 1, 0] and cmp_.candidate.tolist() == [1, 1, 1, 0, 1]
    assert cmp_.context()["error_rate"] == pytest.approx(0.2) and cmp_.responses[3] == ("a3", None)


def test_incremental_comparison_asks_each_question_once():
    from harness.techniques.qa_eval import IncrementalComparison

    qs = [Query(str(i), f"q{i}", {"answers": [f"a{i}"]}) for i in range(6)]
    asked: list[str] = []

    def cand(q: str) -> str:
        asked.append(q)
        return f"a{q[1:]}" if q != "q4" else "no"

    inc = IncrementalComparison(qs, lambda q: "no", cand)
    first = inc.upto(2)
    assert first.ids == ["0", "1"] and asked == ["q0", "q1"]
    all_ = inc.upto(6)
    assert asked == [f"q{i}" for i in range(6)] and all_.candidate.tolist() == [1, 1, 1, 1, 0, 1]
    assert inc.upto(3).candidate.tolist() == [1, 1, 1] and len(asked) == 6

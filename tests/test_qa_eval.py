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


def test_llm_errors_are_counted_not_scored_wrong():
    from harness.llm.client import LLMError

    qs = [Query(str(i), f"q{i}", {"answers": [f"a{i}"]}) for i in range(5)]

    def flaky(q: str) -> str:
        if q == "q3":
            raise LLMError("500 from the provider")
        return f"a{q[1:]}"

    cmp_ = compare_accuracy(qs, lambda q: "nope", flaky)
    assert cmp_.errors == ["3"] and cmp_.error_rate == pytest.approx(1 / 5)
    assert len(cmp_.baseline) == len(cmp_.candidate) == 4 and cmp_.candidate.tolist() == [1, 1, 1, 1]
    assert cmp_.context()["error_rate"] == pytest.approx(0.2)

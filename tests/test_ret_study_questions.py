"""RET's study questions from a QA set with hallucinated answers and qrels (HaluEval) and from the retail KB."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from harness.data.qa import QADataset, QAItem
from harness.techniques.ret.mcq import RetQuestion, qa_study, retail_study
from harness.types import Hit

pytestmark = pytest.mark.unit
KB = Path(__file__).resolve().parents[1] / "fixtures" / "retail_kb"


def _ds(n: int = 12) -> QADataset:
    items = [QAItem(f"q{i}", f"question {i}?", (f"right {i}",), hallucinated_answer=f"wrong {i}") for i in range(n)]
    items.append(QAItem("q-nohall", "no hallucinated answer?", ("x",)))  # unusable: no wrong answer to offer
    qrels = {f"q{i}": {f"d{i}": 1} for i in range(n)} | {"q-nohall": {"dx": 1}}
    return QADataset("toy", items, qrels=qrels)


def test_mcq_then_open_questions_with_the_qrels_as_the_relevance_label():
    mcq, open_qa = qa_study(_ds(), 4, seed=5)
    assert [q.id for q, _, _ in mcq] == ["q0", "q1", "q2", "q3"] and [q.id for q in open_qa] == ["q4", "q5", "q6", "q7"]
    for q, options, gold in mcq:
        i = q.id[1:]
        assert options[gold] == f"right {i}" and f"wrong {i}" in options and len(set(options)) == 4
    assert sorted(Counter(g for _, _, g in mcq).values()) == [1, 1, 1, 1]  # the right letter balanced
    q = mcq[0][0]
    assert q.is_relevant(Hit("d0", 1.0, "anything")) and not q.is_relevant(Hit("d1", 1.0, "right 0"))


def test_the_same_seed_builds_the_same_options():
    assert qa_study(_ds(), 8, seed=1)[0] == qa_study(_ds(), 8, seed=1)[0]
    assert any(qa_study(_ds(), 8, seed=s)[0] != qa_study(_ds(), 8, seed=1)[0] for s in range(2, 6))


def test_open_answers_accept_any_alternative_but_retail_answers_need_every_part():
    alt = RetQuestion("a", "?", ("Paris", "City of Light"))
    assert alt.answered_by("It is the City of Light.") and not alt.answered_by("Lyon")
    parts = RetQuestion("b", "?", ("30 days", "a receipt"), all_parts=True)
    assert parts.answered_by("Within 30 days with a receipt.") and not parts.answered_by("Within 30 days.")


def test_too_few_usable_questions_is_an_error():
    with pytest.raises(ValueError, match="at least 4 questions"):
        qa_study(_ds(3), 3, seed=1)


def test_retail_study_keeps_its_pages_as_the_relevance_label():
    from harness.data import load_experiment_inputs

    mcq, open_qa = retail_study(load_experiment_inputs(KB), 3, seed=13)
    assert len(mcq) == 3 and len(open_qa) == 3 and all(q.all_parts and q.references for q in open_qa)
    q, options, gold = mcq[0]
    page = q.references[0]
    assert q.is_relevant(Hit("c1", 1.0, f"... {q.answers[0]} ...", {"filename": page}))
    assert not q.is_relevant(Hit("c2", 1.0, f"... {q.answers[0]} ...", {"filename": "other.md"}))


def test_the_choice_is_a_capital_letter_standing_alone():
    from harness.techniques.ret.mcq import parse_choice

    assert parse_choice("B") == 1 and parse_choice("(C) because") == 2 and parse_choice("Answer: D.") == 3
    assert parse_choice("a cat sat on the mat") is None, "the article 'a' is not option A"
    assert parse_choice("I am not sure") is None

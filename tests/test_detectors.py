"""The answer detectors behind the E2-E4 claims (issue 31): precision and recall by hand, the labelled set's loader,
and the detectors on the cases the pre-issue ones got wrong."""
from __future__ import annotations

import json
import math

import pytest

from harness.data.errors import DataError
from harness.metrics.detectors import (DetectorScore, load_detector_set, loose_abstention, loose_has_reasoning,
                                       loose_rejects_premise, loose_specific_reasoning, measure, score_detector)
from harness.metrics.qa import is_abstention, rejects_premise
from harness.metrics.reasoning import has_reasoning, novel_reasoning, specific_reasoning

pytestmark = pytest.mark.unit


# ---------------------------------------------------------------- precision and recall, by hand
def test_precision_and_recall_by_hand():
    # pairs (prediction, label): TT, TF, FT, FF, TT -> tp 2, fp 1, fn 1, tn 1: precision 2/3, recall 2/3
    s = score_detector([True, True, False, False, True], [True, False, True, False, True])
    assert (s.tp, s.fp, s.fn, s.tn) == (2, 1, 1, 1)
    assert s.precision == pytest.approx(2 / 3) and s.recall == pytest.approx(2 / 3) and s.worst == pytest.approx(2 / 3)
    # 3 of 4 positives found, one false alarm among 6 negatives: precision 3/4, recall 3/4; another: 1/1 and 1/3
    s = score_detector([True] * 3 + [False] + [True] + [False] * 5, [True] * 4 + [False] * 6)
    assert (s.precision, s.recall) == (0.75, 0.75)
    s = score_detector([True, False, False, False], [True, True, True, False])
    assert (s.precision, s.recall, s.worst) == (1.0, pytest.approx(1 / 3), pytest.approx(1 / 3))
    assert s.as_context()["n"] == 4


def test_undefined_precision_and_recall_are_nan():
    s = score_detector([False, False], [False, True])  # nothing detected: precision 0/0, the weaker side recall 0
    assert math.isnan(s.precision) and s.recall == 0.0 and s.worst == 0.0
    s = score_detector([True, False], [False, False])  # nothing to find: recall 0/0, the weaker side precision 0
    assert s.precision == 0.0 and math.isnan(s.recall) and s.worst == 0.0
    s = score_detector([False], [False])  # neither defined
    assert math.isnan(s.precision) and math.isnan(s.recall) and math.isnan(s.worst)
    assert DetectorScore(0, 0, 0, 0).as_context()["n"] == 0
    with pytest.raises(ValueError, match="2 predictions for 3 labels"):
        score_detector([True, False], [True, False, True])


def _write(tmp_path, rows):
    p = tmp_path / "set.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def _row(i, answer, **labels):
    return {"id": i, "source": "hand", "question": "When did the UK adopt the Euro?", "answer": answer,
            "labels": labels, "note": "n"}


def test_measure_scores_only_the_items_labelled_for_the_detector(tmp_path):
    items = load_detector_set(_write(tmp_path, [
        _row("a", "I don't know.", abstains=True, rejects_premise=False),       # new: tp, loose: tp (and a premise fp)
        _row("b", "Delivery dates are unknown until dispatch; it ships in 3 days.", abstains=False),  # loose: fp
        _row("c", "The UK has never adopted the Euro.", abstains=False, rejects_premise=True),
        _row("d", "The UK did not adopt the Euro until 2024.", rejects_premise=False),  # loose: fp
        _row("e", "Sure.", rejects_premise=None),                                 # not labelled for either
    ]))
    new, loose = measure("abstains", items), measure("abstains", items, loose=True)
    assert (new.tp, new.fp, new.fn, new.tn) == (1, 0, 0, 2) and (loose.tp, loose.fp, loose.fn, loose.tn) == (1, 1, 0, 1)
    new, loose = measure("rejects_premise", items), measure("rejects_premise", items, loose=True)
    # loose: "don't" in a and "did not" in d read as premise rejections: tp 1 (c), fp 2 -> precision 1/3
    assert (new.tp, new.fp, new.fn, new.tn) == (1, 0, 0, 2) and (loose.tp, loose.fp) == (1, 2)
    assert loose.precision == pytest.approx(1 / 3) and new.precision == 1.0


@pytest.mark.parametrize("bad, message", [
    ({"labels": {"abstain": True}}, "field 'labels'"),
    ({"labels": {"abstains": "yes"}}, "values must be true, false or null"),
    ({"note": ""}, "field 'note': empty"),
])
def test_loader_names_the_line_and_field(tmp_path, bad, message):
    p = _write(tmp_path, [_row("a", "x", abstains=True), {**_row("b", "y", abstains=False), **bad}])
    with pytest.raises(DataError, match=rf"set.jsonl:2:.*{message}"):
        load_detector_set(p)
    with pytest.raises(DataError, match="duplicate 'a'"):
        load_detector_set(_write(tmp_path, [_row("a", "x", abstains=True), _row("a", "y", abstains=True)]))


# ---------------------------------------------------------------- abstention and premise: a statement, not a word
@pytest.mark.parametrize("answer, new, loose", [
    ("Unknown.", True, True),
    ("There is insufficient information to answer that.", True, True),
    ("The Exceptions section is not available for this question.", True, False),
    ("Delivery dates to Alaska are unknown until dispatch; express costs $14.99.", False, True),
    ("An insufficient-postage fee of $5 applies to returns.", False, True),
    ("Not mentioned on the box, but the lamp weighs 2.5 kg.", False, True),
])
def test_abstention_needs_an_abstention_statement(answer, new, loose):
    assert is_abstention(answer) is new and loose_abstention(answer) is loose


@pytest.mark.parametrize("answer, question, new, loose", [
    ("The UK did not adopt the Euro until 2024.", "When did the UK adopt the Euro?", False, True),
    ("It is not available for in-store shopping.", "How much does it cost to replace lost airline vouchers?", False,
     True),
    ("No, they are not American rock bands.", "Are both The New Pornographers and Kings of Leon American rock bands?",
     False, True),
    ("Bodybuilding is not an Olympic sport.", "In what year did bodybuilding become an Olympic sport?", True, True),
    ("No humans have been to Mars yet.", "What year did the first human land on Mars?", True, False),
    ("There is currently no permanent cure for cancer.", "When was the permanent cure for cancer developed?", True,
     False),
])
def test_premise_rejection_needs_a_denial_of_the_premise(answer, question, new, loose):
    assert rejects_premise(answer, question) is new and loose_rejects_premise(answer, question) is loose


def test_premise_rejection_without_the_question_reads_the_phrases_only():
    assert rejects_premise("There is no third child.") and rejects_premise("Meta has never moved its headquarters there.")
    assert not rejects_premise("Bodybuilding is not an Olympic sport.")  # needs the question to know what it denies


# ---------------------------------------------------------------- E4 reasoning: echo is not reasoning
CHUNKS = [{"chunk_id": "shipping-alaska.md#chunk_1", "metadata": {"filename": "shipping-alaska.md"},
           "text": "## Free Shipping Threshold\nOrders shipped to Alaska over $35 ship free. This policy was last "
                   "reviewed by the customer care team this quarter."},
          {"chunk_id": "shipping-hawaii.md#chunk_1", "metadata": {"filename": "shipping-hawaii.md"},
           "text": "## Free Shipping Threshold\nOrders shipped to Hawaii over $49 ship free."}]


def _e4(reasoning, answer="Over $35."):
    return {"query": "What order value ships free to Alaska?", "retrieved_chunks": CHUNKS,
            "reasoning_steps": reasoning, "llm_answer": answer}


@pytest.mark.parametrize("reasoning, has, specific", [
    ("Question: What order value ships free to Alaska?\nThe answer is: over $35.", False, False),  # echo, the answer
    ("Orders shipped to Alaska over $35 ship free. This policy was last reviewed by the customer care team this "
     "quarter.", False, False),                                                                  # a source copied
    ("Break down problem. Check context relevance.", False, False),                              # the instructions
    ("Step 1: Source 1 covers Alaska, Source 2 covers Hawaii. Step 2: so the Alaska threshold applies.", True, True),
    ("Step 1: Hawaii needs more than Alaska.", True, True),                       # own comparison, context beyond
    ("Step 1: it depends on many factors and may vary.", True, False),            # own, but generic
])
def test_reasoning_detectors_skip_echo(reasoning, has, specific):
    row = _e4(reasoning)
    assert has_reasoning(row) is has and specific_reasoning(row) is specific
    assert loose_has_reasoning(row) and bool(novel_reasoning(row)) is has


def test_the_loose_specificity_rule_credits_an_echoed_question():
    row = _e4("Question: What order value ships free to Alaska?")
    assert loose_specific_reasoning(row) and not specific_reasoning(row)
    assert not has_reasoning(_e4("")) and not has_reasoning({**_e4("x"), "reasoning_steps": None})

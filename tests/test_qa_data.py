"""QA and MCQ loaders (errors name file, line and field), open-QA scoring on hand-computed cases, FreshQA's
false-premise rule, and the seeded, balanced multiple-choice builder."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from harness.data.errors import DataError
from harness.data.qa import MCQItem, QAItem, content_hash, dataset_card, load_mcq, load_qa, mcq_from_qa
from harness.metrics.qa import answer_match, exact_match, is_abstention, rejects_premise, score_answer, token_f1

pytestmark = pytest.mark.unit


def _write(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


# ---------------------------------------------------------------- loaders
def test_qa_set_with_corpus_and_qrels(tmp_path):
    root = tmp_path / "myqa"
    _write(root / "queries.jsonl", [
        {"_id": "q1", "text": "Who?", "answers": ["Ada", "Ada Lovelace"], "hallucinated_answer": "Bob", "topic": "x"},
        {"_id": "q2", "text": "When?", "answers": "1843", "false_premise": True},
    ])
    _write(root / "corpus.jsonl", [{"_id": "d1", "title": "T", "text": "Ada wrote notes in 1843."}])
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    ds = load_qa(root)
    assert [i.id for i in ds.items] == ["q1", "q2"] and ds.items[0].answers == ("Ada", "Ada Lovelace")
    assert ds.items[0].hallucinated_answer == "Bob" and ds.items[0].metadata == {"topic": "x"}
    assert ds.items[1].answers == ("1843",) and ds.items[1].false_premise
    assert list(ds.corpus) == ["d1"] and ds.qrels == {"q1": {"d1": 1}}


@pytest.mark.parametrize("row, field, problem", [
    ({"_id": "q", "text": "t"}, "answers", "missing"),
    ({"_id": "q", "text": "t", "answers": []}, "answers", "non-empty list"),
    ({"_id": "q", "text": "t", "answers": ["ok", ""]}, "answers", "item 1"),
    ({"_id": "q", "text": "t", "answers": ["a"], "false_premise": "yes"}, "false_premise", "true or false"),
    ({"_id": "q", "text": "", "answers": ["a"]}, "text", "empty"),
])
def test_qa_errors_name_file_line_field(tmp_path, row, field, problem):
    path = _write(tmp_path / "s" / "queries.jsonl", [{"_id": "ok", "text": "t", "answers": ["a"]}, row])
    with pytest.raises(DataError) as err:
        load_qa(tmp_path / "s")
    assert (err.value.path, err.value.line, err.value.field) == (str(path), 2, field)
    assert problem in err.value.problem and f"{path}:2: field '{field}':" in str(err.value)


def test_lenient_mode_counts_skipped_lines(tmp_path):
    _write(tmp_path / "s" / "queries.jsonl", [{"_id": "a", "text": "t", "answers": ["x"]}, "{not json",
                                              {"_id": "a", "text": "t", "answers": ["x"]}])
    ds = load_qa(tmp_path / "s", strict=False)
    assert len(ds.items) == 1 and ds.skipped.count == 2
    assert [e.line for e in ds.skipped.errors] == [2, 3] and ds.skipped.errors[1].field == "_id"


@pytest.mark.parametrize("row, field", [
    ({"_id": "m", "text": "t", "options": {"A": "x"}, "answer": "A"}, "options"),
    ({"_id": "m", "text": "t", "options": {"A": "x", "B": ""}, "answer": "A"}, "options"),
    ({"_id": "m", "text": "t", "options": {"A": "x", "B": "y"}, "answer": "C"}, "answer"),
    ({"_id": "m", "text": "t", "options": {"A": "x", "B": "y"}}, "answer"),
])
def test_mcq_errors(tmp_path, row, field):
    _write(tmp_path / "m" / "queries.jsonl", [row])
    with pytest.raises(DataError) as err:
        load_mcq(tmp_path / "m")
    assert (err.value.line, err.value.field) == (1, field)


def test_mcq_set(tmp_path):
    _write(tmp_path / "m" / "queries.jsonl", [{"_id": "m1", "text": "2+2?", "options": {"B": "4", "A": "3"},
                                              "answer": "B", "subject": "math"}])
    item, = load_mcq(tmp_path / "m").items
    assert item.options == (("A", "3"), ("B", "4")) and item.answer_index == 1 and item.metadata == {"subject": "math"}


def test_missing_queries_file_is_named(tmp_path):
    with pytest.raises(DataError, match=r"queries.jsonl: missing"):
        load_qa(tmp_path)


def test_dataset_card_reads_the_parent_readme_row(tmp_path):
    root = tmp_path / "sets" / "myqa"
    _write(root / "queries.jsonl", [{"_id": "a", "text": "t", "answers": ["x"]}])
    (tmp_path / "sets" / "README.md").write_text(
        "| folder | what | source and licence |\n|---|---|---|\n"
        "| `myqa/` | a set | Someone et al. 2024, MIT; from a wheel |\n")
    card = dataset_card(root, counts={"questions": 1})
    assert card["licence"] == "MIT" and card["source"].startswith("Someone et al.")
    assert card["content_hash"] == content_hash(root) and len(card["content_hash"]) == 16
    (root / "queries.jsonl").write_text((root / "queries.jsonl").read_text() + "\n")  # a blank line
    assert content_hash(root) != card["content_hash"]  # any byte changes it


# ---------------------------------------------------------------- scoring, by hand
def test_exact_match_and_f1_by_hand():
    assert exact_match("The Eiffel Tower!", "eiffel tower") == 1.0  # article and punctuation dropped
    assert exact_match("Eiffel", ["Paris", "Eiffel tower"]) == 0.0
    # "the big red barn" vs "a red barn": normalised "big red barn" / "red barn": P=2/3, R=1 -> F1=0.8
    assert token_f1("the big red barn", "a red barn") == pytest.approx(0.8)
    assert token_f1("red", ["blue", "red barn"]) == pytest.approx(2 / 3)  # best of the accepted answers
    assert answer_match("It was built by Gustave Eiffel in 1889.", ["gustave eiffel"]) == 1.0
    assert answer_match("Eiffelish", ["Eiffel"]) == 0.0  # whole words only


def test_abstention_and_premise():
    assert is_abstention("I don't know.") and is_abstention("The context does not mention it.")
    assert is_abstention("") and not is_abstention("Paris.")
    assert rejects_premise("No animal has ever landed on the moon.") and rejects_premise("There is no third child.")
    assert not rejects_premise("His third child is named Leo.")


def test_false_premise_counts_only_when_rejected():
    answers = ["Leonardo DiCaprio does not have any children."]
    assert score_answer("He has no children, so there is no third child.", answers, false_premise=True).correct
    assert not score_answer("His third child is named Leo.", answers, false_premise=True).correct
    assert not score_answer("I don't know.", answers, false_premise=True).correct  # abstaining is not rejecting
    s = score_answer("Paris is the capital.", ["Paris"])
    assert (s.exact_match, s.match, s.correct, s.abstained) == (0.0, 1.0, True, False)


# ---------------------------------------------------------------- QA as multiple choice
def test_mcq_from_qa_is_seeded_and_balanced():
    items = [QAItem(f"q{i}", f"question {i}", (f"right {i}",), f"wrong {i}") for i in range(40)]
    a, b = mcq_from_qa(items, seed=7), mcq_from_qa(items, seed=7)
    assert a == b and a != mcq_from_qa(items, seed=8)
    assert Counter(m.answer for m in a) == {"A": 10, "B": 10, "C": 10, "D": 10}
    for m, q in zip(a, items):
        texts = m.option_texts
        assert texts[m.answer_index] == q.answers[0] and q.hallucinated_answer in texts
        assert m.metadata["hallucinated"] == "ABCD"[texts.index(q.hallucinated_answer)]
        assert len(set(texts)) == 4 and all(t.startswith("right") for t in texts if t not in (q.hallucinated_answer,))
    two = mcq_from_qa(items[:5], seed=1, n_options=2)
    assert all(len(m.options) == 2 for m in two)
    with pytest.raises(ValueError):
        mcq_from_qa(items[:2], seed=1)  # 4 options need 3 questions


def test_the_shared_sets_load_with_their_documented_counts(rag_config):
    """The counts ../shared/data/README.md states, read back through the loaders (nothing skipped); skipped
    where the data directory (`--data-dir`, `harness.data_dir`) lacks the sets."""
    root = rag_config.harness.data_dir
    missing = [n for n in ("halueval-qa", "freshqa", "simpleqa", "mmlu") if not (root / n).is_dir()]
    if missing:
        pytest.skip(f"the shared QA sets are not in the data directory {root}: missing {', '.join(missing)}")
    halu = load_qa(root / "halueval-qa")
    assert (len(halu.items), len(halu.corpus), halu.skipped.count) == (8000, 9936, 0)
    assert all(i.hallucinated_answer for i in halu.items) and len(halu.qrels) == 8000
    fresh = load_qa(root / "freshqa")
    assert len(fresh.items) == 600 and sum(i.false_premise for i in fresh.items) == 148
    assert len(load_qa(root / "simpleqa").items) == 3326
    mmlu = load_mcq(root / "mmlu")
    assert len(mmlu.items) == 12_042 and mmlu.skipped.count == 0
    card = dataset_card(root / "halueval-qa")
    assert card["licence"] == "MIT" and "HaluEval" in card["source"]


# ---------------------------------------------------------------- model capability
def test_capability_counts_letters_by_hand():
    from harness.capability import measure_capability, parse_letter, sample_mcq
    from harness.llm.client import LLMClient
    from harness.llm.scripted import register

    assert parse_letter("B", "ABCD") == "B" and parse_letter("(C) because", "ABCD") == "C"
    assert parse_letter("Answer: D.", "ABCD") == "D" and parse_letter("I am not sure", "ABCD") is None
    items = [MCQItem(f"m{i}", f"q{i}", (("A", "x"), ("B", "y"), ("C", "z"), ("D", "w")), "ABCD"[i % 4])
             for i in range(8)]
    assert sample_mcq(items, 5, seed=3) == sample_mcq(items, 5, seed=3) != sample_mcq(items, 5, seed=4)
    assert [i.id for i in sample_mcq(items, 5, seed=3)] == sorted(i.id for i in sample_mcq(items, 5, seed=3))

    def reply(messages, params):  # always B, except question q7 (no letter)
        return "no idea" if "q7" in messages[-1]["content"] else "B"

    cap = measure_capability(LLMClient(register("cap-b", reply)), items)
    # right answers are A,B,C,D,A,B,C,D: B is right for m1 and m5; m7 is unparsed
    assert (cap.n, cap.correct, cap.unparsed, cap.errors, cap.chance) == (8, 2, 1, 0, 0.25)
    assert cap.accuracy == 0.25 and cap.ci[0] < 0.25 < cap.ci[1]


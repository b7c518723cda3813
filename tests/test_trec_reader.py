"""TREC qrels and run files read as trec_eval reads them: `#` comment lines skipped, fields after a run's tag
ignored, every judgement kept (a query judged only <= 0 is a query), a duplicate judgement an error whatever its
first label; a malformed line is still an error naming file, line and field."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.data import DataError, SkipLog, read_trec_qrels, read_trec_run
from harness.metrics.runs import score_run

pytestmark = pytest.mark.unit


def _file(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_query_judged_only_non_relevant_is_a_query(tmp_path):
    qrels = _file(tmp_path, "q.qrels", "q1 0 a 1\nq2 0 b 0\nq2 0 c -1\n")
    run = _file(tmp_path, "r.run", "q1 Q0 a 1 2.0 t\nq2 Q0 b 1 1.0 t\n")
    assert read_trec_qrels(qrels) == {"q1": {"a": 1}, "q2": {"b": 0, "c": -1}}
    scores = score_run(run, qrels, ["map", "num_nonrel_judged_ret"])
    assert scores.queries == ["q1", "q2"] and scores.summary["map"] == 0.5
    assert scores.summary["num_nonrel_judged_ret"] == 1 and scores.missing == 0


@pytest.mark.parametrize("first", ["0", "-1", "2"])
def test_duplicate_judgement_is_an_error_whatever_the_first_label(tmp_path, first):
    qrels = _file(tmp_path, "dup.qrels", f"q1 0 a {first}\nq1 0 b 1\nq1 0 a 1\n")
    with pytest.raises(DataError, match=r"dup.qrels:3: field 'docid': duplicate judgement") as err:
        read_trec_qrels(qrels)
    assert err.value.line == 3 and err.value.field == "docid"
    skips = SkipLog()
    assert read_trec_qrels(qrels, strict=False, skips=skips) == {"q1": {"a": int(first), "b": 1}}
    assert skips.count == 1


def test_run_fields_after_the_tag_are_ignored(tmp_path):
    run = _file(tmp_path, "wide.run", "q1 Q0 a 1 2.0 tag more junk at\nq1 Q0 b 2 1.0 tag\n")
    assert read_trec_run(run) == {"q1": {"a": 2.0, "b": 1.0}}


def test_comment_lines_are_skipped_and_a_hash_inside_a_field_is_data(tmp_path):
    qrels = _file(tmp_path, "c.qrels", "# comment here\nq1 0 CR#93E-1860 1\n\n   # indented comment\nq1 0 b 0\n")
    run = _file(tmp_path, "c.run", "# a comment line\nq1 Q0 CR#93E-1860 1 2.0 t\n  #x y\n")
    assert read_trec_qrels(qrels) == {"q1": {"CR#93E-1860": 1, "b": 0}}
    assert read_trec_run(run) == {"q1": {"CR#93E-1860": 2.0}}


@pytest.mark.parametrize(("name", "text", "where", "problem"), [
    ("short.run", "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0\n", "short.run:2:", "expected at least 6 columns, got 5"),
    ("score.run", "q1 Q0 a 1 high t\n", "score.run:1: field 'score'", "not a number: 'high'"),
    ("dup.run", "q1 Q0 a 1 2.0 t\nq1 Q0 a 2 1.0 t\n", "dup.run:2: field 'docid'", "duplicate document 'a'"),
    ("wide.qrels", "q1 0 a 1\nq1 0 b 1 extra\n", "wide.qrels:2:", "expected 4 columns, got 5"),
    ("short.qrels", "q1 0 a\n", "short.qrels:1:", "expected 4 columns, got 3"),
    ("rel.qrels", "q1 0 a yes\n", "rel.qrels:1: field 'rel'", "not an integer: 'yes'"),
])
def test_malformed_lines_name_file_line_and_field(tmp_path, name, text, where, problem):
    path = _file(tmp_path, name, text)
    reader = read_trec_run if name.endswith(".run") else read_trec_qrels
    with pytest.raises(DataError) as err:
        reader(path)
    assert where in str(err.value) and problem in str(err.value)

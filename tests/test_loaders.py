"""Loaders: happy paths and malformed input (error names file, line and field; strict=False counts)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.data import DataError, load_beir, load_experiment_inputs, read_trec_qrels, read_trec_run, write_trec_run

pytestmark = pytest.mark.unit


def _beir(tmp_path: Path, corpus: list[str], queries: list[str], qrels: list[str]) -> Path:
    (tmp_path / "qrels").mkdir(parents=True)
    (tmp_path / "corpus.jsonl").write_text("\n".join(corpus) + "\n")
    (tmp_path / "queries.jsonl").write_text("\n".join(queries) + "\n")
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(qrels) + "\n")
    return tmp_path


GOOD_CORPUS = ['{"_id": "d1", "title": "T1", "text": "alpha"}', '{"_id": "d2", "title": "", "text": "beta"}']
GOOD_QUERIES = ['{"_id": "q1", "text": "alpha?"}']


def test_beir_happy_path(tmp_path: Path):
    ds = load_beir(_beir(tmp_path, GOOD_CORPUS, GOOD_QUERIES, ["q1\td1\t2", "q1\td2\t0"]))
    assert set(ds.corpus) == {"d1", "d2"} and ds.qrels == {"q1": {"d1": 2}}
    assert ds.corpus["d1"].full_text == "T1. alpha"


@pytest.mark.parametrize("corpus, field, line", [
    (['{"_id": "d1", "text": "x"}', "{not json"], None, 2),
    (['{"_id": "d1", "text": "x"}', '{"text": "y"}'], "_id", 2),
    (['{"_id": "d1", "text": "x"}', '{"_id": "d1", "text": "y"}'], "_id", 2),
    (['{"_id": "d1", "title": 3, "text": "x"}'], "title", 1),
])
def test_beir_corpus_errors_name_file_line_field(tmp_path: Path, corpus, field, line):
    root = _beir(tmp_path, corpus, GOOD_QUERIES, [])
    with pytest.raises(DataError) as ei:
        load_beir(root)
    err = ei.value
    assert err.path.endswith("corpus.jsonl") and err.line == line and err.field == field
    assert f"corpus.jsonl:{line}:" in str(err)


def test_qrels_unknown_doc_and_lenient_mode(tmp_path: Path):
    root = _beir(tmp_path, GOOD_CORPUS + ["{broken"], GOOD_QUERIES, ["q1\td1\t1", "q1\tnope\t1", "q1\td2"])
    with pytest.raises(DataError, match=r"corpus.jsonl:3: invalid JSON"):
        load_beir(root)
    ds = load_beir(root, strict=False)
    assert ds.skipped.count == 3 and ds.qrels == {"q1": {"d1": 1}}
    fields = {(Path(e.path).name, e.field) for e in ds.skipped.errors}
    assert ("test.tsv", "corpus-id") in fields and ("test.tsv", None) in fields


def test_missing_file(tmp_path: Path):
    with pytest.raises(DataError, match="corpus.jsonl: file not found"):
        load_beir(tmp_path)


def test_trec_roundtrip_and_errors(tmp_path: Path):
    run = {"q1": {"d1": 0.5, "d2": 0.9}}
    write_trec_run(run, tmp_path / "run.txt")
    assert read_trec_run(tmp_path / "run.txt") == run
    assert (tmp_path / "run.txt").read_text().splitlines()[0].split()[2] == "d2"
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d2 x\n")
    with pytest.raises(DataError, match=r"qrels.txt:2: field 'rel'"):
        read_trec_qrels(tmp_path / "qrels.txt")
    assert read_trec_qrels(tmp_path / "qrels.txt", strict=False) == {"q1": {"d1": 1}}


@pytest.mark.parametrize("corpus, queries, qrels, message", [
    ([], GOOD_QUERIES, ["q1\td1\t1"], "corpus.jsonl: no documents"),
    (["{broken"], GOOD_QUERIES, [], "corpus.jsonl: no documents"),  # every line skipped (strict=False below)
    (GOOD_CORPUS, [], [], "queries.jsonl: no queries"),
    (GOOD_CORPUS, GOOD_QUERIES, [], "test.tsv: no relevance judgements"),
    (GOOD_CORPUS, GOOD_QUERIES, ["q1\td1\t0"], "test.tsv: no relevance judgements"),
])
def test_empty_beir_files_are_errors_naming_the_file(tmp_path: Path, corpus, queries, qrels, message):
    root = _beir(tmp_path, corpus, queries, qrels)
    with pytest.raises(DataError, match=message):
        load_beir(root, strict=False)


def test_empty_qa_and_mcq_sets_are_errors_naming_the_file(tmp_path: Path):
    from harness.data.qa import load_mcq, load_qa

    (tmp_path / "queries.jsonl").write_text("")
    for load in (load_qa, load_mcq):
        with pytest.raises(DataError, match="queries.jsonl: no questions"):
            load(tmp_path)
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "Who?", "answers": ["Ada"]}\n')
    (tmp_path / "corpus.jsonl").write_text("\n")
    with pytest.raises(DataError, match="corpus.jsonl: no documents"):
        load_qa(tmp_path)


def test_run_files_refuse_non_finite_scores_and_emptiness(tmp_path: Path):
    (tmp_path / "run.txt").write_text("q1 Q0 d1 1 inf t\nq1 Q0 d2 2 1.0 t\n")
    with pytest.raises(DataError, match=r"run.txt:1: field 'score': not a finite number: 'inf'"):
        read_trec_run(tmp_path / "run.txt")
    assert read_trec_run(tmp_path / "run.txt", strict=False) == {"q1": {"d2": 1.0}}
    (tmp_path / "empty.txt").write_text("\n")
    with pytest.raises(DataError, match="empty.txt: no ranked documents"):
        read_trec_run(tmp_path / "empty.txt")


def test_qrels_in_either_layout(tmp_path: Path):
    from harness.data import read_qrels

    (tmp_path / "trec.qrels").write_text("q1 0 d1 2\nq1 0 d2 0\n")
    (tmp_path / "beir.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\n")
    (tmp_path / "bare.tsv").write_text("q1\td1\t2\n")
    # TREC qrels keep every judgement, as trec_eval (a 0 is judged non-relevant: bpref reads it); BEIR's loader keeps
    # the relevant ones, as the BEIR datasets are read everywhere else
    assert read_qrels(tmp_path / "trec.qrels") == {"q1": {"d1": 2, "d2": 0}}
    for name in ("beir.tsv", "bare.tsv"):
        assert read_qrels(tmp_path / name) == {"q1": {"d1": 2}}, name


def _kb(tmp_path: Path, queries: list[dict]) -> Path:
    (tmp_path / "returns.md").write_text("# Returns\n\n## Return Window\nWithin 30 days of delivery.\n")
    (tmp_path / "README.md").write_text("not a page")
    (tmp_path / "structure.json").write_text(json.dumps({"num_pages": 1, "pages": [{
        "id": "returns", "title": "Returns", "filename": "returns.md", "category": "general",
        "primary_topic": "returns_refunds"}]}))
    (tmp_path / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n")
    return tmp_path


Q = {"query_id": "q_direct_001", "query_type": "direct", "query": "Return window?", "ground_truth": "30 days",
     "context_reference": ["returns.md"], "metadata": {"difficulty": "easy"}}


def test_experiment_inputs(tmp_path: Path):
    inp = load_experiment_inputs(_kb(tmp_path, [Q]))
    assert list(inp.pages) == ["returns.md"] and inp.queries[0].query_type == "direct"


def test_experiment_query_errors(tmp_path: Path):
    bad = dict(Q, query_id="q2", query_type="sideways")
    with pytest.raises(DataError, match=r"queries.jsonl:2: field 'query_type'"):
        load_experiment_inputs(_kb(tmp_path, [Q, bad]))
    inp = load_experiment_inputs(tmp_path, strict=False)
    assert inp.skipped.count == 1 and len(inp.queries) == 1
    missing = {k: v for k, v in Q.items() if k != "ground_truth"}
    (tmp_path / "queries.jsonl").write_text(json.dumps(missing) + "\n")
    with pytest.raises(DataError, match=r"queries.jsonl:1: field 'ground_truth'"):
        load_experiment_inputs(tmp_path)


def test_first_of_each_type_takes_the_types_in_turn():
    from harness.data.experiment import QueryInput, first_of_each_type

    def q(i, t):
        return QueryInput(query_id=f"q{i}", query_type=t, query="x", ground_truth="", context_reference=[])

    qs = [q(1, "direct"), q(2, "direct"), q(3, "direct"), q(4, "multi_hop"), q(5, "negative"), q(6, "negative")]
    # in turn: q1 (direct), q4 (multi_hop), q5 (negative), q2 (direct); file order kept
    assert [x.query_id for x in first_of_each_type(qs, 4)] == ["q1", "q2", "q4", "q5"]
    assert [x.query_id for x in first_of_each_type(qs, 2)] == ["q1", "q4"]
    assert first_of_each_type(qs, 0) == qs and first_of_each_type(qs, 99) == qs
    # the shipped KB: 30 of its 150 queries are 10 of each type
    kb = load_experiment_inputs(Path(__file__).resolve().parents[1] / "fixtures" / "retail_kb").queries
    picked = first_of_each_type(kb, 30)
    assert {t: sum(x.query_type == t for x in picked) for t in ("direct", "multi_hop", "negative")} == \
        {"direct": 10, "multi_hop": 10, "negative": 10}


@pytest.mark.unit
def test_a_truncated_json_line_names_the_column_where_it_ends(tmp_path: Path):
    """The line is parsed without its newline: a line cut short reads at the column after its last character,
    not at column 1 of a line that does not exist."""
    from harness.data.errors import DataError
    from harness.data.jsonl import SkipLog, iter_jsonl

    path = tmp_path / "queries.jsonl"
    path.write_text('{"_id": "q1", "text": "ok"}\n{"_id": "q2", "text": "cut\n', encoding="utf-8")
    with pytest.raises(DataError) as err:
        list(iter_jsonl(path, SkipLog(), strict=True))
    assert err.value.line == 2 and "(Unterminated string starting at: column 23)" in str(err.value), str(err.value)

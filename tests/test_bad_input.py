"""Bad input stops the run before its tests, once, as a usage error (exit 4) without a traceback: a configuration
file's unknown keys (all of them, each with its line and the nearest allowed key), a spec id the catalogue lacks,
and the broken lines of a dataset a selected test will load (file, line, field). Issue #40, item 5."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.pytester_kit import new_project

from harness.config import ConfigError, load_config

pytest_plugins = ["pytester"]

CATALOGUE = """
specs:
  - id: DEMO-001
    title: Retrieval finds the judged document
    marker: unit
    metric: recall
    comparator: ">="
    threshold: 0.5
    source: demo
"""

CORPUS = '{"_id": "d1", "text": "lift is the force that holds a wing up"}\n' \
         '{"_id": "d2", "text": "drag is the force that opposes motion"}\n'
QUERIES = '{"_id": "q1", "text": "what is lift?"}\n{"_id": "q2", "text": "what is drag?"}\n'
QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n"

# the data tests write a file when they run: a run stopped at collection leaves none
TESTS = """
import pathlib

def test_corpus(rag_corpus):
    pathlib.Path("ran").write_text("corpus")
    assert rag_corpus.queries

def test_plain():
    pathlib.Path("ran").write_text("plain")
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    new_project(pytester, CATALOGUE)
    (pytester.path / "cfg.yaml").write_text("harness:\n  data_dir: data\n  corpus: mini\n")
    write_set(pytester.path / "data" / "mini")
    pytester.makepyfile(test_data=TESTS)
    return pytester


def write_set(root: Path, corpus: str = CORPUS, queries: str = QUERIES, qrels: str = QRELS) -> Path:
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text(corpus)
    (root / "queries.jsonl").write_text(queries)
    (root / "qrels" / "test.tsv").write_text(qrels)
    return root


def run(project: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, str]:
    result = project.runpytest_subprocess("--harness-config", "cfg.yaml", "--spec-coverage", "off", *args)
    return result, result.stdout.str() + result.stderr.str()


def stopped(result: pytest.RunResult, out: str, project: pytest.Pytester, *lines: str) -> list[str]:
    """Exit 4, no traceback, a short output, no test run; each of `lines` is a line of the error (fnmatch)."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert "Traceback" not in out and "INTERNALERROR" not in out, out[-3000:]
    assert len(out.strip().splitlines()) <= 16, out
    assert not (project.path / "ran").exists(), "a test ran before the usage error"
    result.stderr.fnmatch_lines(list(lines))
    return [ln for ln in result.stderr.lines if ln.strip()]


# ---------------------------------------------------------------- datasets
@pytest.mark.integration
def test_a_broken_json_line_in_queries_stops_the_run_naming_file_and_line(project):
    write_set(project.path / "data" / "mini", queries='{"_id": "q1", "text": "what is lift?"}\n{"_id": "q2", "text": \n')
    result, out = run(project)
    errors = stopped(result, out, project,
                     "ERROR: rag-harness: */data/mini/queries.jsonl:2: invalid JSON (*) "
                     "[[]harness.corpus, needed by test_data.py::test_corpus[]]")
    # the lenient read past the bad line finds what follows from it, and says so once
    assert "qrels/test.tsv:3: field 'query-id': unknown query 'q2'" in out, out
    assert len(errors) == 2, errors
    # no data is read when no selected test needs it
    result, out = run(project, "-k", "plain")
    assert result.ret == pytest.ExitCode.OK, out[-3000:]
    assert (project.path / "ran").read_text() == "plain"


@pytest.mark.integration
def test_an_unknown_query_in_the_qrels_names_file_line_and_field(project):
    write_set(project.path / "data" / "mini", qrels=QRELS + "q9\td1\t1\n")
    result, out = run(project)
    stopped(result, out, project, "ERROR: rag-harness: */data/mini/qrels/test.tsv:4: field 'query-id': "
                                  "unknown query 'q9' [[]harness.corpus, needed by test_data.py::test_corpus[]]")


@pytest.mark.integration
def test_a_missing_dataset_folder_a_selected_test_needs_is_a_usage_error(project):
    (project.path / "cfg.yaml").write_text("harness:\n  data_dir: data\n  corpus: nowhere\n")
    result, out = run(project)
    stopped(result, out, project, "ERROR: rag-harness: */data/nowhere: dataset folder not found (harness.corpus; *"
                                  "needed by test_data.py::test_corpus")


@pytest.mark.integration
def test_the_fixtures_reuse_the_sets_the_check_parsed(project):
    """Parsed once: the check at collection, then `corpus` and `beir_dataset` get the same object."""
    project.makeconftest("""
        import harness.data.beir as beir

        calls = []
        real = beir.load_beir

        def counted(root, *a, **kw):
            calls.append(str(root))
            return real(root, *a, **kw)

        beir.load_beir = counted
    """)
    project.makepyfile(test_data="""
        from conftest import calls

        def test_corpus(rag_corpus, rag_beir_dataset):
            assert rag_beir_dataset("mini") is rag_corpus
            assert len(calls) == 1, calls
""")
    result, out = run(project)
    assert result.ret == pytest.ExitCode.OK, out[-3000:]


@pytest.mark.integration
def test_under_xdist_the_workers_usage_error_is_the_runs(project):
    write_set(project.path / "data" / "mini", qrels=QRELS + "q9\td1\t1\n")
    result, out = run(project, "-n", "2")
    stopped(result, out, project, "ERROR: rag-harness: */qrels/test.tsv:4: field 'query-id': unknown query 'q9'*")


# ---------------------------------------------------------------- configuration
@pytest.mark.integration
def test_every_unknown_config_key_at_once_with_its_line_and_the_near_miss(project):
    (project.path / "cfg.yaml").write_text(textwrap.dedent("""\
        harness:
          data_dir: data
          max_querys: 3
          llm:
            colour: blue
    """))
    result, out = run(project)
    errors = stopped(result, out, project,
                     "ERROR: rag-harness: */cfg.yaml: 2 problems",
                     "  */cfg.yaml:3: field 'harness.max_querys': unknown key (did you mean 'max_queries'?)",
                     "  */cfg.yaml:5: field 'harness.llm.colour': unknown key (allowed: model, timeout_s, *)")
    assert len(errors) == 3, errors


@pytest.mark.unit
def test_load_config_names_line_and_field_of_every_problem(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(textwrap.dedent("""\
        wsop:
          hyde:
            temprature: 0.3
        harness:
          seed: thirteen
          llm:
            prices:
              m: {input_per_mtok: -1, output_per_mtok: 1}
    """))
    with pytest.raises(ConfigError) as err:
        load_config(cfg, **{"harness.max_queries": -1})
    lines = str(err.value).splitlines()
    assert lines[0] == f"{cfg}: 4 problems", lines
    assert lines[1:] == [
        f"  {cfg}:3: field 'wsop.hyde.temprature': unknown key (did you mean 'temperature'?)",
        f"  {cfg}:5: field 'harness.seed': Input should be a valid integer, unable to parse string as an integer",
        f"  {cfg}:8: field 'harness.llm.prices.m.input_per_mtok': Input should be greater than or equal to 0",
        f"  {cfg}: field 'harness.max_queries': Input should be greater than or equal to 0 (set on the command line)",
    ]


# ---------------------------------------------------------------- spec ids
@pytest.mark.integration
def test_an_unknown_spec_id_is_a_usage_error_with_the_nearest_id(project):
    project.makepyfile(test_specs="""
        import pytest

        @pytest.mark.spec("DEMO-01")
        def test_bound(rag_check):
            rag_check("DEMO-001", 1.0)
""")
    result, out = run(project, "test_specs.py")
    stopped(result, out, project, "ERROR: rag-harness: test_specs.py::test_bound names spec id(s) not in the "
                                  "catalogue: DEMO-01 (did you mean DEMO-001?)")

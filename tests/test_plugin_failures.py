"""Failures that fail, with their cause, as a user meets them: a model that cannot be called stops the run
with litellm's error; bad options are usage errors naming the option; empty or broken inputs name their file."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.pytester_kit import new_project

from harness.llm.simulated import SimulatedAPI

pytestmark = pytest.mark.integration
pytest_plugins = ["pytester"]

CATALOGUE = """
specs:
  - id: FAIL-001
    title: The model answers
    marker: unit
    metric: answered
    comparator: "=="
    threshold: true
    source: demo
  - id: FAIL-002
    title: A technique beats its baseline
    marker: unit
    decision: ci
    metric: lift
    comparator: ">="
    threshold: 0.0
    source: demo
"""

# the first test calls the model the way a technique does (an LLMError would be absorbed as a fallback)
MODEL_TESTS = """
import pytest
from harness.techniques.generation import try_complete

@pytest.mark.spec("FAIL-001")
def test_answers(rag_llm, rag_check):
    text = try_complete(rag_llm, "What is lift?", trace=None, error_event="demo_error")
    rag_check("FAIL-001", text is not None)

def test_never_reached(rag_llm):
    raise AssertionError("the session should have stopped before this test")
"""


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return new_project(pytester, CATALOGUE)


def _config(project: pytest.Pytester, **llm: str) -> None:
    body = "".join(f"    {k}: {v}\n" for k, v in {"cache": "false", **llm}.items())
    (project.path / "cfg.yaml").write_text(f"harness:\n  llm:\n{body}")


def _stopped_with(result: pytest.RunResult, *fragments: str) -> str:
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, out[-3000:]
    assert "test_never_reached" not in out.replace("test_never_reached(llm)", ""), out[-3000:]
    assert "stopped at the first failed model call" in out, out[-3000:]
    for fragment in fragments:
        assert fragment in out, out[-3000:]
    return out


# ---------------------------------------------------------------- a model that cannot be called
def test_no_key_with_the_network_blocked_stops_the_run_with_litellms_error(project, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    project.makepyfile(test_model=MODEL_TESTS)
    _config(project)
    result = project.runpytest_subprocess("--llm", "openai/gpt-4o-mini", "--block-network", "--harness-config",
                                          "cfg.yaml", "--report-dir", "out", "--spec-coverage", "off")
    out = _stopped_with(result, "openai/gpt-4o-mini: no API key")
    # once in the failure's report; pytest's short summary repeats it only where it does not truncate (CI=1)
    assert out.split("short test summary info")[0].count("Missing credentials") == 1, out[-3000:]
    row = {r["id"]: r for r in json.loads((project.path / "out" / "results.json").read_text())["specs"]}["FAIL-001"]
    assert row["verdict"] == "error" and "Missing credentials" in row["message"]


def test_an_unreachable_server_stops_the_run(project, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    project.makepyfile(test_model=MODEL_TESTS)
    _config(project, model="openai/x", api_base=f"http://127.0.0.1:{closed_port()}/v1")
    result = project.runpytest_subprocess("--harness-config", "cfg.yaml", "--spec-coverage", "off")
    _stopped_with(result, "the model's server cannot be reached", "Connection refused")


def test_a_rejected_key_stops_the_run(project, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    project.makepyfile(test_model=MODEL_TESTS)
    with SimulatedAPI(lambda m, p: "an answer", latency_s=0.0, api_key="sk-right") as api:
        _config(project, model="openai/sim", api_base=api.api_base)
        result = project.runpytest_subprocess("--harness-config", "cfg.yaml", "--spec-coverage", "off")
        assert api.log.statuses[401] == 1, "one request, no retries"
    _stopped_with(result, "the API key was rejected", "Incorrect API key provided")


def test_arms_that_failed_read_error_and_fail_the_test(project):
    project.makepyfile(test_lift=textwrap.dedent("""
        import numpy as np
        import pytest
        from harness.stats import paired_effect

        @pytest.mark.spec("FAIL-002")
        def test_lift(rag_check):
            same = np.full(20, 0.5)  # every query fell back to the baseline's results
            rag_check("FAIL-002", paired_effect(same, same), fallback_rate=1.0, error_rate=1.0)
"""))
    result = project.runpytest_subprocess("--report-dir", "out", "--spec-coverage", "off")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*SpecCheckFailed: error: FAIL-002*failed on 100% of queries*",
                                 "FAIL-002 * error *errors=100%*(the arms' model calls failed on 100% of queries*"])
    row = {r["id"]: r for r in json.loads((project.path / "out" / "results.json").read_text())["specs"]}["FAIL-002"]
    assert row["verdict"] == "error" and "failed on 100%" in row["reason"]
    assert 'class="v v-error">error<' in (project.path / "out" / "index.html").read_text()


# ---------------------------------------------------------------- options checked at start-up
BAD_OPTIONS = [
    (["--max-queries", "-1"], "--max-queries must be 0 (all queries) or more, got -1"),
    (["--max-cost", "-5"], "--max-cost must be a number of US dollars, 0 or more, got -5.0"),
    (["--harness-config", "missing.yaml"], "--harness-config missing.yaml: no such file"),
    (["--data-dir", "nowhere"], "--data-dir nowhere: no such folder"),
    (["--under-control", "no-such-control"], "unknown negative control: --under-control names 'no-such-control'"),
    (["--llm", "bogus/not-a-model"], "--llm bogus/not-a-model: litellm.BadRequestError: LLM Provider NOT provided"),
    (["--judge", "bogus/judge"], "--judge bogus/judge: litellm.BadRequestError: LLM Provider NOT provided"),
    (["--technique", "hyde=nope"], "no technique named 'nope' is registered"),
    (["--controls-only"], "--controls-only needs --negative-controls"),
]


@pytest.mark.parametrize("args, message", BAD_OPTIONS, ids=[a[0] for a, _ in BAD_OPTIONS])
def test_a_bad_option_is_a_usage_error_naming_it(project, args, message):
    project.makepyfile(test_ok="def test_ok():\n    pass\n")
    result = project.runpytest_subprocess(*args, "--block-network", "--spec-coverage", "off")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:] + result.stderr.str()[-2000:]
    assert message in result.stderr.str(), result.stderr.str()[-2000:]
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_an_unregistered_control_in_the_catalogue_is_a_usage_error(project):
    (project.path / "specs" / "demo.yaml").write_text(CATALOGUE.replace("    source: demo\n",
                                                                        "    source: demo\n    control: nope\n", 1))
    project.makepyfile(test_ok='import pytest\n\n@pytest.mark.spec("FAIL-001")\ndef test_ok(rag_check):\n'
                               '    rag_check("FAIL-001", True)\n')
    result = project.runpytest_subprocess("--negative-controls", "--spec-coverage", "off")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "unknown negative control: spec FAIL-001 names 'nope'" in result.stderr.str()


def test_harness_config_is_read_from_the_current_folder(project, monkeypatch):
    sub = project.mkpydir("sub")
    (sub / "cfg.yaml").write_text("harness:\n  max_queries: 7\n")
    (sub / "test_cfg.py").write_text("def test_cfg(rag_config):\n"
                                     "    assert rag_config.harness.max_queries == 7\n")
    monkeypatch.chdir(sub)
    project.runpytest_subprocess("--harness-config", "cfg.yaml", "--spec-coverage", "off").assert_outcomes(passed=1)


def test_max_queries_zero_means_all(project):
    project.makepyfile(test_ok="def test_ok(rag_config):\n    assert rag_config.harness.max_queries == 0\n")
    project.runpytest_subprocess("--max-queries", "0", "--spec-coverage", "off").assert_outcomes(passed=1)


# ---------------------------------------------------------------- the command line
def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`ragharness ...` through its console script, as a user types it (not `python -m`, which would put the
    current folder on sys.path)."""
    exe = Path(sys.executable).parent / "ragharness"
    assert exe.is_file(), f"the console script is not installed beside {sys.executable}"
    return subprocess.run([str(exe), *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def test_techniques_with_a_missing_config_is_an_error_not_a_traceback(tmp_path):
    proc = _cli("techniques", "--config", "missing.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{tmp_path / 'missing.yaml'}: cannot read the configuration file" in proc.stderr


def test_techniques_plugin_imports_a_module_from_the_current_folder(tmp_path):
    (tmp_path / "my_local_techniques.py").write_text(textwrap.dedent("""
        from harness.techniques import Technique, register_technique

        @register_technique
        class FirstWord(Technique):
            name = "first-word-only"
            summary = "dense retrieval of the query's first word"

            def _run(self, query, trace):
                return self.result(query, [], trace)
    """))
    proc = _cli("techniques", "--plugin", "my_local_techniques", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "first-word-only: dense retrieval of the query's first word" in proc.stdout


@pytest.mark.parametrize("run, qrels, message", [
    ("", "q1 0 d1 1\n", "run.txt: no ranked documents"),
    ("q1 Q0 d1 1 1.0 t\n", "", "qrels.txt: no relevance judgements"),
    ("q1 Q0 d1 1 1.0 t\n", "q1 0 d1 0\n", "qrels.txt: no relevance judgements"),
    ("q1 Q0 d1 1 nan t\n", "q1 0 d1 1\n", "run.txt:1: field 'score': not a finite number: 'nan'"),
])
def test_eval_refuses_empty_inputs_and_non_finite_scores(tmp_path, run, qrels, message):
    (tmp_path / "run.txt").write_text(run)
    (tmp_path / "qrels.txt").write_text(qrels)
    proc = _cli("eval", "run.txt", "qrels.txt", cwd=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr, proc.stdout + proc.stderr


def test_eval_reads_beir_qrels(tmp_path):
    (tmp_path / "run.txt").write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\nq2 Q0 d3 1 1.0 t\n")
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\nq2\td9\t1\n")
    proc = _cli("eval", "run.txt", "qrels/test.tsv", "-m", "Recall@10", "-m", "MRR@10", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "2 judged queries" in proc.stdout
    assert "Recall@10    0.5000" in proc.stdout and "MRR@10       0.2500" in proc.stdout

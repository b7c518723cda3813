"""The protocol's claims on a user's own corpus, from the user's own project (issue #40): a project outside the
repository with a 40-passage BEIR set of its own (fixtures/user_project/), its own `llm`/`index`/`check` fixtures,
its own `unit`/`integration` markers, and pytest-benchmark, pytest-recording and pytest-asyncio tests, runs
HYDE-003, RAGF-004 and CRAG-005 with the documented command and a scripted model; each claim reads one row for
that dataset with both arms' values, and the project's own tests run as their plugins document."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
pytest_plugins = ["pytester"]

PROJECT = Path(__file__).resolve().parents[1] / "fixtures" / "user_project"
CLAIMS = ("HYDE-003", "RAGF-004", "CRAG-005")
# the documented command (docs: "Your corpus, your model"), with a scripted model in place of a live one
COMMAND = ("-m", "benchmark", "--rag-protocol", "--llm", "scripted/bikeshop")


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    shutil.copytree(PROJECT, pytester.path, dirs_exist_ok=True)
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        # under an outer xdist run the child would read itself as a worker (pytest-benchmark then warns)
        monkeypatch.delenv(name, raising=False)
    return pytester


def _rows(project: pytest.Pytester) -> dict[str, dict]:
    return {r["id"]: r for r in json.loads((project.path / "reports" / "results.json").read_text())["specs"]}


def test_the_protocols_claims_run_on_the_users_corpus(project: pytest.Pytester):
    result = project.runpytest_subprocess(*COMMAND, "-k", " or ".join(CLAIMS))
    result.assert_outcomes(passed=3)
    rows = _rows(project)
    assert sorted(rows) == sorted(CLAIMS)
    for claim in CLAIMS:
        row = rows[claim]
        assert [e["dataset"] for e in row["datasets"]] == ["bikeshop"], row["datasets"]
        assert row["model"] == "scripted/bikeshop" and row["not_run_on"] == []
        assert row["verdict"] in ("supported", "refuted", "inconclusive")
        entry = row["datasets"][0]
        assert entry["n"] == 12
        # both arms' values beside the verdict: the measured means, labelled, in results.json and the terminal
        arms = entry["arms"]
        ctx = _record(project, claim)["context"]
        base, cand = (ctx["baseline"], ctx["candidate"]) if "baseline" in ctx else \
            (ctx["baseline_accuracy"], ctx["candidate_accuracy"])
        assert (arms["baseline"]["value"], arms["candidate"]["value"]) == pytest.approx((base, cand))
        line = next(x for x in result.outlines if x.startswith(claim + " "))
        assert f"arms: {arms['baseline']['label']} {arms['baseline']['value']:.4g} → " in line, line
    assert rows["HYDE-003"]["datasets"][0]["arms"]["candidate"]["label"] == "hyde Recall@10"
    html = (project.path / "reports" / "index.html").read_text()
    assert "dense Recall@10" in html and "hyde Recall@10" in html
    # every row names the dataset; none reads "not run" on the catalogue's own sets (cranfield, halueval-qa)
    result.stdout.no_fnmatch_line("*not run on*")
    result.stdout.fnmatch_lines(["*HYDE-003*dataset=bikeshop*model=scripted/bikeshop*"])


def _record(project: pytest.Pytester, claim: str) -> dict:
    checks = json.loads((project.path / "reports" / "results.json").read_text())["checks"]
    return next(r for r in checks if r.get("spec_id") == claim)


def test_the_projects_own_tests_keep_their_fixtures_markers_and_plugins(project: pytest.Pytester):
    """Without -m: the user's `llm`/`index`/`check` are theirs; pytest-benchmark, pytest-recording and
    pytest-asyncio tests run as their plugins document; no model starts and no corpus is indexed."""
    result = project.runpytest_subprocess("test_mine.py", "-W", "error")
    result.assert_outcomes(passed=5)
    assert not (project.path / ".cache" / "rag-harness" / "lancedb").exists()  # nothing was indexed
    assert not (project.path / "reports" / "llama_server.log").exists()  # no model was started


def test_every_fixture_of_the_plugin_carries_the_prefix(project: pytest.Pytester):
    """`pytest --fixtures` in the project: every fixture the plugin's modules define is `rag_*`, so none can meet
    one of the project's (its `llm`, `index` and `check` are listed from its conftest)."""
    result = project.runpytest_subprocess("--fixtures", "test_mine.py")
    section, ours, theirs = "", [], []
    for line in result.outlines:
        if line.startswith("-") and " fixtures defined from " in line:
            section = line.split(" fixtures defined from ", 1)[1].strip(" -")
        elif line and not line.startswith(" ") and section:
            name = line.split()[0].split("[")[0]
            (ours if section.startswith("harness.") else theirs if section == "conftest" else []).append(name)
    assert len(ours) >= 30 and all(n.startswith("rag_") for n in ours), ours
    assert {"llm", "index", "check"} <= set(theirs), theirs


def test_a_wrong_spec_id_in_a_check_fails_in_one_line_with_the_nearest_id(project: pytest.Pytester):
    project.makepyfile(test_typo="""
        import pytest

        @pytest.mark.spec("HYDE-002")
        def test_typo(rag_check):
            rag_check("HYDE-02", 0.5)
    """)
    result = project.runpytest_subprocess("test_typo.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*rag-harness: spec id 'HYDE-02' is not in the catalogue (did you mean 'HYDE-002'?)*"])
    assert "KeyError" not in result.stdout.str() and "Traceback" not in result.stdout.str()


@pytest.mark.parametrize(("expr", "selected"), [
    ("unit", ["test_my_fixtures_are_mine"]),
    ("integration", ["test_my_integration_marker"]),
    ("benchmark", []),  # pytest-benchmark's settings marker is not the benchmark tier
    ("not benchmark", ["test_my_fixtures_are_mine", "test_my_integration_marker", "test_my_pytest_benchmark",
                       "test_my_pytest_recording_marker", "test_my_asyncio"]),
])
def test_tiers_select_the_projects_own_tests_as_marked(project: pytest.Pytester, expr: str, selected: list[str]):
    result = project.runpytest_subprocess("test_mine.py", "-m", expr, "--collect-only", "-q")
    names = sorted(line.split("::")[-1] for line in result.outlines if line.startswith("test_mine.py::"))
    assert names == sorted(selected)


def test_a_heavy_fixture_in_an_unbound_unit_test_is_a_usage_error(project: pytest.Pytester):
    project.makepyfile(test_heavy="""
        import pytest

        @pytest.mark.unit
        def test_wants_the_harness_index(rag_index):
            pass
    """)
    result = project.runpytest_subprocess("test_heavy.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unit-tier tests ask for a fixture that starts a model or indexes a corpus*",
                                 "*test_wants_the_harness_index (rag_corpus, rag_index)*"])
    assert not (project.path / ".cache" / "rag-harness" / "lancedb").exists()


def test_claims_whose_data_the_project_lacks_are_named_not_run(project: pytest.Pytester):
    """The project names a retrieval set and a CRAG set only: the E2-E4, judge and RET claims are deselected,
    and the run says so at the top, with the setting that would bring each in; a set it names that is missing
    stops the run."""
    result = project.runpytest_subprocess(*COMMAND, "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([
        "rag-harness: packaged claims deselected, for want of data*",
        "*E2E4-FR4-1*: harness.datasets.kb is not set*",
        "*JUDGE-KAPPA*: harness.datasets.judge = halueval-qa: no queries.jsonl under*",
        "*RET-GATE-1*: harness.datasets.ret = halueval-qa: no queries.jsonl under*"])
    collected = [line for line in result.outlines if "::" in line]
    assert collected and all(line.startswith(("test_protocol_techniques.py::", "test_mine.py::")) for line in collected)
    (project.path / "rag.yaml").write_text((project.path / "rag.yaml").read_text().replace(
        "crag: bikeshop", "crag: bikeshop\n    judge: my-labels"))
    result = project.runpytest_subprocess(*COMMAND, "-k", "JUDGE")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*my-labels*"])

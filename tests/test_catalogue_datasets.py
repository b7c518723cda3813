"""A claim reads per dataset it ran on: the plugin parametrises `rag_dataset_name` over the sets the project
configures (every BEIR folder under the data directory, or `harness.datasets.retrieval`); a set whose test
instance ran but recorded no check shows as "not run on X" in results.json, the terminal and the HTML, and the
claim cannot read supported or pass. The catalogue row's `dataset:` list (where the protocol measured its own
figures) binds nothing (issue #40)."""
from __future__ import annotations

import json

import pytest

from tests.pytester_kit import new_project

pytestmark = pytest.mark.integration
pytest_plugins = ["pytester"]

CATALOGUE = """
specs:
  - id: CMP-D
    title: A technique lifts a score by at least 0.05 on both sets
    marker: unit
    decision: ci
    metric: score(technique) - score(baseline)
    comparator: ">="
    threshold: 0.05
    source: demo
    dataset: [a, b]
  - id: EST-D
    title: A ratio stays below a bound on both sets
    marker: unit
    decision: estimate
    metric: ratio
    comparator: "<"
    threshold: 0.7
    source: demo
    dataset: [a, b]
"""

TESTS = """
import numpy as np
import pytest
from harness.stats._effect import paired_effect

BASE = np.full(30, 0.5)
LIFT = {{"supported": np.tile([0.3, 0.2], 15), "refuted": np.tile([0.01, -0.03], 15)}}


@pytest.mark.spec("CMP-D")
def test_lift(rag_spec, rag_check, rag_dataset_name):
    kind = {kinds}[rag_dataset_name]
    if kind == "stops":
        pytest.skip("stopped before its check")
    rag_check(rag_spec.id, paired_effect(BASE + LIFT[kind], BASE), dataset=rag_dataset_name)


@pytest.mark.spec("EST-D")
def test_ratio(rag_spec, rag_check, rag_dataset_name):
    if {kinds}[rag_dataset_name] == "stops":
        pytest.skip("stopped before its check")
    rag_check(rag_spec.id, 0.5, dataset=rag_dataset_name)
"""


def _project(pytester: pytest.Pytester, present: list[str], kinds: dict[str, str]) -> pytest.Pytester:
    project = new_project(pytester, CATALOGUE)
    for name in present:
        (project.path / "data" / name).mkdir(parents=True)
        (project.path / "data" / name / "corpus.jsonl").write_text("")
    project.makepyfile(test_demo=TESTS.format(kinds=kinds))
    return project


def _rows(project: pytest.Pytester) -> dict:
    return {r["id"]: r for r in json.loads((project.path / "out" / "results.json").read_text())["specs"]}


def test_the_catalogue_list_binds_nothing(pytester: pytest.Pytester):
    """The row lists [a, b]; the project has only a: the claim reads what a shows."""
    project = _project(pytester, ["a"], {"a": "supported"})
    result = project.runpytest_subprocess("--report-dir", "out", "--data-dir", "data", "--strict-verdicts")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK
    rows = _rows(project)
    assert rows["CMP-D"]["verdict"] == "supported" and rows["CMP-D"]["not_run_on"] == []
    assert rows["CMP-D"]["catalogue_dataset"] == ["a", "b"]
    assert rows["EST-D"]["verdict"] == "pass"
    result.stdout.no_fnmatch_line("*not run on*")


def test_a_set_that_ran_without_deciding_reads_not_run_and_the_claim_not_supported(pytester: pytest.Pytester):
    project = _project(pytester, ["a", "b"], {"a": "supported", "b": "stops"})
    result = project.runpytest_subprocess("--report-dir", "out", "--data-dir", "data")
    result.assert_outcomes(passed=2, skipped=2)  # what ran passed; the row says what did not decide
    rows = _rows(project)
    cmp_, est = rows["CMP-D"], rows["EST-D"]
    assert cmp_["verdict"] == "inconclusive" and cmp_["not_run_on"] == ["b"]
    assert {e["dataset"]: e["verdict"] for e in cmp_["datasets"]} == {"a": "supported", "b": "not run"}
    assert cmp_["overall"] == "not run on b; supported on a"
    assert est["verdict"] == "inconclusive" and est["not_run_on"] == ["b"]  # an estimate spec cannot pass either
    assert est["overall"].startswith("not run on b: ")
    result.stdout.fnmatch_lines(["*rag-harness: inconclusive claims*", "*CMP-D: not run on b: *; the claim reads "
                                 "inconclusive*"])
    result.stdout.fnmatch_lines(["CMP-D *inconclusive*not run on b; supported on a*", "*└ b * not run *"])
    html = (project.path / "out" / "index.html").read_text()
    assert "not run on b; supported on a" in html and "v-not-run" in html


def test_strict_verdicts_fail_a_run_with_an_undecided_set(pytester: pytest.Pytester):
    project = _project(pytester, ["a", "b"], {"a": "supported", "b": "stops"})
    result = project.runpytest_subprocess("--report-dir", "out", "--data-dir", "data", "--strict-verdicts")
    result.assert_outcomes(passed=2, skipped=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_the_configured_sets_choose_the_instances(pytester: pytest.Pytester):
    """harness.datasets.retrieval names the sets (a path under the data directory); the others are not run."""
    project = _project(pytester, ["a", "b"], {"a": "supported", "b": "refuted"})
    (project.path / "cfg.yaml").write_text("harness:\n  datasets:\n    retrieval: [a]\n")
    result = project.runpytest_subprocess("--report-dir", "out", "--data-dir", "data", "--harness-config", "cfg.yaml")
    result.assert_outcomes(passed=2)
    assert {e["dataset"] for e in _rows(project)["CMP-D"]["datasets"]} == {"a"}


def test_a_refutation_on_a_set_that_ran_stands(pytester: pytest.Pytester):
    project = _project(pytester, ["a", "b"], {"a": "refuted", "b": "stops"})
    project.runpytest_subprocess("--report-dir", "out", "--data-dir", "data").assert_outcomes(passed=1, failed=1,
                                                                                              skipped=2)
    row = _rows(project)["CMP-D"]
    assert row["verdict"] == "refuted" and row["overall"] == "not run on b; refuted on a"


def test_every_set_decided_reads_as_measured(pytester: pytest.Pytester):
    project = _project(pytester, ["a", "b"], {"a": "supported", "b": "supported"})
    result = project.runpytest_subprocess("--report-dir", "out", "--data-dir", "data", "--strict-verdicts")
    result.assert_outcomes(passed=4)
    assert result.ret == pytest.ExitCode.OK
    rows = _rows(project)
    assert rows["CMP-D"]["verdict"] == "supported" and rows["CMP-D"]["not_run_on"] == []
    assert rows["CMP-D"]["overall"] == "supported on a, b"
    assert rows["EST-D"]["verdict"] == "pass" and rows["EST-D"]["not_run_on"] == []
    result.stdout.no_fnmatch_line("*not run on*")

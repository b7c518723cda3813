"""A catalogue row's `dataset:` list binds it: a listed set the run left out (absent from the data directory, or
deselected) shows as "not run on X" in results.json, the terminal and the HTML, and the claim cannot read
supported or pass; with every listed set present it reads as before."""
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

# as benchmarks/conftest.py does: one test instance per set found under --data-dir
CONFTEST = """
from harness.plugin.state import harness_config_of


def pytest_generate_tests(metafunc):
    if "dataset_name" in metafunc.fixturenames:
        root = harness_config_of(metafunc.config).harness.data_dir
        names = sorted(p.name for p in root.iterdir() if (p / "corpus.jsonl").exists())
        metafunc.parametrize("dataset_name", names, ids=[f"set-{n}" for n in names], scope="session")
"""

TESTS = """
import numpy as np
import pytest
from harness.stats.effect import paired_effect

BASE = np.full(30, 0.5)
LIFT = {{"supported": np.tile([0.3, 0.2], 15), "refuted": np.tile([0.01, -0.03], 15)}}


@pytest.mark.spec("CMP-D")
def test_lift(spec, check, dataset_name):
    kind = {kinds}[dataset_name]
    check(spec.id, paired_effect(BASE + LIFT[kind], BASE), dataset=dataset_name)


@pytest.mark.spec("EST-D")
def test_ratio(spec, check, dataset_name):
    check(spec.id, 0.5, dataset=dataset_name)
"""


def _project(pytester: pytest.Pytester, present: list[str], kinds: dict[str, str]) -> pytest.Pytester:
    project = new_project(pytester, CATALOGUE)
    for name in present:
        (project.path / "data" / name).mkdir(parents=True)
        (project.path / "data" / name / "corpus.jsonl").write_text("")
    project.makeconftest(CONFTEST)
    project.makepyfile(test_demo=TESTS.format(kinds=kinds))
    return project


def _rows(project: pytest.Pytester) -> dict:
    return {r["id"]: r for r in json.loads((project.path / "out" / "results.json").read_text())["specs"]}


def test_a_listed_dataset_left_out_reads_not_run_and_the_claim_not_supported(pytester: pytest.Pytester):
    project = _project(pytester, ["a"], {"a": "supported"})
    result = project.runpytest_subprocess("--report-dir", "out", "--data-dir", "data")
    result.assert_outcomes(passed=2)  # what ran passed; the row says what did not
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


def test_strict_verdicts_fail_a_run_that_left_out_a_listed_dataset(pytester: pytest.Pytester):
    project = _project(pytester, ["a"], {"a": "supported"})
    result = project.runpytest_subprocess("--report-dir", "out", "--data-dir", "data", "--strict-verdicts")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_a_deselected_dataset_reads_not_run_too(pytester: pytest.Pytester):
    project = _project(pytester, ["a", "b"], {"a": "supported", "b": "supported"})
    result = project.runpytest_subprocess("--report-dir", "out", "--data-dir", "data", "-k", "not set-b")
    result.assert_outcomes(passed=2, deselected=2)
    assert _rows(project)["CMP-D"]["verdict"] == "inconclusive" and _rows(project)["CMP-D"]["not_run_on"] == ["b"]


def test_a_refutation_on_a_set_that_ran_stands(pytester: pytest.Pytester):
    project = _project(pytester, ["a"], {"a": "refuted"})
    project.runpytest_subprocess("--report-dir", "out", "--data-dir", "data").assert_outcomes(passed=1, failed=1)
    row = _rows(project)["CMP-D"]
    assert row["verdict"] == "refuted" and row["overall"] == "not run on b; refuted on a"


def test_every_listed_dataset_present_reads_as_measured(pytester: pytest.Pytester):
    project = _project(pytester, ["a", "b"], {"a": "supported", "b": "supported"})
    result = project.runpytest_subprocess("--report-dir", "out", "--data-dir", "data", "--strict-verdicts")
    result.assert_outcomes(passed=4)
    assert result.ret == pytest.ExitCode.OK
    rows = _rows(project)
    assert rows["CMP-D"]["verdict"] == "supported" and rows["CMP-D"]["not_run_on"] == []
    assert rows["CMP-D"]["overall"] == "supported on a, b"
    assert rows["EST-D"]["verdict"] == "pass" and rows["EST-D"]["not_run_on"] == []
    result.stdout.no_fnmatch_line("*not run on*")

"""The plugin as a user runs it: a fresh project in a temp dir, pytest in a subprocess."""
from __future__ import annotations

import json
import textwrap

import pytest

pytestmark = pytest.mark.unit
pytest_plugins = ["pytester"]

CATALOGUE = """
specs:
  - id: DEMO-001
    title: A measured ratio stays below a bound
    marker: unit
    metric: ratio
    comparator: "<"
    threshold: 0.7
    source: demo
  - id: DEMO-002
    title: A flag holds
    marker: unit
    metric: flag
    comparator: "=="
    threshold: true
    source: demo
"""

TESTS = """
import pytest

@pytest.mark.spec("DEMO-001")
def test_ratio(spec, check):
    check(spec.id, {value}, n=12, model="scripted")

@pytest.mark.spec("DEMO-002")
def test_flag(check):
    check("DEMO-002", True)
"""


@pytest.fixture
def project(pytester: pytest.Pytester):
    pytester.makeini(textwrap.dedent("""
        [pytest]
        addopts = --strict-markers -p no:cacheprovider
        spec_files = specs
        filterwarnings = error
    """))
    (pytester.path / "specs").mkdir()
    (pytester.path / "specs" / "demo.yaml").write_text(CATALOGUE)
    return pytester


def test_check_passes_and_records(project: pytest.Pytester):
    project.makepyfile(test_demo=TESTS.format(value=0.5))
    result = project.runpytest_subprocess("--report-dir", "out", "-m", "unit")
    result.assert_outcomes(passed=2)
    data = json.loads((project.path / "out" / "results.json").read_text())
    rows = {r["id"]: r for r in data["specs"]}
    assert rows["DEMO-001"]["verdict"] == "pass"
    assert rows["DEMO-001"]["value"] == 0.5
    assert rows["DEMO-001"]["n"] == 12 and rows["DEMO-001"]["model"] == "scripted"
    assert (project.path / "out" / "index.html").read_text().count("DEMO-001") >= 1


def test_check_failure_message_names_id_value_threshold(project: pytest.Pytester):
    project.makepyfile(test_demo=TESTS.format(value=0.9))
    result = project.runpytest_subprocess("--report-dir", "out")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*SpecCheckFailed: DEMO-001 (A measured ratio stays below a bound): "
                                 "measured ratio = 0.9, required < 0.7, n=12, model='scripted'*"])
    data = json.loads((project.path / "out" / "results.json").read_text())
    assert {r["id"]: r["verdict"] for r in data["specs"]}["DEMO-001"] == "fail"


def test_missing_test_for_catalogue_id_fails_collection(project: pytest.Pytester):
    project.makepyfile(test_demo=TESTS.format(value=0.5).split("@pytest.mark.spec(\"DEMO-002\")")[0])
    result = project.runpytest_subprocess()
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*catalogue ids with no test at their tier: DEMO-002*"])


def test_unknown_spec_id_fails(project: pytest.Pytester):
    project.makepyfile(test_demo=TESTS.format(value=0.5) + textwrap.dedent("""
        @pytest.mark.spec("DEMO-999")
        def test_unknown():
            pass
    """))
    result = project.runpytest_subprocess()
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*test_unknown names spec id(s) not in the catalogue: DEMO-999*"])


def test_bound_tests_get_catalogue_tier_and_spec_in_node_id(project: pytest.Pytester):
    project.makepyfile(test_demo=TESTS.format(value=0.5))
    result = project.runpytest_subprocess("--collect-only", "-q", "-m", "unit")
    result.stdout.fnmatch_lines(["test_demo.py::test_ratio[[]DEMO-001[]]", "test_demo.py::test_flag[[]DEMO-002[]]"])


def test_bad_catalogue_is_a_usage_error_naming_file_and_id(project: pytest.Pytester):
    (project.path / "specs" / "bad.yaml").write_text(textwrap.dedent("""
        specs:
          - id: BAD-1
            title: t
            marker: unit
            metric: m
            comparator: "~="
            threshold: 1
            source: s
    """))
    project.makepyfile(test_demo=TESTS.format(value=0.5))
    result = project.runpytest_subprocess()
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*bad.yaml: spec BAD-1: field 'comparator' is '~='*"])


def test_xdist_writes_the_same_report_content(project: pytest.Pytester):
    project.makepyfile(test_demo=TESTS.format(value=0.5), test_more=textwrap.dedent("""
        import pytest

        @pytest.mark.unit
        @pytest.mark.parametrize("i", range(6))
        def test_measure(measure, i):
            measure("figure", i * 0.5, technique="t", dataset="d")
    """))
    plain = project.runpytest_subprocess("--report-dir", "plain")
    plain.assert_outcomes(passed=8)
    par = project.runpytest_subprocess("--report-dir", "par", "-n", "2")
    par.assert_outcomes(passed=8)

    def content(d: str) -> dict:
        data = json.loads((project.path / d / "results.json").read_text())
        data.pop("run")
        for t in data["tests"]:
            t.pop("duration_s")
        return data

    assert content("plain") == content("par")
    assert len(content("par")["measures"]) == 6

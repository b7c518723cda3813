"""The plugin's catalogue in a user's project: the protocol's, shipped in the package, with the project's own
added (the ini's `spec_files` or `--spec-file`); only the project's own ids must be covered and are reported
when no test touched them."""
from __future__ import annotations

import json

import pytest

from tests.pytester_kit import new_project

pytestmark = pytest.mark.integration
pytest_plugins = ["pytester"]

MINE = """
specs:
  - id: MINE-001
    title: a ratio stays below a bound
    marker: unit
    metric: ratio
    comparator: "<"
    threshold: 1
    source: ours
"""
# HYDE-001 is the protocol's (harness/catalogue/hyde.yaml): a unit-tier flag
TESTS = """
import pytest

@pytest.mark.spec("{mine}")
def test_mine(rag_check):
    rag_check("{mine}", 0.5)

@pytest.mark.spec("HYDE-001")
def test_protocol(rag_check):
    rag_check("HYDE-001", True)
"""


def _rows(project: pytest.Pytester) -> list[tuple[str, str]]:
    return [(r["id"], r["verdict"]) for r in json.loads((project.path / "out" / "results.json").read_text())["specs"]]


def test_the_ini_catalogue_is_added_to_the_protocols(pytester: pytest.Pytester):
    project = new_project(pytester, MINE)
    project.makepyfile(test_x=TESTS.format(mine="MINE-001"))
    result = project.runpytest_subprocess("--report-dir", "out")  # the whole suite: coverage is checked
    result.assert_outcomes(passed=2)
    assert _rows(project) == [("HYDE-001", "pass"), ("MINE-001", "pass")]  # not the protocol's untouched ids


def test_spec_file_is_added_to_the_protocols_in_place_of_the_ini(pytester: pytest.Pytester):
    project = new_project(pytester, MINE)
    (project.path / "theirs.yaml").write_text(MINE.replace("MINE-001", "THEIRS-001"))
    project.makepyfile(test_x=TESTS.format(mine="THEIRS-001"))
    result = project.runpytest_subprocess("--report-dir", "out", "--spec-file", "theirs.yaml")
    result.assert_outcomes(passed=2)
    assert _rows(project) == [("HYDE-001", "pass"), ("THEIRS-001", "pass")]


def test_coverage_asks_only_for_the_projects_own_ids(pytester: pytest.Pytester):
    project = new_project(pytester, MINE + MINE.split("specs:\n", 1)[1].replace("MINE-001", "MINE-002"))
    project.makepyfile(test_x=TESTS.format(mine="MINE-001"))
    result = project.runpytest_subprocess("--report-dir", "out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*catalogue ids with no test at their tier: MINE-002"])

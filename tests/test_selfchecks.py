"""The harness's self-checks in a job of their own (issue #37 item 4): a run with `--record-selfchecks` keeps its
results under the cache directory; every other run's report (terminal, results.json, HTML) shows the latest of
them with their commit and date; the repository's main job leaves the self-check claims out."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.report.selfchecks import (latest_selfchecks, record_selfchecks, selfcheck_html, selfcheck_line,
                                       selfcheck_path)
from tests.pytester_kit import new_project

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = """
specs:
  - id: SELF-001
    title: The harness checks itself
    marker: benchmark
    metric: agreement
    comparator: ">="
    threshold: 0.9
    decision: estimate
    source: demo
  - id: CLAIM-001
    title: A claim of the user's
    marker: benchmark
    metric: score
    comparator: ">="
    threshold: 0.5
    decision: estimate
    source: demo
"""
TESTS = """
import pytest

@pytest.mark.selfcheck
@pytest.mark.spec("SELF-001")
def test_self(rag_check):
    rag_check("SELF-001", 0.95)

@pytest.mark.spec("CLAIM-001")
def test_claim(rag_check):
    rag_check("CLAIM-001", 0.7)
"""


def _results(specs: list[dict], commit: str = "abc123def4567", created: float = 1_700_000_000.0) -> dict:
    return {"run": {"git_commit": commit, "created_unix": created}, "specs": specs}


@pytest.mark.unit
def test_recorded_results_come_back_in_brief(tmp_path):
    assert latest_selfchecks(tmp_path) is None
    assert "none recorded" in selfcheck_line(None) and "scripts/selfcheck.sh" in selfcheck_line(None)
    record_selfchecks(_results([{"id": "A", "verdict": "pass", "value": 1.0}, {"id": "B", "verdict": "fail"},
                                {"id": "C", "verdict": "not run"}]), tmp_path)
    got = latest_selfchecks(tmp_path)
    assert got is not None
    assert got["rows"] == [{"id": "A", "verdict": "pass", "value": 1.0}, {"id": "B", "verdict": "fail", "value": None}]
    line = selfcheck_line(got)
    # 1,700,000,000 s after the epoch is 2023-11-14 22:13 UTC
    assert "abc123def456 on 2023-11-14 22:13 UTC" in line and "1 fail, 1 pass" in line, line
    html = selfcheck_html(got)
    assert html.count("<tr>") == 3 and "<td>B</td><td>fail</td>" in html


@pytest.mark.unit
def test_an_unreadable_record_is_said_not_dropped(tmp_path):
    path = selfcheck_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    got = latest_selfchecks(tmp_path)
    assert got is not None and got["error"].startswith("JSONDecodeError")
    assert "does not read" in selfcheck_line(got) and str(path) in selfcheck_line(got)


@pytest.mark.unit
def test_a_new_record_replaces_the_old_whole(tmp_path):
    record_selfchecks(_results([{"id": "A", "verdict": "fail"}], commit="old"), tmp_path)
    record_selfchecks(_results([{"id": "A", "verdict": "pass"}], commit="new"), tmp_path)
    got = latest_selfchecks(tmp_path)
    assert got is not None and got["git_commit"] == "new" and got["rows"][0]["verdict"] == "pass"
    assert [p.name for p in selfcheck_path(tmp_path).parent.iterdir()] == ["results.json"]  # no temporary left


@pytest.mark.integration
def test_the_main_job_shows_the_latest_selfchecks_it_left_out(pytester: pytest.Pytester):
    project = new_project(pytester, CATALOGUE)
    ini = project.path / "tox.ini"
    ini.write_text(ini.read_text().replace("[pytest]\n", "[pytest]\nmarkers =\n    selfcheck: the harness itself\n", 1))
    (project.path / "cfg.yaml").write_text("harness:\n  cache_dir: cache\n")
    project.makepyfile(test_demo=TESTS)
    common = ("--harness-config", "cfg.yaml", "--spec-coverage", "off")
    first = project.runpytest_subprocess("-m", "benchmark and not selfcheck", "--report-dir", "main0", *common)
    first.assert_outcomes(passed=1, deselected=1)
    assert "self-checks" not in first.stdout.str()  # a project without the script hears nothing of them
    (project.path / "scripts").mkdir()
    (project.path / "scripts" / "selfcheck.sh").write_text("#!/bin/sh\n")
    again = project.runpytest_subprocess("-m", "benchmark and not selfcheck", "--report-dir", "main1", *common)
    assert "self-checks of the harness: none recorded here" in again.stdout.str()
    own = project.runpytest_subprocess("-m", "benchmark and selfcheck", "--record-selfchecks", "--report-dir",
                                       "self", *common)
    own.assert_outcomes(passed=1, deselected=1)
    kept = json.loads((project.path / "cache" / "selfcheck" / "results.json").read_text())
    assert [r["id"] for r in kept["specs"] if r["verdict"] != "not run"] == ["SELF-001"]
    main = project.runpytest_subprocess("-m", "benchmark and not selfcheck", "--report-dir", "main", *common)
    main.assert_outcomes(passed=1, deselected=1)
    assert re.search(r"self-checks of the harness \(latest, .* on \d{4}-\d\d-\d\d \d\d:\d\d UTC\): 1 pass "
                     r"\(bash scripts/selfcheck.sh\)", main.stdout.str()), main.stdout.str()[-2000:]
    results = json.loads((project.path / "main" / "results.json").read_text())
    assert results["selfchecks"]["rows"] == [{"id": "SELF-001", "verdict": "pass", "value": 0.95}]
    assert "The harness&#x27;s self-checks" in (project.path / "main" / "index.html").read_text() or \
        "The harness's self-checks" in (project.path / "main" / "index.html").read_text()


@pytest.mark.unit
def test_the_main_job_leaves_the_selfchecks_out_and_selfcheck_sh_runs_only_them():
    bench = (ROOT / "scripts" / "benchmark.sh").read_text()
    selfcheck = (ROOT / "scripts" / "selfcheck.sh").read_text()
    assert '-m "benchmark and not selfcheck"' in bench
    assert '-m "benchmark and selfcheck" --record-selfchecks' in selfcheck

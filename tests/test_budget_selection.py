"""Under `--budget` each claim stays its own pytest test, and pytest's own selection keeps working (issue #37 item
2): `-k` and `-m` (deselected before the plan is made), `--lf` (deselected after it, by pytest's cache plugin) and
pytest-xdist (each worker plans what it runs with the whole budget). The plan covers the tests that run and no
other: a claim deselected after the plan was made must not keep the budget from one that runs."""
from __future__ import annotations

import json

import pytest

from tests.pytester_kit import estimate_spec, new_project

pytestmark = pytest.mark.integration
pytest_plugins = ["pytester"]

CATALOGUE = "specs:" + estimate_spec("DEAR", "A claim that takes long and passes") + estimate_spec(
    "BAD", "A claim that fails") + estimate_spec("CHEAP", "A claim that is quick and passes") + "\n"

TESTS = """
import pytest

pytestmark = pytest.mark.benchmark


@pytest.mark.spec("DEAR")
def test_dear(rag_check):
    rag_check("DEAR", 1.0)


@pytest.mark.spec("BAD")
def test_bad(rag_check):
    rag_check("BAD", {bad})


@pytest.mark.spec("CHEAP")
def test_cheap(rag_check):
    rag_check("CHEAP", 1.0)
"""

BOOK = ".cache/rag-harness/budget/costs-local-smollm2-135m-instruct.json"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    p = new_project(pytester, CATALOGUE)
    # pytest's cache on (the kit turns it off): --lf reads the last run's failures from it
    p.makeini("[pytest]\naddopts = --strict-markers -p no:randomly -p no:asyncio\nspec_files = specs\n"
              "filterwarnings = error\n")
    return p


def _book(project: pytest.Pytester, tests: dict[str, float]) -> None:
    """The costs as a last run measured them, every claim decided there (a pass or fail is a decision)."""
    path = project.path / BOOK
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"source": "test", "fixtures": {}, "tests": tests,
                                "decided": dict.fromkeys(tests, True), "needed": {}}))


def _run(project: pytest.Pytester, *args: str, bad: float = -1.0):
    project.makepyfile(test_claims=TESTS.format(bad=bad))
    result = project.runpytest_subprocess("--report-dir", "out", "--spec-coverage=off", *args)
    data = json.loads((project.path / "out" / "results.json").read_text())
    return result, {r["id"]: r["verdict"] for r in data["specs"]}, data


def test_lf_plans_only_the_claims_it_reruns(project: pytest.Pytester):
    """BAD failed last run; DEAR and CHEAP passed. `pytest test_claims.py --lf` reruns BAD alone; with the file
    named, pytest's cache plugin keeps its tests through collection and deselects the passed ones after the plan
    is made. Of the 30 s budget (26 s once the estimates' margin is kept) DEAR (10 s, worth more per second) and BAD
    (20 s) cannot both take a share: DEAR, which does not run, must not keep BAD out."""
    _book(project, {"test_claims.py::test_dear[DEAR]": 0.1, "test_claims.py::test_bad[BAD]": 0.1,
                    "test_claims.py::test_cheap[CHEAP]": 0.1})
    first, verdicts, _ = _run(project, "--budget", "10m")
    first.assert_outcomes(passed=2, failed=1)
    assert verdicts == {"DEAR": "pass", "BAD": "fail", "CHEAP": "pass"}
    costs = {"test_claims.py::test_dear[DEAR]": 10.0, "test_claims.py::test_bad[BAD]": 20.0,
             "test_claims.py::test_cheap[CHEAP]": 0.1}
    _book(project, costs)
    again, verdicts, data = _run(project, "test_claims.py", "--budget", "30s", "--lf")
    again.assert_outcomes(failed=1, deselected=2)
    assert verdicts["BAD"] == "fail", "the rerun claim ran and decided, not refused for a deselected one"
    assert data["budget"]["refused"] == {}
    # with the failure mended, --lf reruns it and it passes
    _book(project, costs)
    mended, verdicts, _ = _run(project, "test_claims.py", "--budget", "30s", "--lf", bad=1.0)
    mended.assert_outcomes(passed=1, deselected=2)
    assert verdicts["BAD"] == "pass"


@pytest.mark.parametrize("select", [("-k", "bad or cheap"), ("-m", "benchmark and not slow")],
                         ids=["-k", "-m"])
def test_k_and_m_plan_only_the_claims_they_select(project: pytest.Pytester, select: tuple[str, str]):
    """`-k` picks BAD and CHEAP; `-m` here picks all but DEAR, which is marked slow. DEAR's 50 s is not reserved
    either way: BAD fits the 30 s budget."""
    project.makeini("[pytest]\naddopts = --strict-markers -p no:randomly -p no:asyncio\nspec_files = specs\n"
                    "filterwarnings = error\nmarkers =\n    slow: a slow claim\n")
    costs = {"test_claims.py::test_dear[DEAR]": 50.0, "test_claims.py::test_bad[BAD]": 15.0,
             "test_claims.py::test_cheap[CHEAP]": 0.1}
    _book(project, costs)
    project.makepyfile(test_claims=TESTS.format(bad=-1.0).replace('@pytest.mark.spec("DEAR")',
                                                                  '@pytest.mark.slow\n@pytest.mark.spec("DEAR")'))
    result = project.runpytest_subprocess("--report-dir", "out", "--spec-coverage=off", "--budget", "30s", *select)
    result.assert_outcomes(passed=1, failed=1, deselected=1)
    data = json.loads((project.path / "out" / "results.json").read_text())
    assert {r["id"]: r["verdict"] for r in data["specs"] if r["verdict"] != "not run"} == {"BAD": "fail",
                                                                                           "CHEAP": "pass"}
    assert data["budget"]["refused"] == {}


def test_under_xdist_each_claim_keeps_its_outcome_and_a_refused_one_reads_budget(project: pytest.Pytester):
    """Two workers, each with the whole budget: DEAR (5,000 s) fits neither and reads `budget`; BAD fails and
    CHEAP passes, each its own test; the report merges the workers' rows and the refusal."""
    _book(project, {"test_claims.py::test_dear[DEAR]": 5000.0, "test_claims.py::test_bad[BAD]": 0.1,
                    "test_claims.py::test_cheap[CHEAP]": 0.1})
    result, verdicts, data = _run(project, "--budget", "1m", "-n", "2")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    assert verdicts == {"DEAR": "budget", "BAD": "fail", "CHEAP": "pass"}
    assert list(data["budget"]["refused"]) == ["test_claims.py::test_dear[DEAR]"]

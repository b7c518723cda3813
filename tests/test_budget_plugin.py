"""`--budget` as a user runs it: a claim whose cost (as last measured) does not fit reads `budget`, a sequential
claim stops at the look the budget refuses with that look's interval kept, the run's costs are kept for the next
run, and a bad value stops the run in one line."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.pytester_kit import estimate_spec, new_project

pytestmark = pytest.mark.integration
pytest_plugins = ["pytester"]

CATALOGUE = "specs:" + estimate_spec("DEAR", "A claim that takes long") + estimate_spec(
    "CHEAP", "A claim that is quick") + estimate_spec("QUICK", "A unit-tier claim", "unit") + """
  - id: SEQ
    title: A technique improves the score
    marker: benchmark
    decision: ci
    metric: score(technique) - score(baseline)
    comparator: ">"
    threshold: 0
    source: demo
"""

TESTS = """
import time
import numpy as np
import pytest
from harness.stats import paired_effect

pytestmark = pytest.mark.benchmark


@pytest.mark.spec("DEAR")
def test_dear(rag_check):
    rag_check("DEAR", 1.0)


@pytest.mark.spec("CHEAP")
def test_cheap(rag_check):
    rag_check("CHEAP", 1.0)


@pytest.mark.spec("SEQ")
def test_seq(rag_check_sequential):
    d = np.array([0.3, -0.03] * 15)
    base = np.full(len(d), 0.05)

    def measure_at(n, confidence):
        time.sleep({per_query} * n)  # the queries' cost: what the budget's estimate of the next look reads
        print("DRAWN", n)
        return paired_effect(base[:n] + d[:n], base[:n], confidence=confidence), {{}}

    rag_check_sequential("SEQ", measure_at, len(d), available=len(d))
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    p = new_project(pytester, CATALOGUE)
    return p


def _costs(project: pytest.Pytester, tests: dict[str, float], decided: dict[str, bool] | None = None,
           needed: dict[str, dict] | None = None) -> None:
    path = project.path / ".cache" / "rag-harness" / "budget" / "costs-local-smollm2-135m-instruct.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"source": "test", "fixtures": {}, "tests": tests, "decided": decided or {},
                                "needed": needed or {}}))


def _run(project: pytest.Pytester, *args: str, per_query: float = 0.0):
    project.makepyfile(test_claims=TESTS.format(per_query=per_query))
    result = project.runpytest_subprocess("--report-dir", "out", "-s", "--spec-coverage=off", *args)
    data = json.loads((project.path / "out" / "results.json").read_text())
    return result, {r["id"]: r for r in data["specs"]}, data


def test_a_claim_that_does_not_fit_reads_budget(project: pytest.Pytester):
    _costs(project, {"test_claims.py::test_dear[DEAR]": 5000.0, "test_claims.py::test_cheap[CHEAP]": 0.1,
                     "test_claims.py::test_seq[SEQ]": 0.1},
           needed={"test_claims.py::test_dear[DEAR]": {"queries": 62, "why": "80% power, estimated from 30 queries"}})
    result, rows, data = _run(project, "--budget", "1m")
    assert rows["DEAR"]["verdict"] == "budget" and rows["CHEAP"]["verdict"] == "pass"
    # never started: the queries it needs, as the last run that measured it says
    assert rows["DEAR"]["queries_needed"] == 62
    assert rows["DEAR"]["needed_for"] == ("not started within the budget; the last run that measured it: 80% power, "
                                          "estimated from 30 queries")
    assert rows["CHEAP"]["queries_needed"] is None
    assert "not decided within the budget" in " ".join(t["message"] for t in data["tests"]
                                                      if t["spec_id"] == "DEAR")
    assert data["budget"]["limit_s"] == 60.0 and list(data["budget"]["refused"]) == ["test_claims.py::test_dear[DEAR]"]
    out = result.stdout.str()
    assert "1 claim not decided within the budget" in out
    assert "62 (not started within the budget; the last run that measured it: 80% power" in out
    # without a budget every claim runs
    _, rows, data = _run(project, "--report-dir", "out")
    assert rows["DEAR"]["verdict"] == "pass" and "budget" not in data


def test_the_run_keeps_its_measured_costs_for_the_next(project: pytest.Pytester):
    """The costs, the decisions and the queries each claim needs; a later run whose budget refuses the claim before
    its first look gives the queries needed as that run measured them."""
    from harness.budget import needed_of

    _, rows, _ = _run(project, "--budget", "10m", per_query=0.05)  # SEQ: 30 queries, 1.5 s
    kept = json.loads((project.path / ".cache" / "rag-harness" / "budget" /
                       "costs-local-smollm2-135m-instruct.json").read_text())
    seq = "test_claims.py::test_seq[SEQ]"
    assert set(kept["tests"]) >= {"test_claims.py::test_dear[DEAR]", "test_claims.py::test_cheap[CHEAP]", seq}
    assert kept["decided"]["test_claims.py::test_cheap[CHEAP]"] is True  # a pass is a decision
    assert kept["decided"][seq] is False  # no effect: inconclusive after every look
    figure = needed_of(rows["SEQ"]["datasets"][0])
    assert figure is not None and rows["SEQ"]["verdict"] == "inconclusive"
    assert kept["needed"][seq]["queries"] == figure["queries"]
    assert kept["needed"][seq]["why"].startswith(figure["why"] + ", in this project's run of 20")
    _, rows, _ = _run(project, "--budget", "1s", "-k", "seq", per_query=0.05)
    assert rows["SEQ"]["verdict"] == "budget" and rows["SEQ"]["sequential"] is None  # never started
    assert rows["SEQ"]["queries_needed"] == figure["queries"]
    assert rows["SEQ"]["needed_for"] == f"not started within the budget; the last run that measured it: " \
                                        f"{kept['needed'][seq]['why']}"


def test_a_sequential_claim_stops_at_the_look_the_budget_refuses(project: pytest.Pytester):
    """0.3 s a query: look 1 (10 queries) takes 3 s, look 2 would take another 3 s, and 4 s are all there is."""
    _costs(project, {"test_claims.py::test_seq[SEQ]": 0.1, "test_claims.py::test_dear[DEAR]": 0.1,
                     "test_claims.py::test_cheap[CHEAP]": 0.1})
    result, rows, data = _run(project, "--budget", "4s", "-k", "seq", per_query=0.3)
    out = result.stdout.str()
    assert "DRAWN 10" in out and "DRAWN 20" not in out
    row = rows["SEQ"]
    assert row["verdict"] == "budget"
    seq = row["sequential"]
    assert seq["stopped_at_look"] == 1 and seq["stopped"] == "not decided within the budget at look 1"
    assert row["ci"] is not None and row["n"] == 10  # the last look's interval stays on the row
    assert "stopped: not decided within the budget at look 1" in out


def test_under_a_budget_the_claims_run_before_the_measurements(project: pytest.Pytester):
    """A test bound to no claim decides nothing: under a budget it runs after the claims the plan takes, without
    one in the collection's order."""
    project.makepyfile(test_a_measure="import pytest\n\n@pytest.mark.benchmark\ndef test_measure():\n"
                                      "    print('RAN measure')\n")
    claims = {"test_claims.py::test_dear[DEAR]": 0.1, "test_claims.py::test_cheap[CHEAP]": 0.1,
              "test_claims.py::test_seq[SEQ]": 0.1}
    _costs(project, {"test_a_measure.py::test_measure": 0.1, **claims}, {k: True for k in claims})
    budgeted, _, _ = _run(project, "--budget", "10m", "-v", "-p", "no:randomly")
    assert _order(budgeted) == ["test_dear[DEAR]", "test_cheap[CHEAP]", "test_seq[SEQ]", "test_measure"]
    unbudgeted, _, _ = _run(project, "-v", "-p", "no:randomly")
    assert _order(unbudgeted)[0] == "test_measure"


def _order(result: pytest.RunResult) -> list[str]:
    """The tests in the order they ran (-v -s: each test's line starts with its node id)."""
    return list(dict.fromkeys(ln.split(" ")[0].split("::")[-1] for ln in result.stdout.lines
                              if ln.startswith("test_") and "::" in ln))


def test_a_comparative_claim_s_decision_is_worth_the_configured_weight(project: pytest.Pytester):
    """SEQ (decided by an interval), DEAR and LATER (point checks), all as likely decided, the checks cheaper, room
    for one of the three. DEAR asks before SEQ (pytest's order within a module), LATER after it (another module).
    At the default weight (3) the comparative claim's decision is worth more per second: DEAR is kept out for it,
    and SEQ goes ahead of LATER. With `harness.budget.comparative_weight: 1` each check is worth more per second
    than SEQ: DEAR runs, and SEQ is kept out for LATER."""
    project.makepyfile(test_later="import pytest\n\n@pytest.mark.benchmark\n@pytest.mark.spec('CHEAP')\n"
                                  "def test_later(rag_check):\n    rag_check('CHEAP', 1.0)\n")
    # under 20 estimated seconds run, so the run's own pace never rescales the book (the tests take no time)
    costs = {"test_claims.py::test_dear[DEAR]": 12.5, "test_claims.py::test_seq[SEQ]": 15.0,
             "test_later.py::test_later[CHEAP]": 13.0}
    args = ("--budget", "20s", "-k", "dear or seq or later")
    _costs(project, costs, dict.fromkeys(costs, True))
    _, rows, data = _run(project, *args)
    assert rows["SEQ"]["verdict"] == "inconclusive" and list(data["budget"]["refused"]) == [
        "test_claims.py::test_dear[DEAR]"]  # LATER asks once SEQ has run (in no time): there is room again
    assert data["budget"]["comparative_weight"] == 3.0
    (project.path / "rag.yaml").write_text("harness:\n  budget:\n    comparative_weight: 1\n")
    _costs(project, costs, dict.fromkeys(costs, True))  # the run kept what it measured: the same book again
    _, rows, data = _run(project, *args, "-o", "harness_config=rag.yaml")
    assert rows["DEAR"]["verdict"] == "pass" and rows["SEQ"]["verdict"] == "budget"  # LATER was worth more
    assert data["budget"]["comparative_weight"] == 1.0


def test_a_bad_budget_stops_the_run_in_one_line(project: pytest.Pytester):
    project.makepyfile(test_claims=TESTS.format(per_query=0.0))
    result = project.runpytest_subprocess("--budget", "15x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--budget must be a positive time such as 15m, 900s or 1.5h, or none; got '15x'" in result.stderr.str()


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_a_run_without_benchmark_tests_keeps_no_costs(project: pytest.Pytester, xdist: tuple[str, ...]):
    """The unit tier writes no cost book, in one process or under xdist: only benchmark tests' costs are kept."""
    project.makepyfile(test_unit="import pytest\n\n@pytest.mark.unit\n@pytest.mark.spec('QUICK')\n"
                                 "def test_quick(rag_check):\n    rag_check('QUICK', 1.0)\n")
    project.runpytest_subprocess("--report-dir", "out", "--spec-coverage=off", *xdist, "test_unit.py") \
        .assert_outcomes(passed=1)
    assert (project.path / "out" / "results.json").is_file()  # the run did report its timing
    assert not (project.path / ".cache" / "rag-harness" / "budget").exists()


def test_a_dataset_s_index_is_one_set_up_per_dataset(pytester: pytest.Pytester):
    """A session fixture that depends (at any depth) on a parametrised one is costed once per instance: the
    second dataset's index is a set-up of its own, not one the first dataset's test already paid for."""
    from harness.plugin.budget import _links
    from harness.plugin.instances import instance_of, wider_fixtures
    from tests.pytester_kit import ADDOPTS

    pytester.makeini(f"[pytest]\naddopts = {ADDOPTS}\n")
    pytester.makeconftest("""
import pytest

@pytest.fixture(scope="session", params=["small", "large", object()])
def dataset_name(request):
    return request.param

@pytest.fixture(scope="session")
def dataset(dataset_name):
    return dataset_name

@pytest.fixture(scope="session")
def index(dataset):
    return dataset

@pytest.fixture(scope="session")
def embedder():
    return "model"
""")
    items = pytester.getitems("def test_search(index, embedder):\n    pass\n")
    keys = [sorted(k for k, _ in wider_fixtures(item) if k.split("[")[0] in ("index", "embedder", "dataset"))
            for item in items]
    # named by the parameter where it is a plain name (it holds from run to run), else by its index
    assert keys == [["dataset[dataset_name=small]", "embedder", "index[dataset_name=small]"],
                    ["dataset[dataset_name=large]", "embedder", "index[dataset_name=large]"],
                    ["dataset[dataset_name=#2]", "embedder", "index[dataset_name=#2]"]]
    assert [instance_of(items[1], n) for n in ("index", "embedder")] == ["index[dataset_name=large]", "embedder"]
    # reordered, a test stays beside its module and the instances it shares, not beside every user of the embedder
    links = _links(wider_fixtures(items[1]), items[1].nodeid)
    assert {"test_a_dataset_s_index_is_one_set_up_per_dataset.py", "index[dataset_name=large]"} <= links
    assert "embedder" not in links and not any("small" in k for k in links)


INDEX_TESTS = """
import time
import pytest

pytestmark = pytest.mark.benchmark


def pytest_generate_tests(metafunc):  # as the plugin parametrises the protocol's claims by dataset
    if "dataset_name" in metafunc.fixturenames:
        metafunc.parametrize("dataset_name", ["small", "large"], scope="session")


@pytest.fixture(scope="session")
def index(dataset_name):
    time.sleep({"small": 0.2, "large": 1.5}[dataset_name])  # a large corpus takes longer to index
    return dataset_name


@pytest.mark.spec("CHEAP")
def test_search(index, rag_check):
    rag_check("CHEAP", 1.0)
"""


def test_the_book_keeps_each_dataset_s_index_apart(project: pytest.Pytester):
    """The report names each set-up of a fixture that depends on a parametrised one by its instance, and the cost
    book keeps its seconds per instance (and their average under the fixture's name, for a dataset no run has
    indexed): the small dataset's index is no longer costed as the large one's."""
    project.makepyfile(test_index=INDEX_TESTS)
    project.runpytest_subprocess("--report-dir", "out", "--spec-coverage=off", "--budget", "10m") \
        .assert_outcomes(passed=2)
    phases = {p["name"]: p for p in json.loads((project.path / "out" / "results.json").read_text())["timing"]["phases"]}
    assert {"fixture index[dataset_name=small]", "fixture index[dataset_name=large]"} <= set(phases)
    kept = json.loads((project.path / ".cache" / "rag-harness" / "budget" /
                       "costs-local-smollm2-135m-instruct.json").read_text())["fixtures"]
    small, large = kept["index[dataset_name=small]"], kept["index[dataset_name=large]"]
    assert small >= 0.2 and large >= 1.5 and large - small > 1.0
    assert kept["index"] == pytest.approx((small + large) / 2)


STUDY_CATALOGUE = "specs:" + "".join(estimate_spec(i, f"A claim read from the study ({i})")
                                      for i in ("S1", "S2", "S3", "DEAR")) + "\n"

STUDY_TESTS = """
import time
import pytest

pytestmark = pytest.mark.benchmark


@pytest.fixture(scope="module")
def study():
    time.sleep(3.0)  # the study: far longer than the book's estimate, so the budget is spent once it is measured
    return 1.0


@pytest.mark.spec("S1")
def test_s1(study, rag_check):
    rag_check("S1", study)


@pytest.mark.spec("S2")
def test_s2(study, rag_check):
    rag_check("S2", study)


@pytest.mark.spec("S3")
def test_s3(study, rag_check):
    rag_check("S3", study)


@pytest.mark.spec("DEAR")
def test_dear(rag_check):
    rag_check("DEAR", 1.0)
"""


def test_claims_that_read_a_measured_study_are_granted_with_the_budget_spent(pytester: pytest.Pytester):
    """The study is admitted at its book cost (0.5 s) and takes 3 s, past the 2 s budget: the claims that read it
    cost nothing more (their set-up is done, their own seconds under a second) and are decided, where a claim that
    still costs seconds reads `budget`."""
    project = new_project(pytester, STUDY_CATALOGUE)
    path = project.path / ".cache" / "rag-harness" / "budget" / "costs-local-smollm2-135m-instruct.json"
    path.parent.mkdir(parents=True)
    tests = {f"test_study.py::test_{i}[{i.upper()}]": 0.01 for i in ("s1", "s2", "s3")}
    path.write_text(json.dumps({"source": "test", "fixtures": {"study": 0.5},
                                "tests": {**tests, "test_study.py::test_dear[DEAR]": 5.0}, "decided": {}}))
    project.makepyfile(test_study=STUDY_TESTS)
    project.runpytest_subprocess("--report-dir", "out", "--spec-coverage=off", "--budget", "2s", "-p", "no:randomly")
    data = json.loads((project.path / "out" / "results.json").read_text())
    rows = {r["id"]: r["verdict"] for r in data["specs"]}
    assert rows == {"S1": "pass", "S2": "pass", "S3": "pass", "DEAR": "budget"}, rows
    assert list(data["budget"]["refused"]) == ["test_study.py::test_dear[DEAR]"]
    assert data["budget"]["spent_s"] > 2.0  # the study overran: what read it was granted anyway


PROBED_TESTS = """
import pytest

pytestmark = pytest.mark.benchmark


@pytest.mark.spec("DEAR")
def test_dear(rag_llm, rag_check):
    rag_check("DEAR", 1.0)


@pytest.mark.spec("CHEAP")
def test_cheap(rag_check):
    rag_check("CHEAP", 1.0)
"""


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PROBE_REF_S = 0.2  # the packaged book's probe seconds, as the projects below read them (the real one is ~3 s)


def _model_config(project: pytest.Pytester, api_base: str) -> None:
    (project.path / "cfg.yaml").write_text(f"harness:\n  llm:\n    model: openai/sim\n    api_base: {api_base}\n"
                                           "    cache: false\n")
    project.makeconftest(f"""
import harness.plugin.budget as budget

budget.prior_probe = lambda: {{"seconds": {PROBE_REF_S}, "model": "local/smollm2-135m-instruct", "source": "test"}}
""")


def test_the_packaged_pace_probe_names_its_model_and_seconds():
    from harness.plugin.budget import prior_probe

    ref = prior_probe()
    assert ref is not None and ref["model"] == "local/smollm2-135m-instruct" and 1.0 < ref["seconds"] < 10.0
    assert "harness.llm.pace" in ref["source"] and "2026-11-27" in ref["source"]  # what measured it, and when


def _own_book(project: pytest.Pytester) -> Path:
    return project.path / ".cache" / "rag-harness" / "budget" / "costs-openai-sim.json"


def test_a_model_no_probe_has_measured_is_probed_before_the_plan(project: pytest.Pytester,
                                                                 monkeypatch: pytest.MonkeyPatch):
    """A model three times slower a request than the packaged book's. Both claims, never timed (a minute each at
    the packaged pace), fit a 4-minute budget at that pace (2 x 69 s) and only one at the probed pace (207 s each).
    The ratio is kept in the model's book: the next run reads the packaged figures at it without probing."""
    from harness.llm.pace import PROBE_CALLS
    from harness.llm.simulated import SimulatedAPI

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    ref = {"seconds": PROBE_REF_S}
    project.makepyfile(test_claims=PROBED_TESTS)
    args = ("--harness-config", "cfg.yaml", "--report-dir", "out", "--spec-coverage=off")
    with SimulatedAPI(lambda m, p: "Twenty-five minutes; at seven.", latency_s=3 * ref["seconds"]) as api:
        _model_config(project, api.api_base)
        result = project.runpytest_subprocess(*args, "--budget", "4m")
        assert api.log.statuses[200] == PROBE_CALLS, "the probe's requests, and no other"
    data = json.loads((project.path / "out" / "results.json").read_text())
    probe = data["budget"]["pace_probe"]
    assert probe["model"] == "openai/sim" and probe["reference_s"] == ref["seconds"]
    assert 3.0 <= probe["ratio"] < 3.0 + 0.5 / ref["seconds"] and probe["applied"] == probe["ratio"]
    assert sorted(r["verdict"] for r in data["specs"] if r["id"] in ("DEAR", "CHEAP")) == ["budget", "pass"]
    assert data["spend"]["by_role"]["pace-probe"]["calls"] == PROBE_CALLS  # spent like any test's calls
    result.stdout.fnmatch_lines(["*budget: * 1 claim not decided within the budget; the packaged costs raised x3.* by "
                                 "a pace probe (openai/sim *"])
    assert json.loads(_own_book(project).read_text())["pace_vs_prior"] == pytest.approx(probe["applied"], abs=1e-3)
    # the next run: no probe, the packaged pace kept; the claim that ran is timed now, the other still costs 207 s
    with SimulatedAPI(lambda m, p: "Twenty-five minutes; at seven.", latency_s=3 * ref["seconds"]) as api:
        _model_config(project, api.api_base)
        project.runpytest_subprocess(*args, "--budget", "3m")
        assert api.log.statuses[200] == 0
    data = json.loads((project.path / "out" / "results.json").read_text())
    assert "pace_probe" not in data["budget"]
    assert sorted(r["verdict"] for r in data["specs"] if r["id"] in ("DEAR", "CHEAP")) == ["budget", "pass"]


def test_a_faster_model_keeps_the_packaged_costs_and_a_run_needing_no_model_probes_nothing(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    from harness.llm.simulated import SimulatedAPI

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    project.makepyfile(test_claims=PROBED_TESTS)
    args = ("--harness-config", "cfg.yaml", "--report-dir", "out", "--spec-coverage=off")
    with SimulatedAPI(lambda m, p: "Twenty-five minutes; at seven.", latency_s=0.0) as api:
        _model_config(project, api.api_base)
        project.runpytest_subprocess(*args, "--budget", "4m", "-k", "cheap")  # no test needs the model: no probe
        assert api.log.statuses[200] == 0
        result = project.runpytest_subprocess(*args, "--budget", "4m")
    data = json.loads((project.path / "out" / "results.json").read_text())
    probe = data["budget"]["pace_probe"]
    assert probe["ratio"] < 1.0 and probe["applied"] == 1.0, "never lowered"
    assert [r["verdict"] for r in data["specs"] if r["id"] in ("DEAR", "CHEAP")] == ["pass", "pass"]
    result.stdout.fnmatch_lines(["*; the packaged costs kept by a pace probe (openai/sim *: never lowered)"])


def test_a_pace_probe_that_cannot_call_the_model_stops_the_run_in_one_line(project: pytest.Pytester,
                                                                          monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    project.makepyfile(test_claims=PROBED_TESTS)
    _model_config(project, f"http://127.0.0.1:{_closed_port()}/v1")
    result = project.runpytest_subprocess("--harness-config", "cfg.yaml", "--budget", "3m", "--spec-coverage=off")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*rag-harness: the budget's pace probe could not call openai/sim: *"])


DATASETS_TESTS = """
import numpy as np
import pytest
from harness.stats._effect import paired_effect

pytestmark = pytest.mark.benchmark


@pytest.mark.spec("SEQ")
def test_lift(rag_spec, rag_check, rag_dataset_name):
    base = np.full(30, 0.5)
    rag_check(rag_spec.id, paired_effect(base + np.tile([0.3, 0.2], 15), base), dataset=rag_dataset_name)
"""


def test_a_set_the_budget_never_started_reads_budget_with_the_queries_it_needs(pytester: pytest.Pytester):
    """A claim on two sets: a's test fits, b's does not; b's entry says so, with the queries its last run says it
    needs, and the claim reads budget, not supported."""
    project = new_project(pytester, CATALOGUE)  # SEQ: a technique improves the score
    for name in ("a", "b"):
        (project.path / "data" / name).mkdir(parents=True)
        (project.path / "data" / name / "corpus.jsonl").write_text("")
    project.makepyfile(test_sets=DATASETS_TESTS)
    ids = [ln.strip() for ln in project.runpytest_subprocess("--collect-only", "-q", "--data-dir", "data").stdout.lines
           if ln.startswith("test_sets.py::")]
    assert len(ids) == 2 and "[a" in ids[0] and "[b" in ids[1], ids
    _costs(project, {ids[0]: 0.1, ids[1]: 5000.0},
           needed={ids[1]: {"queries": 91, "why": "80% power, estimated from 30 queries, in an earlier run"}})
    result = project.runpytest_subprocess("--report-dir", "out", "--data-dir", "data", "--budget", "1m",
                                          "--spec-coverage=off")
    row = {r["id"]: r for r in json.loads((project.path / "out" / "results.json").read_text())["specs"]}["SEQ"]
    entries = {e["dataset"]: e for e in row["datasets"]}
    assert row["verdict"] == "budget" and entries["a"]["verdict"] == "supported", row
    b = entries["b"]
    assert b["verdict"] == "budget" and b["reason"].startswith("not decided within the budget: its next step needs")
    assert b["queries_needed"] == 91 and b["needed_for"] == ("not started within the budget; the last run that "
                                                             "measured it: 80% power, estimated from 30 queries, in "
                                                             "an earlier run")
    result.stdout.fnmatch_lines(["*└ b * budget *91 (not started within the budget; *(not decided within the budget: *"])


SHARED = """
import numpy as np
import pytest
from harness.stats import paired_effect

pytestmark = pytest.mark.benchmark


@pytest.mark.spec("SEQ")
def test_seq(rag_check_sequential):
    d = np.array([0.3, -0.03] * 15)
    base = np.full(len(d), 0.05)

    def measure_at(n, confidence):  # queries another claim drew already: reading them takes no time
        print("DRAWN", n)
        return paired_effect(base[:n] + d[:n], base[:n], confidence=confidence), {}

    def cost_to(n):  # the study's own estimate: 10 s a query it has not drawn, 10 drawn
        return 10.0 * max(n - 10, 0)

    rag_check_sequential("SEQ", measure_at, len(d), available=len(d), cost_to=cost_to)
"""


def test_a_look_at_a_shared_study_is_costed_by_the_study_s_estimate(project: pytest.Pytester):
    """Look 1 reads 10 queries drawn for free; look 2 would draw 10 more at 10 s each, and 30 s are all there is.
    Costed by its own (instant) reading time, the look would be granted."""
    _costs(project, {"test_shared.py::test_seq[SEQ]": 0.1})
    project.makepyfile(test_shared=SHARED)
    result = project.runpytest_subprocess("--report-dir", "out", "-s", "--spec-coverage=off", "--budget", "30s")
    out = result.stdout.str()
    assert "DRAWN 10" in out and "DRAWN 20" not in out
    row = {r["id"]: r for r in json.loads((project.path / "out" / "results.json").read_text())["specs"]}["SEQ"]
    assert row["verdict"] == "budget" and row["sequential"]["stopped_at_look"] == 1


REST = """
import pytest

pytestmark = pytest.mark.benchmark


@pytest.fixture(scope="module")
def whole(rag_budget_rest):
    # the study's own pace says its rest takes {need} s; the book has this set-up at 1 s
    rag_budget_rest("whole", "whole", {need}, "drew 10 of 30")
    print("DRAWN THE REST")
    return 1.0


@pytest.mark.spec("CHEAP")
def test_reads_all(whole, rag_check):
    rag_check("CHEAP", whole)
"""


@pytest.mark.parametrize("admitted, need, verdict", [(1.0, 100.0, "budget"), (1.0, 5.0, "pass"), (1.0, None, "pass"),
                                                     (20.0, 40.0, "budget"), (20.0, 21.0, "pass")])
def test_the_rest_of_a_study_is_asked_of_the_budget_where_it_costs_more_than_admitted(
        project: pytest.Pytester, admitted, need, verdict):
    """Admitted at the book's 1 s, the rest at 100 s does not fit a 30 s budget: refused before it is drawn. At 5 s
    it fits; with nothing drawn to estimate from (None) the admission stands. Admitted at 20 s, a rest of 40 s is
    asked whole (the admission reserved nothing) and does not fit; one of 21 s is within the admission's margin."""
    path = project.path / ".cache" / "rag-harness" / "budget" / "costs-local-smollm2-135m-instruct.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"source": "test", "fixtures": {"whole": admitted}, "fixture_calls": {"whole": 1},
                                "tests": {"test_rest.py::test_reads_all[CHEAP]": 0.1}}))
    project.makepyfile(test_rest=REST.format(need=need))
    result = project.runpytest_subprocess("--report-dir", "out", "-s", "--spec-coverage=off", "--budget", "30s")
    rows = {r["id"]: r for r in json.loads((project.path / "out" / "results.json").read_text())["specs"]}
    assert rows["CHEAP"]["verdict"] == verdict
    assert ("DRAWN THE REST" in result.stdout.str()) == (verdict == "pass")
    if verdict == "budget":
        assert "(drew 10 of 30)" in result.stdout.str() + json.dumps(rows["CHEAP"])


REST_WITH_SIZE = REST.replace('"drew 10 of 30")', '"drew 10 of 30", queries=30)')


@pytest.mark.parametrize("book_says", [None, {"queries": 150, "why": "the claim is about all 150"}])
def test_a_claim_whose_study_rest_is_refused_says_the_queries_it_needs(project: pytest.Pytester, book_says):
    """A claim cut in its study's rest (started, so with no figure of its own) says what the last run that measured
    it needs, worded as stopped, not as never started; where that run says nothing, the study's whole selection."""
    path = project.path / ".cache" / "rag-harness" / "budget" / "costs-local-smollm2-135m-instruct.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    nodeid = "test_rest.py::test_reads_all[CHEAP]"
    path.write_text(json.dumps({"source": "test", "fixtures": {"whole": 1.0}, "fixture_calls": {"whole": 1},
                                "tests": {nodeid: 0.1}, "needed": {nodeid: book_says} if book_says else {}}))
    project.makepyfile(test_rest=REST_WITH_SIZE.format(need=100.0))
    result = project.runpytest_subprocess("--report-dir", "out", "-s", "--spec-coverage=off", "--budget", "30s")
    row = {r["id"]: r for r in json.loads((project.path / "out" / "results.json").read_text())["specs"]}["CHEAP"]
    assert row["verdict"] == "budget", row
    queries, why = ((150, "the last run that measured it: the claim is about all 150") if book_says
                    else (30, "the study's whole selection, which it reads"))
    assert row["queries_needed"] == queries
    assert row["needed_for"] == f"stopped within the budget; {why}"
    assert f"needed={queries} (stopped within the budget;" in result.stdout.str()
    # the report's three views of the row: the summary table, the claims and the claim's details
    html = (project.path / "out" / "index.html").read_text()
    assert html.count(f"{queries} (stopped within the budget;") == 3, html.count(f"{queries} (stopped within")


WITHHELD = """
import pytest

pytestmark = pytest.mark.benchmark


@pytest.mark.spec("CHEAP")
def test_fell_back(rag_check):
    rag_check("CHEAP", 1.0, fallback_rate=0.5)
"""


def test_a_pass_withheld_for_its_fallback_says_no_number_of_queries_decides_it(project: pytest.Pytester):
    """Through rag_check as a user calls it: the figure holds, but the technique fell back on half the queries, so
    the row reads inconclusive and needs "never", with why, in results.json and the terminal."""
    project.makepyfile(test_withheld=WITHHELD)
    result = project.runpytest_subprocess("--report-dir", "out", "--spec-coverage=off")
    row = {r["id"]: r for r in json.loads((project.path / "out" / "results.json").read_text())["specs"]}["CHEAP"]
    assert row["verdict"] == "inconclusive" and row["queries_needed"] == "never", row
    assert row["needed_for"].startswith("at a fallback rate of 50%, more queries measure the fallback")
    assert "needed=never (at a fallback rate of 50%" in result.stdout.str()

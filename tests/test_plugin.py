"""The plugin as a user runs it: a fresh project in a temp dir, pytest in a subprocess."""
from __future__ import annotations

import json
import textwrap

import pytest

from tests.pytester_kit import new_project

pytestmark = pytest.mark.integration
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
def test_ratio(rag_spec, rag_check):
    rag_check(rag_spec.id, {value}, n=12, model="scripted")

@pytest.mark.spec("DEMO-002")
def test_flag(rag_check):
    rag_check("DEMO-002", True)
"""


@pytest.fixture
def project(pytester: pytest.Pytester):
    return new_project(pytester, CATALOGUE)


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
                                 "measured ratio = 0.9, required < 0.7, n=12, model=scripted*"])
    data = json.loads((project.path / "out" / "results.json").read_text())
    assert {r["id"]: r["verdict"] for r in data["specs"]}["DEMO-001"] == "fail"


def test_undefined_estimate_reads_inconclusive_not_fail(project: pytest.Pytester):
    project.makepyfile(test_demo=TESTS.format(value='float("nan"), reason="no question has the figure defined", '
                                                   'queries_needed=150, needed_for="the claim is about all 150"'))
    result = project.runpytest_subprocess("--report-dir", "out")
    result.assert_outcomes(passed=2)
    rows = {r["id"]: r for r in json.loads((project.path / "out" / "results.json").read_text())["specs"]}
    assert rows["DEMO-001"]["verdict"] == "inconclusive"
    # the reason and the queries the figure needs (one that names its own n, as "all 150 queries") reach the row
    assert rows["DEMO-001"]["reason"] == "no question has the figure defined"
    assert rows["DEMO-001"]["queries_needed"] == 150
    assert rows["DEMO-001"]["needed_for"] == "the claim is about all 150"  # not a power: the terminal says so
    result.stdout.fnmatch_lines(["*150 (the claim is about all 150)*"])
    assert "150 for 80% power" not in result.stdout.str()
    assert project.runpytest_subprocess("--report-dir", "out2", "--strict-verdicts").ret != 0
    # with no figure from the check, the row says why none can be given, not nothing
    project.makepyfile(test_demo=TESTS.format(value='float("nan")'))
    result = project.runpytest_subprocess("--report-dir", "out3")
    row = {r["id"]: r for r in json.loads((project.path / "out3" / "results.json").read_text())["specs"]}["DEMO-001"]
    assert row["verdict"] == "inconclusive" and row["queries_needed"] is None
    assert row["needed_for"].startswith("unknown: the figure is undefined on the data measured")
    result.stdout.fnmatch_lines(["*unknown (the figure is undefined on the data measured*"])


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
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_unknown names spec id(s) not in the catalogue: DEMO-999*"])


def test_bound_tests_get_catalogue_tier_and_spec_in_node_id(project: pytest.Pytester):
    project.makepyfile(test_demo=TESTS.format(value=0.5))
    result = project.runpytest_subprocess("--collect-only", "-q", "-m", "unit")  # in file order: no pytest-randomly
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


MEASURES = """
import pytest

@pytest.mark.unit
@pytest.mark.parametrize("i", range(6))
def test_measure(rag_measure, i):
    rag_measure("figure", i * 0.5, technique="t", dataset="d")
"""


def _content(project: pytest.Pytester, d: str) -> dict:
    """results.json less what depends on time: the run's stamp, the timing section and each test's duration."""
    data = json.loads((project.path / d / "results.json").read_text())
    data.pop("run")
    data.pop("timing")  # wall times (and one process's session setup against two's)
    for t in data["tests"]:
        t.pop("duration_s")
    return data


def test_xdist_writes_the_same_report_content(project: pytest.Pytester):
    project.makepyfile(test_demo=TESTS.format(value=0.5), test_more=MEASURES)
    plain = project.runpytest_subprocess("--report-dir", "plain")
    plain.assert_outcomes(passed=8)
    par = project.runpytest_subprocess("--report-dir", "par", "-n", "2")
    par.assert_outcomes(passed=8)
    assert _content(project, "plain") == _content(project, "par")
    assert len(_content(project, "par")["measures"]) == 6


COMPARATIVE = """
  - id: CMP-001
    title: A technique lifts a score by at least 0.05
    marker: unit
    decision: ci
    metric: score(technique) - score(baseline)
    comparator: ">="
    threshold: 0.05
    source: demo
  - id: CMP-002
    title: Accuracy improves by 4 points (McNemar p < 0.15)
    marker: unit
    decision: {rule: test, test: mcnemar, alpha: 0.15}
    metric: accuracy(candidate) - accuracy(baseline)
    comparator: ">="
    threshold: 0.04
    source: demo
"""

COMPARATIVE_TESTS = """
import numpy as np
import pytest
from harness.stats._effect import paired_effect

BASE = np.full(30, 0.5)
SHIFTS = {{"supported": np.tile([0.3, 0.2], 15), "refuted": np.tile([0.01, -0.03], 15),
           "inconclusive": np.tile([0.34, -0.26], 15)}}

@pytest.mark.spec("CMP-001")
@pytest.mark.parametrize("dataset", {datasets})
def test_lift(rag_spec, rag_check, dataset):
    kind = {kinds}[dataset]
    rag_check(rag_spec.id, paired_effect(BASE + SHIFTS[kind], BASE), dataset=dataset, available=200)

@pytest.mark.spec("CMP-002")
def test_gate(rag_spec, rag_check):
    base = np.array([1] * 10 + [0] * 20, float)
    cand = np.array([1] * 10 + [1] * {wins} + [0] * (20 - {wins}), float)
    rag_check(rag_spec.id, paired_effect(cand, base, binary=True))
"""


def _comparative(project: pytest.Pytester, kinds: dict, wins: int = 6) -> None:
    (project.path / "specs" / "demo.yaml").write_text(CATALOGUE + COMPARATIVE)
    project.makepyfile(test_demo=TESTS.format(value=0.5),
                       test_cmp=COMPARATIVE_TESTS.format(datasets=list(kinds), kinds=kinds, wins=wins))


def _rows(project: pytest.Pytester, out: str = "out") -> dict:
    return {r["id"]: r for r in json.loads((project.path / out / "results.json").read_text())["specs"]}


def test_three_valued_verdicts_per_dataset(project: pytest.Pytester):
    _comparative(project, {"a": "supported", "b": "inconclusive"})
    result = project.runpytest_subprocess("--report-dir", "out", "--junitxml", "junit.xml")
    result.assert_outcomes(passed=5)
    rows = _rows(project)
    row = rows["CMP-001"]
    assert row["verdict"] == "inconclusive"
    assert {e["dataset"]: e["verdict"] for e in row["datasets"]} == {"a": "supported", "b": "inconclusive"}
    assert row["overall"] == "inconclusive on b; supported on a"
    b = next(e for e in row["datasets"] if e["dataset"] == "b")
    assert (b["improved"], b["unchanged"], b["degraded"]) == (15, 0, 15)
    # mean +0.04 vs 0.05, sd 0.305 (0.346 at its 80% upper confidence limit): for 80% power about
    # ((1.96 + 0.84) * 0.346 / 0.01)^2 = 9,400 queries, more than the 200 available
    assert 9000 < b["queries_needed"] < 10000 and b["available"] == 200 and b["mde"] > 0
    assert b["p_holm"] >= b["p_value"]
    # the visible warning, in the same words as the report
    result.stdout.fnmatch_lines(["*rag-harness: inconclusive claims*", "*CMP-001 on b: inconclusive*queries needed: 9* for 80% power (> 200 available)*"])
    junit = (project.path / "junit.xml").read_text()
    assert 'name="harness_verdict" value="CMP-001|b|inconclusive"' in junit
    html = (project.path / "out" / "index.html").read_text()
    assert "on the metric's common axis" in html and "v-inconclusive" in html and "Provenance" in html


def test_refuted_claim_fails_its_test(project: pytest.Pytester):
    _comparative(project, {"a": "refuted"})
    result = project.runpytest_subprocess("--report-dir", "out")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*SpecCheckFailed: refuted: CMP-001*the whole 95% CI*violates >= 0.05*"])
    assert _rows(project)["CMP-001"]["verdict"] == "refuted"


def test_strict_verdicts_fail_inconclusive_claims(project: pytest.Pytester):
    _comparative(project, {"a": "inconclusive"})
    result = project.runpytest_subprocess("--report-dir", "out", "--strict-verdicts")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*SpecInconclusive: inconclusive (--strict-verdicts): CMP-001*"])
    assert _rows(project)["CMP-001"]["verdict"] == "inconclusive"


def test_test_rule_is_decided_after_holm(project: pytest.Pytester):
    # 6 wins, 0 losses: McNemar mid-p = 2*P(X<=0) - P(X=0) for Bin(6, 1/2) = 1/64 < 0.15, +20 points
    _comparative(project, {"a": "supported"}, wins=6)
    project.runpytest_subprocess("--report-dir", "out").assert_outcomes(passed=4)
    gate = _rows(project)["CMP-002"]
    assert gate["verdict"] == "supported" and gate["p_value"] is not None
    # Holm over {CMP-001's t p ~ 1e-22, 1/64}: the larger p is the second step, multiplied by 1
    assert gate["p_value"] == pytest.approx(1 / 64) and gate["p_holm"] == pytest.approx(1 / 64)


def test_report_content_does_not_depend_on_test_order(project: pytest.Pytester):
    """The same tests run in reverse order (as pytest-randomly may run a user's suite) write the same report:
    claims, checks (Holm's family included), measures and outcomes."""
    _comparative(project, {"a": "supported", "b": "inconclusive"})
    project.makepyfile(test_more=MEASURES,
                       reverse_order="def pytest_collection_modifyitems(items):\n    items.reverse()\n")

    def run_order(result: pytest.RunResult) -> list[str]:
        return [line.split()[0] for line in result.stdout.lines if " PASSED" in line and "::" in line]

    plain = project.runpytest_subprocess("--report-dir", "plain", "-v")
    plain.assert_outcomes(passed=11)
    backwards = project.runpytest_subprocess("--report-dir", "backwards", "-v", "-p", "reverse_order")
    backwards.assert_outcomes(passed=11)
    assert run_order(backwards) == run_order(plain)[::-1] and len(run_order(plain)) == 11
    assert _content(project, "plain") == _content(project, "backwards")


def test_a_bare_number_cannot_decide_a_comparative_claim(project: pytest.Pytester):
    (project.path / "specs" / "demo.yaml").write_text(CATALOGUE + COMPARATIVE)
    project.makepyfile(test_demo=TESTS.format(value=0.5), test_cmp=textwrap.dedent("""
        import pytest

        @pytest.mark.spec("CMP-001")
        def test_lift(rag_spec, rag_check):
            rag_check(rag_spec.id, 0.2)

        @pytest.mark.spec("CMP-002")
        def test_gate(rag_spec, rag_check):
            pass
"""))
    result = project.runpytest_subprocess("--report-dir", "out")
    result.stdout.fnmatch_lines(["*TypeError: CMP-001 is decided by its 95% CI vs threshold: pass an Effect*"])
    rows = _rows(project)
    assert rows["CMP-001"]["verdict"] == "error" and rows["CMP-002"]["verdict"] == "error"


CONTROLLED = """
specs:
  - id: CTL-001
    title: A sum is right
    marker: unit
    control: demo-sum-off-by-one
    metric: add(2, 2)
    comparator: "=="
    threshold: 4
    source: demo
  - id: CTL-002
    title: A check that cannot see its control
    marker: unit
    control: demo-sum-off-by-one
    metric: constant
    comparator: "=="
    threshold: 4
    source: demo
  - id: CTL-003
    title: Works without training
    marker: unit
    kind: property
    note: a design property with no broken variant
    metric: examples
    comparator: "=="
    threshold: 0
    source: demo
"""

CONTROLLED_CONFTEST = """
import mathlib
from harness.plugin.controls import control, replace_everywhere

@control("demo-sum-off-by-one", breaks="add returns a + b + 1")
def _off(mp):
    replace_everywhere(mp, mathlib.add, lambda a, b: a + b + 1)
"""

CONTROLLED_TESTS = """
import pytest
from mathlib import add

@pytest.mark.spec("CTL-001")
def test_sum(rag_spec, rag_check):
    rag_check(rag_spec.id, add(2, 2))

@pytest.mark.spec("CTL-002")
def test_constant(rag_spec, rag_check):
    rag_check(rag_spec.id, 4)

@pytest.mark.spec("CTL-003")
def test_property(rag_spec, rag_check):
    rag_check(rag_spec.id, 0)
"""


def test_negative_controls_as_a_user_runs_them(project: pytest.Pytester):
    (project.path / "specs" / "demo.yaml").write_text(CONTROLLED)
    project.makepyfile(mathlib="def add(a, b):\n    return a + b\n", conftest=CONTROLLED_CONFTEST,
                       test_ctl=CONTROLLED_TESTS)
    plain = project.runpytest_subprocess("--report-dir", "plain")
    plain.assert_outcomes(passed=3)
    result = project.runpytest_subprocess("--report-dir", "out", "--negative-controls")
    result.assert_outcomes(passed=3)  # the real runs pass...
    assert result.ret != 0  # ...but a check that survives its control fails the session
    result.stdout.fnmatch_lines(["*negative controls*", "*CTL-002: survived*demo-sum-off-by-one (add returns a + b + 1)*",
                                 "controls: 1 killed, 1 property, 1 survived",
                                 "the run fails (exit 1) on its negative controls: 1 survived (a check that still*"])
    rows = _rows(project)
    assert rows["CTL-001"]["control"]["outcome"] == "killed" and rows["CTL-001"]["verdict"] == "pass"
    assert rows["CTL-002"]["control"]["outcome"] == "survived"
    assert rows["CTL-003"]["verdict"] == "property", "a property is shown as such, never as a pass"
    assert rows["CTL-001"]["value"] == 4, "the run under the control records nothing for the report"
    timing = json.loads((project.path / "out" / "results.json").read_text())["timing"]
    phases = {p["name"] for p in timing["phases"]}  # the runs under the control took time too, named apart
    assert {"call test_ctl.py::test_sum[CTL-001] [under control demo-sum-off-by-one]",
            "call test_ctl.py::test_sum[CTL-001]"} <= phases
    assert {c["name"] for c in timing["claims"]} == {"CTL-001", "CTL-002", "CTL-003"}


BENCH_CATALOGUE = """
specs:
  - id: DEMO-B1
    title: A study's figure stays below a bound
    marker: benchmark
    decision: estimate
    control: demo-study-inflated
    metric: figure
    comparator: "<"
    threshold: 2.0
    source: demo
"""


def test_benchmark_controls_run_in_a_fresh_process_and_leave_the_real_study_alone(pytester: pytest.Pytester):
    """A module-scoped study is computed under the control in a separate pytest process; the real run's study
    (computed in this process) is the unbroken one."""
    new_project(pytester, BENCH_CATALOGUE)
    pytester.makepyfile(mylib="def compute():\n    return 1.0\n")
    pytester.makeconftest(textwrap.dedent("""
        import mylib
        from harness.plugin.controls import control

        @control("demo-study-inflated", breaks="the study's figure is five times too large")
        def _inflate(mp):
            mp.setattr(mylib, "compute", lambda: 5.0)
    """))
    pytester.makepyfile(test_bench=textwrap.dedent("""
        import os
        import pytest
        import mylib

        @pytest.fixture(scope="module")
        def study():
            return mylib.compute()

        @pytest.mark.spec("DEMO-B1")
        def test_figure(study, rag_check):
            rag_check("DEMO-B1", study, pid=os.getpid())
"""))
    result = pytester.runpytest_subprocess("--report-dir", "out", "-m", "benchmark", "--negative-controls")
    result.assert_outcomes(passed=1)
    row = {r["id"]: r for r in json.loads((pytester.path / "out" / "results.json").read_text())["specs"]}["DEMO-B1"]
    assert row["verdict"] == "pass" and row["value"] == 1.0
    assert row["control"]["outcome"] == "killed" and "5.0" in row["control"]["detail"]
    child = json.loads((pytester.path / "out" / "controls" / "demo-study-inflated" / "results.json").read_text())
    assert child["specs"][0]["value"] == 5.0
    timing = json.loads((pytester.path / "out" / "results.json").read_text())["timing"]
    fresh = {p["name"]: p for p in timing["phases"]}["control demo-study-inflated (fresh pytest process)"]
    assert fresh["wall_s"] > 0 and fresh["llm_calls"] == child["timing"]["total"]["llm_calls"] == 0  # known, not None


@pytest.mark.parametrize("form", ["space", "equals"])
def test_report_dir_outside_the_project_in_both_forms(project: pytest.Pytester, tmp_path_factory, form):
    project.makepyfile(test_demo=TESTS.format(value=0.5))
    out = tmp_path_factory.mktemp("elsewhere") / "reports"
    args = ["--report-dir", str(out)] if form == "space" else [f"--report-dir={out}"]
    result = project.runpytest_subprocess("-m", "unit", *args)
    result.assert_outcomes(passed=2)
    assert (out / "results.json").is_file() and (out / "index.html").is_file()


def test_pytest_benchmark_timings_reach_the_report(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    """Timings come from the public `benchmark` fixture of each test, not from pytest-benchmark's internals."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # pytest-benchmark turns itself off under xdist
    project.makepyfile(test_demo=TESTS.format(value=0.5) + textwrap.dedent("""

        @pytest.mark.unit
        def test_timed(benchmark):
            benchmark.pedantic(sum, args=(range(1000),), rounds=5, iterations=1)
    """))
    result = project.runpytest_subprocess("--report-dir", "out", "-m", "unit")
    result.assert_outcomes(passed=3)
    bench = json.loads((project.path / "out" / "results.json").read_text())["benchmarks"]
    assert [b["name"] for b in bench] == ["test_timed"] and bench[0]["rounds"] == 5 and bench[0]["median_s"] > 0


SPEND_CATALOGUE = """
specs:
  - id: COST-001
    title: Every answer is short
    marker: unit
    metric: longest_answer_words
    comparator: "<="
    threshold: 5
    source: demo
  - id: COST-002
    title: The offline part holds
    marker: unit
    metric: flag
    comparator: "=="
    threshold: true
    source: demo
  - id: COST-003
    title: A study computed in a fixture answers
    marker: unit
    metric: answers
    comparator: "=="
    threshold: 3
    source: demo
"""

SPEND_CONFTEST = """
from harness.llm.scripted import register

register("echo", lambda messages, params: "a short answer")
"""

SPEND_TESTS = """
import pytest
from harness.llm.spend import spending_for

@pytest.mark.spec("COST-001")
def test_answers(rag_llm, rag_check):
    with spending_for("echo-technique"):
        answers = [rag_llm.complete(f"question number {i}", max_tokens=8).text for i in range(10)]
    rag_check("COST-001", max(len(a.split()) for a in answers))

@pytest.mark.spec("COST-002")
def test_offline(rag_check):
    rag_check("COST-002", True)

@pytest.fixture(scope="module")
def study(rag_llm):
    with spending_for("fixture-technique"):
        return [rag_llm.complete(f"study item {i}", max_tokens=8).text for i in range(3)]

@pytest.mark.spec("COST-003")
def test_study(study, rag_check):
    rag_check("COST-003", len(study))
"""

SPEND_CONFIG = """
harness:
  llm:
    model: scripted/echo
    cache: false
    prices:
      scripted/echo: {input_per_mtok: 1000000, output_per_mtok: 1000000, source: "a made-up price: $1 a token"}
"""


@pytest.fixture
def spend_project(pytester: pytest.Pytester):
    p = new_project(pytester, SPEND_CATALOGUE)
    p.makeconftest(SPEND_CONFTEST)
    p.makepyfile(test_cost=SPEND_TESTS)
    (p.path / "cfg.yaml").write_text(SPEND_CONFIG)
    return p


def test_spend_is_reported_per_technique(spend_project: pytest.Pytester):
    result = spend_project.runpytest_subprocess("--report-dir", "out", "--harness-config", "cfg.yaml")
    result.assert_outcomes(passed=3)
    data = json.loads((spend_project.path / "out" / "results.json").read_text())
    echo, study = data["spend"]["by_technique"]
    # "question number i" = 3 words, "a short answer" = 3 words (the scripted model counts words): $6 a call
    assert (echo["technique"], echo["role"], echo["model"], echo["calls"], echo["cost_usd"]) == \
        ("echo-technique", "pipeline", "scripted/echo", 10, 60.0)
    assert (study["technique"], study["calls"], study["cost_usd"]) == ("fixture-technique", 3, 18.0)  # in setup
    assert data["spend"]["by_role"]["pipeline"]["cost_usd"] == 78.0
    result.stdout.fnmatch_lines(["*rag-harness: LLM spend*", "*pipeline*echo-technique*10*60.0000*"])
    assert "LLM spend" in (spend_project.path / "out" / "index.html").read_text()


def test_max_cost_cuts_claims_short_as_budget(spend_project: pytest.Pytester):
    """The cap is spent inside COST-001's loop, so the claims run after it are cut short: which ones depends on
    the order, here the file's (new_project turns pytest-randomly off in the child)."""
    result = spend_project.runpytest_subprocess("--report-dir", "out", "--harness-config", "cfg.yaml",
                                                "--max-cost", "25")
    result.assert_outcomes(passed=1, skipped=2)  # never failed, never passed
    data = json.loads((spend_project.path / "out" / "results.json").read_text())
    rows = {r["id"]: r for r in data["specs"]}
    assert rows["COST-001"]["verdict"] == "budget" and "cost cap" in rows["COST-001"]["message"]
    assert rows["COST-002"]["verdict"] == "pass"
    assert rows["COST-003"]["verdict"] == "budget"  # cut short in its fixture's setup
    assert data["spend"]["total"]["calls"] == 4 and data["spend"]["refused_calls"] == 2  # 4 x $6 = 24 <= 25
    result.stdout.fnmatch_lines(["*COST-001*budget*"])


def test_estimate_cost_calls_nothing_and_judges_nothing(spend_project: pytest.Pytester):
    result = spend_project.runpytest_subprocess("--report-dir", "out", "--harness-config", "cfg.yaml",
                                                "--estimate-cost")
    result.assert_outcomes(skipped=3)  # no check is judged on a stand-in's answers
    est = json.loads((spend_project.path / "out" / "estimate.json").read_text())
    row = est["by_technique"]["echo-technique"]
    assert row["calls"] == 10 and row["cost_usd"] == row["prompt_tokens"] + row["completion_tokens"]
    assert row["prompt_tokens"] > 0 and est["model"] == "scripted/echo"
    rows = {r["id"]: r for r in json.loads((spend_project.path / "out" / "results.json").read_text())["specs"]}
    assert rows["COST-001"]["verdict"] == "skipped" and "cost estimate" in rows["COST-001"]["message"]
    result.stdout.fnmatch_lines(["*rag-harness: cost estimate*", "*cost estimate for scripted/echo*no call was made*",
                                 "*echo-technique*10*"])
    # a later real run shows the estimate beside the actual
    spend_project.runpytest_subprocess("--report-dir", "out", "--harness-config", "cfg.yaml")
    row = json.loads((spend_project.path / "out" / "results.json").read_text())["spend"]["by_technique"][0]
    assert row["technique"] == "echo-technique" and row["estimated_calls"] == 10 and row["calls"] == 10


def test_progress_lines_for_a_technique_loop(pytester: pytest.Pytester):
    p = new_project(pytester, SPEND_CATALOGUE.replace("COST-001", "COST-009"))
    p.makepyfile(test_loop="""
        import time

        import pytest
        from harness.progress import progress

        @pytest.mark.unit
        def test_loop():
            bar = progress("demo loop", 20)
            for _ in range(20):
                time.sleep(0.2)
                bar.advance()
        """)
    result = p.runpytest_subprocess("--spec-coverage", "off")
    result.stdout.fnmatch_lines(["*demo loop: * elapsed, ETA*", "*demo loop: 20/20 (100%)*"])
    shown = result.stdout.str().count("demo loop:")  # nothing for the first 2 s, then every 10% (not a TTY)
    assert 3 <= shown <= 8, result.stdout.str()
    quiet = p.runpytest_subprocess("-q", "--spec-coverage", "off")
    assert "demo loop" not in quiet.stdout.str()


def test_a_pass_resting_on_an_unreliable_judge_reads_inconclusive(project: pytest.Pytester):
    """check(..., judge_reliability=...) with a flagged judge: the pass is held as inconclusive with the judge's
    reasons (in results.json and the terminal); a reliable judge leaves it a pass."""
    project.makepyfile(test_demo=textwrap.dedent("""
        import pytest
        from harness.judge.reliability import JudgeReliability

        def judge(kappa):
            return JudgeReliability("tiny", "hand", 60, kappa, (kappa - .1, kappa + .1), .5, (.4, .6)).as_context()

        @pytest.mark.spec("DEMO-001")
        def test_ratio(rag_spec, rag_check):
            rag_check(rag_spec.id, 0.5, judge_reliability=judge(0.1))

        @pytest.mark.spec("DEMO-002")
        def test_flag(rag_check):
            rag_check("DEMO-002", True, judge_reliability=[judge(0.8)])
"""))
    result = project.runpytest_subprocess("--report-dir", "out")
    assert result.ret == 0
    specs = {s["id"]: s for s in json.loads((project.path / "out" / "results.json").read_text())["specs"]}
    assert specs["DEMO-001"]["verdict"] == "inconclusive" and specs["DEMO-002"]["verdict"] == "pass"
    result.stdout.fnmatch_lines(["*DEMO-001*inconclusive*rests on a judge flagged unreliable*κ = 0.1 < 0.4*"])

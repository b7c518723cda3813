"""The plugin's report side: collecting each test's records on the controller, writing the report at the end of
the session, and the terminal summary (registered by `harness.plugin.hooks` at session start)."""
from __future__ import annotations

import json
from typing import Any

import pytest

from harness.plugin.state import (
    COLLECTOR_KEY, CONTROL_KEY, PROP_BUDGET, PROP_CONTROL, PROP_FATAL, PROP_RECORD, PROP_SPECS, RESULTS_KEY,
    catalogue_of, estimating, harness_config_of, spend_of,
)
from harness.report.collector import Collector, jsonable


class ReportHooks:
    """Controller-side collection (plain runs and the xdist controller alike)."""

    def __init__(self, config: pytest.Config):
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.config.stash[COLLECTOR_KEY].add_report(report, PROP_SPECS, PROP_RECORD, PROP_CONTROL, PROP_BUDGET,
                                                    PROP_FATAL)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from harness.report.terminal import inconclusive_lines, summary_lines

        results = self.config.stash.get(RESULTS_KEY, None)
        if results is None:
            return
        lines = summary_lines(results["specs"])
        if results.get("budget") and lines:
            from harness.report.terminal import budget_line

            lines.append(budget_line(results["budget"]))
        if results.get("replayed") and lines:
            from harness.report.terminal import replay_line

            lines.append(replay_line(results["replayed"]))
        if "selfchecks" in results and lines:
            from harness.report.selfchecks import selfcheck_line

            lines.append(selfcheck_line(results["selfchecks"]))
        from harness.report.html.page import capability_text, judge_lines

        lines = judge_lines(results.get("provenance") or {}) + lines
        capability = capability_text(results.get("measures") or [])
        if capability:
            lines = [capability, *lines]
        if lines:
            terminalreporter.section("rag-harness")
            for line in lines:
                terminalreporter.write_line(line)
        if self.config.getoption("negative_controls"):
            from harness.report.controls import FAILS_THE_RUN, control_lines

            terminalreporter.section("rag-harness: negative controls")
            for line in control_lines(results["specs"]):
                terminalreporter.write_line(line, red=line.startswith(FAILS_THE_RUN))
        from harness.report.spend import spend_lines

        if estimating(self.config):
            terminalreporter.section("rag-harness: cost estimate")
            from harness.llm.estimate import estimate_lines

            for line in estimate_lines(results["estimate"]):
                terminalreporter.write_line(line)
        else:
            lines = spend_lines(results.get("spend") or {})
            if lines:
                terminalreporter.section("rag-harness: LLM spend")
                for line in lines:
                    terminalreporter.write_line(line)
        from harness.report.timing import timing_lines

        lines = timing_lines(results.get("timing") or {})
        if lines:
            terminalreporter.section("rag-harness: where the time goes")
            for line in lines:
                terminalreporter.write_line(line)
        warn = inconclusive_lines(results["specs"])
        if warn:
            terminalreporter.section("rag-harness: inconclusive claims", sep="-", yellow=True)
            for line in warn:
                terminalreporter.write_line(line, yellow=True)
        paths = getattr(self.config, "_harness_report_paths", None)
        if paths:
            terminalreporter.write_line("report: " + ", ".join(str(p) for p in paths))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        from harness.report.summary import FAILING_CONTROL_OUTCOMES
        from harness.report.writer import build_results, write_results

        collector = self.config.stash[COLLECTOR_KEY]
        if not collector.has_content():
            return
        hc = harness_config_of(self.config)
        from harness.report.spend import ESTIMATE_FILE, read_estimate, spend_summary

        spend = spend_of(self.config)
        estimate = None
        if estimating(self.config):
            estimate = _estimate_of(self.config)
            hc.harness.report_dir.mkdir(parents=True, exist_ok=True)
            (hc.harness.report_dir / ESTIMATE_FILE).write_text(json.dumps(estimate, indent=2), encoding="utf-8")
        summary = spend_summary(collector.spend(), max_usd=spend.max_usd, refused=spend.refused,
                                estimate=None if estimate else read_estimate(hc.harness.report_dir))
        results = build_results(collector, catalogue_of(self.config), root=self.config.rootpath,
                                benchmarks=_benchmark_stats(collector), markexpr=self.config.option.markexpr or "",
                                spend=summary, estimate=estimate)
        from harness.report.selfchecks import latest_selfchecks, record_selfchecks

        if self.config.getoption("record_selfchecks"):
            record_selfchecks(results, hc.harness.cache_dir)
        else:  # the latest kept, or "none recorded" where this project has the script that records them
            kept = latest_selfchecks(hc.harness.cache_dir)
            if kept is not None or (self.config.rootpath / "scripts" / "selfcheck.sh").is_file():
                results["selfchecks"] = kept
        from harness.plugin.budget import budget_of

        budget = budget_of(self.config)
        if budget is not None:  # what --budget allowed, spent and refused (every worker's under xdist)
            results["budget"] = {**budget.summary(), "pace": round(budget.scale, 3),
                                 "comparative_weight": budget.comparative_weight,
                                 "costs_from": str(budget.path),
                                 **({"pace_probe": budget.probe} if budget.probe else {})}
        from harness.plugin.state import REPLAY_KEY

        replay = self.config.stash.get(REPLAY_KEY, None)
        if replay is not None and replay.replayed:  # what this process replayed instead of calling the model
            results["replayed"] = list(replay.replayed)
        self.config.stash[RESULTS_KEY] = results
        self.config._harness_report_paths = write_results(results, hc.harness.report_dir)  # type: ignore[attr-defined]
        if self.config.getoption("strict_verdicts") and any(r["verdict"] == "inconclusive" for r in results["specs"]):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.config.getoption("negative_controls") and any(
                (r.get("control") or {}).get("outcome") in FAILING_CONTROL_OUTCOMES for r in results["specs"]):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _estimate_of(config: pytest.Config) -> dict[str, Any]:
    """The session's cost estimate for the configured model (the stand-in clients recorded into its spend)."""
    from harness.llm.client import litellm_price
    from harness.llm.estimate import estimate_dict, token_counter

    s = harness_config_of(config).harness.llm
    return estimate_dict(spend_of(config), s.model, token_counter(s.model)[1],
                         s.price_for(s.model) or litellm_price(s.model))


def record_benchmark(item: pytest.Item) -> None:
    """A pytest-benchmark timing of this test, from its public `benchmark` fixture, as a report record (so it
    travels like every other record, across xdist workers too)."""
    fixture = getattr(item, "funcargs", {}).get("benchmark")
    meta = getattr(fixture, "stats", None)
    stats = getattr(meta, "stats", None)
    if fixture is None or stats is None or not getattr(stats, "rounds", 0) or item.stash.get(CONTROL_KEY, None) is not None:
        return
    record = {"kind": "benchmark", "name": fixture.name, "fullname": fixture.fullname, "group": fixture.group,
              "median_s": stats.median, "mean_s": stats.mean, "stddev_s": stats.stddev, "min_s": stats.min,
              "max_s": stats.max, "rounds": stats.rounds}
    item.user_properties.append((PROP_RECORD, json.dumps(jsonable(record), sort_keys=True)))


def _benchmark_stats(collector: Collector) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "kind"} for r in collector.records if r.get("kind") == "benchmark"]

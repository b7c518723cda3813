"""Gathers check/measure records and test outcomes from test reports (plain runs and xdist alike).

Records travel in `report.user_properties`, which pytest-xdist ships from workers to the
controller and JUnit XML writes out as properties, so one mechanism serves all three.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


def jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays, tuples, sets and paths into JSON-safe values (NaN -> None)."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return None if math.isnan(f) or math.isinf(f) else f
    if isinstance(obj, (str, int, bool)) or obj is None:
        return obj
    return str(obj)


@dataclass
class Collector:
    records: list[dict[str, Any]] = field(default_factory=list)
    outcomes: dict[str, dict[str, Any]] = field(default_factory=dict)
    controls: dict[str, dict[str, Any]] = field(default_factory=dict)
    _seen: set[tuple[str, str]] = field(default_factory=set)

    def add_report(self, report: Any, prop_specs: str, prop_record: str, prop_control: str = "",
                   prop_budget: str = "", prop_fatal: str = "") -> None:
        nodeid = report.nodeid
        for name, value in report.user_properties:
            if name == prop_record and (nodeid, value) not in self._seen:
                self._seen.add((nodeid, value))
                self.records.append(json.loads(value))
            elif prop_control and name == prop_control:
                self.controls[nodeid] = json.loads(value)
        spec_ids = [v for n, v in report.user_properties if n == prop_specs]
        if not spec_ids:
            return
        spec_id, _, rest = spec_ids[0].partition("|")
        tier, _, dataset = rest.partition("|")  # the dataset the test instance was parametrised with, if any
        entry = self.outcomes.setdefault(nodeid, {"nodeid": nodeid, "spec_id": spec_id, "tier": tier,
                                                   "dataset": dataset, "outcome": "passed", "duration_s": 0.0,
                                                   "message": ""})
        entry["duration_s"] += float(getattr(report, "duration", 0.0) or 0.0)
        budget_props = [v for n, v in report.user_properties if prop_budget and n == prop_budget]
        cut_by_budget = bool(budget_props)
        outcome = "budget" if cut_by_budget else _outcome(report)
        needed = _needed(budget_props)
        if needed is not None:  # the queries the claim needs, where its row has no figure of its own
            entry["needed"] = needed
        if outcome == "failed" and prop_fatal and any(n == prop_fatal for n, _ in report.user_properties):
            outcome = "error"  # the model could not be called: the test broke before it could decide anything
        if outcome != "passed" or report.when == "call":
            if entry["outcome"] in ("passed",) or outcome in ("failed", "error"):
                entry["outcome"] = outcome
                if outcome in ("failed", "error", "xfailed", "skipped", "budget"):
                    entry["message"] = _short_message(report)

    def has_content(self) -> bool:
        """Whether the run recorded anything to report (timing alone is not: every test is timed)."""
        return bool(any(r.get("kind") != "timing" for r in self.records) or self.outcomes or self.controls)

    def checks(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("kind") == "check"]

    def measures(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("kind") == "measure"]

    def spend(self) -> list[dict[str, Any]]:
        """Per-test spend rows (technique, role, model, calls, tokens, cost), every test's in one list."""
        return [row for r in self.records if r.get("kind") == "spend" for row in r["rows"]]

    def timing_events(self) -> list[dict[str, Any]]:
        """Every timed span (fixture setups, test phases) of every test, in the order they were recorded."""
        return [ev for r in self.records if r.get("kind") == "timing" for ev in r["events"]]


def _outcome(report: Any) -> str:
    if hasattr(report, "wasxfail"):
        return "xpassed" if report.passed else "xfailed"
    if report.failed:
        return "failed" if report.when == "call" else "error"
    if report.skipped:
        return "skipped"
    return "passed"


def _short_message(report: Any) -> str:
    if hasattr(report, "wasxfail"):
        return str(report.wasxfail)
    longrepr = getattr(report, "longrepr", None)
    if longrepr is None:
        return ""
    if isinstance(longrepr, tuple):
        return str(longrepr[2])
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        return str(crash.message)[:500]
    return str(longrepr)[:500]


def _needed(values: list[str]) -> dict[str, Any] | None:
    """The queries a claim the budget cut needs (`harness.budget.CostBook.needed`), from the budget property's value:
    a JSON object with `queries`, `why`, `started` (cut after it started: a study's rest, the cost cap) and
    `measured` (false: not the last run's figure but the study's own selection); a bare "1" says only that the
    budget cut the test."""
    for v in values:
        try:
            data = json.loads(v)
        except ValueError:
            continue
        if isinstance(data, dict) and "queries" in data:
            return {"queries": data["queries"], "why": str(data.get("why", "")), "started": bool(data.get("started")),
                    "measured": data.get("measured", True) is not False}
    return None

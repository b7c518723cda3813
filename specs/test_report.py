"""REPORT-DATASETS-BINDING: a catalogue row's `dataset:` list binds the claim in the report (harness.report.summary):
rows aggregated from check records as the plugin collects them, for claims measured on part of their sets."""
from __future__ import annotations

import pytest

from harness.catalogue import Catalogue, Spec
from harness.report.collector import Collector
from harness.report.summary import spec_rows
from harness.stats.verdict import Decision

pytestmark = pytest.mark.unit

# (decision rule, the sets the catalogue row lists, the sets its checks recorded with their verdicts)
PARTIAL = [("ci", ("a", "b"), {"a": "supported"}), ("estimate", ("a", "b"), {"a": "pass"}),
           ("ci", ("a",), {"c": "supported"}), ("test", ("a", "b", "c"), {"a": "supported", "c": "supported"})]
COMPLETE = [("ci", ("a", "b"), {"a": "supported", "b": "supported"}), ("estimate", ("a",), {"a": "pass"})]


def _rows(cases: list[tuple[str, tuple[str, ...], dict[str, str]]]) -> list[dict]:
    specs, collector = [], Collector()
    for i, (rule, listed, ran) in enumerate(cases):
        decision = Decision(rule, "mcnemar" if rule == "test" else None)
        specs.append(Spec(f"S-{i}", "claim", "unit", "m", ">=", 0.0, "demo", decision=decision, dataset=listed))
        for name, verdict in ran.items():
            nodeid = f"test_demo.py::test_claim[S-{i}-{name}]"
            collector.records.append({"kind": "check", "spec_id": f"S-{i}", "test_tier": "unit", "nodeid": nodeid,
                                      "verdict": verdict, "value": 0.1, "context": {"dataset": name}})
            collector.outcomes[nodeid] = {"nodeid": nodeid, "spec_id": f"S-{i}", "tier": "unit", "outcome": "passed",
                                          "message": ""}
    return spec_rows(collector, Catalogue(specs))


@pytest.mark.spec("REPORT-DATASETS-BINDING")
def test_a_claim_left_out_of_a_listed_dataset_is_not_supported(check):
    rows = _rows(PARTIAL)
    read_through = [r["id"] for r in rows if r["verdict"] in ("supported", "pass")]
    assert [r["verdict"] for r in _rows(COMPLETE)] == ["supported", "pass"]  # every set ran: read as measured
    check("REPORT-DATASETS-BINDING", len(read_through), claims=len(rows), read_through=read_through,
          verdicts={r["id"]: r["verdict"] for r in rows}, not_run_on={r["id"]: r["not_run_on"] for r in rows})

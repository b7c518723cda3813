"""REPORT-DATASETS-BINDING: the datasets a claim's test instances ran on bind it in the report
(harness.report.summary): rows aggregated from check records and outcomes as the plugin collects them, for claims
decided on part of the sets they ran on. The catalogue's `dataset:` list binds nothing."""
from __future__ import annotations

import pytest

from harness.catalogue import Catalogue, Spec
from harness.report.collector import Collector
from harness.report.summary import spec_rows
from harness.stats._verdict import Decision

pytestmark = pytest.mark.unit

# (decision rule, the sets its test instances ran on, the sets its checks recorded with their verdicts)
PARTIAL = [("ci", ("a", "b"), {"a": "supported"}), ("estimate", ("a", "b"), {"a": "pass"}),
           ("test", ("a", "b", "c"), {"a": "supported", "c": "supported"})]
COMPLETE = [("ci", ("a", "b"), {"a": "supported", "b": "supported"}), ("estimate", ("a",), {"a": "pass"}),
            ("ci", ("c",), {"c": "supported"})]


def _rows(cases: list[tuple[str, tuple[str, ...], dict[str, str]]]) -> list[dict]:
    specs, collector = [], Collector()
    for i, (rule, listed, ran) in enumerate(cases):
        decision = Decision(rule, "mcnemar" if rule == "test" else None)
        # the catalogue row names a set no test ran on: it binds nothing
        specs.append(Spec(f"S-{i}", "claim", "unit", "m", ">=", 0.0, "demo", decision=decision,
                          dataset=("elsewhere",)))
        for name in listed:
            nodeid = f"test_demo.py::test_claim[S-{i}-{name}]"
            if name in ran:
                collector.records.append({"kind": "check", "spec_id": f"S-{i}", "test_tier": "unit", "nodeid": nodeid,
                                          "verdict": ran[name], "value": 0.1, "context": {"dataset": name}})
            collector.outcomes[nodeid] = {"nodeid": nodeid, "spec_id": f"S-{i}", "tier": "unit", "dataset": name,
                                          "outcome": "passed" if name in ran else "skipped", "message": ""}
    return spec_rows(collector, Catalogue(specs))


@pytest.mark.spec("REPORT-DATASETS-BINDING")
def test_a_claim_left_out_of_a_listed_dataset_is_not_supported(rag_check):
    rows = _rows(PARTIAL)
    read_through = [r["id"] for r in rows if r["verdict"] in ("supported", "pass")]
    # every set decided: read as measured, whatever the catalogue row lists
    assert [r["verdict"] for r in _rows(COMPLETE)] == ["supported", "pass", "supported"]
    rag_check("REPORT-DATASETS-BINDING", len(read_through), claims=len(rows), read_through=read_through,
          verdicts={r["id"]: r["verdict"] for r in rows}, not_run_on={r["id"]: r["not_run_on"] for r in rows})

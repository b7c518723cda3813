"""Per-spec verdicts: one row per catalogue id, from the checks and outcomes a run collected."""
from __future__ import annotations

from typing import Any

from harness.catalogue import Catalogue
from harness.report.collector import Collector

VERDICT_ORDER = ("fail", "error", "pass", "xfail", "skipped", "not run")


def spec_rows(collector: Collector, catalogue: Catalogue) -> list[dict[str, Any]]:
    """Rows in catalogue order; the verdict is the worst of the checks and outcomes of the spec's
    tests at its catalogue tier (tests at other tiers are counted as supporting)."""
    tier_of = {s.id: s.marker for s in catalogue}
    checks: dict[str, list[dict[str, Any]]] = {}
    for rec in collector.checks():
        checks.setdefault(rec["spec_id"], []).append(rec)
    outcomes: dict[str, list[dict[str, Any]]] = {}
    supporting: dict[str, int] = {}
    for out in collector.outcomes.values():
        if out.get("tier") == tier_of.get(out["spec_id"]):
            outcomes.setdefault(out["spec_id"], []).append(out)
        else:  # a test at another tier supports the claim but does not decide its verdict
            supporting[out["spec_id"]] = supporting.get(out["spec_id"], 0) + 1
    rows = []
    for spec in catalogue:
        cs = sorted((c for c in checks.get(spec.id, []) if c.get("test_tier") == spec.marker),
                    key=lambda r: r["nodeid"])
        os_ = sorted(outcomes.get(spec.id, []), key=lambda r: r["nodeid"])
        kinds = {o["outcome"] for o in os_}
        if any(c["verdict"] == "fail" for c in cs) or "failed" in kinds or "xpassed" in kinds:
            verdict = "fail"
        elif "error" in kinds:
            verdict = "error"
        elif cs or "passed" in kinds:
            verdict = "pass"
        elif "xfailed" in kinds:
            verdict = "xfail"
        elif "skipped" in kinds:
            verdict = "skipped"
        else:
            verdict = "not run"
        last = cs[-1] if cs else {}
        ctx = last.get("context", {})
        rows.append({
            "id": spec.id, "title": spec.title, "tier": spec.marker, "metric": spec.metric,
            "comparator": spec.comparator, "threshold": spec.threshold, "source": spec.source,
            "verdict": verdict, "value": last.get("value"), "n": ctx.get("n"), "ci": ctx.get("ci"),
            "p_value": ctx.get("p_value"), "mde": ctx.get("mde"), "model": ctx.get("model"),
            "dataset": ctx.get("dataset"),
            "checks": len(cs), "tests": [o["nodeid"] for o in os_], "supporting_tests": supporting.get(spec.id, 0),
            "message": next((o["message"] for o in os_ if o["message"]), ""),
        })
    return rows

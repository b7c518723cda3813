"""Per-spec verdicts: one row per catalogue id, with one entry per dataset it was measured on.

Vocabulary (the same in the terminal, results.json, HTML and JUnit properties):
- comparative specs (`decision: ci | test`): supported / refuted / inconclusive, or error when the arms'
  model calls failed on more than 10% of queries, per dataset; the spec's overall verdict is refuted if any
  dataset refutes it, else error if any errs, supported if every dataset supports it, else inconclusive;
  `overall` says which datasets support, refute or cannot tell;
- estimate specs: pass / fail;
- either: error (the test broke before deciding), skipped (with its reason), xfail, not run.

A claim is bound to the datasets its test instances were parametrised with in this run (the sets the project
configures): a set whose test ran but recorded no check (it stopped before deciding) gets a "not run" entry, and
the spec cannot read supported or pass: it reads inconclusive ("supported on a; not run on b"), while a refutation
or failure measured on a set that did run stands. The catalogue's `dataset:` list only says where the protocol's
own figures were measured (`catalogue_dataset` in results.json): it binds nothing.

Holm's correction runs over the p-values of every comparative (spec, dataset) measurement of the run;
`test`-rule specs are then re-decided with their adjusted p.
"""
from __future__ import annotations

import math
from typing import Any

from harness.catalogue import Catalogue, Spec
from harness.report.collector import Collector
from harness.report.per_query import read_per_query
from harness.stats._effect import Effect
from harness.stats._verdict import below_min_n, decide

VERDICT_ORDER = ("refuted", "fail", "error", "budget", "inconclusive", "supported", "pass", "property", "xfail", "skipped",
                 "not run")
NOT_KILLED_BY_CHECK = "not killed by its check"  # the test failed under the control, but not on the spec's check
CONTROL_ORDER = ("killed", "undecided", "crashed", NOT_KILLED_BY_CHECK, "survived", "missing", "property", "skipped")
FAILING_CONTROL_OUTCOMES = ("survived", "crashed", NOT_KILLED_BY_CHECK, "missing")  # fail a --negative-controls run
_RANK = {v: i for i, v in enumerate(VERDICT_ORDER)}
NOT_RUN = "not run"  # also the entry of a catalogue dataset that no check measured
_EFFECT_FIELDS = set(Effect.__dataclass_fields__)


def effect_from_record(rec: dict[str, Any]) -> Effect | None:
    d = rec.get("effect")
    if not d:
        return None
    kw = {k: v for k, v in d.items() if k in _EFFECT_FIELDS}
    kw["ci"] = tuple(float("nan") if x is None else x for x in (kw.get("ci") or (None, None)))
    if kw.get("attainable") is not None:
        kw["attainable"] = tuple(kw["attainable"])
    for k in ("estimate", "sd"):
        if kw.get(k) is None:
            kw[k] = float("nan")
    kw["p_values"] = {k: v for k, v in (kw.get("p_values") or {}).items() if v is not None}
    return Effect(**kw)


def _finite(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def arms_of(rec: dict[str, Any]) -> dict[str, Any] | None:
    """Both arms' values of a check that compared two (None when it recorded no pair): the Effect's baseline and
    candidate means (what the verdict was computed on), else the context's numeric `baseline`/`candidate` or
    `baseline_accuracy`/`candidate_accuracy`. Labels: the context's `baseline_label`/`candidate_label`, else its
    `baseline`/`candidate` names, else the per-query table's labels, else the technique (candidate) and
    "baseline"/"candidate"."""
    ctx, eff = rec.get("context") or {}, rec.get("effect") or {}
    values = next((v for v in ((eff.get("baseline_mean"), eff.get("candidate_mean")),
                               (ctx.get("baseline"), ctx.get("candidate")),
                               (ctx.get("baseline_accuracy"), ctx.get("candidate_accuracy")))
                   if None not in map(_finite, v)), None)
    if values is None:
        return None
    per_query = ctx.get("per_query")
    pq = per_query if isinstance(per_query, dict) else {}

    def label(side: str, default: Any) -> str:
        named = ctx.get(side) if isinstance(ctx.get(side), str) else None
        return str(next((x for x in (ctx.get(f"{side}_label"), named, pq.get(f"{side}_label"), default) if x), side))

    return {"baseline": {"label": label("baseline", "baseline"), "value": _finite(values[0])},
            "candidate": {"label": label("candidate", ctx.get("technique") or "candidate"),
                          "value": _finite(values[1])}}


def _entry(spec: Spec, rec: dict[str, Any]) -> dict[str, Any]:
    """One dataset's figures, from the check that decided it."""
    ctx = rec.get("context", {})
    eff = rec.get("effect") or {}
    dec = rec.get("decided") or {}
    return {
        "dataset": ctx.get("dataset") or "", "verdict": rec["verdict"], "value": rec.get("value"),
        "ci": ctx.get("ci") if ctx.get("ci") is not None else eff.get("ci"),
        "iqr": ctx.get("iqr"), "n": ctx.get("n", eff.get("n")), "p_value": ctx.get("p_value", eff.get("p_value")),
        "p_test": (eff.get("p_values") or {}).get(spec.decision.test) if spec.decision.rule == "test" else None,
        "mde": dec.get("mde", ctx.get("mde")), "queries_needed": dec.get("queries_needed"),
        "needed_for": dec.get("needed_for"),
        "available": ctx.get("available"), "untestable": dec.get("untestable", False), "reason": dec.get("reason", ""),
        "improved": eff.get("improved"), "unchanged": eff.get("unchanged"), "degraded": eff.get("degraded"),
        "model": ctx.get("model"), "technique": ctx.get("technique"), "interval": eff.get("interval_method"),
        "nodeid": rec.get("nodeid"),
        "fallback_rate": ctx.get("fallback_rate"), "error_rate": ctx.get("error_rate"),
        "sequential": ctx.get("sequential"), "queries_used": ctx.get("queries_used"),
        "confidence": eff.get("confidence"), "per_query": read_per_query(ctx.get("per_query")),
        "arms": arms_of(rec), "_record": rec,
    }


def _holm(rows: list[dict[str, Any]], catalogue: Catalogue, alpha: float = 0.05) -> None:
    """Holm-adjust the p-values of every comparative (spec, dataset) entry; re-decide `test`-rule entries."""
    from harness.stats import holm

    def p_of(spec: Spec, entry: dict[str, Any]) -> Any:
        """The p-value that enters the family: the declared test's for a `test` rule, else the displayed one."""
        return entry.get("p_test") if spec.decision.rule == "test" else entry.get("p_value")

    family = [(r, e) for r in rows if catalogue[r["id"]].comparative for e in r["datasets"]
              if isinstance(p_of(catalogue[r["id"]], e), (int, float))]
    _, adjusted = holm([p_of(catalogue[r["id"]], e) for r, e in family], alpha)
    for (r, e), adj in zip(family, adjusted):
        e["p_holm"] = adj
        spec = catalogue[r["id"]]
        if spec.decision.rule == "test":
            eff = effect_from_record(e["_record"])
            if eff is not None:
                ctx = e["_record"].get("context", {})
                v = below_min_n(decide(eff, spec.comparator, spec.threshold, spec.decision, p_value=adj,
                                       fallback_rate=ctx.get("fallback_rate"), error_rate=ctx.get("error_rate")),
                                eff.n, spec.min_n)
                e.update(verdict=v.verdict, reason=v.reason, mde=v.mde, untestable=v.untestable,
                         queries_needed=v.as_context()["queries_needed"], needed_for=v.needed_for)


def _budget_needs(outcomes: list[dict[str, Any]]) -> dict[str, Any]:
    """A claim the budget cut with no interval of its own (never started, or stopped in a study's rest): the
    queries the last run that measured its tests says it needs (the most any of its tests needs; "never" where one
    can never decide), as `queries_needed` and `needed_for`."""
    figures = [o["needed"] for o in outcomes if o.get("needed")]
    if not figures:
        return {}
    never = [f for f in figures if f["queries"] == "never"]
    top = never[0] if never else max(figures, key=lambda f: float(f["queries"]))
    cut = "stopped within the budget" if top.get("started") else "not started within the budget"
    source = "the last run that measured it: " if top.get("measured", True) else ""
    return {"queries_needed": top["queries"], "needed_for": f"{cut}; {source}{top['why']}"}


def not_run_entry(dataset: str) -> dict[str, Any]:
    """The entry of a catalogue dataset that no check of the spec recorded."""
    return {"dataset": dataset, "verdict": NOT_RUN, "value": None,
            "reason": f"not run on {dataset}: no check of this claim recorded it (the set is not under the data "
                      "directory or not selected, or its test stopped before its check)"}


def _bind_datasets(outcomes: list[dict[str, Any]], entries: list[dict[str, Any]]) -> list[str]:
    """Append an entry for each dataset the spec's tests were parametrised with that no entry measured: "budget"
    where the run's budget refused its test before it started, else "not run"; their names."""
    measured = {e["dataset"] for e in entries}
    planned = [o.get("dataset", "") for o in outcomes]
    missing = [d for d in dict.fromkeys(planned) if d and d not in measured] if entries else []
    refused = {o.get("dataset", ""): o for o in outcomes if o.get("outcome") == "budget"}
    entries.extend(_budget_entry(d, refused[d]) if d in refused else not_run_entry(d) for d in missing)
    return missing


def _budget_entry(dataset: str, outcome: dict[str, Any]) -> dict[str, Any]:
    """The entry of a dataset whose test the run's budget refused before it started (its reason, and the queries
    the last run that measured it says it needs)."""
    return {"dataset": dataset, "verdict": "budget", "value": None,
            "reason": (outcome.get("message") or "not decided within the budget").removeprefix("budget: "),
            **_budget_needs([outcome])}


def _overall(spec: Spec, entries: list[dict[str, Any]]) -> tuple[str, str]:
    verdicts = [e["verdict"] for e in entries]
    if not spec.comparative:
        if "fail" in verdicts:
            return "fail", ""
        return ("inconclusive", "; ".join(e["reason"] for e in entries if e["verdict"] in ("inconclusive", NOT_RUN))) \
            if "inconclusive" in verdicts or NOT_RUN in verdicts else ("pass", "")
    by: dict[str, list[str]] = {}
    for e in entries:
        label = e["dataset"] or "(no dataset)"
        by.setdefault(e["verdict"] + (" (untestable)" if e.get("untestable") else ""), []).append(label)
    text = "; ".join(f"{k} on {', '.join(v)}" for k, v in sorted(by.items()))
    if "refuted" in verdicts:
        return "refuted", text
    if "error" in verdicts:  # the arms' calls failed: no verdict on that dataset, and none for the claim
        return "error", text
    if all(v == "supported" for v in verdicts):
        return "supported", text
    return "inconclusive", text


def spec_rows(collector: Collector, catalogue: Catalogue) -> list[dict[str, Any]]:
    """Rows in catalogue order (the project's own specs, and the protocol's that its tests bound or checked); each
    dataset's verdict comes from its checks at the spec's catalogue tier (the worst one decides); tests at other
    tiers are counted as supporting."""
    tier_of = {s.id: s.marker for s in catalogue}
    checks: dict[str, list[dict[str, Any]]] = {}
    for rec in collector.checks():
        checks.setdefault(rec["spec_id"], []).append(rec)
    outcomes: dict[str, list[dict[str, Any]]] = {}
    supporting: dict[str, int] = {}
    for out in collector.outcomes.values():
        if out.get("tier") == tier_of.get(out["spec_id"]):
            outcomes.setdefault(out["spec_id"], []).append(out)
        else:
            supporting[out["spec_id"]] = supporting.get(out["spec_id"], 0) + 1
    controls: dict[str, list[dict[str, Any]]] = {}
    for c in collector.controls.values():  # like verdicts, a control is decided by the tests at the spec's tier
        if c.get("tier", tier_of.get(c["spec_id"])) == tier_of.get(c["spec_id"]):
            controls.setdefault(c["spec_id"], []).append(c)
    rows = []
    for spec in catalogue:
        if not catalogue.in_project(spec.id) and not (checks.get(spec.id) or outcomes.get(spec.id)
                                                      or supporting.get(spec.id) or controls.get(spec.id)):
            continue  # a protocol spec the project's tests did not touch: not the project's to answer for
        cs = sorted((c for c in checks.get(spec.id, []) if c.get("test_tier") == spec.marker),
                    key=lambda r: r["nodeid"])
        groups: dict[str, list[dict[str, Any]]] = {}
        for c in cs:
            groups.setdefault(c.get("context", {}).get("dataset") or "", []).append(c)
        entries = []
        for _, recs in sorted(groups.items()):
            deciding = min(recs, key=lambda r: _RANK.get(r["verdict"], 99))
            entries.append(_entry(spec, deciding))
        os_ = sorted(outcomes.get(spec.id, []), key=lambda r: r["nodeid"])
        not_run_on = _bind_datasets(os_, entries)
        rows.append({
            "id": spec.id, "title": spec.title, "tier": spec.marker, "metric": spec.metric,
            "comparator": spec.comparator, "threshold": spec.threshold, "source": spec.source,
            "decision": {"rule": spec.decision.rule, "test": spec.decision.test, "alpha": spec.decision.alpha,
                         "confidence": spec.decision.confidence, "text": spec.decision.describe()},
            "comparative": spec.comparative, "catalogue_dataset": list(spec.dataset), "datasets": entries, "not_run_on": not_run_on,
            "checks": len(cs),
            "tests": [o["nodeid"] for o in os_], "supporting_tests": supporting.get(spec.id, 0),
            "message": next((o["message"] for o in os_ if o["message"]), ""), "_outcomes": os_,
            "kind": spec.kind, "_control_runs": controls.get(spec.id, []),
        })
    _holm(rows, catalogue)
    for row in rows:
        _finish(row, catalogue[row["id"]])
    return rows


def _control_summary(spec: Spec, runs: list[dict[str, Any]], verdict: str) -> dict[str, Any] | None:
    """The spec's negative-control outcome over its tests: killed if any of them failed the spec's own check
    (or errored in the code under test) under the control, else the most telling other outcome (a test that
    failed on another assertion was not killed by its check). A comparative claim that reads
    inconclusive (`verdict`) both for real and under the control is undecided, not killed: the data could not
    tell the broken run from the real one."""
    if not runs:
        return None
    outcome = min((r["outcome"] for r in runs), key=lambda o: CONTROL_ORDER.index(o) if o in CONTROL_ORDER else 99)
    first = next((r for r in runs if r["outcome"] == outcome), runs[0])
    detail = first.get("detail", "")
    under = [c.get("verdict") for r in runs if r["outcome"] == "killed" for c in r.get("checks") or []]
    if (outcome == "killed" and spec.comparative and verdict == "inconclusive" and under
            and all(v == "inconclusive" for v in under)):
        outcome = "undecided"
        detail = ("inconclusive with and without the control: this data cannot show that the check depends on "
                  "what the control breaks")
    return {"name": spec.control or None, "outcome": outcome, "breaks": first.get("breaks"), "detail": detail,
            "tests": len(runs), "killed_by": sorted(r["nodeid"] for r in runs if r["outcome"] == "killed")}


def _finish(row: dict[str, Any], spec: Spec) -> None:
    """The row's overall verdict, and its top-level figures from the deciding dataset's entry."""
    os_ = row.pop("_outcomes")
    entries = row["datasets"]
    kinds = {o["outcome"] for o in os_}
    explained = any(e["verdict"] in ("refuted", "fail") for e in entries) or any(
        "SpecInconclusive" in (o.get("message") or "") for o in os_)
    ran = [e for e in entries if e["verdict"] != NOT_RUN]
    if entries:
        verdict, overall = _overall(spec, entries)
        if ("failed" in kinds or "error" in kinds) and not explained:
            verdict = "error" if spec.comparative or "error" in kinds else "fail"
        if "xpassed" in kinds:
            verdict = "fail"
        if "budget" in kinds and verdict not in ("refuted", "fail", "error"):
            verdict = "budget"  # cut short by the cost cap: what was decided before it is not the claim's verdict
    else:
        overall = ""
        if "failed" in kinds or "xpassed" in kinds:
            verdict = "error" if spec.comparative else "fail"
        elif "error" in kinds:
            verdict = "error"
        elif "budget" in kinds:
            verdict = "budget"
        elif "passed" in kinds:
            verdict = "pass" if not spec.comparative else "error"
        elif "xfailed" in kinds:
            verdict = "xfail"
        elif "skipped" in kinds:
            verdict = "skipped"
        else:
            verdict = "not run"
    deciding = min(entries, key=lambda e: _RANK.get(e["verdict"], 99)) if entries else {}
    for e in entries:
        e.pop("_record", None)
    # a control is judged on the sets that ran: one the run left out says nothing about what the control breaks
    control_verdict = _overall(spec, ran)[0] if verdict == "inconclusive" and len(ran) < len(entries) else verdict
    if spec.kind == "property" and verdict == "pass":
        verdict = "property"  # shown as such, never counted as a pass
    row.update(verdict=verdict, overall=overall, control=_control_summary(spec, row.pop("_control_runs"), control_verdict))
    for k in ("value", "ci", "iqr", "n", "p_value", "p_holm", "mde", "queries_needed", "needed_for", "available", "untestable",
              "reason", "improved", "unchanged", "degraded", "model", "technique", "dataset", "interval",
              "fallback_rate", "error_rate", "sequential", "queries_used", "confidence", "arms"):
        row[k] = deciding.get(k)
    if verdict == "budget" and row["queries_needed"] is None:
        row.update(_budget_needs(os_))

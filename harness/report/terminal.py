"""The session-end terminal table: one line per claim (and one per dataset where there are several)."""
from __future__ import annotations

import math
from typing import Any


def _fmt(value: object) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:.4g}"
    return "" if value is None else str(value)


def _interval(v: Any) -> str:
    if isinstance(v, (list, tuple)) and len(v) == 2 and all(isinstance(x, (int, float)) for x in v):
        return f"[{v[0]:.3g}, {v[1]:.3g}]"
    return ""


NEEDED_FIELDS = ("queries_needed", "needed_for", "available", "untestable")  # what `needed_text` reads of an entry


def needed_text(entry: dict[str, Any]) -> str:
    """Queries a new fixed-n study needs for 80% power to decide an inconclusive claim (`harness.stats._verdict.
    queries_needed`), with "> N available" when the dataset has fewer; where the figure names its own n (a claim
    about all 150 queries, or one the budget never started: what the last run that measured it says) the row's
    `needed_for` says so instead of a power; "unknown (why)" where the data give no figure (no spread to plan from)."""
    q, avail = entry.get("queries_needed"), entry.get("available")
    if entry.get("verdict") not in ("inconclusive", "budget"):
        return ""
    if entry.get("untestable"):  # no number of queries decides it on that data
        return "never (untestable on this data)"
    why = entry.get("needed_for")
    if q is None:  # no figure: the row says why none can be given ("unknown: ..."), where it says
        return f"unknown ({why.removeprefix('unknown: ')})" if why else ""
    if q == "never" or (isinstance(q, float) and math.isinf(q)):
        return f"never ({why})" if why else "never (estimate = threshold)"
    q = int(q)
    more = f"> {avail} available" if isinstance(avail, int) and q > avail else ""
    if why:
        return f"{q} ({why}{'; ' + more if more else ''})"
    return f"{q} for 80% power{f' ({more})' if more else ''}"


def counts_text(entry: dict[str, Any]) -> str:
    if entry.get("improved") is None:
        return ""
    return f"+{entry['improved']}/={entry['unchanged']}/-{entry['degraded']}"


def arms_text(entry: dict[str, Any]) -> str:
    """Both arms' values of a comparative entry, baseline first: 'dense Recall@10 0.875 → hyde Recall@10 0.875'."""
    arms = entry.get("arms")
    if not arms:
        return ""
    return " → ".join(f"{arms[k]['label']} {_fmt(arms[k]['value'])}" for k in ("baseline", "candidate"))


def looks_text(entry: dict[str, Any]) -> str:
    """Where a sequential claim stopped: 'look 1/3 (10 of ≤30)', with the order its queries were drawn in when the
    row records one and the interval that decided it ('look 1/3 (10 of ≤30, random order, seed 13; betting
    interval)'), and 'stopped: futile at look 1, ...' where the claim stopped for futility; '' for a claim decided
    in one look."""
    seq = entry.get("sequential")
    if not seq or len(seq.get("looks") or []) < 2:
        return ""
    order = seq.get("query_order") or {}
    how = (f", random order, seed {order.get('seed')}" if order.get("order") == "random"
           else ", natural order" if order.get("order") == "natural"
           else f", {order['order']}" if order.get("order") else "")  # a study's own order, as it describes it
    how += f"; {entry['interval']} interval" if entry.get("interval") else ""
    where = f"look {seq['stopped_at_look']}/{len(seq['looks'])} ({seq['queries_used']} of ≤{seq['looks'][-1]}{how})"
    if seq.get("decision_probability") is not None:  # futile: its last look could hardly have decided it
        where = f"stopped: {seq['stopped']}, {where}, P(decided by the last look) {seq['decision_probability']:.3f}"
    elif seq.get("stopped"):  # the run's budget refused its next look
        where = f"stopped: {seq['stopped']}, {where}"
    return where


def _line(label: str, tier: str, e: dict[str, Any], cond: str) -> str:
    spread = _interval(e.get("ci"))
    if not spread and e.get("iqr"):
        spread = "IQR " + _interval(e.get("iqr"))
    p = _fmt(e.get("p_value"))
    if e.get("p_holm") is not None:
        p += f" ({_fmt(e.get('p_holm'))})"
    counts, needed, arms = counts_text(e), needed_text(e), arms_text(e)
    extra = "  ".join(x for x in (
        f"arms: {arms}" if arms else "",
        f"n={_fmt(e.get('n'))}" if e.get("n") is not None else "",
        looks_text(e),
        f"p={p}" if p else "",
        f"q±={counts}" if counts else "",
        f"needed={needed}" if needed else "",
        f"fallback={e['fallback_rate']:.0%}" if isinstance(e.get("fallback_rate"), (int, float)) else "",
        f"errors={e['error_rate']:.0%}" if isinstance(e.get("error_rate"), (int, float)) else "",
        f"dataset={e['dataset']}" if e.get("dataset") else "",
        f"technique={e['technique']}" if e.get("technique") else "",
        f"model={e['model']}" if e.get("model") else "",
    ) if x)
    return f"{label:<30} {tier:<11} {e['verdict']:<12} {_fmt(e.get('value')) or 'n/a':>10} {spread:<20} {cond}  {extra}"


def summary_lines(rows: list[dict[str, Any]]) -> list[str]:
    rows = [r for r in rows if r["verdict"] != "not run"]
    if not rows:
        return []
    lines = [f"{'spec':<30} {'tier':<11} {'verdict':<12} {'value':>10} {'CI / IQR':<20} condition"]
    for r in rows:
        cond = f"{r['metric']} {r['comparator']} {r['threshold']}"
        if len(r.get("datasets") or []) > 1:
            lines.append(f"{r['id']:<30} {r['tier']:<11} {r['verdict']:<12} {'':>10} {'':<20} {cond}  {r['overall']}")
            for e in r["datasets"]:
                line = _line(f"  └ {e['dataset']}", "", e, "")
                if e["verdict"] in ("not run", "budget") and e.get("reason"):  # a dataset the run left out
                    line += f"  ({e['reason']})"
                lines.append(line)
        else:
            line = _line(r["id"], r["tier"], r, cond)
            # an error the check decided (the arms' calls failed) says why; one the test broke on, its message
            note = r.get("reason") if r["verdict"] == "error" and r.get("reason") else r.get("message")
            if r["verdict"] in ("skipped", "error", "xfail") and note:
                line += f"  ({note[:160]})"
            lines.append(line)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    lines.append("specs: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    return lines


def inconclusive_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The visible warning for claims the data cannot decide, or that did not decide on every dataset they were run
    on (they pass unless --strict-verdicts)."""
    out = []
    for r in rows:
        for e in r.get("datasets") or []:
            if e["verdict"] == "not run":
                out.append(f"{r['id']}: {e.get('reason') or 'not run on ' + e['dataset']}; the claim reads "
                           f"{r['verdict']}")
                continue
            if e["verdict"] != "inconclusive":
                continue
            where = f" on {e['dataset']}" if e.get("dataset") else ""
            need = needed_text(e)
            tail = f"; queries needed: {need}" if need else ""
            mde = e.get("mde")
            if isinstance(mde, (int, float)) and math.isfinite(mde):
                tail += f"; MDE at n={e.get('n')}: {mde:.3g}"
            arms = f" ({arms_text(e)})" if e.get("arms") else ""
            out.append(f"{r['id']}{where}: inconclusive{arms} — {e.get('reason', '')}{tail}")
    return out


def budget_line(budget: dict[str, Any]) -> str:
    """`--budget`: the limit, the seconds spent, how many claims it refused, and the pace probe where one ran."""
    refused = budget.get("refused") or {}
    limit = budget.get("limit_s")
    if not limit:
        return "budget: none"
    return (f"budget: {budget.get('spent_s', 0):.0f} s of {limit:.0f} s spent; {len(refused)} claim"
            f"{'' if len(refused) == 1 else 's'} not decided within the budget{_probe_text(budget.get('pace_probe'))}")


def _probe_text(probe: dict[str, Any] | None) -> str:
    """The pace probe's part of the budget line: what it measured and what it did to the packaged costs."""
    if not probe:
        return ""
    if "skipped" in probe:
        return f"; no pace probe ({probe['skipped']})"
    measured = (f"{probe['model']} {probe['seconds']:.2f} s a request, {probe['reference_model']} "
                f"{probe['reference_s']:.2f} s on the reference machine")
    if probe["applied"] > 1.0:
        return f"; the packaged costs raised x{probe['applied']:.2f} by a pace probe ({measured})"
    return f"; the packaged costs kept by a pace probe ({measured}: never lowered)"


def replay_line(replayed: list[dict[str, Any]]) -> str:
    """Measurements replayed from earlier runs on the same code, configuration and model (`harness.replay`)."""
    calls = sum(int(r.get("calls") or 0) for r in replayed)
    names = ", ".join(f"{r['name']} (measured {r['measured_at']})" for r in replayed)
    return (f"replayed: {len(replayed)} measurement{'' if len(replayed) == 1 else 's'} of earlier runs on this code "
            f"and model, {calls} model calls not made again: {names}")

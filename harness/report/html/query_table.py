"""Per claim, why: the verdict's reasoning in full (rule, interval, threshold, looks, queries needed), the per-query
table (both arms' scores and improved / unchanged / degraded, sortable; built by the page's script when opened),
what the model wrote for the best, worst and median query, and the judge's rulings where a judge decided."""
from __future__ import annotations

from html import escape
from typing import Any

from harness.report.html.formatting import _e, _verdict, json_script, plain
from harness.report.per_query import outcome
from harness.report.terminal import NEEDED_FIELDS, counts_text, looks_text, needed_text


def _ci_text(e: dict[str, Any]) -> str:
    ci = e.get("ci")
    if not isinstance(ci, list) or len(ci) != 2:
        return "none"
    lo = "−∞" if ci[0] is None else f"{ci[0]:.4g}"
    hi = "∞" if ci[1] is None else f"{ci[1]:.4g}"
    conf = e.get("confidence")
    how = f"{conf:.1%} " if isinstance(conf, (int, float)) else ""
    method = f" ({e['interval']} interval)" if e.get("interval") else ""
    return f"{how}[{lo}, {hi}]{method}"


def reasoning(row: dict[str, Any], e: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, text) pairs: how the entry's verdict was reached, each figure from the row and entry."""
    dec = row.get("decision") or {}
    items = [("verdict", e.get("verdict", "")),
             ("rule", dec.get("text") or dec.get("rule") or "the value against its condition"),
             ("claim", f"{row['metric']} {row['comparator']} {plain(row['threshold'])}"),
             ("measured", "n/a" if e.get("value") is None else plain(e.get("value"))),
             ("interval", _ci_text(e))]
    if e.get("p_value") is not None:
        items.append(("p (after Holm)", f"{plain(e['p_value'])}"
                      + (f" ({plain(e['p_holm'])})" if e.get("p_holm") is not None else "")))
    if e.get("n") is not None:
        items.append(("queries", plain(e["n"]) + (f" of {plain(e['available'])} available"
                                                   if e.get("available") is not None else "")))
    for label, text in (("queries +/=/−", counts_text(e)), ("looks", looks_text(e)),
                        ("queries needed", needed_text(e))):
        if text:
            items.append((label, text))
    if e.get("mde") is not None:
        items.append(("minimum detectable effect", plain(e["mde"])))
    rates = [f"{k.replace('_', ' ')} {e[k]:.0%}" for k in ("fallback_rate", "error_rate")
             if isinstance(e.get(k), (int, float))]
    if rates:
        items.append(("failures", ", ".join(rates)))
    if e.get("reason"):
        items.append(("why", e["reason"]))
    return items


def _samples(pq: dict[str, Any]) -> str:
    out = []
    for s in pq.get("samples") or []:
        o = outcome(s.get("baseline"), s.get("candidate"), pq.get("lower_is_better", False))
        head = (f"<h4>{escape(s['pick'])} query: <code>{_e(s['id'])}</code> {_verdict(o)} "
                f"<span class=muted>{escape(pq['baseline_label'])} {_e(s.get('baseline'))} → "
                f"{escape(pq['candidate_label'])} {_e(s.get('candidate'))}</span></h4>")
        body = f"<div class=muted>{escape(s.get('query') or '')}</div>"
        outs = s.get("outputs") or []
        for label, text in (outs.items() if isinstance(outs, dict) else outs):
            body += f"<div><b>{escape(label)}</b></div><pre class=out>{escape(text)}</pre>"
        rulings = s.get("rulings") or []
        if rulings:
            body += ("<table class=rulings><tr><th>judge</th><th>claim ruled on</th><th>ruling</th><th>reason</th></tr>"
                     + "".join(f"<tr><td>{_e(r.get('judge'))}</td><td class=msg>{_e(r.get('claim'))}</td>"
                               f"<td>{_e(r.get('verdict'))}</td><td class=msg>"
                               f"{_e(r.get('reason')) or '<span class=muted>(the judge gives no reason)</span>'}</td></tr>"
                               for r in rulings) + "</table>")
        out.append(f'<div class="sample" data-pick="{_e(s["pick"])}">{head}{body}</div>')
    return "".join(out)


def _entry_html(row: dict[str, Any], e: dict[str, Any], key: str) -> str:
    why = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in reasoning(row, e))
    out = [f"<h3>{_e(e.get('dataset') or '(no dataset)')} {_verdict(e.get('verdict', ''))}</h3>",
           f'<dl class="why">{why}</dl>']
    pq = e.get("per_query")
    if pq:
        out.append(f"<h4>What the model wrote</h4>{_samples(pq)}" if pq.get("samples") else "")
        out.append(f'<details class="pq"><summary>every query ({len(pq["ids"])}): {escape(pq["baseline_label"])} vs '
                   f'{escape(pq["candidate_label"])}, sortable</summary><div class="pq-wrap" data-pq="{key}"></div>'
                   f"</details>{json_script(key, pq)}")
    return "".join(out)


def claim_details(specs: list[dict[str, Any]]) -> str:
    """One collapsed section per claim that ran (its id the anchor `claim-ID`; open it from the address's #)."""
    out = []
    k = 0
    for r in specs:
        if r["verdict"] == "not run":
            continue
        entries = [e for e in r.get("datasets") or [] if e.get("verdict") != "not run"] or [
            {k2: r.get(k2) for k2 in ("dataset", "verdict", "value", "ci", "n", "p_value", "p_holm", "reason", "mde",
                                      "interval", "confidence", *NEEDED_FIELDS)}]
        parts = []
        for e in entries:
            parts.append(_entry_html(r, e, f"pq-{k}"))
            k += 1
        if r.get("overall"):
            parts.insert(0, f"<p>{_e(r['overall'])}</p>")
        if r.get("message") and "SpecCheckFailed" not in r["message"]:
            parts.append(f"<p class=msg>{_e(r['message'])}</p>")
        out.append(f'<details class="claim" id="claim-{_e(r["id"])}"><summary>{_e(r["id"])} {_verdict(r["verdict"])} '
                   f'<span class=muted>{_e(r["title"])}</span></summary>{"".join(parts)}</details>')
    return "<h2>Why: each claim in full</h2>" + "".join(out) if out else ""

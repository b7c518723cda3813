"""The report's first screen: the technique claims grouped by family, each (claim, dataset) with its verdict, effect
and interval drawn on one common axis per metric (zero and the claim's threshold marked); then the harness's
self-checks; claims that did not run in this tier collapsed."""
from __future__ import annotations

import math
from html import escape
from typing import Any

from harness.report.html.formatting import _e, _verdict, plain
from harness.report.terminal import NEEDED_FIELDS, arms_text, counts_text, looks_text, needed_text

# (family, id prefixes): the protocol's technique claims
FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("HyDE", ("HYDE-", "BENCH-HYDE", "FIRST-LOOK-HYDE")), ("CRAG", ("CRAG-", "BENCH-CRAG")), ("RAG-Fusion", ("RAGF-", "BENCH-RAGF")),
    ("QRW", ("QRW-", "BENCH-QRW")), ("WSOP", ("WSOP-", "BENCH-WSOP")), ("E2–E4", ("E2E4-", "BENCH-E2E4")),
    ("RET", ("RET-", "BENCH-RET-")),
)
SELF_CHECKS: tuple[tuple[str, tuple[str, ...]], ...] = (("Calibration", ("CALIB-",)), ("Live", ("LIVE-",)))
PLOT_W, ROW_H, PAD = 360, 22, 10


def family_of(spec_id: str, families: tuple[tuple[str, tuple[str, ...]], ...] = FAMILIES) -> str | None:
    """The family whose id prefix the claim carries, None when none does."""
    return next((name for name, prefixes in families for p in prefixes if spec_id.startswith(p)), None)


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def metric_axes(specs: list[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    """Per metric, the (low, high) of one common axis over every comparative entry's estimate, finite interval
    ends and threshold, and zero; widened by 5% of the span on each side."""
    pts: dict[str, list[float]] = {}
    for r in specs:
        if not r.get("comparative"):
            continue
        vals = pts.setdefault(r["metric"], [0.0])
        if _num(r.get("threshold")) is not None:
            vals.append(float(r["threshold"]))
        for e in r.get("datasets") or []:
            vals += [x for x in (_num(e.get("value")), *[_num(c) for c in (e.get("ci") or [])]) if x is not None]
    out = {}
    for metric, vals in pts.items():
        lo, hi = min(vals), max(vals)
        pad = (hi - lo) * 0.05 or 0.1
        out[metric] = (lo - pad, hi + pad)
    return out


def _x(v: float, lo: float, hi: float) -> float:
    return PAD + (min(max(v, lo), hi) - lo) / (hi - lo) * (PLOT_W - 2 * PAD)


def nice_ticks(lo: float, hi: float, most: int = 6) -> list[float]:
    """Round tick values within [lo, hi]: multiples of 1, 2 or 5 × 10^k, the smallest step giving at most `most`
    ticks (zero among them whenever the range holds it)."""
    span = hi - lo
    if not span > 0:
        return [lo]
    base = 10.0 ** math.floor(math.log10(span / most))
    step = next(m * base for m in (1, 2, 5, 10) if span / (m * base) <= most)
    first = math.ceil(lo / step)
    return [round(k * step, 12) + 0.0 for k in range(first, math.floor(hi / step) + 1)]


def axis_svg(metric: str, lo: float, hi: float) -> str:
    """The metric's axis: ticks at its ends and at zero."""
    ticks = nice_ticks(lo, hi)
    parts = [f'<svg role="img" aria-label="axis of {escape(metric)}" width="{PLOT_W}" height="{ROW_H}" '
             'xmlns="http://www.w3.org/2000/svg">',
             f'<line x1="{PAD}" x2="{PLOT_W - PAD}" y1="4" y2="4" stroke="#6b7585"/>']
    for t in ticks:
        x = _x(t, lo, hi)
        anchor = "start" if x < 30 else "end" if x > PLOT_W - 30 else "middle"
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="1" y2="8" stroke="#6b7585"/>'
                     f'<text x="{x:.1f}" y="19" text-anchor="{anchor}">{escape(f"{t:.3g}")}</text>')
    return "".join(parts) + "</svg>"


_COLOUR = {"supported": "#2e8b57", "refuted": "#c0392b", "inconclusive": "#c99700", "error": "#7a3b00"}


def effect_svg(entry: dict[str, Any], threshold: Any, lo: float, hi: float) -> str:
    """One entry on its metric's axis: zero (grey dashes), the threshold (black tick), the interval and the
    estimate coloured by verdict; an interval end that is unbounded or past the axis runs to the edge."""
    est = _num(entry.get("value"))
    ci = entry.get("ci") or [None, None]
    colour = _COLOUR.get(str(entry.get("verdict")), "#6b7585")
    y = ROW_H / 2
    parts = [f'<svg role="img" aria-label="effect and interval" width="{PLOT_W}" height="{ROW_H}" '
             'xmlns="http://www.w3.org/2000/svg">',
             f'<line class="zero" x1="{_x(0.0, lo, hi):.1f}" x2="{_x(0.0, lo, hi):.1f}" y1="0" y2="{ROW_H}" '
             'stroke="#9aa3af" stroke-dasharray="3 2"/>']
    if _num(threshold) is not None:
        tx = _x(float(threshold), lo, hi)
        parts.append(f'<line class="threshold" x1="{tx:.1f}" x2="{tx:.1f}" y1="2" y2="{ROW_H - 2}" stroke="#1d2430" '
                     'stroke-width="2"/>')
    if len(ci) == 2 and est is not None:
        c0, c1 = _num(ci[0]), _num(ci[1])
        a = _x(c0 if c0 is not None else lo, lo, hi)
        b = _x(c1 if c1 is not None else hi, lo, hi)
        parts.append(f'<line class="ci" x1="{a:.1f}" x2="{b:.1f}" y1="{y}" y2="{y}" stroke="{colour}" '
                     'stroke-width="3"/>')
    if est is not None:
        parts.append(f'<circle cx="{_x(est, lo, hi):.1f}" cy="{y}" r="4.5" fill="{colour}"/>')
    return "".join(parts) + "</svg>"


def _interval_text(ci: Any) -> str:
    if not isinstance(ci, list) or len(ci) != 2:
        return ""
    ends = ["−∞" if ci[0] is None else f"{ci[0]:.3g}", "∞" if ci[1] is None else f"{ci[1]:.3g}"]
    return f"[{ends[0]}, {ends[1]}]"


def _effect_text(r: dict[str, Any], e: dict[str, Any]) -> str:
    v = e.get("value")
    shown = "n/a" if v is None else (f"{v:+.3g}" if r.get("comparative") and isinstance(v, (int, float))
                                     else plain(v))
    return f"{shown} {_interval_text(e.get('ci'))}".strip()


def _arms_div(e: dict[str, Any]) -> str:
    """Both arms' values under the effect ('dense Recall@10 0.875 → hyde Recall@10 0.875'), where it compared two."""
    text = arms_text(e)
    return f'<div class="arms muted">{escape(text)}</div>' if text else ""


def _claim_rows(rows: list[dict[str, Any]], axes: dict[str, tuple[float, float]]) -> str:
    out = []
    last_metric = None
    for r in sorted(rows, key=lambda r: (not r.get("comparative"), r["metric"], r["id"])):
        comparative = bool(r.get("comparative")) and r["metric"] in axes
        if comparative and r["metric"] != last_metric:
            lo, hi = axes[r["metric"]]
            out.append(f'<tr class="axis"><td colspan="6"><b>{escape(r["metric"])}</b> <span class=muted>one axis '
                       'for every claim on this metric: ● estimate, — interval, ┃ threshold, ┆ zero</span></td>'
                       f'<td class="plot">{axis_svg(r["metric"], lo, hi)}</td></tr>')
            last_metric = r["metric"]
        entries = [e for e in r.get("datasets") or [] if e.get("verdict") != "not run"] or [
            {"dataset": r.get("dataset") or "", "verdict": r["verdict"], "value": r.get("value"), "ci": r.get("ci"),
             "n": r.get("n"), "arms": r.get("arms"), **{k: r.get(k) for k in NEEDED_FIELDS}}]
        for e in entries:
            cond = f"{r['comparator']} {plain(r['threshold'])}"
            plot = effect_svg(e, r["threshold"], *axes[r["metric"]]) if comparative else ""
            n = e.get("n")
            more = " · ".join(x for x in (counts_text(e), looks_text(e), needed_text(e) and f"needs {needed_text(e)}")
                              if x)
            out.append(f'<tr class="claim" data-claim="{_e(r["id"])}" data-dataset="{_e(e.get("dataset"))}">'
                       f'<td><a href="#claim-{_e(r["id"])}"><b>{_e(r["id"])}</b></a>'
                       f'<div class=muted>{_e(r["title"])}</div></td><td>{_e(e.get("dataset"))}</td>'
                       f'<td class="verdict">{_verdict(e["verdict"])}</td>'
                       f'<td class="effect num">{escape(_effect_text(r, e))}{_arms_div(e)}</td>'
                       f'<td class=num>{escape(cond)}</td>'
                       f'<td class=num>{_e(n)}<div class=muted>{escape(more)}</div></td>'
                       f'<td class="plot">{plot}</td></tr>')
    return "".join(out)


def _table(rows: list[dict[str, Any]], axes: dict[str, tuple[float, float]], cls: str) -> str:
    head = ("<thead><tr><th>claim</th><th>dataset</th><th>verdict</th><th>effect [interval]</th><th>threshold</th>"
            "<th>n</th><th>on the metric's common axis</th></tr></thead>")
    cols = "".join(f'<col style="width:{w}">' for w in ("21%", "9%", "10%", "15%", "7%", "10%", f"{PLOT_W + 10}px"))
    return (f'<div class=wide><table class="claims {cls}"><colgroup>{cols}</colgroup>{head}'
            f"<tbody>{_claim_rows(rows, axes)}</tbody></table></div>")


def _counts(rows: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    return " ".join(f"{_verdict(k)} {v}" for k, v in sorted(counts.items()))


def claims_first_screen(specs: list[dict[str, Any]]) -> str:
    """Technique claims by family, then the harness's self-checks and the other claims that ran, then the claims
    not run in this tier (collapsed)."""
    ran = [r for r in specs if r["verdict"] != "not run"]
    idle = [r for r in specs if r["verdict"] == "not run"]
    axes = metric_axes(ran)
    out = ["<h2>Technique claims</h2>"]
    grouped = False
    for name, _ in FAMILIES:
        rows = [r for r in ran if family_of(r["id"]) == name]
        if rows:
            grouped = True
            out.append(f'<h3 class="family">{escape(name)} <span class=muted>{len(rows)} claim(s)</span> '
                       f'{_counts(rows)}</h3>{_table(rows, axes, "technique")}')
    if not grouped:
        out.append("<p class=muted>No technique claim ran in this tier.</p>")
    for name, _ in SELF_CHECKS:
        rows = [r for r in ran if family_of(r["id"], SELF_CHECKS) == name]
        if rows:
            out.append(f'<h2>Harness self-check: {escape(name)}</h2>{_table(rows, axes, "selfcheck")}')
    rest = [r for r in ran if family_of(r["id"]) is None and family_of(r["id"], SELF_CHECKS) is None]
    if rest:
        out.append(f"<h2>Other claims</h2>{_table(rest, axes, 'other')}")
    if idle:
        items = "".join(f"<li><b>{_e(r['id'])}</b> <span class=muted>{_e(r['tier'])} · {_e(r['title'])}</span></li>"
                        for r in idle)
        out.append(f'<details class="notrun"><summary>{len(idle)} claim(s) not run in this tier</summary>'
                   f"<ul>{items}</ul></details>")
    return "".join(out)

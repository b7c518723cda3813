"""The session-end terminal table."""
from __future__ import annotations

from harness.catalogue import Catalogue
from harness.report.collector import Collector
from harness.report.summary import spec_rows


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)


def summary_lines(collector: Collector, catalogue: Catalogue) -> list[str]:
    rows = [r for r in spec_rows(collector, catalogue) if r["verdict"] != "not run"]
    if not rows:
        return []
    lines = [f"{'spec':<26} {'tier':<11} {'verdict':<8} {'value':>10}  condition"]
    for r in rows:
        cond = f"{r['metric']} {r['comparator']} {r['threshold']}"
        extra = f"  (model={r['model']})" if r.get("model") else ""
        lines.append(f"{r['id']:<26} {r['tier']:<11} {r['verdict']:<8} {_fmt(r['value']) or 'n/a':>10}  {cond}{extra}")
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    lines.append("specs: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    return lines

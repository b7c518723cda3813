"""The report's charts as inline SVG: retrieval quality by technique, latency ratios, statistics calibration."""
from __future__ import annotations

from collections import Counter
from html import escape
from typing import Any, Iterable

from harness.report.html.formatting import _e, _fmt


def _bars(items: list[tuple[str, float]], *, title: str, ref: float | None = None, width: int = 640) -> str:
    """A horizontal bar chart as inline SVG; `ref` draws a dashed reference line (e.g. a threshold)."""
    if not items:
        return ""
    label_w, bar_h, gap = 230, 16, 6
    vmax = max([v for _, v in items] + ([ref] if ref is not None else []) + [1e-12])
    scale = (width - label_w - 60) / vmax
    h = len(items) * (bar_h + gap) + 24
    parts = [f'<svg role="img" aria-label="{escape(title)}" width="{width}" height="{h}" xmlns="http://www.w3.org/2000/svg">']
    for i, (label, value) in enumerate(items):
        y = 8 + i * (bar_h + gap)
        parts.append(f'<text x="0" y="{y + 12}">{escape(label[:40])}</text>')
        parts.append(f'<rect x="{label_w}" y="{y}" width="{max(value, 0) * scale:.1f}" height="{bar_h}" fill="#4c78a8"/>')
        parts.append(f'<text x="{label_w + max(value, 0) * scale + 4:.1f}" y="{y + 12}">{value:.4g}</text>')
    if ref is not None:
        x = label_w + ref * scale
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{h}" stroke="#c0392b" stroke-dasharray="4 3"/>')
    parts.append("</svg>")
    return "".join(parts)


def _retrieval_charts(measures: Iterable[dict[str, Any]]) -> str:
    """Per-dataset, per-metric bars across techniques/retrievers (measures carrying `technique` context).

    A technique measured by several tests gets one bar per distinct figure, labelled with its query count
    (and its test where two figures share a count); the same figure measured twice is drawn once."""
    groups: dict[tuple[str, str], dict[tuple[str, Any, float], str]] = {}
    for m in measures:
        ctx = m.get("context", {})
        tech = ctx.get("technique")
        if tech is None or not isinstance(m.get("value"), (int, float)):
            continue
        test = str(m.get("nodeid", "")).split("::")[-1].split("[")[0]
        groups.setdefault((str(ctx.get("dataset", "")), m["name"]), {}).setdefault(
            (str(tech), ctx.get("n"), float(m["value"])), test)
    out = []
    for (dataset, metric), figures in sorted(groups.items()):
        at_n = Counter((tech, n) for tech, n, _ in figures)  # figures of a technique at one query count
        figures_of = Counter(tech for tech, _, _ in figures)
        items = []
        for (tech, n, value), test in figures.items():
            label = tech if figures_of[tech] == 1 else f"{tech} (n={n})"
            items.append((label + (f" {test}" if at_n[(tech, n)] > 1 else ""), value))
        out.append(f"<h3>{escape(dataset)} — {escape(metric)}</h3>")
        out.append(_bars(sorted(items), title=f"{dataset} {metric}"))
    return "".join(out)


def _latency_charts(measures: Iterable[dict[str, Any]]) -> str:
    items = []
    for m in measures:
        if m.get("context", {}).get("kind") == "latency_ratio" and isinstance(m.get("value"), (int, float)):
            items.append((m["name"], float(m["value"])))
    return _bars(sorted(items), title="latency ratios", ref=1.0) if items else ""


def _calibration(measures: list[dict[str, Any]]) -> str:
    """Type-I error per test and n with the [0.035, 0.065] band, CI coverage and power vs prediction."""
    rows = [m for m in measures if (m.get("context") or {}).get("kind") == "calibration"]
    if not rows:
        return ""
    type1 = [(m["name"], float(m["value"])) for m in rows if m["name"].startswith("type1:")
             and isinstance(m.get("value"), (int, float))]
    out = []
    if type1:
        out.append("<h3>Type-I error at α = 0.05 (A/A comparisons; band 0.035–0.065)</h3>")
        out.append(_band_bars(sorted(type1), 0.035, 0.065, vmax=0.12))
    table = "".join(f"<tr><td>{_e(m['name'])}</td><td class=num>{_e(m.get('value'))}</td>"
                    f"<td class=msg>{escape(', '.join(f'{k}={_fmt(v)}' for k, v in sorted(m['context'].items()) if k != 'kind'))}</td></tr>"
                    for m in rows)
    out.append(f"<table><tr><th>figure</th><th>value</th><th>detail</th></tr>{table}</table>")
    return "".join(out)


def _band_bars(items: list[tuple[str, float]], lo: float, hi: float, *, vmax: float, width: int = 640) -> str:
    label_w, bar_h, gap = 260, 14, 5
    scale = (width - label_w - 60) / vmax
    h = len(items) * (bar_h + gap) + 16
    parts = [f'<svg role="img" aria-label="type-I error rates" width="{width}" height="{h}" xmlns="http://www.w3.org/2000/svg">',
             f'<rect x="{label_w + lo * scale:.1f}" y="0" width="{(hi - lo) * scale:.1f}" height="{h}" fill="#d9f2df"/>']
    for i, (label, v) in enumerate(items):
        y = 6 + i * (bar_h + gap)
        colour = "#4c78a8" if lo <= v <= hi else "#c0392b"
        parts.append(f'<text x="0" y="{y + 11}">{escape(label[:44])}</text>')
        parts.append(f'<rect x="{label_w}" y="{y}" width="{min(v, vmax) * scale:.1f}" height="{bar_h}" fill="{colour}"/>')
        parts.append(f'<text x="{label_w + min(v, vmax) * scale + 4:.1f}" y="{y + 11}">{v:.4f}</text>')
    parts.append("</svg>")
    return "".join(parts)



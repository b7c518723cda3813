"""Self-contained HTML reports (inline CSS and SVG, no network assets); all text is escaped."""
from __future__ import annotations

import datetime as _dt
from html import escape
from typing import Any, Iterable

from harness.report.controls import controls_html
from harness.report.terminal import counts_text, looks_text, needed_text
from harness.report.timing import timing_html

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1d2430;background:#fafbfc}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde2ea;padding-bottom:4px}
table{border-collapse:collapse;width:100%;background:#fff;font-size:13px}
th,td{border:1px solid #e3e7ee;padding:4px 7px;text-align:left;vertical-align:top}th{background:#f0f3f7}
td.num{text-align:right;font-variant-numeric:tabular-nums}.muted{color:#6b7585}
.v{font-weight:600;border-radius:3px;padding:1px 6px;white-space:nowrap}
.v-pass{background:#d9f2df;color:#145a26}.v-fail{background:#fadadd;color:#8a1421}.v-error{background:#fde2c8;color:#7a3b00}
.v-xfail{background:#eee6fa;color:#4b2a86}.v-skipped,.v-not-run{background:#eceff3;color:#4e5866}
.v-supported{background:#d9f2df;color:#145a26}.v-refuted{background:#fadadd;color:#8a1421}
.v-inconclusive{background:#fff1c2;color:#6b5200}.v-budget{background:#dde9f7;color:#1f4a7a}tr.sub td:first-child{padding-left:22px}
dl.prov{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;font-size:12px}dl.prov dt{font-weight:600}
dl.prov dd{margin:0;overflow-wrap:anywhere}
.counts span{margin-right:12px}.msg{max-width:420px;overflow-wrap:anywhere;font-size:12px}
.unreliable{color:#a40000;font-weight:600}
svg text{font:11px system-ui,sans-serif;fill:#1d2430}
"""


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list) and len(v) == 2 and all(isinstance(x, (int, float)) for x in v):
        return f"[{v[0]:.3g}, {v[1]:.3g}]"
    return str(v)


def _note(message: str | None) -> str:
    """A test's message, unless it is a failed check's, which the value and condition columns already say."""
    return "" if not message or "SpecCheckFailed" in message else message


def _e(v: Any) -> str:
    return escape(_fmt(v), quote=True)


def _paren(v: Any) -> str:
    return f' <span class="muted">({_e(v)})</span>' if v is not None else ""


def _verdict(v: str) -> str:
    return f'<span class="v v-{escape(v.replace(" ", "-"))}">{escape(v)}</span>'


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
    """Per-dataset, per-metric bars across techniques/retrievers (measures carrying `technique` context)."""
    groups: dict[tuple[str, str], list[tuple[str, float]]] = {}
    for m in measures:
        ctx = m.get("context", {})
        tech = ctx.get("technique")
        if tech is None or not isinstance(m.get("value"), (int, float)):
            continue
        groups.setdefault((str(ctx.get("dataset", "")), m["name"]), []).append((str(tech), float(m["value"])))
    out = []
    for (dataset, metric), items in sorted(groups.items()):
        out.append(f"<h3>{escape(dataset)} — {escape(metric)}</h3>")
        out.append(_bars(sorted(items), title=f"{dataset} {metric}"))
    return "".join(out)


def _latency_charts(measures: Iterable[dict[str, Any]]) -> str:
    items = []
    for m in measures:
        if m.get("context", {}).get("kind") == "latency_ratio" and isinstance(m.get("value"), (int, float)):
            items.append((m["name"], float(m["value"])))
    return _bars(sorted(items), title="latency ratios", ref=1.0) if items else ""


_VERDICT_COLOUR = {"supported": "#2e8b57", "refuted": "#c0392b", "inconclusive": "#c99700", "error": "#7a3b00"}


def _rates(r: dict[str, Any]) -> str:
    f, e = r.get("fallback_rate"), r.get("error_rate")
    if not isinstance(f, (int, float)) and not isinstance(e, (int, float)):
        return ""
    return " / ".join("—" if not isinstance(x, (int, float)) else f"{x:.0%}" for x in (f, e))


def _spec_cells(r: dict[str, Any], first: str, tier: str, cond: str) -> str:
    note = r.get("reason") or _note(r.get("message"))
    if r.get("untestable"):
        note = "cannot be tested on this dataset: " + note
    return (f"<td>{first}</td><td>{_e(tier)}</td><td>{_verdict(r['verdict'])}</td>"
            f"<td class=num>{_e(r.get('value')) or 'n/a'}</td><td>{escape(cond)}</td>"
            f"<td class=num>{_e(r.get('ci'))}</td><td class=num>{_e(r.get('iqr'))}</td>"
            f"<td class=num>{_e(r.get('p_value'))}{_paren(r.get('p_holm'))}</td>"
            f"<td class=num>{_e(r.get('n'))}{_paren(r.get('mde'))}<div class=muted>{escape(looks_text(r))}</div></td>"
            f"<td class=num>{escape(needed_text(r))}</td>"
            f"<td class=num>{escape(counts_text(r))}</td><td class=num>{escape(_rates(r))}</td>"
            f"<td>{_e(r.get('technique'))}</td><td>{_e(r.get('model'))}</td><td>{_e(r.get('dataset') or ', '.join(r.get('catalogue_dataset') or []))}</td>"
            f"<td class=msg>{escape(note)}</td>")


def _spec_table(specs: list[dict[str, Any]]) -> str:
    head = ("<tr><th>spec</th><th>tier</th><th>verdict</th><th>value</th><th>condition</th><th>CI (a sequential claim: its look's)</th>"
            "<th>IQR</th><th>p (Holm)</th><th>n (MDE)</th><th>queries needed</th><th>queries +/=/−</th>"
            "<th>fallback / error rate</th><th>technique</th><th>model</th><th>dataset</th><th>note</th></tr>")
    rows = []
    for r in specs:
        cond = f"{r['metric']} {r['comparator']} {_fmt(r['threshold'])}"
        if r.get("decision", {}).get("rule") not in (None, "estimate"):
            cond += f" — decided by {r['decision'].get('text', '')}"
        first = f'<b>{_e(r["id"])}</b><div class="muted">{_e(r["title"])}</div>'
        entries = r.get("datasets") or []
        if len(entries) > 1:
            rows.append(f'<tr id="{_e(r["id"])}"><td>{first}</td><td>{_e(r["tier"])}</td><td>{_verdict(r["verdict"])}</td>'
                        f'<td colspan=12 class=msg>{escape(cond)}<br>{_e(r.get("overall"))}</td></tr>')
            for e in entries:
                rows.append(f'<tr class=sub>{_spec_cells(e, "└ " + _e(e["dataset"]), "", "")}</tr>')
        else:
            rows.append(f'<tr id="{_e(r["id"])}">{_spec_cells(r, first, r["tier"], cond)}</tr>')
    return f"<table>{head}{''.join(rows)}</table>"


def forest_plot(specs: list[dict[str, Any]], width: int = 760) -> str:
    """One row per comparative (claim, dataset): the estimate, its CI and the threshold on the row's own
    scale (claims differ in units), coloured by verdict."""
    items = []
    for r in specs:
        if not r.get("comparative"):
            continue
        for e in r.get("datasets") or []:
            ci = e.get("ci")
            if not (isinstance(e.get("value"), (int, float)) and isinstance(ci, list) and len(ci) == 2
                    and all(isinstance(x, (int, float)) for x in ci)):
                continue
            items.append((f"{r['id']} {e.get('dataset') or ''}".strip(), float(e["value"]), ci,
                          r["threshold"], e["verdict"]))
    if not items:
        return ""
    label_w, row_h, plot_w = 260, 24, width - 260 - 150
    h = len(items) * row_h + 30
    parts = [f'<svg role="img" aria-label="forest plot of comparative claims" width="{width}" height="{h}" '
             'xmlns="http://www.w3.org/2000/svg">',
             f'<text x="{label_w}" y="12" class="muted">each row on its own scale; | threshold, ● estimate, — 95% CI</text>']
    for i, (label, est, (lo, hi), thr, verdict) in enumerate(items):
        y = 30 + i * row_h
        pts = [v for v in (est, lo, hi, float(thr), 0.0) if abs(v) != float("inf")]
        vmin, vmax = min(pts), max(pts)
        pad = (vmax - vmin) * 0.1 or 0.1
        vmin, vmax = vmin - pad, vmax + pad

        def x(v: float, vmin: float = vmin, vmax: float = vmax) -> float:
            v = min(max(v, vmin), vmax)
            return label_w + (v - vmin) / (vmax - vmin) * plot_w

        colour = _VERDICT_COLOUR.get(verdict, "#6b7585")
        parts.append(f'<text x="0" y="{y + 4}">{escape(label[:44])}</text>')
        parts.append(f'<line x1="{label_w}" x2="{label_w + plot_w}" y1="{y}" y2="{y}" stroke="#eceff3"/>')
        parts.append(f'<line x1="{x(float(thr)):.1f}" x2="{x(float(thr)):.1f}" y1="{y - 9}" y2="{y + 9}" '
                     'stroke="#1d2430" stroke-dasharray="3 2"/>')
        parts.append(f'<line x1="{x(lo):.1f}" x2="{x(hi):.1f}" y1="{y}" y2="{y}" stroke="{colour}" stroke-width="3"/>')
        parts.append(f'<circle cx="{x(est):.1f}" cy="{y}" r="4.5" fill="{colour}"/>')
        parts.append(f'<text x="{label_w + plot_w + 8}" y="{y + 4}" fill="{colour}">{escape(verdict)} '
                     f'{est:+.3g} [{lo:.3g}, {hi:.3g}]</text>')
    parts.append("</svg>")
    return "".join(parts)


def _provenance(prov: dict[str, Any]) -> str:
    if not prov:
        return ""
    def kv(d: dict[str, Any]) -> str:
        return "; ".join(f"{k}: " + (", ".join(f"{a}={_fmt(b)}" for a, b in v.items()) if isinstance(v, dict) else _fmt(v))
                         for k, v in sorted(d.items())) or "—"
    rows = [("git commit", f"{prov.get('git_commit')}" + (" (uncommitted changes)" if prov.get("git_dirty") else "")),
            ("models", kv(prov.get("models") or {})), ("techniques", kv(prov.get("techniques") or {})),
            ("datasets", kv(prov.get("datasets") or {})),
            ("seeds", kv(prov.get("seeds") or {})), ("packages", kv(prov.get("packages") or {}))]
    return '<dl class="prov">' + "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows) + "</dl>"


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


def _measure_table(measures: list[dict[str, Any]]) -> str:
    if not measures:
        return "<p class=muted>No figures recorded.</p>"
    rows = []
    for m in measures:
        ctx = ", ".join(f"{k}={_fmt(v)}" for k, v in sorted(m.get("context", {}).items()))
        rows.append(f"<tr><td>{_e(m['name'])}</td><td class=num>{_e(m.get('value'))}</td>"
                    f"<td class=msg>{escape(ctx)}</td><td class=muted>{_e(m.get('nodeid'))}</td></tr>")
    return "<table><tr><th>figure</th><th>value</th><th>context</th><th>test</th></tr>" + "".join(rows) + "</table>"


def _bench_table(benchmarks: list[dict[str, Any]]) -> str:
    if not benchmarks:
        return ""
    rows = "".join(
        f"<tr><td>{_e(b.get('fullname'))}</td><td class=num>{_e(b.get('median_s'))}</td>"
        f"<td class=num>{_e(b.get('stddev_s'))}</td><td class=num>{_e(b.get('rounds'))}</td></tr>"
        for b in benchmarks
    )
    return ("<h2>pytest-benchmark timings</h2><table><tr><th>benchmark</th><th>median s</th>"
            f"<th>stddev s</th><th>rounds</th></tr>{rows}</table>")


def _spend_table(spend: dict[str, Any], estimate: dict[str, Any] | None) -> str:
    """LLM spend per technique and role (pipeline apart from judge), with the estimate beside it where one was
    made for the same model; for an --estimate-cost run, the estimate alone."""
    if estimate:
        rows = "".join(f"<tr><td>{_e(t)}</td><td class=num>{_e(v['calls'])}</td><td class=num>{_e(v['prompt_tokens'])}"
                       f"</td><td class=num>{_e(v['completion_tokens'])}</td><td class=num>{_e(v['cost_usd'])}</td></tr>"
                       for t, v in sorted(estimate.get("by_technique", {}).items()))
        return (f"<h2>Cost estimate ({_e(estimate.get('model'))}; no call made)</h2>"
                f"<p class=muted>Tokens by {_e(estimate.get('tokenizer'))}; answers from a stand-in, so completion "
                "lengths and answer-dependent branches are assumptions.</p><table><tr><th>technique</th><th>calls</th>"
                f"<th>prompt tokens</th><th>completion tokens</th><th>USD</th></tr>{rows}</table>")
    by = spend.get("by_technique") or []
    if not by:
        return ""
    has_est = any("estimated_calls" in r for r in by)
    head = ("<tr><th>role</th><th>technique</th><th>model</th><th>calls</th><th>cached</th><th>failed</th>"
            "<th>prompt tokens</th>"
            "<th>completion tokens</th><th>USD</th>" + ("<th>est. calls</th><th>est. USD</th>" if has_est else "")
            + "</tr>")
    rows = "".join(
        f"<tr><td>{_e(r['role'])}</td><td>{_e(r['technique'])}</td><td>{_e(r['model'])}</td>"
        f"<td class=num>{_e(r['calls'])}</td><td class=num>{_e(r['cached_calls'])}</td>"
        f"<td class=num>{_e(r.get('failed_calls') or 0)}</td>"
        f"<td class=num>{_e(r['prompt_tokens'])}</td><td class=num>{_e(r['completion_tokens'])}</td>"
        f"<td class=num>{_e(r['cost_usd'])}{' + unpriced ' + str(r['unpriced_calls']) if r['unpriced_calls'] else ''}"
        "</td>" + (f"<td class=num>{_e(r.get('estimated_calls'))}</td><td class=num>{_e(r.get('estimated_cost_usd'))}"
                   "</td>" if has_est else "") + "</tr>" for r in by)
    roles = " · ".join(f"{escape(k)}: ${v['cost_usd']:.4f} over {v['calls']} calls"
                       + (f" ({v['failed_calls']} failed)" if v.get("failed_calls") else "")
                       for k, v in (spend.get("by_role") or {}).items())
    cap = (f" · cap ${spend['max_usd']}, {spend.get('refused_calls', 0)} call(s) refused"
           if spend.get("max_usd") is not None else "")
    return f"<h2>LLM spend</h2><p class=muted>{roles}{escape(cap)}</p><table>{head}{rows}</table>"


def capability_text(measures: Iterable[dict[str, Any]]) -> str:
    """'Model capability: local/x answers 31% of 200 MMLU questions [25%, 38%] (chance 25%)', one per model."""
    out = []
    for m in measures:
        if m.get("name") != "model_capability" or m.get("value") is None:
            continue
        c = m.get("context") or {}
        lo, hi = (c.get("ci") or [None, None])[:2]
        ci = f" [{lo:.0%}, {hi:.0%}]" if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) else ""
        out.append(f"Model capability: {c.get('model')} answers {m['value']:.0%} of {c.get('n')} "
                   f"{str(c.get('dataset', '')).upper()} questions{ci} (chance {c.get('chance', 0):.0%}"
                   f"{', ' + str(c.get('unparsed')) + ' replies without a letter' if c.get('unparsed') else ''})")
    return "; ".join(out)


def judge_lines(prov: dict[str, Any]) -> list[str]:
    """One line per judge and labelled set: κ [CI], accuracy, flip rate, failed rulings, and the flag."""
    out = []
    for key, j in sorted((prov.get("judges") or {}).items()):
        lo, hi = (j.get("kappa_ci") or [float("nan")] * 2)[:2]
        flip = j.get("flip_rate")
        again = j.get("recheck") or {}
        how = (f" (re-ruled in {again['prompt']} wording at temperature {again['temperature']})"
               if again.get("prompt") else "")
        flip_txt = f", flip rate {flip:.2f} over {j.get('flip_n')}{how}" if isinstance(flip, (int, float)) else ""
        fails = f", {j['failures']} failed rulings (counted as disagreements)" if j.get("failures") else ""
        flag = (" — JUDGE UNRELIABLE (" + "; ".join(j.get("reasons") or []) + "): claims resting on it cannot be "
                "supported") if j.get("unreliable") else (" — reliable by κ ≥ 0.4 and flip rate ≤ 0.2" if flip_txt
                                                           else " — reliable by κ ≥ 0.4 (its rulings cannot flip)")
        out.append(f"Judge {key}: κ {j.get('kappa', float('nan')):.3f} [{lo:.3f}, {hi:.3f}], accuracy "
                   f"{j.get('accuracy', float('nan')):.0%} on {j.get('n')} items{flip_txt}{fails}{flag}")
    return out


def dataset_cards(prov: dict[str, Any]) -> str:
    """One row per dataset the run read: counts, content hash, source and licence (from its README)."""
    rows = []
    for name, d in sorted((prov.get("datasets") or {}).items()):
        card = d.get("card") or {}
        counts = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in (card.get("counts") or {}).items() if v)
        rows.append(f"<tr><td><b>{_e(name)}</b><div class=muted>{_e(d.get('path'))}</div></td><td>{escape(counts)}</td>"
                    f"<td><code>{_e(d.get('sha256'))}</code></td><td>{_e(card.get('licence'))}</td>"
                    f"<td>{_e(card.get('source'))}</td></tr>")
    if not rows:
        return ""
    return ("<h2>Datasets</h2><table><tr><th>dataset</th><th>counts</th><th>content hash</th><th>licence</th>"
            f"<th>source</th></tr>{''.join(rows)}</table>")


def _capability_line(measures: Iterable[dict[str, Any]]) -> str:
    text = capability_text(measures)
    return f'<p class="capability"><b>{escape(text)}</b></p>' if text else ""


def render_html(results: dict[str, Any]) -> str:
    run = results.get("run", {})
    specs = [r for r in results.get("specs", []) if r["verdict"] != "not run"]
    counts: dict[str, int] = {}
    for r in specs:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    created = run.get("created_unix")
    when = _dt.datetime.fromtimestamp(created, _dt.timezone.utc).isoformat(timespec="seconds") if created else ""
    measures = results.get("measures", [])
    lat = _latency_charts(measures)
    charts = _retrieval_charts(measures)
    body = [
        "<h1>rag-harness report</h1>",
        f'<div class="muted">commit {_e(run.get("git_commit"))} · {escape(when)} · -m {_e(run.get("markexpr")) or "(all)"}'
        f' · schema v{_e(results.get("schema_version"))}</div>',
        '<p class="counts">' + "".join(f"<span>{_verdict(k)} {v}</span>" for k, v in sorted(counts.items())) + "</p>",
        _capability_line(measures),
        "".join(f'<p class="capability{" unreliable" if "UNRELIABLE" in line else ""}">{escape(line)}</p>'
                for line in judge_lines(results.get("provenance") or {})),
        "<h2>Claims</h2>",
        '<p class=muted>Comparative claims read <b>supported</b> (the whole interval satisfies the claim, or the '
        "declared test is significant after Holm), <b>refuted</b> (the whole interval violates it) or "
        "<b>inconclusive</b> (the data cannot tell; queries needed says how many would). Other claims read pass/fail "
        "on their value. A claim that did not run on every dataset its catalogue row lists reads inconclusive, "
        "with a <b>not run</b> line for each set left out. "
        "<b>budget</b>: the run's cost cap cut the claim short, so it has no verdict. "
        "<b>error</b>: the test broke before deciding, or the arms' model calls failed on more than 10% of "
        "queries (what was measured is the failure).</p>",
        _spec_table(specs),
    ]
    body.append(controls_html(specs))
    forest = forest_plot(specs)
    if forest:
        body += ["<h2>Comparative claims: forest plot</h2>", forest]
    calib = _calibration(measures)
    if calib:
        body += ["<h2>Statistics calibration on real topics</h2>", calib]
    if charts:
        body += ["<h2>Retrieval quality by technique</h2>", charts]
    if lat:
        body += ["<h2>Latency ratios (dashed line: 1.0×)</h2>", lat]
    body += [dataset_cards(results.get("provenance") or {})]
    body += [_spend_table(results.get("spend") or {}, results.get("estimate"))]
    body += [timing_html(results.get("timing"))]
    body += ["<h2>All figures</h2>", _measure_table(measures), _bench_table(results.get("benchmarks", []))]
    prov = _provenance(results.get("provenance") or {})
    if prov:
        body += ["<h2>Provenance</h2>", prov]
    return _page("rag-harness report", "".join(body))


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f'<meta name="viewport" content="width=device-width,initial-scale=1"><style>{_CSS}</style></head>'
            f"<body>{body}</body></html>")


def verdict_transitions(baseline: dict[str, Any], candidate: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(spec id, baseline verdict, candidate verdict) for every spec whose verdict changed between two runs."""
    base = {r["id"]: r.get("verdict", "not run") for r in baseline.get("specs", [])}
    cand = {r["id"]: r.get("verdict", "not run") for r in candidate.get("specs", [])}
    return [(i, base.get(i, "not run"), cand.get(i, "not run")) for i in sorted(set(base) | set(cand))
            if base.get(i, "not run") != cand.get(i, "not run")]


def render_comparison(baseline: dict[str, Any], candidate: dict[str, Any]) -> str:
    """Two runs side by side: the verdict transitions first, then per spec the verdict and value of each."""
    base = {r["id"]: r for r in baseline.get("specs", [])}
    rows = []
    for r in candidate.get("specs", []):
        b = base.get(r["id"], {})
        delta = ""
        if isinstance(r.get("value"), (int, float)) and isinstance(b.get("value"), (int, float)):
            delta = f"{r['value'] - b['value']:+.4g}"
        changed = " style=\"background:#fff7d6\"" if b.get("verdict") != r["verdict"] else ""
        rows.append(f"<tr{changed}><td><b>{_e(r['id'])}</b></td><td>{_verdict(b.get('verdict', 'not run'))}</td>"
                    f"<td class=num>{_e(b.get('value'))}</td><td class=num>{_e(b.get('ci'))}</td>"
                    f"<td>{_verdict(r['verdict'])}</td><td class=num>{_e(r.get('value'))}</td>"
                    f"<td class=num>{_e(r.get('ci'))}</td><td class=num>{escape(delta)}</td></tr>")
    table = ("<table><tr><th>spec</th><th>baseline</th><th>value</th><th>CI</th><th>candidate</th><th>value</th>"
             f"<th>CI</th><th>change</th></tr>{''.join(rows)}</table>")
    moves: dict[tuple[str, str], list[str]] = {}
    for sid, old, new in verdict_transitions(baseline, candidate):
        moves.setdefault((old, new), []).append(sid)
    trans = "".join(f"<tr><td>{_verdict(o)} → {_verdict(n)}</td><td class=num>{len(ids)}</td>"
                    f"<td class=msg>{escape(', '.join(ids))}</td></tr>" for (o, n), ids in sorted(moves.items()))
    trans_html = (f"<h2>Verdict transitions</h2><table><tr><th>from → to</th><th>claims</th><th>ids</th></tr>{trans}"
                  "</table>" if trans else "<h2>Verdict transitions</h2><p class=muted>No verdict changed.</p>")
    head = (f"<h1>rag-harness comparison</h1><div class=muted>baseline {_e(baseline.get('run', {}).get('git_commit'))}"
            f" → candidate {_e(candidate.get('run', {}).get('git_commit'))}</div>")
    return _page("rag-harness comparison", head + trans_html + "<h2>All claims</h2>" + table)

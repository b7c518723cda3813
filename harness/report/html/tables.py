"""The report's tables: every claim with every figure, figures, benchmarks, spend, datasets and provenance."""
from __future__ import annotations

from html import escape
from typing import Any

from harness.report.html.formatting import _e, _fmt, _note, _paren, _verdict, hash_label, plain
from harness.report.terminal import arms_text, counts_text, looks_text, needed_text


def _rates(r: dict[str, Any]) -> str:
    f, e = r.get("fallback_rate"), r.get("error_rate")
    if not isinstance(f, (int, float)) and not isinstance(e, (int, float)):
        return ""
    return " / ".join("—" if not isinstance(x, (int, float)) else f"{x:.0%}" for x in (f, e))


def _spec_cells(r: dict[str, Any], first: str, tier: str, cond: str) -> str:
    note = r.get("reason") or _note(r.get("message"))
    if r.get("untestable"):
        note = "cannot be tested on this dataset: " + note
    arms = f"<div class=muted>{escape(arms_text(r))}</div>" if r.get("arms") else ""
    return (f"<td>{first}</td><td>{_e(tier)}</td><td>{_verdict(r['verdict'])}</td>"
            f"<td class=num>{_e(r.get('value')) or 'n/a'}{arms}</td>"
            f"<td>{escape(cond)}</td>"
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
    return f"<div class=wide><table>{head}{''.join(rows)}</table></div>"


def _provenance(prov: dict[str, Any]) -> str:
    if not prov:
        return ""

    def kv(d: dict[str, Any]) -> str:
        return "; ".join(f"{k}: " + (", ".join(f"{a}={plain(b)}" for a, b in v.items()) if isinstance(v, dict)
                                     else plain(v)) for k, v in sorted(d.items())) or "—"

    def datasets(d: dict[str, Any]) -> str:
        out = []
        for name, v in sorted(d.items()):
            parts = [f"{hash_label(v.get('sha256'))} {v.get('sha256')}"] if v.get("sha256") else []
            parts += [f"{a}={plain(b)}" for a, b in v.items() if a not in ("sha256", "card")]
            out.append(f"{name}: " + ", ".join(parts))
        return "; ".join(out) or "—"

    rows = [("git commit", f"{prov.get('git_commit')}" + (" (uncommitted changes)" if prov.get("git_dirty") else "")),
            ("models", kv(prov.get("models") or {})), ("techniques", kv(prov.get("techniques") or {})),
            ("datasets", datasets(prov.get("datasets") or {})),
            ("seeds", kv(prov.get("seeds") or {})), ("packages", kv(prov.get("packages") or {}))]
    return '<dl class="prov">' + "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows) + "</dl>"


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


def dataset_cards(prov: dict[str, Any]) -> str:
    """One row per dataset the run read: counts, content hash, source and licence (from its README)."""
    rows = []
    for name, d in sorted((prov.get("datasets") or {}).items()):
        card = d.get("card") or {}
        counts = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in (card.get("counts") or {}).items() if v)
        rows.append(f"<tr><td><b>{_e(name)}</b><div class=muted>{_e(d.get('path'))}</div></td><td>{escape(counts)}</td>"
                    f"<td><code>{_e(d.get('sha256'))}</code><div class=muted>{escape(hash_label(d.get('sha256')))}</div></td><td>{_e(card.get('licence'))}</td>"
                    f"<td>{_e(card.get('source'))}</td></tr>")
    if not rows:
        return ""
    return ("<h2>Datasets</h2><table><tr><th>dataset</th><th>counts</th><th>content hash</th><th>licence</th>"
            f"<th>source</th></tr>{''.join(rows)}</table>")



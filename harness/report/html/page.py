"""Self-contained HTML reports (inline CSS, SVG and script from the package's assets; no network); all text is
escaped. The first screen answers (harness.report.html.claims); each claim's why follows
(harness.report.html.query_table); the figures, spend, datasets and provenance come last (harness.report.html.tables)."""
from __future__ import annotations

import datetime as _dt
from functools import lru_cache
from html import escape
from importlib import resources
from typing import Any, Iterable

from harness.report.controls import controls_html
from harness.report.html.charts import _calibration, _latency_charts, _retrieval_charts
from harness.report.html.claims import claims_first_screen
from harness.report.html.formatting import _e, _verdict
from harness.report.html.query_table import claim_details
from harness.report.html.tables import (
    _bench_table, _measure_table, _provenance, _spec_table, _spend_table, dataset_cards,
)
from harness.report.timing import timing_html

__all__ = ["render_html", "render_comparison", "verdict_transitions", "capability_text", "judge_lines",
           "dataset_cards"]


@lru_cache(maxsize=None)
def asset(name: str) -> str:
    """A file of the report's assets (CSS, JS), shipped as package data."""
    return resources.files("harness.report").joinpath("assets").joinpath(name).read_text(encoding="utf-8")


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
        how = f" in {again['prompt']} wording at temperature {again['temperature']}" if again.get("prompt") else ""
        causes = ", ".join(f"{again[k]} {k}" for k in ("changed", "failed", "unperturbed") if again.get(k))
        # the figure the flag reads (`recheck_flips`), and what it counts: a claim on it reports the same
        flip_txt = (f", flip rate {flip:.2f} over the {j.get('flip_n')} items it ruled on (not reproduced when "
                    f"re-ruled{how}: {causes or 'none'})" if isinstance(flip, (int, float)) else "")
        fails = f", {j['failures']} failed rulings (counted as disagreements)" if j.get("failures") else ""
        flag = (" — JUDGE UNRELIABLE (" + "; ".join(j.get("reasons") or []) + "): claims resting on it cannot be "
                "supported") if j.get("unreliable") else (" — reliable by κ ≥ 0.4 and flip rate ≤ 0.2" if flip_txt
                                                           else " — reliable by κ ≥ 0.4 (its rulings cannot flip)")
        out.append(f"Judge {key}: κ {j.get('kappa', float('nan')):.3f} [{lo:.3f}, {hi:.3f}], accuracy "
                   f"{j.get('accuracy', float('nan')):.0%} on {j.get('n')} items{flip_txt}{fails}{flag}")
    return out


def _capability_line(measures: Iterable[dict[str, Any]]) -> str:
    text = capability_text(measures)
    return f'<p class="capability"><b>{escape(text)}</b></p>' if text else ""


_LEGEND = ('<p class=muted>Comparative claims read <b>supported</b> (the whole interval satisfies the claim, or the '
           "declared test is significant after Holm), <b>refuted</b> (the whole interval violates it) or "
           "<b>inconclusive</b> (the data cannot tell; queries needed says how many would). Other claims read "
           "pass/fail on their value. A claim that did not decide on every dataset it was run on reads "
           "inconclusive, with a <b>not run</b> line for each set that recorded nothing. <b>budget</b>: the run's cost cap cut "
           "the claim short, so it has no verdict. <b>error</b>: the test broke before deciding, or the arms' model "
           "calls failed on more than 10% of queries (what was measured is the failure). Click a claim for its "
           "reasoning, its per-query table and what the model wrote.</p>")


def render_html(results: dict[str, Any]) -> str:
    """The run's report: the answer first (claims by family on common axes), then why, then every figure."""
    run = results.get("run", {})
    every = results.get("specs", [])
    specs = [r for r in every if r["verdict"] != "not run"]
    counts: dict[str, int] = {}
    for r in specs:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    created = run.get("created_unix")
    when = _dt.datetime.fromtimestamp(created, _dt.timezone.utc).isoformat(timespec="seconds") if created else ""
    measures = results.get("measures", [])
    body = [
        "<h1>rag-harness report</h1>",
        f'<div class="muted">commit {_e(run.get("git_commit"))} · {escape(when)} · -m {_e(run.get("markexpr")) or "(all)"}'
        f' · schema v{_e(results.get("schema_version"))}</div>',
        '<p class="counts">' + "".join(f"<span>{_verdict(k)} {v}</span>" for k, v in sorted(counts.items())) + "</p>",
        _LEGEND,
        claims_first_screen(every),
        controls_html(specs),
        _capability_line(measures),
        "".join(f'<p class="capability{" unreliable" if "UNRELIABLE" in line else ""}">{escape(line)}</p>'
                for line in judge_lines(results.get("provenance") or {})),
        claim_details(specs),
        "<h2>Every claim, every figure</h2>", _spec_table(specs),
    ]
    calib = _calibration(measures)
    if calib:
        body += ["<h2>Statistics calibration on real topics</h2>", calib]
    charts, lat = _retrieval_charts(measures), _latency_charts(measures)
    if charts:
        body += ["<h2>Retrieval quality by technique</h2>", charts]
    if lat:
        body += ["<h2>Latency ratios (dashed line: 1.0×)</h2>", lat]
    if results.get("budget"):
        body += [budget_html(results["budget"])]
    if results.get("replayed"):
        from harness.report.terminal import replay_line

        body += [f"<p class=\"muted\">{escape(replay_line(results['replayed']))}</p>"]
    if "selfchecks" in results:
        from harness.report.selfchecks import selfcheck_html

        body += [selfcheck_html(results["selfchecks"])]
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
            f'<meta name="viewport" content="width=device-width,initial-scale=1"><style>{asset("report.css")}</style>'
            f"</head><body>{body}<script>{asset('report.js')}</script></body></html>")


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


def budget_html(budget: dict[str, Any]) -> str:
    """The run's budget (`--budget`): the line the terminal prints, then each claim refused and why."""
    from harness.report.terminal import budget_line

    rows = "".join(f"<tr><td>{escape(str(k))}</td><td>{escape(str(v))}</td></tr>"
                   for k, v in sorted((budget.get("refused") or {}).items()))
    table = f"<table><tr><th>test</th><th>why</th></tr>{rows}</table>" if rows else ""
    return f"<h2>The run's budget</h2><p class=\"muted\">{escape(budget_line(budget))}</p>{table}"

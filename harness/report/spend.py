"""The run's LLM spend for the report: per technique, pipeline apart from judge, the cap, and the estimate
(from an earlier `--estimate-cost` run for the same model) beside the actual."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from harness.llm.spend import COUNTS as FIELDS

ESTIMATE_FILE = "estimate.json"


def _sum(rows: Iterable[dict[str, Any]], key: tuple[str, ...]) -> dict[tuple, dict[str, Any]]:
    out: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        k = tuple(r[f] for f in key)
        acc = out.setdefault(k, {**{f: r[f] for f in key}, **{f: 0 for f in FIELDS}})
        for f in FIELDS:
            acc[f] += r.get(f) or 0
    return out


def spend_summary(rows: list[dict[str, Any]], *, max_usd: float | None = None, refused: int = 0,
                  estimate: dict[str, Any] | None = None) -> dict[str, Any]:
    """Rows (technique, role, model, calls, ... cost_usd) summed per technique and per role; with an estimate
    for the same model, each technique's estimated calls and dollars beside the actual."""
    by_technique = sorted(_sum(rows, ("technique", "role", "model")).values(),
                          key=lambda r: (r["role"], r["technique"], r["model"]))
    by_role = {k[0]: v for k, v in _sum(rows, ("role",)).items()}
    total = {f: sum(r.get(f) or 0 for r in rows) for f in FIELDS}
    out: dict[str, Any] = {"by_technique": by_technique, "by_role": by_role, "total": total, "max_usd": max_usd,
                           "refused_calls": refused}
    if estimate:
        est = estimate.get("by_technique", {})
        models = {r["model"] for r in rows}
        if estimate.get("model") in models:
            for r in by_technique:
                e = est.get(r["technique"]) if r["model"] == estimate["model"] else None
                if e is not None:
                    r["estimated_calls"], r["estimated_cost_usd"] = e["calls"], e["cost_usd"]
            out["estimate"] = {"model": estimate["model"], "total": estimate.get("total"),
                               "tokenizer": estimate.get("tokenizer")}
    return out


def read_estimate(report_dir: Path) -> dict[str, Any] | None:
    path = Path(report_dir) / ESTIMATE_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def spend_lines(spend: dict[str, Any]) -> list[str]:
    """The terminal's spend table (empty when no call was made)."""
    total = spend.get("total") or {}
    if not (total.get("calls") or total.get("cached_calls") or total.get("failed_calls")):
        return []
    has_est = any("estimated_calls" in r for r in spend["by_technique"])
    head = f"{'role':<9} {'technique':<26} {'calls':>6} {'cached':>6} {'failed':>6} {'tokens':>10} {'USD':>9}"
    lines = [head + (f" {'est. calls':>10} {'est. USD':>9}" if has_est else "")]
    for r in spend["by_technique"]:
        usd = f"{r['cost_usd']:.4f}" if not r["unpriced_calls"] else f"{r['cost_usd']:.4f}+?"
        line = (f"{r['role']:<9} {r['technique'][:26]:<26} {r['calls']:>6} {r['cached_calls']:>6} "
                f"{r.get('failed_calls') or 0:>6} "
                f"{r['prompt_tokens'] + r['completion_tokens']:>10,} {usd:>9}")
        if has_est:
            ec, eu = r.get("estimated_calls"), r.get("estimated_cost_usd")
            line += f" {'' if ec is None else ec:>10} {'' if eu is None else f'{eu:.4f}':>9}"
        lines.append(line)
    roles = ", ".join(f"{role} ${v['cost_usd']:.4f} ({v['calls']} calls"
                      + (f", {v['failed_calls']} failed" if v.get("failed_calls") else "") + ")"
                      for role, v in spend["by_role"].items())
    cap = f"; cap ${spend['max_usd']}, {spend['refused_calls']} call(s) refused" if spend.get("max_usd") is not None else ""
    lines.append(f"spent ${total['cost_usd']:.4f}: {roles}{cap}")
    return lines

"""The recorded claims of a budgeted main job and of the whole protocol run after it, for
`tests/test_budgeted_vs_whole.py` (issue #37: "the two agree on every claim both decided, a test over recorded
per-query scores").

    python scripts/budgeted_vs_whole.py BUDGETED/results.json WHOLE/results.json OUT.json --note "..."

Keeps, of each run: every claim's verdict per dataset (`specs[].datasets[]`), and every check that recorded its
per-query outcomes (`checks[].context.outcomes`, `harness.recorded`) with what a replay reads (its looks, the
dataset, the fallback and error rates). Nothing else of the reports is kept.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

KEPT = ("outcomes", "sequential", "dataset", "fallback_rate", "error_rate")


def extract(path: Path) -> dict:
    data = json.loads(path.read_text())
    verdicts = {f"{s['id']}|{d.get('dataset') or ''}": d["verdict"] for s in data["specs"]
                for d in s.get("datasets") or [] if d.get("verdict") not in (None, "not run", "skipped")}
    checks = [{"spec_id": c["spec_id"], "verdict": c["verdict"],
               "context": {k: c["context"][k] for k in KEPT if k in c["context"]}}
              for c in data["checks"] if "outcomes" in (c.get("context") or {})]
    run = data.get("run") or {}
    return {"commit": run.get("git_commit"), "models": (data.get("provenance") or {}).get("models"),
            "budget": {k: (data.get("budget") or {}).get(k) for k in ("limit_s", "spent_s")} if data.get("budget")
            else None, "verdicts": verdicts, "checks": checks}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("budgeted", type=Path)
    ap.add_argument("whole", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--note", default="", help="where the two runs come from (model, machine, clone, date)")
    a = ap.parse_args()
    out = {"note": a.note, "budgeted": extract(a.budgeted), "whole": extract(a.whole)}
    a.out.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"{a.out}: {len(out['budgeted']['checks'])} and {len(out['whole']['checks'])} checks with outcomes")


if __name__ == "__main__":
    main()

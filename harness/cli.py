"""`rag-harness` command line: compare two runs' results.json, or re-render a report."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness.report.html import render_comparison, render_html


def _load(path: str) -> dict:
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise SystemExit(f"rag-harness: {p}: cannot read results JSON: {exc}") from None
    if data.get("schema_version") != 1:
        raise SystemExit(f"rag-harness: {p}: field 'schema_version' is {data.get('schema_version')!r}, expected 1")
    return data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="rag-harness", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    cmp_ = sub.add_parser("compare", help="baseline vs candidate results.json -> comparison HTML")
    cmp_.add_argument("baseline")
    cmp_.add_argument("candidate")
    cmp_.add_argument("-o", "--output", default="reports/compare.html")
    ren = sub.add_parser("render", help="results.json -> index.html")
    ren.add_argument("results")
    ren.add_argument("-o", "--output", default="reports/index.html")
    args = ap.parse_args(argv)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.cmd == "compare":
        out.write_text(render_comparison(_load(args.baseline), _load(args.candidate)), encoding="utf-8")
    else:
        out.write_text(render_html(_load(args.results)), encoding="utf-8")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

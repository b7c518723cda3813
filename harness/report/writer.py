"""Writes `results.json` (versioned schema) and the self-contained `index.html`."""
from __future__ import annotations

import json
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

from harness.catalogue import Catalogue
from harness.report.atomic import atomic_write
from harness.report.collector import Collector, jsonable
from harness.report.html.page import render_html
from harness.report.per_query import read_per_query
from harness.report.summary import spec_rows
from harness.report.timing import timing_section

SCHEMA_VERSION = 1


def git_commit(root: Path) -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def build_results(collector: Collector, catalogue: Catalogue, *, root: Path,
                  benchmarks: list[dict[str, Any]] | None = None, markexpr: str = "",
                  spend: dict[str, Any] | None = None, estimate: dict[str, Any] | None = None) -> dict[str, Any]:
    """The results document. Everything outside `run`, `provenance`, `benchmarks` and `timing` is independent
    of timing and order."""
    key = lambda r: (r.get("nodeid", ""), json.dumps(r, sort_keys=True))  # noqa: E731
    specs = spec_rows(collector, catalogue)
    return jsonable({
        "schema_version": SCHEMA_VERSION,
        "run": {"created_unix": time.time(), "git_commit": git_commit(root), "python": platform.python_version(),
                "markexpr": markexpr},
        "provenance": build_provenance(collector, root),
        "specs": specs,
        "checks": sorted((_slim_check(c) for c in collector.checks()), key=key),
        "measures": sorted(collector.measures(), key=key),
        "tests": sorted(collector.outcomes.values(), key=lambda o: o["nodeid"]),
        "controls": sorted(collector.controls.values(), key=lambda c: c["nodeid"]),
        "benchmarks": sorted(benchmarks or [], key=lambda b: b.get("fullname", "")),
        "spend": spend or {},
        "timing": timing_section(collector.timing_events(), collector.checks()),
        **({"estimate": estimate} if estimate else {}),
    })


def build_provenance(collector: Collector, root: Path) -> dict[str, Any]:
    """Git commit, package versions, and the union of the models (with their traffic: live, replayed,
    cached or scripted), datasets (with content hashes) and seeds that the run's checks recorded."""
    from harness import provenance

    merged = provenance.merge([r.get("provenance") or {} for r in collector.records])
    dirty = None
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True,
                             text=True, timeout=10)
        dirty = bool(out.stdout.strip()) if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        pass
    return {"git_commit": git_commit(root), "git_dirty": dirty, "packages": provenance.package_versions(), **merged}


def add_holm(rows: list[dict[str, Any]], alpha: float = 0.05) -> None:
    """Holm-correct the p-values of a list of rows that carry one (`p_value`), writing `p_holm`."""
    from harness.stats import holm

    with_p = [r for r in rows if isinstance(r.get("p_value"), (int, float))]
    _, adjusted = holm([r["p_value"] for r in with_p], alpha)
    for r, adj in zip(with_p, adjusted):
        r["p_holm"] = adj


def _slim_check(rec: dict[str, Any]) -> dict[str, Any]:
    """A check as results.json lists it: a per-query table is kept once, in its spec row's dataset entry."""
    ctx = rec.get("context") or {}
    if read_per_query(ctx.get("per_query")) is None:
        return rec
    return {**rec, "context": {**ctx, "per_query": "see specs[].datasets[].per_query"}}


def write_results(results: dict[str, Any], report_dir: Path) -> list[Path]:
    """Write results.json and index.html atomically; returns their paths."""
    json_path = report_dir / "results.json"
    html_path = report_dir / "index.html"
    atomic_write(json_path, json.dumps(results, indent=2, sort_keys=True))
    atomic_write(html_path, render_html(results))
    return [json_path, html_path]


def write_reports(collector: Collector, catalogue: Catalogue, report_dir: Path, *, root: Path,
                  benchmarks: list[dict[str, Any]] | None = None, markexpr: str = "") -> list[Path]:
    return write_results(build_results(collector, catalogue, root=root, benchmarks=benchmarks, markexpr=markexpr),
                         report_dir)

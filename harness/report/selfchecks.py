"""The harness's self-checks (claims about the harness itself: calibration, metric speed and agreement, the embedder,
ANN, the report, the live-API simulation) run in a job of their own (`scripts/selfcheck.sh`, marker `selfcheck`);
that run keeps its results under the cache directory, and every other run's report shows the latest of them with
their commit and date, so a main job that leaves them out still says how the harness last checked itself."""
from __future__ import annotations

import datetime as _dt
import json
from html import escape
from pathlib import Path
from typing import Any

from harness.report.atomic import atomic_write

FOLDER = "selfcheck"
FILE = "results.json"
COMMAND = "bash scripts/selfcheck.sh"


def selfcheck_path(cache_dir: Path) -> Path:
    return Path(cache_dir) / FOLDER / FILE


def record_selfchecks(results: dict[str, Any], cache_dir: Path) -> Path:
    """Keep a self-check run's results as the latest (written as the report is: a run killed mid-write leaves the
    previous results whole)."""
    path = selfcheck_path(cache_dir)
    atomic_write(path, json.dumps(results, indent=2, sort_keys=True))
    return path


def latest_selfchecks(cache_dir: Path) -> dict[str, Any] | None:
    """The latest self-check run in brief (commit, date, one row per claim that ran), or None where none was kept
    or the file does not read (said in `error`, never silently dropped)."""
    path = selfcheck_path(cache_dir)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        run = data.get("run") or {}
        rows = [{"id": r["id"], "verdict": r["verdict"], "value": r.get("value")}
                for r in data.get("specs") or [] if r.get("verdict") not in (None, "not run")]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return {"path": str(path), "error": f"{type(exc).__name__}: {exc}", "rows": []}
    return {"path": str(path), "git_commit": run.get("git_commit"), "created_unix": run.get("created_unix"),
            "rows": rows}


def _when(created: Any) -> str:
    if not isinstance(created, (int, float)):
        return "an unknown date"
    return _dt.datetime.fromtimestamp(created, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _counts(rows: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    return ", ".join(f"{n} {v}" for v, n in sorted(counts.items())) or "no claim ran"


def selfcheck_line(summary: dict[str, Any] | None) -> str:
    """One terminal line: the latest self-checks' commit, date and verdict counts, or how to run them."""
    if summary is None:
        return f"self-checks of the harness: none recorded here ({COMMAND} runs them)"
    if summary.get("error"):
        return f"self-checks of the harness: {summary['path']} does not read ({summary['error']})"
    commit = (summary.get("git_commit") or "unknown commit")[:12]
    return (f"self-checks of the harness (latest, {commit} on {_when(summary.get('created_unix'))}): "
            f"{_counts(summary['rows'])} ({COMMAND})")


def selfcheck_html(summary: dict[str, Any] | None) -> str:
    """The report's section: the same line, then the claims with their verdicts."""
    head = f"<h2>The harness's self-checks</h2><p class=\"muted\">{escape(selfcheck_line(summary))}</p>"
    if not summary or not summary.get("rows"):
        return head
    cells = "".join(f"<tr><td>{escape(str(r['id']))}</td><td>{escape(str(r['verdict']))}</td>"
                    f"<td>{escape('' if r.get('value') is None else str(r['value']))}</td></tr>"
                    for r in summary["rows"])
    return head + f"<table><tr><th>claim</th><th>verdict</th><th>value</th></tr>{cells}</table>"

"""A first look in a minute: `python -m harness.first_look` runs the claims of `claims.yaml` through pytest and the
plugin, on recorded traffic of a real model (SmolLM2-135M, replayed from `fixtures/cassettes/`; no model runs and
nothing is downloaded), and writes the report: the terminal table, `reports/first-look/results.json` and
`index.html`. Extra arguments go to pytest (`--report-dir DIR`, `--negative-controls`, `-q`, ...).

The verdicts are computed from the recording each run, one test per claim. The first look exits with pytest's
status: 1 when a claim is refuted or fails (its test fails, as in any run), and it says so, naming those claims;
0 when none is; any other status (or a claim left without a verdict) means the run itself broke.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

__all__ = ["CLAIMS", "TESTS", "closing", "main", "verdict_counts"]

HERE = Path(__file__).resolve().parent
CLAIMS = HERE / "claims.yaml"
TESTS = HERE / "test_recorded_claims.py"
ROOT = HERE.parents[1]
DEFAULT_REPORT_DIR = "reports/first-look"
DECIDED = ("supported", "refuted", "inconclusive", "pass", "fail")
FAILING = ("refuted", "fail")  # verdicts whose test fails


def _report_dir(args: Sequence[str]) -> Path:
    """The report folder the run writes to: the last --report-dir among `args` (read from the current folder)."""
    out = DEFAULT_REPORT_DIR
    for i, a in enumerate(args):
        if a == "--report-dir" and i + 1 < len(args):
            out = args[i + 1]
        elif a.startswith("--report-dir="):
            out = a.split("=", 1)[1]
    return Path(out).expanduser().absolute()


def verdict_counts(rows: Sequence[dict[str, Any]]) -> dict[str, int]:
    """How many claims read each verdict, in the report's order (claims that did not run left out)."""
    from harness.report.summary import VERDICT_ORDER

    counts: dict[str, int] = {}
    for r in rows:
        if r["verdict"] != "not run":
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    return {v: counts[v] for v in sorted(counts, key=lambda v: VERDICT_ORDER.index(v) if v in VERDICT_ORDER else 99)}


def closing(rows: Sequence[dict[str, Any]], status: int) -> tuple[list[str], list[str], int]:
    """What the first look says once pytest is done (lines for stdout, lines for stderr) and its exit status:
    pytest's own, explained. 1 with every claim decided: the refuted (or failed) claims, named, are the failed
    tests pytest counted; 0: none is; anything else (or a claim without a verdict) says the run broke."""
    ran = [r for r in rows if r["verdict"] != "not run"]
    models = sorted({r["model"] for r in ran if r.get("model")})
    counts = ", ".join(f"{n} {v}" for v, n in verdict_counts(ran).items())
    out = [f"first look: {len(ran)} claims on recorded traffic of {', '.join(models) or 'no model'} "
           f"(replayed; no model ran): {counts}"]
    undecided = [r["id"] for r in ran if r["verdict"] not in DECIDED]
    if undecided or status not in (0, 1) or len(ran) < len(rows):
        return out, [f"first look: not every claim has a verdict ({', '.join(undecided) or 'some did not run'}); "
                     f"exit status {status or 1}: the run broke (see pytest's output above)"], status or 1
    failing = [r for r in ran if r["verdict"] in FAILING]
    if failing and status == 1:
        words = " or ".join(sorted({r["verdict"] for r in failing}))
        out.append(f"  exit status 1, pytest's: {len(failing)} of {len(ran)} claims read {words} "
                   f"({', '.join(r['id'] for r in failing)}), so their {len(failing)} tests failed above, as a "
                   f"{words} claim's test fails in any run. That is what the recording shows, not a fault: every "
                   "claim was decided (a status other than 0 or 1 would mean the run broke)")
    elif failing or status:  # pytest and the verdicts disagree: say so rather than explain it away
        return out, [f"first look: pytest exited {status} but {len(failing)} claims read refuted or fail"], status or 1
    else:
        out.append("  exit status 0: every claim was decided and none is refuted")
    return out, [], status


def main(argv: Sequence[str] | None = None) -> int:
    """Run the first look's claims with pytest (extra arguments passed on), then say what they read and where the
    report is; its exit status is pytest's (`closing`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not (ROOT / "fixtures" / "cassettes").is_dir():
        print(f"first look: no recordings at {ROOT / 'fixtures' / 'cassettes'}; run it from a checkout of the "
              "repository (pip install -e .)", file=sys.stderr)
        return 4
    args = [str(TESTS), "--spec-file", str(CLAIMS), "--report-dir", DEFAULT_REPORT_DIR, "-p", "no:randomly",
            "--tb=line", *argv]
    results = _report_dir(args) / "results.json"
    if results.is_file():
        results.unlink()  # a report left by an earlier run must not stand in for this one
    # pytest in its own process, as a user runs it (this one has imported the plugin's package already);
    # nothing is downloaded: the embedder is packaged
    status = subprocess.run([sys.executable, "-m", "pytest", *args],
                            env={**os.environ, "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE", "1")}).returncode
    if not results.is_file():
        print(f"first look: no report was written (pytest exit status {status})", file=sys.stderr)
        return status or 1
    out, err, code = closing(json.loads(results.read_text(encoding="utf-8"))["specs"], status)
    print("\n" + "\n".join(out))
    print(f"  report: {results.parent / 'index.html'} (and results.json beside it)")
    for line in err:
        print(line, file=sys.stderr)
    return code

"""Running a spec's tests under its negative control, and what counts as the control being killed.

A control is killed only when the spec's own `check` fails under it (a fail or refuted verdict recorded for that
spec) or the code under test raises; a test that fails on another assertion (a side assert, a pytest.raises that
did not raise) while the check passes or is never reached is *not killed by its check*, and fails a
`--negative-controls` run like a survivor. Unit and integration tests run in this process (`run_under_control`);
benchmark tests in a fresh process under `--under-control`, read back from its results.json.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.plugin.state import CONTROL_KEY, ISOLATED_KEY, bound_spec, harness_config_of, tiers_of
from harness.catalogue import Spec
from harness.report.summary import NOT_KILLED_BY_CHECK


def run_under_control(item: pytest.Item, spec_: Spec) -> dict[str, Any]:
    """Run a spec-bound test once under the spec's control and say how it fared (the outcome travels on the
    real run's reports as a PROP_CONTROL property)."""
    from _pytest.runner import runtestprotocol

    from harness.plugin.controls import ENV, get_control, restore_everywhere

    tiers = sorted(tiers_of(item))
    out: dict[str, Any] = {"spec_id": spec_.id, "control": spec_.control or None, "nodeid": item.nodeid,
                           "tier": tiers[0] if tiers else ""}
    if spec_.kind == "property":
        return {**out, "outcome": "property"}
    if not spec_.control:
        return {**out, "outcome": "missing"}
    ctl = get_control(spec_.control)
    if "benchmark" in tiers_of(item):  # wide fixtures (a study over a dataset) must be computed under the control
        return {**out, **_isolated_outcome(item, spec_, ctl)}
    state: dict[str, Any] = {"name": ctl.name, "exc": None, "records": []}
    item.stash[CONTROL_KEY] = state
    mp = pytest.MonkeyPatch()
    try:
        mp.setenv(ENV, ctl.name)
        ctl.apply(mp)
        # tear down to the item's parent: its function-scoped fixtures go, wider ones stay for the real run
        reports = runtestprotocol(item, log=False, nextitem=item.parent)  # type: ignore[arg-type]
    finally:
        mp.undo()
        restore_everywhere()
        del item.stash[CONTROL_KEY]
    failed = [r for r in reports if r.failed]
    own = [r for r in state["records"] if r.get("kind") == "check" and r.get("spec_id") == spec_.id]
    outcome = _control_outcome(failed, bool(any(r.skipped for r in reports)), state["exc"],
                               [r["verdict"] for r in own], strict=bool(item.config.getoption("strict_verdicts")))
    detail = "" if not failed else " ".join(str(getattr(getattr(failed[0].longrepr, "reprcrash", None), "message",
                                                        "")).split())[:300]
    if outcome == NOT_KILLED_BY_CHECK:
        said = ", ".join(f"{r['verdict']} ({_short(r.get('value'))})" for r in own) or "never reached"
        detail = f"its check under the control: {said}; the test failed elsewhere: {detail}"
    elif outcome == "killed" and state["exc"] == "error":
        detail = f"error in the code under test: {detail}"
    return {**out, "outcome": outcome, "breaks": ctl.breaks, "detail": detail[:400],
            "checks": [{"verdict": r["verdict"], "value": r.get("value")} for r in own]}


def _control_outcome(failed: list[Any], skipped: bool, exc: str | None, own_verdicts: list[str], *,
                     strict: bool = False) -> str:
    """How a spec-bound test fared under its control: killed only when the spec's own check failed (a fail or
    refuted verdict recorded for that spec; inconclusive too under --strict-verdicts) or the code under test
    raised; a test that failed on any other assertion was not killed by its check."""
    failing = ("fail", "refuted", "inconclusive") if strict else ("fail", "refuted")
    if not failed:
        return "skipped" if skipped else "survived"
    if failed[0].when != "call":
        return "crashed"  # setup or teardown broke: the check never ran
    if any(v in failing for v in own_verdicts) or exc == "error":
        return "killed"
    return NOT_KILLED_BY_CHECK if exc == "assertion" else "crashed"


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else repr(value)[:40]


def failure_kind(item: pytest.Item, excinfo: pytest.ExceptionInfo) -> str:
    """What failed a test under a control: 'assertion' (an assert, a check, pytest.fail, a pytest.raises that
    did not raise), 'error' (an exception raised in the code under test, i.e. outside the test's own module)
    or 'test-error' (an exception raised by the test's own code)."""
    if excinfo.errisinstance((AssertionError, pytest.fail.Exception)):
        return "assertion"
    raised_in = Path(str(excinfo.traceback[-1].path)) if excinfo.traceback else None
    return "test-error" if raised_in is None or raised_in == Path(str(item.path)) else "error"


def _isolated_outcome(item: pytest.Item, spec_: Spec, ctl: Any) -> dict[str, Any]:
    """Run every collected benchmark test bound to `ctl` once, in a fresh pytest process under
    `--under-control`, and read this spec's verdict from its results.json. A comparative claim is killed when
    it is not *supported* under the control (the report calls it undecided when the real run is inconclusive
    too); a point estimate when its own check fails (a test that failed on another assertion was not killed by
    its check)."""
    import os
    import subprocess
    import sys
    import time

    config = item.config
    cache = config.stash.setdefault(ISOLATED_KEY, {})
    if ctl.name not in cache:
        nodeids = sorted({i.nodeid for i in item.session.items
                          if "benchmark" in tiers_of(i) and getattr(bound_spec(i), "control", None) == ctl.name})
        out_dir = harness_config_of(config).harness.report_dir / "controls" / ctl.name
        cmd = [sys.executable, "-m", "pytest", *nodeids, "--under-control", ctl.name, "--report-dir", str(out_dir),
               "-p", "no:cacheprovider", "-q", "--spec-coverage", "off"]
        for opt, flag in (("llm", "--llm"), ("harness_config", "--harness-config"), ("data_dir", "--data-dir"),
                          ("max_queries", "--max-queries")):
            if config.getoption(opt) is not None:
                cmd += [flag, str(config.getoption(opt))]
        for path in config.getoption("spec_file") or []:
            cmd += ["--spec-file", path]
        if config.getoption("no_llm_cache"):
            cmd.append("--no-llm-cache")
        if config.getoption("fixed_n"):
            cmd.append("--fixed-n")
        for choice in config.getoption("technique") or []:
            cmd += ["--technique", choice]
        for model in config.getoption("judge") or []:
            cmd += ["--judge", model]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=config.rootpath, env=dict(os.environ), capture_output=True, text=True)
        wall = time.perf_counter() - t0
        results = out_dir / "results.json"
        child = json.loads(results.read_text()) if results.exists() else {}
        rows = {r["id"]: r for r in child.get("specs", [])}
        cache[ctl.name] = (rows, (proc.stdout[-1500:] + proc.stderr[-500:]).strip())
        from harness.plugin.timing import record_control

        record_control(item, ctl.name, wall, child)
    rows, tail = cache[ctl.name]
    row = rows.get(spec_.id)
    verdict = row["verdict"] if row else None
    own = [e.get("verdict") for e in (row or {}).get("datasets") or []]  # what the spec's own checks read
    if any(v in ("fail", "refuted") for v in own) or (spec_.comparative and verdict == "inconclusive"):
        outcome = "killed"
    elif verdict in ("pass", "supported", "inconclusive"):
        outcome = "survived"
    elif verdict == "skipped":
        outcome = "skipped"
    elif verdict in ("fail", "error") and _assertion_message((row or {}).get("message") or ""):
        outcome = NOT_KILLED_BY_CHECK  # the test failed, but not on the spec's check
    else:
        outcome = "crashed"
    detail = f"under the control: {verdict or 'no verdict'}" + (f", value {row.get('value')!r}" if row else
                                                                 f"; {tail[-300:]}")
    if outcome == NOT_KILLED_BY_CHECK:
        detail += f"; its check read {', '.join(map(str, own)) or 'nothing'}, the test failed on: {row['message']}"
    return {"outcome": outcome, "breaks": ctl.breaks, "isolated": True, "detail": detail[:400],
            "checks": [{"verdict": verdict, "value": row.get("value") if row else None}]}


def _assertion_message(message: str) -> bool:
    """A failed test's short message names an assertion (an assert or pytest.fail), not an exception."""
    return message.startswith(("assert ", "AssertionError", "Failed")) and "SpecCheckFailed" not in message

"""Every pass earned: each spec's check must fail under its negative control (a deliberately broken variant of
the thing it is named after), or the spec is a declared `property`.

The run-time meta-tests run the project's own spec tests under `pytest --negative-controls` in a subprocess and
read the verdicts from results.json. Benchmark-tier checks run under their control in a fresh pytest process
(`--under-control`), so that the study a module fixture computes is computed under it too; the calibration specs
(no LLM) are run that way here, the LLM-driven ones by `pytest -m benchmark --negative-controls`.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.catalogue import PROTOCOL_CATALOGUE, load_catalogue
from harness.plugin.controls import CONTROLS
from harness.first_look import CLAIMS as FIRST_LOOK_CLAIMS

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = load_catalogue([PROTOCOL_CATALOGUE])
FIRST_LOOK = load_catalogue([FIRST_LOOK_CLAIMS])  # the first look's own catalogue (tests/test_first_look.py)


@pytest.mark.unit
def test_every_spec_names_a_registered_control_or_is_a_property():
    specs = [*CATALOGUE, *FIRST_LOOK]
    unknown = [f"{s.id}: {s.control}" for s in specs if s.control and s.control not in CONTROLS]
    assert not unknown, f"controls not registered in harness.plugin.controls: {unknown}"
    missing = [s.id for s in specs if not s.control and s.kind != "property"]
    assert not missing, f"specs with neither a negative control nor kind: property: {missing}"
    unused = sorted(set(CONTROLS) - {s.control for s in specs})
    assert not unused, f"registered controls no spec names: {unused}"


@pytest.mark.unit
def test_a_null_technique_is_never_supported():
    """The cheap control every comparative benchmark claim gets: a technique that returns the baseline's output
    (every per-query difference 0; a rate of 0 for one-sample claims) must not read *supported* under the spec's
    own comparator, threshold and decision rule."""
    import numpy as np

    from harness.stats._effect import paired_effect, proportion_effect
    from harness.stats._verdict import decide

    x = np.random.default_rng(15).random(60)
    nulls = {"difference": paired_effect(x, x), "relative": paired_effect(x, x, relative=True),
             "binary": paired_effect((x > 0.5).astype(float), (x > 0.5).astype(float), binary=True),
             "rate": proportion_effect([False] * 60)}
    comparative = [s for s in CATALOGUE if s.comparative]
    assert comparative, "the catalogue has comparative claims"
    supported = [(s.id, name) for s in comparative for name, e in nulls.items()
                 if decide(e, s.comparator, s.threshold, s.decision).verdict == "supported"]
    assert not supported, f"claims a technique that changes nothing would support: {supported}"


def _run_under_controls(tmp_path: Path, markexpr: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "controls"
    cmd = [sys.executable, "-m", "pytest", "specs", "tests/test_metrics.py", "-m", markexpr,
           "--negative-controls", "--controls-only", "--report-dir", str(out), "-p", "no:cacheprovider", "-q", "-n", "2",
           "--dist", "loadfile",
           "--spec-coverage", "off"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    results = json.loads((out / "results.json").read_text()) if (out / "results.json").exists() else {}
    return proc, results


def _assert_all_killed(proc: subprocess.CompletedProcess, results: dict, tier: str) -> None:
    tail = proc.stdout[-3000:] + proc.stderr[-2000:]
    rows = {r["id"]: r for r in results.get("specs", [])}
    ran = [r for r in rows.values() if r.get("control")]
    expected = {s.id for s in CATALOGUE if s.marker == tier}
    assert expected <= {r["id"] for r in ran}, f"specs whose tests did not run under a control: " \
                                               f"{sorted(expected - {r['id'] for r in ran})}\n{tail}"
    bad = {r["id"]: r["control"] for r in ran if r["control"]["outcome"] not in ("killed", "property")}
    assert not bad, f"checks that still pass (or crash, or leave the kill to a side assert) under their " \
                    f"broken variant: {bad}\n{tail}"
    assert proc.returncode == 0, tail
    # the real runs are the suite's own (--controls-only skips them here): every one reads skipped, none a pass
    assert not [r["id"] for r in ran if r["verdict"] == "pass"], "a controls-only run counted a real run"


@pytest.mark.integration
def test_unit_spec_checks_fail_under_their_controls(tmp_path: Path):
    _assert_all_killed(*_run_under_controls(tmp_path, "unit"), tier="unit")


@pytest.mark.integration
def test_integration_spec_checks_fail_under_their_controls(tmp_path: Path):
    _assert_all_killed(*_run_under_controls(tmp_path, "integration"), tier="integration")


def _side_spec(spec_id: str) -> bool:
    return spec_id.startswith(("CALIB-SIDES-", "CALIB-ERROR-GATE-"))


@pytest.mark.integration
@pytest.mark.parametrize("module, owns, select", [
    ("test_calibration.py", lambda i: not _side_spec(i) and not i.startswith(("CALIB-FUTILITY-", "CALIB-ALLOCATOR-")),
     None),
    ("test_futility_calibration.py", lambda i: i.startswith("CALIB-FUTILITY-") and i != "CALIB-FUTILITY-COVERAGE", None),
    # futility's coverage is read off the allocator's study (its arm without a budget)
    ("test_allocator_calibration.py", lambda i: i.startswith("CALIB-ALLOCATOR-") or i == "CALIB-FUTILITY-COVERAGE", None),
    # the per-side calibration one control at a time (each in a child process of its own), so xdist can share them
    ("test_side_calibration.py", lambda i: _side_spec(i) and "-RELATIVE-" in i, "RELATIVE"),
    ("test_side_calibration.py", lambda i: _side_spec(i) and "-RELATIVE-" not in i and "-KAPPA-" not in i
     and "GATE" not in i, "DIFFERENCE or BINARY or RATE or COVERAGE"),
    ("test_side_calibration.py", lambda i: _side_spec(i) and "-KAPPA-" in i, "KAPPA"),
    ("test_side_calibration.py", lambda i: "GATE" in i, "GATE"),
], ids=["calibration", "futility", "allocator", "sides-relative", "sides-naive-interval", "sides-kappa",
        "sides-error-gate"])
def test_calibration_checks_fail_under_their_controls(tmp_path: Path, rag_config, module, owns, select):
    """The CALIB specs (real Cranfield and halueval-qa runs, no LLM) under a liberal test, a too-narrow interval, the
    naive interval at every look, the delta-method relative interval, κ's naive interval at every look and the error
    gate at every look; skipped
    where the data directory (`--data-dir`, `harness.data_dir`) has no Cranfield."""
    data = rag_config.harness.data_dir
    if not (data / "cranfield" / "corpus.jsonl").is_file():
        pytest.skip(f"the Cranfield set is not in the data directory: {data / 'cranfield' / 'corpus.jsonl'} is missing")
    out = tmp_path / "controls"
    cmd = [sys.executable, "-m", "pytest", f"benchmarks/{module}", "-m", "benchmark", "--negative-controls",
           "--controls-only", "--report-dir", str(out), "-p", "no:cacheprovider", "-q", "--data-dir", str(data),
           *(["-k", select] if select else [])]
    proc = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True,
                          timeout=1800)
    tail = proc.stdout[-3000:] + proc.stderr[-2000:]
    rows = {r["id"]: r for r in json.loads((out / "results.json").read_text())["specs"]} if \
        (out / "results.json").exists() else {}
    calib = {s.id for s in CATALOGUE if s.id.startswith("CALIB-") and owns(s.id)}  # each module its own claims
    assert calib
    outcomes = {i: (rows.get(i, {}).get("control") or {}).get("outcome") for i in calib}
    assert all(o == "killed" for o in outcomes.values()), f"{outcomes}\n{tail}"

"""The first look (`python -m harness.first_look`, the README's quick start): its command as the README writes it,
the verdicts it computes from the recorded traffic, its claims under their negative controls, and the two
library functions its judge claims are decided with."""
from __future__ import annotations

import json
import math
import shlex
import subprocess
import sys
import types
from pathlib import Path

import pytest

from tests.docs_kit import blocks

ROOT = Path(__file__).resolve().parents[1]
MODEL = "local/smollm2-135m-instruct"


def _readme_command() -> list[str]:
    """The first look's command as the README's quick start writes it (and the getting-started page, the same),
    run with this interpreter."""
    (cmd,) = [b.strip() for b in blocks("README.md", "Quick start", "bash") if "harness.first_look" in b]
    (page,) = [b.strip() for b in blocks("docs/getting-started.md", "A first look", "bash")]
    assert cmd == page, "the README's first look and the getting-started page's differ"
    args = shlex.split(cmd)
    assert Path(args[0]).name == "python" and args[1:3] == ["-m", "harness.first_look"], cmd
    return [sys.executable, *args[1:]]  # the README's .venv/bin/python: the interpreter running these tests


def _run(tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "report"
    proc = subprocess.run([*_readme_command(), "--report-dir", str(out), *extra], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})
    results = out / "results.json"
    assert results.is_file(), proc.stdout[-3000:] + proc.stderr[-2000:]
    return proc, json.loads(results.read_text())


@pytest.mark.integration
def test_the_readme_command_ends_with_a_supported_a_refuted_and_an_inconclusive_claim(tmp_path):
    proc, data = _run(tmp_path)
    tail = proc.stdout[-4000:] + proc.stderr[-2000:]
    rows = [r for r in data["specs"] if r["verdict"] != "not run"]
    verdicts = {r["verdict"] for r in rows}
    assert {"supported", "refuted", "inconclusive"} <= verdicts, tail
    assert proc.returncode == 1, tail  # pytest's: a refuted claim fails its test (the summary says so)
    assert all(r["model"] == MODEL for r in rows), [(r["id"], r["model"]) for r in rows]
    for r in rows:  # the terminal table names the model on every claim's row
        assert any(line.startswith(r["id"]) and f"model={MODEL}" in line for line in proc.stdout.splitlines()), tail
    assert data["provenance"]["models"], "the provenance block says how the traffic was obtained"
    assert (tmp_path / "report" / "index.html").is_file()
    assert "first look: 5 claims on recorded traffic of local/smollm2-135m-instruct" in proc.stdout, tail


@pytest.mark.integration
def test_each_first_look_claim_fails_under_its_negative_control(tmp_path):
    proc, data = _run(tmp_path, "--negative-controls")
    tail = proc.stdout[-4000:] + proc.stderr[-2000:]
    controls = {r["id"]: r["control"] for r in data["specs"] if r["verdict"] != "not run"}
    assert len(controls) == 5, tail
    assert all(c and c["outcome"] == "killed" for c in controls.values()), controls


@pytest.mark.unit
def test_kappa_effect_carries_the_bootstrap_interval_and_the_sd_it_implies():
    from harness.judge.reliability import JudgeReliability, kappa_effect

    rel = JudgeReliability("j", "s", 16, 0.3, (0.1, 0.5), 0.7, (0.5, 0.8))
    e = kappa_effect(rel)
    assert (e.kind, e.estimate, e.ci, e.n, e.exact) == ("kappa", 0.3, (0.1, 0.5), 16, False)
    assert e.sd == pytest.approx(0.4 / 3.919928 * 4, abs=1e-9)  # width / (2 * 1.96) * sqrt(16) = 0.40817
    assert e.sd == pytest.approx(0.408171, abs=1e-6)
    one_label = JudgeReliability("j", "s", 10, 0.0, (0.0, 0.0), 0.5, (0.2, 0.8), kappa_exact=True)
    assert kappa_effect(one_label).exact and kappa_effect(one_label).sd == 0.0
    assert math.isnan(kappa_effect(JudgeReliability("j", "s", 0, math.nan, (math.nan, math.nan), math.nan,
                                                    (math.nan, math.nan))).sd)


@pytest.mark.unit
def test_flip_effect_counts_only_items_ruled_both_times():
    from harness.judge.reliability import flip_effect

    e = flip_effect([True, False, True, None, True], [True, True, True, False, None])
    assert (e.estimate, e.n) == (pytest.approx(1 / 3), 3)  # (T,T) (F,T) (T,T): one flip of three
    assert e.ci == pytest.approx((0.061492, 0.792340), abs=1e-6)  # Wilson 95% for 1 of 3, by hand
    with pytest.raises(ValueError):
        flip_effect([True], [True, False])


@pytest.mark.unit
def test_judge_one_label_control_rules_without_the_model_and_zeroes_kappa(monkeypatch):
    """Under `judge-one-label` the judge calls every claim supported and asks no model: κ is exactly 0, so both
    κ claims of the first look read refuted."""
    from harness.catalogue import load_catalogue
    from harness.plugin.controls import get_control
    from harness.first_look import CLAIMS
    from harness.judge import LLMJudge
    from harness.judge.labelled import load_labelled_answers
    from harness.judge.reliability import JudgeReliability, kappa_effect
    from harness.stats._verdict import decide

    def no_call(*a, **kw):
        raise AssertionError("the control asked the model")

    get_control("judge-one-label").apply(monkeypatch)
    judge = LLMJudge(types.SimpleNamespace(label="stub", structured=no_call))
    items = [c for a in load_labelled_answers() for c in a.claim_items()]
    rulings = [judge.supported(c.item) for c in items]
    assert set(rulings) == {True}
    rel = JudgeReliability.measure("stub", "hand", rulings, [c.supported for c in items])
    assert rel.kappa == 0.0 and rel.kappa_exact
    cat = load_catalogue([CLAIMS])
    for sid in ("FIRST-LOOK-JUDGE-ABOVE-CHANCE", "FIRST-LOOK-JUDGE-MODERATE"):
        s = cat[sid]
        assert decide(kappa_effect(rel), s.comparator, s.threshold, s.decision).verdict == "refuted"


@pytest.mark.unit
def test_verdict_counts_in_report_order_without_claims_that_did_not_run():
    from harness.first_look import verdict_counts

    rows = [{"verdict": v} for v in ("pass", "refuted", "supported", "not run", "refuted", "inconclusive")]
    counts = verdict_counts(rows)
    assert counts == {"refuted": 2, "inconclusive": 1, "supported": 1, "pass": 1}
    assert list(counts) == ["refuted", "inconclusive", "supported", "pass"]

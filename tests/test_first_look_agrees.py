"""Issue 40, item 6: a first look that agrees with itself. One test per claim (pytest's item count is the claims'
count), an exit status that is pytest's and says why, no figure printed empty in a failed check's message, and one
flip rate: the claim on the judge's self-consistency reports the figure, over the same items, that the judge
banner (and the judge's flag) reads."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
# six rulings: the first decided five (index 2 failed); of those five the re-ruling changed index 1 (False → True)
# and failed on index 3: 2 not reproduced of 5 = 0.4. Over the four ruled both times only one changed (0.25).
FIRST = [True, False, None, True, True, False]
SECOND = [True, True, True, None, True, False]
LABELS = [True, False, True, True, False, False]


def _reliability():
    from harness.judge.reliability import JudgeReliability

    return JudgeReliability.measure("j", "hand", FIRST, LABELS, second=SECOND, perturbed=[True] * 6,
                                    recheck={"prompt": "support_recheck", "temperature": 0.7})


@pytest.mark.unit
def test_the_consistency_claim_reads_the_flags_figure_over_the_same_items():
    """Wilson 95% for 2 of 5 by hand: centre (0.4 + 1.92073/5)/(1 + 3.84146/5) = 0.443448, half-width
    1.959964·√(0.048 + 0.0384146)/1.768292 = 0.325827: [0.117621, 0.769276]."""
    from harness.judge.reliability import recheck_effect

    rel = _reliability()
    assert (rel.flip_rate, rel.flip_n) == (0.4, 5)
    e = recheck_effect(rel)
    assert (e.estimate, e.n) == (0.4, 5)
    assert e.ci == pytest.approx((0.117621, 0.769276), abs=1e-6)


@pytest.mark.unit
def test_the_judge_banner_says_what_its_flip_rate_counts():
    from harness.report.html.page import judge_lines

    (line,) = judge_lines({"judges": {"j on hand": _reliability().as_context()}})
    assert ("flip rate 0.40 over the 5 items it ruled on (not reproduced when re-ruled in support_recheck wording "
            "at temperature 0.7: 1 changed, 1 failed)") in line, line


@pytest.mark.unit
def test_a_failed_checks_message_leaves_out_figures_it_does_not_have():
    """A rate has no p-value: the message must not read `p_value=;`."""
    from harness.plugin.fixtures import failure_context

    ctx = {"dataset": "retail_kb", "n": 50, "ci": [0.738, 0.93], "p_value": None, "model": "m", "seeds": [0, 1]}
    assert failure_context(ctx) == ", n=50, ci=[0.738, 0.93], model=m, dataset=retail_kb"
    assert failure_context({"n": 3, "p_value": 0.04}) == ", n=3, p_value=0.04"


def _rows(*verdicts: str) -> list[dict]:
    return [{"id": f"C-{k}", "verdict": v, "model": "local/m"} for k, v in enumerate(verdicts)]


@pytest.mark.unit
def test_the_first_looks_exit_status_is_pytests_and_its_summary_says_why():
    from harness.first_look import closing

    out, err, code = closing(_rows("refuted", "supported", "refuted", "inconclusive", "pass"), 1)
    assert code == 1 and not err
    assert out[0].endswith("2 refuted, 1 inconclusive, 1 supported, 1 pass")
    assert ("exit status 1, pytest's: 2 of 5 claims read refuted (C-0, C-2), so their 2 tests failed above"
            in out[1]), out
    out, err, code = closing(_rows("supported", "pass"), 0)
    assert code == 0 and not err and "none is refuted" in out[1]
    # pytest and the verdicts disagree, or a claim has no verdict: said on stderr, never exit 0
    assert closing(_rows("supported"), 1)[1:] == (["first look: pytest exited 1 but 0 claims read refuted or fail"], 1)
    assert closing(_rows("refuted"), 0)[2] == 1
    out, err, code = closing(_rows("refuted", "error"), 1)
    assert code == 1 and "not every claim has a verdict (C-1)" in err[0]
    assert closing(_rows("pass"), 2)[2] == 2


@pytest.mark.integration
def test_the_first_look_agrees_with_itself(tmp_path):
    """Its item count is its claims', its exit status pytest's with the failed tests' claims named, no empty
    figure, and the judge banner's flip rate is the consistency claim's value over the same n."""
    claims = yaml.safe_load((ROOT / "harness" / "first_look" / "claims.yaml").read_text())["specs"]
    out_dir = tmp_path / "report"
    proc = subprocess.run([sys.executable, "-m", "harness.first_look", "--report-dir", str(out_dir)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    out = proc.stdout
    tail = out[-4000:] + proc.stderr[-2000:]
    assert f"collected {len(claims)} items" in out, tail
    rows = {r["id"]: r for r in json.loads((out_dir / "results.json").read_text())["specs"]}
    refuted = [c["id"] for c in claims if rows[c["id"]]["verdict"] in ("refuted", "fail")]
    assert refuted and proc.returncode == 1, tail
    assert re.search(rf"\b{len(refuted)} failed, {len(claims) - len(refuted)} passed\b", out), tail
    assert f"claims read refuted ({', '.join(refuted)}), so their {len(refuted)} tests failed above" in out, tail
    assert not re.search(r"\b\w+=[;,)]", out), "a figure printed empty"
    consistent = rows["FIRST-LOOK-JUDGE-CONSISTENT"]
    (banner,) = [x for x in out.splitlines() if x.startswith("Judge local/")]
    flip = re.search(r"flip rate (\S+) over the (\d+) items it ruled on", banner)
    assert flip, banner
    assert (float(flip.group(1)), int(flip.group(2))) == (round(consistent["value"], 2), consistent["n"]), banner

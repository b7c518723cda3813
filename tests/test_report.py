"""Report rendering: escaping, self-containment, comparison view, CLI."""
from __future__ import annotations

import json
import re

import pytest

from harness.cli import main
from harness.report.html.page import render_comparison, render_html

pytestmark = pytest.mark.unit

EVIL = "<script>alert('x')</script>"


def results(value: float, verdict: str = "pass") -> dict:
    return {
        "schema_version": 1, "run": {"git_commit": "abc", "created_unix": 0, "markexpr": "unit"},
        "specs": [{"id": "DEMO-1", "title": f"title {EVIL}", "tier": "unit", "metric": "m", "comparator": "<",
                   "threshold": 1, "source": "s", "verdict": verdict, "value": value, "n": 3, "ci": [0.1, 0.2],
                   "p_value": 0.04, "model": "local/x", "dataset": "d", "message": EVIL}],
        "measures": [
            {"name": "nDCG@10", "value": 0.4, "nodeid": "t", "context": {"technique": "dense", "dataset": "d"}},
            {"name": "nDCG@10", "value": 0.5, "nodeid": "t", "context": {"technique": EVIL, "dataset": "d"}},
            {"name": "fusion_ratio", "value": 1.6, "nodeid": "t", "context": {"kind": "latency_ratio"}},
        ],
        "checks": [], "tests": [], "benchmarks": [{"fullname": EVIL, "median_s": 0.1, "stddev_s": 0.0, "rounds": 3}],
    }


def test_html_escapes_and_is_self_contained():
    html = render_html(results(0.5))
    assert EVIL not in html and "&lt;script&gt;" in html and html.count("<script") == 1, "only the page's own script"
    assert not re.search(r"(src|href)=\"https?://", html), "no network assets"
    assert html.count("<svg") == 2, "retrieval bars and latency-ratio chart"


def test_comparison_and_cli(tmp_path):
    html = render_comparison(results(0.5), results(0.8, "fail"))
    assert "+0.3" in html and EVIL not in html
    (tmp_path / "a.json").write_text(json.dumps(results(0.5)))
    (tmp_path / "b.json").write_text(json.dumps(results(0.8)))
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "-o", str(tmp_path / "c.html")]) == 0
    assert "DEMO-1" in (tmp_path / "c.html").read_text()
    (tmp_path / "bad.json").write_text(json.dumps({"schema_version": 9}))
    with pytest.raises(SystemExit, match="field 'schema_version' is 9"):
        main(["render", str(tmp_path / "bad.json")])


def test_holm_is_applied_across_a_runs_claims():
    from harness.report.writer import add_holm

    rows = [{"p_value": 0.01}, {"p_value": 0.04}, {"p_value": None}, {"p_value": 0.03}]
    add_holm(rows)
    assert [r.get("p_holm") for r in rows] == pytest.approx([0.03, 0.06, None, 0.06])


def test_undefined_value_reads_n_a():
    """A measurement that came out NaN (e.g. a rate over zero items) is stored as null and shown as n/a."""
    data = results(0.5, "fail")
    data["specs"][0]["value"] = None
    html = render_html(data)
    assert re.search(r"<td class=num>n/a</td>", html)


def test_failed_check_message_is_not_repeated_as_a_note():
    data = results(0.5, "fail")
    data["specs"][0]["message"] = "harness.plugin.hooks.SpecCheckFailed: DEMO-1 (t): measured m = 0.5, required < 1"
    assert "SpecCheckFailed" not in render_html(data)
    data["specs"][0]["message"] = "Skipped: dataset 'popqa' not found"
    assert "dataset &#x27;popqa&#x27; not found" in render_html(data)


def _comparative(verdict: str, value: float, ci: list, dataset: str = "d") -> dict:
    return {"id": "CMP-1", "title": "t", "tier": "benchmark", "metric": "m", "comparator": ">=", "threshold": 0.05,
            "source": "s", "verdict": verdict, "value": value, "ci": ci, "comparative": True,
            "decision": {"rule": "ci", "text": "95% CI vs threshold"},
            "datasets": [{"dataset": dataset, "verdict": verdict, "value": value, "ci": ci}]}


def test_comparative_claims_share_one_axis_per_metric_with_zero_and_threshold():
    """Two datasets of one claim on one axis: by hand, values 0.02, -0.2, CI ends -0.01, 0.05, -0.3, -0.1, threshold
    0.05 and zero span [-0.3, 0.05]; padded by 5% (0.0175) the axis is [-0.3175, 0.0675], and on the 360 px plot
    (10 px margins) zero sits at 10 + 0.3175 / 0.385 * 340 = 290.4 px, the threshold at 10 + 0.3675 / 0.385 * 340 = 334.5 px."""
    from harness.report.html.claims import claims_first_screen, metric_axes

    row = _comparative("inconclusive", 0.02, [-0.01, 0.05])
    row["datasets"].append({"dataset": "e", "verdict": "refuted", "value": -0.2, "ci": [-0.3, -0.1]})
    assert metric_axes([row])["m"] == pytest.approx((-0.3175, 0.0675))
    html = claims_first_screen([row, {**_comparative("pass", 1.0, None), "id": "OTHER-1", "comparative": False}])
    assert html.count("<circle") == 2 and html.count('class="zero" x1="290.4"') == 2
    assert html.count('class="threshold" x1="334.5"') == 2
    assert "#c99700" in html and "#c0392b" in html  # inconclusive amber, refuted red
    assert html.index("<h2>Other claims</h2>") < html.index("OTHER-1")


def test_compare_lists_verdict_transitions(tmp_path, capsys):
    from harness.report.html.page import verdict_transitions

    a = {**results(0.5), "specs": [_comparative("inconclusive", 0.02, [-0.01, 0.05])]}
    b = {**results(0.5), "specs": [_comparative("supported", 0.09, [0.06, 0.12])]}
    assert verdict_transitions(a, b) == [("CMP-1", "inconclusive", "supported")]
    assert verdict_transitions(a, a) == []
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "-o", str(tmp_path / "c.html")]) == 0
    assert "CMP-1: inconclusive -> supported" in capsys.readouterr().out
    assert "Verdict transitions" in (tmp_path / "c.html").read_text()


def test_provenance_hashes_content_and_merges_traffic(tmp_path):
    from harness import provenance

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.jsonl").write_text('{"_id": "1"}\n')
    h1 = provenance.content_hash_of(tmp_path / "d")
    import hashlib

    expected = hashlib.sha256(b"a.jsonl\0" + b'{"_id": "1"}\n').hexdigest()
    assert h1 == expected
    provenance.reset()
    provenance.note_model("local/x", traffic="live+cache", role="llm")
    provenance.note_model("local/x", traffic="live")
    provenance.note_dataset("d", tmp_path / "d", queries=1)
    snap = provenance.snapshot()
    assert snap["models"]["local/x"] == {"traffic": "live+cache, live", "role": "llm"}
    assert snap["datasets"]["d"]["sha256"] == expected
    provenance.reset()


def test_dataset_cards_list_counts_hash_source_and_licence():
    from harness.report.html.page import dataset_cards

    prov = {"datasets": {"halueval-qa": {"path": "/d/halueval-qa", "sha256": "abc123", "card": {
        "counts": {"questions": 8000, "passages": 9936, "false_premise": 0}, "licence": "MIT",
        "source": f"HaluEval {EVIL}"}}}}
    html = dataset_cards(prov)
    assert "<h2>Datasets</h2>" in html and "questions 8,000, passages 9,936" in html and "false premise" not in html
    assert "abc123" in html and "MIT" in html and "&lt;script&gt;" in html and "<script" not in html
    assert dataset_cards({}) == ""
    data = results(0.5)
    data["provenance"] = prov
    assert "<h2>Datasets</h2>" in render_html(data)


def _control_outcome(verdict: str, under_control: str, rule: str = "ci") -> str:
    from harness.catalogue import Spec
    from harness.report.summary import _control_summary
    from harness.stats._verdict import Decision

    spec = Spec("C-1", "t", "benchmark", "m", ">", 0.0, "s", decision=Decision(rule=rule), control="ctl")
    run = {"outcome": "killed", "breaks": "b", "detail": "", "nodeid": "n", "checks": [{"verdict": under_control}]}
    return _control_summary(spec, [run], verdict)["outcome"]


@pytest.mark.parametrize("verdict, under_control, outcome", [
    ("supported", "inconclusive", "killed"),  # the control took the support away
    ("inconclusive", "refuted", "killed"),  # the control made it fail outright
    ("inconclusive", "inconclusive", "undecided"),  # the data tells the broken run from the real one in neither
])
def test_a_control_that_leaves_an_inconclusive_claim_inconclusive_is_undecided(verdict, under_control, outcome):
    assert _control_outcome(verdict, under_control) == outcome


def test_undecided_is_for_comparative_claims_only():
    assert _control_outcome("inconclusive", "inconclusive", rule="estimate") == "killed"

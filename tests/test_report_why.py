"""The report's why: per-query tables and samples (harness.report.per_query), each claim's reasoning, formatting
without Python reprs, report file modes, and failure messages as a user reads them."""
from __future__ import annotations

import json
import os
import re
import stat

import numpy as np
import pytest

from harness.report.html.formatting import hash_label, plain
from harness.report.per_query import outcome, per_query_context, picks, read_per_query, truncate
from tests.pytester_kit import new_project

pytest_plugins = ["pytester"]


@pytest.mark.unit
def test_picks_best_worst_and_lower_median_by_hand():
    """Differences c - b: q1 +0.5, q2 -0.25, q3 0, q4 +0.5, q5 +0.1; ascending: q2, q3, q5, q1, q4; the best is the
    first of the two +0.5 (q1), the worst q2, the lower median the (5-1)//2 = 2nd: q5."""
    ids = ["q1", "q2", "q3", "q4", "q5"]
    b = [0.0, 0.5, 0.3, 0.25, 0.4]
    c = [0.5, 0.25, 0.3, 0.75, 0.5]
    assert picks(ids, b, c) == {"best": "q1", "worst": "q2", "median": "q5"}
    # lower is better (a hallucination rate): the gains flip sign, q2 is best, q1 worst; median of -0.5, -0.5,
    # -0.1, 0, +0.25 is -0.1 (q5)
    assert picks(ids, b, c, lower_is_better=True) == {"best": "q2", "worst": "q1", "median": "q5"}
    assert picks(ids[:4], b[:4], c[:4])["median"] == "q3"  # 4 queries: ascending q2, q3, q1, q4; the 1st
    assert picks([], [], []) == {}


@pytest.mark.unit
def test_outcome_and_truncate():
    assert [outcome(0.2, 0.3), outcome(0.3, 0.2), outcome(0.2, 0.2 + 1e-13), outcome(None, 0.1)] == [
        "improved", "degraded", "unchanged", "n/a"]
    assert outcome(0.3, 0.2, lower_is_better=True) == "improved"
    assert truncate("abcdef", 4) == "abc…" and truncate("abc", 4) == "abc" and truncate(None, 3) == ""


@pytest.mark.unit
def test_per_query_context_keeps_every_score_and_three_samples_cut_to_size():
    n = 50
    ids = [f"q{i}" for i in range(n)]
    b = np.linspace(0, 1, n)
    c = b[::-1].copy()
    ctx = per_query_context(ids, b, c, texts={q: "x" * 500 for q in ids},
                            outputs={q: {"answer": "y" * 5000, "empty": ""} for q in ids},
                            rulings={q: [{"judge": "j", "claim": "z", "verdict": "supported"}] for q in ids})
    assert ctx["ids"] == ids and ctx["baseline"] == pytest.approx(list(b)) and len(ctx["candidate"]) == n
    assert all(len(t) == 200 for t in ctx["texts"])
    assert [s["pick"] for s in ctx["samples"]] == ["best", "worst", "median"]
    # c - b = 1 - 2b falls with i: ascending q49, q48, …, q0; best q0, worst q49, median the 24th: q49-24 = q25
    assert [s["id"] for s in ctx["samples"]] == ["q0", "q49", "q25"]
    assert all(len(s["outputs"]) == 1 and len(s["outputs"][0][1]) == 1500 for s in ctx["samples"])
    assert ctx["samples"][0]["rulings"] == [{"judge": "j", "claim": "z", "verdict": "supported", "reason": ""}]
    assert read_per_query(json.loads(json.dumps(ctx)))["samples"] == ctx["samples"]
    assert read_per_query({"q1": {"action": "correct"}}) is None  # a claim's own per-query detail is left alone
    with pytest.raises(ValueError, match="2 ids, 1 baseline"):
        per_query_context(["a", "b"], [0.1], [0.2])


@pytest.mark.unit
def test_plain_text_has_no_python_reprs():
    assert plain([np.float64(0.123456), np.float64(2.0)]) == "[0.1235, 2]"
    assert plain({"card": {"licence": "MIT", "n": 3}}) == "card: licence: MIT; n: 3"
    assert plain(None) == "" and plain(True) == "True" and plain(7) == "7" and plain("local/x") == "local/x"
    assert hash_label("a" * 64) == "sha256" and hash_label("0123456789abcdef") == "sha256 (first 16 hex digits)"


def _entry(**kw):
    return {"dataset": "d", "verdict": "inconclusive", "value": 0.02, "ci": [-0.01, 0.05], "n": 40,
            "interval": "t", "confidence": 0.95, "reason": "the 95% CI straddles 0.05", "queries_needed": 180,
            "available": 100, "improved": 20, "unchanged": 10, "degraded": 10, **kw}


@pytest.mark.unit
def test_a_claims_reasoning_is_in_full_and_its_table_is_inert_data():
    from harness.report.html.query_table import claim_details, reasoning

    row = {"id": "HYDE-003", "title": "t", "verdict": "inconclusive", "metric": "m", "comparator": ">=",
           "threshold": 0.05, "decision": {"rule": "ci", "text": "95% CI vs threshold"}}
    pq = per_query_context(["a", "b"], [0.1, 0.4], [0.3, 0.2], texts={"a": "</script><b>x", "b": "y"},
                           outputs={"a": {"hypothetical documents": "<i>doc</i>"}})
    why = dict(reasoning(row, _entry()))
    assert why["rule"] == "95% CI vs threshold" and why["claim"] == "m >= 0.05"
    assert why["interval"] == "95.0% [-0.01, 0.05] (t interval)" and why["queries"] == "40 of 100 available"
    assert why["queries +/=/−"] == "+20/=10/-10" and why["queries needed"] == "180 for 80% power (> 100 available)"
    assert why["why"] == "the 95% CI straddles 0.05"
    html = claim_details([{**row, "datasets": [_entry(per_query=pq)]}])
    assert 'id="claim-HYDE-003"' in html and "&lt;i&gt;doc&lt;/i&gt;" in html
    data = re.search(r'<script type="application/json" id="pq-0">(.*?)</script>', html).group(1)
    assert "</" not in data and json.loads(data)["texts"][0] == "</script><b>x"


@pytest.mark.unit
def test_report_files_get_the_mode_of_an_ordinary_new_file(tmp_path):
    from harness.report.writer import write_results

    umask = os.umask(0o022)
    try:
        paths = write_results({"schema_version": 1, "specs": []}, tmp_path / "out")
    finally:
        os.umask(umask)
    assert [stat.S_IMODE(p.stat().st_mode) for p in paths] == [0o644, 0o644]
    assert not list((tmp_path / "out").glob(".*")), "no temp file left behind"


CATALOGUE = """
specs:
  - id: MSG-001
    title: A technique beats its baseline
    marker: unit
    decision: ci
    metric: lift
    comparator: ">="
    threshold: 0.5
    source: demo
"""


@pytest.mark.integration
def test_a_failed_claims_message_shows_numbers_not_numpy_reprs(pytester):
    project = new_project(pytester, CATALOGUE)
    project.makepyfile(test_msg="""
        import pytest
        from harness.stats._effect import paired_effect

        @pytest.mark.spec("MSG-001")
        def test_lift(rag_check):
            # by hand: d = -0.4, -0.3, -0.2 (x10), mean -0.3, sd 0.08305, t(0.975, 29) 2.0452: -0.3 ± 0.0310
            rag_check("MSG-001", paired_effect([0.1, 0.2, 0.3] * 10, [0.5] * 30), dataset="d")
""")
    result = project.runpytest_subprocess("--report-dir", "out", "--spec-coverage", "off")
    out = result.stdout.str()
    assert result.ret == 1 and "refuted: MSG-001" in out, out[-3000:]
    assert "np.float64" not in out and "n=30, ci=[-0.331, -0.269]" in out, out[-3000:]


@pytest.mark.unit
def test_provenance_reads_as_text_not_a_python_dict():
    from harness.report.html.tables import _provenance

    html = _provenance({"git_commit": "abc", "datasets": {"scifact": {
        "path": "/d/scifact", "sha256": "0123456789abcdef", "card": {"licence": "CC-BY", "counts": {"queries": 3}}}},
        "models": {"local/x": {"traffic": "replayed", "role": "llm"}}, "seeds": {"bootstrap": np.int64(3)}})
    assert "{" not in html and "np." not in html
    assert "scifact: sha256 (first 16 hex digits) 0123456789abcdef, path=/d/scifact" in html
    assert "local/x: traffic=replayed, role=llm" in html and "bootstrap: 3" in html


@pytest.mark.unit
def test_technique_outputs_name_what_the_model_wrote():
    from harness.report.per_query import technique_outputs
    from harness.techniques._registry import TechniqueResult
    from harness.types import Hit

    hits = [Hit(id=f"d{i}", score=1.0 / (i + 1)) for i in range(12)]
    res = TechniqueResult("q1", "why?", hits, "because.", technique="hyde",
                          detail={"hypothetical_documents": ["doc one", "doc two"], "action": "correct", "vec": {}})
    assert technique_outputs(res) == {"hypothetical documents": "doc one\n---\ndoc two", "action": "correct",
                                      "answer": "because.", "sources": ", ".join(f"d{i}" for i in range(10))}
    assert technique_outputs(TechniqueResult("q2", "x", hits[:1])) == {}  # retrieval only: nothing written


@pytest.mark.unit
def test_retrieval_chart_draws_one_bar_per_distinct_figure_named_by_its_query_count():
    """Several claims measure the dense arm: the same figure twice is one bar, different figures say their n."""
    from harness.report.html.charts import _retrieval_charts

    def m(tech, n, value, test):
        return {"name": "nDCG@10", "value": value, "nodeid": f"benchmarks/x.py::{test}[cranfield]",
                "context": {"technique": tech, "dataset": "cranfield", "n": n}}

    svg = _retrieval_charts([m("dense", 225, 0.3736, "test_a"), m("dense", 225, 0.3767, "test_b"),
                             m("dense", 225, 0.3767, "test_c"), m("dense", 30, 0.4058, "test_d"),
                             m("hyde", 30, 0.31, "test_d")])
    labels = re.findall(r'<text x="0" y="\d+">([^<]*)</text>', svg)
    assert sorted(labels) == ["dense (n=225) test_a", "dense (n=225) test_b", "dense (n=30)", "hyde"]

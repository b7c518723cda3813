"""The report as a browser shows it: a project's run writes results.json and index.html; headless Chromium loads
the page, runs its script, and the claims table and a claim's per-query table it rendered are read back from the
DOM and compared with results.json. Skips when no Chromium is installed (`apt-get install chromium`)."""
from __future__ import annotations

import json
import re

import pytest

from harness.report.browser import claim_rows, dump_dom, find_chromium, ready_ms, table_rows
from tests.pytester_kit import new_project

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(find_chromium() is None, reason="no Chromium found: apt-get install -y chromium "
                                                                 "(or set RAG_HARNESS_CHROMIUM to its binary)")]
pytest_plugins = ["pytester"]

CATALOGUE = """
specs:
  - id: HYDE-900
    title: A HyDE-like technique beats dense retrieval
    marker: integration
    decision: ci
    metric: Recall@10 difference
    comparator: ">="
    threshold: 0.05
    source: demo
  - id: CALIB-900
    title: A self-check that passes
    marker: integration
    metric: rate
    comparator: "<="
    threshold: 0.065
    source: demo
  - id: OTHER-900
    title: A claim this tier does not run
    marker: benchmark
    decision: estimate
    metric: m
    comparator: ">"
    threshold: 0
    source: demo
"""

TESTS = """
import numpy as np
import pytest
from harness.report.per_query import per_query_context
from harness.stats._effect import paired_effect

@pytest.mark.spec("HYDE-900")
@pytest.mark.parametrize("dataset", ["alpha", "beta"])
def test_claim(rag_check, dataset):
    rng = np.random.default_rng(len(dataset))
    b = rng.random(40)
    c = np.clip(b + rng.normal(0.1 if dataset == "alpha" else -0.2, 0.1, 40), 0, 1)
    ids = [f"{dataset}-q{i}" for i in range(40)]
    rag_check("HYDE-900", paired_effect(c, b), dataset=dataset,
          per_query=per_query_context(ids, b, c, texts={q: f"question <{q}>" for q in ids},
                                      outputs={q: {"hypothetical documents": f"a document for {q}"} for q in ids}))

@pytest.mark.spec("CALIB-900")
def test_self_check(rag_check):
    rag_check("CALIB-900", 0.05, dataset="cranfield")
"""


@pytest.fixture
def report(pytester):
    project = new_project(pytester, CATALOGUE)
    project.makepyfile(test_claims=TESTS)
    result = project.runpytest_subprocess("--report-dir", "out", "--spec-coverage", "off")
    assert (project.path / "out" / "index.html").is_file(), (result.stdout.str() + result.stderr.str())[-3000:]
    return project.path / "out"


def _effect(row: dict, entry: dict) -> str:
    """The effect cell's text: the value (and interval), then both arms' values where the claim compared two."""
    from harness.report.terminal import arms_text

    v = entry["value"]
    if not row["comparative"]:
        return f"{v:.4g}"
    lo, hi = entry["ci"]
    return f"{v:+.3g} [{lo:.3g}, {hi:.3g}]" + arms_text(entry)


def test_the_claims_table_a_browser_renders_is_results_json(report):
    results = json.loads((report / "results.json").read_text())
    dom = dump_dom(report / "index.html")
    shown = claim_rows(dom)
    expected = [{"claim": r["id"], "dataset": e["dataset"], "verdict": e["verdict"], "effect": _effect(r, e)}
                for r in results["specs"] if r["verdict"] != "not run" for e in r["datasets"]]
    assert sorted(shown, key=lambda r: (r["claim"], r["dataset"])) == sorted(
        expected, key=lambda r: (r["claim"], r["dataset"]))
    assert {r["verdict"] for r in shown} == {"supported", "refuted", "pass"}, shown
    # the technique family first, the self-check after it, the claim that did not run collapsed at the end
    assert dom.index('<h3 class="family">HyDE') < dom.index("Harness self-check: Calibration") < dom.index(
        "1 claim(s) not run in this tier")
    assert ready_ms(dom) is not None and ready_ms(dom) > 0


def test_a_claims_per_query_table_is_built_from_results_json(report):
    results = json.loads((report / "results.json").read_text())
    entry = next(e for r in results["specs"] if r["id"] == "HYDE-900" for e in r["datasets"] if e["dataset"] == "alpha")
    pq = entry["per_query"]
    dom = dump_dom(report / "index.html", fragment="claim-HYDE-900")
    rows = table_rows(dom, "pq")
    alpha = [r for r in rows if r[0].startswith("alpha-")]
    assert [r[0] for r in alpha] == pq["ids"] and len(rows) == 80
    for (qid, text, b, c, diff, outcome), eb, ec in zip(alpha, pq["baseline"], pq["candidate"]):
        assert text == f"question <{qid}>"
        assert float(b) == pytest.approx(eb, rel=1e-3, abs=1e-12) and float(c) == pytest.approx(ec, rel=1e-3, abs=1e-12)
        assert float(diff) == pytest.approx(ec - eb, rel=1e-3, abs=1e-4)
        assert outcome == ("improved" if ec - eb > 1e-12 else "degraded" if ec - eb < -1e-12 else "unchanged")
    best = pq["samples"][0]
    assert best["pick"] == "best" and f"a document for {best['id']}" in dom


# run after the page's own script, as a user's clicks would: sort the opened per-query table by its difference
# column (once: ascending, twice: descending), and note how wide the page is against the window
DRIVER = """<script>
var th = document.querySelectorAll("table.pq thead th")[4];
th.click(); th.click();
document.documentElement.setAttribute("data-scroll-width", document.documentElement.scrollWidth);
document.documentElement.setAttribute("data-window-width", window.innerWidth);
</script></body>"""


def test_a_click_sorts_the_per_query_table_and_nothing_runs_past_the_window(report, tmp_path):
    page = tmp_path / "driven.html"
    page.write_text((report / "index.html").read_text().replace("</body>", DRIVER))
    dom = dump_dom(page, fragment="claim-HYDE-900")
    diffs = [float(r[4]) for r in table_rows(dom, "pq")[:40]]
    assert diffs == sorted(diffs, reverse=True) and diffs[0] > diffs[-1], diffs
    assert 'data-dir="desc"' in dom
    width = {k: int(v) for k, v in re.findall(r'data-(scroll|window)-width="(\d+)"', dom)}
    assert width["scroll"] <= width["window"] == 1280, width

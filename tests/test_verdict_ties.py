"""Issue 40, item 4: a comparative claim whose pairs all tie (HYDE-003 on a user's 12 queries: Recall@10 0.875 for
dense and for HyDE, +0/=12/−0) gets the ties interval docs/verdicts.md promises and an MDE above 0; it reads
inconclusive, not untestable, with a reason that names only the measurement; and the terminal table and the
report's first screen show both arms' values beside the verdict."""
from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from harness.catalogue import load_catalogue
from harness.report.collector import Collector, jsonable
from harness.report.per_query import per_query_context
from harness.stats._effect import Effect, paired_effect
from harness.stats._verdict import Decision, decide

pytest_plugins = ["pytester"]
CI = Decision("ci")
# twelve queries, Recall@10 1.0 on nine and 0.5 on three, the same for both arms: mean (9 + 1.5) / 12 = 0.875
RECALL = np.array([1.0] * 9 + [0.5] * 3)
# by hand: p = 1 - 0.025^(1/12) = 0.2646485 (Clopper-Pearson, 0 of 12 differ); t(0.975, 11) = 2.2009852,
# t(0.8, 11) = 0.8755300
P12, T975, T80 = 1 - 0.025 ** (1 / 12), 2.2009852, 0.8755300


def _tied() -> Effect:
    return paired_effect(RECALL, RECALL, relative=True, seed=1)


@pytest.mark.unit
def test_all_ties_relative_effect_gets_the_ties_interval_over_the_baseline_mean():
    """The mean difference lies within ±p·1 = ±0.2646 (docs/verdicts.md, *All pairs tied*); over the baseline mean 0.875 the
    relative effect within ±0.2646/0.875 = ±0.30245, cut above at what Recall@10 can still gain over 0.875:
    1/0.875 − 1 = 1/7 = 0.142857. Its SD is the one that interval implies: 0.30245·√12 / 2.2009852 = 0.47603."""
    e = _tied()
    assert (e.estimate, e.n, e.interval_method) == (0.0, 12, "ties")
    assert (e.improved, e.unchanged, e.degraded) == (0, 12, 0)
    assert P12 == pytest.approx(0.2646485, abs=1e-7)
    assert e.ci == pytest.approx((-0.3024554, 0.1428571), abs=1e-6)
    assert e.ci[0] < 0.0 < e.ci[1], "not the degenerate [0, 0]"
    assert e.sd == pytest.approx(0.3024554 * math.sqrt(12) / T975, abs=1e-6)
    assert (e.baseline_mean, e.candidate_mean) == (0.875, 0.875)


@pytest.mark.unit
def test_all_ties_mde_is_not_zero():
    """MDE = (t(0.975, 11) + t(0.8, 11))·sd/√12 = half·(1 + 0.87553/2.20099) = 0.30245·1.39779 = 0.42277 (it was 0
    with the sd of 0 the tied sample gives). A tied mean difference over 30 pairs: 0.11570·(1 + 0.85419/2.04523)
    = 0.16403."""
    v = decide(_tied(), ">=", 0.05, CI)
    assert v.mde == pytest.approx(0.3024554 * (1 + T80 / T975), abs=1e-5)
    assert v.mde == pytest.approx(0.42277, abs=1e-5)
    assert v.queries_needed is not None and v.queries_needed > 12
    diff = paired_effect(np.full(30, 0.4), np.full(30, 0.4))
    assert decide(diff, ">=", 0.05, CI).mde == pytest.approx(0.16403, abs=1e-5)


@pytest.mark.unit
def test_all_ties_reads_inconclusive_not_untestable_with_a_reason_that_names_no_judge():
    """[−0.302, 0.143] straddles +5%: inconclusive. The claim was measured (12 pairs), so it is not untestable, and
    no judge took part in a retrieval claim."""
    v = decide(_tied(), ">=", 0.05, CI)
    assert v.verdict == "inconclusive" and not v.untestable
    assert "judge" not in v.reason and "untestable" not in v.reason
    assert v.reason.startswith("all 12 pairs tied") and "26.5%" in v.reason
    assert "[-0.3025, 0.1429] straddles 0.05" in v.reason


@pytest.mark.unit
def test_untestable_only_where_nothing_could_be_measured():
    """No pairs: untestable. Equal non-zero differences (a zero-width interval from a sample that was measured):
    inconclusive, not untestable, and the reason presumes neither a technique nor a judge."""
    none = decide(Effect("difference", float("nan"), (float("nan"),) * 2, 0, float("nan")), ">=", 0.0, CI)
    assert none.verdict == "inconclusive" and none.untestable
    same = paired_effect(np.full(10, 3.0), np.full(10, 2.0), bounds=None)
    v = decide(same, ">=", 0.5, CI)
    assert v.verdict == "inconclusive" and not v.untestable and "degenerate" in v.reason
    assert "judge" not in v.reason and "technique" not in v.reason


# HYDE-003 as a user's own catalogue states it for their corpus (no catalogue dataset list of its own)
CATALOGUE = """
specs:
  - id: HYDE-USER-1
    title: HyDE retrieval improves recall vs the raw query
    marker: integration
    decision: ci
    metric: relative_improvement(recall@10, hyde vs dense)
    comparator: ">="
    threshold: 0.05
    source: demo
"""


@pytest.fixture
def demo_catalogue(tmp_path):
    path = tmp_path / "specs.yaml"
    path.write_text(CATALOGUE)
    return load_catalogue([path])


def _record(s, effect: Effect, context: dict) -> dict:
    """A check's record as `harness.plugin.fixtures.check` writes it, through JSON as the report reads it."""
    v = decide(effect, s.comparator, s.threshold, s.decision)
    ctx = {**context, "n": effect.n, "ci": list(effect.ci), "p_value": effect.p_value}
    rec = {"kind": "check", "spec_id": s.id, "metric": s.metric, "comparator": s.comparator,
           "threshold": s.threshold, "tier": s.marker, "test_tier": s.marker, "decision": dataclasses.asdict(s.decision),
           "nodeid": f"t.py::{s.id}", "value": effect.estimate, "verdict": v.verdict,
           "effect": effect.as_context(), "decided": v.as_context(), "context": ctx}
    return json.loads(json.dumps(jsonable(rec)))


def _hyde_rows(catalogue) -> list[dict]:
    from harness.report.summary import spec_rows

    ids = [f"q{i}" for i in range(12)]
    ctx = {"dataset": "mine", "technique": "hyde", "model": "local/m", "available": 12,
           "per_query": per_query_context(ids, RECALL.tolist(), RECALL.tolist(), baseline_label="dense Recall@10",
                                          candidate_label="hyde Recall@10")}
    return spec_rows(Collector(records=[_record(catalogue["HYDE-USER-1"], _tied(), ctx)]), catalogue)


ARMS = "dense Recall@10 0.875 → hyde Recall@10 0.875"


@pytest.mark.unit
def test_the_terminal_summary_shows_both_arms_and_an_mde_above_zero(demo_catalogue):
    from harness.report.terminal import inconclusive_lines, summary_lines

    rows = _hyde_rows(demo_catalogue)
    (line,) = [x for x in summary_lines(rows) if x.startswith("HYDE-USER-1 ")]
    assert "inconclusive" in line and f"arms: {ARMS}" in line, line
    assert "[-0.302, 0.143]" in line and "q±=+0/=12/-0" in line
    (warn,) = inconclusive_lines(rows)
    assert warn.startswith(f"HYDE-USER-1 on mine: inconclusive ({ARMS}) — all 12 pairs tied"), warn
    assert "MDE at n=12: 0.423" in warn, warn
    assert "untestable" not in warn and "judge" not in warn


@pytest.mark.unit
def test_the_reports_first_screen_shows_both_arms(demo_catalogue):
    from harness.report.html.claims import claims_first_screen
    from harness.report.html.tables import _spec_table

    rows = _hyde_rows(demo_catalogue)
    html = claims_first_screen(rows)
    row = html[html.index('data-claim="HYDE-USER-1"'):]
    row = row[:row.index("</tr>")]
    assert ARMS in row and "+0 [-0.302, 0.143]" in row, row
    assert ARMS in _spec_table(rows) and "cannot be tested" not in _spec_table(rows)


@pytest.mark.unit
def test_arms_without_an_effects_means_come_from_the_checks_context():
    """A check whose Effect carries no means (an Effect built by hand) but whose context records both arms (CRAG's
    `baseline_accuracy`/`candidate_accuracy`, E2–E4's arm names in `baseline`/`candidate`)."""
    from harness.report.summary import arms_of
    from harness.report.terminal import arms_text

    bare = {"effect": {"baseline_mean": None, "candidate_mean": None},
            "context": {"baseline_accuracy": 0.4, "candidate_accuracy": 0.55, "technique": "crag"}}
    assert arms_text({"arms": arms_of(bare)}) == "baseline 0.4 → crag 0.55"
    named = {"effect": {"baseline_mean": 0.2, "candidate_mean": 0.1}, "context": {"baseline": "e2", "candidate": "e4"}}
    assert arms_text({"arms": arms_of(named)}) == "e2 0.2 → e4 0.1"
    assert arms_of({"effect": {"kind": "proportion", "baseline_mean": None}, "context": {}}) is None


PLUGIN_CATALOGUE = """
specs:
  - id: TIES-001
    title: A technique improves recall over dense retrieval
    marker: integration
    decision: ci
    metric: relative_improvement(recall@10, hyde vs dense)
    comparator: ">="
    threshold: 0.05
    source: demo
"""


@pytest.mark.integration
def test_a_tied_claim_through_the_plugin_reads_what_happened(pytester):
    """The whole path: the `check` fixture, the terminal table and the HTML report's first screen."""
    from tests.pytester_kit import new_project

    project = new_project(pytester, PLUGIN_CATALOGUE)
    project.makepyfile(test_ties="""
        import pytest
        from harness.stats._effect import paired_effect

        @pytest.mark.integration
        @pytest.mark.spec("TIES-001")
        def test_recall(rag_check):
            r = [1.0] * 9 + [0.5] * 3
            rag_check("TIES-001", paired_effect(r, r, relative=True), dataset="mine", technique="hyde")
""")
    result = project.runpytest_subprocess("--report-dir", "out", "--spec-coverage", "off")
    out = result.stdout.str()
    assert result.ret == 0, out[-3000:]
    (line,) = [x for x in out.splitlines() if x.startswith("TIES-001  ")]
    assert "inconclusive" in line and "arms: baseline 0.875 → hyde 0.875" in line and "[-0.302, 0.143]" in line, line
    (warn,) = [x for x in out.splitlines() if x.startswith("TIES-001 on mine: inconclusive (")]
    assert "MDE at n=12: 0.423" in warn and "untestable" not in warn and "judge" not in warn, warn
    html = (pytester.path / "out" / "index.html").read_text()
    first = html[html.index('data-claim="TIES-001"'):]
    assert "baseline 0.875 → hyde 0.875" in first[:first.index("</tr>")]

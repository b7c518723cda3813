"""The budgeted 15-minute main job against the whole protocol, on recorded per-query outcomes (issue #37: "the two
agree on every claim both decided").

`fixtures/sequential/budgeted-vs-whole.json` (`scripts/budgeted_vs_whole.py`; its `note` names the runs) holds a
real main job under `--budget` and `--budget none` run after it on the same clone, so the whole protocol replays
what the budgeted run drew and draws the rest. Each run's claims that record their outcomes (`harness.recorded`)
are decided again here through the plugin's own rule:

- each run's looks are reproduced from its own recorded outcomes (the replay is the claim's computation);
- the budgeted run is the whole run cut where its budget stopped it: the whole run's outcomes cut at the budgeted
  run's looks give the budgeted run's looks, to the last digit;
- cut at any earlier look, as any budget could, a claim of the whole run reads its own verdict or none, never
  another;
- every claim the two runs decided, with outcomes or not, reads the same in both.
"""
from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from harness.budget import DECIDED_VERDICTS
from harness.catalogue import PROTOCOL_CATALOGUE, load_catalogue
from harness.config import SequentialSettings
from harness.recorded import replay_check
from harness.stats.sequential import DECIDED

pytestmark = pytest.mark.unit
RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "sequential" / "budgeted-vs-whole.json"
SETTINGS = SequentialSettings()


@cache
def _runs() -> dict:
    return json.loads(RECORDED.read_text())


@cache
def _spec(spec_id: str):
    return load_catalogue([PROTOCOL_CATALOGUE])[spec_id]


def _key(check: dict) -> str:
    return f"{check['spec_id']}|{check['context'].get('dataset') or ''}"


def _looks(outcome) -> list[tuple]:
    return [(lk.n, lk.estimate, list(lk.ci), lk.verdict) for lk in outcome.looks]


def _recorded_looks(check: dict) -> list[tuple]:
    return [(h["n"], h["estimate"], h["ci"], h["verdict"]) for h in check["context"]["sequential"]["history"]]


def _checks(run: str) -> list[dict]:
    return _runs()[run]["checks"]


@pytest.mark.parametrize("run", ["budgeted", "whole"])
def test_each_run_s_looks_are_reproduced_from_its_recorded_outcomes(run):
    checks = _checks(run)
    assert checks, f"the {run} run recorded no outcomes"
    for check in checks:
        out = replay_check(check, _spec(check["spec_id"]), SETTINGS)
        assert _looks(out) == _recorded_looks(check), _key(check)
        if out.verdict.verdict in DECIDED:
            assert check["verdict"] == out.verdict.verdict, _key(check)


def test_the_budgeted_run_is_the_whole_run_cut_where_its_budget_stopped_it():
    whole = {_key(c): c for c in _checks("whole")}
    compared = 0
    for check in _checks("budgeted"):
        taken = len(check["context"]["sequential"]["history"])
        cut = replay_check(whole[_key(check)], _spec(check["spec_id"]), SETTINGS, looks=taken)
        assert _looks(cut) == _recorded_looks(check), _key(check)
        compared += 1
    assert compared == len(_checks("budgeted"))


def test_the_two_runs_differ_only_where_the_budget_stopped_a_claim():
    """The comparison above tells the runs apart: the budget stopped at least one claim with recorded outcomes at
    an earlier look than the whole protocol took (two identical runs would pass every test above), and on the same
    draws a claim stops earlier in the budgeted run only where its row says the budget stopped it."""
    whole = {_key(c): c for c in _checks("whole")}
    shorter = {_key(c): c["context"]["sequential"] for c in _checks("budgeted")
               if len(c["context"]["sequential"]["history"]) < len(whole[_key(c)]["context"]["sequential"]["history"])}
    assert shorter, "the budget stopped no claim with outcomes before the whole run's last look"
    for key, sequential in shorter.items():
        assert sequential.get("budget") and "within the budget" in sequential.get("stopped", ""), key


def test_cut_at_any_look_a_claim_reads_its_own_verdict_or_none():
    for check in _checks("whole"):
        spec, taken = _spec(check["spec_id"]), len(check["context"]["sequential"]["history"])
        full = replay_check(check, spec, SETTINGS).verdict.verdict
        for k in range(1, taken + 1):
            cut = replay_check(check, spec, SETTINGS, looks=k).verdict.verdict
            assert cut == full or cut not in DECIDED, (_key(check), k, cut, full)


def test_every_claim_both_runs_decided_reads_the_same():
    runs = _runs()
    budgeted, whole = runs["budgeted"]["verdicts"], runs["whole"]["verdicts"]
    both = [k for k in budgeted if budgeted[k] in DECIDED_VERDICTS and whole.get(k) in DECIDED_VERDICTS]
    assert both, "no claim decided in both runs"
    assert {k: budgeted[k] for k in both} == {k: whole[k] for k in both}

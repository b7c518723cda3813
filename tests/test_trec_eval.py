"""`ragharness eval`: TREC run files scored with the harness's metrics equal pytrec_eval's figures; a run compared
with a baseline run gets the same paired statistics as the built-in comparisons."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.data.trec import read_trec_qrels, read_trec_run
from harness.metrics.runs import compare_runs, score_run
from harness.stats._effect import paired_effect

TREC = Path(__file__).resolve().parents[1] / "fixtures" / "trec"
RUN, BASE, QRELS = TREC / "sample-dense.run", TREC / "sample-bm25.run", TREC / "sample.qrels"


@pytest.mark.unit
def test_shipped_run_scores_equal_pytrec_eval():
    pytrec_eval = pytest.importorskip("pytrec_eval", reason="pip install pytrec-eval-terrier (the dev extra)")
    qrels, run = read_trec_qrels(QRELS), read_trec_run(RUN)
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recall_10", "recall_100", "map_cut_100"}).evaluate(run)
    top10 = {q: dict(sorted(d.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:10]) for q, d in run.items()}
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top10)
    means = score_run(RUN, QRELS).means
    for ours, theirs, table in (("nDCG@10", "ndcg_cut_10", ref), ("Recall@10", "recall_10", ref),
                                ("Recall@100", "recall_100", ref), ("MAP@100", "map_cut_100", ref),
                                ("MRR@10", "recip_rank", rr)):
        assert means[ours] == pytest.approx(np.mean([table[q][theirs] for q in sorted(qrels)]), abs=1e-12), ours


@pytest.mark.unit
def test_run_against_a_baseline_run_is_paired_per_query():
    effects = compare_runs(RUN, BASE, QRELS, ["nDCG@10"])
    a, b = score_run(RUN, QRELS, ["nDCG@10"]), score_run(BASE, QRELS, ["nDCG@10"])
    expected = paired_effect(a.per_query["nDCG@10"], b.per_query["nDCG@10"])
    assert effects["nDCG@10"].estimate == pytest.approx(expected.estimate)
    assert effects["nDCG@10"].ci == pytest.approx(expected.ci) and effects["nDCG@10"].n == 30


@pytest.mark.integration
def test_eval_command_as_a_user_runs_it(tmp_path):
    cmd = [sys.executable, "-m", "harness.cli", "eval", str(RUN), str(QRELS), "-m", "nDCG@10", "--baseline-run",
           str(BASE)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    mean = score_run(RUN, QRELS, ["nDCG@10"]).means["nDCG@10"]
    assert out.splitlines()[0] == "30 judged queries (0 missing from the run, each scored 0: the figures are " \
        "trec_eval -c's)" and f"nDCG@10      {mean:.4f}  baseline" in out
    bad = tmp_path / "bad.run"
    bad.write_text("Q1 Q0 D001 1 0.5 tag\nQ1 Q0 D002 2 high tag\n")
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "eval", str(bad), str(QRELS)], capture_output=True,
                          text=True)
    assert proc.returncode == 2 and "bad.run" in proc.stderr and "2" in proc.stderr and "score" in proc.stderr

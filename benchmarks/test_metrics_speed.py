"""Issue #29 item 6: `ragharness eval`'s metrics against pytrec_eval on 10,000 queries x 100 hits (nDCG@10,
Recall@10, Recall@100, MRR@10, MAP@100), timed in one run (best of 5 each, interleaved) end to end from the files and
on the parsed mappings alone, and equal to pytrec_eval's per-query values to 1e-12."""
from __future__ import annotations

import numpy as np
import pytest

from harness.data.trec import write_trec_qrels, write_trec_run
from harness.metrics import evaluate
from harness.metrics.runs import score_run
from harness.stats.latency import interleaved_best

pytestmark = [pytest.mark.benchmark, pytest.mark.selfcheck]  # the harness checking itself
MEASURES = ["nDCG@10", "Recall@10", "Recall@100", "MRR@10", "MAP@100"]
TREC = {"nDCG@10": "ndcg_cut_10", "Recall@10": "recall_10", "Recall@100": "recall_100", "MRR@10": "recip_rank",
        "MAP@100": "map_cut_100"}


def synthetic(seed: int = 0, queries: int = 10_000, hits: int = 100, docs: int = 50_000, decimals: int = 4):
    """A seeded run (scores to `decimals` places: at 4, about 1% of hits tie and fall to trec_eval's docid order)
    and graded qrels: 12 judgements per query (grades 0-3), 8 on retrieved documents and 4 on documents not
    retrieved."""
    rng = np.random.default_rng(seed)
    run, qrels = {}, {}
    for q in range(queries):
        ids = rng.choice(docs, hits + 4, replace=False)
        run[f"q{q}"] = {f"d{d}": float(s) for d, s in zip(ids[:hits], np.round(rng.random(hits), decimals))}
        judged = np.concatenate([ids[rng.choice(hits, 8, replace=False)], ids[hits:]])
        qrels[f"q{q}"] = {f"d{d}": int(g) for d, g in zip(judged, rng.integers(0, 4, len(judged)))}
    return qrels, run


def _theirs(pytrec_eval, qrels, run) -> dict[str, dict[str, float]]:
    """pytrec_eval's values; MRR@10 from its recip_rank (one pass): 1/rank when the first relevant rank is <= 10."""
    out = pytrec_eval.RelevanceEvaluator(qrels, set(TREC.values())).evaluate(run)
    for values in out.values():
        values["recip_rank"] = values["recip_rank"] if values["recip_rank"] >= 0.1 else 0.0
    return out


def test_metrics_as_fast_as_pytrec_eval_and_equal(tmp_path, rag_measure):
    pytrec_eval = pytest.importorskip("pytrec_eval", reason="pip install pytrec-eval-terrier (the dev extra)")
    qrels, run = synthetic()
    run_file, qrels_file = tmp_path / "synthetic.run", tmp_path / "synthetic.qrels"
    write_trec_run(run, run_file)
    write_trec_qrels(qrels, qrels_file)

    def pytrec_from_files():
        with run_file.open() as fr, qrels_file.open() as fq:
            return _theirs(pytrec_eval, pytrec_eval.parse_qrel(fq), pytrec_eval.parse_run(fr))

    ours, theirs = evaluate(qrels, run, MEASURES), _theirs(pytrec_eval, qrels, run)
    qids = sorted(qrels)
    worst = max(abs(ours[m][i] - theirs[q][TREC[m]]) for m in MEASURES for i, q in enumerate(qids))
    files = score_run(run_file, qrels_file, MEASURES).per_query
    assert all(np.array_equal(files[m], ours[m]) for m in MEASURES)
    assert worst <= 1e-12
    compute = interleaved_best(lambda: _theirs(pytrec_eval, qrels, run), lambda: evaluate(qrels, run, MEASURES), 5)
    end_to_end = interleaved_best(pytrec_from_files, lambda: score_run(run_file, qrels_file, MEASURES), 5)
    context = {"queries": len(qids), "hits_per_query": 100, "measures": MEASURES, "timing": "best of 5, interleaved",
               "max_abs_difference": worst}
    for name, (t_ref, t_ours) in {"compute": compute, "end_to_end": end_to_end}.items():
        rag_measure(f"metrics_vs_pytrec_eval_{name}_ratio", t_ours / t_ref, harness_s=t_ours, pytrec_eval_s=t_ref,
                **context)
    assert compute[1] <= compute[0], f"metrics alone: harness {compute[1]:.3f} s, pytrec_eval {compute[0]:.3f} s"
    assert end_to_end[1] <= end_to_end[0], \
        f"end to end: harness {end_to_end[1]:.3f} s, pytrec_eval {end_to_end[0]:.3f} s"

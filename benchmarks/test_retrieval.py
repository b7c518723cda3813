"""Retrieval backbone benchmarks (issue #8): dense / BM25 / hybrid quality per BEIR set, agreement
with pytrec_eval, LanceDB vs NumPy search latency, metric throughput, warm-cache re-runs."""
from __future__ import annotations

import time

import numpy as np
import pytest

from harness.data.trec import write_trec_qrels, write_trec_run
from harness.metrics import evaluate
from harness.metrics.runs import score_run
from harness.retrieval import Retriever

pytestmark = pytest.mark.benchmark
MEASURES = ["nDCG@10", "Recall@10", "Recall@100", "MRR@100", "MAP@100"]
TREC_NAMES = {"nDCG@10": "ndcg_cut_10", "Recall@10": "recall_10", "Recall@100": "recall_100",
              "MRR@100": "recip_rank", "MAP@100": "map_cut_100"}


def _run(retriever: Retriever, queries, k: int = 100) -> tuple[dict[str, dict[str, float]], float]:
    t0 = time.perf_counter()
    hits = retriever.retrieve_many([q.text for q in queries], k)
    seconds = time.perf_counter() - t0
    return {q.id: {h.id: h.score for h in hs} for q, hs in zip(queries, hits)}, seconds


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_retrieval_quality(rag_dataset_name, mode, rag_dataset, rag_dense_store, rag_embedder, rag_config, rag_measure):
    """Each run is also written as a TREC run file beside the qrels it was scored with (report_dir/runs/), and
    `ragharness eval` on them reproduces the figures recorded here exactly."""
    queries = list(rag_dataset.judged_queries().values())
    run, seconds = _run(Retriever(rag_dense_store, rag_embedder, mode), queries)
    scores = evaluate(rag_dataset.qrels, run, MEASURES)
    model = "bm25 (LanceDB FTS)" if mode == "bm25" else rag_embedder.name
    runs_dir = rag_config.harness.report_dir / "runs"
    run_file, qrels_file = runs_dir / f"{rag_dataset_name}-{mode}.run", runs_dir / f"{rag_dataset_name}.qrels"
    write_trec_run(run, run_file, tag=f"rag-harness-{mode}")
    write_trec_qrels(rag_dataset.qrels, qrels_file)
    assert score_run(run_file, qrels_file, MEASURES).means == {m: float(v.mean()) for m, v in scores.items()}
    for name, values in scores.items():
        rag_measure(name, float(values.mean()), technique=mode, dataset=rag_dataset_name, n=len(queries), model=model,
                run_file=str(run_file), qrels_file=str(qrels_file))
    rag_measure("search_seconds_per_query", seconds / len(queries), technique=mode, dataset=rag_dataset_name)
    rag_measure("index_seconds", rag_dense_store.last_stats.seconds, dataset=rag_dataset_name,
            encoded=rag_dense_store.last_stats.encoded, skipped=rag_dense_store.last_stats.skipped)
    assert scores["nDCG@10"].mean() > 0.0


@pytest.mark.selfcheck
@pytest.mark.spec("RETR-TREC-EVAL-AGREEMENT")
def test_dense_metrics_agree_with_pytrec_eval(rag_dataset_name, rag_dataset, rag_dense_retriever, rag_check):
    pytrec_eval = pytest.importorskip("pytrec_eval", reason="pip install pytrec-eval-terrier (the dev extra)")
    queries = list(rag_dataset.judged_queries().values())
    run, _ = _run(rag_dense_retriever, queries)
    ours = evaluate(rag_dataset.qrels, run, MEASURES)
    qrels = {q: rag_dataset.qrels[q] for q in run}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.10,100", "recip_rank", "map_cut.100"})
    # trec_eval reads the whole run for recip_rank; ours is cut at 100, which is all the run holds
    theirs = ref.evaluate(run)
    qids = sorted(rag_dataset.qrels)
    worst = max(abs(ours[m][i] - theirs[q][TREC_NAMES[m]]) for m in MEASURES for i, q in enumerate(qids))
    rag_check("RETR-TREC-EVAL-AGREEMENT", worst, dataset=rag_dataset_name, n=len(qids))


@pytest.mark.selfcheck
@pytest.mark.spec("RETR-SCIFACT-MTEB")
def test_scifact_reproduces_mteb(rag_beir_dataset, rag_embedder, rag_config, rag_check):
    from harness.retrieval.index.lancedb_store import LanceStore

    ds = rag_beir_dataset("scifact")
    h = rag_config.harness
    store = LanceStore(h.index_db("scifact"), "corpus", storage_options=h.index_storage_options)
    store.index(list(ds.corpus.values()), rag_embedder)
    run, _ = _run(Retriever(store, rag_embedder), list(ds.judged_queries().values()), k=10)
    ndcg = float(evaluate(ds.qrels, run, ["nDCG@10"])["nDCG@10"].mean())
    rag_check("RETR-SCIFACT-MTEB", abs(ndcg - 0.6451), value_ndcg10=ndcg, dataset="scifact", model=rag_embedder.name)


@pytest.mark.selfcheck
def test_lancedb_vs_numpy_top10(rag_dataset_name, rag_dataset, rag_dense_store, rag_embedder, benchmark, rag_measure):
    from harness.stats.latency import interleaved_ratio

    ids, vecs = rag_dense_store.vectors()
    queries = rag_embedder.encode([q.text for q in list(rag_dataset.judged_queries().values())[:50]])

    def numpy_top10(q):
        scores = vecs @ q
        top = np.argpartition(-scores, 10)[:10]
        return [ids[i] for i in top[np.argsort(-scores[top])]]

    def lance_top10(q):
        return [h.id for h in rag_dense_store.search_vector(q, 10)]

    same = np.mean([set(numpy_top10(q)) == set(lance_top10(q)) for q in queries])
    ratio = interleaved_ratio(numpy_top10, lance_top10, list(queries))
    rag_measure("lancedb_vs_numpy_top10_latency_ratio", ratio.median, dataset=rag_dataset_name, **ratio.as_context())
    rag_measure("lancedb_numpy_top10_agreement", float(same), dataset=rag_dataset_name)
    benchmark.pedantic(lance_top10, args=(queries[0],), rounds=20, iterations=1)
    assert same >= 0.98


@pytest.mark.selfcheck
def test_metric_throughput_10k_by_100(benchmark, rag_measure):
    rng = np.random.default_rng(0)
    docs = [f"d{i}" for i in range(5000)]
    qrels = {f"q{q}": {docs[j]: int(rng.integers(1, 4)) for j in rng.choice(5000, 10, replace=False)}
             for q in range(10_000)}
    run = {f"q{q}": [docs[j] for j in rng.choice(5000, 100, replace=False)] for q in range(10_000)}
    out = benchmark.pedantic(evaluate, args=(qrels, run, MEASURES), rounds=3, iterations=1)
    rag_measure("metrics_seconds_10k_queries_x_100_hits", benchmark.stats.stats.median, measures=len(MEASURES))
    assert len(out["nDCG@10"]) == 10_000


@pytest.fixture(scope="module")
def embedder_comparison(rag_beir_dataset, rag_config, tmp_path_factory):
    """Cranfield encoded cold by the float PyTorch model and by the int8 ONNX one (no vector cache), each
    searched exactly over its own vectors; documents/s and nDCG@10 for both, in one run. Model-independent of the
    LLM: cached by the content of the data, the model files, this code, the packages and the machine
    (harness.result_cache), so a run recomputes it only when one of those changes."""
    import inspect

    from harness import result_cache
    from harness.retrieval import embed
    from harness.retrieval.embed import ONNX_INT8_MINILM, make_embedder
    from harness.retrieval.index.lancedb_store import LanceStore

    ds = rag_beir_dataset("cranfield")
    docs = list(ds.corpus.values())
    queries = list(ds.judged_queries().values())

    def compute() -> dict:
        out = {}
        for name in ("all-MiniLM-L6-v2", ONNX_INT8_MINILM):
            emb = make_embedder(name).uncached()
            emb.encode([d.full_text for d in docs[:32]])  # warm-up: load and first-batch costs out of the rate
            t0 = time.perf_counter()
            vectors = emb.encode([d.full_text for d in docs])
            seconds = time.perf_counter() - t0
            store = LanceStore(tmp_path_factory.mktemp(name), "docs")
            store.upsert(docs, vectors)
            run, _ = _run(Retriever(store, emb, "dense"), queries)
            out[name] = {"docs_per_s": len(docs) / seconds, "seconds": seconds,
                         "ndcg10": float(evaluate(ds.qrels, run, ["nDCG@10"])["nDCG@10"].mean())}
        return out

    model_files = [p for p in (embed.packaged_model_path("all-MiniLM-L6-v2"), embed._onnx_int8_file()) if p]
    key = result_cache.cache_key(files=[rag_config.harness.dataset_path("cranfield"), *model_files, embed.__file__],
                                 code=inspect.getsource(compute),
                                 packages=("onnxruntime", "torch", "sentence-transformers", "lancedb"),
                                 machine=result_cache.machine())
    out, hit = result_cache.cached(rag_config.harness.cache_dir, "embedder-comparison", key, compute)
    return out, len(docs), len(queries), hit


@pytest.mark.selfcheck
@pytest.mark.spec("EMB-INT8-NDCG")
def test_int8_embedder_against_float(embedder_comparison, rag_check, rag_measure):
    from harness.retrieval.embed import ONNX_INT8_MINILM

    out, n_docs, n_queries, hit = embedder_comparison
    f, q = out["all-MiniLM-L6-v2"], out[ONNX_INT8_MINILM]
    cache = {"cached": hit} if hit else {}
    for name, r in out.items():
        rag_measure("embedding_docs_per_s", r["docs_per_s"], model=name, dataset="cranfield", docs=n_docs,
                seconds=r["seconds"], threads="onnxruntime / torch defaults on this machine", **cache)
        rag_measure("nDCG@10", r["ndcg10"], technique="dense", model=name, dataset="cranfield", n=n_queries)
    rag_check("EMB-INT8-NDCG", abs(q["ndcg10"] - f["ndcg10"]), dataset="cranfield", n=n_queries,
          ndcg10_float=f["ndcg10"], ndcg10_int8=q["ndcg10"], docs_per_s_float=f["docs_per_s"],
          docs_per_s_int8=q["docs_per_s"], speedup=q["docs_per_s"] / f["docs_per_s"],
          model=f"{ONNX_INT8_MINILM} vs all-MiniLM-L6-v2", **cache)


@pytest.mark.selfcheck
@pytest.mark.spec("ANN-VERDICTS-EQUAL")
def test_ann_keeps_the_retrieval_verdicts(rag_dataset_name, rag_dataset, rag_embedder, tmp_path_factory, rag_check, rag_measure):
    """The set indexed again with an IVF-PQ index (forced: these sets are below `ANN_MIN_ROWS`; the vectors come
    from the embedding cache) and tuned on a seeded sample of 50 of its queries; every judged query then searched
    exactly and through the index, and two paired claims decided on nDCG@10 under each."""
    import random

    from harness.retrieval.index.lancedb_store import LanceStore
    from harness.stats._effect import paired_effect
    from harness.stats._verdict import Decision, decide

    store = LanceStore(tmp_path_factory.mktemp(f"ann-{rag_dataset_name}"), "corpus", ann_threshold=0)
    store.index(list(rag_dataset.corpus.values()), rag_embedder)
    queries = list(rag_dataset.judged_queries().values())
    vectors = rag_embedder.encode([q.text for q in queries])
    sample = random.Random(0).sample(range(len(queries)), min(50, len(queries)))
    tuned = store.tune_ann(vectors[sample])
    texts = [q.text for q in queries]

    def ndcg(hits):
        return evaluate(rag_dataset.qrels, {q.id: {h.id: h.score for h in hs} for q, hs in zip(queries, hits)},
                        ["nDCG@10"])["nDCG@10"]

    bm25 = ndcg([store.search_text(t, 100) for t in texts])
    verdicts, figures = {}, {}
    for search, exact in (("exact", True), ("ann", False)):
        dense = ndcg(store.search_vectors(vectors, 100, exact=exact))
        hybrid = ndcg(store.search_hybrid_many(texts, vectors, 100, exact=exact))
        figures[search] = {"dense": float(dense.mean()), "hybrid": float(hybrid.mean()), "bm25": float(bm25.mean())}
        for claim, (a, b) in {"hybrid > dense": (hybrid, dense), "dense > bm25": (dense, bm25)}.items():
            verdicts.setdefault(claim, {})[search] = decide(paired_effect(a, b, seed=1), ">", 0.0,
                                                          Decision(rule="ci")).verdict
    for search, figs in figures.items():
        for mode, value in figs.items():
            rag_measure("nDCG@10", value, technique=mode, dataset=rag_dataset_name, search=search, n=len(queries),
                    **(store.ann_context() if search == "ann" and mode != "bm25" else {}))
    differ = sum(v["exact"] != v["ann"] for v in verdicts.values())
    rag_check("ANN-VERDICTS-EQUAL", differ, dataset=rag_dataset_name, verdicts=verdicts, ndcg10=figures, n=len(queries),
          **store.ann_context(), tried=tuned.tried)

"""Negative controls for the E2/E3/E4 experiments: services, indexing, query inputs, chunk metadata and generation."""
from __future__ import annotations

from typing import Any, Callable

from harness.plugin.controls.registry import control, replace_everywhere


@control("e2e4-services-ignore-given-llm", breaks="the runner answers with its dry-run model whatever LLM it is given")
def _e2e4_ignore_llm(mp: Any) -> None:
    from harness import runner

    orig = runner.build_services
    mp.setattr(runner, "build_services", lambda inputs, **kw: orig(inputs, **{**kw, "dry_run": True}))


@control("e2e4-index-built-lazily", breaks="the KB is indexed only when the first query arrives")
def _e2e4_lazy(mp: Any) -> None:
    import logging

    from harness import runner
    from harness.retrieval.index.lancedb_store import IndexStats
    from harness.techniques.e2e4.pipelines import Experiment

    orig_index, orig_run, deferred = runner.index_kb, Experiment.run, []

    def index_later(inputs, store, embedder, **kw):
        deferred.append((inputs, store, embedder, kw))
        return IndexStats(rows=0, encoded=0, skipped=True, seconds=0.0, ann_index=False)

    def run(self, q):
        while deferred:
            inputs, store, embedder, kw = deferred.pop()
            stats = orig_index(inputs, store, embedder, **kw)
            logging.getLogger(runner.LOG_NAME).info("Indexed %d chunks in %.1fs (on first query)", stats.rows,
                                                       stats.seconds)
        return orig_run(self, q)

    mp.setattr(runner, "index_kb", index_later)
    mp.setattr(Experiment, "run", run)


@control("queries-schema-unchecked", breaks="query rows are not validated (an unknown query_type passes)")
def _schema_off(mp: Any) -> None:
    from harness.data import experiment

    def load(path, *, strict=True, skips=None):
        import json

        rows = [json.loads(ln) for ln in open(path, encoding="utf-8") if ln.strip().startswith("{") and ln.strip().endswith("}")]
        return [experiment.QueryInput.model_construct(**r) for r in rows]

    replace_everywhere(mp, experiment.load_queries_jsonl, load)


@control("query-types-not-identified", breaks="every query is labelled 'direct' whatever its type")
def _types_off(mp: Any) -> None:
    from harness.data import experiment

    orig = experiment.load_experiment_inputs

    def load(kb_dir, *, strict=True):
        inputs = orig(kb_dir, strict=strict)
        inputs.queries = [q.model_copy(update={"query_type": "direct"}) for q in inputs.queries]
        return inputs

    replace_everywhere(mp, orig, load)


def _edit_chunk_metadata(mp: Any, edit: Callable[[dict[str, Any]], None]) -> None:
    """Patch `chunk_record` so that `edit` rewrites each written chunk's metadata."""
    from harness.techniques.e2e4 import pipelines as e2e4

    orig = e2e4.chunk_record

    def record(h):
        rec = orig(h)
        edit(rec["metadata"])
        return rec

    replace_everywhere(mp, orig, record)


@control("chunks-lose-metadata", breaks="result chunks are written without their section")
def _chunk_meta(mp: Any) -> None:
    _edit_chunk_metadata(mp, lambda meta: meta.update(section=""))


@control("chunk-metadata-wrong-file", breaks="result chunks name the page listed before their own")
def _chunk_file(mp: Any) -> None:
    _edit_chunk_metadata(mp, lambda meta: meta.update(
        filename="electronics_01.md" if meta["filename"] != "electronics_01.md" else "furniture_01.md"))


@control("e2-generation-returns-empty", breaks="every fifth E2 answer is empty")
def _e2_empty(mp: Any) -> None:
    from harness.techniques.e2e4.pipelines import Experiment

    orig = Experiment.generate
    calls = {"n": 0}

    def generate(self, query, hits, trace=None):
        calls["n"] += 1
        answer, reasoning, structured = orig(self, query, hits, trace)
        return ("" if calls["n"] % 5 == 0 else answer), reasoning, structured

    mp.setattr(Experiment, "generate", generate)


@control("e4-discards-reasoning", breaks="E4 keeps the answer and drops the reasoning steps")
def _e4_no_reasoning(mp: Any) -> None:
    from harness.techniques.e2e4.pipelines import E4Reasoning

    orig = E4Reasoning.generate

    def generate(self, query, hits, trace=None):
        answer, _, structured = orig(self, query, hits, trace)
        return answer, None, structured

    mp.setattr(E4Reasoning, "generate", generate)


@control("retrieval-order-random", breaks="retrieved chunks come back in an unseeded random order")
def _random_order(mp: Any) -> None:
    import random

    from harness.techniques.e2e4.pipelines import E2Standard

    orig = E2Standard.retrieve

    def retrieve(self, query):
        hits, ms, rr = orig(self, query)
        hits = list(hits)
        random.SystemRandom().shuffle(hits)
        return hits, ms, rr

    mp.setattr(E2Standard, "retrieve", retrieve)


@control("e2e4-llm-fails-every-fourth", breaks="every fourth answer call of E2/E3/E4 fails for good")
def _e2e4_llm_fails(mp: Any) -> None:
    from harness.llm.client import LLMError
    from harness.techniques.e2e4.pipelines import Experiment

    orig, calls = Experiment.generate, {"n": 0}

    def generate(self, query, hits, trace=None):
        calls["n"] += 1
        if calls["n"] % 4 == 0:
            raise LLMError("negative control: the model failed after retries")
        return orig(self, query, hits, trace)

    mp.setattr(Experiment, "generate", generate)


@control("e3-answers-without-context", breaks="E3 generates from no sources (its reranked chunks are retrieved, not given)")
def _e3_blind(mp: Any) -> None:
    from harness.techniques.e2e4 import pipelines as e2e4

    mp.setattr(e2e4.E3Filtered, "generate",
               lambda self, query, hits, trace=None: e2e4.Experiment.generate(self, query, [], trace))


@control("e4-answers-without-context", breaks="E4 generates from no sources (its reranked chunks are retrieved, not given)")
def _e4_blind(mp: Any) -> None:
    from harness.techniques.e2e4 import pipelines as e2e4

    orig = e2e4.E4Reasoning.generate
    mp.setattr(e2e4.E4Reasoning, "generate", lambda self, query, hits, trace=None: orig(self, query, [], trace))

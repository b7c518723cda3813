"""The E2-E4 experiment runner (FR1-FR10): crash-safe JSONL results, resume, overwrite, dry run,
file-only logging, and transient / permanent / critical failure handling."""
from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from harness.data.experiment import ExperimentInputs, QueryInput, first_of_each_type, load_experiment_inputs
from harness.retrieval.index.lancedb_store import LanceStore
from harness.llm.client import FatalModelError, LLMClient, LLMError
from harness.llm.spend import BudgetExhausted
from harness.parallel import ordered_map
from harness.progress import progress
from harness.config import HarnessConfig
from harness.retrieval import Retriever
from harness.techniques.e2e4.pipelines import EXPERIMENTS, chunk_record, dry_run_responder, index_kb
from harness.techniques._registry import Services, build_technique
from harness.types import Query

LOG_NAME = "rag_harness.e2e4"
TECHNIQUE_OF = {"e2": "e2-standard", "e3": "e3-filtered", "e4": "e4-reasoning"}  # experiment -> registered name
DRY_RUN_MODEL = "scripted/e2e4-dry-run"  # the model a dry run records (its LLM's label)
REQUIRED = ("query_id", "experiment", "query", "retrieved_chunks", "llm_answer", "ground_truth", "context_reference",
            "metadata", "retrieval_time_ms", "llm_time_ms", "total_time_ms", "model", "dry_run")


class RunHalted(RuntimeError):
    """A critical failure (invalid API key, vector store failure): the run stops with this message."""


@dataclass
class RunSummary:
    written: dict[str, int] = field(default_factory=dict)
    skipped_done: dict[str, int] = field(default_factory=dict)
    failed: dict[str, list[str]] = field(default_factory=dict)
    empty: dict[str, list[str]] = field(default_factory=dict)  # of `failed`: the model's answer was empty
    index_seconds: float = 0.0
    chunks: int = 0
    seconds: float = 0.0
    # the run's cost cap stopped it: results not attempted (resume with a larger --max-cost to finish them)
    budget_stopped: bool = False
    not_started: int = 0


def file_logger(log_dir: str | Path) -> logging.Logger:
    """`logs/e2_to_e4.log`, file only (no console handlers), with timestamps and levels."""
    path = Path(log_dir) / "e2_to_e4.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    log = logging.getLogger(LOG_NAME)
    log.setLevel(logging.DEBUG)
    log.propagate = False
    for h in list(log.handlers):
        log.removeHandler(h)
        h.close()
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log.addHandler(handler)
    return log


def completed_ids(path: Path) -> set[str]:
    """Query ids already in a results file. A torn last line (a crash mid-write) is cut off first,
    so nothing half-written survives and that query is simply redone."""
    if not path.exists():
        return set()
    data = path.read_bytes()
    good_end, ids = 0, set()
    pos = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        if nl < 0:
            break
        line = data[pos:nl]
        try:
            ids.add(json.loads(line)["query_id"])
        except (ValueError, KeyError):
            break
        pos = good_end = nl + 1
    if good_end < len(data):
        with path.open("r+b") as fh:
            fh.truncate(good_end)
    return ids


def append_result(fh, row: dict[str, Any]) -> None:
    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    fh.flush()
    os.fsync(fh.fileno())


def _critical(err: BaseException) -> bool:
    text = f"{type(err).__name__} {err}".lower()
    return getattr(err, "status_code", None) in (401, 403) or "authentication" in text or "api key" in text


def build_services(inputs: ExperimentInputs, *, llm: LLMClient | None, model: str, dry_run: bool, db_uri: str | Path,
                   overwrite: bool, embedder=None, reranker=None, log: logging.Logger,
                   config: HarnessConfig | None = None) -> tuple[Services, Any]:
    """FR1/FR2: initialise embedder, reranker, LLM and the vector store, and index the KB. The embedder and
    reranker are the configuration's (`harness.embedder`, `harness.reranker`) unless given."""
    config = config or HarnessConfig()
    if dry_run:
        from harness.retrieval.embed import HashingEmbedder
        from harness.llm.scripted import register
        from harness.retrieval.rerank import SentenceMaxSimReranker

        embedder = embedder or HashingEmbedder(384)
        reranker = reranker or SentenceMaxSimReranker(embedder, sentence_weight=0.0)
        llm = LLMClient(register("e2e4-dry-run", dry_run_responder()), label=DRY_RUN_MODEL)
        model = DRY_RUN_MODEL
    else:
        if llm is None:
            raise RunHalted("no LLM configured: pass --model (a litellm model string) or use --dry-run")
        if embedder is None:
            from harness.retrieval.embed import make_embedder

            embedder = make_embedder(config.harness.embedder, config.harness.cache_dir)
        if reranker is None:
            from harness.retrieval.rerank import make_reranker

            reranker = make_reranker(config.harness.reranker, embedder)
    from harness.retrieval.embed import RetryingEmbedder

    embedder = RetryingEmbedder(embedder, on_retry=lambda exc, n: log.warning("embedding batch failed (attempt %d), "
                                                                               "retrying: %s", n, exc))
    log.info("config: model=%s dry_run=%s embedder=%s reranker=%s db=%s", model, dry_run,
             getattr(embedder, "name", "?"), getattr(reranker, "name", "?"), db_uri)
    try:
        store = LanceStore(db_uri, "kb_chunks")
        stats = index_kb(inputs, store, embedder, overwrite=overwrite)
    except Exception as exc:  # noqa: BLE001 - a broken vector store halts the run
        log.critical("vector store failure: %s", exc, exc_info=True)
        raise RunHalted(f"vector store failure at {db_uri}: {exc}") from exc
    log.info("Indexed %d chunks in %.1fs (skipped=%s, encoded=%d)", stats.rows, stats.seconds, stats.skipped,
             stats.encoded)
    return Services(config, retriever=Retriever(store, embedder), embedder=embedder, reranker=reranker, llm=llm), stats


def run_experiments(kb_dir: str | Path, out_dir: str | Path, *, experiments: Sequence[str] = ("e2", "e3", "e4"),
                    dry_run: bool = False, overwrite: bool = False, llm: LLMClient | None = None, model: str = "",
                    log_dir: str | Path = "logs", db_uri: str | Path | None = None, embedder=None, reranker=None,
                    limit: int | None = None, config: HarnessConfig | None = None, concurrency: int = 1) -> RunSummary:
    """Run the experiments over every query, appending one fsync'ed JSONL line per result. With `concurrency`
    > 1 the experiments of a query run side by side and that many (query, experiment) tasks are in flight;
    lines then land in completion order (resume reads ids, not positions). `limit` runs the first `limit`
    queries taking each query type in turn (`first_of_each_type`)."""
    run = ExperimentRun(kb_dir, out_dir, experiments=experiments, dry_run=dry_run, overwrite=overwrite, llm=llm,
                        model=model, log_dir=log_dir, db_uri=db_uri, embedder=embedder, reranker=reranker,
                        config=config, concurrency=concurrency)
    queries = first_of_each_type(run.queries, limit)
    run.log_selection(queries)
    return run.run(queries)


class ExperimentRun:
    """The experiments over a KB, set up once (inputs, services, index, output files) and run over any queries of
    it, in as many calls as wanted (`run`): a study drawn in looks (harness.e2e4_study) runs each look's new
    queries, and the summary adds up. A query already in a results file (a resumed run) is skipped."""

    def __init__(self, kb_dir: str | Path, out_dir: str | Path, *, experiments: Sequence[str] = ("e2", "e3", "e4"),
                 dry_run: bool = False, overwrite: bool = False, llm: LLMClient | None = None, model: str = "",
                 log_dir: str | Path = "logs", db_uri: str | Path | None = None, embedder=None, reranker=None,
                 config: HarnessConfig | None = None, concurrency: int = 1):
        self.log = log = file_logger(log_dir)
        self.t_start = time.perf_counter()
        self.out = out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        unknown = [e for e in experiments if e not in EXPERIMENTS]
        if unknown:
            raise RunHalted(f"unknown experiment(s) {unknown}; known: {sorted(EXPERIMENTS)}")
        self.experiments, self.concurrency, self.dry_run = list(experiments), concurrency, dry_run
        inputs = load_experiment_inputs(kb_dir, strict=False)
        for err in inputs.skipped.errors:
            log.error("skipping malformed query: %s", err)
        self.kb_dir, self.queries = kb_dir, list(inputs.queries)
        services, stats = build_services(inputs, llm=llm, model=model, dry_run=dry_run,
                                         db_uri=db_uri or out / ".lancedb", overwrite=overwrite,
                                         embedder=embedder, reranker=reranker, log=log, config=config)
        self.services = services
        self.summary = RunSummary(index_seconds=stats.seconds, chunks=stats.rows)
        # the model the rows record: the dry-run model where build_services answered with it, else the one given
        self.model = DRY_RUN_MODEL if getattr(services.llm, "label", None) == DRY_RUN_MODEL else model
        self.techniques: dict[str, Any] = {}
        self.paths: dict[str, Path] = {}
        self.done_by: dict[str, set[str]] = {}
        for name in experiments:
            self.techniques[name] = build_technique(TECHNIQUE_OF.get(name, name), services)
            path = self.paths[name] = out / EXPERIMENTS[name].output
            if overwrite and path.exists():
                path.unlink()
            self.done_by[name] = completed_ids(path)
            self.summary.written[name], self.summary.failed[name], self.summary.empty[name] = 0, [], []
            self.summary.skipped_done[name] = 0
        # the API's rate window is resumable state too: read (after the results, so a resume waiting on a killed run
        # reads what it sent last) and kept beside them, the requests the killed run sent still count
        carry = getattr(services.llm, "carry_rate_windows", None)
        if carry is not None:
            carried = carry(out)
            if carried:
                log.info("rate window: %d request(s)/token slot(s) of an earlier run still count", carried)

    def log_selection(self, queries: Sequence[QueryInput]) -> None:
        counts: dict[str, int] = {}
        for q in queries:
            counts[q.query_type] = counts.get(q.query_type, 0) + 1
        self.log.info("Loaded %d queries %s from %s", len(queries), counts, self.kb_dir)

    def run(self, queries: Sequence[QueryInput], *, stage: str = "") -> RunSummary:
        """Run every experiment over `queries` (those a results file already has skipped), query-major: the
        pipelines of one query side by side, a bounded window of queries in flight. Returns the summary of every
        call so far; a critical failure raises `RunHalted` after the results already written are kept. `stage`
        adds to the progress line's name."""
        log, summary, experiments, done_by = self.log, self.summary, self.experiments, self.done_by
        todo: list[tuple[int, QueryInput, str]] = []
        for name in experiments:
            summary.skipped_done[name] += sum(q.query_id in done_by[name] for q in queries)
            for q in queries:
                if q.query_id in done_by[name]:
                    log.debug("%s: skip %s (already done)", name, q.query_id)
        for i, q in enumerate(queries, 1):
            for name in experiments:
                if q.query_id not in done_by[name]:
                    todo.append((i, q, name))
        files = {name: self.paths[name].open("a", encoding="utf-8") for name in experiments}
        lock = threading.Lock()
        halted: list[RunHalted] = []
        budget: list[BudgetExhausted] = []
        bar = progress(f"{'+'.join(experiments)} study{stage}", len(todo))
        model, dry_run, techniques = self.model, self.dry_run, self.techniques

        def one(task: tuple[int, QueryInput, str]) -> None:
            i, q, name = task
            if halted or budget:
                with lock:
                    summary.not_started += 1
                return
            log.info("Processing %s query %d/%d (%s)", name.upper(), i, len(queries), q.query_id)
            t0 = time.perf_counter()
            try:
                o = techniques[name].run(Query(q.query_id, q.query))
            except BudgetExhausted as err:  # the cost cap: this result and every later one are left for a resume
                log.warning("%s %s: not run, %s", name, q.query_id, err)
                with lock:
                    budget.append(err)
                    summary.not_started += 1
                return
            except FatalModelError as err:  # the model cannot be called at all: every later call would fail alike
                with lock:
                    first = not halted
                    halted.append(RunHalted(f"the model cannot be called: {err}"))
                if first:  # the tasks already in flight fail alike: the cause is logged once
                    log.critical("%s %s: %s", name, q.query_id, err)
                return
            except LLMError as err:
                if _critical(err):
                    log.critical("%s %s: %s", name, q.query_id, err)
                    halted.append(RunHalted(f"critical LLM failure (check the API key): {err}"))
                    return
                log.error("%s %s: permanent failure after retries: %s", name, q.query_id, err, exc_info=True)
                with lock:
                    summary.failed[name].append(q.query_id)
                bar.advance()
                return
            if not (o.answer or "").strip():
                log.error("%s %s: empty answer from the model; not recorded", name, q.query_id)
                with lock:
                    summary.failed[name].append(q.query_id)
                    summary.empty[name].append(q.query_id)
                bar.advance()
                return
            row = {"query_id": q.query_id, "experiment": name, "query": q.query,
                   "retrieved_chunks": [chunk_record(h) for h in o.hits], "llm_answer": o.answer,
                   "reasoning_steps": o.detail["reasoning"], "ground_truth": q.ground_truth,
                   "context_reference": q.context_reference, "metadata": {**q.metadata, "query_type": q.query_type},
                   "retrieval_time_ms": round(o.detail["retrieval_ms"], 3),
                   "llm_time_ms": round(o.detail["llm_ms"], 3),
                   "total_time_ms": round((time.perf_counter() - t0) * 1000, 3),
                   "model": model, "dry_run": dry_run, "structured_output": o.detail["structured"]}
            if o.detail["rerank_ms"] is not None:
                row["rerank_time_ms"] = round(o.detail["rerank_ms"], 3)
            with lock:  # one whole fsync'ed line per result, never interleaved
                append_result(files[name], row)
                summary.written[name] += 1
                done_by[name].add(q.query_id)
            bar.advance()
            log.debug("%s %s: chunks=%s", name, q.query_id, [h.id for h in o.hits])

        try:
            ordered_map(one, todo, self.concurrency)
        finally:
            bar.close()
            for fh in files.values():
                fh.close()
        if halted:
            raise halted[0]
        if budget:
            summary.budget_stopped = True
            log.warning("stopped by the cost cap: %d result(s) not run; %s", summary.not_started, budget[0])
        summary.seconds = time.perf_counter() - self.t_start
        log.info("Done: written=%s failed=%s in %.1fs", summary.written,
                 {k: len(v) for k, v in summary.failed.items()}, summary.seconds)
        return summary


def validate_results(path: str | Path, experiment: str) -> list[str]:
    """Problems with a results file against the FR10 schema (empty list when valid)."""
    problems = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{path}:{n}: invalid JSON ({exc.msg})")
            continue
        for key in REQUIRED:
            if row.get(key) is None or (key == "llm_answer" and not str(row[key]).strip()):
                problems.append(f"{path}:{n}: field '{key}' missing or empty")
        if experiment == "e4" and not (row.get("reasoning_steps") or "").strip():
            problems.append(f"{path}:{n}: field 'reasoning_steps' empty for e4")
        if experiment != "e4" and row.get("reasoning_steps") is not None:
            problems.append(f"{path}:{n}: field 'reasoning_steps' must be null for {experiment}")
        for c in row.get("retrieved_chunks") or []:
            if not c.get("metadata", {}).get("filename") or not c.get("metadata", {}).get("section"):
                problems.append(f"{path}:{n}: chunk {c.get('chunk_id')} lacks filename/section metadata")
    return problems

"""E2/E3/E4 RAG pipelines of the hallucination study (e2-e4-rag-experiments-srs FR2, FR4-FR6).

E2: embed -> top-5 -> numbered sources -> LLM with the retail system prompt.
E3: top-20 -> reranker -> top-5 -> LLM (prompt notes the context was filtered).
E4: E3's retrieval -> structured chain-of-thought output (reasoning_steps + answer).
New variants register with `@register_experiment` and need no change to the runner.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict

from harness.retrieval.chunking import chunk_markdown
from harness.data.experiment import ExperimentInputs, QueryInput
from harness.retrieval.index.lancedb_store import IndexStats, LanceStore
from harness.llm.client import StructuredOutputError, extract_json
from harness.prompts import load_prompts, render
from harness.techniques._registry import Services, Technique, TechniqueResult, register_technique
from harness.types import Hit, Query, Trace


class E2Response(BaseModel):
    answer: str


class E4Response(BaseModel):
    reasoning_steps: str
    answer: str


def index_kb(inputs: ExperimentInputs, store: LanceStore, embedder, *, overwrite: bool = False,
             max_tokens: int = 512, overlap: int = 128) -> IndexStats:
    """Structure-aware chunks of every page, embedded into the store (skipped when unchanged)."""
    chunks = [c for name, page in sorted(inputs.pages.items())
              for c in chunk_markdown(page.text, name, max_tokens=max_tokens, overlap=overlap)]
    return store.index(chunks, embedder, overwrite=overwrite)


def format_sources(hits: list[Hit]) -> str:
    return "\n\n".join(f"[Source {i}: {h.metadata.get('filename', h.id)}] {h.text}" for i, h in enumerate(hits, 1))


def chunk_record(h: Hit) -> dict[str, Any]:
    meta = {"filename": h.metadata.get("filename", ""), "section": h.metadata.get("section", "")}
    rec = {"chunk_id": h.id, "text": h.text, "score": float(h.score), "metadata": meta}
    if "first_stage_score" in h.metadata:
        rec["vector_score"] = float(h.metadata["first_stage_score"])
        rec["rerank_score"] = float(h.metadata["rerank_score"])
    return rec


_STEP = re.compile(r"(?is)(?:reasoning(?:_steps)?\s*[:\-]\s*)(.+?)(?:\n\s*(?:final\s+)?answer\s*[:\-]\s*)(.+)$")
_FENCE = re.compile(r"^`{3,}\w*$")


def _json_field(name: str, text: str) -> str | None:
    """A string field read out of broken or truncated JSON (`"name": "value...`)."""
    m = re.search(rf'"{name}"\s*:\s*"((?:[^"\\]|\\.)*)', text)
    if not m:
        return None
    try:
        return json.loads(f'"{m.group(1)}"').strip()
    except ValueError:
        return m.group(1).strip()


def parse_e4(text: str) -> tuple[E4Response, bool]:
    """Structured E4 output; tolerant fallbacks for small models, in order: the fields of broken or
    truncated JSON, 'Reasoning: ... Answer: ...', or the last line (not a code fence) as the answer and
    the lines before it as the reasoning (empty when there are none: an answer alone is not reasoning).
    Returns (response, parsed_as_json)."""
    try:
        return E4Response.model_validate_json(extract_json(text)), True
    except ValueError:
        pass
    answer = _json_field("answer", text)
    if answer:
        return E4Response(reasoning_steps=_json_field("reasoning_steps", text) or "", answer=answer), False
    m = _STEP.search(text.strip())
    if m:
        return E4Response(reasoning_steps=m.group(1).strip(), answer=m.group(2).strip()), False
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip() and not _FENCE.match(ln.strip())]
    answer = lines[-1] if lines else ""
    return E4Response(reasoning_steps="\n".join(lines[:-1]), answer=answer), False


def best_e4(*texts: str) -> E4Response:
    """Of several outputs (the first answer, then the repair attempt), the first that parses into
    fields; else the first text's plain fallback. The repair reply answers the repair request, not
    the question, so it is used only when it carries the fields."""
    for t in texts:
        if t and (_json_field("answer", t) or _STEP.search(t.strip())):
            return parse_e4(t)[0]
    return parse_e4(next((t for t in texts if t and t.strip()), ""))[0]


@dataclass
class Outcome:
    hits: list[Hit]
    answer: str
    reasoning: str | None
    retrieval_ms: float
    rerank_ms: float | None
    llm_ms: float
    structured: bool


class Experiment:
    name = "base"
    output = "base.jsonl"
    system_key = "e2_system"
    top_k = 5  # chunks given to the LLM
    candidates, keep = 20, 5  # E3/E4: first-stage candidates, kept after reranking

    def __init__(self, services: Services):
        self.s = services
        self.prompts = load_prompts("e2e4")

    @property
    def store(self) -> LanceStore:
        """The vector store the services' retriever searches."""
        return self.s.require("retriever").store

    def retrieve(self, query: str) -> tuple[list[Hit], float, float | None]:
        t0 = time.perf_counter()
        hits = self.store.search_vector(self.s.require("embedder").encode([query])[0], self.top_k)
        return hits, (time.perf_counter() - t0) * 1000, None

    def generate(self, query: str, hits: list[Hit], trace: Trace | None = None) -> tuple[str, str | None, bool]:
        prompt = render(self.prompts["user"], sources=format_sources(hits), query=query)
        text = self.s.require("llm").complete(prompt, system=self.prompts[self.system_key], max_tokens=160,
                                              trace=trace).text.strip()
        try:  # a model that answers in JSON gets validated against E2Response
            return E2Response.model_validate_json(extract_json(text)).answer, None, True
        except ValueError:
            return text, None, False

    def run(self, q: QueryInput | str, trace: Trace | None = None) -> Outcome:
        text = q if isinstance(q, str) else q.query
        hits, r_ms, rr_ms = self.retrieve(text)
        t0 = time.perf_counter()
        answer, reasoning, structured = self.generate(text, hits, trace)
        return Outcome(hits, answer, reasoning, r_ms, rr_ms, (time.perf_counter() - t0) * 1000, structured)


EXPERIMENTS: dict[str, type[Experiment]] = {}


def register_experiment(cls: type[Experiment]) -> type[Experiment]:
    """Register an experiment for the runner; a new one also becomes a registered technique of that name."""
    EXPERIMENTS[cls.name] = cls
    if cls.name not in ("e2", "e3", "e4"):
        experiment_technique(cls)
    return cls


@register_experiment
class E2Standard(Experiment):
    name, output, system_key = "e2", "e2_standard_rag.jsonl", "e2_system"


@register_experiment
class E3Filtered(Experiment):
    name, output, system_key = "e3", "e3_filtered_rag.jsonl", "e3_system"

    def retrieve(self, query: str) -> tuple[list[Hit], float, float | None]:
        t0 = time.perf_counter()
        first = self.store.search_vector(self.s.require("embedder").encode([query])[0], self.candidates)
        t1 = time.perf_counter()
        hits = self.s.require("reranker").rerank(query, first, self.keep)
        return hits, (t1 - t0) * 1000, (time.perf_counter() - t1) * 1000


@register_experiment
class E4Reasoning(E3Filtered):
    name, output, system_key = "e4", "e4_reasoning_rag.jsonl", "e4_system"

    def generate(self, query: str, hits: list[Hit], trace: Trace | None = None) -> tuple[str, str | None, bool]:
        prompt = render(self.prompts["user"], sources=format_sources(hits), query=query)
        try:
            resp = self.s.require("llm").structured(prompt, E4Response, system=self.prompts[self.system_key], max_tokens=256,
                                         trace=trace)
            return resp.answer, resp.reasoning_steps, True
        except StructuredOutputError as err:
            resp = best_e4(err.first_raw, err.raw)
            return resp.answer, resp.reasoning_steps, False


def dry_run_responder() -> Callable[[list[dict[str, str]], dict[str, Any]], str]:
    """Scripted answers for DRY_RUN: cite the first source; E4 gets JSON with reasoning steps."""

    def respond(messages: list[dict[str, str]], params: dict[str, Any]) -> str:
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        user = messages[-1]["content"]
        m = re.search(r"\[Source 1: ([^\]]+)\]", user)
        source = m.group(1) if m else "no source"
        if "reasoning_steps" in system:
            return ('{"reasoning_steps": "Step 1: dry run. Step 2: context has %s.", '
                    '"answer": "DRY RUN answer from %s [Source 1]"}' % (source, source))
        return f"DRY RUN answer from {source} [Source 1]"

    return respond


# ---------------------------------------------------------------- the registered technique
class E2E4Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    top_k: int = 5
    candidates: int = 20  # E3/E4: first-stage candidates before reranking


class _Experiment(Technique):
    Params = E2E4Params
    params: E2E4Params
    experiment = "e2"

    def setup(self) -> None:
        s = self.services
        for need in ("llm", "retriever", "embedder") + (("reranker",) if self.experiment != "e2" else ()):
            s.require(need)  # built now, as every technique builds its parts before the first query
        self.exp = EXPERIMENTS[self.experiment](s)
        self.exp.top_k, self.exp.candidates, self.exp.keep = self.params.top_k, self.params.candidates, self.params.top_k

    def _run(self, query: Query, trace: Trace) -> TechniqueResult:
        t0 = time.perf_counter()
        with trace.stage("pipeline"):
            out = self.exp.run(query.text, trace=trace)
        return self.result(query, out.hits, trace, out.answer, reasoning=out.reasoning, structured=out.structured,
                           retrieval_ms=out.retrieval_ms, rerank_ms=out.rerank_ms, llm_ms=out.llm_ms,
                           total_ms=(time.perf_counter() - t0) * 1000)


@register_technique
class E2StandardTechnique(_Experiment):
    name, experiment, role = "e2-standard", "e2", "e2"
    summary = "E2: standard RAG (top-5 dense chunks, cited answer)"


@register_technique
class E3FilteredTechnique(_Experiment):
    name, experiment, role = "e3-filtered", "e3", "e3"
    summary = "E3: filtered RAG (20 dense candidates, reranked to 5)"


@register_technique
class E4ReasoningTechnique(_Experiment):
    name, experiment, role = "e4-reasoning", "e4", "e4"
    summary = "E4: reasoning RAG (E3's retrieval, JSON reasoning steps then the answer)"


def experiment_technique(exp: type[Experiment]) -> type[Technique]:
    """The registered technique for an experiment added with `register_experiment` (named like it)."""
    cls = type(f"{exp.__name__}Technique", (_Experiment,), {
        "name": exp.name, "experiment": exp.name, "role": exp.name,
        "summary": (exp.__doc__ or f"experiment {exp.name}").strip().splitlines()[0]})
    return register_technique(cls, replace=True)

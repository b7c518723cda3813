"""HyDE: Hypothetical Document Embeddings (Gao et al., arXiv:2212.10496).

Generate N hypothetical documents for a query, encode them (not the query alone) and average
them with the query embedding as the paper's code does (query weighted like one document);
fall back to the raw query embedding when generation fails. Zero-shot: nothing is trained.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from harness.config import HydeConfig
from harness.llm.cache import ResponseCache
from harness.llm.client import LLMClient
from harness.prompts import load_prompts, render
from harness.techniques.generation import try_complete
from harness.techniques.parsing import strip_echo
from harness.techniques._registry import Technique, TechniqueResult, register_technique
from harness.types import Hit, Query, Trace


@dataclass
class HydeResult:
    vector: np.ndarray
    documents: list[str]
    used_fallback: bool
    trace: Trace = field(default_factory=Trace)


class HyDE:
    """`expand(query)` -> query vector; `retrieve(query, retriever, k)` -> hits."""

    labelled_examples_used = 0  # zero-shot by construction (HYDE-004)

    def __init__(self, llm: LLMClient, embedder, *, num_documents: int = 1, temperature: float = 0.7,
                 max_tokens: int = 256, include_query: bool = True, prompt_variant: str = "chat",
                 cache: ResponseCache | None = None):
        if num_documents < 1:
            raise ValueError("num_documents must be >= 1")
        self.llm, self.embedder = llm, embedder
        self.num_documents, self.temperature, self.max_tokens = num_documents, temperature, max_tokens
        self.include_query = include_query
        self.template = load_prompts("hyde")[prompt_variant]["user"]
        self.cache = cache

    @property
    def variant(self) -> str:
        mix = "mean(query + docs)" if self.include_query else "mean(docs)"
        return f"hyde(N={self.num_documents}, T={self.temperature}, {mix}, llm={self.llm.label})"

    def cache_key(self, query: str) -> str:
        raw = f"{self.llm.label}|{self.num_documents}|{self.temperature}|{self.max_tokens}|{query}"
        return "hyde:" + hashlib.sha256(raw.encode()).hexdigest()

    def generate(self, query: str, trace: Trace | None = None) -> list[str]:
        """Hypothetical documents (echoes of the prompt stripped); [] when every call failed or was empty."""
        trace = trace if trace is not None else Trace()
        key = self.cache_key(query)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                trace.event("hyde_cache_hit")
                return list(hit["documents"])
        prompt = render(self.template, query=query)
        docs: list[str] = []
        with trace.stage("hyde_generate"):
            for i in range(self.num_documents):
                # seed varies per sample so N documents differ even where the cache is on
                raw = try_complete(self.llm, prompt, temperature=self.temperature, max_tokens=self.max_tokens,
                                   seed=i, trace=trace, error_event="hyde_llm_error")
                if raw is None:
                    continue
                text = strip_echo(raw, prompt)
                if text:
                    docs.append(text)
        if docs and self.cache is not None:
            self.cache.put(key, {"documents": docs})
        return docs

    def expand(self, query: str, trace: Trace | None = None, *,
               hypothetical_documents: list[str] | None = None) -> HydeResult:
        trace = trace if trace is not None else Trace()
        docs = hypothetical_documents if hypothetical_documents is not None else self.generate(query, trace)
        with trace.stage("hyde_encode"):
            if not docs:
                trace.event("hyde_fallback", reason="no hypothetical document")
                vec = self.embedder.encode([query])[0]
                return HydeResult(vec, [], True, trace)
            texts = ([query] if self.include_query else []) + docs
            vecs = self.embedder.encode(texts)
            mean = vecs.mean(axis=0)
            norm = float(np.linalg.norm(mean))
        trace.event("hyde")
        return HydeResult((mean / norm if norm else mean).astype(np.float32), docs, False, trace)

    def retrieve(self, query: str, retriever, k: int = 10, trace: Trace | None = None, *,
                 hypothetical_documents: list[str] | None = None) -> list[Hit]:
        """Hits for the HyDE vector (of `hypothetical_documents` when given, else of generated ones)."""
        trace = trace if trace is not None else Trace()
        res = self.expand(query, trace, hypothetical_documents=hypothetical_documents)
        with trace.stage("retrieve"):
            return retriever.retrieve_vector(res.vector, k, query=query)


# ---------------------------------------------------------------- the registered technique
class HydeParams(HydeConfig):
    k: int = 10
    prompt_variant: Literal["chat", "completion"] = "chat"


@register_technique
class HyDETechnique(Technique):
    name, role = "hyde", "hyde"
    summary = "HyDE: retrieve with the embedding of LLM-written hypothetical documents (Gao et al. 2022)"
    Params, config_section = HydeParams, "wsop.hyde"
    params: HydeParams

    def setup(self) -> None:
        p, s = self.params, self.services
        llm = s.llm_for(p.llm) if (p.llm and s.llm_for is not None) else s.require("llm")
        if p.llm and getattr(llm, "label", None) != p.llm:
            raise ValueError(f"wsop.hyde.llm is {p.llm!r} but no way to build that model was given "
                             "(Services.llm_for)")
        # HyDE's own cache of hypothetical documents, kept cache_ttl seconds (0: off); only where the run caches
        cache = (ResponseCache(s.config.harness.cache_dir / "hyde", ttl_s=p.cache_ttl)
                 if p.cache_ttl > 0 and s.config.harness.llm.cache and getattr(llm, "cache", None) is not None
                 else None)
        self.hyde = HyDE(llm, s.require("embedder"), num_documents=p.num_documents, temperature=p.temperature,
                         max_tokens=p.max_tokens, include_query=p.include_query, prompt_variant=p.prompt_variant,
                         cache=cache)

    @property
    def label(self) -> str:
        return self.hyde.variant

    def _run(self, query: Query, trace: Trace) -> TechniqueResult:
        res = self.hyde.expand(query.text, trace)
        with trace.stage("retrieve"):
            hits = self.services.require("retriever").retrieve_vector(res.vector, self.params.k, query=query.text)
        return self.result(query, hits, trace, hypothetical_documents=res.documents)

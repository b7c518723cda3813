"""rag-harness: prove or refute what RAG techniques claim, on your own data.

The public API, imported lazily (importing `harness` loads no model, database or HTTP library):

    from harness import HyDE, Retriever, LanceStore, paired_effect, evaluate, score_run
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    # data and types
    "Document": "harness.types", "Chunk": "harness.types", "Query": "harness.types", "Hit": "harness.types",
    "Trace": "harness.types", "load_beir": "harness.data", "load_experiment_inputs": "harness.data",
    "read_trec_run": "harness.data", "read_trec_qrels": "harness.data", "write_trec_run": "harness.data",
    "write_trec_qrels": "harness.data",
    # configuration and catalogue
    "HarnessConfig": "harness.config", "load_config": "harness.config", "load_catalogue": "harness.catalogue",
    # retrieval
    "LanceStore": "harness.retrieval.index.lancedb_store", "Retriever": "harness.retrieval", "make_embedder": "harness.retrieval.embed",
    "make_reranker": "harness.retrieval.rerank", "reciprocal_rank_fusion": "harness.retrieval.rank_fusion",
    # llm
    "LLMClient": "harness.llm.client", "LLMError": "harness.llm.client",
    # techniques
    "HyDE": "harness.techniques.hyde", "CRAG": "harness.techniques.crag", "RAGFusion": "harness.techniques.fusion",
    "LLMRewriter": "harness.techniques.rewrite", "WSOPPipeline": "harness.techniques.wsop",
    "RET": "harness.techniques.ret.triangulation", "run_experiments": "harness.runner",
    "Technique": "harness.techniques._registry", "TechniqueResult": "harness.techniques._registry",
    "Services": "harness.techniques._registry", "Arm": "harness.techniques._registry", "TopK": "harness.techniques._registry",
    "build_technique": "harness.techniques._registry", "register_technique": "harness.techniques._registry",
    "technique_names": "harness.techniques._registry",
    # metrics and statistics
    "evaluate": "harness.metrics", "parse_measure": "harness.metrics", "score_run": "harness.metrics.runs",
    "compare_runs": "harness.metrics.runs", "paired_effect": "harness.stats._effect",
    "proportion_effect": "harness.stats._effect", "decide": "harness.stats._verdict",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # for type checkers and IDEs: the same names, eagerly
    from harness.catalogue import load_catalogue
    from harness.config import HarnessConfig, load_config
    from harness.data import (load_beir, load_experiment_inputs, read_trec_qrels, read_trec_run, write_trec_qrels,
                              write_trec_run)
    from harness.retrieval.embed import make_embedder
    from harness.retrieval.index.lancedb_store import LanceStore
    from harness.llm.client import LLMClient, LLMError
    from harness.metrics import evaluate, parse_measure
    from harness.metrics.runs import compare_runs, score_run
    from harness.retrieval.rank_fusion import reciprocal_rank_fusion
    from harness.retrieval.rerank import make_reranker
    from harness.retrieval import Retriever
    from harness.runner import run_experiments
    from harness.stats._effect import paired_effect, proportion_effect
    from harness.stats._verdict import decide
    from harness.techniques.crag import CRAG
    from harness.techniques.fusion import RAGFusion
    from harness.techniques.hyde import HyDE
    from harness.techniques._registry import (Arm, Services, Technique, TechniqueResult, TopK, build_technique,
                                             register_technique, technique_names)
    from harness.techniques.ret.triangulation import RET
    from harness.techniques.rewrite import LLMRewriter
    from harness.techniques.wsop import WSOPPipeline
    from harness.types import Chunk, Document, Hit, Query, Trace


def __getattr__(name: str) -> Any:
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'harness' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

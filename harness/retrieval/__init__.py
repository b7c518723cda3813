"""Retrieval, in the order a query meets it: chunk (`chunking`), embed (`embed`), index and search LanceDB
(`index`), rerank (`rerank`), fuse ranked lists (`rank_fusion`), all behind `Retriever` (`retriever`).

`Retriever` is imported lazily, so importing one building block loads no database."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.retrieval._retriever import Mode, Retriever

__all__ = ["Mode", "Retriever"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from harness.retrieval import _retriever as retriever

        return getattr(retriever, name)
    raise AttributeError(f"module 'harness.retrieval' has no attribute {name!r}")

"""Negative controls for hyDE: the prompt echo, the embedded text, and dense versus lexical search."""
from __future__ import annotations

from typing import Any

from harness.plugin.controls.registry import control, replace_everywhere


@control("hyde-keeps-prompt-echo", breaks="HyDE keeps the prompt the model echoed at the start of its document")
def _hyde_echo(mp: Any) -> None:
    from harness.techniques import hyde, parsing

    replace_everywhere(mp, parsing.strip_echo, lambda text, prompt: text.strip())
    assert hyde  # the module holds strip_echo by name


@control("hyde-embeds-query", breaks="HyDE embeds the query instead of the hypothetical documents")
def _hyde_query(mp: Any) -> None:
    from harness.techniques.hyde import HyDE, HydeResult

    def expand(self, query, trace=None, *, hypothetical_documents=None):
        docs = hypothetical_documents if hypothetical_documents is not None else self.generate(query, trace)
        return HydeResult(self.embedder.encode([query])[0], docs, False)

    mp.setattr(HyDE, "expand", expand)


@control("hyde-lexical-bottleneck", breaks="HyDE searches the hypothetical document's words (BM25) instead of "
                                          "its dense embedding, so its false details match documents")
def _hyde_lexical(mp: Any) -> None:
    from harness.techniques.hyde import HyDE

    def retrieve(self, query, retriever, k=10, trace=None, *, hypothetical_documents=None):
        docs = hypothetical_documents if hypothetical_documents is not None else self.generate(query, trace)
        return retriever.store.search_text(" ".join(docs) or query, k)

    mp.setattr(HyDE, "retrieve", retrieve)

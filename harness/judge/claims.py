"""An answer as atomic claims, and the judge-free (lexical) verdict on each.

`split_claims` splits an answer into sentences (pysbd) and each sentence at semicolons: the unit a judge
rules on. Ragas and DeepEval ask an LLM to rewrite the answer as standalone statements; a deterministic split
keeps the claim set the same for every judge (so judges can be compared claim by claim) and needs no model.
A short answer ("Paris") is one claim, judged together with its question.

`lexical_support(claim, context)` is the baseline that needs no model: a claim is supported when at least
`min_overlap` of its content tokens (SQuAD-normalised tokens less stop words) occur in the context and every
number it states occurs there too. It is what a careful string matcher can tell, and it is wrong in known ways
(a paraphrase reads unsupported, a claim that rearranges the context's words reads supported).
"""
from __future__ import annotations

import re

from harness.metrics._text import normalize_answer

__all__ = ["STOP_WORDS", "content_tokens", "lexical_support", "split_claims"]

STOP_WORDS = frozenset(
    "a an the of to in on for and or is are was were be been being what which who whom how why when where does do "
    "did can could should would will with by from at as that this these those it its there their they them any some "
    "must may might has have had not no than then so if into about also our your you we i he she his her all per "
    "only just very more most such each other".split()
)
_NUMBER = re.compile(r"\d")


def split_claims(answer: str, *, max_claims: int | None = None) -> list[str]:
    """The answer's sentences, each split at semicolons; empty pieces dropped; the first `max_claims`."""
    from harness.retrieval.chunking import sentences

    claims = [p.strip() for s in sentences(answer) for p in s.split(";") if p.strip(" .;,")]
    return claims[:max_claims] if max_claims else claims


def content_tokens(text: str) -> list[str]:
    """SQuAD-normalised tokens less stop words (numbers kept)."""
    return [t for t in normalize_answer(text).split() if t not in STOP_WORDS]


def lexical_support(claim: str, context: str, *, min_overlap: float = 0.75) -> bool:
    """Whether the context supports the claim by its words: ≥ `min_overlap` of the claim's content tokens
    occur in the context, and every token with a digit does."""
    tokens = content_tokens(claim)
    if not tokens:
        return False
    ctx = set(normalize_answer(context).split())
    if any(_NUMBER.search(t) and t not in ctx for t in tokens):
        return False
    return sum(t in ctx for t in tokens) / len(tokens) >= min_overlap

"""E4's reasoning detectors (e2-e4-rag-experiments-srs FR6, §6.1 SC-4), blind to echo.

Small models often copy their prompt into the reasoning: the question, the numbered sources, the instruction
template. None of that is reasoning. A row's reasoning is split into sentences, and a sentence counts only when it
is none of:
- copied from the prompt: more than 85% of its words lie in runs of four or more words that one part of the
  prompt also has (E4's system prompt, the question, one numbered source). A sentence spliced from the question
  and a source ("The extended warranty for pianos costs $79 per year": the question's words, a source's
  figure) is the model's own claim, not a copy;
- a restatement of the question or of the instructions: it has no content word beyond theirs, or it is itself a
  question (ends in "?");
- the answer again: no content word beyond the answer's and the question's, or an "The answer is ..." line
  with no reason given.
`has_reasoning` (FR6-1, SC-4): some sentence counts. `specific_reasoning` (FR6-2): some sentence that counts
carries a content word of the retrieved sources that the question lacks (context beyond the question's own
words), or cites a source (`Source 2`, a page's file name).
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from harness.metrics._text import CONTENT_STOPWORDS

__all__ = ["has_reasoning", "novel_reasoning", "prompt_of", "prompt_parts", "specific_reasoning"]

COPY_NGRAM, COPY_SHARE = 4, 0.85
_LABELS = frozenset("step steps answer question context source reasoning final json".split())
_MARKER = re.compile(r"^\s*(?:(?:step\s*\d+|\d{1,2}|[a-e])\s*[:.)]|[-*\u2022]+|(?:question|answer|final answer|"
                     r"reasoning(?:_steps)?|context)\s*:)\s*", re.I)
_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_ANSWER_LEAD = re.compile(r"^\W*(?:(?:the )?(?:final )?answer(?: to (?:this|the|your) question)? is\b|(?:final )?"
                          r"answer\s*:)", re.I)
_BECAUSE = re.compile(r"\b(?:because|since|therefore|so|as|given|thus)\b", re.I)
_CITE = re.compile(r"\bsource\s*\d+\b", re.I)


def _tokens(text: str) -> list[str]:
    """Lower-cased words and numbers ("$4.99" -> 4, 99), a plural s dropped (cards -> card)."""
    words = re.sub(r"[^a-z0-9]+", " ", text.lower()).split()
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words]


def _content(tokens: list[str]) -> set[str]:
    return {w for w in tokens if w not in CONTENT_STOPWORDS and w not in _LABELS and (len(w) > 2 or w.isdigit())}


@lru_cache(maxsize=1)
def _templates() -> tuple[str, str]:
    from harness.prompts import load_prompts

    p = load_prompts("e2e4")
    return p["e4_system"], p["user"]


def prompt_parts(row: dict[str, Any]) -> list[str]:
    """The parts of the prompt E4 sent for a result row: its system prompt, the user prompt's fixed text with the
    question, and each numbered source."""
    system, user = _templates()
    sources = [f"[Source {i}: {c.get('metadata', {}).get('filename', c.get('chunk_id', ''))}] {c['text']}"
               for i, c in enumerate(row.get("retrieved_chunks") or [], 1)]
    return [system, user.format(sources="", query=row.get("query", "")), *sources]


def prompt_of(row: dict[str, Any]) -> str:
    """The prompt E4 sent for a result row: its system prompt and the user prompt with the row's sources."""
    from harness.prompts import render

    system, user = _templates()
    sources = "\n\n".join(prompt_parts(row)[2:])
    return system + "\n" + render(user, sources=sources, query=row.get("query", ""))


def _copied(tokens: list[str], parts: list[str]) -> bool:
    """More than COPY_SHARE of the words lie in COPY_NGRAM-word runs that one part of the prompt has (a shorter
    sentence: all of it in one part). `parts` are token strings padded with spaces."""
    if len(tokens) < COPY_NGRAM:
        return any(f" {' '.join(tokens)} " in part for part in parts)
    for part in parts:
        covered = [False] * len(tokens)
        for i in range(len(tokens) - COPY_NGRAM + 1):
            if f" {' '.join(tokens[i:i + COPY_NGRAM])} " in part:
                covered[i:i + COPY_NGRAM] = [True] * COPY_NGRAM
        if sum(covered) > COPY_SHARE * len(tokens):
            return True
    return False


def novel_reasoning(row: dict[str, Any]) -> list[str]:
    """The sentences of a row's reasoning that are not copied from the prompt, nor a restatement of the question,
    the instructions or the answer (see the module docstring)."""
    reasoning = row.get("reasoning_steps") or ""
    if not reasoning.strip():
        return []
    system, _ = _templates()
    parts = [f" {' '.join(_tokens(p))} " for p in prompt_parts(row)]
    question = _content(_tokens(row.get("query", ""))) | _content(_tokens(system))
    answer = _content(_tokens(row.get("llm_answer") or ""))
    out = []
    for raw in _SPLIT.split(reasoning):
        sentence = _MARKER.sub("", _MARKER.sub("", raw.strip())).strip()
        tokens = _tokens(sentence)
        words = _content(tokens)
        if not words or sentence.endswith("?") or _copied(tokens, parts) or words <= question | answer:
            continue
        if (_ANSWER_LEAD.match(raw) or _ANSWER_LEAD.match(sentence)) and not _BECAUSE.search(sentence):
            continue
        out.append(sentence)
    return out


def has_reasoning(row: dict[str, Any]) -> bool:
    """FR6-1 / SC-4: the row's reasoning has a sentence of its own (not echo, restatement or the answer again)."""
    return bool(novel_reasoning(row))


def specific_reasoning(row: dict[str, Any]) -> bool:
    """FR6-2: a sentence of the row's own reasoning brings context beyond the question's words (a content word of
    the retrieved sources the question lacks) or cites a source."""
    chunks = row.get("retrieved_chunks") or []
    sources = set().union(*(_content(_tokens(c["text"])) for c in chunks)) if chunks else set()
    beyond = sources - _content(_tokens(row.get("query", "")))
    files = {c.get("metadata", {}).get("filename", "").lower().removesuffix(".md") for c in chunks} - {""}
    for sentence in novel_reasoning(row):
        low = sentence.lower()
        if _content(_tokens(sentence)) & beyond or _CITE.search(sentence) or any(f in low for f in files):
            return True
    return False

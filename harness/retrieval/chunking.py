"""Structure-aware Markdown chunking and CRAG knowledge-strip decomposition.

Sentences come from pysbd (a maintained rule-based sentence boundary detector); token budgets
are counted with a real BPE tokenizer (tiktoken's cl100k_base, the file litellm ships) when
available, else with whitespace words.
"""
from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass
from typing import Protocol

from harness.types import Chunk

_HEADER = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
# Clause boundaries for long sentences: semicolons/colons, and a comma or nothing before a coordinating
# or subordinating conjunction.
_CLAUSE = re.compile(r"(?<=[;:])\s+|,?\s+(?=\b(?:and|but|or|so|yet|while|whereas|which|because|although)\b\s)")


class Tokenizer(Protocol):
    def encode(self, text: str) -> list[int]: ...


class WhitespaceTokenizer:
    """Counts whitespace-separated words; used when no BPE tokenizer is installed."""

    name = "whitespace"

    def encode(self, text: str) -> list[int]:
        return list(range(len(text.split())))


@functools.lru_cache(maxsize=1)
def default_tokenizer() -> Tokenizer:
    """tiktoken cl100k_base from the BPE file litellm ships (no download), else whitespace words."""
    import importlib.util
    import os

    try:
        import tiktoken
    except ImportError:
        return WhitespaceTokenizer()
    spec = importlib.util.find_spec("litellm")
    if spec and spec.submodule_search_locations:
        bundled = os.path.join(list(spec.submodule_search_locations)[0], "litellm_core_utils", "tokenizers")
        if os.path.isdir(bundled):
            os.environ.setdefault("TIKTOKEN_CACHE_DIR", bundled)
    try:
        return tiktoken.get_encoding("cl100k_base")
    except Exception:  # noqa: BLE001 - no offline copy: fall back rather than download
        return WhitespaceTokenizer()


_THREAD = threading.local()


def _segmenter():
    """This thread's pysbd segmenter: a Segmenter keeps the text it is splitting on itself, so one shared
    between threads (techniques run queries concurrently) hands sentences of one text to another."""
    seg = getattr(_THREAD, "segmenter", None)
    if seg is None:
        import pysbd

        seg = _THREAD.segmenter = pysbd.Segmenter(language="en", clean=False)
    return seg


def sentences(text: str) -> list[str]:
    """Sentence split with pysbd, whitespace-trimmed, empty pieces dropped."""
    text = text.strip()
    if not text:
        return []
    return list(_split(text))


@functools.lru_cache(maxsize=4096)
def _split(text: str) -> tuple[str, ...]:
    """pysbd's split of one text, kept: a reranker splits the same retrieved chunks for every query (pysbd is about
    a millisecond a text, most of the sentence-level reranker's time before this cache)."""
    return tuple(s.strip() for s in _segmenter().segment(text) if s.strip())


@dataclass
class Section:
    title: str
    level: int
    body: str


def markdown_sections(text: str) -> list[Section]:
    """Split Markdown on ATX headers (not inside code fences); text before the first header is section ''."""
    sections: list[Section] = []
    buf: list[str] = []
    title, level, in_fence = "", 0, False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        m = None if in_fence else _HEADER.match(line)
        if m:
            if "".join(buf).strip() or title:
                sections.append(Section(title, level, "\n".join(buf).strip()))
            title, level, buf = m.group(2).strip(), len(m.group(1)), []
        else:
            buf.append(line)
    if "".join(buf).strip() or title:
        sections.append(Section(title, level, "\n".join(buf).strip()))
    return sections


def _windows(units: list[str], sizes: list[int], max_tokens: int, overlap: int) -> list[list[str]]:
    """Greedy windows of whole units up to max_tokens; each next window starts with trailing units
    of the previous one totalling at most `overlap` tokens."""
    out: list[list[str]] = []
    i = 0
    while i < len(units):
        j, total = i, 0
        while j < len(units) and (total + sizes[j] <= max_tokens or j == i):
            total += sizes[j]
            j += 1
        out.append(units[i:j])
        if j >= len(units):
            break
        back, carried = j, 0
        while back - 1 > i and carried + sizes[back - 1] <= overlap:
            back -= 1
            carried += sizes[back]
        i = back
    return out


def _split_long(sentence: str, max_tokens: int, tok: Tokenizer) -> list[str]:
    words = sentence.split()
    pieces, cur = [], []
    for w in words:
        cur.append(w)
        if len(tok.encode(" ".join(cur))) >= max_tokens:
            pieces.append(" ".join(cur))
            cur = []
    if cur:
        pieces.append(" ".join(cur))
    return pieces


def chunk_markdown(text: str, filename: str, *, max_tokens: int = 512, overlap: int = 128,
                   tokenizer: Tokenizer | None = None) -> list[Chunk]:
    """Header-aware chunks of at most `max_tokens` with about `overlap` tokens carried between
    consecutive chunks of the same section. Each chunk starts with its section header."""
    if overlap >= max_tokens:
        raise ValueError("overlap must be smaller than max_tokens")
    tok = tokenizer or default_tokenizer()
    chunks: list[Chunk] = []
    for sec in markdown_sections(text):
        header = f"{'#' * sec.level} {sec.title}\n" if sec.title else ""
        budget = max(1, max_tokens - len(tok.encode(header)))
        units: list[str] = []
        for para in re.split(r"\n\s*\n", sec.body):
            for s in sentences(para):
                units.extend(_split_long(s, budget, tok) if len(tok.encode(s)) > budget else [s])
        if not units:
            units = [""] if header else []
        sizes = [len(tok.encode(u)) + 1 for u in units]
        for window in _windows(units, sizes, budget, overlap):
            body = " ".join(window).strip()
            idx = len(chunks)
            chunks.append(Chunk(
                id=f"{filename}#chunk_{idx}", doc_id=filename, text=(header + body).strip(),
                metadata={"filename": filename, "section": sec.title or filename, "chunk_index": idx},
            ))
    return chunks


def knowledge_strips(text: str, *, long_sentence_words: int = 25) -> list[str]:
    """CRAG decomposition: sentences, with sentences over `long_sentence_words` words split at
    clause boundaries. Every strip is one sentence or a part of one."""
    strips: list[str] = []
    for sent in sentences(text):
        if len(sent.split()) > long_sentence_words:
            parts = [p.strip(" ,;:") for p in _CLAUSE.split(sent)]
            strips.extend(p for p in parts if p and len(p.split()) >= 2)
        else:
            strips.append(sent)
    return strips

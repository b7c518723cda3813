"""Tolerant parsing of small-model output: strip prompt echoes, list markers and repeats."""
from __future__ import annotations

import re


_MARKER = re.compile(r"^\s*(?:[-*•]+|\(?\d{1,2}[.):]|query\s*\d*\s*[:.-]|q\d+\s*[:.-])\s*", re.IGNORECASE)
_LABEL = re.compile(r"^\s*(?:original question|generated quer(?:y|ies)[^:]*|search quer(?:y|ies)|question|"
                    r"passage|rewrite|answer|query)\s*:\s*", re.IGNORECASE)


def _norm(s: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", s.lower()).split())


def clean_item(line: str) -> str:
    """Drop list markers, a leading label like 'Rewrite:' and wrapping quotes."""
    s = _MARKER.sub("", line.strip())
    s = _LABEL.sub("", s)
    s = _MARKER.sub("", s)
    return s.strip().strip("\"'`“”").strip()


def parse_lines(text: str, *, prompt: str = "", exclude: tuple[str, ...] = ()) -> list[str]:
    """Non-empty cleaned lines, deduplicated (case/punctuation-insensitive), without lines that
    repeat the prompt or any `exclude` text."""
    prompt_lines = {_norm(p) for p in prompt.splitlines() if p.strip()}
    prompt_lines |= {_norm(clean_item(p)) for p in prompt.splitlines() if p.strip()}
    banned = {_norm(e) for e in exclude}
    out, seen = [], set()
    for raw in text.splitlines():
        item = clean_item(raw)
        key = _norm(item)
        if not key or key in seen or key in banned or key in prompt_lines:
            continue
        if len(key) < 3:
            continue
        seen.add(key)
        out.append(item)
    return out


def strip_echo(text: str, prompt: str) -> str:
    """Remove lines of `text` that repeat lines of the prompt (small models often echo it)."""
    prompt_lines = {_norm(p) for p in prompt.splitlines() if p.strip()}
    kept = [ln for ln in text.splitlines() if _norm(ln) not in prompt_lines or not _norm(ln)]
    return "\n".join(kept).strip()


def first_item(text: str, *, prompt: str = "", exclude: tuple[str, ...] = ()) -> str:
    items = parse_lines(text, prompt=prompt, exclude=exclude)
    return items[0] if items else ""


def parse_letter(text: str, letters: str) -> str | None:
    """The first option letter standing alone in a reply (`B`, `B)`, `(B)`, `Answer: B`), else None."""
    m = re.search(rf"(?<![A-Za-z])([{letters}])(?![A-Za-z])", text.strip())
    return m.group(1) if m else None

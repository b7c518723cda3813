"""Generation shared by the techniques: numbered sources into a prompt, one LLM call, errors as trace events."""
from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from harness.llm.client import LLMClient, LLMError
from harness.prompts import render
from harness.types import Hit, Trace


def numbered_sources(hits: Sequence[Hit], *, max_chars: int = 700) -> str:
    """`[1] text`, `[2] text`, ... (each text cut to `max_chars`), the form the answer prompts cite."""
    return "\n".join(f"[{i}] {h.text[:max_chars]}" for i, h in enumerate(hits, 1))


_NUMBERED = re.compile(r"^\[(\d+)\] ?(.*)$")
_CITATION = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


def sources_in_prompt(prompt: str) -> dict[int, str]:
    """`{n: text}` from a prompt's `[n] text` lines, the inverse of `numbered_sources` (a blank line ends one)."""
    out: dict[int, str] = {}
    current: int | None = None
    for line in prompt.splitlines():
        m = _NUMBERED.match(line)
        if m:
            current = int(m.group(1))
            out[current] = m.group(2)
        elif current is not None and line.strip():
            out[current] += "\n" + line
        else:
            current = None
    return out


def cited_numbers(text: str) -> list[int]:
    """The source numbers a text cites inline (`[2]`, `[1, 3]`), in order of first citation."""
    nums = (int(n) for m in _CITATION.finditer(text) for n in m.group(1).split(","))
    return list(dict.fromkeys(nums))


def citations_resolve(answer: str, prompt: str, sources: Sequence[Hit]) -> bool:
    """Whether `answer` cites, and every `[n]` it cites was numbered in `prompt` with `sources[n - 1]`'s text."""
    numbered = sources_in_prompt(prompt)

    def resolves(n: int) -> bool:
        shown = " ".join(numbered.get(n, "").split())
        return bool(shown) and 1 <= n <= len(sources) and " ".join(sources[n - 1].text.split()).startswith(shown)

    cited = cited_numbers(answer)
    return bool(cited) and all(resolves(n) for n in cited)


def complete_or_error(llm: LLMClient, prompt: str, *, trace: Trace | None, error_event: str,
                      **params: Any) -> tuple[str | None, str | None]:
    """(the completion's text, None), or (None, the error message) after recording `error_event` in the trace
    when the call failed: the caller decides the fallback, the failure is always counted."""
    try:
        return llm.complete(prompt, trace=trace, **params).text, None
    except LLMError as err:
        if trace is not None:
            trace.event(error_event, error=str(err))
        return None, str(err)


def try_complete(llm: LLMClient, prompt: str, *, trace: Trace | None, error_event: str,
                 **params: Any) -> str | None:
    """The completion's text, or None when the call failed (recorded as `error_event`)."""
    return complete_or_error(llm, prompt, trace=trace, error_event=error_event, **params)[0]


def complete_with_sources(llm: LLMClient, prompts: Mapping[str, str], query: str, sources: Sequence[Hit], *,
                          max_tokens: int, trace: Trace | None = None, max_chars: int = 700,
                          error_event: str = "generate_error") -> tuple[str, str | None]:
    """Render `prompts['user']` with numbered sources and the query, complete it (with `prompts['system']`
    where there is one); returns (stripped text, None) or ("", the error message)."""
    prompt = render(prompts["user"], sources=numbered_sources(sources, max_chars=max_chars), query=query)
    text, error = complete_or_error(llm, prompt, system=prompts.get("system"), max_tokens=max_tokens, trace=trace,
                                    error_event=error_event)
    return (text or "").strip(), error

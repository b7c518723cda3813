"""Generation shared by the techniques: numbered sources into a prompt, one LLM call, errors as trace events."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from harness.llm.client import LLMClient, LLMError
from harness.prompts import render
from harness.types import Hit, Trace


def numbered_sources(hits: Sequence[Hit], *, max_chars: int = 700) -> str:
    """`[1] text`, `[2] text`, ... (each text cut to `max_chars`), the form the answer prompts cite."""
    return "\n".join(f"[{i}] {h.text[:max_chars]}" for i, h in enumerate(hits, 1))


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

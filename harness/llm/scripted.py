"""A deterministic litellm provider for the unit tier: `scripted/<name>` models answer from a function.

Calls still go through `litellm.completion`, so the client's parsing, retries and accounting are
exercised; only the model is replaced. It never stands in for a measurement.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

from harness.llm._litellm import litellm

Responder = Callable[[list[dict[str, str]], dict[str, Any]], str]
_RESPONDERS: dict[str, Responder] = {}
_LOCK = threading.Lock()
_handler: Any = None


def _make_handler():
    ll = litellm()

    class ScriptedProvider(ll.CustomLLM):
        def completion(self, model: str, messages: list, *args: Any, **kwargs: Any):
            name = model.split("/", 1)[-1]
            responder = _RESPONDERS.get(name)
            if responder is None:
                raise ll.BadRequestError(message=f"no scripted model {name!r}", model=model, llm_provider="scripted")
            params = dict(kwargs.get("optional_params") or {})
            text = responder(messages, params)
            prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in messages)
            return ll.ModelResponse(
                model=f"scripted/{name}",
                choices=[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
                usage={"prompt_tokens": prompt_tokens, "completion_tokens": len(text.split()),
                       "total_tokens": prompt_tokens + len(text.split())},
            )

    return ScriptedProvider()


def register(name: str, responder: Responder) -> str:
    """Register a scripted model and return its litellm model string, `scripted/<name>`."""
    global _handler
    ll = litellm()
    with _LOCK:
        _RESPONDERS[name] = responder
        if _handler is None:
            _handler = _make_handler()
            ll.custom_provider_map = [p for p in ll.custom_provider_map if p.get("provider") != "scripted"] + [
                {"provider": "scripted", "custom_handler": _handler}]
            from litellm.utils import custom_llm_setup

            custom_llm_setup()
    return f"scripted/{name}"


def by_kind(table: dict[str, str | Callable[[str], str]], default: str = "") -> Responder:
    """A responder choosing its answer by the first table key found in the last user message.

    Values are fixed strings or functions of that message.
    """

    def respond(messages: list[dict[str, str]], params: dict[str, Any]) -> str:
        last = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        for key, answer in table.items():
            if key in last:
                return answer(last) if callable(answer) else answer
        return default

    return respond

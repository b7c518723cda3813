"""A run leaves no connection open: every call to an OpenAI-compatible server the harness was handed (the local
model's, a loopback API) goes through one shared SDK client per endpoint, closed with the run. litellm, handed
none, made one per call when threads called at once and dropped them unclosed: with the embedded model and a
project whose warnings are errors, `pytest -m benchmark --rag-protocol` passed every test and exited 1 on
`ResourceWarning: unclosed <socket ...>`."""
from __future__ import annotations

import pytest

from harness.llm import _litellm
from harness.llm.client import LLMClient


@pytest.mark.unit
def test_calls_to_one_endpoint_share_one_client_and_close_clients_closes_it():
    a = LLMClient("openai/m", api_base="http://127.0.0.1:9/v1", api_key="sk-local")
    b = a.with_role("judge")
    first = _litellm.openai_client(a.api_base, a.api_key)
    assert _litellm.openai_client(b.api_base, b.api_key) is first
    assert _litellm.openai_client("http://127.0.0.1:10/v1", "sk-local") is not first
    assert _litellm.close_clients() >= 2
    assert first.is_closed()
    assert _litellm.openai_client(a.api_base, a.api_key) is not first  # a later run gets a fresh one
    _litellm.close_clients()


@pytest.mark.unit
def test_the_client_is_handed_to_litellm_only_with_an_endpoint_and_a_key(monkeypatch: pytest.MonkeyPatch):
    seen: list[dict] = []

    def fake_completion(**kwargs):
        seen.append(kwargs)
        raise RuntimeError("stop here")

    monkeypatch.setattr(_litellm.litellm(), "completion", fake_completion)
    for kw in ({"api_base": "http://127.0.0.1:9/v1", "api_key": "sk-local"}, {"api_base": "http://127.0.0.1:9/v1"},
               {"api_key": "sk-x"}):
        with pytest.raises(Exception, match="stop here"):  # noqa: B017 - whichever error the client wraps it in
            LLMClient("openai/m", max_attempts=1, **kw).complete("hi")
    assert ["client" in k for k in seen] == [True, False, False]
    _litellm.close_clients()

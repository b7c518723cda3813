"""The LLM layer end to end: the configured model (default: the embedded local model) answers through
litellm; tokens/s and latency go to the report; an identical second run is served from the cache."""
from __future__ import annotations

import pytest

from harness.llm.cache import ResponseCache
from harness.llm.client import LLMClient

pytestmark = pytest.mark.benchmark
PROMPT = "Write a passage that answers the question.\n\nQuestion: why does a wing stall at high angle of attack?"


def test_llm_generation_throughput_and_cache(llm, tmp_path, measure):
    c = LLMClient(llm.model, api_base=llm.api_base, api_key=llm.api_key, label=llm.label,
                  cache=ResponseCache(tmp_path / "llm-cache"))
    first = c.complete(PROMPT, max_tokens=128, temperature=0.0)
    assert first.text.strip() and not first.cached and c.stats.calls == 1
    measure("llm_tokens_per_second", first.completion_tokens / first.latency_s, model=llm.label,
            completion_tokens=first.completion_tokens)
    measure("llm_latency_s", first.latency_s, model=llm.label, prompt_tokens=first.prompt_tokens)
    second = c.complete(PROMPT, max_tokens=128, temperature=0.0)
    assert second.cached and second.text == first.text
    assert c.stats.calls == 1 and c.stats.cache_hits == 1, "the second identical run made no model call"

"""The LLM layer end to end: the configured model (default: the embedded local model) answers through
litellm; tokens/s and latency go to the report; an identical second run is served from the cache."""
from __future__ import annotations

import pytest

from harness.llm.cache import ResponseCache
from harness.llm.client import LLMClient

pytestmark = pytest.mark.benchmark
PROMPT = "Write a passage that answers the question.\n\nQuestion: why does a wing stall at high angle of attack?"


def test_llm_generation_throughput_and_cache(rag_llm, tmp_path, rag_measure):
    c = rag_llm.with_cache(ResponseCache(tmp_path / "llm-cache"))
    first = c.complete(PROMPT, max_tokens=128, temperature=0.0)
    assert first.text.strip() and not first.cached and c.stats.calls == 1
    rag_measure("llm_tokens_per_second", first.completion_tokens / first.latency_s, model=rag_llm.label,
            completion_tokens=first.completion_tokens)
    rag_measure("llm_latency_s", first.latency_s, model=rag_llm.label, prompt_tokens=first.prompt_tokens)
    second = c.complete(PROMPT, max_tokens=128, temperature=0.0)
    assert second.cached and second.text == first.text
    assert c.stats.calls == 1 and c.stats.cache_hits == 1, "the second identical run made no model call"


def test_packaged_base_model_through_text_completion(tmp_path, rag_measure):
    """The second packaged model (gemma-3-270m BASE, Q4_K_M, split across PyPI part packages): joined once,
    served by the harness, reached through litellm's text-completion route with a few-shot prompt."""
    from harness.llm.local import LocalModelServer, LocalModelUnavailable
    from harness.prompts import load_prompts, render
    from harness.techniques.parsing import parse_lines

    try:
        server = LocalModelServer("gemma3-270m", log_path=tmp_path / "server.log").start()
    except LocalModelUnavailable as exc:
        pytest.skip(str(exc))
    try:
        c = LLMClient(server.litellm_model, api_base=server.api_base, api_key="sk-local", label="local/gemma3-270m")
        prompt = render(load_prompts("fusion")["completion"]["user"], query="why does a wing stall at high angle of attack?")
        c.complete("Question: what is lift?\nAnswer:", max_tokens=4)  # load and warm the model
        res = c.complete(prompt, max_tokens=64, stop=["\n\n"])
    finally:
        server.stop()
    queries = parse_lines("1." + res.text)
    assert queries, f"no query parsed from {res.text!r}"
    rag_measure("llm_tokens_per_second", res.completion_tokens / res.latency_s, model=c.label,
            completion_tokens=res.completion_tokens, route=server.litellm_model.split("/")[0])
    rag_measure("parsed_queries", len(queries), model=c.label)

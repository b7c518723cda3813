"""The budget's pace probe (`harness.llm.pace`): the median of the calls after the first, uncached, on the packaged
prompt; a failure raises as any model call does."""
from __future__ import annotations

import time

import pytest

from harness.llm.pace import PROBE_CALLS, probe_seconds
from harness.prompts import load_prompts

pytestmark = pytest.mark.unit


def test_the_probe_is_the_median_of_the_calls_after_the_first(rag_scripted_llm, tmp_path):
    from harness.llm.cache import ResponseCache

    # a one-token warm-up, then the timed calls: their median is 0.15 (the median of all three 0.2, their mean 0.27)
    delays = iter([0.5, 0.1, 0.2])
    prompts = []

    def answer(messages, params):
        prompts.append((messages, params))
        time.sleep(next(delays))
        return "Twenty-five minutes; at seven."

    llm = rag_scripted_llm(answer, name="pace-probe", cache=ResponseCache(tmp_path / "llm"))
    seconds = probe_seconds(llm)
    assert len(prompts) == PROBE_CALLS == 3, "every call reaches the model: the cache is not read"
    assert 0.15 <= seconds < 0.19
    p = load_prompts("pace")
    users = [m[-1]["content"] for m, _ in prompts]
    assert len(set(users)) == 3 and users[1].startswith("Request 2.\nContext:\n[Source 1] The Harbour Line")
    assert prompts[1][0][0] == {"role": "system", "content": p["system"]}
    assert [params["max_tokens"] for _, params in prompts] == [1, 160, 160] and p["max_tokens"] == 160
    assert all(params["temperature"] == 0.0 for _, params in prompts)


def test_a_probe_that_fails_raises_and_one_of_a_single_call_is_refused(rag_scripted_llm):
    def broken(messages, params):
        raise RuntimeError("the server went away")

    with pytest.raises(Exception, match="the server went away"):
        probe_seconds(rag_scripted_llm(broken, name="pace-broken", max_attempts=1))
    with pytest.raises(ValueError, match="at least 2 calls"):
        probe_seconds(rag_scripted_llm(lambda m, p: "x", name="pace-one"), calls=1)

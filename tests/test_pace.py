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

    # the first (warm-up) slowest; the median of the rest is 0.06 (their mean 0.137, the median of all four 0.18)
    delays = iter([0.4, 0.05, 0.3, 0.06])
    prompts = []

    def answer(messages, params):
        prompts.append((messages, params))
        time.sleep(next(delays))
        return "Twenty-five minutes; at seven."

    llm = rag_scripted_llm(answer, name="pace-probe", cache=ResponseCache(tmp_path / "llm"))
    seconds = probe_seconds(llm)
    assert len(prompts) == PROBE_CALLS == 4, "every call reaches the model: the cache is not read"
    assert 0.06 <= seconds < 0.1
    p = load_prompts("pace")
    messages, params = prompts[0]
    assert messages[0] == {"role": "system", "content": p["system"]} and p["user"] in messages[1]["content"]
    assert params["max_tokens"] == p["max_tokens"] == 32 and params["temperature"] == 0.0


def test_a_probe_that_fails_raises_and_one_of_a_single_call_is_refused(rag_scripted_llm):
    def broken(messages, params):
        raise RuntimeError("the server went away")

    with pytest.raises(Exception, match="the server went away"):
        probe_seconds(rag_scripted_llm(broken, name="pace-broken", max_attempts=1))
    with pytest.raises(ValueError, match="at least 2 calls"):
        probe_seconds(rag_scripted_llm(lambda m, p: "x", name="pace-one"), calls=1)

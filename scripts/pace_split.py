"""The pace probe's request read apart on one local model: the answer request as the probe sends it (up to 160
tokens), the same request with one token out (reading the prompt), and its context three times over with one
token out. One warm-up, then three of each, uncached, each numbered apart so that none reuses another's prompt.

    python scripts/pace_split.py smollm2-135m-instruct

Prints one line per request: kind, seconds, prompt tokens, completion tokens. Used for
docs/benchmarks/2026-11-27-pace-prompt-vs-answer.md.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from harness.llm.client import LLMClient
from harness.llm.local import LocalModelServer
from harness.prompts import load_prompts, render


def main(alias: str) -> None:
    p = load_prompts("pace")
    context = render(p["user"], n=0)
    with LocalModelServer(alias, parallel=4, n_threads=1, log_path=Path(f"pace-split-{alias}.log")) as server:
        client = LLMClient(server.litellm_model, api_base=server.api_base, api_key="sk-local")

        def timed(kind: str, prompt: str, max_tokens: int) -> None:
            t0 = time.perf_counter()
            r = client.complete(prompt, system=p["system"], max_tokens=max_tokens, temperature=0.0, use_cache=False)
            print(f"{kind:10s} {time.perf_counter() - t0:7.3f} s {r.prompt_tokens:5d} {r.completion_tokens:4d}")

        client.complete(render(p["user"], n=99), system=p["system"], max_tokens=1, use_cache=False)  # warm-up
        for i in range(3):
            timed("answer", render(p["user"], n=i + 1), int(p["max_tokens"]))
        for i in range(3):
            timed("prompt x3", f"Request {i + 10}.\n" + (context + "\n") * 3, 1)
        for i in range(3):
            timed("prompt", render(p["user"], n=i + 20), 1)


if __name__ == "__main__":
    main(sys.argv[1])

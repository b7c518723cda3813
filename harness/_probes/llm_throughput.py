"""Local inference at the machine's speed: prompt-processing and generation tokens/s of a llama.cpp server at a
given number of concurrent requests, beside what the machine allows.

- Prompt processing is compute-bound: its limit is the measured matmul rate (FLOP/s, float32 GEMM on the same
  threads) over the model's ≈ 2·N FLOPs per token (N = parameters, Kaplan et al. 2020).
- Generation of one sequence is memory-bound: each token streams every weight once, so its limit is the measured
  memory bandwidth over the model's weight bytes; c concurrent sequences share one pass over the weights
  (continuous batching), so c sequences may reach up to c times that, until compute binds.
"""
from __future__ import annotations

import json
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class MachineLimits:
    """Measured on this machine with `threads` threads: float32 GEMM rate and memory copy bandwidth."""

    threads: int
    matmul_gflops: float
    bandwidth_gbs: float

    def as_context(self) -> dict[str, Any]:
        return {"machine_threads": self.threads, "matmul_gflops": self.matmul_gflops, "bandwidth_gbs": self.bandwidth_gbs}


def measure_machine(threads: int = 2, *, size: int = 2048, copy_mib: int = 1024, repeats: int = 5) -> MachineLimits:
    """Best-of-`repeats` float32 matmul (size×size, 2·size³ FLOPs) and array copy (bytes read + written) rates,
    through torch on `threads` threads."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a, b = torch.randn(size, size), torch.randn(size, size)
        torch.mm(a, b)
        best = min(_timed(lambda: torch.mm(a, b)) for _ in range(repeats))
        gflops = 2 * size**3 / best / 1e9
        n = copy_mib * (1 << 20) // 4
        src, dst = torch.ones(n), torch.empty(n)
        dst.copy_(src)
        best = min(_timed(lambda: dst.copy_(src)) for _ in range(repeats))
        gbs = 2 * n * 4 / best / 1e9
    finally:
        torch.set_num_threads(old)
    return MachineLimits(threads, gflops, gbs)


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


@dataclass(frozen=True)
class ServerThroughput:
    """Aggregate tokens/s over `requests` requests sent `concurrency` at a time (wall time of the batch)."""

    concurrency: int
    requests: int
    prompt_tokens: int
    completion_tokens: int
    prompt_wall_s: float
    generation_wall_s: float

    @property
    def prompt_tps(self) -> float:
        return self.prompt_tokens / self.prompt_wall_s

    @property
    def generation_tps(self) -> float:
        return self.completion_tokens / self.generation_wall_s

    def as_context(self) -> dict[str, Any]:
        return {**asdict(self), "prompt_tps": self.prompt_tps, "generation_tps": self.generation_tps}


def _post(api_base: str, body: dict[str, Any], timeout: float = 600) -> dict[str, Any]:
    req = urllib.request.Request(f"{api_base}/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.load(r)


def _batch(api_base: str, bodies: list[dict[str, Any]], concurrency: int) -> tuple[float, list[dict[str, Any]]]:
    """Send `bodies` with at most `concurrency` in flight; (wall seconds, responses)."""
    out: list[dict[str, Any]] = [{} for _ in bodies]
    nxt, lock = [0], threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= len(bodies):
                return
            out[i] = _post(api_base, bodies[i])

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, out


def measure_server(api_base: str, model: str, concurrency: int, *, requests: int = 8, prompt_words: int = 400,
                   gen_tokens: int = 64, seed: int = 0) -> ServerThroughput:
    """Prompt processing: `requests` distinct prompts of about `prompt_words` words, 1 token generated each.
    Generation: `requests` short distinct prompts, `gen_tokens` tokens each (end-of-sequence ignored)."""
    import random

    rng = random.Random(seed)
    words = ("retrieval evidence passage answer model query document score rank claim measure table index "
             "vector corpus token batch server thread memory").split()

    def text(n: int, i: int) -> str:
        return f"[{i}] " + " ".join(rng.choice(words) for _ in range(n))

    common = {"model": model, "temperature": 0.0, "cache_prompt": False}
    pp_wall, pp = _batch(api_base, [{**common, "prompt": text(prompt_words, i), "max_tokens": 1}
                                    for i in range(requests)], concurrency)
    tg_wall, tg = _batch(api_base, [{**common, "prompt": text(8, 1000 + i), "max_tokens": gen_tokens,
                                     "ignore_eos": True} for i in range(requests)], concurrency)
    return ServerThroughput(concurrency, requests, sum(r["usage"]["prompt_tokens"] for r in pp),
                            sum(r["usage"]["completion_tokens"] for r in tg), pp_wall, tg_wall)


def model_meta(api_base: str) -> dict[str, Any]:
    """llama.cpp's `/v1/models` meta for the served model: n_params, size (weight bytes), n_ctx_train, ..."""
    with urllib.request.urlopen(f"{api_base}/models", timeout=10) as r:
        data = json.load(r)["data"]
    return dict(data[0].get("meta") or {})


def limits_for(meta: dict[str, Any], machine: MachineLimits) -> dict[str, float]:
    """Prompt tokens/s the matmul rate allows (2·n_params FLOPs a token) and one sequence's generation tokens/s
    the bandwidth allows (every weight byte read once a token)."""
    return {"prompt_tps_limit": machine.matmul_gflops * 1e9 / (2 * meta["n_params"]),
            "generation_tps_limit_one_sequence": machine.bandwidth_gbs * 1e9 / meta["size"]}

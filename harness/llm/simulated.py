"""A simulated OpenAI-compatible API on loopback, for measuring how the harness behaves against a live model:
configurable latency, a requests-per-minute limit (429 with Retry-After), a rate of 429s whatever the window (a
shared quota, an overloaded provider: `throttle_rate`), a rate of 500s and token counts,
deterministic answers, and with `api_key` set a 401 for any request that does not bear it. It records every
request (arrival time, status, billed tokens).

    with SimulatedAPI(responder, latency_s=0.3, rpm=60, error_rate=0.05) as api:
        llm = LLMClient("openai/sim", api_base=api.api_base, api_key="sk-sim")

Its latency, rate window, Retry-After and recorded times are in its `clock`'s seconds (harness.llm.clock): give
the server and its clients the same `ScaledClock(k)` and a 60 s window passes in 60/k real seconds for both.
"""
from __future__ import annotations

import json
import math
import random
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from harness.llm.clock import REAL_CLOCK, Clock

Responder = Callable[[list[dict[str, str]], dict[str, Any]], str]


def count_tokens(text: str) -> int:
    """The simulated tokenizer: one token per 4 characters, at least one per non-empty text."""
    return max(1, math.ceil(len(text) / 4)) if text else 0


@dataclass
class SimulatedLog:
    arrivals: list[float] = field(default_factory=list)  # the clock's time of every request received
    served: list[float] = field(default_factory=list)  # times of requests answered 200
    statuses: Counter = field(default_factory=Counter)
    prompt_tokens: int = 0  # billed: requests answered 200 only
    completion_tokens: int = 0

    def peak_rate(self, window_s: float = 60.0, times: list[float] | None = None) -> int:
        """The most requests in any window of `window_s` seconds (default: answered requests)."""
        ts = sorted(self.served if times is None else times)
        best, j = 0, 0
        for i, t in enumerate(ts):
            while ts[j] <= t - window_s:
                j += 1
            best = max(best, i - j + 1)
        return best


class SimulatedAPI:
    def __init__(self, responder: Responder, *, latency_s: float = 0.3, rpm: int | None = None,
                 error_rate: float = 0.0, seed: int = 0, retry_after_s: float | None = None,
                 window_s: float = 60.0, api_key: str | None = None, clock: Clock = REAL_CLOCK,
                 throttle_rate: float = 0.0):
        self.api_key = api_key
        self.responder, self.latency_s, self.rpm, self.error_rate = responder, latency_s, rpm, error_rate
        self.throttle_rate = throttle_rate  # a share of requests answered 429 (Retry-After: retry_after_s, else 1 s)
        self.retry_after_s, self.window_s, self.clock = retry_after_s, window_s, clock
        self.log = SimulatedLog()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._window: deque[float] = deque()
        self._server: ThreadingHTTPServer | None = None

    # ------------------------------------------------------------------ server
    @property
    def api_base(self) -> str:
        assert self._server is not None, "start the simulated API first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> "SimulatedAPI":
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body leave in two writes: with Nagle's algorithm on, the body would wait for the
            # client's delayed ACK (~40 ms a call on Linux), latency the API is not configured to have
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                status, headers, payload = api._reject(self.headers.get("Authorization")) or api._handle(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "SimulatedAPI":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ------------------------------------------------------------------ behaviour
    def _reject(self, authorization: str | None) -> tuple[int, dict[str, str], dict[str, Any]] | None:
        """A 401 as OpenAI words it, when a key is required and the request's is not it."""
        if self.api_key is None or authorization == f"Bearer {self.api_key}":
            return None
        with self._lock:
            self.log.arrivals.append(time.monotonic())
            self.log.statuses[401] += 1
        return 401, {}, {"error": {"message": "Incorrect API key provided (simulated).", "type": "invalid_request_error",
                                   "code": "invalid_api_key"}}

    def _handle(self, body: dict[str, Any]) -> tuple[int, dict[str, str], dict[str, Any]]:
        now = self.clock.monotonic()
        with self._lock:
            self.log.arrivals.append(now)
            if self.rpm is not None:
                while self._window and self._window[0] <= now - self.window_s:
                    self._window.popleft()
                if len(self._window) >= self.rpm:
                    wait = self.retry_after_s if self.retry_after_s is not None else \
                        self._window[0] + self.window_s - now
                    self.log.statuses[429] += 1
                    return 429, {"Retry-After": f"{max(wait, 0.001):.3f}"}, {
                        "error": {"message": "rate limit exceeded (simulated)", "type": "rate_limit_error"}}
            if self.throttle_rate and self._rng.random() < self.throttle_rate:  # not counted in the window
                self.log.statuses[429] += 1
                return 429, {"Retry-After": f"{self.retry_after_s or 1.0:.3f}"}, {
                    "error": {"message": "too many requests (simulated throttle)", "type": "rate_limit_error"}}
            if self.rpm is not None:
                self._window.append(now)
            if self.error_rate and self._rng.random() < self.error_rate:
                self.log.statuses[500] += 1
                return 500, {}, {"error": {"message": "internal error (simulated)", "type": "server_error"}}
        self.clock.sleep(self.latency_s)
        messages = body.get("messages", [])
        params = {k: v for k, v in body.items() if k not in ("messages", "model")}
        text = self.responder(messages, params)
        pt = sum(count_tokens(str(m.get("content", ""))) for m in messages)
        ct = count_tokens(text)
        with self._lock:
            self.log.statuses[200] += 1
            self.log.served.append(now)
            self.log.prompt_tokens += pt
            self.log.completion_tokens += ct
        return 200, {}, {
            "id": f"sim-{len(self.log.arrivals)}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "sim"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
        }


def extractive_responder(words: int = 45) -> Responder:
    """Answers the way a small model often does: the opening words of the first source in the prompt (JSON with
    reasoning steps where the system prompt asks for them). Deterministic, and unlike the dry-run stand-in the
    cost estimate uses, so an estimate checked against it is not checked against itself."""
    import re

    def respond(messages: list[dict[str, str]], params: dict[str, Any]) -> str:
        system = next((m["content"] for m in messages if m.get("role") == "system"), "")
        user = messages[-1]["content"] if messages else ""
        m = re.search(r"\[Source 1:[^\]]*\]\s*(.*?)(?:\[Source 2:|$)", user, re.S)
        passage = " ".join((m.group(1) if m else user).split()[:words])
        answer = f"According to the sources, {passage} [Source 1]"
        if "reasoning_steps" in system:
            return json.dumps({"reasoning_steps": f"Step 1: Source 1 says {passage[:120]}. Step 2: answer from it.",
                               "answer": answer})
        return answer

    return respond

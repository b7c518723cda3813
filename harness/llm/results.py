"""What a call returns and how it fails: the result record, the errors techniques catch, the client's counters,
and the JSON extractor structured output uses."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LLMResult:
    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0  # None: the model has no known price (declared in config or known to litellm)
    latency_s: float = 0.0
    cached: bool = False
    attempts: int = 1


class ReplayMiss(RuntimeError):
    """A request that the recorded cassette does not hold. Not an LLMError: techniques never absorb it as a
    model failure, so a replayed test fails and says how to re-record."""


class LLMError(RuntimeError):
    """A call failed for good (after retries, or at once for non-retryable errors)."""

    def __init__(self, message: str, *, attempts: int = 0, status_code: int | None = None):
        super().__init__(message)
        self.attempts, self.status_code = attempts, status_code


class StructuredOutputError(LLMError):
    """The model's output did not validate, even after one repair request; `raw` keeps its text."""

    def __init__(self, message: str, raw: str, first_raw: str):
        super().__init__(message)
        self.raw, self.first_raw = raw, first_raw


@dataclass
class ClientStats:
    calls: int = 0  # requests sent through litellm (cache hits excluded)
    cache_hits: int = 0
    retries: int = 0
    rate_limited: int = 0  # 429 answers (each lowered the client's concurrency and waited for Retry-After)
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    sleeps: list[float] = field(default_factory=list)

    @property
    def tokens_per_second(self) -> float:
        return self.completion_tokens / self.seconds if self.seconds else 0.0


def extract_json(text: str) -> str:
    """The first balanced JSON object or array in `text` (tolerates prose and code fences around it)."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        raise ValueError("no JSON object or array in the output")
    start = min(starts)
    opener = text[start]
    closer = "}" if opener == "{" else "]"
    depth, in_str, esc = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            esc = (ch == "\\") and not esc
            if ch == '"' and not esc:
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch == opener:
            depth += 1
        elif ch == closer:
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    raise ValueError("unbalanced JSON in the output")

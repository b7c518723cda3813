"""Which failures a call retries, how long a 429 asks to wait, and a cassette's replay miss."""
from __future__ import annotations

from harness.llm._litellm import litellm


def _cassette_miss(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if type(seen).__name__ == "CannotOverwriteExistingCassetteException" or \
                "Can't overwrite existing cassette" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _retry_after(exc: BaseException) -> float | None:
    """Seconds from a 429's Retry-After header, where the exception carries the response."""
    for holder in (getattr(exc, "response", None), exc):
        headers = getattr(holder, "headers", None) or getattr(holder, "litellm_response_headers", None)
        try:
            value = headers.get("retry-after") if headers is not None else None
            if value is not None:
                return max(0.0, float(value))
        except (AttributeError, TypeError, ValueError):
            continue
    return None


def _retryable(exc: BaseException) -> tuple[bool, int | None]:
    ll = litellm()
    status = getattr(exc, "status_code", None)
    transient = (ll.Timeout, ll.RateLimitError, ll.InternalServerError, ll.ServiceUnavailableError,
                 ll.APIConnectionError)
    if isinstance(exc, transient):
        return True, status
    if isinstance(status, int) and (status == 429 or status >= 500):
        return True, status
    return False, status

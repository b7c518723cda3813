"""Which failures a call retries, how long a 429 asks to wait, and a cassette's replay miss."""
from __future__ import annotations

from harness.llm._litellm import litellm
from harness.llm.failures import _chain


def _cassette_miss(exc: BaseException) -> bool:
    return any(type(e).__name__ == "CannotOverwriteExistingCassetteException" or
               "Can't overwrite existing cassette" in str(e) for e in _chain(exc))


def miss_diff(exc: BaseException) -> str | None:
    """How the request a cassette did not hold differs from the closest one it recorded, as vcrpy's own `body`
    matcher words it (a unified diff of the two bodies); None where the miss carries no recorded request."""
    for e in _chain(exc):
        failed, similar = getattr(e, "failed_request", None), getattr(e, "similar_requests", None)
        if failed is not None and similar:
            from vcr import matchers

            try:
                matchers.body(failed, similar[0][0])
            except AssertionError as diff:
                return str(diff)
            return None
    return None


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

"""Model calls that cannot succeed at all: an unreachable server, an unknown provider or model, a missing or
rejected key. Unlike one query's failure (a timeout after retries, a 500, a refused prompt) they would fail
every call alike, so the client raises `FatalModelError`, which no technique absorbs, and the run stops."""
from __future__ import annotations

import re
from typing import Iterator

# litellm folds client-side failures into InternalServerError / APIConnectionError, so the cause chain and the
# message are read, not only the exception's type
_UNKNOWN_MODEL = re.compile(r"LLM Provider NOT provided|model[_ ]not[_ ]found|does not exist or you do not have access",
                            re.I)
_MISSING_KEY = re.compile(r"missing credentials|api_key client option must be set|missing \w+ api key|"
                          r"no api key|api key (?:is )?(?:missing|not set|not provided)", re.I)
_NETWORK_BLOCKED = re.compile(r"network is disabled|A test tried to use socket", re.I)
_CONNECT_TYPES = {"ConnectError", "ConnectionRefusedError", "gaierror", "APIConnectionError"}
_TIMEOUT_TYPES = {"Timeout", "TimeoutException", "ReadTimeout", "WriteTimeout", "PoolTimeout", "APITimeoutError",
                  "TimeoutError", "timeout"}


class FatalModelError(RuntimeError):
    """The model cannot be called at all. Deliberately not an `LLMError`: techniques that fall back on a failed
    call (HyDE to the raw query, CRAG's evaluator, a judge's ruling) let it through, and the run stops on it."""

    def __init__(self, message: str, *, model: str, kind: str, status_code: int | None = None):
        super().__init__(message)
        self.model, self.kind, self.status_code = model, kind, status_code

    def again(self) -> "FatalModelError":
        """A fresh copy to raise (threads that raise one instance at once would share its traceback)."""
        return FatalModelError(str(self), model=self.model, kind=self.kind, status_code=self.status_code)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def fatal_kind(exc: BaseException) -> str | None:
    """Why `exc` would fail every call ("unreachable", "unknown model", "missing key", "rejected key"), or None
    for a failure of this call only (timeouts, rate limits, server errors, a bad prompt)."""
    chain = list(_chain(exc))
    names = {type(e).__name__ for e in chain}
    status = next((s for e in chain if isinstance(s := getattr(e, "status_code", None), int)), None)
    text = " ".join(str(e) for e in chain)
    if names & _TIMEOUT_TYPES:
        return None
    if names & {"AuthenticationError"} or status == 401:
        return "missing key" if _MISSING_KEY.search(text) else "rejected key"
    if names & {"PermissionDeniedError"} or status == 403:
        return "rejected key"
    if names & {"NotFoundError"} or status == 404 or _UNKNOWN_MODEL.search(text):
        return "unknown model"
    if _MISSING_KEY.search(text):
        return "missing key"
    if _NETWORK_BLOCKED.search(text):
        return "unreachable"
    # litellm's own APIConnectionError also wraps any exception a custom provider raises: only the transport's
    # connection errors (httpx, openai, the socket's) mean the server cannot be reached
    transport = [e for e in chain if type(e).__module__.split(".")[0] in ("httpx", "httpcore", "openai", "socket",
                                                                        "builtins")]
    if any(type(e).__name__ in _CONNECT_TYPES for e in transport):
        return "unreachable"
    return None


KIND_TEXT = {"unreachable": "the model's server cannot be reached", "unknown model": "unknown provider or model",
             "missing key": "no API key", "rejected key": "the API key was rejected",
             "stalled": ("the model's server stopped answering: calls in a row timed out on every attempt, none "
                         "answered between them (a slower model needs a longer harness.llm.timeout_s, or "
                         "local_timeout_s for the local one)")}


def is_timeout(exc: BaseException) -> bool:
    """Whether `exc` (or its cause) is a call that timed out."""
    return any(type(e).__name__ in _TIMEOUT_TYPES for e in _chain(exc))


def fatal_error(label: str, exc: BaseException, kind: str) -> FatalModelError:
    """The error the run stops on: the model, what is wrong, and litellm's own message."""
    detail = " ".join(str(exc).split()) or type(exc).__name__
    root = list(_chain(exc))[-1]
    if root is not exc and str(root) and str(root) not in detail:  # "Connection error." says less than its cause
        detail += f" ({type(root).__name__}: {' '.join(str(root).split())})"
    return FatalModelError(f"{label}: {KIND_TEXT.get(kind, kind)}: {type(exc).__name__}: {detail}", model=label,
                           kind=kind, status_code=getattr(exc, "status_code", None))


def unknown_model(model: str) -> str | None:
    """litellm's error when it cannot tell which provider serves `model` (read locally, no call made), else None.
    `local/*` (the harness's own servers) and `scripted/*` (registered at run time) are not litellm's to judge."""
    if model.split("/", 1)[0] in ("local", "scripted"):
        return None
    from harness.llm._litellm import litellm

    try:
        litellm().get_llm_provider(model)
    except Exception as exc:  # noqa: BLE001 - litellm raises BadRequestError (or worse) for a string it cannot route
        return " ".join(str(exc).split())
    return None

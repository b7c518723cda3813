"""Import litellm offline: its cost map comes from the bundled copy, never from the network."""
from __future__ import annotations

import functools
import os


@functools.lru_cache(maxsize=1)
def litellm():
    # Must be set before the first import: litellm fetches its cost map at import time otherwise.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm as _litellm

    _litellm.telemetry = False
    _litellm.suppress_debug_info = True
    _litellm.drop_params = True
    # litellm's response models finish building on first use, and pydantic warns there about a TypedDict
    # qualifier of litellm's (third-party noise); build them once now, that warning silenced, not in a caller
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*ReadOnly.*", category=UserWarning)
        _litellm.ModelResponse()
    return _litellm


_OPENAI_CLIENTS: dict[tuple[str, str], object] = {}
_OPENAI_LOCK = None


def openai_client(api_base: str, api_key: str | None) -> object:
    """One OpenAI SDK client per (endpoint, key), shared by every call and thread: litellm, handed none, makes one
    per call when several threads call at once and drops all but one, each with a connection it never closes."""
    global _OPENAI_LOCK
    import threading

    if _OPENAI_LOCK is None:
        _OPENAI_LOCK = threading.Lock()
    key = (api_base, api_key or "")
    with _OPENAI_LOCK:
        client = _OPENAI_CLIENTS.get(key)
        if client is None:
            import openai

            client = openai.OpenAI(base_url=api_base, api_key=api_key or "none", max_retries=0)
            _OPENAI_CLIENTS[key] = client
        return client


def close_clients() -> int:
    """Close the HTTP clients litellm keeps between calls (its per-model client cache and its shared session), so
    no connection to a server the harness started outlives the run: a project whose warnings are errors would
    otherwise fail at exit on an unclosed socket. Returns how many were closed."""
    import sys

    closed = 0
    for key in list(_OPENAI_CLIENTS):
        _OPENAI_CLIENTS.pop(key).close()  # type: ignore[attr-defined]
        closed += 1
    if "litellm" not in sys.modules:  # no call was made through litellm: nothing more to close
        return closed
    ll = litellm()
    cache = getattr(ll, "in_memory_llm_clients_cache", None)
    for client in list(getattr(cache, "cache_dict", {}).values()):
        close = getattr(client, "close", None)
        if callable(close) and not _is_coroutine_function(close):
            try:
                close()
                closed += 1
            except Exception:  # noqa: BLE001 - a client that cannot close is one we cannot help
                pass
    if cache is not None and hasattr(cache, "flush_cache"):
        cache.flush_cache()
    session = getattr(ll, "client_session", None)
    if session is not None and callable(getattr(session, "close", None)):
        session.close()
        closed += 1
    return closed


def _is_coroutine_function(fn: object) -> bool:
    import inspect

    return inspect.iscoroutinefunction(fn)

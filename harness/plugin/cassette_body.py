"""The cassettes' `body` matcher: vcrpy's own, less the diff it writes for every recorded request that does not
match.

On each replayed call vcrpy asks the cassette's recorded requests in turn whether they match, and its `body`
matcher writes a unified diff of the two bodies for each one that does not (`vcr.matchers._body_diff`), to serve
as a failure message that is read only when nothing matches. With 195 calls replayed from a cassette of 195, those
diffs were 37% of the first look's judge claim (py-spy). `same_body` decides exactly as vcrpy's matcher decides;
a miss is explained by `harness.llm.retry.miss_diff`, which asks vcrpy's matcher once.
"""
from __future__ import annotations

import functools
import json
from typing import Any

__all__ = ["same_body"]

_NOT_JSON = object()  # a body vcrpy's JSON transform cannot parse: vcrpy then compares the raw bytes


def same_body(new: Any, recorded: Any) -> None:
    """Match two requests' bodies as vcrpy's `body` matcher does: where both are read as JSON and nothing else,
    as parsed JSON (key order and spacing aside; each body parsed once); anything else by vcrpy's matcher itself.
    Raises AssertionError where they differ."""
    a, b = new.body, recorded.body
    if isinstance(a, bytes) and isinstance(b, bytes) and _json_only(new) and _json_only(recorded):
        x, y = _parsed_json(a), _parsed_json(b)
        if x is _NOT_JSON or y is _NOT_JSON:
            if a != b:
                raise AssertionError("the bodies differ (not JSON)")
        elif x != y:
            raise AssertionError("the bodies differ")
        return
    from vcr import matchers

    matchers.body(new, recorded)


same_body.__name__ = "body"  # vcrpy names a failing matcher by __name__, and previews the body only for "body"


def _header(request: Any, name: str) -> str:
    """A header as vcrpy's transformers read it (bytes decoded as UTF-8, lower case)."""
    value = request.headers.get(name, "")
    return (value.decode("utf-8") if isinstance(value, bytes) else value).lower()


def _json_only(request: Any) -> bool:
    """Whether vcrpy's JSON transform is the only one it applies to the body (no de-chunking, form or XML-RPC
    decoding), as `vcr.matchers._checker_transformer_pairs` decides."""
    content_type = _header(request, "Content-Type")
    return ("application/json" in content_type and "chunked" not in _header(request, "Transfer-Encoding")
            and "application/x-www-form-urlencoded" not in content_type
            and not ("text/xml" in content_type and "xmlrpc" in _header(request, "User-Agent")))


@functools.lru_cache(maxsize=4096)
def _parsed_json(body: bytes) -> Any:
    """A body as vcrpy's JSON transform reads it (None when empty), parsed once however often it is compared; the
    result is only ever compared, never changed."""
    if not body:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return _NOT_JSON

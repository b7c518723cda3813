"""The cassettes' body matcher (`harness.plugin.cassette_body.same_body`) matches exactly the requests vcrpy's own
`body` matcher matches, deciding the JSON ones itself (it skips the diff vcrpy writes for each mismatch); a replay
miss still says how the request differs from the closest recorded one."""
from __future__ import annotations

import json

import pytest

JSON = {"Content-Type": "application/json"}
BODY = {"model": "m", "messages": [{"role": "user", "content": "Is the sky green?"}], "temperature": 0}


def _request(body, headers=None):
    from vcr.request import Request

    return Request("POST", "http://127.0.0.1:8765/v1/chat/completions", body, dict(headers or {}))


def _dumps(obj, **kw) -> bytes:
    return json.dumps(obj, **kw).encode()


PAIRS = {
    "same bytes": (_dumps(BODY), JSON, _dumps(BODY), JSON),
    "same JSON, keys reordered and spaced": (_dumps(BODY), JSON, _dumps(dict(reversed(list(BODY.items()))), indent=2),
                                             JSON),
    "a different prompt": (_dumps(BODY), JSON, _dumps({**BODY, "messages": [{"role": "user", "content": "No."}]}),
                           JSON),
    "a different temperature": (_dumps(BODY), JSON, _dumps({**BODY, "temperature": 0.7}), JSON),
    "0 and 0.0 (equal as parsed JSON)": (_dumps({"t": 0}), JSON, _dumps({"t": 0.0}), JSON),
    "empty and no body": (b"", JSON, None, JSON),
    "empty and null": (b"", JSON, b"null", JSON),
    "neither parses": (b"{not json", JSON, b"{not json either", JSON),
    "neither parses, same bytes": (b"{not json", JSON, b"{not json", JSON),
    "one parses": (_dumps(BODY), JSON, b"{not json", JSON),
    "JSON against no content type": (_dumps(BODY), JSON, _dumps(BODY, indent=2), {}),
    "plain text": (b"a=1&b=2", {}, b"b=2&a=1", {}),
    "form bodies in another order": (b"a=1&b=2", {"Content-Type": "application/x-www-form-urlencoded"}, b"b=2&a=1",
                                     {"Content-Type": "application/x-www-form-urlencoded"}),
    "header case": (_dumps(BODY), {"content-type": "Application/JSON; charset=utf-8"}, _dumps(BODY, indent=1), JSON),
    "a content type given as bytes": (_dumps(BODY), {"Content-Type": b"application/json"}, _dumps(BODY, indent=1),
                                      JSON),
    "chunked JSON, framed differently": (b'7\r\n{"a":1}\r\n0\r\n\r\n', {**JSON, "Transfer-Encoding": "chunked"},
                                         b'3\r\n{"a\r\n4\r\n":1}\r\n0\r\n\r\n', {**JSON, "Transfer-Encoding": "chunked"}),
    "XML-RPC against JSON": (b'{"a":1,"b":2}', {"Content-Type": "application/json, text/xml", "User-Agent": "xmlrpc"},
                             b'{"b":2,"a":1}', JSON),
    "NaN, the same bytes": (b"NaN", JSON, b"NaN", JSON),
    "[NaN], the same bytes": (b"[NaN]", JSON, b"[NaN]", JSON),
    "true and 1": (b'{"a":true}', JSON, b'{"a":1}', JSON),
}


def _matches(matcher, new, recorded) -> bool:
    try:
        result = matcher(new, recorded)
    except AssertionError:
        return False
    return result is None or bool(result)


@pytest.mark.unit
@pytest.mark.parametrize("case", list(PAIRS))
def test_the_body_matcher_matches_what_vcrpys_matches(case):
    from vcr import matchers

    from harness.plugin.cassette_body import same_body

    a, ha, b, hb = PAIRS[case]
    for new, recorded in ((_request(a, ha), _request(b, hb)), (_request(b, hb), _request(a, ha))):
        assert _matches(same_body, new, recorded) == _matches(matchers.body, new, recorded), case


@pytest.mark.unit
def test_the_table_holds_matches_and_mismatches():
    """The comparison above is only worth something if vcrpy itself reads some pairs as matching and some not."""
    from vcr import matchers

    seen = {_matches(matchers.body, _request(a, ha), _request(b, hb)) for a, ha, b, hb in PAIRS.values()}
    assert seen == {True, False}


@pytest.mark.unit
def test_the_harness_cassettes_use_it(tmp_path):
    import vcr as vcrpy

    from harness.plugin.cassette_body import same_body
    from harness.plugin.model_fixtures import configure_vcr

    recorder = vcrpy.VCR(cassette_library_dir=str(tmp_path))
    configure_vcr(recorder)
    assert "body" in recorder.match_on and recorder.matchers["body"] is same_body


@pytest.mark.unit
@pytest.mark.parametrize("case", ["same bytes", "same JSON, keys reordered and spaced", "a different prompt",
                                  "header case", "neither parses"])
def test_json_bodies_are_decided_without_vcrpys_matcher(case, monkeypatch):
    """The point of the matcher: a JSON request never reaches vcrpy's `body` (and its diff)."""
    from vcr import matchers

    from harness.plugin.cassette_body import same_body

    def refuse(*_):
        raise RuntimeError("vcrpy's body matcher was asked")

    a, ha, b, hb = PAIRS[case]
    new, recorded = _request(a, ha), _request(b, hb)
    expected = _matches(matchers.body, new, recorded)
    monkeypatch.setattr(matchers, "body", refuse)
    assert _matches(same_body, new, recorded) == expected


RECORDED = """interactions:
- request:
    body: '{"messages":[{"role":"user","content":"a prompt somebody recorded"}],"model":"smollm2-135m-instruct"}'
    headers:
      content-type:
      - application/json
    method: POST
    uri: http://127.0.0.1:8765/v1/chat/completions
  response:
    body:
      string: '{"id":"x","object":"chat.completion","created":0,"model":"smollm2-135m-instruct","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}'
    headers:
      content-type:
      - application/json
    status:
      code: 200
      message: OK
version: 1
"""


@pytest.mark.unit
def test_a_replay_miss_shows_how_the_request_differs_from_the_closest_recorded(tmp_path):
    import vcr as vcrpy

    from harness.llm.client import LLMClient, ReplayMiss
    from harness.plugin.model_fixtures import REPLAY_API_BASE, configure_vcr

    (tmp_path / "one.yaml").write_text(RECORDED, encoding="utf-8")
    recorder = vcrpy.VCR(cassette_library_dir=str(tmp_path), record_mode="none")
    configure_vcr(recorder)
    llm = LLMClient("openai/smollm2-135m-instruct", api_base=REPLAY_API_BASE, api_key="sk-local", max_attempts=1)
    with recorder.use_cassette("one.yaml"), pytest.raises(ReplayMiss) as miss:
        llm.complete("a prompt nobody recorded")
    first, *rest = str(miss.value).splitlines()
    assert "not in the test's cassette" in first and "record-cassettes.sh" in first, "the cause in one line"
    diff = "\n".join(rest)
    assert "a prompt somebody recorded" in diff and "a prompt nobody recorded" in diff, str(miss.value)

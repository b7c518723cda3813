"""The cassettes' body matcher (`harness.plugin.model_fixtures.same_body`) matches exactly the requests vcrpy's own
`body` matcher matches; it only skips the diff vcrpy writes for each mismatch."""
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

    from harness.plugin.model_fixtures import same_body

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

    from harness.plugin.model_fixtures import configure_vcr, same_body

    recorder = vcrpy.VCR(cassette_library_dir=str(tmp_path))
    configure_vcr(recorder)
    assert "body" in recorder.match_on and recorder.matchers["body"] is same_body

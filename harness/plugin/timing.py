"""The pytest side of the report's timing section: a span around every fixture setup and every test phase
(setup, call, teardown), each shipped as a record on its test's report (so xdist carries it to the controller).
The figures are in `harness.report.timing`; the LLM counts come from `harness.llm.meter`."""
from __future__ import annotations

import itertools
import json
import os
from typing import Any, Generator

import pytest

from harness.plugin.instances import instance_of
from harness.plugin.state import CONTROL_KEY, PROP_RECORD
from harness.llm.meter import COUNTS, METER
from harness.report.collector import jsonable
from harness.report.timing import SpanRecorder

_SEQ = itertools.count()  # keeps two records of one test apart, whatever their figures


def record_events(item: pytest.Item, phase: str, events: list[dict[str, Any]]) -> None:
    """Attach timing events to the test's reports as one record."""
    if events:
        record = {"kind": "timing", "nodeid": item.nodeid, "phase": phase, "seq": next(_SEQ), "events": events}
        item.user_properties.append((PROP_RECORD, json.dumps(jsonable(record), sort_keys=True)))


def record_control(item: pytest.Item, name: str, wall_s: float, child: dict[str, Any]) -> None:
    """A negative control's fresh pytest process as a phase: its wall time here, its LLM counts from its own
    results.json (unknown, None, when it wrote none)."""
    spent = (child.get("timing") or {}).get("total") or {}
    record_events(item, "control", [{"span": "control", "name": name, "nodeid": item.nodeid, "wall_s": wall_s,
                                     **{k: spent.get(k) for k in COUNTS}}])


def _control(item: pytest.Item) -> dict[str, Any]:
    state = item.stash.get(CONTROL_KEY, None)
    return {"control": state["name"]} if state else {}


class TimingHooks:
    """Times each test phase and each fixture setup inside one, exclusively of the spans nested in it."""

    def __init__(self) -> None:
        self.recorder = SpanRecorder(METER.snapshot)
        self._at: tuple[pytest.Item, str] | None = None  # the test and phase running now
        # per wider-scoped fixture name, the id of its latest setup: pytest keeps one instance of a fixture, the
        # latest, so that is the one a later test uses
        self._latest: dict[str, str] = {}
        self._ids = (f"{os.getpid()}:{n}" for n in itertools.count())  # unique across xdist workers too

    def _phase(self, item: pytest.Item, when: str) -> Generator[None, Any, Any]:
        labels: dict[str, Any] = {"span": when, "nodeid": item.nodeid, **_control(item)}
        if when == "call":
            labels["uses"] = {n: self._latest[n] for n in getattr(item, "fixturenames", ()) if n in self._latest}
        outer, self._at = self._at, (item, when)
        try:
            with self.recorder.span(**labels):
                return (yield)
        finally:
            self._at = outer
            if outer is None:  # a phase nested in another (a test run inside a test) leaves them to the outer one
                record_events(item, when, self.recorder.drain())

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, Any, Any]:
        return (yield from self._phase(item, "setup"))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:
        return (yield from self._phase(item, "call"))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, Any]:
        return (yield from self._phase(item, "teardown"))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef[Any],
                             request: pytest.FixtureRequest) -> Generator[None, Any, Any]:
        if self._at is None:
            return (yield)
        item, when = self._at
        sid = next(self._ids)
        # a wider set-up that depends on a parametrised fixture is named by its instance (a dataset's index per
        # dataset), so the cost book keeps each apart
        instance = instance_of(item, fixturedef.argname) if fixturedef.scope != "function" else fixturedef.argname
        try:
            with self.recorder.span(span="fixture", name=fixturedef.argname, scope=fixturedef.scope, id=sid,
                                    nodeid=item.nodeid, phase=when, **_control(item),
                                    **({"instance": instance} if instance != fixturedef.argname else {})):
                return (yield)
        finally:
            if fixturedef.scope != "function":
                self._latest[fixturedef.argname] = sid

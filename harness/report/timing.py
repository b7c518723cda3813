"""Where a run's time goes: per phase and per claim, wall time, LLM calls, tokens, cache hits and queries.

Raw events are spans timed *exclusively* (a span leaves out the spans opened inside it), each a dict with
`span` ("fixture", "setup", "call", "teardown" or "control"), `nodeid` (the test that ran it), `wall_s`, and the
LLM counts of `harness.llm.meter` over it. A fixture span also has `name`, `scope`, `phase` (the test phase it
was set up in) and `id`, and `instance` where it is a wider set-up that depends on a parametrised fixture (a
dataset's index: `rag_dense_store[rag_dataset_name=cranfield]`); a call span `uses` ({fixture name: the id of the setup it used} for the wider-scoped
fixtures its test requests); a span run under a negative control, `control`; a control span (a control's fresh
pytest process) may lack the counts, which are then unknown (None).

Phases: `fixture NAME` (every setup of that fixture, or of that instance, summed: a session fixture is set up
once, by whichever test first requests it), and per test `setup NODEID` (its setup outside any fixture), `call NODEID` (its call, less
fixtures it set up lazily) and `teardown NODEID`. Claims (spec id x dataset, from the run's checks): the call of
the test(s) that checked it; `fixture_setup`, the fixture setups those tests paid themselves; `shared_setup`, the
setups of wider-scoped fixtures they used that another test had paid; and queries used out of available where
the check's context says so (`queries_used`/`queries_available`, else `n` out of `available`).
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from html import escape
from typing import Any, Callable, Iterable, Iterator, Mapping

from harness.llm.meter import COUNTS

FIELDS = ("wall_s", *COUNTS)
HTML_PHASES = 30  # the HTML lists this many phases, slowest first, and sums the rest in one line


class SpanRecorder:
    """Nested spans, each timed exclusively of the spans opened inside it; finished spans wait in `finished`."""

    def __init__(self, counts: Callable[[], Mapping[str, float]], clock: Callable[[], float] = time.perf_counter):
        self._counts, self._clock = counts, clock
        self._stack: list[dict[str, float]] = []  # per open span: the inclusive totals of its finished children
        self.finished: list[dict[str, Any]] = []

    def _now(self) -> dict[str, float]:
        return {"wall_s": self._clock(), **{k: self._counts()[k] for k in COUNTS}}

    @contextmanager
    def span(self, **labels: Any) -> Iterator[None]:
        """Time the block; on exit its event (labels and exclusive figures) joins `finished`."""
        start = self._now()
        children: dict[str, float] = {k: 0.0 if k == "wall_s" else 0 for k in FIELDS}
        self._stack.append(children)
        try:
            yield
        finally:
            end = self._now()
            self._stack.pop()
            total = {k: end[k] - start[k] for k in FIELDS}
            if self._stack:
                parent = self._stack[-1]
                for k in FIELDS:
                    parent[k] += total[k]
            self.finished.append({**labels, **{k: total[k] - children[k] for k in FIELDS}})

    def drain(self) -> list[dict[str, Any]]:
        """The finished events, oldest first; `finished` is emptied."""
        out, self.finished = self.finished, []
        return out


# ---------------------------------------------------------------- aggregation
def phase_name(event: Mapping[str, Any]) -> str:
    """`fixture hyde_arm`, `fixture rag_dense_store[rag_dataset_name=cranfield]` (a wider set-up's instance),
    `call tests/x.py::test_a`, `setup ... [under control NAME]`, `control NAME (fresh pytest process)`."""
    span = event["span"]
    if span == "fixture":
        return f"fixture {event.get('instance') or event['name']}"
    if span == "control":
        return f"control {event['name']} (fresh pytest process)"
    under = f" [under control {event['control']}]" if event.get("control") else ""
    return f"{span} {event['nodeid']}{under}"


def _add(acc: dict[str, Any], event: Mapping[str, Any]) -> None:
    """Add an event's figures to `acc`; a count the event lacks is unknown, and so is the sum (None)."""
    for k in FIELDS:
        if acc.get(k, 0) is None or event.get(k) is None:
            acc[k] = None
        else:
            acc[k] = acc.get(k, 0) + event[k]


def _rounded(row: dict[str, Any]) -> dict[str, Any]:
    for k in FIELDS:
        if isinstance(row.get(k), float):
            row[k] = round(row[k], 6) if k == "wall_s" else int(round(row[k]))
    return row


def _slowest_first(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (-(r.get("wall_s") or 0.0), r["name"]))


def phases(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per phase name, slowest first: `kind`, `count` (setups or runs summed) and the figures; fixture
    rows also carry their `scope`."""
    rows: dict[str, dict[str, Any]] = {}
    for ev in events:
        name = phase_name(ev)
        row = rows.get(name)
        if row is None:
            row = rows[name] = {"name": name, "kind": ev["span"], "count": 0}
            if ev["span"] == "fixture":
                row["scope"] = ev.get("scope")
        row["count"] += 1
        _add(row, ev)
    return [_rounded(r) for r in _slowest_first(rows.values())]


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def queries_of(context: Mapping[str, Any]) -> dict[str, int]:
    """Queries used and available as a check's context gives them: `queries_used`/`queries_available`, else
    `n` out of `available` (a check that names the queries available counts in `n` those it used). Only what
    the context says, as integers: nothing is guessed."""
    available = _int(context.get("queries_available", context.get("available")))
    used = _int(context.get("queries_used"))
    if used is None and "queries_used" not in context and _int(context.get("available")) is not None:
        used = _int(context.get("n"))
    return {k: v for k, v in (("queries_used", used), ("queries_available", available)) if v is not None}


def _setup_sum(events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Fixture setups summed, with the fixtures' names, slowest first."""
    events = list(events)
    out: dict[str, Any] = dict.fromkeys(FIELDS, 0)
    for ev in events:
        _add(out, ev)
    out["fixtures"] = [r["name"].split(" ", 1)[1] for r in phases(events)]
    return _rounded(out)


def claims(events: Iterable[Mapping[str, Any]], checks: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (spec id, dataset) checked, slowest call first (see the module's docstring)."""
    calls: dict[str, list[Mapping[str, Any]]] = {}
    paid: dict[str, list[Mapping[str, Any]]] = {}
    setups: dict[str, Mapping[str, Any]] = {}
    for ev in events:
        if ev["span"] == "call" and not ev.get("control"):
            calls.setdefault(ev["nodeid"], []).append(ev)
        elif ev["span"] == "fixture":
            paid.setdefault(ev["nodeid"], []).append(ev)
            setups[ev.get("id") or f"{ev['nodeid']} {ev['name']}"] = ev
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for c in checks:
        groups.setdefault((c["spec_id"], (c.get("context") or {}).get("dataset") or ""), []).append(c)
    per_test: dict[str, set[tuple[str, str]]] = {}
    for key, cs in groups.items():
        for c in cs:
            per_test.setdefault(c["nodeid"], set()).add(key)
    rows = []
    for (spec_id, dataset), cs in groups.items():
        tests = sorted({c["nodeid"] for c in cs if c["nodeid"] in calls})
        if not tests:
            continue
        row: dict[str, Any] = {"name": spec_id + (f" on {dataset}" if dataset else ""), "spec_id": spec_id,
                               "dataset": dataset, "tests": tests}
        for t in tests:
            for ev in calls[t]:
                _add(row, ev)
        for c in cs:  # the largest figure any of its checks gives (they agree when there is one check)
            for k, v in queries_of(c.get("context") or {}).items():
                row[k] = max(row.get(k, v), v)
        row["fixture_setup"] = _setup_sum(ev for t in tests for ev in paid.get(t, []))
        used = {i for t in tests for ev in calls[t] for i in (ev.get("uses") or {}).values()}
        row["shared_setup"] = _setup_sum(setups[i] for i in sorted(used)
                                         if i in setups and setups[i]["nodeid"] not in tests)
        shared = max(len(per_test.get(t, ())) for t in tests)
        if shared > 1:
            row["claims_in_test"] = shared  # the test decided several claims: each row shows its whole call
        rows.append(_rounded(row))
    return _slowest_first(rows)


def timing_section(events: Iterable[Mapping[str, Any]], checks: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """results.json's `timing`: `phases`, `claims` and the `total` over every event."""
    events = list(events)
    total: dict[str, Any] = dict.fromkeys(FIELDS, 0)
    for ev in events:
        _add(total, ev)
    return {"phases": phases(events), "claims": claims(events, checks), "total": _rounded(total)}


# ---------------------------------------------------------------- terminal and HTML
def seconds_text(s: float | None) -> str:
    """`0.012s`, `4.20s`, `3m05s`; empty when unknown."""
    if s is None:
        return ""
    if s < 1:
        return f"{s:.3f}s"
    if s < 60:
        return f"{s:.2f}s"
    r = int(round(s))
    return f"{r // 60}m{r % 60:02d}s" if r < 3600 else f"{r // 3600}h{r % 3600 // 60:02d}m"


def _n(v: Any) -> str:
    return "?" if v is None else f"{v:,}"


def _queries(row: Mapping[str, Any]) -> str:
    used, avail = row.get("queries_used"), row.get("queries_available")
    if used is None and avail is None:
        return ""
    return f"{'?' if used is None else used}/{'?' if avail is None else avail}"


def timing_lines(section: Mapping[str, Any], top: int = 5) -> list[str]:
    """The terminal's slowest `top` phases and claims (empty when nothing was timed)."""
    ph, cl = section.get("phases") or [], section.get("claims") or []
    if not ph:
        return []
    head = f"{'wall':>9} {'calls':>6} {'cached':>6} {'tokens (prompt/completion)':>27}  "

    def figures(r: Mapping[str, Any]) -> str:
        tokens = f"{_n(r.get('prompt_tokens'))}/{_n(r.get('completion_tokens'))}"
        return f"{seconds_text(r.get('wall_s')):>9} {_n(r.get('llm_calls')):>6} {_n(r.get('cache_hits')):>6} {tokens:>27}  "

    lines = [f"slowest phases of {len(ph)}:", head + "phase"]
    lines += [figures(r) + r["name"] + (f" (x{r['count']})" if r.get("count", 1) > 1 else "") for r in ph[:top]]
    if cl:
        lines += [f"slowest claims of {len(cl)} (the call of the test that checked each; set up: fixtures that test "
                  "set up; shared: those it used from an earlier test):", head + "claim"]
        for r in cl[:top]:
            q = _queries(r)
            lines.append(figures(r) + r["name"] + (f"  queries {q}" if q else "")
                         + _setup_text("set up", r.get("fixture_setup")) + _setup_text("shared", r.get("shared_setup")))
    t = section.get("total") or {}
    lines.append(f"in tests: {seconds_text(t.get('wall_s'))}, {_n(t.get('llm_calls'))} LLM calls, "
                 f"{_n(t.get('cache_hits'))} cache hits, {_n(t.get('prompt_tokens'))} prompt and "
                 f"{_n(t.get('completion_tokens'))} completion tokens")
    return lines


def _setup_text(label: str, setup: Mapping[str, Any] | None, names: int = 2) -> str:
    """`  set up 3m05s (hyde_arm, dense_arm, +4)`; empty without fixtures."""
    setup = setup or {}
    fs = list(setup.get("fixtures") or [])
    if not fs:
        return ""
    more = f", +{len(fs) - names}" if len(fs) > names else ""
    return f"  {label} {seconds_text(setup.get('wall_s'))} ({', '.join(fs[:names])}{more})"


def _setup_cell(setup: Mapping[str, Any] | None) -> str:
    setup = setup or {}
    fs = setup.get("fixtures") or []
    if not fs:
        return "<td class=msg></td>"
    return (f"<td class=msg>{escape(seconds_text(setup.get('wall_s')))}, {_n(setup.get('llm_calls'))} LLM calls: "
            f"{escape(', '.join(fs))}</td>")


def _shared_call(r: Mapping[str, Any]) -> str:
    k = r.get("claims_in_test")
    return f"<div class=muted>its test checked {k} claims: the call is theirs together</div>" if k else ""


def _cells(r: Mapping[str, Any]) -> str:
    return "".join(f"<td class=num>{escape(v)}</td>" for v in (
        seconds_text(r.get("wall_s")), _n(r.get("llm_calls")), _n(r.get("prompt_tokens")),
        _n(r.get("completion_tokens")), _n(r.get("cache_hits"))))


def timing_html(section: Mapping[str, Any] | None, top: int = HTML_PHASES) -> str:
    """The report's "Where the time goes" section: phases and claims, slowest first (empty when none)."""
    ph = (section or {}).get("phases") or []
    if not ph:
        return ""
    t = section["total"]  # type: ignore[index]
    figs = "<th>wall</th><th>LLM calls</th><th>prompt tokens</th><th>completion tokens</th><th>cache hits</th>"
    rows = "".join(f"<tr><td>{escape(r['name'])}</td><td>{escape(str(r.get('scope') or r['kind']))}</td>"
                   f"<td class=num>{r['count']}</td>{_cells(r)}</tr>" for r in ph[:top])
    rest = ph[top:]
    if rest:
        more = sum(r.get("wall_s") or 0.0 for r in rest)
        rows += (f"<tr><td colspan=9 class=muted>{len(rest)} more phases, {escape(seconds_text(more))} in all "
                 "(every phase is in results.json)</td></tr>")
    out = ["<h2>Where the time goes</h2>",
           f"<p class=muted>In tests: {escape(seconds_text(t.get('wall_s')))}, {_n(t.get('llm_calls'))} LLM calls, "
           f"{_n(t.get('cache_hits'))} cache hits. A fixture's setup is a phase of its own, paid once by whichever "
           "test first requests it; a test's setup, call and teardown leave out the fixtures set up inside them.</p>",
           f"<table><tr><th>phase</th><th>scope</th><th>runs</th>{figs}</tr>{rows}</table>"]
    cl = section.get("claims") or []  # type: ignore[union-attr]
    if cl:
        crow = "".join(f"<tr><td>{escape(r['name'])}{_shared_call(r)}</td>{_cells(r)}<td class=num>{escape(_queries(r))}</td>"
                       f"{_setup_cell(r.get('fixture_setup'))}{_setup_cell(r.get('shared_setup'))}</tr>" for r in cl)
        out.append("<h3>Claims: the call of the test that checked each, slowest first</h3>"
                   f"<table><tr><th>claim</th>{figs}<th>queries used / available</th>"
                   "<th>fixture setups its test paid</th><th>shared fixture setups paid by an earlier test</th></tr>"
                   f"{crow}</table>")
    return "".join(out)

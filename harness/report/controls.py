"""The negative-control outcomes of a run, as terminal lines and as the HTML report's controls section.

Outcomes (`harness.report.summary.CONTROL_ORDER`): killed (the spec's own check failed under the control, or
the code under test raised), undecided, crashed, not killed by its check (a test failed under the control,
but on another assertion while the spec's check passed or was never reached), survived, missing, property,
skipped. Every outcome but killed, undecided, property and skipped fails a `--negative-controls` run.
"""
from __future__ import annotations

from html import escape
from typing import Any

from harness.report.summary import FAILING_CONTROL_OUTCOMES

_GOOD = ("killed", "property")
_CLASS = {"killed": "pass", "undecided": "inconclusive", "property": "xfail", "skipped": "skipped"}


def _counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in rows:
        c = r.get("control")
        if c:
            counts[c["outcome"]] = counts.get(c["outcome"], 0) + 1
    return counts


def _what(c: dict[str, Any]) -> str:
    return f"{c['name']} ({c.get('breaks')})" if c.get("name") else "no control named in the catalogue"


def control_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Per spec whose tests ran under --negative-controls: its control and whether the check failed under it."""
    lines = []
    for r in rows:
        c = r.get("control")
        if not c or c["outcome"] in _GOOD:
            continue
        lines.append(f"{r['id']}: {c['outcome']} — {_what(c)}" + (f": {c['detail']}" if c.get("detail") else ""))
    counts = _counts(rows)
    lines.append("controls: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    failing = [f"{counts[k]} {k}" for k in FAILING_CONTROL_OUTCOMES if counts.get(k)]
    if failing:
        lines.append(f"{FAILS_THE_RUN}: {', '.join(failing)} (a check that still passes with what it tests broken, "
                     "fails for another reason, cannot run under its control, or has none, proves nothing; see the "
                     "lines above)")
    return lines


FAILS_THE_RUN = "the run fails (exit 1) on its negative controls"


def controls_html(rows: list[dict[str, Any]]) -> str:
    """The HTML report's negative-controls section ('' when no test ran under a control)."""
    ran = [r for r in rows if r.get("control")]
    if not ran:
        return ""
    body = []
    for r in ran:
        c = r["control"]
        cls = _CLASS.get(c["outcome"], "fail")
        body.append(f'<tr><td><a href="#{escape(r["id"])}">{escape(r["id"])}</a></td><td>{escape(_what(c))}</td>'
                    f'<td><span class="v v-{cls}">{escape(c["outcome"])}</span></td>'
                    f'<td class=msg>{escape(c.get("detail") or "")}</td>'
                    f'<td class=msg>{escape(", ".join(c.get("killed_by") or []))}</td></tr>')
    counts = ", ".join(f"{v} {escape(k)}" for k, v in sorted(_counts(rows).items()))
    return ("<h2>Negative controls</h2><p class=muted>Each spec's tests re-run under a deliberately broken variant "
            "of what it measures. <b>killed</b>: the spec's own check failed (or the code under test raised); "
            "<b>not killed by its check</b>: a test failed on another assertion while the check passed; "
            f"<b>survived</b>: every test passed. {counts}</p><table><tr><th>spec</th><th>control (what it breaks)"
            "</th><th>outcome</th><th>detail</th><th>killed by</th></tr>" + "".join(body) + "</table>")

"""Shared formatting of the HTML report: numbers, escaping, verdict badges, nested values as plain text."""
from __future__ import annotations

import json
from html import escape
from typing import Any


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list) and len(v) == 2 and all(isinstance(x, (int, float)) for x in v):
        return f"[{v[0]:.3g}, {v[1]:.3g}]"
    return str(v)


def _note(message: str | None) -> str:
    """A test's message, unless it is a failed check's, which the value and condition columns already say."""
    return "" if not message or "SpecCheckFailed" in message else message


def _e(v: Any) -> str:
    return escape(_fmt(v), quote=True)


def _paren(v: Any) -> str:
    return f' <span class="muted">({_e(v)})</span>' if v is not None else ""


def _verdict(v: str) -> str:
    return f'<span class="v v-{escape(v.replace(" ", "-"))}">{escape(v)}</span>'



def plain(v: Any) -> str:
    """A value as plain text: numbers to 4 significant digits, dicts as `k: v; …`, lists comma-separated (never a
    Python repr such as `np.float64(…)` or `{'a': 1}`)."""
    if isinstance(v, dict):
        return "; ".join(f"{k}: {plain(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(plain(x) for x in v) + "]"
    if isinstance(v, bool) or v is None:
        return str(v) if v is not None else ""
    if isinstance(v, int):
        return str(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    return f"{f:.4g}"


def hash_label(digest: Any) -> str:
    """`sha256` for a full 64-hex-digit digest, `sha256 (first N hex digits)` for a prefix."""
    n = len(str(digest or ""))
    return "sha256" if n == 64 else f"sha256 (first {n} hex digits)"


def json_script(element_id: str, data: Any) -> str:
    """Data for the page's script, inert (`application/json`); every `<` escaped so no text can close the tag."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")
    return f'<script type="application/json" id="{escape(element_id, quote=True)}">{text}</script>'

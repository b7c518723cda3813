"""Negative controls: for every spec, a deliberately broken variant of the thing it is named after, under
which its own check must fail. A check that still passes under its control proves nothing.

A control is a named patch (`apply(monkeypatch)`) registered with `@control(name, breaks=...)`; the
catalogue names it in a spec's `control:` field, and `pytest --negative-controls` re-runs each spec's tests
under it (see `harness.plugin.hooks`). Patches replace a library object everywhere it is referenced
(`replace_everywhere`), including modules that imported it by name, so tests see the broken variant.

The registry is `registry.py`; the controls live beside it, one module per family of what they break (`hyde`,
`fusion`, `crag`, ...), each importing the registry; this package imports them all, so that importing it registers them.
"""
from __future__ import annotations

from harness.control_env import ENV, active_control  # ENV: set while a control runs
from harness.plugin.controls.registry import (
    CONTROLS, Control, apply_from_env, control, family_of, get_control, replace_everywhere, restore_everywhere,
    statistics_control_in_force,
)

# every family registers its controls on import
from harness.plugin.controls import (  # noqa: F401
    clock, crag, e2e4, fusion, hyde, judge, llm, metrics, report, ret, retrieval, rewrite, runner, stats, wsop,
)

__all__ = ["CONTROLS", "ENV", "Control", "active_control", "apply_from_env", "control", "family_of", "get_control",
           "replace_everywhere", "restore_everywhere", "statistics_control_in_force"]

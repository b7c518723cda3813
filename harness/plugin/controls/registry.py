"""The registry of negative controls (`control`, `get_control`) and the patching they share
(`replace_everywhere`, `restore_everywhere`). The family modules beside it import it; the package's
`__init__` re-exports it and imports every family, so importing the package registers them all."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable

from harness.control_env import active_control


@dataclass(frozen=True)
class Control:
    name: str
    breaks: str
    apply: Callable[[Any], None]


CONTROLS: dict[str, Control] = {}


def apply_from_env() -> str | None:
    """In a subprocess a test started (e.g. the CLI), apply the control named in the environment for the
    process's lifetime. Returns its name, or None when no control is in force."""
    name = active_control()
    if name:
        import pytest

        get_control(name).apply(pytest.MonkeyPatch())
    return name


def control(name: str, *, breaks: str) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    """Register `fn(monkeypatch)` as the negative control `name`; `breaks` says what it breaks, in words."""
    def deco(fn: Callable[[Any], None]) -> Callable[[Any], None]:
        if name in CONTROLS:
            raise ValueError(f"negative control {name!r} is registered twice")
        CONTROLS[name] = Control(name, breaks, fn)
        return fn
    return deco


def get_control(name: str) -> Control:
    try:
        return CONTROLS[name]
    except KeyError:
        raise KeyError(f"unknown negative control {name!r}; registered: {', '.join(sorted(CONTROLS))}") from None


_REPLACED: list[tuple[Any, Any]] = []


def replace_everywhere(mp: Any, original: Any, replacement: Any) -> int:
    """Set `replacement` wherever a loaded module holds `original` (by identity); returns how many places.
    `restore_everywhere()` (after `mp.undo()`) also puts back references taken while the control was active."""
    _REPLACED.append((original, replacement))
    n = 0
    for mod in list(sys.modules.values()):
        d = getattr(mod, "__dict__", None)
        if not isinstance(d, dict):
            continue
        for attr, value in list(d.items()):
            if value is original:
                mp.setattr(mod, attr, replacement)
                n += 1
    if n == 0:
        raise RuntimeError(f"negative control found no reference to {original!r}")
    return n


def restore_everywhere() -> int:
    """Undo what `mp.undo()` cannot see: modules first imported while a control was active took the broken
    object by name; put the original back there. Returns how many references were restored."""
    n = 0
    while _REPLACED:
        original, replacement = _REPLACED.pop()
        for mod in list(sys.modules.values()):
            d = getattr(mod, "__dict__", None)
            if isinstance(d, dict):
                for attr, value in list(d.items()):
                    if value is replacement:
                        setattr(mod, attr, original)
                        n += 1
    return n


def family_of(name: str) -> str:
    """The family a control belongs to: the module beside this one it is registered in (`stats`, `retrieval`, ...)."""
    return get_control(name).apply.__module__.rsplit(".", 1)[-1]


def statistics_control_in_force() -> bool:
    """Whether the control in force (in this process or inherited by it) is one of the `stats` family, which breaks
    the harness's statistics only: what a study reads from data and retrieval is then what the real run reads."""
    name = active_control()
    return bool(name) and name in CONTROLS and family_of(name) == "stats"

"""Each wider-scoped fixture a test needs, named by the instance it sets up: `rag_dense_store[rag_dataset_name=
cranfield]` where it depends, at any depth, on a parametrised fixture (a dataset's index is one set-up per dataset,
not one for all). The budget reads them to know what a test still needs set up; the timing spans name each set-up
by them, so the cost book keeps a small dataset's index apart from a large one's."""
from __future__ import annotations

import re
from typing import Any

import pytest

from harness.budget import fixture_of

__all__ = ["fixture_of", "instance_of", "wider_fixtures"]

_PLAIN = re.compile(r"[\w.\-/]+")


def _param_id(callspec: Any, name: str) -> str:
    """A parametrised fixture's instance as a key that holds from run to run: its value where that is a plain
    name or number (a dataset's name), else `#` and its index among the parameters."""
    value = callspec.params.get(name)
    if isinstance(value, (str, int)) and not isinstance(value, bool) and _PLAIN.fullmatch(str(value)):
        return str(value)
    return f"#{callspec.indices[name]}"


def _key(info: Any, callspec: Any, name: str) -> str:
    """`name`, or `name[dep=id,...]` for the parametrised fixtures it depends on, itself included."""
    indices = getattr(callspec, "indices", {})
    params, seen, stack = set(), set(), [name]
    while stack and indices:
        dep = stack.pop()
        if dep not in seen:
            seen.add(dep)
            if dep in indices:
                params.add(f"{dep}={_param_id(callspec, dep)}")
            dep_defs = info.name2fixturedefs.get(dep)
            stack.extend(dep_defs[-1].argnames if dep_defs else ())
    return f"{name}[{','.join(sorted(params))}]" if params else name


def wider_fixtures(item: pytest.Item) -> list[tuple[str, Any]]:
    """The item's session-, package-, module- and class-scoped fixtures, with their definitions, each named by
    the instance it needs."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    callspec = getattr(item, "callspec", None)
    out = []
    for name in info.names_closure:
        defs = info.name2fixturedefs.get(name)
        if defs and defs[-1].scope != "function":
            out.append((_key(info, callspec, name), defs[-1]))
    return out


def instance_of(item: pytest.Item, name: str) -> str:
    """The instance of the fixture `name` that `item` sets up or uses (`name` where it depends on no parameter)."""
    info = getattr(item, "_fixtureinfo", None)
    return name if info is None else _key(info, getattr(item, "callspec", None), name)

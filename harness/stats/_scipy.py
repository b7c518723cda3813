"""scipy.stats and scipy.optimize, imported on first use: scipy.stats alone is half a second of every start of
pytest with this plugin, and most runs (a unit test, `--help`, a dry run) compute no interval."""
from __future__ import annotations

import importlib
import types
from typing import TYPE_CHECKING, Any

__all__ = ["optimize", "stats"]


class _OnFirstUse(types.ModuleType):
    """Stands in for a module until an attribute is read, then imports it (import_module holds the import lock, so
    two threads reading at once both get the one module) and keeps what was read."""

    def __getattr__(self, attr: str) -> Any:
        value = getattr(importlib.import_module(self.__name__), attr)
        setattr(self, attr, value)
        return value


if TYPE_CHECKING:
    from scipy import optimize as optimize
    from scipy import stats as stats
else:
    optimize = _OnFirstUse("scipy.optimize")
    stats = _OnFirstUse("scipy.stats")

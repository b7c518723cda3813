"""The negative control in force, as the library sees it: the name in `RAG_HARNESS_CONTROL`.

The plugin (`harness.plugin.controls`) sets the variable while a control runs, so subprocesses a test starts
apply it too; library code that must not answer from a cache under a control reads it here, without importing
the plugin."""
from __future__ import annotations

import os

ENV = "RAG_HARNESS_CONTROL"


def active_control() -> str | None:
    """The name of the negative control in force (in this process or inherited by a subprocess), if any."""
    return os.environ.get(ENV) or None

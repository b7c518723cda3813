"""Negative controls for the report: how a claim is read from the datasets its tests were run on."""
from __future__ import annotations

from typing import Any

from harness.plugin.controls.registry import control


@control("catalogue-datasets-ignored", breaks="the report reads a claim from whichever of its configured datasets "
                                              "recorded a check, with no line for those that did not (the silent "
                                              "subset)")
def _datasets_ignored(mp: Any) -> None:
    from harness.report import summary

    mp.setattr(summary, "_bind_datasets", lambda planned, entries: [])

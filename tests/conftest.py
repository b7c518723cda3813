"""Fixtures shared by the test modules under tests/."""
from __future__ import annotations

import pytest

from harness.plugin.controls import get_control, restore_everywhere


@pytest.fixture
def under():
    """`under(name)` applies a registered control until the test ends."""
    mp = pytest.MonkeyPatch()
    yield lambda name: get_control(name).apply(mp)
    mp.undo()
    restore_everywhere()

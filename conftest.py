"""Project-level pytest configuration: cassettes live in fixtures/cassettes/<test module>/."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def vcr_cassette_dir(request: pytest.FixtureRequest) -> str:
    return str(ROOT / "fixtures" / "cassettes" / request.module.__name__.split(".")[-1])

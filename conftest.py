"""Project-level pytest configuration: cassettes live in fixtures/cassettes/<test module>/; unit and integration
runs use one BLAS thread."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
_BLAS_LIMIT = []  # the threadpoolctl limiter, kept for the session


@pytest.fixture(scope="module")
def vcr_cassette_dir(request: pytest.FixtureRequest) -> str:
    return str(ROOT / "fixtures" / "cassettes" / request.module.__name__.split(".")[-1])


def pytest_collection_finish(session: pytest.Session) -> None:
    """A run with no benchmark test in it does its linear algebra on one BLAS thread in this process: its arrays
    are small, and OpenBLAS's worker threads only wait for a core (on this 2-core machine under load, fitting
    WSOP's complexity classifier took 0.03 s on one thread, 1.5 s on two). Subprocesses and benchmark runs keep
    OpenBLAS's default."""
    if session.items and not any(item.get_closest_marker("benchmark") for item in session.items):
        from threadpoolctl import threadpool_limits

        _BLAS_LIMIT.append(threadpool_limits(limits=1, user_api="blas"))

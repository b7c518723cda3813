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


# The few tests that run whole child sessions (every spec under its negative control, the calibration benchmarks
# under theirs, the first look's claims under theirs) take minutes; started first, the xdist workers share the rest
# around them instead of waiting on them at the end (longest first: the classic list-scheduling rule).
LONGEST_FIRST = (
    "tests/test_negative_controls.py::test_calibration_checks_fail_under_their_controls",
    "tests/test_negative_controls.py::test_integration_spec_checks_fail_under_their_controls",
    "tests/test_docs_examples_integration.py::test_estimate_cost_command_runs",
    "tests/test_first_look.py::test_each_first_look_claim_fails_under_its_negative_control",
    "tests/test_negative_controls.py::test_unit_spec_checks_fail_under_their_controls",
)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests of LONGEST_FIRST first, in that order (a stable sort: the rest keep theirs, pytest-randomly's too)."""
    def rank(item: pytest.Item) -> int:
        base = item.nodeid.split("[")[0]
        return LONGEST_FIRST.index(base) if base in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)


def pytest_collection_finish(session: pytest.Session) -> None:
    """A run with no benchmark test in it does its linear algebra on one BLAS thread in this process: its arrays
    are small, and OpenBLAS's worker threads only wait for a core (on this 2-core machine under load, fitting
    WSOP's complexity classifier took 0.03 s on one thread, 1.5 s on two). Subprocesses and benchmark runs keep
    OpenBLAS's default."""
    if session.items and not any(item.get_closest_marker("benchmark") for item in session.items):
        from threadpoolctl import threadpool_limits

        _BLAS_LIMIT.append(threadpool_limits(limits=1, user_api="blas"))

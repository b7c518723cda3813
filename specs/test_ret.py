"""RET unit checks, gates and risk mitigations (issue #7). Not built yet: each id is bound to a test
that imports the module, expected to fail with ImportError until it exists (strict xfail)."""
from __future__ import annotations

import pytest

from harness.catalogue import load_catalogue

from .conftest import SPECS_DIR

RET_IDS = load_catalogue([SPECS_DIR / "ret.yaml"]).ids()


@pytest.mark.xfail(strict=True, raises=ImportError, reason="issue #7: RET is not built yet")
@pytest.mark.spec(*RET_IDS)
def test_ret(spec):
    from harness.techniques import ret  # noqa: F401

"""The integration tier runs with the network blocked (the plugin marks every integration test)."""
from __future__ import annotations

import socket

import pytest

pytestmark = pytest.mark.integration


def test_an_integration_test_cannot_leave_the_machine(request):
    assert request.node.get_closest_marker("block_network") is not None
    with pytest.raises(RuntimeError, match="[Nn]etwork"):
        socket.create_connection(("192.0.2.1", 80), timeout=0.5)  # TEST-NET-1: routed nowhere

"""Streaming ingestion's resident memory at 10⁵ and 10⁶ passages (issue #29 item 2): each size ingested in a
fresh process (harness._probes.ingest, hashing embedder, batches of 1,024); the peak must not grow
with the corpus the way holding it would (10× the passages, far less than 10× the memory). Opt-in:
`pytest -m benchmark benchmarks/test_ingest_memory.py --machine-benchmarks`."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.benchmark, pytest.mark.selfcheck]  # the harness checking itself


@pytest.fixture(scope="module")
def probes(pytestconfig, tmp_path_factory):
    if not pytestconfig.getoption("machine_benchmarks"):
        pytest.skip("a measurement of the machine, not a claim: opt in with --machine-benchmarks")
    out = {}
    for n in (100_000, 1_000_000):
        proc = subprocess.run([sys.executable, "-m", "harness._probes.ingest", str(n),
                               str(tmp_path_factory.mktemp(f"ingest{n}"))], capture_output=True, text=True, check=True)
        out[n] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def test_ingestion_memory_is_bounded(probes, rag_measure):
    for n, p in probes.items():
        assert p["rows"] == n
        rag_measure("ingest_peak_rss_mib", p["peak_rss_mib"], **p)
    small, large = probes[100_000], probes[1_000_000]
    grown = large["peak_rss_mib"] - small["peak_rss_mib"]
    assert grown < 0.5 * (large["vectors_mib"] - small["vectors_mib"]), \
        f"peak memory grew by {grown:.0f} MiB from 10^5 to 10^6 passages: ingestion holds the corpus"

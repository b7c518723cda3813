"""The process's peak resident memory, where the platform tells it (POSIX `getrusage`; None elsewhere)."""
from __future__ import annotations

import importlib
import sys


def peak_rss_mib() -> float | None:
    """Peak resident set size of this process in MiB (ru_maxrss: KiB on Linux, bytes on macOS); None on
    platforms without `resource` (Windows), so callers report it as unknown rather than fail."""
    try:
        resource = importlib.import_module("resource")  # POSIX only: imported here, never at module level
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024

"""What starting pytest with the plugin imports (issue #39 item 4: every pytester run and every CLI child pays it):
scipy.stats and scipy.optimize only on first use, through `harness.stats._scipy`."""
from __future__ import annotations

import subprocess
import sys

import pytest

from harness.stats import _scipy

PROBE = "import sys, {module}; print(sorted(m for m in ('scipy.stats', 'scipy.optimize') if m in sys.modules))"


@pytest.mark.unit
@pytest.mark.parametrize("module", ["harness.plugin.hooks", "harness", "harness.catalogue", "harness.stats"])
def test_importing_the_plugin_or_the_package_imports_no_scipy_stats(module):
    out = subprocess.run([sys.executable, "-c", PROBE.format(module=module)], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]", f"{module} imports {out} at import time: read them through harness.stats._scipy"


@pytest.mark.unit
def test_the_stand_in_gives_the_modules_own_objects():
    from scipy import optimize, stats

    assert _scipy.stats.norm is stats.norm and _scipy.stats.t.ppf(0.975, 10) == stats.t.ppf(0.975, 10)
    assert _scipy.optimize.brentq is optimize.brentq
    with pytest.raises(AttributeError):
        _scipy.stats.no_such_distribution  # noqa: B018


@pytest.mark.unit
def test_first_use_from_several_threads_at_once_gives_one_module():
    code = """
import threading
from harness.stats import _scipy
seen, barrier = [], threading.Barrier(8)
def read():
    barrier.wait()
    seen.append(_scipy.stats.norm)
threads = [threading.Thread(target=read) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
import scipy.stats
assert len(seen) == 8 and all(s is scipy.stats.norm for s in seen), seen
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout == "ok\n", proc.stderr[-2000:]

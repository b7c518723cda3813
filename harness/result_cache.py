"""Model-independent results cached across runs by the content of what they depend on (data files, model files,
the code that computes them, package versions, the machine): recomputed when any of these changes, read back
otherwise. A figure read back says so (`cached_from`), with when and where it was measured."""
from __future__ import annotations

import hashlib
import json
import os
import platform
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from harness.provenance import content_hash_of, package_versions


def machine() -> dict[str, Any]:
    """What a timing depends on besides the code: processor, core count, Python."""
    return {"machine": platform.machine(), "processor": platform.processor() or _cpu_model(), "cpus": os.cpu_count(),
            "python": platform.python_version()}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def cache_key(*, files: Sequence[str | Path] = (), packages: tuple[str, ...] = (), **parts: Any) -> str:
    """sha256 over the content of `files` (files or folders), the versions of `packages` and the other `parts`."""
    blob = {"files": {str(Path(f).name): content_hash_of(f) for f in files},
            "packages": package_versions(packages) if packages else {}, **parts}
    return hashlib.sha256(json.dumps(blob, sort_keys=True, default=str).encode()).hexdigest()


def cached(cache_dir: str | Path, name: str, key: str, compute: Callable[[], Any]) -> tuple[Any, dict[str, Any] | None]:
    """`compute()`'s JSON-able value, stored under cache_dir/results/name-key.json; returns (value, None) when
    computed now, (value, {"cached_from": ..., "key": ...}) when read back."""
    from harness.control_env import active_control

    if active_control():  # a negative control must reach the code it breaks: never answer from a cached result
        return compute(), None
    path = Path(cache_dir) / "results" / f"{name}-{key[:16]}.json"
    if path.is_file():
        try:
            data = json.loads(path.read_text())
            if data.get("key") == key:
                return data["value"], {"cached_from": data["measured_at"], "key": key[:16], "path": str(path)}
        except (OSError, ValueError, KeyError):
            pass  # a torn or foreign file: recompute
    value = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"key": key, "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "machine": machine(), "value": value}))
    os.replace(tmp, path)
    return value, None

"""What a run drew from the model, kept for the next run on the same code, configuration and model: a study, or
a measurement that must call the model uncached (its latency or its variance is the claim), is stored as it was
measured, and a later run replays it instead of calling the model again. So `--budget 60m` after a 15-minute run
pays only for what the first run did not reach; a replay is shown as the cache hits its calls would have been,
and the claim's row says when the figure was measured (`replayed_from`).

The key is the content of the `harness` package (code, prompts, packaged data), the model, the configuration and
the measurement's own parts (dataset, queries): any change draws afresh. `--no-llm-cache` (or
`harness.llm.cache: false`) turns replay off, as it turns the response cache off; a negative control never replays.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import pickle
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TypeVar

from harness.llm.meter import METER
from harness.provenance import content_hash_of

__all__ = ["Replay", "code_hash", "replayed_context"]

T = TypeVar("T")
log = logging.getLogger("rag_harness.replay")


def code_hash(root: Path | None = None) -> str:
    """sha256 over the names and bytes of the package's files (compiled caches left out): what a replay was
    computed by."""
    return content_hash_of(root or Path(__file__).resolve().parent, skip=("__pycache__",))


def replayed_context(replayed_from: str | None) -> dict[str, str]:
    """The context a check records for a replayed measurement (`replayed_from`: when it was measured); none for
    one measured now."""
    return {"replayed_from": replayed_from} if replayed_from else {}


@dataclass
class Replay:
    """Measurements kept under `root` (None: nothing kept, every call computes), keyed by `base` (model,
    configuration) and each call's parts."""

    root: Path | None
    base: dict[str, Any] = field(default_factory=dict)
    replayed: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def key(self, name: str, parts: dict[str, Any]) -> str:
        blob = {"code": code_hash(), "name": name, **self.base, **parts}
        return hashlib.sha256(json.dumps(blob, sort_keys=True, default=str).encode()).hexdigest()

    def path(self, name: str, key: str) -> Path:
        assert self.root is not None
        return self.root / f"{name}-{key[:16]}.pkl"

    def __call__(self, name: str, compute: Callable[[], T], **parts: Any) -> tuple[T, str | None]:
        """`compute()`'s value, or the one an earlier run stored under the same key: (value, None) when computed
        now, (value, when it was measured) when replayed; a replay counts its calls as response-cache hits."""
        from harness.control_env import active_control

        if self.root is None or active_control():
            return compute(), None
        key = self.key(name, parts)
        path = self.path(name, key)
        if path.is_file():
            try:
                with path.open("rb") as fh:
                    data = pickle.load(fh)
                if data.get("key") == key:
                    for _ in range(int(data.get("calls", 0))):
                        METER.cache_hit()
                    with self._lock:
                        self.replayed.append({"name": name, "measured_at": data["measured_at"],
                                              "calls": data.get("calls", 0), "path": str(path)})
                    return data["value"], str(data["measured_at"])
            except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, KeyError, TypeError):
                pass  # a torn or foreign file: draw afresh
        with METER.scope() as made:  # its own calls, not those of measurements computed beside it
            value = compute()
        calls = made["llm_calls"] + made["cache_hits"]
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            blob = pickle.dumps({"key": key, "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                 "calls": calls, "value": value})
        except (pickle.PicklingError, TypeError, AttributeError) as exc:  # the figure stands; the next run draws it
            log.warning("replay: %s not kept for the next run (%s: %s)", name, type(exc).__name__, exc)
            return value, None
        tmp.write_bytes(blob)
        os.replace(tmp, path)
        return value, None

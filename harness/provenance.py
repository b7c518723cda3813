"""What produced a run's figures: models (and whether their traffic was live, replayed or cached), datasets
(with a content hash), seeds and package versions. Fixtures `note_*` what they build; every `check` record
carries a snapshot, so the report's provenance block works across pytest-xdist workers too."""
from __future__ import annotations

import hashlib
import threading
from importlib import metadata
from pathlib import Path
from typing import Any

_LOCK = threading.Lock()
_STATE: dict[str, dict[str, Any]] = {"models": {}, "datasets": {}, "seeds": {}, "techniques": {}, "judges": {}}
PACKAGES = ("pytest-rag-harness", "numpy", "scipy", "statsmodels", "lancedb", "sentence-transformers", "torch", "litellm",
            "xllamacpp", "pytest", "pytest-benchmark", "pytest-recording")


def note_model(label: str, *, traffic: str, **details: Any) -> None:
    """Record a model used by the run; `traffic` is 'live', 'replayed' (cassette) or 'scripted'; a response
    cache makes it 'live+cache'."""
    with _LOCK:
        old = _STATE["models"].get(label, {}).get("traffic", "")
        modes = [m for m in old.split(", ") if m]
        if traffic not in modes:
            modes.append(traffic)
        _STATE["models"][label] = {**_STATE["models"].get(label, {}), **details, "traffic": ", ".join(modes)}


def note_dataset(name: str, path: str | Path | None = None, *, content_hash: str | None = None, **details: Any) -> None:
    """Record a dataset; its content hash is computed from `path` (every file, sorted) when not given."""
    if content_hash is None and path is not None:
        content_hash = content_hash_of(path)
    with _LOCK:
        _STATE["datasets"][name] = {"path": str(path) if path else None, "sha256": content_hash, **details}


def note_judge(reliability: dict[str, Any]) -> None:
    """A judge's measured reliability (`harness.judge.JudgeReliability.as_context()`), keyed by judge and set (of two
    measurements, the one on more items: a study drawn in looks may note its first items before all of them); the
    report shows it at the top, beside the judged figures."""
    key = f"{reliability['judge']} on {reliability['labelled_set']}"
    with _LOCK:
        if reliability.get("n", 0) >= _STATE["judges"].get(key, {}).get("n", 0):
            _STATE["judges"][key] = dict(reliability)


def note_technique(role: str, name: str, label: str) -> None:
    """Record which registered technique answered for a role's claims (e.g. hyde -> my-hyde)."""
    with _LOCK:
        _STATE["techniques"][role] = {"technique": name, "label": label}


def note_seed(name: str, seed: int) -> None:
    with _LOCK:
        _STATE["seeds"][name] = seed


def snapshot() -> dict[str, Any]:
    with _LOCK:
        return {k: dict(v) for k, v in _STATE.items()}


def reset() -> None:
    with _LOCK:
        for v in _STATE.values():
            v.clear()


_HASHES: dict[str, str] = {}


def content_hash_of(path: str | Path, skip: tuple[str, ...] = ()) -> str:
    """sha256 over the relative names and bytes of every file under `path` (or of the file), sorted by name,
    leaving out files under a folder named in `skip` (`__pycache__`: compiled caches); memoised per path for the
    process."""
    p = Path(path)
    key = str(p.resolve()) + "".join(f"\0{s}" for s in skip)
    if key in _HASHES:
        return _HASHES[key]
    h = hashlib.sha256()
    files = (sorted(f for f in p.rglob("*") if f.is_file() and not set(skip) & set(f.relative_to(p).parts))
             if p.is_dir() else [p])
    for f in files:
        h.update(str(f.relative_to(p) if p.is_dir() else f.name).encode())
        h.update(b"\0")
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    _HASHES[key] = h.hexdigest()
    return _HASHES[key]


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    out = {}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            continue
    return out


def merge(snapshots: list[dict[str, Any]]) -> dict[str, Any]:
    """Union of snapshots (later ones win per key)."""
    out: dict[str, dict[str, Any]] = {"models": {}, "datasets": {}, "seeds": {}, "techniques": {}, "judges": {}}
    for s in snapshots:
        for k in out:
            out[k].update(s.get(k) or {})
    return out

"""Per-query scores of retrieval runs recorded in a JSON file, each set under the key it was computed from (the
dataset's content hash, the embedder, the queries taken, the cut-off), so that a process needing the very same scores
can read them instead of indexing and searching the set again. A set recorded under another key reads as nothing
recorded. Floats are written as JSON numbers (shortest repr), which read back bit for bit."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Mapping

import numpy as np


def runs_key(dataset: str, content_hash: str, embedder: str, *, sample: int | None = None, seed: int | None = None,
             k: int = 10) -> dict[str, Any]:
    """What a set's per-query scores were computed from: the dataset (name and `harness.data.qa.content_hash`), the
    embedder, the queries (all judged ones, or a seeded sample of `sample`) and the cut-off `k`."""
    queries: dict[str, Any] = {"all": True} if sample is None else {"sample": int(sample), "seed": seed}
    return {"dataset": dataset, "content_hash": content_hash, "embedder": embedder, "queries": queries, "k": int(k)}


def read_recorded(path: str | Path, key: Mapping[str, Any]) -> dict[str, np.ndarray] | None:
    """The scores recorded under exactly `key` ({"<mode>:<measure>": per-query values}), or None: no file, no set of
    that name, or one recorded from other data, another embedder or other queries."""
    p = Path(path)
    if not p.is_file():
        return None
    entry = json.loads(p.read_text(encoding="utf-8")).get("sets", {}).get(key["dataset"])
    if not entry or entry.get("key") != dict(key):
        return None
    return {name: np.asarray(values, dtype=np.float64) for name, values in entry["scores"].items()}


def write_recorded(path: str | Path, key: Mapping[str, Any], scores: Mapping[str, np.ndarray], *,
                   source: str) -> None:
    """Record `scores` under `key` (replacing that dataset's earlier record, keeping the others), atomically."""
    p = Path(path)
    doc: dict[str, Any] = json.loads(p.read_text(encoding="utf-8")) if p.is_file() else {}
    doc["source"] = source
    sets = doc.setdefault("sets", {})
    sets[key["dataset"]] = {"key": dict(key), "scores": {name: [float(v) for v in np.asarray(values, np.float64)]
                                                         for name, values in sorted(scores.items())}}
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(_layout(doc))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # an ordinary file's mode, not mkstemp's owner-only one
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _layout(doc: Mapping[str, Any]) -> str:
    """The file's text: one line per score array (readable diffs when a set is recorded again)."""
    lines = ["{", f' "source": {json.dumps(doc["source"])},', ' "sets": {']
    sets = sorted(doc["sets"].items())
    for i, (name, entry) in enumerate(sets):
        lines.append(f"  {json.dumps(name)}: {{")
        lines.append(f'   "key": {json.dumps(entry["key"], sort_keys=True)},')
        lines.append('   "scores": {')
        scores = sorted(entry["scores"].items())
        lines += [f"    {json.dumps(m)}: {json.dumps(v)}" + ("," if j < len(scores) - 1 else "")
                  for j, (m, v) in enumerate(scores)]
        lines.append("   }")
        lines.append("  }" + ("," if i < len(sets) - 1 else ""))
    lines += [" }", "}", ""]
    return "\n".join(lines)

"""Datasets parsed once per session: the plugin checks the sets the selected tests need at collection, and the
fixtures that load them later get the same objects while the files are unchanged (same sizes and mtimes)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from harness.data.errors import DataError


def _loaders() -> dict[str, Callable[..., Any]]:
    from harness.data.beir import load_beir
    from harness.data.qa import load_mcq, load_qa

    return {"beir": load_beir, "qa": load_qa, "mcq": load_mcq}


def _stamp(root: Path) -> tuple:
    """Size and mtime of each data file a loader reads (queries, corpus, qrels)."""
    files = [root / "queries.jsonl", root / "corpus.jsonl", *sorted((root / "qrels").glob("*.tsv"))]
    return tuple((p.name, st.st_size, st.st_mtime_ns) for p in files if p.is_file() for st in [p.stat()])


class LoadedSets:
    """`load(kind, root)` with kind "beir" (`load_beir`), "qa" (`load_qa`) or "mcq" (`load_mcq`), strict, held
    while its files are unchanged."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, str], tuple[tuple, Any]] = {}

    def load(self, kind: str, root: str | Path) -> Any:
        root = Path(root)
        key, stamp = (kind, str(root.resolve())), _stamp(root)
        hit = self._held.get(key)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        ds = _loaders()[kind](root)
        self._held[key] = (stamp, ds)
        return ds

    def problems(self, kind: str, root: str | Path) -> list[DataError]:
        """Every problem of the set, or [] when it loads (and is then held): a strict load first, and on an error
        a lenient one that reads past each bad line to find the others."""
        try:
            self.load(kind, root)
            return []
        except DataError as first:
            try:
                found = list(_loaders()[kind](Path(root), strict=False).skipped.errors)
            except DataError as err:  # a missing file, or none left once the bad lines are skipped
                found = [err]
            return found if str(first) in map(str, found) else [first, *found]

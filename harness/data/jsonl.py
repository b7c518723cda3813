"""Strict JSONL reading with line-numbered errors and a lenient mode that counts skipped lines."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from harness.data.errors import DataError


@dataclass
class SkipLog:
    """Bad lines skipped in `strict=False` mode, with the error for each."""

    errors: list[DataError] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.errors)

    def handle(self, err: DataError, strict: bool) -> None:
        if strict:
            raise err
        self.errors.append(err)


def iter_jsonl(path: Path, skips: SkipLog, strict: bool) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line_number, object) for each non-blank line; bad JSON is an error naming the line."""
    with path.open(encoding="utf-8") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw.rstrip("\r\n"))  # the column is then on this line, not past its end
            except json.JSONDecodeError as exc:
                skips.handle(DataError(path, n, None, f"invalid JSON ({exc.msg}: column {exc.colno})"), strict)
                continue
            if not isinstance(obj, dict):
                skips.handle(DataError(path, n, None, f"expected a JSON object, got {type(obj).__name__}"), strict)
                continue
            yield n, obj


def require_str(obj: dict[str, Any], key: str, path: Path, line: int, *, allow_empty: bool = False) -> str:
    if key not in obj:
        raise DataError(path, line, key, "missing")
    value = obj[key]
    if isinstance(value, (int, float)) and not isinstance(value, bool) and key.endswith("id"):
        value = str(value)
    if not isinstance(value, str):
        raise DataError(path, line, key, f"expected a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise DataError(path, line, key, "empty")
    return value

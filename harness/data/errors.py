"""Input errors that name the file, the line and the field."""
from __future__ import annotations

from pathlib import Path


class DataError(ValueError):
    """Malformed input: `file:line: field 'x': problem`."""

    def __init__(self, path: str | Path, line: int | None, field: str | None, problem: str):
        self.path, self.line, self.field, self.problem = str(path), line, field, problem
        where = f"{path}:{line}" if line is not None else str(path)
        what = f" field '{field}':" if field else ""
        super().__init__(f"{where}:{what} {problem}")

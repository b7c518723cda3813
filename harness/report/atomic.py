"""Files written whole or not at all: the report, and the self-checks kept under the cache directory."""
from __future__ import annotations

import os
import uuid
from pathlib import Path


def atomic_write(path: Path, text: str) -> None:
    """Write via a temp file and rename, so a crash never leaves a half-written report; the file gets the mode
    an ordinary new file gets (0666 less the umask, e.g. 0644), not a temp file's 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)

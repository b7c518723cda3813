"""Open a report in a real headless Chromium and read back what it rendered (the DOM after the page's script ran).

`find_chromium()` finds the browser (RAG_HARNESS_CHROMIUM, else chromium / chromium-browser / google-chrome on
PATH); `dump_dom(path)` loads the file with networking, GPU, sync and updates off and a fresh profile, and returns
the DOM; `ready_ms(dom)` is the page's own figure, ms from navigation start until its script had run over the
laid-out page; `claim_rows(dom)` reads the first screen's claims tables.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
         "--disable-dev-shm-usage")


def find_chromium() -> str | None:
    """The Chromium binary to drive, or None when none is installed."""
    env = os.environ.get("RAG_HARNESS_CHROMIUM")
    if env:
        return env if Path(env).is_file() else None
    return next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)


def dump_dom(path: Path, *, fragment: str = "", chromium: str | None = None, timeout: float = 120,
             window: tuple[int, int] = (1280, 900)) -> str:
    """The DOM of `path` (a local HTML file) after its scripts ran, as Chromium serialises it (window in px)."""
    exe = chromium or find_chromium()
    if exe is None:
        raise FileNotFoundError("no Chromium found (install chromium, or set RAG_HARNESS_CHROMIUM)")
    url = Path(path).resolve().as_uri() + (f"#{fragment}" if fragment else "")
    with tempfile.TemporaryDirectory(prefix="rag-harness-chromium-") as profile:
        out = subprocess.run([exe, *FLAGS, f"--user-data-dir={profile}", f"--window-size={window[0]},{window[1]}",
                              "--dump-dom", url], capture_output=True, text=True, timeout=timeout, check=False)
    if out.returncode != 0 or not out.stdout.strip():
        raise RuntimeError(f"{exe} exited {out.returncode} on {url}: {out.stderr[-2000:]}")
    return out.stdout


def ready_ms(dom: str) -> float | None:
    """The page's `data-ready-ms` (set by its script once the laid-out page is ready), None when absent."""
    m = re.search(r'<html[^>]*\sdata-ready-ms="([0-9.]+)"', dom)
    return float(m.group(1)) if m else None


class _Rows(HTMLParser):
    """Rows `tr.claim` of the claims tables: claim, dataset, and the text of their verdict and effect cells."""

    def __init__(self, row_class: str) -> None:
        super().__init__()
        self.row_class = row_class
        self.rows: list[dict[str, Any]] = []
        self._row: dict[str, Any] | None = None
        self._cell: dict[str, Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "tr" and self.row_class in classes:
            self._row = {"claim": a.get("data-claim"), "dataset": a.get("data-dataset") or "", "cells": []}
        elif tag == "td" and self._row is not None:
            self._cell = {"class": classes, "text": ""}

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._row is not None and self._cell is not None:
            self._cell["text"] = " ".join(self._cell["text"].split())
            self._row["cells"].append(self._cell)
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell["text"] += data


def claim_rows(dom: str) -> list[dict[str, Any]]:
    """Every row of the first screen's claims tables: claim id, dataset, verdict and effect as rendered."""
    p = _Rows("claim")
    p.feed(dom)
    out = []
    for r in p.rows:
        by = {c: cell["text"] for cell in r["cells"] for c in cell["class"]}
        out.append({"claim": r["claim"], "dataset": r["dataset"], "verdict": by.get("verdict", ""),
                    "effect": by.get("effect", "")})
    return out


def table_rows(dom: str, table_class: str) -> list[list[str]]:
    """The body rows of the tables of a class (e.g. `pq`, the per-query tables the script builds), as cell texts."""
    out: list[list[str]] = []
    for m in re.finditer(rf'<table class="[^"]*\b{re.escape(table_class)}\b[^"]*">.*?<tbody>(.*?)</tbody>', dom, re.S):
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", m.group(1), re.S):
            out.append([unescape(" ".join(re.sub(r"<[^>]+>", "", c).split()))
                        for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)])
    return out

"""The fenced code blocks of README.md and docs/**/*.md, with the marker that says which test runs each.

A marker is an HTML comment on the line before a block's opening fence (blank lines between are allowed):
`<!-- docs-test: test_name -->` names the test that runs the block as written, `<!-- docs-test: skip: reason -->`
says why no test can. A Python block without a marker is run as a script by `test_python_block_runs`.
"""
from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_FENCE = re.compile(r"^( *)```(\w*) *$")
_MARKER = re.compile(r"^\s*<!-- docs-test: (.+?) -->\s*$")
# `print(...)  # text`: the line the call must print (one print per line, at the start of the line)
_PRINT = re.compile(r"^print\(.*\)\s+#\s(.+)$")


@dataclass(frozen=True)
class Block:
    path: str  # relative to the repository root
    section: str  # the nearest `## ` heading above it (the page's `# ` title before the first)
    lang: str
    index: int  # among the blocks of the same path, section and language
    line: int  # 1-based line of the opening fence
    code: str  # dedented
    marker: str | None

    @property
    def skip_reason(self) -> str | None:
        return self.marker[len("skip:"):].strip() if self.marker and self.marker.startswith("skip:") else None

    @property
    def runner(self) -> str | None:
        """The test named by the marker (`test_x`, or `tests/file.py::test_x (note)`), None for skip or no marker."""
        if self.marker is None or self.skip_reason is not None:
            return None
        return self.marker.split(" ", 1)[0]

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"


def doc_files(root: Path = ROOT) -> list[Path]:
    """README.md and every page under docs/ (the generator's folder aside)."""
    pages = sorted(p for p in (root / "docs").rglob("*.md") if "_gen" not in p.relative_to(root / "docs").parts)
    return [root / "README.md", *pages]


def parse(text: str, path: str = "") -> list[Block]:
    """Every fenced block of a Markdown text, opening fences only, with its section and marker."""
    lines = text.splitlines()
    out: list[Block] = []
    counts: dict[tuple[str, str], int] = {}
    section, i = "", 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## ") or (line.startswith("# ") and not section):
            section = line.lstrip("#").strip()
        m = _FENCE.match(line)
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2)
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != f"{indent}```":
            j += 1
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        mark = _MARKER.match(lines[k]) if k >= 0 else None
        key = (section, lang)
        out.append(Block(path, section, lang, counts.get(key, 0), i + 1,
                         textwrap.dedent("\n".join(lines[i + 1:j]) + "\n"), mark.group(1) if mark else None))
        counts[key] = counts.get(key, 0) + 1
        i = j + 1
    return out


def all_blocks(root: Path = ROOT) -> list[Block]:
    return [b for p in doc_files(root) for b in parse(p.read_text(encoding="utf-8"), str(p.relative_to(root)))]


def blocks(path: str, section: str, lang: str) -> list[str]:
    """The code of the blocks of `path` under `section` in `lang`, in order."""
    found = [b.code for b in parse((ROOT / path).read_text(encoding="utf-8"), path)
             if b.section == section and b.lang == lang]
    assert found, f"{path} has no {lang} block under {section!r}"
    return found


def expected_prints(code: str) -> list[str]:
    """What a block says it prints: the comment of each `print(...)  # text` line, in order."""
    return [m.group(1).strip() for m in map(_PRINT.match, code.splitlines()) if m]

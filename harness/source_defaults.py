"""The default numbers the three source documents fix, where the harness keeps each, and the docs' table of them
(docs/source-defaults.md).

`source_defaults.yaml` (beside this module) lists them: the source, its section, a short quote, the value, and
the places that hold it. A place is one of

    config:wsop.hyde.temperature                       a field of HarnessConfig (or of a given configuration)
    technique:crag.k                                   a registered technique's parameter (its Params default, then
                                                       the configuration's section)
    code:harness.techniques.ret.triangulation:FOCUS_TERMS            a module constant or class attribute
    code:harness.techniques.hyde:HyDE(temperature)     a parameter's default (a function's, or a class's __init__)
    call:harness.techniques.ret.triangulation:mcq_blend(1.0, 0.0, None)   what a function returns for literal arguments

`python -m harness.source_defaults` prints the table of docs/source-defaults.md.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import json
import math
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from harness.config import HarnessConfig

TABLE_START = "<!-- source-defaults:start (python -m harness.source_defaults; harness/source_defaults.yaml) -->"
TABLE_END = "<!-- source-defaults:end -->"
PAGE = "docs/source-defaults.md"  # the docs page that holds the table, relative to the repository
_CALLABLE = re.compile(r"^([\w.]+):([\w.]+)\((.*)\)$")
_ATTRIBUTE = re.compile(r"^([\w.]+):([\w.]+)$")


@dataclass(frozen=True)
class Source:
    key: str
    file: str  # the file's name under spec-sources/
    label: str  # how the docs' table names it


@dataclass(frozen=True)
class SourceDefault:
    id: str
    source: str  # a Source key
    section: str  # "§1.1", "FR2" (a Markdown heading) or "implementation_plan step 4" (the RET proposal's JSON)
    quote: str  # the source's words, found in that section (whitespace aside)
    value: Any
    at: tuple[str, ...]  # the places holding the value; empty only with a note saying why there is none
    note: str = ""


def load_source_defaults(path: str | Path | None = None) -> tuple[dict[str, Source], list[SourceDefault]]:
    """The sources and rows of `source_defaults.yaml` (the packaged file unless `path` is given)."""
    text = (Path(path).read_text(encoding="utf-8") if path is not None
            else resources.files("harness").joinpath("source_defaults.yaml").read_text(encoding="utf-8"))
    data = yaml.safe_load(text)
    sources = {k: Source(k, v["file"], v["label"]) for k, v in data["sources"].items()}
    rows = [SourceDefault(r["id"], r["source"], str(r["section"]), r["quote"], r["value"], tuple(r.get("at") or ()),
                          r.get("note", "")) for r in data["defaults"]]
    for r in rows:
        if r.source not in sources:
            raise ValueError(f"{r.id}: unknown source {r.source!r}")
        if not r.at and not r.note:
            raise ValueError(f"{r.id}: a row with no place must say why in a note")
    ids = [r.id for r in rows]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate ids: {sorted({i for i in ids if ids.count(i) > 1})}")
    return sources, rows


def _object(module: str, qualname: str) -> Any:
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def resolve(place: str, config: HarnessConfig | None = None) -> Any:
    """The value a place holds (see the module docstring); `config` defaults to `HarnessConfig()`."""
    kind, _, ref = place.partition(":")
    if kind == "config":
        node: Any = config if config is not None else HarnessConfig()
        for part in ref.split("."):
            node = getattr(node, part)
        return node
    if kind == "technique":
        from harness.techniques._registry import technique_params

        name, _, param = ref.partition(".")
        return getattr(technique_params(name, config if config is not None else HarnessConfig()), param)
    if kind == "code":
        m = _CALLABLE.match(ref)
        if m:
            parameter = inspect.signature(_object(m.group(1), m.group(2))).parameters[m.group(3).strip()]
            if parameter.default is inspect.Parameter.empty:
                raise ValueError(f"{place}: the parameter has no default")
            return parameter.default
        m = _ATTRIBUTE.match(ref)
        if m:
            return _object(m.group(1), m.group(2))
    if kind == "call":
        m = _CALLABLE.match(ref)
        if m:
            args = ast.literal_eval(f"({m.group(3)},)") if m.group(3).strip() else ()
            return _object(m.group(1), m.group(2))(*args)
    raise ValueError(f"not a place: {place!r} (config:, technique:, code:module:name[(param)] or "
                     "call:module:function(args))")


def same_value(held: Any, expected: Any) -> bool:
    """`held` is the source's `expected` value: booleans exactly, numbers to 1e-9, anything else by equality."""
    if isinstance(held, bool) or isinstance(expected, bool):
        return isinstance(held, bool) and isinstance(expected, bool) and held is expected
    if isinstance(held, (int, float)) and isinstance(expected, (int, float)):
        return math.isclose(held, expected, rel_tol=1e-9, abs_tol=1e-9)
    return held == expected


def section_text(document: str, section: str) -> str:
    """The text of a section: a Markdown heading's ("§1.1", "§7", "FR2") up to the next heading of its level or
    above (code fences skipped), or a field of the RET proposal's JSON ("summary", "risks item 3",
    "implementation_plan step 2", 1-based)."""
    body = document.strip()
    if body.startswith(("```json", "{")):  # the RET proposal: one JSON object
        m = re.fullmatch(r"(\w+)(?: (?:step|item) (\d+))?", section)
        if m is None:
            raise ValueError(f"no section {section!r}: a JSON source's section is a key, or 'key step|item n'")
        node = json.loads(body[body.index("{"):body.rindex("}") + 1])[m.group(1)]
        if m.group(2):
            node = node[int(m.group(2)) - 1]
        return " ".join(str(v) for v in node.values()) if isinstance(node, dict) else str(node)
    label = re.escape(section.lstrip("§"))
    heading = re.compile(rf"^(#+)\s+\**{label}(?=[.:*\s]|$)(?!\.\d)")
    lines, out, level, fenced = document.splitlines(), None, 0, False
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
        h = None if fenced else re.match(r"^(#+)\s", line)
        if out is None:
            hm = None if fenced else heading.match(line)
            if hm:
                out, level = [line], len(hm.group(1))
            continue
        if h and len(h.group(1)) <= level:
            break
        out.append(line)
    if out is None:
        raise ValueError(f"no section {section!r}")
    return "\n".join(out)


def quote_in_section(document: str, section: str, quote: str) -> bool:
    """The quote appears in the section, whitespace runs compared as one space."""
    norm = lambda s: " ".join(s.split())  # noqa: E731
    return norm(quote) in norm(section_text(document, section))


def _show_place(place: str) -> str:
    kind, _, ref = place.partition(":")
    if kind == "config":
        return f"`{ref}`"
    if kind == "technique":
        name, _, param = ref.partition(".")
        return f"technique `{name}`: `{param}`"
    module, _, name = ref.partition(":")
    return f"`{module}.{name}`" if kind == "code" else f"`{module}.{name}` returns it"


def _show_value(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def markdown_table(sources: dict[str, Source], rows: list[SourceDefault]) -> str:
    """The docs' table (docs/source-defaults.md): one row per default, in the data file's order."""
    out = ["| Source, section | The source says | Value | Where the harness holds it |",
           "| --- | --- | --- | --- |"]
    for r in rows:
        where = "<br>".join(_show_place(p) for p in r.at) if r.at else f"none: {r.note}"
        if r.at and r.note:
            where += f" ({r.note})"
        out.append(f"| {sources[r.source].label} {r.section} | `{r.quote}` | {_show_value(r.value)} | {where} |")
    return "\n".join(out)


def page_block(text: str) -> str:
    """The table between the markers of a page (docs/source-defaults.md)."""
    start, end = text.index(TABLE_START) + len(TABLE_START), text.index(TABLE_END)
    return text[start:end].strip()


if __name__ == "__main__":  # pragma: no cover - prints the docs' table
    print(TABLE_START)
    print(markdown_table(*load_source_defaults()))
    print(TABLE_END)

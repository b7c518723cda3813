"""The docs pages written from the code's own registries at build time, as ir_measures writes its measures page:
the claims catalogue, the configuration reference, the techniques, the negative controls and the API reference.

`mkdocs.yml` loads this file as a hook (`on_files` adds the pages); `tests/test_docs_pages.py` imports it and checks
that every spec, configuration field, technique, control and public name the code has is on its page.
"""
from __future__ import annotations

import typing
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel

# the wide tables take the whole page: Material's front matter hides the side navigation and the table of contents
WIDE = "---\nhide:\n  - navigation\n  - toc\n---\n"
GENERATED_NOTE = ("<!-- generated at build time by docs/_gen/pages.py from the code; edit the code, not this "
                  "page -->\n")


def _cell(value: Any) -> str:
    """A value as a Markdown table cell: code-formatted, pipes escaped, newlines flattened."""
    text = str(value).replace("\n", " ").replace("|", "\\|")
    return f"`{text}`" if text else ""


def _prose(value: Any) -> str:
    return str(value or "").replace("\n", " ").replace("|", "\\|").strip()


# ---------------------------------------------------------------- the claims catalogue
def catalogue_page() -> str:
    """Every spec of the protocol's catalogue (`harness/catalogue/*.yaml`), one table per file."""
    from harness.catalogue import PROTOCOL_CATALOGUE, load_catalogue

    catalogue = load_catalogue([PROTOCOL_CATALOGUE])
    by_file: dict[str, list[Any]] = {}
    for spec in catalogue:
        by_file.setdefault(Path(spec.file).name, []).append(spec)
    out = [WIDE + GENERATED_NOTE, "# The claims catalogue", "",
           f"Every testable assertion of the protocol, as the package ships it: **{len(catalogue)} specs** in "
           f"{len(by_file)} files of `harness/catalogue/`. A claim's *tier* is the pytest marker its tests carry; "
           "its *decision* is the rule that turns a measurement into a verdict (see [Verdicts](../verdicts.md)); "
           "its *control* is the broken variant its check must fail under (see "
           "[Negative controls](../controls.md) and the [control list](controls.md)). A *property* cannot fail "
           "and is never counted as a pass.", ""]
    for name, specs in sorted(by_file.items()):
        out += [f"## {name}", "",
                "| id | claim | tier | metric, comparator, threshold | decision | control | source |",
                "| --- | --- | --- | --- | --- | --- | --- |"]
        for s in specs:
            decision = s.decision.rule + (f" {s.decision.test} α={s.decision.alpha:g}" if s.decision.test else "")
            control = "property" if s.kind == "property" else s.control
            out.append(f"| <span id=\"{s.id}\"></span>`{s.id}` | {_prose(s.title)} | {s.marker} | "
                       f"{_cell(f'{s.metric} {s.comparator} {s.threshold}')} | "
                       f"{decision if s.marker == 'benchmark' or s.comparative else ''} | {_cell(control)} | "
                       f"{_prose(s.source)} |")
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------- the configuration reference
def _type_name(annotation: Any) -> str:
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__name__
    text = str(annotation).replace("typing.", "").replace("pathlib.", "").replace("harness.config.", "")
    return text.replace("NoneType", "None")


def _default(field: Any) -> Any:
    if field.default_factory is not None:
        return field.default_factory()
    return field.default


def config_fields(model: type[BaseModel] | None = None, prefix: str = "") -> list[tuple[str, Any, type[BaseModel]]]:
    """(dotted name, pydantic field, the model that holds it) for every leaf field of the configuration."""
    from harness.config import HarnessConfig

    model = model or HarnessConfig
    out: list[tuple[str, Any, type[BaseModel]]] = []
    for name, f in model.model_fields.items():
        ann = f.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            out.extend(config_fields(ann, f"{prefix}{name}."))
        else:
            out.append((f"{prefix}{name}", f, model))
    return out


def _section_of(dotted: str) -> str:
    return dotted.rsplit(".", 1)[0] if "." in dotted else ""


def config_page(model: type[BaseModel] | None = None) -> str:
    """Every leaf field of `HarnessConfig` (or of `model`): dotted name, type, default and description (the field's
    `Field(description=...)`, empty without one), one table per section."""
    fields = config_fields(model)
    out = [WIDE + GENERATED_NOTE, "# Configuration reference", "",
           f"Every field of the one typed configuration (`harness.config.HarnessConfig`): **{len(fields)} fields**. "
           "Write them in a YAML file under the same dotted path (`harness.llm.concurrency: 4` is "
           "`harness: {llm: {concurrency: 4}}`) and name the file with `--harness-config` or the ini's "
           "`harness_config`. An unknown key is an error naming the file, line and the nearest allowed key. "
           "See [Configuration](../configuration.md) for how the file is read.", ""]
    sections: dict[str, list[tuple[str, Any, type[BaseModel]]]] = {}
    for dotted, f, model in fields:
        sections.setdefault(_section_of(dotted), []).append((dotted, f, model))
    for section, rows in sections.items():
        model = rows[0][2]
        out += [f"## `{section or '(top level)'}`", ""]
        doc = (model.__doc__ or "").strip()
        if doc and not doc.startswith(("Usage docs:", "!!! abstract")):
            out += [" ".join(doc.split()), ""]
        out += ["| field | type | default | description |", "| --- | --- | --- | --- |"]
        for dotted, f, _ in rows:
            out.append(f"| <span id=\"{dotted}\"></span>`{dotted}` | {_cell(_type_name(f.annotation))} | "
                       f"{_cell(repr(_default(f)))} | {_prose(f.description)} |")
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------- the techniques
def techniques_page() -> str:
    """Every registered technique: its summary, configuration section, role and parameters."""
    from harness.techniques import describe_params, get_technique, technique_names

    names = technique_names()
    out = [GENERATED_NOTE, "# Technique list", "",
           f"Every technique the registry holds when the package is imported: **{len(names)} techniques** "
           "(`ragharness techniques` prints the same, with a configuration file's values under `--config`). "
           "A technique's parameters come from its `Params` defaults, then the configuration section it names, "
           "then what the caller passes. See [Techniques](../techniques.md).", ""]
    for name in names:
        cls = get_technique(name)
        out += [f"## `{name}`", "", _prose(cls.summary) + ".", "",
                f"- class: `{cls.__module__}.{cls.__qualname__}`",
                f"- configuration section: `{cls.config_section}`" if cls.config_section else
                "- configuration section: none",
                f"- answers for the claims of role: `{cls.role}`" if cls.role else "- role: none", "",
                "| parameter | type | default |", "| --- | --- | --- |"]
        for p in describe_params(name):
            out.append(f"| `{p['name']}` | {_cell(p['type'])} | {_cell(repr(p['default']))} |")
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------- the negative controls
def controls_page() -> str:
    """Every registered negative control: what it breaks, its family module and the specs that name it."""
    from harness.catalogue import PROTOCOL_CATALOGUE, load_catalogue
    from harness.plugin.controls import CONTROLS

    named: dict[str, list[str]] = {}
    for spec in load_catalogue([PROTOCOL_CATALOGUE]):
        if spec.control:
            named.setdefault(spec.control, []).append(spec.id)
    out = [WIDE + GENERATED_NOTE, "# Control list", "",
           f"Every negative control the registry holds: **{len(CONTROLS)} controls**, each a deliberately broken "
           "variant of what a spec is named after, under which the spec's check must fail. Registered with "
           "`@control(name, breaks=...)` in `harness/plugin/controls/` (one module per family); see "
           "[Negative controls](../controls.md).", "",
           "| control | what it breaks | family | specs of the protocol that name it |", "| --- | --- | --- | --- |"]
    for name in sorted(CONTROLS):
        c = CONTROLS[name]
        family = c.apply.__module__.rsplit(".", 1)[-1]
        specs = ", ".join(f"[`{s}`](catalogue.md#{s})" for s in named.get(name, []))
        out.append(f"| <span id=\"{name}\"></span>`{name}` | {_prose(c.breaks)} | `{family}` | {specs} |")
    out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------- the public API
def api_page() -> str:
    """One mkdocstrings entry per name of `harness.__all__`, documented where it is defined."""
    import harness

    exports: dict[str, str] = harness._EXPORTS  # noqa: SLF001 - the map the lazy re-export reads
    out = [GENERATED_NOTE, "# API reference", "",
           f"The public API is `harness.__all__`: **{len(harness.__all__)} names**, all imported from the package "
           "itself (`from harness import HyDE, paired_effect`); importing `harness` loads no model, database or "
           "HTTP library until a name is used. Each entry below is rendered by mkdocstrings from the code's "
           "docstrings and signatures. Anything not listed here is internal and may move (see the "
           "[changelog](../changelog.md)).", ""]
    for name in harness.__all__:
        out += [f"## `{name}`", "", f"`from harness import {name}` (defined in `{exports[name]}`)", "",
                f"::: {exports[name]}.{name}", "    options:", "      show_root_heading: true",
                "      show_root_toc_entry: false", "      heading_level: 3", ""]
    return "\n".join(out)


PAGES: dict[str, Callable[[], str]] = {
    "reference/catalogue.md": catalogue_page,
    "reference/configuration.md": config_page,
    "reference/techniques.md": techniques_page,
    "reference/controls.md": controls_page,
    "reference/api.md": api_page,
}


def on_files(files: Any, config: Any) -> Any:
    """mkdocs hook: add the generated pages to the site's files (mkdocs ≥ 1.6, `File.generated`)."""
    from mkdocs.structure.files import File

    for path, make in PAGES.items():
        files.append(File.generated(config, path, content=make()))
    return files


__all__ = ["PAGES", "api_page", "catalogue_page", "config_fields", "config_page", "controls_page", "on_files",
           "techniques_page"]

"""One typed configuration: the protocol's `wsop.yaml` plus the harness's own settings.

Nothing else in `harness/` reads environment variables; the plugin and the CLI build a
`HarnessConfig` from a YAML file and command-line options and pass it down. The models, each field described,
are in `harness.config_models`; this module loads a file into them and re-exports them.
"""
from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from harness.config_models import (
    DEFAULT_LOCAL_MODEL, BudgetSettings, CragConfig, DatasetSettings, FallbackConfig, FusionConfig, HarnessConfig,
    HarnessSettings, HydeConfig, JudgeSettings, LLMSettings, ModelPrice, RetSettings, RewriteConfig, RoutingConfig,
    SequentialSettings, WSOPConfig, config_models,
)

__all__ = ["DEFAULT_LOCAL_MODEL", "REMOVED_FIELDS", "BudgetSettings", "ConfigError", "CragConfig", "DatasetSettings",
           "FallbackConfig", "FusionConfig", "HarnessConfig", "HarnessSettings", "HydeConfig", "JudgeSettings",
           "LLMSettings", "ModelPrice", "RetSettings", "RewriteConfig", "RoutingConfig", "SequentialSettings",
           "WSOPConfig", "config_models", "leaf_fields", "load_config"]


class ConfigError(ValueError):
    """A configuration file is invalid; the message names the file and the field."""


# fields of the protocol's §7 that the harness does not read, with what to use instead
REMOVED_FIELDS = {
    "wsop.crag.evaluator_model": "it duplicated crag.scorer; the reranker is harness.reranker",
    "wsop.query_rewriting.use_rl": "no run trains the rewriter; train a T5 rewriter with "
                                   "Seq2SeqRewriter.policy_gradient_step and set query_rewriting.model to its path",
}


def leaf_fields(model: type[BaseModel] | None = None, prefix: str = "") -> list[str]:
    """Every leaf field of the configuration as a dotted path (e.g. `wsop.hyde.temperature`)."""
    model = model or HarnessConfig
    out: list[str] = []
    for name, f in model.model_fields.items():
        ann = f.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            out.extend(leaf_fields(ann, f"{prefix}{name}."))
        else:
            out.append(f"{prefix}{name}")
    return out


def load_config(path: str | Path | None = None, **overrides: object) -> HarnessConfig:
    """Build the config from a YAML file (optional) and dotted overrides like `harness.llm.model=...`.

    An invalid file is a `ConfigError` naming every problem at once, one line each: the file, the YAML line, the
    dotted field and what is wrong (an unknown key with the nearest allowed one, "did you mean ...?")."""
    data: dict[str, Any] = {}
    text = ""
    if path is not None:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
            data = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"{p}: invalid YAML: {exc}") from None
        except OSError as exc:
            raise ConfigError(f"{p.absolute()}: cannot read the configuration file: {exc.strerror or exc}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{p}: expected a mapping at the top level, got {type(data).__name__}")
    given = [k for k, v in overrides.items() if v is not None]
    for dotted, value in overrides.items():
        if value is None:
            continue
        node: Any = data
        keys = dotted.split(".")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value
    lines = _YamlLines(text)
    where = f"{path}" if path else "configuration"
    problems: list[tuple[int | None, str]] = []
    removed: set[str] = set()
    for dotted, why in REMOVED_FIELDS.items():
        node = data
        for k in dotted.split("."):
            node = node.get(k) if isinstance(node, dict) and k in node else None
            if node is None:
                break
        else:
            removed.add(dotted)
            line = lines.line_of(tuple(dotted.split(".")))
            problems.append((line, f"{_at(where, line)}: field '{dotted}' is not read by rag-harness and was "
                                   f"removed: {why}"))
    try:
        config = HarnessConfig.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            loc = tuple(err["loc"])
            field = ".".join(str(x) for x in loc)
            if field in removed:  # said above, with what replaced it
                continue
            from_cli = any(field == k or field.startswith(k + ".") for k in given)
            line = None if from_cli else lines.line_of(loc)
            problems.append((line, f"{_at(where, line)}: field '{field}': {_problem(err)}"
                                   + (" (set on the command line)" if from_cli else "")))
    if not problems:
        return config
    problems.sort(key=lambda p: (p[0] is None, p[0] or 0))
    if len(problems) == 1:
        raise ConfigError(problems[0][1])
    raise ConfigError(f"{where}: {len(problems)} problems\n" + "\n".join("  " + text for _, text in problems))


def _at(where: str, line: int | None) -> str:
    return f"{where}:{line}" if line is not None and where != "configuration" else where


def _problem(err: ErrorDetails) -> str:
    """Pydantic's message, or for an unknown key the allowed key it is closest to (else the allowed keys)."""
    if err["type"] != "extra_forbidden":
        return err["msg"]
    from difflib import get_close_matches

    model = _model_at(tuple(err["loc"])[:-1])
    allowed = list(model.model_fields) if model is not None else []
    near = get_close_matches(str(err["loc"][-1]), allowed, n=1, cutoff=0.6)
    if near:
        return f"unknown key (did you mean '{near[0]}'?)"
    return f"unknown key (allowed: {', '.join(allowed)})" if allowed else "unknown key"


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The configuration model that holds the fields at `loc` (through dict values and list items), or None."""
    t: Any = HarnessConfig
    for part in loc:
        if isinstance(t, type) and issubclass(t, BaseModel) and part in t.model_fields:
            t = t.model_fields[part].annotation
        elif typing.get_origin(t) is dict and len(typing.get_args(t)) == 2:
            t = typing.get_args(t)[1]
        elif typing.get_origin(t) is list and typing.get_args(t):
            t = typing.get_args(t)[0]
        else:
            return None
        args = [a for a in typing.get_args(t) if a is not type(None)]
        if typing.get_origin(t) in (typing.Union, types.UnionType) and len(args) == 1:
            t = args[0]  # Optional[X] -> X
    return t if isinstance(t, type) and issubclass(t, BaseModel) else None


class _YamlLines:
    """Line numbers (1-based) of the keys of a YAML text, looked up by their path of keys and list indices."""

    def __init__(self, text: str):
        try:
            self.root = yaml.compose(text) if text.strip() else None
        except yaml.YAMLError:
            self.root = None

    def line_of(self, loc: tuple[Any, ...]) -> int | None:
        """The line of the key at `loc`, or of the deepest key on its way that the text holds."""
        node, line = self.root, None
        for part in loc:
            child = None
            if isinstance(node, yaml.MappingNode):
                for key, value in node.value:
                    if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                        child, line = value, key.start_mark.line + 1
                        break
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
                child = node.value[part]
                line = child.start_mark.line + 1
            if child is None:
                break
            node = child
        return line

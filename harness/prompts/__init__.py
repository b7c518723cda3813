"""Prompts as data: one YAML file per technique, with a chat variant and, where a base model needs
one, a completion-style few-shot variant."""
from __future__ import annotations

import functools
from importlib import resources
from typing import Any

from harness import fast_yaml


@functools.lru_cache(maxsize=None)
def load_prompts(technique: str) -> dict[str, Any]:
    """The prompt file `harness/prompts/<technique>.yaml` as a dict."""
    text = resources.files(__package__).joinpath(f"{technique}.yaml").read_text(encoding="utf-8")
    return fast_yaml.safe_load(text)


def render(template: str, **values: Any) -> str:
    return template.format(**values)

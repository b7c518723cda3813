"""Start-up checks of the plugin's options: each bad value is a pytest usage error naming the option, before
any fixture loads a model or a dataset. Paths given on the command line are read from the current folder."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable

import pytest


DEFAULT_SPEC_FILES = ["specs"]  # the ini's default, told apart by identity: used only where the folder exists


def project_spec_paths(config: pytest.Config) -> list[Path]:
    """The project's own catalogue: `--spec-file`, else the ini's `spec_files`, else `specs/` under the rootdir
    when there is one (the protocol's catalogue is always loaded beside it)."""
    if config.getoption("spec_file"):
        return [Path(p) for p in config.getoption("spec_file")]
    paths = [config.rootpath / p for p in config.getini("spec_files")]
    if config.getini("spec_files") is DEFAULT_SPEC_FILES:
        return [p for p in paths if p.is_dir()]
    return paths


def _usage(message: str) -> pytest.UsageError:
    return pytest.UsageError(f"rag-harness: {message}")


def from_cwd(config: pytest.Config, value: str) -> Path:
    """A path given on the command line, read from the folder pytest was started in."""
    p = Path(value).expanduser()
    return p if p.is_absolute() else Path(config.invocation_params.dir) / p


def check_options(config: pytest.Config) -> None:
    """Numbers in range and paths that exist; command-line paths are made absolute in place, so subprocesses
    started from another folder (benchmark-tier negative controls) read the same files."""
    n = config.getoption("max_queries")
    if n is not None and n < 0:
        raise _usage(f"--max-queries must be 0 (all queries) or more, got {n}")
    cap = config.getoption("max_cost")
    if cap is not None and not (math.isfinite(cap) and cap >= 0):
        raise _usage(f"--max-cost must be a number of US dollars, 0 or more, got {cap}")
    if config.getoption("controls_only") and not config.getoption("negative_controls"):
        raise _usage("--controls-only needs --negative-controls (it skips the real runs of a controls run)")
    for name, exists, what in (("harness_config", Path.is_file, "file"), ("data_dir", Path.is_dir, "folder")):
        given = config.getoption(name)
        if given is not None:
            path = from_cwd(config, given)
            if not exists(path):
                raise _usage(f"--{name.replace('_', '-')} {given}: no such {what} ({path})")
            setattr(config.option, name, str(path))
    if config.getoption("spec_file"):
        config.option.spec_file = [str(from_cwd(config, p)) for p in config.getoption("spec_file")]


def check_models(models: Iterable[tuple[str, str]]) -> None:
    """Each (option, litellm model string) must name a provider litellm knows (read locally, no call made)."""
    from harness.llm.failures import unknown_model

    for option, model in models:
        problem = unknown_model(model)
        if problem:
            raise _usage(f"{option} {model}: {problem}")


def check_controls(named: Iterable[tuple[str, str]]) -> None:
    """Each (where, control name) must be a registered negative control."""
    from difflib import get_close_matches

    from harness.plugin.controls import CONTROLS

    unknown = [(where, name) for where, name in named if name not in CONTROLS]
    if unknown:
        listed = "; ".join(f"{where} names {name!r}" for where, name in unknown)
        near = sorted({m for _, name in unknown for m in get_close_matches(name, list(CONTROLS), n=3)})
        hint = f"did you mean {', '.join(near)}?" if near else f"registered: {', '.join(sorted(CONTROLS))}"
        raise _usage(f"unknown negative control: {listed} ({hint})")


def check_collected(config: pytest.Config, specs: Iterable[Any]) -> None:
    """Checks that need the test modules imported (techniques and controls they may register): --technique
    names, --under-control, and under --negative-controls the control each collected spec names."""
    if config.getoption("under_control"):
        check_controls([("--under-control", config.getoption("under_control"))])
    if config.getoption("technique"):
        from harness.plugin.model_fixtures import technique_choices

        technique_choices(config)
    if config.getoption("negative_controls"):
        check_controls(sorted({(f"spec {s.id}", s.control) for s in specs if s.control}))

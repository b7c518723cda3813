"""Cost before a run: a dry run through a stand-in for the chosen model.

`EstimatingClient` takes the place of the run's LLM client. It never sends a request: it answers with a
scripted responder, counts the prompt and answer with the chosen model's tokenizer (`litellm.token_counter`,
local files only) and prices them from the configuration or litellm's bundled cost map. Run the pipelines
through it and its `Spend` holds the expected calls, tokens and dollars per technique.

What the estimate knows and what it assumes:
- calls and prompts are the run's own: the same techniques, prompts, datasets and retrieved passages;
- answers come from the stand-in, so their length (completion tokens) and every branch that depends on an
  answer (a CRAG verdict, a parse that fails and is repaired) are the stand-in's, not the model's.
"""
from __future__ import annotations

import copy
import json
import math
import re
import time
from typing import Any, Callable

from harness.config import ModelPrice
from harness.llm.client import LLMClient, LLMResult, Messages, litellm_price
from harness.llm.meter import METER
from harness.llm.spend import Spend

Responder = Callable[[list[dict[str, str]], dict[str, Any]], str]


def token_counter(model: str) -> tuple[Callable[[Messages | str], int], str]:
    """A function counting the tokens of messages or a text for `model`, and the tokenizer's description:
    litellm's (bundled tokenizer files, nothing fetched), or 4 characters a token where litellm has none."""
    from harness.llm._litellm import litellm

    ll = litellm()

    def count(x: Messages | str) -> int:
        if isinstance(x, str):
            return int(ll.token_counter(model=model, text=x)) if x else 0
        return int(ll.token_counter(model=model, messages=x))

    try:
        count([{"role": "user", "content": "probe"}])
        return count, "litellm.token_counter"
    except Exception:  # noqa: BLE001 - no tokenizer for this model offline
        def approx(x: Messages | str) -> int:
            text = x if isinstance(x, str) else " ".join(str(m.get("content", "")) for m in x)
            return math.ceil(len(text) / 4)

        return approx, "4 characters per token"


def stand_in_responder(words: int = 40) -> Responder:
    """A generic stand-in answer: JSON where the prompt asks for JSON (reasoning steps and an answer, or a
    list), else the first `words` words of the prompt's sources, capped at the call's max_tokens (~0.75 words
    a token)."""

    def respond(messages: list[dict[str, str]], params: dict[str, Any]) -> str:
        system = next((m["content"] for m in messages if m.get("role") == "system"), "")
        user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        cap = max(1, int(int(params.get("max_tokens", 256)) * 0.75))
        body = re.sub(r"\[(?:Source )?\d+[^\]]*\]", " ", user)
        text = " ".join(body.split()[:min(words, cap)])
        if "reasoning_steps" in system or "reasoning_steps" in user:
            return '{"reasoning_steps": "Step 1: read the sources.", "answer": %s}' % json.dumps(text)
        if "JSON" in system or "JSON" in user:
            return '["%s"]' % text.replace('"', "'")[:200]
        return text

    return respond


class EstimatingClient(LLMClient):
    """A stand-in for `model` that counts instead of calling (see the module docstring)."""

    def __init__(self, model: str, responder: Responder, *, spend: Spend, price: ModelPrice | None = None,
                 concurrency: int = 8, label: str | None = None):
        price = price or litellm_price(model)
        super().__init__(model, concurrency=concurrency, label=label or model, price=price, spend=spend)
        self.responder = responder
        self.count, self.tokenizer = token_counter(model)
        self.priced = price is not None

    def with_cache(self, cache: Any) -> "EstimatingClient":
        """Itself: a stand-in has nothing to cache, and must never become a client that calls the model."""
        return self

    def with_role(self, role: str) -> "EstimatingClient":
        """A stand-in counting under another role (never a client that calls the model)."""
        twin = copy.copy(self)
        twin.role = role
        return twin

    def _call(self, msgs: Messages, params: dict[str, Any]) -> LLMResult:
        t0 = time.perf_counter()
        text = self.responder(msgs, params)
        pt, ct = self.count(msgs), self.count(text)
        cost = self.price.cost(pt, ct) if self.price is not None else None
        with self._lock:
            self.stats.calls += 1
            self.stats.prompt_tokens += pt
            self.stats.completion_tokens += ct
        METER.call(pt, ct)  # the stand-in's calls are the run's calls, as in its spend
        assert self.spend is not None
        self.spend.record(model=self.label, role=self.role, prompt_tokens=pt, completion_tokens=ct, cost_usd=cost)
        return LLMResult(text, self.model, pt, ct, cost, time.perf_counter() - t0)


def estimate_dict(spend: Spend, model: str, tokenizer: str, price: ModelPrice | None) -> dict[str, Any]:
    """The estimate for results.json / estimate.json: calls, tokens and dollars (None without a price) per
    technique (summed over the roles and models a technique used), and the total."""
    def counts(rows: list) -> dict[str, Any]:
        return {"calls": sum(r.calls for r in rows), "prompt_tokens": sum(r.prompt_tokens for r in rows),
                "completion_tokens": sum(r.completion_tokens for r in rows),
                "cost_usd": sum(r.cost_usd for r in rows) if price else None}

    rows = spend.rows()
    return {"model": model, "tokenizer": tokenizer, "price": price.model_dump() if price else None,
            "by_technique": {t: counts([r for r in rows if r.technique == t]) for t in sorted({r.technique for r in rows})},
            "total": counts(rows)}


def estimate_lines(estimate: dict[str, Any]) -> list[str]:
    """An estimate (`estimate_dict`) as a table: calls, tokens and dollars per technique, then the total."""
    price = estimate.get("price")
    shown = (f"${price['input_per_mtok']:g} / ${price['output_per_mtok']:g} per million tokens in / out"
             f"{' (' + price['source'] + ')' if price.get('source') else ''}") if price else \
        "no price known (dollars unknown)"
    out = [f"cost estimate for {estimate['model']} ({shown}; tokens by {estimate['tokenizer']}); no call was made",
           f"{'technique':<28} {'calls':>7} {'prompt tok':>11} {'compl. tok':>11} {'USD':>10}"]
    for name, r in [*estimate["by_technique"].items(), ("total", estimate["total"])]:
        usd = f"{r['cost_usd']:.4f}" if r["cost_usd"] is not None else "?"
        out.append(f"{name:<28} {r['calls']:>7} {r['prompt_tokens']:>11,} {r['completion_tokens']:>11,} {usd:>10}")
    return out

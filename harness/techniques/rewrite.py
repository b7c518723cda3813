"""Rewrite-Retrieve-Read (Ma et al., arXiv:2305.14283): an LLM rewriter, the PPO reward, and a
trainable seq2seq rewriter that takes real policy-gradient steps."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal, Sequence

from harness.config import RewriteConfig
from harness.retrieval.chunking import default_tokenizer
from harness.llm.client import LLMClient
from harness.metrics._text import exact_match, token_f1
from harness.prompts import load_prompts, render
from harness.techniques.generation import try_complete
from harness.techniques.parsing import first_item
from harness.techniques._registry import Technique, TechniqueResult, register_technique
from harness.types import Query, Trace


class LLMRewriter:
    """Rewrites a query (optionally with conversation context) into a search query of < `max_tokens`
    tokens; falls back to the original query when the output is unusable."""

    def __init__(self, llm: LLMClient, *, max_tokens: int = 64, prompt_variant: str = "chat", temperature: float = 0.0):
        self.llm, self.max_tokens, self.temperature = llm, max_tokens, temperature
        self.prompts = load_prompts("rewrite")[prompt_variant]
        self.tokenizer = default_tokenizer()

    def rewrite(self, query: str, context: str | None = None, trace: Trace | None = None) -> str:
        trace = trace if trace is not None else Trace()
        template = self.prompts["user_with_context"] if context else self.prompts["user"]
        prompt = render(template, query=query, context=context or "")
        with trace.stage("rewrite"):
            text = try_complete(self.llm, prompt, system=self.prompts.get("system"), temperature=self.temperature,
                                max_tokens=self.max_tokens, stop=["\n\n", "Query:"], trace=trace,
                                error_event="rewrite_error") or ""
        out = first_item(text, prompt=prompt)
        ids = self.tokenizer.encode(out)
        if len(ids) >= self.max_tokens:
            out = " ".join(out.split()[: max(1, len(out.split()) * (self.max_tokens - 1) // len(ids))])
        if not out:
            trace.event("rewrite_fallback", reason="empty or unusable output")
            return query
        trace.event("rewrite")
        return out


@dataclass(frozen=True)
class PPORewardFunction:
    """reward = alpha * EM + beta * F1 + gamma * Hit (the protocol's weights; they sum to 1)."""

    alpha: float = 0.4
    beta: float = 0.4
    gamma: float = 0.2

    def __post_init__(self) -> None:
        if min(self.alpha, self.beta, self.gamma) < 0 or abs(self.alpha + self.beta + self.gamma - 1.0) > 1e-9:
            raise ValueError("reward weights must be non-negative and sum to 1 so the reward stays in [0, 1]")

    def compute_reward(self, generated_answer: str, ground_truth: str | Sequence[str], retrieval_hit: bool) -> float:
        em = exact_match(generated_answer, ground_truth)
        f1 = token_f1(generated_answer, ground_truth)
        return self.alpha * em + self.beta * f1 + self.gamma * (1.0 if retrieval_hit else 0.0)


class Seq2SeqRewriter:
    """A T5 rewriter trained with REINFORCE (the policy-gradient core of PPO, without clipping).

    `from_config()` builds a small byte-level T5 from a config (no download); pass any local
    T5 checkpoint path to `from_pretrained()` for a real one.
    """

    def __init__(self, model, tokenizer, *, max_length: int = 64, seed: int = 0):
        import torch

        self.model, self.tokenizer, self.max_length = model, tokenizer, max_length
        self.generator = torch.Generator().manual_seed(seed)
        torch.manual_seed(seed)

    @classmethod
    def from_config(cls, *, d_model: int = 64, layers: int = 2, heads: int = 4, seed: int = 0) -> "Seq2SeqRewriter":
        import torch
        from transformers import ByT5Tokenizer, T5Config, T5ForConditionalGeneration

        torch.manual_seed(seed)
        tok = ByT5Tokenizer()
        cfg = T5Config(vocab_size=len(tok),
                       d_model=d_model, d_kv=d_model // heads, d_ff=d_model * 2, num_layers=layers,
                       num_decoder_layers=layers, num_heads=heads, decoder_start_token_id=tok.pad_token_id,
                       pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
        return cls(T5ForConditionalGeneration(cfg), tok, seed=seed)

    @classmethod
    def from_pretrained(cls, path: str) -> "Seq2SeqRewriter":
        from transformers import AutoTokenizer, T5ForConditionalGeneration

        return cls(T5ForConditionalGeneration.from_pretrained(path, local_files_only=True),
                   AutoTokenizer.from_pretrained(path, local_files_only=True))

    def _inputs(self, queries: Sequence[str], context: str | None = None):
        texts = [f"Context: {context}\nQuery: {q}\nRewrite:" if context else f"Query: {q}\nRewrite:" for q in queries]
        return self.tokenizer(texts, return_tensors="pt", padding=True, truncation=True, max_length=256)

    def rewrite(self, query: str, context: str | None = None, *, num_beams: int = 4) -> str:
        import torch

        self.model.eval()
        with torch.no_grad():
            out = self.model.generate(**self._inputs([query], context), max_length=self.max_length,
                                      num_beams=num_beams, early_stopping=True)
        return self.tokenizer.decode(out[0], skip_special_tokens=True).strip() or query

    def policy_gradient_step(self, queries: Sequence[str], reward_fn: Callable[[str, str], float], *,
                             lr: float = 1e-3, max_new_tokens: int = 24) -> dict[str, float]:
        """Sample one rewrite per query, score it, and take one REINFORCE step with a mean baseline.

        Returns the mean reward, the loss and the L2 norm of the parameter change. When every advantage is 0
        (all rewards equal) there is no learning signal: no step is taken and `no_signal` is 1.0.
        """
        import torch

        enc = self._inputs(queries)
        self.model.eval()
        with torch.no_grad():
            samples = self.model.generate(**enc, do_sample=True, top_k=0, max_new_tokens=max_new_tokens)
        texts = [self.tokenizer.decode(s, skip_special_tokens=True) for s in samples]
        rewards = torch.tensor([float(reward_fn(q, t)) for q, t in zip(queries, texts)], dtype=torch.float32)
        advantage = rewards - rewards.mean() if len(queries) > 1 else rewards
        if float(advantage.abs().sum()) == 0.0:
            return {"mean_reward": float(rewards.mean()), "loss": 0.0, "param_l2_change": 0.0, "no_signal": 1.0}
        labels = samples[:, 1:].clone()
        labels[labels == self.tokenizer.pad_token_id] = -100
        self.model.train()
        out = self.model(**enc, labels=labels)
        logp = -torch.nn.functional.cross_entropy(out.logits.transpose(1, 2), labels, ignore_index=-100,
                                                  reduction="none").sum(dim=1)
        loss = -(advantage * logp).mean()
        before = [p.detach().clone() for p in self.model.parameters()]
        opt = torch.optim.Adam(self.model.parameters(), lr=lr)
        opt.zero_grad()
        loss.backward()
        opt.step()
        change = sum(float(((p.detach() - b) ** 2).sum()) for p, b in zip(self.model.parameters(), before)) ** 0.5
        return {"mean_reward": float(rewards.mean()), "loss": float(loss.detach()), "param_l2_change": change,
                "no_signal": 0.0}


# ---------------------------------------------------------------- the registered technique
class RewriteParams(RewriteConfig):
    k: int = 10
    prompt_variant: Literal["chat", "completion"] = "chat"


@register_technique
class RewriteTechnique(Technique):
    name, role = "query-rewriting", "query-rewriting"
    summary = "Rewrite-Retrieve-Read: an LLM (or a local T5 checkpoint) rewrites the query (Ma et al. 2023)"
    Params, config_section = RewriteParams, "wsop.query_rewriting"
    params: RewriteParams

    def setup(self) -> None:
        p = self.params
        if p.model == "llm":
            self.rewriter: Any = LLMRewriter(self.services.require("llm"), max_tokens=p.max_length,
                                             prompt_variant=p.prompt_variant)
        else:  # a path to a local T5 checkpoint (e.g. one trained with Seq2SeqRewriter.policy_gradient_step)
            from pathlib import Path

            if not (Path(p.model) / "config.json").is_file():
                raise ValueError(f"wsop.query_rewriting.model: {p.model!r} is neither 'llm' nor a folder holding a "
                                 "T5 checkpoint (config.json)")
            self.rewriter = Seq2SeqRewriter.from_pretrained(p.model)
            self.rewriter.max_length = p.max_length

    def _run(self, query: Query, trace: Trace) -> TechniqueResult:
        if hasattr(self.rewriter, "llm"):
            rewritten = self.rewriter.rewrite(query.text, trace=trace)
        else:
            with trace.stage("rewrite"):
                rewritten = self.rewriter.rewrite(query.text)
            trace.event("rewrite")
        with trace.stage("retrieve"):
            hits = self.services.require("retriever").retrieve(rewritten, self.params.k)
        return self.result(query, hits, trace, rewritten=rewritten)

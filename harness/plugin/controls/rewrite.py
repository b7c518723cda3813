"""Negative controls for query rewriting (QRW): the rewriter, its PPO reward and policy step, and the web-search
backend."""
from __future__ import annotations

from typing import Any

from harness.plugin.controls.registry import control


@control("rewrite-no-length-limit", breaks="the rewriter neither truncates long outputs nor parses the first item")
def _rewrite_no_limit(mp: Any) -> None:
    from harness.techniques.rewrite import LLMRewriter

    def rewrite(self, query, context=None, trace=None):
        template = self.prompts["user_with_context"] if context else self.prompts["user"]
        from harness.prompts import render

        text = self.llm.complete(render(template, query=query, context=context or ""), max_tokens=512).text
        return text.strip() or query

    mp.setattr(LLMRewriter, "rewrite", rewrite)


@control("rewrite-returns-original", breaks="the rewriter returns the query unchanged")
def _rewrite_identity(mp: Any) -> None:
    from harness.techniques.rewrite import LLMRewriter

    mp.setattr(LLMRewriter, "rewrite", lambda self, query, context=None, trace=None: query)


@control("reward-weights-unnormalised", breaks="the PPO reward adds EM, F1 and hit with unit weights (range 0..3), "
                                               "not 0.4/0.4/0.2 summing to 1")
def _reward_unnormalised(mp: Any) -> None:
    from harness.techniques.rewrite import PPORewardFunction

    orig = PPORewardFunction.compute_reward

    def compute_reward(self, generated_answer, ground_truth, retrieval_hit):
        parts = [PPORewardFunction(1.0, 0.0, 0.0), PPORewardFunction(0.0, 1.0, 0.0), PPORewardFunction(0.0, 0.0, 1.0)]
        return sum(orig(p, generated_answer, ground_truth, retrieval_hit) for p in parts)

    mp.setattr(PPORewardFunction, "compute_reward", compute_reward)


@control("policy-step-skips-update", breaks="the policy-gradient step computes the loss but never steps the optimiser")
def _policy_no_step(mp: Any) -> None:
    import torch

    mp.setattr(torch.optim.Adam, "step", lambda self, closure=None: None)


@control("web-search-returns-nothing", breaks="the web-search backend returns no documents")
def _web_empty(mp: Any) -> None:
    from harness.techniques.crag import LocalWebSearch

    mp.setattr(LocalWebSearch, "search", lambda self, query, num_results=10: [])

"""Negative controls for judge metrics and reliability: faithfulness, context precision, kappa, the lexical baseline
and the LLM judge."""
from __future__ import annotations

from typing import Any

from harness.plugin.controls.registry import control, replace_everywhere


@control("faithfulness-counts-any-support-as-full", breaks="faithfulness reads 1 when any claim is supported")
def _faith_any(mp: Any) -> None:
    from harness.judge import metrics

    replace_everywhere(mp, metrics.faithfulness,
                       lambda verdicts: (1.0 if any(verdicts) else 0.0) if len(verdicts) else float("nan"))


@control("context-precision-ignores-rank", breaks="context precision is relevant / retrieved, whatever their ranks")
def _ctx_precision_flat(mp: Any) -> None:
    from harness.judge import metrics

    replace_everywhere(mp, metrics.context_precision,
                       lambda ranked, relevant: sum(d in relevant for d in ranked) / len(ranked) if ranked else 0.0)


@control("kappa-ignores-chance", breaks="Cohen's kappa is the raw agreement (no chance correction)")
def _kappa_raw(mp: Any) -> None:
    from harness.judge import reliability

    replace_everywhere(mp, reliability.cohen_kappa,
                       lambda a, b: sum(x == y for x, y in zip(a, b)) / len(a) if len(a) else float("nan"))


@control("lexical-judge-sees-no-context", breaks="the lexical baseline checks each claim against an empty context")
def _lexical_blind(mp: Any) -> None:
    from harness.judge import claims

    orig = claims.lexical_support
    replace_everywhere(mp, orig, lambda claim, context, **kw: orig(claim, "", **kw))


@control("unreliable-judge-not-flagged", breaks="no judge is ever flagged unreliable")
def _judge_never_flagged(mp: Any) -> None:
    from harness.judge.reliability import JudgeReliability

    mp.setattr(JudgeReliability, "reasons", property(lambda self: []))


@control("judge-sees-no-context", breaks="the LLM judge is shown an empty context for every claim")
def _judge_blind(mp: Any) -> None:
    import dataclasses

    from harness.judge.llm_judge import LLMJudge

    orig = LLMJudge.rule  # `supported` rules through `rule` too
    mp.setattr(LLMJudge, "rule", lambda self, item, **kw: orig(self, dataclasses.replace(item, context=""), **kw))


@control("judge-one-label", breaks="the LLM judge calls every claim supported, whatever the claim and its context "
                                   "(no model call)")
def _judge_one_label(mp: Any) -> None:
    from harness.judge.llm_judge import LLMJudge, Ruling

    def rule(self, item, *, seed=None, fresh=False, recheck=False):
        return Ruling(True, "recheck" if recheck else "support", "(no call)", 0.0, seed, False)

    mp.setattr(LLMJudge, "rule", rule)


@control("judge-second-ruling-random", breaks="the judge's second (recheck) rulings are coin flips")
def _judge_coin(mp: Any) -> None:
    import random

    from harness.judge.llm_judge import LLMJudge, Ruling

    orig, rng = LLMJudge.rule, random.Random(0)

    def rule(self, item, *, seed=None, fresh=False, recheck=False):
        if recheck:
            return Ruling(rng.random() < 0.5, "recheck", f"(coin {rng.random()})", 1.0, seed, False)
        return orig(self, item, seed=seed, fresh=fresh)

    mp.setattr(LLMJudge, "rule", rule)


@control("judge-recheck-repeats-first-ruling", breaks="the judge's second ruling repeats the first call (first "
         "wording, first temperature and seed, answerable from the cache) instead of a perturbed re-ruling")
def _judge_recheck_repeats(mp: Any) -> None:
    from harness.judge.llm_judge import LLMJudge

    orig = LLMJudge.rule

    def rule(self, item, *, seed=None, fresh=False, recheck=False):
        if recheck:  # the recheck pass asks with seed + 1: back to the first ruling's request
            return orig(self, item, seed=None if seed is None else seed - 1)
        return orig(self, item, seed=seed, fresh=fresh)

    mp.setattr(LLMJudge, "rule", rule)


@control("lexical-baseline-inverted", breaks="the judge-free lexical baseline rules every claim the opposite way")
def _lexical_inverted(mp: Any) -> None:
    from harness.judge.llm_judge import LexicalJudge

    orig = LexicalJudge.supported

    def supported(self, item, **kw):
        verdict = orig(self, item, **kw)
        return None if verdict is None else not verdict

    mp.setattr(LexicalJudge, "supported", supported)

"""Negative controls for rET: hypotheses, fingerprints, coverage, the plan, the MCQ blend, the budget and the gates."""
from __future__ import annotations

from typing import Any

from harness.plugin.controls.registry import control, replace_everywhere


@control("ret-hypotheses-unparsed", breaks="hypothesis parsing returns nothing for any model output")
def _ret_no_hyps(mp: Any) -> None:
    from harness.techniques.ret import triangulation as ret

    replace_everywhere(mp, ret.generate_hypotheses, lambda *a, **kw: [])


@control("ret-no-fingerprints", breaks="fingerprint extraction returns no fingerprints")
def _ret_no_fps(mp: Any) -> None:
    from harness.techniques.ret import triangulation as ret

    replace_everywhere(mp, ret.extract_fingerprints, lambda hyps, *a, **kw: {h.hypothesis: [] for h in hyps})


@control("ret-coverage-constant", breaks="fingerprint coverage is 0.5 for every document")
def _ret_cov(mp: Any) -> None:
    from harness.techniques.ret import triangulation as ret

    replace_everywhere(mp, ret.fingerprint_coverage, lambda text, fingerprints: 0.5)


@control("ret-plan-without-fingerprints", breaks="the retrieval plan ignores the fingerprints")
def _ret_plan(mp: Any) -> None:
    from harness.techniques.ret import triangulation as ret

    replace_everywhere(mp, ret.build_retrieval_plan, lambda question, fps, config, base=None:
                       dict(base or {"primary": [question]}))


@control("ret-synthesis-without-table", breaks="the synthesis prompt leaves out the coverage table")
def _ret_no_table(mp: Any) -> None:
    from harness.techniques.ret import triangulation as ret

    orig = ret.synthesis_prompt
    replace_everywhere(mp, orig, lambda question, evidence, table=None: orig(question, evidence, None))


@control("ret-mcq-blend-ignores-weight", breaks="the MCQ blend always uses 0.7 llm + 0.3 lexical + weight x coverage")
def _ret_blend(mp: Any) -> None:
    from harness.techniques.ret import triangulation as ret

    replace_everywhere(mp, ret.mcq_blend, lambda llm_net, lexical, coverage, weight=0.20:
                       0.7 * llm_net + 0.3 * lexical + weight * (coverage or 0.0))


@control("ret-mcq-blend-weight-zero-ignored", breaks="the MCQ blend reads a fingerprint weight of 0 as unset and "
                                                     "blends at the default 0.20 (`weight or 0.20`)")
def _ret_blend_zero(mp: Any) -> None:
    from harness.techniques.ret import triangulation as ret

    orig = ret.mcq_blend
    replace_everywhere(mp, orig, lambda llm_net, lexical, coverage, weight=0.20:
                       orig(llm_net, lexical, coverage, weight or 0.20))


@control("ret-ignores-hypothesis-quality", breaks="RET runs on hypotheses with one-word justifications")
def _ret_quality(mp: Any) -> None:
    from harness.techniques.ret.triangulation import RET

    orig = RET.select

    def select(self, question, retriever, **kw):
        self.config = self.config.model_copy(update={"min_justification_tokens": 0})
        return orig(self, question, retriever, **kw)

    mp.setattr(RET, "select", select)


@control("ret-ignores-parse-failure", breaks="unparseable fingerprints fall back to the question's words silently")
def _ret_parse(mp: Any) -> None:
    from harness.techniques.ret import triangulation as ret

    orig = ret.extract_fingerprints

    def extract(hyps, question, *a, **kw):
        out = orig(hyps, question, *a, **kw)
        return {h: (v or [question, question]) for h, v in out.items()} or {h.hypothesis: [question] * 2 for h in hyps}

    replace_everywhere(mp, orig, extract)


@control("ret-ignores-budget", breaks="RET's budget guard reads 0 spend whatever the question's run has spent (or a "
                                     "caller passes), so RET calls the model on a spent budget")
def _ret_budget(mp: Any) -> None:
    from harness.techniques.ret.triangulation import RET

    orig = RET.select
    mp.setattr(RET, "select", lambda self, question, retriever, spent_usd=None, **kw:
               orig(self, question, retriever, spent_usd=0.0, **kw))


@control("ret-gates-ignore-skips", breaks="the RET gates count no question as fallen back (fallback_rate 0), so a "
                                         "gate measured where RET skipped reads as if RET had run")
def _ret_gates_skips(mp: Any) -> None:
    from harness.techniques.ret import gates as ret_eval

    replace_everywhere(mp, ret_eval.fallback_rate, lambda off, on: 0.0)


@control("ret-tau-drops-lost-gold", breaks="GATE-3 drops a question whose gold passage left one arm's top 10 "
                                          "(tau undefined there) instead of scoring that arm -1")
def _ret_tau_drops(mp: Any) -> None:
    from harness.techniques.ret import gates as ret_eval

    replace_everywhere(mp, ret_eval.gate_tau, lambda relevance, other: ret_eval.selection_tau(relevance))


@control("ret-top-hypothesis-first-on-ties", breaks="GATE-4 credits the first generated hypothesis when several "
                                                   "tie for the top fingerprint coverage")
def _ret_top_first(mp: Any) -> None:
    from harness.techniques.ret import triangulation as ret

    from harness.techniques.ret import gates as ret_eval
    def first_of_best(res: Any) -> str | None:
        if res.skip_reason or not res.hypotheses:
            return None
        return max(res.hypotheses, key=lambda h: max((ret.fingerprint_coverage(d.text, res.fingerprints.get(
            h.hypothesis, [])) for d in res.docs), default=0.0)).hypothesis

    replace_everywhere(mp, ret_eval.top_coverage_hypothesis, first_of_best)


@control("ret-returns-baseline", breaks="RET-on selects exactly what RET-off selects (the stage is skipped)")
def _ret_baseline(mp: Any) -> None:
    from harness.techniques.ret.triangulation import RET

    orig = RET.select

    def select(self, question, retriever, **kw):
        off = RET(self.llm, self.config.model_copy(update={"enable_ret": False}), k=self.k, per_query=self.per_query)
        return orig(off, question, retriever, **kw)

    mp.setattr(RET, "select", select)


@control("ret-stage-repeated", breaks="the RET stage makes its model calls three times over")
def _ret_thrice(mp: Any) -> None:
    from harness.techniques.ret import triangulation as ret

    orig = ret.generate_hypotheses

    def thrice(*a, **kw):
        for _ in range(2):
            orig(*a, **kw)
        return orig(*a, **kw)

    replace_everywhere(mp, orig, thrice)

"""The judge's reliability in the benchmark tier: agreement with HaluEval's labels (Cohen's κ over every item, a
failed ruling a disagreement; on fewer items than the spec's min_n it cannot be supported), its self-consistency
(flip rate against a second ruling in the rubric's other wording at the recheck temperature, uncached) and the
judges' agreement (Krippendorff's α)."""
from __future__ import annotations

import math

import pytest

from harness.stats._effect import Effect
from harness.stats.intervals import wilson_interval

pytestmark = pytest.mark.benchmark


def _ctx(study, rel, **kw):
    return {"dataset": study.labelled_set, "judge": rel.judge, "reliability": rel.as_context(),
            "temperature": rel.temperature, "failed_rulings": rel.failures, **kw}


@pytest.mark.spec("JUDGE-KAPPA")
def test_judge_agrees_with_labels(rag_judge_agreement, rag_judge_name, rag_check, rag_measure):
    study = rag_judge_agreement
    rel = study.reliability[rag_judge_name]
    lo, hi = rel.kappa_ci
    sd = (hi - lo) / (2 * 1.96) * math.sqrt(rel.n) if rel.n and math.isfinite(hi - lo) else float("nan")
    lexical = study.reliability["lexical"]
    for r in (rel, lexical):
        rag_measure("judge_accuracy", r.accuracy, judge=r.judge, dataset=study.labelled_set, n=r.n, ci=list(r.accuracy_ci))
    rag_measure("judge_kappa", lexical.kappa, judge="lexical", dataset=study.labelled_set, n=lexical.n,
            ci=list(lexical.kappa_ci))
    # a judge that gives every item one label has kappa exactly 0 (every resample too): refuted, not inconclusive
    effect = Effect("kappa", rel.kappa, rel.kappa_ci, rel.n, sd, interval_method="percentile bootstrap",
                    exact=rel.kappa_exact)
    # n: every item (failed rulings counted as disagreements); fewer than the spec's min_n cannot support it
    rag_check("JUDGE-KAPPA", effect, **_ctx(study, rel, accuracy=rel.accuracy, accuracy_ci=list(rel.accuracy_ci),
                                        lexical_kappa=lexical.kappa, items=len(study.items),
                                        ruled=rel.n - rel.failures, kappa_ruled=rel.kappa_ruled,
                                        right_answers=sum(i.supported for i in study.items)))


@pytest.mark.spec("JUDGE-FLIP-RATE")
def test_judge_is_self_consistent(rag_judge_agreement, rag_judge_name, rag_check):
    study = rag_judge_agreement
    rel = study.reliability[rag_judge_name]
    # the share of ruled items a perturbed re-ruling did not reproduce (changed, failed, or not perturbed at all)
    unconfirmed = rel.recheck.get("unconfirmed", 0)
    rag_check("JUDGE-FLIP-RATE", rel.flip_rate if rel.flip_n else float("nan"),
          **_ctx(study, rel, n=rel.flip_n, ci=list(wilson_interval(unconfirmed, rel.flip_n)), perturbation=rel.recheck,
                 **({} if rel.flip_n else {"reason": "the judge ruled on no item: nothing to rule on again"})))


@pytest.mark.spec("JUDGE-ALPHA")
def test_judges_agree_with_one_another(rag_judge_agreement, rag_check, rag_measure):
    study = rag_judge_agreement
    maj = study.majority_reliability()
    rag_measure("judge_kappa", maj.kappa, judge=maj.judge, dataset=study.labelled_set, n=maj.n, ci=list(maj.kappa_ci))
    rag_check("JUDGE-ALPHA", study.alpha, dataset=study.labelled_set, judges=list(study.first), items=len(study.items),
          majority_kappa=maj.kappa, majority_accuracy=maj.accuracy, majority_ties=maj.failures,
          **({"reason": "one judge: alpha needs two"} if math.isnan(study.alpha) else {}))

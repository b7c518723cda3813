"""The judge's reliability in the benchmark tier: agreement with HaluEval's labels (Cohen's κ, a failed ruling a
disagreement, decided in looks over the items drawn so far: the study stops once κ is decided; on fewer items than
the spec's min_n it cannot be supported), its self-consistency
(flip rate against a second ruling in the rubric's other wording at the recheck temperature, uncached) and the
judges' agreement (Krippendorff's α)."""
from __future__ import annotations

import math

import pytest

from harness.recorded import Outcomes
from harness.replay import replayed_context
from harness.stats.intervals import wilson_interval

pytestmark = pytest.mark.benchmark
# the order the items are drawn in (`rag_check_sequential`'s `order`; its seed `harness.seed`): the sample's own
ORDER = "the labelled sample's seeded order (harness.judge.labelled.halueval_items)"


def _ctx(study, rel, **kw):
    return {"dataset": study.labelled_set, "judge": rel.judge, "reliability": rel.as_context(),
            "temperature": rel.temperature, "failed_rulings": rel.failures, **kw}


@pytest.mark.spec("JUDGE-KAPPA")
def test_judge_agrees_with_labels(rag_judge_draws, rag_judge_name, rag_check_sequential, rag_measure, rag_config):
    draws = rag_judge_draws
    share = draws.right_share
    seen: dict = {}

    def measure_at(n: int, confidence: float):  # the first n items, in the sample's seeded order
        study = seen["study"] = draws.study_at(n)
        rel, lexical = study.reliability[rag_judge_name], study.reliability["lexical"]
        labels = [i.supported for i in study.items]
        # a failed ruling counts as a disagreement; fewer items than the spec's min_n cannot support it
        outcomes = Outcomes.kappa(study.first[rag_judge_name], labels, right_share=share, seed=draws.seed,
                                  available=draws.draws.available)
        return outcomes.effect(confidence), _ctx(study, rel, outcomes=outcomes.as_context(), accuracy=rel.accuracy, accuracy_ci=list(rel.accuracy_ci),
                            lexical_kappa=lexical.kappa, items=len(study.items), ruled=rel.n - rel.failures,
                            kappa_ruled=rel.kappa_ruled, right_answers=sum(labels), kappa_right_share=share,
                            kappa_sample=rel.kappa, **replayed_context(draws.replayed_from))

    def final(n: int) -> dict:
        return {"items": f"{n} of {draws.draws.available} drawn"}

    rag_check_sequential("JUDGE-KAPPA", measure_at, draws.draws.available, final=final,
                         cost_to=draws.draws.seconds_to, order={"order": ORDER, "seed": rag_config.harness.seed},
                         dataset=draws.labelled_set, queries_available=draws.draws.available)
    study = seen["study"]
    study.note_provenance()  # the report's judge header, where no claim reads the whole study
    for r in (study.reliability[rag_judge_name], study.reliability["lexical"]):
        rag_measure("judge_accuracy", r.accuracy, judge=r.judge, dataset=study.labelled_set, n=r.n,
                    ci=list(r.accuracy_ci))
    lexical = study.reliability["lexical"]
    rag_measure("judge_kappa", lexical.kappa, judge="lexical", dataset=study.labelled_set, n=lexical.n,
                ci=list(lexical.kappa_ci))


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
              n=len(study.items), majority_kappa=maj.kappa, majority_accuracy=maj.accuracy, majority_ties=maj.failures,
              **({"reason": "one judge: alpha needs two", "queries_needed": "never",
                  "needed_for": "alpha needs two judges: name another with --judge"} if math.isnan(study.alpha) else {}))

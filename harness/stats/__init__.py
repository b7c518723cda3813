"""Significance and uncertainty for paired comparisons (per-query scores of two systems), effects with their
intervals, and three-valued verdicts."""
from harness.stats._effect import Effect, mcnemar_midp, paired_effect, proportion_effect
from harness.stats._paired import (
    McNemarResult, PairedDifference, bootstrap_ci, cohens_dz, holm, kendall_tau, mcnemar,
    paired_difference, permutation_test, relative_improvement, relative_improvement_ci, wilcoxon,
)
from harness.stats._verdict import Decision, Verdict, decide, minimum_detectable_effect, queries_needed

__all__ = ["Decision", "Effect", "McNemarResult", "PairedDifference", "Verdict", "bootstrap_ci", "cohens_dz", "decide",
           "holm", "kendall_tau", "mcnemar", "mcnemar_midp", "minimum_detectable_effect", "paired_difference",
           "paired_effect", "permutation_test", "proportion_effect", "queries_needed", "relative_improvement",
           "relative_improvement_ci", "wilcoxon"]

"""Significance and uncertainty for paired comparisons (per-query scores of two systems)."""
from harness.stats.paired import (
    McNemarResult, PairedDifference, bootstrap_ci, cohens_dz, holm, kendall_tau, mcnemar, minimum_detectable_effect,
    paired_difference, permutation_test, relative_improvement, relative_improvement_ci, wilcoxon,
)

__all__ = ["McNemarResult", "PairedDifference", "bootstrap_ci", "cohens_dz", "holm", "kendall_tau", "mcnemar",
           "minimum_detectable_effect", "paired_difference", "permutation_test", "relative_improvement",
           "relative_improvement_ci", "wilcoxon"]

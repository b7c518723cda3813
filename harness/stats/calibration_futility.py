"""Calibration of non-binding futility (issue #37 item 1) through the production path: claims drawn from real
per-query populations (`harness.stats.calibration_sides`: exponential tilting puts the truth where asked), each
decided twice by `run_sequential` on the anytime design, with and without futility. With the truth at the threshold
both a supported and a refuted verdict are errors, counted apart; with the truth one MDE past it, power is the share
decided the right way. Futility may cost power (a claim stopped early that a later look would have decided) and
saves queries; it must never add a decision."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from harness.stats import calibration_sides as sides
from harness.stats._effect import Effect, paired_effect, proportion_effect
from harness.stats._verdict import Decision, Verdict, decide
from harness.stats.futility import FUTILITY_BELOW
from harness.stats.sequential import SequentialDesign, SequentialOutcome, run_sequential


@dataclass(frozen=True)
class FutilityResult:
    """One population at one truth: verdict shares and mean queries used, with and without futility."""

    population: str
    truth: float
    sims: int
    supported: tuple[float, float]  # (with futility, without)
    refuted: tuple[float, float]
    futile: float  # share of claims stopped as futile
    queries: tuple[float, float]  # mean queries used (with, without)
    added_decisions: int  # claims decided with futility that were not decided the same way without: must be 0

    def as_context(self) -> dict[str, Any]:
        return {"population": self.population, "truth": round(self.truth, 6), "sims": self.sims,
                "supported": [round(x, 4) for x in self.supported], "refuted": [round(x, 4) for x in self.refuted],
                "futile": round(self.futile, 4), "queries": [round(x, 2) for x in self.queries],
                "added_decisions": self.added_decisions}


def _claim(pop: sides.Population, a: np.ndarray, b: np.ndarray | None, comparator: Any, threshold: float,
           design: SequentialDesign, futility: bool, below: float) -> SequentialOutcome:
    def effect_at(n: int, confidence: float) -> Effect:
        if pop.kind == "proportion":
            return proportion_effect(a[:n].astype(bool), confidence=confidence)
        assert b is not None  # every kind but a rate has baseline scores
        # decided on the interval alone (Decision("ci")): the p-values, which nothing here reads, are left out
        return paired_effect(a[:n], b[:n], relative=pop.kind == "relative", binary=pop.kind == "binary",
                             bounds=pop.bounds, confidence=confidence, tests=False)

    def verdict_of(e: Effect, final: bool) -> Verdict:
        return decide(e, comparator, threshold, Decision("ci"), interim=not final)

    return run_sequential(design, effect_at, verdict_of, futility_threshold=threshold if futility else None,
                          futility_below=below)


def futility_study(pop: sides.Population, comparator: Any, threshold: float, looks: Sequence[int], truth: float,
                   sims: int, seed: int, *, below: float = FUTILITY_BELOW) -> FutilityResult:
    """`sims` claims of `pop` with its effect at `truth`, each run with and without futility."""
    design = SequentialDesign(tuple(looks), boundary="anytime")
    A, B = sides.draw(pop, truth, looks[-1], sims, np.random.default_rng(seed))
    sup = np.zeros((2, sims), bool)
    ref = np.zeros((2, sims), bool)
    used = np.zeros((2, sims))
    futile = np.zeros(sims, bool)
    added = 0
    for i in range(sims):
        b = None if B is None else B[i]
        runs = [_claim(pop, A[i], b, comparator, threshold, design, f, below) for f in (True, False)]
        for j, r in enumerate(runs):
            sup[j, i], ref[j, i] = r.verdict.verdict == "supported", r.verdict.verdict == "refuted"
            used[j, i] = r.queries_used
        futile[i] = runs[0].futile
        decided = runs[0].verdict.verdict in ("supported", "refuted")
        added += int(decided and runs[0].verdict.verdict != runs[1].verdict.verdict)
    return FutilityResult(pop.name, truth, sims, (float(sup[0].mean()), float(sup[1].mean())),
                          (float(ref[0].mean()), float(ref[1].mean())), float(futile.mean()),
                          (float(used[0].mean()), float(used[1].mean())), added)

"""`python benchmarks/kappa_power.py`: what deciding JUDGE-KAPPA in looks costs in power (docs/benchmarks/
2026-11-27-judge-in-looks.md). Support at 400 items (min_n 400: only the last look can support), the betting sequence
in looks at 80…400 against a fixed-n 95% delta-method interval at 400; and the items it takes to refute a judge at
chance, looks every 10 up to 200. Populations tilted to each truth (`harness.stats.calibration_sides`): SmolLM2's
recorded rulings (`fixtures/calibration/judge_rulings.json`) and a judge that never fails (with labels half and half,
every such judge tilts to the same population, agreement (1 + κ)/2). The vectorised rules the per-side calibration
uses (`harness.stats._sides_rules`); 2,000 claims a row, seeded."""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from harness.stats import _sides_rules as rules
from harness.stats import calibration_sides as sides

RULINGS = Path(__file__).resolve().parents[1] / "fixtures" / "calibration" / "judge_rulings.json"
LOOKS = (80, 160, 240, 320, 400)
SIMS = 2000
THRESHOLD = 0.4


def populations() -> list[sides.Population]:
    rec = next(iter(json.loads(RULINGS.read_text())["judges"].values()))
    rng = np.random.default_rng(1)
    labels = [bool(y) for y in rng.random(3000) < 0.5]
    verdicts = [y if r else not y for y, r in zip(labels, rng.random(3000) < 0.6)]
    return [sides.kappa_population("SmolLM2 (recorded)", rec["verdicts"], rec["labels"]),
            sides.kappa_population("a judge that never fails", verdicts, labels)]


def verdicts_at(pop: sides.Population, A: np.ndarray, B: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    lo, hi, blocked, reach = rules.after_kappa(A[:, :n], B[:, :n], 0.95, THRESHOLD, pop.bounds)
    return rules.verdicts(lo, hi, blocked, reach, ">=", THRESHOLD)


def support_at_400(pop: sides.Population, truth: float) -> tuple[float, float]:
    """(supported in looks, supported by the fixed-n interval at 400)."""
    A, B = sides.draw(pop, truth, LOOKS[-1], SIMS, np.random.default_rng(7))
    active, supported = np.ones(SIMS, bool), np.zeros(SIMS, bool)
    for n in LOOKS:
        sup, ref = verdicts_at(pop, A, B, n)
        sup = sup if n == LOOKS[-1] else np.zeros_like(sup)  # below min_n a look cannot support
        supported |= sup & active
        active &= ~(sup | ref)
    lo, hi, blocked, reach = rules.delta_kappa(A, B, 0.95, THRESHOLD, pop.bounds)
    fixed, _ = rules.verdicts(lo, hi, blocked, reach, ">=", THRESHOLD)
    return float(supported.mean()), float(fixed.mean())


def items_to_refute(pop: sides.Population) -> np.ndarray:
    """At κ = 0, the items each claim took to be refuted (looks every 10 up to 200; inf: not by 200)."""
    A, B = sides.draw(pop, 0.0, 200, SIMS, np.random.default_rng(9))
    when = np.full(SIMS, np.inf)
    for n in range(10, 201, 10):
        _, ref = verdicts_at(pop, A, B, n)
        when = np.where(np.isinf(when) & ref, n, when)
    return when


def main() -> None:
    t0 = time.perf_counter()
    for pop in populations():
        for truth in (0.4, 0.5, 0.6, 0.7):
            looks, fixed = support_at_400(pop, truth)
            print(f"{pop.name}, κ {truth}: supported in looks {looks:.3f}, fixed-n at 400 {fixed:.3f}")
        when = items_to_refute(pop)
        print(f"{pop.name}, κ 0: refuted by 30 items {np.mean(when <= 30):.3f}, by 80 {np.mean(when <= 80):.3f}, "
              f"median items {np.median(when):.0f}")
    print(f"{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()

"""Negative controls for calibration of the harness's own statistics: tests, verdict intervals and the sequential
design."""
from __future__ import annotations

from typing import Any

from harness.plugin.controls.registry import control


@control("calibrated-tests-liberal", breaks="every test's p-value is a quarter of the true one (a liberal test)")
def _liberal_tests(mp: Any) -> None:
    from harness.stats import calibration as calib

    for name in ("_t_pvalues", "_wilcoxon_pvalues", "_mcnemar_midp", "_permutation_pvalues"):
        orig = getattr(calib, name)
        mp.setattr(calib, name, lambda *a, _f=orig, **k: _f(*a, **k) / 4)


@control("verdict-interval-half-width", breaks="the Student-t verdict interval is half as wide as it should be")
def _narrow_interval(mp: Any) -> None:
    from harness.stats import calibration as calib

    orig = calib._t_bounds

    def half(D, alpha):
        lo, hi = orig(D, alpha)
        mid, rad = (lo + hi) / 2, (hi - lo) / 4
        return mid - rad, mid + rad

    mp.setattr(calib, "_t_bounds", half)


@control("sequential-peeks-unadjusted",
         breaks="the sequential rule looks at every look with the fixed-n interval (peeking without alpha spending)")
def _unadjusted_looks(mp: Any) -> None:
    from harness.stats.sequential import SequentialDesign

    mp.setattr(SequentialDesign, "confidence_at", lambda self, k: 1 - self.alpha)


@control("sequential-single-look", breaks="the sequential design has one look at the most queries (it never stops early)")
def _single_look(mp: Any) -> None:
    from harness.stats.sequential import SequentialDesign

    plan = SequentialDesign.__dict__["plan"].__func__  # the classmethod's function, to call with another cls

    def one_look(cls, n_max, **kw):
        return cls((plan(cls, n_max, **kw).looks[-1],), alpha=kw.get("alpha", 0.05), spending=kw.get("spending", "obf"))

    mp.setattr(SequentialDesign, "plan", classmethod(one_look))


@control("relative-delta-method",
         breaks="a sequential relative claim decides on the delta method's interval around the ratio (at 95% at every "
                "look) instead of the linear contrast's confidence sequence")
def _relative_delta(mp: Any) -> None:
    from harness.stats import _sides_rules as rules

    mp.setitem(rules.AFTER, "relative", rules.before_relative)


@control("sequential-naive-interval",
         breaks="a sequential claim reads the fixed-n interval (Student-t, Agresti-Min, Wilson) at 95% at every look "
                "instead of the confidence sequence")
def _naive_interval(mp: Any) -> None:
    from harness.stats import _sides_rules as rules

    for kind in ("difference", "binary", "proportion"):
        mp.setitem(rules.AFTER, kind, rules.BEFORE[kind])


@control("kappa-naive-interval",
         breaks="a κ claim in looks reads the delta method's fixed-n 95% interval at every look instead of its linear "
                "contrast's confidence sequence")
def _kappa_naive(mp: Any) -> None:
    from harness.stats import _sides_rules as rules

    mp.setitem(rules.AFTER, "kappa", rules.delta_kappa)


@control("error-gate-every-look",
         breaks="the error gate says 'error' at any look where the failure rate exceeds 10% (no Clopper-Pearson bound "
                "at interim looks)")
def _gate_every_look(mp: Any) -> None:
    from harness.stats import calibration_sides as sides

    orig = sides.error_gate_rate
    mp.setattr(sides, "error_gate_rate", lambda *a, **k: orig(*a, **{**k, "every_look": True}))


@control("futile-stop-refuted", breaks="a claim stopped as futile reads refuted instead of inconclusive (futility made "
                                       "binding in the wrong way)")
def _futile_refuted(mp: Any) -> None:
    import dataclasses

    from harness.stats import futility

    mp.setattr(futility, "futile_verdict", lambda v: dataclasses.replace(v, verdict="refuted"))


@control("futility-stops-everything", breaks="every undecided look before the last stops its claim as futile")
def _futility_everything(mp: Any) -> None:
    from harness.stats import futility

    mp.setattr(futility, "is_futile", lambda p, below=futility.FUTILITY_BELOW: True)


@control("allocator-picks-n-from-the-data",
         breaks="while the budget allocator spends the run's budget, a claim takes a look every 5 queries from the "
                "10th and stops as soon as the fixed-n 95% interval excludes the threshold, read as its verdict (the "
                "allocator picks n from the data)")
def _allocator_picks_n(mp: Any) -> None:
    from harness.stats import _allocation_claims as claims
    from harness.stats import calibration_allocation as alloc

    mp.setattr(alloc, "budgeted_rule", lambda: claims.PEEKING)


def _fixed_n(effect: Any) -> Any:
    """The effect with the fixed-n 95% Student-t interval of its queries (from its per-query SD), not its own."""
    import dataclasses
    import math

    from harness.stats._scipy import stats as st

    n, sd = effect.n, effect.sd
    if n < 2 or not math.isfinite(sd):
        return effect
    half = float(st.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return dataclasses.replace(effect, ci=(effect.estimate - half, effect.estimate + half), confidence=0.95,
                               interval_method="fixed-n t")


def _report_fixed_n_where(mp: Any, stopped: Any) -> None:
    """The production outcome's reported effect (`SequentialOutcome.reported_effect`, what rag_check_sequential and
    the allocator's calibration both report) replaced by the fixed-n interval where `stopped(outcome)`."""
    from harness.stats.sequential import SequentialOutcome

    orig = vars(SequentialOutcome)["reported_effect"].fget
    mp.setattr(SequentialOutcome, "reported_effect",
               property(lambda self: _fixed_n(self.effect) if stopped(self) else orig(self)))


@control("fixed-interval-at-early-stop",
         breaks="a claim stopped before its last look (futile, or refused by the budget) reports the fixed-n 95% "
                "interval of the queries it used instead of its confidence sequence")
def _fixed_interval_at_early_stop(mp: Any) -> None:
    _report_fixed_n_where(mp, lambda o: o.futile or o.budget_reason is not None)


@control("fixed-interval-at-futile-stop",
         breaks="a claim stopped as futile reports the fixed-n 95% interval of the queries it used instead of its "
                "confidence sequence")
def _fixed_interval_at_futile_stop(mp: Any) -> None:
    _report_fixed_n_where(mp, lambda o: o.futile)


@control("allocator-never-continues",
         breaks="the budget allocator admits claims but refuses every later look of a sequential claim")
def _allocator_never_continues(mp: Any) -> None:
    from harness.budget import Allocator

    orig = Allocator.request

    def request(self: Any, key: str, step_s: float, *, to_end_s: float | None = None, **kw: Any) -> str | None:
        if to_end_s is not None and self.limit_s is not None:
            self.refused[key] = "not decided within the budget: a later look (control: never granted)"
            return str(self.refused[key])
        return orig(self, key, step_s, to_end_s=to_end_s, **kw)

    mp.setattr(Allocator, "request", request)


@control("allocator-breadth-first",
         breaks="the budget allocator grants no later look of a sequential claim while any claim still waits to "
                "start (every claim's first look before any second)")
def _allocator_breadth_first(mp: Any) -> None:
    from harness.budget import Allocator

    orig = Allocator.request

    def request(self: Any, key: str, step_s: float, *, to_end_s: float | None = None, **kw: Any) -> str | None:
        if to_end_s is not None and self.limit_s is not None and self.waiting:
            self.refused[key] = "not decided within the budget: claims still wait to start (control: breadth first)"
            return str(self.refused[key])
        return orig(self, key, step_s, to_end_s=to_end_s, **kw)

    mp.setattr(Allocator, "request", request)


@control("allocator-ignores-step-cost",
         breaks="the budget allocator grants a step whatever it costs, while any budget is left after its "
                "reservations")
def _allocator_ignores_step_cost(mp: Any) -> None:
    from harness.budget import Allocator

    orig = Allocator.request

    def request(self: Any, key: str, step_s: float, *, to_end_s: float | None = None, **kw: Any) -> str | None:
        return orig(self, key, 0.0, to_end_s=to_end_s if to_end_s is not None else step_s, **kw)

    mp.setattr(Allocator, "request", request)

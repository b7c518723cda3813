"""A sequential claim's per-query outcomes, recorded in its row, and the claim decided again from them.

A claim decided in looks (`rag_check_sequential`) whose effect is a rate, a paired effect or Cohen's κ computes that effect through
`Outcomes.effect` and puts `Outcomes.as_context()` in its row's context (`outcomes`): the values the stopping look
read, in the order they were drawn. `replay_check` takes such a row from `results.json` and decides the claim
again through the plugin's own rule (`harness.stats.sequential.decide_in_looks`), reading at look n the outcomes
of the first n queries drawn: it reproduces the row's looks, and with `looks` fewer than it took it is the claim as
a budget that refused its next look would have left it. So a budgeted run and a run of the whole protocol can be
compared claim by claim on the same recorded outcomes (`tests/test_budgeted_vs_whole.py`)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:
    from harness.catalogue import Spec
    from harness.config import SequentialSettings
    from harness.stats import Effect
    from harness.stats.sequential import SequentialOutcome

KINDS = ("proportion", "paired", "kappa")


@dataclass(frozen=True)
class Outcomes:
    """Per-query outcomes in draw order. `values`: a rate's 0/1 outcome per counted query, a paired claim's
    (candidate, baseline) scores per query, or κ's (ruling, label) per item (a ruling None where it failed: a
    disagreement). `query_at`: the 1-based draw position of each value, so a look at n queries reads those at n or
    before (a claim about the negative queries counts some queries only). A paired claim's `relative`, `binary` and
    `seed` are `harness.stats.paired_effect`'s; κ's `right_share` (the design's share of right answers), `seed` and
    `available` (the study's items) are `harness.judge.reliability.kappa_effect_at`'s."""

    kind: str
    values: tuple[Any, ...]
    query_at: tuple[int, ...]
    right_share: float | None = None
    seed: int = 0
    available: int | None = None
    relative: bool = False
    binary: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"outcomes of kind {self.kind!r}: expected one of {KINDS}")
        if len(self.values) != len(self.query_at):
            raise ValueError(f"{len(self.values)} outcomes but {len(self.query_at)} draw positions")
        if list(self.query_at) != sorted(self.query_at):
            raise ValueError("outcomes must be in draw order (query_at non-decreasing)")
        if self.kind == "kappa" and self.right_share is None:
            raise ValueError("κ outcomes need the design's right_share")

    @classmethod
    def rate(cls, outcomes: Sequence[bool], query_at: Sequence[int] | None = None) -> Outcomes:
        """A rate's outcomes; `query_at` defaults to one outcome per query drawn (1, 2, …)."""
        values = tuple(bool(x) for x in outcomes)
        return cls("proportion", values, tuple(query_at) if query_at is not None else tuple(range(1, len(values) + 1)))

    @classmethod
    def paired(cls, candidate: Sequence[float], baseline: Sequence[float], query_at: Sequence[int] | None = None, *,
               relative: bool = False, binary: bool = False, seed: int = 0) -> Outcomes:
        """A paired claim's per-query scores; `query_at` defaults to one pair per query drawn (1, 2, …)."""
        if len(candidate) != len(baseline):
            raise ValueError(f"{len(candidate)} candidate scores but {len(baseline)} baseline scores")
        values = tuple((float(c), float(b)) for c, b in zip(candidate, baseline))
        return cls("paired", values, tuple(query_at) if query_at is not None else tuple(range(1, len(values) + 1)),
                   seed=int(seed), relative=bool(relative), binary=bool(binary))

    @classmethod
    def kappa(cls, rulings: Sequence[bool | None], labels: Sequence[bool], *, right_share: float, seed: int,
              available: int) -> Outcomes:
        """κ's items: the judge's ruling and the label of each, one item per query drawn."""
        if len(rulings) != len(labels):
            raise ValueError(f"{len(rulings)} rulings but {len(labels)} labels")
        return cls("kappa", tuple((None if r is None else bool(r), bool(y)) for r, y in zip(rulings, labels)),
                   tuple(range(1, len(labels) + 1)), right_share=float(right_share), seed=int(seed),
                   available=int(available))

    def upto(self, n: int) -> Outcomes:
        """The outcomes of the first n queries drawn."""
        k = sum(1 for q in self.query_at if q <= n)
        return dataclasses.replace(self, values=self.values[:k], query_at=self.query_at[:k])

    def effect(self, confidence: float) -> Effect:
        """The effect on these outcomes at `confidence` (inside `anytime_intervals()`: its confidence sequence), as the
        claim computes it."""
        if self.kind == "proportion":
            from harness.stats import proportion_effect

            return proportion_effect(list(self.values), confidence=confidence)
        if self.kind == "paired":
            from harness.stats import paired_effect

            return paired_effect([c for c, _ in self.values], [b for _, b in self.values], relative=self.relative,
                                 binary=self.binary, seed=self.seed, confidence=confidence)
        from harness.judge.reliability import kappa_effect_at

        assert self.right_share is not None and self.available is not None
        n = self.query_at[-1] if self.query_at else 0
        return kappa_effect_at([r for r, _ in self.values], [y for _, y in self.values], right_share=self.right_share,
                               confidence=confidence, seed=self.seed, of_all=n >= self.available)

    def as_context(self) -> dict[str, Any]:
        return {"kind": self.kind, "values": [list(v) if isinstance(v, tuple) else v for v in self.values],
                "query_at": list(self.query_at),
                **({"right_share": self.right_share, "seed": self.seed, "available": self.available}
                   if self.kind == "kappa" else {}),
                **({"relative": self.relative, "binary": self.binary, "seed": self.seed} if self.kind == "paired" else {})}

    @classmethod
    def from_context(cls, ctx: Mapping[str, Any]) -> Outcomes:
        values = tuple(tuple(v) if isinstance(v, list) else v for v in ctx["values"])
        return cls(ctx["kind"], values, tuple(int(q) for q in ctx["query_at"]), ctx.get("right_share"),
                   int(ctx.get("seed", 0)), ctx.get("available"), bool(ctx.get("relative", False)),
                   bool(ctx.get("binary", False)))


def replay_check(check: Mapping[str, Any], spec: Spec, settings: SequentialSettings, *,
                 looks: int | None = None) -> SequentialOutcome:
    """The claim of a `results.json` check record (`checks[]`, one with `context.outcomes` and `context.sequential`)
    decided again from its recorded outcomes by the plugin's rule, on the design its row names; with `looks`, as if
    a budget had refused every look after the first `looks` (a look it never took cannot be replayed: a
    ValueError)."""
    from harness.stats.sequential import SequentialDesign, decide_in_looks

    ctx = check["context"]
    if "outcomes" not in ctx or "sequential" not in ctx:
        raise ValueError(f"{check.get('spec_id')}: the check records no outcomes or looks to replay")
    outcomes, seq = Outcomes.from_context(ctx["outcomes"]), ctx["sequential"]
    design = SequentialDesign.for_claim(settings, int(seq["looks"][-1]))
    if list(design.looks) != [int(n) for n in seq["looks"]]:
        raise ValueError(f"{spec.id}: the row's looks {seq['looks']} are not this design's {list(design.looks)}")
    taken = len(seq["history"])
    if looks is not None and not 1 <= looks <= taken:
        raise ValueError(f"{spec.id}: {looks} looks asked, the row took {taken}")
    limit = taken if looks is None else looks

    def may_continue(k: int, n: int, p: float | None) -> str | None:
        return "refused by the replayed budget" if k >= limit else None

    return decide_in_looks(design, lambda n, confidence: outcomes.upto(n).effect(confidence),
                           comparator=spec.comparator, threshold=spec.threshold, decision=spec.decision,
                           min_n=spec.min_n, settings=settings, available=seq.get("queries_available"),
                           context=lambda: ctx, may_continue=may_continue)

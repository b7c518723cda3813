"""CRAG's premise without a web: a static corpus that lacks some knowledge, and a search that has it.

`withhold_gold(corpus, qrels, share=0.4, seed=13)` takes a seeded share of the gold passages (every document
some question is judged relevant to) out of the internal corpus, and builds the "web" collection from them
among as many distractors (documents the internal corpus keeps). A question whose gold passage was withheld can
only be answered from the web; one whose passage stayed can be answered from the corpus. Any real web search
(`harness.web_search_url`, or a `Services(web=...)` a user plugs in) replaces the simulated collection.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Mapping

from harness.types import Document


@dataclass(frozen=True)
class WebSimulation:
    """The internal corpus, the web collection and which gold passages moved from one to the other."""

    internal: list[Document]
    web: list[Document]
    withheld: frozenset[str]
    share: float
    seed: int

    def describe(self) -> dict[str, Any]:
        """What the report states of the simulation."""
        return {"simulated_web": True, "withheld_share": self.share, "seed": self.seed,
                "withheld_gold_passages": len(self.withheld), "internal_passages": len(self.internal),
                "web_passages": len(self.web), "web_distractors": len(self.web) - len(self.withheld),
                "web_backend": "BM25 (LanceDB full-text search) over the web collection"}

    def gold_withheld(self, relevant: Mapping[str, int]) -> bool:
        """Whether every relevant passage of a question is missing from the internal corpus."""
        gold = [d for d, g in relevant.items() if g > 0]
        return bool(gold) and all(d in self.withheld for d in gold)


def withhold_gold(corpus: Mapping[str, Document], qrels: Mapping[str, Mapping[str, int]], *, share: float = 0.4,
                  seed: int = 13) -> WebSimulation:
    """Withhold `round(share * gold passages)` gold passages, chosen by a generator seeded with `seed`; the web
    collection holds them and as many distractors drawn (same generator) from the passages kept internal."""
    if not 0.0 < share < 1.0:
        raise ValueError(f"share must be between 0 and 1 (exclusive), got {share}")
    gold = sorted({d for rel in qrels.values() for d, g in rel.items() if g > 0 and d in corpus})
    if not gold:
        raise ValueError("no judged passage of the qrels is in the corpus: nothing to withhold")
    rng = random.Random(seed)
    withheld = frozenset(rng.sample(gold, round(share * len(gold))))
    kept = sorted(d for d in corpus if d not in withheld)
    distractors = rng.sample(kept, min(len(withheld), len(kept)))
    web_ids = sorted(withheld | set(distractors))
    return WebSimulation([corpus[d] for d in kept], [corpus[d] for d in web_ids], withheld, share, seed)

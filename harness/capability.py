"""Model capability: the generator's zero-shot accuracy on a fixed, seeded sample of MMLU questions, with
a Wilson 95% interval and the chance rate beside it, so a reader sees at once whether the model is strong
enough for the LLM claims to be testable at all (a model at chance makes every comparative claim
inconclusive, whatever the technique does).
"""
from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import Any, Sequence

from harness.data.qa import MCQItem
from harness.llm.client import LLMClient, LLMError
from harness.llm.spend import spending_for
from harness.parallel import ordered_map
from harness.prompts import load_prompts, render
from harness.stats.intervals import wilson_interval
from harness.techniques.parsing import parse_letter


def sample_mcq(items: Sequence[MCQItem], n: int, seed: int) -> list[MCQItem]:
    """A fixed sample: `n` items drawn by a generator seeded with `seed`, in their dataset order."""
    if n >= len(items):
        return list(items)
    picked = sorted(random.Random(seed).sample(range(len(items)), n))
    return [items[i] for i in picked]


@dataclass
class Capability:
    model: str
    dataset: str
    n: int
    correct: int
    unparsed: int  # replies with no option letter (counted wrong)
    errors: int  # calls that failed (counted wrong, reported)
    chance: float
    seed: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else float("nan")

    @property
    def ci(self) -> tuple[float, float]:
        return wilson_interval(self.correct, self.n)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "accuracy": self.accuracy, "ci": list(self.ci)}


def measure_capability(llm: LLMClient, items: Sequence[MCQItem], *, dataset: str = "mmlu", seed: int = 0,
                       variant: str = "chat") -> Capability:
    """Ask every item zero-shot (concurrently, up to the client's bound) and count the right letters."""
    prompts = load_prompts("capability")[variant]

    def ask(item: MCQItem) -> tuple[bool, bool, bool]:
        letters = "".join(k for k, _ in item.options)
        options = "\n".join(f"{k}. {v}" for k, v in item.options)
        try:
            text = llm.complete(render(prompts["user"], question=item.text, options=options),
                                system=prompts.get("system"), max_tokens=4).text
        except LLMError:
            return False, False, True
        letter = parse_letter(text, letters)
        return letter == item.answer, letter is None, False

    with spending_for("model-capability"):
        results = ordered_map(ask, items, getattr(llm, "concurrency", 1))
    chance = sum(1 / len(i.options) for i in items) / len(items) if items else float("nan")
    return Capability(getattr(llm, "label", str(llm)), dataset, len(items), sum(r[0] for r in results),
                      sum(r[1] for r in results), sum(r[2] for r in results), chance, seed)

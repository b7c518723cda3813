"""The simulated web of CRAG-005: a seeded share of gold passages moves from the corpus to the web."""
from __future__ import annotations

import pytest

from harness.retrieval.simulated_web import withhold_gold
from harness.types import Document

pytestmark = pytest.mark.unit

CORPUS = {f"d{i}": Document(f"d{i}", f"passage {i}") for i in range(20)}
# ten questions, each judged relevant to one of d0..d9; d10..d19 are passages no question is judged on
QRELS = {f"q{i}": {f"d{i}": 1} for i in range(10)}


def test_share_of_the_gold_passages_is_withheld_and_sits_in_the_web_among_distractors():
    sim = withhold_gold(CORPUS, QRELS, share=0.4, seed=7)
    assert len(sim.withheld) == 4 and sim.withheld <= {f"d{i}" for i in range(10)}
    internal = {d.id for d in sim.internal}
    web = {d.id for d in sim.web}
    assert internal.isdisjoint(sim.withheld) and internal | sim.withheld == set(CORPUS)
    assert sim.withheld <= web and len(web) == 8  # four withheld, four distractors the corpus keeps
    assert web - sim.withheld <= internal
    d = sim.describe()
    assert (d["withheld_gold_passages"], d["internal_passages"], d["web_passages"], d["web_distractors"]) == (4, 16, 8, 4)


def test_the_same_seed_withholds_the_same_passages_and_another_seed_others():
    a, b = withhold_gold(CORPUS, QRELS, seed=1), withhold_gold(CORPUS, QRELS, seed=1)
    assert a.withheld == b.withheld and [d.id for d in a.web] == [d.id for d in b.web]
    assert any(withhold_gold(CORPUS, QRELS, seed=s).withheld != a.withheld for s in range(2, 6))


def test_a_question_knows_whether_its_gold_passage_left_the_corpus():
    sim = withhold_gold(CORPUS, QRELS, share=0.5, seed=3)
    flags = [sim.gold_withheld(QRELS[q]) for q in sorted(QRELS)]
    assert sum(flags) == 5
    assert not sim.gold_withheld({"d10": 0})  # a question with no relevant passage never counts as withheld


@pytest.mark.parametrize("share", [0.0, 1.0, -0.1])
def test_a_share_outside_the_open_interval_is_refused(share):
    with pytest.raises(ValueError, match="share must be between 0 and 1"):
        withhold_gold(CORPUS, QRELS, share=share)

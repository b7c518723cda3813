"""Answer-level metrics judged against the retrieved context, and the measured reliability of the judge.

- `metrics`: faithfulness, hallucination rate, answered share on negatives, answer relevancy, context precision
  and recall (pure functions);
- `claims`: an answer as claims, and the judge-free lexical support of a claim;
- `llm_judge`: `LLMJudge` (any litellm model, prompts in `harness/prompts/judge.yaml`) and `LexicalJudge`;
- `reliability`: Cohen's κ, accuracy, flip rate, Krippendorff's α, majority verdict, `JudgeReliability`;
- `labelled`: the hand-labelled retail-KB set and HaluEval as labelled sets.
"""
from harness.judge.claims import lexical_support, split_claims
from harness.judge.llm_judge import AnswerJudgement, ClaimItem, LexicalJudge, LLMJudge, judge_answer
from harness.judge.metrics import (answer_relevancy, answered_rate, context_precision, context_recall, faithfulness,
                                   hallucination_rate)
from harness.judge.reliability import (JudgeReliability, cohen_kappa, flip_rate, krippendorff_alpha,
                                       majority_verdict)

__all__ = ["AnswerJudgement", "ClaimItem", "JudgeReliability", "LLMJudge", "LexicalJudge", "answer_relevancy",
           "answered_rate", "cohen_kappa", "context_precision", "context_recall", "faithfulness", "flip_rate",
           "hallucination_rate", "judge_answer", "krippendorff_alpha", "lexical_support", "majority_verdict",
           "split_claims"]

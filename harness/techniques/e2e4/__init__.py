"""E2/E3/E4 RAG pipelines of the hallucination study and their evaluation (E4's reasoning detectors are metrics:
`harness.metrics.reasoning`)."""

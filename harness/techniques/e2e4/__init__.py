"""E2/E3/E4 RAG pipelines of the hallucination study, their evaluation and E4's reasoning detectors."""

"""LLM calls: one client over litellm (retries, limits, spend, cache), the embedded local model and the simulated API."""

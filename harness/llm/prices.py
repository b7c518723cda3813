"""A model's price from litellm's bundled cost map."""
from __future__ import annotations

from harness.config import ModelPrice
from harness.llm._litellm import litellm


def litellm_price(model: str) -> ModelPrice | None:
    """The model's price from litellm's bundled cost map (read locally, never fetched), None when it has none."""
    try:
        info = litellm().get_model_info(model)
    except Exception:  # noqa: BLE001 - litellm raises for models it does not know
        return None
    inp, out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if inp is None or out is None:
        return None
    return ModelPrice(input_per_mtok=float(inp) * 1e6, output_per_mtok=float(out) * 1e6, source="litellm cost map")

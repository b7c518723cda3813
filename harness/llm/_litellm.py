"""Import litellm offline: its cost map comes from the bundled copy, never from the network."""
from __future__ import annotations

import functools
import os


@functools.lru_cache(maxsize=1)
def litellm():
    # Must be set before the first import: litellm fetches its cost map at import time otherwise.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm as _litellm

    _litellm.telemetry = False
    _litellm.suppress_debug_info = True
    _litellm.drop_params = True
    # litellm's response models finish building on first use, and pydantic warns there about a TypedDict
    # qualifier of litellm's (third-party noise); build them once now, that warning silenced, not in a caller
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*ReadOnly.*", category=UserWarning)
        _litellm.ModelResponse()
    return _litellm

"""The techniques, one interface: `build_technique(name, services)` -> `Technique` with `run` / `run_many`
returning `TechniqueResult`s. Register your own with `@register_technique` (see `harness.techniques._registry`).

Each built-in registers itself beside its class; importing this package (which any import of one of its modules
does first) imports the registry and then every module holding a built-in, so the registry is never seen without
them. The registry imports none of them, and they import the registry, not this package: no circle."""
from harness.techniques._registry import (
    Arm, Services, Technique, TechniqueResult, TopK, build_technique, describe_params, get_technique,
    register_technique, technique_names, technique_params,
)

# the modules whose techniques register themselves on import (after the registry, which they import)
from harness.techniques import baselines, crag, fusion, hyde, rewrite, wsop  # noqa: E402,F401
from harness.techniques.e2e4 import pipelines as _e2e4_pipelines  # noqa: E402,F401
from harness.techniques.ret import mcq as _ret_mcq  # noqa: E402,F401

__all__ = ["Arm", "Services", "Technique", "TechniqueResult", "TopK", "build_technique", "describe_params",
           "get_technique", "register_technique", "technique_names", "technique_params"]

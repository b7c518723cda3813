"""The techniques, one interface: `build_technique(name, services)` -> `Technique` with `run` / `run_many`
returning `TechniqueResult`s. Register your own with `@register_technique` (see `harness.techniques.registry`).

Each built-in registers itself beside its class; importing this package (which any import of one of its modules
does first) imports the registry and then every module holding a built-in, so the registry is never seen without
them. The registry imports none of them, and they import the registry, not this package: no circle."""
from harness.techniques.registry import (
    Arm, Services, Technique, TechniqueResult, TopK, build_technique, describe_params, get_technique,
    register_technique, technique_names, technique_params,
)

# the modules whose techniques register themselves on import (after the registry, which they import)
from harness.techniques import baselines, crag, e2e4, fusion, hyde, ret_mcq, rewrite, wsop  # noqa: E402,F401

__all__ = ["Arm", "Services", "Technique", "TechniqueResult", "TopK", "build_technique", "describe_params",
           "get_technique", "register_technique", "technique_names", "technique_params"]

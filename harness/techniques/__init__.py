"""The techniques, one interface: `build_technique(name, services)` -> `Technique` with `run` / `run_many`
returning `TechniqueResult`s. Register your own with `@register_technique` (see `harness.techniques.registry`)."""
from harness.techniques.registry import (
    Arm, Services, Technique, TechniqueResult, TopK, build_technique, describe_params, get_technique,
    register_technique, technique_names, technique_params,
)

__all__ = ["Arm", "Services", "Technique", "TechniqueResult", "TopK", "build_technique", "describe_params",
           "get_technique", "register_technique", "technique_names", "technique_params"]

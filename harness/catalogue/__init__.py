"""The claims catalogue: every testable assertion of the protocol as data (`*.yaml` in this folder, shipped with
the package), loaded and validated by `load_catalogue` / `load_project_catalogue`."""
from harness.catalogue._catalogue import (
    KINDS, PROTOCOL_CATALOGUE, TIERS, Catalogue, CatalogueError, Spec, load_catalogue, load_project_catalogue,
    spec_files,
)

__all__ = ["KINDS", "PROTOCOL_CATALOGUE", "TIERS", "Catalogue", "CatalogueError", "Spec", "load_catalogue",
           "load_project_catalogue", "spec_files"]

"""The arrows between packages: `components` builds on `infra`, never the other way round."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from components.catalog import CatalogError, Component, check_served_drivers

ROOT = Path(__file__).resolve().parents[1]
# The program wires components together, and the offline tooling runs it; nothing else in infra/
# may import components/.
MAY_IMPORT_COMPONENTS = {Path("infra/program.py")}


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_infra_modules_outside_the_program_and_tooling_never_import_components() -> None:
    offenders = []
    for path in sorted((ROOT / "infra").glob("*.py")):
        rel = path.relative_to(ROOT)
        if rel in MAY_IMPORT_COMPONENTS:
            continue
        if any(m == "components" or m.startswith("components.") for m in imported_modules(path)):
            offenders.append(str(rel))
    assert offenders == []


def test_the_vocabulary_imports_nothing_of_the_project() -> None:
    modules = imported_modules(ROOT / "infra" / "vocabulary.py")
    assert not {m for m in modules if m.split(".")[0] in {"infra", "components", "policies"}}


def test_a_catalog_whose_tags_disagree_with_the_cloud_profile_does_not_load() -> None:
    amd_on_gke = [Component("amd", "gpu-operator-charts", "https://x", "v1", "ns", dra_drivers=("gpu.amd.com",))]
    with pytest.raises(CatalogError, match="GKE: the catalog serves"):
        check_served_drivers("GKE", amd_on_gke)

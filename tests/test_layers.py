"""The arrows between packages: `components` builds on `infra`, never the other way round."""

from __future__ import annotations

import ast
import subprocess
import sys
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


# Where a cloud's name may decide what code does: its profile row and its own cluster module.
MAY_BRANCH_ON_CLOUD = {
    Path("infra/profiles.py"),
    Path("infra/vocabulary.py"),
    *(Path(f"components/{m}.py") for m in ("gke", "eks", "aks", "civo", "vultr", "existing")),
}
CLOUD_NAMES = {"GKE", "EKS", "AKS", "Civo", "Vultr", "Existing"}
CLOUD_CONSTANTS = {"GKE", "EKS", "AKS", "CIVO", "VULTR", "EXISTING"}


def names_a_cloud(node: ast.expr) -> bool:
    """`"AKS"`, `Source.AKS`, `vocab.AKS`, or a tuple or set holding one."""
    if isinstance(node, ast.Constant):
        return node.value in CLOUD_NAMES
    if isinstance(node, ast.Attribute):
        return node.attr in CLOUD_CONSTANTS
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(names_a_cloud(e) for e in node.elts)
    return False


def test_no_product_module_compares_a_source_with_a_cloud_name_outside_the_profiles_and_cloud_modules() -> None:
    offenders = []
    for package in ("infra", "components", "policies"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if rel in MAY_BRANCH_ON_CLOUD:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Compare) and any(map(names_a_cloud, [node.left, *node.comparators])):
                    offenders.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    assert offenders == []


def test_a_catalog_whose_tags_disagree_with_the_cloud_profile_does_not_load() -> None:
    amd_on_gke = [Component("amd", "gpu-operator-charts", "https://x", "v1", "ns", dra_drivers=("gpu.amd.com",))]
    with pytest.raises(CatalogError, match="GKE: the catalog serves"):
        check_served_drivers("GKE", amd_on_gke)


def test_a_stack_loads_only_the_cloud_sdks_it_uses() -> None:
    # Each cloud SDK takes seconds to import; the program must not undo the lazy loading of
    # `components.clusters` by importing a cloud module for a helper.
    script = (
        "import sys\n"
        "from tests.test_layers import civo_only_plan\n"
        "civo_only_plan()\n"
        "print(sorted({m.split('.')[0] for m in sys.modules if m.startswith(('pulumi_', 'ediri_'))}))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "['pulumi_civo', 'pulumi_kubernetes']"


def civo_only_plan() -> None:
    from tests.conftest import cpu_cluster_fleet, run_fleet

    assert run_fleet(cpu_cluster_fleet("Civo", "x")).error is None

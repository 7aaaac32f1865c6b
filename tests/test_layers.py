"""The arrows between modules: each layer of the product builds on the ones below, never the other way round."""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pulumi
import pytest

from clouds import CLOUDS
from infra import tokens
from infra.serving.catalog import CatalogError, check_served_drivers
from infra.serving.chart import Chart

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("infra", "clouds", "components", "policies", "program", "tooling")

# The layers of the product, lowest first; a module imports only from its own layer or lower ones.
# The kernel is what a cloud's package builds on; the fleet model is built from the registry.
KERNEL = {
    "infra/vocabulary.py",
    "infra/formats.py",
    "infra/tokens.py",
    "infra/profiles.py",
    "infra/machines.py",
    "infra/reservations.py",
    "infra/config/__init__.py",
    "infra/config/names.py",
    "infra/config/base.py",
    "infra/__init__.py",
}
LAYERS = (
    "kernel",
    "cloud records",
    "registry",
    "fleet model",
    "facts",
    "serving",
    "checks",
    "components",
    "program and policies",
    "tooling",
)
# Inside `infra/`: the fleet model (`infra/config/`) is read by the derived facts and helpers at the
# top of `infra/`, the serving stack as data (`infra/serving/`) builds on the facts, and the checks
# (`infra/checks/`) judge all of them.
INFRA_LAYERS = {"config": 3, "serving": 5, "checks": 6}
# The one arrow up: the stack file's reader runs the checks on the fleet it read.
UPWARD = {("infra/config/stackfile.py", "infra/checks/guard.py")}


def layer(rel: str) -> int:
    parts = rel.split("/")
    if rel in KERNEL:
        return 0
    if parts[0] == "clouds":
        if rel == "clouds/__init__.py":
            return 2
        return 1 if rel in cloud_records() else 7
    if parts[0] == "infra":
        return INFRA_LAYERS.get(parts[1], 4) if len(parts) > 2 else 4
    return {"components": 7, "program": 8, "policies": 8, "tooling": 9}[parts[0]]


def module_file(module: str) -> str | None:
    """The repository file of a project module (`clouds.gke` -> `clouds/gke/__init__.py`), or None."""
    base = ROOT / module.replace(".", "/")
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return str(candidate.relative_to(ROOT))
    return None


def project_imports(path: Path) -> set[str]:
    """The product files `path` imports (a `from package import module` names the module's file)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        for module in modules:
            if module.split(".")[0] in PRODUCT and (target := module_file(module)) is not None:
                found.add(target)
    return found


@functools.cache
def cloud_records() -> frozenset[str]:
    """The modules of `clouds/` the registry loads: the cloud records and what they are built from.

    Everything else in a cloud's package is its component (`component.py`, and the modules a long
    component keeps steps in, such as `clouds/eks/network.py`), which is loaded only for a stack
    with such a cluster and builds on the components' base.
    """
    found: set[str] = set()
    todo = ["clouds/__init__.py"]
    while todo:
        rel = todo.pop()
        for target in project_imports(ROOT / rel):
            if target.startswith("clouds/") and target not in found:
                found.add(target)
                todo.append(target)
    return frozenset(found - {"clouds/__init__.py"})


def product_files() -> list[Path]:
    return sorted(p for package in PRODUCT for p in (ROOT / package).rglob("*.py"))


def test_every_product_module_imports_only_its_own_layer_or_lower_ones() -> None:
    offenders = []
    for path in product_files():
        rel = str(path.relative_to(ROOT))
        for target in sorted(project_imports(path)):
            if layer(target) > layer(rel) and (rel, target) not in UPWARD:
                offenders.append(f"{rel} ({LAYERS[layer(rel)]}) imports {target} ({LAYERS[layer(target)]})")
    assert offenders == []


def test_no_rule_module_imports_a_component_the_program_or_the_tooling() -> None:
    # The policy pack runs in its own process under the engine; it reads what the program registered.
    offenders = [
        f"{path.relative_to(ROOT)}: {target}"
        for path in sorted((ROOT / "policies").rglob("*.py"))
        for target in project_imports(path)
        if target.split("/")[0] in {"components", "program", "tooling"} or target.endswith("/component.py")
    ]
    assert offenders == []


def component_imports(paths: list[Path]) -> list[str]:
    """Each import of a component module (`components/`, or a cloud's `component.py`) by `paths`."""
    return [
        f"{path.relative_to(ROOT)}: {target}"
        for path in paths
        for target in sorted(project_imports(path))
        if target.split("/")[0] == "components" or target.endswith("/component.py")
    ]


def test_no_tooling_module_imports_a_component() -> None:
    # The plan and its placement audit read what the components build from facts below them
    # (`infra.serving.pods`, `infra.serving.routes`); only the program, which they run, builds components.
    assert component_imports(sorted((ROOT / "tooling").rglob("*.py"))) == []


def test_the_tooling_test_sees_an_import_of_a_component() -> None:
    # The program imports components, so the test above would name a tooling module that did.
    assert "program/main.py: components/model_deployment.py" in component_imports([ROOT / "program" / "main.py"])


def test_the_kernel_imports_nothing_but_the_kernel() -> None:
    offenders = [
        f"{rel}: {target}" for rel in sorted(KERNEL) for target in project_imports(ROOT / rel) if target not in KERNEL
    ]
    assert offenders == []


def test_the_layer_test_sees_a_back_arrow() -> None:
    # The fleet model importing a component would be one: the test above must be able to fail.
    assert layer("infra/config/model.py") < layer("components/base.py")
    assert layer("clouds/gke/config.py") < layer("clouds/__init__.py") < layer("infra/config/model.py")
    assert module_file("clouds.gke") == "clouds/gke/__init__.py"
    assert project_imports(ROOT / "components" / "base.py") >= {"clouds/spec.py"}
    assert layer("clouds/eks/component.py") == layer("clouds/eks/network.py") == layer("components/base.py")
    # Inside `infra/`: the model, the facts, the serving stack, the checks, in that order.
    assert (
        layer("infra/config/model.py")
        < layer("infra/facts.py")
        < layer("infra/serving/catalog.py")
        < layer("infra/checks/guard.py")
        < layer("components/base.py")
    )
    assert layer("infra/config/names.py") == 0 < layer("infra/config/stackfile.py")


def test_the_only_arrow_up_inside_infra_is_the_reader_running_the_checks() -> None:
    upward = {
        (str(path.relative_to(ROOT)), target)
        for path in sorted((ROOT / "infra").rglob("*.py"))
        for target in project_imports(path)
        if layer(target) > layer(str(path.relative_to(ROOT)))
    }
    assert upward == UPWARD


def test_no_product_modules_import_each_other_in_a_circle() -> None:
    graph = {str(p.relative_to(ROOT)): project_imports(p) for p in product_files()}
    done: set[str] = set()
    circles: list[list[str]] = []

    def visit(rel: str, path: list[str]) -> None:
        if rel in path:
            circles.append([*path[path.index(rel) :], rel])
            return
        if rel in done:
            return
        for target in sorted(graph.get(rel, set()) - {rel}):  # a package's `from package import x`
            visit(target, [*path, rel])
        done.add(rel)

    for rel in sorted(graph):
        visit(rel, [])
    assert circles == []


def test_the_vocabulary_imports_nothing_of_the_project() -> None:
    assert project_imports(ROOT / "infra" / "vocabulary.py") == set()


# Where a cloud's name may decide what code does: its profile row and its own cluster module.
MAY_BRANCH_ON_CLOUD = {p.relative_to(ROOT) for p in (ROOT / "clouds").rglob("*.py")}
CLOUD_NAMES = {c.source for c in CLOUDS}
CLOUD_CONSTANTS = {"GKE", "EKS", "AKS", "CIVO", "VULTR", "NEBIUS", "EXISTING"}


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
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if rel in MAY_BRANCH_ON_CLOUD:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Compare) and any(map(names_a_cloud, [node.left, *node.comparators])):
                    offenders.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    assert offenders == []


def test_a_catalog_whose_tags_disagree_with_the_cloud_profile_does_not_load() -> None:
    amd_on_gke = [Chart("amd", "gpu-operator-charts", "https://x", "v1", "ns", dra_drivers=("gpu.amd.com",))]
    with pytest.raises(CatalogError, match="GKE: the catalog serves"):
        check_served_drivers("GKE", amd_on_gke)


def test_a_stack_loads_only_the_cloud_sdks_it_uses() -> None:
    # Each cloud SDK takes seconds to import; the program must not undo the registry's lazy loading
    # of cluster components (`clouds.spec.Cloud.component_class`) by importing one for a helper.
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


def sdk_class(sdk: str, token: str) -> type:
    """The SDK class a type token names (`gcp:container/nodePool:NodePool` -> `pulumi_gcp.container.NodePool`;
    pulumi-oci capitalizes its modules in tokens, `oci:ContainerEngine/...`, not in Python)."""
    _, module, name = token.split(":")
    folder = module.split("/")[0].lower()
    found: type = getattr(importlib.import_module(sdk if folder == "index" else f"{sdk}.{folder}"), name)
    return found


def test_the_tokens_spelled_for_the_policies_are_the_ones_the_sdks_register() -> None:
    import pulumi_kubernetes as k8s

    assert [pulumi.get_type_token(c) for c in (k8s.helm.v3.Release, k8s.apps.v1.Deployment)] == [
        tokens.RELEASE,
        tokens.DEPLOYMENT,
    ]
    assert pulumi.get_type_token(k8s.resource.v1.ResourceClaimTemplate) == tokens.RESOURCE_CLAIM_TEMPLATE
    for c in CLOUDS:
        if c.resources is None or c.sdk is None:
            continue
        for token in (c.resources.cluster, c.resources.pool):
            cls = sdk_class(c.sdk, token)
            # ediri-vultr registers no token on its classes; its constructors pass the token as text.
            assert pulumi.get_type_token(cls) == token or f"'{token}'" in inspect.getsource(cls), token


def sdk_imports(path: Path) -> set[str]:
    """The top-level packages `path` imports (`import pulumi_oci as oci` -> `pulumi_oci`)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_each_cloud_sdk_is_imported_only_from_its_own_clouds_package() -> None:
    # A cloud is one package (docs/adding-a-cloud.md): its SDK stays inside it, so no other module
    # pays its import or depends on its types.
    owner = {c.sdk: f"clouds/{c.key}/" for c in CLOUDS if c.sdk is not None}
    assert {"pulumi_oci", "pulumi_digitalocean"} <= set(owner)
    strays = [
        (str(path.relative_to(ROOT)), sdk)
        for path in product_files()
        for sdk in sdk_imports(path) & set(owner)
        if not str(path.relative_to(ROOT)).startswith(owner[sdk])
    ]
    assert strays == []
    assert all(any(sdk in sdk_imports(p) for p in (ROOT / folder).rglob("*.py")) for sdk, folder in owner.items()), (
        "a cloud package that imports no SDK would make this test pass on nothing"
    )


# One job a module: a product module longer than this holds more than one, and is split by job.
MAX_MODULE_LINES = 500


def test_no_product_module_is_longer_than_the_limit() -> None:
    lengths = {
        str(path.relative_to(ROOT)): len(path.read_text().splitlines())
        for package in PRODUCT
        for path in (ROOT / package).rglob("*.py")
    }
    assert lengths, "the product's modules were found"
    assert {name: n for name, n in lengths.items() if n > MAX_MODULE_LINES} == {}

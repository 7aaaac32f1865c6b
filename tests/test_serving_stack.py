"""The ServingStack: which releases a cluster gets, in which order, and the objects beside them.

Existing clusters run through the whole program (`run_fleet`); provisioned clouds construct the
ServingStack directly under mocks from facts `infra.facts.derive_cluster` computes, so these tests
do not depend on each cloud's cluster component.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

from clouds import CLOUDS
from clouds.mock import fake_kubeconfig
from components.serving_stack import ServingStack, ServingStackArgs
from infra.facts import ClusterFacts, derive_cluster
from infra.serving.catalog import AMD, CATALOG, CPU, NVIDIA
from tests.conftest import CLUSTER_BLOCKS, CPU_BLOCKS, GPU_BLOCKS, cpu_class, fleet_of, gpu_class, of_type, run_fleet
from tooling.mockrun import MockRun, Registration, run_under_mocks

RELEASE = "kubernetes:helm.sh/v3:Release"
PROVISIONED = tuple(c.source for c in CLOUDS if c.provisioned)


# Releases per driver stack (neutral releases are every untagged row, so a new neutral row counts).
NVIDIA_RELEASES = {"mp-node-feature-discovery", "mp-gpu-operator", "mp-dra-driver-nvidia-gpu"}
VULTR_NVIDIA_RELEASES = {"mp-dra-driver-nvidia-gpu"}
CPU_RELEASES = {"mp-dra-driver-cpu"}
AMD_RELEASES = {"mp-node-feature-discovery", "mp-gpu-operator-charts"}
KNOWN_NEUTRAL = {"mp-cert-manager", "mp-kube-prometheus-stack", "mp-gateway-helm", "mp-lws"}


def neutral(cloud: str) -> set[str]:
    # Rows for a serving feature (KEDA, for autoscaling) install only where a deployment uses it.
    found = {c.release for c in CATALOG[cloud] if not c.dra_drivers and not c.features}
    assert found >= KNOWN_NEUTRAL
    return found


def expected(cloud: str, stacks: Iterable[set[str]]) -> set[str]:
    out = neutral(cloud)
    for s in stacks:
        out |= s
    return out


def provisioned_fleet(cloud: str, drivers: Iterable[str]) -> dict[str, Any]:
    classes: list[dict[str, Any]] = []
    pools: list[dict[str, Any]] = []
    if NVIDIA in drivers:
        classes.append(gpu_class("gpu", cloud, GPU_BLOCKS[cloud]))
        pools.append({"name": "gpu", "className": "gpu"})
    if CPU in drivers:
        classes.append(cpu_class("cpu", cloud, CPU_BLOCKS[cloud]))
        pools.append({"name": "cpu", "className": "cpu"})
    if not pools:
        # A pool must claim a driver to have a role; the "no drivers" case is derived from a CPU
        # fleet with its drivers taken away below.
        classes.append(cpu_class("cpu", cloud, CPU_BLOCKS[cloud]))
        pools.append({"name": "cpu", "className": "cpu"})
    cluster = {"name": "c1", "source": cloud, cloud.lower(): CLUSTER_BLOCKS[cloud], "nodePools": pools}
    return {"classes": classes, "clusters": [cluster]}


def provisioned_facts(cloud: str, drivers: tuple[str, ...]) -> ClusterFacts:
    fleet = fleet_of(provisioned_fleet(cloud, drivers))
    facts = derive_cluster(fleet, fleet.clusters[0])
    if not drivers:
        facts = dataclasses.replace(facts, dra_drivers=())
    assert set(facts.dra_drivers) == set(drivers)
    return facts


def run_stack(facts: ClusterFacts) -> MockRun:
    """Construct one ServingStack on its own Kubernetes provider under mocks."""

    def program() -> None:
        provider = k8s.Provider("cluster-k8s", kubeconfig=fake_kubeconfig("c1"))
        ServingStack(
            f"{facts.name}-stack",
            ServingStackArgs(facts=facts),
            opts=pulumi.ResourceOptions(providers={"kubernetes": provider}),
        )

    result = run_under_mocks(program, "test", {})
    assert result.error is None, result.error
    return result


def release_names(result: MockRun) -> set[str]:
    return {r.inputs["name"] for r in of_type(result, RELEASE)}


def releases_by_name(result: MockRun) -> dict[str, Registration]:
    return {r.inputs["name"]: r for r in of_type(result, RELEASE)}


COMBOS: dict[str, tuple[str, ...]] = {
    "none": (),
    "cpu": (CPU,),
    "nvidia": (NVIDIA,),
    "nvidia+cpu": (CPU, NVIDIA),
}
STACKS = {CPU: CPU_RELEASES, NVIDIA: NVIDIA_RELEASES, AMD: AMD_RELEASES}


# --------------------------------------------------------------------------------------------
# The join, as registered releases


@pytest.mark.parametrize("combo", list(COMBOS))
@pytest.mark.parametrize("cloud", PROVISIONED)
def test_provisioned_cluster_gets_exactly_the_releases_its_drivers_select(cloud: str, combo: str) -> None:
    drivers = COMBOS[combo]
    result = run_stack(provisioned_facts(cloud, drivers))
    stacks = [STACKS[d] for d in drivers]
    if cloud == "Vultr":
        # VKE runs its own GPU Operator and NFD; the stack adds only the DRA driver.
        stacks = [VULTR_NVIDIA_RELEASES if d == NVIDIA else STACKS[d] for d in drivers]
    assert release_names(result) == expected(cloud, stacks)


def existing_fleet(*pool_classes: dict[str, Any]) -> dict[str, Any]:
    pools = [{"name": f"p{i}", "className": c["name"]} for i, c in enumerate(pool_classes)]
    return {
        "classes": list(pool_classes),
        "clusters": [
            {"name": "byo", "source": "Existing", "existing": {"kubernetesVersion": "1.36"}, "nodePools": pools}
        ],
    }


def byo_class(name: str, driver: str, count: int = 1) -> dict[str, Any]:
    return {"name": name, "devices": [{"name": "gpu", "driver": driver, "deviceClassName": driver, "count": count}]}


NVIDIA_BYO = byo_class("nv", NVIDIA)
AMD_BYO = byo_class("amd", AMD, 8)
CPU_BYO = cpu_class("cpu", None)

EXISTING_COMBOS: dict[str, tuple[dict[str, Any], ...]] = {
    "cpu": (CPU_BYO,),
    "nvidia": (NVIDIA_BYO,),
    "nvidia+cpu": (NVIDIA_BYO, CPU_BYO),
    "amd": (AMD_BYO,),
    "amd+nvidia": (AMD_BYO, NVIDIA_BYO),
    "amd+nvidia+cpu": (AMD_BYO, NVIDIA_BYO, CPU_BYO),
}


def run_existing(*classes: dict[str, Any]) -> MockRun:
    result = run_fleet(existing_fleet(*classes))
    assert result.error is None, result.error
    return result


@pytest.mark.parametrize("combo", list(EXISTING_COMBOS))
def test_existing_cluster_gets_exactly_the_releases_its_drivers_select(combo: str) -> None:
    classes = EXISTING_COMBOS[combo]
    drivers = {d["driver"] for c in classes for d in c["devices"]}
    result = run_existing(*classes)
    assert release_names(result) == expected("Existing", [STACKS[d] for d in drivers])


def test_existing_cluster_whose_pools_do_not_claim_amd_installs_no_amd_component() -> None:
    result = run_existing(NVIDIA_BYO, CPU_BYO)
    assert "mp-gpu-operator-charts" not in release_names(result)
    assert of_type(result, "kubernetes:resource.k8s.io/v1:DeviceClass") == []


def test_existing_cluster_claiming_only_cpus_installs_no_gpu_component() -> None:
    result = run_existing(CPU_BYO)
    names = release_names(result)
    assert names.isdisjoint(NVIDIA_RELEASES | AMD_RELEASES)
    assert "mp-dra-driver-cpu" in names


def test_existing_cluster_whose_owner_runs_the_gpu_operators_gets_neither_operator() -> None:
    fleet = existing_fleet(AMD_BYO, NVIDIA_BYO, CPU_BYO)
    fleet["clusters"][0]["existing"] = {"ownerGpuOperator": True, "kubernetesVersion": "1.36"}
    result = run_fleet(fleet)
    assert result.error is None, result.error
    regs = releases_by_name(result)
    assert set(regs) == neutral("Existing") | {
        "mp-node-feature-discovery",
        "mp-dra-driver-nvidia-gpu",
        "mp-dra-driver-cpu",
    }
    # The NVIDIA DRA driver installs against the owner's operator, so it waits for no operator of ours.
    assert not any("gpu-operator" in urn for urn in regs["mp-dra-driver-nvidia-gpu"].dependencies)
    # The owner's AMD operator creates its own `gpu.amd.com` DeviceClass; a second one would collide.
    assert of_type(result, "kubernetes:resource.k8s.io/v1:DeviceClass") == []
    stack = next(r for r in result.resources if r.type == "modelplane:stack:ServingStack")
    assert stack.inputs["ownerGpuOperator"] is True


def test_existing_amd_cluster_whose_owner_runs_the_amd_operator_gets_no_second_nfd() -> None:
    fleet = existing_fleet(AMD_BYO, CPU_BYO)
    fleet["clusters"][0]["existing"] = {"ownerGpuOperator": True, "kubernetesVersion": "1.36"}
    result = run_fleet(fleet)
    assert result.error is None, result.error
    # The owner's AMD operator chart brings NFD (`node-feature-discovery.enabled: true` by default).
    assert set(releases_by_name(result)) == neutral("Existing") | {"mp-dra-driver-cpu"}


# --------------------------------------------------------------------------------------------
# Release arguments


def test_oci_charts_are_full_references_and_http_charts_use_their_repository() -> None:
    result = run_existing(AMD_BYO, NVIDIA_BYO, CPU_BYO)
    catalog = {c.release: c for c in CATALOG["Existing"]}
    for name, reg in releases_by_name(result).items():
        row = catalog[name]
        assert reg.inputs["version"] == row.version
        assert reg.inputs["namespace"] == row.namespace
        assert reg.inputs["createNamespace"] is True
        if row.repo.startswith("oci://"):
            assert reg.inputs["chart"] == f"{row.repo}/{row.chart}"
            assert "repositoryOpts" not in reg.inputs
        else:
            assert reg.inputs["chart"] == row.chart
            assert reg.inputs["repositoryOpts"] == {"repo": row.repo}


def test_charts_others_depend_on_wait_until_ready() -> None:
    result = run_existing(AMD_BYO, NVIDIA_BYO, CPU_BYO)
    catalog = CATALOG["Existing"]
    needed = {c.release for c in catalog for d in c.depends_on for c in catalog if c.key == d}
    for name, reg in releases_by_name(result).items():
        assert reg.inputs["skipAwait"] is (name not in needed), name
    assert {"mp-cert-manager", "mp-node-feature-discovery", "mp-gpu-operator"} <= needed


def test_releases_depend_on_exactly_their_catalog_dependencies() -> None:
    result = run_existing(AMD_BYO, NVIDIA_BYO, CPU_BYO)
    regs = releases_by_name(result)
    urn_to_release = {r.urn: name for name, r in regs.items()}
    by_key = {c.key: c for c in CATALOG["Existing"]}
    for c in CATALOG["Existing"]:
        if c.features:
            continue  # no deployment here uses it; KEDA's edge: tests/test_autoscaling.py
        deps = {urn_to_release[u] for u in regs[c.release].dependencies if u in urn_to_release}
        assert deps == {by_key[d].release for d in c.depends_on}, c.key


def test_dra_driver_waits_for_the_gpu_operator_and_the_operator_for_nfd() -> None:
    result = run_existing(NVIDIA_BYO)
    regs = releases_by_name(result)
    assert regs["mp-gpu-operator"].urn in regs["mp-dra-driver-nvidia-gpu"].dependencies
    assert regs["mp-node-feature-discovery"].urn in regs["mp-gpu-operator"].dependencies


def test_releases_are_children_of_the_serving_stack_under_the_cluster() -> None:
    result = run_existing(NVIDIA_BYO)
    stack = [r for r in result.resources if r.type == "modelplane:stack:ServingStack"]
    assert [(s.name, s.parent) for s in stack] == [("byo-stack", "byo")]
    assert {r.parent for r in of_type(result, RELEASE)} == {"byo-stack"}


# --------------------------------------------------------------------------------------------
# Objects beside the releases


def test_amd_device_class_is_created_by_the_stack_when_amd_is_joined() -> None:
    result = run_existing(AMD_BYO)
    classes = of_type(result, "kubernetes:resource.k8s.io/v1:DeviceClass")
    assert len(classes) == 1
    assert classes[0].inputs["metadata"]["name"] == "gpu.amd.com"
    assert classes[0].inputs["spec"]["selectors"] == [{"cel": {"expression": "device.driver == 'gpu.amd.com'"}}]
    operator = releases_by_name(result)["mp-gpu-operator-charts"]
    assert operator.inputs["values"]["draDriver"]["deviceClass"]["create"] is False


def quotas(result: MockRun) -> list[Registration]:
    return of_type(result, "kubernetes:core/v1:ResourceQuota")


@pytest.mark.parametrize(
    ("combo", "namespaces"),
    [
        ("nvidia", {"gpu-operator", "dra-driver-nvidia-gpu"}),
        ("nvidia+cpu", {"gpu-operator", "dra-driver-nvidia-gpu", "dra-driver-cpu"}),
    ],
)
def test_gke_critical_pods_quota_precedes_each_critical_release(combo: str, namespaces: set[str]) -> None:
    result = run_stack(provisioned_facts("GKE", COMBOS[combo]))
    found = quotas(result)
    assert {q.inputs["metadata"]["namespace"] for q in found} == namespaces
    for q in found:
        assert q.inputs["spec"]["scopeSelector"] == {
            "matchExpressions": [
                {
                    "scopeName": "PriorityClass",
                    "operator": "In",
                    "values": ["system-node-critical", "system-cluster-critical"],
                }
            ]
        }
    regs = releases_by_name(result)
    by_ns = {q.inputs["metadata"]["namespace"]: q.urn for q in found}
    assert by_ns["gpu-operator"] in regs["mp-gpu-operator"].dependencies
    assert by_ns["dra-driver-nvidia-gpu"] in regs["mp-dra-driver-nvidia-gpu"].dependencies


def test_gke_cpu_driver_gets_its_quota_and_no_driver_installer() -> None:
    # dra-driver-cpu's DaemonSet runs at system-node-critical: GKE rejects it without the quota.
    result = run_stack(provisioned_facts("GKE", (CPU,)))
    (quota,) = quotas(result)
    assert quota.inputs["metadata"]["namespace"] == "dra-driver-cpu"
    assert quota.urn in releases_by_name(result)["mp-dra-driver-cpu"].dependencies
    assert of_type(result, "kubernetes:yaml/v2:ConfigFile") == []


def test_gke_nvidia_operator_waits_for_googles_pinned_driver_installer() -> None:
    result = run_stack(provisioned_facts("GKE", (NVIDIA,)))
    installers = of_type(result, "kubernetes:yaml/v2:ConfigFile")
    assert len(installers) == 1
    url = installers[0].inputs["files"][0] if "files" in installers[0].inputs else installers[0].inputs["file"]
    assert "daemonset-preloaded.yaml" in url and "/master/" not in url
    # Not the 2023 commit whose schema-1 pause image containerd 2 (GKE 1.33+) refuses.
    assert url == (
        "https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/"
        "992db81257553607f1477945f1b3219632991829/nvidia-driver-installer/cos/daemonset-preloaded.yaml"
    )
    assert installers[0].urn in releases_by_name(result)["mp-gpu-operator"].dependencies


@pytest.mark.parametrize("cloud", [c for c in PROVISIONED if c != "GKE"])
def test_only_gke_gets_critical_pod_quotas(cloud: str) -> None:
    result = run_stack(provisioned_facts(cloud, (NVIDIA, CPU)))
    assert quotas(result) == []
    assert of_type(result, "kubernetes:yaml/v2:ConfigFile") == []


def test_existing_cluster_gets_no_quota() -> None:
    assert quotas(run_existing(AMD_BYO, NVIDIA_BYO)) == []


def test_every_stack_resource_uses_the_clusters_provider() -> None:
    result = run_existing(AMD_BYO, NVIDIA_BYO)
    cluster_provider = next(r for r in result.resources if r.type == "pulumi:providers:kubernetes")
    children = [r for r in result.resources if r.parent == "byo-stack"]
    assert children
    assert all(r.provider.startswith(cluster_provider.urn + "::") for r in children), [r.provider for r in children]

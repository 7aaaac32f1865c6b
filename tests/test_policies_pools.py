"""pool-role-marking and protect-clusters on node pools and clusters in each cloud's spelling."""

from __future__ import annotations

from typing import Any

import pytest

from clouds import CLUSTER_TYPES, POOL_TYPES
from policies.pool_rules import pool_role_marking, protect_clusters
from tests.conftest import cpu_class, gpu_class, run_fleet
from tests.policy_harness import UNKNOWN_OBJECT_VALUE, resource_args, run, verdict

GKE_POOL = "gcp:container/nodePool:NodePool"
EKS_POOL = "aws:eks/nodeGroup:NodeGroup"
AKS_POOL = "azure-native:containerservice:AgentPool"
CIVO_POOL = "civo:index/kubernetesNodePool:KubernetesNodePool"
VULTR_POOL = "vultr:index/kubernetesNodePools:KubernetesNodePools"


def gke_pool(labels: dict[str, str], taints: list[dict[str, str]], accelerators: int = 0) -> dict[str, Any]:
    config: dict[str, Any] = {"machineType": "g2-standard-8", "labels": labels, "taints": taints}
    if accelerators:
        config["guestAccelerators"] = [{"type": "nvidia-l4", "count": accelerators}]
    return {"nodeCount": 1, "nodeConfig": config}


def marked(labels: dict[str, str], taints: list[dict[str, str]], ami: str = "AL2023_x86_64_STANDARD") -> dict[str, Any]:
    return {"labels": labels, "taints": taints, "amiType": ami, "nodeCount": 1}


def violations(token: str, props: dict[str, Any]) -> list[str]:
    return run(pool_role_marking, resource_args(token, props, name="pool"))


NVIDIA_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
CPU_TAINT = {"key": "modelplane.ai/cpu", "value": "true", "effect": "NoSchedule"}
GPU_LABELS = {"modelplane.ai/pool": "l40s", "modelplane.ai/gpu": "nvidia-l40s"}
CPU_LABELS = {"modelplane.ai/pool": "cpu", "modelplane.ai/cpu": "true"}


@pytest.mark.parametrize("token", [CIVO_POOL, VULTR_POOL])
def test_gpu_pool_with_vendor_taint_is_accepted(token: str) -> None:
    assert violations(token, marked(GPU_LABELS, [NVIDIA_TAINT])) == []


@pytest.mark.parametrize("token", [CIVO_POOL, VULTR_POOL])
def test_gpu_pool_without_its_taint_is_rejected(token: str) -> None:
    found = violations(token, marked(GPU_LABELS, []))
    assert len(found) == 1 and "lacks the taint nvidia.com/gpu=true:NoSchedule" in found[0]


def test_eks_gpu_node_group_needs_the_nvidia_ami_and_upper_case_taint() -> None:
    upper = {**NVIDIA_TAINT, "effect": "NO_SCHEDULE"}
    assert violations(EKS_POOL, marked(GPU_LABELS, [upper], ami="AL2023_x86_64_NVIDIA")) == []
    found = violations(EKS_POOL, marked(GPU_LABELS, [upper], ami="AL2023_x86_64_STANDARD"))
    assert any("no accelerator" in m for m in found)


def test_gke_gpu_pool_is_recognised_by_guest_accelerators_and_must_set_its_own_taint() -> None:
    labels = {"modelplane.ai/pool": "l4", "modelplane.ai/gpu": "nvidia-l4"}
    present = {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}
    assert violations(GKE_POOL, gke_pool(labels, [present], accelerators=1)) == []
    # GKE adds the taint only in some cases, so a pool without it is rejected.
    found = violations(GKE_POOL, gke_pool(labels, [], accelerators=1))
    assert any("lacks the taint nvidia.com/gpu=present:NoSchedule" in m for m in found)
    assert any("no accelerator" in m for m in violations(GKE_POOL, gke_pool(labels, [present])))


def test_gke_pool_with_accelerators_but_no_gpu_label_is_rejected() -> None:
    found = violations(GKE_POOL, gke_pool({"modelplane.ai/pool": "x"}, [], accelerators=1))
    assert any("carries no modelplane.ai/gpu label" in m for m in found)


def test_aks_taint_strings_are_read() -> None:
    good = {"nodeLabels": CPU_LABELS, "nodeTaints": ["modelplane.ai/cpu=true:NoSchedule"]}
    assert violations(AKS_POOL, good) == []
    bad = {"nodeLabels": CPU_LABELS, "nodeTaints": ["modelplane.ai/cpu=true:PreferNoSchedule"]}
    assert any("CPU pool lacks the taint" in m for m in violations(AKS_POOL, bad))


def test_cpu_pool_with_accelerator_is_rejected() -> None:
    found = violations(GKE_POOL, gke_pool(CPU_LABELS, [{**CPU_TAINT, "effect": "NO_SCHEDULE"}], accelerators=1))
    assert any("CPU pool has accelerators" in m for m in found)


def test_pool_without_pool_label_is_rejected() -> None:
    found = violations(CIVO_POOL, marked({"modelplane.ai/cpu": "true"}, [CPU_TAINT]))
    assert found == ["pool '?' (pool): it carries no modelplane.ai/pool label; every pool is labelled with its name"]


def test_a_gke_pool_without_its_node_config_is_reported_not_a_crash() -> None:
    # labels, taints and accelerators sit under nodeConfig; a pool without it carries none of them.
    assert violations(GKE_POOL, {"nodeCount": 1}) == [
        "pool '?' (pool): it carries no modelplane.ai/pool label; every pool is labelled with its name"
    ]


def test_system_pool_needs_only_its_pool_label() -> None:
    assert violations(CIVO_POOL, marked({"modelplane.ai/pool": "system"}, [])) == []
    assert any("neither" in m for m in violations(CIVO_POOL, marked({"modelplane.ai/pool": "web"}, [])))


def test_inline_system_pool_of_a_cluster_is_checked() -> None:
    token = "civo:index/kubernetesCluster:KubernetesCluster"
    good = {"pools": [{"size": "g4s.kube.small", "nodeCount": 1, "labels": {"modelplane.ai/pool": "system"}}]}
    assert violations(token, good) == []
    bad = {"pools": [{"size": "g4s.kube.small", "nodeCount": 1}]}
    assert any("no modelplane.ai/pool label" in m for m in violations(token, bad))


def test_program_gke_pools_pass_role_marking() -> None:
    gke = {"project": "my-project", "region": "us-central1", "kubernetesVersion": "1.36"}
    raw = {
        "classes": [
            gpu_class("l4", "GKE", {"machineType": "g2-standard-8", "accelerator": {"type": "nvidia-l4", "count": 1}}),
            cpu_class("gke-cpu", "GKE", {"machineType": "c3-standard-8"}),
        ],
        "clusters": [
            {
                "name": "gke-a",
                "source": "GKE",
                "gke": gke,
                "nodePools": [{"name": "l4", "className": "l4"}, {"name": "cpu", "className": "gke-cpu"}],
            }
        ],
    }
    result = run_fleet(raw)
    assert result.error is None
    pools = [r for r in result.resources if r.type == GKE_POOL]
    assert {r.name for r in pools} == {"gke-a-system", "gke-a-l4", "gke-a-cpu"}
    for r in pools:
        assert run(pool_role_marking, resource_args(r.type, r.inputs, name=r.name)) == [], r.name


NEBIUS_POOL = "nebius:index/mk8sV1NodeGroup:Mk8sV1NodeGroup"


def nebius_group(labels: dict[str, str], taints: list[dict[str, str]], drivers: str | None = None) -> dict[str, Any]:
    template: dict[str, Any] = {
        "resources": {"platform": "gpu-h100-sxm" if drivers else "cpu-d3", "preset": "x"},
        "metadata": {"labels": labels},
        "taints": taints,
    }
    if drivers is not None:
        template["gpuSettings"] = {"driversPreset": drivers, "dra": True}
    return {"parentId": "c", "fixedNodeCount": 1, "template": template}


def test_nebius_node_groups_are_read_from_their_template_with_upper_case_effects() -> None:
    upper_gpu = {**NVIDIA_TAINT, "effect": "NO_SCHEDULE"}
    upper_cpu = {**CPU_TAINT, "effect": "NO_SCHEDULE"}
    assert violations(NEBIUS_POOL, nebius_group(GPU_LABELS, [upper_gpu], drivers="cuda13.0")) == []
    assert violations(NEBIUS_POOL, nebius_group(CPU_LABELS, [upper_cpu])) == []
    found = violations(NEBIUS_POOL, nebius_group(GPU_LABELS, [], drivers="cuda13.0"))
    assert len(found) == 1 and "lacks the taint nvidia.com/gpu=true:NoSchedule" in found[0]


def test_a_nebius_node_group_is_accelerated_exactly_when_it_names_a_cuda_drivers_preset() -> None:
    upper_gpu = {**NVIDIA_TAINT, "effect": "NO_SCHEDULE"}
    upper_cpu = {**CPU_TAINT, "effect": "NO_SCHEDULE"}
    # A GPU label on a group without GPU settings: its nodes would have no driver.
    assert any("no accelerator" in m for m in violations(NEBIUS_POOL, nebius_group(GPU_LABELS, [upper_gpu])))
    # A CPU group with a drivers preset runs a GPU image.
    found = violations(NEBIUS_POOL, nebius_group(CPU_LABELS, [upper_cpu], drivers="cuda12.8"))
    assert any("CPU pool has accelerators" in m for m in found)


def test_program_nebius_node_groups_pass_role_marking() -> None:
    from tests.test_nebius import nebius_fleet

    result = run_fleet(nebius_fleet())
    assert result.error is None
    groups = [r for r in result.resources if r.type == NEBIUS_POOL]
    assert {r.name for r in groups} == {"nb-eu-system", "nb-eu-h100", "nb-eu-h100-single", "nb-eu-cpu"}
    for r in groups:
        assert run(pool_role_marking, resource_args(r.type, r.inputs, name=r.name)) == [], r.name


# protect-clusters


@pytest.mark.parametrize("token", sorted({*CLUSTER_TYPES, *POOL_TYPES}))
def test_unprotected_cluster_or_pool_is_reported(token: str) -> None:
    args = resource_args(token, {}, name="c", policy=protect_clusters, protect=False)
    assert len(run(protect_clusters, args)) == 1


def test_protected_cluster_passes() -> None:
    args = resource_args("gcp:container/cluster:Cluster", {}, name="c", policy=protect_clusters, protect=True)
    assert run(protect_clusters, args) == []


def test_exempt_resource_may_stay_unprotected() -> None:
    args = resource_args(
        "gcp:container/cluster:Cluster", {}, name="dev", policy=protect_clusters, config={"exemptResources": ["dev"]}
    )
    assert run(protect_clusters, args) == []


def test_protect_clusters_is_advisory_unless_configured() -> None:
    from pulumi_policy import EnforcementLevel

    assert protect_clusters.enforcement_level is EnforcementLevel.ADVISORY


@pytest.mark.parametrize(
    ("token", "props", "found"),
    [
        (
            CIVO_POOL,
            marked({**GPU_LABELS, "modelplane.ai/cpu": "true"}, [NVIDIA_TAINT]),
            ["pool 'l40s' (pool): it carries both modelplane.ai/gpu and modelplane.ai/cpu; a pool has one role"],
        ),
        (
            CIVO_POOL,
            marked({"modelplane.ai/pool": "gaudi", "modelplane.ai/gpu": "intel-gaudi3"}, []),
            ["pool 'gaudi' (pool): modelplane.ai/gpu=intel-gaudi3 names no known GPU vendor (nvidia, amd)"],
        ),
        (
            CIVO_POOL,
            marked({"modelplane.ai/pool": "cpu", "modelplane.ai/cpu": "yes"}, [CPU_TAINT]),
            ["pool 'cpu' (pool): modelplane.ai/cpu is 'yes'; CPU pools carry modelplane.ai/cpu=true"],
        ),
        (
            CIVO_POOL,
            marked(CPU_LABELS, [{**CPU_TAINT, "effect": "PreferNoSchedule"}]),
            ["pool 'cpu' (pool): CPU pool lacks the taint modelplane.ai/cpu=true:NoSchedule"],
        ),
        (
            GKE_POOL,
            gke_pool(CPU_LABELS, [{**CPU_TAINT, "effect": "NO_SCHEDULE"}], accelerators=1),
            ["pool 'cpu' (pool): CPU pool has accelerators; a CPU pool runs a standard image with no GPU"],
        ),
        (
            "azure-native:containerservice:ManagedCluster",
            {"agentPoolProfiles": [{"nodeLabels": {"modelplane.ai/pool": "system"}}, {"nodeLabels": GPU_LABELS}]},
            [
                "pool 'l40s' (pool): GPU pool lacks the taint nvidia.com/gpu=true:NoSchedule, so any pod could land "
                "on its GPUs"
            ],
        ),
    ],
)
def test_pool_marking_messages_name_the_pool_and_what_it_lacks(
    token: str, props: dict[str, Any], found: list[str]
) -> None:
    assert violations(token, props) == found


def test_unknown_pool_labels_in_a_preview_name_the_pool() -> None:
    found = verdict(pool_role_marking, resource_args(CIVO_POOL, {"labels": UNKNOWN_OBJECT_VALUE}, name="civo-a-gpu"))
    assert isinstance(found, str)
    assert found.startswith(
        "undecided: the labels, taints or accelerators of node pool civo-a-gpu is not known in this preview ("
    )


@pytest.mark.parametrize(
    ("token", "kind"), [("gcp:container/cluster:Cluster", "cluster"), ("aws:eks/nodeGroup:NodeGroup", "node pool")]
)
def test_unprotected_resource_is_named_with_its_kind_and_the_fix(token: str, kind: str) -> None:
    args = resource_args(token, {}, name="prod-a", policy=protect_clusters)
    assert run(protect_clusters, args) == [
        f"{kind} prod-a is not protected; set modelplane:protect: true so `pulumi up` can never delete it"
    ]

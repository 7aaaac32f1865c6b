"""The AKS cluster component under Pulumi mocks: what it registers and with which arguments."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from typing import Any

import pytest
from pulumi.runtime import rpc

from clouds import aks, profile
from clouds.aks.__init__ import AGENT_POOL_NAME, agent_pool_name
from clouds.aks.component import autoscaler_owned
from infra.facts import PoolFacts
from tests.conftest import assert_protected_but_providers, cpu_class, gpu_class, named, of_type, run_fleet
from tooling.mockrun import MockRun

PROVIDER = "pulumi:providers:azure-native"
RESOURCE_GROUP = "azure-native:resources:ResourceGroup"
VNET = "azure-native:network:VirtualNetwork"
SUBNET = "azure-native:network:Subnet"
CLUSTER = "azure-native:containerservice:ManagedCluster"
AGENT_POOL = "azure-native:containerservice:AgentPool"


def aks_fleet(protect: bool = False) -> dict[str, Any]:
    return {
        "classes": [
            gpu_class(
                "a100",
                "AKS",
                {"vmSize": "Standard_NC24ads_A100_v4", "accelerator": {"type": "nvidia-a100", "count": 1}},
            ),
            cpu_class("cpu8", "AKS", {"vmSize": "Standard_D8s_v5", "diskSizeGb": 128}),
        ],
        "clusters": [
            {
                "name": "aks-west",
                "source": "AKS",
                "aks": {"location": "westeurope", "kubernetesVersion": "1.36"},
                "nodePools": [
                    {
                        "name": "gpu-a100",
                        "className": "a100",
                        "nodeCount": 1,
                        "minNodeCount": 1,
                        "maxNodeCount": 3,
                        "zones": ["1", "2", "3"],
                    },
                    {"name": "cpu", "className": "cpu8", "nodeCount": 2},
                ],
            }
        ],
        "protect": protect,
    }


@pytest.fixture(scope="module")
def plan() -> MockRun:
    result = run_fleet(aks_fleet())
    assert result.error is None, result.error
    return result


def test_cluster_is_resource_group_network_cluster_and_one_agent_pool_per_pool(plan: MockRun) -> None:
    assert [r.name for r in of_type(plan, RESOURCE_GROUP)] == ["aks-west-rg"]
    assert [r.name for r in of_type(plan, VNET)] == ["aks-west-vnet"]
    assert [r.name for r in of_type(plan, SUBNET)] == ["aks-west-subnet"]
    assert [r.name for r in of_type(plan, CLUSTER)] == ["aks-west-cluster"]
    assert sorted(r.name for r in of_type(plan, AGENT_POOL)) == ["aks-west-cpu", "aks-west-gpu-a100"]
    component = named(plan, "aks-west")
    assert component.type == "modelplane:aks:AksCluster"
    for r in of_type(plan, RESOURCE_GROUP) + of_type(plan, VNET) + of_type(plan, CLUSTER) + of_type(plan, AGENT_POOL):
        assert r.parent == "aks-west"


def test_every_azure_resource_uses_the_clusters_own_provider_in_its_location(plan: MockRun) -> None:
    (provider,) = of_type(plan, PROVIDER)
    assert provider.inputs["location"] == "westeurope"
    azure = [r for r in plan.resources if r.type.startswith("azure-native:")]
    assert azure
    for r in azure:
        assert r.provider.startswith(provider.urn), r.name
    assert named(plan, "aks-west-rg").inputs["location"] == "westeurope"


def test_cluster_uses_cni_overlay_rbac_oidc_and_workload_identity(plan: MockRun) -> None:
    cluster = named(plan, "aks-west-cluster").inputs
    assert cluster["kubernetesVersion"] == "1.36"
    assert cluster["dnsPrefix"] == "aks-west"
    assert cluster["identity"] == {"type": "SystemAssigned"}
    assert cluster["enableRBAC"] is True
    network = cluster["networkProfile"]
    assert network["networkPlugin"] == "azure"
    assert network["networkPluginMode"] == "overlay"
    assert network["podCidr"] == "10.244.0.0/16"
    assert network["serviceCidr"] == "10.96.0.0/16"
    assert network["dnsServiceIP"] == "10.96.0.10"
    assert cluster["oidcIssuerProfile"] == {"enabled": True}
    assert cluster["securityProfile"]["workloadIdentity"] == {"enabled": True}


def test_system_pool_is_inline_system_mode_on_the_cluster_subnet(plan: MockRun) -> None:
    (system,) = named(plan, "aks-west-cluster").inputs["agentPoolProfiles"]
    assert system["name"] == "system"
    assert system["mode"] == "System"
    assert system["vmSize"] == "Standard_D4s_v5"
    assert system["nodeLabels"] == {"modelplane.ai/pool": "system"}
    assert system["vnetSubnetID"] == "aks-west-subnet-id"
    assert (system["enableAutoScaling"], system["minCount"], system["maxCount"]) == (True, 1.0, 2.0)
    assert "nodeTaints" not in system


def test_gpu_pool_gets_vendor_taint_gpu_label_and_vm_size(plan: MockRun) -> None:
    gpu = named(plan, "aks-west-gpu-a100").inputs
    assert gpu["mode"] == "User"
    assert gpu["vmSize"] == "Standard_NC24ads_A100_v4"
    assert gpu["nodeTaints"] == ["nvidia.com/gpu=true:NoSchedule"]
    assert gpu["nodeLabels"] == {"modelplane.ai/pool": "gpu-a100", "modelplane.ai/gpu": "nvidia-a100"}
    assert gpu["osDiskSizeGB"] == 100.0
    assert gpu["vnetSubnetID"] == "aks-west-subnet-id"
    assert gpu["resourceName"] == "aks-west-cluster"


def test_gpu_pool_installs_the_aks_driver_which_the_stacks_operator_leaves_alone(plan: MockRun) -> None:
    # AKS owns the NVIDIA driver: the pool installs it and the GPU Operator must not.
    assert named(plan, "aks-west-gpu-a100").inputs["gpuProfile"] == {"driver": "Install"}
    assert profile("AKS").nvidia.driver_by_operator is False


def test_gpu_pool_skips_the_aks_driver_when_the_stack_owns_it(monkeypatch: pytest.MonkeyPatch) -> None:
    owned = replace(aks.CLOUD.profile.nvidia, driver_version="580.173.02")
    monkeypatch.setattr(aks, "CLOUD", replace(aks.CLOUD, profile=replace(aks.CLOUD.profile, nvidia=owned)))
    result = run_fleet(aks_fleet())
    assert result.error is None, result.error
    assert named(result, "aks-west-gpu-a100").inputs["gpuProfile"] == {"driver": "None"}


def test_cpu_pool_gets_cpu_taint_and_label_and_no_gpu_profile(plan: MockRun) -> None:
    cpu = named(plan, "aks-west-cpu").inputs
    assert cpu["vmSize"] == "Standard_D8s_v5"
    assert cpu["nodeTaints"] == ["modelplane.ai/cpu=true:NoSchedule"]
    assert cpu["nodeLabels"] == {"modelplane.ai/pool": "cpu", "modelplane.ai/cpu": "true"}
    assert "modelplane.ai/gpu" not in cpu["nodeLabels"]
    assert "gpuProfile" not in cpu
    assert cpu["osDiskSizeGB"] == 128.0


def test_autoscaled_pool_sets_bounds_and_fixed_pool_sets_only_its_count(plan: MockRun) -> None:
    gpu = named(plan, "aks-west-gpu-a100").inputs
    assert (gpu["enableAutoScaling"], gpu["count"], gpu["minCount"], gpu["maxCount"]) == (True, 1.0, 1.0, 3.0)
    cpu = named(plan, "aks-west-cpu").inputs
    assert (cpu["enableAutoScaling"], cpu["count"]) == (False, 2.0)
    assert "minCount" not in cpu and "maxCount" not in cpu


def test_pool_zones_become_availability_zones(plan: MockRun) -> None:
    assert named(plan, "aks-west-gpu-a100").inputs["availabilityZones"] == ["1", "2", "3"]
    assert "availabilityZones" not in named(plan, "aks-west-cpu").inputs


def test_agent_pool_names_are_valid_for_aks_and_stable(plan: MockRun) -> None:
    names = {r.name: r.inputs["agentPoolName"] for r in of_type(plan, AGENT_POOL)}
    assert names["aks-west-cpu"] == "cpu"
    # AKS takes 1-12 lower-case letters and digits, starting with a letter; another name becomes
    # its first 7 of those (after a `p` if it starts with a digit) and 5 hex of sha256(name).
    assert names["aks-west-gpu-a100"] == "gpua100587d6"
    assert AGENT_POOL_NAME.match(names["aks-west-gpu-a100"])
    assert agent_pool_name("9-starts-with-digit") == "p9start79303"
    long_names = [f"inference-pool-{i}" for i in range(8)] + ["9-starts-with-digit"]
    shortened = [agent_pool_name(n) for n in long_names]
    assert all(AGENT_POOL_NAME.match(n) for n in shortened)
    assert len(set(shortened)) == len(shortened)


def test_agent_pools_are_created_one_after_another(plan: MockRun) -> None:
    gpu, cpu = named(plan, "aks-west-gpu-a100"), named(plan, "aks-west-cpu")
    assert gpu.urn in cpu.dependencies
    assert cpu.urn not in gpu.dependencies


def test_kubeconfig_is_a_secret_decoded_from_the_user_credentials(plan: MockRun) -> None:
    (k8s,) = of_type(plan, "pulumi:providers:kubernetes")
    kubeconfig = k8s.inputs["kubeconfig"]
    assert rpc.is_rpc_secret(kubeconfig)
    decoded = json.loads(rpc.unwrap_rpc_secret(kubeconfig))
    assert decoded["kind"] == "Config"
    assert decoded["clusters"][0]["name"] == "aks-west-cluster"
    with pytest.raises(ValueError):
        base64.b64decode(rpc.unwrap_rpc_secret(kubeconfig), validate=True)


def test_nothing_is_protected_unless_asked(plan: MockRun) -> None:
    assert not any(r.protect for r in plan.resources)


def test_protect_covers_cluster_pools_and_network() -> None:
    result = run_fleet(aks_fleet(protect=True))
    assert result.error is None, result.error
    protected = {r.name for r in result.resources if r.protect}
    assert {
        "aks-west-rg",
        "aks-west-vnet",
        "aks-west-subnet",
        "aks-west-cluster",
        "aks-west-gpu-a100",
        "aks-west-cpu",
    } <= protected
    assert_protected_but_providers(result)


def test_autoscaled_pools_send_their_count_only_at_creation() -> None:
    # AKS rejects a manual count on a pool its autoscaler has resized; fixed pools keep theirs.
    scaled = PoolFacts("a100", "a100", "GPU", {}, (), None, "nvidia", 1, 1, 2)
    fixed = PoolFacts("cpu", "cpu", "CPU", {}, (), None, None, 1, None, None)
    assert autoscaler_owned(scaled) == ["count"]
    assert autoscaler_owned(scaled, "agentPoolProfiles[0].count") == ["agentPoolProfiles[0].count"]
    assert autoscaler_owned(fixed) is None

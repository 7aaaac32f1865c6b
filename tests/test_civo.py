"""The Civo cluster component under Pulumi mocks: what it registers and with which arguments."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pulumi.runtime import rpc

from infra.config.issues import ConfigError
from tests.conftest import CLUSTER_BLOCKS, CPU_BLOCKS, cpu_class, fleet_of, gpu_class, named, of_type, run_fleet
from tooling.mockrun import MockRun

PROVIDER = "pulumi:providers:civo"
NETWORK = "civo:index/network:Network"
FIREWALL = "civo:index/firewall:Firewall"
CLUSTER = "civo:index/kubernetesCluster:KubernetesCluster"
NODE_POOL = "civo:index/kubernetesNodePool:KubernetesNodePool"


def civo_fleet(protect: bool = False) -> dict[str, Any]:
    return {
        "classes": [
            gpu_class(
                "l40s", "Civo", {"size": "an.g1.l40s.kube.x1", "accelerator": {"type": "nvidia-l40s", "count": 1}}
            ),
            cpu_class("cpu8", "Civo", {"size": "g4p.kube.medium"}),
        ],
        "clusters": [
            {
                "name": "civo-lon",
                "source": "Civo",
                "civo": {"region": "LON1", "kubernetesVersion": "1.36.0-k3s1"},
                "nodePools": [
                    {"name": "gpu-l40s", "className": "l40s", "nodeCount": 2},
                    {"name": "cpu", "className": "cpu8", "nodeCount": 1},
                ],
            }
        ],
        "protect": protect,
    }


@pytest.fixture(scope="module")
def plan() -> MockRun:
    result = run_fleet(civo_fleet())
    assert result.error is None, result.error
    return result


def test_cluster_is_network_firewall_cluster_and_one_node_pool_per_pool(plan: MockRun) -> None:
    assert [r.name for r in of_type(plan, NETWORK)] == ["civo-lon-network"]
    assert [r.name for r in of_type(plan, FIREWALL)] == ["civo-lon-firewall"]
    assert [r.name for r in of_type(plan, CLUSTER)] == ["civo-lon-cluster"]
    assert sorted(r.name for r in of_type(plan, NODE_POOL)) == ["civo-lon-cpu", "civo-lon-gpu-l40s"]
    assert named(plan, "civo-lon").type == "modelplane:civo:CivoCluster"


def test_every_civo_resource_uses_the_clusters_own_provider_in_its_region(plan: MockRun) -> None:
    (provider,) = of_type(plan, PROVIDER)
    assert provider.inputs["region"] == "LON1"
    civo = [r for r in plan.resources if r.type.startswith("civo:")]
    assert len(civo) == 5
    for r in civo:
        assert r.provider.startswith(provider.urn), r.name
        assert r.parent == "civo-lon"


def test_firewall_opens_only_the_api_and_the_gateway_ports(plan: MockRun) -> None:
    firewall = named(plan, "civo-lon-firewall").inputs
    assert firewall["createDefaultRules"] is False
    assert firewall["networkId"] == "civo-lon-network-id"
    ingress = firewall["ingressRules"]
    assert sorted(rule["portRange"] for rule in ingress) == ["443", "6443", "80"]
    assert {(rule["protocol"], rule["action"]) for rule in ingress} == {("tcp", "allow")}
    egress = firewall["egressRules"]
    assert {rule["protocol"] for rule in egress} == {"tcp", "udp", "icmp"}
    assert all(rule["cidrs"] == ["0.0.0.0/0"] for rule in egress)


def test_cluster_joins_network_and_firewall_with_cilium_and_the_system_pool(plan: MockRun) -> None:
    cluster = named(plan, "civo-lon-cluster").inputs
    assert cluster["networkId"] == "civo-lon-network-id"
    assert cluster["firewallId"] == "civo-lon-firewall-id"
    assert cluster["kubernetesVersion"] == "1.36.0-k3s1"
    assert cluster["cni"] == "cilium"
    assert cluster["applications"] == "-traefik2-nodeport"
    assert cluster["writeKubeconfig"] is True
    assert cluster["pools"] == {
        "label": "system",
        "size": "g4p.kube.small",
        "nodeCount": 1.0,
        "labels": {"modelplane.ai/pool": "system"},
    }


def test_gpu_pool_gets_vendor_taint_gpu_label_and_size(plan: MockRun) -> None:
    gpu = named(plan, "civo-lon-gpu-l40s").inputs
    assert gpu["clusterId"] == "civo-lon-cluster-id"
    assert gpu["label"] == "gpu-l40s"
    assert gpu["size"] == "an.g1.l40s.kube.x1"
    # The DRA kubelet plugin runs where this label is true; the driver manager flips it to evict it.
    assert gpu["labels"] == {
        "modelplane.ai/pool": "gpu-l40s",
        "modelplane.ai/gpu": "nvidia-l40s",
        "nvidia.com/dra-kubelet-plugin": "true",
    }
    assert gpu["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    assert gpu["publicIpNodePool"] is False


def test_cpu_pool_gets_cpu_taint_and_label_and_size(plan: MockRun) -> None:
    cpu = named(plan, "civo-lon-cpu").inputs
    assert cpu["size"] == "g4p.kube.medium"
    assert cpu["nodeCount"] == 1.0
    assert cpu["labels"] == {"modelplane.ai/pool": "cpu", "modelplane.ai/cpu": "true"}
    assert cpu["taints"] == [{"key": "modelplane.ai/cpu", "value": "true", "effect": "NoSchedule"}]


def test_civo_pool_has_its_node_count_and_no_scaling_bounds(plan: MockRun) -> None:
    gpu = named(plan, "civo-lon-gpu-l40s").inputs
    assert gpu["nodeCount"] == 2.0
    assert not {"minNodeCount", "maxNodeCount", "minNodes", "maxNodes"} & set(gpu)


def test_kubeconfig_is_a_secret_from_the_cluster(plan: MockRun) -> None:
    (k8s,) = of_type(plan, "pulumi:providers:kubernetes")
    kubeconfig = k8s.inputs["kubeconfig"]
    assert rpc.is_rpc_secret(kubeconfig)
    assert json.loads(rpc.unwrap_rpc_secret(kubeconfig))["clusters"][0]["name"] == "civo-lon-cluster"


def test_nothing_is_protected_unless_asked(plan: MockRun) -> None:
    assert not any(r.protect for r in plan.resources)


def test_protect_covers_cluster_pools_and_network() -> None:
    result = run_fleet(civo_fleet(protect=True))
    assert result.error is None, result.error
    protected = {r.name for r in result.resources if r.protect}
    assert {
        "civo-lon-network",
        "civo-lon-firewall",
        "civo-lon-cluster",
        "civo-lon-gpu-l40s",
        "civo-lon-cpu",
    } <= protected


def test_autoscaling_bounds_on_a_civo_pool_are_rejected_before_anything_registers() -> None:
    raw = {
        "classes": [cpu_class("cpu-civo", "Civo", CPU_BLOCKS["Civo"])],
        "clusters": [
            {
                "name": "civo-dev",
                "source": "Civo",
                "civo": CLUSTER_BLOCKS["Civo"],
                "nodePools": [
                    {"name": "cpu", "className": "cpu-civo", "nodeCount": 1, "minNodeCount": 1, "maxNodeCount": 3}
                ],
            }
        ],
    }
    with pytest.raises(ConfigError) as err:
        fleet_of(raw)
    [issue] = err.value.issues
    assert issue.path == "clusters[0].nodePools[0].minNodeCount"
    assert "Civo pools do not autoscale" in issue.problem
    assert "remove minNodeCount and maxNodeCount" in issue.fix

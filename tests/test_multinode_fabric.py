"""What a pool offers a replica of several nodes (`infra.multinode`), and the `multinode-fabric` advisory."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from infra import tokens
from infra.facts import PoolFacts, derive_fleet
from infra.multinode import fabric_advisory, pool_fabric, pool_zones
from policies.resource_rules import multinode_fabric
from tests.conftest import fleet_of, gpu_class
from tests.policy_harness import resource_args, run

P5 = {"instanceType": "p5.48xlarge", "accelerator": {"type": "nvidia-h100-80gb", "count": 8}}
EFA = {"name": "efa", "driver": "dra.net", "deviceClassName": "efa.networking.k8s.aws", "count": 32}
NEBIUS_H100 = {"platform": "gpu-h100-sxm", "preset": "8gpu-128vcpu-1600gb"}


def pool_of(source: str, block: dict[str, Any], cluster: dict[str, Any], efa: bool = False, **pool: Any) -> PoolFacts:
    """The facts of pool `big` of one `source` cluster, its class an 8-GPU machine (`block`)."""
    cls = gpu_class("big", source, block, count=8)
    if efa:
        cls["devices"].append(copy.deepcopy(EFA))
    fleet = fleet_of(
        {
            "classes": [cls],
            "clusters": [
                {
                    "name": "c",
                    "source": source,
                    source.lower(): cluster,
                    "nodePools": [{"name": "big", "className": "big", "nodeCount": 2, **pool}],
                }
            ],
        }
    )
    [facts] = derive_fleet(fleet)
    return facts.pool("big")


EKS_CLUSTER = {"region": "us-east-1", "kubernetesVersion": "1.36"}
NEBIUS_CLUSTER = {"projectId": "project-e00example", "region": "eu-north1", "kubernetesVersion": "1.34"}
AKS_CLUSTER = {"location": "eastus", "kubernetesVersion": "1.34"}


def test_an_efa_device_of_the_class_is_the_pools_fabric_when_the_pod_claims_it() -> None:
    efa = pool_of("EKS", P5, EKS_CLUSTER, efa=True)
    assert pool_fabric(efa) == "dra.net x 32"
    assert pool_fabric(efa, ["gpu", "efa"]) == "dra.net x 32"
    assert pool_fabric(efa, ["gpu"]) is None
    assert pool_fabric(pool_of("EKS", P5, EKS_CLUSTER)) is None


def test_a_nebius_infiniband_fabric_is_the_pools_fabric() -> None:
    joined = pool_of("Nebius", {**NEBIUS_H100, "infinibandFabric": "fabric-3"}, NEBIUS_CLUSTER)
    assert pool_fabric(joined) == "InfiniBand fabric-3"
    assert pool_fabric(pool_of("Nebius", NEBIUS_H100, NEBIUS_CLUSTER)) is None


@pytest.mark.parametrize(
    ("size", "fabric"),
    [("Standard_ND96isr_H100_v5", "InfiniBand"), ("Standard_NC80adis_H100_v5", None)],
)
def test_an_rdma_nd_size_carries_infiniband_on_aks(size: str, fabric: str | None) -> None:
    block = {"vmSize": size, "accelerator": {"type": "nvidia-h100", "count": 8}}
    assert pool_fabric(pool_of("AKS", block, AKS_CLUSTER)) == fabric


def test_an_eks_pool_without_zones_spreads_over_the_clusters_subnets_unless_efa_places_it() -> None:
    # A node group over every private subnet, one per zone; an EFA pool is one placement group.
    assert pool_zones("EKS", pool_of("EKS", P5, EKS_CLUSTER)) == 3
    assert pool_zones("EKS", pool_of("EKS", P5, EKS_CLUSTER, efa=True)) == 1
    assert pool_zones("EKS", pool_of("EKS", P5, EKS_CLUSTER, zones=["us-east-1a", "us-east-1b"])) == 2
    assert pool_zones("EKS", pool_of("EKS", P5, EKS_CLUSTER, zones=["us-east-1a"])) == 1


def deployment_props(source: str, nodes: int, fabric: str | None) -> dict[str, Any]:
    """The inputs a model deployment registers (`components.model_deployment.component_inputs`)."""
    return {"name": "big", "cluster": "c", "pool": "big", "source": source, "nodes": nodes, "fabric": fabric}


def advisories(props: dict[str, Any]) -> list[str]:
    return run(multinode_fabric, resource_args(tokens.MODEL_DEPLOYMENT, props, name="big", policy=multinode_fabric))


def test_a_group_without_fabric_on_eks_is_told_to_claim_efa() -> None:
    [message] = advisories(deployment_props("EKS", 2, None))
    assert "spans 2 nodes per replica" in message
    assert "dra.net device (deviceClassName efa.networking.k8s.aws)" in message


def test_a_group_with_fabric_or_of_one_node_gets_no_advisory() -> None:
    assert advisories(deployment_props("EKS", 2, "dra.net x 32")) == []
    assert advisories(deployment_props("Nebius", 2, "InfiniBand fabric-3")) == []
    assert advisories(deployment_props("EKS", 1, None)) == []


def test_on_a_cloud_without_fabric_the_advisory_says_so() -> None:
    [message] = advisories(deployment_props("Civo", 2, None))
    assert "Civo offers no high-speed fabric this program sets up" in message


def test_the_nebius_advisory_names_infiniband_fabric() -> None:
    message = fabric_advisory("Nebius", "big", 2, None)
    assert message is not None and "provisioning.nebius.infinibandFabric" in message

"""The Nebius (mk8s) cluster component under Pulumi mocks: what it registers and with which arguments."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from pulumi.runtime import rpc

from clouds.nebius.component import nebius_name, server_url
from tests.conftest import cpu_class, gpu_class, named, of_type, run_fleet
from tooling.mockrun import MockRun

PROVIDER = "pulumi:providers:nebius"
NETWORK = "nebius:index/vpcV1Network:VpcV1Network"
SUBNET = "nebius:index/vpcV1Subnet:VpcV1Subnet"
GPU_CLUSTER = "nebius:index/computeV1GpuCluster:ComputeV1GpuCluster"
CLUSTER = "nebius:index/mk8sV1Cluster:Mk8sV1Cluster"
NODE_GROUP = "nebius:index/mk8sV1NodeGroup:Mk8sV1NodeGroup"

H100X8 = {
    "platform": "gpu-h100-sxm",
    "preset": "8gpu-128vcpu-1600gb",
    "diskSizeGb": 500,
    "infinibandFabric": "fabric-3",
    "accelerator": {"type": "nvidia-h100-80gb", "count": 8},
}


def nebius_fleet(protect: bool = False) -> dict[str, Any]:
    return {
        "classes": [
            gpu_class("h100x8", "Nebius", H100X8, count=8),
            gpu_class(
                "h100x1",
                "Nebius",
                {
                    "platform": "gpu-h100-sxm",
                    "preset": "1gpu-16vcpu-200gb",
                    "driversPreset": "cuda12.8",
                    "accelerator": {"type": "nvidia-h100-80gb", "count": 1},
                },
            ),
            cpu_class("cpu8", "Nebius", {"platform": "cpu-d3", "preset": "8vcpu-32gb"}),
        ],
        "clusters": [
            {
                "name": "nb-eu",
                "source": "Nebius",
                "nebius": {"projectId": "project-e00test", "region": "eu-north1", "kubernetesVersion": "1.36"},
                "nodePools": [
                    {"name": "h100", "className": "h100x8", "nodeCount": 1, "minNodeCount": 1, "maxNodeCount": 2},
                    {"name": "h100-single", "className": "h100x1", "nodeCount": 1},
                    {"name": "cpu", "className": "cpu8", "nodeCount": 2},
                ],
            }
        ],
        "protect": protect,
    }


@pytest.fixture(scope="module")
def plan() -> MockRun:
    result = run_fleet(nebius_fleet())
    assert result.error is None, result.error
    return result


def test_cluster_is_network_subnet_gpu_cluster_cluster_and_one_node_group_per_pool(plan: MockRun) -> None:
    assert named(plan, "nb-eu").type == "modelplane:nebius:NebiusCluster"
    assert [r.name for r in of_type(plan, NETWORK)] == ["nb-eu-network"]
    assert [r.name for r in of_type(plan, SUBNET)] == ["nb-eu-subnet"]
    assert [r.name for r in of_type(plan, CLUSTER)] == ["nb-eu-cluster"]
    # One GPU cluster for the one fabric named; the single-GPU pool joins none.
    assert [r.name for r in of_type(plan, GPU_CLUSTER)] == ["nb-eu-gpu-cluster-fabric-3"]
    assert sorted(r.name for r in of_type(plan, NODE_GROUP)) == [
        "nb-eu-cpu",
        "nb-eu-h100",
        "nb-eu-h100-single",
        "nb-eu-system",
    ]


def test_every_nebius_resource_uses_the_projects_one_provider_and_sits_in_the_project(plan: MockRun) -> None:
    (provider,) = of_type(plan, PROVIDER)
    assert (provider.name, provider.parent) == ("nebius-project-e00test-provider", None)
    assert provider.inputs["parentId"] == "project-e00test"
    nebius = [r for r in plan.resources if r.type.startswith("nebius:")]
    assert len(nebius) == 8
    for r in nebius:
        assert r.provider.startswith(provider.urn), r.name
        assert r.parent == "nb-eu"
    for r in (*of_type(plan, NETWORK), *of_type(plan, SUBNET), *of_type(plan, CLUSTER), *of_type(plan, GPU_CLUSTER)):
        assert r.inputs["parentId"] == "project-e00test", r.name


def test_subnet_takes_the_networks_pools_and_the_cluster_runs_in_it(plan: MockRun) -> None:
    subnet = named(plan, "nb-eu-subnet").inputs
    assert subnet["networkId"] == "nb-eu-network-id"
    assert subnet["ipv4PrivatePools"] == {"useNetworkPools": True}
    cluster = named(plan, "nb-eu-cluster").inputs
    assert cluster["name"] == "nb-eu"
    assert cluster["controlPlane"] == {
        "subnetId": "nb-eu-subnet-id",
        "version": "1.36",
        "endpoints": {"publicEndpoint": {}},
        "etcdClusterSize": 3.0,
    }


def test_infiniband_pool_is_placed_in_the_gpu_cluster_of_its_fabric(plan: MockRun) -> None:
    gpu_cluster = named(plan, "nb-eu-gpu-cluster-fabric-3").inputs
    assert (gpu_cluster["infinibandFabric"], gpu_cluster["name"]) == ("fabric-3", "nb-eu-fabric-3")
    assert named(plan, "nb-eu-h100").inputs["template"]["gpuCluster"] == {"id": "nb-eu-gpu-cluster-fabric-3-id"}
    assert "gpuCluster" not in named(plan, "nb-eu-h100-single").inputs["template"]


def test_gpu_node_group_gets_machine_drivers_preset_dra_taint_labels_and_autoscaling(plan: MockRun) -> None:
    group = named(plan, "nb-eu-h100").inputs
    assert (group["name"], group["parentId"], group["version"]) == ("h100", "nb-eu-cluster-id", "1.36")
    assert group["autoscaling"] == {"minNodeCount": 1.0, "maxNodeCount": 2.0}
    assert "fixedNodeCount" not in group
    template = group["template"]
    assert template["resources"] == {"platform": "gpu-h100-sxm", "preset": "8gpu-128vcpu-1600gb"}
    assert template["bootDisk"] == {"sizeGibibytes": 500.0, "type": "NETWORK_SSD"}
    # The image's driver, and DRA: the image's own device plugin stays off.
    assert template["gpuSettings"] == {"driversPreset": "cuda13.0", "dra": True}
    assert template["metadata"] == {"labels": {"modelplane.ai/pool": "h100", "modelplane.ai/gpu": "nvidia-h100-80gb"}}
    assert template["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]
    assert template["networkInterfaces"] == [{"subnetId": "nb-eu-subnet-id"}]


def test_a_class_names_its_own_drivers_preset(plan: MockRun) -> None:
    group = named(plan, "nb-eu-h100-single").inputs
    assert group["template"]["gpuSettings"] == {"driversPreset": "cuda12.8", "dra": True}
    assert group["fixedNodeCount"] == 1.0


def test_cpu_node_group_gets_cpu_taint_and_label_no_gpu_settings_and_a_fixed_size(plan: MockRun) -> None:
    group = named(plan, "nb-eu-cpu").inputs
    template = group["template"]
    assert template["resources"] == {"platform": "cpu-d3", "preset": "8vcpu-32gb"}
    assert template["metadata"]["labels"] == {"modelplane.ai/pool": "cpu", "modelplane.ai/cpu": "true"}
    assert template["taints"] == [{"key": "modelplane.ai/cpu", "value": "true", "effect": "NO_SCHEDULE"}]
    assert "gpuSettings" not in template and "gpuCluster" not in template
    assert group["fixedNodeCount"] == 2.0 and "autoscaling" not in group


def test_system_node_group_is_modelplanes_cpu_d3_shape_autoscaled_to_two(plan: MockRun) -> None:
    group = named(plan, "nb-eu-system").inputs
    assert group["name"] == "system"
    assert group["template"]["resources"] == {"platform": "cpu-d3", "preset": "4vcpu-16gb"}
    assert group["template"]["bootDisk"] == {"sizeGibibytes": 100.0, "type": "NETWORK_SSD"}
    assert group["template"]["metadata"]["labels"] == {"modelplane.ai/pool": "system"}
    assert group["template"]["taints"] == []
    assert group["autoscaling"] == {"minNodeCount": 1.0, "maxNodeCount": 2.0}


def test_kubeconfig_is_a_secret_that_runs_the_nebius_cli_against_the_public_endpoint(plan: MockRun) -> None:
    (k8s,) = of_type(plan, "pulumi:providers:kubernetes")
    kubeconfig = k8s.inputs["kubeconfig"]
    assert rpc.is_rpc_secret(kubeconfig)
    doc = json.loads(rpc.unwrap_rpc_secret(kubeconfig))
    cluster = doc["clusters"][0]["cluster"]
    assert cluster["server"] == "https://nb-eu-cluster.nebius.invalid:443"
    # The status holds the CA as PEM; the kubeconfig carries it base64-encoded.
    assert base64.b64decode(cluster["certificate-authority-data"]).decode().startswith("-----BEGIN CERTIFICATE-----")
    user = doc["users"][0]["user"]["exec"]
    assert (user["command"], user["args"]) == ("nebius", ["mk8s", "v1", "cluster", "get-token", "--format", "json"])


def test_the_api_server_url_is_built_from_a_bare_endpoint_or_taken_as_is() -> None:
    assert server_url("pu.mk8scluster-x.mk8s.eu-north1.nebius.cloud:443").startswith("https://pu.")
    assert server_url("https://a.example:443") == "https://a.example:443"


def test_long_gpu_cluster_names_are_shortened_to_nebius_limit_and_stay_distinct() -> None:
    a, b = nebius_name("c" * 60 + "-fabric-3"), nebius_name("c" * 60 + "-fabric-4")
    assert len(a) == len(b) == 63 and a != b
    assert nebius_name("short-fabric-3") == "short-fabric-3"


def test_nothing_is_protected_unless_asked(plan: MockRun) -> None:
    assert not any(r.protect for r in plan.resources)


def test_protect_covers_network_cluster_gpu_clusters_and_node_groups() -> None:
    result = run_fleet(nebius_fleet(protect=True))
    assert result.error is None, result.error
    protected = {r.name for r in result.resources if r.protect}
    assert {
        "nb-eu-network",
        "nb-eu-subnet",
        "nb-eu-cluster",
        "nb-eu-gpu-cluster-fabric-3",
        "nb-eu-system",
        "nb-eu-h100",
        "nb-eu-cpu",
    } <= protected


def test_infiniband_on_a_preset_with_fewer_than_eight_gpus_is_rejected_with_its_path() -> None:
    fleet = nebius_fleet()
    fleet["classes"][1]["provisioning"]["nebius"]["infinibandFabric"] = "fabric-3"
    result = run_fleet(fleet)
    assert result.error is not None
    message = str(result.error)
    assert "classes[1].provisioning.nebius.infinibandFabric" in message
    assert "8-GPU preset" in message and "1gpu-16vcpu-200gb" in message

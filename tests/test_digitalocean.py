"""The DigitalOcean cluster component under Pulumi mocks: what it registers and with which arguments."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pulumi.runtime import rpc

from infra.checks.devices import MACHINE_ACCELERATOR_MISMATCH, MACHINE_OUTSIDE_REGION
from infra.checks.machines import fleet_violations
from infra.config.issues import located
from infra.config.stackfile import parse_fleet
from tests.conftest import assert_protected_but_providers, cpu_class, gpu_class, named, of_type, run_fleet
from tooling.mockrun import MockRun

PROVIDER = "pulumi:providers:digitalocean"
VPC = "digitalocean:index/vpc:Vpc"
CLUSTER = "digitalocean:index/kubernetesCluster:KubernetesCluster"
NODE_POOL = "digitalocean:index/kubernetesNodePool:KubernetesNodePool"


def do_fleet(protect: bool = False, region: str = "atl1", amd_size: str = "gpu-mi300x8-1536gb") -> dict[str, Any]:
    return {
        "classes": [
            gpu_class("mi300x", "DigitalOcean", {"size": amd_size}, driver="gpu.amd.com", count=8),
            cpu_class("cpu8", "DigitalOcean", {"size": "c-8"}),
        ],
        "clusters": [
            {
                "name": "do-atl",
                "source": "DigitalOcean",
                "digitalocean": {"region": region, "kubernetesVersion": "1.36.1-do.0"},
                "nodePools": [
                    {"name": "mi300x", "className": "mi300x", "nodeCount": 1, "minNodeCount": 1, "maxNodeCount": 3},
                    {"name": "cpu", "className": "cpu8", "nodeCount": 2},
                ],
            }
        ],
        "protect": protect,
    }


@pytest.fixture(scope="module")
def plan() -> MockRun:
    result = run_fleet(do_fleet())
    assert result.error is None, result.error
    return result


def test_cluster_is_a_vpc_a_cluster_and_one_node_pool_per_pool(plan: MockRun) -> None:
    assert [r.name for r in of_type(plan, VPC)] == ["do-atl-vpc"]
    assert [r.name for r in of_type(plan, CLUSTER)] == ["do-atl-cluster"]
    assert sorted(r.name for r in of_type(plan, NODE_POOL)) == ["do-atl-cpu", "do-atl-mi300x"]
    assert named(plan, "do-atl").type == "modelplane:digitalocean:DigitalOceanCluster"


def test_every_digitalocean_resource_uses_the_runs_provider(plan: MockRun) -> None:
    (provider,) = of_type(plan, PROVIDER)
    ours = [r for r in plan.resources if r.type.startswith("digitalocean:")]
    assert len(ours) == 4
    for r in ours:
        assert r.provider.startswith(provider.urn), r.name
        assert r.parent == "do-atl"


def test_cluster_runs_in_its_vpc_with_an_ha_control_plane_and_the_system_pool(plan: MockRun) -> None:
    cluster = named(plan, "do-atl-cluster").inputs
    assert cluster["region"] == "atl1"
    assert cluster["version"] == "1.36.1-do.0"
    assert cluster["vpcUuid"] == "do-atl-vpc-id"
    assert cluster["ha"] is True
    assert cluster["nodePool"] == {
        "name": "system",
        "size": "s-4vcpu-8gb",
        "labels": {"modelplane.ai/pool": "system"},
        "taints": [],
        "autoScale": True,
        "minNodes": 1.0,
        "maxNodes": 2.0,
    }
    assert named(plan, "do-atl-vpc").inputs["region"] == "atl1"


def test_doks_device_plugins_are_off_so_only_the_dra_drivers_advertise_gpus(plan: MockRun) -> None:
    cluster = named(plan, "do-atl-cluster").inputs
    assert cluster["amdGpuDevicePlugin"] == {"enabled": False}
    assert cluster["nvidiaGpuDevicePlugin"] == {"enabled": False}
    # DOKS's own DRA drivers and AMD exporter are left out: the serving stack brings them.
    assert not {"amdGpuDraDriver", "nvidiaGpuDraDriver", "amdGpuDeviceMetricsExporterPlugin"} & set(cluster)


def test_amd_pool_is_autoscaled_with_its_taint_label_and_size(plan: MockRun) -> None:
    pool = named(plan, "do-atl-mi300x").inputs
    assert pool["clusterId"] == "do-atl-cluster-id"
    assert pool["name"] == "mi300x"
    assert pool["size"] == "gpu-mi300x8-1536gb"
    assert (pool["autoScale"], pool["minNodes"], pool["maxNodes"]) == (True, 1.0, 3.0)
    assert "nodeCount" not in pool
    assert pool["labels"] == {"modelplane.ai/pool": "mi300x", "modelplane.ai/gpu": "amd-mi300x"}
    assert pool["taints"] == [{"key": "amd.com/gpu", "value": "true", "effect": "NoSchedule"}]


def test_cpu_pool_has_its_node_count_cpu_taint_and_label(plan: MockRun) -> None:
    pool = named(plan, "do-atl-cpu").inputs
    assert pool["nodeCount"] == 2.0
    assert not {"autoScale", "minNodes", "maxNodes"} & set(pool)
    assert pool["labels"] == {"modelplane.ai/pool": "cpu", "modelplane.ai/cpu": "true"}
    assert pool["taints"] == [{"key": "modelplane.ai/cpu", "value": "true", "effect": "NoSchedule"}]


def test_amd_claim_installs_the_amd_operator_and_no_nvidia_stack(plan: MockRun) -> None:
    charts = {r.inputs["chart"].rsplit("/", 1)[-1] for r in of_type(plan, "kubernetes:helm.sh/v3:Release")}
    assert {"gpu-operator-charts", "node-feature-discovery", "dra-driver-cpu"} <= charts
    assert not {"gpu-operator", "dra-driver-nvidia-gpu"} & charts


def test_kubeconfig_is_a_secret_that_runs_doctl_for_the_cluster(plan: MockRun) -> None:
    (k8s,) = of_type(plan, "pulumi:providers:kubernetes")
    kubeconfig = k8s.inputs["kubeconfig"]
    assert rpc.is_rpc_secret(kubeconfig)
    config = json.loads(rpc.unwrap_rpc_secret(kubeconfig))
    assert config["clusters"][0]["cluster"]["server"] == "https://do-atl-cluster.k8s.ondigitalocean.invalid"
    user = config["users"][0]["user"]["exec"]
    assert user["command"] == "doctl"
    assert user["args"][-1] == "do-atl-cluster-id"


def test_protect_covers_cluster_pools_and_network() -> None:
    result = run_fleet(do_fleet(protect=True))
    assert result.error is None, result.error
    assert_protected_but_providers(result)


def test_a_region_without_the_machine_is_refused_with_its_path_and_the_regions_that_have_it() -> None:
    (v,) = located(fleet_violations(parse_fleet(do_fleet(region="nyc2"), "Pulumi.do.yaml")), "Pulumi.do.yaml")
    assert v.policy == MACHINE_OUTSIDE_REGION
    assert v.path == "classes[name=mi300x].provisioning.digitalocean.size"
    assert "only in atl1, not in the cluster's region nyc2" in v.message
    assert "run the cluster in one of atl1" in v.message


def test_an_amd_claim_on_an_nvidia_machine_is_refused() -> None:
    found = located(
        fleet_violations(parse_fleet(do_fleet(region="nyc2", amd_size="gpu-h100x8-640gb"), "Pulumi.do.yaml")),
        "Pulumi.do.yaml",
    )
    assert [v.policy for v in found] == [MACHINE_ACCELERATOR_MISMATCH]
    assert "claims gpu.amd.com but gpu-h100x8-640gb carries 8x nvidia H100 80GB" in found[0].message

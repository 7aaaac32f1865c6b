"""The OCI (OKE) cluster component under Pulumi mocks: what it registers and with which arguments."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from pulumi.runtime import rpc

from clouds.oci.taints import registered_taints, user_data
from infra.checks.devices import MACHINE_ACCELERATOR_MISMATCH, MACHINE_OUTSIDE_REGION, ZONE_OUTSIDE_REGION
from infra.checks.machines import fleet_violations
from infra.config.issues import ConfigError, located
from infra.config.stackfile import parse_fleet
from tests.conftest import assert_protected_but_providers, cpu_class, gpu_class, named, of_type, run_fleet
from tooling.mockrun import MockRun

PROVIDER = "pulumi:providers:oci"
CLUSTER = "oci:ContainerEngine/cluster:Cluster"
NODE_POOL = "oci:ContainerEngine/nodePool:NodePool"
ADDON = "oci:ContainerEngine/addon:Addon"
IMAGE = "ocid1.image.oc1.us-chicago-1.rocm"


def oci_fleet(
    protect: bool = False,
    region: str = "us-chicago-1",
    amd_shape: str = "BM.GPU.MI300X.8",
    zones: list[str] | None = None,
) -> dict[str, Any]:
    amd = {"shape": amd_shape, "imageId": IMAGE}
    return {
        "classes": [
            gpu_class("mi300x", "OCI", amd, driver="gpu.amd.com", count=8),
            cpu_class("cpu8", "OCI", {"shape": "VM.Standard.E5.Flex", "ocpus": 4, "memoryInGbs": 32}),
        ],
        "clusters": [
            {
                "name": "oke-ord",
                "source": "OCI",
                "oci": {
                    "compartmentId": "ocid1.compartment.oc1..test",
                    "region": region,
                    "kubernetesVersion": "v1.36.1",
                },
                "nodePools": [
                    {"name": "mi300x", "className": "mi300x", "nodeCount": 1, **({"zones": zones} if zones else {})},
                    {"name": "cpu", "className": "cpu8", "nodeCount": 2},
                ],
            }
        ],
        "protect": protect,
    }


@pytest.fixture(scope="module")
def plan() -> MockRun:
    result = run_fleet(oci_fleet())
    assert result.error is None, result.error
    return result


def test_cluster_is_a_vcn_with_three_subnets_a_cluster_and_one_node_pool_per_pool(plan: MockRun) -> None:
    assert [r.name for r in of_type(plan, "oci:Core/vcn:Vcn")] == ["oke-ord-vcn"]
    subnets = sorted(r.name for r in of_type(plan, "oci:Core/subnet:Subnet"))
    assert subnets == ["oke-ord-api-subnet", "oke-ord-lb-subnet", "oke-ord-nodes-subnet"]
    assert [r.name for r in of_type(plan, CLUSTER)] == ["oke-ord-cluster"]
    assert sorted(r.name for r in of_type(plan, NODE_POOL)) == ["oke-ord-cpu", "oke-ord-mi300x", "oke-ord-system"]
    assert named(plan, "oke-ord").type == "modelplane:oci:OkeCluster"


def test_every_oci_resource_uses_the_regions_provider(plan: MockRun) -> None:
    (provider,) = of_type(plan, PROVIDER)
    assert provider.inputs["region"] == "us-chicago-1"
    for r in (r for r in plan.resources if r.type.startswith("oci:")):
        assert r.provider.startswith(provider.urn), r.name


def test_worker_nodes_are_private_and_the_endpoint_and_load_balancers_public(plan: MockRun) -> None:
    assert named(plan, "oke-ord-nodes-subnet").inputs["prohibitPublicIpOnVnic"] is True
    assert named(plan, "oke-ord-api-subnet").inputs["prohibitPublicIpOnVnic"] is False
    cluster = named(plan, "oke-ord-cluster").inputs
    assert cluster["type"] == "ENHANCED_CLUSTER"
    assert cluster["endpointConfig"] == {"subnetId": "oke-ord-api-subnet-id", "isPublicIpEnabled": True}
    assert cluster["options"]["serviceLbSubnetIds"] == ["oke-ord-lb-subnet-id"]
    api = named(plan, "oke-ord-api").inputs["ingressSecurityRules"]
    assert {"protocol": "6", "source": "0.0.0.0/0", "tcpOptions": {"min": 6443.0, "max": 6443.0}} in api


def test_okes_nvidia_device_plugin_is_parked_so_only_the_dra_drivers_advertise_gpus(plan: MockRun) -> None:
    (addon,) = of_type(plan, ADDON)
    assert addon.inputs["addonName"] == "NvidiaGpuPlugin"
    assert addon.inputs["overrideExisting"] is True
    (config,) = addon.inputs["configurations"]
    assert config["key"] == "nodeSelectors"
    assert json.loads(config["value"]) == {"modelplane.ai/oke-nvidia-gpu-plugin": "parked"}


def test_amd_pool_has_its_shape_image_label_and_taint(plan: MockRun) -> None:
    pool = named(plan, "oke-ord-mi300x").inputs
    assert pool["nodeShape"] == "BM.GPU.MI300X.8"
    assert "nodeShapeConfig" not in pool
    assert pool["nodeSourceDetails"]["imageId"] == IMAGE
    assert pool["nodeConfigDetails"]["size"] == 1.0
    labels = {p["key"]: p["value"] for p in pool["initialNodeLabels"]}
    assert labels == {"modelplane.ai/pool": "mi300x", "modelplane.ai/gpu": "amd-mi300x"}
    assert registered_taints(pool["nodeMetadata"]["user_data"]) == ["amd.com/gpu=true:NoSchedule"]
    # No zones listed: the pool spans every availability domain of the region.
    ads = [p["availabilityDomain"] for p in pool["nodeConfigDetails"]["placementConfigs"]]
    assert ads == ["Mock:MOCK-AD-1", "Mock:MOCK-AD-2", "Mock:MOCK-AD-3"]


def test_flex_cpu_pool_takes_its_ocpus_and_memory_and_okes_plain_image(plan: MockRun) -> None:
    pool = named(plan, "oke-ord-cpu").inputs
    assert pool["nodeShape"] == "VM.Standard.E5.Flex"
    assert pool["nodeShapeConfig"] == {"ocpus": 4.0, "memoryInGbs": 32.0}
    assert pool["nodeSourceDetails"]["imageId"] == "ocid1.image.oc1..mock0"
    assert registered_taints(pool["nodeMetadata"]["user_data"]) == ["modelplane.ai/cpu=true:NoSchedule"]
    system = named(plan, "oke-ord-system").inputs
    assert system["nodeShapeConfig"] == {"ocpus": 2.0, "memoryInGbs": 16.0}
    assert registered_taints(system["nodeMetadata"]["user_data"]) == []


def test_the_cloud_init_starts_okes_setup_with_the_taints() -> None:
    script = base64.b64decode(user_data(["a=b:NoSchedule", "c=d:NoExecute"])).decode()
    assert "oke_init_script" in script
    assert (
        'bash /var/run/oke-init.sh --kubelet-extra-args "--register-with-taints=a=b:NoSchedule,c=d:NoExecute"' in script
    )
    assert registered_taints(user_data([])) == []


def test_amd_claim_installs_the_amd_operator_and_no_nvidia_stack(plan: MockRun) -> None:
    charts = {r.inputs["chart"].rsplit("/", 1)[-1] for r in of_type(plan, "kubernetes:helm.sh/v3:Release")}
    assert {"gpu-operator-charts", "node-feature-discovery", "dra-driver-cpu"} <= charts
    assert not {"gpu-operator", "dra-driver-nvidia-gpu"} & charts


def test_kubeconfig_is_okes_own_as_a_secret(plan: MockRun) -> None:
    (k8s,) = of_type(plan, "pulumi:providers:kubernetes")
    kubeconfig = k8s.inputs["kubeconfig"]
    assert rpc.is_rpc_secret(kubeconfig)
    config = json.loads(rpc.unwrap_rpc_secret(kubeconfig))
    assert config["clusters"][0]["cluster"]["server"] == "https://oke-ord-cluster-id.invalid"


def test_protect_covers_cluster_pools_and_network() -> None:
    result = run_fleet(oci_fleet(protect=True))
    assert result.error is None, result.error
    assert_protected_but_providers(result)


def test_a_region_oci_does_not_have_is_refused_at_the_region_with_the_nearest() -> None:
    with pytest.raises(ConfigError) as err:
        parse_fleet(oci_fleet(region="us-chicago-2"), "Pulumi.oci.yaml")
    [issue] = err.value.issues
    assert issue.path == "clusters[0].oci.region"
    assert "did you mean 'us-chicago-1'" in issue.fix


def test_a_region_oci_does_not_have_is_refused_with_the_shapes_path() -> None:
    # A region taken as written (`uncataloguedRegion`) still meets the shapes' regions.
    raw = oci_fleet(region="us-chicago-2")
    raw["clusters"][0]["oci"]["uncataloguedRegion"] = True
    (v, *_) = located(fleet_violations(parse_fleet(raw, "Pulumi.oci.yaml")), "Pulumi.oci.yaml")
    assert v.policy == MACHINE_OUTSIDE_REGION
    assert v.path == "classes[name=mi300x].provisioning.oci.shape"
    assert "not in the cluster's region us-chicago-2" in v.message
    assert "run the cluster in one of" in v.message
    assert not located(fleet_violations(parse_fleet(oci_fleet(region="us-ashburn-1"), "x")), "x")


def test_an_availability_domain_the_region_lacks_is_refused_with_its_path() -> None:
    (v,) = located(fleet_violations(parse_fleet(oci_fleet(region="us-sanjose-1", zones=["2"]), "Pulumi.oci.yaml")), "x")
    assert v.policy == ZONE_OUTSIDE_REGION
    assert v.path == "clusters[name=oke-ord].nodePools[name=mi300x].zones[0]"
    assert "list only zones of us-sanjose-1 (1)" in v.message
    assert "OCI zones are us-sanjose-1's zone numbers 1, not '2'" in v.message
    assert not located(fleet_violations(parse_fleet(oci_fleet(region="us-ashburn-1", zones=["2"]), "x")), "x")


def test_an_amd_claim_on_an_nvidia_shape_is_refused() -> None:
    found = located(
        fleet_violations(parse_fleet(oci_fleet(amd_shape="BM.GPU.H100.8"), "Pulumi.oci.yaml")), "Pulumi.oci.yaml"
    )
    assert [v.policy for v in found] == [MACHINE_ACCELERATOR_MISMATCH]
    assert "claims gpu.amd.com but BM.GPU.H100.8 carries 8x nvidia H100 80GB" in found[0].message

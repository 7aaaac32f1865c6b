"""The GKE cluster component under Pulumi mocks: what it registers and with which arguments."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pulumi.runtime import rpc

from clouds.gke.component import NODE_ROLES, PODS_RANGE, SERVICES_RANGE, gcp_name, node_account_id
from infra.facts import derive_cluster
from tests.conftest import assert_protected_but_providers, cpu_class, fleet_of, gpu_class, named, of_type, run_fleet
from tooling.mockrun import MockRun, Registration

PROVIDER = "pulumi:providers:gcp"
NETWORK = "gcp:compute/network:Network"
SUBNET = "gcp:compute/subnetwork:Subnetwork"
ROUTER = "gcp:compute/router:Router"
NAT = "gcp:compute/routerNat:RouterNat"
ACCOUNT = "gcp:serviceaccount/account:Account"
IAM_MEMBER = "gcp:projects/iAMMember:IAMMember"
CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"


def gke_fleet(protect: bool) -> dict[str, Any]:
    return {
        "classes": [
            gpu_class("l4", "GKE", {"machineType": "g2-standard-8", "accelerator": {"type": "nvidia-l4", "count": 1}}),
            cpu_class("cpu8", "GKE", {"machineType": "c3-standard-8", "diskSizeGb": 200}),
        ],
        "clusters": [
            {
                "name": "gke-central",
                "labels": {"modelplane.ai/region": "us-central1"},
                "source": "GKE",
                "gke": {"project": "mp-prod", "region": "us-central1", "kubernetesVersion": "1.36"},
                "nodePools": [
                    {
                        "name": "l4",
                        "className": "l4",
                        "nodeCount": 1,
                        "minNodeCount": 0,
                        "maxNodeCount": 4,
                        "zones": ["us-central1-a", "us-central1-b"],
                    },
                    {"name": "cpu", "className": "cpu8", "nodeCount": 2},
                ],
            },
            {
                "name": "gke-europe",
                "source": "GKE",
                "gke": {"project": "mp-europe", "region": "europe-west4", "kubernetesVersion": "1.36"},
                "nodePools": [{"name": "cpu", "className": "cpu8"}],
            },
        ],
        "protect": protect,
    }


@pytest.fixture(scope="module")
def plan() -> MockRun:
    result = run_fleet(gke_fleet(protect=True))
    assert result.error is None, result.error
    return result


@pytest.fixture(scope="module")
def unprotected() -> MockRun:
    result = run_fleet(gke_fleet(protect=False))
    assert result.error is None, result.error
    return result


def under(plan: MockRun, cluster: str, type_token: str) -> list[Registration]:
    return [r for r in of_type(plan, type_token) if r.parent == cluster]


def pool(plan: MockRun, cluster: str, name: str) -> Registration:
    return named(plan, f"{cluster}-{name}")


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(rpc._special_sig_key) == rpc._special_secret_sig


def test_cluster_is_network_nat_node_account_cluster_and_a_pool_per_pool_plus_system(plan: MockRun) -> None:
    assert named(plan, "gke-central").type == "modelplane:gke:GkeCluster"
    assert [r.name for r in under(plan, "gke-central", NETWORK)] == ["gke-central-network"]
    assert [r.name for r in under(plan, "gke-central", SUBNET)] == ["gke-central-subnet"]
    assert [r.name for r in under(plan, "gke-central", ROUTER)] == ["gke-central-router"]
    assert [r.name for r in under(plan, "gke-central", NAT)] == ["gke-central-nat"]
    assert [r.name for r in under(plan, "gke-central", ACCOUNT)] == ["gke-central-nodes"]
    assert [r.name for r in under(plan, "gke-central", CLUSTER)] == ["gke-central-cluster"]
    pools = under(plan, "gke-central", NODE_POOL)
    assert sorted(r.inputs["name"] for r in pools) == ["cpu", "l4", "system"]
    assert {r.inputs["cluster"] for r in pools} == {"gke-central"}


def test_network_is_custom_mode_with_named_pod_and_service_ranges(plan: MockRun) -> None:
    network = named(plan, "gke-central-network")
    assert network.inputs["autoCreateSubnetworks"] is False
    subnet = named(plan, "gke-central-subnet")
    assert subnet.inputs["region"] == "us-central1"
    assert subnet.inputs["privateIpGoogleAccess"] is True
    ranges = {r["rangeName"] for r in subnet.inputs["secondaryIpRanges"]}
    assert ranges == {PODS_RANGE, SERVICES_RANGE} == {"pods", "services"}


def test_private_nodes_reach_the_internet_through_cloud_nat(plan: MockRun) -> None:
    nat = named(plan, "gke-central-nat")
    assert nat.inputs["router"] == named(plan, "gke-central-router").inputs["name"]
    assert nat.inputs["sourceSubnetworkIpRangesToNat"] == "ALL_SUBNETWORKS_ALL_IP_RANGES"
    assert nat.inputs["natIpAllocateOption"] == "AUTO_ONLY"


def test_nodes_run_as_a_least_privilege_service_account(plan: MockRun) -> None:
    account = named(plan, "gke-central-nodes")
    # mp-<cluster>-<first 6 hex of sha256("mp-prod/test/gke-central")>: project, stack and cluster
    assert account.inputs["accountId"] == "mp-gke-central-2df0b0"
    email = "gke-central-nodes@project.iam.gserviceaccount.com"
    members = under(plan, "gke-central", IAM_MEMBER)
    assert sorted(m.inputs["role"] for m in members) == sorted(NODE_ROLES)
    assert set(NODE_ROLES) == {
        "roles/logging.logWriter",
        "roles/monitoring.metricWriter",
        "roles/monitoring.viewer",
        "roles/stackdriver.resourceMetadata.writer",
        "roles/artifactregistry.reader",
    }
    assert {m.inputs["member"] for m in members} == {f"serviceAccount:{email}"}
    assert {m.inputs["project"] for m in members} == {"mp-prod"}
    for p in under(plan, "gke-central", NODE_POOL):
        assert p.inputs["nodeConfig"]["serviceAccount"] == email
        assert p.inputs["nodeConfig"]["oauthScopes"] == ["https://www.googleapis.com/auth/cloud-platform"]


def test_cluster_is_regional_private_with_workload_identity_on_the_regular_channel(plan: MockRun) -> None:
    cluster = named(plan, "gke-central-cluster").inputs
    assert cluster["location"] == "us-central1"
    assert cluster["project"] == "mp-prod"
    assert cluster["minMasterVersion"] == "1.36"
    assert cluster["releaseChannel"] == {"channel": "REGULAR"}
    assert cluster["workloadIdentityConfig"] == {"workloadPool": "mp-prod.svc.id.goog"}
    assert cluster["privateClusterConfig"] == {"enablePrivateNodes": True, "enablePrivateEndpoint": False}
    assert cluster["ipAllocationPolicy"] == {
        "clusterSecondaryRangeName": "pods",
        "servicesSecondaryRangeName": "services",
    }
    assert cluster["removeDefaultNodePool"] is True
    assert cluster["initialNodeCount"] == 1.0
    assert cluster["network"] == "gke-central-network-id"
    assert cluster["subnetwork"] == "gke-central-subnet-id"
    # GCP labels allow neither dots nor slashes.
    assert cluster["resourceLabels"] == {"modelplane_ai_region": "us-central1"}


def test_gpu_pool_gets_its_accelerator_with_gke_driver_installation_disabled(plan: MockRun) -> None:
    config = pool(plan, "gke-central", "l4").inputs["nodeConfig"]
    assert config["machineType"] == "g2-standard-8"
    assert config["guestAccelerators"] == [
        {
            "type": "nvidia-l4",
            "count": 1.0,
            "gpuDriverInstallationConfig": {"gpuDriverVersion": "INSTALLATION_DISABLED"},
        }
    ]


def test_gpu_pool_turns_off_gke_device_plugin_and_sets_the_gpu_taint_itself(plan: MockRun) -> None:
    config = pool(plan, "gke-central", "l4").inputs["nodeConfig"]
    assert config["labels"]["gke-no-default-nvidia-gpu-device-plugin"] == "true"
    assert config["labels"]["modelplane.ai/gpu"] == "nvidia-l4"
    assert config["labels"]["modelplane.ai/pool"] == "l4"
    # GKE adds this taint itself only in some cases, so the pool always sets it.
    assert config["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]


def test_gpu_pool_carries_the_dra_driver_label_gkes_autoscaler_reads(plan: MockRun) -> None:
    labels = pool(plan, "gke-central", "l4").inputs["nodeConfig"]["labels"]
    assert labels["cloud.google.com/gke-nvidia-gpu-dra-driver"] == "true"
    cpu_labels = pool(plan, "gke-central", "cpu").inputs["nodeConfig"]["labels"]
    assert "cloud.google.com/gke-nvidia-gpu-dra-driver" not in cpu_labels


def test_cpu_pool_gets_cpu_label_and_taint_in_gke_spelling_and_no_accelerator(plan: MockRun) -> None:
    config = pool(plan, "gke-central", "cpu").inputs["nodeConfig"]
    assert config["machineType"] == "c3-standard-8"
    assert config["diskSizeGb"] == 200.0
    assert config["labels"] == {"modelplane.ai/pool": "cpu", "modelplane.ai/cpu": "true"}
    assert config["taints"] == [{"key": "modelplane.ai/cpu", "value": "true", "effect": "NO_SCHEDULE"}]
    assert config["guestAccelerators"] == []


def test_system_pool_has_the_system_label_and_no_taints(plan: MockRun) -> None:
    config = pool(plan, "gke-central", "system").inputs["nodeConfig"]
    assert config["machineType"] == "e2-standard-4"
    assert config["labels"] == {"modelplane.ai/pool": "system"}
    assert config["taints"] == []


def test_every_pool_runs_cos_with_gke_metadata_and_shielded_nodes(plan: MockRun) -> None:
    for p in under(plan, "gke-central", NODE_POOL):
        config = p.inputs["nodeConfig"]
        assert config["imageType"] == "COS_CONTAINERD"
        assert config["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
        assert config["shieldedInstanceConfig"] == {"enableSecureBoot": True, "enableIntegrityMonitoring": True}


def test_autoscaled_pool_bounds_the_whole_pool_and_fixed_pool_sets_node_count(plan: MockRun) -> None:
    gpu = pool(plan, "gke-central", "l4").inputs
    assert gpu["autoscaling"]["totalMinNodeCount"] == 0.0
    assert gpu["autoscaling"]["totalMaxNodeCount"] == 4.0
    assert "minNodeCount" not in gpu["autoscaling"] and "maxNodeCount" not in gpu["autoscaling"]
    assert "nodeCount" not in gpu
    cpu = pool(plan, "gke-central", "cpu").inputs
    assert "autoscaling" not in cpu
    assert cpu["nodeCount"] == 2.0
    assert "initialNodeCount" not in cpu


def test_autoscaled_pool_starts_with_node_count_spread_over_its_zones(plan: MockRun) -> None:
    # nodeCount 1 over two zones: GKE counts initial nodes per zone, so one in each.
    assert pool(plan, "gke-central", "l4").inputs["initialNodeCount"] == 1.0
    # The system pool (one node, no zones) spans three zones: one node per zone.
    assert pool(plan, "gke-central", "system").inputs["initialNodeCount"] == 1.0


def test_pool_zones_become_node_locations(plan: MockRun) -> None:
    assert pool(plan, "gke-central", "l4").inputs["nodeLocations"] == ["us-central1-a", "us-central1-b"]
    assert "nodeLocations" not in pool(plan, "gke-central", "cpu").inputs


def test_each_cluster_uses_the_gcp_provider_of_its_project_and_region(plan: MockRun) -> None:
    providers = {r.name: r for r in of_type(plan, PROVIDER)}
    assert set(providers) == {"gcp-mp-prod-us-central1-provider", "gcp-mp-europe-europe-west4-provider"}
    assert providers["gcp-mp-prod-us-central1-provider"].inputs["project"] == "mp-prod"
    assert providers["gcp-mp-prod-us-central1-provider"].inputs["region"] == "us-central1"
    assert providers["gcp-mp-europe-europe-west4-provider"].inputs["project"] == "mp-europe"
    assert providers["gcp-mp-europe-europe-west4-provider"].inputs["region"] == "europe-west4"
    for cluster, provider_name in (
        ("gke-central", "gcp-mp-prod-us-central1-provider"),
        ("gke-europe", "gcp-mp-europe-europe-west4-provider"),
    ):
        provider = providers[provider_name]
        assert provider.parent is None
        children = [r for r in plan.resources if r.type.startswith("gcp:") and r.parent == cluster]
        assert children
        for r in children:
            assert r.provider.startswith(provider.urn + "::"), (r.name, r.provider)
    assert named(plan, "gke-europe-cluster").inputs["location"] == "europe-west4"


def test_kubeconfig_is_secret_and_authenticates_with_the_gke_auth_plugin(plan: MockRun) -> None:
    kubeconfig = named(plan, "gke-central-k8s").inputs["kubeconfig"]
    assert is_secret(kubeconfig)
    config = json.loads(kubeconfig["value"])
    (cluster,) = config["clusters"]
    assert cluster["cluster"]["server"] == "https://gke-central-cluster.gke.invalid"
    assert cluster["cluster"]["certificate-authority-data"]
    (user,) = config["users"]
    assert user["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"
    assert "token" not in user["user"]


def test_protect_covers_cluster_pools_and_network_and_keeps_deletion_protection(plan: MockRun) -> None:
    protected = {r.name for r in plan.resources if r.protect and r.parent == "gke-central"}
    assert_protected_but_providers(plan)
    assert protected >= {
        "gke-central-network",
        "gke-central-subnet",
        "gke-central-cluster",
        "gke-central-system",
        "gke-central-l4",
        "gke-central-cpu",
    }
    assert named(plan, "gke-central-cluster").inputs["deletionProtection"] is True


def test_nothing_is_protected_without_protect(unprotected: MockRun) -> None:
    assert not [r.name for r in unprotected.resources if r.protect]
    assert named(unprotected, "gke-central-cluster").inputs["deletionProtection"] is False


def test_long_names_are_shortened_within_gcp_limits_without_colliding() -> None:
    long = "a" * 63
    assert len(gcp_name(long, 40)) == 40
    assert len(gcp_name(long, 63, "router")) == 63
    assert gcp_name(long, 40) != gcp_name("a" * 62 + "b", 40)
    assert gcp_name("short", 40) == "short"
    account = node_account_id("p", "stack", "9" * 63)
    assert account == "mp-999999999999999999-88d7bb"
    assert 6 <= len(account) <= 30 and account[0].isalpha()


def test_schedulable_pools_count_gke_nodes_per_zone() -> None:
    raw = gke_fleet(protect=False)
    raw["clusters"][0]["nodePools"].append(
        {"name": "cpu-ab", "className": "cpu8", "nodeCount": 2, "zones": ["us-central1-a", "us-central1-b"]}
    )
    fleet = fleet_of(raw)
    nodes = {p["name"]: p["nodes"] for p in derive_cluster(fleet, fleet.clusters[0]).schedulable_pools()}
    # l4: total limits bound the pool at maxNodeCount; cpu: 2 per zone in the region's three zones;
    # cpu-ab: 2 in each of its two zones.
    assert nodes == {"l4": 4, "cpu": 6, "cpu-ab": 4}


def test_node_counts_elsewhere_count_the_whole_pool() -> None:
    raw = {
        "classes": [cpu_class("cpu", "AKS", {"vmSize": "Standard_D8s_v5"})],
        "clusters": [
            {
                "name": "aks",
                "source": "AKS",
                "aks": {"location": "eastus", "kubernetesVersion": "1.36"},
                "nodePools": [{"name": "cpu", "className": "cpu", "nodeCount": 2, "zones": ["1", "2"]}],
            }
        ],
    }
    fleet = fleet_of(raw)
    assert [p["nodes"] for p in derive_cluster(fleet, fleet.clusters[0]).schedulable_pools()] == [2]


def test_node_account_id_differs_between_stacks_declaring_the_same_cluster() -> None:
    # Two stacks, one project, one cluster name: each stack's `pulumi destroy` must own its account.
    fleet = gke_fleet(protect=False)
    ids = set()
    for stack in ("staging", "prod"):
        result = run_fleet(fleet, stack=stack)
        assert result.error is None, result.error
        ids.add(named(result, "gke-central-nodes").inputs["accountId"])
    assert ids == {"mp-gke-central-962266", "mp-gke-central-d0835a"}


def test_node_account_id_differs_between_projects_and_clusters() -> None:
    ids = {
        node_account_id("mp-prod", "prod", "gke-central"),
        node_account_id("mp-eu", "prod", "gke-central"),
        node_account_id("mp-prod", "prod", "gke-central-2"),
    }
    assert len(ids) == 3

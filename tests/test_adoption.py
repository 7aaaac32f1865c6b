"""Adopting a running cluster: the `adopt` checks, what the GKE, EKS and AKS components register for
an adopted cluster under mocks, the plan's `import` rows, and the hook that refuses a difference.

The engine's part (a preview that shows the imports, an `up` that creates nothing, a refused
mismatch) is proved in tests/engine/test_adoption.py.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from clouds import aks, gke
from components.adoption import differing_inputs, refusal
from infra.config.issues import ConfigError, ConfigIssue
from tests.conftest import (
    CLUSTER_BLOCKS,
    CPU_BLOCKS,
    GPU_BLOCKS,
    cpu_class,
    fleet_of,
    gke_fleet,
    gpu_class,
    of_type,
    run_fleet,
)
from tooling.changes import change_lines, compare, summary
from tooling.plan import plan_stack

CLUSTER_ID = "projects/my-project/locations/us-central1/clusters/inference-1"
GKE_TYPES_CREATED_ONLY = (
    "gcp:compute/network:Network",
    "gcp:compute/subnetwork:Subnetwork",
    "gcp:compute/router:Router",
    "gcp:compute/routerNat:RouterNat",
    "gcp:serviceaccount/account:Account",
    "gcp:projects/iAMMember:IAMMember",
)


def adopted_gke() -> dict[str, Any]:
    """`gke_fleet`'s cluster adopted, with both its pools."""
    raw = gke_fleet()
    cluster = raw["clusters"][0]
    cluster["gke"]["adopt"] = {"id": CLUSTER_ID}
    for pool in cluster["nodePools"]:
        pool["adopt"] = {"id": f"my-project/us-central1/inference-1/{pool['name']}"}
    return raw


def issues(raw: dict[str, Any]) -> list[ConfigIssue]:
    with pytest.raises(ConfigError) as err:
        fleet_of(raw)
    return list(err.value.issues)


def test_an_adopted_cluster_without_its_id_is_refused_with_the_id_shape() -> None:
    raw = adopted_gke()
    raw["clusters"][0]["gke"]["adopt"] = {}
    [issue] = issues(raw)
    assert issue.path == "clusters[0].gke.adopt.id"
    assert "needs the import ID" in issue.problem
    assert "projects/<project>/locations/<region>/clusters/<cluster name>" in issue.fix


def test_an_adopted_pool_without_its_id_is_refused() -> None:
    raw = adopted_gke()
    raw["clusters"][0]["nodePools"][1]["adopt"] = {}
    [issue] = issues(raw)
    assert issue.path == "clusters[0].nodePools[1].adopt.id"
    assert "<project>/<region>/<cluster name>/<pool name>" in issue.fix


def test_an_id_of_another_region_cluster_or_pool_is_refused() -> None:
    raw = adopted_gke()
    raw["clusters"][0]["nodePools"][0]["adopt"]["id"] = "my-project/us-east1/other/gpu"
    raw["clusters"][0]["nodePools"][1]["adopt"]["id"] = "my-project/us-central1/inference-1/cpu-2"
    found = {(i.path, i.problem) for i in issues(raw)}
    assert found == {
        (
            "clusters[0].nodePools[0].adopt.id",
            "the ID's region is 'us-east1', and the cluster's block says 'us-central1'",
        ),
        (
            "clusters[0].nodePools[0].adopt.id",
            "the ID names cluster 'other', and the adopted cluster is 'inference-1'",
        ),
        (
            "clusters[0].nodePools[1].adopt.id",
            "the ID names pool 'cpu-2', and the stack file names this pool 'cpu': the pool keeps its running name",
        ),
    }


def test_a_malformed_cluster_id_is_refused() -> None:
    raw = adopted_gke()
    raw["clusters"][0]["gke"]["adopt"]["id"] = "inference-1"
    [issue] = issues(raw)
    assert (issue.path, issue.problem) == ("clusters[0].gke.adopt.id", "'inference-1' is not a cluster import ID")


def test_an_adopted_pool_of_a_cluster_the_program_creates_is_refused() -> None:
    raw = adopted_gke()
    del raw["clusters"][0]["gke"]["adopt"]
    found = issues(raw)
    assert [i.path for i in found] == ["clusters[0].nodePools[0].adopt", "clusters[0].nodePools[1].adopt"]
    assert "adopt the cluster too" in found[0].fix


@pytest.mark.parametrize("source", ["Civo", "Vultr"])
def test_adopting_on_a_cloud_without_import_ids_is_refused(source: str) -> None:
    raw: dict[str, Any] = {
        "classes": [cpu_class("cpu", source, copy.deepcopy(CPU_BLOCKS[source]))],
        "clusters": [
            {
                "name": "prod",
                "source": source,
                source.lower(): {**copy.deepcopy(CLUSTER_BLOCKS[source]), "adopt": {"id": "prod"}},
                "nodePools": [{"name": "cpu", "className": "cpu"}],
            }
        ],
    }
    [issue] = issues(raw)
    assert issue.path == f"clusters[0].{source.lower()}.adopt"
    assert f"a running {source} cluster cannot be adopted yet" in issue.problem


def test_an_adopted_gke_cluster_registers_only_its_cluster_and_pools_each_with_its_import_id() -> None:
    result = run_fleet(adopted_gke(), preview=True)
    assert result.error is None, result.error
    gcp = [r for r in result.resources if r.type.startswith("gcp:")]
    assert {(r.type, r.name, r.import_id) for r in gcp} == {
        ("gcp:container/cluster:Cluster", "prod-cluster", CLUSTER_ID),
        ("gcp:container/nodePool:NodePool", "prod-gpu", "my-project/us-central1/inference-1/gpu"),
        ("gcp:container/nodePool:NodePool", "prod-cpu", "my-project/us-central1/inference-1/cpu"),
    }
    for token in GKE_TYPES_CREATED_ONLY:
        assert of_type(result, token) == [], token
    [cluster] = of_type(result, "gcp:container/cluster:Cluster")
    # The running cluster's name, from its ID, not the one the program would give a new cluster.
    assert cluster.inputs["name"] == "inference-1"
    assert "network" not in cluster.inputs and "subnetwork" not in cluster.inputs
    for pool in of_type(result, "gcp:container/nodePool:NodePool"):
        assert pool.inputs["cluster"] == "inference-1"
        assert "serviceAccount" not in pool.inputs["nodeConfig"]


def test_a_created_pool_in_an_adopted_cluster_gets_the_nodes_own_identity() -> None:
    raw = adopted_gke()
    del raw["clusters"][0]["nodePools"][1]["adopt"]
    result = run_fleet(raw)
    assert result.error is None, result.error
    assert len(of_type(result, "gcp:serviceaccount/account:Account")) == 1
    assert of_type(result, "gcp:compute/network:Network") == []
    cpu = next(r for r in of_type(result, "gcp:container/nodePool:NodePool") if r.name == "prod-cpu")
    assert cpu.import_id == "" and cpu.inputs["nodeConfig"]["serviceAccount"]


def test_the_plan_shows_an_import_for_the_cluster_and_each_adopted_pool(tmp_path: Any) -> None:
    import yaml

    raw = adopted_gke()
    path = tmp_path / "Pulumi.adopted.yaml"
    path.write_text(yaml.safe_dump({"config": {f"modelplane:{k}": v for k, v in raw.items()}}))
    doc = plan_stack(path)
    assert doc["ok"], doc["errors"]
    [cluster] = doc["clusters"]
    assert cluster["import"] == CLUSTER_ID
    assert {p["name"]: p.get("import") for p in cluster["pools"]} == {
        "gpu": "my-project/us-central1/inference-1/gpu",
        "cpu": "my-project/us-central1/inference-1/cpu",
    }
    imports = {r["name"]: r.get("import") for r in doc["resources"] if r["type"].startswith("gcp:container")}
    assert imports == {
        "prod-cluster": CLUSTER_ID,
        "prod-gpu": "my-project/us-central1/inference-1/gpu",
        "prod-cpu": "my-project/us-central1/inference-1/cpu",
    }


def test_a_plan_against_an_earlier_one_reports_each_adopted_resource_as_an_import(tmp_path: Any) -> None:
    import yaml

    path = tmp_path / "Pulumi.adopted.yaml"
    path.write_text(yaml.safe_dump({"config": {f"modelplane:{k}": v for k, v in adopted_gke().items()}}))
    doc = plan_stack(path)
    changes = compare({"resources": []}, doc)
    imported = sorted(c["name"] for c in changes if c["op"] == "import")
    assert imported == ["prod-cluster", "prod-cpu", "prod-gpu"]
    assert not [c for c in changes if c["op"] == "create" and c["type"].startswith("gcp:container")]
    assert summary(changes).split(", ")[1] == "3 to import"
    assert "= import prod-cluster (gcp:container/cluster:Cluster)" in change_lines(changes)


def test_the_hook_refuses_naming_the_inputs_that_differ_and_the_way_out() -> None:
    import pulumi

    hook = refusal("pool 'cpu' of cluster 'prod'", "p/r/c/cpu")
    args = pulumi.ResourceHookArgs(
        "urn",
        "id",
        "prod-cpu",
        "gcp:container/nodePool:NodePool",
        new_inputs={"nodeCount": 2, "name": "cpu", "__defaults": []},
        old_inputs={"nodeCount": 3, "name": "cpu"},
    )
    with pytest.raises(RuntimeError) as err:
        hook(args)
    message = str(err.value)
    assert "pool 'cpu' of cluster 'prod' adopts the running resource p/r/c/cpu" in message
    assert "differs from the stack file in nodeCount;" in message
    assert "pulumi preview --diff" in message and "nothing was changed" in message


def test_engine_bookkeeping_keys_are_no_difference() -> None:
    assert differing_inputs({"a": 1, "__meta": "x"}, {"a": 1, "__defaults": []}) == []
    assert differing_inputs({"a": 1}, {"a": 2, "b": 3}) == ["a", "b"]


def test_the_gke_record_declares_the_import_forms_its_provider_documents() -> None:
    ids = gke.CLOUD.adoption
    assert ids is not None
    assert ids.cluster.fullmatch(CLUSTER_ID)
    assert ids.pool.fullmatch("my-project/us-central1/inference-1/gpu")


def fleet_on(source: str, cluster_id: str, pool_ids: dict[str, str]) -> dict[str, Any]:
    """One `source` cluster `prod` with a GPU pool `gpu` and a CPU pool `cpu`, adopted by `cluster_id`;
    each pool named in `pool_ids` adopted by its ID."""
    pools: list[dict[str, Any]] = [{"name": "gpu", "className": "gpu"}, {"name": "cpu", "className": "cpu"}]
    for pool in pools:
        if pool["name"] in pool_ids:
            pool["adopt"] = {"id": pool_ids[pool["name"]]}
    return {
        "classes": [
            gpu_class("gpu", source, copy.deepcopy(GPU_BLOCKS[source])),
            cpu_class("cpu", source, copy.deepcopy(CPU_BLOCKS[source])),
        ],
        "clusters": [
            {
                "name": "prod",
                "source": source,
                source.lower(): {**copy.deepcopy(CLUSTER_BLOCKS[source]), "adopt": {"id": cluster_id}},
                "nodePools": pools,
            }
        ],
    }


EKS_POOLS = {"gpu": "inference-1:gpu", "cpu": "inference-1:cpu"}
# The EKS resources the program creates around a cluster it builds, and never for an adopted one.
EKS_TYPES_CREATED_ONLY = (
    "aws:ec2/vpc:Vpc",
    "aws:ec2/subnet:Subnet",
    "aws:ec2/natGateway:NatGateway",
    "aws:ec2/eip:Eip",
    "aws:ec2/internetGateway:InternetGateway",
    "aws:ec2/routeTable:RouteTable",
    "aws:iam/role:Role",
    "aws:iam/policy:Policy",
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
    "aws:eks/addon:Addon",
    "aws:eks/podIdentityAssociation:PodIdentityAssociation",
    "aws:ec2/launchTemplate:LaunchTemplate",
)


def test_an_adopted_eks_cluster_registers_only_its_cluster_and_node_groups_each_with_its_import_id() -> None:
    result = run_fleet(fleet_on("EKS", "inference-1", EKS_POOLS), preview=True)
    assert result.error is None, result.error
    aws = [r for r in result.resources if r.type.startswith("aws:") and r.type != "pulumi:providers:aws"]
    assert {(r.type, r.name, r.import_id) for r in aws} == {
        ("aws:eks/cluster:Cluster", "prod-cluster", "inference-1"),
        ("aws:eks/nodeGroup:NodeGroup", "prod-gpu", "inference-1:gpu"),
        ("aws:eks/nodeGroup:NodeGroup", "prod-cpu", "inference-1:cpu"),
    }
    for token in EKS_TYPES_CREATED_ONLY:
        assert of_type(result, token) == [], token
    assert not [r for r in result.resources if r.name.endswith("cluster-autoscaler")]
    [cluster] = of_type(result, "aws:eks/cluster:Cluster")
    # The running cluster's name, role and subnets, as read from it.
    assert cluster.inputs["name"] == "inference-1"
    assert cluster.inputs["roleArn"] == "arn:aws:iam::000000000000:role/inference-1-cluster"
    assert cluster.inputs["vpcConfig"]["subnetIds"] == ["subnet-running-a", "subnet-running-b"]
    for group in of_type(result, "aws:eks/nodeGroup:NodeGroup"):
        assert group.inputs["nodeGroupName"] == group.name.removeprefix("prod-")
        assert group.inputs["nodeRoleArn"] == "arn:aws:iam::000000000000:role/inference-1-nodes"
        assert not {"launchTemplate", "nodeGroupNamePrefix"} & set(group.inputs)


def test_a_created_pool_in_an_adopted_eks_cluster_runs_as_an_adopted_groups_role_in_its_subnets() -> None:
    raw = fleet_on("EKS", "inference-1", {"gpu": EKS_POOLS["gpu"]})
    result = run_fleet(raw)
    assert result.error is None, result.error
    assert of_type(result, "aws:iam/role:Role") == [] and of_type(result, "aws:ec2/vpc:Vpc") == []
    cpu = next(r for r in of_type(result, "aws:eks/nodeGroup:NodeGroup") if r.name == "prod-cpu")
    assert cpu.import_id == "" and "nodeGroupNamePrefix" in cpu.inputs
    [template] = of_type(result, "aws:ec2/launchTemplate:LaunchTemplate")
    assert template.name == "prod-cpu-template"


def test_an_adopted_eks_cluster_without_adopted_pools_gets_only_a_node_role_for_its_new_pools() -> None:
    result = run_fleet(fleet_on("EKS", "inference-1", {}))
    assert result.error is None, result.error
    assert [r.name for r in of_type(result, "aws:iam/role:Role")] == ["prod-node-role"]
    assert of_type(result, "aws:ec2/vpc:Vpc") == [] and of_type(result, "aws:eks/addon:Addon") == []


def test_a_created_pool_in_zones_of_an_adopted_eks_cluster_is_refused_at_its_path() -> None:
    raw = fleet_on("EKS", "inference-1", {"gpu": EKS_POOLS["gpu"]})
    raw["clusters"][0]["nodePools"][0]["zones"] = ["us-east-1a"]
    raw["clusters"][0]["nodePools"][1]["zones"] = ["us-east-1a"]
    [issue] = issues(raw)
    assert issue.path == "clusters[0].nodePools[1]"
    assert "pool 'cpu' is created in adopted cluster 'prod' and names zones" in issue.problem
    assert "remove `zones`" in issue.fix


def test_eks_ids_of_another_shape_or_cluster_or_pool_name_are_refused() -> None:
    raw = fleet_on("EKS", "inference-1", {"gpu": "other:gpu", "cpu": "inference-1:cpu-2"})
    found = {(i.path, i.problem) for i in issues(raw)}
    assert found == {
        ("clusters[0].nodePools[0].adopt.id", "the ID names cluster 'other', and the adopted cluster is 'inference-1'"),
        (
            "clusters[0].nodePools[1].adopt.id",
            "the ID names pool 'cpu-2', and the stack file names this pool 'cpu': the pool keeps its running name",
        ),
    }
    raw = fleet_on("EKS", "arn:aws:eks:us-east-1:1:cluster/inference-1", {"gpu": "inference-1/gpu"})
    found = {(i.path, i.problem) for i in issues(raw)}
    assert found == {
        ("clusters[0].eks.adopt.id", "'arn:aws:eks:us-east-1:1:cluster/inference-1' is not a cluster import ID"),
        ("clusters[0].nodePools[0].adopt.id", "'inference-1/gpu' is not a pool import ID"),
    }
    raw["clusters"][0]["eks"]["adopt"] = {}
    by_path = {i.path: i for i in issues(raw)}
    assert "write it as <cluster name>" in by_path["clusters[0].eks.adopt.id"].fix


AKS_CLUSTER = "/subscriptions/s1/resourceGroups/ml/providers/Microsoft.ContainerService/managedClusters/inference-1"
AKS_POOLS = {"gpu": f"{AKS_CLUSTER}/agentPools/gpu", "cpu": f"{AKS_CLUSTER}/agentPools/cpu"}


def test_an_adopted_aks_cluster_registers_no_resource_group_or_network_and_keeps_its_system_pool() -> None:
    result = run_fleet(fleet_on("AKS", AKS_CLUSTER, AKS_POOLS), preview=True)
    assert result.error is None, result.error
    azure = [r for r in result.resources if r.type.startswith("azure-native:") and "providers" not in r.type]
    assert {(r.type, r.name, r.import_id) for r in azure} == {
        ("azure-native:containerservice:ManagedCluster", "prod-cluster", AKS_CLUSTER),
        ("azure-native:containerservice:AgentPool", "prod-gpu", AKS_POOLS["gpu"]),
        ("azure-native:containerservice:AgentPool", "prod-cpu", AKS_POOLS["cpu"]),
    }
    [cluster] = of_type(result, "azure-native:containerservice:ManagedCluster")
    assert (cluster.inputs["resourceGroupName"], cluster.inputs["resourceName"]) == ("ml", "inference-1")
    assert "agentPoolProfiles" not in cluster.inputs and "networkProfile" not in cluster.inputs
    for pool in of_type(result, "azure-native:containerservice:AgentPool"):
        assert pool.inputs["resourceGroupName"] == "ml" and "vnetSubnetId" not in pool.inputs


def test_a_created_pool_in_an_adopted_aks_cluster_is_created_in_the_clusters_resource_group() -> None:
    result = run_fleet(fleet_on("AKS", AKS_CLUSTER, {"gpu": AKS_POOLS["gpu"]}))
    assert result.error is None, result.error
    assert of_type(result, "azure-native:resources:ResourceGroup") == []
    cpu = next(r for r in of_type(result, "azure-native:containerservice:AgentPool") if r.name == "prod-cpu")
    assert cpu.import_id == "" and cpu.inputs["resourceGroupName"] == "ml"


def test_an_aks_id_with_its_fixed_segments_in_lowercase_is_taken() -> None:
    ids = aks.CLOUD.adoption
    assert ids is not None
    printed = AKS_CLUSTER.replace("resourceGroups", "resourcegroups")
    assert ids.cluster.fullmatch(printed)
    assert ids.pool.fullmatch(f"{printed}/agentPools/gpu")
    fleet_of(fleet_on("AKS", printed, {"gpu": AKS_POOLS["gpu"]}))


def test_aks_ids_of_another_resource_group_subscription_or_shape_are_refused() -> None:
    other_group = AKS_POOLS["gpu"].replace("/resourceGroups/ml/", "/resourceGroups/ml2/")
    other_sub = AKS_POOLS["cpu"].replace("/subscriptions/s1/", "/subscriptions/s2/")
    found = {(i.path, i.problem) for i in issues(fleet_on("AKS", AKS_CLUSTER, {"gpu": other_group, "cpu": other_sub}))}
    assert found == {
        ("clusters[0].nodePools[0].adopt.id", "the ID names resource group 'ml2', and the adopted cluster's is 'ml'"),
        ("clusters[0].nodePools[1].adopt.id", "the ID names subscription 's2', and the adopted cluster's is 's1'"),
    }
    [issue] = issues(fleet_on("AKS", "ml/inference-1", {}))
    assert (issue.path, issue.problem) == ("clusters[0].aks.adopt.id", "'ml/inference-1' is not a cluster import ID")
    assert "/providers/Microsoft.ContainerService/managedClusters/<cluster name>" in issue.fix

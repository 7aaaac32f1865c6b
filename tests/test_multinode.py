"""Replicas of several nodes (`nodes`): the rules that refuse a group that could never run.

Parallelism across the group (`check_serving`), whole nodes per pod (`check_multinode`), a pool
holding every node of every group and a group kept in one zone (`infra.checks.schedulable`).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from infra.checks.guard import guard
from infra.checks.services import check_serving
from infra.config.issues import ConfigError, ConfigIssue, located
from infra.config.model import Fleet
from infra.config.stackfile import located_checked
from tests.conftest import fleet_of, gpu_class

FILE = "Pulumi.test.yaml"
IMAGE = "vllm/vllm-openai:v0.23.0"
P5 = {"instanceType": "p5.48xlarge", "accelerator": {"type": "nvidia-h100-80gb", "count": 8}}


def group(name: str = "big", nodes: int = 2, gpus: int = 8, **fields: Any) -> dict[str, Any]:
    """A deployment of `nodes` pods per replica, each claiming `gpus` GPUs, parallel over all of them."""
    dep: dict[str, Any] = {
        "name": name,
        "cluster": "prod",
        "pool": "h100",
        "image": IMAGE,
        "memory": "1000Gi",
        "nodes": nodes,
        "args": ["--tensor-parallel-size", str(gpus), "--pipeline-parallel-size", str(nodes)],
        "devices": [{"name": "gpu", "count": gpus}],
    }
    dep.update(fields)
    return dep


def eks(*deployments: dict[str, Any], **pool: Any) -> dict[str, Any]:
    """An EKS cluster `prod` with a pool `h100` of p5.48xlarge nodes (8 H100 each), in one zone."""
    return {
        "classes": [gpu_class("h100", "EKS", P5, count=8)],
        "clusters": [
            {
                "name": "prod",
                "source": "EKS",
                "eks": {"region": "us-east-1", "kubernetesVersion": "1.36"},
                "nodePools": [{"name": "h100", "className": "h100", "nodeCount": 2, "zones": ["us-east-1a"], **pool}],
            }
        ],
        "deployments": list(deployments),
    }


def issues(raw: dict[str, Any]) -> dict[str, ConfigIssue]:
    """Every issue the run stops at (config rules, then the pools' facts), by path."""
    try:
        fleet = fleet_of(copy.deepcopy(raw))
    except ConfigError as err:
        return {i.path: i for i in err.issues}
    return {i.path: i for i in located_checked(guard(fleet), FILE).issues}


def test_a_two_node_group_with_parallelism_over_both_nodes_is_accepted() -> None:
    assert issues(eks(group())) == {}


def test_parallelism_of_one_node_on_a_two_node_replica_is_refused_with_the_split_across_nodes() -> None:
    issue = issues(eks(group(args=["--tensor-parallel-size", "8"])))["deployments[0].args[0]"]
    assert issue.problem == (
        "args ask for 8 GPUs (tensor 8 x pipeline 1 x data 1 parallel) but one replica claims 16 GPU devices "
        "(2 nodes x 8)"
    )
    assert issue.fix == "set --tensor-parallel-size 8 --pipeline-parallel-size 2, or span 1 node (deployments[0].nodes)"


def test_the_fix_for_parallelism_across_nodes_passes_the_next_check() -> None:
    raw = eks(group(args=["-tp", "16", "-pp", "2"]))
    fix = issues(raw)["deployments[0].args[0]"].fix
    assert fix.startswith("set --tensor-parallel-size 8 --pipeline-parallel-size 2,")
    raw["deployments"][0]["args"] = ["--tensor-parallel-size", "8", "--pipeline-parallel-size", "2"]
    assert issues(raw) == {}


def test_weights_are_judged_against_the_gpus_of_every_node_of_the_replica() -> None:
    # 405B in 16-bit is about 754 GiB: more than one p5 (8 x 80 x 0.9 = 576 GiB), less than two.
    model = ["--model", "meta-llama/Llama-3.1-405B-Instruct"]
    one = group(nodes=1, args=[*model, "--tensor-parallel-size", "8"])
    assert "deployments[0].args[0]" in issues(eks(one))
    two = group(args=[*model, "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2"])
    assert issues(eks(two)) == {}


def test_a_pod_of_a_group_claiming_part_of_a_node_is_refused_at_its_count() -> None:
    issue = issues(eks(group(gpus=4, args=["-tp", "4", "-pp", "2"])))["deployments[0].devices[0].count"]
    assert issue.problem == (
        "a replica spanning 2 nodes runs one pod per node, and each pod claims 4 of the 8 'gpu' devices of a "
        "node of pool 'h100'"
    )
    assert issue.fix.startswith("claim the whole node: count: 8")


def test_a_one_node_deployment_may_claim_part_of_a_node() -> None:
    assert issues(eks(group(nodes=1, gpus=4, args=["-tp", "4"]))) == {}


def test_a_pool_too_small_for_replicas_times_nodes_is_refused_at_the_replicas() -> None:
    issue = issues(eks(group(replicas=2)))["deployments[0].replicas"]
    assert issue.problem == (
        "deployment 'big' claims 32 'gpu' devices on pool 'h100' (cluster 'prod') (2 replicas x 2 nodes x 8), "
        "more than the 16 the pool can hold: at most 2 nodes, 8 per node"
    )
    assert issue.fix == (
        "lower replicas to at most 1, or let the pool have at least 4 nodes (clusters[0].nodePools[0].nodeCount: 4)"
    )


def test_a_pool_too_small_counts_the_other_deployments_groups() -> None:
    raw = eks(group("first", nodes=2), group("second", nodes=2), nodeCount=3)
    issue = issues(raw)["deployments[1].replicas"]
    assert "(its 1 replica x 2 nodes x 8, with 'first': 1 x 2 nodes x 8)" in issue.problem
    assert issue.fix.startswith(
        "move it to another pool or lower the others' replicas, or let the pool have at least 4"
    )


def test_a_group_larger_than_the_whole_pool_is_refused_on_civo_and_vultr_too() -> None:
    for source, block in [
        ("Civo", {"size": "an.g1.l40s.kube.x1", "accelerator": {"type": "nvidia-l40s", "count": 1}}),
        ("Vultr", {"plan": "vcg-l40s-16c-180g-48vram", "accelerator": {"type": "nvidia-l40s", "count": 1}}),
    ]:
        raw = eks(group(nodes=3, gpus=1, args=["-tp", "1", "-pp", "3"], memory="60Gi"))
        raw["classes"] = [gpu_class("h100", source, block)]
        cluster = raw["clusters"][0]
        cluster.pop("eks")
        cluster["source"] = source
        cluster[source.lower()] = (
            {"region": "LON1", "kubernetesVersion": "1.36.0-k3s1"}
            if source == "Civo"
            else {"region": "ewr", "kubernetesVersion": "v1.36.1+3"}
        )
        cluster["nodePools"][0].pop("zones")
        found = issues(raw)
        assert "deployments[0].replicas" in found, (source, found)
        assert "at most 2 nodes, 1 per node" in found["deployments[0].replicas"].problem


@pytest.mark.parametrize(
    ("zones", "spread", "one"),
    [
        (["us-east-1a", "us-east-1b"], "zones us-east-1a, us-east-1b", "[us-east-1a]"),
    ],
)
def test_a_group_on_a_pool_over_several_zones_is_refused_at_its_nodes(zones: list[str], spread: str, one: str) -> None:
    issue = issues(eks(group(), zones=zones))["deployments[0].nodes"]
    assert issue.problem == (
        f"deployment 'big' spans 2 nodes per replica on pool 'h100' (cluster 'prod'), which spreads its nodes over "
        f"{spread}: a group could be split between zones"
    )
    assert issue.fix.startswith(f"keep the pool in one zone (clusters[0].nodePools[0].zones: {one})")


def test_a_group_on_a_gke_pool_of_the_default_three_zones_is_refused() -> None:
    a3 = {"machineType": "a3-highgpu-8g", "accelerator": {"type": "nvidia-h100-80gb", "count": 8}}
    raw = eks(group(memory="1000Gi"))
    raw["classes"] = [gpu_class("h100", "GKE", a3, count=8)]
    cluster = raw["clusters"][0]
    cluster.pop("eks")
    cluster.update(source="GKE", gke={"project": "my-project", "region": "us-central1", "kubernetesVersion": "1.36"})
    cluster["nodePools"][0].pop("zones")
    issue = issues(raw)["deployments[0].nodes"]
    assert "over 3 zones (none named)" in issue.problem
    cluster["nodePools"][0]["zones"] = ["us-central1-a"]
    assert "deployments[0].nodes" not in issues(raw)


def test_a_group_on_an_eks_pool_without_zones_is_refused_unless_its_efa_placement_group_holds_it() -> None:
    # A node group without zones takes the VPC's three private subnets (clouds/eks/component.py), so
    # its nodes spread over three zones; an EFA pool is one cluster placement group, in one zone.
    raw = eks(group())
    raw["clusters"][0]["nodePools"][0].pop("zones")
    issue = issues(raw)["deployments[0].nodes"]
    assert "over 3 zones (none named)" in issue.problem
    assert issue.fix.startswith(
        "keep the pool in one zone (clusters[0].nodePools[0].zones: [<one zone of the region>])"
    )
    raw["classes"][0]["devices"].append(
        {"name": "efa", "driver": "dra.net", "deviceClassName": "efa.networking.k8s.aws", "count": 32}
    )
    raw["deployments"][0]["devices"] = [{"name": "gpu", "count": 8}, {"name": "efa", "count": 32}]
    assert "deployments[0].nodes" not in issues(raw)


def test_a_one_node_deployment_may_use_a_pool_over_several_zones() -> None:
    assert issues(eks(group(nodes=1, args=["-tp", "8"]), zones=["us-east-1a", "us-east-1b"])) == {}


def test_a_claim_cache_cannot_serve_the_pods_of_a_group() -> None:
    raw = eks(group(cache={"volume": "PersistentVolumeClaim", "size": "1500Gi", "storageClassName": "gp3"}))
    found = located(check_serving(Fleet.model_validate(copy.deepcopy(raw))), FILE)
    assert [(i.path, i.problem) for i in found] == [
        (
            "deployments[0].cache.volume",
            "a PersistentVolumeClaim cache is ReadWriteOnce: one node mounts it, not 2 pods (1 x 2 nodes)",
        )
    ]


def test_nodes_below_one_is_refused() -> None:
    with pytest.raises(Exception, match="nodes"):
        fleet_of(eks(group(nodes=0)))

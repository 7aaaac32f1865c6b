"""Replicas of several nodes in the plan: each group in the tree and the JSON, the placement audit's
gangs, and the cost and budget of every node of every group.

The plans are of the committed 671B stacks, as committed or with one key changed.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.facts import derive_cluster
from infra.serving.pods import pod_placement
from tests.conftest import fleet_of
from tooling.placement import audit
from tooling.plan import plan_stack
from tooling.render import groups_text

ROOT = Path(__file__).resolve().parent.parent
NEBIUS = ROOT / "stacks" / "Pulumi.nebius-671b.yaml"
EKS = ROOT / "stacks" / "Pulumi.eks-671b.yaml"
H100 = {"deviceClassName": "gpu.nvidia.com", "count": 8}


def stack_with(tmp_path: Path, base: Path, name: str, **changes: Any) -> Path:
    """`base` as `Pulumi.<name>.yaml` with `changes` applied: `deployment` and `pool` update the first
    deployment and pool, `budget` sets `modelplane:budget`."""
    doc = yaml.safe_load(base.read_text())
    config = doc["config"]
    config["modelplane:deployments"][0].update(changes.get("deployment", {}))
    for key in changes.get("drop", ()):
        config["modelplane:deployments"][0].pop(key)
    config["modelplane:clusters"][0]["nodePools"][0].update(changes.get("pool", {}))
    if "budget" in changes:
        config["modelplane:budget"] = {"monthlyUsd": changes["budget"]}
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def only_deployment(doc: dict[str, Any]) -> dict[str, Any]:
    assert doc["ok"], (doc["errors"], doc["violations"])
    [dep] = doc["deployments"]
    return dep


def test_the_plan_shows_each_group_its_nodes_pods_devices_and_fabric() -> None:
    dep = only_deployment(plan_stack(NEBIUS))
    assert dep["groups"] == {
        "count": 1,
        "minCount": 1,
        "nodes": 2,
        "podsPerGroup": 2,
        "devicesPerPod": [{"name": "gpu", **H100}],
        "devicesPerGroup": {"gpu.nvidia.com": 16},
        "fabric": "InfiniBand fabric-3",
    }
    # The pod's keys read the LeaderWorkerSet's pods, as they read a Deployment's.
    assert dep["replicas"] == 1
    assert dep["nodeSelector"] == {"modelplane.ai/pool": "h100"}
    assert dep["resources"]["limits"] == {"memory": "512Gi"}
    assert groups_text(dep["groups"]) == (
        "groups: 1 x 2 nodes, 2 pods each claiming 8 gpu.nvidia.com (16 gpu.nvidia.com per group); "
        "fabric InfiniBand fabric-3"
    )


def test_every_device_a_pod_of_a_group_claims_is_shown_with_the_claimed_fabric() -> None:
    groups = only_deployment(plan_stack(EKS))["groups"]
    assert groups["devicesPerPod"] == [
        {"name": "gpu", **H100},
        {"name": "efa", "deviceClassName": "efa.networking.k8s.aws", "count": 32},
    ]
    assert groups["devicesPerGroup"] == {"gpu.nvidia.com": 16, "efa.networking.k8s.aws": 64}
    assert groups["fabric"] == "dra.net x 32"


def test_an_autoscaled_group_counts_its_most_groups_and_the_pool_at_its_largest(tmp_path: Path) -> None:
    scaled = {"minReplicas": 1, "maxReplicas": 2, "metric": "RequestsWaiting", "target": 4}
    path = stack_with(
        tmp_path,
        NEBIUS,
        "scaled",
        deployment={"autoscaling": scaled},
        pool={"nodeCount": 2, "minNodeCount": 2, "maxNodeCount": 4},
    )
    doc = plan_stack(path)
    dep = only_deployment(doc)
    assert (dep["groups"]["count"], dep["groups"]["minCount"], dep["groups"]["nodes"]) == (2, 1, 2)
    assert groups_text(dep["groups"]).startswith("groups: 1..2 x 2 nodes, 2 pods each claiming")
    [gangs] = [d["gangs"] for d in doc["placement"][0]["deployments"]]
    assert gangs == {"count": 2, "nodes": 2, "wholeNodes": 4}
    [pool] = [p for p in doc["clusters"][0]["cost"]["pools"] if p["name"] == "h100"]
    assert pool["hourlyAtMax"] == pytest.approx(4 * pool["unitHourly"])


def test_a_one_node_deployment_shows_its_pods_without_groups() -> None:
    groups = {
        "count": 2,
        "minCount": 2,
        "nodes": 1,
        "podsPerGroup": 1,
        "devicesPerPod": [{"name": "cpu", "deviceClassName": "dra.cpu", "count": 1, "capacity": {"dra.cpu/cpu": "6"}}],
        "devicesPerGroup": {"dra.cpu": 1},
        "fabric": None,
    }
    assert groups_text(groups) == "replicas: 2 pods, each claiming 1 dra.cpu (dra.cpu/cpu 6)"


def test_two_groups_of_two_nodes_are_priced_at_the_four_nodes_of_their_pool(tmp_path: Path) -> None:
    doc = plan_stack(stack_with(tmp_path, EKS, "two-groups", deployment={"replicas": 2}, pool={"nodeCount": 4}))
    dep = only_deployment(doc)
    assert (dep["replicas"], dep["groups"]["count"], dep["groups"]["nodes"]) == (2, 2, 2)
    [pool] = [p for p in doc["clusters"][0]["cost"]["pools"] if p["name"] == "h100"]
    assert pool["hourly"] == pytest.approx(4 * pool["unitHourly"])
    [gangs] = [d["gangs"] for d in doc["placement"][0]["deployments"]]
    assert gangs == {"count": 2, "nodes": 2, "wholeNodes": 4}


def test_the_budget_counts_every_node_of_every_group(tmp_path: Path) -> None:
    two_groups: dict[str, Any] = {"deployment": {"replicas": 2}, "pool": {"nodeCount": 4}}
    priced = plan_stack(stack_with(tmp_path, EKS, "priced", **two_groups))
    [pool] = [p for p in priced["clusters"][0]["cost"]["pools"] if p["name"] == "h100"]
    # A budget that holds three nodes of the pool and the rest of the stack, but not the fourth node.
    under = priced["cost"]["monthlyAtMax"] - pool["monthly"] / 4
    over = plan_stack(stack_with(tmp_path, EKS, "over", budget=round(under), **two_groups))
    assert over["cost"]["budget"] == {"monthly": round(under), "overBudget": True}
    assert [v["policy"] for v in over["violations"] if v["policy"] == "cost-over-budget"] == ["cost-over-budget"]
    enough = plan_stack(
        stack_with(tmp_path, EKS, "enough", budget=round(priced["cost"]["monthlyAtMax"]) + 1, **two_groups)
    )
    assert enough["cost"]["budget"]["overBudget"] is False


def test_a_pool_one_node_short_of_two_groups_is_refused_and_its_fix_plans_clean(tmp_path: Path) -> None:
    short = plan_stack(stack_with(tmp_path, EKS, "short", deployment={"replicas": 2}, pool={"nodeCount": 3}))
    assert not short["ok"]
    [error] = short["errors"]
    assert error["path"] == "deployments[0].replicas"
    assert "(2 replicas x 2 nodes x 8), more than the 24 the pool can hold: at most 3 nodes" in error["message"]
    assert "lower replicas to at most 1, or let the pool have at least 4 nodes" in error["message"]
    assert "(clusters[0].nodePools[0].nodeCount: 4)" in error["message"]
    fixed = plan_stack(stack_with(tmp_path, EKS, "fixed", deployment={"replicas": 2}, pool={"nodeCount": 4}))
    assert fixed["ok"], (fixed["errors"], fixed["violations"])
    lowered = plan_stack(stack_with(tmp_path, EKS, "lowered", deployment={"replicas": 1}, pool={"nodeCount": 3}))
    assert lowered["ok"], (lowered["errors"], lowered["violations"])


# --------------------------------------------------------------------------------------------
# The placement audit counts gangs


def eks_group(nodes: int, pool_nodes: int, source: str = "EKS") -> dict[str, Any]:
    """A cluster `c` with a pool `h100` of `pool_nodes` p5 nodes and a deployment of `nodes` per replica."""
    doc = yaml.safe_load(EKS.read_text())["config"]
    raw = {k.removeprefix("modelplane:"): v for k, v in doc.items() if k != "modelplane:services"}
    raw["clusters"][0]["nodePools"][0]["nodeCount"] = pool_nodes
    raw["deployments"][0]["nodes"] = nodes
    # The audit is about gangs: each node keeps its own cache here, whatever the stack shares.
    raw["deployments"][0]["cache"] = {"volume": "NodeLocal"}
    if source == "Existing":
        raw["classes"][0].pop("provisioning")
        cluster = raw["clusters"][0]
        cluster.pop("eks")
        cluster.update(source="Existing", existing={"kubernetesVersion": "1.36"})
    return raw


def test_the_audit_places_a_group_on_a_pool_that_holds_it_whole() -> None:
    fleet = fleet_of(eks_group(nodes=2, pool_nodes=2))
    facts = derive_cluster(fleet, fleet.clusters[0])
    report = audit(facts, {}, [pod_placement(fleet.deployments[0], facts)])
    assert report.ok
    assert report.as_json()["deployments"] == [
        {"name": "deepseek-r1", "pool": "h100", "pools": ["h100"], "gangs": {"count": 1, "nodes": 2, "wholeNodes": 2}}
    ]


def test_the_audit_lands_a_group_nowhere_on_a_pool_with_fewer_nodes_though_each_pod_would_fit() -> None:
    fleet = fleet_of(eks_group(nodes=2, pool_nodes=2))
    facts = derive_cluster(fleet, fleet.clusters[0])
    group = pod_placement(fleet.deployments[0], facts)
    # A gang of three on the two-node pool: no pod of it starts, though one pod alone fits a node.
    three = dataclasses.replace(group, group_nodes=3)
    report = audit(facts, {}, [three])
    assert [v.as_json() for v in report.violations] == [
        {
            "check": "deployment-placement",
            "subject": "deployment/deepseek-r1",
            "message": "deployment 'deepseek-r1' targets pool 'h100' but can land on no pool; a replica is a gang "
            "of 3 pods on 3 nodes, placed together or not at all, and pool 'h100' has at most 2 nodes",
        }
    ]
    assert audit(facts, {}, [dataclasses.replace(group, group_nodes=1)]).ok


def test_the_audit_leaves_the_size_of_an_existing_clusters_pool_to_its_owner() -> None:
    fleet = fleet_of(eks_group(nodes=2, pool_nodes=1, source="Existing"))
    facts = derive_cluster(fleet, fleet.clusters[0])
    report = audit(facts, {}, [pod_placement(fleet.deployments[0], facts)])
    assert report.ok and dict((d.name, p) for d, p in report.deployments) == {"deepseek-r1": ("h100",)}


def test_a_one_node_deployment_has_no_gangs_in_the_audit() -> None:
    raw = eks_group(nodes=2, pool_nodes=2)
    raw["deployments"][0].update(nodes=1, args=["--tensor-parallel-size", "8"])
    fleet = fleet_of(raw)
    facts = derive_cluster(fleet, fleet.clusters[0])
    [entry] = audit(facts, {}, [pod_placement(fleet.deployments[0], facts)]).as_json()["deployments"]
    assert entry["gangs"] is None

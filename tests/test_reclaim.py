"""Reclaimable capacity: spot taints tolerated where the pool's pods run, a floor on capacity that is
not reclaimable with the rest on a spot pool, the PodDisruptionBudget that keeps it, the rules of
`infra.checks.reclaim` and the `reclaim-all-replicas` advisory."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from infra import tokens
from infra.config.issues import ConfigError
from infra.config.stackfile import parse_checked
from infra.facts import NodeTaint, derive_fleet
from infra.placement import Toleration
from infra.serving.catalog import cluster_charts, release_values
from infra.serving.pods import placements
from policies.resource_rules import reclaim_all_replicas
from tests.conftest import fleet_of, gpu_class, of_type, run_fleet
from tests.policy_harness import resource_args, run
from tests.test_k8s_schema import assert_valid
from tooling.mockrun import MockRun
from tooling.placement import audit
from tooling.plan import deployments_json

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
SERVICE = "kubernetes:core/v1:Service"
BUDGET = "kubernetes:policy/v1:PodDisruptionBudget"
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
AKS_SPOT = NodeTaint("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule")
OWNER_SPOT = {"key": "example.com/capacity", "value": "spot", "effect": "NoSchedule"}
GPU = {"name": "h100", "devices": [{"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com"}]}


def lab(**deployment: Any) -> dict[str, Any]:
    """An Existing cluster with an on-demand pool `h100` and a spot pool `spot` whose nodes carry
    the owner's taint, and one deployment `qwen` on `h100` with `deployment`'s keys."""
    return {
        "classes": [copy.deepcopy(GPU)],
        "clusters": [
            {
                "name": "lab",
                "source": "Existing",
                "existing": {"kubernetesVersion": "1.36"},
                "nodePools": [
                    {"name": "h100", "className": "h100", "nodeCount": 1},
                    {
                        "name": "spot",
                        "className": "h100",
                        "nodeCount": 2,
                        "capacity": {"type": "Spot", "nodeTaint": dict(OWNER_SPOT)},
                    },
                ],
            }
        ],
        "deployments": [
            {
                "name": "qwen",
                "cluster": "lab",
                "pool": "h100",
                "image": "vllm/vllm-openai:v0.23.0",
                "memory": "16Gi",
                "replicas": 3,
                "devices": [{"name": "gpu"}],
                **deployment,
            }
        ],
    }


def issues_of(raw: dict[str, Any]) -> dict[str, tuple[str, str]]:
    try:
        found = parse_checked(copy.deepcopy(raw), "Pulumi.test.yaml").issues
    except ConfigError as err:  # what the references find stops there
        found = list(err.issues)
    return {i.path: (i.problem, i.fix) for i in found}


@pytest.fixture(scope="module")
def floored() -> MockRun:
    return run_fleet(lab(spotPool="spot", floor=1))


def spec_of(result: MockRun, name: str) -> dict[str, Any]:
    [found] = [r for r in result.resources if r.name == name]
    return found.inputs["spec"]


def tolerates(spec: dict[str, Any], taint: dict[str, str]) -> bool:
    tolerations = [Toleration.from_values(t) for t in spec["template"]["spec"]["tolerations"]]
    return any(t.tolerates(NodeTaint(**taint)) for t in tolerations)


# --------------------------------------------------------------------------------------------
# The floor and the budget


def test_the_floor_stays_on_the_pool_and_the_rest_run_on_the_spot_pool_tolerating_its_taint(floored: MockRun) -> None:
    floor = spec_of(floored, "lab-qwen-deployment")
    spot = spec_of(floored, "lab-qwen-spot-deployment")
    assert (floor["replicas"], spot["replicas"]) == (1, 2)
    assert floor["template"]["spec"]["nodeSelector"] == {"modelplane.ai/pool": "h100"}
    assert spot["template"]["spec"]["nodeSelector"] == {"modelplane.ai/pool": "spot"}
    assert tolerates(spot, OWNER_SPOT) and not tolerates(floor, OWNER_SPOT)
    # Both claim from the one template.
    claims = {s["template"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] for s in (floor, spot)}
    assert len(claims) == 1


def test_the_two_workloads_select_apart_and_the_service_and_budget_select_both(floored: MockRun) -> None:
    floor = spec_of(floored, "lab-qwen-deployment")
    spot = spec_of(floored, "lab-qwen-spot-deployment")
    selectors = [s["selector"]["matchLabels"] for s in (floor, spot)]
    pods = [s["template"]["metadata"]["labels"] for s in (floor, spot)]
    # Each workload's selector matches its own pods and not the other's.
    assert all(sel.items() <= own.items() for sel, own in zip(selectors, pods, strict=True))
    assert not selectors[0].items() <= pods[1].items() and not selectors[1].items() <= pods[0].items()
    [service] = of_type(floored, SERVICE)
    [budget] = of_type(floored, BUDGET)
    for selector in (service.inputs["spec"]["selector"], budget.inputs["spec"]["selector"]["matchLabels"]):
        assert all(selector.items() <= labels.items() for labels in pods)
    assert budget.inputs["spec"]["minAvailable"] == 1 and "maxUnavailable" not in budget.inputs["spec"]


def test_floor_objects_are_valid_kubernetes_objects(floored: MockRun) -> None:
    kinds = assert_valid(floored, {"lab": "1.36"})
    assert kinds.count("Deployment") == 2 and "PodDisruptionBudget" in kinds


def test_without_a_floor_the_budget_takes_one_pod_at_a_time() -> None:
    result = run_fleet(lab())
    [budget] = of_type(result, BUDGET)
    assert budget.inputs["spec"]["maxUnavailable"] == 1 and "minAvailable" not in budget.inputs["spec"]
    assert [r.name for r in of_type(result, DEPLOYMENT)] == ["lab-qwen-deployment"]


# --------------------------------------------------------------------------------------------
# Spot taints: AKS's own, an Existing owner's


def aks_spot_fleet() -> dict[str, Any]:
    a100 = {"vmSize": "Standard_NC24ads_A100_v4", "accelerator": {"type": "nvidia-a100", "count": 1}}
    return {
        "classes": [gpu_class("a100", "AKS", a100)],
        "clusters": [
            {
                "name": "aks",
                "source": "AKS",
                "aks": {"location": "westeurope", "kubernetesVersion": "1.36"},
                "nodePools": [
                    {"name": "gpu", "className": "a100"},
                    {"name": "gpu-spot", "className": "a100", "capacity": {"type": "Spot"}},
                ],
            }
        ],
    }


def test_an_aks_spot_pool_carries_aks_own_taint_and_every_node_agent_tolerates_it() -> None:
    [facts] = derive_fleet(fleet_of(aks_spot_fleet()))
    assert facts.pool("gpu-spot").capacity_taints == (AKS_SPOT,)
    assert facts.pool("gpu").capacity_taints == ()
    # The program does not set it: AKS does (the pool's own taints are the program's).
    assert AKS_SPOT not in facts.pool("gpu-spot").taints
    agents = [(c, a) for c in cluster_charts(facts) for a in c.node_agents]
    assert agents
    for chart, agent in agents:
        at: Any = chart.values
        for part in agent.tolerations:
            at = at[part]
        assert AKS_SPOT.as_json() | {"operator": "Equal"} in at, (chart.release, agent.workload)


def test_a_cluster_without_spot_pools_tolerates_no_spot_taint() -> None:
    raw = aks_spot_fleet()
    raw["clusters"][0]["nodePools"].pop()
    [facts] = derive_fleet(fleet_of(raw))
    assert facts.capacity_taints == ()
    assert "scalesetpriority" not in str([c.values for c in cluster_charts(facts)])


def test_the_placement_audit_finds_every_driver_and_model_reaching_the_spot_pool() -> None:
    fleet = fleet_of(lab(spotPool="spot", floor=1))
    [facts] = derive_fleet(fleet)
    report = audit(facts, release_values(facts), placements(fleet.deployments[0], facts))
    assert report.ok, report.as_json()["violations"]
    reach = {w["workload"]: w["pools"] for w in report.as_json()["workloads"]}
    assert "spot" in reach["kubelet-plugin"]
    assert [(d["name"], d["pools"]) for d in report.as_json()["deployments"]] == [
        ("qwen", ["h100"]),
        ("qwen-spot", ["spot"]),
    ]


# --------------------------------------------------------------------------------------------
# Rules


@pytest.mark.parametrize(
    ("keys", "path", "says"),
    [
        ({"floor": 1}, "deployments[0].floor", "names none"),
        ({"spotPool": "spot"}, "deployments[0].spotPool", "sets none"),
        ({"spotPool": "spot", "floor": 4}, "deployments[0].floor", "more than the deployment's 3 replicas"),
        ({"pool": "spot", "spotPool": "h100", "floor": 1}, "deployments[0].spotPool", "is OnDemand capacity, not spot"),
        ({"spotPool": "h100", "floor": 1}, "deployments[0].spotPool", "is the deployment's own pool"),
        ({"pool": "spot", "spotPool": "h100", "floor": 1}, "deployments[0].pool", "is a spot pool"),
        ({"spotPool": "nowhere", "floor": 1}, "deployments[0].spotPool", "has no pool 'nowhere'"),
        ({"pool": "spot", "nodes": 2, "replicas": 1}, "deployments[0].nodes", "one reclaimed node takes its whole"),
    ],
)
def test_a_floor_rule_names_the_path_and_the_fix(keys: dict[str, Any], path: str, says: str) -> None:
    found = issues_of(lab(**keys))
    assert path in found, found
    problem, fix = found[path]
    assert says in problem and fix


SCALED = {"minReplicas": 1, "maxReplicas": 4, "metric": "RequestsWaiting", "target": 2}


def scaled_lab(**scaling: Any) -> dict[str, Any]:
    raw = lab(spotPool="spot", floor=1, autoscaling={**SCALED, **scaling})
    del raw["deployments"][0]["replicas"]
    return raw


def test_an_autoscaled_floor_keeps_its_count_and_the_spot_deployment_follows_the_load_above_it() -> None:
    result = run_fleet(scaled_lab())
    floor = spec_of(result, "lab-qwen-deployment")
    spot = spec_of(result, "lab-qwen-spot-deployment")
    assert floor["replicas"] == 1 and "replicas" not in spot
    [scaled] = of_type(result, SCALED_OBJECT)
    so = scaled.inputs["spec"]
    assert so["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "qwen-spot"}
    assert (so["minReplicaCount"], so["maxReplicaCount"]) == (0, 3)
    [trigger] = so["triggers"]
    # The load of every engine less what the floor's one replica carries at the target.
    query = trigger["metadata"]["query"]
    assert (
        query == 'clamp_min(sum(vllm:num_requests_waiting{namespace="default",modelplane_ai_deployment="qwen"}) - 2, 0)'
    )
    assert trigger["metricType"] == "AverageValue" and trigger["metadata"]["threshold"] == "2"
    [dep] = deployments_json(result.resources)
    assert (dep["groups"]["count"], dep["groups"]["minCount"], dep["replicas"]) == (4, 1, None)


def test_a_floor_above_the_fewest_replicas_is_refused() -> None:
    problem, fix = issues_of(scaled_lab(minReplicas=0, maxReplicas=2))["deployments[0].floor"]
    assert "more than the deployment's 0 replicas (autoscaling.minReplicas)" in problem
    assert "raise autoscaling.minReplicas to at least 1" in fix


def test_a_group_on_spot_capacity_runs_when_the_owner_accepts_the_reclaim() -> None:
    found = issues_of(lab(pool="spot", nodes=2, replicas=1, acceptReclaim=True))
    assert "deployments[0].nodes" not in found


def test_a_floor_on_demand_with_the_rest_on_spot_is_clean() -> None:
    assert issues_of(lab(spotPool="spot", floor=1)) == {}


def test_a_spot_workload_name_taken_by_another_deployment_is_refused() -> None:
    raw = lab(spotPool="spot", floor=1)
    raw["deployments"].append({**raw["deployments"][0], "name": "qwen-spot", "spotPool": None, "floor": None})
    for key in ("spotPool", "floor"):
        del raw["deployments"][1][key]
    raw["deployments"][1]["replicas"] = 0
    found = issues_of(raw)
    assert (
        "deployments[1].name" in found
        and "runs its replicas above the floor as 'qwen-spot'" in found["deployments[1].name"][0]
    )


def test_an_owner_spot_taint_belongs_to_an_existing_spot_pool() -> None:
    raw = lab()
    raw["clusters"][0]["nodePools"][0]["capacity"] = {"type": "OnDemand", "nodeTaint": dict(OWNER_SPOT)}
    found = issues_of(raw)
    assert "pool 'h100' is OnDemand" in found["clusters[0].nodePools[0].capacity.nodeTaint"][0]
    aks = aks_spot_fleet()
    aks["clusters"][0]["nodePools"][1]["capacity"]["nodeTaint"] = dict(OWNER_SPOT)
    found = issues_of(aks)
    assert "AKS taints the nodes it builds itself" in found["clusters[0].nodePools[1].capacity.nodeTaint"][0]


def aks_deployment(replicas: int) -> dict[str, Any]:
    raw = aks_spot_fleet()
    for pool, count in zip(raw["clusters"][0]["nodePools"], (1, 2), strict=True):
        pool["nodeCount"] = count
    raw["deployments"] = [
        {
            "name": "qwen",
            "cluster": "aks",
            "pool": "gpu",
            "spotPool": "gpu-spot",
            "floor": 1,
            "image": "vllm/vllm-openai:v0.23.0",
            "memory": "16Gi",
            "replicas": replicas,
            "devices": [{"name": "gpu"}],
        }
    ]
    return raw


def test_the_pools_hold_the_floor_and_the_replicas_above_it_apart() -> None:
    # One GPU a node: the floor's one replica on the one-node pool, the rest on the two spot nodes.
    assert issues_of(aks_deployment(3)) == {}
    problem, _ = issues_of(aks_deployment(4))["deployments[0].replicas"]
    assert "gpu-spot" in problem and "3 replicas" in problem


# --------------------------------------------------------------------------------------------
# The advisory


def advisories(reclaimable: bool, floor: int | None, replicas: int = 3) -> list[str]:
    props = {
        "name": "qwen",
        "cluster": "lab",
        "pool": "spot",
        "reclaimable": reclaimable,
        "floor": floor,
        "peakReplicas": replicas,
        "startupSeconds": 900,
    }
    policy = reclaim_all_replicas
    return run(policy, resource_args(tokens.MODEL_DEPLOYMENT, props, name="qwen", policy=policy))


def test_every_replica_on_spot_is_told_what_a_reclaim_costs() -> None:
    [message] = advisories(True, None)
    assert "all 3 of its replicas on a spot pool" in message
    assert "startupSeconds, 900 s" in message and "floor: 1" in message


def test_a_floor_or_on_demand_capacity_gets_no_reclaim_advisory() -> None:
    assert advisories(False, None) == []
    assert advisories(True, 1) == []
    assert advisories(True, None, replicas=0) == []


def test_the_plan_shows_the_floor_per_deployment() -> None:
    [dep] = deployments_json(run_fleet(lab(spotPool="spot", floor=1)).resources)
    assert (dep["floor"], dep["spotPool"], dep["replicas"], dep["spotReplicas"]) == (1, "spot", 3, 2)
    assert dep["disruptionBudget"] == {"minAvailable": 1}
    assert dep["groups"]["count"] == 3

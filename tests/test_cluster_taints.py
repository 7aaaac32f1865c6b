"""A cluster's taints reach its pools' nodes on every cloud, and everything the stack runs there tolerates them.

`clusters[].taints` used to reach only the model deployments' tolerations: no pool carried them, so a
tenant taint kept nothing off the GPUs and a NoExecute taint drained nothing. Each provisioned
cloud's pool resource now carries them in that cloud's spelling (read back with the policies' own
reader, `policies.pool_rules.pool_marking`), the system pool does not, every node agent of the
serving stack still reaches its pools (the placement audit, on the values the releases carry), and
a taint that would clash with the pools' role taints is refused with its path and a fix that plans.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from clouds import POOL_TYPES
from infra.facts import NodeTaint, derive_cluster
from infra.serving.catalog import cluster_charts, release_values
from infra.serving.pods import pod_placement
from infra.vocabulary import POOL_LABEL
from policies.pool_rules import pool_marking
from tests.conftest import CLUSTER_BLOCKS, GPU_BLOCKS, fleet_of, run_fleet
from tests.conftest import cloud_fleet as two_pools
from tests.test_placement import cloud_fleet, existing_fleet
from tests.test_regions_and_names import Config, assert_clean, only_error, plan_with
from tooling.placement import audit

TENANT = {"key": "example.com/dedicated", "value": "inference", "effect": "NoSchedule"}
DRAIN = {"key": "example.com/drain", "value": "now", "effect": "NoExecute"}
OWN = (NodeTaint(**TENANT), NodeTaint(**DRAIN))


def tainted(raw: dict[str, Any]) -> dict[str, Any]:
    raw["clusters"][0]["taints"] = [dict(TENANT), dict(DRAIN)]
    return raw


@pytest.mark.parametrize("cloud", tuple(CLUSTER_BLOCKS))
def test_every_pool_resource_carries_the_cluster_taints_and_the_system_pool_none(cloud: str) -> None:
    raw = tainted(two_pools(cloud, "c", []))
    # A class claims every GPU of its machine (the example OCI shape has four).
    accelerator = GPU_BLOCKS[cloud].get("accelerator") or {}
    raw["classes"][0]["devices"][0]["count"] = accelerator.get("count", 1)
    result = run_fleet(raw)
    assert result.error is None, result.error
    marked: dict[str, tuple[NodeTaint, ...]] = {}
    for r in result.resources:
        if r.type in POOL_TYPES:
            _, types = POOL_TYPES[r.type]
            marking = pool_marking(types.spelling, r.inputs)
            marked[marking.labels.get(POOL_LABEL, r.name)] = marking.taints
    assert {"gpu", "cpu"} <= set(marked), marked
    for pool in ("gpu", "cpu"):
        assert set(OWN) <= set(marked[pool]), (cloud, pool, marked[pool])
    for pool, taints in marked.items():
        if pool not in ("gpu", "cpu"):
            assert not set(OWN) & set(taints), (cloud, pool)


@pytest.mark.parametrize("cloud", (*CLUSTER_BLOCKS, "Existing"))
def test_every_node_agent_and_deployment_still_reaches_its_pools(cloud: str) -> None:
    raw = tainted(existing_fleet() if cloud == "Existing" else cloud_fleet(cloud))
    fleet = fleet_of(raw)
    facts = derive_cluster(fleet, fleet.clusters[0])
    for pool in facts.user_pools:
        assert set(OWN) <= set(pool.taints), pool.name
    report = audit(facts, release_values(facts), [pod_placement(d, facts) for d in fleet.deployments])
    assert report.ok, report.as_json()["violations"]
    # Without the tolerations the catalog adds, the same audit finds the pools unreached.
    bare = {c.release: c.values for c in cluster_charts(dataclasses.replace(facts, taints=()))}
    assert not audit(facts, bare, []).ok


def test_each_agent_keeps_the_chart_default_it_would_have_had() -> None:
    """An agent whose values leave its tolerations to the chart gets the chart's default plus the
    cluster's: a list replaces the default whole, so dropping it would strand the agent."""
    fleet = fleet_of(tainted(existing_fleet()))
    facts = derive_cluster(fleet, fleet.clusters[0])
    for chart in cluster_charts(facts):
        for agent in chart.agents:
            at: Any = chart.values
            for part in agent.tolerations:
                at = at[part]
            tolerated = [{k: t[k] for k in ("key", "value", "effect") if k in t} for t in at]
            assert TENANT in tolerated and DRAIN in tolerated, (chart.release, agent.workload)
            if agent.default_tolerations and not _set_by_values(chart.key, agent.tolerations):
                assert all(dict(t) in at for t in agent.default_tolerations)


def _set_by_values(key: str, path: tuple[str, ...]) -> bool:
    from infra.serving.catalog import CATALOG

    row = next(c for c in CATALOG["Existing"] if c.key == key)
    at: Any = row.values
    for part in path:
        if not isinstance(at, dict) or part not in at:
            return False
        at = at[part]
    return True


# --------------------------------------------------------------------------------------------
# Taints the pools cannot carry beside their own


def set_taints(*taints: dict[str, str]) -> Any:
    def change(config: Config) -> None:
        config["modelplane:clusters"][0]["taints"] = [dict(t) for t in taints]

    return change


def test_a_role_taint_key_is_refused_and_a_key_of_ones_own_plans(tmp_path: Path) -> None:
    error = only_error(
        plan_with(tmp_path, "eks-prod", set_taints({"key": "nvidia.com/gpu", "value": "x", "effect": "NoExecute"}))
    )
    assert error["path"] == "clusters[0].taints[0].key"
    assert "taint key the program sets on pools by their role" in error["message"]
    assert "Fix: use a key of your own, e.g. example.com/dedicated" in error["message"]
    assert_clean(plan_with(tmp_path, "eks-prod", set_taints(DRAIN)))


def test_a_repeated_key_and_effect_is_refused_and_keeping_one_plans(tmp_path: Path) -> None:
    twice = {"key": "example.com/dedicated", "value": "b", "effect": "NoSchedule"}
    error = only_error(plan_with(tmp_path, "gke-prod", set_taints(TENANT, twice)))
    assert error["path"] == "clusters[0].taints[1]"
    assert "unique by key and effect" in error["message"]
    assert "Fix: keep one of the two" in error["message"]
    assert_clean(plan_with(tmp_path, "gke-prod", set_taints(TENANT)))
    # Another effect of the same key is another taint, which Kubernetes accepts.
    assert_clean(plan_with(tmp_path, "gke-prod", set_taints(TENANT, {**twice, "effect": "NoExecute"})))

"""Autoscaled deployments: the config's bounds and rules, the ScaledObject and its scrape target,
KEDA's place in the catalog, scale-from-zero pools per cloud, and cost at both ends."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from infra.config.issues import ConfigError
from infra.config.model import Fleet
from infra.config.rules import check_autoscaling, check_serving
from infra.config.stackfile import parse_fleet
from tests.test_serving_checks import FILE, deployment, raw_fleet

SCALING = {"minReplicas": 1, "maxReplicas": 3, "metric": "RequestsWaiting", "target": 5}


def scaled(**fields: Any) -> dict[str, Any]:
    """A GPU deployment that follows requests waiting, with `fields` over its defaults."""
    dep = deployment(autoscaling=dict(SCALING))
    dep.update(fields)
    return {k: v for k, v in dep.items() if v is not None}


def rule_issues(*deps: dict[str, Any]) -> list[tuple[str, str, str]]:
    found = check_autoscaling(Fleet.model_validate(copy.deepcopy(raw_fleet("GKE", *deps))), FILE)
    return [(i.path, i.problem, i.fix) for i in found]


def parse_issues(*deps: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as err:
        parse_fleet(copy.deepcopy(raw_fleet("GKE", *deps)), FILE)
    return [(i.path, i.message) for i in err.value.issues]


# --------------------------------------------------------------------------------------------
# Config


def test_autoscaling_reads_its_bounds_metric_and_target() -> None:
    fleet = Fleet.model_validate(raw_fleet("GKE", scaled()))
    scaling = fleet.deployments[0].autoscaling
    assert scaling is not None
    assert (scaling.min_replicas, scaling.max_replicas, str(scaling.metric), scaling.target) == (
        1,
        3,
        "RequestsWaiting",
        5,
    )
    assert (fleet.deployments[0].least_replicas, fleet.deployments[0].peak_replicas) == (1, 3)


def test_replicas_beside_autoscaling_is_rejected_at_replicas() -> None:
    found = rule_issues(scaled(replicas=2))
    assert [path for path, _, _ in found] == ["deployments[0].replicas"]
    assert "autoscaler owns the replica count" in found[0][1]
    assert "remove replicas" in found[0][2]


def test_autoscaling_without_replicas_passes_the_rules() -> None:
    assert rule_issues(scaled()) == []


def test_min_above_max_is_rejected_at_autoscaling() -> None:
    found = parse_issues(scaled(autoscaling={**SCALING, "minReplicas": 4}))
    assert [path for path, _ in found] == ["deployments[0].autoscaling"]
    assert "minReplicas 4 is above maxReplicas 3" in found[0][1]


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        ({"metric": "Latency"}, "deployments[0].autoscaling.metric"),
        ({"target": 0}, "deployments[0].autoscaling.target"),
        ({"maxReplicas": 0}, "deployments[0].autoscaling.maxReplicas"),
        ({"metric": "KVCacheUsage", "target": 80}, "deployments[0].autoscaling"),
    ],
)
def test_bad_autoscaling_values_are_rejected_at_their_path(edit: dict[str, Any], path: str) -> None:
    assert [p for p, _ in parse_issues(scaled(autoscaling={**SCALING, **edit}))] == [path]


def test_kv_cache_target_as_a_percentage_says_to_write_a_fraction() -> None:
    found = parse_issues(scaled(autoscaling={**SCALING, "metric": "KVCacheUsage", "target": 80}))
    assert "write the target as a fraction" in found[0][1]


def test_scale_to_zero_without_a_cache_is_rejected_with_the_cold_start_it_costs() -> None:
    found = rule_issues(scaled(autoscaling={**SCALING, "minReplicas": 0}, startupSeconds=900))
    assert [path for path, _, _ in found] == ["deployments[0].autoscaling.minReplicas"]
    assert "cold start of up to 900s" in found[0][1]
    assert "add deployments[0].cache" in found[0][2]


def test_scale_to_zero_with_a_node_local_cache_passes() -> None:
    assert rule_issues(scaled(autoscaling={**SCALING, "minReplicas": 0}, cache={"volume": "NodeLocal"})) == []


def test_claim_cache_is_judged_at_max_replicas_of_an_autoscaled_deployment() -> None:
    raw = raw_fleet("GKE", scaled(cache={"size": "50Gi"}))
    found = check_serving(Fleet.model_validate(raw), FILE)
    cache = [i for i in found if i.path == "deployments[0].cache.volume"]
    assert len(cache) == 1
    assert "not 3 replicas" in cache[0].problem
    assert "autoscaling.maxReplicas: 1" in cache[0].fix

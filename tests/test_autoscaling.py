"""Autoscaled deployments: the config's bounds and rules, the ScaledObject and its scrape target,
KEDA's place in the catalog, and scale-from-zero GPU pools per cloud."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from clouds import CLOUDS, profile
from components.features.autoscaling import workload_ref
from infra.checks.guard import check
from infra.checks.services import check_autoscaling, check_serving
from infra.config.issues import ConfigError, located
from infra.config.model import Fleet
from infra.config.stackfile import parse_fleet
from infra.facts import PLAN_POOL_KEYS, derive_fleet
from infra.serving.autoscaling import WorkloadRef, prometheus_address, scaled_object_spec
from infra.serving.catalog import join_charts
from infra.serving.chart import Chart
from infra.serving.values import kube_prometheus_stack
from tests.conftest import of_type, run_fleet
from tests.test_model_deployment import DEPLOYMENT, lab_fleet, registered
from tests.test_serving_checks import FILE, deployment, raw_fleet
from tooling.mockrun import MockRun
from tooling.plan import plain, plan_stack

ROOT = Path(__file__).resolve().parent.parent

SCALING = {"minReplicas": 1, "maxReplicas": 3, "metric": "RequestsWaiting", "target": 5}


def scaled(**fields: Any) -> dict[str, Any]:
    """A GPU deployment that follows requests waiting, with `fields` over its defaults."""
    dep = deployment(autoscaling=dict(SCALING))
    dep.update(fields)
    return {k: v for k, v in dep.items() if v is not None}


def rule_issues(*deps: dict[str, Any]) -> list[tuple[str, str, str]]:
    found = located(check_autoscaling(Fleet.model_validate(copy.deepcopy(raw_fleet("GKE", *deps)))), FILE)
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


@pytest.mark.parametrize(
    ("value", "says", "fix"),
    [
        (3601, "less than or equal to 3600 (got 3601)", "lower the value to the maximum"),
        (-1, "greater than or equal to 0 (got -1)", "raise the value to the minimum"),
        (30.5, "a valid integer (got 30.5)", "write a whole number"),
        ("30s", "a valid integer (got '30s')", "write a whole number"),
    ],
)
def test_a_scale_down_window_the_hpa_would_refuse_is_an_error_at_its_path(value: Any, says: str, fix: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_fleet(copy.deepcopy(raw_fleet("GKE", scaled(autoscaling={**SCALING, "scaleDownSeconds": value}))), FILE)
    [issue] = err.value.issues
    assert issue.path == "deployments[0].autoscaling.scaleDownSeconds"
    assert says in issue.message
    assert fix in issue.message
    assert str(err.value).startswith(f"{FILE}: deployments[0].autoscaling.scaleDownSeconds: ")


@pytest.mark.parametrize("seconds", [0, 30, 3600])
def test_a_scale_down_window_within_the_hpas_bounds_is_read(seconds: int) -> None:
    scaling = Fleet.model_validate(raw_fleet("GKE", scaled(autoscaling={**SCALING, "scaleDownSeconds": seconds})))
    assert scaling.deployments[0].autoscaling is not None
    assert scaling.deployments[0].autoscaling.scale_down_seconds == seconds


def test_kv_cache_target_as_a_percentage_says_to_write_a_fraction() -> None:
    found = parse_issues(scaled(autoscaling={**SCALING, "metric": "KVCacheUsage", "target": 80}))
    assert "write the target as a fraction" in found[0][1]


def test_scale_to_zero_is_rejected_because_no_pod_serves_the_metric_that_would_wake_it() -> None:
    for extra in ({}, {"cache": {"volume": "NodeLocal"}}):
        found = rule_issues(scaled(autoscaling={**SCALING, "minReplicas": 0}, **extra))
        assert [path for path, _, _ in found] == ["deployments[0].autoscaling.minReplicas"]
        assert "would never start again" in found[0][1]
        assert "set minReplicas: 1" in found[0][2]
    assert rule_issues(scaled(autoscaling={**SCALING, "minReplicas": 1})) == []


def test_claim_cache_is_judged_at_max_replicas_of_an_autoscaled_deployment() -> None:
    raw = raw_fleet("GKE", scaled(cache={"size": "50Gi"}))
    found = located(check_serving(Fleet.model_validate(raw)), FILE)
    cache = [i for i in found if i.path == "deployments[0].cache.volume"]
    assert len(cache) == 1
    assert "not 3 replicas" in cache[0].problem
    assert "autoscaling.maxReplicas: 1" in cache[0].fix


# --------------------------------------------------------------------------------------------
# The ScaledObject, its scrape target and KEDA's release

SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
POD_MONITOR = "kubernetes:monitoring.coreos.com/v1:PodMonitor"
RELEASE = "kubernetes:helm.sh/v3:Release"


def lab_with(**autoscaling: Any) -> dict[str, Any]:
    """The model-deployment lab fleet with its AMD deployment autoscaled (its CPU one fixed)."""
    raw = lab_fleet()
    raw["deployments"][0]["autoscaling"] = {**SCALING, **autoscaling}
    return raw


@pytest.fixture(scope="module")
def scaled_lab() -> MockRun:
    return run_fleet(lab_with(metric="KVCacheUsage", target=0.75, maxReplicas=4))


def test_an_autoscaled_deployment_gets_a_scaled_object_with_its_bounds_and_metric(scaled_lab: MockRun) -> None:
    obj = registered(scaled_lab, SCALED_OBJECT, "lab-qwen-amd-scaledobject")
    assert obj.parent == "lab-qwen-amd"
    spec = plain(obj.inputs["spec"])
    assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "qwen-amd"}
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (1, 4)
    [trigger] = spec["triggers"]
    assert trigger["type"] == "prometheus"
    assert trigger["metricType"] == "Value"
    assert trigger["metadata"] == {
        "serverAddress": "http://mp-kube-prometheus-stack-prometheus.monitoring.svc:9090",
        "query": 'avg(vllm:kv_cache_usage_perc{namespace="ml-team",modelplane_ai_deployment="qwen-amd"})',
        "threshold": "0.75",
    }


def test_the_autoscaled_deployment_leaves_its_replica_count_to_the_autoscaler(scaled_lab: MockRun) -> None:
    deployment = registered(scaled_lab, DEPLOYMENT, "lab-qwen-amd-deployment")
    assert "replicas" not in plain(deployment.inputs["spec"])
    fixed = registered(scaled_lab, DEPLOYMENT, "lab-qwen-cpu-deployment")
    assert plain(fixed.inputs["spec"])["replicas"] == 1


def test_the_autoscaled_engine_is_scraped_by_a_pod_monitor_carrying_its_deployment_label(
    scaled_lab: MockRun,
) -> None:
    monitor = registered(scaled_lab, POD_MONITOR, "lab-qwen-amd-podmonitor")
    assert plain(monitor.inputs["metadata"])["namespace"] == "ml-team"
    assert plain(monitor.inputs["spec"]) == {
        "selector": {"matchLabels": {"modelplane.ai/deployment": "qwen-amd"}},
        "podTargetLabels": ["modelplane.ai/deployment"],
        "podMetricsEndpoints": [{"port": "http", "path": "/metrics"}],
    }


def test_a_fixed_deployment_is_scraped_for_its_dashboard_but_gets_no_scaled_object(scaled_lab: MockRun) -> None:
    names = {r.name for r in scaled_lab.resources if r.type in (SCALED_OBJECT, POD_MONITOR)}
    # Beside the collector's PodMonitor, which the stack plans on every cluster (tests/test_dashboards.py).
    assert names == {
        "lab-qwen-amd-scaledobject",
        "lab-qwen-amd-podmonitor",
        "lab-qwen-cpu-podmonitor",
        "lab-stack-collector-podmonitor",
    }


@pytest.mark.parametrize(
    ("metric", "query", "metric_type"),
    [
        ("RequestsWaiting", "sum(vllm:num_requests_waiting{", "AverageValue"),
        ("RequestsRunning", "sum(vllm:num_requests_running{", "AverageValue"),
    ],
)
def test_request_metrics_are_summed_and_divided_over_the_replicas(metric: str, query: str, metric_type: str) -> None:
    fleet = Fleet.model_validate(raw_fleet("GKE", scaled(autoscaling={**SCALING, "metric": metric})))
    dep = fleet.deployments[0]
    assert dep.autoscaling is not None
    [trigger] = scaled_object_spec(dep, dep.autoscaling, workload_ref(dep), prometheus_address("GKE"))["triggers"]
    assert trigger["metadata"]["query"].startswith(query)
    assert trigger["metricType"] == metric_type
    assert trigger["metadata"]["threshold"] == "5"


def test_the_scale_target_follows_the_workload_it_is_given() -> None:
    fleet = Fleet.model_validate(raw_fleet("GKE", scaled()))
    dep = fleet.deployments[0]
    assert dep.autoscaling is not None
    lws = WorkloadRef("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", dep.name)
    target = scaled_object_spec(dep, dep.autoscaling, lws, prometheus_address("GKE"))["scaleTargetRef"]
    assert target == {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "name": "qwen"}


def spec_of(autoscaling: dict[str, Any]) -> dict[str, Any]:
    """The ScaledObject's spec of a GKE deployment scaled so."""
    dep = Fleet.model_validate(raw_fleet("GKE", scaled(autoscaling=autoscaling))).deployments[0]
    assert dep.autoscaling is not None
    return scaled_object_spec(dep, dep.autoscaling, workload_ref(dep), prometheus_address("GKE"))


def test_a_scale_down_window_reaches_the_hpa_behaviour_of_the_scaled_object() -> None:
    spec = spec_of({**SCALING, "scaleDownSeconds": 30})
    assert spec["advanced"] == {
        "horizontalPodAutoscalerConfig": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 30}}}
    }


def test_without_a_scale_down_window_the_scaled_object_leaves_the_hpa_default() -> None:
    assert "advanced" not in spec_of(dict(SCALING))


def test_keda_installs_only_on_a_cluster_with_an_autoscaled_deployment(scaled_lab: MockRun) -> None:
    fixed = run_fleet(lab_fleet())
    assert "lab-stack-keda" not in {r.name for r in of_type(fixed, RELEASE)}
    [keda] = [r for r in of_type(scaled_lab, RELEASE) if r.name == "lab-stack-keda"]
    assert (plain(keda.inputs["chart"]), plain(keda.inputs["version"])) == ("keda", "2.20.2")
    assert plain(keda.inputs["repositoryOpts"])["repo"] == "https://kedacore.github.io/charts"
    [prometheus] = [r for r in of_type(scaled_lab, RELEASE) if r.name == "lab-stack-kube-prometheus-stack"]
    assert prometheus.urn in keda.dependencies


# The owner's Prometheus (`existing.prometheus`), where the cluster runs its own kube-prometheus-stack.
OWN_PROMETHEUS = {
    "url": "http://prometheus-kube-prometheus-prometheus.monitoring.svc:9090",
    "podMonitorLabels": {"release": "prometheus"},
}


def lab_on_own_prometheus(**prometheus: Any) -> dict[str, Any]:
    """The autoscaled lab fleet on a cluster that runs its own kube-prometheus-stack."""
    raw = lab_with()
    raw["clusters"][0]["existing"]["preinstalled"] = ["kube-prometheus-stack"]
    if prometheus:
        raw["clusters"][0]["existing"]["prometheus"] = prometheus
    return raw


def test_our_own_prometheus_selects_every_pod_monitor_so_ours_needs_no_release_label() -> None:
    # kube-prometheus-stack 84.4.0 selects only `release: <release>` PodMonitors unless this is off.
    spec = kube_prometheus_stack("GKE")["prometheus"]["prometheusSpec"]
    assert (spec["podMonitorSelectorNilUsesHelmValues"], spec["podMonitorSelector"]) == (False, {})


def test_autoscaling_on_the_owners_prometheus_without_its_address_is_refused_and_the_fix_plans_clean() -> None:
    found = located(check_autoscaling(Fleet.model_validate(lab_on_own_prometheus())), FILE)
    assert [i.path for i in found] == ["deployments[0].autoscaling"]
    assert "runs its own kube-prometheus-stack (clusters[0].existing.preinstalled)" in found[0].problem
    assert "clusters[0].existing.prometheus.url" in found[0].fix
    assert "clusters[0].existing.prometheus.podMonitorLabels" in found[0].fix
    # The fix, applied: no issue, and KEDA asks the owner's Prometheus with a monitor it selects.
    fixed = lab_on_own_prometheus(**OWN_PROMETHEUS)
    checked = check(parse_fleet(copy.deepcopy(fixed), FILE))
    assert not checked.stops, (checked.issues, checked.stopping_violations)
    run = run_fleet(fixed)
    obj = registered(run, SCALED_OBJECT, "lab-qwen-amd-scaledobject")
    [trigger] = plain(obj.inputs["spec"])["triggers"]
    assert trigger["metadata"]["serverAddress"] == OWN_PROMETHEUS["url"]
    monitor = plain(registered(run, POD_MONITOR, "lab-qwen-amd-podmonitor").inputs["metadata"])
    assert monitor["labels"]["release"] == "prometheus"
    assert monitor["labels"]["modelplane.ai/deployment"] == "qwen-amd"
    assert "lab-stack-kube-prometheus-stack" not in {r.name for r in of_type(run, RELEASE)}


def test_fixed_deployments_on_an_owners_prometheus_are_monitored_only_where_it_is_named() -> None:
    """No PodMonitor where nothing would select it: the owner runs kube-prometheus-stack and names
    no Prometheus; with `existing.prometheus`, one carrying its labels, as for a scaled one."""
    raw = lab_fleet()
    raw["clusters"][0]["existing"]["preinstalled"] = ["kube-prometheus-stack"]
    run = run_fleet(raw)
    assert run.error is None, run.error
    assert of_type(run, POD_MONITOR) == []
    raw["clusters"][0]["existing"]["prometheus"] = OWN_PROMETHEUS
    run = run_fleet(raw)
    # The deployments' monitors; the collector's has its own test (tests/test_dashboards.py).
    monitors = [m for m in of_type(run, POD_MONITOR) if not m.name.endswith("-collector-podmonitor")]
    assert {m.name for m in monitors} == {"lab-qwen-amd-podmonitor", "lab-qwen-cpu-podmonitor"}
    assert all(plain(m.inputs["metadata"])["labels"]["release"] == "prometheus" for m in monitors)


def test_a_cluster_running_our_prometheus_needs_no_owner_settings(scaled_lab: MockRun) -> None:
    assert check_autoscaling(Fleet.model_validate(lab_with())) == []
    monitor = plain(registered(scaled_lab, POD_MONITOR, "lab-qwen-amd-podmonitor").inputs["metadata"])
    assert "release" not in monitor["labels"]


def test_the_join_leaves_a_feature_row_out_until_a_deployment_uses_it() -> None:
    rows = [Chart("base", "base", "r", "1.0.0", "ns"), Chart("k", "k", "r", "1.0.0", "ns", features=("x",))]
    assert [c.key for c in join_charts(rows, [])] == ["base"]
    assert [c.key for c in join_charts(rows, [], features=["x"])] == ["base", "k"]


def test_an_autoscaled_deployment_of_a_stack_file_plans_with_its_bounds(tmp_path: Path) -> None:
    """The plan hands the program the keys as written: a `replicas` default beside `autoscaling`
    would be refused by the program's own rule."""
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.recipe-qwen-cpu-civo.yaml").read_text())
    [dep] = doc["config"]["modelplane:deployments"]
    dep.pop("replicas")
    dep["autoscaling"] = {"minReplicas": 1, "maxReplicas": 1, "metric": "RequestsWaiting", "target": 5}
    path = tmp_path / "Pulumi.scaled.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    planned = plan_stack(path)
    assert planned["ok"], (planned["errors"], planned["violations"])
    [shown] = planned["deployments"]
    assert shown["replicas"] is None  # left to the autoscaler
    assert (shown["groups"]["count"], shown["groups"]["minCount"]) == (1, 1)


# --------------------------------------------------------------------------------------------
# Scale-from-zero GPU pools, per cloud (`infra.profiles.ScaleFromZero`)

# Clouds whose pools autoscale but whose autoscaler cannot bring a DRA GPU pool up from zero.
CANNOT = tuple(
    c.source
    for c in CLOUDS
    if c.profile.scaling.autoscaler
    and c.profile.scaling.gpu_from_zero is not None
    and not c.profile.scaling.gpu_from_zero.can
)


def bounded(source: str, pool: int, lo: int, node_count: int = 1) -> dict[str, Any]:
    """The serving-checks cluster on `source`, with no deployments, and pool `pool` (0 GPU, 1 CPU)
    autoscaled from `lo` to 3 (what a GKE pool over three zones starts with at nodeCount 1)."""
    raw = raw_fleet(source)
    raw["deployments"] = []
    raw["clusters"][0]["nodePools"][pool].update(nodeCount=node_count, minNodeCount=lo, maxNodeCount=3)
    return raw


def pool_issues(raw: dict[str, Any]) -> list[tuple[str, str]]:
    try:
        parse_fleet(copy.deepcopy(raw), FILE)
    except ConfigError as err:
        return [(i.path, i.message) for i in err.issues]
    return []


@pytest.mark.parametrize("source", CANNOT)
def test_a_gpu_pool_at_min_zero_is_refused_where_the_autoscaler_cannot_bring_it_back(source: str) -> None:
    [(path, message)] = pool_issues(bounded(source, 0, 0))
    assert path == "clusters[0].nodePools[0].minNodeCount"
    stated = profile(source).scaling.gpu_from_zero
    assert stated is not None and not stated.can
    assert stated.says in message and "kubernetes/autoscaler#7799" in message
    assert "set minNodeCount: 1" in message


def test_the_eks_refusal_names_its_sources() -> None:
    [(_, message)] = pool_issues(bounded("EKS", 0, 0))
    assert "Cluster Autoscaler" in message and "modelplane #345" in message


@pytest.mark.parametrize("source", CANNOT)
def test_the_suggested_minimum_of_one_plans_clean(source: str) -> None:
    assert pool_issues(bounded(source, 0, 1)) == []
    assert run_fleet(bounded(source, 0, 1)).error is None


def test_a_gpu_pool_of_no_nodes_is_told_to_start_one_too() -> None:
    found = pool_issues(bounded("EKS", 0, 0, node_count=0))
    assert "set minNodeCount: 1 and nodeCount: 1 (from one node the autoscaler copies the live node's devices)" in next(
        m for p, m in found if p.endswith("minNodeCount")
    )
    assert pool_issues(bounded("EKS", 0, 1, node_count=1)) == []


@pytest.mark.parametrize("source", CANNOT)
def test_a_cpu_pool_at_min_zero_is_not_judged(source: str) -> None:
    assert pool_issues(bounded(source, 1, 0)) == []


def test_civo_says_its_pools_do_not_autoscale_at_all() -> None:
    [(path, message)] = pool_issues(bounded("Civo", 0, 0))
    assert path == "clusters[0].nodePools[0].minNodeCount"
    assert "Civo pools do not autoscale" in message


def test_existing_clusters_are_not_judged() -> None:
    assert profile("Existing").scaling.gpu_from_zero is None


def test_a_gke_gpu_pool_at_min_zero_plans_clean_with_the_label_gkes_autoscaler_needs() -> None:
    stated = profile("GKE").scaling.gpu_from_zero
    assert stated is not None and stated.can
    assert stated.pool_labels == {"cloud.google.com/gke-nvidia-gpu-dra-driver": "true"}
    raw = bounded("GKE", 0, 0)
    assert pool_issues(raw) == []
    result = run_fleet(raw)
    assert result.error is None
    [gpu] = [r for r in of_type(result, "gcp:container/nodePool:NodePool") if plain(r.inputs["name"]) == "gpu"]
    labels = plain(gpu.inputs["nodeConfig"])["labels"]
    assert labels["cloud.google.com/gke-nvidia-gpu-dra-driver"] == "true"
    assert plain(gpu.inputs["autoscaling"])["totalMinNodeCount"] == 0


@pytest.mark.parametrize(("source", "expected"), [("GKE", True), ("EKS", False), ("Existing", None)])
def test_the_plan_shows_each_pools_scale_from_zero_support(source: str, expected: bool | None) -> None:
    facts = derive_fleet(Fleet.model_validate(raw_fleet(source)))[0]
    assert {p.name: p.as_json(PLAN_POOL_KEYS)["scaleFromZero"] for p in facts.pools} == {
        **({"system": None} if source != "Existing" else {}),
        "gpu": expected,
        "cpu": None,
    }

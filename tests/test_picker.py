"""Routing through the endpoint picker, weighted splits and scale from zero, as planned (docs/serving.md).

A picker-routed service gets an InferencePool over exactly its deployment's serving pods, the
picker's objects, and Envoy Gateway's two route policies that send every request where the picker
says; a `Service`-routed one and a split get neither. The rules that refuse a bad split or a
deployment at zero that nothing would wake are checked with their paths and fixes. The real picker
answering against simulated servers is the engine tier's (tests/engine/test_endpoint_picker.py).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from infra.config.issues import ConfigError
from infra.config.stackfile import parse_fleet
from infra.serving.picker import CRDS_URL, DESTINATION_HEADER, QUEUE_METRIC
from infra.vocabulary import DEPLOYMENT_LABEL
from tests.conftest import of_type, run_fleet
from tests.test_model_service import served_fleet
from tooling.mockrun import MockRun, Registration
from tooling.plan import deployments_json, plain

POOL = "kubernetes:inference.networking.k8s.io/v1:InferencePool"
EXT_PROC = "kubernetes:gateway.envoyproxy.io/v1alpha1:EnvoyExtensionPolicy"
TRAFFIC = "kubernetes:gateway.envoyproxy.io/v1alpha1:BackendTrafficPolicy"
ROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
SCALED = "kubernetes:keda.sh/v1alpha1:ScaledObject"
CRDS = "kubernetes:yaml/v2:ConfigFile"


def inputs(result: MockRun, type_token: str) -> list[dict[str, Any]]:
    assert result.error is None, result.error
    return [plain(dict(r.inputs)) for r in of_type(result, type_token)]


def one(result: MockRun, type_token: str) -> dict[str, Any]:
    [found] = inputs(result, type_token)
    return found


def picker_config(result: MockRun) -> dict[str, Any]:
    [config] = [c for c in inputs(result, CONFIG_MAP) if c["metadata"]["name"].endswith("-epp")]
    loaded: dict[str, Any] = yaml.safe_load(config["data"]["picker.yaml"])
    return loaded


def crd_files(result: MockRun) -> list[str]:
    return [plain(dict(r.inputs))["file"] for r in of_type(result, CRDS) if r.name.endswith("-inference-crds")]


def picker_deployment(result: MockRun) -> Registration:
    [dep] = [r for r in of_type(result, DEPLOYMENT) if r.name.endswith("-picker")]
    return dep


def test_a_service_routes_through_its_deployments_picker_by_default() -> None:
    result = run_fleet(served_fleet("GKE"))
    pool = one(result, POOL)
    assert pool["metadata"] == {"name": "qwen", "namespace": "ml-team", "labels": {DEPLOYMENT_LABEL: "qwen"}}
    assert pool["spec"] == {
        "selector": {"matchLabels": {DEPLOYMENT_LABEL: "qwen"}},
        "targetPorts": [{"number": 8000}],
        "endpointPickerRef": {"name": "qwen-epp", "port": {"number": 9002}, "failureMode": "FailClose"},
    }
    config = picker_config(result)
    assert config["kind"] == "EndpointPickerConfig"
    [profile] = config["schedulingProfiles"]
    assert {p["pluginRef"]: p.get("weight") for p in profile["plugins"]} == {
        "prefix-cache-scorer": 3,
        "queue-scorer": 2,
        "max-score-picker": None,
    }
    assert "flowControl" not in config
    spec = plain(dict(picker_deployment(result).inputs))["spec"]["template"]["spec"]
    [container] = spec["containers"]
    args = container["args"]
    assert args[args.index("--pool-name") + 1] == "qwen" and args[args.index("--pool-namespace") + 1] == "ml-team"
    assert "--secure-serving=false" in args
    # The gateway asks the picker for every request and sends it to the pod the picker names.
    route_ref = [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "qwen"}]
    ext = one(result, EXT_PROC)["spec"]
    assert ext["targetRefs"] == route_ref
    [proc] = ext["extProc"]
    assert proc["backendRefs"] == [{"name": "qwen-epp", "port": 9002}]
    assert proc["processingMode"]["request"] == {"body": "FullDuplexStreamed"}
    assert "failOpen" not in proc  # Envoy Gateway refuses it with FullDuplexStreamed
    traffic = one(result, TRAFFIC)["spec"]
    assert traffic["targetRefs"] == route_ref
    assert traffic["loadBalancer"]["endpointOverride"] == {"extractFrom": [{"header": DESTINATION_HEADER}]}
    # The pool's CRDs come with the serving stack, from the release.
    assert crd_files(result) == [CRDS_URL]


def test_a_multi_node_deployments_pool_selects_its_group_leaders_only() -> None:
    raw = served_fleet("Civo", nodes=2, args=["--model", "Qwen/Qwen2.5-0.5B-Instruct", "--pipeline-parallel-size", "2"])
    raw["clusters"][0]["nodePools"][0]["nodeCount"] = 2
    pool = one(run_fleet(raw), POOL)
    assert pool["spec"]["selector"]["matchLabels"] == {
        DEPLOYMENT_LABEL: "qwen",
        "leaderworkerset.sigs.k8s.io/worker-index": "0",
    }


def test_service_routing_builds_no_pool_picker_or_policies() -> None:
    raw = served_fleet("GKE")
    raw["services"][0]["routing"] = "Service"
    result = run_fleet(raw)
    assert inputs(result, POOL) == inputs(result, EXT_PROC) == inputs(result, TRAFFIC) == crd_files(result) == []
    assert [r.name for r in of_type(result, DEPLOYMENT)] == ["c-qwen-deployment"]


def split_fleet(**service: Any) -> dict[str, Any]:
    raw = served_fleet("GKE")
    canary = copy.deepcopy(raw["deployments"][0])
    canary.update(name="qwen-next", image="vllm/vllm-openai:v0.24.0")
    raw["deployments"].append(canary)
    raw["clusters"][0]["nodePools"][0]["nodeCount"] = 2
    raw["services"] = [
        {
            "name": "qwen",
            "backends": [{"deployment": "qwen", "weight": 90}, {"deployment": "qwen-next", "weight": 10}],
            **service,
        }
    ]
    return raw


def test_a_split_routes_by_weight_to_each_deployments_service() -> None:
    result = run_fleet(split_fleet())
    [rule] = one(result, ROUTE)["spec"]["rules"]
    assert rule["backendRefs"] == [
        {"name": "qwen", "port": 8000, "weight": 90},
        {"name": "qwen-next", "port": 8000, "weight": 10},
    ]
    assert inputs(result, POOL) == inputs(result, EXT_PROC) == []


def issues_of(raw: dict[str, Any]) -> list[tuple[str, str, str]]:
    with pytest.raises(ConfigError) as err:
        parse_fleet(raw, "Pulumi.test.yaml")
    return [(i.path, i.problem, i.fix) for i in err.value.issues]


@pytest.mark.parametrize(
    ("change", "path", "fix"),
    [
        (lambda raw: raw["services"][0].update(routing="Picker"), "services[0].routing", "remove routing"),
        (
            lambda raw: [b.update(weight=0) for b in raw["services"][0]["backends"]],
            "services[0].backends",
            "give at least one backend a weight above 0",
        ),
        (
            lambda raw: raw["deployments"][1].update(args=["--model", "Qwen/Qwen3-8B"]),
            "services[0].backends[1].deployment",
            "split only deployments that serve the same model",
        ),
        (
            lambda raw: raw["deployments"][1].update(namespace="other"),
            "services[0].backends[1].deployment",
            "run the split's deployments in one namespace (namespace: ml-team)",
        ),
        (
            lambda raw: raw["services"][0]["backends"][1].update(deployment="qwen"),
            "services[0].backends[1].deployment",
            "name each deployment once",
        ),
        (
            lambda raw: raw["services"][0]["backends"][1].update(deployment="nope"),
            "services[0].backends[1].deployment",
            "use one of: qwen, qwen-next",
        ),
    ],
)
def test_a_bad_split_is_refused_with_its_path_and_fix(change: Any, path: str, fix: str) -> None:
    raw = split_fleet()
    change(raw)
    found = issues_of(raw)
    assert [(p, f) for p, _, f in found if p == path and f.startswith(fix)], found


def test_a_service_naming_both_a_deployment_and_backends_is_refused() -> None:
    raw = split_fleet()
    raw["services"][0]["deployment"] = "qwen"
    [(path, _, fix)] = issues_of(raw)
    assert path == "services[0]" and "not both" in fix


def scaled(min_replicas: int, **extra: Any) -> dict[str, Any]:
    raw = served_fleet("Civo", startupSeconds=600)
    raw["deployments"][0].update(
        autoscaling={"minReplicas": min_replicas, "maxReplicas": 2, "metric": "RequestsWaiting", "target": 4, **extra}
    )
    raw["clusters"][0]["nodePools"][0]["nodeCount"] = 2
    return raw


def test_a_deployment_at_zero_wakes_on_the_requests_its_picker_holds() -> None:
    result = run_fleet(scaled(0, queueSeconds=660))
    config = picker_config(result)
    assert config["featureGates"] == ["flowControl"]
    assert config["flowControl"] == {"defaultRequestTTL": "660s"}
    so = one(result, SCALED)["spec"]
    assert so["minReplicaCount"] == 0
    [_, held] = so["triggers"]
    assert held["metadata"]["query"] == f'sum({QUEUE_METRIC}{{namespace="ml-team",inference_pool="qwen"}})'
    assert held["metadata"]["activationThreshold"] == "0"
    # The gateway waits longer for the picker's answer than the picker holds a request.
    [proc] = one(result, EXT_PROC)["spec"]["extProc"]
    assert int(proc["messageTimeout"].removesuffix("s")) > 660
    # The picker's own metrics reach Prometheus.
    monitors = [
        m for m in inputs(result, "kubernetes:monitoring.coreos.com/v1:PodMonitor") if "epp" in m["metadata"]["name"]
    ]
    assert [m["spec"]["podMetricsEndpoints"] for m in monitors] == [[{"port": "metrics", "path": "/metrics"}]]


@pytest.mark.parametrize(
    ("min_replicas", "extra", "routing", "path", "fix"),
    [
        (0, {"queueSeconds": 660}, "Service", "deployments[0].autoscaling.minReplicas", "publish it with a service"),
        (0, {}, None, "deployments[0].autoscaling.queueSeconds", "set queueSeconds: 660"),
        (0, {"queueSeconds": 659}, None, "deployments[0].autoscaling.queueSeconds", "set queueSeconds: 660 or more"),
        (1, {"queueSeconds": 30}, "Service", "deployments[0].autoscaling.queueSeconds", "remove queueSeconds"),
    ],
)
def test_scale_from_zero_needs_a_picker_and_a_queue_longer_than_a_start(
    min_replicas: int, extra: dict[str, Any], routing: str | None, path: str, fix: str
) -> None:
    raw = scaled(min_replicas, **extra)
    if routing is not None:
        raw["services"][0]["routing"] = routing
    found = issues_of(raw)
    assert [(p, f) for p, _, f in found if p == path and f.startswith(fix)], found


def test_a_queue_above_a_start_plans_clean_at_minimum_one() -> None:
    result = run_fleet(scaled(1, queueSeconds=30))
    assert picker_config(result)["flowControl"] == {"defaultRequestTTL": "30s"}
    assert len(one(result, SCALED)["spec"]["triggers"]) == 1


def test_the_pool_crds_come_from_the_mirror_that_names_their_file() -> None:
    raw = served_fleet("GKE")
    raw["chartMirror"] = {"components": {"inference-extension-crds": "https://mirror.example.internal/manifests.yaml"}}
    assert crd_files(run_fleet(raw)) == ["https://mirror.example.internal/manifests.yaml"]
    raw["chartMirror"] = {"components": {"inference-extension-crds": {"url": "oci://r.example/x", "version": "1.0.0"}}}
    [(path, _, fix)] = issues_of(raw)
    assert path == "chartMirror.components.inference-extension-crds" and fix.startswith(
        "write the file's own HTTP(S) URL"
    )


def test_a_class_without_its_clouds_block_is_reported_not_raised() -> None:
    """The value rules run beside the references': a GPU deployment on a class that lost its block
    is a reported path, where it once raised inside the weights' check."""
    raw = served_fleet("GKE")
    del raw["classes"][0]["provisioning"]["gke"]
    assert any(path.startswith("classes[0].provisioning") for path, _, _ in issues_of(raw))


@pytest.mark.parametrize("namespace", ["ml-team", "other"])
def test_two_deployments_of_one_name_on_a_cluster_are_refused(namespace: str) -> None:
    """Their objects, and the pods their Service and InferencePool select, would be each other's."""
    raw = served_fleet("Civo")
    twin = copy.deepcopy(raw["deployments"][0])
    twin["namespace"] = namespace
    raw["deployments"].append(twin)
    raw["clusters"][0]["nodePools"][0]["nodeCount"] = 2
    found = issues_of(raw)
    assert ("deployments[1].name", "deployments[0] is also named 'qwen' on cluster 'c'") in [
        (p, m) for p, m, _ in found
    ]


def test_the_plan_shows_each_split_deployment_its_endpoint_and_weights() -> None:
    result = run_fleet(split_fleet())
    shown = {d["name"]: d["endpoint"] for d in deployments_json(result.resources)}
    assert shown["qwen"] == shown["qwen-next"]
    assert shown["qwen"]["routing"] == "Service"
    assert [(b["deployment"], b["weight"]) for b in shown["qwen"]["backends"]] == [("qwen", 90), ("qwen-next", 10)]

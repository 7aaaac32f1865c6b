"""What a real kube-apiserver v1.36.0 says of our objects that no schema can (tests/engine/kube.py).

The OpenAPI and CRD schemas the unit tests check against know nothing of immutable fields, feature
gates or emulated versions. The server does: a ResourceClaimTemplate's spec cannot change in place,
and a server emulating 1.35 (or with `DRAConsumableCapacity` off) drops a capacity request without
a word, so the claim then asks for a whole device.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from pulumi import automation as auto

from clouds.mock import fake_kubeconfig
from infra.config.model import ScalingMetric
from infra.config.stackfile import load_stack_file
from infra.serving import telemetry
from infra.serving.picker import PICKER_LABEL
from program.main import run
from tests.engine.harness import Engine
from tests.engine.kube import (
    ApiError,
    ApiServer,
    Etcd,
    ServerPool,
)
from tests.test_analyzer import BYO
from tests.test_k8s_schema import ROOT, manifest
from tooling.mockrun import run_under_mocks
from tooling.stackconfig import config_of, runtime_config

NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "serving"}}


def template(cpus: str) -> dict[str, Any]:
    """A claim template as components/model_deployment.py writes one for a dra.cpu claim."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "qwen-claims", "namespace": "serving"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "cpu",
                            "exactly": {
                                "deviceClassName": "dra.cpu",
                                "allocationMode": "ExactCount",
                                "count": 1,
                                "capacity": {"requests": {"dra.cpu/cpu": cpus}},
                            },
                        }
                    ]
                }
            }
        },
    }


def capacity(stored: dict[str, Any]) -> Any:
    return stored["spec"]["spec"]["devices"]["requests"][0]["exactly"].get("capacity")


@pytest.fixture
def server(kube: ServerPool) -> ApiServer:
    return kube.server("https://direct.invalid")


def test_a_claim_templates_spec_cannot_change_in_place(server: ApiServer) -> None:
    assert server.version()["gitVersion"] == "v1.36.0"
    server.apply(NAMESPACE)
    server.apply(template("6"))
    stored = server.get(template("6"))
    assert stored is not None and capacity(stored) == {"requests": {"dra.cpu/cpu": "6"}}

    relabelled = copy.deepcopy(template("6"))
    relabelled["metadata"]["labels"] = {"modelplane.ai/deployment": "qwen"}
    server.apply(relabelled)  # metadata may change

    for dry_run in (True, False):  # a preview's dry run is refused as the update is
        with pytest.raises(ApiError) as refused:
            server.apply(template("8"), dry_run=dry_run)
        assert refused.value.code == 422
        assert "field is immutable" in str(refused.value)


@pytest.mark.parametrize(
    "flag", ["--emulated-version=kube=1.35", "--feature-gates=DRAConsumableCapacity=false"], ids=["1.35", "gate-off"]
)
def test_a_server_emulating_1_35_or_without_the_gate_drops_a_capacity_request(
    tmp_path: Path, etcd: Etcd, flag: str
) -> None:
    pool = ServerPool(tmp_path / "kube-old", etcd.url, (flag,))
    try:
        server = pool.server("https://old.invalid")
        server.apply(NAMESPACE)
        server.apply(template("6"))  # accepted, with no warning
        stored = server.get(template("6"))
        assert stored is not None
        assert capacity(stored) is None, f"the server started with {flag} kept the capacity request"
        assert stored["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1  # a whole device
    finally:
        pool.close()


def byo(version: str) -> dict[str, Any]:
    fleet = copy.deepcopy(BYO)
    fleet["clusters"][0]["existing"]["kubernetesVersion"] = version
    return fleet


def test_the_program_refuses_capacity_claims_on_a_1_35_cluster_before_anything_is_sent(engine: Engine) -> None:
    kubeconfig = auto.ConfigValue(value=fake_kubeconfig("byo-lab"), secret=True)
    engine.write_fleet("byo", byo("1.35"))
    stack = engine.stack("byo")
    stack.set_config("modelplane:kubeconfig", kubeconfig)
    for action in (stack.preview, stack.up):
        with pytest.raises(auto.CommandError) as refused:
            action()
        assert "clusters[0].existing.kubernetesVersion" in str(refused.value)
        assert "1.36" in str(refused.value)
    assert [e for e in engine.ops().entries if e["op"] != "start"] == []
    assert engine.kube is not None and engine.kube.servers() == {}, "an object reached an API server"

    # The same cluster at 1.36: its objects reach the server, which keeps them.
    engine.write_fleet("byo", byo("1.36"))
    stack.set_config("modelplane:kubeconfig", kubeconfig)
    assert stack.up().summary.result == "succeeded"
    [server] = engine.kube.servers().values()
    amd = server.get({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.amd.com"}})
    assert amd is not None


def test_the_real_server_accepts_a_multi_node_stacks_leader_worker_set(server: ApiServer) -> None:
    """nodes: 2 renders a LeaderWorkerSet of size 2 whose pods each claim their devices; the real
    kube-apiserver, serving the CRD of the pinned lws chart, accepts it as the program writes it."""
    loaded = load_stack_file(ROOT / "stacks" / "Pulumi.nebius-671b.yaml")
    config, secret_keys = config_of(loaded)
    result = run_under_mocks(run, loaded.stack, config, secret_keys)
    [lws] = [manifest(r) for r in result.resources if r.type.endswith(":LeaderWorkerSet")]
    group = lws["spec"]["leaderWorkerTemplate"]
    assert group["size"] == 2
    for role in ("leaderTemplate", "workerTemplate"):
        assert group[role]["spec"]["resourceClaims"], f"the {role} claims no devices"
    server.apply({**NAMESPACE, "metadata": {"name": lws["metadata"]["namespace"]}})
    stored = server.apply(lws)
    assert stored["spec"]["leaderWorkerTemplate"]["size"] == 2
    bad = copy.deepcopy(lws)
    bad["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "Sometimes"
    with pytest.raises(ApiError):
        server.apply(bad, dry_run=True)


# Stacks whose every deployment the next test autoscales: a multi-node one (its ScaledObject drives
# a LeaderWorkerSet), and one-node ones on a cloud cluster and an Existing one.
AUTOSCALED_STACKS = ("nebius-671b", "digitalocean-atl1", "byo-mixed")
TARGETS = {ScalingMetric.REQUESTS_WAITING: 5, ScalingMetric.REQUESTS_RUNNING: 8, ScalingMetric.KV_CACHE_USAGE: 0.75}


def autoscaled_objects(stack_name: str) -> list[dict[str, Any]]:
    """The ScaledObjects and PodMonitors of a committed stack with each of its deployments
    autoscaled between 1 and its replicas, the metrics taken in turn."""
    loaded = load_stack_file(ROOT / "stacks" / f"Pulumi.{stack_name}.yaml")
    raw = loaded.fleet.model_dump(by_alias=True, mode="json", exclude_none=True)
    metrics = list(TARGETS)
    for i, dep in enumerate(raw["deployments"]):
        metric = metrics[i % len(metrics)]
        peak = dep.pop("replicas", 1)
        dep["autoscaling"] = {"minReplicas": 1, "maxReplicas": peak, "metric": str(metric), "target": TARGETS[metric]}
    config, secret_keys = runtime_config(raw, loaded.secrets, loaded.plain)
    result = run_under_mocks(run, loaded.stack, config, secret_keys)
    assert result.error is None, result.error
    kinds = (":ScaledObject", ":PodMonitor")
    return [manifest(r) for r in result.resources if r.type.endswith(kinds)]


def kept(written: Any, stored: Any) -> bool:
    """Every value written is in what the server stored (which may hold defaults besides)."""
    if isinstance(written, dict):
        return isinstance(stored, dict) and all(k in stored and kept(v, stored[k]) for k, v in written.items())
    if isinstance(written, list):
        return isinstance(stored, list) and len(written) == len(stored) and all(map(kept, written, stored))
    return bool(written == stored)


# The kinds a picker-routed service adds: its pool, and Envoy Gateway's two policies on its route.
ROUTING_KINDS = (":InferencePool", ":EnvoyExtensionPolicy", ":BackendTrafficPolicy", ":HTTPRoute")


@pytest.mark.parametrize("stack_name", ["byo-mixed", "nebius-671b"])
def test_the_real_server_accepts_every_pool_and_route_policy_of_a_picker_routed_service(
    server: ApiServer, stack_name: str
) -> None:
    """The real kube-apiserver, serving the InferencePool CRD of the pinned inference extension release
    and Envoy Gateway's policy CRDs of its pinned chart, stores every pool, picker policy and route the
    program writes as written (their CEL rules run: a failOpen beside FullDuplexStreamed is refused)."""
    loaded = load_stack_file(ROOT / "stacks" / f"Pulumi.{stack_name}.yaml")
    raw = loaded.fleet.model_dump(by_alias=True, mode="json", exclude_unset=True)
    config, secret_keys = runtime_config(raw, loaded.secrets, loaded.plain)
    result = run_under_mocks(run, loaded.stack, config, secret_keys)
    assert result.error is None, result.error
    objects = [manifest(r) for r in result.resources if r.type.endswith(ROUTING_KINDS)]
    kinds = {o["kind"] for o in objects}
    assert kinds == {k.lstrip(":") for k in ROUTING_KINDS}, kinds
    for namespace in {o["metadata"]["namespace"] for o in objects}:
        server.apply({**NAMESPACE, "metadata": {"name": namespace}})
    for obj in objects:
        if obj["kind"] == "HTTPRoute":
            continue  # its Gateway's namespace is not this test's; the policies only name the route
        stored = server.apply(obj)
        # The server fills its CRD's defaults in (a pool's appProtocol, its picker's kind); it
        # keeps every value written.
        assert kept(obj["spec"], stored["spec"]), f"the server changed {obj['kind']} {obj['metadata']['name']}"
    policy = next(o for o in objects if o["kind"] == "EnvoyExtensionPolicy")
    refused = copy.deepcopy(policy)
    refused["metadata"]["name"] = "fails-open"
    refused["spec"]["extProc"][0]["failOpen"] = True
    with pytest.raises(ApiError, match="FailOpen must be false"):
        server.apply(refused)


@pytest.mark.parametrize("stack_name", AUTOSCALED_STACKS)
def test_the_real_server_accepts_every_autoscaled_deployments_scaled_object_and_pod_monitor(
    server: ApiServer, stack_name: str
) -> None:
    """The real kube-apiserver, serving the ScaledObject CRD of the pinned KEDA release and the
    PodMonitor CRD of kube-prometheus-stack's operator, stores both as the program writes them,
    with the bounds and the metric each deployment was given; a wrong one is refused."""
    objects = autoscaled_objects(stack_name)
    scaled = [o for o in objects if o["kind"] == "ScaledObject"]
    # One PodMonitor a deployment, beside the telemetry collector's (components/serving_stack.py) and
    # each endpoint picker's (components/features/picker.py).
    pickers = [o for o in objects if PICKER_LABEL in (o["metadata"].get("labels") or {})]
    monitors = [
        o
        for o in objects
        if o["kind"] == "PodMonitor" and o["metadata"]["namespace"] != telemetry.NAMESPACE and o not in pickers
    ]
    assert scaled and len(scaled) == len(monitors)
    assert len([o for o in objects if o["kind"] == "PodMonitor"]) == len(monitors) + len(pickers) + 1
    for namespace in {o["metadata"]["namespace"] for o in objects}:
        server.apply({**NAMESPACE, "metadata": {"name": namespace}})
    for obj in objects:
        stored = server.apply(obj)
        assert stored["spec"] == obj["spec"], f"the server changed {obj['kind']} {obj['metadata']['name']}"
    for obj in scaled:
        stored = server.get(obj)
        assert stored is not None
        spec = stored["spec"]
        assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (
            obj["spec"]["minReplicaCount"],
            obj["spec"]["maxReplicaCount"],
        )
        assert spec["triggers"][0]["metadata"]["query"].count("vllm:") == 1
    if stack_name == "nebius-671b":
        assert scaled[0]["spec"]["scaleTargetRef"]["kind"] == "LeaderWorkerSet"

    # Server-side apply refuses what the schema does not type, naming the field (as a 500: the patch
    # cannot be made a typed object) or, for a value its validation refuses, with a 422.
    text_bound = copy.deepcopy(scaled[0])
    text_bound["spec"]["minReplicaCount"] = "1"
    unknown_trigger_field = copy.deepcopy(scaled[0])
    unknown_trigger_field["spec"]["triggers"][0]["threshold"] = "5"
    text_labels = copy.deepcopy(monitors[0])
    text_labels["spec"]["podTargetLabels"] = "modelplane.ai/deployment"
    wrong = [
        (text_bound, ".spec.minReplicaCount"),
        (unknown_trigger_field, ".spec.triggers[0].threshold"),
        (text_labels, ".spec.podTargetLabels"),
    ]
    for obj, field in wrong:
        with pytest.raises(ApiError) as refused:
            server.apply(obj, dry_run=True)
        assert field in str(refused.value), refused.value


# The kinds of a fleet service (components/features/fleet.py) and the other cluster's part of it.
FLEET_KINDS = (
    ":Backend",
    ":HTTPRouteFilter",
    ":BackendTrafficPolicy",
    ":SecurityPolicy",
    ":HTTPRoute",
    ":Gateway",
    ":GatewayClass",
)


def test_the_real_server_accepts_a_fleet_service_over_two_clusters_and_an_external_endpoint(
    server: ApiServer,
) -> None:
    """The real kube-apiserver, serving Envoy Gateway's CRDs of its pinned chart and the Gateway API
    CRDs that chart carries, stores the Backends (one a fallback, two over TLS), the route filter, the
    traffic and security policies, the weighted route, the other cluster's fleet route and both
    Gateways of the example fleet stack as written: their CEL rules run on what the program writes."""
    loaded = load_stack_file(ROOT / "stacks" / "Pulumi.byo-fleet.yaml")
    config, secret_keys = config_of(loaded)
    result = run_under_mocks(run, loaded.stack, config, secret_keys)
    assert result.error is None, result.error
    objects = [manifest(r) for r in result.resources if r.custom and r.type.endswith(FLEET_KINDS)]
    assert {o["kind"] for o in objects} == {k.lstrip(":") for k in FLEET_KINDS}
    backends = {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "Backend"}
    assert [n for n, spec in backends.items() if spec.get("fallback")] == ["qwen-2"]
    # Two clusters' objects in one server: the GatewayClass and the Gateway of each are alike by name.
    seen: set[tuple[str, str, str]] = set()
    for obj in objects:
        meta = obj["metadata"]
        if "namespace" in meta:
            server.apply({**NAMESPACE, "metadata": {"name": meta["namespace"]}})
        stored = server.apply(obj)
        assert kept(obj["spec"], stored["spec"]), f"the server changed {obj['kind']} {meta['name']}"
        seen.add((obj["kind"], meta.get("namespace", ""), meta["name"]))
    assert ("SecurityPolicy", "default", "qwen") in seen and ("HTTPRoute", "ml-team", "qwen-fleet") in seen
    refused = copy.deepcopy(backends["qwen-2"])
    refused["tls"]["caCertificateRefs"] = [{"group": "", "kind": "Secret", "name": "some-ca"}]
    with pytest.raises(ApiError, match="must not contain both CACertificateRefs and WellKnownCACertificates"):
        server.apply(
            {
                "apiVersion": "gateway.envoyproxy.io/v1alpha1",
                "kind": "Backend",
                "metadata": {"name": "both-cas", "namespace": "default"},
                "spec": refused,
            }
        )

"""The endpoint picker routes by prompt prefix and by queue, asked as a gateway asks it.

The real picker (`epp` of sigs.k8s.io/gateway-api-inference-extension v1.5.0, `engine/build.sh
epp`) runs as the pod of a Deployment of a local cluster (cluster.py), the one the product gives a
served deployment: its ConfigMap, service account, Role, InferencePool, Deployment and Service
(`picker_objects`: rendered by the program, applied here). podproc.py runs the picker for that pod with the container's own
arguments, environment and ConfigMap volume, at the pod's IP, and holds the pod not Ready until the
picker's gRPC health check says it is serving. The deployment's three model pods are served by
simulated vLLM servers (servers.py, simulator.py). The picker finds them through the InferencePool
(its CRD from the module), scrapes each one's `/metrics` itself (vLLM's metric names, its default
engine config), and is asked at its pod's address over Envoy's external-processing gRPC API
(`envoy.service.ext_proc.v3.ExternalProcessor/Process`, from PyPI's `xds-protos`) where a completion
should go: the test sends what Envoy sends for a request, its headers and then its body with end of
stream, and reads the `x-gateway-destination-endpoint` header the picker sets in its reply
(pkg/epp/handlers/request.go and pkg/epp/metadata/consts.go at v1.5.0).

What breaks it: a product picker configured without the prefix-cache scorer
(`infra.serving.picker.SCORERS`) sends a repeated prefix to a
random replica (each of eight asks has one chance in three of following the first), and one without
the queue scorer sends new prompts to the busy replica too (ten asks all missing it by chance: one in
sixty). A simulator whose queue gauge did not count waiting requests, or a picker that could not
scrape the pods, leaves the busy replica looking idle. A picker pod marked Ready before its picker
serves (KWOK's Ready, left standing) fails the readiness test. The simulator needs no prefix cache:
the picker's prefix scorer is approximate, it remembers which prefixes it sent where
(pkg/epp/framework/plugins/requestcontrol/dataproducer/approximateprefix, `PreRequest`).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
import yaml

from components.model_deployment import ENGINE_PORT_NAME
from infra.serving import picker as epp
from infra.vocabulary import DEPLOYMENT_LABEL
from tests.conftest import cpu_class, run_fleet
from tests.engine import extproc
from tests.engine.cluster import LocalCluster, NodeSpec, condition, wait_for
from tests.engine.kube import ApiServer, Etcd, module_dir
from tests.engine.podproc import PICKER_LABEL, PodProcesses, endpoint_picker, health_status
from tests.engine.servers import MODEL_SERVER, Load, gauges, model_servers
from tests.test_k8s_schema import manifest
from tests.tools import require

MODEL = "chat"
ENGINE_PORT = 8000
NAMESPACE = "default"
REPLICAS = 3
PICKER = "endpoint-picker"  # podproc's program
# The picker finds the pods through an InferencePool: its mode without one (`--endpoint-selector`)
# exits at v1.5.0 with "name must not be empty", since the runner hands that mode's endpoint pool
# the empty --pool-name (cmd/epp/runner/runner.go, `setupDatastore`, `NewEndpointPoolFromOptions`).
# The InferencePool CRD and the two kinds the picker watches when served, InferenceObjective and
# InferenceModelRewrite (pkg/epp/server/controller_config.go at v1.5.0), from the module engine/epp
# pins.
CRDS = (
    "config/crd/bases/inference.networking.k8s.io_inferencepools.yaml",
    "config/crd/bases/inference.networking.x-k8s.io_inferenceobjectives.yaml",
    "config/crd/bases/inference.networking.x-k8s.io_inferencemodelrewrites.yaml",
)
# The picker's ports (pkg/epp/server/options.go at v1.5.0 defaults; the chart's containerPorts).
EXT_PROC_PORT, HEALTH_PORT, METRICS_PORT = epp.EXT_PROC_PORT, epp.HEALTH_PORT, epp.METRICS_PORT
# The chart's probe service (config/charts/epplib/templates/_deployment.yaml at v1.5.0); without
# leader election every service name is answered by whether the pool has synced
# (cmd/epp/runner/health.go).
HEALTH_SERVICE = epp.HEALTH_SERVICE
# A prompt's prefix is hashed in blocks of 16 tokens x 4 characters (approximateprefix/types.go,
# `defaultBlockSizeTokens`, `averageCharactersPerToken`): this one is eight blocks.
SHARED_PREFIX = "You are a careful assistant. Answer in one short paragraph. " * 9


def model_pod(name: str) -> dict[str, Any]:
    """A pod of one model deployment, as servers.py serves it: labelled, its engine port named."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {DEPLOYMENT_LABEL: MODEL}},
        "spec": {
            "containers": [
                {
                    "name": "engine",
                    "image": "vllm/vllm-openai:v0.23.0",
                    "args": ["--served-model-name", MODEL, "--port", str(ENGINE_PORT)],
                    "ports": [{"name": ENGINE_PORT_NAME, "containerPort": ENGINE_PORT}],
                }
            ]
        },
    }


def pool_crds() -> list[dict[str, Any]]:
    folder = module_dir("sigs.k8s.io/gateway-api-inference-extension", "epp")
    docs = [d for path in CRDS for d in yaml.safe_load_all((folder / path).read_text())]
    return [d for d in docs if d and d.get("kind") == "CustomResourceDefinition"]


def picker_objects(deployment: str = MODEL) -> list[dict[str, Any]]:
    """The objects the program registers for the endpoint picker of a `deployment` that a service
    publishes (`components.features.picker`: its ConfigMap, ServiceAccount, Role and RoleBinding,
    InferencePool, Deployment and Service), rendered by the program itself under mocks, so the picker
    asked here runs exactly as the product configures it. The engine pods are the test's own
    (`model_pod`), labelled as the deployment's are."""
    raw = {
        "classes": [cpu_class("cpu", None)],
        "clusters": [
            {
                "name": "lab",
                "source": "Existing",
                "existing": {"kubernetesVersion": "1.36"},
                "nodePools": [{"name": "cpu", "className": "cpu"}],
            }
        ],
        "deployments": [
            {
                "name": deployment,
                "namespace": NAMESPACE,
                "cluster": "lab",
                "pool": "cpu",
                "image": "vllm/vllm-openai-cpu:v0.23.0-x86_64",
                "args": ["--served-model-name", MODEL],
                "port": ENGINE_PORT,
                "replicas": REPLICAS,
                "devices": [{"name": "cpu"}],
            }
        ],
        "services": [{"name": deployment, "deployment": deployment}],
    }
    result = run_fleet(raw)
    assert result.error is None, result.error
    parent = f"lab-{deployment}"
    wanted = [
        r
        for r in result.resources
        if r.parent == parent and (r.name.startswith(f"{parent}-picker") or r.name.endswith("-inferencepool"))
    ]
    objects = [manifest(r) for r in wanted if not r.type.endswith(":PodMonitor")]
    assert {o["kind"] for o in objects} == {
        "ConfigMap",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "InferencePool",
        "Deployment",
        "Service",
    }, objects
    return objects


def picker_pod(api: ApiServer, deployment: str) -> dict[str, Any] | None:
    """The running pod of the deployment's picker, or None while there is none."""
    for pod in api.list_all("v1", "Pod", NAMESPACE):
        labels, status = pod["metadata"].get("labels") or {}, pod.get("status") or {}
        if labels.get(PICKER_LABEL) == deployment and status.get("podIP"):
            return dict(pod)
    return None


def service_endpoints(api: ApiServer, service: str, ready: bool = True) -> list[str]:
    """The addresses of the Service's endpoints that are Ready (or, `ready` off, not Ready), as the
    controller manager lists them."""
    return [
        endpoint["addresses"][0]
        for piece in api.list_all("discovery.k8s.io/v1", "EndpointSlice", NAMESPACE)
        if (piece["metadata"].get("labels") or {}).get("kubernetes.io/service-name") == service
        for endpoint in piece.get("endpoints") or []
        if bool((endpoint.get("conditions") or {}).get("ready")) is ready
    ]


@dataclass
class Picker:
    """The running picker (its pod's address), the model servers' addresses (pod name -> "ip:port"),
    a channel to it, and the cluster it runs in."""

    address: str
    channel: grpc.Channel
    endpoints: dict[str, str]
    api: ApiServer
    pods: PodProcesses

    def ask(self, prompt: str) -> str:
        """Where the picker sends a completion of `prompt`: the pod's name."""
        address = extproc.ask(self.channel, extproc.completion_body(MODEL, prompt))
        return next(pod for pod, at in self.endpoints.items() if at == address)

    def gauge(self, name: str) -> float:
        """The picker's own gauge `name` (summed over its series), from its metrics endpoint."""
        return extproc.gauge(self.address, name)


@pytest.fixture(scope="module")
def picker(tmp_path_factory: pytest.TempPathFactory, store: Etcd) -> Iterator[Picker]:
    require("epp", "the endpoint picker's test")
    folder = tmp_path_factory.mktemp("picker")
    nodes = [NodeSpec(name=f"node-{i}", pool="models", labels={}) for i in range(2)]
    cluster = LocalCluster.start(folder / "cluster", store.url, f"/{secrets.token_hex(8)}", nodes)
    pods = PodProcesses(cluster.server, folder / "pods", [model_servers(), endpoint_picker()]).start()
    channel: grpc.Channel | None = None
    logs = f"see {folder / 'pods'}"
    try:
        cluster.server.install_crds(pool_crds())
        names = [f"{MODEL}-{i}" for i in range(REPLICAS)]
        for name in names:
            cluster.server.create(model_pod(name))
        for obj in picker_objects():
            cluster.server.apply(obj)
        want = {f"{NAMESPACE}/{n}" for n in names}
        wait_for("the model servers of every pod", lambda: pods.serving(MODEL_SERVER) >= want, timeout=90)
        listed = {p["metadata"]["name"]: p for p in cluster.list("v1", "Pod", NAMESPACE)}
        endpoints = {n: f"{listed[n]['status']['podIP']}:{ENGINE_PORT}" for n in names}
        wait_for(
            "every simulator answering",
            lambda: all(gauges(f"http://{a}") is not None for a in endpoints.values()),
            retrying=(OSError,),  # a simulator started, not yet listening
        )

        # The picker's address as a gateway finds it: its Service's Ready endpoint, which the
        # controller manager lists once the pod is Ready, that is once the picker serves.
        address = wait_for(
            f"the picker's Service with a Ready endpoint ({logs})",
            lambda: next(iter(service_endpoints(cluster.server, f"{MODEL}-epp")), None),
            timeout=90,
        )
        channel = grpc.insecure_channel(f"{address}:{EXT_PROC_PORT}")
        found = Picker(address, channel, endpoints, cluster.server, pods)
        wait_for(
            f"the picker counting {REPLICAS} ready pods ({logs})",
            lambda: found.gauge("inference_pool_ready_pods") == REPLICAS,
            timeout=60,
            retrying=(OSError, ValueError, KeyError),
        )
        yield found
    finally:
        if channel is not None:
            channel.close()
        pods.stop()
        cluster.stop()


def test_a_prompt_sharing_a_prefix_goes_where_that_prefix_went_before(picker: Picker) -> None:
    first = picker.ask(SHARED_PREFIX + "What is the capital of France?")
    followers = [picker.ask(SHARED_PREFIX + f"Question {i}: name a prime above {i * 7}.") for i in range(8)]
    assert followers == [first] * len(followers), (first, followers)


def test_a_replica_with_a_long_queue_is_avoided(picker: Picker) -> None:
    busy = sorted(picker.endpoints)[0]
    # Twelve long requests against four running slots (simulator.py, DEFAULT_MAX_NUM_SEQS): eight wait.
    load = Load(f"http://{picker.endpoints[busy]}", MODEL, requests=12, max_tokens=1000).start()
    try:
        wait_for(
            "the busy replica's queue",
            lambda: gauges(f"http://{picker.endpoints[busy]}")["vllm:num_requests_waiting"] >= 8,
        )
        # The picker's pool gauge averages the waiting requests it scraped: above zero once it has seen them.
        wait_for(
            "the picker seeing the queue",
            lambda: picker.gauge("inference_pool_average_queue_size") > 0,
            timeout=30,
            retrying=(OSError, ValueError, KeyError),
        )
        chosen = [picker.ask(f"{secrets.token_hex(8)} Tell me about queue number {i}.") for i in range(10)]
    finally:
        load.stop()
    assert busy not in chosen, (busy, chosen)
    assert set(chosen) <= set(picker.endpoints) - {busy}


def test_a_picker_pod_is_ready_only_while_its_picker_serves(picker: Picker) -> None:
    # A second deployment's picker, whose InferencePool is not there: it runs at its own pod's IP
    # on the same ports as the first, and says it is not serving, since its pool never syncs.
    objects = [o for o in picker_objects("absent") if o["kind"] != "InferencePool"]
    for obj in objects:
        picker.api.apply(obj)
    try:
        pod = wait_for("the second picker's pod", lambda: picker_pod(picker.api, "absent"))
        # NOT_SERVING is 2 (grpc/health/v1/health.proto, `ServingStatus`), SERVING 1.
        wait_for(
            "the second picker answering its health check at its pod's address",
            lambda: health_status(f"{pod['status']['podIP']}:{HEALTH_PORT}", HEALTH_SERVICE) == 2,
            timeout=60,
            retrying=(grpc.RpcError,),
        )
        wait_for(
            "the second picker's Service listing its pod not Ready",
            lambda: service_endpoints(picker.api, "absent-epp", ready=False) == [pod["status"]["podIP"]],
            timeout=30,
        )
        assert not condition(picker_pod(picker.api, "absent") or {}, "Ready")
        assert service_endpoints(picker.api, "absent-epp") == []
        assert f"{NAMESPACE}/{pod['metadata']['name']}" in picker.pods.serving(PICKER)
        # The first picker, on the same ports at its own address, still serves.
        assert health_status(f"{picker.address}:{HEALTH_PORT}", HEALTH_SERVICE) == 1
        assert service_endpoints(picker.api, f"{MODEL}-epp") == [picker.address]
    finally:
        for obj in reversed(objects):
            picker.api.delete(obj)

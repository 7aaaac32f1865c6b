"""A deployment at zero replicas answers its first request once KEDA has scaled it up.

One `up` of byo-mixed on the local cluster of the cluster tier (stackrun.py), its one served
deployment autoscaled from zero (`minReplicas: 0`, `queueSeconds`), with the real programs of every
link: the endpoint picker v1.5.0 for the product's picker pod (podproc.py `endpoint_picker`), the
Prometheus operator and Prometheus (`monitoring`), KEDA's operator and metrics server (`keda`), and
a simulated engine for each model pod KWOK starts (servers.py). The test acts as the gateway: it asks
the picker over Envoy's external-processing API where a completion goes (extproc.py) while the pool
is empty. The picker's flow control holds the request (`featureGates: [flowControl]`,
pkg/epp/flowcontrol at v1.5.0: an empty pool is saturated, so nothing is dispatched), its queue gauge
reads 1 in Prometheus under the query of the ScaledObject's second trigger, KEDA activates the
workload on it (0 -> 1 replica), and once the new pod is Ready the picker's reply names that pod,
where the test sends the request and reads the completion.

What breaks it: a picker without flow control refuses the request at once (no endpoint: an
immediate 503); a ScaledObject without the queue trigger never wakes (its engine trigger reads
nothing while no engine runs, asserted below); a query whose labels miss the picker's series
(`inference_pool` is the bare pool name, `--pool-name`, cmd/epp/runner/runner.go
`NewFlowControlAdmissionController(fc, opts.PoolName)` at v1.5.0) never reads 1 here; a picker that
dispatched before a Ready pod existed names no pod of the deployment.
"""

from __future__ import annotations

import json
import secrets
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml

from infra.serving import picker as epp
from infra.serving.autoscaling import KEDA_API, PROMETHEUS_OPERATOR_API
from tests.engine import extproc
from tests.engine.cluster import NOT_YET, LocalCluster, NodeSpec, wait_for
from tests.engine.follow import scale_of
from tests.engine.kube import Etcd
from tests.engine.podproc import (
    PICKER_LABEL,
    PodProcesses,
    endpoint_picker,
    get_json,
    health_status,
    keda,
    monitoring,
    prometheus_address,
    query,
)
from tests.engine.simulator import served_model
from tests.engine.site import Pod
from tests.engine.stackrun import Run
from tests.engine.test_endpoint_picker import MODEL, picker_objects, pool_crds, service_endpoints
from tests.tools import require

STACK = "byo-mixed"
NAMESPACE = "ml-team"
DEPLOYMENT = "qwen-h100"  # byo-mixed's Deployment on waiting requests, with a service
# The shortest start-up a deployment may declare (infra/config/deployments.py, `startupSeconds`), and
# the shortest queue the product accepts for it (infra/checks/routing.py: startupSeconds + WAKE_SECONDS).
STARTUP_SECONDS = 60
QUEUE_SECONDS = STARTUP_SECONDS + 60
# How long the picker's PodMonitor may take to be a scrape job that is up: the operator's reconcile,
# Prometheus's reload and a first scrape (30 s, the operator's default interval).
SCRAPED_SECONDS = 150


def zero_stack(config: dict[str, Any]) -> None:
    """byo-mixed with only its Deployment on waiting requests, and that autoscaled from zero."""
    config["modelplane:deployments"] = [d for d in config["modelplane:deployments"] if d["name"] == DEPLOYMENT]
    config["modelplane:services"] = [s for s in config["modelplane:services"] if s["deployment"] == DEPLOYMENT]
    (deployment,) = config["modelplane:deployments"]
    deployment["startupSeconds"] = STARTUP_SECONDS
    deployment["autoscaling"] = {
        "minReplicas": 0,
        "maxReplicas": 1,
        "metric": "RequestsWaiting",
        "target": 2,
        "queueSeconds": QUEUE_SECONDS,
    }


def engines(run: Run) -> list[Pod]:
    return [p for p in run.site.pods() if p.namespace == NAMESPACE and p.owner == f"Deployment/{DEPLOYMENT}"]


def picker_pod(run: Run) -> Pod | None:
    found = [p for p in run.site.pods() if p.namespace == NAMESPACE and p.labels.get(PICKER_LABEL) == DEPLOYMENT]
    return found[0] if found and found[0].ready and found[0].ip else None


def serving(ip: str) -> None:
    """Until the picker at `ip` says it serves: KWOK marks a pod Ready as it starts, before podproc.py has
    started the picker and reported its probe (gRPC health: SERVING is 1, grpc/health/v1/health.proto)."""
    wait_for(
        f"the picker at {ip} serving",
        lambda: health_status(f"{ip}:{epp.HEALTH_PORT}", epp.HEALTH_SERVICE) == 1,
        60,
        retrying=(grpc.RpcError,),
    )


def scrape_job_up(address: str, job: str) -> bool:
    active = get_json(address, "/api/v1/targets?state=active")["activeTargets"]
    mine = [t for t in active if t.get("scrapePool") == job]
    return bool(mine) and all(t["health"] == "up" for t in mine)


def value(address: str, promql: str) -> float | None:
    result = query(address, promql)
    return float(result[0]["value"][1]) if result else None


def test_a_deployment_at_zero_answers_its_first_request_after_keda_scales_it_up(run: Any) -> None:
    for name in ("epp", "prometheus-operator", "prometheus", "keda", "keda-adapter"):
        require(name, "scale from zero")
    zero = run(STACK, [*monitoring(), *keda(), endpoint_picker()], zero_stack)
    zero.up()
    spec = next(d for d in zero.deployments() if d["name"] == DEPLOYMENT)
    model, port = served_model(spec["args"]), int(spec["port"])

    # 1. At zero: KEDA's ScaledObject allows it, the engine trigger and the picker's queue trigger;
    # no engine pod; the picker Ready (it serves once its pool has synced, empty or not).
    (scaled,) = [
        o for o in zero.cluster.list(KEDA_API, "ScaledObject", NAMESPACE) if o["metadata"]["name"] == DEPLOYMENT
    ]
    assert scaled["spec"]["minReplicaCount"] == 0
    engine_trigger, queue_trigger = scaled["spec"]["triggers"]
    queue_query = queue_trigger["metadata"]["query"]
    assert queue_trigger["metadata"]["activationThreshold"] == "0", queue_trigger
    assert wait_for(f"{DEPLOYMENT} at zero", lambda: scale_of(zero, NAMESPACE, "Deployment", DEPLOYMENT) == (0, 0), 90)
    picker = wait_for("the picker's pod Ready", lambda: picker_pod(zero), 120, retrying=NOT_YET)
    serving(picker.ip)
    address = wait_for("the stack's Prometheus", lambda: prometheus_address(zero.cluster.server), 120, retrying=NOT_YET)
    (monitor,) = [
        m
        for m in zero.cluster.list(PROMETHEUS_OPERATOR_API, "PodMonitor", NAMESPACE)
        if m["metadata"]["name"] == f"{DEPLOYMENT}-epp"
    ]
    job = f"podMonitor/{NAMESPACE}/{monitor['metadata']['name']}/0"
    wait_for(
        f"Prometheus scraping the picker ({job})",
        lambda: scrape_job_up(address, job),
        SCRAPED_SECONDS,
        retrying=NOT_YET,
    )
    assert engines(zero) == [] and value(address, queue_query) in (None, 0.0)

    # 2. The first request, asked of the picker as the gateway asks it, while no replica exists.
    body = extproc.completion_body(model, "Say hello from a cold start.")
    channel = grpc.insecure_channel(f"{picker.ip}:{epp.EXT_PROC_PORT}")
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        reply = pool.submit(extproc.ask, channel, body, QUEUE_SECONDS + 30)
        # Held: the picker's own queue gauge reads 1 and it has not answered, with no engine; then
        # Prometheus reads 1 for the pool under the ScaledObject's query.
        wait_for(
            "the picker holding the request",
            lambda: reply.done() or extproc.gauge(picker.ip, epp.QUEUE_METRIC) == 1.0,
            30,
            retrying=(OSError, KeyError),
        )
        assert not reply.done() and engines(zero) == [], engines(zero)
        assert wait_for(f"{queue_query} at 1", lambda: value(address, queue_query) == 1.0, 90, retrying=NOT_YET)
        # The engine trigger alone reads nothing above 0 at zero (no engine serves its series, or one
        # KEDA has just woken serves an idle queue): it could not pass its activation threshold (0),
        # so without the queue trigger nothing would wake the deployment.
        answered = reply.done()
        if not any(p.ready for p in engines(zero)):
            assert not answered, reply.result()
            read = query(address, engine_trigger["metadata"]["query"])
            assert all(float(s["value"][1]) == 0 for s in read), read

        # 3. KEDA activates the workload, its pod starts and is Ready, and the picker's reply names it.
        destination = reply.result(timeout=QUEUE_SECONDS + 30)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        channel.close()
    (engine,) = engines(zero)
    assert engine.ready and destination == f"{engine.ip}:{port}", (destination, engine)
    assert scale_of(zero, NAMESPACE, "Deployment", DEPLOYMENT)[0] == 1

    # The gateway sends the request there: the new replica answers it.
    request = urllib.request.Request(
        f"http://{destination}/v1/completions", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
        answer = json.loads(response.read())
    assert answer["model"] == model and answer["choices"][0]["text"], answer
    # Nothing is held any more.
    wait_for(
        "the picker's queue empty",
        lambda: extproc.gauge(picker.ip, epp.QUEUE_METRIC) == 0.0,
        30,
        retrying=(OSError, KeyError),
    )


# The queue time the planted fault gives the picker: shorter than any wake (KEDA's look alone is
# 30 s), so the request expires while the pool is still empty.
SHORT_QUEUE = "2s"


def test_a_request_held_past_its_queue_time_is_refused(store: Etcd, tmp_path: Path) -> None:
    """The picker of an empty pool whose queue time is shorter than the wait (what `queueSeconds` below
    startupSeconds + 60 would make, which the product refuses): flow control gives up on the request
    and the picker answers the gateway at once, 503 ("request timed out in queue",
    pkg/epp/requestcontrol/admission.go at v1.5.0), instead of a pod."""
    require("epp", "scale from zero")
    nodes = [NodeSpec(name="node-0", pool="models", labels={})]
    cluster = LocalCluster.start(tmp_path / "cluster", store.url, f"/{secrets.token_hex(8)}", nodes)
    pods = PodProcesses(cluster.server, tmp_path / "pods", [endpoint_picker()]).start()
    try:
        cluster.server.install_crds(pool_crds())
        for obj in picker_objects("cold"):  # the product's objects; no engine pod carries the pool's label
            if obj["kind"] == "ConfigMap":
                (name,) = obj["data"]
                config = yaml.safe_load(obj["data"][name])
                # What `infra.serving.picker.picker_config` writes for queueSeconds, here too short.
                config["featureGates"] = ["flowControl"]
                config["flowControl"] = {"defaultRequestTTL": SHORT_QUEUE}
                obj["data"][name] = yaml.safe_dump(config)
            cluster.server.apply(obj)
        address = wait_for(
            f"the picker's Service with a Ready endpoint (see {tmp_path / 'pods'})",
            lambda: next(iter(service_endpoints(cluster.server, "cold-epp")), None),
            timeout=90,
        )
        serving(address)
        channel = grpc.insecure_channel(f"{address}:{epp.EXT_PROC_PORT}")
        try:
            with pytest.raises(extproc.PickerRefusedError) as refused:
                extproc.ask(channel, extproc.completion_body(MODEL, "Anyone there?"), timeout=60)
        finally:
            channel.close()
        # Flow control's own refusal: a picker without it refuses an empty pool too, but not so.
        assert refused.value.status == 503 and "request timed out in queue" in refused.value.body, refused.value
    finally:
        pods.stop()
        cluster.stop()

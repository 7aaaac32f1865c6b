"""The monitoring chain of the serving stack, for real: the Prometheus operator turns the PodMonitor of
an autoscaled deployment into a scrape job of a real Prometheus, which scrapes each engine at its
pod's address, and the ScaledObject's own query, asked of that Prometheus, reads the engines' queue.

On the local cluster of the cluster tier (test_real_up.py), with prometheus-operator v0.90.1 and
Prometheus v3.11.3 (kube-prometheus-stack 84.4.0's pins, built by `engine/build.sh`) run for the
pods the stack's release and the operator create (podproc.py), and the model servers
(servers.py) at the engines' pods. Every assertion reads the cluster, the engines or the real
Prometheus's own API.
"""

from __future__ import annotations

import contextlib
import json
import threading
import urllib.error
import urllib.request
from typing import Any

from infra.serving.autoscaling import KEDA_API, PROMETHEUS_OPERATOR_API, SERIES_DEPLOYMENT_LABEL
from tests.engine.cluster import wait_for
from tests.engine.podproc import PROMETHEUS_PORT, get_json, monitoring, pod_ip, query
from tests.engine.stackrun import Run
from tests.metrics_text import parse
from tests.tools import require

STACK = "byo-mixed"
# Requests sent at once, above the engine's bound of running requests (the simulator's default
# `--max-num-seqs`, 4), each long enough (at 0.02 s a token) to outlast two scrapes at the
# operator's default interval (30 s).
REQUESTS = 6
MAX_TOKENS = 4000


def answered(check: Any) -> Any:
    """`check()`, or None while what it asks does not answer yet."""

    def attempt() -> Any:
        try:
            return check()
        except (OSError, ValueError, KeyError):
            return None

    return attempt


def prometheus_address(run: Run) -> str:
    """The address of the stack's Prometheus: its pod's, where the real Prometheus listens."""

    def ready() -> str | None:
        for pod in run.cluster.list("v1", "Pod", "monitoring"):
            if (pod["metadata"].get("labels") or {}).get("app.kubernetes.io/name") == "prometheus" and pod_ip(pod):
                address = f"{pod_ip(pod)}:{PROMETHEUS_PORT}"
                get_json(address, "/api/v1/status/buildinfo")
                return address
        return None

    return str(
        wait_for(
            "the stack's Prometheus answering at its pod",
            ready,
            120,
            lambda: run.pods.logs("prometheus-operator") + run.pods.logs("prometheus"),
        )
    )


def test_the_pod_monitor_of_an_autoscaled_deployment_becomes_a_scrape_job_that_finds_its_pods(run: Any) -> None:
    for name in ("prometheus-operator", "prometheus"):
        require(name, "the monitoring chain")
    mixed = run(STACK, monitoring())
    mixed.up()
    (scaled,) = [d for d in mixed.deployments() if d.get("autoscaling")]
    name, namespace = scaled["name"], scaled["namespace"]
    address = prometheus_address(mixed)
    # The operator's job for the PodMonitor the program created.
    monitors = mixed.cluster.list(PROMETHEUS_OPERATOR_API, "PodMonitor", namespace)
    assert [m["metadata"]["name"] for m in monitors] == [name]
    job = f"podMonitor/{namespace}/{name}/0"
    pods = {p.name: p for p in mixed.site.pods() if p.namespace == namespace and p.owner == f"Deployment/{name}"}
    assert pods

    def targets() -> list[dict[str, Any]]:
        active = get_json(address, "/api/v1/targets?state=active")["activeTargets"]
        return [t for t in active if t["labels"].get("job") == job or t.get("scrapePool") == job]

    found = wait_for(f"Prometheus's targets of {job}", answered(targets), 120)
    # One target per engine pod, at the pod's address and the engine's port, labelled with the
    # deployment as the ScaledObject's query selects it.
    assert {t["labels"]["pod"] for t in found} == set(pods)
    for target in found:
        assert target["labels"][SERIES_DEPLOYMENT_LABEL] == name
        assert target["labels"]["namespace"] == namespace
        assert target["scrapeUrl"].endswith(f":{scaled['port']}/metrics"), target["scrapeUrl"]

    # Every engine is scraped at its pod's address, where its server answers.
    wait_for(f"every target of {job} up", answered(lambda: all(t["health"] == "up" for t in targets())), 120)

    # The ScaledObject's own query, asked of the real Prometheus, reads what the engines queue.
    (scaled_object,) = mixed.cluster.list(KEDA_API, "ScaledObject", namespace)
    (trigger,) = scaled_object["spec"]["triggers"]
    promql = trigger["metadata"]["query"]
    (pod,) = pods.values()
    engine = f"http://{pod_ip(mixed.cluster.server.get({'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': pod.name, 'namespace': namespace}}) or {})}:{scaled['port']}"
    model = scaled["args"][scaled["args"].index("--served-model-name") + 1]
    load = [threading.Thread(target=complete, args=(engine, model), daemon=True) for _ in range(REQUESTS)]
    for thread in load:
        thread.start()
    waiting = wait_for("the engine's queue", answered(lambda: waiting_at(engine)), 30)
    assert waiting == REQUESTS - 4

    def asked() -> float | None:
        result = query(address, promql)
        return float(result[0]["value"][1]) if result else None

    assert wait_for(f"{promql} reading the queue", answered(lambda: asked() == waiting), 90)


def waiting_at(engine: str) -> float:
    with urllib.request.urlopen(engine + "/metrics", timeout=10) as response:
        families = parse(response.read().decode())
    return families["vllm:num_requests_waiting"].samples[0].value


def complete(engine: str, model: str) -> None:
    body = json.dumps({"model": model, "prompt": "Say something long", "max_tokens": MAX_TOKENS}).encode()
    request = urllib.request.Request(
        engine + "/v1/completions", data=body, headers={"Content-Type": "application/json"}
    )
    with contextlib.suppress(OSError):
        urllib.request.urlopen(request, timeout=300).close()

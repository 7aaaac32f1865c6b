"""The monitoring chain of the serving stack, for real: the Prometheus operator turns the PodMonitor of
an autoscaled deployment into a scrape job of a real Prometheus, which scrapes each engine at its
pod's address, and the ScaledObject's own query, asked of that Prometheus, reads the engines' queue.

On the local cluster of the cluster tier (test_real_up.py), with prometheus-operator v0.90.1 and
Prometheus v3.11.3 (kube-prometheus-stack 84.4.0's pins, built by `engine/build.sh`) run for the
pods the stack's release and the operator create (podproc.py), the model servers
(servers.py) at the engines' pods, and for the Fleet GPUs dashboard the real collector (`otelcol`
at 0.161.0, the image's release) with the configuration the chart renders from our values,
scraping simulated dcgm-exporter and AMD device-metrics-exporter processes (gpu_exporters.py).
Every assertion reads the cluster, the engines or the real Prometheus's own API.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from infra.serving import telemetry
from infra.serving.autoscaling import KEDA_API, PROMETHEUS_OPERATOR_API, SERIES_DEPLOYMENT_LABEL
from infra.serving.dashboards import FLEET_GPUS, panel_queries
from tests.engine.cluster import wait_for
from tests.engine.gpu_exporters import gpu_exporters, otel_collector
from tests.engine.kube import ApiError, pod_monitor_crds, prometheus_crds, service_monitor_crds
from tests.engine.podproc import PROMETHEUS_PORT, get_json, monitoring, pod_ip, query, service_hosts
from tests.engine.servers import completion, gauges
from tests.engine.stackrun import Run
from tests.tools import require

STACK = "byo-mixed"
# Requests sent at once, above the engine's bound of running requests (the simulator's default
# `--max-num-seqs`, 4), each long enough (at 0.02 s a token) to outlast two scrapes at the
# operator's default interval (30 s).
REQUESTS = 6
MAX_TOKENS = 4000


# What a check raises while what it asks does not answer yet: the API server's errors, a refused or
# failed HTTP request, a body or result without what it reads.
NOT_YET = (ApiError, OSError, ValueError, KeyError)


def prometheus_address(run: Run) -> str:
    """The address of the stack's Prometheus: its pod's, where the real Prometheus listens."""

    def ready() -> str | None:
        for pod in run.cluster.list("v1", "Pod", "monitoring"):
            if (pod["metadata"].get("labels") or {}).get("app.kubernetes.io/name") == "prometheus" and pod_ip(pod):
                address = f"{pod_ip(pod)}:{PROMETHEUS_PORT}"
                get_json(address, "/api/v1/status/buildinfo")
                return address
        return None

    return str(wait_for("the stack's Prometheus answering at its pod", ready, 120, retrying=NOT_YET))


def test_the_pod_monitor_of_an_autoscaled_deployment_becomes_a_scrape_job_that_finds_its_pods(run: Any) -> None:
    for name in ("prometheus-operator", "prometheus", "otelcol"):
        require(name, "the monitoring chain")
    # The collector and the GPU exporters too: the Fleet GPUs dashboard is checked on the same `up`.
    mixed = run(STACK, [*monitoring(), otel_collector(), *gpu_exporters()])
    mixed.up()
    (scaled,) = [d for d in mixed.deployments() if d.get("autoscaling")]
    name, namespace = scaled["name"], scaled["namespace"]
    address = prometheus_address(mixed)
    # The operator's job for the PodMonitor the program created.
    monitors = mixed.cluster.list(PROMETHEUS_OPERATOR_API, "PodMonitor", namespace)
    # Every deployment's PodMonitor (components/features/monitoring.py), the scaled one's among them.
    assert sorted(m["metadata"]["name"] for m in monitors) == sorted(
        d["name"] for d in mixed.deployments() if d["namespace"] == namespace
    )
    job = f"podMonitor/{namespace}/{name}/0"
    pods = {p.name: p for p in mixed.site.pods() if p.namespace == namespace and p.owner == f"Deployment/{name}"}
    assert pods

    def targets() -> list[dict[str, Any]]:
        active = get_json(address, "/api/v1/targets?state=active")["activeTargets"]
        return [t for t in active if t["labels"].get("job") == job or t.get("scrapePool") == job]

    found = wait_for(f"Prometheus's targets of {job}", targets, 120, retrying=NOT_YET)
    # One target per engine pod, at the pod's address and the engine's port, labelled with the
    # deployment as the ScaledObject's query selects it.
    assert {t["labels"]["pod"] for t in found} == set(pods)
    for target in found:
        assert target["labels"][SERIES_DEPLOYMENT_LABEL] == name
        assert target["labels"]["namespace"] == namespace
        assert target["scrapeUrl"].endswith(f":{scaled['port']}/metrics"), target["scrapeUrl"]

    # Every engine is scraped at its pod's address, where its server answers.
    wait_for(f"every target of {job} up", lambda: all(t["health"] == "up" for t in targets()), 120, retrying=NOT_YET)
    # The deployments with a fixed replica count are scraped too, for their dashboard: one target
    # per pod that serves (a multi-node group's leader; here every pod).
    for other in mixed.deployments():
        if other is scaled:
            continue
        served = {
            p.name
            for p in mixed.site.pods()
            if p.namespace == other["namespace"] and p.owner == f"Deployment/{other['name']}"
        }
        pool = f"podMonitor/{other['namespace']}/{other['name']}/0"

        def pool_pods(pool: str = pool) -> set[str]:
            active = get_json(address, "/api/v1/targets?state=active")["activeTargets"]
            return {t["labels"]["pod"] for t in active if t.get("scrapePool") == pool}

        assert wait_for(
            f"Prometheus's targets of {pool}", lambda want=served: pool_pods() == want, 120, retrying=NOT_YET
        )

    # The ScaledObject's own query, asked of the real Prometheus, reads what the engines queue.
    (scaled_object,) = mixed.cluster.list(KEDA_API, "ScaledObject", namespace)
    (trigger,) = scaled_object["spec"]["triggers"]
    promql = trigger["metadata"]["query"]
    (pod,) = pods.values()
    engine = f"http://{pod.ip}:{scaled['port']}"
    model = scaled["args"][scaled["args"].index("--served-model-name") + 1]
    load = [threading.Thread(target=send, args=(engine, model), daemon=True) for _ in range(REQUESTS)]
    for thread in load:
        thread.start()
    # Every request in: the bound running, the rest waiting.
    waiting = REQUESTS - 4
    wait_for("the engine's queue", lambda: gauges(engine)["vllm:num_requests_waiting"] == waiting, 30, retrying=NOT_YET)

    def asked() -> float | None:
        result = query(address, promql)
        return float(result[0]["value"][1]) if result else None

    assert wait_for(f"{promql} reading the queue", lambda: asked() == waiting, 90, retrying=NOT_YET)

    # Every dashboard panel's query, for this deployment, is one the real Prometheus parses; every
    # panel over vLLM's series returns data from the engines (kube-state-metrics' have no exporter
    # here, and are only parsed), and every GPU panel from the collector's exporter.
    for dashboard, panel, expr in panel_queries():
        concrete = expr.replace("$namespace", namespace).replace("$deployment", name)
        query(address, concrete)  # raises on a query Prometheus refuses
        if "vllm:" in concrete:
            wait_for(
                f"{dashboard} / {panel}: {concrete} returning data",
                lambda q=concrete: query(address, q),
                90,
                retrying=NOT_YET,
            )
    gpu_panels_answer(mixed, address)


def send(engine: str, model: str) -> None:
    """Load: one long completion, whose answer (or the engine's stopping with the test) nobody reads."""
    with contextlib.suppress(OSError):
        completion(engine, model, MAX_TOKENS, timeout=300)


# --------------------------------------------------------------------------------------------
# The Fleet GPUs dashboard

# Panels whose source one vendor does not serve by default: title -> the vendors that answer.
# AMD's side of "Tensor active" is parse-only: its source, `gpu_prof_tensor_active_percent`, is a
# profiler field the AMD exporter reports only with profiler metrics on, which they are not by
# default, and the collector maps it only when told they are (`amd_profiler_metrics`, off).
ONE_VENDOR = {"Tensor active": {"nvidia"}}


def gpu_panels_answer(mixed: Run, address: str) -> None:
    """The stack's Prometheus scrapes the collector's exporter through the PodMonitor the stack
    creates for it, and every GPU panel returns data for the NVIDIA node and the AMD nodes, as the
    real collector (`otelcol`) renames the simulated exporters' series (gpu_exporters.py)."""
    (monitor,) = mixed.cluster.list(PROMETHEUS_OPERATOR_API, "PodMonitor", telemetry.NAMESPACE)
    job = f"podMonitor/{telemetry.NAMESPACE}/{monitor['metadata']['name']}/0"

    def collector_up() -> bool:
        active = get_json(address, "/api/v1/targets?state=active")["activeTargets"]
        mine = [t for t in active if t.get("scrapePool") == job]
        return bool(mine) and all(t["health"] == "up" for t in mine)

    assert wait_for(f"Prometheus scraping the collector ({job})", collector_up, 150, retrying=NOT_YET)

    # Each vendor's GPU nodes: where its exporter's pods run.
    nodes = {
        vendor: {p.node for p in mixed.site.pods() if p.owner.startswith("DaemonSet/") and exporter in p.owner}
        for vendor, exporter in (("nvidia", "dcgm-exporter"), ("amd", "metrics-exporter"))
    }
    assert all(nodes.values()), nodes
    for panel in FLEET_GPUS.panels:
        (target,) = panel.targets
        want = set().union(*(nodes[v] for v in ONE_VENDOR.get(panel.title, {"nvidia", "amd"})))

        def answered(expr: str = target.expr) -> set[str]:
            return {r["metric"].get("node", "") for r in query(address, expr)}

        def all_nodes(want: set[str] = want) -> bool:
            return want <= answered()

        wait_for(f"{panel.title}: {target.expr} for {sorted(want)}", all_nodes, 150, retrying=NOT_YET)
        # A panel of one vendor answers for no other node.
        assert answered() == want, (panel.title, answered())

    # A GPU's series keeps the workload the exporter credits it to (honorLabels), and one no
    # workload holds is not credited to the collector's pod.
    in_use = query(address, 'modelplane_gpu_temperature_celsius{pod!=""}')
    assert in_use, "no GPU series carries the pod of the workload using it"
    assert all(r["metric"]["namespace"] != telemetry.NAMESPACE for r in in_use), in_use


# --------------------------------------------------------------------------------------------
# A cluster that runs its own kube-prometheus-stack (`existing.preinstalled`)

# The owner's release, as docs/existing-clusters.md's example names it, and what kube-prometheus-stack
# 84.4.0 makes of it with its default values: the fullname `<release>-kube-prometheus-stack` cut to
# 26 characters (templates/_helpers.tpl, `kube-prometheus-stack.fullname`), a Prometheus of that name
# and `-prometheus` selecting PodMonitors labelled `release: <release>` (podMonitorSelector empty and
# podMonitorSelectorNilUsesHelmValues true: values.yaml, templates/prometheus/prometheus.yaml), its
# Service on 9090 (templates/prometheus/service.yaml), and an operator whose pods carry
# `app: kube-prometheus-stack-operator` and `release: <release>` (templates/prometheus-operator/deployment.yaml).
OWNER_RELEASE = "prometheus"
OWNER_PROMETHEUS = "prometheus-kube-prometheus-prometheus"
OWNER_OPERATOR = {"app": "kube-prometheus-stack-operator", "release": OWNER_RELEASE}


def owner_kube_prometheus_stack() -> list[dict[str, Any]]:
    """The objects of the owner's release that the chain acts on, as its chart renders them."""
    selector = {"app.kubernetes.io/name": "prometheus", "operator.prometheus.io/name": OWNER_PROMETHEUS}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "monitoring"}},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "prometheus-kube-prometheus-operator", "namespace": "monitoring"},
            "spec": {
                "selector": {"matchLabels": OWNER_OPERATOR},
                "template": {
                    "metadata": {"labels": OWNER_OPERATOR},
                    "spec": {"containers": [{"name": "kube-prometheus-stack", "image": "registry.k8s.io/pause:3.10"}]},
                },
            },
        },
        {
            "apiVersion": PROMETHEUS_OPERATOR_API,
            "kind": "Prometheus",
            "metadata": {"name": OWNER_PROMETHEUS, "namespace": "monitoring"},
            "spec": {
                "replicas": 1,
                "version": "v3.11.3",
                "podMonitorSelector": {"matchLabels": {"release": OWNER_RELEASE}},
                "podMonitorNamespaceSelector": {},
                "serviceMonitorSelector": {"matchLabels": {"release": OWNER_RELEASE}},
                "serviceMonitorNamespaceSelector": {},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": OWNER_PROMETHEUS, "namespace": "monitoring"},
            "spec": {"ports": [{"name": "http-web", "port": 9090, "targetPort": 9090}], "selector": selector},
        },
    ]


def test_an_owners_prometheus_scrapes_the_engines_through_the_labels_the_stack_names(run: Any) -> None:
    for name in ("prometheus-operator", "prometheus", "otelcol"):
        require(name, "the monitoring chain")
    mixed = run(STACK, [*monitoring(OWNER_OPERATOR), otel_collector()])
    server = mixed.cluster.server
    server.install_crds(pod_monitor_crds() + service_monitor_crds() + prometheus_crds())
    for obj in owner_kube_prometheus_stack():
        server.create(obj)
    url = f"http://{OWNER_PROMETHEUS}.monitoring.svc:9090"
    config = mixed.engine.config(STACK)
    (cluster,) = config["modelplane:clusters"]
    cluster["existing"]["preinstalled"] = ["kube-prometheus-stack"]
    cluster["existing"]["prometheus"] = {"url": url, "podMonitorLabels": {"release": OWNER_RELEASE}}
    mixed.engine.write_config(STACK, config)
    mixed.up()
    assert "mp-kube-prometheus-stack" not in mixed.site.releases()

    (scaled,) = [d for d in mixed.deployments() if d.get("autoscaling")]
    name, namespace = scaled["name"], scaled["namespace"]
    # KEDA asks the owner's Prometheus, at the name its Service has in the cluster.
    (scaled_object,) = mixed.cluster.list(KEDA_API, "ScaledObject", namespace)
    (trigger,) = scaled_object["spec"]["triggers"]
    assert trigger["metadata"]["serverAddress"] == url
    address = prometheus_address(mixed)
    assert service_hosts(server)[f"{OWNER_PROMETHEUS}.monitoring.svc"] == address.split(":")[0]
    # The owner's Prometheus, selecting by its release label, scrapes the engines.
    job = f"podMonitor/{namespace}/{name}/0"

    def scraped(pool: str) -> bool:
        active = get_json(address, "/api/v1/targets?state=active")["activeTargets"]
        mine = [t for t in active if t.get("scrapePool") == pool]
        return bool(mine) and all(t["health"] == "up" for t in mine)

    assert wait_for(f"the owner's Prometheus scraping {job}", lambda: scraped(job), 150, retrying=NOT_YET)
    # And the collector's exporter, through its PodMonitor, which carries the same labels.
    (monitor,) = mixed.cluster.list(PROMETHEUS_OPERATOR_API, "PodMonitor", telemetry.NAMESPACE)
    assert monitor["metadata"]["labels"] == {"release": OWNER_RELEASE}
    pool = f"podMonitor/{telemetry.NAMESPACE}/{monitor['metadata']['name']}/0"
    assert wait_for(f"the owner's Prometheus scraping {pool}", lambda: scraped(pool), 150, retrying=NOT_YET)

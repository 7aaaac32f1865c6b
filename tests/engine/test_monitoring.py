"""The monitoring chain on a cluster whose owner runs kube-prometheus-stack: the owner's operator
turns the stack's PodMonitors into scrape jobs of the owner's Prometheus, through the labels the
stack names, and KEDA scales on what that Prometheus scraped. (The stack's own Prometheus:
test_autoscaling.py.)

On the local cluster of the cluster tier (test_real_up.py), with prometheus-operator v0.90.1 and
Prometheus v3.11.3 (kube-prometheus-stack 84.4.0's pins, built by `engine/build.sh`) run for the
pods the stack's release and the operator create (podproc.py), and the model servers
(servers.py) at the engines' pods. Every assertion reads the cluster, the engines or the real
Prometheus's own API.
"""

from __future__ import annotations

from typing import Any

from infra.serving import telemetry
from infra.serving.autoscaling import KEDA_API, PROMETHEUS_OPERATOR_API
from tests.engine.cluster import NOT_YET, wait_for
from tests.engine.follow import LOAD_REQUESTS, scale_of
from tests.engine.gpu_exporters import otel_collector
from tests.engine.kube import pod_monitor_crds, prometheus_crds, service_monitor_crds
from tests.engine.podproc import get_json, keda, monitoring, prometheus_address, service_hosts
from tests.engine.servers import Load
from tests.engine.simulator import served_model
from tests.tools import require

STACK = "byo-mixed"


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


def test_an_owners_prometheus_scrapes_the_engines_and_keda_scales_on_what_it_scraped(run: Any) -> None:
    for name in ("prometheus-operator", "prometheus", "keda", "keda-adapter", "otelcol"):
        require(name, "the monitoring and scaling chain")
    mixed = run(STACK, [*monitoring(OWNER_OPERATOR), *keda(), otel_collector()])
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
    address = wait_for("the owner's Prometheus answering", lambda: prometheus_address(server), 120, retrying=NOT_YET)
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

    # KEDA, asking the owner's Prometheus, scales the deployment to its maximum under load.
    (pod,) = [p for p in mixed.site.pods() if p.namespace == namespace and p.owner == f"Deployment/{name}"]
    model = served_model(scaled["args"])
    top = scaled["autoscaling"]["maxReplicas"]
    traffic = Load(f"http://{pod.ip}:{scaled['port']}", model, LOAD_REQUESTS).start()
    try:
        assert wait_for(
            f"{name} at {top} replicas",
            lambda: scale_of(mixed, namespace, "Deployment", name) == (top, top),
            240,
            retrying=NOT_YET,
        )
    finally:
        traffic.stop()

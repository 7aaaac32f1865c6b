"""Monitoring: the PodMonitor that has a Prometheus scrape every model deployment's engines.

Each engine serves vLLM's metrics on its API port (`/metrics`, docs.vllm.ai "Production Metrics").
The PodMonitor puts them in the cluster's Prometheus, with the deployment's label on every series,
for the Model serving dashboard (`infra.serving.dashboards`) and, for an autoscaled deployment, for
its ScaledObject's query (`components.features.autoscaling`). Which Prometheus: the stack's own
(kube-prometheus-stack, which selects every PodMonitor: `infra.serving.values.kube_prometheus_stack`),
or where the cluster runs its own kube-prometheus-stack, the one `existing.prometheus` names, whose
labels the PodMonitor carries. A cluster that runs its own and names none gets no PodMonitor: no
Prometheus there would select it (an autoscaled deployment is refused there:
`infra.checks.services.check_autoscaling`). The spec is data in `infra.serving.autoscaling`.
"""

from __future__ import annotations

from typing import Any

import pulumi_kubernetes as k8s

from components.features import DeploymentContext
from infra.serving.autoscaling import (
    PROMETHEUS_OPERATOR_API,
    monitor_labels,
    owner_prometheus,
    pod_monitor_spec,
    unwatched,
)
from infra.vocabulary import DEPLOYMENT_LABEL


def apply(deployment: DeploymentContext, port_name: str) -> k8s.apiextensions.CustomResource | None:
    """The PodMonitor of the engine's port `port_name`, or None where no Prometheus would select it."""
    spec = deployment.spec
    return watched_pod_monitor(
        deployment, "podmonitor", spec.name, deployment.labels, pod_monitor_spec(DEPLOYMENT_LABEL, spec, port_name)
    )


def watched_pod_monitor(
    deployment: DeploymentContext, suffix: str, name: str, labels: dict[str, str], spec: dict[str, Any]
) -> k8s.apiextensions.CustomResource | None:
    """A PodMonitor of the deployment's (its engines', its picker's), carrying the labels of the
    Prometheus the cluster names; None where the cluster runs its own and names none, so that no
    Prometheus would select it."""
    prometheus = owner_prometheus(deployment.cluster.spec)
    if unwatched(deployment.cluster.preinstalled, prometheus):
        return None
    return k8s.apiextensions.CustomResource(
        f"{deployment.name}-{suffix}",
        api_version=PROMETHEUS_OPERATOR_API,
        kind="PodMonitor",
        metadata=k8s.meta.v1.ObjectMetaArgs(
            name=name, namespace=deployment.spec.namespace, labels={**monitor_labels(prometheus), **labels}
        ),
        spec=spec,
        opts=deployment.child(),
    )

"""Autoscaling: the objects that set an autoscaled deployment's replicas from vLLM's own metrics.

For a deployment with `autoscaling`, a PodMonitor has the stack's Prometheus scrape the engine's
pods, and a KEDA ScaledObject drives the scale subresource of the workload the deployment built
(its Deployment or its LeaderWorkerSet) from what Prometheus scraped. The objects' specs are data
in `infra.serving.autoscaling`; KEDA's install is the catalog's `keda` row. A deployment without
autoscaling gets nothing here, and its workload keeps its own replica count.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.features import DeploymentContext, multinode
from infra.config.model import ModelDeploymentSpec
from infra.serving.autoscaling import (
    KEDA_API,
    PROMETHEUS_OPERATOR_API,
    WorkloadRef,
    pod_monitor_spec,
    prometheus_address,
    scaled_object_spec,
)
from infra.vocabulary import DEPLOYMENT_LABEL


def workload_ref(spec: ModelDeploymentSpec) -> WorkloadRef:
    """The object that runs the deployment's replicas, whose scale subresource an autoscaler drives:
    its Deployment, or its LeaderWorkerSet of one group per replica (`components.features.multinode`)."""
    if spec.nodes > 1:
        return WorkloadRef(multinode.API_VERSION, multinode.KIND, spec.name)
    return WorkloadRef("apps/v1", "Deployment", spec.name)


def fixed_replicas(spec: ModelDeploymentSpec) -> int | None:
    """The replica count the workload sets: the deployment's, or none for an autoscaled one, whose
    count is KEDA's HPA's: a count in the workload would be applied again by every `pulumi up`,
    undoing the autoscaler's."""
    return spec.replicas if spec.autoscaling is None else None


def apply(
    deployment: DeploymentContext, workload: pulumi.CustomResource, port_name: str
) -> list[k8s.apiextensions.CustomResource]:
    """For an autoscaled deployment, the PodMonitor that has Prometheus scrape the engine's port
    `port_name` and the ScaledObject that sets the workload's replicas from what it scrapes; nothing
    otherwise."""
    spec, scaling = deployment.spec, deployment.spec.autoscaling
    if scaling is None:
        return []
    # The owner's Prometheus where the cluster names one (`existing.prometheus`), else the stack's own,
    # which selects every PodMonitor (`infra.serving.values.kube_prometheus_stack`).
    owner = deployment.cluster.spec.owner_block
    prometheus = owner.prometheus if owner is not None else None
    address = prometheus.url if prometheus is not None else prometheus_address(deployment.cluster.source)
    meta = deployment.meta
    if prometheus is not None and prometheus.pod_monitor_labels:
        meta = k8s.meta.v1.ObjectMetaArgs(
            name=spec.name, namespace=spec.namespace, labels={**prometheus.pod_monitor_labels, **deployment.labels}
        )
    monitor = k8s.apiextensions.CustomResource(
        f"{deployment.name}-podmonitor",
        api_version=PROMETHEUS_OPERATOR_API,
        kind="PodMonitor",
        metadata=meta,
        spec=pod_monitor_spec(DEPLOYMENT_LABEL, spec, port_name),
        opts=deployment.child(),
    )
    scaled = k8s.apiextensions.CustomResource(
        f"{deployment.name}-scaledobject",
        api_version=KEDA_API,
        kind="ScaledObject",
        metadata=deployment.meta,
        spec=scaled_object_spec(spec, scaling, workload_ref(spec), address),
        opts=deployment.child(depends_on=[workload, monitor]),
    )
    return [monitor, scaled]

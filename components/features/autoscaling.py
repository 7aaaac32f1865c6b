"""Autoscaling: the objects that set an autoscaled deployment's replicas from vLLM's own metrics.

For a deployment with `autoscaling`, a KEDA ScaledObject drives the scale subresource of the
workload the deployment built (its Deployment or its LeaderWorkerSet) from what the cluster's
Prometheus scraped through the deployment's PodMonitor (`components.features.monitoring`). The
objects' specs are data in `infra.serving.autoscaling`; KEDA's install is the catalog's `keda` row.
A deployment without autoscaling gets nothing here, and its workload keeps its own replica count.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.features import DeploymentContext, multinode
from components.features.picker import Picker
from infra.config.model import ModelDeploymentSpec
from infra.serving.autoscaling import KEDA_API, WorkloadRef, owner_prometheus, prometheus_address, scaled_object_spec
from infra.serving.pods import SPOT_SUFFIX


def workload_ref(spec: ModelDeploymentSpec) -> WorkloadRef:
    """The object that runs the deployment's replicas, whose scale subresource an autoscaler drives:
    its Deployment, or its LeaderWorkerSet of one group per replica (`components.features.multinode`)."""
    if spec.nodes > 1:
        return WorkloadRef(multinode.API_VERSION, multinode.KIND, spec.name)
    if spec.spot_pool is not None:
        # With a floor, the floor's Deployment keeps its count and the spot pool's follows the load.
        return WorkloadRef("apps/v1", "Deployment", f"{spec.name}{SPOT_SUFFIX}")
    return WorkloadRef("apps/v1", "Deployment", spec.name)


def fixed_replicas(spec: ModelDeploymentSpec) -> int | None:
    """The replica count the workload sets: the deployment's, or none for an autoscaled one, whose
    count is KEDA's HPA's: a count in the workload would be applied again by every `pulumi up`,
    undoing the autoscaler's."""
    return spec.replicas if spec.autoscaling is None else None


def apply(
    deployment: DeploymentContext,
    workload: pulumi.CustomResource,
    monitor: pulumi.CustomResource | None,
    picker: Picker | None = None,
) -> list[k8s.apiextensions.CustomResource]:
    """For an autoscaled deployment, the ScaledObject that sets the workload's replicas from what
    Prometheus scrapes through `monitor`, and at `minReplicas: 0` from the requests its picker holds
    (through the picker's own PodMonitor); nothing otherwise."""
    spec, scaling = deployment.spec, deployment.spec.autoscaling
    if scaling is None:
        return []
    # The owner's Prometheus where the cluster names one (`existing.prometheus`), else the stack's own.
    prometheus = owner_prometheus(deployment.cluster.spec)
    address = prometheus.url if prometheus is not None else prometheus_address(deployment.cluster.source)
    # A scaled deployment always has its PodMonitor: the check refuses one no Prometheus would see.
    assert monitor is not None, "refused before registering (infra.checks.services.check_autoscaling)"
    waits: list[pulumi.Resource] = [workload, monitor]
    if picker is not None and picker.monitor is not None:
        waits.append(picker.monitor)
    scaled = k8s.apiextensions.CustomResource(
        f"{deployment.name}-scaledobject",
        api_version=KEDA_API,
        kind="ScaledObject",
        metadata=deployment.meta,
        spec=scaled_object_spec(spec, scaling, workload_ref(spec), address),
        opts=deployment.child(depends_on=waits),
    )
    return [scaled]

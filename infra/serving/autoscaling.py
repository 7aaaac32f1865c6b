"""Autoscaling a model deployment: the KEDA ScaledObject that sets its replicas from one of vLLM's
own metrics, and the PodMonitor that has the stack's Prometheus scrape them.

Data only (the objects' specs); `components.features.autoscaling` registers them. It is not the
config's rules (`infra.checks.services.check_autoscaling`) nor KEDA's install (the catalog's `keda`
row, joined only on a cluster with an autoscaled deployment: `infra.vocabulary.AUTOSCALING_FEATURE`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from infra.config.base import OwnerPrometheus
from infra.config.model import Autoscaling, InferenceCluster, ModelDeploymentSpec, ScalingMetric
from infra.serving.catalog import CATALOG
from infra.serving.picker import flow_control_query

KEDA_API = "keda.sh/v1alpha1"
PROMETHEUS_OPERATOR_API = "monitoring.coreos.com/v1"

# The catalog row of the stack's Prometheus (kube-prometheus-stack), whose address KEDA asks.
PROMETHEUS_COMPONENT = "kube-prometheus-stack"
# Its Service's port (values.yaml `prometheus.service.port` @ 84.4.0).
PROMETHEUS_PORT = 9090

# The pod label the PodMonitor copies onto every series (`podTargetLabels`); the Prometheus
# operator turns its name into a label name by replacing what a label name cannot hold with `_`.
SERIES_DEPLOYMENT_LABEL = "modelplane_ai_deployment"


@dataclass(frozen=True)
class VllmMetric:
    """How one load signal reads from vLLM's metrics.

    `sum` with KEDA's `AverageValue` divides the total over the replicas, so `target` is what one
    replica carries; `avg` with `Value` compares the mean across replicas with `target` itself
    (keda.sh/docs/2.20/reference/scaledobject-spec, triggers[].metricType).
    """

    name: str
    aggregation: str
    metric_type: str
    says: str


# vLLM's gauges at the pinned image (vllm/vllm-openai:v0.23.0): vllm/v1/metrics/loggers.py,
# PrometheusStatLogger (lines 452, 462 and 520 of PyPI's vllm-0.23.0 sdist), and docs.vllm.ai
# "Production Metrics". `vllm:kv_cache_usage_perc` is the KV-cache gauge of the v1 engine (0 to 1);
# the older `vllm:gpu_cache_usage_perc` appears nowhere in that release's source.
VLLM_METRICS: dict[ScalingMetric, VllmMetric] = {
    ScalingMetric.REQUESTS_WAITING: VllmMetric(
        "vllm:num_requests_waiting", "sum", "AverageValue", "requests waiting per replica"
    ),
    ScalingMetric.REQUESTS_RUNNING: VllmMetric(
        "vllm:num_requests_running", "sum", "AverageValue", "requests running per replica"
    ),
    ScalingMetric.KV_CACHE_USAGE: VllmMetric("vllm:kv_cache_usage_perc", "avg", "Value", "mean KV-cache usage"),
}


@dataclass(frozen=True)
class WorkloadRef:
    """The object whose scale subresource KEDA drives: a Deployment, or a LeaderWorkerSet."""

    api_version: str
    kind: str
    name: str

    def as_target(self) -> dict[str, str]:
        return {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}


def owner_prometheus(cluster: InferenceCluster) -> OwnerPrometheus | None:
    """The Prometheus the cluster's owner names (`existing.prometheus`), if any: the one our
    PodMonitors and ScaledObjects use in place of the stack's own."""
    owner = cluster.owner_block
    return owner.prometheus if owner is not None else None


def monitor_labels(prometheus: OwnerPrometheus | None) -> dict[str, str]:
    """The labels a PodMonitor of ours carries so that `prometheus` selects it: none for the
    stack's own, which selects every PodMonitor (`infra.serving.values.kube_prometheus_stack`)."""
    return dict(prometheus.pod_monitor_labels) if prometheus is not None and prometheus.pod_monitor_labels else {}


def unwatched(preinstalled: Iterable[str], owner: OwnerPrometheus | None) -> bool:
    """Whether no Prometheus of the cluster would select a PodMonitor of ours: it runs its own
    kube-prometheus-stack, so the stack installs none, and names no Prometheus (`existing.prometheus`)
    whose labels the PodMonitor could carry. An autoscaled deployment is refused there
    (`infra.checks.services.check_autoscaling`); the others get no PodMonitor
    (`components.features.monitoring`)."""
    return owner is None and PROMETHEUS_COMPONENT in preinstalled


def prometheus_address(source: str) -> str:
    """The in-cluster address of the Prometheus of a `source` cluster's serving stack (a cluster that
    runs its own names its Prometheus instead: `existing.prometheus`).

    Its Service is `<fullname>-prometheus` in the row's namespace, and the fullname is the release
    name when that contains the chart's name, as the catalog's `mp-<chart>` always does
    (charts/kube-prometheus-stack/templates/_helpers.tpl `kube-prometheus-stack.fullname` and
    templates/prometheus/service.yaml @ 84.4.0).
    """
    row = next(c for c in CATALOG[source] if c.key == PROMETHEUS_COMPONENT)
    return f"http://{row.release}-prometheus.{row.namespace}.svc:{PROMETHEUS_PORT}"


def scaling_query(spec: ModelDeploymentSpec, metric: ScalingMetric) -> str:
    """The PromQL KEDA asks the stack's Prometheus: the deployment's series of the metric, aggregated."""
    m = VLLM_METRICS[metric]
    selector = f'namespace="{spec.namespace}",{SERIES_DEPLOYMENT_LABEL}="{spec.name}"'
    return f"{m.aggregation}({m.name}{{{selector}}})"


def floor_query(spec: ModelDeploymentSpec, scaling: Autoscaling, floor: int) -> str:
    """The PromQL of a deployment with a floor: the load of all its engines (floor and spot pods
    alike) less what the floor's replicas carry at the target, never below 0.

    KEDA's `AverageValue` is the HPA's external metric per pod, and the HPA asks for
    ceil(value / target) replicas of its workload (k8s.io/kubernetes v1.36.0
    pkg/controller/podautoscaler/replica_calculator.go, `GetExternalPerPodMetricReplicas`). For
    the spot Deployment that is ceil(total / target) - floor: the replicas the whole load asks for
    less the floor's. A mean (`KVCacheUsage`) is summed the same way: ceil(n x mean / target) is
    ceil(sum / target).
    """
    m = VLLM_METRICS[scaling.metric]
    selector = f'namespace="{spec.namespace}",{SERIES_DEPLOYMENT_LABEL}="{spec.name}"'
    return f"clamp_min(sum({m.name}{{{selector}}}) - {floor * scaling.target:g}, 0)"


def scaled_object_spec(
    spec: ModelDeploymentSpec, scaling: Autoscaling, workload: WorkloadRef, prometheus: str
) -> dict[str, Any]:
    """The ScaledObject's spec: the workload, the bounds and one trigger on the `prometheus` address
    (keda.sh/docs/2.20/scalers/prometheus: `serverAddress`, `query`, `threshold` as text), and the
    scale-down window when `scaleDownSeconds` is set."""
    m = VLLM_METRICS[scaling.metric]
    floor = spec.floor_replicas
    so: dict[str, Any] = {
        "scaleTargetRef": workload.as_target(),
        # With a floor the target is the spot pool's Deployment, and the floor's replicas are not its own.
        "minReplicaCount": scaling.min_replicas - floor,
        "maxReplicaCount": scaling.max_replicas - floor,
        "triggers": [
            prometheus_trigger(
                "AverageValue" if floor else m.metric_type,
                prometheus,
                floor_query(spec, scaling, floor) if floor else scaling_query(spec, scaling.metric),
                threshold=f"{scaling.target:g}",
            )
        ],
    }
    if scaling.min_replicas == 0:
        # At zero replicas no engine serves the metric above, so the requests the picker holds
        # (its flow control, `infra.serving.picker`) wake the deployment: KEDA activates the
        # workload when any trigger's value passes its `activationThreshold` (keda.sh/docs/2.20/concepts/scaling-deployments,
        # "Activating and Scaling thresholds"; default 0), here the first held request, and the
        # HPA takes over from one replica, each held request asking for one more.
        so["triggers"].append(
            prometheus_trigger(
                "AverageValue", prometheus, flow_control_query(spec), threshold="1", activationThreshold="0"
            )
        )
    if scaling.scale_down_seconds is not None:
        # KEDA copies `advanced.horizontalPodAutoscalerConfig.behavior` into the HPA it creates
        # (config/crd/bases/keda.sh_scaledobjects.yaml lines 78-144 and controllers/keda/hpa.go
        # lines 79-81 at kedacore/keda v2.20.2): autoscaling/v2 HPAScalingRules, whose scale-down
        # window defaults to 300 s (k8s.io/api v0.36.0 autoscaling/v2/types.go lines 193-200).
        # Unset, nothing is written and that default holds.
        so["advanced"] = {
            "horizontalPodAutoscalerConfig": {
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": scaling.scale_down_seconds}}
            }
        }
    return so


def prometheus_trigger(metric_type: str, address: str, query: str, **thresholds: str) -> dict[str, Any]:
    """One Prometheus trigger of a ScaledObject (keda.sh/docs/2.20/scalers/prometheus: `serverAddress`,
    `query`, and its thresholds as text)."""
    return {
        "type": "prometheus",
        "metricType": metric_type,
        "metadata": {"serverAddress": address, "query": query, **thresholds},
    }


def pod_monitor_spec(deployment_label: str, spec: ModelDeploymentSpec, port_name: str) -> dict[str, Any]:
    """The PodMonitor of the engine's pods: vLLM serves `/metrics` on its API port
    (docs.vllm.ai "Production Metrics"); the deployment's label goes onto each series."""
    return {
        "selector": {"matchLabels": {deployment_label: spec.name}},
        "podTargetLabels": [deployment_label],
        "podMetricsEndpoints": [{"port": port_name, "path": "/metrics"}],
    }

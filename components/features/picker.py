"""The endpoint picker: an InferencePool over a deployment's serving pods and the picker that routes in it.

A deployment that a service routes with `routing: Picker` gets the objects the Gateway API Inference
Extension's `inferencepool` chart renders for one pool (config/charts/inferencepool at v1.5.0): the
InferencePool, the picker's ConfigMap, ServiceAccount, Role and RoleBinding, Deployment and Service,
and, where a Prometheus would select it, a PodMonitor of its metrics (whose flow-control queue wakes
a deployment at zero: `components.features.autoscaling`). They are ours rather than a release of that
chart, one per deployment, so the plan and the review show each one, and the engine tier runs the
real picker from exactly these objects. Every value is data in `infra.serving.picker`, with its
source; the gateway's side (the external processor and the endpoint override) is
`components.features.routing`. The pool's CRD comes with the serving stack
(`components.serving_stack`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi_kubernetes as k8s
import yaml

from components.features import DeploymentContext, monitoring
from infra.serving import picker as epp

# The picker's own footprint: the chart asks for 4 CPUs and 8Gi (config/charts/epplib/values.yaml
# `inferenceExtension.resources` at v1.5.0), sized for large pools; one deployment's pool is a
# handful of pods, and the picker's work is a scrape of each every 50 ms and a score per request.
PICKER_REQUESTS = {"cpu": "500m", "memory": "512Mi"}


@dataclass(frozen=True)
class Picker:
    """What the deployment and its routes need of its picker: the pool, its Deployment and Service,
    and its PodMonitor (None where no Prometheus would select one)."""

    pool: k8s.apiextensions.CustomResource
    deployment: k8s.apps.v1.Deployment
    service: k8s.core.v1.Service
    monitor: k8s.apiextensions.CustomResource | None


def apply(deployment: DeploymentContext, selector: dict[str, str]) -> Picker:
    """The pool over the pods `selector` picks (the deployment's Service's), and its picker."""
    spec = deployment.spec
    name = epp.picker_name(spec)
    labels = {epp.PICKER_LABEL: spec.name}
    meta = k8s.meta.v1.ObjectMetaArgs(name=name, namespace=spec.namespace, labels=labels)
    config = k8s.core.v1.ConfigMap(
        f"{deployment.name}-picker-config",
        metadata=meta,
        data={epp.CONFIG_FILE: yaml.safe_dump(epp.picker_config(spec), sort_keys=False)},
        opts=deployment.child(),
    )
    account = k8s.core.v1.ServiceAccount(f"{deployment.name}-picker-account", metadata=meta, opts=deployment.child())
    role = k8s.rbac.v1.Role(
        f"{deployment.name}-picker-role",
        metadata=meta,
        rules=[k8s.rbac.v1.PolicyRuleArgs(**rule) for rule in _snake(epp.picker_rules())],
        opts=deployment.child(),
    )
    binding = k8s.rbac.v1.RoleBinding(
        f"{deployment.name}-picker-rolebinding",
        metadata=meta,
        role_ref=k8s.rbac.v1.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="Role", name=name),
        subjects=[k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=name, namespace=spec.namespace)],
        opts=deployment.child(depends_on=[role, account]),
    )
    pool = k8s.apiextensions.CustomResource(
        f"{deployment.name}-inferencepool",
        api_version=epp.POOL_API,
        kind=epp.POOL_KIND,
        metadata=k8s.meta.v1.ObjectMetaArgs(
            name=epp.pool_name(spec), namespace=spec.namespace, labels=deployment.labels
        ),
        spec=epp.pool_spec(spec, selector),
        opts=deployment.child(),
    )
    picker = k8s.apps.v1.Deployment(
        f"{deployment.name}-picker",
        metadata=meta,
        spec=k8s.apps.v1.DeploymentSpecArgs(
            replicas=1,
            selector=k8s.meta.v1.LabelSelectorArgs(match_labels=labels),
            # One picker at a time: its prefix memory is its own (config/charts/epplib/templates/_deployment.yaml,
            # `strategy: Recreate`).
            strategy=k8s.apps.v1.DeploymentStrategyArgs(type="Recreate"),
            template=k8s.core.v1.PodTemplateSpecArgs(
                metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels),
                spec=k8s.core.v1.PodSpecArgs(
                    service_account_name=name,
                    containers=[_container(deployment)],
                    volumes=[
                        k8s.core.v1.VolumeArgs(
                            name="plugins-config", config_map=k8s.core.v1.ConfigMapVolumeSourceArgs(name=name)
                        )
                    ],
                ),
            ),
        ),
        opts=deployment.child(depends_on=[config, binding, pool]),
    )
    service = k8s.core.v1.Service(
        f"{deployment.name}-picker-service",
        metadata=meta,
        spec=k8s.core.v1.ServiceSpecArgs(
            selector=labels,
            # config/charts/epplib/templates/_service.yaml at v1.5.0.
            ports=[
                k8s.core.v1.ServicePortArgs(
                    name=epp.EXT_PROC_PORT_NAME, port=epp.EXT_PROC_PORT, target_port=epp.EXT_PROC_PORT, protocol="TCP"
                ),
                k8s.core.v1.ServicePortArgs(
                    name=epp.METRICS_PORT_NAME, port=epp.METRICS_PORT, target_port=epp.METRICS_PORT, protocol="TCP"
                ),
            ],
        ),
        opts=deployment.child(),
    )
    return Picker(pool, picker, service, _monitor(deployment, labels))


def _container(deployment: DeploymentContext) -> k8s.core.v1.ContainerArgs:
    """The picker's container (config/charts/epplib/templates/_deployment.yaml at v1.5.0): its ports,
    its gRPC health probes, and the namespace and pod name it reads from its environment."""

    def field(path: str) -> k8s.core.v1.EnvVarSourceArgs:
        return k8s.core.v1.EnvVarSourceArgs(field_ref=k8s.core.v1.ObjectFieldSelectorArgs(field_path=path))

    probe = k8s.core.v1.GRPCActionArgs(port=epp.HEALTH_PORT, service=epp.HEALTH_SERVICE)
    return k8s.core.v1.ContainerArgs(
        name="epp",
        image=epp.IMAGE,
        args=epp.picker_args(deployment.spec),
        ports=[
            k8s.core.v1.ContainerPortArgs(name="grpc", container_port=epp.EXT_PROC_PORT),
            k8s.core.v1.ContainerPortArgs(name="grpc-health", container_port=epp.HEALTH_PORT),
            k8s.core.v1.ContainerPortArgs(name=epp.METRICS_PORT_NAME, container_port=epp.METRICS_PORT),
        ],
        liveness_probe=k8s.core.v1.ProbeArgs(grpc=probe, initial_delay_seconds=5, period_seconds=10),
        readiness_probe=k8s.core.v1.ProbeArgs(grpc=probe, period_seconds=2),
        env=[
            k8s.core.v1.EnvVarArgs(name="NAMESPACE", value_from=field("metadata.namespace")),
            k8s.core.v1.EnvVarArgs(name="POD_NAME", value_from=field("metadata.name")),
        ],
        resources=k8s.core.v1.ResourceRequirementsArgs(requests=dict(PICKER_REQUESTS)),
        volume_mounts=[k8s.core.v1.VolumeMountArgs(name="plugins-config", mount_path=epp.CONFIG_DIR)],
    )


def _monitor(deployment: DeploymentContext, labels: dict[str, str]) -> k8s.apiextensions.CustomResource | None:
    """The picker's PodMonitor, beside the engines' and selected by the same Prometheus
    (`components.features.monitoring`): its metrics port, plain HTTP with no token
    (`--metrics-endpoint-auth=false`, `infra.serving.picker.picker_args`)."""
    spec = {
        "selector": {"matchLabels": labels},
        "podMetricsEndpoints": [{"port": epp.METRICS_PORT_NAME, "path": "/metrics"}],
    }
    return monitoring.watched_pod_monitor(
        deployment, "picker-podmonitor", epp.picker_name(deployment.spec), labels, spec
    )


def _snake(rules: list[dict[str, list[str]]]) -> list[dict[str, list[str]]]:
    keys = {"apiGroups": "api_groups", "resources": "resources", "verbs": "verbs"}
    return [{keys[k]: v for k, v in rule.items()} for rule in rules]

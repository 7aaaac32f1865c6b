"""ServingStack: installs on one cluster exactly the catalog components its pools' drivers select.

It turns catalog rows (`infra.serving.catalog`) into `kubernetes.helm.v3.Release`s on the cluster's
provider; it decides nothing about which rows (that is `join_charts`) or their values (that is
`infra.serving.values`). Releases are Helm releases, not rendered charts, because the operators rely
on Helm hooks.

Next to the releases it creates the few objects a chart cannot be trusted with:
- the `gpu.amd.com` DeviceClass, when the AMD operator is joined: the chart renders it only when
  Helm's capabilities list resource.k8s.io, and skips it silently otherwise
  (gpu-operator-charts v1.5.1 `helm-charts-k8s/templates/_operator-helpers.tpl` picks the API
  version from `.Capabilities`); the chart's own copy is turned off in its values;
- where the cloud's profile says so (GKE), a critical-pods ResourceQuota in each namespace whose
  pods run at a system priority class (the catalog rows marked `critical_pods`): GKE admits
  `system-node-critical` / `system-cluster-critical` pods outside kube-system only where such a
  quota exists (https://cloud.google.com/kubernetes-engine/quotas#limitations_and_consumption);
- where the profile says so (GKE), Google's COS driver installer when the NVIDIA stack is joined:
  GKE's own driver installation is off on DRA pools, and the GPU Operator leaves the driver to
  Google's installer (NVIDIA GPU Operator docs, "Google GKE");
- the PodMonitor through which a Prometheus scrapes the telemetry collector's exporter (the GPU
  series the Fleet GPUs dashboard reads: `infra.serving.telemetry.collector_pod_monitor_spec`),
  labelled for the owner's Prometheus where `existing.prometheus` names one, and none where no
  Prometheus would select it (`infra.serving.autoscaling.unwatched`);
- the Grafana dashboards (`infra.serving.dashboards`), one ConfigMap each in kube-prometheus-stack's
  namespace, when this stack installs kube-prometheus-stack: a cluster whose owner runs their own
  (`existing.preinstalled`) gets none, since nothing says their Grafana reads our labels.

It never asks for its cloud by name: it reads the cluster's profile.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from infra import tokens
from infra.facts import ClusterFacts
from infra.serving import telemetry
from infra.serving.autoscaling import (
    PROMETHEUS_COMPONENT,
    PROMETHEUS_OPERATOR_API,
    monitor_labels,
    owner_prometheus,
    unwatched,
)
from infra.serving.catalog import cluster_charts, critical_pod_namespaces, install_order, needed_by_others
from infra.serving.chart import Chart
from infra.serving.dashboards import DASHBOARDS, dashboard_config_map
from infra.serving.picker import crds_url
from infra.serving.rows import AMD_OPERATOR_KEY, NVIDIA_OPERATOR_KEY
from infra.vocabulary import AMD_GPU_DRIVER, DEVICE_CLASS

# The DeviceClass of the AMD operator's DRA driver, created here rather than by its chart.
AMD_DEVICE_CLASS = DEVICE_CLASS[AMD_GPU_DRIVER]

CRITICAL_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")
# The quota exists to admit these priority classes, not to cap them: its limit is never reached.
CRITICAL_PODS_LIMIT = "1G"

# The component that needs Google's driver installer on GKE before it can validate the driver.
# Google's COS installer that uses the driver image GKE preloads on the node, pinned to a commit of
# GoogleCloudPlatform/container-engine-accelerators so `pulumi up` never applies an unpinned change.
# The file at this commit runs its pause container from `gke.gcr.io/pause:3.8`; older versions of
# it ran `gcr.io/google-containers/pause:2.0`, a Docker schema 1 image, which containerd 2.0 (GKE
# 1.33 and later) refuses to pull (https://cloud.google.com/kubernetes-engine/docs/deprecations/migrate-containerd-2).
GKE_DRIVER_INSTALLER = (
    "https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/"
    "992db81257553607f1477945f1b3219632991829/nvidia-driver-installer/cos/daemonset-preloaded.yaml"
)


@dataclass(frozen=True)
class ServingStackArgs:
    facts: ClusterFacts
    # A deployment on the cluster is routed through an endpoint picker: the InferencePool CRDs come too.
    inference_pools: bool = False


def release_args(component: Chart, wait: bool) -> dict[str, Any]:
    """The Release arguments for one catalog row; the plan prints exactly these values."""
    # OCI charts are addressed by their full reference; HTTP charts by name in their repository.
    repo_opts = None if component.oci else k8s.helm.v3.RepositoryOptsArgs(repo=component.repo)
    chart = f"{component.repo}/{component.chart}" if component.oci else component.chart
    return {
        "name": component.release,
        "chart": chart,
        "version": component.version,
        "repository_opts": repo_opts,
        "namespace": component.namespace,
        "create_namespace": True,
        "values": dict(component.values),
        # Charts others depend on are awaited (helm --wait) so dependents start on a ready base.
        "skip_await": not wait,
        "atomic": False,
    }


def planned_release(component: Chart, wait: bool) -> dict[str, Any]:
    """One release as the ServingStack states it for the policy pack: its Release's arguments and drivers.

    The stack registers the releases it plans as its own inputs and outputs, so the pack judges
    them from literals known in every mode: on a first preview a Release of a cluster that does
    not exist yet reaches the stack policies with no properties at all (pulumi/pulumi v3.259.0,
    pkg/resource/plugin/provider_plugin.go, `Create` while the provider's config is unknown).
    """
    args = release_args(component, wait)
    return {
        "key": component.key,
        "name": args["name"],
        "chart": args["chart"],
        "repo": component.repo,
        "version": args["version"],
        # Where the chart comes from: the catalog's own pin and whether a chart mirror serves it;
        # the `mirror-chart-version` policy reads a mirror's version that is not the pin.
        "chartSource": component.chart_source,
        "namespace": args["namespace"],
        "values": args["values"],
        "draDrivers": sorted(component.dra_drivers),
        "dependsOn": list(component.depends_on),
    }


def quota_namespaces(facts: ClusterFacts, components: list[Chart]) -> list[str]:
    """Namespaces that need a critical-pods quota on this cluster (none where the cloud needs none)."""
    if not facts.profile.critical_pods_quota:
        return []
    return critical_pod_namespaces(components)


class ServingStack(pulumi.ComponentResource):
    release_names: pulumi.Output[list[str]]

    def __init__(self, name: str, args: ServingStackArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        facts = args.facts
        components = cluster_charts(facts)
        awaited = needed_by_others(components)
        # The facts the pack reads, registered as inputs and (below) as outputs.
        planned = {
            "cluster": facts.name,
            "source": facts.source,
            "draDrivers": list(facts.dra_drivers),
            "supportedDrivers": list(facts.supported_drivers),
            "components": [c.key for c in components],
            # The owner runs the GPU operator: its row is left out (the policy pack joins the same way).
            "ownerGpuOperator": facts.owner_gpu_operator,
            # Components the cluster runs itself: left out, as the pack joins too.
            "preinstalled": list(facts.preinstalled),
            "releases": [planned_release(c, c.key in awaited) for c in components],
        }
        super().__init__(tokens.SERVING_STACK, name, planned, opts)
        joined = {c.key for c in components}
        # What must exist before a component's release installs, by component key.
        prerequisites: dict[str, list[pulumi.Resource]] = {}

        quotas = self._critical_pod_quotas(name, quota_namespaces(facts, components))
        for component in components:
            if component.namespace in quotas:
                prerequisites.setdefault(component.key, []).append(quotas[component.namespace])

        if facts.profile.nvidia.google_driver_installer and NVIDIA_OPERATOR_KEY in joined:
            installer = k8s.yaml.v2.ConfigFile(
                f"{name}-gke-nvidia-driver-installer",
                file=GKE_DRIVER_INSTALLER,
                opts=pulumi.ResourceOptions(parent=self),
            )
            prerequisites.setdefault(NVIDIA_OPERATOR_KEY, []).append(installer)

        self.inference_crds: k8s.yaml.v2.ConfigFile | None = None
        if args.inference_pools:
            # The pool's CRDs as the project publishes them with each release (infra.serving.picker.CRDS_URL),
            # or from the chart mirror; no chart installs them (the inferencepool chart has none).
            self.inference_crds = k8s.yaml.v2.ConfigFile(
                f"{name}-inference-crds",
                file=crds_url(facts.chart_mirror),
                opts=pulumi.ResourceOptions(parent=self),
            )

        self.amd_device_class: k8s.resource.v1.DeviceClass | None = None
        if AMD_OPERATOR_KEY in joined:
            self.amd_device_class = k8s.resource.v1.DeviceClass(
                f"{name}-amd-device-class",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=AMD_DEVICE_CLASS),
                spec=k8s.resource.v1.DeviceClassSpecArgs(
                    selectors=[
                        k8s.resource.v1.DeviceSelectorArgs(
                            cel=k8s.resource.v1.CELDeviceSelectorArgs(expression=f"device.driver == '{AMD_GPU_DRIVER}'")
                        )
                    ]
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )

        self.releases: dict[str, k8s.helm.v3.Release] = {}
        for component in install_order(components):
            deps: list[pulumi.Resource] = [self.releases[d] for d in component.depends_on if d in self.releases]
            deps += prerequisites.get(component.key, [])
            self.releases[component.key] = k8s.helm.v3.Release(
                f"{name}-{component.key}",
                **release_args(component, component.key in awaited),
                opts=pulumi.ResourceOptions(parent=self, depends_on=deps),
            )
        self.collector_monitor = self._collector_monitor(name, facts, components)
        self.dashboards = self._dashboards(name, next((c for c in components if c.key == PROMETHEUS_COMPONENT), None))
        self.release_names = pulumi.Output.from_input([c.release for c in components])
        self.register_outputs(planned)

    def _collector_monitor(
        self, name: str, facts: ClusterFacts, components: list[Chart]
    ) -> k8s.apiextensions.CustomResource | None:
        """The collector's PodMonitor, after its release and the one that brings the PodMonitor
        CRD; none where the stack installs no collector or no Prometheus would select it."""
        collector = next((c for c in components if c.key == telemetry.COMPONENT), None)
        prometheus = owner_prometheus(facts.spec)
        if collector is None or unwatched(facts.preinstalled, prometheus):
            return None
        deps = [self.releases[k] for k in (telemetry.COMPONENT, PROMETHEUS_COMPONENT) if k in self.releases]
        return k8s.apiextensions.CustomResource(
            f"{name}-collector-podmonitor",
            api_version=PROMETHEUS_OPERATOR_API,
            kind="PodMonitor",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=collector.release, namespace=collector.namespace, labels=monitor_labels(prometheus) or None
            ),
            spec=telemetry.collector_pod_monitor_spec(collector.release),
            opts=pulumi.ResourceOptions(parent=self, depends_on=deps),
        )

    def _dashboards(self, name: str, prometheus: Chart | None) -> list[k8s.core.v1.ConfigMap]:
        """The dashboards' ConfigMaps, after the release whose Grafana reads them (and whose
        namespace they live in); none where this stack installs no kube-prometheus-stack."""
        if prometheus is None:
            return []
        release = self.releases[prometheus.key]
        maps = []
        for dashboard in DASHBOARDS:
            cm = dashboard_config_map(dashboard, prometheus.values, prometheus.namespace)
            maps.append(
                k8s.core.v1.ConfigMap(
                    f"{name}-{dashboard.uid}",
                    metadata=k8s.meta.v1.ObjectMetaArgs(**cm["metadata"]),
                    data=cm["data"],
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[release]),
                )
            )
        return maps

    def _critical_pod_quotas(self, name: str, namespaces: list[str]) -> Mapping[str, k8s.core.v1.ResourceQuota]:
        """The critical-pods quota in each namespace, with the namespace it lives in."""
        quotas: dict[str, k8s.core.v1.ResourceQuota] = {}
        for namespace in namespaces:
            ns = k8s.core.v1.Namespace(
                f"{name}-{namespace}-namespace",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=namespace),
                opts=pulumi.ResourceOptions(parent=self),
            )
            quotas[namespace] = k8s.core.v1.ResourceQuota(
                f"{name}-{namespace}-critical-pods",
                metadata=k8s.meta.v1.ObjectMetaArgs(name="gcp-critical-pods", namespace=ns.metadata.name),
                spec=k8s.core.v1.ResourceQuotaSpecArgs(
                    hard={"pods": CRITICAL_PODS_LIMIT},
                    scope_selector=k8s.core.v1.ScopeSelectorArgs(
                        match_expressions=[
                            k8s.core.v1.ScopedResourceSelectorRequirementArgs(
                                scope_name="PriorityClass",
                                operator="In",
                                values=list(CRITICAL_PRIORITY_CLASSES),
                            )
                        ]
                    ),
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
        return quotas

"""ServingStack: installs on one cluster exactly the catalog components its pools' drivers select.

It turns catalog rows (`components.catalog`) into `kubernetes.helm.v3.Release`s on the cluster's
provider; it decides nothing about which rows (that is `join_components`) or their values (that is
`components.values`). Releases are Helm releases, not rendered charts, because the operators rely
on Helm hooks.

Next to the releases it creates the few objects a chart cannot be trusted with:
- the `gpu.amd.com` DeviceClass, when the AMD operator is joined: the chart renders it only when
  Helm's capabilities list resource.k8s.io, and skips it silently otherwise
  (`reference/accelerator-facts.md` §9.4); the chart's own copy is turned off in its values;
- on GKE, a critical-pods ResourceQuota in each namespace whose pods run at a system priority
  class: GKE admits `system-node-critical` / `system-cluster-critical` pods outside kube-system only
  where such a quota exists (§9.3);
- on GKE, Google's COS driver installer when the NVIDIA stack is joined: GKE's own driver
  installation is off on DRA pools, and the GPU Operator leaves the driver to Google's installer (§1.1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.catalog import Component, install_order, needed_by_others
from infra.facts import ClusterFacts

TYPE_TOKEN = "modelplane:stack:ServingStack"

# The component whose DRA driver serves `gpu.amd.com`; its DeviceClass is created here.
AMD_OPERATOR_KEY = "amd-gpu-operator"
AMD_DEVICE_CLASS = "gpu.amd.com"

# Components whose pods use a system priority class (the GPU Operator's daemonsets and the NVIDIA
# DRA driver's controller and kubelet plugin default to `system-node-critical`).
CRITICAL_POD_COMPONENTS = ("gpu-operator", "dra-driver-nvidia-gpu")
CRITICAL_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")
# The quota exists to admit these priority classes, not to cap them: its limit is never reached.
CRITICAL_PODS_LIMIT = "1G"

# The component that needs Google's driver installer on GKE before it can validate the driver.
NVIDIA_OPERATOR_KEY = "gpu-operator"
# Google's COS installer that uses the driver image GKE preloads on the node, pinned to a commit of
# GoogleCloudPlatform/container-engine-accelerators so `pulumi up` never applies an unreviewed change.
GKE_DRIVER_INSTALLER = (
    "https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/"
    "068b15a980977bdaab46eb73e1ac8fba47e41f60/nvidia-driver-installer/cos/daemonset-preloaded.yaml"
)


@dataclass(frozen=True)
class ServingStackArgs:
    facts: ClusterFacts


def release_args(component: Component, wait: bool) -> dict[str, Any]:
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


def planned_release(component: Component, wait: bool) -> dict[str, Any]:
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
        "namespace": args["namespace"],
        "values": args["values"],
        "draDrivers": sorted(component.dra_drivers),
        "dependsOn": list(component.depends_on),
    }


def critical_pod_namespaces(facts: ClusterFacts) -> list[str]:
    """Namespaces that need GKE's critical-pods quota on this cluster (none off GKE)."""
    if facts.source != "GKE":
        return []
    return sorted({c.namespace for c in facts.components if c.key in CRITICAL_POD_COMPONENTS})


class ServingStack(pulumi.ComponentResource):
    release_names: pulumi.Output[list[str]]

    def __init__(self, name: str, args: ServingStackArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        facts = args.facts
        awaited = needed_by_others(facts.components)
        # The facts the pack reads, registered as inputs and (below) as outputs.
        planned = {
            "cluster": facts.name,
            "source": facts.source,
            "draDrivers": list(facts.dra_drivers),
            "supportedDrivers": list(facts.supported_drivers),
            "components": [c.key for c in facts.components],
            "releases": [planned_release(c, c.key in awaited) for c in facts.components],
        }
        super().__init__(TYPE_TOKEN, name, planned, opts)
        joined = {c.key for c in facts.components}
        # What must exist before a component's release installs, by component key.
        prerequisites: dict[str, list[pulumi.Resource]] = {}

        quotas = self._critical_pod_quotas(name, critical_pod_namespaces(facts))
        for component in facts.components:
            if component.namespace in quotas:
                prerequisites.setdefault(component.key, []).append(quotas[component.namespace])

        if facts.source == "GKE" and NVIDIA_OPERATOR_KEY in joined:
            installer = k8s.yaml.v2.ConfigFile(
                f"{name}-gke-nvidia-driver-installer",
                file=GKE_DRIVER_INSTALLER,
                opts=pulumi.ResourceOptions(parent=self),
            )
            prerequisites.setdefault(NVIDIA_OPERATOR_KEY, []).append(installer)

        self.amd_device_class: k8s.resource.v1.DeviceClass | None = None
        if AMD_OPERATOR_KEY in joined:
            self.amd_device_class = k8s.resource.v1.DeviceClass(
                f"{name}-amd-device-class",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=AMD_DEVICE_CLASS),
                spec=k8s.resource.v1.DeviceClassSpecArgs(
                    selectors=[
                        k8s.resource.v1.DeviceSelectorArgs(
                            cel=k8s.resource.v1.CELDeviceSelectorArgs(
                                expression=f"device.driver == '{AMD_DEVICE_CLASS}'"
                            )
                        )
                    ]
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )

        self.releases: dict[str, k8s.helm.v3.Release] = {}
        for component in install_order(facts.components):
            deps: list[pulumi.Resource] = [self.releases[d] for d in component.depends_on if d in self.releases]
            deps += prerequisites.get(component.key, [])
            self.releases[component.key] = k8s.helm.v3.Release(
                f"{name}-{component.key}",
                **release_args(component, component.key in awaited),
                opts=pulumi.ResourceOptions(parent=self, depends_on=deps),
            )
        self.release_names = pulumi.Output.from_input([c.release for c in facts.components])
        self.register_outputs(planned)

    def _critical_pod_quotas(self, name: str, namespaces: list[str]) -> Mapping[str, k8s.core.v1.ResourceQuota]:
        """GKE's critical-pods quota in each namespace, with the namespace it lives in."""
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

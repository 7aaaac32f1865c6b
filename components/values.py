"""Helm values for each catalog row, per cloud.

One function per chart, taking the cloud; what differs between clouds is decided here, next to
the value, with the reason. The catalog (`components.catalog`) calls these when it loads. This
module holds values only: which rows install is the catalog's join, and the objects a chart
cannot be trusted to create (the `gpu.amd.com` DeviceClass, GKE's critical-pods quotas) are the
ServingStack's.

Facts are cited from the project's reference notes as [accelerator-facts §n] and
[modelplane-domain §n]; chart keys were checked against the charts' own values files.

Tolerations are always scoped to a taint key this program puts on a pool (`infra.facts`): no value
here tolerates every taint, so a device stack never lands on another vendor's or the system pool.
"""

from __future__ import annotations

from typing import Any

Values = dict[str, Any]

# The taint keys pools carry (`infra.facts.VENDOR_TAINT_KEY`, `CPU_TAINT_KEY`; spelled again here
# because the facts module imports the catalog, which imports this one; a test keeps them equal).
NVIDIA_TAINT_KEY = "nvidia.com/gpu"
AMD_TAINT_KEY = "amd.com/gpu"
CPU_TAINT_KEY = "modelplane.ai/cpu"

# GKE installs NVIDIA drivers under this host directory on COS, and the container toolkit and DRA
# driver must look there [accelerator-facts §1.1 "GKE with Google's driver installer", §1.2 Values].
GKE_NVIDIA_DIR = "/home/kubernetes/bin/nvidia"
# Where the GPU Operator's driver container exposes the driver it installed [accelerator-facts §1.2].
OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"

# Civo's documented GPU Operator setup installs the driver with the operator; 580.173.02 is the
# version modelplane pins there (open kernel modules) [modelplane-domain §2, Civo row]. DRA needs a
# driver >= 580 [accelerator-facts §1.2 Prerequisites].
CIVO_NVIDIA_DRIVER = "580.173.02"

# AMD images, pinned to the tags gpu-operator-charts v1.5.1 ships with or that are released next
# to it. The chart's own defaults float (`latest`, `labeller-latest`), which the review rejected.
# - operator controller and utils: released with the chart as v1.5.1 (the chart's versioned images
#   follow its version: v1.5.0 ships gpu-operator-utils:v1.5.0, [ROCm/gpu-operator releases]);
AMD_OPERATOR_IMAGE = ("docker.io/rocm/gpu-operator", "v1.5.1")
AMD_UTILS_IMAGE = "docker.io/rocm/gpu-operator-utils:v1.5.1"
# - metrics exporter: the review rendered v1.5.1 and confirmed it [seed-pr-review; accelerator-facts §2.2];
AMD_METRICS_EXPORTER_IMAGE = "docker.io/rocm/device-metrics-exporter:v1.5.1"
# - DRA driver: ROCm/k8s-gpu-dra-driver release v1.0.1, the release run with operator v1.5.1 in DRA mode;
AMD_DRA_DRIVER_IMAGE = "docker.io/rocm/k8s-gpu-dra-driver:v1.0.1"
# - device plugin and node labeller: 1.31.0.9, the pair ROCm/k8s-device-plugin's own chart names at
#   its newest tag (helm/amd-gpu/values.yaml @v1.31.0.10: `1.31.0.9`, `labeller-1.31.0.9`; v1.31.0.10
#   itself changed only build files). gpu-operator-charts v1.5.1 lists no labeller tag (its values
#   say `labeller-latest`), and no ROCm file names a `labeller-1.31.0.10` image. The device plugin stays
#   off; pinned so that turning it on could never pull a floating image.
AMD_DEVICE_PLUGIN_IMAGE = "docker.io/rocm/k8s-device-plugin:1.31.0.9"
AMD_NODE_LABELLER_IMAGE = "docker.io/rocm/k8s-device-plugin:labeller-1.31.0.9"
# - init container: the chart's default, already an exact tag.
AMD_INIT_CONTAINER_IMAGE = "docker.io/library/busybox:1.36"

# Clouds whose pools this program provisions; only Existing clusters are brought by their owner.
MANAGED_CLOUDS = ("GKE", "EKS", "AKS", "Civo", "Vultr")


def nvidia_driver_owned_by_stack(cloud: str) -> bool:
    """Whether the serving stack's GPU Operator installs the NVIDIA driver on this cloud.

    Only Civo: its node image has no driver and Civo's guide installs it with the operator.
    - GKE: Google's COS installer (the preloaded daemonset) owns it [accelerator-facts §1.1].
    - EKS: the AL2023 NVIDIA AMI ships driver and toolkit [accelerator-facts §1.1 EKS].
    - AKS: the AKS node pool installs it (gpu_profile driver Install). AKS offers either; we keep
      AKS's, as modelplane does, so the driver follows the node image AKS validates and the DRA
      driver root stays `/` [accelerator-facts §1.1 AKS; modelplane-domain §2, AKS row]. An AKS pool
      reads this to decide its driver setting, so the two can never both install one.
    - Vultr: VKE GPU nodes come with the driver from VKE's GPU add-on [modelplane-domain §2, Vultr row].
    - Existing: the cluster's owner brought the driver with the hardware.
    """
    return cloud == "Civo"


def nvidia_driver_root(cloud: str) -> str:
    """Where the NVIDIA driver lives on a node's host filesystem: what `nvidiaDriverRoot` says."""
    if cloud == "GKE":
        return GKE_NVIDIA_DIR
    if nvidia_driver_owned_by_stack(cloud):
        return OPERATOR_DRIVER_ROOT
    return "/"


def nvidia_toleration(cloud: str) -> Values:
    """The toleration for the NVIDIA GPU taint, and nothing else.

    `Exists` on the key, because GKE sets the value `present` itself and an Existing cluster's owner
    picks their own [accelerator-facts §9.2]. AKS gets `Equal "true"`: the value its pools carry,
    spelled as AKS's accelerated-node toleration is [modelplane-domain §2, AKS row].
    """
    if cloud == "AKS":
        return {"key": NVIDIA_TAINT_KEY, "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    return {"key": NVIDIA_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}


def amd_toleration() -> Values:
    """AMD pools carry `amd.com/gpu=true:NoSchedule` (`infra.facts`); owners' values may differ."""
    return {"key": AMD_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}


def cpu_toleration() -> Values:
    """Exactly the CPU pools' taint, `modelplane.ai/cpu=true:NoSchedule`."""
    return {"key": CPU_TAINT_KEY, "operator": "Equal", "value": "true", "effect": "NoSchedule"}


def gpu_tolerations(cloud: str) -> list[Values]:
    """Every GPU taint a cloud's pools can carry: AMD pools exist only on Existing clusters."""
    tolerations = [nvidia_toleration(cloud)]
    if cloud == "Existing":
        tolerations.append(amd_toleration())
    return tolerations


# --------------------------------------------------------------------------------------------
# Neutral components


def cert_manager(cloud: str) -> Values:
    # The webhooks of the AMD operator and envoy gateway need cert-manager's CRDs; the chart
    # installs them only when asked.
    return {"crds": {"enabled": True}}


def kube_prometheus_stack(cloud: str) -> Values:
    return {
        # Dashboards and alert routing belong to the platform's own tooling; this Prometheus only
        # feeds the telemetry collector and autoscaling.
        "grafana": {"enabled": False},
        "alertmanager": {"enabled": False},
        "prometheus": {
            "prometheusSpec": {
                # Pick up every PodMonitor and ServiceMonitor in every namespace, not only those
                # labelled with this release: the exporters of other charts carry their own labels.
                "podMonitorSelectorNilUsesHelmValues": False,
                "serviceMonitorSelectorNilUsesHelmValues": False,
                "podMonitorSelector": {},
                "serviceMonitorSelector": {},
                "podMonitorNamespaceSelector": {},
                "serviceMonitorNamespaceSelector": {},
            }
        },
        # node-exporter's chart default tolerates every NoSchedule taint; scope it to the taints
        # our pools carry so it still reaches GPU and CPU nodes and nothing else is implied.
        "prometheus-node-exporter": {"tolerations": [*gpu_tolerations(cloud), cpu_toleration()]},
    }


def envoy_gateway(cloud: str) -> Values:
    # The Backend API lets routes point at inference endpoints outside Services (modelplane runs
    # envoy gateway with it on) [modelplane-domain §3.1].
    return {"config": {"envoyGateway": {"extensionApis": {"enableBackend": True}}}}


def leader_worker_set(cloud: str) -> Values:
    # Chart defaults: the controller runs on system nodes and needs no device access.
    return {}


# --------------------------------------------------------------------------------------------
# NVIDIA (and NFD, which both GPU stacks read)


def node_feature_discovery(cloud: str) -> Values:
    # The worker must reach GPU nodes, or no `pci-10de` / `amd-gpu` label appears and neither DRA
    # kubelet plugin schedules [modelplane-domain §3.1]. AMD pools exist only on Existing.
    return {"worker": {"tolerations": gpu_tolerations(cloud)}}


def nvidia_gpu_operator(cloud: str) -> Values:
    values: Values = {
        # GPUs are allocated through DRA only: a device plugin next to the DRA driver advertises
        # every GPU twice and over-admits pods [accelerator-facts §9.1].
        "devicePlugin": {"enabled": False},
        # The standalone NFD release serves both GPU stacks; a second NFD would fight over labels.
        "nfd": {"enabled": False},
        # The DRA driver hands GPUs to containers through CDI [accelerator-facts §1.1 Operator + DRA].
        "cdi": {"enabled": True},
        "dcgmExporter": {
            "enabled": True,
            # Without it dcgm-exporter cannot attribute GPUs allocated through DRA claims to pods
            # [accelerator-facts §9.5].
            "env": [{"name": "KUBERNETES_ENABLE_DRA", "value": "true"}],
        },
        # Operands run on GPU nodes only; tolerate that taint and no other.
        "daemonsets": {"tolerations": [nvidia_toleration(cloud)]},
        # No `operator.defaultRuntime`: no template reads it since v25.3.0 (the operator detects the
        # runtime; "Deprecated: DefaultRuntime is no longer used", clusterpolicy_types.go @v26.3.3).
    }
    owned = nvidia_driver_owned_by_stack(cloud)
    driver: Values = {"enabled": owned}
    if owned:
        driver.update({"version": CIVO_NVIDIA_DRIVER, "kernelModuleType": "open"})
    values["driver"] = driver
    if cloud == "GKE":
        # Google's installer puts the driver under /home/kubernetes/bin/nvidia; the toolkit is not on
        # COS, so the operator installs it there [accelerator-facts §1.1 "GKE with Google's driver
        # installer"]. No `cdi.default`: at v26.3.3 ClusterPolicy's `cdi.default` is "Deprecated: This
        # field is no longer used"; `cdi.enabled` alone makes CDI the default (NVIDIA/gpu-operator
        # api/nvidia/v1/clusterpolicy_types.go @v26.3.3).
        values["toolkit"] = {"enabled": True, "installDir": GKE_NVIDIA_DIR}
        values["hostPaths"] = {"driverInstallDir": GKE_NVIDIA_DIR}
    else:
        # EKS's AMI, AKS's and VKE's GPU node images, Civo's image and an Existing owner's nodes
        # already carry the container toolkit [accelerator-facts §1.1 EKS, AKS, Civo; modelplane-domain §2].
        values["toolkit"] = {"enabled": False}
    return values


def dra_driver_nvidia_gpu(cloud: str) -> Values:
    values: Values = {
        "nvidiaDriverRoot": nvidia_driver_root(cloud),
        # Required for GPU allocation at all [accelerator-facts §1.2 Values].
        "gpuResourcesEnabledOverride": True,
        # Helm's capability detection can pick an API version the server does not serve; every
        # cluster here is on Kubernetes >= 1.34, where resource.k8s.io/v1 is GA [accelerator-facts §9.4].
        "resourceApiVersion": "resource.k8s.io/v1",
        # ComputeDomains (multi-node NVLink/IMEX) are not offered; GPUs are.
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
        # No `controller` values: the controller Deployment renders only when
        # `resources.computeDomains.enabled` is true (templates/controller.yaml @v0.4.1), and its
        # default affinity there is only a preferred control-plane term (values.yaml @v0.4.1).
        # The kubelet plugin must reach GPU nodes, which carry the NVIDIA taint.
        "kubeletPlugin": {"tolerations": [nvidia_toleration(cloud)]},
    }
    return values


# --------------------------------------------------------------------------------------------
# CPU


def dra_driver_cpu(cloud: str) -> Values:
    return {
        # Only CPU pools are DRA-managed CPU nodes; elsewhere the driver would publish CPUs the
        # kubelet's own CPU manager also hands out.
        "nodeSelector": {CPU_TAINT_KEY: "true"},
        # The chart's default tolerates every NoSchedule taint; CPU pools carry exactly this one.
        "tolerations": [cpu_toleration()],
        # Keep CPUs 0-1 for the OS and kubelet, matching the kubelet's reservation; `driverConfig`
        # replaced the deprecated `args.reservedCPUs` [kubernetes-sigs/dra-driver-cpu chart README].
        "driverConfig": {"reservedCPUs": "0-1"},
    }


# --------------------------------------------------------------------------------------------
# AMD (Existing clusters)


def amd_gpu_operator(cloud: str) -> Values:
    """gpu-operator-charts v1.5.1 in DRA mode, with every finding of the review applied."""
    tolerations = [amd_toleration()]
    repository, tag = AMD_OPERATOR_IMAGE
    return {
        "crds": {
            "defaultCR": {
                "install": True,
                # The default DeviceConfig renders only at install unless this is set, and it keeps
                # `helm.sh/resource-policy: keep`; without it later value changes never reach the
                # live DeviceConfig [seed-pr-review].
                "upgrade": True,
            }
        },
        # KMM builds and loads out-of-tree drivers; driver management is off, so its controller,
        # webhook and ValidatingWebhookConfiguration would run for nothing [seed-pr-review].
        # `watch: false` too: the chart passes it to the manager as KMM_WATCH_ENABLED (default true,
        # templates/deployment.yaml @v1.5.1), and a watching manager cannot start its DeviceConfig
        # controller without KMM's Module and NodeModulesConfig CRDs, which only the disabled kmm
        # subchart installs (charts/kmm/crds, internal/controllers/device_config_reconciler.go @v1.5.1).
        # The chart's docs set both false to "skip KMM for alternative driver management"
        # (docs/installation/kubernetes-helm.md @v1.5.1).
        "kmm": {"enabled": False, "watch": False},
        # The standalone NFD release (tagged with both GPU drivers on Existing) serves this stack.
        "node-feature-discovery": {"enabled": False},
        # The default NodeFeatureRule that labels `feature.node.kubernetes.io/amd-gpu` is still
        # needed: the DeviceConfig selects nodes by it [accelerator-facts §2.1].
        "installdefaultNFDRule": True,
        # Auto-remediation taints and drains nodes through Argo workflows; not part of this stack
        # (modelplane turns both off too) [modelplane-domain §3.1, amd-gpu-operator row].
        "remediation": {"enabled": False, "installCRDs": False},
        # The ServingStack creates the `gpu.amd.com` DeviceClass itself: the chart skips it
        # silently when Helm's capabilities lack resource.k8s.io [accelerator-facts §9.4], and two
        # owners of one object would fight.
        "draDriver": {"deviceClass": {"create": False}},
        "controllerManager": {
            "manager": {
                "image": {"repository": repository, "tag": tag},
                "imagePullPolicy": "IfNotPresent",
            }
        },
        "deviceConfig": {
            "spec": {
                # The owner's nodes run the inbox (or their own) amdgpu driver [accelerator-facts §2.1].
                "driver": {"enable": False},
                "commonConfig": {
                    "initContainerImage": AMD_INIT_CONTAINER_IMAGE,
                    "utilsContainer": {"image": AMD_UTILS_IMAGE},
                },
                "devicePlugin": {
                    # DRA only: the operator rejects the device plugin and the DRA driver together
                    # [accelerator-facts §2.1 "Turning on DRA"].
                    "enableDevicePlugin": False,
                    "devicePluginImage": AMD_DEVICE_PLUGIN_IMAGE,
                    "devicePluginTolerations": tolerations,
                    # The labeller runs on its own flag, not the device plugin's, and labels the
                    # GPU model the pools are described by [accelerator-facts §2.1].
                    "enableNodeLabeller": True,
                    "nodeLabellerImage": AMD_NODE_LABELLER_IMAGE,
                    "nodeLabellerTolerations": tolerations,
                },
                "draDriver": {"enable": True, "image": AMD_DRA_DRIVER_IMAGE, "tolerations": tolerations},
                "metricsExporter": {
                    "enable": True,
                    "image": AMD_METRICS_EXPORTER_IMAGE,
                    "tolerations": tolerations,
                },
            }
        },
    }

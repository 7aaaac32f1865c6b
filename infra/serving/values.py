"""Helm values for each catalog row, per cloud.

One function per chart, taking the cloud; what differs between clouds is decided here, next to
the value, with the reason. The catalog (`infra.serving.catalog`) calls these when it loads. This
module holds values only: which rows install is the catalog's join, and the objects a chart
cannot be trusted to create (the `gpu.amd.com` DeviceClass, GKE's critical-pods quotas) are the
ServingStack's.

Each value that is not the chart's default names its public source: the chart's own file at the
pinned tag, the vendor's documentation, or the upstream issue. What differs between clouds is
read from the cloud's profile (`infra.profiles`, filled in by each cloud's package), never from the cloud's name.

Tolerations are always scoped to a taint key this program puts on a pool (`infra.facts`): no value
here tolerates every taint, so a device stack never lands on another vendor's or the system pool.
"""

from __future__ import annotations

from typing import Any

from clouds import profile
from infra import vocabulary as vocab
from infra.cpus import CPU_DRIVER_RESERVED_CPUS

Values = dict[str, Any]

# The taint keys pools carry (`infra.vocabulary`, the names every module shares).
NVIDIA_TAINT_KEY = vocab.NVIDIA_TAINT_KEY
AMD_TAINT_KEY = vocab.AMD_TAINT_KEY
CPU_TAINT_KEY = vocab.CPU_TAINT_KEY

# AMD images, pinned to the tags gpu-operator-charts v1.5.1 ships with or that are released next
# to it. The chart's own defaults float (`latest`, `labeller-latest`): a restart could pull another image.
# - operator controller and utils: released with the chart as v1.5.1 (the chart's versioned images
#   follow its version: v1.5.0 ships gpu-operator-utils:v1.5.0, [ROCm/gpu-operator releases]);
AMD_OPERATOR_IMAGE = ("docker.io/rocm/gpu-operator", "v1.5.1")
AMD_UTILS_IMAGE = "docker.io/rocm/gpu-operator-utils:v1.5.1"
# - metrics exporter: ROCm/device-metrics-exporter release v1.5.1, released with the chart;
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


def nvidia_driver_root(cloud: str) -> str:
    """Where the NVIDIA driver lives on a node's host filesystem: what `nvidiaDriverRoot` says."""
    return profile(cloud).nvidia.driver_root


def nvidia_toleration(cloud: str) -> Values:
    """The toleration for the NVIDIA GPU taint, and nothing else.

    `Exists` on the key where the value may vary (an Existing cluster's owner picks their own);
    `Equal` where the cloud's profile names the one value its pools carry.
    """
    value = profile(cloud).nvidia.toleration_value
    if value is not None:
        return {"key": NVIDIA_TAINT_KEY, "operator": "Equal", "value": value, "effect": "NoSchedule"}
    return {"key": NVIDIA_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}


def amd_toleration() -> Values:
    """AMD pools carry `amd.com/gpu=true:NoSchedule` (`infra.facts`); owners' values may differ."""
    return {"key": AMD_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}


def cpu_toleration() -> Values:
    """Exactly the CPU pools' taint, `modelplane.ai/cpu=true:NoSchedule`."""
    return {"key": CPU_TAINT_KEY, "operator": "Equal", "value": "true", "effect": "NoSchedule"}


def gpu_tolerations(cloud: str) -> list[Values]:
    """Every GPU taint a cloud's pools can carry, one per vendor its profile serves."""
    tolerations = [nvidia_toleration(cloud)]
    if vocab.AMD in profile(cloud).gpu_vendors:
        tolerations.append(amd_toleration())
    return tolerations


# --------------------------------------------------------------------------------------------
# Neutral components


def cert_manager(cloud: str) -> Values:
    # The webhooks of the AMD operator and envoy gateway need cert-manager's CRDs; the chart
    # installs them only when asked.
    return {"crds": {"enabled": True}}


# Grafana's dashboard sidecar (kube-prometheus-stack 84.4.0 bundles the grafana chart 12.3.0 from
# grafana-community/helm-charts, Chart.yaml `dependencies`). The sidecar turns every ConfigMap that
# carries this label and value, in the namespaces it searches, into a dashboard; the serving stack's
# own dashboards (`infra.serving.dashboards`) are ConfigMaps labelled from these values.
# - label and value: kube-prometheus-stack's defaults (values.yaml `grafana.sidecar.dashboards.label`
#   and `labelValue` @ kube-prometheus-stack-84.4.0), which its own default dashboards carry too
#   (templates/grafana/dashboards-1.14/*.yaml);
GRAFANA_DASHBOARD_LABEL = "grafana_dashboard"
GRAFANA_DASHBOARD_LABEL_VALUE = "1"
# - every namespace, kube-prometheus-stack's default (`searchNamespace: ALL`, same file): a team can
#   ship a dashboard from its own namespace; ours live in the stack's namespace;
GRAFANA_DASHBOARD_NAMESPACES = "ALL"
# - a ConfigMap's folder: the sidecar files a dashboard under the folder this annotation names
#   (charts/grafana/values.yaml `sidecar.dashboards.folderAnnotation` @ grafana-12.3.0, off by
#   default), and Grafana turns those directories into folders only with `foldersFromFilesStructure`
#   (same file, `sidecar.dashboards.provider`). Dashboards without it, such as the chart's own,
#   stay in Grafana's General folder.
GRAFANA_FOLDER_ANNOTATION = "grafana_folder"


def kube_prometheus_stack(cloud: str) -> Values:
    return {
        # Grafana shows the serving stack's dashboards (`infra.serving.dashboards`). It is on by
        # default (values.yaml `grafana.enabled: true` @ kube-prometheus-stack-84.4.0); said here
        # because the dashboards' ConfigMaps rely on it. No `adminPassword`: left unset, the grafana
        # chart generates a random 40-character one into the Secret `<release>-grafana` and keeps it
        # on upgrade (charts/grafana/templates/secret.yaml and _helpers.tpl `grafana.password`, a
        # `lookup` of the existing Secret, @ grafana-12.3.0); read it from that Secret's
        # `admin-password`. kube-prometheus-stack's own dashboards stay on (`defaultDashboardsEnabled`,
        # default true): they chart the nodes, pods and Prometheus this release already scrapes.
        "grafana": {
            "enabled": True,
            "sidecar": {
                "dashboards": {
                    "label": GRAFANA_DASHBOARD_LABEL,
                    "labelValue": GRAFANA_DASHBOARD_LABEL_VALUE,
                    "searchNamespace": GRAFANA_DASHBOARD_NAMESPACES,
                    "folderAnnotation": GRAFANA_FOLDER_ANNOTATION,
                    "provider": {"foldersFromFilesStructure": True},
                }
            },
        },
        # Alert routing belongs to the platform's own tooling.
        "alertmanager": {"enabled": False},
        "prometheus": {
            "prometheusSpec": {
                # Pick up every PodMonitor and ServiceMonitor in every namespace, not only those
                # labelled with this release: the exporters of other charts carry their own labels,
                # and so do the autoscaled deployments' PodMonitors. Left true, the chart selects
                # `release: <release>` only (values.yaml and templates/prometheus/prometheus.yaml
                # @ kube-prometheus-stack-84.4.0).
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
    # envoy gateway with it on: modelplaneai/modelplane functions/compose-serving-stack/function/fn.py).
    return {"config": {"envoyGateway": {"extensionApis": {"enableBackend": True}}}}


def keda(cloud: str) -> Values:
    # Chart defaults (kedacore/charts keda/values.yaml @ v2.20.2): CRDs installed, the operator and
    # metrics server on system nodes, no tolerations; ScaledObjects reach the stack's Prometheus
    # in-cluster, so no authentication is configured.
    return {}


def leader_worker_set(cloud: str) -> Values:
    # Chart defaults: the controller runs on system nodes and needs no device access.
    return {}


# --------------------------------------------------------------------------------------------
# NVIDIA (and NFD, which both GPU stacks read)


def node_feature_discovery(cloud: str) -> Values:
    # The worker must reach GPU nodes, or no `pci-10de` / `amd-gpu` label appears and neither DRA
    # kubelet plugin schedules (modelplaneai/modelplane functions/compose-serving-stack/function/fn.py,
    # node-feature-discovery). Only the vendors the cloud's profile serves are tolerated.
    # The PCI label config is the one gpu-operator v26.3.3 gives the NFD it bundles
    # (deployments/gpu-operator/values.yaml, `node-feature-discovery.worker.config`): labels by
    # vendor only, `pci-10de.present`, where NFD 0.19.0 alone labels by class and vendor
    # (`pci-0302_10de.present`, source/pci defaults), which `infra.placement.DISCOVERED_LABELS`
    # and the operator's own checks assume.
    return {
        "worker": {
            "tolerations": gpu_tolerations(cloud),
            "config": {
                "sources": {
                    "pci": {
                        "deviceClassWhitelist": ["02", "0200", "0207", "0300", "0302"],
                        "deviceLabelFields": ["vendor"],
                    }
                }
            },
        }
    }


def nvidia_gpu_operator(cloud: str) -> Values:
    values: Values = {
        # GPUs are allocated through DRA only: a device plugin next to the DRA driver advertises
        # every GPU twice and over-admits pods (EKS user guide, "NVIDIA DRA": never run both).
        "devicePlugin": {"enabled": False},
        # The standalone NFD release serves both GPU stacks; a second NFD would fight over labels.
        "nfd": {"enabled": False},
        # The DRA driver hands GPUs to containers through CDI (NVIDIA GPU Operator docs, "NVIDIA DRA
        # Driver for GPUs": CDI is required and the default).
        "cdi": {"enabled": True},
        "dcgmExporter": {
            "enabled": True,
            # Without it dcgm-exporter cannot attribute GPUs allocated through DRA claims to pods
            # (NVIDIA/dcgm-exporter README, `KUBERNETES_ENABLE_DRA`).
            "env": [{"name": "KUBERNETES_ENABLE_DRA", "value": "true"}],
        },
        # Operands run on GPU nodes only; tolerate that taint and no other.
        "daemonsets": {"tolerations": [nvidia_toleration(cloud)]},
        # No `operator.defaultRuntime`: no template reads it since v25.3.0 (the operator detects the
        # runtime; "Deprecated: DefaultRuntime is no longer used", clusterpolicy_types.go @v26.3.3).
    }
    stack = profile(cloud).nvidia
    driver: Values = {"enabled": stack.driver_by_operator}
    if stack.driver_version is not None:
        # The version the cloud's profile pins for the operator's driver (`NvidiaStack.driver_version`,
        # with its source there), as NVIDIA's open kernel modules: the version is pinned for those.
        driver.update({"version": stack.driver_version, "kernelModuleType": "open"})
    if stack.driver_eviction_label is not None:
        # The driver manager evicts the DRA kubelet plugin before it replaces the driver by
        # flipping this node label, which the plugin's nodeSelector requires (NVIDIA GPU Operator
        # docs, "NVIDIA DRA Driver for GPUs", known issues; gpu-operator v26.3.3 values.yaml
        # `driver.manager.env`).
        driver["manager"] = {"env": [{"name": "NODE_LABEL_FOR_GPU_POD_EVICTION", "value": stack.driver_eviction_label}]}
    values["driver"] = driver
    if stack.runtime_class is not None:
        # The operator names its RuntimeClass and that class's handler after this value
        # (gpu-operator v26.3.3 controllers/object_controls.go); it must be the node's handler.
        values["operator"] = {"runtimeClass": stack.runtime_class}
    toolkit_dir = stack.toolkit_dir
    if toolkit_dir is not None:
        # Google's installer puts the driver under /home/kubernetes/bin/nvidia; the toolkit is not on
        # COS, so the operator installs it there (NVIDIA GPU Operator docs, "Google GKE"). No
        # `cdi.default`: at v26.3.3 ClusterPolicy's `cdi.default` is "Deprecated: This field is no
        # longer used"; `cdi.enabled` alone makes CDI the default (NVIDIA/gpu-operator
        # api/nvidia/v1/clusterpolicy_types.go @v26.3.3). The toolkit stays on: the operator's own operands
        # (validator, GPU feature discovery, dcgm-exporter) run with the `nvidia` RuntimeClass,
        # and only the toolkit gives COS's containerd that handler.
        # RUNTIME_CONFIG_SOURCE=file: by default the toolkit reads containerd's effective config
        # (`containerd config dump`) and writes it back; with containerd 2 (GKE 1.33+) that
        # rewrites GKE's CNI bin_dir to /opt/cni/bin and no pod starts (NVIDIA/nvidia-container-toolkit#1222,
        # NVIDIA/gpu-operator#1577). Reading the file on the host keeps GKE's own settings; the
        # operator maps `file` to the host path (gpu-operator v26.3.3 controllers/object_controls.go).
        values["toolkit"] = {
            "enabled": True,
            "installDir": toolkit_dir,
            "env": [{"name": "RUNTIME_CONFIG_SOURCE", "value": "file"}],
        }
        values["hostPaths"] = {"driverInstallDir": stack.driver_root}
    else:
        # EKS's AMI, AKS's GPU node image, Civo's image and an Existing owner's nodes already carry
        # the container toolkit (EKS user guide, NVIDIA DRA; AKS GPU pools; Civo's GPU guide).
        values["toolkit"] = {"enabled": False}
    return values


def dra_driver_nvidia_gpu(cloud: str) -> Values:
    values: Values = {
        "nvidiaDriverRoot": nvidia_driver_root(cloud),
        # Required for GPU allocation at all (kubernetes-sigs/dra-driver-nvidia-gpu docs/install.md).
        "gpuResourcesEnabledOverride": True,
        # Helm's capability detection can pick an API version the server does not serve; every
        # cluster here is on Kubernetes >= 1.34, where resource.k8s.io/v1 is GA (chart values.yaml
        # @v0.4.1: "" auto-detects through `.Capabilities`).
        "resourceApiVersion": "resource.k8s.io/v1",
        # ComputeDomains (multi-node NVLink/IMEX) are not offered; GPUs are.
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
        # No `controller` values: the controller Deployment renders only when
        # `resources.computeDomains.enabled` is true (templates/controller.yaml @v0.4.1), and its
        # default affinity there is only a preferred control-plane term (values.yaml @v0.4.1).
        # The kubelet plugin must reach GPU nodes, which carry the NVIDIA taint.
        "kubeletPlugin": {"tolerations": [nvidia_toleration(cloud)]},
    }
    eviction_label = profile(cloud).nvidia.driver_eviction_label
    if eviction_label is not None:
        # Only nodes the driver manager has not marked for eviction run the plugin (NVIDIA GPU
        # Operator docs, "NVIDIA DRA Driver for GPUs", known issues; the GPU pools carry the label).
        values["kubeletPlugin"]["nodeSelector"] = {eviction_label: "true"}
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
        # Keep CPUs for the OS and kubelet (`infra.cpus.CPU_DRIVER_RESERVED_CPUS`); `driverConfig`
        # replaced the deprecated `args.reservedCPUs` (kubernetes-sigs/dra-driver-cpu chart README).
        "driverConfig": {"reservedCPUs": CPU_DRIVER_RESERVED_CPUS},
    }


# --------------------------------------------------------------------------------------------
# AMD (Existing clusters)


def amd_gpu_operator(cloud: str) -> Values:
    """gpu-operator-charts v1.5.1 in DRA mode: pinned images, KMM off, DRA on (each value's reason beside it)."""
    tolerations = [amd_toleration()]
    repository, tag = AMD_OPERATOR_IMAGE
    return {
        "crds": {
            "defaultCR": {
                "install": True,
                # The default DeviceConfig renders only at install unless this is set, and it keeps
                # `helm.sh/resource-policy: keep`; without it later value changes never reach the
                # live DeviceConfig (gpu-operator-charts v1.5.1 helm-charts-k8s/values.yaml, `crds.defaultCR`).
                "upgrade": True,
            }
        },
        # KMM builds and loads out-of-tree drivers; driver management is off, so its controller,
        # webhook and ValidatingWebhookConfiguration would run for nothing (ROCm/gpu-operator v1.5.1
        # docs/installation/kubernetes-helm.md, installing without KMM).
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
        # needed: the DeviceConfig selects nodes by it (helm-charts-k8s/values.yaml @v1.5.1,
        # `installdefaultNFDRule`).
        "installdefaultNFDRule": True,
        # Auto-remediation taints and drains nodes through Argo workflows; not part of this stack
        # (helm-charts-k8s/values.yaml @v1.5.1, `remediation`).
        "remediation": {"enabled": False, "installCRDs": False},
        # The ServingStack creates the `gpu.amd.com` DeviceClass itself: the chart skips it
        # silently when Helm's capabilities lack resource.k8s.io (helm-charts-k8s/templates/
        # _operator-helpers.tpl @v1.5.1), and two
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
                # The owner's nodes run the inbox (or their own) amdgpu driver; the operator's driver
                # management is optional (ROCm/gpu-operator v1.5.1 docs/installation/kubernetes-helm.md).
                "driver": {"enable": False},
                "commonConfig": {
                    "initContainerImage": AMD_INIT_CONTAINER_IMAGE,
                    "utilsContainer": {"image": AMD_UTILS_IMAGE},
                },
                "devicePlugin": {
                    # DRA only: the operator rejects the device plugin and the DRA driver together
                    # (ROCm/gpu-operator v1.5.1 docs/dra/dra-driver.md).
                    "enableDevicePlugin": False,
                    "devicePluginImage": AMD_DEVICE_PLUGIN_IMAGE,
                    "devicePluginTolerations": tolerations,
                    # The labeller runs on its own flag, not the device plugin's, and labels the
                    # GPU model the pools are described by (docs/device_plugin/device-plugin.md @v1.5.1).
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

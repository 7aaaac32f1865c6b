"""The serving stack's charts, one row each: the common rows every cloud installs and each cloud's own.

Each row (`infra.serving.chart.Chart`) is everything known of its chart: where it comes from, the
drivers and features it is for, its values (its function in `infra.serving.values`), its node
agents and what its chart installs beside them. Adding a chart is adding a row here and its values
function; the rules over the rows (the join, the dependency rule) are `infra.serving.catalog`'s.
"""

from __future__ import annotations

from clouds import profile
from infra.placement import OS_LABEL
from infra.serving import telemetry
from infra.serving import values as v
from infra.serving.chart import Chart, DeviceClass, NodeAgent, any_label_in
from infra.vocabulary import AMD_GPU_DRIVER as AMD
from infra.vocabulary import AUTOSCALING_FEATURE, VENDOR_DRIVER
from infra.vocabulary import CPU_DRIVER as CPU
from infra.vocabulary import NVIDIA_GPU_DRIVER as NVIDIA

# The keys of the GPU operators' rows, which other steps look for (the serving stack, the joins).
NVIDIA_OPERATOR_KEY = "gpu-operator"
AMD_OPERATOR_KEY = "amd-gpu-operator"
NFD_KEY = "node-feature-discovery"


# --------------------------------------------------------------------------------------------
# Rows. Versions are exact: a range would let `pulumi up` install a chart nobody reviewed.

JETSTACK = "https://charts.jetstack.io"
PROMETHEUS = "https://prometheus-community.github.io/helm-charts"
NFD_REPO = "https://kubernetes-sigs.github.io/node-feature-discovery/charts"
NGC = "https://helm.ngc.nvidia.com/nvidia"
ROCM = "https://rocm.github.io/gpu-operator"
KEDA_REPO = "https://kedacore.github.io/charts"

# Node agents' placement defaults, from each chart's values.yaml at the row's pinned version.
NVIDIA_GPU_TOLERATION = ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},)
EVERY_NO_SCHEDULE_TAINT = ({"operator": "Exists", "effect": "NoSchedule"},)
AMD_SPEC = ("deviceConfig", "spec")
AMD_DEFAULT_SELECTOR = {"feature.node.kubernetes.io/amd-gpu": "true"}


def common_rows(cloud: str) -> list[Chart]:
    """The rows of the charts every cloud installs; the device-stack rows are tagged with their driver."""
    return _neutral_rows(cloud) + _gpu_operator_rows(cloud) + _nvidia_driver_rows(cloud) + _cpu_driver_rows(cloud)


def _runs_own_gpu_operator(cloud: str) -> bool:
    """Whether the stack installs NFD and the GPU Operator itself, rather than building on the cloud's."""
    # Where the cloud runs its own GPU Operator (with NFD), ours would be a second owner of the
    # same nodes and CRDs; the DRA driver then builds on the cloud's operator.
    return not profile(cloud).nvidia.managed_operator


def _neutral_rows(cloud: str) -> list[Chart]:
    """Certificates, metrics, the gateway, multi-node serving and telemetry: no device driver's rows."""
    # The neutral rows are pinned to the releases their values below were checked against (each
    # chart's values.yaml at that tag); moving one is editing its row after checking those keys.
    return [
        Chart(
            "cert-manager",
            "cert-manager",
            JETSTACK,
            "v1.20.2",
            "cert-manager",
            values=v.cert_manager(cloud),
            # The dependents' webhooks take their certificates through cert-manager's CRDs
            # (`values.cert_manager`), the `cert-manager.io/v1` API cert-manager serves from v1.0.0
            # on (cert-manager's v1.0 release notes: the API graduated to v1).
            needs="cert-manager v1.0.0 or later (the `cert-manager.io/v1` API)",
            # Its `startupapicheck`, a post-install/post-upgrade hook Job (templates/startupapicheck-job.yaml).
            post_install_hook=True,
        ),
        Chart(
            "kube-prometheus-stack",
            "kube-prometheus-stack",
            PROMETHEUS,
            "84.4.0",
            "monitoring",
            values=v.kube_prometheus_stack(cloud),
            agents=(
                NodeAgent(
                    "node-exporter",
                    serves=None,
                    confined=False,
                    tolerations=("prometheus-node-exporter", "tolerations"),
                    default_tolerations=EVERY_NO_SCHEDULE_TAINT,
                    node_selectors=(("prometheus-node-exporter", "nodeSelector"),),
                    default_node_selector={OS_LABEL: "linux"},
                    # Requests no memory: `resources: {}` (prometheus-community/helm-charts
                    # charts/prometheus-node-exporter/values.yaml).
                    tolerates_every_taint=(
                        "host metrics are wanted from every node, whatever its taints; "
                        "it runs no device code and claims nothing"
                    ),
                    listed=9,
                ),
            ),
            # Its crds subchart carries the operator's CRDs (charts/crds/crds at 84.4.0): of its ten,
            # the ones the stack's objects and values name, PodMonitor, ServiceMonitor and the
            # Prometheus the operator runs (with the rules and probes its controller watches).
            crds=("podmonitors", "servicemonitors", "prometheuses"),
        ),
        Chart(
            "envoy-gateway",
            "gateway-helm",
            "oci://docker.io/envoyproxy",
            "v1.8.4",
            "envoy-gateway-system",
            depends_on=("cert-manager",),
            values=v.envoy_gateway(cloud),
            # The Gateway API CRDs and its own policies' in its `crds/` (charts/gateway-helm/charts/crds/crds at v1.8.3).
            crds=("gateway-api", "envoy-gateway"),
        ),
        Chart(
            "leader-worker-set",
            "lws",
            "oci://registry.k8s.io/lws/charts",
            "v0.8.0",
            "lws-system",
            values=v.leader_worker_set(cloud),
            crds=("leaderworkerset",),  # charts/lws/crds at v0.8.0
        ),
        # 2.20.2: the latest KEDA release when pinned, built against Kubernetes 1.35's client
        # (go.mod of kedacore/keda v2.20.2: k8s.io/client-go v0.35.5), so it serves the 1.34+ clusters
        # here; its CRDs (`keda.sh/v1alpha1` ScaledObject) come with the chart (values.yaml
        # `crds.install: true` @ kedacore/charts v2.20.2). Installed only for autoscaled deployments.
        Chart(
            "keda",
            "keda",
            KEDA_REPO,
            "2.20.2",
            "keda",
            depends_on=("kube-prometheus-stack",),
            values=v.keda(cloud),
            features=(AUTOSCALING_FEATURE,),
            crds=("keda",),  # templates/crds, `crds.install: true` at 2.20.2
        ),
        Chart(
            telemetry.COMPONENT,
            telemetry.CHART,
            telemetry.CHART_REPO,
            telemetry.CHART_VERSION,
            telemetry.NAMESPACE,
            values=telemetry.collector_values(cloud),
        ),
    ]


def _gpu_operator_rows(cloud: str) -> list[Chart]:
    """Node feature discovery and NVIDIA's GPU Operator, unless the cloud runs its own operator."""
    if not _runs_own_gpu_operator(cloud):
        return []
    gpu_tags = tuple(VENDOR_DRIVER[vendor] for vendor in profile(cloud).gpu_vendors)
    return [
        # 0.19.0: the NFD release gpu-operator v26.7.0 bundles as its subchart (Chart.yaml at
        # that tag); both GPU stacks read its `pci-10de` / `amd-gpu` labels.
        Chart(
            NFD_KEY,
            "node-feature-discovery",
            NFD_REPO,
            "0.19.0",
            "node-feature-discovery",
            dra_drivers=gpu_tags,
            values=v.node_feature_discovery(cloud),
            agents=(
                NodeAgent(
                    "worker",
                    serves="gpu",
                    confined=False,  # NFD labels any node; it must at least reach the GPU pools
                    tolerations=("worker", "tolerations"),
                    node_selectors=(("worker", "nodeSelector"),),
                    affinity=("worker", "affinity"),
                    # nfd-worker requests 64Mi (deployment/helm/node-feature-discovery/values.yaml
                    # @v0.19.0, `worker.resources`); it tolerates only the GPU taints
                    # (`infra.serving.values.node_feature_discovery`), so it runs on GPU pools.
                    memory="64Mi",
                    listed=3,
                ),
            ),
        ),
        # v26.3.3: DRA with the operator needs v25.10.0 or later with the device plugin off
        # (NVIDIA GPU Operator docs, "NVIDIA DRA Driver for GPUs"); v26.3.3 is that line's
        # latest patch when pinned. Its daemonsets run at system-node-critical (values.yaml).
        Chart(
            NVIDIA_OPERATOR_KEY,
            "gpu-operator",
            NGC,
            "v26.3.3",
            "gpu-operator",
            dra_drivers=(NVIDIA,),
            depends_on=("node-feature-discovery", "cert-manager", "kube-prometheus-stack"),
            values=v.nvidia_gpu_operator(cloud),
            critical_pods=True,
            agents=(
                NodeAgent(
                    "operands",  # driver, toolkit, validator, dcgm-exporter DaemonSets
                    serves="nvidia",
                    confined=True,
                    tolerations=("daemonsets", "tolerations"),
                    default_tolerations=NVIDIA_GPU_TOLERATION,
                    # The operator runs its operands only on nodes it labels as NVIDIA GPU nodes.
                    default_node_selector={"nvidia.com/gpu.present": "true"},
                    # The operands request no memory: `resources: {}` for each (values.yaml @v26.3.3).
                    listed=2,
                ),
            ),
        ),
    ]


def _nvidia_driver_rows(cloud: str) -> list[Chart]:
    """NVIDIA's DRA driver, on our GPU Operator or on the cloud's."""
    return [
        # 0.4.1: the release EKS's DRA guide installs, the first line published from
        # kubernetes-sigs (0.4.0 moved the chart there). Controller at system-cluster-critical,
        # kubelet plugin at system-node-critical (deployments/helm/dra-driver-nvidia-gpu/values.yaml @v0.4.1).
        Chart(
            "dra-driver-nvidia-gpu",
            "dra-driver-nvidia-gpu",
            "oci://registry.k8s.io/dra-driver-nvidia/charts",
            "0.4.1",
            "dra-driver-nvidia-gpu",
            dra_drivers=(NVIDIA,),
            depends_on=(NVIDIA_OPERATOR_KEY,) if _runs_own_gpu_operator(cloud) else (),
            values=v.dra_driver_nvidia_gpu(cloud),
            critical_pods=True,
            agents=(
                NodeAgent(
                    "kubelet-plugin",
                    serves="nvidia",
                    confined=True,
                    tolerations=("kubeletPlugin", "tolerations"),
                    default_tolerations=NVIDIA_GPU_TOLERATION,  # 0.4.x default
                    node_selectors=(("kubeletPlugin", "nodeSelector"),),
                    affinity=("kubeletPlugin", "affinity"),
                    # values.yaml @v0.4.1, `kubeletPlugin.affinity`; it requests no memory (`resources: {}`).
                    default_affinity=any_label_in(
                        ("feature.node.kubernetes.io/pci-10de.present", "true"),
                        ("feature.node.kubernetes.io/pci-0302_10de.present", "true"),
                        ("feature.node.kubernetes.io/pci-0300_10de.present", "true"),
                        ("feature.node.kubernetes.io/cpu-model.vendor_id", "NVIDIA"),
                        ("nvidia.com/gpu.present", "true"),
                    ),
                    listed=1,
                ),
            ),
            # templates/deviceclass-gpu.yaml @v0.4.1.
            device_class=DeviceClass(
                NVIDIA,
                "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
            ),
        ),
    ]


def _cpu_driver_rows(cloud: str) -> list[Chart]:
    """The CPU DRA driver, dra-driver-cpu."""
    return [
        # Pinned once for every cloud, Existing included. 0.3.0 or later: 0.2.0 reads neither
        # `nodeSelector` nor `driverConfig` (deployment/helm/dra-driver-cpu/templates @v0.2.0). Its
        # DaemonSet's priority class is fixed at system-node-critical (templates/daemonset.yaml).
        Chart(
            "dra-driver-cpu",
            "dra-driver-cpu",
            "oci://registry.k8s.io/dra-driver-cpu/charts",
            "0.3.0",
            "dra-driver-cpu",
            dra_drivers=(CPU,),
            values=v.dra_driver_cpu(cloud),
            critical_pods=True,
            agents=(
                NodeAgent(
                    "kubelet-plugin",
                    serves="cpu",
                    confined=True,
                    tolerations=("tolerations",),
                    default_tolerations=EVERY_NO_SCHEDULE_TAINT,  # the chart's accept-all
                    node_selectors=(("nodeSelector",),),
                    affinity=("affinity",),
                    # Its DaemonSet requests 50Mi (deployment/helm/dra-driver-cpu/values.yaml,
                    # `resources.requests`); CPU pools only (its nodeSelector).
                    memory="50Mi",
                    listed=4,
                ),
            ),
            device_class=DeviceClass(CPU, 'device.driver == "dra.cpu"'),  # templates/deviceclass.yaml
        ),
    ]


def cloud_rows(cloud: str) -> list[Chart]:
    """The rows of the charts only some clouds install."""
    if "amd" in profile(cloud).gpu_vendors:
        # On a cloud whose catalog has AMD machines (its profile's `gpu_vendors`) and on Existing,
        # where the owner brings the hardware; the device rules accept `gpu.amd.com` on exactly these.
        return [
            Chart(
                AMD_OPERATOR_KEY,
                "gpu-operator-charts",
                ROCM,
                "v1.5.1",
                "kube-amd-gpu",
                dra_drivers=(AMD,),
                depends_on=("cert-manager", "node-feature-discovery"),
                values=v.amd_gpu_operator(cloud),
                agents=(
                    NodeAgent(
                        "dra-driver",
                        serves="amd",
                        confined=True,
                        tolerations=(*AMD_SPEC, "draDriver", "tolerations"),
                        node_selectors=((*AMD_SPEC, "draDriver", "selector"), (*AMD_SPEC, "selector")),
                        default_node_selector=AMD_DEFAULT_SELECTOR,
                        enabled=(*AMD_SPEC, "draDriver", "enable"),
                        enabled_default=False,
                        listed=5,
                    ),
                    NodeAgent(
                        "device-plugin",
                        serves="amd",
                        confined=True,
                        tolerations=(*AMD_SPEC, "devicePlugin", "devicePluginTolerations"),
                        node_selectors=((*AMD_SPEC, "selector"),),
                        default_node_selector=AMD_DEFAULT_SELECTOR,
                        enabled=(*AMD_SPEC, "devicePlugin", "enableDevicePlugin"),
                        listed=6,
                    ),
                    NodeAgent(
                        "node-labeller",
                        serves="amd",
                        confined=True,
                        tolerations=(*AMD_SPEC, "devicePlugin", "nodeLabellerTolerations"),
                        node_selectors=((*AMD_SPEC, "selector"),),
                        default_node_selector=AMD_DEFAULT_SELECTOR,
                        enabled=(*AMD_SPEC, "devicePlugin", "enableNodeLabeller"),
                        listed=7,
                    ),
                    NodeAgent(
                        "metrics-exporter",
                        serves="amd",
                        confined=True,
                        tolerations=(*AMD_SPEC, "metricsExporter", "tolerations"),
                        node_selectors=((*AMD_SPEC, "metricsExporter", "selector"), (*AMD_SPEC, "selector")),
                        default_node_selector=AMD_DEFAULT_SELECTOR,
                        enabled=(*AMD_SPEC, "metricsExporter", "enable"),
                        listed=8,
                    ),
                ),
                # templates/dra-driver-deviceclass.yaml @v1.5.1, behind `draDriver.deviceClass.create`.
                device_class=DeviceClass(AMD, "device.driver == 'gpu.amd.com'", ("draDriver", "deviceClass", "create")),
            ),
        ]
    return []

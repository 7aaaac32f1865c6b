"""The names the whole program shares: DRA drivers, node labels and taint keys.

Config, the device rules, the facts, the cloud profiles, the catalog, the chart values, placement
and the policy pack all spell these names from here. This module imports nothing of the project,
so every other module can import it without an import cycle.
"""

from __future__ import annotations

from collections.abc import Mapping

# DRA driver names, as the drivers publish them in their ResourceSlices.
NVIDIA_GPU_DRIVER = "gpu.nvidia.com"
AMD_GPU_DRIVER = "gpu.amd.com"
CPU_DRIVER = "dra.cpu"
NET_DRIVER = "dra.net"
# Network drivers ride along with compute devices (EFA next to GPUs); they never set a role.
NETWORK_DRIVERS = frozenset({NET_DRIVER})
# GPU drivers and the vendor prefix of the accelerator types they serve (`nvidia-l4`, `amd-mi325x`).
GPU_VENDORS: Mapping[str, str] = {NVIDIA_GPU_DRIVER: "nvidia", AMD_GPU_DRIVER: "amd"}
NVIDIA = "nvidia"
AMD = "amd"
VENDOR_DRIVER: Mapping[str, str] = {vendor: driver for driver, vendor in GPU_VENDORS.items()}

# The accelerator types of AMD Instinct GPUs, for the nodes of an owner's cluster (on a provisioned
# cloud the machine catalog's rows name the accepted types). They are the Instinct products the AMD
# GPU operator's NFD rule recognises on bare metal, by PCI device id (ROCm/gpu-operator v1.5.1,
# helm-charts-k8s/templates/gpu-nfd-default-rule.yaml, rule `amd-gpu`: MI100, MI210, MI250,
# MI250X, MI300A, MI300X, MI308X, MI325X, MI350P, MI350X, MI355X), vendor first as the catalog's.
AMD_ACCELERATOR_TYPES = (
    "amd-mi100",
    "amd-mi210",
    "amd-mi250",
    "amd-mi250x",
    "amd-mi300a",
    "amd-mi300x",
    "amd-mi308x",
    "amd-mi325x",
    "amd-mi350p",
    "amd-mi350x",
    "amd-mi355x",
)


def vendor_gpu(vendor: str) -> str:
    """The type that names only the vendor (`amd-gpu`): an owner's GPUs whose class names no accelerator."""
    return f"{vendor}-gpu"


# The DeviceClass each driver's chart creates for its whole devices, which a class that leaves out
# its devices claims: `gpu.nvidia.com` (dra-driver-nvidia-gpu 0.4.1, templates/deviceclass-gpu.yaml),
# `gpu.amd.com` (AMD gpu-operator-charts v1.5.1, `draDriver.deviceClass.create`, templates/
# dra-driver-deviceclass.yaml), `dra.cpu` (dra-driver-cpu 0.3.0, templates/deviceclass.yaml).
DEVICE_CLASS: Mapping[str, str] = {
    NVIDIA_GPU_DRIVER: "gpu.nvidia.com",
    AMD_GPU_DRIVER: "gpu.amd.com",
    CPU_DRIVER: "dra.cpu",
}

# Node labels every pool carries (whoever sets them: the pool resource, or an Existing owner).
POOL_LABEL = "modelplane.ai/pool"
GPU_LABEL = "modelplane.ai/gpu"
CPU_LABEL = "modelplane.ai/cpu"
SYSTEM_POOL = "system"
# The label every object of a model deployment carries, valued with the deployment's name: its
# Service, PodMonitor and workload select its pods by it, and the telemetry collector's engine job
# scrapes the pods that carry it.
DEPLOYMENT_LABEL = "modelplane.ai/deployment"
# On the pods of a deployment with a floor: `floor` on its pool's, `spot` on its spot pool's. It
# keeps the two workloads' selectors apart, while the Service, the InferencePool, the PodMonitor and
# the PodDisruptionBudget select both by `DEPLOYMENT_LABEL` alone.
CAPACITY_LABEL = "modelplane.ai/capacity"
FLOOR_CAPACITY, SPOT_CAPACITY = "floor", "spot"

# The taint each GPU vendor's pools carry; DRA workloads and that vendor's stack tolerate it.
VENDOR_TAINT_KEY: Mapping[str, str] = {NVIDIA: "nvidia.com/gpu", AMD: "amd.com/gpu"}
NVIDIA_TAINT_KEY = VENDOR_TAINT_KEY[NVIDIA]
AMD_TAINT_KEY = VENDOR_TAINT_KEY[AMD]
CPU_TAINT_KEY = CPU_LABEL
# Every taint key the program gives pools by role (`infra.facts.derive_cluster`): every engine
# tolerates each, and a cluster's own taints may not take one.
ROLE_TAINT_KEYS: tuple[str, ...] = (*sorted(VENDOR_TAINT_KEY.values()), CPU_TAINT_KEY)

# Cloud APIs (GKE, EKS) spell taint effects in capitals; Kubernetes spelling is what the facts hold.
UPPER_EFFECT: Mapping[str, str] = {
    "NoSchedule": "NO_SCHEDULE",
    "PreferNoSchedule": "PREFER_NO_SCHEDULE",
    "NoExecute": "NO_EXECUTE",
}

# Serving features a catalog row installs for (`Chart.features`): a cluster with an
# autoscaled deployment uses `autoscaling`.
AUTOSCALING_FEATURE = "autoscaling"

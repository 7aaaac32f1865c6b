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

# The taint each GPU vendor's pools carry; DRA workloads and that vendor's stack tolerate it.
VENDOR_TAINT_KEY: Mapping[str, str] = {NVIDIA: "nvidia.com/gpu", AMD: "amd.com/gpu"}
NVIDIA_TAINT_KEY = VENDOR_TAINT_KEY[NVIDIA]
AMD_TAINT_KEY = VENDOR_TAINT_KEY[AMD]
CPU_TAINT_KEY = CPU_LABEL

# Cloud APIs (GKE, EKS) spell taint effects in capitals; Kubernetes spelling is what the facts hold.
UPPER_EFFECT: Mapping[str, str] = {
    "NoSchedule": "NO_SCHEDULE",
    "PreferNoSchedule": "PREFER_NO_SCHEDULE",
    "NoExecute": "NO_EXECUTE",
}

# Serving features a catalog row installs for (`Component.features`): a cluster with an
# autoscaled deployment uses `autoscaling`.
AUTOSCALING_FEATURE = "autoscaling"

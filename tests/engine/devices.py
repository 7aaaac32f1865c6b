"""The nodes of an Existing stack's pools, and the ResourceSlices their DRA drivers would publish.

Each pool of the stack becomes `nodeCount` KWOK nodes labelled and tainted as the plan's placement
audit models them (`infra.placement.nodes_of`: the labels and taints `docs/existing-clusters.md`
tells an owner to set, plus the labels node discovery puts on the hardware). Each node publishes,
per DRA device its pool's class declares, one ResourceSlice in the shape of that driver's own,
read from the driver's source:

- `gpu.nvidia.com`: dra-driver-nvidia-gpu v0.4.1, cmd/gpu-kubelet-plugin/deviceinfo.go
  (`GpuInfo.GetDevice`, `Attributes`, `CanonicalName` "gpu-<minor>") and partitions.go
  (`fullGpuCapacity`: `memory`).
- `gpu.amd.com`: ROCm/k8s-gpu-dra-driver at 2622427, cmd/gpu-kubeletplugin/deviceinfo.go
  (`AmdGpuInfo.GetDevice`, `CanonicalName` "gpu-<card>-<render>"; capacities memory, computeUnits,
  simdUnits).
- `dra.cpu`: kubernetes-sigs/dra-driver-cpu at de98098, pkg/device/builder.go, grouped by NUMA node
  (`createGroupedCPUDeviceSlices`: a device "cpudevnuma<NNN>" with capacity `dra.cpu/cpu`, many
  allocations allowed) and pkg/device/attributes.go.

Attributes the class states (`attributes`, `capacity`) are published as given, so a class's own
selectors and capacity requests meet devices that satisfy them, as the owner's hardware would.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from infra.config.stackfile import load_stack_file
from infra.facts import ClusterFacts, PoolFacts, derive_fleet
from infra.placement import nodes_of
from infra.vocabulary import AMD_GPU_DRIVER, CPU_DRIVER, NVIDIA_GPU_DRIVER
from tests.engine.cluster import NodeSpec
from tests.tools import ROOT

# dra-driver-cpu's default `driverConfig.reservedCPUs` is 0-1 (our values keep it): two CPUs of a
# node are never published.
RESERVED_CPUS = 2
SIMULATED = (NVIDIA_GPU_DRIVER, AMD_GPU_DRIVER, CPU_DRIVER)


def _attr(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    return {"string": str(value)}


def _stated(device: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The attributes and capacities a class's device states, in the API's form."""
    attrs = {k: v.model_dump(exclude_none=True, by_alias=True) for k, v in device.attributes.items()}
    caps = {k: {"value": str(v.value)} for k, v in device.capacity.items()}
    return attrs, caps


def nvidia_devices(device: Any, memory: str) -> list[dict[str, Any]]:
    attrs, caps = _stated(device)
    return [
        {
            "name": f"gpu-{i}",
            "attributes": {
                "type": {"string": "gpu"},
                "uuid": {"string": f"GPU-00000000-0000-0000-0000-00000000000{i}"},
                "productName": {"string": "NVIDIA H100 80GB HBM3"},
                "brand": {"string": "Nvidia"},
                "architecture": {"string": "Hopper"},
                "cudaComputeCapability": {"version": "9.0.0"},
                "driverVersion": {"version": "580.95.5"},
                "cudaDriverVersion": {"version": "13.0.0"},
                **attrs,
            },
            "capacity": {"memory": {"value": memory}, **caps},
        }
        for i in range(device.count)
    ]


def amd_devices(device: Any, memory: str) -> list[dict[str, Any]]:
    attrs, caps = _stated(device)
    return [
        {
            "name": f"gpu-{i * 8}-{128 + i * 8}",
            "attributes": {
                "type": {"string": "amdgpu"},
                "pciAddr": {"string": f"0000:{0x11 + i * 0x10:02x}:00.0"},
                "cardIndex": {"int": i * 8},
                "renderIndex": {"int": 128 + i * 8},
                "deviceID": {"string": "0x74a1"},
                "family": {"string": "AI"},
                "productName": {"string": "AMD_Instinct_MI300X_OAM"},
                "driverVersion": {"version": "6.12.12"},
                "driverSrcVersion": {"string": "unknown"},
                "partitionProfile": {"string": "spx_nps1"},
                **attrs,
            },
            "capacity": {
                "memory": {"value": memory},
                "computeUnits": {"value": "304"},
                "simdUnits": {"value": "1216"},
                **caps,
            },
        }
        for i in range(device.count)
    ]


def cpu_devices(device: Any, cpus: int) -> list[dict[str, Any]]:
    attrs, caps = _stated(device)
    return [
        {
            "name": f"cpudevnuma{i:03d}",
            "attributes": {
                "resource.kubernetes.io/numaNode": {"int": i},
                "dra.cpu/socketID": {"int": i},
                "dra.cpu/smtEnabled": {"bool": True},
                "dra.cpu/numCPUs": {"int": cpus},
                "dra.net/numaNode": {"int": i},
                "dra.cpu/numaNodeID": {"int": i},
                **attrs,
            },
            "capacity": {"dra.cpu/cpu": {"value": str(cpus)}, **caps},
            "allowMultipleAllocations": True,
        }
        for i in range(device.count)
    ]


def node_cpus(pool: PoolFacts) -> int:
    """The node's CPUs: for a CPU pool, what its class says a NUMA device serves, plus the reserved."""
    for device in pool.devices:
        if device.driver == CPU_DRIVER and "dra.cpu/cpu" in device.capacity:
            return int(device.capacity["dra.cpu/cpu"].value) * device.count + RESERVED_CPUS
    return 32 if pool.role != "GPU" else 224


def resource_slices(node: str, pool: PoolFacts) -> list[dict[str, Any]]:
    """One ResourceSlice per simulated driver the node's devices use, as `resource.k8s.io/v1`."""
    per_driver: dict[str, list[dict[str, Any]]] = {}
    for device in pool.devices:
        if device.driver not in SIMULATED or device.claim.value != "DRA":
            continue
        memory = str(device.capacity["memory"].value) if "memory" in device.capacity else "80Gi"
        if device.driver == NVIDIA_GPU_DRIVER:
            made = nvidia_devices(device, memory)
        elif device.driver == AMD_GPU_DRIVER:
            made = amd_devices(device, memory if "memory" in device.capacity else "192Gi")
        else:
            made = cpu_devices(device, node_cpus(pool) - RESERVED_CPUS)
        per_driver.setdefault(device.driver, []).extend(made)
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{driver.replace('.', '-')}"},
            "spec": {
                "driver": driver,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        }
        for driver, devices in per_driver.items()
    ]


def cluster_nodes(facts: ClusterFacts) -> list[NodeSpec]:
    """`nodeCount` nodes per pool, and one unpooled node for what belongs to no pool."""
    pools = {p.name: p for p in facts.pools}
    out: list[NodeSpec] = []
    for node in nodes_of(facts):
        pool = pools.get(node.pool)
        count = pool.node_count if pool is not None else 1
        for i in range(count):
            name = f"{node.pool.strip('()')}-{i}"
            out.append(
                NodeSpec(
                    name=name,
                    pool=node.pool,
                    labels=dict(node.labels),
                    taints=tuple(t.as_json() for t in node.taints),
                    cpu=node_cpus(pool) if pool is not None else 32,
                    memory="2Ti" if node.role == "GPU" else "256Gi",
                    slices=tuple(resource_slices(name, pool)) if pool is not None else (),
                )
            )
    return out


def stack_clusters(stack_file: Path) -> Mapping[str, ClusterFacts]:
    """The facts of each cluster of a stack file, by name."""
    stack = load_stack_file(stack_file)
    return {f.name: f for f in derive_fleet(stack.fleet)}


def existing_stacks() -> list[str]:
    """The example stacks whose one cluster is Existing: the cluster tier and `make demo` run them."""
    names = []
    for path in sorted((ROOT / "stacks").glob("Pulumi.*.yaml")):
        clusters = stack_clusters(path)
        if len(clusters) == 1 and next(iter(clusters.values())).source == "Existing":
            names.append(path.name.removeprefix("Pulumi.").removesuffix(".yaml"))
    return names

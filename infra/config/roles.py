"""What a pool is for, from the DRA devices its class claims: the one rule every later step reads.

A class that claims a GPU driver backs GPU pools, one that claims only `dra.cpu` backs CPU pools,
and one that claims neither cannot back a pool.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from infra.config.model import ClaimMode, Device, Fleet, InferenceClass, InferenceCluster
from infra.formats import parse_quantity
from infra.vocabulary import CPU_DRIVER, GPU_VENDORS, NETWORK_DRIVERS


def claimed_drivers(cls: InferenceClass) -> list[str]:
    """Sorted drivers of the class's DRA devices."""
    return sorted({d.driver for d in cls.devices if d.claim is ClaimMode.DRA})


def cluster_dra_drivers(fleet: Fleet, cluster: InferenceCluster) -> list[str]:
    """A cluster's `draDrivers`: the sorted union of the drivers its pools' classes claim."""
    classes = {c.name: c for c in fleet.classes}
    drivers: set[str] = set()
    for pool in cluster.node_pools:
        if pool.class_name in classes:
            drivers.update(claimed_drivers(classes[pool.class_name]))
    return sorted(drivers)


def role_of(drivers: Iterable[str]) -> Role | None:
    """`CPU` when the only non-network drivers are `dra.cpu`, `GPU` when any other is claimed.

    None when the class claims no compute device (only network or Synthetic devices): such a
    class cannot back a pool.
    """
    compute = set(drivers) - NETWORK_DRIVERS
    if not compute:
        return None
    return "CPU" if compute == {CPU_DRIVER} else "GPU"


def gpu_vendors(drivers: Iterable[str]) -> list[str]:
    return sorted({GPU_VENDORS[d] for d in drivers if d in GPU_VENDORS})


def gpu_device_count(cls: InferenceClass) -> int:
    return sum(d.count for d in cls.devices if d.claim is ClaimMode.DRA and d.driver in GPU_VENDORS)


def pools_without_role(fleet: Fleet) -> Sequence[tuple[int, int, str]]:
    """(cluster index, pool index, class) for pools whose class claims no compute device."""
    classes = {c.name: c for c in fleet.classes}
    found = []
    for ki, cluster in enumerate(fleet.clusters):
        for pi, pool in enumerate(cluster.node_pools):
            cls = classes.get(pool.class_name)
            if cls is not None and role_of(claimed_drivers(cls)) is None:
                found.append((ki, pi, cls.name))
    return found


# A dra.cpu claim takes CPUs through this consumable capacity (dra-driver-cpu grouped mode); the
# pod must also request and limit exactly that many CPUs (components.model_deployment).
CPU_CLAIM_DRIVER = CPU_DRIVER


CPU_CLAIM_CAPACITY = "dra.cpu/cpu"


def claimed_cpus(device: Device) -> int | None:
    """Whole CPUs one `dra.cpu` device of the class hands a claim, or None when not a whole number."""
    cap = device.capacity.get(CPU_CLAIM_CAPACITY)
    if cap is None:
        return None
    cpus = parse_quantity(cap.value)
    # 500m is half a CPU: a claim takes whole CPUs.
    if cpus is None or cpus <= 0 or cpus != cpus.to_integral_value():
        return None
    return int(cpus)


# A pool's role: what its class claims (`role_of`), or the system pool every cluster gets.
Role = Literal["GPU", "CPU", "System"]

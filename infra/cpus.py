"""The CPUs a CPU node keeps for itself, and how many a dra.cpu claim may take of a machine.

The device rules (`infra.checks.devices`), the class supply (`infra.checks.supply`) and the CPU
driver's values (`infra.serving.values`) read these numbers; nothing here judges a class.
"""

from __future__ import annotations

from infra.machines import MachineType

# CPUs dra-driver-cpu keeps out of DRA on every CPU node, for the OS and the kubelet; the values
# install the driver with it (`infra.serving.values.dra_driver_cpu`). The chart's own default reserves
# none (`driverConfig.reservedCPUs` is empty in kubernetes-sigs/dra-driver-cpu
# deployment/helm/dra-driver-cpu/values.yaml at v0.2.0 and at main).
CPU_DRIVER_RESERVED_CPUS = "0-1"


def reserved_cpus() -> int:
    """How many CPUs `CPU_DRIVER_RESERVED_CPUS` names: a CPU claim must fit in what is left."""
    return cpuset_size(CPU_DRIVER_RESERVED_CPUS)


def claimable_cpus(row: MachineType) -> int:
    """The most CPUs a dra.cpu claim may take on one node of `row`: its vCPUs less the reserved ones.

    `cpu-claim-exceeds-machine` rejects a claim above it, and a CPU class that leaves out its
    devices claims exactly it (`infra.checks.supply`).
    """
    return row.vcpus - reserved_cpus()


def cpuset_size(cpuset: str) -> int:
    """How many CPUs a Linux cpuset list names (`0-1` -> 2, `0,2,4-5` -> 4, `` -> 0)."""
    count = 0
    for part in filter(None, (p.strip() for p in cpuset.split(","))):
        low, _, high = part.partition("-")
        count += (int(high) - int(low) + 1) if high else 1
    return count

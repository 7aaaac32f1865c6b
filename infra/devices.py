"""Device rules: the one module that says what a class's devices mean and which fleets are rejected.

The program (before it registers anything), the offline plan and the policy pack all call these
functions; nothing else restates a rule. A rule takes plain values (a class, a cluster's source and
its pools), so the policy pack can evaluate it on the inputs the program registered.

Rules (names are the policy names, the contract):
- claimed drivers: the `driver` of every `claim: DRA` device; Synthetic devices describe placement,
  not a stack, and never contribute.
- pool role: from the claimed drivers, never from whether `accelerator` is set.
- `accelerator-driver-mismatch`, `unsupported-devices`, `class-provider-mismatch`, and the Existing
  rule (an Existing cluster's claimed driver that no component serves installs nothing and is
  never rejected: the cluster's owner brought it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from components.catalog import supported_drivers
from infra.config import ClaimMode, Fleet, InferenceClass, InferenceCluster, Role, Source

CPU_DRIVER = "dra.cpu"
# Network drivers ride along with compute devices (EFA next to GPUs); they never set a role.
NETWORK_DRIVERS = frozenset({"dra.net"})
# GPU drivers and the vendor prefix of the accelerator types they serve (`nvidia-l4`, `amd-mi325x`).
GPU_VENDORS = {"gpu.nvidia.com": "nvidia", "gpu.amd.com": "amd"}

ACCELERATOR_DRIVER_MISMATCH = "accelerator-driver-mismatch"
UNSUPPORTED_DEVICES = "unsupported-devices"
CLASS_PROVIDER_MISMATCH = "class-provider-mismatch"


@dataclass(frozen=True)
class Violation:
    """A rejected configuration: the policy it breaks, what is involved, and the fix."""

    policy: str
    cluster: str
    pool: str
    class_name: str
    driver: str | None
    problem: str
    fix: str

    @property
    def resource(self) -> str:
        return f"{self.cluster}/{self.pool}"

    @property
    def message(self) -> str:
        return (
            f"cluster '{self.cluster}', pool '{self.pool}', class '{self.class_name}': {self.problem}. Fix: {self.fix}"
        )


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


def check_pool(cluster: str, source: str, pool: str, cls: InferenceClass) -> list[Violation]:
    """Every rule for one pool of a cluster whose `source` is given."""
    out: list[Violation] = []

    def reject(policy: str, problem: str, fix: str, driver: str | None = None) -> None:
        out.append(Violation(policy, cluster, pool, cls.name, driver, problem, fix))

    drivers = claimed_drivers(cls)
    provisioned = source != Source.EXISTING
    prov = cls.provisioning if provisioned else None  # On Existing, provisioning is ignored.
    accel = prov.accelerator if prov is not None else None
    vendors = gpu_vendors(drivers)
    role = role_of(drivers)

    # class-provider-mismatch
    if provisioned and (cls.provisioning is None or cls.provisioning.provider != source):
        have = "has no provisioning" if cls.provisioning is None else f"provisions on {cls.provisioning.provider}"
        reject(
            CLASS_PROVIDER_MISMATCH,
            f"the class {have} but the cluster's source is {source}",
            f"reference a class whose provisioning.provider is {source}, or add a {source} class",
        )
        prov, accel = None, None  # the accelerator checks below need this cloud's block

    # accelerator-driver-mismatch
    if len(vendors) > 1:
        reject(
            ACCELERATOR_DRIVER_MISMATCH,
            f"the class claims GPUs of two vendors ({', '.join(d for d in drivers if d in GPU_VENDORS)}); a pool holds one vendor's GPUs",
            "split it into one class per vendor, each backing its own pool",
            driver=",".join(d for d in drivers if d in GPU_VENDORS),
        )
    if role == "GPU" and CPU_DRIVER in drivers:
        reject(
            ACCELERATOR_DRIVER_MISMATCH,
            "the class claims dra.cpu next to a GPU driver; dra-driver-cpu runs only on CPU pools",
            "remove the dra.cpu device, or move it to a CPU class of its own",
            driver=CPU_DRIVER,
        )
    if prov is not None:
        gpu_drivers = [d for d in drivers if d in GPU_VENDORS]
        if role == "GPU" and vendors and accel is None:
            reject(
                ACCELERATOR_DRIVER_MISMATCH,
                f"the class claims {', '.join(gpu_drivers)} but its {prov.provider} block sets no accelerator, "
                "so its nodes would get no GPU",
                f"set provisioning.{prov.provider.lower()}.accelerator {{type, count}} to the GPUs the machine carries",
                driver=",".join(gpu_drivers),
            )
        if role == "CPU" and accel is not None:
            reject(
                ACCELERATOR_DRIVER_MISMATCH,
                f"the class claims only dra.cpu but sets accelerator {accel.type}",
                "remove the accelerator for a CPU pool, or claim the GPU's DRA driver",
                driver=CPU_DRIVER,
            )
        if accel is not None and len(vendors) == 1 and accel.vendor != vendors[0]:
            reject(
                ACCELERATOR_DRIVER_MISMATCH,
                f"accelerator {accel.type} is a {accel.vendor} GPU but the class claims {gpu_drivers[0]}",
                f"claim the {accel.vendor} driver, or set an accelerator of vendor {vendors[0]}",
                driver=gpu_drivers[0],
            )
        if accel is not None and vendors and gpu_device_count(cls) != accel.count:
            reject(
                ACCELERATOR_DRIVER_MISMATCH,
                f"the class claims {gpu_device_count(cls)} GPU devices but accelerator.count is {accel.count}",
                "make the GPU devices' count equal accelerator.count",
                driver=",".join(gpu_drivers),
            )

    # unsupported-devices (never on Existing: the owner brought the drivers)
    if provisioned:
        supported = supported_drivers(source)
        for d in drivers:
            if d not in supported:
                reject(
                    UNSUPPORTED_DEVICES,
                    f"{source} clusters cannot serve driver {d} (supported: {', '.join(supported)})",
                    f"use a class whose DRA devices {source} supports, or run this hardware on an Existing cluster",
                    driver=d,
                )
    return out


def check_fleet(fleet: Fleet) -> list[Violation]:
    """Every device-rule violation of a fleet, in config order."""
    classes = {c.name: c for c in fleet.classes}
    out: list[Violation] = []
    for cluster in fleet.clusters:
        for pool in cluster.node_pools:
            cls = classes.get(pool.class_name)
            if cls is not None:
                out.extend(check_pool(cluster.name, cluster.source, pool.name, cls))
    return out


def violation_path(fleet: Fleet, violation: Violation) -> str:
    """Where a violation sits in the stack file: the pool and the class it names.

    `clusters[0].nodePools[1] (class classes[2])`, the paths config errors use.
    """
    where = ""
    for ki, cluster in enumerate(fleet.clusters):
        for pi, pool in enumerate(cluster.node_pools):
            if cluster.name == violation.cluster and pool.name == violation.pool:
                where = f"clusters[{ki}].nodePools[{pi}]"
    ci = next((i for i, c in enumerate(fleet.classes) if c.name == violation.class_name), None)
    return f"{where} (class classes[{ci}])" if ci is not None else where


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

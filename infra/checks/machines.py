"""Machine rules: a pool against the catalog row of its machine type (`infra.machines`).

`machine-accelerator-mismatch`, `accelerator-type-unknown`, `cpu-claim-exceeds-machine`,
`zone-outside-region`, `machine-outside-region` and `unknown-machine-type`; what they mean is
stated with the other device rules (`infra.checks.devices`). `fleet_violations` is both kinds over
a fleet, as the guard evaluates them.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import replace

from clouds import cloud, machine, nearest_machines, profile
from infra.checks.devices import (
    ACCELERATOR_TYPE_UNKNOWN,
    CPU_CLAIM_EXCEEDS_MACHINE,
    MACHINE_ACCELERATOR_MISMATCH,
    MACHINE_OUTSIDE_REGION,
    UNKNOWN_MACHINE_TYPE,
    ZONE_OUTSIDE_REGION,
    Violation,
    check_fleet,
)
from infra.config.base import Accelerator
from infra.config.model import ClaimMode, Fleet, InferenceClass, cluster_region
from infra.config.roles import CPU_CLAIM_DRIVER, claimed_cpus, claimed_drivers, gpu_device_count, gpu_vendors, role_of
from infra.cpus import claimable_cpus, reserved_cpus
from infra.machines import MachineType
from infra.vocabulary import CPU_DRIVER, GPU_VENDORS, NETWORK_DRIVERS

__all__ = ["CPU_DRIVER", "GPU_VENDORS", "NETWORK_DRIVERS"]


def class_cpu_claim(cls: InferenceClass) -> int:
    """Whole CPUs the class's dra.cpu devices claim on one node (capacity `dra.cpu/cpu` x count)."""
    return sum(
        (claimed_cpus(d) or 0) * d.count
        for d in cls.devices
        if d.claim is ClaimMode.DRA and d.driver == CPU_CLAIM_DRIVER
    )


def zone_problem(source: str, region: str, zone: str, *, uncatalogued: bool = False) -> str | None:
    """Why `zone` is not a zone of `region` on this cloud, or None when it is.

    A zone has the cloud's form (`Zones.names` or `Zones.pattern` of its profile) and, where the zone
    catalog lists the region (`Zones.by_region`, each cloud's `zones.py` with its
    source), is one of its zones: a letter the region does not have (`us-central1-e`, a seventh
    zone of us-east-1) would fail only when the cloud creates the pool. A pool that takes zones
    the catalog does not list yet says so (`uncatalogued`).
    """
    cloud = profile(source)
    if cloud.zones.names:
        # Numbered zones: the region's own numbers where the catalog lists them (an OCI region has
        # one availability domain or three), else the cloud's.
        names = cloud.zones.by_region.get(region) or cloud.zones.names
        if zone in names:
            return None
        *first, last = names
        numbers = f"{', '.join(first)} or {last}" if first else last
        where = f"{region}'s" if region in cloud.zones.by_region else "the location's"
        return f"{source} zones are {where} zone numbers {numbers}, not '{zone}'"
    if cloud.zones.pattern is None:
        return f"{source} clusters have no zones inside a region, so zone '{zone}' cannot be honoured"
    match = cloud.zones.pattern.match(zone)
    if match is None:
        return f"'{zone}' is not a {source} zone name"
    if match.group("region") != region:
        return f"zone '{zone}' is in region {match.group('region')}, not in the cluster's region {region}"
    known = cloud.zones.by_region.get(region)
    if known and zone not in known and not uncatalogued:
        return f"zone '{zone}' is not a zone of {region} in the zone catalog"
    return None


def zone_fix(source: str, region: str, zone: str, pool_at: str) -> str:
    """The fix for a zone `zone_problem` refuses: the region's zones, where the catalog lists them, and
    for a zone of the region's form that the catalog does not list, how to take it anyway."""
    cloud = profile(source)
    if cloud.zones.regions and region not in cloud.zones.regions:
        # The region itself may not exist (`check_region` says so at the cluster's block): dropping
        # zones would leave a cluster in a region the cloud does not have.
        close = difflib.get_close_matches(region, cloud.zones.regions, n=1)
        example = f" (e.g. {close[0]}: {', '.join(cloud.zones.by_region.get(close[0], ()))})" if close else ""
        return (
            f"make the cluster's region one {source} has first ({region} is not in the region catalog), then list "
            f"only zones of that region{example} in the pool's zones"
        )
    known = cloud.zones.by_region.get(region)
    listed = f" ({', '.join(known)})" if known else ""
    fix = f"list only zones of {region}{listed} in the pool's zones, or drop zones to let the cloud choose"
    match = cloud.zones.pattern.match(zone) if cloud.zones.pattern else None
    if known and match is not None and match.group("region") == region:
        fix += f"; if the zone exists and the catalog does not list it yet, set {pool_at}.uncataloguedZones: true"
    return fix


def check_machine(
    cluster: str,
    source: str,
    pool: str,
    cls: InferenceClass,
    region: str | None = None,
    zones: Sequence[str] = (),
    *,
    uncatalogued_zones: bool = False,
    pool_path: str = "",
    class_path: str = "",
) -> list[Violation]:
    """The machine rules for one pool: its class against the catalog row of its machine type.

    Only a provisioned pool whose class provisions on the cluster's own cloud has a machine to
    check (anything else is `class-provider-mismatch`, reported by `check_pool`). `pool_path` and
    `class_path` locate the pool and the class in the stack file (by name when not given).
    """
    out: list[Violation] = []
    if not profile(source).provisioned:
        return out
    prov = cls.provisioning
    pool_at = pool_path or f"clusters[name={cluster}].nodePools[name={pool}]"
    class_at = class_path or f"classes[name={cls.name}]"

    def reject(policy: str, problem: str, fix: str, *, path: str, driver: str | None = None) -> None:
        out.append(Violation(policy, cluster, pool, cls.name, driver, problem, fix, path=path))

    if region is not None:
        for i, zone in enumerate(zones):
            problem = zone_problem(source, region, zone, uncatalogued=uncatalogued_zones)
            if problem is not None:
                reject(
                    ZONE_OUTSIDE_REGION, problem, zone_fix(source, region, zone, pool_at), path=f"{pool_at}.zones[{i}]"
                )
    if prov is None or prov.provider != source:
        return out
    block = f"{class_at}.provisioning.{cloud(prov.provider).key}"
    name = prov.machine_name
    machine_at = f"{block}.{prov.machine.machine_key()}"
    row = machine(source, name)
    if row is None:
        # A machine the catalog does not know leaves its GPUs, CPUs and price unchecked, so it stops
        # the run unless the class says it takes the machine so (`uncatalogued`); the plan then
        # lists the pool as unpriced and never calls the stack within budget.
        if not prov.machine.uncatalogued:
            reject(
                UNKNOWN_MACHINE_TYPE,
                f"machine type '{name}' is not in the machine catalog, so its GPUs, CPUs and price would go unchecked",
                f"{nearest_machines(source, name)}correct the name if it is a typo; if the machine exists, set {block}.uncatalogued: true to take "
                "it unchecked and unpriced (docs/machines.md says how the catalog gains a row)",
                path=machine_at,
            )
        return out
    if region is not None and row.regions and region not in row.regions:
        # A machine the cloud does not sell in the region fails at `pulumi up`, after the network
        # and cluster were created; the catalog knows where each such machine is offered.
        reject(
            MACHINE_OUTSIDE_REGION,
            f"{row.cloud} offers {row.name} only in {', '.join(row.regions)}, not in the cluster's region {region} "
            f"(per {row.regions_source})",
            f"run the cluster in one of {', '.join(row.regions)}, or pick a machine offered in {region}",
            path=machine_at,
        )
    drivers = claimed_drivers(cls)
    role = role_of(drivers)
    accel = prov.accelerator
    gpu_drivers = [d for d in drivers if d in GPU_VENDORS]
    if role == "GPU":
        _check_gpu_machine(row, cls, block, accel, gpu_drivers, reject, machine_at)
    elif role == "CPU":
        _check_cpu_machine(row, cls, class_at, reject, machine_at)
    return out


def _check_gpu_machine(
    row: MachineType,
    cls: InferenceClass,
    block: str,
    accel: Accelerator | None,
    gpu_drivers: list[str],
    reject: Callable[..., None],
    machine_at: str,
) -> None:
    vendors = gpu_vendors(gpu_drivers)
    if row.gpu is None:
        reject(
            MACHINE_ACCELERATOR_MISMATCH,
            f"the class claims {', '.join(gpu_drivers)} but {row.name} carries no GPU",
            f"pick a GPU machine of {row.cloud} for {machine_at}, or claim only dra.cpu for a CPU pool",
            driver=",".join(gpu_drivers),
            path=machine_at,
        )
        return
    have = f"{row.name} carries {row.gpu.count}x {row.gpu.vendor} {row.gpu.model}"
    if len(vendors) == 1 and vendors[0] != row.gpu.vendor:
        reject(
            MACHINE_ACCELERATOR_MISMATCH,
            f"the class claims {gpu_drivers[0]} but {have}",
            f"claim the {row.gpu.vendor} GPU driver, or pick a machine with {vendors[0]} GPUs",
            driver=gpu_drivers[0],
            path=machine_at,
        )
        return
    claimed = gpu_device_count(cls)
    if claimed != row.gpu.count:
        reject(
            MACHINE_ACCELERATOR_MISMATCH,
            f"the class claims {claimed} GPU device(s) but {have}",
            f"make the GPU devices' count and accelerator.count {row.gpu.count}, or pick a machine with {claimed} GPU(s)",
            driver=",".join(gpu_drivers),
            path=machine_at,
        )
    elif accel is not None and accel.count != row.gpu.count:
        reject(
            MACHINE_ACCELERATOR_MISMATCH,
            f"accelerator.count is {accel.count} but {have}",
            f"set {block}.accelerator.count to {row.gpu.count}",
            driver=",".join(gpu_drivers),
            path=f"{block}.accelerator.count",
        )
    if accel is not None and accel.type not in row.accelerator_types:
        reject(
            ACCELERATOR_TYPE_UNKNOWN,
            f"accelerator type '{accel.type}' is not one {row.cloud} accepts for {row.name} "
            f"(accepted: {', '.join(row.accelerator_types)})",
            f"set {block}.accelerator.type to {row.accelerator_types[0]}",
            driver=",".join(gpu_drivers),
            path=f"{block}.accelerator.type",
        )


def _check_cpu_machine(
    row: MachineType,
    cls: InferenceClass,
    class_at: str,
    reject: Callable[..., None],
    machine_at: str,
) -> None:
    """A CPU pool's machine: no GPUs left idle, and room for the class's CPU claim beside the reserved CPUs."""
    name = row.name
    if row.gpu is not None:
        reject(
            MACHINE_ACCELERATOR_MISMATCH,
            f"the class claims only dra.cpu but {name} carries {row.gpu.count}x {row.gpu.model}, "
            "GPUs no claim would use",
            f"pick a machine without GPUs for {machine_at}, or claim the GPU's driver",
            driver=CPU_DRIVER,
            path=machine_at,
        )
    claim = class_cpu_claim(cls)
    usable = claimable_cpus(row)
    if claim > usable:
        reject(
            CPU_CLAIM_EXCEEDS_MACHINE,
            f"the class claims {claim} CPUs through dra.cpu but {name} has {row.vcpus} vCPUs, "
            f"{reserved_cpus()} of them reserved by dra-driver-cpu, so at most {usable} can be claimed",
            f"claim at most {usable} CPUs (capacity dra.cpu/cpu), or pick a machine with more vCPUs",
            driver=CPU_DRIVER,
            path=f"{class_at}.devices[{cpu_device_index(cls)}].capacity.dra.cpu/cpu",
        )


def check_fleet_machines(fleet: Fleet) -> list[Violation]:
    """Every machine-rule violation of a fleet, in config order.

    Paths name the cluster, pool and class (`classes[name=l4].provisioning.gke.machineType`), as
    the policy pack, which sees no config indices, names them too: both say the same thing.
    """
    classes = {c.name: c for c in fleet.classes}
    out: list[Violation] = []
    for cluster in fleet.clusters:
        region = cluster_region(cluster)
        for pool in cluster.node_pools:
            cls = classes.get(pool.class_name)
            if cls is None:
                continue
            out.extend(
                check_machine(
                    cluster.name,
                    cluster.source,
                    pool.name,
                    cls,
                    region,
                    pool.zones,
                    uncatalogued_zones=pool.uncatalogued_zones,
                )
            )
    return out


def fleet_violations(fleet: Fleet) -> list[Violation]:
    """Every device and machine rule violation of a fleet, each at its path: what the guard evaluates."""
    # A rule that names the key it refuses keeps that path (the pack, without indices, says the same).
    located = [replace(v, path=v.path or violation_path(fleet, v)) for v in check_fleet(fleet)]
    return located + check_fleet_machines(fleet)


def cpu_device_index(cls: InferenceClass) -> int:
    """The index of the class's first dra.cpu device (where its CPU claim is written)."""
    return next(i for i, d in enumerate(cls.devices) if d.driver == CPU_CLAIM_DRIVER)


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

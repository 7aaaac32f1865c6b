"""Device rules: the one module that says what a class's devices mean and which fleets are rejected.

The program (before it registers anything), the offline plan and the policy pack all call these
functions; nothing else restates a rule. A rule takes plain values (a class, a cluster's source and
its pools), so the policy pack can evaluate it on the inputs the program registered.

Rules (names are the policy names, the contract; each one's text is `DEVICE_RULES`):
- claimed drivers: the `driver` of every `claim: DRA` device; Synthetic devices describe placement,
  not a stack, and never contribute.
- pool role: from the claimed drivers, never from whether `accelerator` is set.
- `check_pool`: the class rules, and the Existing rule (an Existing cluster's claimed driver that no
  component serves installs nothing and is never rejected: the cluster's owner brought it).
- `check_machine`: the machine rules, which compare a pool with the catalog row of its machine
  (`infra.machines`); the catalog cannot know every machine, but a pool it cannot check is never
  passed in silence: the class must say it takes the machine `uncatalogued`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from clouds import ACCELERATOR_TYPES, cloud, machine, profile
from infra.config.base import Accelerator, ProvisionedClusterBlock
from infra.config.model import ClaimMode, Fleet, InferenceClass, InferenceCluster
from infra.config.roles import CPU_CLAIM_DRIVER, claimed_cpus, claimed_drivers, gpu_device_count, gpu_vendors, role_of
from infra.machines import MachineType
from infra.vocabulary import CPU_DRIVER, GPU_LABEL, GPU_VENDORS, NETWORK_DRIVERS

__all__ = ["CPU_DRIVER", "GPU_VENDORS", "NETWORK_DRIVERS"]

ACCELERATOR_DRIVER_MISMATCH = "accelerator-driver-mismatch"
UNSUPPORTED_DEVICES = "unsupported-devices"
CLASS_PROVIDER_MISMATCH = "class-provider-mismatch"
MACHINE_ACCELERATOR_MISMATCH = "machine-accelerator-mismatch"
ACCELERATOR_TYPE_UNKNOWN = "accelerator-type-unknown"
CPU_CLAIM_EXCEEDS_MACHINE = "cpu-claim-exceeds-machine"
ZONE_OUTSIDE_REGION = "zone-outside-region"
MACHINE_OUTSIDE_REGION = "machine-outside-region"
UNKNOWN_MACHINE_TYPE = "unknown-machine-type"

# Each rule's one-line text, as the pack registers it and docs/policies.md shows it (in pack order).
DEVICE_RULES: dict[str, str] = {
    ACCELERATOR_DRIVER_MISMATCH: (
        "A pool's class claims GPUs its machine carries: accelerator set for GPU drivers, of the claimed "
        "vendor and count, none for dra.cpu, one GPU vendor, no dra.cpu next to a GPU driver."
    ),
    UNSUPPORTED_DEVICES: "A provisioned cluster's pools claim only DRA drivers its cloud's serving stack supports.",
    CLASS_PROVIDER_MISMATCH: "A provisioned cluster's pools use classes provisioned on the cluster's own cloud.",
    MACHINE_ACCELERATOR_MISMATCH: (
        "A pool's machine type carries the GPUs its class claims (vendor and count, per the machine "
        "catalog), and a CPU class's machine carries none."
    ),
    ACCELERATOR_TYPE_UNKNOWN: (
        "A class's accelerator type is one its cloud accepts for the pool's machine type; on an Existing "
        "cluster, one of the accelerator vocabulary unless the class takes it uncataloguedAccelerator."
    ),
    CPU_CLAIM_EXCEEDS_MACHINE: "A CPU class claims no more CPUs than its machine has, less those dra-driver-cpu reserves.",
    ZONE_OUTSIDE_REGION: "A pool's zones are zones of its cluster's region.",
    MACHINE_OUTSIDE_REGION: (
        "A pool's machine type is offered in its cluster's region, where the catalog records the regions."
    ),
    UNKNOWN_MACHINE_TYPE: "A pool's machine type is in the machine catalog, so its GPUs, CPUs and price can be checked.",
}


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
    # Where to fix it, when the rule knows: the stack file and the path inside it.
    file: str = ""
    path: str = ""

    @property
    def resource(self) -> str:
        return f"{self.cluster}/{self.pool}"

    @property
    def enforcement(self) -> str:
        # Every device and machine rule stops a run; a machine the catalog does not know does too,
        # unless its class takes it `uncatalogued` (`check_machine`).
        return "mandatory"

    @property
    def mandatory(self) -> bool:
        return self.enforcement == "mandatory"

    @property
    def message(self) -> str:
        where = f"{self.file}: " if self.file else ""
        at = f" (at {self.path})" if self.path else ""
        return (
            f"{where}cluster '{self.cluster}', pool '{self.pool}', class '{self.class_name}': {self.problem}{at}. "
            f"Fix: {self.fix}"
        )


def check_pool(cluster: str, source: str, pool: str, cls: InferenceClass) -> list[Violation]:
    """Every rule for one pool of a cluster whose `source` is given."""
    out: list[Violation] = []

    def reject(policy: str, problem: str, fix: str, driver: str | None = None, path: str = "") -> None:
        out.append(Violation(policy, cluster, pool, cls.name, driver, problem, fix, path=path))

    drivers = claimed_drivers(cls)
    provisioned = profile(source).provisioned
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
        _check_class_accelerator(
            cls,
            f"its {prov.provider} block",
            f"provisioning.{cloud(prov.provider).key}",
            accel,
            drivers,
            reject,
            row=machine(source, prov.machine_name),
        )
    elif not provisioned and cls.accelerator is not None:
        # An Existing class that declares its nodes' GPUs is held to them as a provisioned one is.
        _check_class_accelerator(cls, "the class", "", cls.accelerator, drivers, reject)
        _check_accelerator_vocabulary(cls, cls.accelerator, drivers, reject)

    # unsupported-devices (never on Existing: the owner brought the drivers)
    if provisioned:
        supported = profile(source).supported_drivers
        for d in drivers:
            if d not in supported:
                reject(
                    UNSUPPORTED_DEVICES,
                    f"{source} clusters cannot serve driver {d} (supported: {', '.join(supported)})",
                    f"use a class whose DRA devices {source} supports, or run this hardware on an Existing cluster",
                    driver=d,
                )
    return out


def _check_class_accelerator(
    cls: InferenceClass,
    owner: str,
    block: str,
    accel: Accelerator | None,
    drivers: list[str],
    reject: Callable[..., None],
    row: MachineType | None = None,
) -> None:
    """`accelerator-driver-mismatch` within the class: the accelerator it declares (in `block`, said as
    `owner`: its cloud block, or the class itself on Existing) against the GPUs it claims."""
    vendors = gpu_vendors(drivers)
    role = role_of(drivers)
    gpu_drivers = [d for d in drivers if d in GPU_VENDORS]
    # On a catalogued GPU machine an accelerator left out is supplied (`infra.supply`), unless the
    # class's GPUs are of another vendor or count than the machine's: the machine rules report that,
    # with both values, and a missing accelerator is no second problem.
    disagrees = (
        row is not None
        and row.gpu is not None
        and len(vendors) == 1
        and (vendors[0] != row.gpu.vendor or gpu_device_count(cls) != row.gpu.count)
    )
    if role == "GPU" and vendors and accel is None and not disagrees:
        reject(
            ACCELERATOR_DRIVER_MISMATCH,
            f"the class claims {', '.join(gpu_drivers)} but {owner} sets no accelerator, so its nodes would get no GPU",
            f"set {block}.accelerator {{type, count}} to the GPUs the machine carries",
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


def _check_accelerator_vocabulary(
    cls: InferenceClass, accel: Accelerator, drivers: list[str], reject: Callable[..., None]
) -> None:
    """`accelerator-type-unknown` on an owner's cluster: the class names a type of the vocabulary.

    Nothing provisions an owner's nodes, so no cloud API refuses a misspelt type (`amd-mi300`,
    `nvidia-h10O`): it would become the pool's GPU label, the one the owner is told to put on the
    nodes and the placement audit expects on them, naming a GPU that does not exist. A type the
    vocabulary (`clouds.ACCELERATOR_TYPES`) does not list yet is taken as written where the class
    says so (`uncataloguedAccelerator`).
    """
    if cls.uncatalogued_accelerator or accel.type in ACCELERATOR_TYPES:
        return
    class_at = f"classes[name={cls.name}]"
    vendor = accel.vendor.lower()
    known = [t for t in ACCELERATOR_TYPES if t.startswith(f"{vendor}-")] or list(ACCELERATOR_TYPES)
    close = difflib.get_close_matches(accel.type.lower(), ACCELERATOR_TYPES, n=2)
    guess = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    reject(
        ACCELERATOR_TYPE_UNKNOWN,
        f"accelerator type '{accel.type}' is not in the accelerator vocabulary, yet it would become the pool's "
        f"{GPU_LABEL} label, which the cluster's nodes are to carry",
        f"{guess}{'Write' if guess else 'write'} one of {', '.join(known)}; if the nodes carry a GPU the vocabulary does not list yet, "
        f"set {class_at}.uncataloguedAccelerator: true",
        driver=",".join(d for d in drivers if d in GPU_VENDORS) or None,
        path=f"{class_at}.accelerator.type",
    )


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


# --------------------------------------------------------------------------------------------
# Machine rules: a pool against the catalog row of its machine type


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
    devices claims exactly it (`infra.supply`).
    """
    return row.vcpus - reserved_cpus()


def cpuset_size(cpuset: str) -> int:
    """How many CPUs a Linux cpuset list names (`0-1` -> 2, `0,2,4-5` -> 4, `` -> 0)."""
    count = 0
    for part in filter(None, (p.strip() for p in cpuset.split(","))):
        low, _, high = part.partition("-")
        count += (int(high) - int(low) + 1) if high else 1
    return count


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
    file: str = "",
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
        out.append(Violation(policy, cluster, pool, cls.name, driver, problem, fix, file, path))

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
                f"correct the name if it is a typo; if the machine exists, set {block}.uncatalogued: true to take "
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


def check_fleet_machines(fleet: Fleet, file: str) -> list[Violation]:
    """Every machine-rule violation of a fleet, in config order, in `file`.

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
                    file=file,
                )
            )
    return out


def fleet_violations(fleet: Fleet, file: str = "") -> list[Violation]:
    """Every device and machine rule violation of a fleet, located in `file`: what the guard evaluates."""
    # A rule that names the key it refuses keeps that path (the pack, without indices, says the same).
    located = [replace(v, file=file, path=v.path or violation_path(fleet, v)) for v in check_fleet(fleet)]
    return located + check_fleet_machines(fleet, file)


def cpu_device_index(cls: InferenceClass) -> int:
    """The index of the class's first dra.cpu device (where its CPU claim is written)."""
    return next(i for i, d in enumerate(cls.devices) if d.driver == CPU_CLAIM_DRIVER)


def cluster_region(cluster: InferenceCluster) -> str | None:
    """The region (AKS: location) a provisioned cluster runs in; None for one its owner runs."""
    block = cluster.block
    return block.place if isinstance(block, ProvisionedClusterBlock) else None


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

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
- `infra.checks.machines.check_machine`: the machine rules, which compare a pool with the catalog row
  of its machine (`infra.machines`); the catalog cannot know every machine, but a pool it cannot
  check is never passed in silence: the class must say it takes the machine `uncatalogued`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass

from clouds import ACCELERATOR_TYPES, cloud, machine, profile
from infra.config.base import Accelerator
from infra.config.model import Fleet, InferenceClass
from infra.config.roles import claimed_drivers, gpu_device_count, gpu_vendors, role_of
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

# Each rule's longer explanation, which docs/policies.md prints after its one-line text; the engine never sees it.
DEVICE_RULE_DETAILS: dict[str, str] = {
    ACCELERATOR_DRIVER_MISMATCH: (
        "A GPU driver needs an `accelerator` of the same vendor with the same count. A `dra.cpu`-only class has "
        "no accelerator. A class claims one GPU vendor, and never `dra.cpu` next to a GPU."
    ),
    UNSUPPORTED_DEVICES: "Never checked on Existing clusters: their owner brought the drivers.",
    CLASS_PROVIDER_MISMATCH: (
        "A class without a `provisioning` block, or whose `provisioning.provider` is another cloud, is rejected "
        "on a provisioned cluster. Never checked on Existing clusters."
    ),
    MACHINE_ACCELERATOR_MISMATCH: (
        "A GPU class's machine carries GPUs of the claimed vendor, as many as the class's GPU devices, and "
        "`accelerator.count` matches them; a CPU class's machine carries no GPU left idle."
    ),
    ACCELERATOR_TYPE_UNKNOWN: (
        "On GKE the API's accelerator type, elsewhere the GPU's label names. An Existing cluster's class sets "
        "`uncataloguedAccelerator` to take an accelerator outside the vocabulary (`docs/existing-clusters.md`)."
    ),
    CPU_CLAIM_EXCEEDS_MACHINE: (
        "The claim (`dra.cpu/cpu` x count) is at most the machine's vCPUs less the CPUs dra-driver-cpu reserves "
        "(`infra.cpus.CPU_DRIVER_RESERVED_CPUS`, CPUs 0-1: two)."
    ),
    ZONE_OUTSIDE_REGION: (
        "Zone forms: GKE `<region>-<letter>`, EKS `<region><letter>`, AKS `1`/`2`/`3`; Civo, Vultr and Nebius "
        "have none. On GKE and EKS the letter must be one the region has, as the zone catalog lists it "
        "(`clouds/gke/zones.py`, `clouds/eks/zones.py`), unless the pool sets `uncataloguedZones: true`."
    ),
    MACHINE_OUTSIDE_REGION: (
        "The catalog records the regions its cloud offers a machine in for DigitalOcean's and OCI's rows "
        "(`infra.machines.offered_in`); a row without regions passes in every region."
    ),
    UNKNOWN_MACHINE_TYPE: (
        "A machine type without a catalog row stops the run unless the class's provisioning block sets "
        "`uncatalogued: true`, which takes it unchecked and unpriced."
    ),
}

# Where each rule is decided (backticked paths and names the docs test resolves).
_POOL_RULE = "`infra/checks/devices.py` (`check_pool`)"
_MACHINE_RULE = "`infra/checks/machines.py` (`check_machine`), catalog rows in `clouds/<cloud>/machines.py`"
DEVICE_RULE_HOMES: dict[str, str] = {
    ACCELERATOR_DRIVER_MISMATCH: _POOL_RULE,
    UNSUPPORTED_DEVICES: f"{_POOL_RULE}, drivers from `infra/serving/catalog.py` (`supported_drivers`)",
    CLASS_PROVIDER_MISMATCH: _POOL_RULE,
    MACHINE_ACCELERATOR_MISMATCH: _MACHINE_RULE,
    ACCELERATOR_TYPE_UNKNOWN: _MACHINE_RULE,
    CPU_CLAIM_EXCEEDS_MACHINE: _MACHINE_RULE,
    ZONE_OUTSIDE_REGION: _MACHINE_RULE,
    MACHINE_OUTSIDE_REGION: _MACHINE_RULE,
    UNKNOWN_MACHINE_TYPE: _MACHINE_RULE,
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
    # Where to fix it, when the rule knows: the stack file and the path inside it. The rules know
    # the path only; the file is attached where violations are reported (`infra.config.stackfile.located_checked`).
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
    # On a catalogued GPU machine an accelerator left out is supplied (`infra.checks.supply`), unless the
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

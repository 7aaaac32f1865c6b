"""What a class leaves out, supplied from its machine's catalog row and the device rules.

A class may say only its machine (`provisioning: {provider: GKE, gke: {machineType: g2-standard-8}}`):
the catalog row (`clouds.machine`) says which GPUs the machine carries, and the vocabulary says
which DRA driver and DeviceClass serve them, so the class's accelerator and its devices follow. A
class on a machine without GPUs claims dra.cpu with every CPU a claim may take on it
(`infra.cpus.claimable_cpus`: the most `cpu-claim-exceeds-machine` accepts). A class without a
machine (an Existing cluster's nodes) that declares its `accelerator` gets that many GPU devices
of its vendor.

A provisioned class may name no machine and say what it needs instead (`accelerator`, and or
`minGpuMemoryGib`): the cheapest priced machine of its provider's catalog that fits is chosen
(`fitting_machines`), written into its block as if the stack file named it, and the plan shows the
choice and the machines it was chosen from. The plan's JSON carries the chosen machine and its
row, so a catalog change that moves the choice shows as a change of the plan (the golden plans
fail on it); to hold a pool on its machine whatever the catalog says, name the machine.

What is written stays as written, and is never overwritten: the device and machine rules
(`infra.checks.devices`) check it against the row and name both values when they disagree. An accelerator
is supplied only where the written devices agree with the row; where they do not, the machine rules
say why. Every later step (the rules, the facts, the program, the policy pack, the plan) reads the
long form; each class keeps what was supplied and from which row (`InferenceClass.supplied`).

Not here: the rules themselves (`infra.checks.devices`) and the rows (`clouds/<cloud>/machines.py`).
"""

from __future__ import annotations

from pydantic import ValidationError

from clouds import cloud, machine, nearest_machines, profile
from infra.config.base import Accelerator, MachineBlock
from infra.config.issues import ConfigIssue, issues_from_validation
from infra.config.model import CapacityValue, ClaimMode, Device, Fleet, InferenceClass, Supplied
from infra.config.roles import CPU_CLAIM_CAPACITY
from infra.cpus import claimable_cpus, reserved_cpus
from infra.machines import MachineType
from infra.vocabulary import CPU_DRIVER, DEVICE_CLASS, GPU_VENDORS, VENDOR_DRIVER

# The names supplied devices take: what a deployment's `devices[].name` refers to.
GPU_DEVICE = "gpu"
CPU_DEVICE = "cpu"


def gpu_devices(vendor: str, count: int) -> list[Device]:
    """One device request for `count` whole GPUs of `vendor`, through its driver's DeviceClass."""
    driver = VENDOR_DRIVER[vendor]
    return [Device(name=GPU_DEVICE, driver=driver, device_class_name=DEVICE_CLASS[driver], count=count)]


def cpu_devices(cpus: int) -> list[Device]:
    """One dra.cpu device whose claim takes `cpus` CPUs (capacity `dra.cpu/cpu`)."""
    return [
        Device(
            name=CPU_DEVICE,
            driver=CPU_DRIVER,
            device_class_name=DEVICE_CLASS[CPU_DRIVER],
            capacity={CPU_CLAIM_CAPACITY: CapacityValue(value=str(cpus))},
        )
    ]


def machine_devices(row: MachineType) -> list[Device] | None:
    """The devices a class on `row` claims when it writes none; None when the machine leaves no CPU to claim."""
    if row.gpu is not None:
        return gpu_devices(row.gpu.vendor, row.gpu.count)
    cpus = claimable_cpus(row)
    return cpu_devices(cpus) if cpus >= 1 else None


def machine_accelerator(row: MachineType) -> Accelerator | None:
    """The accelerator a GPU machine's block takes: the row's first accepted type, and its GPU count."""
    if row.gpu is None:
        return None
    return Accelerator(type=row.accelerator_types[0], count=row.gpu.count)


def _gpus(devices: list[Device]) -> tuple[set[str], int]:
    """(vendors, whole GPUs) the devices claim through DRA."""
    gpus = [d for d in devices if d.claim is ClaimMode.DRA and d.driver in GPU_VENDORS]
    return {GPU_VENDORS[d.driver] for d in gpus}, sum(d.count for d in gpus)


def supply_class(cls: InferenceClass, at: str) -> tuple[InferenceClass, list[ConfigIssue]]:
    """The class with what it left out supplied, and what could not be (`at` is its path, `classes[0]`)."""
    prov = cls.provisioning
    if prov is None:
        return _supply_from_accelerator(cls, at)
    key = cloud(prov.provider).key
    block = getattr(prov, key)
    if block is None:
        if cls.accelerator is None and cls.min_gpu_memory_gib is None:
            return cls, []  # `check_references` reports the missing block
        return _choose_machine(cls, at)
    row = machine(prov.provider, block.machine_name)
    if row is None:
        if cls.devices:
            return cls, []
        machine_at = f"{at}.provisioning.{key}.{block.machine_key()}"
        return cls, [
            ConfigIssue(
                f"{at}.devices",
                f"the class writes no devices and its machine '{block.machine_name}' ({machine_at}) is not in the "
                "machine catalog, so they cannot be taken from it",
                _no_devices_fix(prov.provider, block),
            )
        ]
    keys: list[str] = []
    devices = cls.devices
    if not devices:
        found = machine_devices(row)
        if found is None:
            return cls, [
                ConfigIssue(
                    f"{at}.provisioning.{key}.{block.machine_key()}",
                    f"{row.name} has {row.vcpus} vCPUs and dra-driver-cpu reserves {reserved_cpus()}, so a class "
                    "on it has no CPU to claim",
                    f"pick a machine with more than {reserved_cpus()} vCPUs",
                )
            ]
        devices = found
        keys.append("devices")
    accelerator = block.accelerator
    vendors, count = _gpus(devices)
    if accelerator is None and row.gpu is not None and vendors == {row.gpu.vendor} and count == row.gpu.count:
        accelerator = machine_accelerator(row)
        keys.append(f"provisioning.{key}.accelerator")
    if not keys:
        return cls, []
    provisioning = prov.model_copy(update={key: block.model_copy(update={"accelerator": accelerator})})
    return cls.with_supplied(Supplied(tuple(keys), row=row), devices=devices, provisioning=provisioning), []


def fitting_machines(source: str, accelerator: Accelerator | None, min_gpu_memory_gib: int | None) -> list[MachineType]:
    """The priced GPU machines of `source` that fit a need, cheapest first (then by name, so the choice is stable).

    A machine fits when it carries `accelerator` (a type it accepts, exactly `count` GPUs; without
    an accelerator, one GPU), each GPU with at least `min_gpu_memory_gib`, of a vendor whose driver
    the cloud serves. An unpriced machine is never chosen: the choice is by price.
    """
    served = profile(source).supported_drivers
    count = accelerator.count if accelerator is not None else 1
    fits = [
        m
        for m in cloud(source).machines
        if m.gpu is not None
        and m.price_usd_hour is not None
        and m.gpu.count == count
        and (accelerator is None or accelerator.type in m.accelerator_types)
        and (min_gpu_memory_gib is None or m.gpu.memory_gib >= min_gpu_memory_gib)
        and VENDOR_DRIVER.get(m.gpu.vendor) in served
    ]
    return sorted(fits, key=lambda m: (m.price_usd_hour, m.name))


def need_text(accelerator: Accelerator | None, min_gpu_memory_gib: int | None) -> str:
    """`1x nvidia-l4`, `1 GPU of at least 80 GiB`: what a class that names no machine needs."""
    said = f"{accelerator.count}x {accelerator.type}" if accelerator is not None else "1 GPU"
    return said + (f" of at least {min_gpu_memory_gib} GiB" if min_gpu_memory_gib is not None else "")


def _choose_machine(cls: InferenceClass, at: str) -> tuple[InferenceClass, list[ConfigIssue]]:
    """A class that names its provider and what it needs: the cheapest fitting machine, written into its block."""
    prov = cls.provisioning
    assert prov is not None
    owner = cloud(prov.provider)
    assert owner.machine_block is not None, "a provider has a machine block"
    key, block_type = owner.key, owner.machine_block
    need = need_text(cls.accelerator, cls.min_gpu_memory_gib)
    fits = fitting_machines(prov.provider, cls.accelerator, cls.min_gpu_memory_gib)
    if not fits:
        at_need = f"{at}.accelerator" if cls.accelerator is not None else f"{at}.minGpuMemoryGib"
        return cls, [
            ConfigIssue(
                at_need,
                f"no priced {prov.provider} machine in the machine catalog carries {need}",
                f"ask for another accelerator or count (docs/machines.md lists the catalog), or name the machine in "
                f"{at}.provisioning.{key}.{block_type.machine_key()}",
            )
        ]
    row = fits[0]
    assert row.gpu is not None
    accelerator = Accelerator(
        type=cls.accelerator.type if cls.accelerator is not None else row.accelerator_types[0], count=row.gpu.count
    )
    keys = [f"provisioning.{key}.{block_type.machine_key()}", f"provisioning.{key}.accelerator"]
    devices = cls.devices
    if not devices:
        devices = gpu_devices(row.gpu.vendor, row.gpu.count)
        keys.append("devices")
    try:
        block = block_type.for_machine(row.name, accelerator)
    except ValidationError as refused:
        # The machine's block needs a setting only its owner can give (an OKE AMD shape, the image
        # with its driver): its validator's problem and fix (`issues_from_validation`), at the block.
        return cls, [
            ConfigIssue(
                f"{at}.provisioning.{key}",
                f"the cheapest priced {prov.provider} machine that carries {need} is {row.name}, which the plan "
                f"cannot write for you: {issue.problem}",
                f"write {at}.provisioning.{key} with {block_type.machine_key()}: {row.name} and {issue.fix}, "
                f"in place of {at}.{'accelerator' if cls.accelerator is not None else 'minGpuMemoryGib'} "
                "(the machine supplies its GPUs)",
            )
            for issue in issues_from_validation(refused)
        ]
    provisioning = prov.model_copy(update={key: block})
    supplied = Supplied(tuple(keys), row=row, chosen_from=tuple(fits))
    # The need is met by the block now; a class-level accelerator describes only an owner's nodes.
    update = {"devices": devices, "provisioning": provisioning, "accelerator": None, "min_gpu_memory_gib": None}
    return cls.with_supplied(supplied, **update), []


def _supply_from_accelerator(cls: InferenceClass, at: str) -> tuple[InferenceClass, list[ConfigIssue]]:
    """A class without a machine: its devices from the accelerator it declares, if it writes none."""
    if cls.devices:
        return cls, []
    accel = cls.accelerator
    if accel is None:
        return cls, [
            ConfigIssue(
                f"{at}.devices",
                "the class writes no devices, and has neither a machine nor an accelerator to take them from",
                "write the devices (a CPU class: driver dra.cpu with capacity dra.cpu/cpu), set accelerator "
                "{type, count} to the GPUs of the nodes, or set provisioning with a machine the catalog lists",
            )
        ]
    if accel.vendor not in VENDOR_DRIVER:
        return cls, [
            ConfigIssue(
                f"{at}.accelerator.type",
                f"'{accel.type}' names no GPU vendor with a DRA driver ({', '.join(f'{v}-*' for v in VENDOR_DRIVER)}), "
                "so the class's devices cannot be taken from it",
                "write the devices, or name the type with its vendor first, such as amd-mi300x",
            )
        ]
    supplied = Supplied(("devices",), accelerator=accel.type)
    return cls.with_supplied(supplied, devices=gpu_devices(accel.vendor, accel.count)), []


def supply_fleet(fleet: Fleet) -> tuple[Fleet, list[ConfigIssue]]:
    """The fleet in its long form (every class's devices and accelerator written out), and what could not be supplied."""
    classes: list[InferenceClass] = []
    issues: list[ConfigIssue] = []
    for ci, cls in enumerate(fleet.classes):
        supplied, found = supply_class(cls, f"classes[{ci}]")
        classes.append(supplied)
        issues += found
    if not any(c.supplied for c in classes):
        return fleet, issues
    return fleet.model_copy(update={"classes": classes}), issues


def _no_devices_fix(source: str, block: MachineBlock) -> str:
    """The fix for a class without devices on a machine the catalog lacks: the nearest catalog names
    when the machine may be a typo (the class does not say it takes it `uncatalogued`)."""
    guess = "" if block.uncatalogued else nearest_machines(source, block.machine_name)
    if guess:
        return f"{guess}correct the machine type, or write the devices (and accelerator {{type, count}} for GPUs)"
    return "write the devices (and accelerator {type, count} for GPUs), or pick a machine the catalog lists (docs/machines.md)"

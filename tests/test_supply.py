"""A class may name only its machine (or, on Existing, its accelerator): the catalog supplies the rest."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import clouds
from clouds import PROVISIONED, machine
from infra.checks.devices import (
    ACCELERATOR_DRIVER_MISMATCH,
    ACCELERATOR_TYPE_UNKNOWN,
    CPU_CLAIM_EXCEEDS_MACHINE,
    MACHINE_ACCELERATOR_MISMATCH,
)
from infra.checks.machines import fleet_violations
from infra.config.issues import ConfigError, located
from infra.facts import PLAN_POOL_KEYS, derive_fleet
from tests.conftest import CLUSTER_BLOCKS, CPU_BLOCKS, GPU_BLOCKS, cpu_class, fleet_of, gpu_class, run_fleet
from tooling.plan import plan_stack, resources_json
from tooling.reference import THREE_MODELS
from tooling.render import derived_text

FILE = "Pulumi.test.yaml"
SOURCES = [c.source for c in PROVISIONED]


def machine_only(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "accelerator"}


def short_fleet(source: str, gpu_block: dict[str, Any] | None = None) -> dict[str, Any]:
    """One cluster of `source` with a GPU pool and a CPU pool whose classes name only their machines."""
    key = source.lower()
    return {
        "classes": [
            {"name": "gpu", "provisioning": {"provider": source, key: gpu_block or machine_only(GPU_BLOCKS[source])}},
            {"name": "cpu", "provisioning": {"provider": source, key: CPU_BLOCKS[source]}},
        ],
        "clusters": [
            {
                "name": "k",
                "source": source,
                key: CLUSTER_BLOCKS[source],
                "nodePools": [{"name": "gpu", "className": "gpu"}, {"name": "cpu", "className": "cpu"}],
            }
        ],
    }


def long_fleet(source: str) -> dict[str, Any]:
    """The same fleet written out in full, as the classes were before the catalog supplied them."""
    raw = short_fleet(source)
    row = machine(source, fleet_of(raw).classes[0].provisioning.machine_name)  # type: ignore[union-attr]
    assert row is not None and row.gpu is not None
    count = row.gpu.count
    block = {**machine_only(GPU_BLOCKS[source]), "accelerator": {"type": row.accelerator_types[0], "count": count}}
    raw["classes"] = [gpu_class("gpu", source, block, count=count), cpu_class("cpu", source, CPU_BLOCKS[source])]
    return raw


def dumped(raw: dict[str, Any]) -> list[dict[str, Any]]:
    return [c.model_dump(by_alias=True, mode="json", exclude_none=True) for c in fleet_of(raw).classes]


@pytest.mark.parametrize("source", SOURCES)
def test_a_class_that_names_only_its_machine_gets_the_devices_and_accelerator_the_catalog_says(source: str) -> None:
    # Each cloud's example GPU machine carries NVIDIA GPUs (one, or four on OCI, which offers no
    # smaller NVIDIA shape in the catalog) and its CPU machine 8 vCPUs, 2 of which dra-driver-cpu
    # reserves: the short form is the long form, value for value.
    count = GPU_BLOCKS[source]["accelerator"]["count"]
    fleet = fleet_of(short_fleet(source))
    gpu, cpu = fleet.classes
    assert [d.model_dump(by_alias=True, mode="json", exclude_defaults=True) for d in gpu.devices] == [
        {"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com"}
        | ({"count": count} if count > 1 else {})
    ]
    assert gpu.provisioning is not None and gpu.provisioning.accelerator is not None
    assert gpu.provisioning.accelerator.count == count
    assert [d.model_dump(by_alias=True, mode="json", exclude_defaults=True) for d in cpu.devices] == [
        {"name": "cpu", "driver": "dra.cpu", "deviceClassName": "dra.cpu", "capacity": {"dra.cpu/cpu": {"value": "6"}}}
    ]
    assert cpu.provisioning is not None and cpu.provisioning.accelerator is None
    assert dumped(short_fleet(source)) == dumped(long_fleet(source))
    assert located(fleet_violations(fleet), FILE) == []


def test_the_short_form_registers_the_same_resources_as_the_long_form() -> None:
    short, long = run_fleet(short_fleet("GKE")), run_fleet(long_fleet("GKE"))
    assert short.error is None and long.error is None
    assert resources_json(short.resources) == resources_json(long.resources)


def test_a_multi_gpu_machine_supplies_its_gpu_count_and_the_clouds_accelerator_type() -> None:
    fleet = fleet_of(short_fleet("GKE", {"machineType": "a2-ultragpu-8g"}))
    gpu = fleet.classes[0]
    assert [(d.driver, d.device_class_name, d.count) for d in gpu.devices] == [("gpu.nvidia.com", "gpu.nvidia.com", 8)]
    assert gpu.provisioning is not None and gpu.provisioning.accelerator is not None
    assert (gpu.provisioning.accelerator.type, gpu.provisioning.accelerator.count) == ("nvidia-a100-80gb", 8)


def test_the_plan_says_per_pool_what_was_derived_and_from_which_catalog_row() -> None:
    facts = derive_fleet(fleet_of(short_fleet("GKE")))
    pools = {p.name: p.as_json(PLAN_POOL_KEYS)["derived"] for p in facts[0].pools}
    assert pools["system"] is None
    assert pools["gpu"]["keys"] == ["devices", "provisioning.gke.accelerator"]
    assert pools["gpu"]["values"]["provisioning.gke.accelerator"] == {"type": "nvidia-l4", "count": 1}
    assert pools["gpu"]["catalogRow"]["machineType"] == "g2-standard-8"
    assert pools["gpu"]["catalogRow"]["gpu"] == {"vendor": "nvidia", "model": "L4", "count": 1, "memoryGib": 24}
    assert pools["cpu"]["keys"] == ["devices"]
    assert pools["cpu"]["values"]["devices"][0]["capacity"] == {"dra.cpu/cpu": {"value": "6"}}
    text = derived_text(pools["cpu"])
    assert text.startswith(
        "derived: devices cpu: 1x dra.cpu, dra.cpu/cpu 6 from catalog row GKE c3-standard-8 (8 vCPUs"
    )


def test_a_class_written_out_in_full_has_nothing_derived() -> None:
    facts = derive_fleet(fleet_of(long_fleet("GKE")))
    assert [p.as_json(PLAN_POOL_KEYS)["derived"] for p in facts[0].pools] == [None, None, None]


# What is written explicitly must agree with the machine; the error names the path and both values.


def violations_of(raw: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(v.policy, v.path, v.problem) for v in located(fleet_violations(fleet_of(raw)), FILE)]


def test_an_accelerator_count_that_disagrees_with_the_machine_names_both_counts() -> None:
    raw = short_fleet("GKE", {"machineType": "g2-standard-8", "accelerator": {"type": "nvidia-l4", "count": 2}})
    # The devices come from the machine (1 GPU), so the written count disagrees with both.
    assert (
        MACHINE_ACCELERATOR_MISMATCH,
        "classes[name=gpu].provisioning.gke.accelerator.count",
        "accelerator.count is 2 but g2-standard-8 carries 1x nvidia L4",
    ) in violations_of(raw)


def test_an_accelerator_type_the_machine_does_not_carry_names_both_types() -> None:
    raw = short_fleet("GKE", {"machineType": "g2-standard-8", "accelerator": {"type": "nvidia-tesla-a100", "count": 1}})
    assert violations_of(raw) == [
        (
            ACCELERATOR_TYPE_UNKNOWN,
            "classes[name=gpu].provisioning.gke.accelerator.type",
            "accelerator type 'nvidia-tesla-a100' is not one GKE accepts for g2-standard-8 (accepted: nvidia-l4)",
        )
    ]


def test_written_gpu_devices_that_disagree_with_the_machine_are_reported_once_with_both_counts() -> None:
    raw = short_fleet("GKE")
    raw["classes"][0]["devices"] = [gpu_class("x", "GKE", {}, count=2)["devices"][0]]
    found = violations_of(raw)
    assert found == [
        (
            MACHINE_ACCELERATOR_MISMATCH,
            "classes[name=gpu].provisioning.gke.machineType",
            "the class claims 2 GPU device(s) but g2-standard-8 carries 1x nvidia L4",
        )
    ]
    assert ACCELERATOR_DRIVER_MISMATCH not in [policy for policy, _, _ in found]


def test_a_written_cpu_claim_above_what_the_machine_leaves_names_both_numbers() -> None:
    raw = short_fleet("AKS")
    raw["classes"][1] = cpu_class("cpu", "AKS", CPU_BLOCKS["AKS"], cpus="7")
    assert violations_of(raw) == [
        (
            CPU_CLAIM_EXCEEDS_MACHINE,
            "classes[name=cpu].devices[0].capacity.dra.cpu/cpu",
            "the class claims 7 CPUs through dra.cpu but Standard_D8s_v5 has 8 vCPUs, 2 of them reserved by "
            "dra-driver-cpu, so at most 6 can be claimed",
        )
    ]


def test_a_smaller_written_cpu_claim_stays_as_written() -> None:
    raw = short_fleet("EKS")
    raw["classes"][1] = cpu_class("cpu", "EKS", CPU_BLOCKS["EKS"], cpus="4")
    fleet = fleet_of(raw)
    assert fleet.classes[1].devices[0].capacity["dra.cpu/cpu"].value == "4"
    assert fleet.classes[1].supplied is None
    assert violations_of(raw) == []


# Existing: nothing to derive from a machine; the accelerator the class declares gives its devices.


def existing_fleet(cls: dict[str, Any]) -> dict[str, Any]:
    return {
        "classes": [cls],
        "clusters": [
            {
                "name": "lab",
                "source": "Existing",
                "existing": {"kubernetesVersion": "1.36"},
                "nodePools": [{"name": "p", "className": cls["name"]}],
            }
        ],
    }


def test_an_existing_class_that_declares_its_accelerator_gets_its_gpu_devices() -> None:
    fleet = fleet_of(existing_fleet({"name": "mi300x", "accelerator": {"type": "amd-mi300x", "count": 8}}))
    assert [(d.name, d.driver, d.device_class_name, d.count) for d in fleet.classes[0].devices] == [
        ("gpu", "gpu.amd.com", "gpu.amd.com", 8)
    ]
    pool = derive_fleet(fleet)[0].pool("p")
    assert pool.labels["modelplane.ai/gpu"] == "amd-mi300x"
    assert pool.as_json(PLAN_POOL_KEYS)["derived"]["accelerator"] == "amd-mi300x"
    assert fleet.classes[0].supplied is not None and fleet.classes[0].supplied.keys == ("devices",)
    assert located(fleet_violations(fleet), FILE) == []


def test_an_existing_class_keeps_its_written_devices() -> None:
    written = {
        "name": "h100",
        "accelerator": {"type": "nvidia-h100", "count": 8},
        "devices": [{"name": "g", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com", "count": 8}],
    }
    fleet = fleet_of(existing_fleet(written))
    assert [d.name for d in fleet.classes[0].devices] == ["g"] and fleet.classes[0].supplied is None


def issues_of(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as err:
        fleet_of(raw)
    return [str(i) for i in err.value.issues]


def test_a_class_with_nothing_to_derive_its_devices_from_is_refused_at_its_devices() -> None:
    assert issues_of(existing_fleet({"name": "cpu"})) == [
        f"{FILE}: classes[0].devices: the class writes no devices, and has neither a machine nor an accelerator "
        "to take them from. Fix: write the devices (a CPU class: driver dra.cpu with capacity dra.cpu/cpu), set "
        "accelerator {type, count} to the GPUs of the nodes, or set provisioning with a machine the catalog lists"
    ]


def test_an_accelerator_of_no_known_vendor_cannot_supply_devices() -> None:
    assert issues_of(existing_fleet({"name": "g", "accelerator": {"type": "intel-gaudi3", "count": 8}})) == [
        f"{FILE}: classes[0].accelerator.type: 'intel-gaudi3' names no GPU vendor with a DRA driver (nvidia-*, "
        "amd-*), so the class's devices cannot be taken from it. Fix: write the devices, or name the type with its "
        "vendor first, such as amd-mi300x"
    ]


def test_a_cpu_machine_that_leaves_no_cpu_to_claim_is_refused_at_the_machine() -> None:
    raw = short_fleet("AKS")
    raw["classes"][1] = {"name": "cpu", "provisioning": {"provider": "AKS", "aks": {"vmSize": "Standard_D2s_v5"}}}
    assert issues_of(raw) == [
        f"{FILE}: classes[1].provisioning.aks.vmSize: Standard_D2s_v5 has 2 vCPUs and dra-driver-cpu reserves 2, "
        "so a class on it has no CPU to claim. Fix: pick a machine with more than 2 vCPUs"
    ]


def test_a_cpu_machine_with_one_cpu_past_the_reserved_ones_claims_that_one() -> None:
    import dataclasses

    from infra.checks.supply import machine_devices
    from infra.cpus import reserved_cpus

    row = machine("AKS", "Standard_D2s_v5")
    assert row is not None and row.gpu is None
    one_left = machine_devices(dataclasses.replace(row, vcpus=reserved_cpus() + 1))
    assert one_left is not None and [d.capacity["dra.cpu/cpu"].value for d in one_left] == ["1"]
    assert machine_devices(dataclasses.replace(row, vcpus=reserved_cpus())) is None


def test_an_uncatalogued_machine_cannot_supply_devices() -> None:
    raw = short_fleet("GKE", {"machineType": "g9-custom-8", "uncatalogued": True})
    assert issues_of(raw) == [
        f"{FILE}: classes[0].devices: the class writes no devices and its machine 'g9-custom-8' "
        "(classes[0].provisioning.gke.machineType) is not in the machine catalog, so they cannot be taken from it. "
        "Fix: write the devices (and accelerator {type, count} for GPUs), or pick a machine the catalog lists "
        "(docs/machines.md)"
    ]


def test_an_empty_device_list_is_still_refused() -> None:
    raw = copy.deepcopy(short_fleet("GKE"))
    raw["classes"][0]["devices"] = []
    assert any("classes[0].devices" in i for i in issues_of(raw))


def test_a_fleet_of_three_models_on_gke_aks_and_existing_plans_clean_in_under_45_lines(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.three-models.yaml"
    stack.write_text(THREE_MODELS, encoding="utf-8")
    assert len(THREE_MODELS.splitlines()) < 45
    doc = plan_stack(stack)
    assert doc["ok"], doc["errors"] or doc["violations"]
    pools = {(c["name"], p["name"]): p for c in doc["clusters"] for p in c["pools"]}
    assert pools[("gke", "l4")]["accelerator"] == {"type": "nvidia-l4", "count": 1}
    assert pools[("aks", "cpu")]["derived"]["values"]["devices"][0]["capacity"] == {"dra.cpu/cpu": {"value": "6"}}
    assert pools[("lab", "mi300x")]["labels"]["modelplane.ai/gpu"] == "amd-mi300x"
    assert [c["draDrivers"] for c in doc["clusters"]] == [["gpu.nvidia.com"], ["dra.cpu"], ["gpu.amd.com"]]


# A class that names its provider and what it needs: the plan chooses the machine.


def needing(source: str, **need: Any) -> dict[str, Any]:
    raw = short_fleet(source)
    raw["classes"][0] = {"name": "gpu", "provisioning": {"provider": source}, **need}
    return raw


def test_a_class_that_names_its_accelerator_gets_the_cheapest_priced_machine_that_carries_it() -> None:
    fleet = fleet_of(needing("GKE", accelerator="nvidia-l4"))  # one GPU of that type
    gpu = fleet.classes[0]
    # Every g2 machine with one L4 fits; the choice is by price, and g2-standard-4 is the cheapest.
    assert gpu.provisioning is not None and gpu.provisioning.machine_name == "g2-standard-4"
    assert gpu.provisioning.accelerator is not None
    assert (gpu.provisioning.accelerator.type, gpu.provisioning.accelerator.count) == ("nvidia-l4", 1)
    assert gpu.accelerator is None  # met by the block now
    assert [(d.driver, d.count) for d in gpu.devices] == [("gpu.nvidia.com", 1)]
    one_l4 = ["g2-standard-4", "g2-standard-8", "g2-standard-12", "g2-standard-16", "g2-standard-32"]
    assert gpu.supplied is not None and [m.name for m in gpu.supplied.chosen_from] == one_l4
    assert located(fleet_violations(fleet), FILE) == []
    derived = derive_fleet(fleet)[0].pool("gpu").as_json(PLAN_POOL_KEYS)["derived"]
    assert derived["keys"][0] == "provisioning.gke.machineType"
    assert derived["values"]["provisioning.gke.machineType"] == "g2-standard-4"
    assert derived["chosenFrom"][:2] == [
        {"machineType": "g2-standard-4", "priceUsdHour": "0.70683"},  # 0.14679 + one L4 at 0.56004
        {"machineType": "g2-standard-8", "priceUsdHour": "0.85362"},
    ]
    assert "chose g2-standard-4 ($0.70683/h), the cheapest that fits" in derived_text(derived)


def test_a_class_that_names_a_minimum_gpu_memory_gets_the_cheapest_machine_with_that_much() -> None:
    fleet = fleet_of(needing("GKE", minGpuMemoryGib=40))
    gpu = fleet.classes[0]
    assert gpu.provisioning is not None and gpu.provisioning.machine_name == "a2-highgpu-1g"
    assert gpu.provisioning.accelerator is not None and gpu.provisioning.accelerator.type == "nvidia-tesla-a100"
    assert located(fleet_violations(fleet), FILE) == []


def test_the_chosen_machine_is_pinned_in_the_plan_so_a_catalog_change_shows_as_a_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import dataclasses

    import infra.checks.supply

    raw = needing("GKE", accelerator={"type": "nvidia-l4"})
    raw["classes"].append(
        {"name": "pinned", "provisioning": {"provider": "GKE", "gke": {"machineType": "g2-standard-8"}}}
    )
    raw["clusters"][0]["nodePools"].append({"name": "pinned", "className": "pinned"})

    def plan_of_pools() -> dict[str, Any]:
        facts = derive_fleet(fleet_of(raw))[0]
        return {p.name: (p.machine, p.as_json(PLAN_POOL_KEYS)["derived"]) for p in facts.pools}

    before = plan_of_pools()
    row = machine("GKE", "g2-standard-4")
    assert row is not None
    cheaper = dataclasses.replace(row, name="g2-cheaper-4", price_usd_hour=row.price_usd_hour / 2)  # type: ignore[operator]
    gke = clouds.cloud("GKE")
    moved = dataclasses.replace(gke, machines=(*gke.machines, cheaper))
    monkeypatch.setattr(infra.checks.supply, "cloud", lambda source: moved if source == "GKE" else clouds.cloud(source))
    monkeypatch.setattr(
        infra.checks.supply, "machine", lambda source, name: cheaper if name == cheaper.name else machine(source, name)
    )
    after = plan_of_pools()
    # The class that named what it needs moves, and its plan says so; the class that named its machine stays.
    assert (before["gpu"][0], after["gpu"][0]) == ("g2-standard-4", "g2-cheaper-4")
    assert before["gpu"][1]["values"] != after["gpu"][1]["values"]
    assert [c["machineType"] for c in after["gpu"][1]["chosenFrom"]][:2] == ["g2-cheaper-4", "g2-standard-4"]
    assert before["pinned"] == after["pinned"] and after["pinned"][0] == "g2-standard-8"


def test_a_multi_gpu_need_gets_a_machine_with_that_many_gpus_under_the_type_asked_for() -> None:
    fleet = fleet_of(needing("EKS", accelerator={"type": "nvidia-h100", "count": 8}))
    gpu = fleet.classes[0]
    assert gpu.provisioning is not None and gpu.provisioning.machine_name == "p5.48xlarge"
    assert gpu.provisioning.accelerator is not None
    # The row lists nvidia-h100-80gb first; the class asked for nvidia-h100, which the row accepts too.
    assert (gpu.provisioning.accelerator.type, gpu.provisioning.accelerator.count) == ("nvidia-h100", 8)
    assert [(d.name, d.count) for d in gpu.devices] == [("gpu", 8)]
    assert gpu.supplied is not None and gpu.supplied.row is not None and gpu.supplied.row.name == "p5.48xlarge"
    assert gpu.supplied.keys == ("provisioning.eks.instanceType", "provisioning.eks.accelerator", "devices")
    assert all(m.gpu is not None and m.gpu.count == 8 for m in gpu.supplied.chosen_from)
    assert located(fleet_violations(fleet), FILE) == []


def test_a_need_that_writes_its_devices_keeps_them() -> None:
    written = [{"name": "accel", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com", "count": 1}]
    gpu = fleet_of(needing("GKE", accelerator="nvidia-l4", devices=written)).classes[0]
    assert gpu.provisioning is not None and gpu.provisioning.machine_name == "g2-standard-4"
    assert [(d.name, d.count) for d in gpu.devices] == [("accel", 1)]
    assert gpu.supplied is not None
    assert gpu.supplied.keys == ("provisioning.gke.machineType", "provisioning.gke.accelerator")


def test_a_memory_need_no_machine_meets_is_refused_at_the_memory_naming_it() -> None:
    assert issues_of(needing("GKE", minGpuMemoryGib=1000)) == [
        f"{FILE}: classes[0].minGpuMemoryGib: no priced GKE machine in the machine catalog carries 1 GPU of at "
        "least 1000 GiB. Fix: ask for another accelerator or count (docs/machines.md lists the catalog), or name "
        "the machine in classes[0].provisioning.gke.machineType"
    ]
    [both] = issues_of(needing("GKE", accelerator="nvidia-l4", minGpuMemoryGib=40))
    assert both.startswith(f"{FILE}: classes[0].accelerator: no priced GKE machine in the machine catalog carries ")
    assert "carries 1x nvidia-l4 of at least 40 GiB." in both


def test_a_need_no_catalog_machine_meets_is_refused_naming_the_need_and_the_fix() -> None:
    found = issues_of(needing("GKE", accelerator={"type": "nvidia-h200-141gb", "count": 1}))
    assert found == [
        f"{FILE}: classes[0].accelerator: no priced GKE machine in the machine catalog carries 1x nvidia-h200-141gb. "
        "Fix: ask for another accelerator or count (docs/machines.md lists the catalog), or name the machine in "
        "classes[0].provisioning.gke.machineType"
    ]


def test_a_minimum_gpu_memory_on_a_class_that_names_its_machine_is_refused() -> None:
    raw = short_fleet("GKE")
    raw["classes"][0]["minGpuMemoryGib"] = 40
    [issue] = issues_of(raw)
    assert issue.startswith(f"{FILE}: classes[0].minGpuMemoryGib: minGpuMemoryGib chooses a machine")


@pytest.mark.parametrize("source", SOURCES)
def test_every_catalogued_gpu_machine_can_be_written_into_its_clouds_block(source: str) -> None:
    # Except a machine whose block needs a setting only its owner can give (an OKE AMD shape needs
    # the OCID of an image with the amdgpu driver): the plan refuses to choose it, as the next test shows.
    block = clouds.cloud(source).machine_block
    assert block is not None
    for row in clouds.cloud(source).machines:
        if (source, row.gpu and row.gpu.vendor) == ("OCI", "amd"):
            with pytest.raises(ValidationError, match="set imageId"):
                block.for_machine(row.name, None)
            continue
        assert block.for_machine(row.name, None).machine_name == row.name


def test_a_chosen_machine_whose_block_needs_the_owners_setting_is_refused_naming_it() -> None:
    raw = needing("OCI", accelerator={"type": "amd-mi300x", "count": 8})
    assert issues_of(raw) == [
        f"{FILE}: classes[0].provisioning.oci: the cheapest priced OCI machine that carries 8x amd-mi300x is "
        "BM.GPU.MI300X.8, which the plan cannot write for you: OKE's node images carry no AMD GPU driver, so "
        "BM.GPU.MI300X.8 nodes need an image that does. Fix: write classes[0].provisioning.oci with shape: "
        "BM.GPU.MI300X.8 and set imageId to the OCID of an image with the amdgpu driver (ROCm) for the "
        "cluster's Kubernetes version, in place of classes[0].accelerator (the machine supplies its GPUs)"
    ]
    # The fix, applied, plans clean, with the machine's eight MI300X supplied as before.
    raw["classes"][0]["provisioning"]["oci"] = {"shape": "BM.GPU.MI300X.8", "imageId": "ocid1.image.oc1..amdgpu"}
    del raw["classes"][0]["accelerator"]
    fixed = fleet_of(raw).classes[0]
    assert [(d.driver, d.count) for d in fixed.devices] == [("gpu.amd.com", 8)]

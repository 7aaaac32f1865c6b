"""Each machine rule's whole verdict: policy, cluster, pool, class, driver, problem, fix and path.

tests/test_machines.py shows that each rule passes and fails on every cloud; this file writes out
what a user reads when one fails, field by field, so that a changed message, a lost path or a
blamed driver is caught, not only a changed policy name.
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.checks.devices import (
    ACCELERATOR_TYPE_UNKNOWN,
    CPU_CLAIM_EXCEEDS_MACHINE,
    MACHINE_ACCELERATOR_MISMATCH,
    UNKNOWN_MACHINE_TYPE,
    ZONE_OUTSIDE_REGION,
    Violation,
)
from infra.checks.machines import check_fleet_machines, check_machine, class_cpu_claim, fleet_violations, violation_path
from infra.config.issues import located
from infra.config.model import Fleet, InferenceClass, cluster_region
from infra.cpus import cpuset_size
from tests.conftest import CLUSTER_BLOCKS, fleet_of

NVIDIA, AMD, CPU = "gpu.nvidia.com", "gpu.amd.com", "dra.cpu"
GKE_MACHINE = "classes[name=x].provisioning.gke.machineType"


def gke_class(
    machine: str, drivers: list[tuple[str, int]], accelerator: dict[str, Any] | None = None
) -> InferenceClass:
    """Class `x` provisioned on GKE `machine`, claiming (driver, count) devices; dra.cpu claims 4 CPUs."""
    devices: list[dict[str, Any]] = []
    for i, (driver, count) in enumerate(drivers):
        device: dict[str, Any] = {"name": f"d{i}", "driver": driver, "deviceClassName": driver, "count": count}
        if driver == CPU:
            device["capacity"] = {"dra.cpu/cpu": {"value": "4"}}
        devices.append(device)
    block: dict[str, Any] = {"machineType": machine}
    if accelerator is not None:
        block["accelerator"] = accelerator
    return InferenceClass.model_validate(
        {"name": "x", "devices": devices, "provisioning": {"provider": "GKE", "gke": block}}
    )


L4 = {"type": "nvidia-l4", "count": 1}
# case -> (class, zones, [(policy, driver, problem, fix, path)])
CASES: dict[str, tuple[InferenceClass, list[str], list[tuple[str, str | None, str, str, str]]]] = {
    "GPU driver on a CPU machine": (
        gke_class("c3-standard-8", [(NVIDIA, 1)], L4),
        [],
        [
            (
                MACHINE_ACCELERATOR_MISMATCH,
                NVIDIA,
                "the class claims gpu.nvidia.com but c3-standard-8 carries no GPU",
                f"pick a GPU machine of GKE for {GKE_MACHINE}, or claim only dra.cpu for a CPU pool",
                GKE_MACHINE,
            )
        ],
    ),
    "two GPU drivers on a CPU machine": (
        gke_class("c3-standard-8", [(NVIDIA, 1), (AMD, 1)], L4),
        [],
        [
            (
                MACHINE_ACCELERATOR_MISMATCH,
                "gpu.amd.com,gpu.nvidia.com",
                "the class claims gpu.amd.com, gpu.nvidia.com but c3-standard-8 carries no GPU",
                f"pick a GPU machine of GKE for {GKE_MACHINE}, or claim only dra.cpu for a CPU pool",
                GKE_MACHINE,
            )
        ],
    ),
    "the other vendor's driver on a GPU machine": (
        gke_class("g2-standard-8", [(AMD, 1)], L4),
        [],
        [
            (
                MACHINE_ACCELERATOR_MISMATCH,
                AMD,
                "the class claims gpu.amd.com but g2-standard-8 carries 1x nvidia L4",
                "claim the nvidia GPU driver, or pick a machine with amd GPUs",
                GKE_MACHINE,
            )
        ],
    ),
    # Two vendors are the device rules' second-vendor violation; the machine rules count devices.
    "two vendors on a GPU machine": (
        gke_class("g2-standard-8", [(AMD, 1), (NVIDIA, 1)], L4),
        [],
        [
            (
                MACHINE_ACCELERATOR_MISMATCH,
                "gpu.amd.com,gpu.nvidia.com",
                "the class claims 2 GPU device(s) but g2-standard-8 carries 1x nvidia L4",
                "make the GPU devices' count and accelerator.count 1, or pick a machine with 2 GPU(s)",
                GKE_MACHINE,
            )
        ],
    ),
    "more GPU devices than the machine has": (
        gke_class("g2-standard-8", [(NVIDIA, 2)], {"type": "nvidia-l4", "count": 2}),
        [],
        [
            (
                MACHINE_ACCELERATOR_MISMATCH,
                NVIDIA,
                "the class claims 2 GPU device(s) but g2-standard-8 carries 1x nvidia L4",
                "make the GPU devices' count and accelerator.count 1, or pick a machine with 2 GPU(s)",
                GKE_MACHINE,
            )
        ],
    ),
    "accelerator.count other than the machine's": (
        gke_class("g2-standard-8", [(NVIDIA, 1)], {"type": "nvidia-l4", "count": 2}),
        [],
        [
            (
                MACHINE_ACCELERATOR_MISMATCH,
                NVIDIA,
                "accelerator.count is 2 but g2-standard-8 carries 1x nvidia L4",
                "set classes[name=x].provisioning.gke.accelerator.count to 1",
                "classes[name=x].provisioning.gke.accelerator.count",
            )
        ],
    ),
    "accelerator type the cloud does not accept": (
        gke_class("g2-standard-8", [(NVIDIA, 1)], {"type": "nvidia-tesla-t4", "count": 1}),
        [],
        [
            (
                ACCELERATOR_TYPE_UNKNOWN,
                NVIDIA,
                "accelerator type 'nvidia-tesla-t4' is not one GKE accepts for g2-standard-8 (accepted: nvidia-l4)",
                "set classes[name=x].provisioning.gke.accelerator.type to nvidia-l4",
                "classes[name=x].provisioning.gke.accelerator.type",
            )
        ],
    ),
    "CPU class on a GPU machine": (
        gke_class("g2-standard-8", [(CPU, 1)]),
        [],
        [
            (
                MACHINE_ACCELERATOR_MISMATCH,
                CPU,
                "the class claims only dra.cpu but g2-standard-8 carries 1x L4, GPUs no claim would use",
                f"pick a machine without GPUs for {GKE_MACHINE}, or claim the GPU's driver",
                GKE_MACHINE,
            )
        ],
    ),
    "CPU claim beyond the machine": (
        gke_class("c3-standard-8", [(CPU, 2)]),
        [],
        [
            (
                CPU_CLAIM_EXCEEDS_MACHINE,
                CPU,
                "the class claims 8 CPUs through dra.cpu but c3-standard-8 has 8 vCPUs, 2 of them reserved "
                "by dra-driver-cpu, so at most 6 can be claimed",
                "claim at most 6 CPUs (capacity dra.cpu/cpu), or pick a machine with more vCPUs",
                "classes[name=x].devices[0].capacity.dra.cpu/cpu",
            )
        ],
    ),
    "machine not in the catalog": (
        gke_class("n9-imaginary-8", [(CPU, 1)]),
        [],
        [
            (
                UNKNOWN_MACHINE_TYPE,
                None,
                "machine type 'n9-imaginary-8' is not in the machine catalog, so its GPUs, CPUs and price "
                "would go unchecked",
                "correct the name if it is a typo; if the machine exists, set classes[name=x].provisioning.gke"
                ".uncatalogued: true to take it unchecked and unpriced (docs/machines.md says how the catalog gains "
                "a row)",
                GKE_MACHINE,
            )
        ],
    ),
    "a zone of another region, then a good one": (
        gke_class("c3-standard-8", [(CPU, 1)]),
        ["us-east1-b", "us-central1-a"],
        [
            (
                ZONE_OUTSIDE_REGION,
                None,
                "zone 'us-east1-b' is in region us-east1, not in the cluster's region us-central1",
                "list only zones of us-central1 (us-central1-a, us-central1-b, us-central1-c, us-central1-f) in the "
                "pool's zones, or drop zones to let the cloud choose",
                "clusters[name=k].nodePools[name=p].zones[0]",
            )
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_machine_rule_reports_policy_driver_problem_fix_and_path(case: str) -> None:
    cls, zones, expected = CASES[case]
    found = located(check_machine("k", "GKE", "p", cls, "us-central1", zones), "Pulumi.t.yaml")
    assert found == [
        Violation(policy, "k", "p", "x", driver, problem, fix, "Pulumi.t.yaml", path)
        for policy, driver, problem, fix, path in expected
    ]


def eks_p5(drivers: list[tuple[str, int]], accelerator: dict[str, Any]) -> InferenceClass:
    """Class `x` on EKS p5.48xlarge (8x H100 80GB; accepted types nvidia-h100-80gb, nvidia-h100)."""
    return InferenceClass.model_validate(
        {
            "name": "x",
            "devices": [
                {"name": f"d{i}", "driver": d, "deviceClassName": d, "count": n} for i, (d, n) in enumerate(drivers)
            ],
            "provisioning": {"provider": "EKS", "eks": {"instanceType": "p5.48xlarge", "accelerator": accelerator}},
        }
    )


P5_AT = "classes[name=x].provisioning.eks"


@pytest.mark.parametrize(
    ("accelerator", "expected"),
    [
        (
            {"type": "nvidia-h100", "count": 4},
            (
                MACHINE_ACCELERATOR_MISMATCH,
                "accelerator.count is 4 but p5.48xlarge carries 8x nvidia H100 80GB",
                f"set {P5_AT}.accelerator.count to 8",
                f"{P5_AT}.accelerator.count",
            ),
        ),
        (
            {"type": "nvidia-h200", "count": 8},
            (
                ACCELERATOR_TYPE_UNKNOWN,
                "accelerator type 'nvidia-h200' is not one EKS accepts for p5.48xlarge "
                "(accepted: nvidia-h100-80gb, nvidia-h100)",
                f"set {P5_AT}.accelerator.type to nvidia-h100-80gb",
                f"{P5_AT}.accelerator.type",
            ),
        ),
    ],
    ids=["accelerator-count", "accelerator-type"],
)
def test_a_class_of_two_gpu_drivers_is_blamed_on_both(
    accelerator: dict[str, Any], expected: tuple[str, str, str, str]
) -> None:
    """Four devices of each vendor fill the machine's eight, so the rule after the count fires."""
    policy, problem, fix, path = expected
    found = check_machine("k", "EKS", "p", eks_p5([(NVIDIA, 4), (AMD, 4)], accelerator), "us-east-1")
    assert found == [Violation(policy, "k", "p", "x", "gpu.amd.com,gpu.nvidia.com", problem, fix, "", path)]


def test_aks_zone_numbers_are_named_in_the_message() -> None:
    cls = InferenceClass.model_validate(
        {
            "name": "x",
            "devices": [{"name": "c", "driver": CPU, "deviceClassName": CPU}],
            "provisioning": {"provider": "AKS", "aks": {"vmSize": "Standard_D8s_v5"}},
        }
    )
    [v] = check_machine("k", "AKS", "p", cls, "eastus", ["eastus-1"])
    assert v.problem == "AKS zones are the location's zone numbers 1, 2 or 3, not 'eastus-1'"


def test_cpu_claim_counts_dra_cpu_devices_only_and_a_device_without_capacity_as_none() -> None:
    cls = InferenceClass.model_validate(
        {
            "name": "x",
            "devices": [
                {"name": "a", "driver": CPU, "deviceClassName": CPU, "capacity": {"dra.cpu/cpu": {"value": "3"}}},
                {"name": "b", "driver": CPU, "deviceClassName": CPU, "count": 2},
                {
                    "name": "s",
                    "driver": CPU,
                    "claim": "Synthetic",
                    "capacity": {"dra.cpu/cpu": {"value": "5"}},
                },
            ],
        }
    )
    assert class_cpu_claim(cls) == 3


def test_cpuset_size_counts_ranges_and_single_cpus() -> None:
    assert [cpuset_size(s) for s in ("0", "0-3", "1,3", "0-1,4-7,9", "")] == [1, 4, 2, 7, 0]


def test_cluster_region_is_the_region_or_the_aks_location_and_none_on_existing() -> None:
    pools = [{"name": "p", "className": "any"}]
    clusters = [
        {"name": n, "source": s, s.lower(): CLUSTER_BLOCKS[s], "nodePools": pools}
        for n, s in (("g", "GKE"), ("a", "AKS"), ("c", "Civo"))
    ] + [{"name": "e", "source": "Existing", "existing": {"kubernetesVersion": "1.36"}, "nodePools": pools}]
    fleet = Fleet.model_validate({"classes": [], "clusters": clusters})
    assert [cluster_region(c) for c in fleet.clusters] == ["us-central1", "eastus", "LON1", None]


def two_cluster_fleet() -> dict[str, Any]:
    """Cluster `a` with a good CPU pool; cluster `b` with a good pool and then a pool whose class claims too many CPUs."""
    good = {
        "name": "good",
        "devices": [{"name": "c", "driver": CPU, "deviceClassName": CPU}],
        "provisioning": {"provider": "GKE", "gke": {"machineType": "c3-standard-8"}},
    }
    greedy = {
        "name": "greedy",
        "devices": [{"name": "c", "driver": CPU, "deviceClassName": CPU, "capacity": {"dra.cpu/cpu": {"value": "7"}}}],
        "provisioning": {"provider": "GKE", "gke": {"machineType": "c3-standard-8"}},
    }
    return {
        "classes": [good, greedy],
        "clusters": [
            {
                "name": "a",
                "source": "GKE",
                "gke": CLUSTER_BLOCKS["GKE"],
                "nodePools": [{"name": "p", "className": "good"}],
            },
            {
                "name": "b",
                "source": "GKE",
                "gke": CLUSTER_BLOCKS["GKE"],
                "nodePools": [{"name": "p", "className": "good"}, {"name": "q", "className": "greedy"}],
            },
        ],
    }


def test_fleet_violations_locate_the_pool_and_class_by_index() -> None:
    [v] = located(fleet_violations(fleet_of(two_cluster_fleet())), "Pulumi.t.yaml")
    assert (v.policy, v.cluster, v.pool, v.file) == (CPU_CLAIM_EXCEEDS_MACHINE, "b", "q", "Pulumi.t.yaml")
    assert v.path == "classes[name=greedy].devices[0].capacity.dra.cpu/cpu"
    # Pool `p` exists in both clusters: the path names the pool of the violation's cluster.
    assert violation_path(fleet_of(two_cluster_fleet()), v) == "clusters[1].nodePools[1] (class classes[1])"


def test_violation_path_without_a_known_class_names_the_pool_alone() -> None:
    fleet = fleet_of(two_cluster_fleet())
    v = Violation("p", "a", "p", "gone", None, "problem", "fix")
    assert violation_path(fleet, v) == "clusters[0].nodePools[0]"
    assert violation_path(fleet, Violation("p", "nowhere", "p", "gone", None, "problem", "fix")) == ""


def test_machine_rules_check_the_pools_after_one_whose_class_is_missing() -> None:
    raw = two_cluster_fleet()
    raw["clusters"][1]["nodePools"].insert(0, {"name": "orphan", "className": "missing"})
    fleet = Fleet.model_validate(raw)  # the reference check, which refuses this, is not run here
    assert [(v.cluster, v.pool, v.file) for v in located(check_fleet_machines(fleet), "Pulumi.t.yaml")] == [
        ("b", "q", "Pulumi.t.yaml")
    ]


def test_fewer_gpu_devices_than_the_machine_carries_are_rejected_as_a_count_mismatch() -> None:
    """One device and accelerator.count 1 on an 8-GPU machine: the devices' count is blamed, not the accelerator's."""
    found = check_machine("k", "EKS", "p", eks_p5([(NVIDIA, 1)], {"type": "nvidia-h100", "count": 1}), "us-east-1")
    assert found == [
        Violation(
            MACHINE_ACCELERATOR_MISMATCH,
            "k",
            "p",
            "x",
            NVIDIA,
            "the class claims 1 GPU device(s) but p5.48xlarge carries 8x nvidia H100 80GB",
            "make the GPU devices' count and accelerator.count 8, or pick a machine with 1 GPU(s)",
            "",
            f"{P5_AT}.instanceType",
        )
    ]

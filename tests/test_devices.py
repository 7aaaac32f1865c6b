"""Device rules: every accepted and rejected shape, with the policy, pool, class and driver named."""

from __future__ import annotations

from typing import Any

import pytest

from clouds import PROVISIONED
from infra.checks.devices import (
    ACCELERATOR_DRIVER_MISMATCH,
    CLASS_PROVIDER_MISMATCH,
    UNSUPPORTED_DEVICES,
    check_fleet,
    check_pool,
)
from infra.checks.machines import zone_problem
from infra.config.issues import ConfigError
from infra.config.model import InferenceClass
from infra.config.roles import claimed_drivers, cluster_dra_drivers, role_of
from infra.facts import derive_fleet
from tests.conftest import GPU_BLOCKS, cpu_class, fleet_of, gpu_class

BLOCKS = {
    "GKE": {"machineType": "g2-standard-8"},
    "EKS": {"instanceType": "g6.xlarge"},
    "AKS": {"vmSize": "Standard_NC24ads_A100_v4"},
    "Civo": {"size": "an.g1.l40s.kube.x1"},
    "Vultr": {"plan": "vcg-l40s-16c-180g-48vram"},
}


def cls(raw: dict[str, Any]) -> InferenceClass:
    return InferenceClass.model_validate(raw)


def nvidia(
    provider: str = "GKE", count: int = 1, accel: dict[str, Any] | None = None, **devices: Any
) -> InferenceClass:
    block = dict(BLOCKS[provider])
    if accel is not None:
        block["accelerator"] = accel
    return cls(gpu_class("gpu-class", provider, block, count=count))


def policies(violations: list[Any]) -> list[str]:
    return [v.policy for v in violations]


def test_synthetic_devices_never_reach_claimed_drivers() -> None:
    c = cls(
        {
            "name": "h100",
            "devices": [
                {"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com", "count": 8},
                {"name": "nic", "claim": "Synthetic", "driver": "nic.nvidia.com", "count": 8},
            ],
        }
    )
    assert claimed_drivers(c) == ["gpu.nvidia.com"]


def test_cluster_dra_drivers_are_the_sorted_union_of_its_pools() -> None:
    fleet = fleet_of(
        {
            "classes": [
                gpu_class("g", "GKE", {"machineType": "g2", "accelerator": {"type": "nvidia-l4", "count": 1}}),
                cpu_class("c", "GKE", {"machineType": "c3"}),
                cpu_class("unused", "GKE", {"machineType": "c3"}),
            ],
            "clusters": [
                {
                    "name": "k",
                    "source": "GKE",
                    "gke": {"project": "my-project", "region": "us-central1", "kubernetesVersion": "1.36"},
                    "nodePools": [{"name": "a", "className": "g"}, {"name": "b", "className": "c"}],
                }
            ],
        }
    )
    assert cluster_dra_drivers(fleet, fleet.clusters[0]) == ["dra.cpu", "gpu.nvidia.com"]


@pytest.mark.parametrize(
    ("drivers", "role"),
    [
        (["dra.cpu"], "CPU"),
        (["dra.cpu", "dra.net"], "CPU"),
        (["gpu.nvidia.com"], "GPU"),
        (["gpu.amd.com", "dra.net"], "GPU"),
        (["example.com/tpu"], "GPU"),
        (["dra.net"], None),
        ([], None),
    ],
)
def test_role_follows_claimed_drivers(drivers: list[str], role: str | None) -> None:
    assert role_of(drivers) == role


def test_gpu_class_that_forgot_accelerator_is_rejected_not_made_cpu() -> None:
    # Registered so (the loader supplies the accelerator of a catalogued machine), the class is rejected.
    c = nvidia("GKE", count=1, accel=None)
    [v] = check_pool("k", "GKE", "gpus", c)
    assert v.policy == ACCELERATOR_DRIVER_MISMATCH
    assert (v.cluster, v.pool, v.class_name, v.driver) == ("k", "gpus", "gpu-class", "gpu.nvidia.com")
    assert "accelerator" in v.fix
    # and the role stays GPU: it comes from the drivers, never from `accelerator`
    assert role_of(claimed_drivers(c)) == "GPU"


def test_cpu_class_with_accelerator_is_rejected() -> None:
    c = cls(cpu_class("cpu", "GKE", {"machineType": "c3", "accelerator": {"type": "nvidia-l4", "count": 1}}))
    [v] = check_pool("k", "GKE", "cpu", c)
    assert (v.policy, v.driver) == (ACCELERATOR_DRIVER_MISMATCH, "dra.cpu")


def test_accelerator_vendor_must_match_gpu_driver() -> None:
    c = nvidia("GKE", accel={"type": "amd-mi300x", "count": 1})
    [v] = check_pool("k", "GKE", "gpu", c)
    assert v.policy == ACCELERATOR_DRIVER_MISMATCH and "amd" in v.problem


def test_gpu_device_count_must_equal_accelerator_count() -> None:
    c = nvidia("GKE", count=2, accel={"type": "nvidia-l4", "count": 1})
    [v] = check_pool("k", "GKE", "gpu", c)
    assert v.policy == ACCELERATOR_DRIVER_MISMATCH and "2 GPU devices" in v.problem


def test_class_claiming_two_gpu_vendors_is_rejected_even_on_existing() -> None:
    c = cls(
        {
            "name": "mixed",
            "devices": [
                {"name": "n", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com"},
                {"name": "a", "driver": "gpu.amd.com", "deviceClassName": "gpu.amd.com"},
            ],
        }
    )
    assert policies(check_pool("k", "Existing", "p", c)) == [ACCELERATOR_DRIVER_MISMATCH]


def test_dra_cpu_in_a_gpu_class_is_rejected() -> None:
    raw = gpu_class("g", "GKE", {"machineType": "g2", "accelerator": {"type": "nvidia-l4", "count": 1}})
    raw["devices"].append({"name": "cpu", "driver": "dra.cpu", "deviceClassName": "dra.cpu"})
    [v] = check_pool("k", "GKE", "p", cls(raw))
    assert (v.policy, v.driver) == (ACCELERATOR_DRIVER_MISMATCH, "dra.cpu")


# Every provisioned cloud whose profile serves no AMD GPUs (DigitalOcean and OCI sell AMD machines).
@pytest.mark.parametrize("provider", [c.source for c in PROVISIONED if "amd" not in c.profile.gpu_vendors])
def test_amd_driver_is_unsupported_on_every_provisioned_cloud(provider: str) -> None:
    block = dict(GPU_BLOCKS[provider], accelerator={"type": "amd-mi300x", "count": 1})
    c = cls(gpu_class("amd", provider, block, driver="gpu.amd.com"))
    [v] = check_pool("k", provider, "amd", c)
    assert (v.policy, v.driver) == (UNSUPPORTED_DEVICES, "gpu.amd.com")


@pytest.mark.parametrize(
    ("provider", "accepted"), [("EKS", True), ("GKE", False), ("AKS", False), ("Civo", False), ("Vultr", False)]
)
def test_dra_net_is_supported_only_on_eks(provider: str, accepted: bool) -> None:
    raw = gpu_class("g", provider, dict(BLOCKS[provider], accelerator={"type": "nvidia-h100", "count": 1}))
    raw["devices"].append({"name": "efa", "driver": "dra.net", "deviceClassName": "efa.networking.k8s.aws", "count": 4})
    found = check_pool("k", provider, "p", cls(raw))
    assert found == [] if accepted else [(v.policy, v.driver) for v in found] == [(UNSUPPORTED_DEVICES, "dra.net")]


def test_existing_rule_never_rejects_an_unserved_driver() -> None:
    raw = {"name": "tpu", "devices": [{"name": "t", "driver": "tpu.example.com", "deviceClassName": "tpu.example.com"}]}
    assert check_pool("byo", "Existing", "p", cls(raw)) == []


def test_existing_ignores_provisioning_of_another_provider() -> None:
    c = nvidia("GKE", accel={"type": "nvidia-l4", "count": 1})
    assert check_pool("byo", "Existing", "p", c) == []


def test_class_from_another_provider_is_rejected() -> None:
    c = nvidia("EKS", accel={"type": "nvidia-l4", "count": 1})
    [v] = check_pool("k", "GKE", "p", c)
    assert v.policy == CLASS_PROVIDER_MISMATCH and "EKS" in v.problem


def test_class_without_provisioning_on_a_provisioned_cloud_is_rejected() -> None:
    c = cls(cpu_class("cpu", None))
    [v] = check_pool("k", "Civo", "p", c)
    assert v.policy == CLASS_PROVIDER_MISMATCH and "no provisioning" in v.problem


def test_good_gpu_and_cpu_pools_are_accepted_on_every_cloud() -> None:
    for provider, block in BLOCKS.items():
        assert check_pool("k", provider, "g", nvidia(provider, accel={"type": "nvidia-l4", "count": 1})) == []
        assert check_pool("k", provider, "c", cls(cpu_class("c", provider, dict(block)))) == []


def test_check_fleet_reports_every_pool_that_uses_a_bad_class() -> None:
    bad = gpu_class(
        "bad", "Vultr", {"plan": "x", "accelerator": {"type": "amd-mi300x", "count": 1}}, driver="gpu.amd.com"
    )
    fleet = fleet_of(
        {
            "classes": [bad],
            "clusters": [
                {
                    "name": f"v{i}",
                    "source": "Vultr",
                    "vultr": {"region": "ewr", "kubernetesVersion": "v1.36.2+1"},
                    "nodePools": [{"name": "p", "className": "bad"}],
                }
                for i in range(2)
            ],
        }
    )
    assert [(v.cluster, v.policy) for v in check_fleet(fleet)] == [
        ("v0", UNSUPPORTED_DEVICES),
        ("v1", UNSUPPORTED_DEVICES),
    ]


def test_pool_facts_follow_role_for_gpu_and_cpu() -> None:
    fleet = fleet_of(
        {
            "classes": [
                gpu_class("g", "GKE", {"machineType": "g2", "accelerator": {"type": "nvidia-l4", "count": 1}}),
                cpu_class("c", "GKE", {"machineType": "c3"}),
            ],
            "clusters": [
                {
                    "name": "k",
                    "source": "GKE",
                    "gke": {"project": "my-project", "region": "us-central1", "kubernetesVersion": "1.36"},
                    "nodePools": [{"name": "a", "className": "g"}, {"name": "b", "className": "c"}],
                }
            ],
        }
    )
    [facts] = derive_fleet(fleet)
    system, gpu, cpu = facts.pools
    assert (system.role, system.labels, system.taints) == ("System", {"modelplane.ai/pool": "system"}, ())
    assert gpu.labels["modelplane.ai/gpu"] == "nvidia-l4"
    assert [(t.key, t.value, t.effect) for t in gpu.taints] == [("nvidia.com/gpu", "present", "NoSchedule")]
    assert cpu.labels == {"modelplane.ai/pool": "b", "modelplane.ai/cpu": "true"}
    assert cpu.accelerator is None
    assert [t.as_json() for t in cpu.taints] == [{"key": "modelplane.ai/cpu", "value": "true", "effect": "NoSchedule"}]


# --- Each rule's boundary, on both sides, with the rule identified by its message ---------------

DRA_CPU_IN_GPU_CLASS = "the class claims dra.cpu next to a GPU driver; dra-driver-cpu runs only on CPU pools"


@pytest.mark.parametrize(
    "drivers",
    [["gpu.nvidia.com", "dra.cpu"], ["dra.cpu", "gpu.amd.com"], ["dra.cpu", "dra.net", "gpu.nvidia.com"]],
)
def test_dra_cpu_next_to_a_gpu_driver_makes_a_gpu_role_not_a_cpu_one(drivers: list[str]) -> None:
    assert role_of(drivers) == "GPU"


def test_dra_cpu_in_a_gpu_class_is_rejected_by_the_gpu_class_rule_alone() -> None:
    raw = gpu_class("g", "GKE", {"machineType": "g2", "accelerator": {"type": "nvidia-l4", "count": 1}})
    raw["devices"].append({"name": "cpu", "driver": "dra.cpu", "deviceClassName": "dra.cpu"})
    found = check_pool("k", "GKE", "p", cls(raw))
    assert [(v.policy, v.driver, v.problem) for v in found] == [
        (ACCELERATOR_DRIVER_MISMATCH, "dra.cpu", DRA_CPU_IN_GPU_CLASS)
    ]


@pytest.mark.parametrize(
    ("devices", "accelerators", "problem"),
    [
        (1, 2, "the class claims 1 GPU devices but accelerator.count is 2"),
        (2, 1, "the class claims 2 GPU devices but accelerator.count is 1"),
        (7, 8, "the class claims 7 GPU devices but accelerator.count is 8"),
    ],
)
def test_gpu_device_count_other_than_accelerator_count_is_rejected(
    devices: int, accelerators: int, problem: str
) -> None:
    c = nvidia("GKE", count=devices, accel={"type": "nvidia-l4", "count": accelerators})
    assert [(v.policy, v.problem) for v in check_pool("k", "GKE", "gpu", c)] == [(ACCELERATOR_DRIVER_MISMATCH, problem)]


@pytest.mark.parametrize("count", [1, 2, 8])
def test_gpu_device_count_equal_to_accelerator_count_is_accepted(count: int) -> None:
    c = nvidia("GKE", count=count, accel={"type": "nvidia-l4", "count": count})
    assert check_pool("k", "GKE", "gpu", c) == []


def test_gpu_devices_are_counted_across_devices_and_synthetic_ones_are_not() -> None:
    block = {"machineType": "a3-highgpu-8g", "accelerator": {"type": "nvidia-h100", "count": 8}}
    raw = gpu_class("h100", "GKE", block, count=4)
    raw["devices"].append({"name": "gpu2", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com", "count": 4})
    assert check_pool("k", "GKE", "p", cls(raw)) == []
    raw["devices"].append({"name": "nic", "claim": "Synthetic", "driver": "gpu.nvidia.com", "count": 8})
    assert check_pool("k", "GKE", "p", cls(raw)) == []


def test_class_of_another_provider_is_not_checked_against_that_providers_block() -> None:
    # The EKS block sets no accelerator, so on EKS this class would break the accelerator rule;
    # on GKE it is the wrong class, and only that is reported (the GKE checks need a GKE block).
    c = nvidia("EKS", accel=None)
    found = check_pool("k", "GKE", "p", c)
    assert [(v.policy, v.problem) for v in found] == [
        (CLASS_PROVIDER_MISMATCH, "the class provisions on EKS but the cluster's source is GKE")
    ]
    assert found[0].fix == "reference a class whose provisioning.provider is GKE, or add a GKE class"


def test_cpu_class_of_another_provider_with_an_accelerator_reports_only_the_provider() -> None:
    c = cls(cpu_class("cpu", "AKS", {"vmSize": "Standard_D8s_v5", "accelerator": {"type": "nvidia-a100", "count": 1}}))
    assert policies(check_pool("k", "Civo", "p", c)) == [CLASS_PROVIDER_MISMATCH]


def test_accelerator_vendor_mismatch_names_both_vendors() -> None:
    c = nvidia("AKS", accel={"type": "amd-mi300x", "count": 1})
    [v] = check_pool("k", "AKS", "gpu", c)
    assert (v.policy, v.driver, v.problem) == (
        ACCELERATOR_DRIVER_MISMATCH,
        "gpu.nvidia.com",
        "accelerator amd-mi300x is a amd GPU but the class claims gpu.nvidia.com",
    )
    assert v.fix == "claim the amd driver, or set an accelerator of vendor nvidia"


TWO_VENDORS = [
    {"name": "n", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com"},
    {"name": "a", "driver": "gpu.amd.com", "deviceClassName": "gpu.amd.com"},
    {"name": "efa", "driver": "dra.net", "deviceClassName": "efa.networking.k8s.aws"},
]


def _found(source: str, c: InferenceClass) -> list[tuple[str, str | None, str, str]]:
    return [(v.policy, v.driver, v.problem, v.fix) for v in check_pool("k", source, "p", c)]


def test_every_rule_states_its_problem_and_fix() -> None:
    assert _found("GKE", nvidia("GKE", count=1, accel=None)) == [
        (
            ACCELERATOR_DRIVER_MISMATCH,
            "gpu.nvidia.com",
            "the class claims gpu.nvidia.com but its GKE block sets no accelerator, so its nodes would get no GPU",
            "set provisioning.gke.accelerator {type, count} to the GPUs the machine carries",
        )
    ]
    cpu_with_gpu = cls(cpu_class("cpu", "GKE", {"machineType": "c3", "accelerator": {"type": "nvidia-l4", "count": 1}}))
    assert _found("GKE", cpu_with_gpu) == [
        (
            ACCELERATOR_DRIVER_MISMATCH,
            "dra.cpu",
            "the class claims only dra.cpu but sets accelerator nvidia-l4",
            "remove the accelerator for a CPU pool, or claim the GPU's DRA driver",
        )
    ]
    assert _found("GKE", nvidia("GKE", count=2, accel={"type": "nvidia-l4", "count": 1})) == [
        (
            ACCELERATOR_DRIVER_MISMATCH,
            "gpu.nvidia.com",
            "the class claims 2 GPU devices but accelerator.count is 1",
            "make the GPU devices' count equal accelerator.count",
        )
    ]
    amd = cls(
        gpu_class("amd", "Vultr", dict(BLOCKS["Vultr"], accelerator={"type": "amd-mi300x", "count": 1}), "gpu.amd.com")
    )
    assert _found("Vultr", amd) == [
        (
            UNSUPPORTED_DEVICES,
            "gpu.amd.com",
            "Vultr clusters cannot serve driver gpu.amd.com (supported: dra.cpu, gpu.nvidia.com)",
            "use a class whose DRA devices Vultr supports, or run this hardware on an Existing cluster",
        )
    ]
    assert _found("Civo", cls(cpu_class("cpu", None))) == [
        (
            CLASS_PROVIDER_MISMATCH,
            None,
            "the class has no provisioning but the cluster's source is Civo",
            "reference a class whose provisioning.provider is Civo, or add a Civo class",
        )
    ]
    raw = gpu_class("g", "GKE", {"machineType": "g2", "accelerator": {"type": "nvidia-l4", "count": 1}})
    raw["devices"].append({"name": "cpu", "driver": "dra.cpu", "deviceClassName": "dra.cpu"})
    assert _found("GKE", cls(raw)) == [
        (
            ACCELERATOR_DRIVER_MISMATCH,
            "dra.cpu",
            DRA_CPU_IN_GPU_CLASS,
            "remove the dra.cpu device, or move it to a CPU class of its own",
        )
    ]


TWO_VENDOR_PROBLEM = (
    ACCELERATOR_DRIVER_MISMATCH,
    "gpu.amd.com,gpu.nvidia.com",
    "the class claims GPUs of two vendors (gpu.amd.com, gpu.nvidia.com); a pool holds one vendor's GPUs",
    "split it into one class per vendor, each backing its own pool",
)


def test_two_gpu_vendors_on_existing_name_only_the_gpu_drivers() -> None:
    assert _found("Existing", cls({"name": "mixed", "devices": TWO_VENDORS})) == [TWO_VENDOR_PROBLEM]
    [v] = check_pool("lab", "Existing", "p", cls({"name": "mixed", "devices": TWO_VENDORS}))
    assert v.resource == "lab/p"
    assert v.message == (
        "cluster 'lab', pool 'p', class 'mixed': the class claims GPUs of two vendors (gpu.amd.com, gpu.nvidia.com); "
        "a pool holds one vendor's GPUs. Fix: split it into one class per vendor, each backing its own pool"
    )


def test_two_gpu_vendors_on_eks_name_both_drivers_in_every_rule() -> None:
    no_accel = cls({"name": "mixed", "devices": TWO_VENDORS, "provisioning": {"provider": "EKS", "eks": BLOCKS["EKS"]}})
    assert _found("EKS", no_accel) == [
        TWO_VENDOR_PROBLEM,
        (
            ACCELERATOR_DRIVER_MISMATCH,
            "gpu.amd.com,gpu.nvidia.com",
            "the class claims gpu.amd.com, gpu.nvidia.com but its EKS block sets no accelerator, "
            "so its nodes would get no GPU",
            "set provisioning.eks.accelerator {type, count} to the GPUs the machine carries",
        ),
        (
            UNSUPPORTED_DEVICES,
            "gpu.amd.com",
            "EKS clusters cannot serve driver gpu.amd.com (supported: dra.cpu, dra.net, gpu.nvidia.com)",
            "use a class whose DRA devices EKS supports, or run this hardware on an Existing cluster",
        ),
    ]
    block = dict(BLOCKS["EKS"], accelerator={"type": "nvidia-l4", "count": 1})
    with_accel = cls({"name": "mixed", "devices": TWO_VENDORS, "provisioning": {"provider": "EKS", "eks": block}})
    assert [f[:3] for f in _found("EKS", with_accel)] == [
        TWO_VENDOR_PROBLEM[:3],
        (
            ACCELERATOR_DRIVER_MISMATCH,
            "gpu.amd.com,gpu.nvidia.com",
            "the class claims 2 GPU devices but accelerator.count is 1",
        ),
        (
            UNSUPPORTED_DEVICES,
            "gpu.amd.com",
            "EKS clusters cannot serve driver gpu.amd.com (supported: dra.cpu, dra.net, gpu.nvidia.com)",
        ),
    ]


def test_existing_ignores_a_provisioning_block_that_would_break_the_accelerator_rules() -> None:
    # On GKE each of these is rejected; an Existing cluster's owner brought the nodes.
    assert check_pool("byo", "Existing", "p", nvidia("GKE", count=2, accel={"type": "amd-mi300x", "count": 1})) == []
    assert check_pool("byo", "Existing", "p", nvidia("GKE", count=1, accel=None)) == []
    cpu_with_gpu = cls(cpu_class("cpu", "GKE", {"machineType": "c3", "accelerator": {"type": "nvidia-l4", "count": 1}}))
    assert check_pool("byo", "Existing", "p", cpu_with_gpu) == []


def test_pool_whose_class_claims_no_compute_device_is_rejected_at_load_with_its_path() -> None:
    net_only = {"name": "net", "devices": [{"name": "efa", "driver": "dra.net", "deviceClassName": "efa"}]}
    pools = [{"name": "cpu", "className": "cpu"}, {"name": "efa", "className": "net"}]
    raw = {
        "classes": [cpu_class("cpu", None), net_only],
        "clusters": [
            {"name": "a", "source": "Existing", "existing": {"kubernetesVersion": "1.36"}, "nodePools": pools[:1]},
            {"name": "b", "source": "Existing", "existing": {"kubernetesVersion": "1.36"}, "nodePools": pools},
        ],
    }
    with pytest.raises(ConfigError) as err:
        fleet_of(raw)
    assert [(i.path, i.problem) for i in err.value.issues] == [
        ("clusters[1].nodePools[1].className", "class 'net' claims no CPU or GPU DRA device, so it cannot back a pool")
    ]


@pytest.mark.parametrize(
    ("source", "region", "zone", "problem"),
    [
        ("GKE", "us-central1", "us-central1-a", None),
        (
            "GKE",
            "us-central1",
            "us-east1-b",
            "zone 'us-east1-b' is in region us-east1, not in the cluster's region us-central1",
        ),
        ("GKE", "us-central1", "central-a", "'central-a' is not a GKE zone name"),
        ("EKS", "us-east-1", "us-east-1a", None),
        (
            "EKS",
            "us-east-1",
            "us-west-2b",
            "zone 'us-west-2b' is in region us-west-2, not in the cluster's region us-east-1",
        ),
        ("EKS", "us-east-1", "use1-az1", "'use1-az1' is not a EKS zone name"),
        # Letters a region does not have: a fifth zone letter in a GCP region, a seventh AZ in us-east-1.
        (
            "GKE",
            "us-central1",
            "us-central1-e",
            "zone 'us-central1-e' is not a zone of us-central1 in the zone catalog",
        ),
        (
            "GKE",
            "europe-west1",
            "europe-west1-a",
            "zone 'europe-west1-a' is not a zone of europe-west1 in the zone catalog",
        ),
        ("GKE", "us-central1", "us-central1-f", None),
        ("EKS", "us-east-1", "us-east-1f", None),
        ("EKS", "us-east-1", "us-east-1g", "zone 'us-east-1g' is not a zone of us-east-1 in the zone catalog"),
        ("EKS", "ca-central-1", "ca-central-1d", None),
        ("EKS", "eu-west-1", "eu-west-1d", "zone 'eu-west-1d' is not a zone of eu-west-1 in the zone catalog"),
        # A region the catalog does not list is checked against the zone form only.
        ("GKE", "us-west8", "us-west8-e", None),
        ("AKS", "eastus", "2", None),
        ("AKS", "eastus", "eastus-1", "AKS zones are the location's zone numbers 1, 2 or 3, not 'eastus-1'"),
        ("Civo", "LON1", "a", "Civo clusters have no zones inside a region, so zone 'a' cannot be honoured"),
        ("Vultr", "ewr", "a", "Vultr clusters have no zones inside a region, so zone 'a' cannot be honoured"),
    ],
)
def test_a_zone_is_checked_in_its_clouds_form(source: str, region: str, zone: str, problem: str | None) -> None:
    assert zone_problem(source, region, zone) == problem


@pytest.mark.parametrize(
    ("source", "region", "zone"), [("GKE", "us-central1", "us-central1-e"), ("EKS", "us-east-1", "us-east-1g")]
)
def test_a_zone_the_catalog_does_not_list_is_taken_when_the_pool_says_so(source: str, region: str, zone: str) -> None:
    assert zone_problem(source, region, zone, uncatalogued=True) is None
    # The region is still the cluster's: the catalog is what the flag sets aside, not the region.
    assert zone_problem(
        source, region, zone.replace(region, "asia-east1" if source == "GKE" else "ap-east-1"), uncatalogued=True
    )

"""Device rules: every accepted and rejected shape, with the policy, pool, class and driver named."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import InferenceClass
from infra.devices import (
    ACCELERATOR_DRIVER_MISMATCH,
    CLASS_PROVIDER_MISMATCH,
    UNSUPPORTED_DEVICES,
    check_fleet,
    check_pool,
    claimed_drivers,
    cluster_dra_drivers,
    role_of,
)
from infra.facts import derive_fleet
from tests.conftest import cpu_class, fleet_of, gpu_class

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
                    "gke": {"project": "p", "region": "r", "kubernetesVersion": "1.36"},
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
    c = nvidia("GKE", count=8, accel=None)
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


@pytest.mark.parametrize("provider", ["GKE", "EKS", "AKS", "Civo", "Vultr"])
def test_amd_driver_is_unsupported_on_every_provisioned_cloud(provider: str) -> None:
    block = dict(BLOCKS[provider], accelerator={"type": "amd-mi300x", "count": 1})
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
                    "gke": {"project": "p", "region": "r", "kubernetesVersion": "1.36"},
                    "nodePools": [{"name": "a", "className": "g"}, {"name": "b", "className": "c"}],
                }
            ],
        }
    )
    [facts] = derive_fleet(fleet)
    system, gpu, cpu = facts.pools
    assert (system.role, system.labels, system.taints) == ("System", {"modelplane.ai/pool": "system"}, ())
    assert gpu.labels["modelplane.ai/gpu"] == "nvidia-l4"
    assert [(t.key, t.value, t.effect, t.set_by_cloud) for t in gpu.taints] == [
        ("nvidia.com/gpu", "present", "NoSchedule", False)
    ]
    assert cpu.labels == {"modelplane.ai/pool": "b", "modelplane.ai/cpu": "true"}
    assert cpu.accelerator is None
    assert [t.as_json() for t in cpu.taints] == [{"key": "modelplane.ai/cpu", "value": "true", "effect": "NoSchedule"}]

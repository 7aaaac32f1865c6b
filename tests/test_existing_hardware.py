"""An Existing cluster may say what its nodes are: their GPUs, and the Kubernetes version they run.

A class that declares its accelerator is held to it by the device rules as a provisioned class is;
a cluster whose pools claim consumable capacity must say which version it runs, and the 1.36 floor
applies to it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from clouds import ACCELERATOR_TYPES, MACHINES
from infra.checks.devices import ACCELERATOR_DRIVER_MISMATCH, ACCELERATOR_TYPE_UNKNOWN
from infra.checks.machines import fleet_violations
from infra.config.issues import ConfigError, ConfigIssue, located
from infra.config.stackfile import load_stack_file
from infra.facts import derive_cluster
from tests.conftest import cpu_class, fleet_of, gke_fleet


def byo(cls: dict[str, Any], version: str | None = "1.36") -> dict[str, Any]:
    block: dict[str, Any] = {"kubeconfigKey": "kubeconfig"}
    if version is not None:
        block["kubernetesVersion"] = version
    return {
        "classes": [cls],
        "clusters": [
            {
                "name": "byo",
                "source": "Existing",
                "existing": block,
                "nodePools": [{"name": "p", "className": cls["name"]}],
            }
        ],
    }


def gpu(driver: str, count: int = 8, accelerator: dict[str, Any] | None = None) -> dict[str, Any]:
    cls: dict[str, Any] = {
        "name": "mi300x",
        "devices": [{"name": "gpu", "driver": driver, "deviceClassName": driver, "count": count}],
    }
    if accelerator is not None:
        cls["accelerator"] = accelerator
    return cls


MI300X = {"type": "amd-mi300x", "count": 8}
FILE = "Pulumi.test.yaml"  # the file `fleet_of` names


def test_an_nvidia_driver_on_a_declared_mi300x_class_is_refused() -> None:
    [v] = fleet_violations(fleet_of(byo(gpu("gpu.nvidia.com", accelerator=MI300X))))
    assert (v.policy, v.mandatory) == (ACCELERATOR_DRIVER_MISMATCH, True)
    assert "accelerator amd-mi300x is a amd GPU but the class claims gpu.nvidia.com" in v.message


def test_a_declared_gpu_count_must_equal_the_devices_the_class_claims() -> None:
    [v] = fleet_violations(fleet_of(byo(gpu("gpu.amd.com", count=4, accelerator=MI300X))))
    assert "the class claims 4 GPU devices but accelerator.count is 8" in v.message


def test_a_declared_accelerator_names_the_pools_gpus() -> None:
    fleet = fleet_of(byo(gpu("gpu.amd.com", accelerator=MI300X)))
    assert fleet_violations(fleet) == []
    pool = derive_cluster(fleet, fleet.clusters[0]).pool("p")
    assert pool.labels["modelplane.ai/gpu"] == "amd-mi300x"
    assert pool.accelerator is not None and pool.accelerator.count == 8


def test_an_undeclared_existing_class_is_named_by_its_vendor_as_before() -> None:
    fleet = fleet_of(byo(gpu("gpu.amd.com")))
    assert fleet_violations(fleet) == []
    assert derive_cluster(fleet, fleet.clusters[0]).pool("p").labels["modelplane.ai/gpu"] == "amd-gpu"


@pytest.mark.parametrize(
    ("written", "meant", "vendor"),
    [("amd-mi300", "amd-mi300x", "gpu.amd.com"), ("nvidia-h10O", "nvidia-h100", "gpu.nvidia.com")],
)
def test_a_misspelt_accelerator_type_is_refused_at_its_path_with_the_nearest_names(
    written: str, meant: str, vendor: str
) -> None:
    [v] = located(fleet_violations(fleet_of(byo(gpu(vendor, accelerator={"type": written, "count": 8})))), FILE)
    assert (v.policy, v.mandatory) == (ACCELERATOR_TYPE_UNKNOWN, True)
    assert v.path == "classes[name=mi300x].accelerator.type"
    assert f"accelerator type '{written}' is not in the accelerator vocabulary" in v.problem
    assert v.fix.startswith(f"did you mean '{meant}'")
    # The fix lists the vendor's known names, and how to take a type the vocabulary lacks.
    prefix = written.split("-")[0]
    assert f"Write one of {', '.join(t for t in ACCELERATOR_TYPES if t.startswith(prefix + '-'))};" in v.fix
    assert v.fix.endswith("set classes[name=mi300x].uncataloguedAccelerator: true")
    assert v.message.startswith(f"{FILE}: ")


def test_every_type_of_the_vocabulary_is_taken_and_becomes_the_pools_label() -> None:
    for accel_type in ACCELERATOR_TYPES:
        driver = "gpu.amd.com" if accel_type.startswith("amd-") else "gpu.nvidia.com"
        fleet = fleet_of(byo(gpu(driver, accelerator={"type": accel_type, "count": 8})))
        assert fleet_violations(fleet) == [], accel_type
        assert derive_cluster(fleet, fleet.clusters[0]).pool("p").labels["modelplane.ai/gpu"] == accel_type


def test_the_vocabulary_holds_the_catalogs_nvidia_names_and_amds_instinct_products() -> None:
    nvidia = {t for t in ACCELERATOR_TYPES if t.startswith("nvidia-")}
    assert nvidia == {t for m in MACHINES for t in m.accelerator_types if t.startswith("nvidia-")} | {"nvidia-gpu"}
    assert len(nvidia - {"nvidia-gpu"}) == 14
    # ROCm/gpu-operator v1.5.1 helm-charts-k8s/templates/gpu-nfd-default-rule.yaml, rule amd-gpu (Instinct).
    instinct = [
        "mi100",
        "mi210",
        "mi250",
        "mi250x",
        "mi300a",
        "mi300x",
        "mi308x",
        "mi325x",
        "mi350p",
        "mi350x",
        "mi355x",
    ]
    assert [t for t in ACCELERATOR_TYPES if t.startswith("amd-")] == ["amd-gpu"] + [f"amd-{p}" for p in instinct]


def test_a_type_the_vocabulary_lacks_is_taken_as_written_when_the_class_says_so() -> None:
    cls = gpu("gpu.amd.com", accelerator={"type": "amd-mi455x", "count": 8})
    assert [v.policy for v in fleet_violations(fleet_of(byo(cls)))] == [ACCELERATOR_TYPE_UNKNOWN]
    fleet = fleet_of(byo({**cls, "uncataloguedAccelerator": True}))
    assert fleet_violations(fleet) == []
    assert derive_cluster(fleet, fleet.clusters[0]).pool("p").labels["modelplane.ai/gpu"] == "amd-mi455x"


def test_the_existing_clusters_guide_lists_the_whole_vocabulary() -> None:
    guide = (Path(__file__).resolve().parents[1] / "docs" / "existing-clusters.md").read_text(encoding="utf-8")
    section = guide.split("vendor-only names:", 1)[1].lstrip("\n").split("\n\n", 1)[0]
    assert sorted(re.findall(r"`([a-z0-9-]+)`", section)) == sorted(ACCELERATOR_TYPES)


def test_a_provisioned_class_names_its_accelerator_in_its_provisioning_block() -> None:
    raw = gke_fleet()
    raw["classes"][0]["accelerator"] = {"type": "nvidia-l4", "count": 1}
    with pytest.raises(ConfigError) as err:
        fleet_of(raw)
    assert err.value.issues == [
        ConfigIssue(
            "classes[0].accelerator",
            "the class provisions on GKE, whose machine block names the accelerator",
            "move it to classes[0].provisioning.gke.accelerator (a class-level accelerator describes an Existing "
            "cluster's nodes)",
            file=FILE,
        )
    ]


VERSION_PATH = "clusters[0].existing.kubernetesVersion"
CLAIMING = "pool 'p' (class 'cpu') claims capacity dra.cpu/cpu"


def version_issues(version: str | None) -> list[ConfigIssue]:
    with pytest.raises(ConfigError) as err:
        fleet_of(byo(cpu_class("cpu", None), version=version))
    return err.value.issues


def test_an_existing_cluster_whose_pools_claim_capacity_must_say_its_version() -> None:
    assert version_issues(None) == [
        ConfigIssue(
            VERSION_PATH,
            f"{CLAIMING}, which schedules only from Kubernetes 1.36 (the DRAConsumableCapacity gate), but the "
            "cluster does not say which version it runs",
            'set kubernetesVersion to the version the cluster runs (`kubectl version`), e.g. kubernetesVersion: "1.36"',
            file=FILE,
        )
    ]


@pytest.mark.parametrize(("version", "refused"), [("1.35", True), ("1.36", False), ("v1.36.2", False)])
def test_the_capacity_floor_applies_to_an_existing_clusters_declared_version(version: str, refused: bool) -> None:
    if not refused:
        assert fleet_of(byo(cpu_class("cpu", None), version=version)).clusters[0].name == "byo"
        return
    assert version_issues(version) == [
        ConfigIssue(
            VERSION_PATH,
            f"{CLAIMING}, which needs the DRAConsumableCapacity feature gate: off before Kubernetes 1.36, so on "
            f"{version} the claim never schedules",
            "use Kubernetes 1.36 or newer on this cluster, where the gate is on by default",
            file=FILE,
        )
    ]


@pytest.mark.parametrize(
    ("version", "problem", "fix"),
    [
        ("latest", "'latest' is not a Kubernetes version", "write it as the cloud does, e.g. 1.34 or 1.34.1-k3s1"),
        ("1.33", "Kubernetes 1.33 predates DRA's v1 API (GA in 1.34)", "use 1.34 or newer"),
    ],
)
def test_a_declared_version_that_is_no_version_or_predates_dra_is_the_one_issue(
    version: str, problem: str, fix: str
) -> None:
    # Held to the version rules a provisioned cluster's version is; the capacity floor is not
    # reported on top of them.
    assert version_issues(version) == [ConfigIssue(VERSION_PATH, problem, fix, file=FILE)]


def test_an_existing_cluster_without_capacity_claims_needs_no_version() -> None:
    assert fleet_of(byo(gpu("gpu.amd.com"), version=None)).clusters[0].source == "Existing"


def test_a_missing_kubeconfig_is_reported_in_the_same_run_as_another_mistake(tmp_path: Path) -> None:
    # A deployment's cache mistake once hid the missing kubeconfig until the next run.
    raw = byo(cpu_class("cpu", None))
    raw["deployments"] = [
        {
            "name": "qwen",
            "cluster": "byo",
            "pool": "p",
            "image": "vllm/vllm-openai-cpu:v0.23.0-x86_64",
            "devices": [{"name": "cpu"}],
            "cache": {"volume": "PersistentVolumeClaim"},  # no size: a mistake of its own
        }
    ]
    path = tmp_path / "Pulumi.byo.yaml"
    path.write_text(yaml.safe_dump({"config": {f"modelplane:{k}": v for k, v in raw.items()}}), encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_stack_file(path, display="Pulumi.byo.yaml")
    paths = [i.path for i in err.value.issues]
    assert "deployments[0].cache" in paths
    assert "clusters[0].existing.kubeconfigKey" in paths

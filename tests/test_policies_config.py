"""Config-level policies reach the program guard's verdict on the inputs the cluster component registers."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pulumi
import pytest
from pulumi_policy import ResourceValidationPolicy
from pulumi_policy.proxy import UnknownValueError

from clouds import cloud
from components.base import policy_inputs
from infra.checks.devices import (
    ACCELERATOR_DRIVER_MISMATCH,
    CLASS_PROVIDER_MISMATCH,
    UNSUPPORTED_DEVICES,
    ZONE_OUTSIDE_REGION,
)
from infra.checks.guard import guard
from infra.checks.machines import fleet_violations
from infra.config.stackfile import located_checked
from infra.facts import derive_cluster
from policies.config_rules import CONFIG_POLICIES, _validator
from policies.pack import POLICIES_BY_NAME
from tests.conftest import cpu_class, fleet_of, gpu_class, run_fleet
from tests.policy_harness import UNKNOWN_ARRAY_VALUE, resource_args, run

accelerator_driver_mismatch = POLICIES_BY_NAME[ACCELERATOR_DRIVER_MISMATCH]
class_provider_mismatch = POLICIES_BY_NAME[CLASS_PROVIDER_MISMATCH]
unsupported_devices_policy = POLICIES_BY_NAME[UNSUPPORTED_DEVICES]

GKE = {"project": "my-project", "region": "us-central1", "kubernetesVersion": "1.36"}
VULTR = {"region": "ewr", "kubernetesVersion": "v1.36.2+1"}
L4 = {"machineType": "g2-standard-8", "accelerator": {"type": "nvidia-l4", "count": 1}}


def cluster(name: str, source: str, block: dict[str, Any], pools: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "name": name,
        "source": source,
        source.lower(): block,
        "nodePools": [{"name": p, "className": c} for p, c in pools],
    }


def registered_cluster_props(raw: dict[str, Any], name: str) -> dict[str, Any]:
    """The inputs the program registers on a cluster component (`components.base.policy_inputs`)."""
    fleet = fleet_of(raw)
    specs = {c.name: c.model_dump(by_alias=True, mode="json", exclude_none=True) for c in fleet.classes}
    return policy_inputs(derive_cluster(fleet, fleet.cluster_named(name)), specs)


def pack_verdict(raw: dict[str, Any]) -> set[tuple[str, str]]:
    """(policy, message) for every config-level violation the pack reports on each cluster component."""
    found = set()
    for c in fleet_of(raw).clusters:
        token = cloud(c.source).component_token
        props = registered_cluster_props(raw, c.name)
        for policy in CONFIG_POLICIES:
            found |= {(policy.name, m) for m in run(policy, resource_args(token, props, name=c.name, policy=policy))}
    return found


def guard_verdict(raw: dict[str, Any], mandatory_only: bool = False) -> set[tuple[str, str]]:
    """What the guard evaluates, unlocated as the pack reports it; it stops the run on the mandatory ones only."""
    found = [replace(v, file="") for v in fleet_violations(fleet_of(raw))]
    # The guard locates device-rule violations by config index, which the pack never sees.
    unlocated = [
        replace(v, path="") if not v.path.startswith(("classes[name=", "clusters[name=")) else v for v in found
    ]
    return {(v.policy, v.message) for v in unlocated if v.mandatory or not mandatory_only}


BAD_FLEETS = {
    # A machine the catalog does not know supplies no accelerator.
    "gpu class without accelerator": {
        "classes": [gpu_class("l4-bare", "GKE", {"machineType": "g2-custom-8", "uncatalogued": True})],
        "clusters": [cluster("gke-a", "GKE", GKE, [("gpu", "l4-bare")])],
    },
    "accelerator count differs from devices": {
        "classes": [gpu_class("l4-two", "GKE", L4, count=2)],
        "clusters": [cluster("gke-a", "GKE", GKE, [("gpu", "l4-two")])],
    },
    "amd on vultr": {
        "classes": [
            gpu_class(
                "mi325x",
                "Vultr",
                {"plan": "vbm-256c", "accelerator": {"type": "amd-mi325x", "count": 1}},
                "gpu.amd.com",
            )
        ],
        "clusters": [cluster("vultr-a", "Vultr", VULTR, [("amd", "mi325x")])],
    },
    "misspelt accelerator type on an existing cluster": {
        "classes": [{"name": "mi300x-byo", "accelerator": {"type": "amd-mi300", "count": 8}}],
        "clusters": [cluster("byo", "Existing", {"kubeconfigKey": "kubeconfig"}, [("mi300x", "mi300x-byo")])],
    },
    "class provisioned on another cloud": {
        "classes": [cpu_class("civo-cpu", "Civo", {"size": "g4p.kube.medium"})],
        "clusters": [cluster("gke-a", "GKE", GKE, [("cpu", "civo-cpu")])],
    },
}


@pytest.mark.parametrize("case", sorted(BAD_FLEETS))
def test_pack_and_guard_reject_the_same_violations(case: str) -> None:
    raw = BAD_FLEETS[case]
    expected = guard_verdict(raw)
    assert expected, "the case must break a device rule"
    assert pack_verdict(raw) == expected
    # The program stops on the mandatory ones, naming each; advisory ones never stop it.
    error = run_fleet(raw).error
    assert isinstance(error, pulumi.RunError)
    for v in located_checked(guard(fleet_of(raw)), "Pulumi.test.yaml").violations:
        assert (f"[{v.policy}] {v.message}" in str(error)) == v.mandatory


def test_program_registers_nothing_for_a_fleet_the_pack_rejects() -> None:
    result = run_fleet(BAD_FLEETS["amd on vultr"])
    assert isinstance(result.error, pulumi.RunError)
    assert result.resources == []


def test_gpu_class_without_accelerator_is_rejected_as_accelerator_driver_mismatch() -> None:
    verdict = pack_verdict(BAD_FLEETS["gpu class without accelerator"])
    assert {p for p, _ in verdict} == {accelerator_driver_mismatch.name}


def test_amd_class_on_vultr_is_rejected_as_unsupported_devices() -> None:
    verdict = pack_verdict(BAD_FLEETS["amd on vultr"])
    assert unsupported_devices_policy.name in {p for p, _ in verdict}
    assert any("gpu.amd.com" in m for _, m in verdict)


def test_class_of_another_cloud_is_rejected_as_class_provider_mismatch() -> None:
    verdict = pack_verdict(BAD_FLEETS["class provisioned on another cloud"])
    assert {p for p, _ in verdict} == {class_provider_mismatch.name}


def test_sound_provisioned_fleet_passes_every_config_policy() -> None:
    raw = {
        "classes": [gpu_class("l4", "GKE", L4), cpu_class("gke-cpu", "GKE", {"machineType": "c3-standard-8"})],
        "clusters": [cluster("gke-a", "GKE", GKE, [("gpu", "l4"), ("cpu", "gke-cpu")])],
    }
    assert guard_verdict(raw) == set()
    assert pack_verdict(raw) == set()


def test_existing_cluster_with_unprovisioned_amd_class_is_accepted() -> None:
    raw = {
        "classes": [
            {
                "name": "mi325x-byo",
                "devices": [{"name": "gpu", "driver": "gpu.amd.com", "deviceClassName": "gpu.amd.com"}],
            }
        ],
        "clusters": [cluster("byo", "Existing", {}, [("amd", "mi325x-byo")])],
    }
    assert pack_verdict(raw) == guard_verdict(raw) == set()


def test_counts_arrive_as_floats_and_still_match() -> None:
    props = registered_cluster_props(BAD_FLEETS["accelerator count differs from devices"], "gke-a")
    args = resource_args("modelplane:gke:GkeCluster", props, name="gke-a")
    assert args.props["pools"][1]["class"]["devices"][0]["count"] == 2.0
    assert any("2 GPU devices but accelerator.count is 1" in m for m in run(accelerator_driver_mismatch, args))


def test_unknown_pools_during_preview_raise_for_an_advisory_diagnostic() -> None:
    args = resource_args("modelplane:gke:GkeCluster", {"source": "GKE", "pools": UNKNOWN_ARRAY_VALUE}, name="gke-a")
    with pytest.raises(UnknownValueError):
        run(accelerator_driver_mismatch, args)


def test_other_resource_types_are_ignored() -> None:
    args = resource_args("kubernetes:helm.sh/v3:Release", {"source": "GKE", "pools": [{"name": "x"}]})
    assert run(unsupported_devices_policy, args) == []


# Each config policy is `_validator(<its name>)` over the one verdict of `cluster_violations`.

TWO_RULES_BROKEN = {
    "classes": [
        gpu_class("l4-bare", "GKE", {"machineType": "g2-custom-8", "uncatalogued": True}),
        cpu_class("civo-cpu", "Civo", {"size": "g4p.kube.medium"}),
    ],
    "clusters": [cluster("gke-a", "GKE", GKE, [("gpu", "l4-bare"), ("cpu", "civo-cpu")])],
}

OWN_MESSAGES = {
    ACCELERATOR_DRIVER_MISMATCH: [
        "cluster 'gke-a', pool 'gpu', class 'l4-bare': the class claims gpu.nvidia.com but its GKE block sets no "
        "accelerator, so its nodes would get no GPU. Fix: set provisioning.gke.accelerator {type, count} to the "
        "GPUs the machine carries"
    ],
    CLASS_PROVIDER_MISMATCH: [
        "cluster 'gke-a', pool 'cpu', class 'civo-cpu': the class provisions on Civo but the cluster's source is "
        "GKE. Fix: reference a class whose provisioning.provider is GKE, or add a GKE class"
    ],
    UNSUPPORTED_DEVICES: [],
}


def validated(policy_name: str, token: str, props: dict[str, Any], name: str = "gke-a") -> list[str]:
    policy = ResourceValidationPolicy(name=policy_name, description=policy_name, validate=_validator(policy_name))
    return run(policy, resource_args(token, props, name=name))


@pytest.mark.parametrize("policy_name", sorted(OWN_MESSAGES))
def test_config_policy_reports_exactly_the_violations_of_its_own_name(policy_name: str) -> None:
    props = registered_cluster_props(TWO_RULES_BROKEN, "gke-a")
    assert validated(policy_name, "modelplane:gke:GkeCluster", props) == OWN_MESSAGES[policy_name]


def test_config_policy_ignores_resources_that_are_not_cluster_components() -> None:
    props = registered_cluster_props(TWO_RULES_BROKEN, "gke-a")
    assert validated(ACCELERATOR_DRIVER_MISMATCH, "modelplane:stack:ServingStack", props) == []


@pytest.mark.parametrize("props", [{"source": "GKE"}, {"pools": []}, {}])
def test_cluster_component_without_source_or_pools_is_reported_by_name(props: dict[str, Any]) -> None:
    assert validated(CLASS_PROVIDER_MISMATCH, "modelplane:gke:GkeCluster", props, name="gke-b") == [
        "cluster component gke-b registers no 'source' or 'pools', which the pack reads "
        "(components.base.policy_inputs); the pack cannot check its pools"
    ]


def test_a_source_that_is_not_a_cloud_name_is_reported_by_name_and_type() -> None:
    props = registered_cluster_props(TWO_RULES_BROKEN, "gke-a")
    props["source"] = ["GKE"]
    assert validated(CLASS_PROVIDER_MISMATCH, "modelplane:gke:GkeCluster", props, name="gke-b") == [
        "cluster component gke-b registers a 'source' that is a list, not a cloud name "
        "(components.base.policy_inputs); the pack cannot check its pools"
    ]


def test_zones_of_a_cluster_component_that_registers_no_region_are_left_unchecked() -> None:
    raw = copy.deepcopy(TWO_RULES_BROKEN)
    raw["clusters"][0]["nodePools"][0]["zones"] = ["us-central1-a"]
    props = registered_cluster_props(raw, "gke-a")
    assert props["pools"][1]["zones"] == ["us-central1-a"]
    assert validated(ZONE_OUTSIDE_REGION, "modelplane:gke:GkeCluster", props) == []
    props["region"] = "europe-west4"
    assert validated(ZONE_OUTSIDE_REGION, "modelplane:gke:GkeCluster", props) == [
        "cluster 'gke-a', pool 'gpu', class 'l4-bare': zone 'us-central1-a' is in region us-central1, not in the "
        "cluster's region europe-west4 (at clusters[name=gke-a].nodePools[name=gpu].zones[0]). Fix: list only zones "
        "of europe-west4 (europe-west4-a, europe-west4-b, europe-west4-c) in the pool's zones, or drop zones to let "
        "the cloud choose"
    ]
    del props["region"]
    assert validated(ZONE_OUTSIDE_REGION, "modelplane:gke:GkeCluster", props) == []

"""The pack, run as the engine runs it (a `pulumi.policy` process spoken to over gRPC), on the program's output."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from infra.tooling.analyzer import PackViolation, PolicyPackError, run_policy_pack
from infra.tooling.mockrun import Registration
from tests.conftest import cpu_class, run_fleet

BYO = {
    "classes": [
        {
            "name": "mi325x-byo",
            "devices": [{"name": "gpu", "driver": "gpu.amd.com", "deviceClassName": "gpu.amd.com"}],
        },
        {
            "name": "h100-byo",
            "devices": [{"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com", "count": 8}],
        },
        cpu_class("cpu-byo", None, cpus="14"),
    ],
    "clusters": [
        {
            "name": "byo-lab",
            "source": "Existing",
            "existing": {"kubeconfigKey": "kubeconfig"},
            "nodePools": [
                {"name": "mi325x", "className": "mi325x-byo"},
                {"name": "h100", "className": "h100-byo"},
                {"name": "cpu", "className": "cpu-byo"},
            ],
        }
    ],
}


@pytest.fixture(scope="module")
def byo_resources() -> list[Registration]:
    result = run_fleet(BYO, stack="byo")
    assert result.error is None
    return result.resources


def mandatory(violations: list[PackViolation]) -> list[PackViolation]:
    return [v for v in violations if v.enforcement == "mandatory"]


def with_inputs(resources: list[Registration], name: str, edit: Any) -> list[Registration]:
    """The same resources, one of them with its inputs changed by `edit`."""
    out = []
    for r in resources:
        if r.name == name:
            inputs = copy.deepcopy(dict(r.inputs))
            edit(inputs)
            r = dataclasses.replace(r, inputs=inputs)
        out.append(r)
    return out


def test_existing_fleet_from_the_program_passes_the_pack(byo_resources: list[Registration]) -> None:
    assert run_policy_pack(byo_resources, stack="byo") == []


def test_amd_operator_with_kmm_on_is_a_mandatory_violation(byo_resources: list[Registration]) -> None:
    def kmm_on(inputs: dict[str, Any]) -> None:
        inputs["values"]["kmm"] = {"enabled": True, "watch": False}

    found = run_policy_pack(with_inputs(byo_resources, "byo-lab-stack-amd-gpu-operator", kmm_on), stack="byo")
    assert [(v.policy, v.enforcement, v.resource) for v in found] == [
        ("amd-operator-values", "mandatory", "byo-lab-stack-amd-gpu-operator")
    ]
    assert found[0].message.startswith("release mp-gpu-operator-charts: kmm.enabled must be false")


def test_release_removed_from_the_stack_is_a_stack_violation(byo_resources: list[Registration]) -> None:
    without = [r for r in byo_resources if r.name != "byo-lab-stack-dra-driver-cpu"]
    found = mandatory(run_policy_pack(without, stack="byo"))
    assert [(v.policy, v.resource) for v in found] == [("device-stack-filtered", "byo-lab-stack")]


def test_floating_image_is_rejected_through_the_engine_protocol(byo_resources: list[Registration]) -> None:
    def float_image(inputs: dict[str, Any]) -> None:
        inputs["values"]["image"] = "registry.k8s.io/dra-driver-cpu:latest"

    found = run_policy_pack(with_inputs(byo_resources, "byo-lab-stack-dra-driver-cpu", float_image), stack="byo")
    assert {(v.policy, v.enforcement) for v in found} == {("pinned-versions", "mandatory")}


def unprotected_cluster() -> Registration:
    token = "gcp:container/cluster:Cluster"
    return Registration(
        type=token,
        name="gke-a-cluster",
        parent=None,
        urn=f"urn:pulumi:byo::modelplane::{token}::gke-a-cluster",
        inputs={"location": "us-central1", "initialNodeCount": 1},
        custom=True,
    )


def test_unprotected_cluster_is_advisory_by_default() -> None:
    found = run_policy_pack([unprotected_cluster()], stack="byo")
    assert [(v.policy, v.enforcement) for v in found] == [("protect-clusters", "advisory")]


def test_unprotected_cluster_is_mandatory_when_the_pack_config_says_so() -> None:
    found = run_policy_pack([unprotected_cluster()], stack="byo", config={"protect-clusters": "mandatory"})
    assert [(v.policy, v.enforcement, v.resource) for v in found] == [
        ("protect-clusters", "mandatory", "gke-a-cluster")
    ]
    exempt = {"protect-clusters": {"enforcementLevel": "mandatory", "exemptResources": ["gke-a-cluster"]}}
    assert run_policy_pack([unprotected_cluster()], stack="byo", config=exempt) == []


def test_disabled_policy_reports_nothing() -> None:
    assert run_policy_pack([unprotected_cluster()], stack="byo", config={"all": "disabled"}) == []


def test_unknown_policy_in_pack_config_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown policies: no-such-policy"):
        run_policy_pack([], stack="byo", config={"no-such-policy": "mandatory"})


def test_a_pack_that_cannot_start_is_reported_with_its_error(tmp_path: Path) -> None:
    (tmp_path / "__main__.py").write_text("raise SystemExit('broken pack')\n")
    with pytest.raises(PolicyPackError, match="broken pack"):
        run_policy_pack([], stack="byo", pack_dir=tmp_path, timeout=30)

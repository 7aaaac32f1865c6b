"""Never delete to recover: a rule violation stops the run before any resource is registered.

In Pulumi, a resource the program stops registering is deleted by `pulumi up`. So a bad edit to a
class shared by running clusters must fail the whole run (nothing created, changed or deleted),
never complete with fewer resources.
"""

from __future__ import annotations

import copy
from typing import Any

import pulumi
import pytest

from tests.conftest import cpu_class, gpu_class, run_fleet
from tooling.mockrun import MockRun


def deployed_fleet() -> dict[str, Any]:
    clusters = [
        {
            "name": f"gke-{region}",
            "source": "GKE",
            "gke": {"project": "prod-project", "region": region, "kubernetesVersion": "1.36"},
            "nodePools": [{"name": "l4", "className": "l4-shared"}, {"name": "cpu", "className": "cpu"}],
        }
        for region in ("us-central1", "europe-west4")
    ]
    return {
        "protect": True,
        "classes": [
            gpu_class(
                "l4-shared", "GKE", {"machineType": "g2-standard-8", "accelerator": {"type": "nvidia-l4", "count": 1}}
            ),
            cpu_class("cpu", "GKE", {"machineType": "c3-standard-8"}),
        ],
        "clusters": clusters,
    }


def urns(result: MockRun) -> set[str]:
    return {r.urn for r in result.resources}


def assert_never_fewer(before: MockRun, after: MockRun) -> None:
    """The engine deletes only after a run that completes; a completed run must keep every resource."""
    if after.error is None:
        missing = urns(before) - urns(after)
        assert not missing, f"a completed run dropped {len(missing)} resource(s): pulumi up would delete them"
    else:
        assert isinstance(after.error, pulumi.RunError), f"expected a clean RunError, got {after.error!r}"
        assert after.resources == [], "the run registered resources before stopping"


def edit_shared_class(raw: dict[str, Any], change: str) -> dict[str, Any]:
    edited = copy.deepcopy(raw)
    shared = edited["classes"][0]
    if change == "unsupported-driver":
        shared["devices"][0].update(driver="gpu.amd.com", deviceClassName="gpu.amd.com")
        shared["provisioning"]["gke"]["accelerator"] = {"type": "amd-mi300x", "count": 1}
    else:
        # An accelerator left out is supplied by the machine; one of another vendor breaks the rule.
        shared["provisioning"]["gke"]["accelerator"] = {"type": "amd-mi300x", "count": 1}
    return edited


@pytest.mark.parametrize(
    ("change", "policy"),
    [("unsupported-driver", "unsupported-devices"), ("amd-accelerator-on-nvidia", "accelerator-driver-mismatch")],
)
def test_editing_a_shared_class_stops_the_run_before_anything_is_registered(change: str, policy: str) -> None:
    before = run_fleet(deployed_fleet())
    assert before.error is None, before.error
    assert len(before.resources) > 20
    assert {"gke-us-central1", "gke-europe-west4"} <= {r.name for r in before.resources}

    after = run_fleet(edit_shared_class(deployed_fleet(), change))
    assert_never_fewer(before, after)
    assert after.error is not None
    message = str(after.error)
    assert f"[{policy}]" in message
    assert "nothing was created, changed or deleted" in message
    assert "gke-us-central1" in message and "gke-europe-west4" in message
    assert "Traceback" not in message


def test_a_good_edit_keeps_every_resource() -> None:
    before = run_fleet(deployed_fleet())
    assert before.error is None, before.error
    assert {"gke-us-central1-l4", "gke-europe-west4-l4"} <= {r.name for r in before.resources}
    grown = deployed_fleet()
    grown["clusters"][0]["nodePools"].append({"name": "l4b", "className": "l4-shared"})
    after = run_fleet(grown)
    assert after.error is None, after.error
    assert urns(before) < urns(after)
    assert "gke-us-central1-l4b" in {r.name for r in after.resources} - {r.name for r in before.resources}

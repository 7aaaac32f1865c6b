"""Adopting a running GKE or EKS cluster through the engine's import (docs/adopting.md).

The running cluster and pools are planted in the GKE test provider (`running.json`, answered by its
`Read` as the real provider answers an import): each one as the stack file describes it, with what
its owner set that the stack file does not say (its network, its nodes' service account). Then: a
preview shows an import for each, `up` imports them and creates no cloud resource, a second `up`
changes nothing; and a running pool that differs from the stack file is refused by the adopted
resource's `before_update` hook (components/adoption.py) with nothing changed, as is a later edit
of an adopted pool.

The EKS run shows the same for an adopted EKS cluster with what its owner set (the node groups'
own launch templates, its creator's bootstrap admin): the imports, no cloud resource created
around it (VPC, IAM roles, add-ons, launch templates), no change on a second `up`. The refusing
hook is the same code on every cloud, so the mismatch is shown once, on GKE. AKS is covered by the
unit tests alone (tests/test_adoption.py): each engine run costs about 50 s.

The cluster's Kubernetes objects (its serving stack) are created as on any cluster: adoption is
about the cloud resources.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from pulumi import automation as auto

from tests.engine.harness import Engine
from tests.test_adoption import EKS_POOLS, adopted_gke, fleet_on
from tooling.mockrun import computed_outputs
from tooling.plan import plan_stack

# What the running cluster's owner set, which the stack file does not say (`ADOPTED_CLUSTER_KEEPS`,
# `ADOPTED_POOL_KEEPS` in clouds/gke/component.py keep them as they run).
THEIR_NETWORK = {
    "network": "projects/my-project/global/networks/their-vpc",
    "subnetwork": "projects/my-project/regions/us-central1/subnetworks/their-nodes",
}
THEIR_NODES = "their-nodes@my-project.iam.gserviceaccount.com"
# Fields the provider documents as its own (not GKE's API), absent from what an import reads.
TERRAFORM_ONLY = ("minMasterVersion", "removeDefaultNodePool", "initialNodeCount", "deletionProtection")


# What an EKS cluster's owner set that the stack file does not say (`ADOPTED_CLUSTER_KEEPS`,
# `ADOPTED_POOL_KEEPS` in clouds/eks/component.py keep them as they run).
THEIR_LAUNCH_TEMPLATE = {"id": "lt-0their", "version": "7"}
THEIR_BOOTSTRAP = {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False}


def their_eks(type_: str, inputs: dict[str, Any]) -> None:
    if type_ == "aws:eks/cluster:Cluster":
        inputs["accessConfig"] = dict(THEIR_BOOTSTRAP)
    else:
        inputs["launchTemplate"] = dict(THEIR_LAUNCH_TEMPLATE)


def running_resources(engine: Engine, stack: str, theirs: Any = None) -> dict[str, dict[str, Any]]:
    """The running cluster and pools the stack adopts, by import ID, as the stack file describes them,
    with what their owner set (`theirs(type, inputs)`, by default the GKE cluster's)."""
    doc = plan_stack(engine.stack_file(stack))
    assert doc["ok"], doc["errors"]
    running: dict[str, dict[str, Any]] = {}
    for r in doc["resources"]:
        if not r.get("import"):
            continue
        gcp = r["type"].startswith("gcp:")
        inputs = {k: v for k, v in copy.deepcopy(r["inputs"]).items() if not (gcp and k in TERRAFORM_ONLY)}
        if theirs is not None:
            theirs(r["type"], inputs)
        elif r["type"] == "gcp:container/cluster:Cluster":
            inputs.update(THEIR_NETWORK)
        else:
            inputs["nodeConfig"]["serviceAccount"] = THEIR_NODES
        running[r["import"]] = {"inputs": inputs, "outputs": computed_outputs(r["type"], r["name"], inputs)}
    assert len(running) == 3, running
    return running


def plant(engine: Engine, running: dict[str, dict[str, Any]]) -> None:
    (engine.providers / "running.json").write_text(json.dumps(running))


def preview_steps(stack: auto.Stack) -> dict[str, set[str]]:
    """urn -> the ops a preview shows for it (every op but `same`)."""
    events: list[auto.EngineEvent] = []
    stack.preview(on_event=events.append)
    steps: dict[str, set[str]] = {}
    for e in events:
        if e.resource_pre_event is not None and e.resource_pre_event.metadata.op != auto.OpType.SAME:
            steps.setdefault(e.resource_pre_event.metadata.urn, set()).add(e.resource_pre_event.metadata.op.value)
    return steps


def cloud_urns(urns: list[str] | set[str]) -> set[str]:
    return {u for u in urns if "$gcp:" in u or "::gcp:" in u}


def test_a_running_gke_cluster_is_adopted_without_a_create_once_the_stack_file_matches_it(engine: Engine) -> None:
    engine.write_fleet("adopted", adopted_gke())
    running = running_resources(engine, "adopted")
    cpu = "my-project/us-central1/inference-1/cpu"
    plant(engine, {**running, cpu: {**running[cpu], "inputs": {**running[cpu]["inputs"], "nodeCount": 3}}})
    stack = engine.stack("adopted")

    # The running pool has 3 nodes, the stack file says 1: a preview (and so `pulumi up`, which
    # previews first) stops at the adopted pool's hook, before anything is imported or changed.
    with pytest.raises(auto.CommandError) as err:
        stack.preview()
    message = str(err.value)
    assert f"pool 'cpu' of cluster 'prod' adopts the running resource {cpu}" in message
    assert "differs from the stack file in nodeCount" in message
    assert engine.ops().changes() == []
    assert not [r for r in engine.export(stack).get("resources") or [] if r["type"].startswith("gcp:")]

    # Brought in line with what runs, the stack imports the cluster and each pool.
    plant(engine, running)
    steps = preview_steps(stack)
    imported = {urn.rsplit("::", 1)[-1]: ops for urn, ops in steps.items() if "$gcp:container" in urn}
    assert imported == {"prod-cluster": {"import"}, "prod-gpu": {"import"}, "prod-cpu": {"import"}}
    # No other GCP resource has a step: no network, NAT or node identity is created for it.
    assert {urn.split("::")[-2].split("$")[-1] for urn in cloud_urns(steps)} == {
        "gcp:container/cluster:Cluster",
        "gcp:container/nodePool:NodePool",
    }
    engine.reset_ops()

    up = stack.up()
    changes = up.summary.resource_changes or {}
    assert changes.get("import") == 3 and "replace" not in changes and "update" not in changes, changes
    ops = engine.ops()
    assert cloud_urns(ops.of("create")) == set(), "a cloud resource was created"
    assert cloud_urns(ops.of("update")) == set()
    assert sorted(e["id"] for e in ops.entries if e["op"] == "read") == sorted(running)
    state = {r["urn"].rsplit("::", 1)[-1]: r for r in engine.export(stack)["resources"]}
    # What the owner set stays as it runs.
    assert state["prod-cluster"]["outputs"]["network"] == THEIR_NETWORK["network"]
    assert state["prod-cpu"]["outputs"]["nodeConfig"]["serviceAccount"] == THEIR_NODES
    engine.reset_ops()

    again = stack.up()
    assert set(again.summary.resource_changes or {}) == {"same"}, again.summary.resource_changes
    assert engine.ops().changes() == []

    # A later edit of an adopted pool is held to what runs too, by an `up` that runs no preview
    # (the Automation API's, `--skip-preview`): the hook stops it before the provider's update.
    config = engine.config("adopted")
    config["modelplane:clusters"][0]["nodePools"][1]["nodeCount"] = 2
    engine.write_config("adopted", config)
    with pytest.raises(auto.CommandError) as err:
        stack.up()
    assert "differs from the stack file in nodeCount" in str(err.value)
    assert cloud_urns({e["urn"] for e in engine.ops().changes()}) == set()


def test_a_running_eks_cluster_is_adopted_with_nothing_created_around_it(engine: Engine) -> None:
    engine.write_fleet("eksadopted", fleet_on("EKS", "inference-1", EKS_POOLS))
    running = running_resources(engine, "eksadopted", their_eks)
    plant(engine, running)
    stack = engine.stack("eksadopted")

    steps = preview_steps(stack)
    aws_steps = {urn.rsplit("::", 1)[-1]: ops for urn, ops in steps.items() if "$aws:" in urn or "::aws:" in urn}
    # Only the cluster and its node groups: no VPC, IAM role, add-on, launch template or autoscaler role.
    assert aws_steps == {"prod-cluster": {"import"}, "prod-gpu": {"import"}, "prod-cpu": {"import"}}, aws_steps
    engine.reset_ops()

    up = stack.up()
    changes = up.summary.resource_changes or {}
    assert changes.get("import") == 3 and "replace" not in changes and "update" not in changes, changes
    aws_urns = {e["urn"] for e in engine.ops().changes() if "$aws:" in e["urn"] or "::aws:" in e["urn"]}
    assert aws_urns == set(), "an AWS resource was created or changed"
    state = {r["urn"].rsplit("::", 1)[-1]: r for r in engine.export(stack)["resources"]}
    assert state["prod-gpu"]["outputs"]["launchTemplate"] == THEIR_LAUNCH_TEMPLATE
    engine.reset_ops()

    again = stack.up()
    assert set(again.summary.resource_changes or {}) == {"same"}, again.summary.resource_changes
    assert engine.ops().changes() == []

"""Every committed stack under the real engine: a first preview with the pack, `up`, and a settled state.

The engine previews and updates; the test providers stand in for the clouds (harness.py). After
`up`, the state must hold exactly the resources the offline plan registers for an update, a
second preview must find nothing to change, and no secret may be stored in plain text.
"""

from __future__ import annotations

from typing import Any

import pytest
from pulumi import automation as auto

from tests.engine.devices import existing_stacks, stack_clusters
from tests.engine.harness import ROOT, Engine, assert_secrets_kept, mock_urns, resources, urns
from tests.engine.provider import ECHOED_KUBERNETES

# The Existing stacks run in the cluster tier instead (test_real_up.py), with the real Kubernetes
# provider on a local cluster, under the same checks of state and secrets; every other stack runs here.
# A stack of several Existing clusters (byo-fleet) needs a cluster for each and runs in neither: its
# objects go to the real API server and Envoy Gateway's translator (test_kube.py, test_fleet_translate.py).
STACKS = sorted(
    name
    for p in (ROOT / "stacks").glob("Pulumi.*.yaml")
    if (name := p.name.removeprefix("Pulumi.").removesuffix(".yaml")) not in existing_stacks()
    and not all(c.source == "Existing" for c in stack_clusters(p).values())
)


def not_as_sent(sent: Any, stored: Any, path: str = "") -> list[str]:
    """Where the server stored something other than what was sent: every value sent must come
    back; what the server adds (defaults, status, metadata it keeps) is not compared."""
    if isinstance(sent, dict):
        if not isinstance(stored, dict):
            return [f"{path}: sent a map, stored {stored!r}"]
        return [d for k, v in sent.items() for d in not_as_sent(v, stored.get(k), f"{path}.{k}")]
    if isinstance(sent, list):
        if not isinstance(stored, list) or len(stored) != len(sent):
            return [f"{path}: sent {sent!r}, stored {stored!r}"]
        return [d for i, (a, b) in enumerate(zip(sent, stored, strict=True)) for d in not_as_sent(a, b, f"{path}[{i}]")]
    return [] if sent == stored else [f"{path}: sent {sent!r}, stored {stored!r}"]


def policy_events(events: list[auto.EngineEvent]) -> list[auto.PolicyEvent]:
    return [e.policy_event for e in events if e.policy_event is not None]


def settle_parameterized_providers(engine: Engine, stack: auto.Stack, events: list[auto.EngineEvent]) -> dict[str, Any]:
    """The one change the engine makes on the update after a parameterized provider was created.

    On the first update of a stack holding an explicit provider of a parameterized package
    (pulumi-nebius: `terraform-provider` 1.5.0 parameterized as `nebius` 0.6.73), the CLI at
    v3.274.1 registers the provider with its `version` input set to the plugin's version, where its
    creation recorded the package's: the engine alone decides this (the test provider is asked only
    to diff it), and the real bridge diffs `version` as any other input (pulumi-terraform-bridge
    pkg/tfbridge/provider.go, `configDiffer.DiffConfig`). Anything else that changes fails here;
    this one must be that provider's `version` alone, once, and the stack settles after it.
    """
    changed = [e.resource_pre_event.metadata for e in events if e.resource_pre_event is not None]
    changed = [m for m in changed if m.op != auto.OpType.SAME]
    assert changed
    before = {r["urn"]: r for r in resources(engine.export(stack))}
    for m in changed:
        internal = before[m.urn]["inputs"].get("__internal", {})
        assert m.op == auto.OpType.UPDATE and "parameterization" in internal, (m.op, m.urn)
    stack.up(policy_packs=[str(engine.pack)])
    after = {r["urn"]: r for r in resources(engine.export(stack))}
    for m in changed:
        old, new = before[m.urn]["inputs"], after[m.urn]["inputs"]
        assert {k: v for k, v in old.items() if k != "version"} == {k: v for k, v in new.items() if k != "version"}
        assert new["version"] == old["__internal"]["version"], (m.urn, old["version"], new["version"])
    settled = stack.preview(policy_packs=[str(engine.pack)])
    assert set(settled.change_summary) == {"same"}, settled.change_summary
    assert engine.ops().of("delete") == []
    return engine.export(stack)


@pytest.mark.parametrize("name", STACKS)
def test_committed_stack_previews_with_the_pack_updates_and_settles(engine: Engine, name: str) -> None:
    stack = engine.stack(name)
    events: list[auto.EngineEvent] = []
    preview = stack.preview(policy_packs=[str(engine.pack)], on_event=events.append)
    mandatory = [e for e in policy_events(events) if e.enforcement_level == "mandatory"]
    assert not mandatory, [e.message for e in mandatory]
    assert preview.change_summary.get("create", 0) > 5
    assert engine.ops().changes() == [], "a preview reached a provider's create, update or delete"

    up = stack.up(policy_packs=[str(engine.pack)])
    assert up.summary.result == "succeeded"
    state = engine.export(stack)
    assert urns(state) == mock_urns(engine.stack_file(name)), "the engine's state and the offline plan differ"
    created = engine.ops().of("create")
    assert len(created) == len(set(created)), "a resource was created twice"
    assert engine.ops().of("delete") == []

    # Every Kubernetes object that is not a Helm release went to the cluster's API server, which
    # accepted it and stored it as sent, apart from what it fills in.
    applied = {a["urn"]: a for a in engine.kube_applied()}
    sent_to_server = {
        r["urn"]
        for r in resources(state)
        if r["type"].startswith("kubernetes:") and r.get("custom") and r["type"] not in ECHOED_KUBERNETES
    }
    assert set(applied) == sent_to_server
    for urn, record in applied.items():
        assert not_as_sent(record["sent"], record["stored"]) == [], urn

    again_events: list[auto.EngineEvent] = []
    again = stack.preview(policy_packs=[str(engine.pack)], on_event=again_events.append)
    if set(again.change_summary) != {"same"}:
        # The one change the engine itself makes (settle_parameterized_providers); anything else fails.
        state = settle_parameterized_providers(engine, stack, again_events)

    assert_secrets_kept(state, stack)

"""What the engine does to a stack that exists: rule-breaking edits, protection, faults and drift.

A config mistake must never tear a running cluster down. These run against real state in a local
backend: after `up`, a bad edit must fail both `preview` and `up` with nothing reaching a provider
and the state unchanged; a protected cluster removed from config must not be deleted; a provider
failure halfway through `up` must leave a state that a second `up` completes.
"""

from __future__ import annotations

import copy

import pytest
from pulumi import automation as auto

from tests.engine.harness import Engine, urns
from tests.test_no_delete import deployed_fleet, edit_shared_class


def failing(action: auto.Stack.preview) -> str:  # type: ignore[valid-type]
    with pytest.raises(auto.CommandError) as err:
        action()  # type: ignore[operator]
    return str(err.value)


# Each edit with the policy that refuses it; one deployed stack takes them in turn, its state
# unchanged by each.
RULE_BREAKING_EDITS = (
    ("unsupported-driver", "unsupported-devices"),
    ("drop-accelerator", "accelerator-driver-mismatch"),
)


def test_rule_breaking_edits_of_a_deployed_stack_fail_preview_and_up_and_keep_the_state(engine: Engine) -> None:
    engine.write_fleet("fleet", deployed_fleet())
    stack = engine.stack("fleet")
    assert stack.up(policy_packs=[str(engine.pack)]).summary.result == "succeeded"
    before = engine.export(stack)
    engine.reset_ops()

    for change, policy in RULE_BREAKING_EDITS:
        engine.write_fleet("fleet", edit_shared_class(deployed_fleet(), change))
        for action in (stack.preview, stack.up):
            message = failing(lambda action=action: action(policy_packs=[str(engine.pack)]))
            assert f"[{policy}]" in message, (change, message)
            assert "nothing was created, changed or deleted" in message
        assert engine.ops().entries == [], f"{change}: a provider was asked to change something"
        after = engine.export(stack)
        assert urns(after) == urns(before)
        assert len(after["resources"]) == len(before["resources"])


def test_removing_a_protected_cluster_deletes_nothing_until_protection_is_lifted(engine: Engine) -> None:
    fleet = deployed_fleet()
    assert fleet["protect"] is True
    engine.write_fleet("fleet", fleet)
    stack = engine.stack("fleet")
    stack.up()
    before = engine.export(stack)
    engine.reset_ops()

    smaller = copy.deepcopy(fleet)
    removed = smaller["clusters"].pop()["name"]
    engine.write_fleet("fleet", smaller)
    message = failing(lambda: stack.up())
    assert "protected" in message
    assert engine.ops().of("delete") == []
    assert urns(engine.export(stack)) == urns(before)

    # The documented way (README, `modelplane:protect`): set it to false and run `up`, which only
    # unprotects (in the state, and the GKE clusters' own `deletionProtection`); then remove it.
    engine.write_fleet("fleet", {**fleet, "protect": False})
    unprotect = stack.up()
    assert set(unprotect.summary.resource_changes or {}) <= {"same", "update"}
    changed = engine.ops().changes()
    assert {e["op"] for e in changed} == {"update"}
    assert {e["urn"].split("::")[-1] for e in changed} == {f"{c['name']}-cluster" for c in fleet["clusters"]}
    engine.reset_ops()
    engine.write_fleet("fleet", {**smaller, "protect": False})
    stack.up()
    deleted = engine.ops().of("delete")
    assert deleted, "nothing was deleted once the cluster was unprotected and removed"
    assert all(f"::{removed}" in urn or f"::{removed}-" in urn for urn in deleted), deleted
    assert not any(r["urn"].endswith(f"::{removed}") for r in engine.export(stack)["resources"])


def test_a_provider_failure_halfway_through_up_is_completed_by_a_second_up(engine: Engine) -> None:
    stack = engine.stack("civo-dev")
    stack.workspace.env_vars["MODELPLANE_TEST_FAIL_AT"] = "4"
    with pytest.raises(auto.CommandError) as err:
        stack.up()
    assert "MODELPLANE_TEST_FAIL_AT=4" in str(err.value)
    assert [e["op"] for e in engine.ops().entries].count("failed-create") == 1
    partial = engine.export(stack)

    del stack.workspace.env_vars["MODELPLANE_TEST_FAIL_AT"]
    assert stack.up().summary.result == "succeeded"
    created = engine.ops().of("create")
    assert len(created) == len(set(created)), "a resource was created twice"
    assert engine.ops().of("delete") == []
    assert urns(partial) < urns(engine.export(stack))
    assert set(stack.preview().change_summary) == {"same"}


def test_refresh_shows_a_change_made_at_the_provider(engine: Engine) -> None:
    stack = engine.stack("civo-dev")
    stack.up()
    pool = next(r for r in engine.export(stack)["resources"] if r["urn"].endswith("::civo-lon1-cpu"))
    assert pool["outputs"]["nodeCount"] == 1
    engine.plant_drift({pool["urn"]: {"nodeCount": 3}})

    refresh = stack.refresh()
    assert refresh.summary.resource_changes == {"same": len(engine.export(stack)["resources"]) - 1, "update": 1}
    drifted = next(r for r in engine.export(stack)["resources"] if r["urn"] == pool["urn"])
    assert drifted["outputs"]["nodeCount"] == 3
    # The program still says one node, so the next update puts it back.
    assert stack.preview().change_summary.get("update") == 1


def test_an_aks_stack_created_with_the_sdks_api_version_aliases_updates_without_them(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    import clouds.aks.component as aks

    # Created as the program registered it before `without_api_version_aliases`: with every alias.
    monkeypatch.setattr(aks, "without_api_version_aliases", lambda args: None)
    stack = engine.stack("aks-prod")
    stack.up()
    monkeypatch.undo()
    engine.reset_ops()

    events: list[auto.EngineEvent] = []
    preview = stack.preview(on_event=events.append)
    assert set(preview.change_summary) == {"same"}, preview.change_summary
    warnings = [
        e.diagnostic_event.message for e in events if e.diagnostic_event and "alias" in e.diagnostic_event.message
    ]
    assert warnings == []
    assert set(stack.up().summary.resource_changes or {}) == {"same"}
    assert engine.ops().changes() == []


def test_a_changed_claim_replaces_its_template_and_the_deployment_moves_to_it(engine: Engine) -> None:
    # The API server refuses to change a ResourceClaimTemplate's spec (422, `field is immutable`:
    # tests/engine/test_kube.py); the template named after its claim is replaced instead, created
    # first, on the cluster's real API server.
    # A protected stack refuses every replacement until protection is lifted (README, "protect");
    # this one runs unprotected.
    name = "recipe-qwen-cpu-civo"
    config = engine.config(name)
    config["modelplane:protect"] = False
    engine.write_config(name, config)
    stack = engine.stack(name)
    assert stack.up().summary.result == "succeeded"
    engine.reset_ops()
    # 6 of 8 vCPUs claimed before (supplied by the catalog), 5 now (written out, as a smaller
    # claim must be).
    config["modelplane:classes"][0]["devices"] = [
        {"name": "cpu", "driver": "dra.cpu", "deviceClassName": "dra.cpu", "capacity": {"dra.cpu/cpu": {"value": "5"}}}
    ]
    engine.write_config(name, config)

    preview = stack.preview()
    assert preview.change_summary.get("replace") == 1 and preview.change_summary.get("update", 0) >= 1
    assert stack.up().summary.result == "succeeded"
    changes = [(e["op"], e["urn"].rsplit("::", 1)[-1]) for e in engine.ops().changes()]
    template = "civo-cpu-qwen-claims"
    assert "refused-update" not in [e["op"] for e in engine.ops().entries]
    order = [change for change in changes if change[1] in (template, "civo-cpu-qwen-deployment")]
    assert order == [("create", template), ("update", "civo-cpu-qwen-deployment"), ("delete", template)]
    assert set(stack.preview().change_summary) == {"same"}

    # On the server: the Deployment claims from the new template, and the old one is gone.
    [server] = (engine.kube.servers() if engine.kube else {}).values()
    applied = [a for a in engine.kube_applied() if a["urn"].endswith(f"::{template}")]
    new_name = applied[-1]["sent"]["metadata"]["name"]
    deployment = next(a["stored"] for a in engine.kube_applied() if a["urn"].endswith("::civo-cpu-qwen-deployment"))
    [claim] = deployment["spec"]["template"]["spec"]["resourceClaims"]
    assert claim["resourceClaimTemplateName"] == new_name
    kinds = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate"}
    namespace = applied[-1]["sent"]["metadata"]["namespace"]
    assert server.get({**kinds, "metadata": {"name": new_name, "namespace": namespace}}) is not None
    assert [r["metadata"]["name"] for r in server.list(kinds, namespace)] == [new_name]

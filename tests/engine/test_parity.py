"""The offline plan and the engine give the same verdicts on the same bad configurations.

`modelplane plan` runs the program under mocks and asks the pack through its own analyzer client;
the engine runs the same program and the same pack for real. For each held bad configuration, the
(policy, enforcement, resource) verdicts must be the same set from both, in a first preview and in
an update of a stack that exists. A rule the program enforces (a device rule) stops the run in
both, with the same `[policy] message` lines.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest
from pulumi import automation as auto

from tests.engine.harness import PROJECT, Engine
from tests.test_no_delete import deployed_fleet, edit_shared_class
from tooling.plan import plan_stack

Verdicts = set[tuple[str, str, str]]
CPU_DEVICE = {
    "name": "cpu",
    "driver": "dra.cpu",
    "deviceClassName": "dra.cpu",
    "capacity": {"dra.cpu/cpu": {"value": "6"}},
}


def without_protection(config: dict[str, Any]) -> dict[str, Any]:
    return {**config, f"{PROJECT}:protect": False}


def with_small_budget(config: dict[str, Any]) -> dict[str, Any]:
    return {**config, f"{PROJECT}:budget": {"monthlyUsd": 10}}


def with_unknown_machine(config: dict[str, Any], uncatalogued: bool = False) -> dict[str, Any]:
    edited = copy.deepcopy(config)
    cpu = next(c for c in edited[f"{PROJECT}:classes"] if c["name"] == "cpu-gke")
    cpu["provisioning"]["gke"]["machineType"] = "c3-standard-8-lssd"
    # The catalog cannot supply the devices of a machine it does not know: they are written out.
    cpu["devices"] = [CPU_DEVICE]
    if uncatalogued:
        cpu["provisioning"]["gke"]["uncatalogued"] = True
    return edited


def with_unpriced_machine_and_a_budget(config: dict[str, Any]) -> dict[str, Any]:
    # Far above the priced part: only the unpriced pool keeps the budget from being checked.
    return {**with_unknown_machine(config, uncatalogued=True), f"{PROJECT}:budget": {"monthlyUsd": 1000000}}


# Bad configurations the pack judges (the program runs): (base stack, edit of its config).
PACK_CASES: dict[str, tuple[str, Callable[[dict[str, Any]], dict[str, Any]]]] = {
    "unprotected-civo": ("civo-dev", without_protection),
    "gke-over-budget": ("gke-prod", with_small_budget),
    "gke-unpriced-with-a-budget": ("gke-prod", with_unpriced_machine_and_a_budget),
}


def plan_verdicts(engine: Engine, stack: str, mode: str) -> Verdicts:
    doc = plan_stack(engine.stack_file(stack), mode=mode)
    assert not doc["errors"], doc["errors"]
    return {(v["policy"], v["enforcement"], v["resource"]) for v in doc["violations"]}


def engine_verdicts(events: list[auto.EngineEvent], stack: str) -> Verdicts:
    found: Verdicts = set()
    for event in events:
        policy = event.policy_event
        if policy is None:
            continue
        level = "advisory" if policy.enforcement_level == "warning" else policy.enforcement_level
        resource = policy.resource_urn.split("::")[-1] if policy.resource_urn else stack
        found.add((policy.policy_name, level, resource))
    return found


@pytest.mark.parametrize("case", sorted(PACK_CASES))
def test_pack_verdicts_of_the_engine_and_the_plan_agree(engine: Engine, case: str) -> None:
    base, edit = PACK_CASES[case]
    engine.write_config(base, edit(engine.config(base)))
    stack = engine.stack(base)

    events: list[auto.EngineEvent] = []
    stack.preview(policy_packs=[str(engine.pack)], on_event=events.append)
    first = engine_verdicts(events, base)
    assert first, "the engine reported no verdict on a bad configuration"
    assert first == plan_verdicts(engine, base, "preview")

    stack.up(policy_packs=[str(engine.pack)])
    events = []
    stack.preview(policy_packs=[str(engine.pack)], on_event=events.append)
    assert engine_verdicts(events, base) == plan_verdicts(engine, base, "update")


def stopped_alike(engine: Engine, stack: str) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """The `[policy] message` lines a stopped engine preview prints, and the plan's mandatory
    (policy, message) verdicts, for the same stack file."""
    with pytest.raises(auto.CommandError) as err:
        engine.stack(stack).preview(policy_packs=[str(engine.pack)])
    from_engine = set(re.findall(r"\[([a-z-]+)\] (.+?)(?:\\n|\n|$)", str(err.value)))
    doc = plan_stack(engine.stack_file(stack), display=f"Pulumi.{stack}.yaml", mode="preview")
    from_plan = {(v["policy"], v["message"]) for v in doc["violations"] if v["enforcement"] == "mandatory"}
    return from_engine, from_plan


@pytest.mark.parametrize("change", ["unsupported-driver", "drop-accelerator"])
def test_device_rule_verdicts_of_the_engine_and_the_plan_agree(engine: Engine, change: str) -> None:
    engine.write_fleet("fleet", edit_shared_class(deployed_fleet(), change))
    from_engine, from_plan = stopped_alike(engine, "fleet")
    assert from_plan
    assert from_engine == from_plan


def test_an_unknown_machine_stops_the_engine_and_the_plan_alike(engine: Engine) -> None:
    engine.write_config("gke-prod", with_unknown_machine(engine.config("gke-prod")))
    from_engine, from_plan = stopped_alike(engine, "gke-prod")
    assert {policy for policy, _ in from_plan} == {"unknown-machine-type"}
    assert from_engine == from_plan

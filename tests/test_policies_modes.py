"""Every policy gives its verdict on what the engine sends in each mode, with the verdict written out.

The engine hands the pack different things in a first preview (nothing exists: values the cloud
computes are unknown, and the Kubernetes objects of a cluster not yet created have no outputs),
in an update of an existing stack (everything known), and in `pulumi policy analyze --file` on an
exported state (`Analyze` on each resource's stored inputs, `AnalyzeStack` on its outputs). The
resources here are the real program's, run under mocks in each mode (`tooling.mockrun`);
the analyze mode reads them back from a JSON state as `pulumi stack export` would hold them. A
bad value is written into what the program registered, as a regression in a component would.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pulumi_policy import Policy, ResourceValidationPolicy

from infra.config.stackfile import load_stack_file
from policies.pack import POLICIES_BY_NAME
from program.main import run
from tests.policy_harness import MODES, verdict, views
from tooling.mockrun import MockRun, Registration, run_under_mocks
from tooling.stackconfig import config_of

ROOT = Path(__file__).resolve().parent.parent
PREVIEW_UNDECIDED = "is not known in this preview"

Resources = tuple[list[Registration], Registration | None]


def program_run(stack: str, preview: bool) -> MockRun:
    parsed = load_stack_file(ROOT / "stacks" / f"Pulumi.{stack}.yaml")
    config, secret_keys = config_of(parsed)
    result = run_under_mocks(run, parsed.stack, config, secret_keys, preview=preview)
    assert result.error is None
    return result


def exported(result: MockRun) -> Resources:
    """The update's resources as a stack export stores them and `policy analyze --file` reads them."""

    def stored(r: Registration) -> Registration:
        inputs, outputs = json.loads(json.dumps([dict(r.inputs), r.outputs], default=str))
        return dataclasses.replace(r, inputs=inputs, outputs=outputs)

    return [stored(r) for r in result.resources], (stored(result.stack) if result.stack else None)


@pytest.fixture(scope="module")
def stacks() -> dict[tuple[str, str], Resources]:
    """(stack, mode) -> the resources and root stack the pack is given."""
    out: dict[tuple[str, str], Resources] = {}
    for stack in ("recipe-qwen-cpu-civo", "recipe-qwen-mi325x", "civo-dev"):
        preview, update = program_run(stack, preview=True), program_run(stack, preview=False)
        out[stack, "preview"] = (preview.resources, preview.stack)
        out[stack, "update"] = (update.resources, update.stack)
        out[stack, "analyze"] = exported(update)
    return out


Edit = Callable[[dict[str, Any]], None]


def edited(resources: Resources, name: str, edit: Edit, *, outputs: bool = True) -> Resources:
    """The resources with `edit` applied to one resource's inputs and, when it has any, its outputs."""
    regs, root = resources
    out = []
    for r in regs:
        if r.name == name:
            inputs = copy.deepcopy(dict(r.inputs))
            edit(inputs)
            new_outputs = copy.deepcopy(r.outputs)
            if outputs and new_outputs:
                edit(new_outputs)
            r = dataclasses.replace(r, inputs=inputs, outputs=new_outputs)
        out.append(r)
    assert any(r.name == name for r in regs), f"no resource {name}"
    return out, root


def verdicts(policy_name: str, resources: Resources) -> list[str] | str:
    """Every message the policy gives over the stack, or `undecided: ...` where it cannot decide."""
    policy: Policy = POLICIES_BY_NAME[policy_name]
    analyze, stack = views(*resources)
    if isinstance(policy, ResourceValidationPolicy):
        found: list[str] = []
        for args in analyze.values():
            answer = verdict(policy, args(policy))
            if isinstance(answer, str):
                return answer
            found += answer
        return found
    from tests.policy_harness import policy_config, stack_args

    return verdict(policy, stack_args(stack, config=policy_config(policy)))


def by_mode(
    stacks: dict[tuple[str, str], Resources], stack: str, policy: str, change: Callable[[Resources], Resources]
) -> dict[str, Any]:
    return {mode: verdicts(policy, change(stacks[stack, mode])) for mode in MODES}


def unchanged(resources: Resources) -> Resources:
    return resources


# --------------------------------------------------------------------------------------------
# The committed stacks as they are: nothing to report in any mode (the first preview used to
# report "release ... is not installed" on every cluster created in the same run).


@pytest.mark.parametrize("policy", sorted(POLICIES_BY_NAME))
@pytest.mark.parametrize("stack", ["recipe-qwen-mi325x", "civo-dev"])
def test_committed_stack_passes_every_policy_in_every_mode(
    stacks: dict[tuple[str, str], Resources], stack: str, policy: str
) -> None:
    assert by_mode(stacks, stack, policy, unchanged) == {"preview": [], "update": [], "analyze": []}


def test_cpu_claims_of_a_cluster_not_yet_created_are_decided_on_up(stacks: dict[tuple[str, str], Resources]) -> None:
    found = by_mode(stacks, "recipe-qwen-cpu-civo", "cpu-claim-resources", unchanged)
    assert found == {
        "preview": (
            "undecided: what civo-cpu-qwen-claims, civo-cpu-qwen-deployment, civo-cpu-qwen-picker claim and request is not "
            "known in this "
            "preview (their cluster does not exist yet, so the engine previews them with no properties); the "
            "policy decides on `pulumi up`, which knows it"
        ),
        "update": [],
        "analyze": [],
    }


# --------------------------------------------------------------------------------------------
# Config-level rules: the cluster component's facts are literals, the same in every mode.


def cluster_class(edit: Edit) -> Callable[[dict[str, Any]], None]:
    def apply(props: dict[str, Any]) -> None:
        for pool in props["pools"]:
            if pool.get("class"):
                edit(pool["class"])

    return apply


def test_accelerator_driver_mismatch_is_the_same_in_every_mode(stacks: dict[tuple[str, str], Resources]) -> None:
    def gpu_without_accelerator(cls: dict[str, Any]) -> None:
        if cls["devices"][0]["driver"] == "gpu.nvidia.com":
            del cls["provisioning"]["civo"]["accelerator"]

    found = by_mode(
        stacks,
        "civo-dev",
        "accelerator-driver-mismatch",
        lambda r: edited(r, "civo-lon1", cluster_class(gpu_without_accelerator)),
    )
    expected = [
        "cluster 'civo-lon1', pool 'l40s', class 'l40s-civo': the class claims gpu.nvidia.com but its Civo block "
        "sets no accelerator, so its nodes would get no GPU. Fix: set provisioning.civo.accelerator {type, count} "
        "to the GPUs the machine carries"
    ]
    assert found == {"preview": expected, "update": expected, "analyze": expected}


def test_unsupported_devices_is_the_same_in_every_mode(stacks: dict[tuple[str, str], Resources]) -> None:
    def amd_on_civo(cls: dict[str, Any]) -> None:
        if cls["devices"][0]["driver"] == "gpu.nvidia.com":
            cls["devices"][0].update(driver="gpu.amd.com", deviceClassName="gpu.amd.com")
            cls["provisioning"]["civo"]["accelerator"]["type"] = "amd-mi300x"

    found = by_mode(
        stacks, "civo-dev", "unsupported-devices", lambda r: edited(r, "civo-lon1", cluster_class(amd_on_civo))
    )
    expected = [
        "cluster 'civo-lon1', pool 'l40s', class 'l40s-civo': Civo clusters cannot serve driver gpu.amd.com "
        "(supported: dra.cpu, gpu.nvidia.com). Fix: use a class whose DRA devices Civo supports, or run this "
        "hardware on an Existing cluster"
    ]
    assert found == {"preview": expected, "update": expected, "analyze": expected}


def test_class_provider_mismatch_is_the_same_in_every_mode(stacks: dict[tuple[str, str], Resources]) -> None:
    def provisioned_on_gke(cls: dict[str, Any]) -> None:
        cls["provisioning"] = {"provider": "GKE", "gke": {"machineType": "c3-standard-8"}}

    found = by_mode(
        stacks,
        "recipe-qwen-cpu-civo",
        "class-provider-mismatch",
        lambda r: edited(r, "civo-cpu", cluster_class(provisioned_on_gke)),
    )
    expected = [
        "cluster 'civo-cpu', pool 'cpu', class 'cpu-g4p-medium': the class provisions on GKE but the cluster's "
        "source is Civo. Fix: reference a class whose provisioning.provider is Civo, or add a Civo class"
    ]
    assert found == {"preview": expected, "update": expected, "analyze": expected}


def test_cluster_component_without_its_facts_is_reported_not_a_key_error(
    stacks: dict[tuple[str, str], Resources],
) -> None:
    def no_facts(props: dict[str, Any]) -> None:
        props.pop("source")
        props.pop("pools")

    expected = [
        "cluster component civo-cpu registers no 'source' or 'pools', which the pack reads "
        "(components.base.policy_inputs); the pack cannot check its pools"
    ]
    found = by_mode(stacks, "recipe-qwen-cpu-civo", "unsupported-devices", lambda r: edited(r, "civo-cpu", no_facts))
    assert found == {"preview": expected, "update": expected, "analyze": expected}


# --------------------------------------------------------------------------------------------
# Resource-level rules: `Analyze` gets a resource's inputs in every mode.


def test_pool_without_its_pool_label_is_rejected_in_every_mode(stacks: dict[tuple[str, str], Resources]) -> None:
    def no_pool_label(props: dict[str, Any]) -> None:
        props["labels"].pop("modelplane.ai/pool")

    found = by_mode(
        stacks, "recipe-qwen-cpu-civo", "pool-role-marking", lambda r: edited(r, "civo-cpu-cpu", no_pool_label)
    )
    expected = ["pool '?' (civo-cpu-cpu): it carries no modelplane.ai/pool label; every pool is labelled with its name"]
    assert found == {"preview": expected, "update": expected, "analyze": expected}


def planned(key: str, edit: Edit) -> Edit:
    """Edit one release of a ServingStack's plan (its inputs and outputs carry the same list)."""

    def apply(props: dict[str, Any]) -> None:
        for release in props["releases"]:
            if release["key"] == key:
                edit(release)

    return apply


def test_floating_chart_version_is_rejected_in_every_mode(stacks: dict[tuple[str, str], Resources]) -> None:
    def floating(release: dict[str, Any]) -> None:
        release["version"] = "~0.3"

    found = by_mode(
        stacks,
        "recipe-qwen-cpu-civo",
        "pinned-versions",
        lambda r: edited(r, "civo-cpu-stack", planned("dra-driver-cpu", floating)),
    )
    expected = ["release mp-dra-driver-cpu (chart dra-driver-cpu) pins '~0.3'; pin an exact chart version"]
    assert found == {"preview": expected, "update": expected, "analyze": expected}


def test_amd_operator_with_kmm_on_is_rejected_in_every_mode(stacks: dict[tuple[str, str], Resources]) -> None:
    def kmm_on(release: dict[str, Any]) -> None:
        release["values"]["kmm"] = {"enabled": True, "watch": False}

    found = by_mode(
        stacks,
        "recipe-qwen-mi325x",
        "amd-operator-values",
        lambda r: edited(r, "byo-mi325x-stack", planned("amd-gpu-operator", kmm_on)),
    )
    expected = [
        "release mp-gpu-operator-charts: kmm.enabled must be false (the chart enables KMM, which this stack never uses)"
    ]
    assert found == {"preview": expected, "update": expected, "analyze": expected}


def test_wildcard_toleration_in_release_values_is_rejected_in_every_mode(
    stacks: dict[tuple[str, str], Resources],
) -> None:
    def tolerate_all(release: dict[str, Any]) -> None:
        release["values"]["tolerations"] = [{"operator": "Exists"}]

    found = by_mode(
        stacks,
        "recipe-qwen-cpu-civo",
        "no-wildcard-tolerations",
        lambda r: edited(r, "civo-cpu-stack", planned("dra-driver-cpu", tolerate_all)),
    )
    expected = [
        "release mp-dra-driver-cpu: values.tolerations[0] tolerates every taint (empty key, operator Exists); "
        "tolerate the taint keys of the pools it runs on"
    ]
    assert found == {"preview": expected, "update": expected, "analyze": expected}


def test_wildcard_toleration_in_a_deployment_is_rejected_in_every_mode(
    stacks: dict[tuple[str, str], Resources],
) -> None:
    def tolerate_all(props: dict[str, Any]) -> None:
        props["spec"]["template"]["spec"]["tolerations"].append({"operator": "Exists"})

    found = by_mode(
        stacks,
        "recipe-qwen-cpu-civo",
        "no-wildcard-tolerations",
        lambda r: edited(r, "civo-cpu-qwen-deployment", tolerate_all),
    )
    expected = [
        "deployment civo-cpu-qwen-deployment: spec.template.spec.tolerations[3] tolerates every taint (empty key, "
        "operator Exists); tolerate the taint keys of the pools it runs on"
    ]
    assert found == {"preview": expected, "update": expected, "analyze": expected}


def test_unprotected_cluster_is_reported_in_every_mode(stacks: dict[tuple[str, str], Resources]) -> None:

    def unprotect(resources: Resources) -> Resources:
        regs, root = resources
        return [dataclasses.replace(r, protect=False) if r.name == "civo-cpu-cluster" else r for r in regs], root

    found = by_mode(stacks, "recipe-qwen-cpu-civo", "protect-clusters", unprotect)
    expected = [
        "cluster civo-cpu-cluster is not protected; set modelplane:protect: true so `pulumi up` can never delete it"
    ]
    assert found == {"preview": expected, "update": expected, "analyze": expected}


# --------------------------------------------------------------------------------------------
# Stack-level rules: `AnalyzeStack` gets outputs; a component's are what it registered.


def test_release_dropped_from_the_plan_is_rejected_in_every_mode(stacks: dict[tuple[str, str], Resources]) -> None:
    def drop(props: dict[str, Any]) -> None:
        props["releases"] = [r for r in props["releases"] if r["key"] != "dra-driver-cpu"]

    found = by_mode(
        stacks, "recipe-qwen-cpu-civo", "device-stack-filtered", lambda r: edited(r, "civo-cpu-stack", drop)
    )
    expected = [
        "cluster 'civo-cpu': pools claim dra.cpu but release mp-dra-driver-cpu is not installed",
        "cluster 'civo-cpu': Release civo-cpu-stack-dra-driver-cpu is registered but not in the stack's plan",
    ]
    assert found == {"preview": expected, "update": expected, "analyze": expected}


def test_release_missing_from_the_stack_is_rejected_in_every_mode(stacks: dict[tuple[str, str], Resources]) -> None:
    def without(resources: Resources) -> Resources:
        regs, root = resources
        return [r for r in regs if r.name != "civo-cpu-stack-dra-driver-cpu"], root

    found = by_mode(stacks, "recipe-qwen-cpu-civo", "device-stack-filtered", without)
    expected = ["cluster 'civo-cpu': release mp-dra-driver-cpu is planned but no Release registers it"]
    assert found == {"preview": expected, "update": expected, "analyze": expected}


def test_stack_rule_fed_only_outputs_without_its_facts_reports_never_raises(
    stacks: dict[tuple[str, str], Resources],
) -> None:
    def old_outputs(resources: Resources) -> Resources:
        regs, root = resources
        # What the stack registered before it carried its plan: only the release names.
        return [
            dataclasses.replace(r, outputs={"releases": ["mp-cert-manager"]}) if r.name == "civo-cpu-stack" else r
            for r in regs
        ], root

    found = by_mode(stacks, "recipe-qwen-cpu-civo", "device-stack-filtered", old_outputs)
    assert all(isinstance(v, list) and len(v) >= 1 for v in found.values()), found


def test_cpu_request_below_the_claim_is_rejected_once_the_cluster_exists(
    stacks: dict[tuple[str, str], Resources],
) -> None:
    def request_four(props: dict[str, Any]) -> None:
        props["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "4"

    found = by_mode(
        stacks,
        "recipe-qwen-cpu-civo",
        "cpu-claim-resources",
        lambda r: edited(r, "civo-cpu-qwen-deployment", request_four),
    )
    expected = [
        "workload ml-team/qwen, container engine: requests.cpu is '4' but claim 'devices' takes 6 CPUs from dra.cpu; "
        "request and limit exactly 6"
    ]
    assert found["update"] == found["analyze"] == expected
    assert isinstance(found["preview"], str) and PREVIEW_UNDECIDED in found["preview"]


# --------------------------------------------------------------------------------------------
# The offline plan in both modes


@pytest.mark.parametrize("mode", ["preview", "update"])
def test_plan_of_a_stack_created_in_one_run_has_no_false_positive_in_either_mode(mode: str) -> None:
    from tooling.plan import plan_stack

    doc = plan_stack(ROOT / "stacks" / "Pulumi.civo-dev.yaml", mode=mode)
    assert (doc["ok"], doc["errors"], doc["violations"]) == (True, [], [])


def test_plan_mode_flag_defaults_to_a_first_preview() -> None:
    from tooling.cli import parser

    assert parser().parse_args(["plan", "--all"]).mode == "preview"
    assert parser().parse_args(["plan", "--all", "--mode", "update"]).mode == "update"
    with pytest.raises(SystemExit):
        parser().parse_args(["plan", "--all", "--mode", "destroy"])


@pytest.mark.parametrize("policy", ["device-stack-filtered", "cpu-claim-resources"])
@pytest.mark.parametrize("keep", ["nothing", "components only"])
def test_stack_rules_fed_sparse_outputs_report_or_defer_never_raise(
    stacks: dict[tuple[str, str], Resources], policy: str, keep: str
) -> None:
    """Whatever subset of outputs the engine has, a stack rule answers: messages, or undecided."""

    def sparse(resources: Resources) -> Resources:
        regs, root = resources
        return [
            r if (keep == "components only" and not r.custom) else dataclasses.replace(r, outputs={}) for r in regs
        ], root

    for stack in ("recipe-qwen-cpu-civo", "recipe-qwen-mi325x"):
        found = by_mode(stacks, stack, policy, sparse)
        for answer in found.values():
            assert isinstance(answer, list) or answer.startswith("undecided: "), answer

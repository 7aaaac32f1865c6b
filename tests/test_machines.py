"""Machine rules and cost: each rule passes and fails on every cloud; the plan prices fleets by hand-checked sums."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pulumi
import pytest

from clouds import MACHINES, catalog_date, cloud, machine
from components.base import policy_inputs
from infra import tokens
from infra.checks.devices import (
    ACCELERATOR_TYPE_UNKNOWN,
    CPU_CLAIM_EXCEEDS_MACHINE,
    MACHINE_ACCELERATOR_MISMATCH,
    UNKNOWN_MACHINE_TYPE,
    ZONE_OUTSIDE_REGION,
)
from infra.checks.guard import format_violations, guard
from infra.checks.machines import check_machine, fleet_violations
from infra.config.issues import located as in_file
from infra.config.model import InferenceClass
from infra.config.stackfile import located_checked
from infra.cost import (
    PoolSize,
    cluster_cost,
    cluster_cost_json,
    combine_totals,
    facts_cost,
    over_budget,
    total_json,
)
from infra.cpus import cpuset_size, reserved_cpus
from infra.facts import derive_cluster
from infra.machines import UNPRICED_REASONS, MachineType, Unpriced
from infra.machines import priced as priced_rows
from policies.config_rules import CONFIG_POLICIES
from policies.stack_rules import cost_over_budget, registered_cluster_cost
from tests.conftest import cpu_class, fleet_of, gpu_class, run_fleet
from tests.policy_harness import located, resource_args, run, stack_args, stack_resource
from tooling.machines_doc import render_machines_doc
from tooling.plan import plan_stack

ROOT = Path(__file__).resolve().parent.parent


# Per cloud: machine key, region, a CPU machine with 8 vCPUs, a 1-GPU machine and its accepted
# accelerator type, a type the cloud does not accept for it, a zone of the region (None: the cloud
# has no zones), a zone that is not.
CLOUDS: dict[str, dict[str, Any]] = {
    "GKE": {
        "key": "machineType",
        "cluster": {"project": "my-project", "region": "us-central1", "kubernetesVersion": "1.36"},
        "region": "us-central1",
        "cpu": "c3-standard-8",
        "gpu": "g2-standard-8",
        "type": "nvidia-l4",
        "bad_type": "nvidia-tesla-l4",
        "zone": "us-central1-a",
        "bad_zone": "us-east1-b",
    },
    "EKS": {
        "key": "instanceType",
        "cluster": {"region": "us-east-1", "kubernetesVersion": "1.36"},
        "region": "us-east-1",
        "cpu": "m7i.2xlarge",
        "gpu": "g6.xlarge",
        "type": "nvidia-l4",
        "bad_type": "nvidia-h100-80gb",
        "zone": "us-east-1a",
        "bad_zone": "us-west-2a",
    },
    "AKS": {
        "key": "vmSize",
        "cluster": {"location": "westeurope", "kubernetesVersion": "1.36"},
        "region": "westeurope",
        "cpu": "Standard_D8s_v5",
        "gpu": "Standard_NC24ads_A100_v4",
        "type": "nvidia-a100-80gb",
        "bad_type": "nvidia-l4",
        "zone": "1",
        "bad_zone": "westeurope-1",
    },
    "Civo": {
        "key": "size",
        "cluster": {"region": "LON1", "kubernetesVersion": "1.36.0-k3s1"},
        "region": "LON1",
        "cpu": "g4p.kube.medium",
        "gpu": "an.g1.l40s.kube.x1",
        "type": "nvidia-l40s",
        "bad_type": "nvidia-a100-80gb",
        "zone": None,
        "bad_zone": "lon1-a",
    },
    "Vultr": {
        "key": "plan",
        "cluster": {"region": "ewr", "kubernetesVersion": "v1.36.2+1"},
        "region": "ewr",
        "cpu": "vc2-8c-32gb",
        "gpu": "vcg-l40s-16c-180g-48vram",
        "type": "nvidia-l40s",
        "bad_type": "nvidia-h100",
        "zone": None,
        "bad_zone": "ewr-1",
    },
}
PROVIDERS = sorted(CLOUDS)


def gpu(cloud: str, machine_type: str, accel_type: str, count: int = 1) -> InferenceClass:
    block = {CLOUDS[cloud]["key"]: machine_type, "accelerator": {"type": accel_type, "count": count}}
    return InferenceClass.model_validate(gpu_class("g", cloud, block, count=count))


def cpu(cloud: str, machine_type: str, cpus: str = "6") -> InferenceClass:
    return InferenceClass.model_validate(cpu_class("c", cloud, {CLOUDS[cloud]["key"]: machine_type}, cpus=cpus))


def policies_of(cloud: str, cls: InferenceClass, zones: list[str] | None = None) -> list[str]:
    found = check_machine("k", cloud, "p", cls, CLOUDS[cloud]["region"], zones or [])
    return [v.policy for v in found]


# --------------------------------------------------------------------------------------------
# machine-accelerator-mismatch


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_gpu_class_on_its_gpu_machine_passes(cloud: str) -> None:
    c = CLOUDS[cloud]
    assert policies_of(cloud, gpu(cloud, c["gpu"], c["type"])) == []


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_gpu_class_on_a_cpu_machine_is_rejected(cloud: str) -> None:
    c = CLOUDS[cloud]
    assert policies_of(cloud, gpu(cloud, c["cpu"], c["type"])) == [MACHINE_ACCELERATOR_MISMATCH]


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_gpu_count_beyond_the_machine_is_rejected(cloud: str) -> None:
    c = CLOUDS[cloud]
    [v] = check_machine("k", cloud, "p", gpu(cloud, c["gpu"], c["type"], count=2), c["region"])
    assert v.policy == MACHINE_ACCELERATOR_MISMATCH
    assert "claims 2 GPU device(s)" in v.problem and "1x nvidia" in v.problem


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_cpu_class_on_a_cpu_machine_passes(cloud: str) -> None:
    assert policies_of(cloud, cpu(cloud, CLOUDS[cloud]["cpu"])) == []


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_cpu_class_on_a_gpu_machine_is_rejected(cloud: str) -> None:
    assert MACHINE_ACCELERATOR_MISMATCH in policies_of(cloud, cpu(cloud, CLOUDS[cloud]["gpu"]))


# --------------------------------------------------------------------------------------------
# accelerator-type-unknown


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_accelerator_type_the_cloud_does_not_accept_is_rejected(cloud: str) -> None:
    c = CLOUDS[cloud]
    [v] = check_machine("k", cloud, "p", gpu(cloud, c["gpu"], c["bad_type"]), c["region"])
    assert v.policy == ACCELERATOR_TYPE_UNKNOWN
    assert f"set classes[name=g].provisioning.{cloud.lower()}.accelerator.type to {c['type']}" == v.fix


# --------------------------------------------------------------------------------------------
# cpu-claim-exceeds-machine: 8 vCPUs less the 2 dra-driver-cpu reserves leave 6


def test_dra_driver_cpu_reserves_the_two_cpus_our_values_set() -> None:
    assert (cpuset_size("0-1"), cpuset_size("0,2,4-5"), cpuset_size("")) == (2, 4, 0)
    assert reserved_cpus() == 2


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_cpu_claim_within_the_machine_passes(cloud: str) -> None:
    assert policies_of(cloud, cpu(cloud, CLOUDS[cloud]["cpu"], cpus="6")) == []


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_cpu_claim_beyond_the_machine_is_rejected(cloud: str) -> None:
    [v] = check_machine("k", cloud, "p", cpu(cloud, CLOUDS[cloud]["cpu"], cpus="7"), CLOUDS[cloud]["region"])
    assert v.policy == CPU_CLAIM_EXCEEDS_MACHINE
    assert "claims 7 CPUs" in v.problem and "at most 6" in v.problem
    assert v.path == "classes[name=c].devices[0].capacity.dra.cpu/cpu"


# --------------------------------------------------------------------------------------------
# zone-outside-region


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_zone_of_the_region_passes(cloud: str) -> None:
    c = CLOUDS[cloud]
    zones = [c["zone"]] if c["zone"] else []
    assert policies_of(cloud, cpu(cloud, c["cpu"]), zones) == []


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_zone_outside_the_region_is_rejected(cloud: str) -> None:
    c = CLOUDS[cloud]
    [v] = check_machine("k", cloud, "p", cpu(cloud, c["cpu"]), c["region"], [c["bad_zone"]])
    assert v.policy == ZONE_OUTSIDE_REGION
    assert v.path == "clusters[name=k].nodePools[name=p].zones[0]"


# --------------------------------------------------------------------------------------------
# unknown-machine-type: stops the run unless the class takes the machine uncatalogued


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_unknown_machine_type_stops_the_run_with_a_fix_an_installed_user_can_apply(cloud: str) -> None:
    [v] = check_machine("k", cloud, "p", cpu(cloud, "no-such-machine"), CLOUDS[cloud]["region"])
    assert (v.policy, v.enforcement, v.mandatory) == (UNKNOWN_MACHINE_TYPE, "mandatory", True)
    # The fix is in the user's own stack file, not in a module of the installed package.
    assert f".provisioning.{cloud.lower()}.uncatalogued: true" in v.fix
    assert ".py" not in v.fix


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_known_machine_type_raises_no_warning(cloud: str) -> None:
    assert UNKNOWN_MACHINE_TYPE not in policies_of(cloud, cpu(cloud, CLOUDS[cloud]["cpu"]))


def uncatalogued_fleet(acknowledged: bool) -> dict[str, Any]:
    c = CLOUDS["GKE"]
    block: dict[str, Any] = {"machineType": "n4-standard-8"}
    if acknowledged:
        block["uncatalogued"] = True
    return {
        "classes": [cpu_class("c", "GKE", block)],
        "clusters": [
            {"name": "k", "source": "GKE", "gke": c["cluster"], "nodePools": [{"name": "p", "className": "c"}]}
        ],
        "budget": {"monthlyUsd": 100000},
    }


def test_an_unknown_machine_stops_the_program_until_the_class_takes_it_uncatalogued() -> None:
    raw = uncatalogued_fleet(acknowledged=False)
    assert [v.policy for v in fleet_violations(fleet_of(raw))] == [UNKNOWN_MACHINE_TYPE]
    assert located_checked(guard(fleet_of(raw)), "Pulumi.t.yaml").stops
    assert isinstance(run_fleet(raw).error, pulumi.RunError)
    taken = uncatalogued_fleet(acknowledged=True)
    assert fleet_violations(fleet_of(taken)) == []
    assert run_fleet(taken).error is None


def test_a_fleet_with_an_unpriced_pool_is_never_within_budget() -> None:
    # The known part is far under the budget, but the uncatalogued pools have no price. The priced
    # part: fee 0.10 + system at maxNodeCount 2 per zone x 3 zones x e2-standard-4 0.13402 = 0.90412 /h
    # x 730 h = 660.01 a month.
    raw = uncatalogued_fleet(acknowledged=True)
    raw["classes"].append(cpu_class("d", "GKE", {"machineType": "n4-standard-16", "uncatalogued": True}))
    raw["clusters"][0]["nodePools"].append({"name": "q", "className": "d"})
    [message] = run(cost_over_budget, stack_args(registered(raw, 100000), policy=cost_over_budget))
    assert message == (
        "Pulumi.t.yaml: modelplane:budget.monthlyUsd is 100000.00 USD and the priced part of the fleet costs "
        "660.01 USD a month at maxNodeCount, but n4-standard-16, n4-standard-8 have no price in the machine "
        "catalog, so the budget cannot be checked. Fix: use machines the catalog prices (docs/machines.md), state "
        "what you pay for them as provisioning.<cloud>.hourlyPrice on their classes, or accept the risk by making "
        "cost-over-budget advisory in the pack config"
    )
    # Over the budget on the priced part alone, the unpriced machines are named as left out.
    [message] = run(cost_over_budget, stack_args(registered(raw, 100), policy=cost_over_budget))
    assert message == (
        "Pulumi.t.yaml: modelplane:budget.monthlyUsd is 100.00 USD but the fleet costs 660.01 USD a month with "
        "every autoscaled pool at maxNodeCount (without n4-standard-16, n4-standard-8, which have no price in the "
        "machine catalog). Fix: lower nodeCount or maxNodeCount, pick cheaper machines, or raise "
        "modelplane:budget.monthlyUsd"
    )
    assert over_budget(Decimal(1), Decimal(100), ["n4-standard-8"]) is None
    assert over_budget(Decimal(101), Decimal(100), ["n4-standard-8"]) is True
    assert over_budget(Decimal(1), Decimal(100)) is False


def test_existing_clusters_have_no_machine_to_check() -> None:
    assert check_machine("byo", "Existing", "p", cpu("GKE", "no-such-machine"), None, ["anywhere"]) == []


# --------------------------------------------------------------------------------------------
# The held examples of the issue, through the guard and the pack


def cluster(name: str, cloud: str, pools: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "source": cloud, cloud.lower(): CLOUDS[cloud]["cluster"], "nodePools": pools}


HELD = {
    "m7i.2xlarge declared with 8 H100s": (
        {
            "classes": [
                gpu_class(
                    "h100",
                    "EKS",
                    {"instanceType": "m7i.2xlarge", "accelerator": {"type": "nvidia-h100-80gb", "count": 8}},
                    count=8,
                )
            ],
            "clusters": [cluster("eks-a", "EKS", [{"name": "h100", "className": "h100"}])],
        },
        MACHINE_ACCELERATOR_MISMATCH,
        "m7i.2xlarge carries no GPU",
    ),
    "an accelerator type GKE does not have": (
        {
            "classes": [
                gpu_class(
                    "l4",
                    "GKE",
                    {"machineType": "g2-standard-8", "accelerator": {"type": "nvidia-tesla-l4", "count": 1}},
                )
            ],
            "clusters": [cluster("gke-a", "GKE", [{"name": "l4", "className": "l4"}])],
        },
        ACCELERATOR_TYPE_UNKNOWN,
        "accelerator type 'nvidia-tesla-l4' is not one GKE accepts for g2-standard-8 (accepted: nvidia-l4)",
    ),
    "a zone from another region": (
        {
            "classes": [cpu_class("c", "GKE", {"machineType": "c3-standard-8"})],
            "clusters": [cluster("gke-a", "GKE", [{"name": "cpu", "className": "c", "zones": ["europe-west4-a"]}])],
        },
        ZONE_OUTSIDE_REGION,
        "zone 'europe-west4-a' is in region europe-west4, not in the cluster's region us-central1",
    ),
}


@pytest.mark.parametrize("case", sorted(HELD))
def test_held_example_is_an_error_naming_file_path_and_fix(case: str) -> None:
    raw, policy, problem = HELD[case]
    [v] = in_file(fleet_violations(fleet_of(raw)), "Pulumi.held.yaml")
    assert (v.policy, v.enforcement) == (policy, "mandatory")
    assert v.message.startswith("Pulumi.held.yaml: ")
    assert problem in v.message and "(at " in v.message and ". Fix: " in v.message
    checked = located_checked(guard(fleet_of(raw)), "Pulumi.held.yaml")
    assert checked.stopping_violations == [v]
    assert v.message in format_violations(checked.stopping_violations)


@pytest.mark.parametrize("case", sorted(HELD))
def test_pack_rejects_the_held_example_as_the_guard_does(case: str) -> None:
    raw, policy, problem = HELD[case]
    fleet = fleet_of(raw)
    specs = {c.name: c.model_dump(by_alias=True, mode="json", exclude_none=True) for c in fleet.classes}
    spec = fleet.clusters[0]
    props = policy_inputs(derive_cluster(fleet, spec), specs)
    token = cloud(spec.source).component_token
    found = {
        (p.name, m) for p in CONFIG_POLICIES for m in run(p, resource_args(token, props, name=spec.name, policy=p))
    }
    assert found == {(v.policy, v.message) for v in fleet_violations(fleet)}
    assert any(name == policy and problem in message for name, message in found)


# --------------------------------------------------------------------------------------------
# Cost


def priced(prices: dict[str, str | None]) -> Any:
    """A catalog lookup whose rows carry the given test prices (USD per hour; None: no price)."""

    def lookup(cloud: str, name: str) -> MachineType | None:
        row = machine(cloud, name)
        if row is None or name not in prices:
            return row
        price = prices[name]
        if price is None:
            return replace(row, price_usd_hour=None, unpriced=Unpriced("price-page-unread", "a test", row.source))
        return replace(row, price_usd_hour=Decimal(price), unpriced=None)

    return lookup


def gke_fleet() -> dict[str, Any]:
    return {
        "classes": [
            gpu_class("l4", "GKE", {"machineType": "g2-standard-8", "accelerator": {"type": "nvidia-l4", "count": 1}}),
            cpu_class("c", "GKE", {"machineType": "c3-standard-8"}),
        ],
        "clusters": [
            cluster(
                "gke-a",
                "GKE",
                [
                    {"name": "l4", "className": "l4", "nodeCount": 1, "minNodeCount": 0, "maxNodeCount": 4},
                    {"name": "cpu", "className": "c", "nodeCount": 2},
                ],
            )
        ],
    }


def test_cost_of_a_fleet_matches_the_sum_worked_out_by_hand() -> None:
    fleet = fleet_of(gke_fleet())
    prices = priced({"e2-standard-4": "0.20", "g2-standard-8": "1.00", "c3-standard-8": "0.50"})
    cost = facts_cost(derive_cluster(fleet, fleet.clusters[0]), prices)
    assert cost is not None
    # GKE starts an autoscaled pool's nodeCount rounded up to whole nodes in each of its zones, and
    # counts a fixed pool per zone; a regional pool without zones has three. System 1 per zone x 3
    # zones x 0.20 (3..6), l4 nodeCount 1 starting 1 per zone x 3 zones x 1.00 (0..4), cpu 2 per zone
    # x 3 zones x 0.50, control plane 0.10:
    # at the start 0.60 + 3.00 + 3.00 + 0.10 = 6.70 /h, x 730 h = 4891.00 a month;
    # at maxNodeCount 1.20 + 4.00 + 3.00 + 0.10 = 8.30 /h, x 730 h = 6059.00 a month;
    # at minNodeCount (system 3, l4 0) 0.60 + 0 + 3.00 + 0.10 = 3.70 /h, x 730 h = 2701.00 a month.
    doc = cluster_cost_json(cost)
    assert (doc["hourly"], doc["monthly"], doc["hourlyAtMax"], doc["monthlyAtMax"]) == (6.7, 4891.0, 8.3, 6059.0)
    assert (doc["hourlyAtMin"], doc["monthlyAtMin"]) == (3.7, 2701.0)
    assert (doc["currency"], doc["regionPriced"], doc["complete"], doc["unpriced"]) == ("USD", "us-central1", True, [])
    pools = {p["name"]: p for p in doc["pools"]}
    assert pools["l4"] == {
        "name": "l4",
        "machine": "g2-standard-8",
        "unitHourly": 1.0,
        "hourly": 3.0,
        "monthly": 2190.0,
        "hourlyAtMin": 0.0,
        "monthlyAtMin": 0.0,
        "hourlyAtMax": 4.0,
        "monthlyAtMax": 2920.0,
        "priceFrom": "catalog",
        "unpricedReason": None,
        "capacity": "OnDemand",
        "priceBasis": "on-demand list price read on 2026-12-03",
    }
    assert (pools["cpu"]["monthly"], pools["cpu"]["monthlyAtMin"], pools["cpu"]["monthlyAtMax"]) == (2190.0, None, None)
    assert (pools["system"]["monthlyAtMin"], pools["system"]["monthly"], pools["system"]["monthlyAtMax"]) == (
        438.0,
        438.0,
        876.0,
    )


def test_a_machine_without_a_price_is_left_out_and_named_never_free() -> None:
    cost = cluster_cost("k", "EKS", [PoolSize("gpu", "p5.48xlarge", 2, 2)], priced({"p5.48xlarge": None}))
    assert cost is not None
    doc = cluster_cost_json(cost)
    assert (doc["monthly"], doc["complete"], doc["unpriced"]) == (73.0, False, ["p5.48xlarge"])
    assert doc["pools"][0]["monthly"] is None and doc["pools"][0]["priceFrom"] is None
    # The plan says why: the row's reason, by key and text.
    reason = doc["pools"][0]["unpricedReason"]
    assert reason["reason"] == "price-page-unread" and reason["text"].startswith(UNPRICED_REASONS["price-page-unread"])
    assert doc["unpricedReasons"] == {"p5.48xlarge": reason["text"]}


def test_a_catalog_row_without_a_price_carries_its_reason_into_the_plan() -> None:
    cost = cluster_cost("k", "EKS", [PoolSize("gpu", "p5e.48xlarge", 1, 1)])
    assert cost is not None
    doc = cluster_cost_json(cost)
    assert doc["pools"][0]["unpricedReason"]["reason"] == "capacity-blocks-only"
    assert "Capacity Blocks" in doc["unpricedReasons"]["p5e.48xlarge"]
    # A machine with no catalog row says so too.
    cost = cluster_cost("k", "EKS", [PoolSize("gpu", "zz.unknown", 1, 1)])
    assert cost is not None
    assert cluster_cost_json(cost)["pools"][0]["unpricedReason"]["reason"] == "uncatalogued"


def test_totals_of_every_stack_add_up() -> None:
    a = {"hourly": 2.3, "monthly": 1679.0, "hourlyAtMax": 5.5, "monthlyAtMax": 4015.0, "complete": True, "unpriced": []}
    b = {"hourly": 0.1, "monthly": 73.0, "hourlyAtMax": 0.1, "monthlyAtMax": 73.0, "complete": False, "unpriced": ["x"]}
    a |= {"hourlyAtMin": 1.2, "monthlyAtMin": 876.0}
    b |= {"hourlyAtMin": 0.1, "monthlyAtMin": 73.0}
    total = combine_totals([a, b])
    assert (total["hourlyAtMin"], total["monthlyAtMin"]) == (1.3, 949.0)
    assert (total["hourly"], total["monthly"], total["monthlyAtMax"], total["complete"], total["unpriced"]) == (
        2.4,
        1752.0,
        4088.0,
        False,
        ["x"],
    )


def test_existing_cluster_shows_no_price_and_provisioned_ones_do() -> None:
    byo = plan_stack(ROOT / "stacks" / "Pulumi.byo-amd.yaml")
    assert byo["ok"] and byo["clusters"][0]["cost"] is None
    assert (byo["cost"]["monthly"], byo["cost"]["budget"]) == (0.0, None)
    gke = plan_stack(ROOT / "stacks" / "Pulumi.gke-prod.yaml")
    cost = gke["clusters"][0]["cost"]
    # us-central1: fee 0.10 + system 1 per zone x 3 zones x e2-standard-4 0.13402 + l4 nodeCount 1
    # starting 1 per zone x 2 zones x g2-standard-8 0.85362 + cpu 2 per zone x 3 zones x c3-standard-8
    # 0.40322 = 4.62862 /h, 3378.8926 a month; the spot pool at c3-standard-8's spot price (nodeCount 1,
    # one node in each of 3 zones: 3 x 0.06302 x 730 = 138.0138) and the reserved one at its
    # `capacity.hourlyPrice` (0.60 x 730 = 438.00): 3954.9064 a month.
    assert (cost["controlPlane"]["hourly"], cost["monthly"], cost["regionPriced"]) == (0.1, 3954.91, "us-central1")
    assert (cost["complete"], cost["unpriced"]) == (True, [])
    assert [p["name"] for p in cost["pools"]] == ["system", "l4", "cpu", "cpu-spot", "l4-reserved"]


# --------------------------------------------------------------------------------------------
# Budget


def test_budget_is_advisory_by_default() -> None:
    from pulumi_policy import EnforcementLevel

    assert cost_over_budget.enforcement_level == EnforcementLevel.ADVISORY


def registered(raw: dict[str, Any], budget: float) -> list[Any]:
    fleet = fleet_of(raw)
    specs = {c.name: c.model_dump(by_alias=True, mode="json", exclude_none=True) for c in fleet.classes}
    out = [
        stack_resource(
            tokens.BUDGET, {"monthlyUsd": budget, "currency": "USD", "stackFile": "Pulumi.t.yaml"}, name="budget"
        )
    ]
    for spec in fleet.clusters:
        props = policy_inputs(derive_cluster(fleet, spec), specs)
        out.append(stack_resource(cloud(spec.source).component_token, props, name=spec.name))
    return out


def two_clusters() -> dict[str, Any]:
    raw = gke_fleet()
    raw["classes"].append(cpu_class("ce", "EKS", {"instanceType": "m7i.2xlarge"}))
    raw["clusters"].append(cluster("eks-a", "EKS", [{"name": "cpu", "className": "ce"}]))
    return raw


def test_fleet_over_its_budget_is_reported_with_file_key_and_fix() -> None:
    # At maxNodeCount, GKE: fee 0.10 + system 2 per zone x 3 zones x 0.13402 + l4 4 x 0.85362 + cpu 2
    # per zone x 3 zones x 0.40322 = 6.73792 /h; EKS: fee 0.10 + system 2 x m6i.xlarge 0.192 + cpu 1 x
    # m7i.2xlarge 0.4032 = 0.8872 /h. 7.62512 /h x 730 h = 5566.3376 a month, over a budget of 100.
    [message] = run(cost_over_budget, stack_args(registered(two_clusters(), 100), policy=cost_over_budget))
    assert message.startswith(
        "Pulumi.t.yaml: modelplane:budget.monthlyUsd is 100.00 USD but the fleet costs 5566.34 USD"
    )
    assert "without " not in message and "Fix: " in message  # every machine of this fleet has a price


def test_fleet_within_its_budget_passes() -> None:
    assert run(cost_over_budget, stack_args(registered(two_clusters(), 5567), policy=cost_over_budget)) == []


def test_a_budget_above_the_fleets_minimum_but_below_its_maximum_is_still_over() -> None:
    # At minNodeCount, GKE: fee 0.10 + system 1 per zone x 3 zones x 0.13402 + l4 0 + cpu 6 x 0.40322 =
    # 2.92138 /h; EKS: fee 0.10 + system 1 x 0.192 + cpu 0.4032 = 0.6952 /h; 3.61658 /h x 730 h =
    # 2640.1034 a month. A budget of 3000 covers that, not the maximum (5566.34): over.
    fleet = fleet_of(two_clusters())
    costs = [facts_cost(derive_cluster(fleet, c)) for c in fleet.clusters]
    assert total_json([c for c in costs if c is not None])["monthlyAtMin"] == 2640.1
    [message] = run(cost_over_budget, stack_args(registered(two_clusters(), 3000), policy=cost_over_budget))
    assert "3000.00 USD but the fleet costs 5566.34 USD" in message


def h100_fleet(price: float | None) -> dict[str, Any]:
    """A GKE cluster with a pool of a3-highgpu-8g, a machine the catalog has no price for, at its class's own price."""
    block: dict[str, Any] = {"machineType": "a3-highgpu-8g", "accelerator": {"type": "nvidia-h100-80gb", "count": 8}}
    if price is not None:
        block["hourlyPrice"] = price
    return {
        "classes": [gpu_class("h100", "GKE", block, count=8)],
        "clusters": [cluster("gke-h", "GKE", [{"name": "h100", "className": "h100", "nodeCount": 1}])],
    }


def test_a_class_that_states_its_price_is_priced_at_it_and_marked_as_its_own() -> None:
    fleet = fleet_of(h100_fleet(40))
    cost = facts_cost(derive_cluster(fleet, fleet.clusters[0]))
    assert cost is not None
    doc = cluster_cost_json(cost)
    pools = {p["name"]: p for p in doc["pools"]}
    assert (pools["h100"]["unitHourly"], pools["h100"]["priceFrom"], pools["h100"]["unpricedReason"]) == (
        40.0,
        "class",
        None,
    )
    assert pools["system"]["priceFrom"] == "catalog"
    # fee 0.10 + h100 1 per zone x 3 zones (a regional cluster) x 40 + system 1 per zone x 3 zones x
    # e2-standard-4 0.13402, x 730 h: (0.10 + 120 + 0.40206) x 730 = 87966.50 a month
    assert (doc["complete"], doc["unpriced"], doc["monthly"]) == (True, [], 87966.5)
    # Without it the pool is unpriced, and says why.
    fleet = fleet_of(h100_fleet(None))
    cost = facts_cost(derive_cluster(fleet, fleet.clusters[0]))
    assert cost is not None
    pool = next(p for p in cluster_cost_json(cost)["pools"] if p["name"] == "h100")
    assert (pool["priceFrom"], pool["unpricedReason"]["reason"]) == (None, "source-conflict")


def test_the_tree_marks_a_class_price_and_says_why_a_pool_has_none() -> None:
    from tooling.render import pool_cost_text

    for price, text in (
        (40, " — $40.00/h (the class's own price), $87,600.00/month"),
        (None, " — price unknown: the public price list read for it contradicts itself"),
    ):
        fleet = fleet_of(h100_fleet(price))
        cost = facts_cost(derive_cluster(fleet, fleet.clusters[0]))
        assert cost is not None
        assert pool_cost_text({"cost": cluster_cost_json(cost)}, "h100").startswith(text)


def test_a_class_price_replaces_the_catalogs_own() -> None:
    raw = gke_fleet()
    raw["classes"][0]["provisioning"]["gke"]["hourlyPrice"] = "0.5"  # as `pulumi config set --path` writes it
    fleet = fleet_of(raw)
    cost = facts_cost(derive_cluster(fleet, fleet.clusters[0]))
    assert cost is not None
    l4 = next(p for p in cluster_cost_json(cost)["pools"] if p["name"] == "l4")
    assert (l4["machine"], l4["unitHourly"], l4["priceFrom"]) == ("g2-standard-8", 0.5, "class")


def test_a_pool_priced_by_its_class_passes_a_budget_the_catalog_alone_cannot_check() -> None:
    # fee 0.10 + 3 x 40 + system at maxNodeCount 2 per zone x 3 zones x 0.13402 = 120.90412 /h x 730 h
    # = 88260.01 a month.
    [message] = run(cost_over_budget, stack_args(registered(h100_fleet(None), 100000), policy=cost_over_budget))
    assert "a3-highgpu-8g have no price in the machine catalog, so the budget cannot be checked" in message
    assert run(cost_over_budget, stack_args(registered(h100_fleet(40), 88261), policy=cost_over_budget)) == []
    [message] = run(cost_over_budget, stack_args(registered(h100_fleet(40), 88260), policy=cost_over_budget))
    assert "the fleet costs 88260.01 USD a month" in message
    # The pack reads the figure the pool registered, exactly.
    [pool] = [p for p in registered_props(h100_fleet(40.25), "gke-h")["pools"] if p["name"] == "h100"]
    assert pool["hourlyPrice"] == "40.25"


def test_budget_key_is_read_and_rejected_when_not_positive() -> None:
    raw = dict(gke_fleet(), budget={"monthlyUsd": 500})
    assert fleet_of(raw).budget is not None and fleet_of(raw).budget.monthly_usd == Decimal(500)  # type: ignore[union-attr]
    with pytest.raises(Exception, match=r"budget\.monthlyUsd"):
        fleet_of(dict(gke_fleet(), budget={"monthlyUsd": 0}))


def registered_props(raw: dict[str, Any], name: str) -> dict[str, Any]:
    fleet = fleet_of(raw)
    specs = {c.name: c.model_dump(by_alias=True, mode="json", exclude_none=True) for c in fleet.classes}
    return policy_inputs(derive_cluster(fleet, fleet.cluster_named(name)), specs)


def test_cost_inputs_are_read_from_each_registered_pool() -> None:
    raw = gke_fleet()
    raw["clusters"][0]["nodePools"][0]["nodeCount"] = 0  # autoscaled from zero
    props = registered_props(raw, "gke-a")
    props["pools"][2]["machine"] = None
    cost = registered_cluster_cost(stack_resource("modelplane:gke:GkeCluster", props, name="gke-a"))
    assert cost is not None and (cost.name, cost.source) == ("gke-a", "GKE")
    assert [p.size for p in cost.pools] == [
        PoolSize("system", "e2-standard-4", 3, 6, autoscaled=True),  # 1..2 in each of the 3 zones
        PoolSize("l4", "g2-standard-8", 0, 4, autoscaled=True),
        PoolSize("cpu", None, 6, 6),  # 2 per zone in the 3 zones of a regional pool
    ]


def test_existing_cluster_component_has_no_registered_cost() -> None:
    raw = {
        "classes": [cpu_class("byo-cpu", None)],
        "clusters": [
            {
                "name": "byo",
                "source": "Existing",
                "existing": {"kubernetesVersion": "1.36"},
                "nodePools": [{"name": "c", "className": "byo-cpu"}],
            }
        ],
    }
    props = registered_props(raw, "byo")
    assert registered_cluster_cost(stack_resource("modelplane:existing:ExistingCluster", props, name="byo")) is None


def test_budget_message_names_the_machines_it_could_not_price() -> None:
    raw = {
        "classes": [
            cpu_class("c16", "GKE", {"machineType": "zz-custom-16"}),
            cpu_class("c8", "GKE", {"machineType": "zz-custom-8"}),
        ],
        "clusters": [cluster("gke-a", "GKE", [{"name": "a", "className": "c16"}, {"name": "b", "className": "c8"}])],
    }
    resources = registered(raw, 100)
    # At maxNodeCount: fee 0.10 + system 2 per zone x 3 zones x e2-standard-4 0.13402 = 0.90412 /h,
    # x 730 h = 660.0076 a month.
    assert located(cost_over_budget, stack_args(resources, policy=cost_over_budget)) == [
        (
            "Pulumi.t.yaml: modelplane:budget.monthlyUsd is 100.00 USD but the fleet costs 660.01 USD a month with "
            "every autoscaled pool at maxNodeCount (without zz-custom-16, zz-custom-8, which have no price in the "
            "machine catalog). Fix: lower nodeCount or maxNodeCount, pick cheaper machines, or raise "
            "modelplane:budget.monthlyUsd",
            resources[0].urn,
        )
    ]


def test_budget_message_of_a_fully_priced_fleet_names_no_missing_price() -> None:
    [(message, _)] = located(cost_over_budget, stack_args(registered(two_clusters(), 100), policy=cost_over_budget))
    assert message == (
        "Pulumi.t.yaml: modelplane:budget.monthlyUsd is 100.00 USD but the fleet costs 5566.34 USD a month with "
        "every autoscaled pool at maxNodeCount. Fix: lower nodeCount or maxNodeCount, pick cheaper machines, or "
        "raise modelplane:budget.monthlyUsd"
    )


# --------------------------------------------------------------------------------------------
# The catalog


def test_every_row_names_its_source_and_read_date() -> None:
    for m in MACHINES:
        assert m.source.startswith("https://") and len(m.read_on) == 10, m.name
        assert (m.gpu is None) == (m.accelerator_types == ()), m.name


def test_every_row_has_a_price_with_its_source_and_read_date_or_a_reason_for_having_none() -> None:
    for m in MACHINES:
        if m.price_usd_hour is not None:
            assert m.price_usd_hour > 0 and m.unpriced is None, m.name
            assert m.price_source is not None and m.price_source.startswith("https://"), m.name
            assert m.price_read_on is not None and len(m.price_read_on) == 10, m.name
        else:
            assert m.unpriced is not None and m.unpriced.reason in UNPRICED_REASONS, m.name
            assert m.unpriced.source.startswith("https://") and m.unpriced.detail, m.name
            assert m.price_source is None and m.price_read_on is None, m.name


# The rows without a price, by reason. Only the first three reasons are facts about the cloud; a row
# in the last two is a price that exists but could not be taken, so this list is the debt, and a new
# row cannot join it without changing this test.
UNPRICED_ROWS = {
    # AWS sells p5e only as EC2 Capacity Blocks: no on-demand row in any region of the price list.
    "capacity-blocks-only": {("EKS", "p5e.48xlarge")},
    # Nebius prices B200 in us-central1 only; the catalog prices Nebius in eu-north1.
    "not-offered-in-price-region": {("Nebius", "gpu-b200-sxm/8gpu-160vcpu-1792gb")},
    # The GCP list prices A100 80GB and H100 in us-central1 at under half of us-east4's rate (and
    # the H100 8-GPU machine at under half its MEGA sibling): no figure is taken from it.
    "source-conflict": {
        ("GKE", "a2-ultragpu-1g"),
        ("GKE", "a2-ultragpu-2g"),
        ("GKE", "a2-ultragpu-4g"),
        ("GKE", "a2-ultragpu-8g"),
        ("GKE", "a3-highgpu-8g"),
        # DigitalOcean's H100 Droplets: the public readings of its size API disagree (3.39 to 4.89).
        ("DigitalOcean", "gpu-h100x1-80gb"),
        ("DigitalOcean", "gpu-h100x8-640gb"),
    },
    # Civo and Vultr publish GPU prices on their own pages only, and no copy of them could be read.
    "price-page-unread": {
        ("Civo", "g4s.kube.medium"),
        ("Civo", "g4s.kube.large"),
        ("Civo", "g4p.kube.small"),
        ("Civo", "g4p.kube.medium"),
        ("Civo", "g4p.kube.large"),
        ("Civo", "g4p.kube.xlarge"),
        ("Civo", "an.g1.l40s.kube.x1"),
        ("Vultr", "vcg-l40s-16c-180g-48vram"),
        ("Vultr", "vcg-a100-12c-120g-80vram"),
    },
}


def test_the_unpriced_rows_are_exactly_the_known_ones_each_with_its_reason() -> None:
    found: dict[str, set[tuple[str, str]]] = {}
    for m in MACHINES:
        if m.unpriced is not None:
            found.setdefault(m.unpriced.reason, set()).add((m.cloud, m.name))
    assert found == UNPRICED_ROWS
    assert "contract-only" not in found  # every machine of the catalog is sold on demand somewhere
    assert sum(map(len, found.values())) == 18 and len(MACHINES) == 124


def test_aws_p4_and_p5_carry_the_on_demand_prices_after_the_june_2025_cut() -> None:
    # AWS cut P4 and P5 on-demand prices in June 2025; the rows cite the price list read after it.
    # p5.48xlarge was 98.32 USD/h in us-east-1 before the cut.
    for name, price in (("p4d.24xlarge", "21.957642"), ("p5.48xlarge", "55.04")):
        row = machine("EKS", name)
        assert row is not None and row.price_usd_hour == Decimal(price), name
        assert row.price_read_on == "2026-12-03" and "e385a0d348eda9cefd9806423e7725944dc249e4" in str(row.price_source)


def test_the_catalog_date_counts_the_day_prices_were_read() -> None:
    # The rows' shapes were read on 2026-12-01, the price lists re-read on 2026-12-03.
    assert catalog_date() == max(str(m.price_read_on) for m in MACHINES if m.price_read_on) == "2026-12-03"


def test_a_row_with_neither_a_price_nor_a_reason_does_not_load() -> None:
    row = MachineType("EKS", "zz.test", 4, 16, None, (), "https://example.com")
    with pytest.raises(AssertionError, match="neither a price nor a reason"):
        priced_rows([row], {})
    with pytest.raises(AssertionError, match="unknown unpriced reason"):
        Unpriced("too-expensive", "x", "https://example.com")


def test_machines_doc_lists_each_machine_with_its_source() -> None:
    text = render_machines_doc()
    assert "| `p5.48xlarge` | 192 | 2048 | 8x nvidia H100 80GB | 80 |" in text
    assert "## Adding a machine" in text


# --------------------------------------------------------------------------------------------
# The budget end to end: the program registers it, the pack (run as the engine runs it) judges it


def over_budget_resources() -> list[Any]:
    from tests.conftest import run_fleet

    raw = dict(two_clusters(), budget={"monthlyUsd": 100}, protect=True)
    result = run_fleet(raw, stack="t")
    assert result.error is None
    assert [r.inputs for r in result.resources if r.type == tokens.BUDGET] == [
        {"monthlyUsd": 100.0, "currency": "USD", "stackFile": "Pulumi.t.yaml"}
    ]
    return result.resources


def test_pack_reports_the_budget_advisory_by_default_and_mandatory_by_config() -> None:
    from tooling.analyzer import run_policy_pack

    resources = over_budget_resources()
    found = [(v.policy, v.enforcement) for v in run_policy_pack(resources, stack="t") if v.policy == "cost-over-budget"]
    assert found == [("cost-over-budget", "advisory")]
    strict = run_policy_pack(resources, stack="t", config={"cost-over-budget": "mandatory"})
    assert [(v.policy, v.enforcement) for v in strict if v.policy == "cost-over-budget"] == [
        ("cost-over-budget", "mandatory")
    ]


def plan_tree(stack: str) -> subprocess.CompletedProcess[str]:
    """The human plan of a committed stack, printed wide enough that no cost line wraps."""
    out = subprocess.run(
        [sys.executable, "-m", "tooling.cli", "plan", "--stack", stack],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "COLUMNS": "200"},
    )
    assert out.returncode == 0, out.stderr
    return out


def test_plan_tree_prints_the_cost_of_each_pool_cluster_and_stack() -> None:
    out = plan_tree("gke-prod")
    # g2-standard-8 at 0.85362 /h: 0 at minNodeCount 0, 2492.57 a month at 4, and nodeCount 1 starts
    # one node in each of the pool's 2 zones, 1246.29; the system pool is 1..2 in each of 3 zones
    # (3 x 0.13402 x 730 = 293.5038 .. 587.0076), the cpu pool fixed (2 per zone x 3 zones x 0.40322 x
    # 730 = 1,766.1036), the fee 73.00; the spot pool 1..4 at c3-standard-8's spot price 0.06302
    # (46.0046 .. 184.0184, and 138.0138 at nodeCount 1, one node in each of 3 zones), the reserved
    # pool one node at its hourlyPrice 0.60 (438.00). The cluster at its minimum: 293.5038 + 0 +
    # 1,766.1036 + 73 + 46.0046 + 438 = 2,616.612; at nodeCount 3,954.91; at its maximum 5,540.70.
    assert (
        "l4 GPU 1x nvidia-l4 on g2-standard-8 — 2 node(s) (nodeCount 1 rounded up per zone), 0..4, scales up from "
        "zero — $0.85/h, $0.00..$2,492.57/month ($1,246.29 at nodeCount)"
    ) in " ".join(out.stdout.replace("│", "").split())
    assert "system System on e2-standard-4 — 3 node(s), 3..6 — $0.13/h, $293.50..$587.01/month\n" in out.stdout
    assert "cpu CPU on c3-standard-8 — 6 node(s): 2 in each of 3 zones — $0.40/h, $1,766.10/month" in out.stdout
    assert (
        "cost: $2,616.61..$5,540.70 USD/month ($3,954.91 at nodeCount) at us-central1 prices (catalog 2026-12-03)"
        in out.stdout
    )
    assert "stack cost: $2,616.61..$5,540.70 USD/month ($3,954.91 at nodeCount) (catalog 2026-12-03)\n" in out.stdout


def test_plan_tree_names_a_machine_with_no_price_and_never_counts_it() -> None:
    out = plan_tree("vultr-dev")
    # Vultr publishes monthly costs: vc2-6c-16gb 80 and vc2-8c-32gb 160 a month; the L40S plan has none.
    assert (
        "l40s GPU 1x nvidia-l40s on vcg-l40s-16c-180g-48vram — 1 node(s), 1..3, cannot scale up from zero — price "
        "unknown" in " ".join(out.stdout.replace("│", "").split())
    )
    assert "system System on vc2-6c-16gb — 1 node(s), 1..2 — $0.11/h, $80.00..$160.00/month" in out.stdout
    assert (
        "stack cost: $240.00..$320.00 USD/month (catalog 2026-12-03) + unpriced: Vultr control plane, "
        "vcg-l40s-16c-180g-48vram" in " ".join(out.stdout.split())
    )


def test_machines_of_the_example_stacks_carry_the_price_read_for_the_priced_region() -> None:
    expected = {
        ("GKE", "g2-standard-8"): "0.85362",
        ("GKE", "c3-standard-8"): "0.40322",
        ("GKE", "e2-standard-4"): "0.13402",
        ("EKS", "g6.xlarge"): "0.8048",
        ("EKS", "m7i.2xlarge"): "0.4032",
        ("EKS", "m6i.xlarge"): "0.192",
        ("EKS", "p5.48xlarge"): "55.04",
        ("AKS", "Standard_NC24ads_A100_v4"): "3.673",
        ("AKS", "Standard_D8s_v5"): "0.384",
        ("AKS", "Standard_D4s_v5"): "0.192",
        ("Vultr", "vc2-8c-32gb"): "0.219178",  # 160 a month / 730 h
        ("Vultr", "vc2-6c-16gb"): "0.109589",  # 80 a month / 730 h
    }
    for (source, name), price in expected.items():
        row = machine(source, name)
        assert row is not None and row.price_usd_hour == Decimal(price), name
        assert row.price_source is not None and row.price_source.startswith("https://github.com/"), name
    # No price could be read for these: they stay unknown, never zero, and say why.
    for source, name in (("Civo", "g4p.kube.medium"), ("Vultr", "vcg-l40s-16c-180g-48vram")):
        row = machine(source, name)
        assert row is not None and row.price_usd_hour is None and row.price_source is None
        assert row.unpriced is not None and row.unpriced.reason == "price-page-unread"


@pytest.mark.parametrize(
    ("zones", "node_count", "nodes"),
    [
        (["us-central1-a", "us-central1-b"], 1, 2),  # 1 per named zone
        ([], 2, 6),  # a regional pool without zones spans three zones
        (["us-central1-a"], 3, 3),
    ],
)
def test_a_fixed_gke_pool_is_counted_and_priced_per_zone_everywhere(
    zones: list[str], node_count: int, nodes: int
) -> None:
    # google_container_node_pool `node_count` is per zone of the pool; the facts, the plan's cost and
    # the budget policy's cost from the registered inputs all count the nodes GKE creates.
    raw = gke_fleet()
    gpu = raw["clusters"][0]["nodePools"][0]
    gpu.pop("minNodeCount", None), gpu.pop("maxNodeCount", None)
    gpu.update(nodeCount=node_count, zones=zones)
    fleet = fleet_of(raw)
    facts = derive_cluster(fleet, fleet.clusters[0])
    pool = facts.pool(gpu["name"])
    assert (pool.created_nodes, pool.nodes) == (nodes, nodes)
    planned = facts_cost(facts)
    assert planned is not None
    cost = next(p for p in planned.pools if p.size.name == gpu["name"])
    assert cost.hourly == cost.unit_usd_hour * nodes  # type: ignore[operator]
    registered = registered_cluster_cost(
        stack_resource(cloud("GKE").component_token, policy_inputs(facts, {}), name=facts.name)
    )
    assert registered is not None and registered.hourly_at_max == planned.hourly_at_max

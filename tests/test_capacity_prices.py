"""Capacity prices: spot prices in the machine catalog, each pool priced at its capacity, the budget
counting that price, and the plan stating each pool's capacity, price basis and reclaim risk."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from clouds import catalog_date, cloud, machine
from components.base import policy_inputs
from infra import tokens
from infra.config.clusters import CapacityType, PoolCapacity
from infra.cost import (
    NO_CAPACITY_PRICE,
    NO_SPOT_PRICE,
    PRICE_FROM_CAPACITY,
    PRICE_FROM_CATALOG,
    PRICE_FROM_SPOT,
    PRICE_FROM_SPOT_CEILING,
    PoolSize,
    facts_cost,
    pool_cost,
    pool_cost_json,
)
from infra.facts import RECLAIMABLE_TEXT, derive_cluster
from infra.machines import SPOT_READ_ON, spot_priced
from policies.stack_rules import cost_over_budget, registered_cluster_cost
from tests.conftest import cpu_class, fleet_of
from tests.policy_harness import run, stack_args, stack_resource
from tooling.plan import plan_stack
from tooling.render import capacity_text

ROOT = Path(__file__).resolve().parent.parent
SKYPILOT_AWS = "skypilot-catalog/blob/e385a0d348eda9cefd9806423e7725944dc249e4/catalogs/v8/aws/vms.csv"

# --------------------------------------------------------------------------------------------
# Spot prices in the catalog


def test_a_machine_with_a_published_spot_price_carries_it_with_its_source_and_day() -> None:
    m7i = machine("EKS", "m7i.2xlarge")
    assert m7i is not None and m7i.spot_source is not None
    # SkyPilot's AWS catalog, us-east-1: the highest SpotPrice of the region's zones (use1-az6).
    assert (m7i.spot_usd_hour, m7i.spot_read_on) == (Decimal("0.1819"), SPOT_READ_ON)
    assert SKYPILOT_AWS in m7i.spot_source
    # The highest zone counts: two us-east-1 zones ask the on-demand price for p5.48xlarge on spot.
    p5 = machine("EKS", "p5.48xlarge")
    assert p5 is not None and p5.spot_usd_hour == p5.price_usd_hour == Decimal("55.04")
    # GCP: the same in each us-central1 zone.
    c3 = machine("GKE", "c3-standard-8")
    assert c3 is not None and (c3.spot_usd_hour, c3.price_usd_hour) == (Decimal("0.06302"), Decimal("0.40322"))
    # Azure prices spot per region: SkyPilot's Azure catalog, eastus.
    a100 = machine("AKS", "Standard_NC24ads_A100_v4")
    assert a100 is not None and (a100.spot_usd_hour, a100.price_usd_hour) == (Decimal("0.444433"), Decimal("3.673"))
    h100 = machine("Nebius", "gpu-h100-sxm/8gpu-128vcpu-1600gb")
    assert h100 is not None and (h100.spot_usd_hour, h100.price_usd_hour) == (Decimal("10.00"), Decimal("23.60"))
    # A spot price moves from day to day: its pool states its read day, and the catalog's date
    # (the on-demand lists') stays what it was.
    assert catalog_date() == "2026-12-03" < SPOT_READ_ON


def test_a_machine_without_a_published_spot_price_has_none() -> None:
    # Nebius's catalog has an empty SpotPrice for its L40S presets; GKE's spot column is not read here.
    for source, name in (
        ("Nebius", "gpu-l40s-a/1gpu-8vcpu-32gb"),
        ("GKE", "g2-standard-8"),
        ("AKS", "Standard_D4s_v5"),
    ):
        row = machine(source, name)
        assert row is not None and row.price_usd_hour is not None  # priced on demand, not on spot
        assert (row.spot_usd_hour, row.spot_source, row.spot_read_on) == (None, None, None)


def test_a_spot_price_for_a_machine_without_a_row_is_refused() -> None:
    row = machine("EKS", "m7i.2xlarge")
    assert row is not None
    with pytest.raises(AssertionError, match="no row"):
        spot_priced([row], {"m7i.9xlarge": (Decimal(1), "https://example.com/prices")})


# --------------------------------------------------------------------------------------------
# Each pool at its capacity's price


def size(machine_type: str | None, capacity: PoolCapacity, nodes: int = 2, most: int | None = None) -> PoolSize:
    return PoolSize("p", machine_type, nodes, most or nodes, most is not None, capacity=capacity)


def test_a_spot_pool_is_priced_at_the_spot_price_read_on_its_day() -> None:
    cost = pool_cost("EKS", size("m7i.2xlarge", PoolCapacity(type=CapacityType.SPOT)))
    assert (cost.unit_usd_hour, cost.hourly, cost.price_from) == (Decimal("0.1819"), Decimal("0.3638"), PRICE_FROM_SPOT)
    assert cost.price_basis == f"at the spot price read on {SPOT_READ_ON} (spot prices move)"
    on_demand = pool_cost("EKS", size("m7i.2xlarge", PoolCapacity()))
    assert (on_demand.unit_usd_hour, on_demand.price_from) == (Decimal("0.4032"), PRICE_FROM_CATALOG)
    assert on_demand.price_basis == "on-demand list price read on 2026-12-03"


def test_a_spot_pool_of_a_machine_without_a_spot_price_is_unpriced_not_priced_on_demand() -> None:
    cost = pool_cost("Nebius", size("gpu-l40s-a/1gpu-8vcpu-32gb", PoolCapacity(type=CapacityType.SPOT)))
    assert (cost.unit_usd_hour, cost.hourly, cost.unpriced_reason) == (None, None, NO_SPOT_PRICE)
    assert cost.price_basis is not None and cost.price_basis.startswith("spot price unknown")


def test_a_spot_ceiling_is_what_the_maximum_counts() -> None:
    # A spot price under the ceiling: the nodes at the spot price, the maximum at the ceiling.
    capped = PoolCapacity(type=CapacityType.SPOT, max_price=Decimal("0.3"))
    cost = pool_cost("EKS", size("m7i.2xlarge", capped, nodes=1, most=3))
    assert (cost.hourly, cost.hourly_at_min, cost.hourly_at_max) == (
        Decimal("0.1819"),
        Decimal("0.1819"),
        Decimal("0.9"),
    )
    assert cost.price_basis is not None and "maxPrice 0.3" in cost.price_basis
    # A fixed pool too: the plan shows both ends, since its maximum counts the ceiling.
    fixed = pool_cost_json(pool_cost("EKS", size("m7i.2xlarge", capped, nodes=2)))
    assert (fixed["hourly"], fixed["hourlyAtMin"], fixed["hourlyAtMax"]) == (0.3638, 0.3638, 0.6)
    # No spot price read (AKS Standard_D4s_v5): the ceiling is the most a node costs, so the pool is priced at it.
    cost = pool_cost("AKS", size("Standard_D4s_v5", capped))
    assert (cost.unit_usd_hour, cost.hourly_at_max, cost.price_from) == (
        Decimal("0.3"),
        Decimal("0.6"),
        PRICE_FROM_SPOT_CEILING,
    )


@pytest.mark.parametrize("kind", [CapacityType.RESERVATION, CapacityType.CAPACITY_BLOCK])
def test_reserved_capacity_is_priced_at_the_owners_price_or_unpriced_without_it(kind: CapacityType) -> None:
    stated = pool_cost("EKS", size("p5.48xlarge", PoolCapacity(type=kind, hourly_price=Decimal("31.5")), nodes=1))
    assert (stated.unit_usd_hour, stated.hourly, stated.price_from) == (
        Decimal("31.5"),
        Decimal("31.5"),
        PRICE_FROM_CAPACITY,
    )
    assert stated.price_basis is not None and stated.price_basis.startswith("the owner's")
    # The catalog's on-demand price is not what a reservation costs: without the owner's figure, unknown.
    unstated = pool_cost("EKS", size("p5.48xlarge", PoolCapacity(type=kind), nodes=1))
    assert (unstated.hourly, unstated.unpriced_reason) == (None, NO_CAPACITY_PRICE)
    assert unstated.unpriced_text is not None and "capacity.hourlyPrice" in unstated.unpriced_text


# --------------------------------------------------------------------------------------------
# The budget counts each pool at its capacity's price


def eks_fleet(capacity: dict[str, Any] | None) -> dict[str, Any]:
    pool: dict[str, Any] = {"name": "cpu", "className": "c", "nodeCount": 10}
    if capacity is not None:
        pool["capacity"] = capacity
    cluster = {"name": "eks-a", "source": "EKS", "eks": {"region": "us-east-1", "kubernetesVersion": "1.36"}}
    return {
        "classes": [cpu_class("c", "EKS", {"instanceType": "m7i.2xlarge"})],
        "clusters": [{**cluster, "nodePools": [pool]}],
    }


def registered(raw: dict[str, Any], budget: float) -> list[Any]:
    fleet = fleet_of(raw)
    specs = {c.name: c.model_dump(by_alias=True, mode="json", exclude_none=True) for c in fleet.classes}
    [spec] = fleet.clusters
    props = policy_inputs(derive_cluster(fleet, spec), specs)
    return [
        stack_resource(
            tokens.BUDGET, {"monthlyUsd": budget, "currency": "USD", "stackFile": "Pulumi.t.yaml"}, name="budget"
        ),
        stack_resource(cloud(spec.source).component_token, props, name=spec.name),
    ]


def test_a_stack_over_budget_on_demand_is_within_it_on_spot() -> None:
    # At maxNodeCount, on demand: fee 0.10 + system 2 x m6i.xlarge 0.192 + cpu 10 x m7i.2xlarge 0.4032 =
    # 4.516 /h x 730 h = 3296.68 a month. On spot the cpu pool is 10 x 0.1819: 2.303 /h = 1681.19.
    over = run(cost_over_budget, stack_args(registered(eks_fleet(None), 2000), policy=cost_over_budget))
    assert len(over) == 1 and "the fleet costs 3296.68 USD a month" in over[0]
    spot = registered(eks_fleet({"type": "Spot"}), 2000)
    assert run(cost_over_budget, stack_args(spot, policy=cost_over_budget)) == []
    [message] = run(
        cost_over_budget, stack_args(registered(eks_fleet({"type": "Spot"}), 1681), policy=cost_over_budget)
    )
    assert "the fleet costs 1681.19 USD a month" in message


def test_the_pack_reads_the_capacity_each_pool_registered() -> None:
    raw = eks_fleet({"type": "Reservation", "reservation": "cr-0123456789abcdef0", "hourlyPrice": 0.25})
    [_, cluster] = registered(raw, 2000)
    [pool] = [p for p in cluster.props["pools"] if p["name"] == "cpu"]
    # The figure as text, so the pack reads it exactly (as a class's `hourlyPrice`).
    assert pool["capacity"] == {"type": "Reservation", "reservation": "cr-0123456789abcdef0", "hourlyPrice": "0.25"}
    cost = registered_cluster_cost(cluster)
    assert cost is not None
    cpu = next(p for p in cost.pools if p.size.name == "cpu")
    assert (cpu.unit_usd_hour, cpu.price_from) == (Decimal("0.25"), PRICE_FROM_CAPACITY)
    # The plan and the pack agree on the cost.
    fleet = fleet_of(raw)
    planned = facts_cost(derive_cluster(fleet, fleet.clusters[0]))
    assert planned is not None and planned.hourly_at_max == cost.hourly_at_max


# --------------------------------------------------------------------------------------------
# The plan: each pool's capacity, price basis and reclaim risk


def test_the_plan_states_each_pools_capacity_price_basis_and_reclaim_risk(tmp_path: Path) -> None:
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.eks-prod.yaml").read_text())
    clusters = doc["config"]["modelplane:clusters"]
    # The stack's own spot and block pools set aside: this test buys its on-demand pools otherwise.
    clusters[0]["nodePools"] = [p for p in clusters[0]["nodePools"] if "capacity" not in p]
    pools = {p["name"]: p for p in clusters[0]["nodePools"]}
    pools["cpu"]["capacity"] = {"type": "Spot"}
    pools["h100"]["capacity"] = {"type": "Reservation", "reservation": "cr-0123456789abcdef0", "hourlyPrice": 40}
    stack = tmp_path / "Pulumi.eks-capacity.yaml"
    stack.write_text(yaml.safe_dump(doc, sort_keys=False))
    plan = plan_stack(stack)
    assert plan["ok"], plan["errors"]
    planned = {p["name"]: p for p in plan["clusters"][0]["pools"]}
    assert {n: (p["capacity"], p["reclaimRisk"]) for n, p in planned.items()} == {
        "system": ({"type": "OnDemand"}, None),
        "l4": ({"type": "OnDemand"}, None),
        "h100": ({"type": "Reservation", "reservation": "cr-0123456789abcdef0", "hourlyPrice": "40"}, None),
        "cpu": ({"type": "Spot"}, RECLAIMABLE_TEXT),
    }
    assert planned["l4"]["priceBasis"] == "on-demand list price read on 2026-12-03"
    assert planned["h100"]["priceBasis"] == "the owner's reserved price (capacity.hourlyPrice)"
    assert planned["cpu"]["priceBasis"] == f"at the spot price read on {SPOT_READ_ON} (spot prices move)"
    cost = {p["name"]: p for p in plan["clusters"][0]["cost"]["pools"]}
    assert (cost["cpu"]["capacity"], cost["cpu"]["priceFrom"], cost["cpu"]["unitHourly"]) == ("Spot", "spot", 0.1819)
    assert (cost["h100"]["priceFrom"], cost["h100"]["monthly"]) == ("capacity", 29200.0)
    # The tree: a capacity line per pool, with the reservation, the price basis and the reclaim risk.
    assert capacity_text(planned["cpu"]) == (
        f"capacity: Spot; at the spot price read on {SPOT_READ_ON} (spot prices move); {RECLAIMABLE_TEXT}"
    )
    assert capacity_text(planned["h100"]) == (
        "capacity: Reservation cr-0123456789abcdef0; the owner's reserved price (capacity.hourlyPrice)"
    )
    assert capacity_text(planned["l4"]) == "capacity: OnDemand; on-demand list price read on 2026-12-03"


def test_an_existing_clusters_pools_have_no_price_basis_and_no_capacity_line() -> None:
    plan = plan_stack(ROOT / "stacks" / "Pulumi.byo-amd.yaml")
    for pool in plan["clusters"][0]["pools"]:
        assert (pool["capacity"], pool["priceBasis"], pool["reclaimRisk"]) == ({"type": "OnDemand"}, None, None)
        assert capacity_text(pool) is None

"""What a fleet costs: on-demand price x nodes per pool, plus each cluster's control plane fee.

The prices are the machine catalog's (each cloud's rows, `clouds.machine`), for the one region
the catalog prices each cloud in; a cluster elsewhere is priced at those rates and says which region it was
priced at. A machine the catalog has no price for is never counted as free: its pool's cost is
unknown, the totals are the sum of what is known, and `complete` is false.

Per pool the cost is the machine's hourly price x `nodeCount`, and x `maxNodeCount` when the pool
autoscales (what it can grow to). Per cluster it adds the control plane fee where the cloud
charges one. Existing clusters have no price: their hardware is the owner's.

The offline plan (`cost_hook`) and the policy pack (`policies.stack_rules`, `cost-over-budget`)
both compute cost with `cluster_cost`; the budget rule is stated once, in `over_budget`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any

import pulumi

from clouds import catalog_date, cloud, machine, profile
from infra import tokens
from infra.facts import pool_nodes, zone_count
from infra.machines import CURRENCY, HOURS_PER_MONTH, MachineType

if TYPE_CHECKING:
    from infra.facts import ClusterFacts

COST_OVER_BUDGET = "cost-over-budget"


@dataclass(frozen=True)
class PoolSize:
    """What the cost of a pool needs: its machine, the nodes the cloud creates and the most it can have.

    Both counts are the facts' (`infra.facts.pool_nodes`): GKE counts a fixed pool's nodes per zone.
    """

    name: str
    machine: str | None
    nodes: int
    max_nodes: int
    autoscaled: bool = False

    @classmethod
    def of(
        cls,
        name: str,
        machine: str | None,
        source: str,
        node_count: int,
        max_node_count: int | None,
        zones: Sequence[str],
    ) -> PoolSize:
        """The size of a pool as written (`nodeCount`, `maxNodeCount` when autoscaled, `zones`) on `source`."""
        created, most = pool_nodes(node_count, max_node_count, zone_count(profile(source), zones))
        return cls(name, machine, created, most, max_node_count is not None)


@dataclass(frozen=True)
class PoolCost:
    size: PoolSize
    unit_usd_hour: Decimal | None  # the machine's price; None when the catalog has none

    @property
    def hourly(self) -> Decimal | None:
        """With the nodes the cloud creates."""
        return None if self.unit_usd_hour is None else self.unit_usd_hour * self.size.nodes

    @property
    def hourly_at_max(self) -> Decimal | None:
        """With the most nodes the pool can have (`maxNodeCount` when autoscaled)."""
        return None if self.unit_usd_hour is None else self.unit_usd_hour * self.size.max_nodes


@dataclass(frozen=True)
class ClusterCost:
    name: str
    source: str
    region_priced: str
    pools: tuple[PoolCost, ...]
    control_plane_usd_hour: Decimal | None
    control_plane_source: str

    @property
    def unpriced(self) -> list[str]:
        """What the totals leave out: machines without a price, and an unknown control plane fee."""
        out = sorted({p.size.machine or p.size.name for p in self.pools if p.unit_usd_hour is None})
        if self.control_plane_usd_hour is None:
            out.append(f"{self.source} control plane")
        return out

    @property
    def complete(self) -> bool:
        return not self.unpriced

    @property
    def hourly(self) -> Decimal:
        """The known part of the hourly cost at every pool's `nodeCount`."""
        return _sum([p.hourly for p in self.pools] + [self.control_plane_usd_hour])

    @property
    def hourly_at_max(self) -> Decimal:
        """The known part of the hourly cost with autoscaled pools at `maxNodeCount`."""
        return _sum([p.hourly_at_max for p in self.pools] + [self.control_plane_usd_hour])


def _sum(values: Iterable[Decimal | None]) -> Decimal:
    return sum((v for v in values if v is not None), Decimal(0))


MachineLookup = Callable[[str, str], MachineType | None]


def cluster_cost(
    name: str, source: str, pools: Sequence[PoolSize], lookup: MachineLookup = machine
) -> ClusterCost | None:
    """The cost of one cluster; None for Existing (and any source the catalog does not price).

    `lookup` finds a machine's catalog row (the catalog's own by default).
    """
    priced_as = cloud(source)
    fee = priced_as.control_plane_fee
    if priced_as.price_region is None or fee is None:
        return None
    costs = []
    for pool in pools:
        row = lookup(source, pool.machine) if pool.machine else None
        costs.append(PoolCost(pool, row.price_usd_hour if row is not None else None))
    return ClusterCost(name, source, priced_as.price_region, tuple(costs), fee.usd_hour, fee.source)


def facts_cost(facts: ClusterFacts, lookup: MachineLookup = machine) -> ClusterCost | None:
    """The cost of a cluster from its derived facts (the system pool included)."""
    sizes = [PoolSize(p.name, p.machine, p.created_nodes, p.nodes, p.autoscaled) for p in facts.pools]
    return cluster_cost(facts.name, facts.source, sizes, lookup)


def monthly(hourly: Decimal) -> Decimal:
    return hourly * HOURS_PER_MONTH


def money(value: Decimal | None, places: str = "0.01") -> float | None:
    """A JSON number rounded half up to cents (hourly prices: to 1/10000 of a dollar)."""
    if value is None:
        return None
    return float(value.quantize(Decimal(places), rounding=ROUND_HALF_UP))


def over_budget(monthly_at_max: Decimal, budget: Decimal, unpriced: Sequence[str] = ()) -> bool | None:
    """The budget rule: a stack whose monthly cost at its pools' maximum exceeds its budget.

    The maximum, because autoscaled pools can reach it without another `pulumi up`. True when the
    priced part alone exceeds it; None (cannot tell) when it does not but something is `unpriced`,
    so a stack with an unpriced pool is never called within budget; False otherwise.
    """
    if monthly_at_max > budget:
        return True
    return None if unpriced else False


# --------------------------------------------------------------------------------------------
# The plan's `cost` sections


def pool_cost_json(cost: PoolCost) -> dict[str, Any]:
    autoscaled = cost.size.autoscaled
    return {
        "machine": cost.size.machine,
        "unitHourly": money(cost.unit_usd_hour, "0.0001"),
        "hourly": money(cost.hourly, "0.0001"),
        "monthly": money(monthly(cost.hourly)) if cost.hourly is not None else None,
        "hourlyAtMax": money(cost.hourly_at_max, "0.0001") if autoscaled else None,
        "monthlyAtMax": money(monthly(cost.hourly_at_max)) if autoscaled and cost.hourly_at_max is not None else None,
    }


def cluster_cost_json(cost: ClusterCost) -> dict[str, Any]:
    return {
        "pools": [{"name": p.size.name, **pool_cost_json(p)} for p in cost.pools],
        "currency": CURRENCY,
        "regionPriced": cost.region_priced,
        "catalogDate": catalog_date(),
        "controlPlane": {
            "hourly": money(cost.control_plane_usd_hour, "0.0001"),
            "source": cost.control_plane_source,
        },
        "hourly": money(cost.hourly, "0.0001"),
        "monthly": money(monthly(cost.hourly)),
        "hourlyAtMax": money(cost.hourly_at_max, "0.0001"),
        "monthlyAtMax": money(monthly(cost.hourly_at_max)),
        "complete": cost.complete,
        "unpriced": cost.unpriced,
    }


def total_json(costs: Sequence[ClusterCost], complete: bool = True) -> dict[str, Any]:
    """The sum over clusters (a stack, or every stack for `--all`)."""
    hourly = sum((c.hourly for c in costs), Decimal(0))
    hourly_max = sum((c.hourly_at_max for c in costs), Decimal(0))
    return {
        "currency": CURRENCY,
        "catalogDate": catalog_date(),
        "hourly": money(hourly, "0.0001"),
        "monthly": money(monthly(hourly)),
        "hourlyAtMax": money(hourly_max, "0.0001"),
        "monthlyAtMax": money(monthly(hourly_max)),
        "complete": complete and all(c.complete for c in costs),
        "unpriced": sorted({u for c in costs for u in c.unpriced}),
    }


def combine_totals(totals: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Several `cost` totals (one per stack) added up, for `plan --all`."""

    def add(key: str, places: str) -> float | None:
        return money(sum((Decimal(str(t[key])) for t in totals), Decimal(0)), places)

    return {
        "currency": CURRENCY,
        "catalogDate": catalog_date(),
        "hourly": add("hourly", "0.0001"),
        "monthly": add("monthly", "0.01"),
        "hourlyAtMax": add("hourlyAtMax", "0.0001"),
        "monthlyAtMax": add("monthlyAtMax", "0.01"),
        "complete": all(t["complete"] for t in totals),
        "unpriced": sorted({u for t in totals for u in t["unpriced"]}),
    }


# --------------------------------------------------------------------------------------------
# The stack's budget, registered so the policy pack can compare the fleet's cost with it

BUDGET_KEY = "modelplane:budget"


class Budget(pulumi.ComponentResource):
    """The stack's monthly budget (`modelplane:budget`), as inputs the `cost-over-budget` policy reads.

    Registered only when the stack sets a budget; it creates nothing in any cloud.
    """

    def __init__(self, name: str, monthly_usd: Decimal, stack_file: str, opts: pulumi.ResourceOptions | None = None):
        budget = {"monthlyUsd": float(monthly_usd), "currency": CURRENCY, "stackFile": stack_file}
        super().__init__(tokens.BUDGET, name, budget, opts)
        # Outputs too: `AnalyzeStack` reads a component's outputs, which are what it registers here.
        self.register_outputs(budget)

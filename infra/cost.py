"""What a fleet costs: each pool's price at its capacity x nodes, plus each cluster's control plane fee.

The prices are the machine catalog's (each cloud's rows, `clouds.machine`), for the one region
the catalog prices each cloud in; a cluster elsewhere is priced at those rates and says which region it was
priced at. A machine the catalog has no price for is never counted as free: its pool's cost is
unknown with the catalog's reason (`infra.machines.Unpriced`), the totals are the sum of what is
known, and `complete` is false. A class may state the price its owner pays
(`provisioning.<cloud>.hourlyPrice`): its pools are priced at that figure, whatever the catalog says,
and the plan marks the figure as the class's own (`priceFrom: class`).

A pool is priced at what its capacity (`nodePools[].capacity`) is bought at: OnDemand at the above;
Spot at the catalog row's spot price, read on a given day (spot prices move, so the plan quotes the
price read on that day), or unpriced where no public list read publishes one; with a spot ceiling
(`capacity.maxPrice`, AKS) the maximum counts the ceiling, the most a node can cost; Reservation and
CapacityBlock at the price the owner states (`capacity.hourlyPrice`), which no public list knows, or
unpriced without it. Each pool's `priceBasis` says which.

Per pool the cost is the machine's hourly price x `nodeCount`, and, when the pool autoscales,
x `minNodeCount` (what it can shrink to) and x `maxNodeCount` (what it can grow to). Per cluster it
adds the control plane fee where the cloud charges one; a cluster's and a fleet's range run from
every autoscaled pool at its minimum to every one at its maximum. Existing clusters have no price: their hardware is the owner's.
A cluster's shared weight caches add their storage (`SharedStorage.usd_gib_month` of the cloud's
profile x each claim's size, the same at every pool size); a cloud with no price for it leaves
them unpriced, never free.

The offline plan (`cost_hook`) and the policy pack (`policies.stack_rules`, `cost-over-budget`)
both compute cost with `cluster_cost`; the budget rule is stated once, in `over_budget`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any

from clouds import catalog_date, cloud, machine, profile
from infra.config.clusters import CapacityType, PoolCapacity
from infra.machines import CURRENCY, HOURS_PER_MONTH, MachineType, Unpriced
from infra.profiles import pool_nodes, zone_count

if TYPE_CHECKING:
    from infra.facts import ClusterFacts

COST_OVER_BUDGET = "cost-over-budget"


@dataclass(frozen=True)
class PoolSize:
    """What the cost of a pool needs: its machine, the nodes the cloud creates, the most it can have
    and, when it autoscales, the fewest.

    The counts are the facts' (`infra.profiles.pool_nodes`): GKE counts a fixed pool's nodes per zone.
    An autoscaled pool's bounds are totals on every cloud here (GKE's `total_min_node_count`).
    """

    name: str
    machine: str | None
    nodes: int
    max_nodes: int
    autoscaled: bool = False
    hourly_price: Decimal | None = None  # the class's own price per node-hour (`hourlyPrice`)
    min_nodes: int | None = None  # `minNodeCount` when autoscaled
    # How the nodes are bought (`nodePools[].capacity`); on demand unless the pool says otherwise
    capacity: PoolCapacity = field(default_factory=PoolCapacity)

    @property
    def least_nodes(self) -> int:
        """The fewest nodes the pool can have: `minNodeCount` when autoscaled, else the nodes created."""
        return self.min_nodes if self.autoscaled and self.min_nodes is not None else self.nodes

    @classmethod
    def of(
        cls,
        name: str,
        machine: str | None,
        source: str,
        node_count: int,
        max_node_count: int | None,
        zones: Sequence[str],
        hourly_price: Decimal | None = None,
        min_node_count: int | None = None,
        capacity: PoolCapacity | None = None,
    ) -> PoolSize:
        """The size of a pool as written (`nodeCount`, `minNodeCount` and `maxNodeCount` when
        autoscaled, `zones`, `capacity`) on `source`."""
        created, most = pool_nodes(node_count, max_node_count, zone_count(profile(source), zones))
        return cls(
            name,
            machine,
            created,
            most,
            max_node_count is not None,
            hourly_price,
            min_node_count,
            capacity or PoolCapacity(),
        )


# Where a pool's price came from, and why a pool has none beyond the catalog's own reasons
PRICE_FROM_CATALOG = "catalog"
PRICE_FROM_CLASS = "class"  # the class's `hourlyPrice`: the owner's figure, not a public price
PRICE_FROM_SPOT = "spot"  # the catalog row's spot price, as read on its day
PRICE_FROM_SPOT_CEILING = "maxPrice"  # no spot price read: the owner's spot ceiling, the most a node costs
PRICE_FROM_CAPACITY = "capacity"  # `capacity.hourlyPrice`: what the owner pays for a reservation or block
NO_SPOT_PRICE = "no-spot-price"
NO_SPOT_PRICE_TEXT = (
    "a Spot pool is priced at its machine's spot price, and no public price list read for the catalog publishes "
    "one for this machine in the price region; set capacity.maxPrice where the cloud takes one (AKS), or accept "
    "the pool as unpriced"
)
NO_CAPACITY_PRICE = "no-capacity-price"
NO_CAPACITY_PRICE_TEXT = (
    "a {type} pool is priced at what its owner pays, which no public list knows; state it as "
    "capacity.hourlyPrice (USD per node-hour)"
)
UNCATALOGUED = "uncatalogued"
UNCATALOGUED_TEXT = (
    "the machine has no row in the machine catalog (the class takes it `uncatalogued`); set the class's "
    "hourlyPrice to price it"
)


@dataclass(frozen=True)
class PoolCost:
    size: PoolSize
    unit_usd_hour: Decimal | None  # the machine's price; None when neither the class nor the catalog has one
    price_from: str | None = None  # PRICE_FROM_CATALOG or PRICE_FROM_CLASS; None when unpriced
    unpriced: Unpriced | None = None  # the catalog row's reason for having no price
    # Set exactly when `unit_usd_hour` is None: the reason key and its text
    unpriced_reason: str | None = None
    unpriced_text: str | None = None
    # What the price is, for a reader: "on-demand list price read on ...", "spot price read on ...".
    price_basis: str | None = None
    # The most a node can cost when that is above `unit_usd_hour` (a spot ceiling); the maximum counts it.
    unit_at_max_usd_hour: Decimal | None = None

    @property
    def hourly(self) -> Decimal | None:
        """With the nodes the cloud creates."""
        return None if self.unit_usd_hour is None else self.unit_usd_hour * self.size.nodes

    @property
    def hourly_at_max(self) -> Decimal | None:
        """With the most nodes the pool can have (`maxNodeCount` when autoscaled)."""
        if self.unit_usd_hour is None:
            return None
        return (self.unit_at_max_usd_hour or self.unit_usd_hour) * self.size.max_nodes

    @property
    def hourly_at_min(self) -> Decimal | None:
        """With the fewest nodes the pool can have (`minNodeCount` when autoscaled)."""
        return None if self.unit_usd_hour is None else self.unit_usd_hour * self.size.least_nodes


@dataclass(frozen=True)
class StorageCost:
    """A shared weight cache's storage: its claim, size, and price per GiB-month with its source."""

    claim: str
    gib: Decimal
    usd_gib_month: Decimal | None
    source: str

    @property
    def hourly(self) -> Decimal | None:
        return None if self.usd_gib_month is None else self.usd_gib_month * self.gib / HOURS_PER_MONTH


# Why a shared cache's storage has no price: the cloud's profile states none.
UNPRICED_STORAGE_TEXT = "the cloud's ReadWriteMany storage has no price here; its bill depends on the storage account"


@dataclass(frozen=True)
class ClusterCost:
    name: str
    source: str
    region_priced: str
    pools: tuple[PoolCost, ...]
    control_plane_usd_hour: Decimal | None
    control_plane_source: str
    control_plane_note: str = ""
    storage: tuple[StorageCost, ...] = ()

    @property
    def unpriced(self) -> list[str]:
        """What the totals leave out: machines without a price, and an unknown control plane fee."""
        return list(self.unpriced_reasons)

    @property
    def unpriced_reasons(self) -> dict[str, str]:
        """Each item `unpriced` names, with why it has no price."""
        out = {unpriced_name(p.size): p.unpriced_text or "" for p in self.pools if p.unit_usd_hour is None}
        out = dict(sorted(out.items()))
        if self.control_plane_usd_hour is None:
            out[f"{self.source} control plane"] = self.control_plane_note
        for cache in self.storage:
            if cache.hourly is None:
                out[f"shared cache {cache.claim}"] = UNPRICED_STORAGE_TEXT
        return out

    @property
    def complete(self) -> bool:
        return not self.unpriced

    @property
    def hourly(self) -> Decimal:
        """The known part of the hourly cost at every pool's `nodeCount`."""
        return _sum([p.hourly for p in self.pools] + [self.control_plane_usd_hour, *self._storage_hourly])

    @property
    def hourly_at_max(self) -> Decimal:
        """The known part of the hourly cost with autoscaled pools at `maxNodeCount`."""
        return _sum([p.hourly_at_max for p in self.pools] + [self.control_plane_usd_hour, *self._storage_hourly])

    @property
    def hourly_at_min(self) -> Decimal:
        """The known part of the hourly cost with autoscaled pools at `minNodeCount`."""
        return _sum([p.hourly_at_min for p in self.pools] + [self.control_plane_usd_hour, *self._storage_hourly])

    @property
    def _storage_hourly(self) -> list[Decimal | None]:
        return [c.hourly for c in self.storage]


def unpriced_name(size: PoolSize) -> str:
    """How `unpriced` names a pool's machine: by itself on demand, with its capacity otherwise
    (`m7i.xlarge (Spot)`), since the same machine can be priced on demand and not as spot."""
    name = size.machine or size.name
    return name if size.capacity.type is CapacityType.ON_DEMAND else f"{name} ({size.capacity.type.value})"


def _sum(values: Iterable[Decimal | None]) -> Decimal:
    return sum((v for v in values if v is not None), Decimal(0))


MachineLookup = Callable[[str, str], MachineType | None]


def cluster_cost(
    name: str,
    source: str,
    pools: Sequence[PoolSize],
    lookup: MachineLookup = machine,
    caches: Sequence[tuple[str, Decimal]] = (),
) -> ClusterCost | None:
    """The cost of one cluster; None for Existing (and any source the catalog does not price).

    `lookup` finds a machine's catalog row (the catalog's own by default). A pool whose class states
    its own price is priced at it; the others at their row's price, or unpriced with the row's reason.
    `caches` are the shared weight caches' claims and sizes in GiB.
    """
    priced_as = cloud(source)
    fee = priced_as.control_plane_fee
    if priced_as.price_region is None or fee is None:
        return None
    costs = [pool_cost(source, pool, lookup) for pool in pools]
    storage = profile(source).shared_cache
    stored = tuple(
        StorageCost(
            claim,
            gib,
            storage.usd_gib_month if storage is not None else None,
            storage.price_source if storage is not None else "",
        )
        for claim, gib in caches
    )
    return ClusterCost(
        name, source, priced_as.price_region, tuple(costs), fee.usd_hour, fee.source, fee.note, storage=stored
    )


def pool_cost(source: str, pool: PoolSize, lookup: MachineLookup = machine) -> PoolCost:
    """One pool's price at its capacity (`capacity_cost`), else unknown with the reason."""
    row = lookup(source, pool.machine) if pool.machine else None
    capacity = pool.capacity
    if capacity.type in (CapacityType.RESERVATION, CapacityType.CAPACITY_BLOCK):
        return capacity_cost(pool)
    if capacity.type is CapacityType.SPOT:
        return spot_cost(pool, row)
    if pool.hourly_price is not None:
        return PoolCost(pool, pool.hourly_price, PRICE_FROM_CLASS, price_basis="the class's own price (hourlyPrice)")
    if row is None:
        return PoolCost(pool, None, unpriced_reason=UNCATALOGUED, unpriced_text=UNCATALOGUED_TEXT)
    if row.price_usd_hour is not None:
        basis = f"on-demand list price read on {row.price_read_on}"
        return PoolCost(pool, row.price_usd_hour, PRICE_FROM_CATALOG, price_basis=basis)
    reason = row.unpriced
    assert reason is not None, "a catalog row has a price or a reason for having none (infra.machines.priced)"
    return PoolCost(pool, None, unpriced=reason, unpriced_reason=reason.reason, unpriced_text=reason.text)


def spot_cost(pool: PoolSize, row: MachineType | None) -> PoolCost:
    """A Spot pool: at its row's spot price as read on its day; with a ceiling (`maxPrice`) the
    maximum counts the ceiling, the most the owner lets a node cost. Neither: unknown, never guessed
    (the on-demand price is not what a spot node costs, and a spot price moves)."""
    spot = row.spot_usd_hour if row is not None else None
    read = f"at the spot price read on {row.spot_read_on}" if row is not None and spot is not None else None
    ceiling = pool.capacity.max_price
    if spot is None and ceiling is None:
        basis = "spot price unknown: no public price list read publishes one for the machine"
        return PoolCost(pool, None, unpriced_reason=NO_SPOT_PRICE, unpriced_text=NO_SPOT_PRICE_TEXT, price_basis=basis)
    if ceiling is None:
        return PoolCost(pool, spot, PRICE_FROM_SPOT, price_basis=f"{read} (spot prices move)")
    if spot is None:
        basis = f"the owner's spot ceiling (maxPrice {ceiling}); no spot price was read for the machine"
        return PoolCost(pool, ceiling, PRICE_FROM_SPOT_CEILING, price_basis=basis)
    basis = (
        f"{read} (spot prices move); at most the owner's spot ceiling (maxPrice {ceiling}), which the maximum counts"
    )
    return PoolCost(pool, min(spot, ceiling), PRICE_FROM_SPOT, price_basis=basis, unit_at_max_usd_hour=ceiling)


def capacity_cost(pool: PoolSize) -> PoolCost:
    """A Reservation or CapacityBlock pool: at the price its owner states (`capacity.hourlyPrice`)."""
    capacity = pool.capacity
    if capacity.hourly_price is None:
        text = NO_CAPACITY_PRICE_TEXT.format(type=capacity.type.value)
        basis = "the owner's price, not stated (capacity.hourlyPrice)"
        return PoolCost(pool, None, unpriced_reason=NO_CAPACITY_PRICE, unpriced_text=text, price_basis=basis)
    what = "reserved" if capacity.type is CapacityType.RESERVATION else "capacity block"
    basis = f"the owner's {what} price (capacity.hourlyPrice)"
    return PoolCost(pool, capacity.hourly_price, PRICE_FROM_CAPACITY, price_basis=basis)


def facts_cost(facts: ClusterFacts, lookup: MachineLookup = machine) -> ClusterCost | None:
    """The cost of a cluster from its derived facts (the system pool included)."""
    sizes = [
        PoolSize(
            p.name,
            p.machine,
            p.created_nodes,
            p.nodes,
            p.autoscaled,
            p.hourly_price,
            p.min_node_count,
            p.capacity or PoolCapacity(),
        )
        for p in facts.pools
    ]
    caches = [(f"{c.namespace}/{c.claim}", c.size_gib) for c in facts.shared_caches]
    return cluster_cost(facts.name, facts.source, sizes, lookup, caches)


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
    # Both ends where they can differ: an autoscaled pool, or one whose maximum counts a spot ceiling.
    autoscaled = cost.size.autoscaled or cost.unit_at_max_usd_hour is not None
    return {
        "machine": cost.size.machine,
        "unitHourly": money(cost.unit_usd_hour, "0.0001"),
        "hourly": money(cost.hourly, "0.0001"),
        "monthly": money(monthly(cost.hourly)) if cost.hourly is not None else None,
        "hourlyAtMin": money(cost.hourly_at_min, "0.0001") if autoscaled else None,
        "monthlyAtMin": money(monthly(cost.hourly_at_min)) if autoscaled and cost.hourly_at_min is not None else None,
        "hourlyAtMax": money(cost.hourly_at_max, "0.0001") if autoscaled else None,
        "monthlyAtMax": money(monthly(cost.hourly_at_max)) if autoscaled and cost.hourly_at_max is not None else None,
        # "catalog" (the machine catalog's public on-demand price), "class" (the class's own
        # hourlyPrice), "spot" (the catalog's spot price), "maxPrice" (the owner's spot ceiling) or
        # "capacity" (the owner's reservation or block price)
        "priceFrom": cost.price_from,
        "unpricedReason": {"reason": cost.unpriced_reason, "text": cost.unpriced_text}
        if cost.unpriced_reason is not None
        else None,
        "capacity": cost.size.capacity.type.value,
        "priceBasis": cost.price_basis,
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
        "hourlyAtMin": money(cost.hourly_at_min, "0.0001"),
        "monthlyAtMin": money(monthly(cost.hourly_at_min)),
        "hourlyAtMax": money(cost.hourly_at_max, "0.0001"),
        "monthlyAtMax": money(monthly(cost.hourly_at_max)),
        "complete": cost.complete,
        "unpriced": cost.unpriced,
        "unpricedReasons": cost.unpriced_reasons,
        # Only where the cluster has shared weight caches, so other plans keep their shape.
        **({"sharedCaches": [storage_cost_json(c) for c in cost.storage]} if cost.storage else {}),
    }


def storage_cost_json(cost: StorageCost) -> dict[str, Any]:
    hourly = cost.hourly
    return {
        "claim": cost.claim,
        "sizeGib": money(cost.gib),
        "unitMonthlyPerGib": money(cost.usd_gib_month, "0.0001"),
        "hourly": money(hourly, "0.0001"),
        "monthly": money(monthly(hourly)) if hourly is not None else None,
        "source": cost.source,
    }


def total_json(costs: Sequence[ClusterCost], complete: bool = True) -> dict[str, Any]:
    """The sum over clusters (a stack, or every stack for `--all`)."""
    hourly = sum((c.hourly for c in costs), Decimal(0))
    hourly_max = sum((c.hourly_at_max for c in costs), Decimal(0))
    hourly_min = sum((c.hourly_at_min for c in costs), Decimal(0))
    return {
        "currency": CURRENCY,
        "catalogDate": catalog_date(),
        "hourly": money(hourly, "0.0001"),
        "monthly": money(monthly(hourly)),
        "hourlyAtMin": money(hourly_min, "0.0001"),
        "monthlyAtMin": money(monthly(hourly_min)),
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
        "hourlyAtMin": add("hourlyAtMin", "0.0001"),
        "monthlyAtMin": add("monthlyAtMin", "0.01"),
        "hourlyAtMax": add("hourlyAtMax", "0.0001"),
        "monthlyAtMax": add("monthlyAtMax", "0.01"),
        "complete": all(t["complete"] for t in totals),
        "unpriced": sorted({u for t in totals for u in t["unpriced"]}),
    }


# The stack config key of the budget, as the policy's messages name it.
BUDGET_KEY = "modelplane:budget"

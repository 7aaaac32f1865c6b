"""The machine catalog's row type, and what every cloud's rows share.

A row is one machine type of one cloud: vCPUs, memory, its GPUs (vendor, model, count, memory per
GPU), the accelerator type strings a class may name for it, and the on-demand hourly price in USD
in the one region the catalog prices that cloud in. Every row names the public page it was read
from and the day it was read. The rows themselves are each cloud's (`clouds/<cloud>/machines.py`),
and the registry joins them (`clouds.machine`). Adding a machine is adding a row (docs/machines.md
says how).

Facts only: a value we could not read on a public page is not here. Every row has an on-demand
price or says why it has none (`Unpriced`, one reason of `UNPRICED_REASONS`): the plan shows such a
machine's cost as unknown with that reason, never as zero. A machine whose shape we could not read
has no row (the plan reports it as `unknown-machine-type`).

What this module is not: the rules that compare a pool with its machine live in `infra.checks.devices`;
the cost arithmetic lives in `infra.cost`. This module imports nothing of ours.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from decimal import Decimal

CURRENCY = "USD"

# An average month: 8760 hours a year / 12. The plan's monthly costs use it, and a price published
# only per month (Vultr) is turned into an hourly one with it.
HOURS_PER_MONTH = Decimal(730)

# The day the pages the rows cite were read; `clouds.catalog_date()` is the newest of the rows' dates.
READ_ON = "2026-12-01"
# The day the price lists the rows cite were last read (a cloud's module passes its own where a
# price was read on another day).
PRICES_READ_ON = "2026-12-03"

# Why a row has no on-demand price: a closed set, so an unpriced machine always says which case it
# is. Only the first three are facts about the cloud; the last two say what could not be read here,
# and tests/test_machines.py holds the rows in them to a known list so they cannot grow unnoticed.
UNPRICED_REASONS: Mapping[str, str] = {
    "contract-only": "not publicly priced: sold only under a contract, with no published rate",
    "capacity-blocks-only": "not publicly priced on demand: sold only as reserved capacity blocks, at a rate "
    "that changes with demand",
    "not-offered-in-price-region": "not offered in the region the catalog prices this cloud in",
    "source-conflict": "the public price list read for it contradicts itself, so no figure is taken from it",
    "price-page-unread": "the cloud publishes a price, but no copy of its price page could be read",
}


@dataclass(frozen=True)
class Unpriced:
    """Why a row has no price: `reason` (a key of `UNPRICED_REASONS`), what was read, where and when."""

    reason: str
    detail: str
    source: str
    read_on: str = PRICES_READ_ON

    def __post_init__(self) -> None:
        assert self.reason in UNPRICED_REASONS, f"unknown unpriced reason {self.reason!r}"

    @property
    def text(self) -> str:
        """The reason as the plan and docs/machines.md print it."""
        return f"{UNPRICED_REASONS[self.reason]} ({self.detail})"


@dataclass(frozen=True)
class Gpu:
    """The GPUs one machine carries: `count` of one model, each with `memory_gib`."""

    vendor: str  # the accelerator-type prefix: `nvidia`, `amd`
    model: str  # as the vendor names it: `L4`, `H100 80GB`
    count: int
    memory_gib: int


@dataclass(frozen=True)
class MachineType:
    cloud: str
    name: str
    vcpus: int
    memory_gib: float
    gpu: Gpu | None
    # The accelerator `type` strings a class may set for this machine. On GKE they are the
    # accelerator types the API takes (`guestAccelerators[].type`); elsewhere the cloud takes no
    # accelerator argument (the machine type brings its GPUs) and the type only names the GPU in
    # the `modelplane.ai/gpu` label, so the accepted names are the model's common spellings.
    accelerator_types: tuple[str, ...]
    source: str
    read_on: str = READ_ON
    price_usd_hour: Decimal | None = None
    price_source: str | None = None
    price_read_on: str | None = None  # the day `price_source` was read
    unpriced: Unpriced | None = None  # set exactly when `price_usd_hour` is None
    # The regions the cloud offers this machine in, with the page that lists them; empty where the
    # catalog does not record them (the machine is then not checked against its cluster's region).
    regions: tuple[str, ...] = ()
    regions_source: str | None = None
    # The spot (preemptible) price in USD per hour in the same price region, where a public list
    # publishes one, with that list and the day it was read; None: no spot price was read, and a
    # Spot pool of the machine is unpriced (`infra.cost`), never priced at a guess.
    spot_usd_hour: Decimal | None = None
    spot_source: str | None = None
    spot_read_on: str | None = None


def gpu(vendor: str, model: str, count: int, memory_gib: int) -> Gpu:
    return Gpu(vendor, model, count, memory_gib)


# The label spellings accepted outside GKE for each GPU model (the GKE type first, where GKE has it).
L4 = ("nvidia-l4",)
A10G = ("nvidia-a10g",)
L40S = ("nvidia-l40s",)
A100_40 = ("nvidia-tesla-a100", "nvidia-a100", "nvidia-a100-40gb")
A100_80 = ("nvidia-a100-80gb", "nvidia-a100")
H100_80 = ("nvidia-h100-80gb", "nvidia-h100")
H100_NVL = ("nvidia-h100-nvl", "nvidia-h100")
H200 = ("nvidia-h200-141gb", "nvidia-h200")


def cpu(cloud: str, name: str, vcpus: int, memory_gib: float, source: str) -> MachineType:
    return MachineType(cloud, name, vcpus, memory_gib, None, (), source)


def offered_in(row: MachineType, regions: Iterable[str], source: str) -> MachineType:
    """The row with the regions its cloud offers it in, as `source` lists them."""
    return replace(row, regions=tuple(regions), regions_source=source)


# Read in SkyPilot's public catalogs, which hold each cloud's list prices per region and zone
# (columns `InstanceType, ..., Region, AvailabilityZone, Price, SpotPrice`; `Price` is on-demand).
SKYPILOT_CATALOG = "https://github.com/skypilot-org/skypilot-catalog/blob"


def monthly(usd: int) -> Decimal:
    """An hourly price from a monthly one (a cloud that publishes only those), to a millionth of a dollar."""
    return (Decimal(usd) / HOURS_PER_MONTH).quantize(Decimal("0.000001"))


Price = tuple[Decimal, str] | tuple[Decimal, str, str]  # (USD per hour, source[, the day it was read])


def priced(
    rows: Iterable[MachineType], prices: Mapping[str, Price], unpriced: Mapping[str, Unpriced] | None = None
) -> tuple[MachineType, ...]:
    """The rows with their on-demand price (USD per hour, Linux, in the cloud's price region) and its
    source, or the reason they have none: every row is in exactly one of `prices` and `unpriced`."""
    rows = tuple(rows)
    unpriced = unpriced or {}
    names = {r.name for r in rows}
    assert len(names) == len(rows), "one row per machine type"
    assert set(prices) <= names and set(unpriced) <= names, "a price or a reason for a machine with no row"
    assert not set(prices) & set(unpriced), "a machine both priced and unpriced"
    missing = sorted(names - set(prices) - set(unpriced))
    assert not missing, f"machines with neither a price nor a reason for having none: {missing}"
    out = []
    for r in rows:
        if r.name in unpriced:
            out.append(replace(r, unpriced=unpriced[r.name]))
            continue
        price = prices[r.name]
        read_on = price[2] if len(price) == 3 else PRICES_READ_ON
        out.append(replace(r, price_usd_hour=price[0], price_source=price[1], price_read_on=read_on))
    return tuple(out)


# The day the spot prices were read. Spot prices move with demand, so a plan quotes them "at the
# price read on" this day, never as a fixed rate.
SPOT_READ_ON = "2026-12-05"


def spot_priced(rows: Iterable[MachineType], spot: Mapping[str, Price]) -> tuple[MachineType, ...]:
    """The rows with the spot price (USD per hour, Linux, in the cloud's price region) of those `spot`
    names, with its source and read day (`SPOT_READ_ON` unless given); the others keep none."""
    rows = tuple(rows)
    assert set(spot) <= {r.name for r in rows}, "a spot price for a machine with no row"
    out = []
    for r in rows:
        price = spot.get(r.name)
        if price is None:
            out.append(r)
            continue
        read_on = price[2] if len(price) == 3 else SPOT_READ_ON
        out.append(replace(r, spot_usd_hour=price[0], spot_source=price[1], spot_read_on=read_on))
    return tuple(out)


# Control plane fees (per cluster and hour, on top of the nodes)


@dataclass(frozen=True)
class ControlPlaneFee:
    cloud: str
    usd_hour: Decimal | None  # None: no fee could be read
    note: str
    source: str
    read_on: str = READ_ON

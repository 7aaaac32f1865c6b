"""The machine catalog's row type, and what every cloud's rows share.

A row is one machine type of one cloud: vCPUs, memory, its GPUs (vendor, model, count, memory per
GPU), the accelerator type strings a class may name for it, and the on-demand hourly price in USD
in the one region the catalog prices that cloud in. Every row names the public page it was read
from and the day it was read. The rows themselves are each cloud's (`clouds/<cloud>/machines.py`),
and the registry joins them (`clouds.machine`). Adding a machine is adding a row (docs/machines.md
says how).

Facts only: a value we could not read on a public page is not here. A machine whose price we could
not read has `price_usd_hour=None` (the plan shows its cost as unknown, never as zero), and a
machine whose shape we could not read has no row (the plan reports it as `unknown-machine-type`).

What this module is not: the rules that compare a pool with its machine live in `infra.devices`;
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
    # The regions the cloud offers this machine in, with the page that lists them; empty where the
    # catalog does not record them (the machine is then not checked against its cluster's region).
    regions: tuple[str, ...] = ()
    regions_source: str | None = None


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


def priced(rows: Iterable[MachineType], prices: Mapping[str, tuple[Decimal, str]]) -> tuple[MachineType, ...]:
    """The rows with their on-demand price (USD per hour, Linux, in the cloud's price region) and its source."""
    rows = tuple(rows)
    names = {r.name for r in rows}
    assert len(names) == len(rows), "one row per machine type"
    assert set(prices) <= names, "a price for a machine with no row"
    return tuple(
        replace(r, price_usd_hour=prices[r.name][0], price_source=prices[r.name][1]) if r.name in prices else r
        for r in rows
    )


# Control plane fees (per cluster and hour, on top of the nodes)


@dataclass(frozen=True)
class ControlPlaneFee:
    cloud: str
    usd_hour: Decimal | None  # None: no fee could be read
    note: str
    source: str
    read_on: str = READ_ON

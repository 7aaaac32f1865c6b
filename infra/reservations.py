"""How much of a node's memory a cloud keeps from pods: the rule's shape, and GKE's published tiers.

Each cloud's record names its rule (`infra.profiles.CloudProfile.memory_reservation`, with its source); a cloud
that publishes none is judged by GKE's tiers (`default_reservation`). The schedulability checks
(`infra.checks.schedulable`) read it. This module imports only the machine rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from infra.machines import MachineType

MIB = Decimal(2**20)
GIB = Decimal(2**30)


@dataclass(frozen=True)
class Reservation:
    """A cloud's rule for the memory it keeps from pods on each node, and how a message names it."""

    reserved: Callable[[MachineType], Decimal]
    says: str


def machine_memory(row: MachineType) -> Decimal:
    return Decimal(str(row.memory_gib)) * GIB


# The kubelet's hard eviction threshold `memory.available<100Mi`, which allocatable memory
# excludes on every cloud here: GKE ("plan node sizes", below), EKS (nodeadm's kubelet config,
# `evictionHard`), AKS 1.29 and later ("node resource reservations", below).
EVICTION_THRESHOLD = 100 * MIB

# GKE's memory reservation for the kubelet and system daemons, by tiers of the machine's memory:
# 25% of the first 4 GiB, 20% of the next 4 GiB, 10% of the next 8 GiB, 6% of the next 112 GiB
# and 2% of any memory above 128 GiB, plus the 100 MiB eviction threshold
# (https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes, "Memory and CPU
# reservations"; machines of less than 1 GiB, which the catalog has none of, reserve 255 MiB).
GKE_TIERS: tuple[tuple[Decimal | None, Decimal], ...] = (
    (4 * GIB, Decimal("0.25")),
    (4 * GIB, Decimal("0.20")),
    (8 * GIB, Decimal("0.10")),
    (112 * GIB, Decimal("0.06")),
    (None, Decimal("0.02")),
)


def tiered_reservation(row: MachineType) -> Decimal:
    """Bytes GKE keeps from pods on a node of `row` (`GKE_TIERS`, then the eviction threshold)."""
    left, reserved = machine_memory(row), Decimal(0)
    for size, share in GKE_TIERS:
        part = left if size is None else min(left, size)
        reserved += part * share
        left -= part
    return reserved + EVICTION_THRESHOLD


def default_reservation(source: str) -> Reservation:
    """For a cloud that publishes no reservation (Civo's nodes run k3s, whose kubelet reserves nothing
    by default; neither Civo nor Vultr documents what its nodes keep): GKE's tiers, which keep more
    than k3s does, so a deployment judged by them fits."""
    return Reservation(tiered_reservation, f"a reservation of GKE's tiers ({source} publishes none)")

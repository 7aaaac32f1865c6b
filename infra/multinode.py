"""Multi-node replicas: what a pool offers a replica that spans several nodes.

A deployment with `nodes > 1` runs each replica as one LeaderWorkerSet group of `nodes` pods, one
per node. This module answers, from a pool's facts, what the rules, the plan and the pack ask of
its pool: how many zones its nodes may land in, which high-speed fabric its nodes claim, and the
advisory a group without one gets (`multinode-fabric`, policies/resource_rules.py). It creates
nothing.
"""

from __future__ import annotations

from collections.abc import Collection

from clouds import profile
from infra.config.model import ClaimMode
from infra.facts import PoolFacts
from infra.vocabulary import NETWORK_DRIVERS

MULTINODE_FABRIC = "multinode-fabric"


def pool_fabric(pool: PoolFacts, claimed: Collection[str] | None = None) -> str | None:
    """The fabric the pool's nodes offer a pod: a DRA network device of its class (EFA through
    `dra.net`), among the device names `claimed` when given (a pod reaches a DRA device only
    through its claim), or the fabric its cloud's machine block joins (a Nebius InfiniBand fabric,
    an RDMA-capable AKS ND-series size); None when there is none."""
    for device in pool.devices:
        network = device.claim is ClaimMode.DRA and device.driver in NETWORK_DRIVERS
        if network and (claimed is None or device.name in claimed):
            return f"{device.driver} x {device.count}"
    return pool.machine_block.fabric if pool.machine_block is not None else None


def pool_zones(source: str, pool: PoolFacts) -> int:
    """How many zones the nodes of a pool of a `source` cluster may land in.

    The zones the pool lists; else the cloud's placement of a pool without zones
    (`Zones.unlisted_pool_count` of its profile), except that a fabric pool on a cloud that puts one in a
    placement group (`Fabric.placement_group`, EKS EFA) is in one zone.
    """
    if pool.zones:
        return len(set(pool.zones))
    prof = profile(source)
    if prof.fabric.placement_group and pool_fabric(pool) is not None:
        return 1
    return prof.zones.unlisted_pool_count


def fabric_advisory(source: str, deployment: str, nodes: int, fabric: str | None) -> str | None:
    """The advisory for a replica of several nodes on a pool without a fabric claim, else None.

    Every step of a group's engine exchanges activations (pipeline parallel) or all-reduces
    (tensor parallel) between its nodes; over the nodes' ordinary network that runs at a fraction
    of the speed of EFA or InfiniBand, so the group serves, but slowly. The message says how to
    claim the cloud's fabric (`Fabric.claim` of its profile), or that the cloud offers none here.
    """
    if nodes <= 1 or fabric is not None:
        return None
    claim = profile(source).fabric.claim
    how = f"Fix: {claim}" if claim else f"{source} offers no high-speed fabric this program sets up"
    return (
        f"deployment '{deployment}' spans {nodes} nodes per replica on a pool that claims no high-speed fabric: "
        "the traffic between the group's nodes (pipeline or tensor parallel, every step) goes over the nodes' "
        f"ordinary network, a fraction of the speed of EFA or InfiniBand; {how}"
    )

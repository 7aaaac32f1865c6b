"""What a pool's nodes are bought as (`nodePools[].capacity`): the types each cloud offers, and their keys.

A cloud's profile lists the capacity types its Kubernetes pools can be bought as beyond on demand,
in its own terms with the page that documents them (`infra.profiles.Capacities`); a type it does
not list is refused with what the cloud documents instead. The cloud's component spells the type
(GKE `nodeConfig.spot`, EKS `capacityType`, AKS `scaleSetPriority` ...). Not here: prices and the
budget, and what a deployment keeps off reclaimable capacity.
"""

from __future__ import annotations

from collections.abc import Mapping

from clouds import profile
from infra.config.clusters import CapacityType, NodePool, PoolCapacity
from infra.config.issues import ConfigIssue
from infra.config.model import Fleet
from infra.config.roles import claimed_drivers, role_of
from infra.profiles import CloudProfile, pool_nodes, zone_count

# The keys of `capacity` each type takes besides `type` and `hourlyPrice` (the price is judged with
# the budget). A key of another type would be silently ignored by the cloud's component, so it is refused.
TYPE_KEYS: Mapping[CapacityType, frozenset[str]] = {
    CapacityType.ON_DEMAND: frozenset(),
    CapacityType.SPOT: frozenset({"maxPrice"}),
    CapacityType.RESERVATION: frozenset({"reservation"}),
    CapacityType.CAPACITY_BLOCK: frozenset({"reservation", "blockNodes", "blockZone"}),
}
# The stack file's key for each field of `PoolCapacity` judged here.
KEY_FIELDS = {
    "reservation": "reservation",
    "maxPrice": "max_price",
    "blockNodes": "block_nodes",
    "blockZone": "block_zone",
}


def check_capacity(fleet: Fleet) -> list[ConfigIssue]:
    """Every pool's capacity against its cloud's offer; pools of clusters the program does not build are the owner's."""
    issues: list[ConfigIssue] = []
    classes = {c.name: c for c in fleet.classes}
    for ki, cluster in enumerate(fleet.clusters):
        if not cluster.provisioned:
            continue
        cloud = profile(cluster.source)
        for pi, pool in enumerate(cluster.node_pools):
            cls = classes.get(pool.class_name)
            # A pool of an unknown class is reported by `check_references`; its role is unknown here.
            gpu = cls is not None and role_of(claimed_drivers(cls)) == "GPU"
            prov = cls.provisioning if cls is not None else None
            block = prov.written_machine if prov is not None and prov.provider == cluster.source else None
            machine = block.machine_name if block is not None else None
            issues += pool_capacity_issues(f"clusters[{ki}].nodePools[{pi}]", cloud, pool, gpu, machine)
    return issues


def pool_capacity_issues(
    ppath: str, cloud: CloudProfile, pool: NodePool, gpu: bool, machine: str | None
) -> list[ConfigIssue]:
    capacity = pool.capacity
    path = f"{ppath}.capacity"
    kind = capacity.type
    issues = [
        ConfigIssue(
            f"{path}.{key}",
            f"capacity.{key} is set on pool '{pool.name}', whose capacity type {kind} does not take it",
            f"remove capacity.{key}, or set capacity.type to {takers(key)}",
        )
        for key, attr in KEY_FIELDS.items()
        if getattr(capacity, attr) is not None and key not in TYPE_KEYS[kind]
    ]
    if kind is CapacityType.ON_DEMAND:
        return issues
    terms = cloud.capacity.offered.get(kind)
    if terms is None:
        offered = " or ".join(str(t) for t in cloud.capacity.offered)
        instead = f"set capacity.type to {offered}, or " if offered else ""
        return [
            *issues,
            ConfigIssue(
                f"{path}.type",
                f"{cloud.name} pools cannot be bought as {kind}: {cloud.capacity.lacks}",
                f"{instead}remove capacity (the pool is bought on demand)",
            ),
        ]
    if terms.gpu_only and not gpu:
        issues.append(
            ConfigIssue(
                f"{path}.type",
                f"{cloud.name} offers {terms.term} for GPU machines only, and pool '{pool.name}' has no GPU "
                f"({terms.source})",
                "remove capacity from the pool (it is bought on demand), or give it a GPU class",
            )
        )
    if terms.machines is not None and machine is not None and not terms.machines.pattern.match(machine):
        issues.append(
            ConfigIssue(
                f"{path}.type",
                f"{cloud.name} offers {terms.term} on {terms.machines.says}, and pool '{pool.name}' is on "
                f"{machine} ({terms.source})",
                terms.machines.fix,
            )
        )
    if capacity.max_price is not None and not terms.max_price:
        issues.append(
            ConfigIssue(
                f"{path}.maxPrice",
                f"{cloud.name} takes no price ceiling for a spot pool ({terms.term}: {terms.source})",
                "remove capacity.maxPrice: the pool pays the cloud's spot price",
            )
        )
    if kind in (CapacityType.RESERVATION, CapacityType.CAPACITY_BLOCK):
        issues += reservation_issues(path, cloud, kind, capacity)
    if kind is CapacityType.CAPACITY_BLOCK:
        issues += block_issues(ppath, cloud, pool)
    return issues


def takers(key: str) -> str:
    return " or ".join(str(kind) for kind, keys in TYPE_KEYS.items() if key in keys)


def reservation_issues(path: str, cloud: CloudProfile, kind: CapacityType, capacity: PoolCapacity) -> list[ConfigIssue]:
    """A reservation or capacity block names the one it consumes, in the form the cloud gives it."""
    terms = cloud.capacity.offered[kind]
    if capacity.reservation is None:
        return [
            ConfigIssue(
                f"{path}.reservation",
                f"a {kind} pool names the {cloud.name} reservation its nodes consume ({terms.term})",
                f"set capacity.reservation to {terms.reservation.says if terms.reservation else 'its ID'}",
            )
        ]
    form = terms.reservation
    if form is not None and not form.pattern.fullmatch(capacity.reservation):
        return [
            ConfigIssue(
                f"{path}.reservation",
                f"'{capacity.reservation}' is not {form.says}",
                form.fix,
            )
        ]
    return []


def block_issues(ppath: str, cloud: CloudProfile, pool: NodePool) -> list[ConfigIssue]:
    """A capacity block holds so many instances in one zone: the pool can have no more, and nowhere else.

    A block is a targeted capacity reservation of so many instances in a single zone, and its pool's
    instances launch only into it (https://docs.aws.amazon.com/autoscaling/ec2/userguide/launch-template-capacity-blocks.html):
    a node beyond the block, or in another zone, would never launch. So a pool that could grow past
    the block, or that spans zones other than the block's, is refused before anything is created.
    """
    capacity = pool.capacity
    path = f"{ppath}.capacity"
    issues = []
    if capacity.block_nodes is None:
        issues.append(
            ConfigIssue(
                f"{path}.blockNodes",
                f"capacity block pool '{pool.name}' does not say how many instances its block holds",
                "set capacity.blockNodes to the instance count of the block as bought",
            )
        )
    else:
        most = pool_nodes(pool.node_count, pool.max_node_count, zone_count(cloud, tuple(pool.zones)))[1]
        if most > capacity.block_nodes:
            key = "maxNodeCount" if pool.max_node_count is not None else "nodeCount"
            issues.append(
                ConfigIssue(
                    f"{ppath}.{key}",
                    f"pool '{pool.name}' can have {most} nodes, more than the {capacity.block_nodes} its capacity "
                    "block holds",
                    f"set {key} to at most {capacity.block_nodes}",
                )
            )
    if capacity.block_zone is None:
        issues.append(
            ConfigIssue(
                f"{path}.blockZone",
                f"capacity block pool '{pool.name}' does not say which zone its block is in",
                "set capacity.blockZone to the block's zone, and zones to [that zone]",
            )
        )
    elif list(pool.zones) != [capacity.block_zone]:
        where = f"zones {list(pool.zones)}" if pool.zones else "every zone of the cluster"
        issues.append(
            ConfigIssue(
                f"{ppath}.zones",
                f"pool '{pool.name}' would place nodes in {where}, but its capacity block is in "
                f"{capacity.block_zone} only",
                f"set zones: [{capacity.block_zone}]",
            )
        )
    return issues

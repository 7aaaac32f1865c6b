"""Reclaimable capacity: the rules on a deployment's floor, its spot pool and the pools' spot taints.

A spot pool's nodes can be taken back by the cloud at any time (`PoolCapacity.reclaimable`). A
deployment keeps serving through a reclaim only with replicas elsewhere: `floor` replicas on its
`pool`, which must not be reclaimable, and the rest on `spotPool`, which is. Kubernetes does not
preempt for DRA claims (KEP-5690 "DRA Preemption", alpha targeted at v1.38,
https://www.kubernetes.dev/resources/keps/5690/): a reclaimed node's claims are released when its
pods go, and the pods that replace them need free devices on the capacity that remains. A
PodDisruptionBudget keeps the
floor through evictions (`components.model_deployment.disruption_budget`), never through a reclaim.

`check_spot_pools` runs with the references (its pool must exist before the facts are derived);
`check_reclaim` with the rules on values; `reclaim_advisory` is the `reclaim-all-replicas` policy's
message. It is not the capacity types each cloud takes (infra/checks/capacity.py).
"""

from __future__ import annotations

from infra.config.issues import ConfigIssue
from infra.config.model import Fleet, InferenceCluster, ModelDeploymentSpec, NodePool

RECLAIM_ALL_REPLICAS = "reclaim-all-replicas"
# The workload above a floor is named `<name><SPOT_SUFFIX>` (`infra.serving.pods.SPOT_SUFFIX`).
_SPOT_SUFFIX = "-spot"


def _cluster(fleet: Fleet, name: str) -> InferenceCluster | None:
    return next((c for c in fleet.clusters if c.name == name), None)


def _pool(cluster: InferenceCluster | None, name: str | None) -> NodePool | None:
    if cluster is None or name is None:
        return None
    return next((p for p in cluster.node_pools if p.name == name), None)


def check_spot_pools(fleet: Fleet) -> list[ConfigIssue]:
    """Each `spotPool` names another pool of the deployment's cluster whose class has the devices the
    deployment claims, of the same device classes: both workloads take their claims from one
    ResourceClaimTemplate."""
    issues: list[ConfigIssue] = []
    classes = {c.name: c for c in fleet.classes}
    for di, dep in enumerate(fleet.deployments):
        if dep.spot_pool is None:
            continue
        path = f"deployments[{di}].spotPool"
        cluster = _cluster(fleet, dep.cluster)
        pool = _pool(cluster, dep.pool)
        if cluster is None or pool is None:
            continue  # the deployment's own references report it
        spot = _pool(cluster, dep.spot_pool)
        others = [p.name for p in cluster.node_pools if p.name != dep.pool]
        if spot is None:
            issues.append(
                ConfigIssue(
                    path,
                    f"cluster '{dep.cluster}' has no pool '{dep.spot_pool}'",
                    f"use one of: {', '.join(others)}" if others else "add a pool with capacity: {type: Spot}",
                )
            )
            continue
        if spot.name == dep.pool:
            issues.append(
                ConfigIssue(
                    path,
                    f"spotPool '{dep.spot_pool}' is the deployment's own pool: the floor and the replicas above it "
                    "would share its nodes",
                    "name another pool of the cluster, one with capacity: {type: Spot}",
                )
            )
            continue
        own = classes.get(pool.class_name)
        theirs = classes.get(spot.class_name)
        if own is None or theirs is None:
            continue  # the pools' references report it
        mine = {d.name: d.device_class_name for d in own.devices}
        have = {d.name: d.device_class_name for d in theirs.devices}
        for req in dep.devices:
            if req.name in mine and have.get(req.name) != mine[req.name]:
                issues.append(
                    ConfigIssue(
                        path,
                        f"class '{theirs.name}' of spotPool '{spot.name}' has no device '{req.name}' of device class "
                        f"'{mine[req.name]}' as class '{own.name}' of pool '{dep.pool}' does: the replicas on both "
                        "pools claim from one template",
                        f"give class '{theirs.name}' the device '{req.name}' (deviceClassName: {mine[req.name]}), "
                        "or name a spot pool of such a class",
                    )
                )
    return issues


def check_reclaim(fleet: Fleet) -> list[ConfigIssue]:
    """The floor's rules, the multi-node rule and the pools' `nodeTaint`; each reports independently."""
    issues: list[ConfigIssue] = []
    for di, dep in enumerate(fleet.deployments):
        cluster = _cluster(fleet, dep.cluster)
        issues += _floor_issues(fleet, di, dep, _pool(cluster, dep.pool), _pool(cluster, dep.spot_pool))
        issues += _group_issues(di, dep, _pool(cluster, dep.pool))
    for ki, cluster in enumerate(fleet.clusters):
        for pi, pool in enumerate(cluster.node_pools):
            issues += _node_taint_issues(f"clusters[{ki}].nodePools[{pi}].capacity.nodeTaint", cluster, pool)
    return issues


def _floor_issues(
    fleet: Fleet, di: int, dep: ModelDeploymentSpec, pool: NodePool | None, spot: NodePool | None
) -> list[ConfigIssue]:
    at = f"deployments[{di}]"
    if dep.spot_pool is None:
        if dep.floor is None:
            return []
        return [
            ConfigIssue(
                f"{at}.floor",
                f"floor {dep.floor} keeps replicas on pool '{dep.pool}' while the rest run on a spot pool, and the "
                "deployment names none",
                "set spotPool: <a pool of the cluster with capacity: {type: Spot}>, or remove floor",
            )
        ]
    issues: list[ConfigIssue] = []
    if dep.floor is None:
        issues.append(
            ConfigIssue(
                f"{at}.spotPool",
                "a deployment with a spotPool keeps a floor of replicas on its pool, and sets none",
                "set floor: 1 (or more), the replicas that stay on pool through a reclaim",
            )
        )
    elif dep.floor > dep.least_replicas:
        key = "autoscaling.minReplicas" if dep.autoscaling is not None else "replicas"
        issues.append(
            ConfigIssue(
                f"{at}.floor",
                f"floor {dep.floor} is more than the deployment's {dep.least_replicas} replicas ({key}): the floor "
                "is kept at all times",
                f"set floor at most {dep.least_replicas}, or raise {key} to at least {dep.floor}",
            )
        )
    if dep.nodes > 1:
        issues.append(
            ConfigIssue(
                f"{at}.nodes",
                f"replicas of {dep.nodes} nodes take no floor: the workload above the floor is a Deployment of "
                "one-node replicas",
                "remove spotPool and floor (and put the groups on a pool that is not reclaimable), or use nodes: 1",
            )
        )
    if pool is not None and pool.capacity.reclaimable:
        issues.append(
            ConfigIssue(
                f"{at}.pool",
                f"the floor's pool '{pool.name}' is a spot pool: the cloud can reclaim the floor with the rest",
                "put the deployment on a pool whose capacity is OnDemand, Reservation or CapacityBlock, and keep "
                f"spotPool: {dep.spot_pool}",
            )
        )
    if spot is not None and spot.name != dep.pool and not spot.capacity.reclaimable:
        issues.append(
            ConfigIssue(
                f"{at}.spotPool",
                f"spotPool '{spot.name}' is {spot.capacity.type} capacity, not spot",
                f"give pool '{spot.name}' capacity: {{type: Spot}}, or put every replica on pool '{dep.pool}' "
                "(remove spotPool and floor)",
            )
        )
    taken = f"{dep.name}{_SPOT_SUFFIX}"
    clash = next(
        (i for i, d in enumerate(fleet.deployments) if d.cluster == dep.cluster and d.name == taken),
        None,
    )
    if clash is not None:
        issues.append(
            ConfigIssue(
                f"deployments[{clash}].name",
                f"deployment '{dep.name}' runs its replicas above the floor as '{taken}' on cluster '{dep.cluster}'",
                f"rename deployments[{clash}]",
            )
        )
    return issues


def _group_issues(di: int, dep: ModelDeploymentSpec, pool: NodePool | None) -> list[ConfigIssue]:
    """A replica of several nodes on a spot pool is refused unless the owner accepts it: the group
    serves only while every one of its nodes does, so one reclaimed node takes the whole group down,
    and it comes back only when a whole group's nodes are free at once."""
    if dep.nodes == 1 or pool is None or not pool.capacity.reclaimable or dep.accept_reclaim:
        return []
    return [
        ConfigIssue(
            f"deployments[{di}].nodes",
            f"replicas of {dep.nodes} nodes run on spot pool '{pool.name}': one reclaimed node takes its whole "
            f"group down, {dep.nodes} nodes' worth of devices",
            "put the deployment on a pool that is not reclaimable, or set acceptReclaim: true to accept it",
        )
    ]


def _node_taint_issues(path: str, cluster: InferenceCluster, pool: NodePool) -> list[ConfigIssue]:
    """`nodeTaint` says what an Existing owner's spot nodes carry: a pool the program builds carries
    what its cloud puts there (`CloudProfile.spot_taint`), and a pool that is not spot none."""
    taint = pool.capacity.node_taint
    if taint is None:
        return []
    if cluster.provisioned:
        return [
            ConfigIssue(
                path,
                f"nodeTaint names the taint an Existing owner's spot nodes carry; {cluster.source} taints the nodes "
                "it builds itself",
                "remove nodeTaint",
            )
        ]
    if not pool.capacity.reclaimable:
        return [
            ConfigIssue(
                path,
                f"nodeTaint is the taint of a spot pool's nodes, and pool '{pool.name}' is {pool.capacity.type}",
                "set capacity.type: Spot, or remove nodeTaint (a taint on every pool's nodes goes in the "
                "cluster's taints)",
            )
        ]
    return []


def reclaim_advisory(deployment: str, reclaimable: bool, floor: int, replicas: int, startup_seconds: int) -> str | None:
    """The advisory for a deployment whose every replica runs on reclaimable capacity, else None:
    what one reclaim of the pool costs it."""
    if not reclaimable or floor or replicas <= 0:
        return None
    return (
        f"deployment '{deployment}' runs all {replicas} of its replicas on a spot pool: a reclaim of the pool's nodes "
        "takes them all at once, and it serves nothing until replacements find free devices on nodes the cloud gives "
        f"back and load the model (up to startupSeconds, {startup_seconds} s). Fix: keep a floor on capacity that is "
        "not reclaimable: pool: <an OnDemand pool>, spotPool: <this pool>, floor: 1"
    )

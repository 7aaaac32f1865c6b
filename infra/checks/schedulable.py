"""Schedulability: deployments that could never be scheduled, refused before anything registers.

A deployment whose pods can never fit would otherwise plan clean and show up only as a Pending pod
after `pulumi up`. Two rules, each reported at the deployment's path with a fix, every one
independently (docs/serving.md, "What is checked before anything runs"):

- memory: a pod's memory request against what one node of its pool can give a pod: the machine's
  memory (the catalog row) less what the cloud keeps for the kubelet, system daemons and eviction
  (`reserved_memory`: each cloud's rule in its record, `CloudProfile.memory_reservation`) and what this stack's own per-node pods
  request (the node agents on their chart rows, `NodeAgent.memory`). Only provisioned pools whose machine the catalog
  knows are checked; an Existing cluster's nodes are the owner's, and an unknown machine is reported as
  `unknown-machine-type` (`infra.checks.devices`).
- claims: the devices every deployment on a pool claims, replicas x devices per replica, against
  the devices the pool's nodes carry at its largest (`PoolFacts.nodes`: `maxNodeCount` when
  autoscaled); GPU devices by the class's `count` per node, `dra.cpu` claims by the CPUs
  dra-driver-cpu leaves claimable on the machine. Deployments sharing a pool add up; the issue is
  reported at the deployment that pushes the total over. Existing clusters are skipped: their
  `nodeCount` does not say how many nodes the owner runs.

Not here, because a rule already covers it: one replica's CPU claim against the machine
(`cpu-claim-exceeds-machine`, `infra.checks.devices`: the class's whole claim, which bounds any
deployment's, against the vCPUs less the reserved ones), and a PersistentVolumeClaim cache
shared by several replicas (`check_serving`, `infra.checks.rules`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal

from clouds import cloud, machine
from infra.config.issues import ConfigIssue
from infra.config.model import ClaimMode, Device, Fleet, InferenceCluster, ModelDeploymentSpec
from infra.config.roles import CPU_CLAIM_DRIVER, Role, claimed_cpus
from infra.cpus import CPU_DRIVER_RESERVED_CPUS, claimable_cpus, reserved_cpus
from infra.facts import ClusterFacts, PoolFacts
from infra.formats import parse_quantity
from infra.machines import MachineType
from infra.multinode import pool_zones
from infra.reservations import GIB, MIB, Reservation, default_reservation, machine_memory
from infra.serving.catalog import cluster_charts, node_agents
from infra.serving.chart import NodeAgent
from infra.vocabulary import GPU_VENDORS

# --------------------------------------------------------------------------------------------
# What a node can give a pod


def reservation(source: str) -> Reservation:
    """The cloud's rule for the memory it keeps from pods (`CloudProfile.memory_reservation`, with its
    source), or GKE's published tiers for a cloud that publishes none."""
    return cloud(source).profile.memory_reservation or default_reservation(source)


def reserved_memory(source: str, row: MachineType) -> Decimal:
    """Bytes of a node of `row` that the cloud `source` keeps from pods."""
    return reservation(source).reserved(row)


def node_agents_memory(cf: ClusterFacts, pool: PoolFacts) -> Decimal:
    """Bytes this stack's per-node pods request on each node of `pool`: the memory of the node agents
    (`NodeAgent.memory`) of the rows the cluster installs that run on the pool's role."""
    return _agents_memory((a for c in cluster_charts(cf) for a in c.node_agents), pool.role)


def _agents_memory(agents: Iterable[NodeAgent], role: Role) -> Decimal:
    # The cloud's own daemons (kube-proxy, log agents) are not counted: a pod may get somewhat less still.
    return sum((parse_quantity(a.memory) or Decimal(0) for a in agents if a.memory and role in a.roles), Decimal(0))


@dataclass(frozen=True)
class NodeMemory:
    """One node of a pool, in bytes: its machine's memory, what the cloud keeps and what our agents take."""

    row: MachineType
    machine: Decimal
    reserved: Decimal
    agents: Decimal

    @property
    def for_pods(self) -> Decimal:
        """What the scheduler can give one of the deployments' pods on an otherwise empty node."""
        return self.machine - self.reserved - self.agents


def node_memory(cf: ClusterFacts, pool: PoolFacts) -> NodeMemory | None:
    """What a node of `pool` can give a pod, or None when its machine is not one the catalog knows."""
    if not cf.profile.provisioned or pool.machine is None:
        return None
    row = machine(cf.source, pool.machine)
    if row is None:
        return None
    return NodeMemory(row, machine_memory(row), reserved_memory(cf.source, row), node_agents_memory(cf, pool))


def most_pod_memory(source: str, row: MachineType, role: Role) -> Decimal:
    """What a node of `row` can give a pod at the least: `NodeMemory.for_pods` with every node agent
    of the pool's role counted, installed or not (the config rules run before the cluster's
    components are known), so a request within it passes `memory_issues` on any such pool."""
    return machine_memory(row) - reserved_memory(source, row) - _agents_memory(node_agents(), role)


# What the fix for an engine without a memory request proposes where its node can hold it: enough
# for a small model's weights staged through host RAM plus the default shmSize.
SUGGESTED_MEMORY = 32 * GIB


def suggested_memory(source: str, row: MachineType | None, role: Role, shm_size: str) -> str | None:
    """A memory request the next plan accepts for a pod on a node of `row`, or None when none can.

    `SUGGESTED_MEMORY`, raised above `shmSize` (which counts against memory: `check_serving`) and
    lowered to what the node can give a pod (`most_pod_memory`; no bound where the catalog does not
    know the machine, as `memory_issues` has none). None when the node cannot hold more than `shmSize`.
    """
    shm = parse_quantity(shm_size) or Decimal(0)
    wanted = max(SUGGESTED_MEMORY, (shm // GIB + 1) * GIB)
    if row is not None:
        most = most_pod_memory(source, row, role)
        fits = (most // GIB) * GIB if most >= GIB else (max(most, Decimal(0)) // MIB) * MIB
        wanted = min(wanted, fits)
    if wanted <= shm:
        return None
    return f"{int(wanted // GIB)}Gi" if wanted % GIB == 0 else f"{int(wanted // MIB)}Mi"


# --------------------------------------------------------------------------------------------
# The issues


def schedulability_issues(fleet: Fleet, facts: Sequence[ClusterFacts]) -> list[ConfigIssue]:
    """Deployments that could never be scheduled: every memory and claim issue, each at its path."""
    located = Located(fleet, facts)
    return memory_issues(located) + claim_issues(located) + group_zone_issues(located)


@dataclass(frozen=True)
class Located:
    """The fleet with its facts, and where a cluster and a class sit in the stack file."""

    fleet: Fleet
    facts: Sequence[ClusterFacts]

    def cluster(self, name: str) -> tuple[InferenceCluster, ClusterFacts]:
        for cluster, cf in zip(self.fleet.clusters, self.facts, strict=True):
            if cluster.name == name:
                return cluster, cf
        raise KeyError(name)

    def class_index(self, name: str) -> int:
        return next(ci for ci, c in enumerate(self.fleet.classes) if c.name == name)


def memory_issues(located: Located) -> list[ConfigIssue]:
    """Each deployment's memory request against what one node of its pool can give a pod."""
    issues: list[ConfigIssue] = []
    for di, dep in enumerate(located.fleet.deployments):
        request = parse_quantity(dep.memory)  # None without a request
        if request is None:
            continue
        cluster, cf = located.cluster(dep.cluster)
        pool = cf.pool(dep.pool)
        node = node_memory(cf, pool)
        if node is None or request <= node.for_pods:
            continue
        assert pool.class_name is not None, "a user pool has a class"
        prov = located.fleet.class_named(pool.class_name).provisioning
        assert prov is not None, "a pool with a machine has provisioning"
        machine_at = (
            f"classes[{located.class_index(pool.class_name)}].provisioning.{cloud(prov.provider).key}."
            f"{prov.machine.machine_key()}"
        )
        agents = f" and {mib(node.agents)} MiB this stack's node agents request" if node.agents else ""
        issues.append(
            ConfigIssue(
                f"deployments[{di}].memory",
                f"memory {dep.memory} is more than the {gib_down(node.for_pods)} GiB a {node.row.name} node of pool "
                f"'{pool.name}' (cluster '{cluster.name}') can give a pod: {gib_text(node.machine)} GiB less "
                f"{reservation(cf.source).says} ({gib_round(node.reserved)} GiB){agents}",
                f"request at most {largest_request(node.for_pods)}, or use a larger machine for the pool's class "
                f"({machine_at})",
            )
        )
    return issues


@dataclass(frozen=True)
class Demand:
    """One deployment's claim on one kind of device of its pool: replicas x nodes x `each` (per pod)."""

    index: int
    deployment: ModelDeploymentSpec
    each: int
    pool: str

    @property
    def replicas(self) -> int:
        """The deployment's replicas on this pool (with a floor, split with its spot pool)."""
        return self.deployment.replicas_on(self.pool)

    @property
    def pods(self) -> int:
        """Every pod of every replica: a multi-node replica is a group of `nodes` pods, one per node."""
        return self.replicas * self.deployment.nodes

    @property
    def total(self) -> int:
        return self.pods * self.each

    @property
    def says(self) -> str:
        """The demand as messages spell it: `2 replicas x 8`, `2 replicas x 2 nodes x 8`."""
        nodes = f" x {plural(self.deployment.nodes, 'node')}" if self.deployment.nodes > 1 else ""
        return f"{plural(self.replicas, 'replica')}{nodes} x {self.each}"

    @property
    def share(self) -> str:
        """The demand of a deployment beside the one reported: `2 x 8`, `2 x 2 nodes x 8`."""
        nodes = f" x {plural(self.deployment.nodes, 'node')}" if self.deployment.nodes > 1 else ""
        return f"{self.replicas}{nodes} x {self.each}"


@dataclass(frozen=True)
class Capacity:
    """One kind of device a pool's nodes carry: what it is called in messages, and how many per node."""

    what: str  # "'gpu' devices", "dra.cpu CPUs"
    per_node: int
    per_node_says: str  # "1 per node", "6 claimable CPUs per node (8 vCPUs of n2-standard-8 less 2 ...)"


def claim_issues(located: Located) -> list[ConfigIssue]:
    """The devices every deployment on a pool claims against what the pool's nodes carry at most."""
    issues: list[ConfigIssue] = []
    for ki, (cluster, cf) in enumerate(zip(located.fleet.clusters, located.facts, strict=True)):
        if not cluster.provisioned:
            continue
        for pi, spec in enumerate(cluster.node_pools):
            pool = cf.pool(spec.name)
            on_pool = [
                (di, dep)
                for di, dep in enumerate(located.fleet.deployments)
                if dep.cluster == cluster.name and dep.replicas_on(pool.name) > 0
            ]
            if not on_pool:
                continue
            where = PoolAt(f"clusters[{ki}].nodePools[{pi}]", cluster, pool)
            for device in pool.devices:
                if device.claim is ClaimMode.DRA and device.driver in GPU_VENDORS:
                    issues += where.over(gpu_demands(on_pool, device, pool.name), gpu_capacity(device))
            cpu = cpu_capacity(cf, pool)
            if cpu is not None:
                issues += where.over(cpu_demands(on_pool, pool), cpu)
    return sorted(issues, key=lambda i: deployment_order(i.path))


def gpu_demands(on_pool: Sequence[tuple[int, ModelDeploymentSpec]], device: Device, pool: str) -> list[Demand]:
    demands = []
    for di, dep in on_pool:
        each = sum(req.count for req in dep.devices if req.name == device.name)
        if each:
            demands.append(Demand(di, dep, each, pool))
    return demands


def gpu_capacity(device: Device) -> Capacity:
    return Capacity(f"'{device.name}' devices", device.count, f"{device.count} per node")


def cpu_demands(on_pool: Sequence[tuple[int, ModelDeploymentSpec]], pool: PoolFacts) -> list[Demand]:
    """CPUs each replica claims through dra.cpu: the class device's capacity x the request's count."""
    devices = {d.name: d for d in pool.devices if d.claim is ClaimMode.DRA and d.driver == CPU_CLAIM_DRIVER}
    demands = []
    for di, dep in on_pool:
        each = sum((claimed_cpus(devices[r.name]) or 0) * r.count for r in dep.devices if r.name in devices)
        if each:
            demands.append(Demand(di, dep, each, pool.name))
    return demands


def cpu_capacity(cf: ClusterFacts, pool: PoolFacts) -> Capacity | None:
    """The CPUs dra-driver-cpu leaves claimable on each node of a CPU pool, when the catalog knows its machine."""
    if pool.role != "CPU" or pool.machine is None:
        return None
    row = machine(cf.source, pool.machine)
    if row is None:
        return None
    usable = max(claimable_cpus(row), 0)
    return Capacity(
        "dra.cpu CPUs",
        usable,
        f"{usable} claimable CPUs per node ({row.vcpus} vCPUs of {row.name} less the {reserved_cpus()} "
        f"dra-driver-cpu keeps, {CPU_DRIVER_RESERVED_CPUS})",
    )


@dataclass(frozen=True)
class PoolAt:
    """A provisioned pool, where it sits in the stack file, and the issue of claims it cannot hold."""

    path: str
    cluster: InferenceCluster
    pool: PoolFacts

    def over(self, demands: Sequence[Demand], capacity: Capacity) -> list[ConfigIssue]:
        """One issue when the demands exceed the pool, at the deployment whose replicas push the total over.

        A replica that claims more than a node carries fits on no number of nodes: that is
        `cpu-claim-exceeds-machine`'s to report (`infra.checks.devices`), and the rest are judged without it.
        """
        demands = [d for d in demands if d.each <= capacity.per_node]
        total, holds = sum(d.total for d in demands), self.pool.nodes * capacity.per_node
        if total <= holds:
            return []
        running, pusher = 0, demands[-1]
        for d in demands:
            running += d.total
            if running > holds:
                pusher = d
                break
        others = [d for d in demands if d is not pusher]
        dep = pusher.deployment
        replicas = pusher.says
        on = f"pool '{self.pool.name}' (cluster '{self.cluster.name}')"
        if others:
            shares = ", ".join(f"'{d.deployment.name}': {d.share}" for d in others)
            claims = f"brings the {capacity.what} claimed on {on} to {total} (its {replicas}, with {shares})"
        else:
            claims = f"claims {total} {capacity.what} on {on} ({replicas})"
        room = max(holds - sum(d.total for d in others), 0) // (pusher.each * dep.nodes)
        lower = (
            f"lower {dep.peak_replicas_key} to at most {room}" + (" (with the others as they are)" if others else "")
            if room
            # Its replicas fit a node and the pool has one, so only the others can have left no room.
            else "move it to another pool or lower the others' replicas"
        )
        return [
            ConfigIssue(
                f"deployments[{pusher.index}].{dep.peak_replicas_key}",
                f"deployment '{dep.name}' {claims}, more than the {holds} the pool can hold: at most "
                f"{plural(self.pool.nodes, 'node')}, {capacity.per_node_says}",
                f"{lower}, or {self.more_nodes(-(-total // capacity.per_node))}",
            )
        ]

    def more_nodes(self, needed: int) -> str:
        """The node count that gives the pool at least `needed` nodes, as the stack file spells it."""
        if self.pool.autoscaled:
            return f"let the pool have at least {needed} nodes ({self.path}.maxNodeCount: {needed})"
        zones = self.pool.zone_count
        per_zone = -(-needed // zones)
        counted = f", per zone of its {zones}" if zones > 1 else ""
        return f"let the pool have at least {needed} nodes ({self.path}.nodeCount: {per_zone}{counted})"


def group_zone_issues(located: Located) -> list[ConfigIssue]:
    """A multi-node replica on a pool that spans several zones: its group could be split over them.

    The pods of one group run one engine whose collectives cross the network between them every
    step; between zones that is slower and billed, and a cloud's placement group (EKS's cluster
    placement group for EFA pools) lives in one zone. The LeaderWorkerSet keeps a group's pods in
    one zone (`components.features.multinode`), but a pool whose nodes are spread over zones can leave no
    zone with enough of them, so a multi-node deployment needs a pool of one zone: its one declared
    zone, or where a pool without zones spans several (GKE's regional pools, EKS's node groups over
    the VPC's three subnets, unless an EFA pool's placement group keeps it in one), a pool that
    names one (`infra.multinode.pool_zones`).
    """
    issues: list[ConfigIssue] = []
    for di, dep in enumerate(located.fleet.deployments):
        if dep.nodes == 1:
            continue
        cluster, cf = located.cluster(dep.cluster)
        pool = cf.pool(dep.pool)
        zones = pool_zones(cluster.source, pool)
        if zones <= 1:
            continue
        ki = located.fleet.clusters.index(cluster)
        pi = next(i for i, p in enumerate(cluster.node_pools) if p.name == pool.name)
        spread = f"zones {', '.join(pool.zones)}" if pool.zones else f"{zones} zones (none named)"
        one = f"[{pool.zones[0]}]" if pool.zones else "[<one zone of the region>]"
        issues.append(
            ConfigIssue(
                f"deployments[{di}].nodes",
                f"deployment '{dep.name}' spans {dep.nodes} nodes per replica on pool '{pool.name}' (cluster "
                f"'{cluster.name}'), which spreads its nodes over {spread}: a group could be split between zones",
                f"keep the pool in one zone (clusters[{ki}].nodePools[{pi}].zones: {one}), "
                "or use a pool of one zone for this deployment",
            )
        )
    return issues


def deployment_order(path: str) -> int:
    """The deployment index of a `deployments[i]...` path, to report in config order."""
    return int(path.split("[", 1)[1].split("]", 1)[0])


# --------------------------------------------------------------------------------------------
# Numbers as messages show them


def gib_text(amount: Decimal) -> str:
    """Whole GiB as such (`32`), else to a tenth (`7.5`)."""
    value = amount / GIB
    return str(int(value)) if value == value.to_integral_value() else str(value.quantize(Decimal("0.1"), ROUND_HALF_UP))


def gib_down(amount: Decimal) -> str:
    """GiB to a tenth, rounded down: never more than a pod can get."""
    return str((max(amount, Decimal(0)) / GIB).quantize(Decimal("0.1"), ROUND_DOWN))


def gib_round(amount: Decimal) -> str:
    return str((amount / GIB).quantize(Decimal("0.01"), ROUND_HALF_UP))


def mib(amount: Decimal) -> str:
    return str((amount / MIB).quantize(Decimal(1), ROUND_HALF_UP))


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def largest_request(amount: Decimal) -> str:
    """The largest whole quantity that fits in `amount` bytes: `27Gi`, or `900Mi` below 1 GiB."""
    if amount >= GIB:
        return f"{int(amount // GIB)}Gi"
    return f"{max(int(amount // MIB), 0)}Mi"

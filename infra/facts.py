"""Derived facts: what each cluster and pool is, computed once from the validated fleet.

Components only turn these facts into provider resources (each cloud's spelling); the plan prints
them; the policy pack receives them as component inputs. Nothing downstream re-derives a role, a
label or a taint.

Node labels and taints (the values the nodes carry, whoever sets them):
- every pool: `modelplane.ai/pool=<pool>`; the system pool: `modelplane.ai/pool=system`;
- GPU pool: `modelplane.ai/gpu=<accelerator type>` and its vendor's taint (`nvidia.com/gpu=true`,
  on GKE `nvidia.com/gpu=present`; `amd.com/gpu=true`), effect NoSchedule, plus the labels the
  cloud's profile lists for NVIDIA pools;
- CPU pool: `modelplane.ai/cpu=true` label and taint, no accelerator.

What differs between clouds (taint value, labels, system machine, how node counts count) is read
from the cloud's profile (`infra.profiles`). Which serving-stack components a cluster installs is
the catalog's join (`infra.serving.catalog.cluster_charts`), not a fact computed here: the
arrows run from `components` to `infra`, never back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from clouds import profile
from infra.config.base import Accelerator, MachineBlock
from infra.config.model import (
    ChartMirror,
    Device,
    Fleet,
    InferenceClass,
    InferenceCluster,
    PoolCapacity,
    Supplied,
    cluster_region,
)
from infra.config.roles import Role, claimed_drivers, cluster_dra_drivers, gpu_device_count, role_of
from infra.machines import MachineType
from infra.profiles import CloudProfile, pool_nodes, zone_count
from infra.shared_cache import SharedCache, shared_caches
from infra.vocabulary import (
    AUTOSCALING_FEATURE,
    CPU_LABEL,
    CPU_TAINT_KEY,
    GPU_LABEL,
    GPU_VENDORS,
    NVIDIA,
    POOL_LABEL,
    SYSTEM_POOL,
    VENDOR_TAINT_KEY,
    vendor_gpu,
)

__all__ = ["CPU_LABEL", "CPU_TAINT_KEY", "GPU_LABEL", "POOL_LABEL", "SYSTEM_POOL", "VENDOR_TAINT_KEY"]

# The system pool: one node, room for a second where the cloud scales pools.
SYSTEM_NODES, SYSTEM_MAX_NODES = 1, 2


@dataclass(frozen=True)
class NodeTaint:
    """A taint a pool's nodes carry, as the program sets it (a user writes one as `infra.config.model.Taint`)."""

    key: str
    value: str
    effect: str = "NoSchedule"

    def as_json(self) -> dict[str, str]:
        return {"key": self.key, "value": self.value, "effect": self.effect}


@dataclass(frozen=True)
class PoolFacts:
    name: str
    class_name: str | None
    role: Role
    labels: Mapping[str, str]
    taints: tuple[NodeTaint, ...]
    accelerator: Accelerator | None
    vendor: str | None
    node_count: int
    min_node_count: int | None
    max_node_count: int | None
    zones: tuple[str, ...] = ()
    # The pool takes zones the zone catalog does not list (`NodePool.uncatalogued_zones`).
    uncatalogued_zones: bool = False
    devices: tuple[Device, ...] = ()
    claimed_drivers: tuple[str, ...] = ()
    machine: str | None = None
    disk_size_gb: int | None = None
    # The pool's class's own block for the cluster's cloud (`provisioning.<key>`), for the settings
    # only that cloud's component reads; None for the system pool and on Existing.
    machine_block: MachineBlock | None = None
    # What the cloud multiplies `node_count` by: the pool's zones where the cloud counts nodes per
    # zone (GKE regional clusters), else 1.
    zone_count: int = 1
    # What the pool's class left out and what supplied it (`infra.checks.supply`); None when written in full.
    supplied: Supplied | None = None
    # Whether the cloud's autoscaler can bring the pool up from zero nodes: a GPU pool's is the
    # cloud profile's `scaling.gpu_from_zero`; None where nothing here judges it (CPU and system
    # pools, and every pool of a cluster the program does not build).
    scale_from_zero: bool | None = None
    # How the pool's nodes are bought (`nodePools[].capacity`); None for the system pool, which the
    # program always buys on demand.
    capacity: PoolCapacity | None = None
    # The import ID of the running pool this one adopts (`nodePools[].adopt.id`); None: created.
    adopt_id: str | None = None
    # The cloud may take the pool's nodes back at any time (`capacity.type: Spot`).
    reclaimable: bool = False
    # Taints the pool's nodes carry for how they are bought, put there by the cloud (AKS's spot
    # taint, `CloudProfile.spot_taint`) or on Existing by the owner (`capacity.nodeTaint`); the
    # program never sets them, so they are not among `taints`, but every component on the pool's
    # nodes and every model placed there tolerates them.
    capacity_taints: tuple[NodeTaint, ...] = ()

    @property
    def node_taints(self) -> tuple[NodeTaint, ...]:
        """Every taint the pool's nodes carry: the program's (`taints`) and the capacity's."""
        return (*self.taints, *self.capacity_taints)

    @property
    def hourly_price(self) -> Decimal | None:
        """The price per node-hour the pool's class states for this cloud (`hourlyPrice`), if any."""
        return self.machine_block.hourly_price if self.machine_block is not None else None

    @property
    def autoscaled(self) -> bool:
        return self.min_node_count is not None and self.max_node_count is not None

    @property
    def nodes(self) -> int:
        """The most nodes the pool can have (`pool_nodes`)."""
        return pool_nodes(self.node_count, self.max_node_count, self.zone_count)[1]

    @property
    def created_nodes(self) -> int:
        """The nodes the cloud creates for the pool (`pool_nodes`)."""
        return pool_nodes(self.node_count, self.max_node_count, self.zone_count)[0]

    def as_json(self, keys: Sequence[str], given: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The pool's facts as JSON, in the one spelling every reader shares, with the keys it asks for.

        Readers: the plan document (`PLAN_POOL_KEYS`), the inputs a cluster component registers for
        the policies (`REGISTERED_POOL_KEYS`, `components.base.policy_inputs`) and the
        `schedulablePools` output (`SCHEDULABLE_POOL_KEYS`). A key that is no fact of the pool (the
        class as written in config) takes its value from `given`.
        """
        given = given or {}
        return {key: given[key] if key in given else POOL_JSON[key](self) for key in keys}


def capacity_json(capacity: PoolCapacity | None) -> dict[str, Any]:
    """A pool's capacity as the plan and the registered inputs spell it: `{"type": "OnDemand"}` for
    the default, and the keys the stack file set (prices as text)."""
    return (capacity or PoolCapacity()).model_dump(by_alias=True, mode="json", exclude_none=True)


# What the plan says of a pool whose cloud may take its nodes back (`PoolCapacity.reclaimable`).
RECLAIMABLE_TEXT = "reclaimable at short notice: the cloud may take a node back when it needs the capacity"


# One JSON spelling per fact of a pool (camelCase; taint effects in Kubernetes spelling).
POOL_JSON: Mapping[str, Callable[[PoolFacts], Any]] = {
    "name": lambda p: p.name,
    "className": lambda p: p.class_name,
    "role": lambda p: p.role,
    "labels": lambda p: dict(p.labels),
    "taints": lambda p: [t.as_json() for t in p.taints],
    "capacityTaints": lambda p: [t.as_json() for t in p.capacity_taints],
    "accelerator": lambda p: {"type": p.accelerator.type, "count": p.accelerator.count} if p.accelerator else None,
    "machine": lambda p: p.machine,
    "zones": lambda p: list(p.zones),
    "uncataloguedZones": lambda p: p.uncatalogued_zones,
    "nodeCount": lambda p: p.node_count,
    "minNodeCount": lambda p: p.min_node_count,
    "maxNodeCount": lambda p: p.max_node_count,
    "scaleFromZero": lambda p: p.scale_from_zero,
    "nodes": lambda p: p.nodes,
    "createdNodes": lambda p: p.created_nodes,
    "devices": lambda p: [d.model_dump(by_alias=True, exclude_defaults=False, mode="json") for d in p.devices],
    "derived": lambda p: supplied_json(p),
    # Text, so the exact figure reaches the pack (a JSON number would be a float)
    "hourlyPrice": lambda p: str(p.hourly_price) if p.hourly_price is not None else None,
    # `type`, and the reservation and prices where set (prices as text, as `hourlyPrice`)
    "capacity": lambda p: capacity_json(p.capacity),
    "reclaimRisk": lambda p: RECLAIMABLE_TEXT if p.capacity is not None and p.capacity.reclaimable else None,
}


# What each reader takes, in its order (the plan's and the registered inputs' are contracts).
PLAN_POOL_KEYS = (
    "name",
    "className",
    "role",
    "labels",
    "taints",
    "accelerator",
    "nodeCount",
    "minNodeCount",
    "maxNodeCount",
    "scaleFromZero",
    "createdNodes",
    "nodes",
    "machine",
    "zones",
    "derived",
    "capacity",
    "reclaimRisk",
    "capacityTaints",
)
REGISTERED_POOL_KEYS = (
    "name",
    "className",
    "role",
    "accelerator",
    "labels",
    "taints",
    "class",
    "machine",
    "zones",
    "uncataloguedZones",
    "nodeCount",
    "maxNodeCount",
    "hourlyPrice",
    "capacity",
)
SCHEDULABLE_POOL_KEYS = ("name", "nodes", "role", "devices")


def machine_row_json(row: MachineType) -> dict[str, Any]:
    """A catalog row as the plan shows it: the machine's shape, price and the page it was read from."""
    gpu = row.gpu
    return {
        "cloud": row.cloud,
        "machineType": row.name,
        "vcpus": row.vcpus,
        "memoryGib": row.memory_gib,
        "gpu": {"vendor": gpu.vendor, "model": gpu.model, "count": gpu.count, "memoryGib": gpu.memory_gib}
        if gpu
        else None,
        "acceleratorTypes": list(row.accelerator_types),
        "priceUsdHour": str(row.price_usd_hour) if row.price_usd_hour is not None else None,
        "source": row.source,
        "readOn": row.read_on,
    }


def supplied_json(pool: PoolFacts) -> dict[str, Any] | None:
    """The plan's `derived` of a pool: the keys its class left out, the values they took, and the
    catalog row (or the class's accelerator) they came from; None for a class written in full."""
    supplied = pool.supplied
    if supplied is None:
        return None
    # A key is the class's devices, its block's accelerator, or its block's machine (a chosen one).
    fact = {"devices": "devices", "accelerator": "accelerator"}
    values = {key: POOL_JSON[fact.get(key.rsplit(".", 1)[-1], "machine")](pool) for key in supplied.keys}
    return {
        "keys": list(supplied.keys),
        "values": values,
        "catalogRow": machine_row_json(supplied.row) if supplied.row else None,
        "accelerator": supplied.accelerator,
        # The class named no machine: the cheapest that fitted was chosen from these (cheapest first).
        "chosenFrom": [
            {"machineType": m.name, "priceUsdHour": str(m.price_usd_hour) if m.price_usd_hour is not None else None}
            for m in supplied.chosen_from
        ]
        or None,
    }


@dataclass(frozen=True)
class ClusterFacts:
    name: str
    source: str
    spec: InferenceCluster
    pools: tuple[PoolFacts, ...]  # the system pool first (when the cloud provisions one)
    dra_drivers: tuple[str, ...]
    supported_drivers: tuple[str, ...]
    # `clusters[].taints`: on every pool's nodes (`derive_cluster`), tolerated by model deployments
    # and by every node agent the stack installs (`infra.serving.catalog.cluster_charts`).
    taints: tuple[NodeTaint, ...] = field(default=())
    owner_gpu_operator: bool = False  # Existing only: the owner runs the GPU operator, the stack does not
    chart_mirror: ChartMirror | None = None  # `modelplane:chartMirror`: where the stack's charts come from
    preinstalled: tuple[str, ...] = ()  # Existing only: catalog components the cluster runs itself
    # Serving features the cluster's deployments use, which some catalog rows install for
    # (`Chart.features`): `autoscaling` when one of its deployments is autoscaled.
    features: tuple[str, ...] = ()
    # The shared weight caches of its deployments (`cache.volume: Shared`), one per namespace and model.
    shared_caches: tuple[SharedCache, ...] = ()

    @property
    def region(self) -> str | None:
        """The region (AKS: location) the cluster runs in; None for Existing."""
        return cluster_region(self.spec)

    @property
    def profile(self) -> CloudProfile:
        return profile(self.source)

    @property
    def adopt_id(self) -> str | None:
        """The import ID of the running cluster this one adopts (`<cloud>.adopt.id`); None: created."""
        return self.spec.adopt.id if self.spec.adopt is not None else None

    @property
    def user_pools(self) -> tuple[PoolFacts, ...]:
        return tuple(p for p in self.pools if p.role != "System")

    def pool(self, name: str) -> PoolFacts:
        for p in self.pools:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def capacity_taints(self) -> tuple[NodeTaint, ...]:
        """The capacity taints of its pools, once each: what every node agent tolerates beside `taints`."""
        return tuple(dict.fromkeys(t for p in self.pools for t in p.capacity_taints))

    def schedulable_pools(self) -> list[dict[str, Any]]:
        """`schedulablePools`: every pool a model can be placed on (user pools, not system)."""
        return [p.as_json(SCHEDULABLE_POOL_KEYS) for p in self.user_pools]


def pool_accelerator(
    source: str, cls_accel: Accelerator | None, vendor: str | None, gpu_count: int
) -> Accelerator | None:
    """The accelerator a GPU pool's nodes carry.

    Provisioned clouds take it from the class's block for that cloud. On Existing, provisioning is
    ignored (the owner's hardware is what it is): the class's own `accelerator` when it declares
    one, else the GPUs named by vendor (`amd-gpu`) with the class's GPU device count.
    """
    if vendor is None:
        return None
    if not profile(source).provisioned:
        return cls_accel or Accelerator(type=vendor_gpu(vendor), count=max(gpu_count, 1))
    return cls_accel


def declared_accelerator(cls: InferenceClass, provisioned: bool) -> Accelerator | None:
    """The accelerator a class declares for a pool: its provisioning block's on a provisioned cloud,
    its own `accelerator` on an Existing cluster."""
    if provisioned:
        return cls.provisioning.accelerator if cls.provisioning else None
    return cls.accelerator


def gpu_taint(source: str, vendor: str) -> NodeTaint:
    """The vendor's GPU taint, with the value the cloud's NVIDIA pools carry."""
    value = profile(source).nvidia.taint_value if vendor == NVIDIA else "true"
    return NodeTaint(VENDOR_TAINT_KEY[vendor], value)


def capacity_taints(cloud: CloudProfile, capacity: PoolCapacity) -> tuple[NodeTaint, ...]:
    """The taints a pool's nodes carry for how they are bought (`PoolFacts.capacity_taints`): the
    owner's `nodeTaint` where written, else on a spot pool the one its cloud puts there itself."""
    if capacity.node_taint is not None:
        t = capacity.node_taint
        return (NodeTaint(t.key, t.value, str(t.effect)),)
    if capacity.reclaimable and cloud.spot_taint is not None:
        spot = cloud.spot_taint
        return (NodeTaint(spot.key, spot.value, spot.effect),)
    return ()


def system_pool(cloud: CloudProfile) -> PoolFacts:
    """The pool for the cluster's own workloads: one node, scaling to two where pools scale.

    Where the cloud counts nodes per zone (GKE's regional clusters), that is one node in each of
    the zones the pool spans, scaling to two in each: GKE starts `initial_node_count` nodes in
    every zone (`pool_nodes`), so a total of one could never hold.
    """
    zones = zone_count(cloud, ())
    return PoolFacts(
        name=SYSTEM_POOL,
        class_name=None,
        role="System",
        labels={POOL_LABEL: SYSTEM_POOL},
        taints=(),
        accelerator=None,
        vendor=None,
        node_count=SYSTEM_NODES * zones if cloud.scaling.autoscaler else SYSTEM_NODES,
        min_node_count=SYSTEM_NODES * zones if cloud.scaling.autoscaler else None,
        max_node_count=SYSTEM_MAX_NODES * zones if cloud.scaling.autoscaler else None,
        machine=cloud.system_machine,
        zone_count=zones,
    )


def derive_cluster(fleet: Fleet, cluster: InferenceCluster) -> ClusterFacts:
    classes = {c.name: c for c in fleet.classes}
    source = str(cluster.source)
    cloud = profile(source)
    pools: list[PoolFacts] = []
    # An adopted cluster keeps the pools it runs for its own workloads: no system pool is added to it.
    if cluster.provisioned and cluster.adopt is None:
        pools.append(system_pool(cloud))
    # The cluster's taints go on every pool it declares: a provisioned cloud puts them on the pool's
    # nodes (each cloud's spelling of `PoolFacts.taints`); on Existing they say what the owner's pool
    # nodes carry. Not on the system pool: the cloud's own add-ons run there (CoreDNS, metrics-server,
    # konnectivity) and tolerate only their own taints (e.g. EKS's CoreDNS add-on tolerates
    # `CriticalAddonsOnly` and the control-plane taint), so a tenant or drain taint there would leave
    # the cluster without DNS.
    cluster_taints = tuple(NodeTaint(t.key, t.value, str(t.effect)) for t in cluster.taints)
    for pool in cluster.node_pools:
        cls = classes[pool.class_name]
        drivers = claimed_drivers(cls)
        role = role_of(drivers)
        assert role is not None, "rejected when the fleet loads (pools_without_role)"
        vendors = sorted({GPU_VENDORS[d] for d in drivers if d in GPU_VENDORS})
        vendor = vendors[0] if role == "GPU" and len(vendors) == 1 else None
        prov = cls.provisioning if cluster.provisioned else None
        own = prov.machine if prov is not None and prov.provider == source else None
        accel = (
            pool_accelerator(source, declared_accelerator(cls, cluster.provisioned), vendor, gpu_device_count(cls))
            if role == "GPU"
            else None
        )
        labels: dict[str, str] = {POOL_LABEL: pool.name}
        taints: list[NodeTaint] = []
        if role == "GPU":
            if accel is not None:
                labels[GPU_LABEL] = accel.type
            if vendor is not None:
                taints.append(gpu_taint(source, vendor))
                if vendor == NVIDIA:
                    labels.update(cloud.nvidia.pool_labels)
        else:
            labels[CPU_LABEL] = "true"
            taints.append(NodeTaint(CPU_TAINT_KEY, "true"))
        pools.append(
            PoolFacts(
                name=pool.name,
                class_name=cls.name,
                role=role,
                labels=labels,
                taints=(*taints, *cluster_taints),
                accelerator=accel,
                vendor=vendor,
                node_count=pool.node_count,
                min_node_count=pool.min_node_count,
                max_node_count=pool.max_node_count,
                zones=tuple(pool.zones),
                uncatalogued_zones=pool.uncatalogued_zones,
                devices=tuple(cls.devices),
                claimed_drivers=tuple(drivers),
                machine=own.machine_name if own is not None else None,
                disk_size_gb=own.boot_disk_gb if own is not None else None,
                machine_block=own,
                zone_count=zone_count(cloud, tuple(pool.zones)),
                supplied=cls.supplied,
                capacity=pool.capacity,
                scale_from_zero=(
                    cloud.scaling.gpu_from_zero.can
                    if role == "GPU" and cloud.scaling.gpu_from_zero is not None
                    else None
                ),
                adopt_id=pool.adopt.id if pool.adopt is not None else None,
                reclaimable=pool.capacity.reclaimable,
                capacity_taints=capacity_taints(cloud, pool.capacity),
            )
        )
    owner_operator = cluster.owner_block is not None and cluster.owner_block.owner_gpu_operator
    return ClusterFacts(
        name=cluster.name,
        source=source,
        spec=cluster,
        pools=tuple(pools),
        dra_drivers=tuple(cluster_dra_drivers(fleet, cluster)),
        supported_drivers=cloud.supported_drivers,
        taints=cluster_taints,
        owner_gpu_operator=owner_operator,
        chart_mirror=fleet.chart_mirror,
        preinstalled=tuple(cluster.owner_block.preinstalled) if cluster.owner_block is not None else (),
        features=cluster_features(fleet, cluster),
        shared_caches=shared_caches(fleet, cluster),
    )


def cluster_features(fleet: Fleet, cluster: InferenceCluster) -> tuple[str, ...]:
    """The serving features the cluster's deployments use (`ClusterFacts.features`)."""
    scaled = any(d.cluster == cluster.name and d.autoscaling is not None for d in fleet.deployments)
    return (AUTOSCALING_FEATURE,) if scaled else ()


def declared_zones(pools: Sequence[PoolFacts]) -> list[str]:
    """The pools' zones, in first-mention order (EKS puts subnet i in zone i of these)."""
    zones: list[str] = []
    for pool in pools:
        zones += [z for z in pool.zones if z not in zones]
    return zones


def derive_fleet(fleet: Fleet) -> list[ClusterFacts]:
    return [derive_cluster(fleet, c) for c in fleet.clusters]

"""A cloud's profile: the facts about a cloud that modules outside its own package decide by.

The chart values, the serving stack, the catalog, the checks and the derived facts read these
fields; none of them asks for a cloud by name. Each cloud's package fills in its profile
(`clouds/<cloud>/`), and `clouds.profile(source)` looks one up. A field's comment says what it
means; why it has the value it has on each cloud is said in that package, with where that is
documented.

The facts are grouped by what they are about: the NVIDIA stack (`NvidiaStack`), zones (`Zones`),
the high-speed fabric (`Fabric`), scaling (`Scaling`), names (`Naming`), the Kubernetes version's
form (`VersionForm`) and label tags (`TagRules`); what is about the cloud as a whole (its vendors,
system machine, storage class, memory reservation) sits on the profile itself.

The profile is one part of a cloud's package record (`clouds.spec.Cloud.profile`). The rest of that
record is how the program loads the package: its config blocks, component, machine rows and prices,
resource types, provider credentials, mock answers and reference text, which the registry turns
into the tables other modules read (`clouds.MACHINES`, `clouds.POOL_TYPES`). Both records could
live in the kernel, but they answer different questions, what is true of the cloud and how the
program loads it, so each is its own record. This module is in the kernel a cloud's package builds
on: it imports only the vocabulary and the memory reservation's rule (`infra.reservations`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from infra import vocabulary as vocab
from infra.reservations import Reservation

# NVIDIA's workaround for driver upgrades that leave the DRA kubelet plugin holding the driver:
# the driver manager evicts pods on a node by flipping this label, and the DRA driver's kubelet
# plugin selects nodes by it (NVIDIA GPU Operator docs, "NVIDIA DRA Driver for GPUs", known
# issues: https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/dra-intro-install.html).
DRA_KUBELET_PLUGIN_LABEL = "nvidia.com/dra-kubelet-plugin"

# Where the GPU Operator's driver container exposes the driver it installed
# (gpu-operator v26.3.3 deployments/gpu-operator/values.yaml, `hostPaths.driverInstallDir`).
OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"


@dataclass(frozen=True)
class NvidiaStack:
    """How NVIDIA GPUs come up on the cloud's nodes: who brings driver and toolkit, and the pools' taint and labels."""

    # Where the NVIDIA driver lives on a node's host filesystem: the DRA driver's `nvidiaDriverRoot`.
    driver_root: str = "/"
    # The driver version the serving stack's GPU Operator installs (`driver.version`, built as the
    # open kernel modules: a version pinned here must be one for those); None: the node image or
    # the cloud's pool setting brings the driver, and the operator installs none.
    driver_version: str | None = None
    # The serving stack applies Google's COS driver installer (GKE pools disable GKE's own).
    google_driver_installer: bool = False
    # The GPU Operator installs the container toolkit into this host directory; None where the
    # node image already carries the toolkit.
    toolkit_dir: str | None = None
    # The RuntimeClass the GPU Operator's operands run with, when the chart's default (`nvidia`,
    # the class the operator's own toolkit creates) is not the node's handler name.
    runtime_class: str | None = None
    # The cloud runs its own NVIDIA GPU Operator and NFD; the stack installs only what it lacks.
    managed_operator: bool = False
    # The node label the driver manager flips to evict the DRA kubelet plugin during driver
    # upgrades; only where the stack's operator manages the driver.
    driver_eviction_label: str | None = None
    # The value of the NVIDIA GPU taint on this cloud's GPU pools.
    taint_value: str = "true"
    # The NVIDIA toleration matches this value (`Equal`); None tolerates any value (`Exists`).
    toleration_value: str | None = None
    # Labels NVIDIA GPU pools need so that nothing but the DRA driver advertises their GPUs.
    pool_labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def driver_by_operator(self) -> bool:
        """The serving stack's GPU Operator installs the NVIDIA driver (so the cloud's pools must not)."""
        return self.driver_version is not None


@dataclass(frozen=True)
class Zones:
    """The zones a cloud's pools name, and how it counts and labels a pool's nodes across them."""

    # A cloud names its zones either from a fixed set (`names`), or as its region plus a suffix
    # (`pattern`, whose `region` group is the region); neither: the cloud has no zones inside a
    # region to pick.
    names: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = None
    # The zones of each region the catalog knows (`pattern` clouds); a region missing here is
    # checked against the zone form only.
    by_region: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Every region of the cloud, as a sourced list names them (the module that holds it is
    # `regions_from`): a cluster's region outside it is refused (`check_region`,
    # infra/checks/clusters.py) unless its block says `uncataloguedRegion: true`. Empty: the
    # program has no sourced list of the cloud's regions, and any region is taken.
    regions: tuple[str, ...] = ()
    regions_from: str = ""
    # The most distinct zones the cluster's pools may name (its network plan); None: any.
    limit: int | None = None
    # A pool's `node_count` counts nodes per zone of the pool (regional clusters), and a pool
    # without zones spans `default_count` zones.
    nodes_per_zone: bool = False
    default_count: int = 1
    # Multi-node replicas (`check_multinode`, infra/checks/parallelism.py): the zones the nodes of a pool
    # that lists none may land in.
    unlisted_pool_count: int = 1
    # Whether the cloud labels every node with its zone (`topology.kubernetes.io/zone`, set by the
    # cloud's node controller); a group's pods keep to one zone by that label
    # (`components.features.multinode.group_zone_affinity`), and a node without it admits none of them.
    labelled: bool = True


@dataclass(frozen=True)
class Fabric:
    """The cloud's high-speed fabric between the nodes of a multi-node replica (`check_multinode`)."""

    # Whether a pool that claims a fabric device is one placement group, so in one zone.
    placement_group: bool = False
    # How a pool claims the cloud's high-speed fabric, as a fix says it; None: the cloud offers
    # none this program sets up.
    claim: str | None = None


@dataclass(frozen=True)
class ScaleFromZero:
    """Whether a cloud's autoscaler brings a DRA GPU pool up from zero nodes, and what it needs to.

    A pod's DRA claim binds to the devices a node's ResourceSlices publish, and a pool at zero
    nodes publishes none. An autoscaler copies a new node's shape from a live node of the pool;
    at zero it must model the node itself, slices included, which the Kubernetes Cluster
    Autoscaler leaves to each cloud provider (kubernetes/autoscaler#7799, open). `minNodeCount: 0`
    on a GPU pool where `can` is false is refused (`infra.checks.references`, `check_gpu_scale_from_zero`).
    """

    can: bool
    # What the cloud's autoscaler does with a DRA GPU pool at zero nodes, and the source; an
    # error and the plan say it.
    says: str
    # Node labels the cloud's autoscaler needs on a GPU pool to scale it up from zero; the cloud
    # puts them among its GPU pools' labels (`NvidiaStack.pool_labels`).
    pool_labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Scaling:
    """What scales the cloud's pools."""

    # Something scales pools between minNodeCount and maxNodeCount (the cloud, or an autoscaler
    # the cluster component installs).
    autoscaler: bool = True
    # Whether that autoscaler scales a DRA GPU pool up from zero nodes; None: not ours to know
    # (nothing here scales the pools of a cluster the program does not build).
    gpu_from_zero: ScaleFromZero | None = None


@dataclass(frozen=True)
class NameRule:
    """A form the cloud's API holds cluster and node pool names to, beyond a DNS label."""

    pattern: re.Pattern[str]
    # What the form is, as an error states it: "<cloud> cluster names <says>, not 'x'".
    says: str
    fix: str


@dataclass(frozen=True)
class PoolNaming:
    """A cloud that renames pools it does not accept: what it calls the name, its rule, and the renaming."""

    kind: str  # "AKS agent pool name"
    rule: str  # as the fix states it
    rename: Callable[[str], str]


@dataclass(frozen=True)
class Naming:
    """The names the cloud's API takes for clusters and pools."""

    # The form the cloud's API holds cluster and node pool names to; None: any DNS label.
    rule: NameRule | None = None
    # The cloud field the cluster's name becomes, and how many characters it holds.
    used_as: str = ""
    max_length: int | None = None
    # How the cloud renames a pool whose name it does not accept; None: pools keep their names.
    pools: PoolNaming | None = None


@dataclass(frozen=True)
class VersionForm:
    """The form the cloud's API takes `kubernetesVersion` in, and an example of it."""

    pattern: re.Pattern[str]
    form: str
    example: str


@dataclass(frozen=True)
class TagRules:
    """The limits of the cloud tags a cluster's labels become."""

    # Who sets the limits, as an error names them ("an AWS tag key ...").
    owner: str
    reserved_prefix: str
    key_max: int
    value_max: int


@dataclass(frozen=True)
class SharedStorage:
    """The ReadWriteMany storage a `Shared` model cache claims on a cloud (`infra.shared_cache`).

    `storage_class` is the class a claim names; None where the cluster's owner names it
    (`cache.storageClassName`, required). `provides` says what the cluster component enables or
    creates for it, `source` where the cloud documents it. `min_gib` is the least the class
    provisions (a smaller claim is refused by the driver). The price is per GiB-month of the
    claim's size, with where and when it was read; None leaves the cache unpriced, never free.
    """

    storage_class: str | None
    provides: str
    source: str
    min_gib: int = 0
    usd_gib_month: Decimal | None = None
    price_source: str = ""


@dataclass(frozen=True)
class CapacityTerms:
    """How a cloud sells a pool's nodes as one capacity type (`nodePools[].capacity.type`).

    `term` is the cloud's own name for it and the pool setting it becomes, `source` the page that
    documents it for Kubernetes node pools; the cloud's component spells it.
    """

    term: str
    source: str
    # The cloud takes a spot pool's price ceiling (`capacity.maxPrice`).
    max_price: bool = False
    # The form the cloud gives the reservation a pool consumes (`capacity.reservation`); `says` is a
    # noun phrase ("an EC2 Capacity Reservation ID, cr- and 17 hex digits"). None: any text.
    reservation: NameRule | None = None
    # The cloud offers it for GPU machines only (a CPU pool of this type is refused).
    gpu_only: bool = False
    # The machines the cloud offers it for, by name (`says` names them); None: every machine.
    machines: NameRule | None = None


@dataclass(frozen=True)
class Capacities:
    """The capacity types a cloud's pools can be bought as beyond on demand (`infra.checks.capacity`).

    A type missing from `offered` is refused on the cloud's pools, with `lacks`: what the cloud
    documents about its Kubernetes node pools, and where.
    """

    offered: Mapping[str, CapacityTerms] = field(default_factory=dict)
    lacks: str = ""
    # One pool of the cloud bought other than on demand, as a stack file writes it (docs/machines.md).
    example: str = ""


@dataclass(frozen=True)
class SpotTaint:
    """The taint a cloud puts on the nodes of a spot pool itself, with where it documents it: every
    component on those nodes and every model placed there must tolerate it, or nothing runs."""

    key: str
    value: str
    effect: str
    source: str


@dataclass(frozen=True)
class CloudProfile:
    """What other modules need to know about one cloud (a cluster `source`)."""

    name: str
    # The program creates the cluster and its pools (every cloud but Existing).
    provisioned: bool
    # GPU vendors whose device stack the catalog carries on this cloud.
    gpu_vendors: tuple[str, ...]
    # The small general-purpose machine of the system pool; None where nothing is provisioned.
    system_machine: str | None
    # DRA drivers the cluster component installs outside the serving stack.
    external_drivers: tuple[str, ...] = ()
    nvidia: NvidiaStack = field(default_factory=NvidiaStack)
    zones: Zones = field(default_factory=Zones)
    fabric: Fabric = field(default_factory=Fabric)
    scaling: Scaling = field(default_factory=Scaling)
    naming: Naming = field(default_factory=Naming)
    # The form the cloud's API takes `kubernetesVersion` in; None: any version.
    version: VersionForm | None = None
    # The cloud tags the cluster with its labels, within these limits; None: labels are not tags.
    label_tags: TagRules | None = None
    # Pods at a system-critical priority need a ResourceQuota allowing it outside kube-system.
    critical_pods_quota: bool = False
    # The StorageClass a PersistentVolumeClaim model cache uses unless `storageClassName` is set.
    # "" leaves it unset, so the cluster's default StorageClass applies. None: the cluster as this
    # program builds it has no CSI driver that provisions volumes, so a claim would never bind.
    cache_storage_class: str | None = ""
    # The ReadWriteMany storage of a `Shared` model cache; None: the cloud offers none this program
    # wires, and a `Shared` cache is refused with `NodeLocal` as the fix.
    shared_cache: SharedStorage | None = None
    # The memory the cloud keeps from pods on each node, with its source; None: the cloud publishes
    # none, and GKE's tiers stand in (`infra.reservations.default_reservation`).
    memory_reservation: Reservation | None = None
    # What a pool's nodes can be bought as beyond on demand: spot, reservations, capacity blocks.
    capacity: Capacities = field(default_factory=Capacities)
    # The taint the cloud puts on a spot pool's nodes itself; None: the cloud taints none (the
    # program tolerates only what the nodes carry: `PoolFacts.capacity_taints`).
    spot_taint: SpotTaint | None = None

    @property
    def supported_drivers(self) -> tuple[str, ...]:
        """DRA drivers this cloud can serve: every vendor's GPU driver, dra.cpu and its external drivers.

        The catalog checks when it loads that its tags give exactly these (`infra.serving.catalog`).
        """
        drivers = {vocab.VENDOR_DRIVER[v] for v in self.gpu_vendors} | {vocab.CPU_DRIVER, *self.external_drivers}
        return tuple(sorted(drivers))


def zone_count(cloud: CloudProfile, zones: Sequence[str]) -> int:
    """The zones a pool's per-zone node count is multiplied by (1 where counts are per pool)."""
    if not cloud.zones.nodes_per_zone:
        return 1
    return len(zones) or cloud.zones.default_count


def nodes_per_zone_at_start(node_count: int, zones: int) -> int:
    """The nodes an autoscaled pool starts with in each zone: nodeCount spread over them, rounded up.

    GKE counts `initial_node_count` per zone (pulumi-gcp `container.NodePool`: "In regional or
    multi-zonal clusters, this is the number of nodes per zone"), so the pool starts with at least
    nodeCount nodes.
    """
    return -(-node_count // zones)


def pool_nodes(node_count: int, max_node_count: int | None, zones: int) -> tuple[int, int]:
    """(the nodes the cloud creates, the most the pool can have) for a pool: the one node count.

    `zones` is `zone_count`. Where the cloud counts a pool's nodes per zone (the profile's
    `zones.nodes_per_zone`, GKE's regional clusters; google_container_node_pool `node_count` is "the
    number of nodes per instance group"), a fixed pool has `nodeCount` nodes in each zone, and an
    autoscaled one starts with `nodes_per_zone_at_start` in each zone. An autoscaled pool is
    bounded by `maxNodeCount` in total on every cloud here (GKE's `total_max_node_count`);
    `check_pool_start` (infra/checks/references.py) refuses a start above it. The tree, the plan's
    JSON, the cost, the budget policy and the placement audit all count with this.
    """
    if max_node_count is None:
        return node_count * zones, node_count * zones
    return nodes_per_zone_at_start(node_count, zones) * zones, max_node_count

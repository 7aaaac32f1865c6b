"""The fleet model's clusters: a source and its cloud's block, node pools and taints."""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    Field,
    StrictInt,
    create_model,
    field_validator,
)

from clouds import CLOUDS, cloud
from clouds.spec import Cloud
from infra.config.base import (
    MAX_HOURLY_PRICE,
    Adoption,
    Model,
    OwnerClusterBlock,
    ProvisionedClusterBlock,
    parse_hourly_price,
)
from infra.config.classes import Source
from infra.config.deployments import Hostname, IssuerRef
from infra.config.names import (
    MAX_POOL_NODES,
    DnsLabel,
    PoolName,
    label_value_problem,
    qualified_name_problem,
)


class TaintEffect(StrEnum):
    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


class Taint(Model):
    # Kubernetes validates a taint's key as a qualified name and its value as a label value
    # (https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/).
    key: str
    value: str = ""
    effect: TaintEffect

    @field_validator("key")
    @classmethod
    def _key(cls, v: str) -> str:
        problem = qualified_name_problem(v)
        if problem:
            raise ValueError(f"{problem}; write a key such as example.com/dedicated")
        return v

    @field_validator("value")
    @classmethod
    def _value(cls, v: str) -> str:
        problem = label_value_problem(v)
        if problem:
            raise ValueError(f"{problem}; shorten or correct the value")
        return v


class CapacityType(StrEnum):
    """How a pool's nodes are bought (docs/machines.md, "Capacity"); each cloud's package maps it
    to its own terms, and a cloud without one refuses it (infra/checks/capacity.py)."""

    ON_DEMAND = "OnDemand"
    # Spot or preemptible: cheaper, and the cloud may take a node back at short notice.
    SPOT = "Spot"
    # A reservation the owner holds (GKE specific reservation, EKS On-Demand Capacity Reservation,
    # AKS capacity reservation group, ...), at the price the owner pays for it.
    RESERVATION = "Reservation"
    # A block of instances bought for a fixed time in one zone (EKS Capacity Blocks for ML).
    CAPACITY_BLOCK = "CapacityBlock"


class PoolCapacity(Model):
    """`nodePools[].capacity`: what a pool's nodes are bought as. Which keys each type and cloud
    takes is judged in infra/checks/capacity.py."""

    type: CapacityType = CapacityType.ON_DEMAND
    # Reservation, CapacityBlock: the cloud's ID of it (a GKE reservation's name, an EKS `cr-...`
    # ID, an AKS capacity reservation group's resource ID).
    reservation: str | None = None
    # Reservation, CapacityBlock: what the owner pays for one node an hour, in USD; no public
    # catalog knows it, so the budget counts the pool at it.
    hourly_price: Annotated[Decimal, Field(gt=0, le=MAX_HOURLY_PRICE)] | None = None  # bounds for the schema
    # CapacityBlock: the instances the block holds and the zone it is in, as the owner bought it.
    block_nodes: Annotated[StrictInt, Field(ge=1, le=MAX_POOL_NODES)] | None = None
    block_zone: str | None = None
    # Spot: the most the owner pays for one node an hour, in USD, where the cloud takes a ceiling
    # (AKS `spotMaxPrice`); unset pays up to the on-demand price.
    max_price: Annotated[Decimal, Field(gt=0, le=MAX_HOURLY_PRICE)] | None = None  # bounds for the schema
    # Spot on an Existing cluster: the taint the owner puts on the pool's spot nodes, which every
    # component on those nodes and every model placed there tolerates (a provisioned cloud that taints
    # its spot nodes itself says so in its profile, `CloudProfile.spot_taint`). Rules:
    # infra/checks/reclaim.py.
    node_taint: Taint | None = None

    @field_validator("hourly_price", "max_price", mode="before")
    @classmethod
    def _price(cls, v: Any) -> Any:
        return parse_hourly_price(v)

    @property
    def reclaimable(self) -> bool:
        """The cloud may take the pool's nodes back at any time (the floor rules read this)."""
        return self.type is CapacityType.SPOT


class NodePool(Model):
    name: PoolName
    class_name: str
    node_count: Annotated[StrictInt, Field(ge=0, le=MAX_POOL_NODES)] = 1
    min_node_count: Annotated[StrictInt, Field(ge=0, le=MAX_POOL_NODES)] | None = None
    max_node_count: Annotated[StrictInt, Field(ge=1, le=MAX_POOL_NODES)] | None = None
    # Nodes carry their zone as the value of the `topology.kubernetes.io/zone` label
    # (https://kubernetes.io/docs/reference/labels-annotations-taints/#topologykubernetesiozone),
    # so a zone's name is a non-empty label value.
    zones: list[str] = Field(default_factory=list)
    # The zones exist though the zone catalog does not list them for the region yet
    # (`zone-outside-region` stops a run otherwise: infra/checks/machines.py).
    uncatalogued_zones: bool = False
    capacity: PoolCapacity = Field(default_factory=PoolCapacity)
    # A running pool of an adopted cluster, taken in with the engine's import (`Adoption`).
    adopt: Adoption | None = None

    @field_validator("zones")
    @classmethod
    def _zone_names(cls, v: list[str]) -> list[str]:
        for zone in v:
            problem = label_value_problem(zone) if zone else "a zone name is empty"
            if problem:
                raise ValueError(f"{problem}; write the zone as the cloud names it, such as us-central1-a")
        return v


class FleetGateway(Model):
    """`clusters[].gateway`: how the fleet services of other clusters reach this cluster's Gateway.

    `host` is the DNS name they reach it by (point it at the Gateway's address) and the name in its
    certificate; `issuerRef` is the cert-manager issuer of that certificate, a CA issuer of the CA
    every cluster's gateway chains to, whose `ca.crt` the serving side checks it with
    (`components.features.fleet`).
    """

    host: Hostname
    issuer_ref: IssuerRef


class InferenceClusterBase(Model):
    """`clusters[]`: a name, labels and the source, then the source's block (one optional block per
    cloud), the pools and the taints."""

    name: DnsLabel
    labels: dict[str, str] = Field(default_factory=dict)
    source: Source
    gateway: FleetGateway | None = None

    @property
    def cloud(self) -> Cloud:
        return cloud(self.source)

    @property
    def block(self) -> Model:
        block = getattr(self, self.cloud.key)
        assert block is not None, "check_references reports a missing block before anything reads it"
        return block  # type: ignore[no-any-return]

    @property
    def provisioned(self) -> bool:
        return self.cloud.provisioned

    @property
    def adopt(self) -> Adoption | None:
        """The running cluster this one adopts (`<cloud>.adopt`), or None when the program creates it."""
        block = self.block
        return block.adopt if isinstance(block, ProvisionedClusterBlock) else None

    @property
    def owner_block(self) -> OwnerClusterBlock | None:
        """The block of a cluster its owner runs (kubeconfig key, context), or None for a provisioned one."""
        block = self.block
        return block if isinstance(block, OwnerClusterBlock) else None

    if TYPE_CHECKING:
        node_pools: list[NodePool]
        taints: list[Taint]


if TYPE_CHECKING:
    InferenceCluster = InferenceClusterBase
else:
    InferenceCluster = create_model(
        "InferenceCluster",
        __base__=InferenceClusterBase,
        __module__=__name__,
        **{c.key: (c.cluster_block | None, None) for c in CLOUDS},
        node_pools=(Annotated[list[NodePool], Field(min_length=1, max_length=8)], ...),
        taints=(list[Taint], Field(default_factory=list)),
    )


def cluster_region(cluster: InferenceCluster) -> str | None:
    """The region (AKS: location) a provisioned cluster runs in; None for one its owner runs."""
    block = cluster.block
    return block.place if isinstance(block, ProvisionedClusterBlock) else None

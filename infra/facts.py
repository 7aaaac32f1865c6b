"""Derived facts: what each cluster and pool is, computed once from the validated fleet.

Components only turn these facts into provider resources (each cloud's spelling); the plan prints
them; the policy pack receives them as component inputs. Nothing downstream re-derives a role, a
label or a taint.

Node labels and taints (the values the nodes carry, whoever sets them):
- every pool: `modelplane.ai/pool=<pool>`; the system pool: `modelplane.ai/pool=system`;
- GPU pool: `modelplane.ai/gpu=<accelerator type>` and its vendor's taint (`nvidia.com/gpu=true`,
  on GKE `nvidia.com/gpu=present`, which GKE sets itself; `amd.com/gpu=true`), effect NoSchedule;
- CPU pool: `modelplane.ai/cpu=true` label and taint, no accelerator.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from components.catalog import CATALOG, Component, join_components, supported_drivers
from infra.config import Accelerator, Device, Fleet, InferenceCluster, Role, Source
from infra.devices import (
    GPU_VENDORS,
    claimed_drivers,
    cluster_dra_drivers,
    cluster_region,
    gpu_device_count,
    role_of,
)

POOL_LABEL = "modelplane.ai/pool"
GPU_LABEL = "modelplane.ai/gpu"
CPU_LABEL = "modelplane.ai/cpu"
SYSTEM_POOL = "system"

# The taint each GPU vendor's pools carry; DRA workloads and that vendor's stack tolerate it.
VENDOR_TAINT_KEY = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu"}
CPU_TAINT_KEY = CPU_LABEL

# GKE taints GPU nodes itself with value `present`; every other cloud gets ours, `true`.
GKE_GPU_TAINT_VALUE = "present"

# Labels some clouds need on NVIDIA GPU pools so that nothing but our DRA driver advertises GPUs.
CLOUD_NVIDIA_LABELS: Mapping[str, Mapping[str, str]] = {
    # GKE: turn off GKE's own device plugin; the DRA driver owns the GPUs (GKE DRA guide).
    "GKE": {
        "gke-no-default-nvidia-gpu-device-plugin": "true",
        "nvidia.com/gpu.present": "true",
    },
    # VKE's add-on GPU operator would start a device plugin; keep it off next to DRA.
    "Vultr": {"nvidia.com/gpu.deploy.device-plugin": "false"},
}

# The system pool each cloud gets: small general-purpose nodes for the cluster's own workloads.
SYSTEM_MACHINE: Mapping[str, str] = {
    "GKE": "e2-standard-4",
    "EKS": "m6i.xlarge",
    "AKS": "Standard_D4s_v5",
    "Civo": "g4p.kube.small",
    "Vultr": "vc2-6c-16gb",
}


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str = "NoSchedule"
    # Set by the cloud itself (GKE's GPU taint): the node carries it, our pool resource does not.
    set_by_cloud: bool = False

    def as_json(self) -> dict[str, str]:
        return {"key": self.key, "value": self.value, "effect": self.effect}


@dataclass(frozen=True)
class PoolFacts:
    name: str
    class_name: str | None
    role: Role
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    accelerator: Accelerator | None
    vendor: str | None
    node_count: int
    min_node_count: int | None
    max_node_count: int | None
    zones: tuple[str, ...] = ()
    devices: tuple[Device, ...] = ()
    claimed_drivers: tuple[str, ...] = ()
    machine: str | None = None
    disk_size_gb: int | None = None

    @property
    def autoscaled(self) -> bool:
        return self.min_node_count is not None and self.max_node_count is not None

    @property
    def nodes(self) -> int:
        """How many nodes the pool can have: maxNodeCount when autoscaled, else nodeCount."""
        return self.max_node_count if self.max_node_count is not None else self.node_count

    def schedulable(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "nodes": self.nodes,
            "role": self.role,
            "devices": [d.model_dump(by_alias=True, exclude_defaults=False, mode="json") for d in self.devices],
        }

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "className": self.class_name,
            "role": self.role,
            "labels": dict(self.labels),
            "taints": [t.as_json() for t in self.taints],
            "accelerator": {"type": self.accelerator.type, "count": self.accelerator.count}
            if self.accelerator
            else None,
            "nodeCount": self.node_count,
            "minNodeCount": self.min_node_count,
            "maxNodeCount": self.max_node_count,
        }


@dataclass(frozen=True)
class ClusterFacts:
    name: str
    source: str
    spec: InferenceCluster
    pools: tuple[PoolFacts, ...]  # the system pool first (when the cloud provisions one)
    dra_drivers: tuple[str, ...]
    supported_drivers: tuple[str, ...]
    components: tuple[Component, ...]
    taints: tuple[Taint, ...] = field(default=())  # cluster taints model deployments tolerate
    owner_gpu_operator: bool = False  # Existing only: the owner runs the GPU operator, the stack does not

    @property
    def region(self) -> str | None:
        """The region (AKS: location) the cluster runs in; None for Existing."""
        return cluster_region(self.spec)

    @property
    def user_pools(self) -> tuple[PoolFacts, ...]:
        return tuple(p for p in self.pools if p.role != "System")

    def pool(self, name: str) -> PoolFacts:
        for p in self.pools:
            if p.name == name:
                return p
        raise KeyError(name)

    def schedulable_pools(self) -> list[dict[str, Any]]:
        """`schedulablePools`: every pool a model can be placed on (user pools, not system)."""
        return [p.schedulable() for p in self.user_pools]


def pool_accelerator(
    source: str, cls_accel: Accelerator | None, vendor: str | None, gpu_count: int
) -> Accelerator | None:
    """The accelerator a GPU pool's nodes carry.

    Provisioned clouds take it from the class's block for that cloud. On Existing, provisioning is
    ignored (the owner's hardware is what it is), so the GPUs are named by vendor (`amd-gpu`) with
    the class's GPU device count.
    """
    if vendor is None:
        return None
    if source == Source.EXISTING:
        return Accelerator(type=f"{vendor}-gpu", count=max(gpu_count, 1))
    return cls_accel


def gpu_taint(source: str, vendor: str) -> Taint:
    key = VENDOR_TAINT_KEY[vendor]
    if source == Source.GKE and vendor == "nvidia":
        return Taint(key, GKE_GPU_TAINT_VALUE, set_by_cloud=True)
    return Taint(key, "true")


def derive_cluster(fleet: Fleet, cluster: InferenceCluster) -> ClusterFacts:
    classes = {c.name: c for c in fleet.classes}
    source = str(cluster.source)
    pools: list[PoolFacts] = []
    if cluster.provisioned:
        pools.append(
            PoolFacts(
                name=SYSTEM_POOL,
                class_name=None,
                role="System",
                labels={POOL_LABEL: SYSTEM_POOL},
                taints=(),
                accelerator=None,
                vendor=None,
                node_count=1,
                min_node_count=1,
                max_node_count=2,
                machine=SYSTEM_MACHINE[source],
            )
        )
    for pool in cluster.node_pools:
        cls = classes[pool.class_name]
        drivers = claimed_drivers(cls)
        role = role_of(drivers)
        assert role is not None, "rejected when the fleet loads (pools_without_role)"
        vendors = sorted({GPU_VENDORS[d] for d in drivers if d in GPU_VENDORS})
        vendor = vendors[0] if role == "GPU" and len(vendors) == 1 else None
        prov = cls.provisioning if cluster.provisioned else None
        accel = (
            pool_accelerator(
                source, cls.provisioning.accelerator if cls.provisioning else None, vendor, gpu_device_count(cls)
            )
            if role == "GPU"
            else None
        )
        labels: dict[str, str] = {POOL_LABEL: pool.name}
        taints: list[Taint] = []
        if role == "GPU":
            if accel is not None:
                labels[GPU_LABEL] = accel.type
            if vendor is not None:
                taints.append(gpu_taint(source, vendor))
                if vendor == "nvidia":
                    labels.update(CLOUD_NVIDIA_LABELS.get(source, {}))
        else:
            labels[CPU_LABEL] = "true"
            taints.append(Taint(CPU_TAINT_KEY, "true"))
        pools.append(
            PoolFacts(
                name=pool.name,
                class_name=cls.name,
                role=role,
                labels=labels,
                taints=tuple(taints),
                accelerator=accel,
                vendor=vendor,
                node_count=pool.node_count,
                min_node_count=pool.min_node_count,
                max_node_count=pool.max_node_count,
                zones=tuple(pool.zones),
                devices=tuple(cls.devices),
                claimed_drivers=tuple(drivers),
                machine=prov.machine_name if prov is not None and prov.provider == source else None,
                disk_size_gb=getattr(prov.machine, "disk_size_gb", None)
                if prov is not None and prov.provider == source
                else None,
            )
        )
    dra = cluster_dra_drivers(fleet, cluster)
    owner_operator = cluster.existing is not None and cluster.existing.owner_gpu_operator
    return ClusterFacts(
        name=cluster.name,
        source=source,
        spec=cluster,
        pools=tuple(pools),
        dra_drivers=tuple(dra),
        supported_drivers=tuple(supported_drivers(source)),
        components=tuple(join_components(CATALOG[source], dra, owner_operator)),
        taints=tuple(Taint(t.key, t.value, str(t.effect)) for t in cluster.taints),
        owner_gpu_operator=owner_operator,
    )


def derive_fleet(fleet: Fleet) -> list[ClusterFacts]:
    return [derive_cluster(fleet, c) for c in fleet.clusters]

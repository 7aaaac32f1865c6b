"""Nebius Managed Kubernetes (mk8s) clusters: VPC network and subnet, GPU clusters, cluster, node groups.

Everything is created through the run's one `pulumi_nebius.Provider` per project, in the cluster's
project (`projectId`, every resource's `parent_id`). Its IAM token comes from the stack's
`nebius:token` (passed on, as a secret, by `stack_credentials`); left unset, the provider
authenticates as its own documentation describes.

What this module decides (and nothing more), each value with its source; the sources' short names
(PULUMI_NEBIUS, NEBIUS_API, MODELPLANE) are explained in `clouds/nebius/__init__.py`:
- the network: a VPC network of its own with one subnet that takes its addresses from the network's
  pools (MODELPLANE fn.py `compose_network`: "Nebius allocates subnet CIDRs from the network's
  pools"; NEBIUS_API vpc/v1 network.proto: default private pools are created when none are given);
- InfiniBand: one `compute_v1_gpu_cluster` per fabric the cluster's pools name, and each such pool's
  node group placed in it (`template.gpu_cluster`), as MODELPLANE `compose_gpu_clusters` does;
- the cluster: a public endpoint (`pulumi up` reaches the API server from outside the VPC) and a
  three-member etcd, the highly available control plane Nebius's SLA covers;
- node groups: the system group and one per pool, each with its pool's own name (node group names
  are unique within their cluster, NEBIUS_API common/v1 metadata.proto), fixed at `nodeCount` or
  autoscaled by mk8s between `minNodeCount` and `maxNodeCount`; an autoscaled group starts at
  `minNodeCount` (the API takes no initial size). GPU groups get the drivers preset and DRA, which
  turns the image's own device plugin off (the profile in `clouds/nebius/__init__.py` says why).

Labels, taints, roles and machines come from `infra.facts`; this module only spells them as mk8s
wants (labels in `template.metadata.labels`, taint effects as `NO_SCHEDULE`).
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pulumi
import pulumi_nebius as nebius

from clouds.nebius import CLOUD as NEBIUS
from clouds.nebius.config import NebiusCluster as NebiusClusterBlock
from clouds.nebius.config import NebiusMachine, machine_parts
from components.base import ClusterArgs, ClusterComponent, ComponentError, exec_kubeconfig, own_block, stack_credentials
from infra.config.clusters import CapacityType, PoolCapacity
from infra.facts import PoolFacts
from infra.vocabulary import UPPER_EFFECT

# NEBIUS_API mk8s/v1 cluster.proto and node_group.proto: names hold 1-63 characters.
NAME_MAX = 63

# MODELPLANE fn.py `_BOOT_DISK_TYPE`: "Network SSDs are available on all platforms; local disks
# would tie the group to specific presets."
BOOT_DISK_TYPE = "NETWORK_SSD"
# MODELPLANE fn.py: the system node group's boot disk (100 GiB).
SYSTEM_DISK_GIB = 100

# Nebius's SLA covers only a "Highly Available Control plane Configuration", an etcd cluster of 3
# to 5 (https://docs.nebius.com/legal/sla-levels/managed-kubernetes).
ETCD_CLUSTER_SIZE = 3

# mk8s authenticates every client through Nebius IAM (MODELPLANE fn.py: "Nebius authenticates
# every client through Nebius IAM"); the kubeconfig runs the Nebius CLI for a token, as the
# kubeconfigs the CLI writes do (dstackai/dstack#3246: a Nebius kubeconfig needs the nebius CLI).
TOKEN_COMMAND = "nebius"
TOKEN_ARGS = ("mk8s", "v1", "cluster", "get-token", "--format", "json")
NEBIUS_AUTH_HINT = (
    "Install the Nebius CLI and sign in (nebius profile create) by following https://docs.nebius.com/cli/configure"
)


def nebius_name(full: str) -> str:
    """`full` within Nebius's 63-character names; a shortened name keeps a hash of the full one."""
    if len(full) <= NAME_MAX:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:6]
    return f"{full[: NAME_MAX - 7].rstrip('-_')}-{digest}"


def node_taints(pool: PoolFacts) -> list[nebius.Mk8sV1NodeGroupTemplateTaintArgs]:
    return [
        nebius.Mk8sV1NodeGroupTemplateTaintArgs(key=t.key, value=t.value, effect=UPPER_EFFECT[t.effect])
        for t in pool.taints
    ]


def pool_block(pool: PoolFacts) -> NebiusMachine | None:
    """The Nebius block of the pool's class; None for the system pool."""
    if pool.machine_block is None:
        return None
    if not isinstance(pool.machine_block, NebiusMachine):
        raise ComponentError("node pool", pool.name, "its class has no 'nebius' provisioning block")
    return pool.machine_block


def gpu_settings(pool: PoolFacts) -> nebius.Mk8sV1NodeGroupTemplateGpuSettingsArgs | None:
    """A GPU pool's drivers preset, and DRA so the image's own device plugin stays off."""
    block = pool_block(pool)
    if pool.role != "GPU" or block is None:
        return None
    return nebius.Mk8sV1NodeGroupTemplateGpuSettingsArgs(drivers_preset=block.drivers_preset, dra=True)


def capacity_settings(pool: PoolFacts) -> dict[str, Any]:
    """The node template fields that buy the pool's nodes as its capacity says (the `clouds.nebius` profile's `CAPACITY`).

    Spot: `preemptible`, set empty (pulumi-nebius 0.6.73 `Mk8sV1NodeGroupTemplate`: "Set to empty
    value to enable preemptible nodes"); https://docs.nebius.com/compute/virtual-machines/preemptible.
    A reservation: `reservation_policy` STRICT with the capacity block group's ID, so nodes launch
    in that group or fail, never on pay-as-you-go capacity (the SDK's `ReservationPolicy` values;
    https://docs.nebius.com/compute/virtual-machines/reservations).
    """
    # The system pool has no capacity of its own (None): on demand.
    capacity = pool.capacity or PoolCapacity()
    if capacity.type is CapacityType.SPOT:
        # The SDK generates the empty args class without annotations.
        return {"preemptible": nebius.Mk8sV1NodeGroupTemplatePreemptibleArgs()}  # type: ignore[no-untyped-call]
    if capacity.type is CapacityType.RESERVATION:
        return {
            "reservation_policy": nebius.Mk8sV1NodeGroupTemplateReservationPolicyArgs(
                policy="STRICT", reservation_ids=[str(capacity.reservation)]
            )
        }
    return {}


def pool_fabrics(pools: tuple[PoolFacts, ...]) -> list[str]:
    """The InfiniBand fabrics the pools name, in first-mention order."""
    fabrics: list[str] = []
    for pool in pools:
        block = pool_block(pool)
        if block is not None and block.infiniband_fabric and block.infiniband_fabric not in fabrics:
            fabrics.append(block.infiniband_fabric)
    return fabrics


def server_url(endpoint: str) -> str:
    """The API server's URL from the cluster's public endpoint (a URL or a bare host:port)."""
    return endpoint if endpoint.startswith("https://") else f"https://{endpoint}"


class NebiusCluster(ClusterComponent):
    CLOUD = NEBIUS

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        block = own_block(args.facts, NebiusClusterBlock)
        super().__init__(name, args, opts)
        self.project_id = block.project_id
        self.nebius_provider = args.providers.shared(
            ("nebius", block.project_id),
            lambda shared: nebius.Provider(
                shared, parent_id=block.project_id, token=stack_credentials(NEBIUS).get("token")
            ),
        )
        self._network()
        self._gpu_clusters()
        self._cluster(block.kubernetes_version)
        self._pools(block.kubernetes_version)
        self.connect(self._kubeconfig())
        self.finish()

    def _on_nebius(self, **extra: Any) -> pulumi.ResourceOptions:
        return self.child(provider=self.nebius_provider, **extra)

    def _network(self) -> None:
        """The cluster's own VPC network and its subnet, addressed from the network's default pools."""
        self.network = nebius.VpcV1Network(
            f"{self._name}-network",
            parent_id=self.project_id,
            name=self._name,
            opts=self._on_nebius(),
        )
        self.subnet = nebius.VpcV1Subnet(
            f"{self._name}-subnet",
            parent_id=self.project_id,
            name=self._name,
            network_id=self.network.id,
            ipv4_private_pools=nebius.VpcV1SubnetIpv4PrivatePoolsArgs(use_network_pools=True),
            opts=self._on_nebius(),
        )

    def _gpu_clusters(self) -> None:
        """One GPU cluster per InfiniBand fabric the pools name (NEBIUS_API: the fabric is immutable)."""
        self.gpu_clusters = {
            fabric: nebius.ComputeV1GpuCluster(
                f"{self._name}-gpu-cluster-{fabric}",
                parent_id=self.project_id,
                name=nebius_name(f"{self._name}-{fabric}"),
                infiniband_fabric=fabric,
                opts=self._on_nebius(),
            )
            for fabric in pool_fabrics(self.facts.user_pools)
        }

    def _cluster(self, kubernetes_version: str) -> None:
        """The mk8s cluster: control plane in the subnet, a public endpoint, an HA etcd."""
        self.cluster = nebius.Mk8sV1Cluster(
            f"{self._name}-cluster",
            parent_id=self.project_id,
            name=self._name,
            control_plane=nebius.Mk8sV1ClusterControlPlaneArgs(
                subnet_id=self.subnet.id,
                version=kubernetes_version,
                # An empty public endpoint spec creates one open to any address (NEBIUS_API
                # cluster.proto `PublicEndpointSpec`: no `allowed_cidrs` is no restriction).
                endpoints=nebius.Mk8sV1ClusterControlPlaneEndpointsArgs(
                    public_endpoint=nebius.Mk8sV1ClusterControlPlaneEndpointsPublicEndpointArgs()
                ),
                etcd_cluster_size=ETCD_CLUSTER_SIZE,
            ),
            opts=self._on_nebius(),
        )

    def _pools(self, kubernetes_version: str) -> None:
        """The system node group and one node group per declared pool (system first, as in the facts)."""
        self.node_groups = [self._node_group(pool, kubernetes_version) for pool in self.facts.pools]

    def _node_group(self, pool: PoolFacts, kubernetes_version: str) -> nebius.Mk8sV1NodeGroup:
        platform, preset = machine_parts(str(pool.machine))
        block = pool_block(pool)
        fabric = block.infiniband_fabric if block is not None else None
        return nebius.Mk8sV1NodeGroup(
            f"{self._name}-{pool.name}",
            parent_id=self.cluster.id,
            name=pool.name,
            version=kubernetes_version,
            # A node group is fixed or autoscaled, never both (PULUMI_NEBIUS: `autoscaling` "Cannot
            # be set alongside fixed_node_count").
            fixed_node_count=None if pool.autoscaled else pool.node_count,
            autoscaling=nebius.Mk8sV1NodeGroupAutoscalingArgs(
                min_node_count=pool.min_node_count, max_node_count=pool.max_node_count
            )
            if pool.autoscaled
            else None,
            template=nebius.Mk8sV1NodeGroupTemplateArgs(
                resources=nebius.Mk8sV1NodeGroupTemplateResourcesArgs(platform=platform, preset=preset),
                boot_disk=nebius.Mk8sV1NodeGroupTemplateBootDiskArgs(
                    size_gibibytes=pool.disk_size_gb or SYSTEM_DISK_GIB, type=BOOT_DISK_TYPE
                ),
                # Nodes get no public address (MODELPLANE sets only the subnet).
                network_interfaces=[nebius.Mk8sV1NodeGroupTemplateNetworkInterfaceArgs(subnet_id=self.subnet.id)],
                metadata=nebius.Mk8sV1NodeGroupTemplateMetadataArgs(labels=dict(pool.labels)),
                taints=node_taints(pool),
                gpu_settings=gpu_settings(pool),
                gpu_cluster=nebius.Mk8sV1NodeGroupTemplateGpuClusterArgs(id=self.gpu_clusters[fabric].id)
                if fabric
                else None,
                **capacity_settings(pool),
            ),
            opts=self._on_nebius(
                delete_before_replace=True,
            ),
        )

    def _kubeconfig(self) -> pulumi.Output[str]:
        # The kubeconfig waits for the node groups (their ids), so nothing installed through the
        # cluster's Kubernetes provider starts before there are nodes to run it.
        control_plane = self.cluster.status.apply(lambda s: s.control_plane if s is not None else None)
        endpoint = control_plane.apply(lambda c: c.endpoints.public_endpoint if c and c.endpoints else None)
        ca = control_plane.apply(lambda c: c.auth.cluster_ca_certificate if c and c.auth else None)
        name = self._name
        return pulumi.Output.all(endpoint, ca, *[g.id for g in self.node_groups]).apply(
            lambda a: exec_kubeconfig(
                f"nebius-{name}",
                server_url(str(a[0])),
                # The status holds the CA as PEM; a kubeconfig holds it base64-encoded.
                base64.b64encode(str(a[1]).encode()).decode(),
                TOKEN_COMMAND,
                TOKEN_ARGS,
                NEBIUS_AUTH_HINT,
            )
        )

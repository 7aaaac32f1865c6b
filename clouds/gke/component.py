"""GKE clusters: VPC, Cloud NAT, node service account, regional cluster, system pool, one pool per pool.

Everything is created through one `gcp.Provider` pinned to the cluster's `project` and `region`,
so a stack can hold clusters in many projects and regions; credentials come from that provider's
own configuration (Application Default Credentials, `gcp:credentials`), never from this module.

What this module decides (and nothing more):
- the network: a custom-mode VPC with one subnetwork whose secondary ranges `pods` and `services`
  feed VPC-native pod and service IPs; private nodes reach the internet (images, charts) through
  Cloud NAT and Google APIs through Private Google Access;
- the nodes' identity: a service account with only the roles nodes need (logs, metrics, image
  pulls), instead of the Compute Engine default account, which holds Editor on the project;
- the cluster: regional, on the REGULAR channel with `kubernetesVersion` as its floor, workload
  identity on, private nodes behind a public endpoint, and the Filestore CSI add-on when a
  deployment shares a weight cache (`filestore_addon`);
- how facts are spelled for GKE: taint effects as `NO_SCHEDULE`; GPUs as guest accelerators with
  GKE's driver installation disabled, because the serving stack installs NVIDIA's driver the way
  the GKE DRA guides describe (https://cloud.google.com/kubernetes-engine/docs/how-to/set-up-dra;
  NVIDIA GPU Operator docs, "Google GKE"). GPU pools set `nvidia.com/gpu=present:NoSchedule`
  themselves: GKE adds it only in some cases; a pool's capacity as `nodeConfig.spot` or a specific
  `reservationAffinity` (`capacity_settings`).

Pool sizes. An autoscaled pool (`minNodeCount` and `maxNodeCount`) uses GKE's *total* limits, which
bound the whole pool across its zones, so the pool has at most `maxNodeCount` nodes, as
`schedulablePools` reports; it starts from `initial_node_count` per zone, so with nodeCount
rounded up to a whole number per zone (`infra.profiles.pool_nodes`). A fixed pool's
`nodeCount` is what GKE's `node_count` means: nodes *per zone*. A regional pool without `zones`
spans three of the region's zones, so such a pool has 3 x `nodeCount` nodes, and the facts
(`PoolFacts.nodes`, from the GKE profile) report that number; a fixed pool that must have exactly
`nodeCount` nodes names one zone.

Labels, taints, roles, machines and accelerators come from `infra.facts`; nothing here re-derives
them.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import pulumi
import pulumi_gcp as gcp

from clouds import gke
from clouds.gke.config import GkeCluster as GkeClusterBlock
from components.adoption import adopted
from components.base import (
    ClusterArgs,
    ClusterComponent,
    exec_kubeconfig,
    own_block,
    stack_credentials,
)
from infra.config.clusters import CapacityType, PoolCapacity
from infra.facts import ClusterFacts, PoolFacts
from infra.profiles import nodes_per_zone_at_start
from infra.vocabulary import UPPER_EFFECT

# Address plan of the cluster's own VPC (nothing else lives in it): nodes, then the secondary
# ranges GKE allocates pod and service IPs from. A /14 for pods gives 1024 nodes x 110 pods.
NODES_CIDR = "10.10.0.0/20"
PODS_RANGE = "pods"
PODS_CIDR = "10.16.0.0/14"
SERVICES_RANGE = "services"
SERVICES_CIDR = "10.20.0.0/20"

# The roles GKE documents for a least-privilege node service account, plus image pulls from
# Artifact Registry.
NODE_ROLES = (
    "roles/logging.logWriter",
    "roles/monitoring.metricWriter",
    "roles/monitoring.viewer",
    "roles/stackdriver.resourceMetadata.writer",
    "roles/artifactregistry.reader",
)

# Access is governed by IAM on the service account, not by scopes; GKE's recommended scope.
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"

# Container-Optimized OS: the image the GKE DRA guides and NVIDIA's COS driver installer target.
IMAGE_TYPE = "COS_CONTAINERD"

# GKE must not install a driver: the serving stack installs it (DRA needs the stack's driver root).
GPU_DRIVER_VERSION = "INSTALLATION_DISABLED"

# GKE resource names: at most 40 characters for clusters, 63 for compute resources.
CLUSTER_NAME_MAX = 40
COMPUTE_NAME_MAX = 63

# What an adopted cluster keeps as it runs (`components.adoption.adopted`, `ignore`): the network
# and subnetwork it was created in, which the program neither creates nor knows for it; and the
# fields the provider documents as Terraform's own, absent from GKE's API, which "will show diffs if
# set in config" after an import (pulumi-gcp 10.2.0, pulumi_gcp/container/cluster.py, "## Import":
# `min_master_version`, `remove_default_node_pool`; `initial_node_count` and `deletion_protection`
# are the same kind, set only by the provider).
ADOPTED_CLUSTER_KEEPS = (
    "network",
    "subnetwork",
    "minMasterVersion",
    "removeDefaultNodePool",
    "initialNodeCount",
    "deletionProtection",
)
# What an adopted pool keeps: its nodes' service account, set by whoever created it, and the
# node count it was created with, which only creation reads (google_container_node_pool).
ADOPTED_POOL_KEEPS = ("nodeConfig.serviceAccount", "initialNodeCount")

GKE_AUTH_HINT = (
    "Install gke-gcloud-auth-plugin for use with kubectl by following "
    "https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin"
)


def gcp_name(name: str, limit: int, suffix: str = "") -> str:
    """`name` (plus `-suffix`) within GCP's length limit; shortened names keep a hash of the full one."""
    full = f"{name}-{suffix}" if suffix else name
    if len(full) <= limit:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:6]
    tail = f"-{suffix}" if suffix else ""
    return f"{name[: limit - len(tail) - 7].rstrip('-')}-{digest}{tail}"


def node_account_id(project: str, stack: str, cluster: str) -> str:
    """A service account id (6-30 chars, starts with a letter) unique per project, stack and cluster.

    Two stacks may declare clusters of the same name in one project; the hash keeps their node
    identities apart so one stack's `pulumi destroy` never deletes the other's account.
    """
    digest = hashlib.sha256(f"{project}/{stack}/{cluster}".encode()).hexdigest()[:6]
    return f"mp-{cluster[:18].rstrip('-')}-{digest}"


def gcp_labels(labels: dict[str, str]) -> dict[str, str]:
    """Cluster labels in GCP's label alphabet (lowercase letters, digits, `_` and `-`)."""

    def clean(text: str) -> str:
        return re.sub(r"[^a-z0-9_-]", "_", text.lower())[:63]

    return {clean(k): clean(v) for k, v in labels.items() if clean(k)[:1].isalpha()}


def node_taints(pool: PoolFacts) -> list[gcp.container.NodePoolNodeConfigTaintArgs]:
    return [
        gcp.container.NodePoolNodeConfigTaintArgs(key=t.key, value=t.value, effect=UPPER_EFFECT[t.effect])
        for t in pool.taints
    ]


def guest_accelerators(pool: PoolFacts) -> list[gcp.container.NodePoolNodeConfigGuestAcceleratorArgs]:
    if pool.accelerator is None:
        return []
    return [
        gcp.container.NodePoolNodeConfigGuestAcceleratorArgs(
            type=pool.accelerator.type,
            count=pool.accelerator.count,
            gpu_driver_installation_config=gcp.container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(
                gpu_driver_version=GPU_DRIVER_VERSION
            ),
        )
    ]


def autoscaling(pool: PoolFacts) -> gcp.container.NodePoolAutoscalingArgs | None:
    if not pool.autoscaled:
        return None
    return gcp.container.NodePoolAutoscalingArgs(
        total_min_node_count=pool.min_node_count,
        total_max_node_count=pool.max_node_count,
        # GPUs are scarce: let GPU pools grow in whichever zone has capacity; spread the rest.
        location_policy="ANY" if pool.accelerator is not None else "BALANCED",
    )


def initial_node_count(pool: PoolFacts) -> int | None:
    """Nodes per zone an autoscaled pool starts with (`infra.profiles.nodes_per_zone_at_start`).

    The autoscaler then keeps the pool within the total limits. A fixed pool sets `node_count` instead.
    """
    if not pool.autoscaled:
        return None
    return nodes_per_zone_at_start(pool.node_count, pool.zone_count)


# The label key a specific reservation is named by (pulumi-gcp 10.2.0 `container.NodePool`
# node_config.reservation_affinity.key; https://cloud.google.com/kubernetes-engine/docs/how-to/consuming-reservations).
RESERVATION_NAME_KEY = "compute.googleapis.com/reservation-name"


def capacity_settings(pool: PoolFacts) -> dict[str, Any]:
    """The node config fields that buy the pool's nodes as its capacity says (the `clouds.gke` profile's `CAPACITY`).

    Spot: `spot` (GKE labels the nodes `cloud.google.com/gke-spot=true`). A reservation:
    `reservation_affinity` naming it, so the pool takes nodes from that reservation only and fails
    to grow when it is used up, rather than falling back to on-demand nodes. Both force a new
    pool when changed (`tooling.replacements`).
    """
    # The system pool has no capacity of its own (None): on demand.
    capacity = pool.capacity or PoolCapacity()
    if capacity.type is CapacityType.SPOT:
        return {"spot": True}
    if capacity.type is CapacityType.RESERVATION:
        return {
            "reservation_affinity": gcp.container.NodePoolNodeConfigReservationAffinityArgs(
                consume_reservation_type="SPECIFIC_RESERVATION",
                key=RESERVATION_NAME_KEY,
                values=[str(capacity.reservation)],
            )
        }
    return {}


def filestore_addon(facts: ClusterFacts) -> gcp.container.ClusterAddonsConfigArgs | None:
    """The Filestore CSI driver add-on when a deployment shares a weight cache, else GKE's defaults.

    GKE then creates the class `standard-rwx` a shared cache claims (`clouds.gke` profile,
    https://cloud.google.com/filestore/docs/csi-driver); the project needs the Filestore API
    (file.googleapis.com) on, as it needs the Kubernetes Engine API.
    """
    if not facts.shared_caches:
        return None
    return gcp.container.ClusterAddonsConfigArgs(
        gcp_filestore_csi_driver_config=gcp.container.ClusterAddonsConfigGcpFilestoreCsiDriverConfigArgs(enabled=True)
    )


class GkeCluster(ClusterComponent):
    CLOUD = gke.CLOUD

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, args, opts)
        block = own_block(args.facts, GkeClusterBlock)
        self.project, self.region = block.project, block.region
        self.gcp_provider = args.providers.shared(
            ("gcp", self.project, self.region),
            lambda shared: gcp.Provider(
                shared, project=self.project, region=self.region, **stack_credentials(gke.CLOUD)
            ),
        )
        if args.facts.adopt_id is None:
            self._network()
        if args.facts.adopt_id is None or any(p.adopt_id is None for p in args.facts.pools):
            # A pool the program creates (in an adopted cluster too) runs as the nodes' own identity.
            self._identity()
        self._cluster(block.kubernetes_version)
        self._pools()
        self.connect(self._kubeconfig())
        self.finish()

    def _network(self) -> None:
        """A custom-mode VPC, its node subnetwork with the pod and service ranges, and Cloud NAT."""
        name, project, region = self._name, self.project, self.region
        on_gcp: dict[str, Any] = {"provider": self.gcp_provider}
        self.network = gcp.compute.Network(
            f"{name}-network",
            name=gcp_name(name, COMPUTE_NAME_MAX),
            project=project,
            auto_create_subnetworks=False,
            routing_mode="REGIONAL",
            opts=self.child(**on_gcp),
        )
        self.subnetwork = gcp.compute.Subnetwork(
            f"{name}-subnet",
            name=gcp_name(name, COMPUTE_NAME_MAX, "nodes"),
            project=project,
            region=region,
            network=self.network.id,
            ip_cidr_range=NODES_CIDR,
            secondary_ip_ranges=[
                gcp.compute.SubnetworkSecondaryIpRangeArgs(range_name=PODS_RANGE, ip_cidr_range=PODS_CIDR),
                gcp.compute.SubnetworkSecondaryIpRangeArgs(range_name=SERVICES_RANGE, ip_cidr_range=SERVICES_CIDR),
            ],
            # Private nodes reach Google APIs (Artifact Registry, logging) without public addresses.
            private_ip_google_access=True,
            opts=self.child(**on_gcp),
        )
        self.router = gcp.compute.Router(
            f"{name}-router",
            name=gcp_name(name, COMPUTE_NAME_MAX, "router"),
            project=project,
            region=region,
            network=self.network.id,
            opts=self.child(**on_gcp),
        )
        # Private nodes have no external address: without NAT they could not pull images or charts.
        self.nat = gcp.compute.RouterNat(
            f"{name}-nat",
            name=gcp_name(name, COMPUTE_NAME_MAX, "nat"),
            project=project,
            region=region,
            router=self.router.name,
            nat_ip_allocate_option="AUTO_ONLY",
            source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
            log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
            opts=self.child(**on_gcp),
        )

    def _identity(self) -> None:
        """The nodes' service account and its least-privilege roles."""
        name, project = self._name, self.project
        on_gcp: dict[str, Any] = {"provider": self.gcp_provider}
        self.node_account = gcp.serviceaccount.Account(
            f"{name}-nodes",
            project=project,
            account_id=node_account_id(project, pulumi.get_stack(), name),
            display_name=f"GKE nodes of {name}"[:100],
            opts=self.child(**on_gcp),
        )
        member = self.node_account.email.apply(lambda email: f"serviceAccount:{email}")
        self.node_roles = [
            gcp.projects.IAMMember(
                f"{name}-nodes-{role.removeprefix('roles/').replace('.', '-').lower()}",
                project=project,
                role=role,
                member=member,
                opts=self.child(**on_gcp),
            )
            for role in NODE_ROLES
        ]

    def _cluster(self, kubernetes_version: str) -> None:
        """The regional cluster, without its default pool (pools are separate resources).

        An adopted cluster (`adopt.id`) is imported under its running name, in the network it runs
        in: the program creates no network, NAT or node identity for it (`ADOPTED_CLUSTER_KEEPS`).
        """
        name, project, adopt_id = self._name, self.project, self.facts.adopt_id
        running = gke.CLOUD.adoption.cluster.fullmatch(adopt_id) if adopt_id and gke.CLOUD.adoption else None
        created = running is None
        self.cluster = gcp.container.Cluster(
            f"{name}-cluster",
            name=running["cluster"] if running else gcp_name(name, CLUSTER_NAME_MAX),
            project=project,
            location=self.region,
            min_master_version=kubernetes_version,
            release_channel=gcp.container.ClusterReleaseChannelArgs(channel="REGULAR"),
            network=self.network.id if created else None,
            subnetwork=self.subnetwork.id if created else None,
            networking_mode="VPC_NATIVE",
            ip_allocation_policy=gcp.container.ClusterIpAllocationPolicyArgs(
                cluster_secondary_range_name=PODS_RANGE,
                services_secondary_range_name=SERVICES_RANGE,
            ),
            private_cluster_config=gcp.container.ClusterPrivateClusterConfigArgs(
                enable_private_nodes=True,
                # The public endpoint stays: `pulumi up` reaches the API server from outside the VPC.
                enable_private_endpoint=False,
            ),
            workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(
                workload_pool=f"{project}.svc.id.goog"
            ),
            # Pools are separate resources, so each can change (or be replaced) without the cluster.
            remove_default_node_pool=True,
            initial_node_count=1,
            enable_shielded_nodes=True,
            resource_labels=gcp_labels(dict(self.facts.spec.labels)),
            addons_config=filestore_addon(self.facts),
            deletion_protection=self.protect,
            opts=self.child(
                depends_on=[self.nat] if created else [],
                provider=self.gcp_provider,
                **adopted(f"{name}-cluster", f"cluster '{name}'", adopt_id, ADOPTED_CLUSTER_KEEPS),
            ),
        )

    def _pools(self) -> None:
        """The system pool and one pool per declared pool (system first, as in the facts)."""
        self.node_pools = [self._node_pool(self._name, self.project, self.region, pool) for pool in self.facts.pools]

    def _kubeconfig(self) -> pulumi.Output[str]:
        project, region = self.project, self.region
        # The kubeconfig waits for the node pools (their ids), so nothing installed through the
        # cluster's Kubernetes provider starts before there are nodes to run it.
        return pulumi.Output.all(
            self.cluster.name,
            self.cluster.endpoint,
            self.cluster.master_auth.cluster_ca_certificate,
            *[p.id for p in self.node_pools],
        ).apply(
            lambda a: exec_kubeconfig(
                f"gke_{project}_{region}_{a[0]}",
                f"https://{a[1]}",
                str(a[2]),
                "gke-gcloud-auth-plugin",
                [],
                GKE_AUTH_HINT,
                provide_cluster_info=True,
            )
        )

    def _node_pool(self, name: str, project: str, region: str, pool: PoolFacts) -> gcp.container.NodePool:
        return gcp.container.NodePool(
            f"{name}-{pool.name}",
            # The pool's own name (at most 40 characters, unique in the cluster), as `kubectl` shows it.
            name=pool.name,
            project=project,
            location=region,
            cluster=self.cluster.name,
            node_locations=list(pool.zones) or None,
            autoscaling=autoscaling(pool),
            node_count=None if pool.autoscaled else pool.node_count,
            # Without it an autoscaled pool starts at zero nodes, whatever nodeCount says.
            initial_node_count=initial_node_count(pool),
            management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
            node_config=gcp.container.NodePoolNodeConfigArgs(
                machine_type=pool.machine,
                disk_size_gb=pool.disk_size_gb,
                image_type=IMAGE_TYPE,
                labels=dict(pool.labels),
                taints=node_taints(pool),
                guest_accelerators=guest_accelerators(pool),
                service_account=None if pool.adopt_id else self.node_account.email,
                oauth_scopes=[CLOUD_PLATFORM_SCOPE],
                workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(
                    mode="GKE_METADATA"
                ),
                shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
                    enable_secure_boot=True, enable_integrity_monitoring=True
                ),
                **capacity_settings(pool),
            ),
            opts=self.child(
                provider=self.gcp_provider,
                depends_on=[] if pool.adopt_id else self.node_roles,
                # The name is fixed, so a replacement must delete the old pool before creating the new.
                delete_before_replace=True,
                **{
                    # `initial_node_count` matters only at creation and changing it replaces the pool
                    # (google_container_node_pool), so a pool created before it was set keeps its nodes.
                    "ignore_changes": ["initialNodeCount"] if pool.autoscaled else None,
                    # An adopted pool's options (its own `ignore_changes` among them) take precedence.
                    **adopted(
                        f"{name}-{pool.name}",
                        f"pool '{pool.name}' of cluster '{name}'",
                        pool.adopt_id,
                        ADOPTED_POOL_KEEPS,
                    ),
                },
            ),
        )

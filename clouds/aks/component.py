"""Azure Kubernetes Service clusters: resource group, network, cluster with its system pool, one pool per pool.

Everything is created through one `azure-native` provider pinned to the cluster's location; the
subscription and credentials come from that provider's own configuration (Azure CLI login,
`ARM_*` environment variables or `azure-native:*` config), never from this module. Only the
`resources`, `network`, `containerservice`, `managedidentity` and `authorization` modules of the SDK are imported: the package is huge.

The cluster uses Azure CNI overlay (pods get addresses outside the VNet), an OIDC issuer and
workload identity, and a System-mode pool built from the `system` PoolFacts. Every declared pool is
a User-mode `AgentPool`. Labels and taints are the ones `infra.facts` derived; this module only
spells them as AKS wants (taints as `key=value:Effect` strings, pool names as AKS allows them, a spot
pool as Spot priority: `capacity_settings`).

An adopted cluster (`aks.adopt`, docs/adopting.md) and its adopted pools are imported from the
resource group their IDs name: no resource group, VNet or subnet is created, and the cluster keeps
its own system pool. A pool the program creates in it joins the subnet of the cluster's first pool.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Sequence
from typing import Any

import pulumi
from pulumi_azure_native import authorization, containerservice, managedidentity, network, resources
from pulumi_azure_native.provider import Provider as AzureProvider

from clouds import aks
from clouds.aks import agent_pool_name
from clouds.aks.config import AksCluster as AksClusterBlock
from components.adoption import adopted
from components.base import ClusterArgs, ClusterComponent, own_block, stack_credentials, taint_strings
from infra.config.clusters import CapacityType, PoolCapacity
from infra.facts import SYSTEM_POOL, PoolFacts

# AKS's own defaults for a cluster VNet; the overlay pod and service ranges below lie outside it.
VNET_CIDR = "10.224.0.0/12"
NODE_SUBNET_CIDR = "10.224.0.0/16"
POD_CIDR = "10.244.0.0/16"
SERVICE_CIDR = "10.96.0.0/16"
DNS_SERVICE_IP = "10.96.0.10"


# What an adopted cluster keeps as it runs (`components.adoption.adopted`, `ignore`): its own pools
# (AKS holds the system pool inline; the program adds none), its network profile (address ranges
# chosen by whoever created it) and its DNS prefix, which only creation reads (azure-native 3.29.0,
# pulumi_azure_native/containerservice/managed_cluster.py: `agent_pool_profiles`,
# `network_profile`, `dns_prefix`).
ADOPTED_CLUSTER_KEEPS = ("agentPoolProfiles", "networkProfile", "dnsPrefix")
# What an adopted agent pool keeps: the subnet it was created in (`vnet_subnet_id`, agent_pool.py).
ADOPTED_POOL_KEEPS = ("vnetSubnetId",)


def gpu_profile(pool: PoolFacts) -> containerservice.GPUProfileArgs | None:
    """NVIDIA pools only: AKS installs the driver unless the serving stack's GPU operator owns it.

    Two drivers on one node fight over the kernel module, so `None` (AKS's `--gpu-driver none`)
    wherever AKS's profile gives the driver to the stack (`NvidiaStack.driver_by_operator`), which
    is what the stack's GPU Operator values read too.
    """
    if pool.role != "GPU" or pool.vendor != "nvidia":
        return None
    owned = aks.CLOUD.profile.nvidia.driver_by_operator
    return containerservice.GPUProfileArgs(
        driver=containerservice.GPUDriver.NONE if owned else containerservice.GPUDriver.INSTALL
    )


def zones_of(pool: PoolFacts) -> Sequence[str] | None:
    return list(pool.zones) or None


def pool_fields(pool: PoolFacts, subnet_id: pulumi.Input[str | None] | None) -> dict[str, Any]:
    """The fields the system pool profile and every `AgentPool` share, from the pool's facts."""
    return {
        "os_type": containerservice.OSType.LINUX,
        "vm_size": str(pool.machine),
        "vnet_subnet_id": subnet_id,
        "availability_zones": zones_of(pool),
        "os_disk_size_gb": pool.disk_size_gb,
        "node_labels": dict(pool.labels),
        "node_taints": taint_strings(pool.taints) or None,
        "count": pool.node_count,
        "enable_auto_scaling": pool.autoscaled,
        "min_count": pool.min_node_count if pool.autoscaled else None,
        "max_count": pool.max_node_count if pool.autoscaled else None,
    }


# A spot pool's ceiling when the owner sets none: pay up to the on-demand price, so nodes are never
# evicted for price (pulumi-azure-native 3.29.0 `containerservice.AgentPool` `spot_max_price`: "-1
# which indicates default price to be up-to on-demand"; https://learn.microsoft.com/azure/aks/spot-node-pool).
SPOT_UP_TO_ON_DEMAND = -1.0


def capacity_settings(pool: PoolFacts) -> dict[str, Any]:
    """The agent pool fields that buy a spot pool's nodes at Spot priority (the `clouds.aks` profile's `CAPACITY`).

    Eviction deletes the VM (AKS's default; `Deallocate` would keep paying for its disks and count
    against quota). AKS gives the nodes the `kubernetes.azure.com/scalesetpriority=spot:NoSchedule`
    taint and label itself (https://learn.microsoft.com/azure/aks/spot-node-pool). A pool's priority is
    set when AKS creates it: a change is refused (`tooling.replacements`).
    """
    # The system pool has no capacity of its own (None): on demand.
    capacity = pool.capacity or PoolCapacity()
    if capacity.type is CapacityType.RESERVATION:
        # AKS draws the pool's VMs from the group, once the cluster's identity may use it
        # (https://learn.microsoft.com/azure/aks/use-capacity-reservation-groups; pulumi-azure-native
        # 3.29.0 `containerservice.AgentPool` `capacity_reservation_group_id`). The group is set when
        # the pool is created (`tooling.replacements`).
        return {"capacity_reservation_group_id": capacity.reservation}
    if capacity.type is not CapacityType.SPOT:
        return {}
    return {
        "scale_set_priority": containerservice.ScaleSetPriority.SPOT,
        "scale_set_eviction_policy": containerservice.ScaleSetEvictionPolicy.DELETE,
        "spot_max_price": float(capacity.max_price) if capacity.max_price is not None else SPOT_UP_TO_ON_DEMAND,
    }


# Azure's built-in Contributor role, the role AKS's capacity reservation page has the cluster identity
# hold on the group's resource group ("Contributor": b24988ac-6180-42a0-ab88-20f7382dd24c,
# https://learn.microsoft.com/azure/role-based-access-control/built-in-roles/general).
CONTRIBUTOR_ROLE = "b24988ac-6180-42a0-ab88-20f7382dd24c"


def reservation_scopes(pools: Sequence[PoolFacts]) -> list[tuple[str, str]]:
    """(subscription, resource group) of each capacity reservation group the pools consume, once each.

    AKS's page scopes the identity's role to the resource group holding the group
    (https://learn.microsoft.com/azure/aks/use-capacity-reservation-groups, "Prerequisites").
    """
    scopes: dict[tuple[str, str], None] = {}
    for pool in pools:
        capacity = pool.capacity or PoolCapacity()
        if capacity.type is not CapacityType.RESERVATION or capacity.reservation is None:
            continue
        group = aks.RESERVATION_GROUP_ID.fullmatch(capacity.reservation)
        if group is not None:
            scopes[(group["subscription"], group["resourceGroup"])] = None
    return list(scopes)


def autoscaler_owned(pool: PoolFacts, path: str = "count") -> list[str] | None:
    """Inputs of an autoscaled pool that `pulumi up` sets only at creation.

    Once AKS's autoscaler has changed a pool's size, an update that sends `count` is rejected
    ("Cannot manually scale AgentPool ... autoscaler enabled"), so the count is ignored after
    creation (https://learn.microsoft.com/azure/aks/cluster-autoscaler).
    """
    return [path] if pool.autoscaled else None


class AksCluster(ClusterComponent):
    CLOUD = aks.CLOUD

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        facts = args.facts
        block = own_block(facts, AksClusterBlock)
        # Children inherit a parent's transformations, so this covers every azure-native resource here.
        strip = pulumi.ResourceOptions(transformations=[without_api_version_aliases])
        super().__init__(name, args, pulumi.ResourceOptions.merge(opts, strip))
        self.azure_provider = args.providers.shared(
            ("azure-native", block.location),
            lambda shared: AzureProvider(shared, location=block.location, **stack_credentials(aks.CLOUD)),
        )
        running = (
            aks.CLOUD.adoption.cluster.fullmatch(facts.adopt_id) if facts.adopt_id and aks.CLOUD.adoption else None
        )
        if running is None:
            self._network(block.location)
        else:
            # The running cluster's resource group, VNet and subnet stay its own.
            self.resource_group_name: pulumi.Input[str] = running["resourceGroup"]
            self.cluster_name: pulumi.Input[str] | None = running["cluster"]
            self.location: pulumi.Input[str] = block.location
        self._reservation_access()
        self._cluster(block.kubernetes_version)
        self._pools()
        self.connect(self._kubeconfig())
        self.finish()

    def _on_azure(self, **extra: Any) -> pulumi.ResourceOptions:
        return self.child(provider=self.azure_provider, **extra)

    def _network(self, location: str) -> None:
        """The resource group, the VNet and the node subnet."""
        name = self._name
        self.resource_group = resources.ResourceGroup(
            f"{name}-rg",
            location=location,
            # Deleting the group deletes everything in it, the cluster included.
            opts=self._on_azure(),
        )
        self.resource_group_name = self.resource_group.name
        self.cluster_name = None
        self.location = self.resource_group.location
        self.vnet = network.VirtualNetwork(
            f"{name}-vnet",
            resource_group_name=self.resource_group.name,
            location=self.resource_group.location,
            address_space=network.AddressSpaceArgs(address_prefixes=[VNET_CIDR]),
            opts=self._on_azure(),
        )
        self.subnet = network.Subnet(
            f"{name}-subnet",
            resource_group_name=self.resource_group.name,
            virtual_network_name=self.vnet.name,
            address_prefix=NODE_SUBNET_CIDR,
            opts=self._on_azure(),
        )

    def _reservation_access(self) -> None:
        """A cluster with a reserved pool: a user-assigned identity, Contributor on each group's resource group.

        AKS associates a pool with a capacity reservation group only through a user-assigned cluster
        identity holding that role; a system-assigned one does not work
        (https://learn.microsoft.com/azure/aks/use-capacity-reservation-groups, "Prerequisites").
        The page says a role assignment can take up to 60 minutes to propagate, so a pool created
        right after it may still be refused; a later `up` creates it.
        """
        self.identity: managedidentity.UserAssignedIdentity | None = None
        self.reservation_roles: list[authorization.RoleAssignment] = []
        scopes = reservation_scopes(self.facts.user_pools)
        if not scopes:
            return
        name = self._name
        # pulumi-azure-native 3.29.0 managedidentity.UserAssignedIdentity (resource_group_name, location).
        self.identity = managedidentity.UserAssignedIdentity(
            f"{name}-identity",
            resource_group_name=self.resource_group_name,
            location=self.location,
            opts=self._on_azure(),
        )
        for index, (subscription, group) in enumerate(scopes):
            # pulumi-azure-native 3.29.0 authorization.RoleAssignment: the role definition's full ID in
            # the subscription, and principal type ServicePrincipal, which a managed identity is (it
            # lets Azure skip looking up a principal just created).
            self.reservation_roles.append(
                authorization.RoleAssignment(
                    f"{name}-reservation-role-{index}",
                    principal_id=self.identity.principal_id,
                    principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
                    role_definition_id=(
                        f"/subscriptions/{subscription}/providers/Microsoft.Authorization/roleDefinitions/"
                        f"{CONTRIBUTOR_ROLE}"
                    ),
                    scope=f"/subscriptions/{subscription}/resourceGroups/{group}",
                    opts=self._on_azure(),
                )
            )

    def _cluster_identity(self) -> containerservice.ManagedClusterIdentityArgs:
        """The cluster's identity: the user-assigned one where a pool is reserved, else system-assigned."""
        if self.identity is None:
            return containerservice.ManagedClusterIdentityArgs(
                type=containerservice.ResourceIdentityType.SYSTEM_ASSIGNED
            )
        # pulumi-azure-native 3.29.0 ManagedClusterIdentityArgs: `user_assigned_identities` lists the
        # identity's ARM ID (AKS takes only one).
        return containerservice.ManagedClusterIdentityArgs(
            type=containerservice.ResourceIdentityType.USER_ASSIGNED,
            user_assigned_identities=[self.identity.id],
        )

    def _cluster(self, kubernetes_version: str) -> None:
        """The managed cluster with its System-mode pool (AKS requires one inline).

        An adopted cluster (`adopt.id`) is imported under its running name, with its own pools and
        network (`ADOPTED_CLUSTER_KEEPS`).
        """
        name, adopt_id = self._name, self.facts.adopt_id
        self.cluster = containerservice.ManagedCluster(
            f"{name}-cluster",
            resource_group_name=self.resource_group_name,
            resource_name_=self.cluster_name,
            location=self.location,
            dns_prefix=name,
            kubernetes_version=kubernetes_version,
            identity=self._cluster_identity(),
            enable_rbac=True,
            network_profile=None
            if adopt_id
            else containerservice.ContainerServiceNetworkProfileArgs(
                network_plugin=containerservice.NetworkPlugin.AZURE,
                # Overlay: pods draw from POD_CIDR, so GPU pools never exhaust the node subnet.
                network_plugin_mode=containerservice.NetworkPluginMode.OVERLAY,
                pod_cidr=POD_CIDR,
                service_cidr=SERVICE_CIDR,
                dns_service_ip=DNS_SERVICE_IP,
            ),
            oidc_issuer_profile=containerservice.ManagedClusterOIDCIssuerProfileArgs(enabled=True),
            security_profile=containerservice.ManagedClusterSecurityProfileArgs(
                workload_identity=containerservice.ManagedClusterSecurityProfileWorkloadIdentityArgs(enabled=True)
            ),
            agent_pool_profiles=None if adopt_id else [self._system_pool()],
            opts=self._on_azure(
                # The identity holds its role before the cluster, and so its pools, use it.
                **({"depends_on": list(self.reservation_roles)} if self.reservation_roles else {}),
                **(
                    adopted(f"{name}-cluster", f"cluster '{name}'", adopt_id, ADOPTED_CLUSTER_KEEPS)
                    if adopt_id
                    else {
                        "ignore_changes": autoscaler_owned(self.facts.pool(SYSTEM_POOL), "agentPoolProfiles[0].count")
                    }
                ),
            ),
        )

    def _system_pool(self) -> containerservice.ManagedClusterAgentPoolProfileArgs:
        system = self.facts.pool(SYSTEM_POOL)
        return containerservice.ManagedClusterAgentPoolProfileArgs(
            name=agent_pool_name(system.name),
            mode=containerservice.AgentPoolMode.SYSTEM,
            **pool_fields(system, self.subnet.id),
        )

    def _subnet_id(self, pool: PoolFacts) -> pulumi.Output[str | None] | None:
        """The node subnet of a pool: the program's, or in an adopted cluster its first pool's (none for
        an adopted pool, which keeps its own)."""
        if pool.adopt_id is not None:
            return None
        if self.facts.adopt_id is None:
            own: pulumi.Output[str | None] = self.subnet.id
            return own
        subnet: pulumi.Output[str | None] = self.cluster.agent_pool_profiles.apply(
            lambda found: found[0].vnet_subnet_id if found else None
        )
        return subnet

    def _pools(self) -> None:
        """One User-mode agent pool per declared pool."""
        self.node_pools: list[containerservice.AgentPool] = []
        for pool in self.facts.user_pools:
            previous = self.node_pools[-1:]
            self.node_pools.append(
                containerservice.AgentPool(
                    f"{self._name}-{pool.name}",
                    resource_group_name=self.resource_group_name,
                    resource_name_=self.cluster.name,
                    agent_pool_name=agent_pool_name(pool.name),
                    mode=containerservice.AgentPoolMode.USER,
                    gpu_profile=gpu_profile(pool),
                    **pool_fields(pool, self._subnet_id(pool)),
                    **capacity_settings(pool),
                    # AKS refuses an agent-pool operation while another runs on the same cluster
                    # (OperationNotAllowed), so pools are created one after another.
                    opts=self._on_azure(
                        depends_on=previous,
                        **{
                            "ignore_changes": autoscaler_owned(pool),
                            # An adopted pool's options (its own `ignore_changes` among them) take precedence.
                            **adopted(
                                f"{self._name}-{pool.name}",
                                f"pool '{pool.name}' of cluster '{self._name}'",
                                pool.adopt_id,
                                [*ADOPTED_POOL_KEEPS, *(autoscaler_owned(pool) or [])],
                            ),
                        },
                    ),
                )
            )

    def _kubeconfig(self) -> pulumi.Output[str]:
        credentials = containerservice.list_managed_cluster_user_credentials_output(
            resource_group_name=self.resource_group_name,
            resource_name=self.cluster.name,
            opts=pulumi.InvokeOutputOptions(provider=self.azure_provider, parent=self),
        )
        kubeconfig: pulumi.Output[str] = credentials.kubeconfigs.apply(
            lambda found: base64.b64decode(found[0].value).decode()
        )
        return kubeconfig


def without_api_version_aliases(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
    """An azure-native resource without the aliases its SDK adds for every API version of its type.

    azure-native 3.x gives each resource one alias per API version of its type (about 110 for an
    AgentPool, `azure-native:containerservice/v20190201:AgentPool` ...): they let a stack created by
    an SDK that registered the versioned token adopt the resource. Every stack of this program
    registers the unversioned token, and the engine matches a resource by its own URN first, so
    they never apply here; collapsing them to URNs made an AKS resource cost about nine times
    another cloud's in the offline plan (docs/benchmarks.md). The engine tier shows an AKS stack
    created with them updates without them with no change (tests/engine/test_state.py). Aliases
    that name anything besides a type are kept.
    """
    aliases = args.opts.aliases
    if not args.type_.startswith("azure-native:") or not aliases:
        return None
    kept = [a for a in aliases if not _api_version_alias(a, args.type_)]
    if len(kept) == len(aliases):
        return None
    opts = copy.copy(args.opts)
    opts.aliases = kept
    return pulumi.ResourceTransformationResult(args.props, opts)


def _api_version_alias(alias: object, own_type: str) -> bool:
    if not isinstance(alias, pulumi.Alias):
        return False
    only_type = all(getattr(alias, f) is ... for f in ("name", "parent", "stack", "project"))
    kind = own_type.rsplit(":", 1)[-1]
    return (
        only_type
        and isinstance(alias.type_, str)
        and alias.type_.startswith("azure-native:")
        and (alias.type_.endswith(f":{kind}") and "/v" in alias.type_.split(":")[1])
    )

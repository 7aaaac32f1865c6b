"""AKS: clusters on Azure with their own VNet, a system agent pool and one agent pool per pool.

The record the registry lists (`clouds/__init__.py`); the component is `clouds.aks.component`.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from pulumi.runtime import rpc

from clouds.aks import machines
from clouds.aks.config import KEYS, AksCluster, AksMachine
from clouds.mock import fake_kubeconfig
from clouds.spec import Cloud, ImportIds, PoolSpelling, ResourceTypes
from infra import vocabulary as vocab
from infra.machines import ControlPlaneFee, MachineType, priced, spot_priced
from infra.profiles import (
    Capacities,
    CapacityTerms,
    CloudProfile,
    Fabric,
    NameRule,
    Naming,
    NvidiaStack,
    PoolNaming,
    ScaleFromZero,
    Scaling,
    SharedStorage,
    SpotTaint,
    Zones,
)
from infra.reservations import EVICTION_THRESHOLD, MIB, Reservation, machine_memory

SOURCE = "AKS"
# AKS names a Linux agent pool with 1-12 lowercase letters and digits, starting with a letter.
AGENT_POOL_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")


def agent_pool_name(pool: str) -> str:
    """The AKS name of a pool: the pool's own name when AKS accepts it, else a stable short form.

    The short form keeps the first letters and adds a digest of the full name, so pools sharing a
    prefix still differ (the program checks it) and a pool keeps its AKS name across runs
    (renaming an agent pool replaces it).
    """
    if AGENT_POOL_NAME.match(pool):
        return pool
    letters = re.sub(r"[^a-z0-9]", "", pool.lower())
    if not letters[:1].isalpha():
        letters = f"p{letters}"
    return f"{letters[:7]}{hashlib.sha256(pool.encode()).hexdigest()[:5]}"


# AKS (1.29 and later) keeps the lesser of 20 MB x the node's maximum pods + 50 MB and 25% of its
# memory, plus the 100 MiB eviction threshold
# (https://learn.microsoft.com/azure/aks/node-resource-reservations, "Memory reservations"; its MB
# are taken as MiB, the unit AKS's kube-reserved `memoryMB` is in). The program leaves maxPods at
# Azure CNI Overlay's default, 250 (https://learn.microsoft.com/azure/aks/azure-cni-overlay,
# "Maximum pods per node"; the network profile is `clouds/aks/component.py`'s).
AKS_MAX_PODS = 250
AKS_MEMORY_PER_POD = 20 * MIB
AKS_MEMORY_BASE = 50 * MIB
AKS_MEMORY_SHARE = Decimal("0.25")


def aks_reserved(row: MachineType) -> Decimal:
    """Bytes AKS keeps from pods on a node of `row`."""
    per_pods = AKS_MEMORY_PER_POD * AKS_MAX_PODS + AKS_MEMORY_BASE
    return min(per_pods, machine_memory(row) * AKS_MEMORY_SHARE) + EVICTION_THRESHOLD


def _named(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    # azure-native autonames a resource whose name input is unset and returns it as `name`.
    return {"name": name}


def _cluster(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    # The cluster's identity reads back with `userAssignedIdentities` as a map from each identity's
    # ARM ID to its principal and client (pulumi-azure-native 3.29.0
    # ManagedClusterIdentityResponse.user_assigned_identities), not the list the input takes.
    # In a preview the identity's ID is not known yet, and neither is the map.
    found: dict[str, Any] = {"name": name}
    identity = inputs.get("identity") or {}
    ids = identity.get("userAssignedIdentities")
    if isinstance(ids, list):
        known = all(isinstance(i, str) for i in ids)
        found["identity"] = {
            **identity,
            "userAssignedIdentities": {i: {"principalId": f"{i}-principal", "clientId": f"{i}-client"} for i in ids}
            if known
            else rpc.UNKNOWN,
        }
    return found


def _identity(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    # A user-assigned identity's service principal and client, which Azure creates with it.
    return {"name": name, "principalId": f"{name}-principal", "clientId": f"{name}-client"}


def _user_credentials(args: Mapping[str, Any], provider: Mapping[str, Any]) -> dict[str, Any]:
    kubeconfig = fake_kubeconfig(str(args.get("resourceName", "aks")))
    return {"kubeconfigs": [{"name": "clusterUser", "value": base64.b64encode(kubeconfig.encode()).decode()}]}


# A capacity reservation group's ARM ID, the form an agent pool's `capacityReservationGroupID` takes
# ("/subscriptions/{subscriptionId}/resourcegroups/{resourceGroupName}/providers/Microsoft.Compute/
# capacityreservationgroups/{capacityReservationGroupName}", Azure.ResourceManager.ContainerService
# ManagedClusterAgentPoolProfileProperties.CapacityReservationGroupId,
# https://learn.microsoft.com/dotnet/api/azure.resourcemanager.containerservice.models.managedclusteragentpoolprofileproperties.capacityreservationgroupid;
# pulumi-azure-native 3.29.0 `containerservice.AgentPool` `capacity_reservation_group_id`).
# Its fixed segments match in any case, as ARM's do (`_ARM_CLUSTER` below); the subscription and
# resource group name the scope of the cluster identity's role (`clouds.aks.component`).
RESERVATION_GROUP_ID = re.compile(
    r"^/(?i:subscriptions)/(?P<subscription>[^/]+)/(?i:resourceGroups)/(?P<resourceGroup>[^/]+)"
    r"/(?i:providers/Microsoft\.Compute/capacityReservationGroups)/(?P<group>[^/]+)$"
)

# What an AKS agent pool's nodes can be bought as; `clouds.aks.component.capacity_settings` spells it.
CAPACITY = Capacities(
    offered={
        "Spot": CapacityTerms(
            "Spot priority (scaleSetPriority Spot, eviction policy Delete, spotMaxPrice)",
            "https://learn.microsoft.com/azure/aks/spot-node-pool",
            max_price=True,
        ),
        # AKS associates a pool with a group only through a user-assigned cluster identity that is
        # Contributor on the group's resource group (the page's prerequisites); the component gives a
        # cluster with a reserved pool that identity and role (`clouds.aks.component.reservation_scopes`).
        "Reservation": CapacityTerms(
            "a capacity reservation group (agent pool capacityReservationGroupID, through a user-assigned "
            "cluster identity)",
            "https://learn.microsoft.com/azure/aks/use-capacity-reservation-groups",
            reservation=NameRule(
                RESERVATION_GROUP_ID,
                "a capacity reservation group's ARM ID (/subscriptions/<subscription id>/resourceGroups/"
                "<resource group>/providers/Microsoft.Compute/capacityReservationGroups/<group name>, "
                "as az capacity reservation group show --query id prints it)",
                "write the group's ARM ID, e.g. /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/"
                "reserved/providers/Microsoft.Compute/capacityReservationGroups/a100-crg",
            ),
        ),
    },
    lacks="AKS reserves capacity through capacity reservation groups and has no capacity blocks "
    "(https://learn.microsoft.com/azure/aks/use-capacity-reservation-groups)",
    example="{name: a100spot, className: a100, nodeCount: 1, minNodeCount: 1, maxNodeCount: 2, "
    'capacity: {type: Spot, maxPrice: "2.00"}}',
)


# An AKS cluster's ARM ID (`CLOUD.adoption`). Its fixed segments match in any case, so an ID written
# `resourcegroups` names the same cluster: ARM resource and resource group names are case-insensitive
# (https://learn.microsoft.com/azure/azure-resource-manager/management/resource-name-rules).
_ARM_CLUSTER = (
    r"/(?i:subscriptions)/(?P<subscription>[^/]+)/(?i:resourceGroups)/(?P<resourceGroup>[^/]+)"
    r"/(?i:providers/Microsoft\.ContainerService/managedClusters)/(?P<cluster>[A-Za-z0-9_-]+)"
)


CLOUD = Cloud(
    profile=CloudProfile(
        name=SOURCE,
        provisioned=True,
        # AKS scales a pool with its managed Cluster Autoscaler, whose Azure provider models an empty
        # pool's node from the VM size; neither its docs ("Use the cluster autoscaler in AKS",
        # https://learn.microsoft.com/azure/aks/cluster-autoscaler; "Scale node pools",
        # https://learn.microsoft.com/azure/aks/scale-node-pools) nor the autoscaler's DRA tracking
        # issue (kubernetes/autoscaler#7799, open) says it models the ResourceSlices a DRA claim
        # needs. Unverified, so treated as cannot.
        scaling=Scaling(
            gpu_from_zero=ScaleFromZero(
                can=False,
                says=(
                    "AKS's cluster autoscaler is not documented to scale a DRA GPU pool up from zero nodes "
                    "(unverified: neither the AKS cluster autoscaler docs nor kubernetes/autoscaler#7799 say its "
                    "Azure provider models an empty pool's ResourceSlices)"
                ),
            )
        ),
        gpu_vendors=(vocab.NVIDIA,),
        system_machine="Standard_D4s_v5",
        fabric=Fabric(
            claim=(
                "use an RDMA-capable ND-series size (an 'r' in its name, such as Standard_ND96isr_H100_v5), whose "
                "nodes carry InfiniBand"
            )
        ),
        nvidia=NvidiaStack(
            # The AKS GPU pool installs driver and toolkit (gpu_profile driver Install). Its
            # containerd on N-series VMs defines the NVIDIA handler as `nvidia-container-runtime`
            # and no `nvidia` handler (Azure/AgentBaker, containerd config template for N-series
            # SKUs), so the operator's operands must use that class or fail with `no runtime for
            # "nvidia" is configured` (NVIDIA/gpu-operator#1679 shows the failure). The operator
            # creates the RuntimeClass with this name as its handler (gpu-operator v26.3.3
            # controllers/object_controls.go, RuntimeClasses).
            runtime_class="nvidia-container-runtime",
            # AKS's accelerated-node toleration spells the value it taints with.
            toleration_value="true",
        ),
        # https://learn.microsoft.com/azure/aks/azure-disk-csi (built-in classes of the Azure Disk
        # CSI driver)
        cache_storage_class="managed-csi",
        # A `Shared` cache: AKS enables the Azure Files CSI driver and its class `azurefile-csi` on every
        # cluster (https://learn.microsoft.com/azure/aks/azure-files-csi); nothing to turn on. Its price
        # depends on the storage account's tier and transactions, which this program does not read.
        shared_cache=SharedStorage(
            storage_class="azurefile-csi",
            provides="nothing: AKS ships the Azure Files CSI driver and its class azurefile-csi",
            source="https://learn.microsoft.com/azure/aks/azure-files-csi",
        ),
        # AKS uses the cluster's name as its dnsPrefix, which holds 1-54 letters, digits and '-',
        # alphanumeric at both ends (AKS's naming restrictions,
        # https://github.com/MicrosoftDocs/azure-docs/issues/47952).
        naming=Naming(
            used_as="dnsPrefix",
            max_length=54,
            pools=PoolNaming(
                "AKS agent pool name",
                "AKS names are 1-12 lowercase letters and digits, so longer names are shortened",
                agent_pool_name,
            ),
        ),
        # AKS zones are the numbers of the location's availability zones (`--zones 1 2 3`,
        # https://learn.microsoft.com/azure/aks/availability-zones).
        zones=Zones(names=("1", "2", "3")),
        memory_reservation=Reservation(aks_reserved, "what AKS reserves"),
        capacity=CAPACITY,
        spot_taint=SpotTaint(
            "kubernetes.azure.com/scalesetpriority",
            "spot",
            "NoSchedule",
            # AKS taints and labels every node of a Spot pool with this; pods that do not tolerate it
            # are not scheduled there ("Add an Azure Spot node pool", section "Spot node pools").
            "https://learn.microsoft.com/azure/aks/spot-node-pool",
        ),
    ),
    key="aks",
    cluster_block=AksCluster,
    machine_block=AksMachine,
    machines=spot_priced(priced(machines.rows(), machines.PRICES), machines.SPOT_PRICES),
    price_region="eastus",
    control_plane_fee=ControlPlaneFee(
        SOURCE,
        Decimal("0"),
        "Free tier: the cluster sets no SKU tier, and Free is the default; cluster management is free",
        "https://learn.microsoft.com/dotnet/api/azure.resourcemanager.containerservice.models.managedclusterskutier",
    ),
    component="clouds.aks.component:AksCluster",
    component_token="modelplane:aks:AksCluster",
    resources=ResourceTypes(
        cluster="azure-native:containerservice:ManagedCluster",
        pool="azure-native:containerservice:AgentPool",
        inline_pools="agentPoolProfiles",
        spelling=PoolSpelling(labels="nodeLabels", taints="nodeTaints", taints_as_text=True),
    ),
    provider_package="azure-native",
    sdk="pulumi_azure_native",
    # Stack config the Azure Native provider documents for its credentials (config key -> provider
    # argument; azure-native installation-configuration: `azure-native:clientId`, `clientSecret`,
    # `tenantId`, `subscriptionId`, or ARM_CLIENT_ID, ARM_CLIENT_SECRET, ARM_TENANT_ID,
    # ARM_SUBSCRIPTION_ID, or the Azure CLI's login).
    credentials={
        "clientId": "client_id",
        "clientSecret": "client_secret",
        "tenantId": "tenant_id",
        "subscriptionId": "subscription_id",
    },
    mock_outputs={
        token: _named
        for token in (
            "azure-native:resources:ResourceGroup",
            "azure-native:network:VirtualNetwork",
            "azure-native:network:Subnet",
            "azure-native:containerservice:AgentPool",
            "azure-native:authorization:RoleAssignment",
        )
    }
    | {
        "azure-native:containerservice:ManagedCluster": _cluster,
        "azure-native:managedidentity:UserAssignedIdentity": _identity,
    },
    mock_invokes={"azure-native:containerservice:listManagedClusterUserCredentials": _user_credentials},
    keys=KEYS,
    examples={
        "location": "eastus",
        "kubernetesVersion": '"1.35"',
        "adopt": "{id: /subscriptions/<subscription id>/resourceGroups/ml/providers/Microsoft.ContainerService/"
        "managedClusters/inference-1}",
    },
    # azure-native imports a resource by its ARM resource ID: the registry's "Import" section for
    # ManagedCluster gives `pulumi import azure-native:containerservice:ManagedCluster <name>
    # /subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}/providers/Microsoft.ContainerService/managedClusters/{resourceName}`
    # (https://www.pulumi.com/registry/packages/azure-native/api-docs/containerservice/managedcluster/#import),
    # and AgentPool's the same ID with `/agentPools/{agentPoolName}` after it
    # (https://www.pulumi.com/registry/packages/azure-native/api-docs/containerservice/agentpool/#import);
    # these are the paths of the AKS REST API's Get
    # (https://learn.microsoft.com/rest/api/aks/managed-clusters/get, agent-pools/get).
    # A cluster name is letters, digits, '-' and '_' (the same page's `resourceName` pattern).
    adoption=ImportIds(
        cluster=re.compile(rf"^{_ARM_CLUSTER}$"),
        cluster_shape=(
            "/subscriptions/<subscription id>/resourceGroups/<resource group>/providers/"
            "Microsoft.ContainerService/managedClusters/<cluster name>"
        ),
        pool=re.compile(rf"^{_ARM_CLUSTER}/(?i:agentPools)/(?P<pool>[a-z0-9]+)$"),
        pool_shape="<the cluster's ID>/agentPools/<pool name>",
        listed_by="az aks list --query '[].id' and az aks nodepool list --cluster-name <cluster name> "
        "--resource-group <resource group> --query '[].id'",
    ),
)

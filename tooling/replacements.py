"""Which inputs of each resource type the program creates force `pulumi up` to replace it, with the source.

`modelplane plan --against` (`tooling.changes`) calls a changed resource a replace when a changed
input path is, or lies under, one of its type's forcing paths here; otherwise an update. What
decides it is each provider's own diff at its locked version (`uv.lock`):
- bridged providers (gcp, aws, civo, vultr, nebius, digitalocean, oci): the Terraform provider's schema, a field with
  `ForceNew: true` (SDKv2) or a `RequiresReplace()` plan modifier (plugin framework), which the
  bridge turns into a replace;
- azure-native: its generator's `forceNewMap` (pulumi/pulumi-azure-native
  provider/pkg/gen/replacement.go) and the path parameters of the resource's ARM ID;
- kubernetes: `.metadata.name` and `.metadata.namespace` of every object plus a per-kind list
  (pulumi/pulumi-kubernetes provider/pkg/provider/diff.go, `forceNew`), and `.name` and
  `.namespace` of a Helm release (provider/pkg/provider/helm_release.go, `Diff`).
The generated Python SDKs in `.venv` carry no `replaceOnChanges` for any of these types (none of
their resource classes sets it), so the schemas' replace markers are read from the providers.

Paths use the engine's spelling of the inputs (camelCase, as `resources[].inputs`), `[*]` for any
list index. Some changes neither update nor replace: the provider accepts them in its diff and
then it, or the cloud's API behind it, cannot carry them out (`refused`, `refused_smaller` for a
quantity that may grow and never shrink, and `refused_removed` for a list or map whose entries may
be added and never taken away); the plan reports those as errors, each with the route that works
(`refused_fix`).

A type missing here fails `tests/test_replacements.py`, which plans every committed stack: adding
a resource type means reading its provider and adding its row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Forcing:
    """A type's replace-forcing input paths, where they come from, and changes its provider cannot make."""

    paths: tuple[str, ...]
    source: str
    # Input paths whose change the provider's update, or the API it calls, rejects or silently drops,
    # and what it does.
    refused: tuple[str, ...] = ()
    refused_why: str = ""
    # Quantity paths (`20Gi`) whose decrease is refused; an increase is an ordinary update.
    refused_smaller: tuple[str, ...] = ()
    # List or map paths from which an entry of the old inputs may not go (its key, for a map); an
    # added entry is an ordinary update.
    refused_removed: tuple[str, ...] = ()
    # The route that works instead of a refused change.
    refused_fix: str = ""


GOOGLE = "hashicorp/terraform-provider-google-beta google-beta/services/"
AWS = "hashicorp/terraform-provider-aws internal/service/"
CIVO = "civo/terraform-provider-civo civo/"
VULTR = "vultr/terraform-provider-vultr vultr/"
NEBIUS = "nebius/terraform-provider-nebius generated/nebius/"
DIGITALOCEAN = "digitalocean/terraform-provider-digitalocean v2.99.1 digitalocean/"
# Oracle's provider marks every argument an update can change "(Updatable)" and says "Any change to a
# property that does not support update will force the destruction and recreation of the resource";
# the generated SDK carries those argument docs, so the unmarked top-level arguments are read there.
OCI = "pulumi-oci 5.5.0 SDK argument docs (oracle/terraform-provider-oci): the arguments not marked (Updatable), in "
AZURE = "pulumi/pulumi-azure-native provider/pkg/gen/replacement.go (forceNewMap) and the ARM ID's path parameters"
COMPONENT = "a component resource has no provider: the engine diffs its inputs and never replaces it"
# The route for a pool whose refused input changes: a pool of a new name is created beside the old one.
NEW_POOL_OR_REVERT = (
    "keep the old value, or give the pool a new name in the stack file so that `up` creates a new pool and "
    "deletes the old one"
)
PROVIDER = (
    "a provider's own configuration change is judged by its DiffConfig, which the offline plan does not run; "
    "its resources are shown by their own inputs"
)

_TABLE: dict[str, Forcing] = {
    # ---------------------------------------------------------------- GCP (pulumi-gcp 10.2.0)
    "gcp:container/nodePool:NodePool": Forcing(
        # node_config.machine_type, disk_size_gb, labels and taints update in place; the
        # accelerators, service account, scopes, metadata and shielded settings do not.
        (
            "name",
            "namePrefix",
            "project",
            "cluster",
            "location",
            "initialNodeCount",
            "maxPodsPerNode",
            "placementPolicy",
            "queuedProvisioning",
            "networkConfig.createPodRange",
            "networkConfig.podRange",
            "networkConfig.podIpv4CidrBlock",
            "nodeConfig.guestAccelerators",
            "nodeConfig.serviceAccount",
            "nodeConfig.oauthScopes",
            "nodeConfig.metadata",
            "nodeConfig.shieldedInstanceConfig",
            "nodeConfig.spot",
            "nodeConfig.preemptible",
            "nodeConfig.localSsdCount",
            "nodeConfig.minCpuPlatform",
            "nodeConfig.reservationAffinity",
            "nodeConfig.bootDiskKmsKey",
            "nodeConfig.sandboxConfig",
        ),
        GOOGLE + "container/resource_container_node_pool.go, node_config.go (schemaNodeConfig)",
    ),
    "gcp:container/cluster:Cluster": Forcing(
        (
            "name",
            "project",
            "location",
            "network",
            "subnetwork",
            "networkingMode",
            "initialNodeCount",
            "ipAllocationPolicy",
            "privateClusterConfig.masterIpv4CidrBlock",
            "privateClusterConfig.privateEndpointSubnetwork",
            "clusterIpv4Cidr",
            "datapathProvider",
            "defaultMaxPodsPerNode",
            "description",
            "enableAutopilot",
            "enableKubernetesAlpha",
            "enableTpu",
            "nodePools",
            "confidentialNodes",
        ),
        GOOGLE + "container/resource_container_cluster.go",
    ),
    "gcp:compute/network:Network": Forcing(
        ("name", "project", "autoCreateSubnetworks", "description", "internalIpv6Range", "networkProfile", "params"),
        GOOGLE + "compute/resource_compute_network.go",
    ),
    "gcp:compute/subnetwork:Subnetwork": Forcing(
        ("name", "project", "region", "network", "description", "params", "reservedInternalRange"),
        GOOGLE + "compute/resource_compute_subnetwork.go",
    ),
    "gcp:compute/router:Router": Forcing(
        ("name", "project", "region", "network", "encryptedInterconnectRouter", "params"),
        GOOGLE + "compute/resource_compute_router.go",
    ),
    "gcp:compute/routerNat:RouterNat": Forcing(
        ("name", "project", "region", "router", "endpointTypes", "initialNatIps", "type"),
        GOOGLE + "compute/resource_compute_router_nat.go",
    ),
    "gcp:serviceaccount/account:Account": Forcing(
        ("accountId", "project"), GOOGLE + "resourcemanager/resource_google_service_account.go"
    ),
    "gcp:projects/iAMMember:IAMMember": Forcing(
        ("project", "role", "member", "condition"),
        "hashicorp/terraform-provider-google-beta google-beta/tpgiamresource/resource_iam_member.go, "
        "google-beta/services/resourcemanager/iam_project.go",
    ),
    # ---------------------------------------------------------------- AWS (pulumi-aws 7.51.1)
    "aws:eks/nodeGroup:NodeGroup": Forcing(
        (
            "amiType",
            "capacityType",
            "clusterName",
            "diskSize",
            "instanceTypes",
            "launchTemplate.id",
            "launchTemplate.name",
            "nodeGroupName",
            "nodeGroupNamePrefix",
            "nodeRoleArn",
            "remoteAccess",
            "subnetIds",
        ),
        AWS + "eks/node_group.go",
    ),
    "aws:eks/cluster:Cluster": Forcing(
        (
            "name",
            "roleArn",
            "accessConfig.bootstrapClusterCreatorAdminPermissions",
            "bootstrapSelfManagedAddons",
            "kubernetesNetworkConfig.ipFamily",
            "kubernetesNetworkConfig.serviceIpv4Cidr",
            "outpostConfig",
            "remoteNetworkConfig",
        ),
        AWS + "eks/cluster.go",
    ),
    "aws:ec2/vpc:Vpc": Forcing(("cidrBlock", "ipv4IpamPoolId", "ipv4NetmaskLength"), AWS + "ec2/vpc_.go"),
    "aws:ec2/subnet:Subnet": Forcing(
        (
            "availabilityZone",
            "availabilityZoneId",
            "cidrBlock",
            "vpcId",
            "ipv4IpamPoolId",
            "ipv4NetmaskLength",
            "ipv6IpamPoolId",
            "ipv6Native",
            "ipv6NetmaskLength",
            "outpostArn",
        ),
        AWS + "ec2/vpc_subnet.go",
    ),
    "aws:ec2/natGateway:NatGateway": Forcing(
        ("allocationId", "connectivityType", "subnetId", "privateIp"), AWS + "ec2/vpc_nat_gateway.go"
    ),
    "aws:ec2/eip:Eip": Forcing(("domain", "address", "networkBorderGroup", "publicIpv4Pool"), AWS + "ec2/ec2_eip.go"),
    "aws:ec2/internetGateway:InternetGateway": Forcing(
        (), AWS + "ec2/vpc_internet_gateway.go (vpc_id attaches in place)"
    ),
    "aws:ec2/routeTable:RouteTable": Forcing(("vpcId",), AWS + "ec2/vpc_route_table.go"),
    "aws:ec2/routeTableAssociation:RouteTableAssociation": Forcing(
        ("subnetId", "gatewayId"), AWS + "ec2/vpc_route_table_association.go"
    ),
    "aws:ec2/securityGroup:SecurityGroup": Forcing(
        ("name", "namePrefix", "description", "vpcId"), AWS + "ec2/vpc_security_group.go"
    ),
    "aws:ec2/launchTemplate:LaunchTemplate": Forcing(
        ("name", "namePrefix"), AWS + "ec2/ec2_launch_template.go (other changes add a template version)"
    ),
    "aws:ec2/placementGroup:PlacementGroup": Forcing(
        ("name", "namePrefix", "strategy", "partitionCount", "spreadLevel"), AWS + "ec2/ec2_placement_group.go"
    ),
    "aws:eks/addon:Addon": Forcing(("addonName", "clusterName"), AWS + "eks/addon.go"),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": Forcing(
        ("clusterName", "namespace", "serviceAccount"), AWS + "eks/pod_identity_association.go"
    ),
    "aws:efs/fileSystem:FileSystem": Forcing(
        ("availabilityZoneName", "creationToken", "encrypted", "kmsKeyId", "performanceMode"),
        AWS + "efs/file_system.go (throughput mode and lifecycle update in place)",
    ),
    "aws:efs/mountTarget:MountTarget": Forcing(
        ("fileSystemId", "ipAddress", "subnetId"), AWS + "efs/mount_target.go (security groups update in place)"
    ),
    "aws:iam/role:Role": Forcing(("name", "namePrefix", "path"), AWS + "iam/role.go"),
    "aws:iam/policy:Policy": Forcing(("name", "namePrefix", "path", "description"), AWS + "iam/policy.go"),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": Forcing(
        ("role", "policyArn"), AWS + "iam/role_policy_attachment.go"
    ),
    # ---------------------------------------------------------------- Azure (pulumi-azure-native 3.29.0)
    "azure-native:containerservice:AgentPool": Forcing(
        ("resourceGroupName", "resourceName", "agentPoolName", "vmSize", "gpuInstanceProfile"),
        AZURE,
        # The provider sends these in its update and AKS refuses them: zones are set when a pool is
        # created (learn.microsoft.com/azure/aks/reliability-availability-zones-configure, "You can't
        # change the number of availability zones after you create a node pool ... create a new node
        # pool"), a pool's OS disk is not resized in place (Azure/AKS#4529, open), and a pool's Spot
        # priority, eviction policy and price ceiling are fixed at creation too (forceNewMap lists
        # none of them, but hashicorp/terraform-provider-azurerm's kubernetes_cluster_node_pool, on
        # the same AKS API, marks `priority`, `eviction_policy` and `spot_max_price` "Changing this
        # forces a new resource to be created"). The same resource marks `capacity_reservation_group_id`
        # so ("Changing this forces a new resource to be created"); whether azure-native's forceNewMap
        # lists it, or AKS now associates a running pool with a group, is not checked here.
        refused=(
            "availabilityZones",
            "osDiskSizeGB",
            "scaleSetPriority",
            "scaleSetEvictionPolicy",
            "spotMaxPrice",
            "capacityReservationGroupID",
        ),
        refused_why="AKS sets a pool's zones, OS disk size, Spot priority (eviction policy, max price) and capacity "
        "reservation group only when it creates the pool (learn.microsoft.com/azure/aks/"
        "reliability-availability-zones-configure; Azure/AKS#4529; terraform-provider-azurerm "
        "kubernetes_cluster_node_pool `priority`, `spot_max_price`, `capacity_reservation_group_id`)",
        refused_fix=NEW_POOL_OR_REVERT,
    ),
    "azure-native:containerservice:ManagedCluster": Forcing(
        (
            "resourceGroupName",
            "resourceName",
            "location",
            "dnsPrefix",
            "fqdnSubdomain",
            "diskEncryptionSetID",
            "linuxProfile",
            "windowsProfile",
            "networkProfile",
            "nodeResourceGroup",
        ),
        AZURE,
        # The inline System pool, as an AgentPool's (above): set when the cluster creates it.
        refused=("agentPoolProfiles[*].availabilityZones", "agentPoolProfiles[*].osDiskSizeGB"),
        refused_why="AKS sets the System pool's zones and OS disk size only when it creates the pool "
        "(learn.microsoft.com/azure/aks/reliability-availability-zones-configure; Azure/AKS#4529)",
        refused_fix="keep the old value; the System pool is created with the cluster, so a new value takes a "
        "cluster of a new name in the stack file (`up` creates it and deletes the old one)",
    ),
    # A cluster identity for capacity reservation groups (`clouds.aks.component`): the ARM IDs'
    # path parameters, `.../userAssignedIdentities/{resourceName}` and
    # `{scope}/providers/Microsoft.Authorization/roleAssignments/{roleAssignmentName}`.
    "azure-native:managedidentity:UserAssignedIdentity": Forcing(
        ("resourceGroupName", "resourceName", "location"), AZURE
    ),
    "azure-native:authorization:RoleAssignment": Forcing(("scope", "roleAssignmentName"), AZURE),
    "azure-native:network:VirtualNetwork": Forcing(("resourceGroupName", "virtualNetworkName", "location"), AZURE),
    "azure-native:network:Subnet": Forcing(("resourceGroupName", "virtualNetworkName", "subnetName"), AZURE),
    "azure-native:resources:ResourceGroup": Forcing(("resourceGroupName", "location"), AZURE),
    # ---------------------------------------------------------------- Civo (pulumi-civo 2.4.8)
    "civo:index/kubernetesNodePool:KubernetesNodePool": Forcing(
        (),
        CIVO + "kubernetes/kubernetes.go (nodePoolSchema: no ForceNew), resource_kubernetes_cluster_nodepool.go",
        refused=("size",),
        refused_why="the Civo provider's node pool update fails on a size change "
        "(`Size change ... for existing pool is not available at this moment`)",
        refused_fix=NEW_POOL_OR_REVERT,
    ),
    "civo:index/kubernetesCluster:KubernetesCluster": Forcing(
        (),
        CIVO + "kubernetes/resource_kubernetes_cluster.go (no ForceNew)",
        refused=("networkId", "pools.size"),
        refused_why="the Civo provider's cluster update fails on a network change, and its node pool update "
        "on a size change",
        refused_fix=NEW_POOL_OR_REVERT,
    ),
    "civo:index/network:Network": Forcing(("region",), CIVO + "network/resource_network.go"),
    "civo:index/firewall:Firewall": Forcing(
        ("networkId", "createDefaultRules"), CIVO + "firewall/resource_firewall.go"
    ),
    # ---------------------------------------------------------------- Vultr (ediri-vultr 2.27.1)
    "vultr:index/kubernetesNodePools:KubernetesNodePools": Forcing(
        ("clusterId",),
        VULTR + "vke.go (resourceVultrKubernetesNodePoolsV0), resource_vultr_kubernetes_nodepools.go",
        refused=("plan", "label"),
        # The update sends the whole `taints` list and `labels` map in one node-pool update
        # (resourceVultrKubernetesNodePoolsUpdate @ v2.27.1), and Vultr's API keeps what they leave
        # out: "Existing taints are not removed when adding or updating, but can be managed in the
        # separate taints endpoints" (the same of labels; Vultr API v2, the node-pool update's body).
        # The provider moved to those endpoints in v2.28.0 (#649), which no ediri-vultr release on
        # PyPI bridges yet (2.27.1 is the newest).
        refused_removed=("taints", "labels"),
        refused_why="the Vultr provider's node pool update sends neither the plan nor the label, and Vultr's "
        "API keeps a taint or label that an update leaves out, so `up` reports an update and the pool keeps "
        "its machines, taints and labels",
        refused_fix=NEW_POOL_OR_REVERT,
    ),
    "vultr:index/kubernetes:Kubernetes": Forcing(
        ("region", "vpcId", "haControlplanes", "enableFirewall"),
        VULTR + "vke.go (resourceVultrKubernetesV0/V1), resource_vultr_kubernetes.go",
        refused=("nodePools.plan", "nodePools.label"),
        refused_why="the Vultr provider's cluster update sends only the default pool's count, autoscaler, "
        "labels and taints",
        refused_fix=NEW_POOL_OR_REVERT,
    ),
    # ---------------------------------------------------------------- Nebius (pulumi-nebius 0.6.73)
    "nebius:index/mk8sV1NodeGroup:Mk8sV1NodeGroup": Forcing(
        # `template.preemptible` and `template.reservationPolicy` carry no RequiresReplace: an update.
        ("parentId", "template.nvlink.nvlInstanceGroupId"),
        NEBIUS + "mk8s/v1/node_group_service.tfgen.go (RequiresReplace)",
    ),
    "nebius:index/mk8sV1Cluster:Mk8sV1Cluster": Forcing(
        ("parentId", "controlPlane.subnetId", "kubeNetwork.serviceCidrs"),
        NEBIUS + "mk8s/v1/cluster_service.tfgen.go (RequiresReplace)",
    ),
    "nebius:index/computeV1GpuCluster:ComputeV1GpuCluster": Forcing(
        ("parentId", "infinibandFabric"), NEBIUS + "compute/v1/gpu_cluster_service.tfgen.go (RequiresReplace)"
    ),
    "nebius:index/vpcV1Network:VpcV1Network": Forcing(
        ("parentId",), NEBIUS + "vpc/v1/network_service.tfgen.go (RequiresReplace)"
    ),
    "nebius:index/vpcV1Subnet:VpcV1Subnet": Forcing(
        ("parentId",), NEBIUS + "vpc/v1/subnet_service.tfgen.go (RequiresReplace)"
    ),
    # ---------------------------------------------------------------- DigitalOcean (pulumi-digitalocean 4.84.1)
    # v2.99.1 is the first tag with `isolated_workers`, which the locked SDK declares.
    "digitalocean:index/kubernetesNodePool:KubernetesNodePool": Forcing(
        ("clusterId", "size", "gpuPartitionMode"),
        DIGITALOCEAN + "kubernetes/kubernetes.go (nodePoolSchema), resource_kubernetes_node_pool.go",
    ),
    "digitalocean:index/kubernetesCluster:KubernetesCluster": Forcing(
        # The inline system pool is `nodePoolSchema` too, so its size forces a new cluster, not a
        # new pool. A lower `version` also replaces (CustomizeDiff ForceNewIfChange); an upgrade
        # updates in place.
        (
            "region",
            "vpcUuid",
            "workerSubnetUuid",
            "clusterSubnet",
            "serviceSubnet",
            "isolatedWorkers",
            "nodePool.size",
            "nodePool.gpuPartitionMode",
        ),
        DIGITALOCEAN + "kubernetes/resource_kubernetes_cluster.go, kubernetes.go (nodePoolSchema)",
    ),
    "digitalocean:index/vpc:Vpc": Forcing(("region", "ipRange"), DIGITALOCEAN + "vpc/resource_vpc.go"),
    # ---------------------------------------------------------------- OCI (pulumi-oci 5.5.0)
    "oci:ContainerEngine/cluster:Cluster": Forcing(
        ("compartmentId", "vcnId", "clusterPodNetworkOptions", "endpointConfig", "kmsKeyId"),
        OCI + "pulumi_oci/containerengine/cluster.py",
    ),
    "oci:ContainerEngine/nodePool:NodePool": Forcing(
        ("clusterId", "compartmentId", "nodeImageId", "nodeImageName"), OCI + "pulumi_oci/containerengine/node_pool.py"
    ),
    "oci:ContainerEngine/addon:Addon": Forcing(
        ("addonName", "clusterId", "removeAddonResourcesOnDelete", "overrideExisting"),
        OCI + "pulumi_oci/containerengine/addon.py",
    ),
    "oci:Core/vcn:Vcn": Forcing(
        (
            "byoipv6cidrDetails",
            "cidrBlock",
            "dnsLabel",
            "ipv6privateCidrBlocks",
            "isIpv6Enabled",
            "isOracleGuaAllocationEnabled",
        ),
        OCI + "pulumi_oci/core/vcn.py",
    ),
    "oci:Core/subnet:Subnet": Forcing(
        (
            "vcnId",
            "availabilityDomain",
            "dnsLabel",
            "ipv4cidrBlocks",
            "prohibitInternetIngress",
            "prohibitPublicIpOnVnic",
        ),
        OCI + "pulumi_oci/core/subnet.py",
    ),
    "oci:Core/internetGateway:InternetGateway": Forcing(("vcnId",), OCI + "pulumi_oci/core/internet_gateway.py"),
    "oci:Core/natGateway:NatGateway": Forcing(("vcnId", "publicIpId"), OCI + "pulumi_oci/core/nat_gateway.py"),
    "oci:Core/serviceGateway:ServiceGateway": Forcing(("vcnId",), OCI + "pulumi_oci/core/service_gateway.py"),
    "oci:Core/routeTable:RouteTable": Forcing(("vcnId",), OCI + "pulumi_oci/core/route_table.py"),
    "oci:Core/securityList:SecurityList": Forcing(("vcnId",), OCI + "pulumi_oci/core/security_list.py"),
}

# Kubernetes (pulumi-kubernetes 4.34.2). Every object: its name and namespace; then the kinds the
# program creates that `forceNew` lists. Other kinds (Deployment apart from its selector,
# ResourceClaimTemplate, DeviceClass, the Gateway API objects) update in place.
KUBERNETES = "pulumi/pulumi-kubernetes provider/pkg/provider/diff.go (forceNew, metadataForceNewProperties)"
_METADATA = ("metadata.name", "metadata.namespace")
_LABEL_SELECTOR = ("spec.selector",)
_KUBERNETES_KINDS: Mapping[str, tuple[str, ...]] = {
    "kubernetes:apps/v1:Deployment": _LABEL_SELECTOR,
    "kubernetes:apps/v1:DaemonSet": _LABEL_SELECTOR,
    "kubernetes:apps/v1:StatefulSet": (
        *_LABEL_SELECTOR,
        "spec.podManagementPolicy",
        "spec.revisionHistoryLimit",
        "spec.serviceName",
        "spec.volumeClaimTemplates",
    ),
    "kubernetes:core/v1:PersistentVolumeClaim": (
        "spec.accessModes",
        "spec.selector",
        "spec.storageClassName",
        "spec.volumeName",
    ),
    "kubernetes:batch/v1:Job": ("spec.completions", "spec.parallelism", "spec.selector", "spec.template"),
    "kubernetes:storage.k8s.io/v1:StorageClass": ("parameters", "provisioner"),
    "kubernetes:core/v1:ResourceQuota": ("spec.scopes",),
    "kubernetes:core/v1:Service": ("spec.clusterIP",),
    "kubernetes:core/v1:Secret": ("type",),
}
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
# The API server refuses a smaller claim: a bound claim's spec is immutable but for
# `resources.requests` (the other fields the program sets replace: `forceNew` above); its storage request may
# only grow (kubernetes.io/docs/concepts/storage/persistent-volumes/#expanding-persistent-volumes-claims;
# KEP-284 leaves shrinking out; kubernetes/kubernetes pkg/apis/core/validation/validation.go,
# ValidatePersistentVolumeClaimUpdate). The one lower request it takes is a retreat from an expansion
# that failed, down to no less than the volume's capacity (RecoverVolumeExpansionFailure), which a
# plan cannot see. Growing needs a StorageClass with `allowVolumeExpansion`, the cluster's choice.
_PVC_SHRINK = "spec.resources.requests.storage"
PVC_SHRINK_WHY = (
    "the Kubernetes API server refuses a smaller storage request on an existing claim: a volume only grows "
    "(kubernetes.io/docs/concepts/storage/persistent-volumes/#expanding-persistent-volumes-claims)"
)
NEW_CACHE_OR_REVERT = (
    "keep the cache's `size` at the old value or more; for a smaller cache, give the deployment a new name in the "
    "stack file, so that `up` creates its cache at the new size and deletes the old one (its downloaded weights "
    "with it)"
)


def forcing(type_token: str) -> Forcing | None:
    """The forcing paths of `type_token`, or None for a type nobody has read the provider for."""
    if type_token in _TABLE:
        return _TABLE[type_token]
    if type_token.startswith("modelplane:"):
        return Forcing((), COMPONENT)
    if type_token.startswith("pulumi:providers:"):
        return Forcing((), PROVIDER)
    if type_token == HELM_RELEASE:
        return Forcing(("name", "namespace"), "pulumi/pulumi-kubernetes provider/pkg/provider/helm_release.go (Diff)")
    if type_token == "kubernetes:yaml/v2:ConfigFile":
        # A component of the kubernetes provider: its objects are registered as its children.
        return Forcing((), COMPONENT)
    if type_token == PVC:
        return Forcing(
            _METADATA + _KUBERNETES_KINDS[PVC],
            KUBERNETES,
            refused_why=PVC_SHRINK_WHY,
            refused_smaller=(_PVC_SHRINK,),
            refused_fix=NEW_CACHE_OR_REVERT,
        )
    if type_token.startswith("kubernetes:"):
        return Forcing(_METADATA + _KUBERNETES_KINDS.get(type_token, ()), KUBERNETES)
    return None

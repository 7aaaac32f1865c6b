"""The engine type tokens the policies look at, in one place.

Provider tokens are those the installed SDKs register (`pulumi.type_token.get_type_token` where the
SDK carries it; `ediri_vultr` spells them in its resource constructors); component tokens are the
program's own (`components/`).
"""

from __future__ import annotations

from collections.abc import Mapping

from infra import vocabulary as vocab

RELEASE = "kubernetes:helm.sh/v3:Release"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
RESOURCE_CLAIM_TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
SERVING_STACK = "modelplane:stack:ServingStack"

# Standalone node-pool resources, and the cloud (a `source`) whose spelling each uses.
NODE_POOLS: Mapping[str, str] = {
    "gcp:container/nodePool:NodePool": vocab.GKE,
    "aws:eks/nodeGroup:NodeGroup": vocab.EKS,
    "azure-native:containerservice:AgentPool": vocab.AKS,
    "civo:index/kubernetesNodePool:KubernetesNodePool": vocab.CIVO,
    "vultr:index/kubernetesNodePools:KubernetesNodePools": vocab.VULTR,
}

# Cloud clusters, and the property holding the pools some clouds declare inline (the system pool).
CLUSTERS: Mapping[str, str] = {
    "gcp:container/cluster:Cluster": vocab.GKE,
    "aws:eks/cluster:Cluster": vocab.EKS,
    "azure-native:containerservice:ManagedCluster": vocab.AKS,
    "civo:index/kubernetesCluster:KubernetesCluster": vocab.CIVO,
    "vultr:index/kubernetes:Kubernetes": vocab.VULTR,
}
INLINE_POOLS: Mapping[str, str] = {
    "azure-native:containerservice:ManagedCluster": "agentPoolProfiles",
    "civo:index/kubernetesCluster:KubernetesCluster": "pools",
    "vultr:index/kubernetes:Kubernetes": "nodePools",
}

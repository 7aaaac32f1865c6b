"""Vultr Kubernetes Engine (VKE) clusters: the cluster with its system pool, one node pool per pool.

Everything is created through the run's one `ediri_vultr.Provider`. Vultr's API key comes from
the stack's `vultr:apiKey` (passed on, as a secret, by `stack_credentials`) or from the
`VULTR_API_KEY` environment variable, which the provider reads itself. VKE creates a VPC for the cluster
when none is given (`vpc_id`), so no separate network resource exists here to protect.

`ediri_vultr.Kubernetes` takes exactly one inline pool: the system pool. Every declared pool is its
own `ediri_vultr.KubernetesNodePools`, autoscaled by VKE between `minNodeCount` and
`maxNodeCount` when both are set. Labels and taints are the ones `infra.facts` derived; this
module only spells them as VKE wants (taints as `{key, value, effect}`, effect `NoSchedule`).
"""

from __future__ import annotations

import base64

import ediri_vultr as vultr
import pulumi

from clouds.vultr import CLOUD as VULTR
from clouds.vultr.config import VultrCluster as VultrClusterBlock
from components.base import ClusterArgs, ClusterComponent, own_block, stack_credentials
from infra.facts import SYSTEM_POOL, PoolFacts


def node_pool_taints(pool: PoolFacts) -> list[vultr.KubernetesNodePoolsTaintArgs]:
    return [vultr.KubernetesNodePoolsTaintArgs(key=t.key, value=t.value, effect=t.effect) for t in pool.taints]


def decode_kubeconfig(encoded: str) -> str:
    """VKE returns the kubeconfig base64-encoded; the Kubernetes provider wants the YAML itself."""
    return base64.b64decode(encoded).decode()


class VultrCluster(ClusterComponent):
    CLOUD = VULTR

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        block = own_block(args.facts, VultrClusterBlock)
        super().__init__(name, args, opts)
        self.vultr_provider = args.providers.shared(
            ("vultr",),
            lambda shared: vultr.Provider(shared, api_key=stack_credentials(VULTR).get("api_key")),
        )
        self._cluster(block.region, block.kubernetes_version)
        self._pools()
        self.connect(self.cluster.kube_config.apply(decode_kubeconfig))
        self.finish()

    def _on_vultr(self) -> pulumi.ResourceOptions:
        return self.child(provider=self.vultr_provider)

    def _cluster(self, region: str, kubernetes_version: str) -> None:
        """The VKE cluster with the system pool inline (VKE creates the cluster's VPC)."""
        system = self.facts.pool(SYSTEM_POOL)
        self.cluster = vultr.Kubernetes(
            f"{self._name}-cluster",
            label=self._name,
            region=region,
            version=kubernetes_version,
            node_pools=vultr.KubernetesNodePoolsArgs(
                label=system.name,
                plan=str(system.machine),
                node_quantity=system.node_count,
                auto_scaler=system.autoscaled,
                min_nodes=system.min_node_count,
                max_nodes=system.max_node_count,
                labels=dict(system.labels),
            ),
            opts=self._on_vultr(),
        )

    def _pools(self) -> None:
        """One node pool per declared pool, autoscaled by VKE when both bounds are set."""
        self.node_pools = [
            vultr.KubernetesNodePools(
                f"{self._name}-{pool.name}",
                cluster_id=self.cluster.id,
                label=pool.name,
                plan=str(pool.machine),
                node_quantity=pool.node_count,
                auto_scaler=pool.autoscaled,
                min_nodes=pool.min_node_count if pool.autoscaled else None,
                max_nodes=pool.max_node_count if pool.autoscaled else None,
                labels=dict(pool.labels),
                taints=node_pool_taints(pool),
                opts=self._on_vultr(),
            )
            for pool in self.facts.user_pools
        ]

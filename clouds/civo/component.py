"""Civo Kubernetes (k3s) clusters: network, firewall, cluster with its system pool, one node pool per pool.

Everything is created through one `civo.Provider` pinned to the cluster's region; the API token
comes from the stack's `civo:token` (passed on by `stack_credentials`) or `CIVO_TOKEN`.

Civo node pools have no autoscaling bounds in this provider: every pool, the system pool
included, is created with `nodeCount` nodes, and config loading rejects `minNodeCount` /
`maxNodeCount` on Civo (the Civo profile says nothing scales its pools).

Labels and taints are the ones `infra.facts` derived; this module only spells them as the Civo API
wants (taints as `{key, value, effect}` with Kubernetes effect names).
"""

from __future__ import annotations

import pulumi
import pulumi_civo as civo

from clouds.civo import CLOUD as CIVO
from clouds.civo.config import CivoCluster as CivoClusterBlock
from components.base import ClusterArgs, ClusterComponent, own_block, stack_credentials
from infra.facts import SYSTEM_POOL, PoolFacts

# Cilium rather than k3s's default flannel, as modelplane's own Civo clusters run it.
CNI = "cilium"

# Civo installs Traefik on every new cluster; the serving stack's Envoy Gateway owns ports 80 and
# 443, so the default ingress controller is removed rather than left to compete for them.
APPLICATIONS = "-traefik2-nodeport"

ANYWHERE = ["0.0.0.0/0"]


def firewall_ingress() -> list[civo.FirewallIngressRuleArgs]:
    """What reaches the nodes: the Kubernetes API and the gateway's HTTP(S), nothing else.

    `create_default_rules` would open every port to the internet. The cluster needs only 6443
    (the API server, used by `pulumi up` itself through the Kubernetes provider) and 80/443 (the
    Envoy Gateway listeners that serve models); every other port stays closed to the internet.
    """
    return [
        civo.FirewallIngressRuleArgs(label=label, protocol="tcp", port_range=port, cidrs=ANYWHERE, action="allow")
        for label, port in (("kubernetes-api", "6443"), ("http", "80"), ("https", "443"))
    ]


def firewall_egress() -> list[civo.FirewallEgressRuleArgs]:
    """Everything out: nodes pull images, charts and drivers from the internet."""
    return [
        civo.FirewallEgressRuleArgs(
            label="all-tcp", protocol="tcp", port_range="1-65535", cidrs=ANYWHERE, action="allow"
        ),
        civo.FirewallEgressRuleArgs(
            label="all-udp", protocol="udp", port_range="1-65535", cidrs=ANYWHERE, action="allow"
        ),
        civo.FirewallEgressRuleArgs(label="all-icmp", protocol="icmp", cidrs=ANYWHERE, action="allow"),
    ]


def node_pool_taints(pool: PoolFacts) -> list[civo.KubernetesNodePoolTaintArgs]:
    return [civo.KubernetesNodePoolTaintArgs(key=t.key, value=t.value, effect=t.effect) for t in pool.taints]


class CivoCluster(ClusterComponent):
    CLOUD = CIVO

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        block = own_block(args.facts, CivoClusterBlock)
        super().__init__(name, args, opts)
        self.region = block.region
        self.civo_provider = args.providers.shared(
            ("civo", block.region),
            lambda shared: civo.Provider(shared, civo.ProviderArgs(region=block.region, **stack_credentials(CIVO))),
        )
        self._network()
        self._cluster(block.kubernetes_version)
        self._pools()
        self.connect(self.cluster.kubeconfig)
        self.finish()

    def _on_civo(self) -> pulumi.ResourceOptions:
        return self.child(provider=self.civo_provider)

    def _network(self) -> None:
        """The cluster's private network and its firewall."""
        name = self._name
        self.network = civo.Network(f"{name}-network", label=name, region=self.region, opts=self._on_civo())
        self.firewall = civo.Firewall(
            f"{name}-firewall",
            name=name,
            region=self.region,
            network_id=self.network.id,
            create_default_rules=False,
            ingress_rules=firewall_ingress(),
            egress_rules=firewall_egress(),
            opts=self._on_civo(),
        )

    def _cluster(self, kubernetes_version: str) -> None:
        """The k3s cluster with the system pool inline."""
        name, system = self._name, self.facts.pool(SYSTEM_POOL)
        self.cluster = civo.KubernetesCluster(
            f"{name}-cluster",
            name=name,
            region=self.region,
            network_id=self.network.id,
            firewall_id=self.firewall.id,
            kubernetes_version=kubernetes_version,
            cni=CNI,
            applications=APPLICATIONS,
            pools=civo.KubernetesClusterPoolsArgs(
                label=system.name,
                size=str(system.machine),
                node_count=system.node_count,
                labels=dict(system.labels),
            ),
            # Without it the provider leaves `kubeconfig` empty in state.
            write_kubeconfig=True,
            opts=self._on_civo(),
        )

    def _pools(self) -> None:
        """One node pool per declared pool."""
        self.node_pools = [
            civo.KubernetesNodePool(
                f"{self._name}-{pool.name}",
                cluster_id=self.cluster.id,
                label=pool.name,
                size=str(pool.machine),
                node_count=pool.node_count,
                labels=dict(pool.labels),
                taints=node_pool_taints(pool),
                # No public address per node: traffic enters through the gateway's load balancer.
                public_ip_node_pool=False,
                opts=self._on_civo(),
            )
            for pool in self.facts.user_pools
        ]

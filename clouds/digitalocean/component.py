"""DigitalOcean Kubernetes (DOKS) clusters: VPC, cluster with its system pool, one node pool per pool.

Everything is created through the run's one `pulumi_digitalocean.Provider` (a DigitalOcean
account is not split by region; each resource names its region). Its API token comes from the
stack's `digitalocean:token` (passed on, as a secret, by `stack_credentials`); left unset, the
provider reads its environment as its documentation describes.

What this module decides (and nothing more), each value with its source (PULUMI_DO is explained in
`clouds/digitalocean/__init__.py`):
- the network: a VPC of its own in the cluster's region, with DigitalOcean choosing its range;
- the cluster: the highly available control plane, surge upgrades, the system pool inline (DOKS
  requires one, PULUMI_DO `node_pool` "A block representing the cluster's default node pool"),
  and DOKS's own GPU device plugins off (the profile says why);
- node pools: one per declared pool, fixed at `nodeCount` or autoscaled by DOKS between
  `minNodeCount` and `maxNodeCount`.

Labels, taints, roles and machines come from `infra.facts`; this module only spells them as the
DOKS API wants (taints as `{key, value, effect}` with Kubernetes effect names).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_digitalocean as do

from clouds.digitalocean import CLOUD as DIGITALOCEAN
from clouds.digitalocean.config import DigitalOceanCluster as DigitalOceanClusterBlock
from components.base import ClusterArgs, ClusterComponent, exec_kubeconfig, own_block, stack_credentials
from infra.facts import SYSTEM_POOL, PoolFacts

# doctl mints the cluster's short-lived credentials, as the kubeconfigs `doctl kubernetes cluster
# kubeconfig save` writes do (digitalocean/doctl commands/kubernetes.go, `exec-credential`).
TOKEN_COMMAND = "doctl"
DOCTL_HINT = "Install doctl and sign in (doctl auth init) by following https://docs.digitalocean.com/reference/doctl/how-to/install/"


def token_args(cluster_id: str) -> tuple[str, ...]:
    return ("kubernetes", "cluster", "kubeconfig", "exec-credential", "--version=v1beta1", cluster_id)


def pool_taints(pool: PoolFacts, args: Any) -> list[Any]:
    """The pool's taints in the DOKS spelling (`args` is the SDK's taint type for the pool)."""
    return [args(key=t.key, value=t.value, effect=t.effect) for t in pool.taints]


def scaling(pool: PoolFacts) -> dict[str, Any]:
    """`node_count`, or DOKS's autoscaler bounds; an autoscaled pool starts at `minNodeCount`."""
    if pool.autoscaled:
        return {"auto_scale": True, "min_nodes": pool.min_node_count, "max_nodes": pool.max_node_count}
    return {"node_count": pool.node_count}


class DigitalOceanCluster(ClusterComponent):
    CLOUD = DIGITALOCEAN

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        block = own_block(args.facts, DigitalOceanClusterBlock)
        super().__init__(name, args, opts)
        self.region = block.region
        self.do_provider = args.providers.shared(
            ("digitalocean",),
            lambda shared: do.Provider(shared, token=stack_credentials(DIGITALOCEAN).get("token")),
        )
        self._network()
        self._cluster(block.kubernetes_version)
        self._pools()
        self.connect(self._kubeconfig())
        self.finish()

    def _on_do(self, **extra: Any) -> pulumi.ResourceOptions:
        return self.child(provider=self.do_provider, **extra)

    def _network(self) -> None:
        """The cluster's own VPC in its region; DigitalOcean picks a free private range."""
        self.vpc = do.Vpc(f"{self._name}-vpc", name=self._name, region=self.region, opts=self._on_do())

    def _cluster(self, kubernetes_version: str) -> None:
        """The DOKS cluster: HA control plane, the system pool inline, DOKS's GPU device plugins off."""
        system = self.facts.pool(SYSTEM_POOL)
        self.cluster = do.KubernetesCluster(
            f"{self._name}-cluster",
            name=self._name,
            region=self.region,
            version=kubernetes_version,
            vpc_uuid=self.vpc.id,
            # "Enable/disable the high availability control plane for a cluster" (PULUMI_DO `ha`):
            # a single control plane node takes the API server down on every upgrade.
            ha=True,
            # Surge upgrades bring up new nodes before draining old ones; the provider's default
            # (terraform-provider-digitalocean resource_kubernetes_cluster.go, `surge_upgrade`,
            # Default: true), written out so a default change upstream does not change our upgrades.
            surge_upgrade=True,
            node_pool=do.KubernetesClusterNodePoolArgs(
                name=system.name,
                size=str(system.machine),
                labels=dict(system.labels),
                taints=pool_taints(system, do.KubernetesClusterNodePoolTaintArgs),
                **scaling(system),
            ),
            # Left unset, DOKS installs each vendor's device plugin on its GPU nodes (PULUMI_DO
            # `nvidia_gpu_device_plugin`, `amd_gpu_device_plugin`), and a device plugin beside the
            # stack's DRA driver advertises the same GPUs twice. Off on every cluster: a GPU pool
            # added later must not bring one.
            nvidia_gpu_device_plugin=do.KubernetesClusterNvidiaGpuDevicePluginArgs(enabled=False),
            amd_gpu_device_plugin=do.KubernetesClusterAmdGpuDevicePluginArgs(enabled=False),
            opts=self._on_do(),
        )

    def _pools(self) -> None:
        """One node pool per declared pool (the system pool is the cluster's own)."""
        self.node_pools = [
            do.KubernetesNodePool(
                f"{self._name}-{pool.name}",
                cluster_id=self.cluster.id,
                name=pool.name,
                size=str(pool.machine),
                labels=dict(pool.labels),
                taints=pool_taints(pool, do.KubernetesNodePoolTaintArgs),
                **scaling(pool),
                # Pool names are unique within a cluster: a replacement deletes the old pool first.
                opts=self._on_do(delete_before_replace=True),
            )
            for pool in self.facts.user_pools
        ]

    def _kubeconfig(self) -> pulumi.Output[str]:
        # The kubeconfig waits for the node pools (their ids), so nothing installed through the
        # cluster's Kubernetes provider starts before there are nodes to run it.
        ca = self.cluster.kube_configs.apply(lambda configs: configs[0].cluster_ca_certificate if configs else None)
        name = self._name
        return pulumi.Output.all(self.cluster.endpoint, ca, self.cluster.id, *[p.id for p in self.node_pools]).apply(
            lambda a: exec_kubeconfig(
                f"do-{name}", str(a[0]), str(a[1]), TOKEN_COMMAND, token_args(str(a[2])), DOCTL_HINT
            )
        )

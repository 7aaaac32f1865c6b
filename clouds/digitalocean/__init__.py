"""DigitalOcean: DOKS clusters in their own VPC, with AMD Instinct and NVIDIA GPU node pools.

The record the registry lists (`clouds/__init__.py`); the component is `clouds.digitalocean.component`.

Sources named below:
- PULUMI_DO: the pulumi-digitalocean 4.84.1 SDK, generated from DigitalOcean's Terraform
  provider; its argument docs are the provider's (`kubernetes_cluster.py`, `kubernetes_node_pool.py`).
- DO_OPENAPI: digitalocean/openapi, `specification/resources/kubernetes/models/` (commit 5d99aef,
  "add docs for new doks cluster options": the AMD GPU device plugin "is enabled by default for
  clusters with an AMD GPU node pool").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from clouds.digitalocean import machines
from clouds.digitalocean.config import KEYS, DigitalOceanCluster, DigitalOceanMachine
from clouds.mock import FAKE_CA
from clouds.spec import Cloud, ResourceTypes
from infra import vocabulary as vocab
from infra.machines import ControlPlaneFee, priced
from infra.profiles import Capacities, CloudProfile, ScaleFromZero, Scaling, VersionForm

SOURCE = "DigitalOcean"
CLUSTER = "digitalocean:index/kubernetesCluster:KubernetesCluster"
NODE_POOL = "digitalocean:index/kubernetesNodePool:KubernetesNodePool"


def _cluster_outputs(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    # What the component reads back: the API server's URL and its CA (base64), PULUMI_DO
    # `KubernetesCluster.endpoint` and `kube_configs[0].cluster_ca_certificate`.
    return {
        "endpoint": f"https://{name}.k8s.ondigitalocean.invalid",
        "kubeConfigs": [{"clusterCaCertificate": FAKE_CA}],
    }


# DigitalOcean sells DOKS nodes one way: a pool takes a Droplet size and a count, and no capacity type.
CAPACITY = Capacities(
    lacks="a DOKS node pool takes a Droplet size, a count, autoscaling bounds, labels, taints and tags, and no "
    "spot, reservation or capacity block "
    "(https://docs.digitalocean.com/reference/doctl/reference/kubernetes/cluster/node-pool/create/; "
    "pulumi-digitalocean 4.84.1)",
)


CLOUD = Cloud(
    profile=CloudProfile(
        name=SOURCE,
        provisioned=True,
        # DOKS's Cluster Autoscaler takes a minimum of 0 ("How to Enable Cluster Autoscaler for a
        # DigitalOcean Kubernetes Cluster", https://docs.digitalocean.com/products/kubernetes/how-to/autoscale/,
        # "Scaling to Zero"), but says nothing of DRA; the autoscaler's DRA support leaves an empty
        # pool's ResourceSlices to each cloud provider (kubernetes/autoscaler#7799, open).
        # Unverified, so treated as cannot.
        scaling=Scaling(
            gpu_from_zero=ScaleFromZero(
                can=False,
                says=(
                    "DOKS's cluster autoscaler takes minNodeCount 0 but is not documented to scale a DRA GPU pool up "
                    "from zero nodes (unverified: docs.digitalocean.com/products/kubernetes/how-to/autoscale says "
                    "nothing of DRA, and kubernetes/autoscaler#7799 leaves an empty pool's ResourceSlices to each "
                    "provider)"
                ),
            )
        ),
        # DOKS sells GPU node pools of both vendors (clouds/digitalocean/machines.py).
        gpu_vendors=(vocab.NVIDIA, vocab.AMD),
        system_machine="s-4vcpu-8gb",
        # What DOKS puts on GPU nodes, and what the stack leaves out. DOKS GPU worker nodes run
        # DigitalOcean's GPU node image with the vendor's driver loaded: its managed DRA drivers
        # (PULUMI_DO `nvidia_gpu_dra_driver`, `amd_gpu_dra_driver`) bring no driver of their own and
        # run on the image's. So the NVIDIA driver sits at the default root (`nvidia.driver_root`
        # `/`), the stack's GPU Operator installs neither driver nor toolkit (as on EKS), and the AMD
        # operator's driver management stays off (it uses the loaded amdgpu driver).
        # DOKS also installs a device plugin per vendor on its own: "If not specified, the component
        # will be enabled by default for clusters with NVIDIA GPU nodes" (PULUMI_DO
        # `nvidia_gpu_device_plugin`), likewise `amd_gpu_device_plugin` (DO_OPENAPI), each
        # "mutually exclusive with" DOKS's DRA driver for that vendor. The cluster component turns
        # both device plugins off and leaves DOKS's DRA drivers and AMD metrics exporter unset, so
        # the stack's DRA drivers alone advertise the GPUs, and its AMD operator (DRA on, device
        # plugin off) and dcgm-exporter serve the telemetry.
        # Pools scale: DOKS node pools autoscale between `min_nodes` and `max_nodes` with
        # `auto_scale` (PULUMI_DO `KubernetesNodePool`).
        # The model cache uses the cluster's default StorageClass (`cache_storage_class` ""):
        # DOKS clusters come with DigitalOcean's block storage CSI driver (digitalocean/csi-digitalocean,
        # `do-block-storage` is the default class). No `shared_cache`: that class is ReadWriteOnce
        # (https://docs.digitalocean.com/products/kubernetes/how-to/add-volumes/), and DigitalOcean's
        # Network File Storage has no class a DOKS cluster gets, so a `Shared` cache is refused.
        # PULUMI_DO `version`: the slug `doctl kubernetes options versions` lists, `1.34.1-do.0`.
        version=VersionForm(
            re.compile(r"^\d\.\d\d\.\d+-do\.\d+$"),
            "`<major>.<minor>.<patch>-do.<n>` (`doctl kubernetes options versions`)",
            '"1.34.1-do.0"',
        ),
        # A DigitalOcean region is one datacenter (`nyc2`, `atl1`): it has no zones to pick.
        capacity=CAPACITY,
    ),
    key="digitalocean",
    cluster_block=DigitalOceanCluster,
    machine_block=DigitalOceanMachine,
    machines=priced(machines.rows(), machines.PRICES, machines.UNPRICED),
    price_region="atl1",
    control_plane_fee=ControlPlaneFee(
        SOURCE,
        None,
        "no price for the highly available control plane could be read",
        "https://docs.digitalocean.com/products/kubernetes/details/pricing/",
    ),
    component="clouds.digitalocean.component:DigitalOceanCluster",
    component_token="modelplane:digitalocean:DigitalOceanCluster",
    resources=ResourceTypes(cluster=CLUSTER, pool=NODE_POOL, inline_pools="nodePool"),
    provider_package="digitalocean",
    sdk="pulumi_digitalocean",
    # The provider's API token (PULUMI_DO `Provider(token=...)`, "The token key for API
    # operations"; stack config `digitalocean:token`, pulumi_digitalocean/config/vars.py).
    credentials={"token": "token"},
    mock_outputs={CLUSTER: _cluster_outputs},
    keys=KEYS,
    examples={"region": "atl1", "kubernetesVersion": '"1.34.1-do.0"'},
)

"""Civo: k3s clusters with a firewall, a system pool and one fixed-size node pool per pool.

The record the registry lists (`clouds/__init__.py`); the component is `clouds.civo.component`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clouds.civo import machines
from clouds.civo.config import KEYS, CivoCluster, CivoMachine
from clouds.mock import fake_kubeconfig
from clouds.spec import Cloud, ResourceTypes
from infra import vocabulary as vocab
from infra.machines import ControlPlaneFee, priced
from infra.profiles import (
    DRA_KUBELET_PLUGIN_LABEL,
    OPERATOR_DRIVER_ROOT,
    Capacities,
    CloudProfile,
    NvidiaStack,
    ScaleFromZero,
    Scaling,
)

SOURCE = "Civo"


def _cluster_outputs(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return {"kubeconfig": fake_kubeconfig(name), "apiEndpoint": f"https://{name}.civo.invalid"}


# Civo sells Kubernetes nodes one way: a pool takes a size and a count, and no capacity type.
CAPACITY = Capacities(
    lacks="a Civo node pool takes a size, a count, labels and taints, and no spot, reservation or capacity block "
    "(https://www.pulumi.com/registry/packages/civo/api-docs/kubernetesnodepool/; pulumi-civo 2.4.8)",
)


CLOUD = Cloud(
    profile=CloudProfile(
        name=SOURCE,
        provisioned=True,
        # Civo pools have a fixed node count: pulumi-civo's KubernetesNodePool has no scaling
        # bounds and the stack installs no autoscaler; nothing scales a pool, from zero or otherwise.
        scaling=Scaling(
            autoscaler=False,
            gpu_from_zero=ScaleFromZero(
                can=False,
                says=("Civo pools have a fixed node count; the program installs no autoscaler on Civo"),
            ),
        ),
        gpu_vendors=(vocab.NVIDIA,),
        system_machine="g4p.kube.small",
        # Civo's GPU image has the toolkit but no driver; Civo's guide installs the driver
        # with the operator (https://www.civo.com/docs/kubernetes/advanced/gpu-config).
        nvidia=NvidiaStack(
            driver_root=OPERATOR_DRIVER_ROOT,
            # 580.173.02 is the version pinned for Civo's open kernel modules
            # (https://www.civo.com/docs/kubernetes/advanced/gpu-config). DRA with the operator needs a
            # driver >= 580 (NVIDIA GPU Operator docs, "NVIDIA DRA Driver for GPUs").
            driver_version="580.173.02",
            driver_eviction_label=DRA_KUBELET_PLUGIN_LABEL,
            pool_labels={DRA_KUBELET_PLUGIN_LABEL: "true"},
        ),
        # https://www.civo.com/docs/kubernetes/kubernetes-volumes: civo-volume is the default class
        # (WaitForFirstConsumer).
        cache_storage_class="civo-volume",
        # No `shared_cache`: civo-volume is block storage, ReadWriteOnce, the only class a Civo cluster
        # has (https://www.civo.com/docs/kubernetes/kubernetes-volumes), so a `Shared` cache is refused.
        # Civo places a cluster's nodes in its region; it has no zones to pick.
        capacity=CAPACITY,
    ),
    key="civo",
    cluster_block=CivoCluster,
    machine_block=CivoMachine,
    machines=priced(machines.rows(), {}, machines.UNPRICED),
    price_region="LON1",
    control_plane_fee=ControlPlaneFee(
        SOURCE, None, "no control plane price could be read", "https://www.civo.com/pricing"
    ),
    component="clouds.civo.component:CivoCluster",
    component_token="modelplane:civo:CivoCluster",
    resources=ResourceTypes(
        cluster="civo:index/kubernetesCluster:KubernetesCluster",
        pool="civo:index/kubernetesNodePool:KubernetesNodePool",
        inline_pools="pools",
    ),
    provider_package="civo",
    sdk="pulumi_civo",
    # Stack config the Civo provider documents for its API token (`civo:token`, or CIVO_TOKEN).
    credentials={"token": "token"},
    mock_outputs={"civo:index/kubernetesCluster:KubernetesCluster": _cluster_outputs},
    keys=KEYS,
    examples={"region": "LON1", "kubernetesVersion": '"1.34.1-k3s1"'},
)

"""Vultr: VKE clusters with a system pool and one node pool per pool; VKE runs its own GPU Operator.

The record the registry lists (`clouds/__init__.py`); the component is `clouds.vultr.component`.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any

from clouds.mock import fake_kubeconfig
from clouds.spec import Cloud, ResourceTypes
from clouds.vultr import machines
from clouds.vultr.config import KEYS, VultrCluster, VultrMachine
from infra import vocabulary as vocab
from infra.machines import ControlPlaneFee, priced
from infra.profiles import Capacities, CloudProfile, NvidiaStack, ScaleFromZero, Scaling, VersionForm

SOURCE = "Vultr"


def _cluster_outputs(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "kubeConfig": base64.b64encode(fake_kubeconfig(name).encode()).decode(),
        "endpoint": f"{name}.vultr.invalid",
    }


# Vultr sells VKE nodes one way: a pool takes a plan and a quantity, and no capacity type.
CAPACITY = Capacities(
    lacks="a VKE node pool takes a plan, a quantity, autoscaling bounds, labels and taints, and no spot, "
    "reservation or capacity block (https://docs.vultr.com/reference/terraform/resources/kubernetes_node_pools; "
    "ediri-vultr 2.27.1)",
)


CLOUD = Cloud(
    profile=CloudProfile(
        name=SOURCE,
        provisioned=True,
        # VKE's autoscaler is the Cluster Autoscaler; no Vultr document read says it scales a DRA
        # GPU pool up from zero, and its DRA support leaves an empty pool's ResourceSlices to each
        # cloud provider (kubernetes/autoscaler#7799, open). Unverified, so treated as cannot.
        scaling=Scaling(
            gpu_from_zero=ScaleFromZero(
                can=False,
                says=(
                    "VKE's cluster autoscaler is not documented to scale a DRA GPU pool up from zero nodes "
                    "(unverified: no Vultr document says so, and kubernetes/autoscaler#7799 leaves an empty pool's "
                    "ResourceSlices to each provider)"
                ),
            )
        ),
        gpu_vendors=(vocab.NVIDIA,),
        system_machine="vc2-6c-16gb",
        nvidia=NvidiaStack(
            # VKE installs the NVIDIA GPU Operator (with its NFD) on GPU clusters itself
            # (modelplaneai/modelplane functions/compose-vultr-cluster/function/fn.py waits for
            # its gpu-operator/nvidia-operator-validator); the stack adds only the DRA driver.
            managed_operator=True,
            # VKE's operator would start a device plugin; the GPU Operator skips it on nodes
            # labelled so (gpu-operator v26.3.3 controllers/state_manager.go, `gpu.deploy.*`).
            pool_labels={"nvidia.com/gpu.deploy.device-plugin": "false"},
        ),
        # https://github.com/vultr/vultr-csi/blob/master/docs/kubernetes/README.md: the NVMe block
        # class (1 GB minimum; vultr-block-storage-hdd needs 40 GB).
        cache_storage_class="vultr-block-storage",
        # No `shared_cache`: VKE's CSI driver provisions block storage only, ReadWriteOnce
        # (https://docs.vultr.com/products/kubernetes); Vultr File System has no Kubernetes class here.
        # Vultr places a cluster's nodes in its region; it has no zones to pick.
        # VKE takes a version exactly as `GET /v2/kubernetes/versions` lists it, `v<major>.<minor>.<patch>+<build>`:
        # the provider's example is `version = "v1.28.2+1"` (docs.vultr.com/reference/terraform/resources/kubernetes,
        # and the ediri-vultr Pulumi package's `vultr.Kubernetes` example); `1.36` names no VKE version.
        version=VersionForm(
            re.compile(r"^v\d+\.\d+\.\d+\+\d+$"),
            "`v<major>.<minor>.<patch>+<build>` (`GET https://api.vultr.com/v2/kubernetes/versions`)",
            '"v1.36.2+1"',
        ),
        capacity=CAPACITY,
    ),
    key="vultr",
    cluster_block=VultrCluster,
    machine_block=VultrMachine,
    machines=priced(machines.rows(), machines.PRICES, machines.UNPRICED),
    price_region="ewr",
    control_plane_fee=ControlPlaneFee(
        SOURCE, None, "no control plane price could be read", "https://www.vultr.com/pricing/"
    ),
    component="clouds.vultr.component:VultrCluster",
    component_token="modelplane:vultr:VultrCluster",
    resources=ResourceTypes(
        cluster="vultr:index/kubernetes:Kubernetes",
        pool="vultr:index/kubernetesNodePools:KubernetesNodePools",
        inline_pools="nodePools",
    ),
    provider_package="vultr",
    sdk="ediri_vultr",
    # Stack config the Vultr provider documents for its API key (`vultr:apiKey`, or VULTR_API_KEY).
    credentials={"apiKey": "api_key"},
    mock_outputs={"vultr:index/kubernetes:Kubernetes": _cluster_outputs},
    keys=KEYS,
    examples={"region": "ewr", "kubernetesVersion": '"v1.36.1+3"'},
)

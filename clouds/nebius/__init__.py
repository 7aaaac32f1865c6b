"""Nebius: Managed Kubernetes (mk8s) clusters in their own VPC network, with driver-preinstalled GPU node groups.

The record the registry lists (`clouds/__init__.py`); the component is `clouds.nebius.component`.

Sources named below:
- PULUMI_NEBIUS: the pulumi-nebius 0.6.73 SDK, generated from the schema of Nebius's Terraform
  provider 0.6.73 (its `pulumi-plugin.json` parameterizes the `terraform-provider` bridge with
  `registry.terraform.io/nebius/nebius` 0.6.73); its argument docs are the provider's.
- NEBIUS_API: nebius/api at 51010021ae6bb0f46356745e1dbde2bd38f1d9cf, the API the provider calls
  (`nebius/mk8s/v1/cluster.proto`, `node_group.proto`).
- MODELPLANE: modelplaneai/modelplane at 90ba117d, `functions/compose-nebius-cluster/function/fn.py`
  and `functions/compose-serving-stack/function/stacks/clouds/nebius.py`.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any

from clouds.mock import FAKE_CA
from clouds.nebius import machines
from clouds.nebius.config import KEYS, NebiusCluster, NebiusMachine, machine_name
from clouds.spec import Cloud, PoolSpelling, ResourceTypes
from infra import vocabulary as vocab
from infra.machines import ControlPlaneFee, priced, spot_priced
from infra.profiles import Capacities, CapacityTerms, CloudProfile, Fabric, ScaleFromZero, Scaling, VersionForm

SOURCE = "Nebius"
CLUSTER = "nebius:index/mk8sV1Cluster:Mk8sV1Cluster"
NODE_GROUP = "nebius:index/mk8sV1NodeGroup:Mk8sV1NodeGroup"
# The control plane's CA certificate comes back as PEM text, not base64 (the Kubernetes provider
# takes the attribute as is in nebius/nebius-solutions-library k8s-training/provider.tf).
FAKE_CA_PEM = base64.b64decode(FAKE_CA).decode()


def _cluster_outputs(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    # What the component reads back: the public endpoint and the CA certificate (PEM) of the
    # control plane (PULUMI_NEBIUS `Mk8sV1ClusterStatusControlPlane{Endpoints,Auth}`).
    return {
        "status": {
            "controlPlane": {
                "endpoints": {"publicEndpoint": f"https://{name}.nebius.invalid:443"},
                "auth": {"clusterCaCertificate": FAKE_CA_PEM},
            }
        }
    }


# What a Nebius node group's nodes can be bought as; `clouds.nebius.component.capacity_settings`
# spells each one. Nebius reservations are capacity block groups, named by ID and consumed through
# the node template's `reservation_policy` (pulumi-nebius 0.6.73 `Mk8sV1NodeGroupTemplate`).
CAPACITY = Capacities(
    offered={
        "Spot": CapacityTerms(
            "preemptible VMs (node template preemptible)",
            "https://docs.nebius.com/compute/virtual-machines/preemptible",
            # "You can run preemptible VMs on all VM platforms with GPUs" (the same page).
            gpu_only=True,
        ),
        "Reservation": CapacityTerms(
            "a capacity block group (node template reservation_policy STRICT with its ID)",
            "https://docs.nebius.com/compute/virtual-machines/reservations",
            # "VMs of a regular type and with GPUs support reservations. Preemptible VMs and VMs
            # without GPUs do not support them" (the same page).
            gpu_only=True,
        ),
    },
    lacks="a Nebius reservation is a capacity block group, consumed as type Reservation with its ID "
    "(https://docs.nebius.com/compute/virtual-machines/reservations)",
    example="{name: h100-reserved, className: h100, nodeCount: 1, capacity: {type: Reservation, "
    'reservation: capacityblockgroup-e00example, hourlyPrice: "2.00"}}',
)


CLOUD = Cloud(
    profile=CloudProfile(
        name=SOURCE,
        provisioned=True,
        # mk8s's cluster autoscaler ("Autoscaling in Managed Service for Kubernetes",
        # https://docs.nebius.com/kubernetes/node-groups/autoscaling) says nothing of DRA, and the
        # Cluster Autoscaler's DRA support leaves an empty group's ResourceSlices to each cloud
        # provider (kubernetes/autoscaler#7799, open). Unverified, so treated as cannot.
        # Pools scale: mk8s node groups autoscale between `min_node_count` and `max_node_count`
        # (PULUMI_NEBIUS `Mk8sV1NodeGroupAutoscalingArgs`; MODELPLANE: "Node group autoscaling is
        # served by mk8s itself"), so `autoscaler` stays true.
        scaling=Scaling(
            gpu_from_zero=ScaleFromZero(
                can=False,
                says=(
                    "Nebius mk8s's cluster autoscaler is not documented to scale a DRA GPU node group up from zero "
                    "nodes (unverified: docs.nebius.com/kubernetes/node-groups/autoscaling says nothing of DRA, and "
                    "kubernetes/autoscaler#7799 leaves an empty group's ResourceSlices to each provider)"
                ),
            )
        ),
        gpu_vendors=(vocab.NVIDIA,),
        fabric=Fabric(
            claim=(
                "join the pool's nodes to an InfiniBand fabric: set provisioning.nebius.infinibandFabric (such as "
                "fabric-3) on the class, with an 8gpu- preset"
            )
        ),
        # MODELPLANE fn.py: the system node group is platform cpu-d3, preset 4vcpu-16gb, 1 to 2 nodes.
        system_machine=machine_name("cpu-d3", "4vcpu-16gb"),
        # Drivers, toolkit and device plugin. A GPU node group with a drivers preset runs an image
        # with the NVIDIA driver "included in the ComputeImage" (PULUMI_NEBIUS
        # `gpu_settings.drivers_preset`; the console's "Install NVIDIA GPU drivers and other
        # components", https://docs.nebius.com/kubernetes/gpu/set-up), at the default root:
        # MODELPLANE's Nebius stack leaves the DRA driver's `nvidiaDriverRoot` at `/` ("the node
        # image puts the driver at the default root"), so `nvidia.driver_root` stays `/` and the
        # stack's GPU Operator installs no driver. The image carries the container toolkit too:
        # Nebius's own recipe runs no GPU Operator at all on such images, only a device plugin
        # (nebius/nebius-solutions-library k8s-training/helm.tf, `gpu_nodes_driverfull_image`),
        # so `nvidia.toolkit_dir` stays unset and the operator's toolkit is off, as on EKS. The
        # image also starts a legacy NVIDIA device plugin, which `gpu_settings.dra = true` turns
        # off ("For nodes whose image contains preinstalled NVIDIA drivers, disables the legacy
        # NVIDIA device plugin", PULUMI_NEBIUS); GPU pools set it (clouds/nebius/component.py),
        # so the DRA driver alone advertises their GPUs. Nebius runs no GPU Operator or NFD of its
        # own there, so `nvidia.managed_operator` stays false: the stack's operator (device plugin,
        # driver and toolkit off) brings NFD, GPU feature discovery and dcgm-exporter, which the
        # telemetry reads; MODELPLANE's Nebius stack installed only NFD and the DRA driver.
        # Nebius also runs a managed DRANet on DRA pools in a GPU cluster (PULUMI_NEBIUS
        # `gpu_settings.dra`); nothing here offers its `dra.net` devices to classes, so the cloud
        # serves gpu.nvidia.com and dra.cpu only.
        # The model cache uses the cluster's default StorageClass (`cache_storage_class` ""):
        # mk8s clusters come with one for Compute disks (nebius/nebius-solutions-library
        # k8s-training/README.md names it `compute-csi-default-sc`). No `shared_cache`: that class is a
        # Compute disk, ReadWriteOnce; Nebius's shared filesystems (https://docs.nebius.com/compute/storage/types)
        # reach a cluster through no class this program creates, so a `Shared` cache is refused.
        # NEBIUS_API cluster.proto: the control plane takes `<major>.<minor>` ("1.31"); node
        # groups take the same form.
        version=VersionForm(re.compile(r"^\d\.\d\d$"), "`<major>.<minor>`", '"1.34"'),
        # A node group has no zone setting (NEBIUS_API node_group.proto): the region places nodes.
        capacity=CAPACITY,
    ),
    key="nebius",
    cluster_block=NebiusCluster,
    machine_block=NebiusMachine,
    machines=spot_priced(priced(machines.rows(), machines.PRICES, machines.UNPRICED), machines.SPOT_PRICES),
    price_region="eu-north1",
    control_plane_fee=ControlPlaneFee(
        SOURCE,
        None,
        "no control plane price could be read; Nebius bills Managed Kubernetes at Compute prices",
        "https://docs.nebius.com/signup-billing/billing-models/payg",
    ),
    component="clouds.nebius.component:NebiusCluster",
    component_token="modelplane:nebius:NebiusCluster",
    resources=ResourceTypes(
        cluster=CLUSTER,
        pool=NODE_GROUP,
        spelling=PoolSpelling(
            labels="template.metadata.labels",
            taints="template.taints",
            # A GPU node group names its driver preset (`cuda12`, `cuda12.8`, `cuda13.0`: NEBIUS_API
            # node_group.proto `GpuSettings`; MODELPLANE's default); a CPU node group has none.
            image="template.gpuSettings.driversPreset",
            accelerated_images=("cuda",),
        ),
    ),
    provider_package="nebius",
    sdk="pulumi_nebius",
    # The provider's IAM-token setting (PULUMI_NEBIUS `Provider(token=...)`, "authenticate using
    # this IAM token"; stack config `nebius:token`, pulumi_nebius/config/vars.py). Its other
    # credential settings (`serviceAccount`, `profile`) are objects, not secrets to pass on.
    credentials={"token": "token"},
    mock_outputs={CLUSTER: _cluster_outputs},
    keys=KEYS,
    examples={"projectId": "project-e00example", "region": "eu-north1", "kubernetesVersion": '"1.34"'},
)

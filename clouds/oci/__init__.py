"""Oracle Cloud: OKE (Container Engine for Kubernetes) clusters in their own VCN, with AMD Instinct and NVIDIA shapes.

The record the registry lists (`clouds/__init__.py`); the component is `clouds.oci.component`.

Sources named below:
- PULUMI_OCI: the pulumi-oci 5.5.0 SDK, generated from Oracle's Terraform provider
  (oracle/terraform-provider-oci); its argument docs are the provider's (`containerengine/cluster.py`,
  `node_pool.py`, `addon.py`, `config/vars.py`).
- OKE_ADDONS: docs.oracle.com/en-us/iaas/Content/ContEng/Tasks/contengintroducingclusteraddons.htm
  (essential add-ons: CoreDNS, kube-proxy and a CNI plugin) and the add-on pages
  configuration-arguments-nvidia-gpu-plugin.htm and configuration-arguments-amd-gpu-plugin.htm.
- OCI_HPC_OKE: oracle-quickstart/oci-hpc-oke README.md, Oracle's recipe for GPU nodes on OKE: before
  it installs the NVIDIA GPU Operator (`driver.enabled=false`) and NVIDIA's DRA driver it removes
  OKE's device plugin add-on (`oci ce cluster disable-addon --addon-name NvidiaGpuPlugin`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from clouds.mock import fake_kubeconfig
from clouds.oci import machines
from clouds.oci.config import KEYS, OciCluster, OciMachine, machine_name
from clouds.oci.taints import registered_taints
from clouds.spec import Cloud, PoolSpelling, ResourceTypes
from infra import vocabulary as vocab
from infra.machines import ControlPlaneFee, priced
from infra.profiles import Capacities, CapacityTerms, CloudProfile, NameRule, Scaling, VersionForm, Zones

SOURCE = "OCI"
CLUSTER = "oci:ContainerEngine/cluster:Cluster"
NODE_POOL = "oci:ContainerEngine/nodePool:NodePool"

KUBE_CONFIG = "oci:ContainerEngine/getClusterKubeConfig:getClusterKubeConfig"
AVAILABILITY_DOMAINS = "oci:Identity/getAvailabilityDomains:getAvailabilityDomains"
NODE_POOL_OPTION = "oci:ContainerEngine/getNodePoolOption:getNodePoolOption"
SERVICES = "oci:Core/getServices:getServices"

# OKE's price page: an enhanced cluster costs $0.10 an hour (up to $74.40 a month); a basic one is
# free but has no cluster add-ons, which the component manages.
OKE_PRICING = "https://www.oracle.com/cloud/cloud-native/container-engine-kubernetes/pricing/"


def _kube_config(args: Mapping[str, Any], provider: Mapping[str, Any]) -> dict[str, Any]:
    # PULUMI_OCI `GetClusterKubeConfigResult.content`: "content of the Kubeconfig YAML for the cluster".
    return {"content": fake_kubeconfig(str(args.get("clusterId", "oke")))}


def _availability_domains(args: Mapping[str, Any], provider: Mapping[str, Any]) -> dict[str, Any]:
    # Names carry a tenancy prefix and the region key (`Uocm:US-ASHBURN-AD-1`); the component picks
    # them by their number, the last part.
    return {"availabilityDomains": [{"name": f"Mock:MOCK-AD-{n}", "id": f"ad-{n}"} for n in (1, 2, 3)]}


def _node_pool_option(args: Mapping[str, Any], provider: Mapping[str, Any]) -> dict[str, Any]:
    version = str(args.get("nodePoolK8sVersion", "v0.0.0")).removeprefix("v")
    names = (
        f"Oracle-Linux-8.10-2026.11.01-0-OKE-{version}-1",
        f"Oracle-Linux-8.10-Gen2-GPU-2026.11.01-0-OKE-{version}-1",
    )
    return {
        "sources": [
            {"sourceType": "IMAGE", "sourceName": name, "imageId": f"ocid1.image.oc1..mock{i}"}
            for i, name in enumerate(names)
        ]
    }


def _services(args: Mapping[str, Any], provider: Mapping[str, Any]) -> dict[str, Any]:
    # PULUMI_OCI `GetServicesServiceResult`: the service's OCID and its `cidr_block`, the name route
    # and security rules use for it.
    return {
        "services": [
            {
                "id": "ocid1.service.oc1..mock",
                "name": "All MOCK Services In Oracle Services Network",
                "cidrBlock": "all-mock-services-in-oracle-services-network",
            }
        ]
    }


# What an OKE node pool's nodes can be bought as; `clouds.oci.component.capacity_settings` spells
# each one on every placement of the pool (pulumi-oci 5.5.0 `NodePoolNodeConfigDetailsPlacementConfig`).
CAPACITY = Capacities(
    offered={
        "Spot": CapacityTerms(
            "preemptible capacity (placement preemptible_node_config, preemption action TERMINATE)",
            "https://docs.oracle.com/iaas/Content/ContEng/Tasks/contengusingpreemptiblecapacity.htm",
            # "Preemptible capacity does not support bare metal instances"
            # (https://docs.oracle.com/iaas/Content/Compute/Concepts/preemptible.htm): VM shapes only.
            machines=NameRule(
                re.compile(r"^VM\."),
                "virtual machine shapes (VM.*), not bare metal (BM.*)",
                "use a VM shape for a preemptible pool, or buy a bare-metal pool on demand or reserved",
            ),
        ),
        "Reservation": CapacityTerms(
            "a compute capacity reservation (placement capacity_reservation_id)",
            "https://docs.oracle.com/en-us/iaas/Content/ContEng/Tasks/contengmanagingcapacitytypes.htm",
        ),
    },
    lacks="OKE node pools take on-demand, reserved or preemptible capacity "
    "(https://docs.oracle.com/en-us/iaas/Content/ContEng/Tasks/contengmanagingcapacitytypes.htm)",
    example="{name: cpu-spot, className: cpu, nodeCount: 1, capacity: {type: Spot}}",
)


CLOUD = Cloud(
    profile=CloudProfile(
        name=SOURCE,
        provisioned=True,
        # OCI sells bare-metal GPU shapes of both vendors (clouds/oci/machines.py).
        gpu_vendors=(vocab.NVIDIA, vocab.AMD),
        system_machine=machine_name("VM.Standard.E5.Flex", 2, 16),
        # What OKE puts on GPU nodes, and what the stack leaves out. An NVIDIA shape's nodes run
        # OKE's GPU image (the node pool options' `-GPU-` images; clouds/oci/component.py picks
        # one), which carries NVIDIA's driver at the default root: Oracle's recipe installs the GPU
        # Operator with `driver.enabled=false` (OCI_HPC_OKE). So `nvidia.driver_root` stays `/`,
        # the stack's operator installs no driver, and it installs no toolkit either: OKE's own
        # device plugin add-on runs on these images with no toolkit of its own (OKE_ADDONS).
        # Device plugins: OKE runs NVIDIA's as the NVIDIA GPU Plugin cluster add-on, which Oracle's
        # recipe removes before it installs the DRA driver (OCI_HPC_OKE), and AMD's only as the AMD
        # GPU Plugin add-on, which nothing here enables (it is not an essential add-on: OKE_ADDONS).
        # The cluster component pins the NVIDIA add-on to a node label no node carries, so the
        # stack's DRA drivers alone advertise the GPUs; the AMD operator runs with DRA on and its
        # device plugin off, as on every cloud.
        # AMD: OKE's node images carry no amdgpu driver, and the AMD operator's driver management
        # stays off (infra/serving/values.py), so an AMD pool names an image with the driver
        # (`imageId`, enforced in clouds/oci/config.py).
        # Pools do not scale here: OKE node pools have a fixed `size` (PULUMI_OCI
        # `NodePoolNodeConfigDetails.size`), and OKE's autoscaler is a separate cluster add-on
        # (the Cluster Autoscaler add-on) this program does not install; so `autoscaler` is false
        # and minNodeCount/maxNodeCount are refused.
        scaling=Scaling(autoscaler=False),
        # OKE clusters come with the `oci-bv` StorageClass of the Block Volume CSI driver
        # (docs.oracle.com, ContEng/Tasks/contengcreatingpersistentvolumeclaim.htm); the cluster's
        # default class is the older FlexVolume `oci`, so the cache names the CSI one.
        cache_storage_class="oci-bv",
        # No `shared_cache` yet: OKE's ReadWriteMany storage is File Storage (`fss.csi.oraclecloud.com`,
        # https://docs.oracle.com/en-us/iaas/Content/ContEng/Tasks/contengcreatingpersistentvolumeclaim_Provisioning_PVs_on_FSS.htm),
        # a file system and mount target this program does not create, so a `Shared` cache is refused.
        # PULUMI_OCI `Cluster.kubernetes_version`: "The version of Kubernetes to install into the
        # cluster masters", as `v1.34.1` (`oci ce cluster-options get --cluster-option-id all`).
        version=VersionForm(
            re.compile(r"^v\d\.\d\d\.\d+$"),
            "`v<major>.<minor>.<patch>` (`oci ce cluster-options get --cluster-option-id all`)",
            '"v1.34.1"',
        ),
        # Zones are availability domains, named by their number as the Terraform provider's
        # `ad_number` does (`1` for `Uocm:US-ASHBURN-AD-1`); most regions have one, five have
        # three (machines.OCI_REGIONS).
        zones=Zones(
            names=("1", "2", "3"),
            by_region={r: tuple(str(n) for n in range(1, count + 1)) for r, count in machines.AD_COUNT.items()},
            # The commercial regions (machines.OCI_REGIONS).
            regions=machines.REGIONS,
            regions_from="clouds/oci/machines.py",
        ),
        capacity=CAPACITY,
    ),
    key="oci",
    cluster_block=OciCluster,
    machine_block=OciMachine,
    machines=priced(machines.rows(), machines.PRICES),
    price_region="us-ashburn-1",
    control_plane_fee=ControlPlaneFee(
        SOURCE,
        Decimal("0.10"),
        "enhanced cluster (the cluster add-ons the component manages need one)",
        OKE_PRICING,
    ),
    component="clouds.oci.component:OkeCluster",
    component_token="modelplane:oci:OkeCluster",
    resources=ResourceTypes(
        cluster=CLUSTER,
        pool=NODE_POOL,
        spelling=PoolSpelling(
            labels="initialNodeLabels",
            labels_as_pairs=True,
            # OKE takes no taints in the API: the kubelet registers them, from the node's cloud-init
            # (clouds/oci/taints.py).
            taints="nodeMetadata.user_data",
            taints_as_text=True,
            decode_taints=registered_taints,
        ),
    ),
    provider_package="oci",
    sdk="pulumi_oci",
    # The provider's API key settings (PULUMI_OCI `Provider(tenancy_ocid=, user_ocid=, fingerprint=,
    # private_key=, private_key_password=)`; stack config `oci:tenancyOcid`, `oci:userOcid`,
    # `oci:fingerprint`, `oci:privateKey`, `oci:privateKeyPassword`, pulumi_oci/config/vars.py).
    credentials={
        "tenancyOcid": "tenancy_ocid",
        "userOcid": "user_ocid",
        "fingerprint": "fingerprint",
        "privateKey": "private_key",
        "privateKeyPassword": "private_key_password",
    },
    mock_invokes={
        KUBE_CONFIG: _kube_config,
        AVAILABILITY_DOMAINS: _availability_domains,
        NODE_POOL_OPTION: _node_pool_option,
        SERVICES: _services,
    },
    keys=KEYS,
    examples={
        "compartmentId": "ocid1.compartment.oc1..aaaaexample",
        "region": "us-chicago-1",
        "kubernetesVersion": '"v1.34.1"',
    },
)

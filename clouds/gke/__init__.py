"""GKE: regional clusters on Google Cloud, with GPU pools under NVIDIA's DRA driver.

The record the registry lists (`clouds/__init__.py`); the component is `clouds.gke.component`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from clouds.gke import machines, zones
from clouds.gke.config import KEYS, GkeCluster, GkeMachine
from clouds.mock import FAKE_CA
from clouds.spec import Cloud, ImportIds, PoolSpelling, ResourceTypes
from infra import vocabulary as vocab
from infra.machines import ControlPlaneFee, priced, spot_priced
from infra.profiles import (
    Capacities,
    CapacityTerms,
    CloudProfile,
    Fabric,
    NameRule,
    Naming,
    NvidiaStack,
    ScaleFromZero,
    Scaling,
    SharedStorage,
    Zones,
)
from infra.reservations import Reservation, tiered_reservation

SOURCE = "GKE"
# Where Google's COS driver installer puts the driver on GKE nodes (NVIDIA GPU Operator docs,
# "Google GKE": https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/google-gke.html).
GKE_NVIDIA_DIR = "/home/kubernetes/bin/nvidia"


def _cluster_outputs(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    # GKE answers with the control plane's IP; an `.invalid` name per cluster (clouds/mock.py)
    # reaches nothing either, and keeps two clusters' kubeconfigs apart.
    return {"endpoint": f"{name}.gke.invalid", "masterAuth": {"clusterCaCertificate": FAKE_CA}, "selfLink": name}


def _service_account_outputs(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return {"email": f"{name}@project.iam.gserviceaccount.com"}


# GKE's cluster autoscaler scales a DRA GPU pool up from zero when the pool carries this label: it
# tells the autoscaler that a new node of the pool would publish NVIDIA DRA devices, so a pending
# DRA GPU claim can be met there; without it a pool at zero never scales up (Google's "Prepare GKE
# infrastructure for DRA workloads", https://cloud.google.com/kubernetes-engine/docs/how-to/set-up-dra;
# modelplaneai/modelplane issue #306, fixed by PR #332 in functions/compose-gke-cluster/function/fn.py).
SCALE_FROM_ZERO = ScaleFromZero(
    can=True,
    says=(
        "GKE's cluster autoscaler scales a DRA GPU pool up from zero nodes when the pool carries the label "
        "cloud.google.com/gke-nvidia-gpu-dra-driver=true, which GKE NVIDIA pools here do "
        "(https://cloud.google.com/kubernetes-engine/docs/how-to/set-up-dra; modelplane #306, #332)"
    ),
    pool_labels={"cloud.google.com/gke-nvidia-gpu-dra-driver": "true"},
)


# What a GKE pool's nodes can be bought as; `clouds.gke.component.capacity_settings` spells each one.
# Capacity blocks are not a kind of their own on GKE: a calendar-mode future reservation (DWS) is
# consumed as a specific reservation. Flex-start (queued provisioning) is left out: its pools start
# at zero and take nodes only through a ProvisioningRequest a workload makes, which nothing here
# creates (https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest).
CAPACITY = Capacities(
    offered={
        "Spot": CapacityTerms(
            "Spot VMs (node_config.spot)", "https://cloud.google.com/kubernetes-engine/docs/concepts/spot-vms"
        ),
        "Reservation": CapacityTerms(
            "a specific reservation (node_config.reservation_affinity SPECIFIC_RESERVATION)",
            "https://cloud.google.com/kubernetes-engine/docs/how-to/consuming-reservations",
            # The reservation's name, or projects/<project>/reservations/<name> for one shared from
            # another project (consuming-reservations, "Consuming a specific shared reservation").
            reservation=NameRule(
                re.compile(r"^(projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/reservations/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"),
                "a reservation's name (or projects/<project>/reservations/<name> for a shared one)",
                "write the reservation's name as gcloud compute reservations list shows it",
            ),
        ),
    },
    lacks="GKE offers Spot VMs and specific reservations; a capacity block is consumed as a specific reservation "
    "(https://cloud.google.com/kubernetes-engine/docs/how-to/consuming-reservations)",
    example="{name: cpu-spot, className: cpu, nodeCount: 1, minNodeCount: 1, maxNodeCount: 4, capacity: {type: Spot}}",
)


CLOUD = Cloud(
    profile=CloudProfile(
        name=SOURCE,
        provisioned=True,
        gpu_vendors=(vocab.NVIDIA,),
        system_machine="e2-standard-4",
        nvidia=NvidiaStack(
            # GKE's driver installation is disabled on DRA pools; the stack applies Google's COS
            # installer, which puts the driver here, and installs the toolkit next to it (NVIDIA
            # GPU Operator docs, "Google GKE"; Google's GKE DRA guide,
            # https://cloud.google.com/kubernetes-engine/docs/how-to/set-up-dra).
            driver_root=GKE_NVIDIA_DIR,
            google_driver_installer=True,
            toolkit_dir=GKE_NVIDIA_DIR,
            # GKE sets `nvidia.com/gpu=present:NoSchedule` on GPU nodes only in some cases (a GPU
            # pool added next to a non-GPU pool), so the pool sets it itself, with GKE's value
            # (https://cloud.google.com/kubernetes-engine/docs/how-to/gpus#create).
            taint_value="present",
            pool_labels={
                # GKE's own device plugin stays off: the DRA driver owns the GPUs (set-up-dra).
                "gke-no-default-nvidia-gpu-device-plugin": "true",
                "nvidia.com/gpu.present": "true",
                **SCALE_FROM_ZERO.pool_labels,
            },
        ),
        # GKE admits system-node-critical and system-cluster-critical pods outside
        # kube-system only where a ResourceQuota for those classes exists
        # (https://cloud.google.com/kubernetes-engine/quotas#limitations_and_consumption).
        critical_pods_quota=True,
        scaling=Scaling(gpu_from_zero=SCALE_FROM_ZERO),
        zones=Zones(
            # On a regional cluster `node_count` (and the non-total autoscaling limits) count
            # nodes per zone, and a pool without node locations spans three zones of the region
            # (https://cloud.google.com/kubernetes-engine/docs/concepts/regional-clusters#pools).
            nodes_per_zone=True,
            default_count=3,
            unlisted_pool_count=3,
            # A GKE zone is `<region>-<letter>` (https://cloud.google.com/compute/docs/regions-zones).
            pattern=re.compile(r"^(?P<region>[a-z]+-[a-z]+\d+)-[a-z]$"),
            by_region=zones.ZONES_BY_REGION,
            # The same table lists every region (clouds/gke/zones.py).
            regions=tuple(zones.ZONES_BY_REGION),
            regions_from="clouds/gke/zones.py",
        ),
        # A3 machines reach each other over GPUDirect-TCPX/TCPXO through GKE multi-networking
        # (https://cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-tcpx),
        # which the GKE cluster here does not set up.
        fabric=Fabric(
            claim=(
                "GKE offers GPUDirect-TCPX on A3 machines through multi-networking, which this program does not set "
                "up; the group talks over the pool's one VPC interface"
            )
        ),
        # https://cloud.google.com/kubernetes-engine/docs/how-to/persistent-volumes/gce-pd-csi-driver
        cache_storage_class="standard-rwo",
        # A `Shared` cache: the cluster turns on the Filestore CSI add-on
        # (`addons_config.gcp_filestore_csi_driver_config`), and GKE then creates `standard-rwx`, a Basic
        # HDD Filestore instance per claim (https://cloud.google.com/filestore/docs/csi-driver). Basic HDD
        # provisions 1 TiB to 63.9 TiB (https://cloud.google.com/filestore/docs/service-tiers); the 100 GiB
        # floor there needs a class of its own. Billed on the size provisioned.
        shared_cache=SharedStorage(
            storage_class="standard-rwx",
            provides="the Filestore CSI driver add-on (GKE's class standard-rwx, a Basic HDD Filestore instance)",
            source="https://cloud.google.com/filestore/docs/csi-driver",
            min_gib=1024,
            # 0.000274 USD per GiB-hour, the pricing page's Basic HDD example (us-west1), x 730 hours;
            # https://cloud.google.com/filestore/pricing, read 2026-12-05.
            usd_gib_month=Decimal("0.20"),
            price_source="https://cloud.google.com/filestore/pricing (Basic HDD, read 2026-12-05)",
        ),
        # A GKE cluster's name starts with a letter, then lowercase letters, digits and '-'
        # (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters#Cluster,
        # `name`); the API holds node pool names to the same form.
        naming=Naming(
            rule=NameRule(re.compile(r"^[a-z]"), "start with a letter", "start the name with a lowercase letter")
        ),
        memory_reservation=Reservation(tiered_reservation, "what GKE reserves"),
        capacity=CAPACITY,
    ),
    key="gke",
    cluster_block=GkeCluster,
    machine_block=GkeMachine,
    machines=spot_priced(priced(machines.rows(), machines.PRICES, machines.UNPRICED), machines.SPOT_PRICES),
    price_region="us-central1",
    control_plane_fee=ControlPlaneFee(
        SOURCE,
        Decimal("0.10"),
        "cluster management fee per cluster, any mode or topology; the free-tier credit is not applied",
        "https://cloud.google.com/kubernetes-engine/pricing",
    ),
    component="clouds.gke.component:GkeCluster",
    component_token="modelplane:gke:GkeCluster",
    resources=ResourceTypes(
        cluster="gcp:container/cluster:Cluster",
        pool="gcp:container/nodePool:NodePool",
        spelling=PoolSpelling(
            labels="nodeConfig.labels", taints="nodeConfig.taints", accelerators="nodeConfig.guestAccelerators"
        ),
    ),
    provider_package="gcp",
    sdk="pulumi_gcp",
    # Stack config the GCP provider documents for its credentials (config key -> provider argument;
    # pulumi-gcp installation-configuration: `gcp:credentials`, `gcp:accessToken`,
    # `gcp:impersonateServiceAccount`, or GOOGLE_CREDENTIALS and application default credentials).
    credentials={
        "credentials": "credentials",
        "accessToken": "access_token",
        "impersonateServiceAccount": "impersonate_service_account",
    },
    mock_outputs={
        "gcp:container/cluster:Cluster": _cluster_outputs,
        "gcp:serviceaccount/account:Account": _service_account_outputs,
    },
    keys=KEYS,
    examples={
        "project": "my-project",
        "region": "us-central1",
        "kubernetesVersion": '"1.35"',
        "adopt": "{id: projects/my-project/locations/us-central1/clusters/inference-1}",
    },
    # The first import form each resource documents (pulumi-gcp 10.2.0, the "## Import" sections of
    # pulumi_gcp/container/cluster.py and node_pool.py): the cluster by project, location and name,
    # the pool by project, location, cluster and pool name.
    adoption=ImportIds(
        cluster=re.compile(r"^projects/(?P<project>[^/]+)/locations/(?P<place>[^/]+)/clusters/(?P<cluster>[^/]+)$"),
        cluster_shape="projects/<project>/locations/<region>/clusters/<cluster name>",
        pool=re.compile(r"^(?P<project>[^/]+)/(?P<place>[^/]+)/(?P<cluster>[^/]+)/(?P<pool>[^/]+)$"),
        pool_shape="<project>/<region>/<cluster name>/<pool name>",
        listed_by="gcloud container clusters list and gcloud container node-pools list --cluster <cluster name>",
    ),
)

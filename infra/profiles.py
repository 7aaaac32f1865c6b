"""One record per cloud: the facts about a cloud that modules outside its cluster component need.

The chart values, the serving stack, the catalog and the derived facts read these fields; none of
them asks for a cloud by name. Adding a cloud is adding a row here (and its cluster component in
`components/`), as adding a chart is adding a catalog row. A field's comment says why it has the
value it has on each cloud and where that is documented.

This module imports only the vocabulary, so both `infra` and `components` can read it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from infra import vocabulary as vocab

# NVIDIA's workaround for driver upgrades that leave the DRA kubelet plugin holding the driver:
# the driver manager evicts pods on a node by flipping this label, and the DRA driver's kubelet
# plugin selects nodes by it (NVIDIA GPU Operator docs, "NVIDIA DRA Driver for GPUs", known
# issues: https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/dra-intro-install.html).
DRA_KUBELET_PLUGIN_LABEL = "nvidia.com/dra-kubelet-plugin"

# Where the GPU Operator's driver container exposes the driver it installed
# (gpu-operator v26.3.3 deployments/gpu-operator/values.yaml, `hostPaths.driverInstallDir`).
OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"
# Where Google's COS driver installer puts the driver on GKE nodes (NVIDIA GPU Operator docs,
# "Google GKE": https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/google-gke.html).
GKE_NVIDIA_DIR = "/home/kubernetes/bin/nvidia"


@dataclass(frozen=True)
class NameRule:
    """A form the cloud's API holds cluster and node pool names to, beyond a DNS label."""

    pattern: re.Pattern[str]
    # What the form is, as an error states it: "<cloud> cluster names <says>, not 'x'".
    says: str
    fix: str


@dataclass(frozen=True)
class TagRules:
    """The limits of the cloud tags a cluster's labels become."""

    # Who sets the limits, as an error names them ("an AWS tag key ...").
    owner: str
    reserved_prefix: str
    key_max: int
    value_max: int


@dataclass(frozen=True)
class CloudProfile:
    """What other modules need to know about one cloud (a cluster `source`)."""

    name: str
    # The program creates the cluster and its pools (every cloud but Existing).
    provisioned: bool
    # GPU vendors whose device stack the catalog carries on this cloud.
    gpu_vendors: tuple[str, ...]
    # The small general-purpose machine of the system pool; None where nothing is provisioned.
    system_machine: str | None
    # The key of the machine type in a class's provisioning block for this cloud (camelCase, as in
    # the stack file); "" where nothing is provisioned.
    machine_key: str = ""
    # DRA drivers the cluster component installs outside the serving stack.
    external_drivers: tuple[str, ...] = ()
    # Where the NVIDIA driver lives on a node's host filesystem: the DRA driver's `nvidiaDriverRoot`.
    nvidia_driver_root: str = "/"
    # The serving stack's GPU Operator installs the NVIDIA driver (else the node image or the
    # cloud's pool setting brings it).
    nvidia_driver_by_operator: bool = False
    # The serving stack applies Google's COS driver installer (GKE pools disable GKE's own).
    google_driver_installer: bool = False
    # The GPU Operator installs the container toolkit into this host directory; None where the
    # node image already carries the toolkit.
    nvidia_toolkit_dir: str | None = None
    # The RuntimeClass the GPU Operator's operands run with, when the chart's default (`nvidia`,
    # the class the operator's own toolkit creates) is not the node's handler name.
    nvidia_runtime_class: str | None = None
    # The cloud runs its own NVIDIA GPU Operator and NFD; the stack installs only what it lacks.
    managed_gpu_operator: bool = False
    # The node label the driver manager flips to evict the DRA kubelet plugin during driver
    # upgrades; only where the stack's operator manages the driver.
    driver_eviction_label: str | None = None
    # The value of the NVIDIA GPU taint on this cloud's GPU pools.
    gpu_taint_value: str = "true"
    # The NVIDIA toleration matches this value (`Equal`); None tolerates any value (`Exists`).
    nvidia_toleration_value: str | None = None
    # Labels NVIDIA GPU pools need so that nothing but the DRA driver advertises their GPUs.
    nvidia_pool_labels: Mapping[str, str] = field(default_factory=dict)
    # Pods at a system-critical priority need a ResourceQuota allowing it outside kube-system.
    critical_pods_quota: bool = False
    # A pool's `node_count` counts nodes per zone of the pool (regional clusters), and a pool
    # without zones spans `default_zones` zones.
    nodes_per_zone: bool = False
    default_zones: int = 1
    # Something scales pools between minNodeCount and maxNodeCount (the cloud, or an autoscaler
    # the cluster component installs).
    autoscaler: bool = True
    # The StorageClass a PersistentVolumeClaim model cache uses unless `storageClassName` is set.
    # "" leaves it unset, so the cluster's default StorageClass applies. None: the cluster as this
    # program builds it has no CSI driver that provisions volumes, so a claim would never bind.
    cache_storage_class: str | None = ""
    # The form the cloud's API holds cluster and node pool names to; None: any DNS label.
    name_rule: NameRule | None = None
    # The cloud field the cluster's name becomes, and how many characters it holds.
    name_used_as: str = ""
    name_max_length: int | None = None
    # The form the cloud's API takes `kubernetesVersion` in, and an example of it; None: any version.
    version_pattern: re.Pattern[str] | None = None
    version_form: str = ""
    version_example: str = ""
    # The cloud tags the cluster with its labels, within these limits; None: labels are not tags.
    label_tags: TagRules | None = None
    # Zones: a cloud names its zones either from a fixed set (`zone_names`), or as its region plus a
    # suffix (`zone_pattern`, whose `region` group is the region); neither: the cloud has no zones
    # inside a region to pick.
    zone_names: tuple[str, ...] = ()
    zone_pattern: re.Pattern[str] | None = None

    @property
    def supported_drivers(self) -> tuple[str, ...]:
        """DRA drivers this cloud can serve: every vendor's GPU driver, dra.cpu and its external drivers.

        The catalog checks when it loads that its tags give exactly these (`components.catalog`).
        """
        drivers = {vocab.VENDOR_DRIVER[v] for v in self.gpu_vendors} | {vocab.CPU_DRIVER, *self.external_drivers}
        return tuple(sorted(drivers))


PROFILES: Mapping[str, CloudProfile] = {
    p.name: p
    for p in (
        CloudProfile(
            name=vocab.GKE,
            provisioned=True,
            gpu_vendors=(vocab.NVIDIA,),
            system_machine="e2-standard-4",
            machine_key="machineType",
            # GKE's driver installation is disabled on DRA pools; the stack applies Google's COS
            # installer, which puts the driver here, and installs the toolkit next to it (NVIDIA
            # GPU Operator docs, "Google GKE"; Google's GKE DRA guide,
            # https://cloud.google.com/kubernetes-engine/docs/how-to/set-up-dra).
            nvidia_driver_root=GKE_NVIDIA_DIR,
            google_driver_installer=True,
            nvidia_toolkit_dir=GKE_NVIDIA_DIR,
            # GKE sets `nvidia.com/gpu=present:NoSchedule` on GPU nodes only in some cases (a GPU
            # pool added next to a non-GPU pool), so the pool sets it itself, with GKE's value
            # (https://cloud.google.com/kubernetes-engine/docs/how-to/gpus#create).
            gpu_taint_value="present",
            nvidia_pool_labels={
                # GKE's own device plugin stays off: the DRA driver owns the GPUs (set-up-dra).
                "gke-no-default-nvidia-gpu-device-plugin": "true",
                "nvidia.com/gpu.present": "true",
                # Lets GKE's cluster autoscaler see that a new node of the pool would satisfy a
                # DRA GPU claim; without it a pool at zero never scales up (set-up-dra;
                # modelplaneai/modelplane functions/compose-gke-cluster/function/fn.py).
                "cloud.google.com/gke-nvidia-gpu-dra-driver": "true",
            },
            # GKE admits system-node-critical and system-cluster-critical pods outside
            # kube-system only where a ResourceQuota for those classes exists
            # (https://cloud.google.com/kubernetes-engine/quotas#limitations_and_consumption).
            critical_pods_quota=True,
            # On a regional cluster `node_count` (and the non-total autoscaling limits) count
            # nodes per zone, and a pool without node locations spans three zones of the region
            # (https://cloud.google.com/kubernetes-engine/docs/concepts/regional-clusters#pools).
            nodes_per_zone=True,
            default_zones=3,
            # https://cloud.google.com/kubernetes-engine/docs/how-to/persistent-volumes/gce-pd-csi-driver
            cache_storage_class="standard-rwo",
            # A GKE cluster's name starts with a letter, then lowercase letters, digits and '-'
            # (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters#Cluster,
            # `name`); the API holds node pool names to the same form.
            name_rule=NameRule(re.compile(r"^[a-z]"), "start with a letter", "start the name with a lowercase letter"),
            # A GKE zone is `<region>-<letter>` (https://cloud.google.com/compute/docs/regions-zones).
            zone_pattern=re.compile(r"^(?P<region>[a-z]+-[a-z]+\d+)-[a-z]$"),
        ),
        CloudProfile(
            name=vocab.EKS,
            provisioned=True,
            gpu_vendors=(vocab.NVIDIA,),
            system_machine="m6i.xlarge",
            machine_key="instanceType",
            # aws-dranet, installed by the EKS cluster component for EFA pools.
            external_drivers=(vocab.NET_DRIVER,),
            # The AL2023 NVIDIA AMI ships driver and toolkit (EKS user guide, "Use NVIDIA GPUs
            # with DRA": https://docs.aws.amazon.com/eks/latest/userguide/device-management-nvidia.html).
            # Managed node groups scale only through an autoscaler: the EKS component installs the
            # Kubernetes Cluster Autoscaler (components/eks.py).
            # https://docs.aws.amazon.com/eks/latest/userguide/ebs-csi.html: the EBS CSI driver is an
            # add-on a new cluster does not have, and the EKS component does not install it.
            cache_storage_class=None,
            # EKS takes `major.minor` only
            # (https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html, `version`).
            version_pattern=re.compile(r"^\d+\.\d+\Z"),
            version_form="a major.minor version",
            version_example="1.34",
            # EKS tags the cluster with its labels: keys 1-128 characters, values up to 256, and the
            # `aws:` prefix reserved (https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html).
            label_tags=TagRules(owner="AWS", reserved_prefix="aws:", key_max=128, value_max=256),
            # An EC2 Availability Zone name is the region code followed by a letter, e.g. `us-east-1a`
            # (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/using-regions-availability-zones.html).
            zone_pattern=re.compile(r"^(?P<region>[a-z]+(-[a-z]+)+-\d+)[a-z]$"),
        ),
        CloudProfile(
            name=vocab.AKS,
            provisioned=True,
            gpu_vendors=(vocab.NVIDIA,),
            system_machine="Standard_D4s_v5",
            machine_key="vmSize",
            # The AKS GPU pool installs driver and toolkit (gpu_profile driver Install). Its
            # containerd on N-series VMs defines the NVIDIA handler as `nvidia-container-runtime`
            # and no `nvidia` handler (Azure/AgentBaker, containerd config template for N-series
            # SKUs), so the operator's operands must use that class or fail with `no runtime for
            # "nvidia" is configured` (NVIDIA/gpu-operator#1679 shows the failure). The operator
            # creates the RuntimeClass with this name as its handler (gpu-operator v26.3.3
            # controllers/object_controls.go, RuntimeClasses).
            nvidia_runtime_class="nvidia-container-runtime",
            # AKS's accelerated-node toleration spells the value it taints with.
            nvidia_toleration_value="true",
            # https://learn.microsoft.com/azure/aks/azure-disk-csi (built-in classes of the Azure Disk
            # CSI driver)
            cache_storage_class="managed-csi",
            # AKS uses the cluster's name as its dnsPrefix, which holds 1-54 letters, digits and '-',
            # alphanumeric at both ends (AKS's naming restrictions,
            # https://github.com/MicrosoftDocs/azure-docs/issues/47952).
            name_used_as="dnsPrefix",
            name_max_length=54,
            # AKS zones are the numbers of the location's availability zones (`--zones 1 2 3`,
            # https://learn.microsoft.com/azure/aks/availability-zones).
            zone_names=("1", "2", "3"),
        ),
        CloudProfile(
            name=vocab.CIVO,
            provisioned=True,
            gpu_vendors=(vocab.NVIDIA,),
            system_machine="g4p.kube.small",
            machine_key="size",
            # Civo's GPU image has the toolkit but no driver; Civo's guide installs the driver
            # with the operator (https://www.civo.com/docs/kubernetes/advanced/gpu-config).
            nvidia_driver_root=OPERATOR_DRIVER_ROOT,
            nvidia_driver_by_operator=True,
            driver_eviction_label=DRA_KUBELET_PLUGIN_LABEL,
            nvidia_pool_labels={DRA_KUBELET_PLUGIN_LABEL: "true"},
            # Civo pools have a fixed node count: pulumi-civo's KubernetesNodePool has no scaling
            # bounds and the stack installs no autoscaler.
            autoscaler=False,
            # https://www.civo.com/docs/kubernetes/kubernetes-volumes: civo-volume is the default class
            # (WaitForFirstConsumer).
            cache_storage_class="civo-volume",
            # Civo places a cluster's nodes in its region; it has no zones to pick.
        ),
        CloudProfile(
            name=vocab.VULTR,
            provisioned=True,
            gpu_vendors=(vocab.NVIDIA,),
            system_machine="vc2-6c-16gb",
            machine_key="plan",
            # VKE installs the NVIDIA GPU Operator (with its NFD) on GPU clusters itself
            # (modelplaneai/modelplane functions/compose-vultr-cluster/function/fn.py waits for
            # its gpu-operator/nvidia-operator-validator); the stack adds only the DRA driver.
            managed_gpu_operator=True,
            # VKE's operator would start a device plugin; the GPU Operator skips it on nodes
            # labelled so (gpu-operator v26.3.3 controllers/state_manager.go, `gpu.deploy.*`).
            nvidia_pool_labels={"nvidia.com/gpu.deploy.device-plugin": "false"},
            # https://github.com/vultr/vultr-csi/blob/master/docs/kubernetes/README.md: the NVMe block
            # class (1 GB minimum; vultr-block-storage-hdd needs 40 GB).
            cache_storage_class="vultr-block-storage",
            # Vultr places a cluster's nodes in its region; it has no zones to pick.
        ),
        CloudProfile(
            name=vocab.EXISTING,
            provisioned=False,
            # AMD hardware comes only with an owner's cluster; no provisioned cloud offers it here.
            gpu_vendors=(vocab.NVIDIA, vocab.AMD),
            system_machine=None,
            # The owner's cluster has a default StorageClass or none; the program leaves it to it.
            cache_storage_class="",
        ),
    )
}


def profile(cloud: str) -> CloudProfile:
    """The profile of a cluster source; config loading guarantees the source is known."""
    try:
        return PROFILES[cloud]
    except KeyError:
        raise KeyError(f"unknown cloud {cloud!r}; known: {', '.join(PROFILES)}") from None

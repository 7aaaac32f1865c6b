"""EKS: clusters on AWS with managed node groups, the Cluster Autoscaler, and EFA through aws-dranet.

The record the registry lists (`clouds/__init__.py`); the component is `clouds.eks.component`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from string import ascii_lowercase
from typing import Any

from clouds.eks import machines, zones
from clouds.eks.config import KEYS, EksCluster, EksMachine
from clouds.eks.settings import DEFAULT_ZONES
from clouds.mock import FAKE_CA
from clouds.spec import Cloud, ImportIds, PoolSpelling, ResourceTypes
from infra import vocabulary as vocab
from infra.machines import ControlPlaneFee, MachineType, priced, spot_priced
from infra.profiles import (
    Capacities,
    CapacityTerms,
    CloudProfile,
    Fabric,
    NameRule,
    ScaleFromZero,
    Scaling,
    SharedStorage,
    TagRules,
    VersionForm,
    Zones,
)
from infra.reservations import EVICTION_THRESHOLD, MIB, Reservation

SOURCE = "EKS"
# The StorageClass of a `Shared` model cache, which the EKS component creates over its EFS file
# system (`clouds.eks.storage`); ours, so it never adopts a class of the same name.
EFS_STORAGE_CLASS = "modelplane-efs"
# The network plan has a public and a private subnet per zone in a /16 (`clouds.eks.network`),
# for at most this many zones.
MAX_ZONES = 6
# EKS AMI types that carry a GPU (or Neuron) driver: a node group on one of them has accelerators
# (https://docs.aws.amazon.com/eks/latest/APIReference/API_Nodegroup.html, `amiType`).
ACCELERATED_AMI_WORDS = ("NVIDIA", "GPU", "NEURON")


# EKS (AL2023, what every pool here runs: `clouds/eks/settings.py`) reserves by the node's pod
# limit, not its memory: nodeadm sets kube-reserved memory to 11 MiB x maxPods + 255 MiB
# (awslabs/amazon-eks-ami nodeadm/internal/kubelet/config.go, `GetMemoryMebibytesToReserve`),
# plus the 100 MiB eviction threshold. maxPods is the instance's ENI limit (eni-max-pods.txt there),
# which the catalog does not carry, capped by managed node groups at 110 below 30 vCPUs and 250
# above (https://docs.aws.amazon.com/eks/latest/userguide/choosing-instance-type.html, "How maxPods
# is determined"). The cap is the most EKS can reserve, so the figure never overstates what a pod
# gets; where the ENI limit is lower (58 for the catalog's 4 and 8 vCPU rows, 100 for p5 and p5e)
# EKS keeps up to 572 MiB less than this.
EKS_MEMORY_PER_POD = 11 * MIB
EKS_MEMORY_BASE = 255 * MIB


def eks_max_pods(vcpus: int) -> int:
    return 110 if vcpus < 30 else 250


def eks_reserved(row: MachineType) -> Decimal:
    """Bytes EKS keeps from pods on a node of `row`, at the managed node group's pod cap."""
    return EKS_MEMORY_PER_POD * eks_max_pods(row.vcpus) + EKS_MEMORY_BASE + EVICTION_THRESHOLD


def _cluster_outputs(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    vpc_config = dict(inputs.get("vpcConfig") or {}, clusterSecurityGroupId=f"sg-{name}")
    return {
        "vpcConfig": vpc_config,
        "endpoint": f"https://{name}.eks.invalid",
        "certificateAuthority": {"data": FAKE_CA},
        "arn": f"arn:aws:eks:region:000000000000:cluster/{name}",
    }


def _placement_group_outputs(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": inputs.get("name") or name}  # the provider auto-names it


def _launch_template_outputs(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return {"latestVersion": 1}


def _policy_outputs(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    # IAM computes a policy's ARN; role attachments take it as `policyArn`.
    return {"arn": f"arn:aws:iam::000000000000:policy/{inputs.get('name') or name}"}


def _availability_zones(args: Mapping[str, Any], provider: Mapping[str, Any]) -> dict[str, Any]:
    """The zones `aws.get_availability_zones` gives in the provider's region, as a real preview reads them.

    A preview runs invokes for real, so the subnets' `availabilityZone` is the region's zone names
    in the order the provider returns them: sorted by name (hashicorp/terraform-provider-aws
    internal/service/ec2/ec2_availability_zones_data_source.go, `sort.Slice` by `ZoneName`).
    Stand-in names of another form would never equal a pool's declared zone, so pinning a pool to
    a zone the region lists would move every subnet to another zone and `--against` would show
    them replaced where `up` keeps them. The list is the region's letters in `clouds.eks.zones`;
    an account may lack a letter there (a zone closed to new accounts), which no offline plan can
    know. A region that list lacks gets the zone form's first letters (`<region>a` ...).
    """
    region = str(provider.get("region") or "")
    names = zones.ZONES_BY_REGION.get(region) or tuple(
        f"{region}{letter}" for letter in ascii_lowercase[:DEFAULT_ZONES]
    )
    # Zone IDs (`use1-az1`) map to names per account; the program reads names only.
    return {"names": list(names), "id": region}


def _role_outputs(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    # IAM autonames a role whose name input is unset; attachments refer to it by name.
    return {"arn": f"arn:aws:iam::000000000000:role/{name}", "name": inputs.get("name", name)}


# An EC2 Capacity Reservation's ID, which a Capacity Block's reservation is too: `cr-` and 17 hex
# digits (8 for resources from before 2018); an ID AWS never gives would only fail at launch
# (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/resource-ids.html).
RESERVATION_ID = NameRule(
    re.compile(r"^cr-([0-9a-f]{8}|[0-9a-f]{17})$"),
    "an EC2 Capacity Reservation ID (cr- and 17 hex digits, as aws ec2 describe-capacity-reservations shows it)",
    "write the reservation's ID, e.g. cr-0123456789abcdef0",
)

# What an EKS managed node group's nodes can be bought as; `clouds.eks.component` spells each one
# (the node group's `capacityType`, and its launch template for a reservation or a block). A node
# group takes a list of instance types (several for spot, so it can draw on more pools), but a class
# names one machine here, so a spot group has that one.
CAPACITY = Capacities(
    offered={
        "Spot": CapacityTerms(
            "Spot Instances (node group capacityType SPOT)",
            "https://docs.aws.amazon.com/eks/latest/userguide/managed-node-groups.html#managed-node-group-capacity-types",
        ),
        "Reservation": CapacityTerms(
            "a targeted On-Demand Capacity Reservation (launch template capacity_reservation_specification)",
            "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-reservations-launch.html",
            reservation=RESERVATION_ID,
        ),
        "CapacityBlock": CapacityTerms(
            "Capacity Blocks for ML (capacityType CAPACITY_BLOCK, launch template market type capacity-block)",
            "https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html",
            reservation=RESERVATION_ID,
        ),
    },
    example="{name: h100-block, className: h100, nodeCount: 2, zones: [us-east-1a], capacity: {type: CapacityBlock, "
    'reservation: cr-0123456789abcdef0, blockNodes: 2, blockZone: us-east-1a, hourlyPrice: "31.46"}}',
)


# The subnets of a running cluster and its node groups, in the offline plan.
RUNNING_SUBNETS = ("subnet-running-a", "subnet-running-b")


def _running_cluster(args: Mapping[str, Any], provider: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": args["name"],
        "id": args["name"],
        "roleArn": f"arn:aws:iam::000000000000:role/{args['name']}-cluster",
        "vpcConfig": {
            "clusterSecurityGroupId": "sg-running",
            "controlPlaneEgressMode": "",
            "endpointPrivateAccess": True,
            "endpointPublicAccess": True,
            "publicAccessCidrs": ["0.0.0.0/0"],
            "securityGroupIds": [],
            "subnetIds": list(RUNNING_SUBNETS),
            "vpcId": "vpc-running",
        },
    }


CLOUD = Cloud(
    profile=CloudProfile(
        name=SOURCE,
        provisioned=True,
        gpu_vendors=(vocab.NVIDIA,),
        system_machine="m6i.xlarge",
        # aws-dranet, installed by the EKS cluster component for EFA pools.
        external_drivers=(vocab.NET_DRIVER,),
        zones=Zones(
            # A pool without zones has a node group over every private subnet (clouds/eks/component.py,
            # `_subnets_for`), one per zone.
            unlisted_pool_count=DEFAULT_ZONES,
            # An EC2 Availability Zone name is the region code followed by a letter, e.g. `us-east-1a`
            # (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/using-regions-availability-zones.html).
            pattern=re.compile(r"^(?P<region>[a-z]+(-[a-z]+)+-\d+)[a-z]$"),
            by_region=zones.ZONES_BY_REGION,
            # The same page lists every commercial region (clouds/eks/zones.py).
            regions=tuple(zones.ZONES_BY_REGION),
            regions_from="clouds/eks/zones.py",
            limit=MAX_ZONES,
        ),
        # An EFA pool's nodes are one cluster placement group in the first zone (`_node_group`).
        fabric=Fabric(
            placement_group=True,
            claim=(
                "claim EFA: give the pool's class a dra.net device (deviceClassName efa.networking.k8s.aws) on an "
                "EFA machine such as p5.48xlarge, and claim it in the deployment's devices"
            ),
        ),
        # The AL2023 NVIDIA AMI ships driver and toolkit (EKS user guide, "Use NVIDIA GPUs
        # with DRA": https://docs.aws.amazon.com/eks/latest/userguide/device-management-nvidia.html).
        # Managed node groups scale only through an autoscaler: the EKS component installs the
        # Kubernetes Cluster Autoscaler (clouds/eks/component.py).
        # That autoscaler models a node of an empty group from the group's instance type and tags,
        # with no ResourceSlices, so a DRA GPU claim never scales a group up from zero: the AWS
        # provider's TemplateNodeInfo returns none (kubernetes/autoscaler#7799, open;
        # modelplaneai/modelplane #345, open). Karpenter's DRA support (kubernetes-sigs/karpenter
        # #3082, #3113) is behind `ignoreDRARequests: false` and not GA, and this program does
        # not install Karpenter.
        scaling=Scaling(
            gpu_from_zero=ScaleFromZero(
                can=False,
                says=(
                    "the Cluster Autoscaler the EKS cluster runs cannot scale a DRA GPU node group up from zero "
                    "nodes: its AWS provider models an empty group's node without the ResourceSlices a DRA claim "
                    "needs (kubernetes/autoscaler#7799; modelplane #345)"
                ),
            )
        ),
        # https://docs.aws.amazon.com/eks/latest/userguide/ebs-csi.html: the EBS CSI driver is an
        # add-on a new cluster does not have, and the EKS component does not install it.
        cache_storage_class=None,
        # A `Shared` cache: the cluster installs the aws-efs-csi-driver add-on, an EFS file system with a
        # mount target per node subnet and this StorageClass, an access point per claim
        # (https://docs.aws.amazon.com/eks/latest/userguide/efs-csi.html; `clouds.eks.storage`). EFS has
        # no minimum and bills what is stored, so the claim's size is the most it costs.
        shared_cache=SharedStorage(
            storage_class=EFS_STORAGE_CLASS,
            provides="the aws-efs-csi-driver add-on, an EFS file system, its mount targets and security group, "
            f"and the StorageClass {EFS_STORAGE_CLASS}",
            source="https://docs.aws.amazon.com/eks/latest/userguide/efs-csi.html",
            usd_gib_month=Decimal("0.30"),
            # EFS Standard storage, us-east-1: https://aws.amazon.com/efs/pricing/, read 2026-12-05.
            price_source="https://aws.amazon.com/efs/pricing/ (Standard storage, read 2026-12-05)",
        ),
        # EKS takes `major.minor` only
        # (https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html, `version`).
        version=VersionForm(re.compile(r"^\d+\.\d+\Z"), "a major.minor version", "1.34"),
        # EKS tags the cluster with its labels: keys 1-128 characters, values up to 256, and the
        # `aws:` prefix reserved (https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html).
        label_tags=TagRules(owner="AWS", reserved_prefix="aws:", key_max=128, value_max=256),
        memory_reservation=Reservation(eks_reserved, "what EKS reserves at the node group's pod cap"),
        capacity=CAPACITY,
    ),
    key="eks",
    cluster_block=EksCluster,
    machine_block=EksMachine,
    machines=spot_priced(priced(machines.rows(), machines.PRICES, machines.UNPRICED), machines.SPOT_PRICES),
    price_region="us-east-1",
    control_plane_fee=ControlPlaneFee(
        SOURCE,
        Decimal("0.10"),
        "per cluster on a Kubernetes version in standard support ($0.60 in extended support)",
        "https://aws.amazon.com/blogs/containers/amazon-eks-extended-support-for-kubernetes-versions-pricing/",
    ),
    component="clouds.eks.component:EksCluster",
    component_token="modelplane:eks:EksCluster",
    resources=ResourceTypes(
        cluster="aws:eks/cluster:Cluster",
        pool="aws:eks/nodeGroup:NodeGroup",
        spelling=PoolSpelling(image="amiType", accelerated_images=ACCELERATED_AMI_WORDS),
    ),
    provider_package="aws",
    sdk="pulumi_aws",
    # Stack config the AWS provider documents for its credentials (config key -> provider argument;
    # pulumi-aws installation-configuration: `aws:accessKey`, `aws:secretKey`, `aws:token`,
    # `aws:profile`, or AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE).
    credentials={"accessKey": "access_key", "secretKey": "secret_key", "token": "token", "profile": "profile"},
    mock_outputs={
        "aws:eks/cluster:Cluster": _cluster_outputs,
        "aws:ec2/placementGroup:PlacementGroup": _placement_group_outputs,
        "aws:ec2/launchTemplate:LaunchTemplate": _launch_template_outputs,
        "aws:iam/policy:Policy": _policy_outputs,
        "aws:iam/role:Role": _role_outputs,
    },
    mock_invokes={
        "aws:index/getAvailabilityZones:getAvailabilityZones": _availability_zones,
        "aws:index/getPartition:getPartition": lambda args, provider: {
            "partition": "aws",
            "dnsSuffix": "amazonaws.com",
            "id": "aws",
        },
        # A running cluster and node group, as an adopted cluster reads them (`clouds.eks.component`).
        "aws:eks/getCluster:getCluster": _running_cluster,
        "aws:eks/getNodeGroup:getNodeGroup": lambda args, provider: {
            "clusterName": args["clusterName"],
            "nodeGroupName": args["nodeGroupName"],
            "nodeRoleArn": f"arn:aws:iam::000000000000:role/{args['clusterName']}-nodes",
            "subnetIds": list(RUNNING_SUBNETS),
            "id": f"{args['clusterName']}:{args['nodeGroupName']}",
        },
        "aws:index/getCallerIdentity:getCallerIdentity": lambda args, provider: {
            "accountId": "000000000000",
            "arn": "arn:aws:iam::000000000000:user/plan",
            "userId": "plan",
            "id": "000000000000",
        },
    },
    keys=KEYS,
    examples={"region": "us-east-1", "kubernetesVersion": '"1.35"', "adopt": "{id: inference-1}"},
    # The import forms each resource documents (pulumi-aws 7.51.1, the "## Import" sections of
    # pulumi_aws/eks/cluster.py and node_group.py): the cluster by its `name`, a node group by
    # `cluster_name` and `node_group_name` separated by a colon. A name starts with a letter or digit,
    # then letters, digits, '-' and '_' (the same files, `name` and `node_group_name`). Neither ID
    # names the region: the cluster block's provider reads it there.
    adoption=ImportIds(
        cluster=re.compile(r"^(?P<cluster>[0-9A-Za-z][0-9A-Za-z_-]*)$"),
        cluster_shape="<cluster name>",
        pool=re.compile(r"^(?P<cluster>[0-9A-Za-z][0-9A-Za-z_-]*):(?P<pool>[0-9A-Za-z][0-9A-Za-z_-]*)$"),
        pool_shape="<cluster name>:<node group name>",
        listed_by="aws eks list-clusters and aws eks list-nodegroups --cluster-name <cluster name>",
        # `clouds.eks.component`: a created pool of an adopted cluster runs in its subnets as they are.
        needs_own_network=(
            "the subnets per zone, EFA security group and EFS mount targets are part of the network the program "
            "builds for a new EKS cluster, and an adopted cluster's pools run in the subnets it has"
        ),
    ),
)

"""What the EKS component sets, and why: its network plan, IAM policies, node images and add-on pins.

Values only, each with its source; `clouds.eks.component` and `clouds.eks.network` turn them into
resources.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

VPC_CIDR = "10.0.0.0/16"


# Small public subnets (load balancers, the NAT gateway), large private ones (nodes and, with the
# VPC CNI, every pod's address). Room for MAX_ZONES zones of each (`clouds.eks`).
DEFAULT_ZONES = 3


MIN_ZONES = 2  # EKS requires the cluster's subnets to span at least two zones.


def public_cidr(index: int) -> str:
    return f"10.0.{index * 4}.0/22"


def private_cidr(index: int) -> str:
    return f"10.0.{64 + index * 32}.0/19"


CLUSTER_POLICIES = ("AmazonEKSClusterPolicy",)


NODE_POLICIES = ("AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonEC2ContainerRegistryReadOnly")


# EKS-managed add-ons; versions follow the cluster's Kubernetes version (EKS's default for it).
ADDONS = ("vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent")


# Add-ons whose pods need nodes to become healthy; created after the system node group.
ADDONS_NEEDING_NODES = ("coredns",)


GPU_AMI = "AL2023_x86_64_NVIDIA"


STANDARD_AMI = "AL2023_x86_64_STANDARD"


# AL2023's root device.
ROOT_DEVICE = "/dev/xvda"


SYSTEM_DISK_GB = 100


# Terraform's unique suffix for `*_prefix` names is 26 characters; node group names allow 63.
NODE_GROUP_PREFIX_MAX = 63 - 26


# AWS's EFA driver for DRA (`dra.net`), installed with the cluster, outside the serving stack.
DRANET_RELEASE = "mp-aws-dranet"


DRANET_CHART = "aws-dranet"


DRANET_VERSION = "1.0.0"


DRANET_REPO = "https://aws.github.io/eks-charts"


DRANET_NAMESPACE = "kube-system"


# Launch-template interface types: EFA with ENA on card 0, RDMA-only on the other cards.
EFA_PRIMARY = "efa"


EFA_ONLY = "efa-only"


# The Kubernetes Cluster Autoscaler: managed node groups carry scaling bounds but nothing scales
# within them on its own. The chart version is the one modelplane's EKS composition pins
# (modelplaneai/modelplane functions/compose-eks-cluster/function/fn.py); it discovers node groups
# by the `k8s.io/cluster-autoscaler/<cluster>` tags EKS puts on their Auto Scaling groups
# (https://docs.aws.amazon.com/eks/latest/userguide/managed-node-groups.html).
AUTOSCALER_RELEASE = "mp-cluster-autoscaler"


AUTOSCALER_CHART = "cluster-autoscaler"


# 9.57.0 runs cluster-autoscaler v1.35.0 (the chart's values.yaml `image.tag` and Chart.yaml
# `appVersion` at tag cluster-autoscaler-chart-9.57.0), which models DRA claims with no flag set:
# `--enable-dynamic-resource-allocation` defaults to true there and the autoscaler exits if it is
# false (cluster-autoscaler/config/flags/flags.go at cluster-autoscaler-1.35.0; it defaulted to false
# up to 1.34, so an image before v1.35.0 would need it in `extraArgs`). The chart's ClusterRole
# already reads resourceslices, deviceclasses and resourceclaims (templates/clusterrole.yaml at 9.57.0).
AUTOSCALER_VERSION = "9.57.0"


AUTOSCALER_REPO = "https://kubernetes.github.io/autoscaler"


AUTOSCALER_NAMESPACE = "kube-system"


AUTOSCALER_SERVICE_ACCOUNT = "cluster-autoscaler"


# What the autoscaler may do: describe groups and instance types, set desired capacity and
# terminate instances (kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws/README.md,
# "Full Cluster Autoscaler Features Policy").
AUTOSCALER_POLICY = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": [
                    "autoscaling:DescribeAutoScalingGroups",
                    "autoscaling:DescribeAutoScalingInstances",
                    "autoscaling:DescribeLaunchConfigurations",
                    "autoscaling:DescribeScalingActivities",
                    "ec2:DescribeImages",
                    "ec2:DescribeInstanceTypes",
                    "ec2:DescribeLaunchTemplateVersions",
                    "ec2:GetInstanceTypesFromInstanceRequirements",
                    "eks:DescribeNodegroup",
                ],
                "Resource": ["*"],
            },
            {
                "Effect": "Allow",
                "Action": ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"],
                "Resource": ["*"],
            },
        ],
    }
)


AWS_AUTH_HINT = "Install the AWS CLI v2: https://docs.aws.amazon.com/cli/latest/userguide/getting-started-install.html"


def assume_role_policy(service: str, actions: Sequence[str] = ("sts:AssumeRole",)) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": list(actions)}],
        }
    )

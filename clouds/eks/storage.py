"""The EFS storage an EKS cluster gives a shared weight cache (`cache.volume: Shared`).

Built only when a deployment on the cluster shares a cache (`ClusterFacts.shared_caches`), the way
AWS's guide sets it up (https://docs.aws.amazon.com/eks/latest/userguide/efs-csi.html) and modelplane
does for its `ModelCache` (design/eks-efs-modelcache.md at v0.3.1): an encrypted EFS file system, one
mount target per private (node) subnet in a security group that lets the nodes in on NFS's port,
the `aws-efs-csi-driver` add-on with its IAM role bound by EKS Pod Identity, and after the cluster
is reachable the StorageClass a cache's claim names, which gives each claim an access point of its
own (`provisioningMode: efs-ap`). It is not the rules (`infra.checks.cache`) nor the claim.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from clouds.eks import EFS_STORAGE_CLASS
from clouds.eks.settings import assume_role_policy

ADDON = "aws-efs-csi-driver"
# The add-on's controller runs as this service account, which its IAM role is bound to
# (https://docs.aws.amazon.com/eks/latest/userguide/efs-csi.html, "Step 1: Create an IAM role").
CONTROLLER_SERVICE_ACCOUNT = "efs-csi-controller-sa"
# AWS's managed policy for the driver, under the `service-role/` path (same page).
DRIVER_POLICY = "service-role/AmazonEFSCSIDriverPolicy"
# NFS (https://docs.aws.amazon.com/efs/latest/ug/network-access.html: the mount target's security
# group allows inbound TCP 2049 from the clients).
NFS_PORT = 2049
# Elastic throughput scales with the load, so a download or a whole gang of pods reading the
# weights at once is never throttled (modelplane's design note above; EFS's default is bursting).
THROUGHPUT_MODE = "elastic"


class EfsStorage:
    """The file system, its mount targets and security group, and the CSI driver's add-on and role."""

    def __init__(
        self,
        name: str,
        tags: dict[str, str],
        vpc_id: pulumi.Input[str],
        subnet_ids: Sequence[pulumi.Input[str]],
        node_security_group: pulumi.Input[str],
        on_aws: Callable[..., pulumi.ResourceOptions],
    ) -> None:
        self._name, self.tags, self._on_aws = name, tags, on_aws
        self.security_group = aws.ec2.SecurityGroup(
            f"{name}-efs",
            vpc_id=vpc_id,
            description="NFS from the cluster's nodes to its EFS mount targets",
            ingress=[
                aws.ec2.SecurityGroupIngressArgs(
                    protocol="tcp", from_port=NFS_PORT, to_port=NFS_PORT, security_groups=[node_security_group]
                )
            ],
            tags={**tags, "Name": f"{name}-efs"},
            opts=on_aws(),
        )
        self.file_system = aws.efs.FileSystem(
            f"{name}-efs-fs",
            encrypted=True,
            throughput_mode=THROUGHPUT_MODE,
            tags={**tags, "Name": f"{name}-weights"},
            opts=on_aws(),
        )
        self.mount_targets = [
            aws.efs.MountTarget(
                f"{name}-efs-mount-{i}",
                file_system_id=self.file_system.id,
                subnet_id=subnet,
                security_groups=[self.security_group.id],
                opts=on_aws(),
            )
            for i, subnet in enumerate(subnet_ids)
        ]

    def driver(
        self, cluster_name: pulumi.Input[str], partition: pulumi.Output[str], depends_on: Sequence[pulumi.Resource]
    ) -> aws.eks.Addon:
        """The CSI driver's add-on, its controller's role bound by Pod Identity (the eks-pod-identity-agent
        add-on serves it), after `depends_on` (the nodes its pods run on)."""
        name = self._name
        self.role = aws.iam.Role(
            f"{name}-efs-csi-role",
            assume_role_policy=assume_role_policy("pods.eks.amazonaws.com", ("sts:AssumeRole", "sts:TagSession")),
            tags=self.tags,
            opts=self._on_aws(),
        )
        attachment = aws.iam.RolePolicyAttachment(
            f"{name}-efs-csi-role-policy",
            role=self.role.name,
            policy_arn=pulumi.Output.concat("arn:", partition, ":iam::aws:policy/", DRIVER_POLICY),
            opts=self._on_aws(),
        )
        return aws.eks.Addon(
            f"{name}-{ADDON}",
            cluster_name=cluster_name,
            addon_name=ADDON,
            pod_identity_associations=[
                aws.eks.AddonPodIdentityAssociationArgs(
                    role_arn=self.role.arn, service_account=CONTROLLER_SERVICE_ACCOUNT
                )
            ],
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="PRESERVE",
            tags=self.tags,
            opts=self._on_aws(depends_on=[attachment, *depends_on]),
        )

    def storage_class(self, parent: pulumi.Resource, provider: pulumi.ProviderResource) -> k8s.storage.v1.StorageClass:
        """The class a shared cache's claim names: an access point per claim on the file system
        (the driver's dynamic provisioning example, kubernetes-sigs/aws-efs-csi-driver
        examples/kubernetes/dynamic_provisioning/specs/storageclass.yaml)."""
        return k8s.storage.v1.StorageClass(
            f"{self._name}-efs-class",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=EFS_STORAGE_CLASS),
            provisioner="efs.csi.aws.com",
            parameters={
                "provisioningMode": "efs-ap",
                "fileSystemId": self.file_system.id,
                # The access point's root directory, owned by the pods' root user (the same example).
                "directoryPerms": "700",
            },
            opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=self.mount_targets),
        )

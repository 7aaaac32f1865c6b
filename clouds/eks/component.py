"""EKS clusters: VPC, IAM roles, the cluster with its add-ons, a system node group, one per pool.

Everything is created through one `aws.Provider` pinned to the cluster's `region`, so a stack can
hold clusters in many regions (and, with per-stack provider configuration, accounts); credentials
come from that provider's own configuration (profile, environment, SSO), never from this module.

What this module decides (and nothing more):
- the network, built first (`clouds.eks.network`): a VPC with a public and a private subnet per
  zone, one NAT gateway; nodes live in the private subnets;
- access: `authentication_mode = API` (access entries, no `aws-auth` ConfigMap) with the bootstrap
  admin entry for the identity that creates the cluster. No explicit access entry is added for
  the caller: EKS creates exactly that entry when bootstrapping, and a second one for the same
  principal would fail. Other admins get access entries outside this program;
- nodes: managed node groups, each with its own launch template that enforces IMDSv2 (hop limit 2,
  so pods cannot borrow the node's role through the metadata service) and sizes the root volume
  (which is why the node groups leave `disk_size` unset: EKS rejects both). GPU pools use
  `AL2023_x86_64_NVIDIA`, which ships the NVIDIA driver and toolkit, CPU and system pools
  `AL2023_x86_64_STANDARD` (https://docs.aws.amazon.com/eks/latest/userguide/ml-eks-optimized-ami.html);
- how facts are spelled for EKS: taint effects as `NO_SCHEDULE`; `minNodeCount`/`maxNodeCount`
  become the node group's scaling bounds (equal to `nodeCount` when unset), and the Kubernetes
  Cluster Autoscaler, installed with its IAM role, scales the groups within them;
- a shared weight cache: when a deployment shares one, EFS and its CSI driver (`clouds.eks.storage`);
- capacity: a spot pool is a SPOT node group; a reservation or capacity block is targeted by the
  pool's launch template (`capacity_template`), a capacity block's node group being CAPACITY_BLOCK;
- an adopted cluster (`eks.adopt`, docs/adopting.md): the cluster and its adopted node groups are
  imported, and nothing is created around them: no network, IAM role, add-on, Cluster Autoscaler
  or system node group. A pool the program creates in it runs in the subnets and as the node role
  of the first adopted node group (else the cluster's subnets and a node role of its own);
- `dra.net`: when a pool claims it (EFA pools), the cluster installs AWS's `aws-dranet` chart,
  the driver `infra.serving.catalog.EXTERNAL_DRIVERS` declares for EKS, and the pool's launch
  template fits one EFA interface per claimed `dra.net` device (one per network card), in a
  security group open to itself, with the nodes in one cluster placement group (one zone).

Labels, taints, roles, machines and accelerators come from `infra.facts`; nothing here re-derives
them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from clouds import eks
from clouds.eks.config import EksCluster as EksClusterBlock
from clouds.eks.network import Network
from clouds.eks.node_groups import (
    ADOPTED_CLUSTER_KEEPS,
    ADOPTED_POOL_KEEPS,
    autoscaler_owned,
    capacity_template,
    capacity_type,
    dranet_tolerations,
    efa_interfaces,
    efa_network_interfaces,
    node_taints,
    scaling,
)
from clouds.eks.settings import (
    ADDONS,
    ADDONS_NEEDING_NODES,
    AUTOSCALER_CHART,
    AUTOSCALER_NAMESPACE,
    AUTOSCALER_POLICY,
    AUTOSCALER_RELEASE,
    AUTOSCALER_REPO,
    AUTOSCALER_SERVICE_ACCOUNT,
    AUTOSCALER_VERSION,
    AWS_AUTH_HINT,
    CLUSTER_POLICIES,
    DRANET_CHART,
    DRANET_NAMESPACE,
    DRANET_RELEASE,
    DRANET_REPO,
    DRANET_VERSION,
    GPU_AMI,
    NODE_GROUP_PREFIX_MAX,
    NODE_POLICIES,
    ROOT_DEVICE,
    STANDARD_AMI,
    SYSTEM_DISK_GB,
    assume_role_policy,
)
from clouds.eks.storage import ADDON as EFS_ADDON
from clouds.eks.storage import EfsStorage
from components.adoption import adopted
from components.base import (
    ClusterArgs,
    ClusterComponent,
    exec_kubeconfig,
    own_block,
    stack_credentials,
)
from infra.config.clusters import CapacityType
from infra.facts import PoolFacts, declared_zones
from infra.vocabulary import NET_DRIVER as NET


class EksCluster(ClusterComponent):
    CLOUD = eks.CLOUD

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, args, opts)
        facts = args.facts
        block = own_block(facts, EksClusterBlock)
        declared = declared_zones(facts.pools)
        self.region = block.region
        self.tags = dict(facts.spec.labels)
        self.aws_provider = args.providers.shared(
            ("aws", self.region),
            lambda shared: aws.Provider(shared, region=self.region, **stack_credentials(eks.CLOUD)),
        )
        self.invoke = pulumi.InvokeOutputOptions(parent=self, provider=self.aws_provider)
        self.partition = aws.get_partition_output(opts=self.invoke).partition
        if facts.adopt_id is None:
            self._network(declared)
            self._identity()
        else:
            self._around_adopted()
            # The running cluster's role and subnets, which the provider needs as inputs.
            self.running_cluster = aws.eks.get_cluster_output(name=facts.adopt_id, opts=self.invoke)
        self._cluster(block.kubernetes_version)
        self._pools()
        self.connect(self._kubeconfig())
        self._addons()
        self.finish()

    def _around_adopted(self) -> None:
        """An adopted cluster has no network, node role or policies from the program; what would need
        them (a created pool in named zones or with EFA, a shared cache) is refused before anything
        registers (`infra.checks.adoption`)."""
        self.network: Network | None = None
        self.node_role: aws.iam.Role | None = None
        self.node_policies: list[aws.iam.RolePolicyAttachment] = []

    def _on_aws(self, **extra: Any) -> pulumi.ResourceOptions:
        return self.child(provider=self.aws_provider, **extra)

    def _network(self, declared: Sequence[str]) -> None:
        """The VPC, subnets, NAT gateway and route tables (`clouds.eks.network`), with an EFA security
        group when a pool fits EFA interfaces."""
        efa = any(efa_interfaces(p) for p in self.facts.pools)
        self.network = Network(self._name, self.tags, declared, efa, self._on_aws, self.invoke)

    def _identity(self) -> None:
        """The cluster's and the nodes' IAM roles with their AWS-managed policies."""
        name, tags = self._name, self.tags
        self.cluster_role = aws.iam.Role(
            f"{name}-cluster-role",
            # TagSession: EKS tags its sessions when it assumes the cluster role.
            assume_role_policy=assume_role_policy("eks.amazonaws.com", ("sts:AssumeRole", "sts:TagSession")),
            tags=tags,
            opts=self._on_aws(),
        )
        self.cluster_policies = self._attach(name, "cluster-role", self.cluster_role, CLUSTER_POLICIES, self.partition)
        self._node_identity()

    def _node_identity(self) -> None:
        """The nodes' IAM role with its AWS-managed policies."""
        self.node_role = aws.iam.Role(
            f"{self._name}-node-role",
            assume_role_policy=assume_role_policy("ec2.amazonaws.com"),
            tags=self.tags,
            opts=self._on_aws(),
        )
        self.node_policies = self._attach(self._name, "node-role", self.node_role, NODE_POLICIES, self.partition)

    def _cluster(self, kubernetes_version: str) -> None:
        """The cluster, and the add-ons that need no nodes to become healthy.

        An adopted cluster (`adopt.id`, its name) is imported in the network and with the role it
        runs with (`ADOPTED_CLUSTER_KEEPS`), and keeps the add-ons it runs: none is created.
        """
        name, tags, adopt_id = self._name, self.tags, self.facts.adopt_id
        self.cluster = aws.eks.Cluster(
            f"{name}-cluster",
            name=adopt_id or name,
            role_arn=self.cluster_role.arn if adopt_id is None else self.running_cluster.role_arn,
            version=kubernetes_version,
            vpc_config=aws.eks.ClusterVpcConfigArgs(
                subnet_ids=[s.id for s in self.network.private_subnets]
                if self.network
                else self.running_cluster.vpc_config.subnet_ids,
                endpoint_private_access=True,
                # `pulumi up` reaches the API server from outside the VPC.
                endpoint_public_access=True,
            ),
            access_config=aws.eks.ClusterAccessConfigArgs(
                authentication_mode="API",
                bootstrap_cluster_creator_admin_permissions=True,
            ),
            enabled_cluster_log_types=["api", "audit", "authenticator"],
            deletion_protection=self.protect,
            tags=tags,
            opts=self._on_aws(
                depends_on=self.cluster_policies if adopt_id is None else [],
                **adopted(f"{name}-cluster", f"cluster '{name}'", adopt_id, ADOPTED_CLUSTER_KEEPS),
            ),
        )
        self.addons: dict[str, aws.eks.Addon] = {
            addon: self._addon(addon) for addon in ADDONS if addon not in ADDONS_NEEDING_NODES and adopt_id is None
        }

    def _addon(self, addon: str, depends_on: Sequence[pulumi.Resource] = ()) -> aws.eks.Addon:
        return aws.eks.Addon(
            f"{self._name}-{addon}",
            cluster_name=self.cluster.name,
            addon_name=addon,
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="PRESERVE",
            tags=self.tags,
            opts=self._on_aws(depends_on=list(depends_on)),
        )

    def _pools(self) -> None:
        """A node group per pool (system first, as in the facts), then the add-ons that need nodes."""
        self.launch_templates: list[aws.ec2.LaunchTemplate] = []
        self.placement_groups: list[aws.ec2.PlacementGroup] = []
        self.efs: EfsStorage | None = None
        pools = self.facts.pools
        # Adopted node groups first: a created pool of an adopted cluster reads its role and subnets
        # from the first of them.
        groups = {p.name: self._node_group(self._name, p, self.tags) for p in pools if p.adopt_id}
        self.running_group = next(iter(groups.values()), None)
        if self.facts.adopt_id is not None and self.running_group is None and len(groups) < len(pools):
            self._node_identity()
        groups |= {p.name: self._node_group(self._name, p, self.tags) for p in pools if not p.adopt_id}
        self.node_groups = [groups[p.name] for p in pools]
        if self.facts.adopt_id is not None:
            return
        for addon in ADDONS_NEEDING_NODES:
            self.addons[addon] = self._addon(addon, depends_on=[self.node_groups[0]])
        self._shared_storage()

    def _shared_storage(self) -> None:
        """EFS for the cluster's shared weight caches, when it has any (`clouds.eks.storage`); the
        driver's add-on needs nodes, like coredns."""
        if not self.facts.shared_caches or self.network is None:
            return
        self.efs = EfsStorage(
            self._name,
            self.tags,
            self.network.vpc.id,
            [s.id for s in self.network.private_subnets],
            self.cluster.vpc_config.cluster_security_group_id,
            self._on_aws,
        )
        self.addons[EFS_ADDON] = self.efs.driver(self.cluster.name, self.partition, [self.node_groups[0]])

    def _kubeconfig(self) -> pulumi.Output[str]:
        region = self.region
        # The kubeconfig waits for the node groups and add-ons (their ids), so nothing installed
        # through the cluster's Kubernetes provider starts before nodes can run it.
        return pulumi.Output.all(
            self.cluster.arn,
            self.cluster.name,
            self.cluster.endpoint,
            self.cluster.certificate_authority.data,
            *[g.id for g in self.node_groups],
            *[a.id for a in self.addons.values()],
        ).apply(
            lambda a: exec_kubeconfig(
                str(a[0]),
                str(a[2]),
                str(a[3]),
                "aws",
                ["eks", "get-token", "--cluster-name", str(a[1]), "--region", region, "--output", "json"],
                AWS_AUTH_HINT,
            )
        )

    def _addons(self) -> None:
        """What the cluster installs on itself through its Kubernetes provider (after finish()).

        An adopted cluster gets no Cluster Autoscaler: its IAM role and Pod Identity association
        would be cloud resources around the cluster, and the cluster's owner scales it.
        """
        if self.facts.adopt_id is None:
            self._cluster_autoscaler()
        self.efs_class = self.efs.storage_class(self, self.provider) if self.efs is not None else None
        self.dranet: k8s.helm.v3.Release | None = None
        if any(NET in p.claimed_drivers for p in self.facts.pools):
            self.dranet = k8s.helm.v3.Release(
                f"{self._name}-aws-dranet",
                name=DRANET_RELEASE,
                chart=DRANET_CHART,
                version=DRANET_VERSION,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=DRANET_REPO),
                namespace=DRANET_NAMESPACE,
                values={"tolerations": dranet_tolerations(self.facts.pools)},
                opts=pulumi.ResourceOptions(parent=self, provider=self.provider),
            )

    def _cluster_autoscaler(self) -> None:
        """The Cluster Autoscaler, with an IAM role bound to its service account by Pod Identity.

        The eks-pod-identity-agent add-on (in ADDONS) serves the binding; the role trusts
        `pods.eks.amazonaws.com` (https://docs.aws.amazon.com/eks/latest/userguide/pod-id-role.html).
        """
        name, tags = self._name, self.tags
        self.autoscaler_policy = aws.iam.Policy(
            f"{name}-autoscaler", policy=AUTOSCALER_POLICY, tags=tags, opts=self._on_aws()
        )
        self.autoscaler_role = aws.iam.Role(
            f"{name}-autoscaler-role",
            assume_role_policy=assume_role_policy("pods.eks.amazonaws.com", ("sts:AssumeRole", "sts:TagSession")),
            tags=tags,
            opts=self._on_aws(),
        )
        attachment = aws.iam.RolePolicyAttachment(
            f"{name}-autoscaler-role-policy",
            role=self.autoscaler_role.name,
            policy_arn=self.autoscaler_policy.arn,
            opts=self._on_aws(),
        )
        association = aws.eks.PodIdentityAssociation(
            f"{name}-autoscaler-identity",
            cluster_name=self.cluster.name,
            namespace=AUTOSCALER_NAMESPACE,
            service_account=AUTOSCALER_SERVICE_ACCOUNT,
            role_arn=self.autoscaler_role.arn,
            tags=tags,
            opts=self._on_aws(depends_on=[attachment]),
        )
        self.autoscaler = k8s.helm.v3.Release(
            f"{name}-cluster-autoscaler",
            name=AUTOSCALER_RELEASE,
            chart=AUTOSCALER_CHART,
            version=AUTOSCALER_VERSION,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=AUTOSCALER_REPO),
            namespace=AUTOSCALER_NAMESPACE,
            # Keys of the chart's values.yaml at 9.57.0 (kubernetes/autoscaler charts/cluster-autoscaler).
            # No image override and no DRA flag: the chart's v1.35.0 image handles DRA claims by
            # default (AUTOSCALER_VERSION says where that is read).
            values={
                "cloudProvider": "aws",
                "awsRegion": self.region,
                "autoDiscovery": {"clusterName": name},
                "rbac": {"serviceAccount": {"name": AUTOSCALER_SERVICE_ACCOUNT}},
                # Pools spanning zones are one Auto Scaling group per zone; balance them.
                "extraArgs": {"balance-similar-node-groups": True},
            },
            opts=pulumi.ResourceOptions(parent=self, provider=self.provider, depends_on=[association]),
        )

    def _attach(
        self, name: str, role_suffix: str, role: aws.iam.Role, policies: Sequence[str], partition: pulumi.Output[str]
    ) -> list[aws.iam.RolePolicyAttachment]:
        return [
            aws.iam.RolePolicyAttachment(
                f"{name}-{role_suffix}-{policy.lower().replace('_', '-')}",
                role=role.name,
                policy_arn=pulumi.Output.concat("arn:", partition, ":iam::aws:policy/", policy),
                opts=self.child(provider=self.aws_provider),
            )
            for policy in policies
        ]

    def _subnets_for(self, pool: PoolFacts) -> pulumi.Input[Sequence[pulumi.Input[str]]]:
        """The private subnets of the pool's zones (declared zones hold the first subnet indices).

        In an adopted cluster: the first adopted node group's subnets, else the cluster's.
        """
        if self.network is None:
            running: pulumi.Output[list[str]] = (
                self.running_group.subnet_ids if self.running_group is not None else self.cluster.vpc_config.subnet_ids
            )
            return running
        return self._zone_subnets(pool)

    def _zone_subnets(self, pool: PoolFacts) -> list[pulumi.Output[str]]:
        """The private subnets the program built for the pool's zones (all of them when it names none)."""
        assert self.network is not None, "only a created cluster has the program's subnets"
        if not pool.zones:
            return [s.id for s in self.network.private_subnets]
        declared = declared_zones(self.facts.pools)
        return [self.network.private_subnets[declared.index(z)].id for z in pool.zones]

    def _node_role_arn(self) -> pulumi.Output[str]:
        """The role of the nodes of a created pool: the program's, else the first adopted node group's."""
        role = self.node_role if self.node_role is not None else self.running_group
        assert role is not None, "an adopted cluster without adopted pools has its own node role"
        arn: pulumi.Output[str] = role.arn if isinstance(role, aws.iam.Role) else role.node_role_arn
        return arn

    def _node_group(self, name: str, pool: PoolFacts, tags: dict[str, str]) -> aws.eks.NodeGroup:
        if pool.adopt_id is not None:
            return self._adopted_node_group(name, pool, tags)
        subnets = self._subnets_for(pool)
        interfaces = None
        placement = None
        efa = efa_interfaces(pool)
        if efa and self.network is not None and self.network.efa_security_group is not None:
            groups = [self.network.efa_security_group.id, self.cluster.vpc_config.cluster_security_group_id]
            interfaces = efa_network_interfaces(efa, groups)
        block = pool.capacity is not None and pool.capacity.type is CapacityType.CAPACITY_BLOCK
        if interfaces is not None and not block:
            # EFA needs the nodes close together: a cluster placement group, which lives in one zone.
            # A capacity block's instances are already placed close together, inside an EC2
            # UltraCluster (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html),
            # and its pool keeps to the block's zone (`infra.checks.capacity`), so it gets none.
            group = aws.ec2.PlacementGroup(
                f"{name}-{pool.name}-placement",
                strategy="cluster",
                tags=tags,
                opts=self.child(provider=self.aws_provider),
            )
            self.placement_groups.append(group)
            placement = aws.ec2.LaunchTemplatePlacementArgs(group_name=group.name)
            subnets = self._zone_subnets(pool)[:1]
        template = aws.ec2.LaunchTemplate(
            f"{name}-{pool.name}-template",
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_endpoint="enabled",
                http_tokens="required",
                # 2, not 1: containers sit one network hop behind the node.
                http_put_response_hop_limit=2,
            ),
            block_device_mappings=[
                aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name=ROOT_DEVICE,
                    ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                        volume_size=pool.disk_size_gb or SYSTEM_DISK_GB,
                        volume_type="gp3",
                        encrypted="true",
                        delete_on_termination="true",
                    ),
                )
            ],
            network_interfaces=interfaces,
            placement=placement,
            **capacity_template(pool),
            update_default_version=True,
            tags=tags,
            opts=self.child(provider=self.aws_provider),
        )
        self.launch_templates.append(template)
        return aws.eks.NodeGroup(
            f"{name}-{pool.name}",
            cluster_name=self.cluster.name,
            # A prefix, so a replacement node group can exist next to the old one while it drains.
            node_group_name_prefix=f"{pool.name[: NODE_GROUP_PREFIX_MAX - 1]}-",
            node_role_arn=self._node_role_arn(),
            subnet_ids=subnets,
            ami_type=GPU_AMI if pool.role == "GPU" else STANDARD_AMI,
            instance_types=[str(pool.machine)],
            capacity_type=capacity_type(pool),
            scaling_config=scaling(pool),
            labels=dict(pool.labels),
            taints=node_taints(pool),
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                id=template.id, version=template.latest_version.apply(str)
            ),
            update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
            tags=tags,
            opts=self.child(
                provider=self.aws_provider,
                depends_on=[*self.node_policies, *self.addons.values()],
                ignore_changes=autoscaler_owned(pool),
            ),
        )

    def _adopted_node_group(self, name: str, pool: PoolFacts, tags: dict[str, str]) -> aws.eks.NodeGroup:
        """The running node group `nodePools[].adopt.id` names, imported under its running name.

        Its node role and subnets are read from it, and it keeps them and its launch template as they
        run (`ADOPTED_POOL_KEEPS`): no launch
        template is created for it, so its disk size and instance metadata options stay as they run.
        """
        running = aws.eks.get_node_group_output(
            cluster_name=self.facts.adopt_id, node_group_name=pool.name, opts=self.invoke
        )
        return aws.eks.NodeGroup(
            f"{name}-{pool.name}",
            cluster_name=self.cluster.name,
            node_group_name=pool.name,
            node_role_arn=running.node_role_arn,
            subnet_ids=running.subnet_ids,
            ami_type=GPU_AMI if pool.role == "GPU" else STANDARD_AMI,
            instance_types=[str(pool.machine)],
            scaling_config=scaling(pool),
            labels=dict(pool.labels),
            taints=node_taints(pool),
            update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
            tags=tags,
            opts=self.child(
                provider=self.aws_provider,
                **adopted(
                    f"{name}-{pool.name}",
                    f"pool '{pool.name}' of cluster '{name}'",
                    pool.adopt_id,
                    [*ADOPTED_POOL_KEEPS, *(autoscaler_owned(pool) or [])],
                ),
            ),
        )

"""What an EKS managed node group is made of, pool by pool: its taints, scaling bounds, EFA
interfaces, capacity type and the launch template parts a reservation or a capacity block needs,
and what an adopted cluster or node group keeps as it runs. `clouds.eks.component` builds the
resources from these; nothing here registers one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_aws as aws

from clouds.eks.settings import (
    EFA_ONLY,
    EFA_PRIMARY,
)
from infra.config.clusters import CapacityType, PoolCapacity
from infra.config.model import ClaimMode
from infra.facts import PoolFacts
from infra.vocabulary import NET_DRIVER as NET
from infra.vocabulary import UPPER_EFFECT

# What an adopted cluster keeps as it runs (`components.adoption.adopted`, `ignore`): the IAM role
# and subnets it was created with, which the program does not create (it passes them as read by
# `aws.eks.get_cluster`, since the provider requires them), and whether
# its creator was made admin, which only creation reads (pulumi-aws 7.51.1, pulumi_aws/eks/_inputs.py,
# `ClusterAccessConfigArgs.bootstrap_cluster_creator_admin_permissions`).
ADOPTED_CLUSTER_KEEPS = ("roleArn", "vpcConfig.subnetIds", "accessConfig.bootstrapClusterCreatorAdminPermissions")
# What an adopted node group keeps: its node role, subnets and launch template, set by whoever
# created it (pulumi_aws/eks/node_group.py: `node_role_arn`, `subnet_ids`, `launch_template`).
ADOPTED_POOL_KEEPS = ("nodeRoleArn", "subnetIds", "launchTemplate", "nodeGroupNamePrefix")


def node_taints(pool: PoolFacts) -> list[aws.eks.NodeGroupTaintArgs]:
    return [aws.eks.NodeGroupTaintArgs(key=t.key, value=t.value, effect=UPPER_EFFECT[t.effect]) for t in pool.taints]


def scaling(pool: PoolFacts) -> aws.eks.NodeGroupScalingConfigArgs:
    low = pool.min_node_count if pool.min_node_count is not None else pool.node_count
    high = pool.max_node_count if pool.max_node_count is not None else pool.node_count
    # EKS requires max_size >= 1; a pool of zero nodes keeps room to grow by one.
    return aws.eks.NodeGroupScalingConfigArgs(desired_size=pool.node_count, min_size=low, max_size=max(high, 1))


def autoscaler_owned(pool: PoolFacts) -> list[str] | None:
    """Inputs the autoscaler changes on an autoscaled node group, which `pulumi up` must not reset.

    The desired size is set at creation and then left to the autoscaler; otherwise every update
    would scale the group back to nodeCount (pulumi-eks documents the same `ignoreChanges`).
    """
    return ["scalingConfig.desiredSize"] if pool.autoscaled else None


def dranet_tolerations(pools: Sequence[PoolFacts]) -> list[dict[str, str]]:
    """Exactly the taints of the pools that claim `dra.net` (their GPU taint), never a wildcard."""
    seen: list[dict[str, str]] = []
    for pool in pools:
        if NET not in pool.claimed_drivers:
            continue
        for t in pool.taints:
            toleration = {"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect}
            if toleration not in seen:
                seen.append(toleration)
    return seen


def efa_interfaces(pool: PoolFacts) -> int:
    """EFA interfaces a pool's nodes need: one per `dra.net` device its class claims.

    aws-dranet publishes one `dra.net` device per EFA interface the node has, so a class claiming
    32 EFA devices (p5.48xlarge) needs all 32 network cards fitted with an EFA interface.
    """
    return sum(d.count for d in pool.devices if d.claim is ClaimMode.DRA and d.driver == NET)


def efa_network_interfaces(
    count: int, groups: Sequence[pulumi.Input[str]]
) -> list[aws.ec2.LaunchTemplateNetworkInterfaceArgs]:
    """One EFA interface per network card; card 0 carries the primary interface (device 0).

    Card 0 is `efa` (EFA with ENA: the node's IP traffic and EFA); the others are `efa-only`, with
    no IP address. Were the secondaries plain `efa`, nodeadm would try to configure them as IP
    interfaces and the node would never join (terraform-aws-modules/terraform-aws-eks#3653;
    modelplaneai/modelplane functions/compose-eks-cluster/function/fn.py).
    """
    return [
        aws.ec2.LaunchTemplateNetworkInterfaceArgs(
            network_card_index=card,
            device_index=0 if card == 0 else 1,
            interface_type=EFA_PRIMARY if card == 0 else EFA_ONLY,
            delete_on_termination="true",
            security_groups=list(groups),
        )
        for card in range(count)
    ]


# The node group's `capacityType` per capacity (https://docs.aws.amazon.com/eks/latest/APIReference/API_Nodegroup.html,
# `capacityType`: ON_DEMAND, SPOT, CAPACITY_BLOCK); a targeted reservation is On-Demand capacity the
# launch template points at its reservation.
CAPACITY_TYPES = {
    CapacityType.ON_DEMAND: "ON_DEMAND",
    CapacityType.SPOT: "SPOT",
    CapacityType.RESERVATION: "ON_DEMAND",
    CapacityType.CAPACITY_BLOCK: "CAPACITY_BLOCK",
}


def capacity_type(pool: PoolFacts) -> str | None:
    """The node group's `capacityType`; unset for an on-demand pool, as before capacities were modelled.

    EKS defaults it to ON_DEMAND; leaving it unset keeps the inputs of existing on-demand groups as
    they were, so `up` changes nothing on them (the provider then reads it back, `Computed`).
    """
    kind = pool.capacity.type if pool.capacity is not None else CapacityType.ON_DEMAND
    if kind is CapacityType.ON_DEMAND:
        return None
    return CAPACITY_TYPES[kind]


def capacity_template(pool: PoolFacts) -> dict[str, Any]:
    """The launch template fields that put a pool's instances into its reservation or capacity block.

    A reservation: `capacity_reservation_target` names it, so instances launch only into it
    (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-reservations-launch.html). A
    capacity block: the same target, and the market type `capacity-block`, which EKS requires of a
    CAPACITY_BLOCK node group's launch template
    (https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html). The pool's subnets
    are those of the block's zone: `infra.checks.capacity` holds its zones to it.
    """
    # The system pool has no capacity of its own (None): on demand.
    capacity = pool.capacity or PoolCapacity()
    if capacity.type not in (CapacityType.RESERVATION, CapacityType.CAPACITY_BLOCK):
        return {}
    fields: dict[str, Any] = {
        "capacity_reservation_specification": aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
            capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                capacity_reservation_id=str(capacity.reservation)
            )
        )
    }
    if capacity.type is CapacityType.CAPACITY_BLOCK:
        fields["instance_market_options"] = aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(
            market_type="capacity-block"
        )
    return fields

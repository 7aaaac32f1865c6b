"""The network of an EKS cluster: its VPC, a public and a private subnet per zone, one NAT gateway.

Nodes live in the private subnets; load balancers find their subnets by the `kubernetes.io/role/*`
tags. Zones are the union of the pools' `zones` (topped up to two, which EKS requires), else three
of the region's zones; the subnets fit the VPC's /16 for at most `clouds.eks.MAX_ZONES` zones.
When a pool fits EFA interfaces, the cluster's EFA security group is here too.

What it is not: the cluster, its IAM roles, node groups and add-ons (`clouds.eks.component`, which
builds this first and places the node groups in its private subnets).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pulumi
import pulumi_aws as aws

from clouds.eks.settings import DEFAULT_ZONES, MIN_ZONES, VPC_CIDR, private_cidr, public_cidr
from components.base import ComponentError


def subnet_zones(declared: Sequence[str], available: Sequence[str], count: int) -> list[str]:
    """`count` zones: the declared ones first, then the region's others (repeated if it has fewer)."""
    zones = list(declared) + [z for z in available if z not in declared]
    if not zones:
        raise ComponentError("cluster network", "subnets", "the region reports no available zones")
    return [zones[i % len(zones)] for i in range(count)]


def nth(index: int) -> Callable[[list[str]], str]:
    return lambda items: items[index]


class Network:
    """The cluster's network resources, each a child of the cluster component on its AWS provider."""

    def __init__(
        self,
        name: str,
        tags: dict[str, str],
        declared: Sequence[str],
        efa: bool,
        on_aws: Callable[..., pulumi.ResourceOptions],
        invoke: pulumi.InvokeOutputOptions,
    ) -> None:
        """The VPC, a public and a private subnet per zone, one NAT gateway and the route tables.

        `declared` are the pools' zones; `efa` whether a pool fits EFA interfaces; `on_aws` gives a
        child resource's options (parented to the cluster, on its AWS provider) and `invoke` an invoke's.
        """
        self._name, self.tags, self._on_aws, self.invoke = name, tags, on_aws, invoke
        zone_count = max(MIN_ZONES, len(declared)) if declared else DEFAULT_ZONES
        zones = self._zones(declared, zone_count)
        self._vpc()
        self._subnets(zones, zone_count)
        self._nat()
        self._route_tables()
        self._efa_security_group(efa)

    def _zones(self, declared: Sequence[str], zone_count: int) -> pulumi.Output[list[str]]:
        """The zones of the subnets: the pools' zones, topped up from the region's available zones."""
        available: pulumi.Output[list[str]] = aws.get_availability_zones_output(
            state="available",
            # Regular zones only: Local and Wavelength Zones lack most instance types and EKS.
            filters=[aws.GetAvailabilityZonesFilterArgs(name="opt-in-status", values=["opt-in-not-required"])],
            opts=self.invoke,
        ).names
        return available.apply(lambda names: subnet_zones(declared, names, zone_count))

    def _vpc(self) -> None:
        """The VPC and its internet gateway."""
        name, tags = self._name, self.tags
        self.vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=VPC_CIDR,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags={**tags, "Name": name},
            opts=self._on_aws(),
        )
        self.internet_gateway = aws.ec2.InternetGateway(
            f"{name}-igw", vpc_id=self.vpc.id, tags={**tags, "Name": name}, opts=self._on_aws()
        )

    def _subnets(self, zones: pulumi.Output[list[str]], zone_count: int) -> None:
        """A public and a private subnet per zone, zone by zone."""
        self.public_subnets: list[aws.ec2.Subnet] = []
        self.private_subnets: list[aws.ec2.Subnet] = []
        for i in range(zone_count):
            zone = zones.apply(nth(i))
            self.public_subnets.append(self._public_subnet(i, zone))
            self.private_subnets.append(self._private_subnet(i, zone))

    def _public_subnet(self, i: int, zone: pulumi.Output[str]) -> aws.ec2.Subnet:
        """Zone `i`'s public subnet, where internet-facing load balancers and the NAT gateway live."""
        name = self._name
        return aws.ec2.Subnet(
            f"{name}-public-{i}",
            vpc_id=self.vpc.id,
            cidr_block=public_cidr(i),
            availability_zone=zone,
            map_public_ip_on_launch=True,
            tags={**self.tags, "Name": f"{name}-public-{i}", "kubernetes.io/role/elb": "1"},
            opts=self._on_aws(),
        )

    def _private_subnet(self, i: int, zone: pulumi.Output[str]) -> aws.ec2.Subnet:
        """Zone `i`'s private subnet, where the nodes and internal load balancers live."""
        name = self._name
        return aws.ec2.Subnet(
            f"{name}-private-{i}",
            vpc_id=self.vpc.id,
            cidr_block=private_cidr(i),
            availability_zone=zone,
            tags={**self.tags, "Name": f"{name}-private-{i}", "kubernetes.io/role/internal-elb": "1"},
            opts=self._on_aws(),
        )

    def _nat(self) -> None:
        """The NAT gateway in the first public subnet, with its elastic IP."""
        name, tags = self._name, self.tags
        # One NAT gateway: private nodes pull images and charts through it. A gateway per zone
        # would survive a zone outage at three times the cost; the cluster itself is regional.
        self.nat_ip = aws.ec2.Eip(
            f"{name}-nat-ip", domain="vpc", tags={**tags, "Name": f"{name}-nat"}, opts=self._on_aws()
        )
        self.nat_gateway = aws.ec2.NatGateway(
            f"{name}-nat",
            allocation_id=self.nat_ip.id,
            subnet_id=self.public_subnets[0].id,
            tags={**tags, "Name": name},
            opts=self._on_aws(depends_on=[self.internet_gateway]),
        )

    def _route_tables(self) -> None:
        """Public subnets route out through the internet gateway, private ones through the NAT gateway."""
        name, tags = self._name, self.tags
        self.public_routes = aws.ec2.RouteTable(
            f"{name}-public-routes",
            vpc_id=self.vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=self.internet_gateway.id)],
            tags={**tags, "Name": f"{name}-public"},
            opts=self._on_aws(),
        )
        self.private_routes = aws.ec2.RouteTable(
            f"{name}-private-routes",
            vpc_id=self.vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=self.nat_gateway.id)],
            tags={**tags, "Name": f"{name}-private"},
            opts=self._on_aws(),
        )
        self.route_associations = [
            aws.ec2.RouteTableAssociation(
                f"{name}-{kind}-{i}-routes",
                subnet_id=subnet.id,
                route_table_id=table.id,
                opts=self._on_aws(),
            )
            for kind, subnets, table in (
                ("public", self.public_subnets, self.public_routes),
                ("private", self.private_subnets, self.private_routes),
            )
            for i, subnet in enumerate(subnets)
        ]

    def _efa_security_group(self, efa: bool) -> None:
        """The security group of the cluster's EFA interfaces, when a pool has any."""
        name = self._name
        # EFA: traffic between EFA interfaces must be allowed both ways within one security group;
        # nodes with explicit interfaces also need the cluster's own group to reach the API.
        self.efa_security_group: aws.ec2.SecurityGroup | None = None
        if efa:
            self.efa_security_group = aws.ec2.SecurityGroup(
                f"{name}-efa",
                vpc_id=self.vpc.id,
                description="EFA traffic between the cluster's EFA nodes",
                ingress=[aws.ec2.SecurityGroupIngressArgs(protocol="-1", from_port=0, to_port=0, self=True)],
                egress=[
                    aws.ec2.SecurityGroupEgressArgs(protocol="-1", from_port=0, to_port=0, self=True),
                    aws.ec2.SecurityGroupEgressArgs(protocol="-1", from_port=0, to_port=0, cidr_blocks=["0.0.0.0/0"]),
                ],
                tags={**self.tags, "Name": f"{name}-efa"},
                opts=self._on_aws(),
            )

"""A private network on aws: who may reach what, and the names services are reached by.

``Network``: a VPC, private subnets per AZ (public ones only for NAT egress, one NAT per AZ), an S3 gateway
endpoint, the security groups it is asked for, each hop admitted from exactly one place (``Hop``: an ingress rule
with the matching egress from its source) plus the egress it is asked for (``Egress``), and a Cloud Map namespace
``<namespace>`` every service is reached by (``cname`` points a name in it at an AWS-managed endpoint).
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from lakehouse_platform.components.aws.context import AwsComponent, AwsContext
from lakehouse_platform.model import Layer

ANYWHERE = "anywhere"
ANYWHERE_CIDR = "0.0.0.0/0"


@dataclass(frozen=True)
class Hop:
    """Traffic from one security group into another on a port (or a range up to ``to_port``): an ingress rule on
    ``group`` and, when ``with_egress``, the matching egress rule on ``source``."""

    group: str
    port: int
    source: str
    why: str
    back: str = ""  # the matching egress rule's description (``why`` when empty)
    to_port: int | None = None
    with_egress: bool = True


@dataclass(frozen=True)
class Egress:
    """Traffic out of a security group on a port: to another group, or ``ANYWHERE`` (image registries, AWS APIs)."""

    group: str
    port: int
    to: str
    why: str


@dataclass(frozen=True)
class NetworkArgs:
    """What makes the network: its address range and AZs, its security groups and the traffic between them."""

    ctx: AwsContext
    layer: Layer
    cidr: str
    availability_zones: int
    namespace: str  # the private DNS namespace, e.g. ``lakehouse.internal``
    groups: Mapping[str, str]  # security group key -> what it holds (its description)
    hops: Sequence[Hop] = ()
    egress: Sequence[Egress] = ()
    tags: Mapping[str, str] = field(default_factory=dict)


class Network(AwsComponent):
    """The VPC with its subnets, routes, NAT gateways, S3 endpoint, security groups and DNS namespace."""

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("platform:aws:Network", name, args.ctx, args.layer, opts)
        ctx = args.ctx
        prefix = ctx.spec.name  # the resources keep the platform's names
        tags = dict(args.tags)
        child = self.child_opts()
        azs = aws.get_availability_zones_output(state="available", opts=ctx.invoke_opts()).names
        blocks = list(ipaddress.ip_network(args.cidr).subnets(prefixlen_diff=3))  # 8 subnets

        self.vpc = aws.ec2.Vpc(f"{prefix}-vpc", cidr_block=args.cidr, enable_dns_support=True,
                               enable_dns_hostnames=True, tags={**tags, "Name": f"{prefix}-vpc"}, opts=child)
        # The default security group admits nothing: every hop goes through a group declared below.
        aws.ec2.DefaultSecurityGroup(f"{prefix}-default-sg-closed", vpc_id=self.vpc.id, ingress=[], egress=[],
                                     tags=tags, opts=child)
        igw = aws.ec2.InternetGateway(f"{prefix}-igw", vpc_id=self.vpc.id, tags=tags, opts=child)
        public_rt = aws.ec2.RouteTable(f"{prefix}-public", vpc_id=self.vpc.id, tags=tags, opts=child)
        aws.ec2.Route(f"{prefix}-public-default", route_table_id=public_rt.id, destination_cidr_block=ANYWHERE_CIDR,
                      gateway_id=igw.id, opts=child)

        self.private_subnets: list[aws.ec2.Subnet] = []
        self.public_subnets: list[aws.ec2.Subnet] = []
        self.private_route_tables: list[aws.ec2.RouteTable] = []
        for index in range(args.availability_zones):
            az = azs.apply(functools.partial(_zone, index=index))
            private = aws.ec2.Subnet(
                f"{prefix}-private-{index}", vpc_id=self.vpc.id, cidr_block=str(blocks[index]), availability_zone=az,
                map_public_ip_on_launch=False, tags={**tags, "Name": f"{prefix}-private-{index}"}, opts=child,
            )
            public = aws.ec2.Subnet(
                f"{prefix}-public-{index}", vpc_id=self.vpc.id, cidr_block=str(blocks[4 + index]), availability_zone=az,
                map_public_ip_on_launch=False, tags={**tags, "Name": f"{prefix}-public-{index}"}, opts=child,
            )
            aws.ec2.RouteTableAssociation(f"{prefix}-public-{index}", subnet_id=public.id, route_table_id=public_rt.id,
                                          opts=child)
            # Egress only (image pulls, AWS APIs): one NAT per AZ, so losing an AZ loses only its tasks.
            eip = aws.ec2.Eip(f"{prefix}-nat-{index}", domain="vpc", tags=tags, opts=child)
            nat = aws.ec2.NatGateway(f"{prefix}-nat-{index}", allocation_id=eip.id, subnet_id=public.id, tags=tags,
                                     opts=self.child_opts(depends_on=[igw]))
            private_rt = aws.ec2.RouteTable(f"{prefix}-private-{index}", vpc_id=self.vpc.id, tags=tags, opts=child)
            aws.ec2.Route(f"{prefix}-private-{index}-default", route_table_id=private_rt.id,
                          destination_cidr_block=ANYWHERE_CIDR, nat_gateway_id=nat.id, opts=child)
            aws.ec2.RouteTableAssociation(f"{prefix}-private-{index}", subnet_id=private.id,
                                          route_table_id=private_rt.id, opts=child)
            self.private_subnets.append(private)
            self.public_subnets.append(public)
            self.private_route_tables.append(private_rt)

        # S3 traffic stays on the AWS network and never crosses the NAT.
        aws.ec2.VpcEndpoint(
            f"{prefix}-s3", vpc_id=self.vpc.id, service_name=f"com.amazonaws.{ctx.spec.aws.region}.s3",
            vpc_endpoint_type="Gateway", route_table_ids=[rt.id for rt in self.private_route_tables],
            tags=tags, opts=child,
        )
        self.security_groups = {
            key: aws.ec2.SecurityGroup(f"{prefix}-{key}", description=f"{prefix}: {text}", vpc_id=self.vpc.id,
                                       tags={**tags, "Name": f"{prefix}-{key}"}, opts=child)
            for key, text in args.groups.items()
        }
        for rule in args.egress:
            self._egress(prefix, rule.group, rule.port, rule.to, rule.why, None, tags)
        for hop in args.hops:
            for group in (hop.group, hop.source):
                if group not in self.security_groups:
                    raise ValueError(f"an aws ingress names the security group {group!r}, which this stack's network "
                                     f"does not have; it has: {', '.join(self.security_groups)}")
            aws.vpc.SecurityGroupIngressRule(
                f"{prefix}-{hop.group}-in-{hop.port}-from-{hop.source}", security_group_id=self.sg(hop.group).id,
                ip_protocol="tcp", from_port=hop.port, to_port=hop.to_port or hop.port,
                referenced_security_group_id=self.sg(hop.source).id, description=hop.why, tags=tags, opts=child,
            )
            if hop.with_egress:
                self._egress(prefix, hop.source, hop.port, hop.group, hop.back or hop.why, hop.to_port, tags)
        self.namespace = aws.servicediscovery.PrivateDnsNamespace(
            f"{prefix}-namespace", name=args.namespace, vpc=self.vpc.id,
            description=f"{prefix}: services reachable as <service>.{args.namespace} inside the VPC",
            tags=tags, opts=child,
        )
        self.register_outputs({"vpc": self.vpc.id, "namespace": self.namespace.name})

    def _egress(self, prefix: str, group: str, port: int, to: str, why: str, to_port: int | None,
                tags: dict[str, str]) -> None:
        kwargs: dict[str, Any] = {"cidr_ipv4": ANYWHERE_CIDR} if to == ANYWHERE else {
            "referenced_security_group_id": self.sg(to).id}
        aws.vpc.SecurityGroupEgressRule(
            f"{prefix}-{group}-out-{port}-to-{to}", security_group_id=self.sg(group).id, ip_protocol="tcp",
            from_port=port, to_port=to_port or port, description=why, tags=tags, opts=self.child_opts(), **kwargs,
        )

    @property
    def private_subnet_ids(self) -> list[pulumi.Output[str]]:
        return [subnet.id for subnet in self.private_subnets]

    def sg(self, name: str) -> aws.ec2.SecurityGroup:
        return self.security_groups[name]


def _zone(names: list[str], index: int) -> str:
    return names[index]


def cname(ctx: AwsContext, service: str, hostname: pulumi.Input[str], network: Network, description: str,
          opts: pulumi.ResourceOptions, tags: Mapping[str, str]) -> None:
    """``<service>.<namespace>`` as a CNAME to an AWS-managed name (RDS endpoint, internal ALB)."""
    spec = ctx.spec
    entry = aws.servicediscovery.Service(
        f"{spec.name}-{service}-dns", name=service, description=description,
        dns_config={"namespace_id": network.namespace.id, "dns_records": [{"type": "CNAME", "ttl": 30}],
                    "routing_policy": "WEIGHTED"},
        tags=dict(tags), opts=opts,
    )
    aws.servicediscovery.Instance(
        f"{spec.name}-{service}-dns", instance_id=f"{service}-endpoint", service_id=entry.id,
        attributes={"AWS_INSTANCE_CNAME": hostname}, opts=opts,
    )

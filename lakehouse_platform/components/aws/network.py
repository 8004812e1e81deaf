"""The platform's network on aws: who may reach what, and the names services are reached by (governance).

A VPC, private subnets per AZ (public ones only for NAT egress), an S3 gateway endpoint, security groups
that admit each hop from exactly one place (the catalogs' own, and what each service declares it is reached by:
``ServiceDefinition.aws_ingress``), and the Cloud Map namespace ``<name>.internal`` every service
is reached by (``cname`` points a name at an AWS-managed endpoint).
"""

from __future__ import annotations

import functools
import ipaddress
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from lakehouse_platform.components.aws.context import AwsContext
from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.services import registry
from lakehouse_platform.services.context import Side, host_of
from lakehouse_platform.services.definition import AwsIngress

LAYER = Layer.GOVERNANCE
HTTPS = 443
ANYWHERE = "0.0.0.0/0"


def catalog_servers(spec: PlatformSpec) -> list[str]:
    """The enabled catalogs that run as ECS services on aws (in registry order)."""
    return [name for name, d in registry().catalogs().items() if d.ecs is not None and name in spec.enabled_services()]


@dataclass(frozen=True)
class Ports:
    """The ports the catalogs' security groups admit, from the catalogs' specs."""

    catalog: int  # every catalog server's REST port (one load balancer listener)
    catalog_health: tuple[int, ...]  # health-check ports that differ from the REST port

    @classmethod
    def of(cls, spec: PlatformSpec) -> Ports:
        servers = catalog_servers(spec) or [n for n in registry().catalogs() if registry()[n].ecs is not None]
        rest = {spec.services[n].ports["http"].internal for n in servers}
        if len(rest) != 1:
            raise ValueError(f"services.*.ports.http.internal: the catalogs on aws share one load balancer listener, "
                             f"so their REST ports must be equal; found {sorted(rest)} for {', '.join(servers)}")
        (catalog,) = rest
        health = []
        for name in servers:
            check = spec.services[name].health
            if check is not None and check.port is not None:
                port = spec.services[name].ports[check.port].internal
                if port != catalog and port not in health:
                    health.append(port)
        return cls(catalog=catalog, catalog_health=tuple(health))


def declared_ingress(spec: PlatformSpec) -> list[tuple[AwsIngress, int]]:
    """Every hop the stack's services ask the network to admit (``ServiceDefinition.aws_ingress``), with its port
    number: of each service the stack runs on aws (enabled, or its aws part enabled), in registry order."""
    parts = {part.name for part in registry().aws_parts(spec)}
    found = []
    for definition in registry():
        if definition.name not in spec.enabled_services() and definition.name not in parts:
            continue
        for hop in definition.aws_ingress:
            if hop.when is not None and not hop.when(spec):
                continue
            if isinstance(hop.port, int):
                found.append((hop, hop.port))
                continue
            ports = spec.services[definition.name].ports
            if hop.port not in ports:
                raise ValueError(f"services.{definition.name}.ports: its aws ingress admits port {hop.port!r}, which "
                                 f"it does not declare; it declares: {', '.join(ports) or 'none'}")
            found.append((hop, ports[hop.port].internal))
    return found


@dataclass
class Network:
    vpc: aws.ec2.Vpc
    private_subnets: list[aws.ec2.Subnet]
    public_subnets: list[aws.ec2.Subnet]
    private_route_tables: list[aws.ec2.RouteTable]
    security_groups: dict[str, aws.ec2.SecurityGroup]
    namespace: aws.servicediscovery.PrivateDnsNamespace

    @property
    def private_subnet_ids(self) -> list[pulumi.Output[str]]:
        return [subnet.id for subnet in self.private_subnets]

    def sg(self, name: str) -> aws.ec2.SecurityGroup:
        return self.security_groups[name]


def _zone(names: list[str], index: int) -> str:
    return names[index]


def build(ctx: AwsContext) -> Network:
    spec = ctx.spec
    opts = ctx.opts(LAYER)
    name = spec.name
    ports = Ports.of(spec)
    azs = aws.get_availability_zones_output(state="available", opts=ctx.invoke_opts()).names
    blocks = list(ipaddress.ip_network(spec.aws.vpc_cidr).subnets(prefixlen_diff=3))  # 8 subnets

    vpc = aws.ec2.Vpc(f"{name}-vpc", cidr_block=spec.aws.vpc_cidr, enable_dns_support=True,
                      enable_dns_hostnames=True, tags={**ctx.tags(LAYER), "Name": f"{name}-vpc"}, opts=opts)
    # The default security group admits nothing: every hop goes through a group declared below.
    aws.ec2.DefaultSecurityGroup(f"{name}-default-sg-closed", vpc_id=vpc.id, ingress=[], egress=[],
                                 tags=ctx.tags(LAYER), opts=opts)
    igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags=ctx.tags(LAYER), opts=opts)
    public_rt = aws.ec2.RouteTable(f"{name}-public", vpc_id=vpc.id, tags=ctx.tags(LAYER), opts=opts)
    aws.ec2.Route(f"{name}-public-default", route_table_id=public_rt.id, destination_cidr_block=ANYWHERE,
                  gateway_id=igw.id, opts=opts)

    private_subnets, public_subnets, private_rts = [], [], []
    for index in range(spec.aws.availability_zones):
        az = azs.apply(functools.partial(_zone, index=index))
        private = aws.ec2.Subnet(
            f"{name}-private-{index}", vpc_id=vpc.id, cidr_block=str(blocks[index]), availability_zone=az,
            map_public_ip_on_launch=False, tags={**ctx.tags(LAYER), "Name": f"{name}-private-{index}"}, opts=opts,
        )
        public = aws.ec2.Subnet(
            f"{name}-public-{index}", vpc_id=vpc.id, cidr_block=str(blocks[4 + index]), availability_zone=az,
            map_public_ip_on_launch=False, tags={**ctx.tags(LAYER), "Name": f"{name}-public-{index}"}, opts=opts,
        )
        aws.ec2.RouteTableAssociation(f"{name}-public-{index}", subnet_id=public.id, route_table_id=public_rt.id,
                                      opts=opts)
        # Egress only (image pulls, AWS APIs): one NAT per AZ, so losing an AZ loses only its tasks.
        eip = aws.ec2.Eip(f"{name}-nat-{index}", domain="vpc", tags=ctx.tags(LAYER), opts=opts)
        nat = aws.ec2.NatGateway(f"{name}-nat-{index}", allocation_id=eip.id, subnet_id=public.id,
                                 tags=ctx.tags(LAYER), opts=ctx.opts(LAYER, depends_on=[igw]))
        private_rt = aws.ec2.RouteTable(f"{name}-private-{index}", vpc_id=vpc.id, tags=ctx.tags(LAYER), opts=opts)
        aws.ec2.Route(f"{name}-private-{index}-default", route_table_id=private_rt.id,
                      destination_cidr_block=ANYWHERE, nat_gateway_id=nat.id, opts=opts)
        aws.ec2.RouteTableAssociation(f"{name}-private-{index}", subnet_id=private.id,
                                      route_table_id=private_rt.id, opts=opts)
        private_subnets.append(private)
        public_subnets.append(public)
        private_rts.append(private_rt)

    # S3 traffic stays on the AWS network and never crosses the NAT.
    aws.ec2.VpcEndpoint(
        f"{name}-s3", vpc_id=vpc.id, service_name=f"com.amazonaws.{spec.aws.region}.s3",
        vpc_endpoint_type="Gateway", route_table_ids=[rt.id for rt in private_rts],
        tags=ctx.tags(LAYER), opts=opts,
    )

    groups = {
        "lb": "internal load balancer in front of the catalogs",
        "catalogs": "catalog servers (Polaris, Lakekeeper) and their jobs",
        "engines": "engines: Trino, Spark on EMR Serverless, maintenance tasks",
        "db": "the catalogs' PostgreSQL database",
    }
    if spec.aws.kafka_msk:
        groups["msk"] = "Amazon MSK brokers"
        groups["connect"] = "MSK Connect workers (Debezium)"
    sgs = {
        key: aws.ec2.SecurityGroup(f"{name}-{key}", description=f"{name}: {text}", vpc_id=vpc.id,
                                   tags={**ctx.tags(LAYER), "Name": f"{name}-{key}"}, opts=opts)
        for key, text in groups.items()
    }

    def ingress(group: str, port: int, source: str, why: str, to_port: int | None = None) -> None:
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-{group}-in-{port}-from-{source}", security_group_id=sgs[group].id, ip_protocol="tcp",
            from_port=port, to_port=to_port or port, referenced_security_group_id=sgs[source].id, description=why,
            tags=ctx.tags(LAYER), opts=opts,
        )

    def egress(group: str, port: int, to: str, why: str, to_port: int | None = None) -> None:
        kwargs: dict[str, Any] = {"cidr_ipv4": ANYWHERE} if to == "anywhere" else {
            "referenced_security_group_id": sgs[to].id}
        aws.vpc.SecurityGroupEgressRule(
            f"{name}-{group}-out-{port}-to-{to}", security_group_id=sgs[group].id, ip_protocol="tcp",
            from_port=port, to_port=to_port or port, description=why, tags=ctx.tags(LAYER), opts=opts, **kwargs,
        )

    ingress("lb", ports.catalog, "engines", "engines call the catalogs' REST API")
    egress("lb", ports.catalog, "catalogs", "forward to the catalogs")
    for health in ports.catalog_health:
        egress("lb", health, "catalogs", "health checks on a catalog's management port")
        ingress("catalogs", health, "lb", "health checks")
    ingress("catalogs", ports.catalog, "lb", "REST API through the load balancer")
    ingress("catalogs", ports.catalog, "engines", "REST API directly from the engines")
    # The catalogs' setup jobs (catalog, warehouse) run in this group and call the REST APIs.
    egress("catalogs", ports.catalog, "lb", "setup jobs call the catalogs' management APIs")
    ingress("lb", ports.catalog, "catalogs", "the catalogs' setup jobs")
    egress("catalogs", HTTPS, "anywhere", "S3, STS, Secrets Manager, image registries")
    egress("engines", ports.catalog, "lb", "catalogs through the load balancer")
    egress("engines", ports.catalog, "catalogs", "catalogs directly")
    egress("engines", HTTPS, "anywhere", "S3 (vended credentials), image registries")
    if spec.aws.kafka_msk:
        egress("connect", HTTPS, "anywhere", "Secrets Manager, STS")
    # What each service asks to be reached by (its port, from a group), with the matching egress.
    for hop, port in declared_ingress(spec):
        for group in (hop.group, hop.source):
            if group not in sgs:
                raise ValueError(f"an aws ingress names the security group {group!r}, which this stack's network does "
                                 f"not have; it has: {', '.join(sgs)}")
        ingress(hop.group, port, hop.source, hop.why, to_port=hop.to_port)
        egress(hop.source, port, hop.group, hop.back or hop.why, to_port=hop.to_port)

    namespace = aws.servicediscovery.PrivateDnsNamespace(
        f"{name}-namespace", name=f"{name}.internal", vpc=vpc.id,
        description=f"{name}: services reachable as <service>.{name}.internal inside the VPC",
        tags=ctx.tags(LAYER), opts=opts,
    )
    return Network(vpc, private_subnets, public_subnets, private_rts, sgs, namespace)


def cname(ctx: AwsContext, service: str, hostname: pulumi.Input[str], network: Network,
          opts: pulumi.ResourceOptions, tags: dict[str, str]) -> None:
    """``<service>.<name>.internal`` as a CNAME to an AWS-managed name (RDS endpoint, internal ALB)."""
    spec = ctx.spec
    entry = aws.servicediscovery.Service(
        f"{spec.name}-{service}-dns", name=service,
        description=f"{host_of(spec, service, Side.INTERNAL)} -> the managed endpoint in front of {service}",
        dns_config={"namespace_id": network.namespace.id, "dns_records": [{"type": "CNAME", "ttl": 30}],
                    "routing_policy": "WEIGHTED"},
        tags=tags, opts=opts,
    )
    aws.servicediscovery.Instance(
        f"{spec.name}-{service}-dns", instance_id=f"{service}-endpoint", service_id=entry.id,
        attributes={"AWS_INSTANCE_CNAME": hostname}, opts=opts,
    )

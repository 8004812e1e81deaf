"""The platform's network on aws (governance): which security groups it has and what each admits.

The catalogs' hops (behind one load balancer, reached by the engines and their own setup jobs), what every
tier reaches outside the VPC, and what each service the stack runs on aws declares it is reached by
(``OnAws.ingress``), made by the kit's ``Network``.
"""

from __future__ import annotations

from lakehouse_platform.components.aws.context import AwsContext
from lakehouse_platform.components.aws.network import ANYWHERE, Egress, Hop, Network, NetworkArgs
from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.services.aws_catalogs import CatalogPorts
from lakehouse_platform.services.registry import registry

LAYER = Layer.GOVERNANCE
HTTPS = 443


def security_groups(spec: PlatformSpec) -> dict[str, str]:
    """The platform's security groups: key -> what it holds."""
    groups = {
        "lb": "internal load balancer in front of the catalogs",
        "catalogs": "catalog servers (Polaris, Lakekeeper) and their jobs",
        "engines": "engines: Trino, Spark on EMR Serverless, maintenance tasks",
        "db": "the catalogs' PostgreSQL database",
    }
    if spec.aws.kafka_msk:
        groups["msk"] = "Amazon MSK brokers"
        groups["connect"] = "MSK Connect workers (Debezium)"
    return groups


def declared_ingress(spec: PlatformSpec) -> list[Hop]:
    """Every hop the stack's services ask the network to admit (``OnAws.ingress``), with its port
    number: of each service the stack runs on aws (enabled, or its aws part enabled), in registry order."""
    parts = {part.name for part in registry().aws_parts(spec)}
    found = []
    for definition in registry():
        if definition.name not in spec.enabled_services() and definition.name not in parts:
            continue
        for hop in definition.aws.ingress:
            if hop.when is not None and not hop.when(spec):
                continue
            if isinstance(hop.port, int):
                port = hop.port
            else:
                ports = spec.services[definition.name].ports
                if hop.port not in ports:
                    raise ValueError(f"services.{definition.name}.ports: its aws ingress admits port {hop.port!r}, "
                                     f"which it does not declare; it declares: {', '.join(ports) or 'none'}")
                port = ports[hop.port].internal
            found.append(Hop(hop.group, port, hop.source, hop.why, back=hop.back, to_port=hop.to_port))
    return found


def traffic(spec: PlatformSpec) -> tuple[list[Hop], list[Egress]]:
    """(hops, egress) of the platform's network: the catalogs', what leaves the VPC, what services declare."""
    ports = CatalogPorts.of(spec)
    hops = [Hop("lb", ports.catalog, "engines", "engines call the catalogs' REST API", with_egress=False)]
    egress = [Egress("lb", ports.catalog, "catalogs", "forward to the catalogs")]
    for health in ports.catalog_health:
        egress.append(Egress("lb", health, "catalogs", "health checks on a catalog's management port"))
        hops.append(Hop("catalogs", health, "lb", "health checks", with_egress=False))
    hops += [Hop("catalogs", ports.catalog, "lb", "REST API through the load balancer", with_egress=False),
             Hop("catalogs", ports.catalog, "engines", "REST API directly from the engines", with_egress=False),
             # The catalogs' setup jobs (catalog, warehouse) run in this group and call the REST APIs.
             Hop("lb", ports.catalog, "catalogs", "the catalogs' setup jobs", with_egress=False)]
    egress += [Egress("catalogs", ports.catalog, "lb", "setup jobs call the catalogs' management APIs"),
               Egress("catalogs", HTTPS, ANYWHERE, "S3, STS, Secrets Manager, image registries"),
               Egress("engines", ports.catalog, "lb", "catalogs through the load balancer"),
               Egress("engines", ports.catalog, "catalogs", "catalogs directly"),
               Egress("engines", HTTPS, ANYWHERE, "S3 (vended credentials), image registries")]
    if spec.aws.kafka_msk:
        egress.append(Egress("connect", HTTPS, ANYWHERE, "Secrets Manager, STS"))
    return hops + declared_ingress(spec), egress


def platform_network(ctx: AwsContext) -> Network:
    """The platform's VPC, security groups and ``<name>.internal`` namespace."""
    spec = ctx.spec
    hops, egress = traffic(spec)
    return Network(f"{spec.name}-network", NetworkArgs(
        ctx=ctx, layer=LAYER, cidr=spec.aws.vpc_cidr, availability_zones=spec.aws.availability_zones,
        namespace=f"{spec.name}.internal", groups=security_groups(spec), hops=hops, egress=egress,
        tags=ctx.tags(LAYER)))

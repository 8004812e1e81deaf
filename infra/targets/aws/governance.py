"""Governance on AWS: who may reach, read and write what.

- the network: VPC, private subnets per AZ (public ones only for NAT egress), an S3 gateway
  endpoint, security groups that admit each hop from exactly one place, and the Cloud Map
  namespace ``<name>.internal`` every service is reached by;
- the customer-managed KMS key everything is encrypted with, and its key policy;
- the credential-vending role the catalogs assume to hand engines short-lived, prefix-scoped
  credentials (the only identity with S3 rights on the warehouse);
- the catalogs' task roles, and per task definition execution roles that may read only their
  own secrets and write only their own log group;
- the Secrets Manager secrets the tasks read (the database password stays in the RDS-managed one).
"""

from __future__ import annotations

import functools
import ipaddress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_aws as aws

from infra.services import registry
from infra.services.placeholders import KMS_KEY_ARN, VENDING_ROLE_ARN
from infra.spec import Layer, PlatformSpec
from infra.targets.aws.common import assume_role_policy, log_group_name, policy_document

if TYPE_CHECKING:
    from infra.targets.aws import AwsContext

LAYER = Layer.GOVERNANCE
MSK_IAM_PORT = 9098  # MSK's IAM-authenticated TLS listener (fixed by AWS)
HTTPS = 443
ANYWHERE = "0.0.0.0/0"


def catalog_servers(spec: PlatformSpec) -> list[str]:
    """The enabled catalogs that run as ECS services on aws (in registry order)."""
    return [name for name, d in registry().catalogs().items() if d.ecs is not None and name in spec.enabled_services()]


@dataclass(frozen=True)
class Ports:
    """The ports the security groups admit, from the services' specs."""

    catalog: int  # every catalog server's REST port (one load balancer listener)
    catalog_health: tuple[int, ...]  # health-check ports that differ from the REST port
    trino: int
    postgres: int

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
        return cls(catalog=catalog, catalog_health=tuple(health), trino=spec.services["trino"].ports["http"].internal,
                   postgres=spec.services["postgres"].ports["pg"].internal)


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


@dataclass
class GovernanceState:
    """What governance hands to every other layer (the role registries grow as layers ask for roles)."""

    region: str
    account_id: pulumi.Output[str]
    partition: pulumi.Output[str]
    key: aws.kms.Key
    network: Network
    vending_role: aws.iam.Role
    task_roles: dict[str, aws.iam.Role]
    secrets: dict[str, aws.secretsmanager.Secret]
    # secret placeholder name -> what an ECS ``secrets`` entry's valueFrom is
    secret_refs: dict[str, pulumi.Input[str]] = field(default_factory=dict)
    execution_roles: dict[str, aws.iam.Role] = field(default_factory=dict)
    roles: dict[str, aws.iam.Role] = field(default_factory=dict)
    # identity -> its IAM role (writers and readers; the platform's identity is the deployer's own)
    identity_roles: dict[str, aws.iam.Role] = field(default_factory=dict)
    replica_keys: dict[str, aws.kms.Key] = field(default_factory=dict)

    def arn(self, service: str, resource: pulumi.Input[str], region: bool = True) -> pulumi.Output[str]:
        """An ARN in this account and partition (``region=False`` for global services such as IAM)."""
        where = self.region if region else ""
        return pulumi.Output.concat("arn:", self.partition, f":{service}:{where}:", self.account_id, ":", resource)

    def layer_outputs(self) -> dict[str, Any]:
        return {
            "vpc": self.network.vpc.id,
            "kms_key": self.key.arn,
            "vending_role": self.vending_role.arn,
            "namespace": self.network.namespace.name,
            "security_groups": {name: sg.id for name, sg in self.network.security_groups.items()},
            "identity_roles": {name: role.arn for name, role in self.identity_roles.items()},
        }

    def stack_outputs(self) -> dict[str, Any]:
        return {
            "vpc_id": self.network.vpc.id,
            "private_subnet_ids": self.network.private_subnet_ids,
            "kms_key_arn": self.key.arn,
            "vending_role_arn": self.vending_role.arn,
            "service_namespace": self.network.namespace.name,
            "identity_role_arns": {name: role.arn for name, role in self.identity_roles.items()},
        }


def bucket_arn(partition: pulumi.Input[str], bucket: str, path: str = "") -> pulumi.Output[str]:
    return pulumi.Output.concat("arn:", partition, f":s3:::{bucket}{path}")


def build(ctx: AwsContext) -> GovernanceState:
    spec = ctx.spec
    opts = ctx.opts(LAYER)
    identity = aws.get_caller_identity_output(opts=ctx.invoke_opts())
    partition = aws.get_partition_output(opts=ctx.invoke_opts()).partition
    account_id = identity.account_id

    network = _network(ctx)

    # Task roles of the catalog servers: the only principals that may assume the vending role.
    # Governance resources made for a catalog are governance's (owner), labelled with the catalog they serve.
    task_roles = {
        name: aws.iam.Role(
            f"{spec.name}-{name}-task",
            description=f"{name}: the catalog's own identity; may only assume the credential-vending role",
            assume_role_policy=assume_role_policy("ecs-tasks.amazonaws.com", account_id),
            tags=ctx.tags(LAYER, name),
            opts=opts,
        )
        for name in catalog_servers(spec)
    }
    vending_role = aws.iam.Role(
        f"{spec.name}-credential-vending",
        description="Assumed by the catalogs to vend short-lived credentials scoped to a table's prefix",
        max_session_duration=3600,
        assume_role_policy=policy_document({
            "Sid": "CatalogsVendCredentials",
            "Effect": "Allow",
            "Principal": {"AWS": [role.arn for role in task_roles.values()]},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
        }),
        tags=ctx.tags(LAYER),
        opts=opts,
    )
    key = aws.kms.Key(
        f"{spec.name}-key",
        description=f"{spec.name}: encrypts the warehouse, catalog database, secrets, logs, backups",
        enable_key_rotation=True,
        deletion_window_in_days=30,
        policy=_key_policy(spec.aws.region, account_id, partition, vending_role),
        tags=ctx.tags(LAYER),
        opts=opts,
    )
    aws.kms.Alias(f"{spec.name}-key-alias", name=f"alias/{spec.name}-{pulumi.get_stack()}", target_key_id=key.key_id,
                  opts=opts)
    # What the catalogs' setup jobs name in their storage configuration.
    ctx.platform_values.update({VENDING_ROLE_ARN: vending_role.arn, KMS_KEY_ARN: key.arn})

    warehouse = bucket_arn(partition, spec.storage.bucket)
    aws.iam.RolePolicy(
        f"{spec.name}-credential-vending-warehouse",
        role=vending_role.id,
        policy=policy_document(
            {"Sid": "ListWarehouse", "Effect": "Allow", "Action": ["s3:ListBucket", "s3:GetBucketLocation"],
             "Resource": warehouse},
            {"Sid": "ReadWriteWarehouseObjects", "Effect": "Allow",
             "Action": ["s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "s3:DeleteObject",
                        "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"],
             "Resource": bucket_arn(partition, spec.storage.bucket, "/*")},
            {"Sid": "UseWarehouseKey", "Effect": "Allow",
             "Action": ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:GenerateDataKeyWithoutPlaintext"],
             "Resource": key.arn},
        ),
        opts=opts,
    )
    for name, role in task_roles.items():
        aws.iam.RolePolicy(
            f"{spec.name}-{name}-task-assume-vending",
            role=role.id,
            policy=policy_document({
                "Sid": "AssumeVendingRole", "Effect": "Allow", "Action": ["sts:AssumeRole", "sts:TagSession"],
                "Resource": vending_role.arn,
            }),
            opts=opts,
        )

    # Every secret an enabled service declares, unless AWS keeps it itself (RDS's master password).
    secrets: dict[str, aws.secretsmanager.Secret] = {}
    for definition in registry():
        if definition.name not in spec.enabled_services():
            continue
        for item in definition.secrets:
            if ctx.spec.target in item.managed_on or item.name in secrets:
                continue
            secret = aws.secretsmanager.Secret(
                f"{spec.name}-{item.name}",
                description=f"{item.name} (read by the tasks that need it, through their execution role)",
                kms_key_id=key.arn,
                recovery_window_in_days=7,
                tags=ctx.tags(LAYER, definition.name),
                opts=opts,
            )
            aws.secretsmanager.SecretVersion(
                f"{spec.name}-{item.name}-value",
                secret_id=secret.id,
                secret_string=ctx.secrets[item.name],  # already a Pulumi secret
                opts=opts,
            )
            secrets[item.name] = secret
        # The TLS keys the platform issued for the service (infra.resources): tasks read them like any secret.
        for cert in definition.certificates:
            key_name = f"{cert.name}-pem"
            if key_name in secrets or key_name not in ctx.secrets:
                continue
            secret = aws.secretsmanager.Secret(
                f"{spec.name}-{key_name}", description=f"{cert.name}: TLS key and certificate of {definition.name}",
                kms_key_id=key.arn, recovery_window_in_days=7, tags=ctx.tags(LAYER, definition.name), opts=opts,
            )
            aws.secretsmanager.SecretVersion(f"{spec.name}-{key_name}-value", secret_id=secret.id,
                                             secret_string=ctx.secrets[key_name], opts=opts)
            secrets[key_name] = secret

    return GovernanceState(
        region=spec.aws.region, account_id=account_id, partition=partition, key=key, network=network,
        vending_role=vending_role, task_roles=task_roles, secrets=secrets,
        secret_refs={name: secret.arn for name, secret in secrets.items()},
        identity_roles=_identity_roles(ctx, account_id, partition, key),
    )


#: S3 actions on the warehouse's objects by identity role; listing and reading are every identity's.
OBJECT_ACTIONS = {
    "reader": ["s3:GetObject", "s3:GetObjectVersion"],
    "writer": ["s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload",
               "s3:ListMultipartUploadParts"],
}
KEY_ACTIONS = {
    "reader": ["kms:Decrypt", "kms:DescribeKey"],
    "writer": ["kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey"],
}


def _identity_roles(ctx: AwsContext, account_id: pulumi.Output[str], partition: pulumi.Output[str],
                    key: aws.kms.Key) -> dict[str, aws.iam.Role]:
    """One IAM role per writer and reader identity: the same rights as the lab store's S3 identity of that name.

    Principals of the account (people, CI) and the platform's own tasks (the exporter reads as the reader)
    may assume them; the platform's identity is whoever deploys, so it gets none.
    """
    spec = ctx.spec
    opts = ctx.opts(LAYER)
    root = pulumi.Output.concat("arn:", partition, ":iam::", account_id, ":root")
    roles: dict[str, aws.iam.Role] = {}
    for name in spec.identities:
        role_kind = spec.role_of_identity(name)
        if role_kind == "platform":
            continue
        role = aws.iam.Role(
            f"{spec.name}-identity-{name}",
            description=f"identity {name} ({role_kind}): {'reads' if role_kind == 'reader' else 'reads and writes'} "
                        "the warehouse; the same rights as the lab store's identity of that name",
            assume_role_policy=policy_document(
                {"Sid": "AccountPrincipalsAssume", "Effect": "Allow", "Principal": {"AWS": root},
                 "Action": "sts:AssumeRole"},
                {"Sid": "PlatformTasksAssume", "Effect": "Allow", "Principal": {"Service": "ecs-tasks.amazonaws.com"},
                 "Action": "sts:AssumeRole", "Condition": {"StringEquals": {"aws:SourceAccount": account_id}}},
            ),
            tags=ctx.tags(LAYER, **{"lakehouse.identity": name}),
            opts=opts,
        )
        aws.iam.RolePolicy(
            f"{spec.name}-identity-{name}-warehouse", role=role.id,
            policy=policy_document(
                {"Sid": "ListWarehouse", "Effect": "Allow", "Action": ["s3:ListBucket", "s3:GetBucketLocation"],
                 "Resource": bucket_arn(partition, spec.storage.bucket)},
                {"Sid": "WarehouseObjects", "Effect": "Allow", "Action": OBJECT_ACTIONS[role_kind],
                 "Resource": bucket_arn(partition, spec.storage.bucket, "/*")},
                {"Sid": "WarehouseKey", "Effect": "Allow", "Action": KEY_ACTIONS[role_kind], "Resource": key.arn},
            ),
            opts=opts,
        )
        roles[name] = role
    return roles


def _key_policy(region: str, account_id: pulumi.Output[str], partition: pulumi.Output[str],
                vending_role: aws.iam.Role) -> pulumi.Output[str]:
    root = pulumi.Output.concat("arn:", partition, ":iam::", account_id, ":root")
    return policy_document(
        {"Sid": "AccountAdministers", "Effect": "Allow", "Principal": {"AWS": root}, "Action": "kms:*",
         "Resource": "*"},
        {"Sid": "VendingRoleUsesKey", "Effect": "Allow", "Principal": {"AWS": vending_role.arn},
         "Action": ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:GenerateDataKeyWithoutPlaintext",
                    "kms:DescribeKey"],
         "Resource": "*"},
        {"Sid": "CloudWatchLogsEncrypt", "Effect": "Allow",
         "Principal": {"Service": f"logs.{region}.amazonaws.com"},
         "Action": ["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"],
         "Resource": "*",
         "Condition": {"ArnLike": {"kms:EncryptionContext:aws:logs:arn": pulumi.Output.concat(
             "arn:", partition, f":logs:{region}:", account_id, ":log-group:*")}}},
        {"Sid": "CloudWatchAlarmsPublishToEncryptedTopic", "Effect": "Allow",
         "Principal": {"Service": "cloudwatch.amazonaws.com"},
         "Action": ["kms:Decrypt", "kms:GenerateDataKey*"], "Resource": "*"},
        {"Sid": "ManagedPrometheusPublishesToEncryptedTopic", "Effect": "Allow",
         "Principal": {"Service": "aps.amazonaws.com"},
         "Action": ["kms:Decrypt", "kms:GenerateDataKey*", "kms:DescribeKey"], "Resource": "*",
         "Condition": {"StringEquals": {"aws:SourceAccount": account_id}}},
    )


def _zone(names: list[str], index: int) -> str:
    return names[index]


def _network(ctx: AwsContext) -> Network:
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
    egress("catalogs", ports.postgres, "db", "the catalog database")
    # The catalogs' setup jobs (catalog, warehouse) run in this group and call the REST APIs.
    egress("catalogs", ports.catalog, "lb", "setup jobs call the catalogs' management APIs")
    ingress("lb", ports.catalog, "catalogs", "the catalogs' setup jobs")
    egress("catalogs", HTTPS, "anywhere", "S3, STS, Secrets Manager, image registries")
    ingress("db", ports.postgres, "catalogs", "only the catalogs reach the database")
    ingress("engines", ports.trino, "engines", "Trino coordinator and workers; maintenance tasks")
    egress("engines", ports.trino, "engines", "Trino coordinator and workers")
    egress("engines", ports.catalog, "lb", "catalogs through the load balancer")
    egress("engines", ports.catalog, "catalogs", "catalogs directly")
    egress("engines", HTTPS, "anywhere", "S3 (vended credentials), image registries")
    if spec.aws.kafka_msk:
        ingress("msk", MSK_IAM_PORT, "engines", "Kafka clients (IAM auth, TLS)")
        ingress("msk", MSK_IAM_PORT, "connect", "Debezium on MSK Connect")
        ingress("msk", 9092, "msk", "broker to broker", to_port=MSK_IAM_PORT)
        egress("msk", 9092, "msk", "broker to broker", to_port=MSK_IAM_PORT)
        egress("engines", MSK_IAM_PORT, "msk", "Kafka clients")
        egress("connect", MSK_IAM_PORT, "msk", "Debezium writes change events")
        egress("connect", ports.postgres, "db", "Debezium reads the bookshop's WAL")
        egress("connect", HTTPS, "anywhere", "Secrets Manager, STS")
        ingress("db", ports.postgres, "connect", "Debezium (change data capture of the bookshop)")

    namespace = aws.servicediscovery.PrivateDnsNamespace(
        f"{name}-namespace", name=f"{name}.internal", vpc=vpc.id,
        description=f"{name}: services reachable as <service>.{name}.internal inside the VPC",
        tags=ctx.tags(LAYER), opts=opts,
    )
    return Network(vpc, private_subnets, public_subnets, private_rts, sgs, namespace)


# -- roles other layers ask for (always children of governance) --------------------------------


def execution_role(ctx: AwsContext, gov: GovernanceState, family: str, log_sources: list[str],
                   secret_names: list[str], secret_refs: dict[str, pulumi.Input[str]] | None = None) -> aws.iam.Role:
    """The ECS execution role of one task definition: its own log groups and its own secrets, nothing else."""
    spec = ctx.spec
    if family in gov.execution_roles:
        return gov.execution_roles[family]
    opts = ctx.governance_opts()
    role = aws.iam.Role(
        f"{spec.name}-{family}-execution",
        description=f"ECS execution role of {family}: pulls its image, writes its logs, reads its secrets",
        assume_role_policy=assume_role_policy("ecs-tasks.amazonaws.com", gov.account_id),
        tags=ctx.tags(LAYER, **{"lakehouse.task": family}),
        opts=opts,
    )
    statements: list[dict[str, Any]] = [{
        "Sid": "WriteOwnLogs", "Effect": "Allow", "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
        "Resource": [gov.arn("logs", f"log-group:{log_group_name(spec, source)}:*") for source in log_sources],
    }]
    known = secret_refs if secret_refs is not None else gov.secret_refs
    refs = [known[name] for name in secret_names]
    if refs:
        statements.append({
            "Sid": "ReadOwnSecrets", "Effect": "Allow", "Action": ["secretsmanager:GetSecretValue"],
            # ECS references may carry a JSON key suffix (:password::); the policy names the secret itself.
            "Resource": [pulumi.Output.from_input(ref).apply(secret_arn) for ref in refs],
        })
        statements.append({
            "Sid": "DecryptOwnSecrets", "Effect": "Allow", "Action": ["kms:Decrypt"], "Resource": gov.key.arn,
            "Condition": {"StringEquals": {"kms:ViaService": f"secretsmanager.{spec.aws.region}.amazonaws.com"}},
        })
    aws.iam.RolePolicy(f"{spec.name}-{family}-execution", role=role.id, policy=policy_document(*statements),
                       opts=opts)
    gov.execution_roles[family] = role
    return role


def secret_arn(reference: str) -> str:
    """The secret's ARN from an ECS ``valueFrom`` (which may end in ``:json-key:version-stage:version-id``)."""
    parts = reference.split(":")
    return ":".join(parts[:7]) if len(parts) > 7 else reference


def service_role(ctx: AwsContext, gov: GovernanceState, key: str, principal: str, description: str,
                 statements: list[dict[str, Any]], managed: list[str] | None = None,
                 layer: Layer = LAYER) -> aws.iam.Role:
    """A role an AWS service assumes on the platform's behalf (scheduler, backup, replication, EMR, MSK Connect)."""
    spec = ctx.spec
    opts = ctx.governance_opts()
    role = aws.iam.Role(
        f"{spec.name}-{key}",
        description=description,
        assume_role_policy=assume_role_policy(principal, gov.account_id),
        tags=ctx.tags(LAYER, **{"lakehouse.used-by": layer.value}),
        opts=opts,
    )
    if statements:
        aws.iam.RolePolicy(f"{spec.name}-{key}", role=role.id, policy=policy_document(*statements), opts=opts)
    for index, arn in enumerate(managed or []):
        aws.iam.RolePolicyAttachment(
            f"{spec.name}-{key}-managed-{index}", role=role.id,
            policy_arn=pulumi.Output.concat("arn:", gov.partition, f":iam::aws:policy/{arn}"), opts=opts,
        )
    gov.roles[key] = role
    return role


def grant(ctx: AwsContext, key: str, role: aws.iam.Role, statements: list[dict[str, Any]]) -> aws.iam.RolePolicy:
    """An inline policy on a governance role, added by the layer that creates what it grants access to."""
    return aws.iam.RolePolicy(f"{ctx.spec.name}-{key}", role=role.id, policy=policy_document(*statements),
                              opts=ctx.governance_opts())


def replica_key(ctx: AwsContext, gov: GovernanceState, region: str) -> aws.kms.Key:
    """The KMS key of the replica region (keys are regional); the platform's key when it is the same region."""
    spec = ctx.spec
    if region == spec.aws.region:
        return gov.key
    if region not in gov.replica_keys:
        root = pulumi.Output.concat("arn:", gov.partition, ":iam::", gov.account_id, ":root")
        gov.replica_keys[region] = aws.kms.Key(
            f"{spec.name}-replica-key",
            region=region,
            description=f"{spec.name}: encrypts the replica bucket in {region}",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            policy=policy_document({"Sid": "AccountAdministers", "Effect": "Allow", "Principal": {"AWS": root},
                                    "Action": "kms:*", "Resource": "*"}),
            tags=ctx.tags(LAYER),
            opts=ctx.governance_opts(),
        )
    return gov.replica_keys[region]

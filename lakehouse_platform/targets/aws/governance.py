"""Governance on AWS: who may reach, read and write what.

- the network (``network``): VPC, subnets, security groups, the ``<name>.internal`` namespace;
- the customer-managed KMS key everything is encrypted with, and its key policy;
- the credential-vending role the catalogs assume to hand engines short-lived, prefix-scoped
  credentials (the only identity with S3 rights on the warehouse);
- the catalogs' task roles, and per task definition execution roles that may read only their
  own secrets and write only their own log group;
- the Secrets Manager secrets the tasks read (the database password stays in the RDS-managed one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from lakehouse_platform.components.aws import network as network_module
from lakehouse_platform.components.aws.common import assume_role_policy, log_group_name, policy_document
from lakehouse_platform.components.aws.context import AwsContext
from lakehouse_platform.components.aws.network import Network
from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.placeholders import KMS_KEY_ARN, VENDING_ROLE_ARN
from lakehouse_platform.services import registry
from lakehouse_platform.services.catalogs import table_prefixes

LAYER = Layer.GOVERNANCE


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

    network = network_module.build(ctx)

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
        for name in network_module.catalog_servers(spec)
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
            secrets[item.name] = _secret(ctx, key, item.name, definition.name,
                                         f"{item.name} (read by the tasks that need it, through their execution role)")
        # The TLS keys the platform issued for the service (lakehouse_platform.resources): tasks read them like any
        # secret.
        for cert in definition.certificates:
            key_name = f"{cert.name}-pem"
            if key_name in secrets or key_name not in ctx.secrets:
                continue
            secrets[key_name] = _secret(ctx, key, key_name, definition.name,
                                        f"{cert.name}: TLS key and certificate of {definition.name}")
        # Each identity's client secret at a catalog where it is a principal of its own (Polaris): the catalog's
        # setup job sets it there, the tasks acting as that identity read it.
        principals = definition.catalog.principals if definition.catalog is not None else None
        if principals is not None:
            for member in spec.identities:
                name = principals.secret_name(member)
                secrets[name] = _secret(ctx, key, name, definition.name,
                                        f"{name}: {member}'s client secret at {definition.name}")

    return GovernanceState(
        region=spec.aws.region, account_id=account_id, partition=partition, key=key, network=network,
        vending_role=vending_role, task_roles=task_roles, secrets=secrets,
        secret_refs={name: secret.arn for name, secret in secrets.items()},
        identity_roles=_identity_roles(ctx, account_id, partition, key),
    )


def _secret(ctx: AwsContext, key: aws.kms.Key, name: str, owner: str, description: str) -> aws.secretsmanager.Secret:
    """A Secrets Manager secret holding the stack's secret ``name`` (already a Pulumi secret), under the key."""
    spec = ctx.spec
    opts = ctx.opts(LAYER)
    secret = aws.secretsmanager.Secret(f"{spec.name}-{name}", description=description, kms_key_id=key.arn,
                                       recovery_window_in_days=7, tags=ctx.tags(LAYER, owner), opts=opts)
    aws.secretsmanager.SecretVersion(f"{spec.name}-{name}-value", secret_id=secret.id,
                                     secret_string=ctx.secrets[name], opts=opts)
    return secret


#: S3 actions on the warehouse's objects each grant action needs (IAM's names).
OBJECT_ACTIONS = {
    "read": ["s3:GetObject", "s3:GetObjectVersion"],
    "write": ["s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"],
}
KEY_ACTIONS = {
    "read": ["kms:Decrypt", "kms:DescribeKey"],
    "write": ["kms:Encrypt", "kms:GenerateDataKey"],
}


def warehouse_statements(spec: PlatformSpec, name: str, partition: pulumi.Input[str]) -> list[dict[str, Any]]:
    """An identity's S3 statements on the warehouse, from its grants (``PlatformSpec.access_of``, the one decision).

    ``*``'s rights hold on every key of the bucket; a known namespace's rights beyond them on its keys under each
    catalog's table prefix (``catalogs.table_prefixes``), listing included (``s3:prefix``); a namespace that
    gives less than ``*`` is carved out by a Deny (IAM can say what SeaweedFS's identities cannot).
    """
    bucket = spec.storage.bucket
    access = spec.access_of(name)
    everywhere = access["*"]
    prefixes = table_prefixes(spec)
    statements: list[dict[str, Any]] = [
        {"Sid": "LocateWarehouse", "Effect": "Allow", "Action": ["s3:GetBucketLocation"],
         "Resource": bucket_arn(partition, bucket)}]
    if "read" in everywhere:
        statements.append({"Sid": "ListWarehouse", "Effect": "Allow", "Action": ["s3:ListBucket"],
                           "Resource": bucket_arn(partition, bucket)})
    for action in ("read", "write"):
        if action in everywhere:
            statements.append({"Sid": f"{action.title()}Warehouse", "Effect": "Allow",
                               "Action": OBJECT_ACTIONS[action], "Resource": bucket_arn(partition, bucket, "/*")})
    for namespace, actions in access.items():
        if namespace == "*":
            continue
        keys = [f"{prefix}{namespace}/*" for prefix in prefixes]
        sid = "".join(part.title() for part in namespace.split("_"))
        if not keys:
            continue
        objects = [bucket_arn(partition, bucket, f"/{key}") for key in keys]
        for action in ("read", "write"):
            if action in actions and action not in everywhere:
                statements.append({"Sid": f"{action.title()}{sid}", "Effect": "Allow",
                                   "Action": OBJECT_ACTIONS[action], "Resource": objects})
            if action in everywhere and action not in actions:
                statements.append({"Sid": f"Deny{action.title()}{sid}", "Effect": "Deny",
                                   "Action": OBJECT_ACTIONS[action], "Resource": objects})
        listing = {"Action": ["s3:ListBucket"], "Resource": bucket_arn(partition, bucket),
                   "Condition": {"StringLike": {"s3:prefix": keys}}}
        if "read" in actions and "read" not in everywhere:
            statements.append({"Sid": f"List{sid}", "Effect": "Allow", **listing})
        if "read" in everywhere and "read" not in actions:
            statements.append({"Sid": f"DenyList{sid}", "Effect": "Deny", **listing})
    return statements


def _identity_roles(ctx: AwsContext, account_id: pulumi.Output[str], partition: pulumi.Output[str],
                    key: aws.kms.Key) -> dict[str, aws.iam.Role]:
    """One IAM role per identity other than the platform's: its grants on the warehouse, per prefix
    (``warehouse_statements``), and the key for what it may read and write.

    Principals of the account (people, CI) and the platform's own tasks (the exporter reads as
    ``governance.exporter``) may assume them; the platform's identity is whoever deploys, so it gets none.
    """
    spec = ctx.spec
    opts = ctx.opts(LAYER)
    root = pulumi.Output.concat("arn:", partition, ":iam::", account_id, ":root")
    roles: dict[str, aws.iam.Role] = {}
    for name in spec.identities:
        role_kind = spec.role_of_identity(name)
        if role_kind == "platform":
            continue
        granted = {a for actions in spec.access_of(name).values() for a in actions}
        role = aws.iam.Role(
            f"{spec.name}-identity-{name}",
            description=f"identity {name} ({role_kind}): its grants on the warehouse, per namespace prefix; the same "
                        "grants as its catalog principal and Trino user",
            assume_role_policy=policy_document(
                {"Sid": "AccountPrincipalsAssume", "Effect": "Allow", "Principal": {"AWS": root},
                 "Action": "sts:AssumeRole"},
                {"Sid": "PlatformTasksAssume", "Effect": "Allow", "Principal": {"Service": "ecs-tasks.amazonaws.com"},
                 "Action": "sts:AssumeRole", "Condition": {"StringEquals": {"aws:SourceAccount": account_id}}},
            ),
            tags=ctx.tags(LAYER, **{"lakehouse.identity": name}),
            opts=opts,
        )
        key_actions = [a for action in ("read", "write") if action in granted for a in KEY_ACTIONS[action]]
        statements = warehouse_statements(spec, name, partition)
        if key_actions:
            statements.append({"Sid": "WarehouseKey", "Effect": "Allow", "Action": key_actions, "Resource": key.arn})
        aws.iam.RolePolicy(f"{spec.name}-identity-{name}-warehouse", role=role.id,
                           policy=policy_document(*statements), opts=opts)
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


def task_secret(ctx: AwsContext, gov: GovernanceState, name: str, owner: str) -> pulumi.Input[str]:
    """The Secrets Manager reference of the stack's secret ``name`` for a task that reads it: a service's own
    (built with governance), or one made here on first ask (an identity's password, an issued certificate)."""
    if name not in gov.secret_refs:
        if name not in ctx.secrets:
            raise KeyError(f"no secret {name!r} in the stack; known: {', '.join(sorted(ctx.secrets))}")
        gov.secrets[name] = _secret(ctx, gov.key, name, owner, f"{name} (read by {owner}, through its execution role)")
        gov.secret_refs[name] = gov.secrets[name].arn
    return gov.secret_refs[name]


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

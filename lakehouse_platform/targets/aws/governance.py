"""Governance on AWS: who may reach, read and write what.

- the network (``network.platform_network``: the kit's ``Network`` with the platform's security groups);
- the customer-managed KMS key everything is encrypted with, and its key policy;
- the credential-vending role the catalogs assume to hand engines short-lived, prefix-scoped
  credentials (the only identity with S3 rights on the warehouse);
- the catalogs' task roles, and one IAM role per identity from its grants (the execution and service roles
  the other pieces ask for are the kit's: ``components.aws.iam``);
- the Secrets Manager secrets the tasks read (the database password stays in the RDS-managed one).
"""
from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws as aws

from lakehouse_platform.components.aws.common import assume_role_policy, policy_document
from lakehouse_platform.components.aws.context import AwsContext
from lakehouse_platform.components.aws.iam import GovernanceState, bucket_arn, stack_secret
from lakehouse_platform.components.aws.network import Network
from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.services.aws_catalogs import catalog_servers
from lakehouse_platform.services.catalogs import table_prefixes
from lakehouse_platform.services.registry import registry

LAYER = Layer.GOVERNANCE


def build(ctx: AwsContext, network: Network) -> GovernanceState:
    """The key, the vending role, the catalogs' task roles, the identities' roles and the secrets, in ``network``."""
    spec = ctx.spec
    opts = ctx.opts(LAYER)
    identity = aws.get_caller_identity_output(opts=ctx.invoke_opts())
    partition = aws.get_partition_output(opts=ctx.invoke_opts()).partition
    account_id = identity.account_id

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
        for item in definition.governance.secrets:
            if ctx.spec.target in item.managed_on or item.name in secrets:
                continue
            secrets[item.name] = stack_secret(
                ctx, key.arn, item.name, definition.name,
                f"{item.name} (read by the tasks that need it, through their execution role)")
        # The TLS keys the platform issued for the service (lakehouse_platform.resources): tasks read them like any
        # secret.
        for cert in definition.governance.certificates:
            key_name = f"{cert.name}-pem"
            if key_name in secrets or key_name not in ctx.secrets:
                continue
            secrets[key_name] = stack_secret(ctx, key.arn, key_name, definition.name,
                                             f"{cert.name}: TLS key and certificate of {definition.name}")
        # Each identity's client secret at a catalog where it is a principal of its own (Polaris): the catalog's
        # setup job sets it there, the tasks acting as that identity read it.
        principals = definition.catalog.principals if definition.catalog is not None else None
        if principals is not None:
            for member in spec.identities:
                name = principals.secret_name(member)
                secrets[name] = stack_secret(ctx, key.arn, name, definition.name,
                                             f"{name}: {member}'s client secret at {definition.name}")

    return GovernanceState(
        region=spec.aws.region, account_id=account_id, partition=partition, key=key, network=network,
        vending_role=vending_role, task_roles=task_roles, secrets=secrets,
        secret_refs={name: secret.arn for name, secret in secrets.items()},
        identity_roles=_identity_roles(ctx, account_id, partition, key),
    )


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

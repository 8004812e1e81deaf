"""Who may do what on aws: what governance hands every other piece, and the roles, grants and secrets they ask for.

Every IAM role, policy, KMS key and Secrets Manager secret is a child of the governance layer, whichever piece
asks for it (``AwsContext.governance_opts``): one place answers "who may do what". Each function makes what it is
asked for and returns it; none records it anywhere (the caller keeps what it made).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from lakehouse_platform.components.aws.common import assume_role_policy, log_group_name, policy_document
from lakehouse_platform.components.aws.context import AwsContext
from lakehouse_platform.components.aws.network import Network
from lakehouse_platform.model import Layer

LAYER = Layer.GOVERNANCE


@dataclass(frozen=True)
class GovernanceState:
    """What governance hands to every other piece: the account, the key, the network, the roles and the secrets."""

    region: str
    account_id: pulumi.Output[str]
    partition: pulumi.Output[str]
    key: aws.kms.Key
    network: Network
    vending_role: aws.iam.Role
    task_roles: Mapping[str, aws.iam.Role]
    secrets: Mapping[str, aws.secretsmanager.Secret]
    #: secret placeholder name -> what an ECS ``secrets`` entry's valueFrom is
    secret_refs: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    #: identity -> its IAM role (writers and readers; the platform's identity is the deployer's own)
    identity_roles: Mapping[str, aws.iam.Role] = field(default_factory=dict)

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


def stack_secret(ctx: AwsContext, key_arn: pulumi.Input[str], name: str, owner: str,
                 description: str) -> aws.secretsmanager.Secret:
    """A Secrets Manager secret holding the stack's secret ``name`` (already a Pulumi secret), under the key."""
    spec = ctx.spec
    opts = ctx.governance_opts()
    secret = aws.secretsmanager.Secret(f"{spec.name}-{name}", description=description, kms_key_id=key_arn,
                                       recovery_window_in_days=7, tags=ctx.tags(LAYER, owner), opts=opts)
    aws.secretsmanager.SecretVersion(f"{spec.name}-{name}-value", secret_id=secret.id,
                                     secret_string=ctx.secrets[name], opts=opts)
    return secret


def secret_refs_for(ctx: AwsContext, gov: GovernanceState, names: list[str],
                    owner: str) -> dict[str, pulumi.Input[str]]:
    """The Secrets Manager references of the stack's secrets ``names`` for a task that reads them: governance's
    where it made one, else a secret made here for that task (an identity's password, an issued certificate)."""
    refs: dict[str, pulumi.Input[str]] = {}
    for name in names:
        if name in gov.secret_refs:
            refs[name] = gov.secret_refs[name]
            continue
        if name not in ctx.secrets:
            raise KeyError(f"no secret {name!r} in the stack; known: {', '.join(sorted(ctx.secrets))}")
        refs[name] = stack_secret(ctx, gov.key.arn, name, owner,
                                  f"{name} (read by {owner}, through its execution role)").arn
    return refs


def execution_role(ctx: AwsContext, gov: GovernanceState, family: str, log_sources: list[str],
                   secret_names: list[str], secret_refs: Mapping[str, pulumi.Input[str]] | None = None) -> aws.iam.Role:
    """The ECS execution role of one task definition: its own log groups and its own secrets, nothing else."""
    spec = ctx.spec
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
    return role


def grant(ctx: AwsContext, key: str, role: aws.iam.Role, statements: list[dict[str, Any]]) -> aws.iam.RolePolicy:
    """An inline policy on a governance role, added by the piece that creates what it grants access to."""
    return aws.iam.RolePolicy(f"{ctx.spec.name}-{key}", role=role.id, policy=policy_document(*statements),
                              opts=ctx.governance_opts())


def replica_key(ctx: AwsContext, gov: GovernanceState, region: str) -> aws.kms.Key:
    """The KMS key of the replica region (keys are regional); the platform's key when it is the same region."""
    spec = ctx.spec
    if region == spec.aws.region:
        return gov.key
    root = pulumi.Output.concat("arn:", gov.partition, ":iam::", gov.account_id, ":root")
    return aws.kms.Key(
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


def bucket_arn(partition: pulumi.Input[str], bucket: str, path: str = "") -> pulumi.Output[str]:
    """An S3 bucket's ARN (or of keys under it, ``path``) in the partition."""
    return pulumi.Output.concat("arn:", partition, f":s3:::{bucket}{path}")

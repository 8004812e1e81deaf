"""Spark on aws: an EMR Serverless application in the private subnets, its defaults the stack's spark profile.

A job's runtime role writes its own logs and reads the catalog's credential; table data only through the
catalog's vended credentials. The credential (and any other secret client property) reaches the application's
configuration by reference (``EMR.secret@<arn>``), never as text.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws as aws

from lakehouse_platform.components.aws import iam
from lakehouse_platform.components.aws.common import log_group_name
from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.placeholders import SECRET_TOKEN
from lakehouse_platform.services import profiles
from lakehouse_platform.services.aws_parts import Foundation, PartComponent
from lakehouse_platform.services.catalogs import default_catalog
from lakehouse_platform.services.context import Side
from lakehouse_platform.services.secrets import render

LAYER = Layer.COMPUTE
SPARK = "spark"
EMR_ICEBERG_JAR = "/usr/share/aws/iceberg/lib/iceberg-spark3-runtime.jar"  # Iceberg as EMR ships it


def log_sources(spec: PlatformSpec) -> dict[str, str | None]:
    return {SPARK: None}


class SparkApplication(PartComponent):
    """The EMR Serverless application and its job runtime role."""

    def __init__(self, foundation: Foundation) -> None:
        ctx, spec, gov = foundation.ctx, foundation.spec, foundation.gov
        super().__init__("platform:aws:SparkApplication", f"{spec.name}-{SPARK}", ctx, LAYER)
        network = gov.network
        log_group = log_group_name(spec, SPARK)
        catalog_name = spec.name.replace("-", "_")
        held = self._catalog_secrets(foundation, catalog_name)
        statements: list[dict[str, Any]] = [
            {"Sid": "WriteOwnLogs", "Effect": "Allow",
             "Action": ["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
             "Resource": [gov.arn("logs", f"log-group:{log_group}"), gov.arn("logs", f"log-group:{log_group}:*")]},
            {"Sid": "EncryptOwnLogs", "Effect": "Allow", "Action": ["kms:GenerateDataKey", "kms:Decrypt"],
             "Resource": gov.key.arn},
        ]
        if held:
            statements.append({"Sid": "ReadCatalogCredential", "Effect": "Allow",
                               "Action": ["secretsmanager:GetSecretValue"],
                               "Resource": [holder.arn for holder in held.values()]})
        self.job_role = iam.service_role(
            ctx, gov, "spark-job", "emr-serverless.amazonaws.com",
            "EMR Serverless job runtime role: writes its logs, reads its catalog credential; table data only "
            "through catalog-vended credentials",
            statements,
            layer=LAYER,
        )
        defaults: dict[str, Any] = {
            k: v for k, v in profiles.spark(spec, Side.INTERNAL, catalog_name=catalog_name).items()
            if not k.startswith("spark.jars.packages")}
        # The credential (and any other secret client property) by reference, never in the configuration's text.
        defaults.update({key: pulumi.Output.concat("EMR.secret@", holder.arn) for key, holder in held.items()})
        defaults["spark.jars"] = EMR_ICEBERG_JAR
        vcpu = spec.aws.spark_max_vcpu
        self.application = aws.emrserverless.Application(
            f"{spec.name}-spark",
            name=f"{spec.name}-{pulumi.get_stack()}-spark",
            release_label=spec.aws.emr_release_label,
            type="spark",
            architecture="X86_64",
            network_configuration={"subnet_ids": network.private_subnet_ids,
                                   "security_group_ids": [network.sg("engines").id]},
            auto_start_configuration={"enabled": True},
            auto_stop_configuration={"enabled": True, "idle_timeout_minutes": 15},
            maximum_capacity={"cpu": f"{vcpu} vCPU", "memory": f"{vcpu * 4} GB"},
            monitoring_configuration={"cloudwatch_logging_configuration": {
                "enabled": True, "log_group_name": log_group, "encryption_key_arn": gov.key.arn}},
            runtime_configurations=[{"classification": "spark-defaults", "properties": defaults}],
            tags=ctx.tags(LAYER, **{"lakehouse.engine": SPARK}),
            opts=self.child_opts(depends_on=[foundation.logs.group(SPARK)]),
        )
        self.register_outputs({"application_id": self.application.id})

    def _catalog_secrets(self, foundation: Foundation, catalog_name: str) -> dict[str, aws.secretsmanager.Secret]:
        """Spark property -> a Secrets Manager secret holding its value, for each client property with a secret.

        The default catalog's client properties (its ``CatalogRole``) carry secrets as placeholders, e.g.
        Polaris's ``credential`` (``<identity>:<secret>``). An application's runtime configuration is plain text, so
        each such value lives in a secret of its own (governance's) and the configuration names it.
        """
        ctx, spec, gov = foundation.ctx, foundation.spec, foundation.gov
        catalog = default_catalog(spec).name
        raw = profiles.client_secrets(spec)  # as the writer identity (its own principal, never the catalog's root)
        held: dict[str, aws.secretsmanager.Secret] = {}
        for key, value in raw.items():
            if not SECRET_TOKEN.search(value):
                continue
            logical = f"{spec.name}-spark-catalog-{''.join(c if c.isalnum() else '-' for c in key).strip('-').lower()}"
            holder = aws.secretsmanager.Secret(
                logical,
                description=f"Spark on EMR Serverless: the {catalog} catalog's {key} (client property)",
                kms_key_id=gov.key.arn, recovery_window_in_days=7,
                tags=ctx.tags(Layer.GOVERNANCE, catalog), opts=ctx.governance_opts(),
            )
            aws.secretsmanager.SecretVersion(f"{logical}-value", secret_id=holder.id,
                                             secret_string=render(value, dict(ctx.secrets)),
                                             opts=ctx.governance_opts())
            held[f"spark.sql.catalog.{catalog_name}.{key}"] = holder
        return held

    def layer_outputs(self) -> dict[str, Any]:
        return {"spark_application_id": self.application.id}

    def stack_outputs(self) -> dict[str, Any]:
        return {"spark_application_id": self.application.id, "spark_job_role_arn": self.job_role.arn}


def build(foundation: Foundation) -> SparkApplication:
    return SparkApplication(foundation)

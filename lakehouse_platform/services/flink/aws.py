"""Flink on aws: the streaming job as an Amazon Managed Service for Apache Flink application.

Checkpoints on the job's interval, snapshots on every stop and update (restored from the latest on start),
in the private subnets with the engines' security group; the same job classes and arguments as on docker
and native. No AWS rights on the warehouse: table data goes through the catalog's vended credentials, as
Trino's does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi
import pulumi_aws as aws

from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.services import profiles
from lakehouse_platform.services.capabilities import BROKER, BrokerOnAws
from lakehouse_platform.services.context import ServiceContext, Side
from lakehouse_platform.services.flink.config import (
    JOB,
    JOBMANAGER,
    KAFKA_SOURCE,
    MSF_RUNTIME,
    catalog_secret_env,
    job_args,
    job_source,
)
from lakehouse_platform.services.placeholders import SECRET_TOKEN
from lakehouse_platform.targets.aws import governance as gov_module
from lakehouse_platform.targets.aws.common import log_group_name
from lakehouse_platform.targets.aws.context import AwsComponent
from lakehouse_platform.targets.aws.foundation import Foundation

LAYER = Layer.COMPUTE

#: MSK with IAM authentication, as a Kafka consumer sets it (aws-msk-iam-auth is in the application jar).
MSK_IAM_CONSUMER = {
    "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "AWS_MSK_IAM",
    "kafka.sasl.jaas.config": "software.amazon.msk.auth.iam.IAMLoginModule required;",
    "kafka.sasl.client.callback.handler.class": "software.amazon.msk.auth.iam.IAMClientCallbackHandler",
}


def msf_properties(ctx: ServiceContext, secret_arns: dict[str, Any], kafka: Any = None) -> dict[str, Any]:
    """The job's arguments as the application's runtime properties (group ``lakehouse.job``).

    The same arguments as on docker and native, less the state directory (the service keeps checkpoints
    and snapshots itself). A catalog property holding a secret names its Secrets Manager ARN instead
    (``--catalog-secret.<property>``: the job reads it when it starts); values may be Outputs.
    """
    args = job_args(ctx, Side.INTERNAL, kafka="{kafka}" if kafka is not None else None)
    props: dict[str, Any] = {}
    client = profiles.client_secrets(ctx.spec)
    for key, value in zip(args[::2], args[1::2], strict=True):
        name = key.removeprefix("--")
        if name.startswith("catalog-env."):
            prop = name.removeprefix("catalog-env.")
            template = client[prop]
            names = SECRET_TOKEN.findall(template)
            arns = [pulumi.Output.from_input(secret_arns[n]) for n in names]
            props[f"catalog-secret.{prop}"] = pulumi.Output.all(*arns).apply(_filler(template, names))
        elif value == "{kafka}":
            props[name] = kafka
        else:
            props[name] = value
    if job_source(ctx.spec) == KAFKA_SOURCE:
        props.update(MSK_IAM_CONSUMER)
    return props


def _filler(template: str, names: list[str]) -> Callable[[list[str]], str]:
    """``template`` with each secret placeholder as ``{secretsmanager:<its ARN>}``, once the ARNs resolve."""

    def fill(arns: list[str]) -> str:
        table = dict(zip(names, arns, strict=True))
        return SECRET_TOKEN.sub(lambda m: "{secretsmanager:" + table[m.group(1)] + "}", template)

    return fill


MSF_PROPERTY_GROUP = "lakehouse.job"  # the job reads its arguments from this group (OrdersToIceberg)


FLINK = "flink"  # its log group


def log_sources(spec: PlatformSpec) -> dict[str, str | None]:
    return {FLINK: None}


def enabled(spec: PlatformSpec) -> bool:
    """MSF runs the streaming job: the job manager and the job are both enabled."""
    return JOBMANAGER in spec.enabled_services() and JOB in spec.enabled_services()


class FlinkApplication(AwsComponent):
    """The MSF application, its jar in the compute layer's code bucket, its role and log stream."""

    def __init__(self, foundation: Foundation) -> None:
        ctx, spec, gov = foundation.ctx, foundation.spec, foundation.gov
        super().__init__("platform:aws:FlinkApplication", f"{spec.name}-{JOB}", ctx, LAYER)
        job = spec.flink.job
        network = gov.network
        tags = ctx.tags(LAYER, JOB)
        artifact = ctx.artifacts.cloud.get(JOBMANAGER)
        assert artifact is not None, "the application jar is resolved with the stack (make artifacts STACK=<stack>)"
        bucket = foundation.code_bucket()
        code = aws.s3.BucketObjectv2(
            f"{spec.name}-flink-application-jar", bucket=bucket.bucket.id,
            key=f"flink/{artifact.path.name.removesuffix('.jar')}-{artifact.sha256[:12]}.jar",
            source=pulumi.FileAsset(str(artifact.path)), server_side_encryption="aws:kms", kms_key_id=gov.key.arn,
            tags=tags, opts=self.child_opts(),
        )
        stream = aws.cloudwatch.LogStream(f"{spec.name}-flink-application", name="application",
                                          log_group_name=foundation.logs.group(FLINK).name,
                                              opts=self.child_opts())
        secret_names = sorted({name for value in catalog_secret_env(spec).values()
                               for name in SECRET_TOKEN.findall(value)})
        secret_arns = {name: pulumi.Output.from_input(gov.secret_refs[name]).apply(gov_module.secret_arn)
                       for name in secret_names}
        statements: list[dict[str, Any]] = [
            {"Sid": "ReadApplicationCode", "Effect": "Allow", "Action": ["s3:GetObject", "s3:GetObjectVersion"],
             "Resource": pulumi.Output.concat(bucket.bucket.arn, "/flink/*")},
            {"Sid": "DecryptApplicationCode", "Effect": "Allow", "Action": ["kms:Decrypt"], "Resource": gov.key.arn},
            {"Sid": "WriteOwnLogs", "Effect": "Allow",
             "Action": ["logs:DescribeLogGroups", "logs:DescribeLogStreams", "logs:PutLogEvents"],
             "Resource": [gov.arn("logs", f"log-group:{log_group_name(spec, FLINK)}"),
                          gov.arn("logs", f"log-group:{log_group_name(spec, FLINK)}:*")]},
            {"Sid": "RunInTheVpc", "Effect": "Allow",
             "Action": ["ec2:DescribeVpcs", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups",
                        "ec2:DescribeDhcpOptions", "ec2:DescribeNetworkInterfaces", "ec2:CreateNetworkInterface",
                        "ec2:CreateNetworkInterfacePermission", "ec2:DeleteNetworkInterface"],
             "Resource": "*"},
        ]
        if secret_arns:
            statements += [
                {"Sid": "ReadCatalogCredential", "Effect": "Allow", "Action": ["secretsmanager:GetSecretValue"],
                 "Resource": list(secret_arns.values())},
                {"Sid": "DecryptCatalogCredential", "Effect": "Allow", "Action": ["kms:Decrypt"],
                 "Resource": gov.key.arn,
                 "Condition": {"StringEquals": {
                     "kms:ViaService": f"secretsmanager.{spec.aws.region}.amazonaws.com"}}},
            ]
        kafka_bootstrap = None
        if job_source(spec) == KAFKA_SOURCE:
            msk: BrokerOnAws | None = foundation.provider(BROKER)
            assert msk is not None, "a Kafka source on aws reads Amazon MSK (aws.kafka_msk)"
            kafka_bootstrap = msk.bootstrap_brokers
            cluster = msk.cluster.arn
            statements += [
                {"Sid": "KafkaCluster", "Effect": "Allow",
                 "Action": ["kafka-cluster:Connect", "kafka-cluster:DescribeCluster"], "Resource": cluster},
                {"Sid": "KafkaTopic", "Effect": "Allow",
                 "Action": ["kafka-cluster:DescribeTopic", "kafka-cluster:ReadData"],
                 "Resource": cluster.apply(lambda arn: arn.replace(":cluster/", ":topic/") + f"/{job.kafka_topic}")},
                {"Sid": "KafkaGroup", "Effect": "Allow",
                 "Action": ["kafka-cluster:AlterGroup", "kafka-cluster:DescribeGroup"],
                 "Resource": cluster.apply(lambda arn: arn.replace(":cluster/", ":group/") + f"/{job.kafka_group}")},
            ]
        role = gov_module.service_role(
            ctx, gov, "flink-application", "kinesisanalytics.amazonaws.com",
            "Managed Service for Apache Flink: reads its jar, writes its logs, runs in the VPC, reads the catalog "
            "credential; table data only through catalog-vended credentials",
            statements, layer=LAYER,
        )
        interval_ms = job.checkpoint_interval_s * 1000
        properties = msf_properties(ServiceContext(spec, JOB), secret_arns, kafka_bootstrap)
        self.application = aws.kinesisanalyticsv2.Application(
            f"{spec.name}-flink",
            name=f"{spec.name}-{pulumi.get_stack()}-{job.name}",
            description="the platform's streaming writer: orders into Iceberg, one commit per checkpoint",
            runtime_environment=MSF_RUNTIME,
            service_execution_role=role.arn,
            start_application=True,
            application_configuration={
                "application_code_configuration": {
                    "code_content_type": "ZIPFILE",
                    "code_content": {"s3_content_location": {"bucket_arn": bucket.bucket.arn, "file_key": code.key,
                                                              "object_version": code.version_id}},
                },
                "environment_properties": {"property_groups": [
                    {"property_group_id": MSF_PROPERTY_GROUP, "property_map": properties}]},
                "flink_application_configuration": {
                    "checkpoint_configuration": {"configuration_type": "CUSTOM", "checkpointing_enabled": True,
                                                 "checkpoint_interval": interval_ms,
                                                 "min_pause_between_checkpoints": min(5000, interval_ms // 2)},
                    "monitoring_configuration": {"configuration_type": "CUSTOM", "log_level": "INFO",
                                                 "metrics_level": "APPLICATION"},
                    "parallelism_configuration": {"configuration_type": "CUSTOM", "auto_scaling_enabled": False,
                                                  "parallelism": job.parallelism, "parallelism_per_kpu": 1},
                },
                # A snapshot on every stop and update, restored on the next start: the stop-with-savepoint and
                # resubmit the docker and native targets do through Flink's REST API.
                "application_snapshot_configuration": {"snapshots_enabled": True},
                "run_configuration": {
                    "application_restore_configuration": {"application_restore_type": "RESTORE_FROM_LATEST_SNAPSHOT"},
                    "flink_run_configuration": {"allow_non_restored_state": False},
                },
                "vpc_configuration": {"subnet_ids": network.private_subnet_ids,
                                      "security_group_ids": [network.sg("engines").id]},
            },
            cloudwatch_logging_options={"log_stream_arn": stream.arn},
            tags=tags,
            opts=self.child_opts(depends_on=[foundation.logs.group(FLINK), role, *foundation.catalog_ready]),
        )
        self.job_name = job.name
        self.register_outputs({"application": self.application.name})

    def layer_outputs(self) -> dict[str, Any]:
        return {"flink_application": {"name": self.application.name, "arn": self.application.arn,
                                      "runtime": self.application.runtime_environment}}

    def stack_outputs(self) -> dict[str, Any]:
        return {"jobs": {JOB: {"job_name": self.job_name, "application": self.application.name,
                               "application_arn": self.application.arn, "runtime": MSF_RUNTIME}}}


def build(foundation: Foundation) -> FlinkApplication:
    return FlinkApplication(foundation)

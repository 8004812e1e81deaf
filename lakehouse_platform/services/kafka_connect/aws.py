"""Kafka Connect on aws: the stack's connectors on MSK Connect, against the MSK cluster (``aws.kafka_msk``).

- one custom plugin per connector kind, each a ZIP of the plugin's locked jars plus the project's Secrets
  Manager config provider (the cloud artifact), uploaded to the compute layer's code bucket;
- a worker configuration naming that provider, so connector configs reference secrets by name
  (``${secretsmanager:<name>:<key>}``), never by value; MSK Connect is told not to reload them;
- the connectors, with the same configs as on docker and native (Debezium reads RDS over TLS as its master
  user; the sink's control-topic clients authenticate to MSK with IAM);
- the bookshop's CDC source on RDS (schema, seed, publication, slot): the same statements as the lab's step,
  as a one-off ECS task CD runs before the connectors start (``streams_jobs``; the database is private).
"""

from __future__ import annotations

import re
from typing import Any

import pulumi
import pulumi_aws as aws

from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.services.capabilities import BROKER, DATABASE, DATABASE_USER, BrokerOnAws
from lakehouse_platform.services.context import ServiceContext, Side, host_of
from lakehouse_platform.services.kafka_connect.artifact import PROVIDER_CLASS, PROVIDER_DIR, debezium_plugin
from lakehouse_platform.services.kafka_connect.cdc_source import source_statements
from lakehouse_platform.services.kafka_connect.config import (
    CONNECT,
    JSON_CONVERTER,
    SecretRef,
    sink_config,
    source_config,
)
from lakehouse_platform.services.placeholders import secret
from lakehouse_platform.services.registry import needed
from lakehouse_platform.targets.aws import governance as gov_module
from lakehouse_platform.targets.aws.catalogs import run_task_command
from lakehouse_platform.targets.aws.common import log_group_name
from lakehouse_platform.targets.aws.context import AwsComponent
from lakehouse_platform.targets.aws.ecs import Container, secret_names, shell, task_definition
from lakehouse_platform.targets.aws.foundation import Foundation

LAYER = Layer.COMPUTE
MSK_CONNECT_VERSION = "3.7.x"
#: The Debezium user on aws: RDS's master user (the rds_replication role), its password the RDS-managed secret.
MSK_DB_USER = DATABASE_USER
SOURCE_JOB = "bookshop-cdc-source"


def log_sources(spec: PlatformSpec) -> dict[str, str | None]:
    sources: dict[str, str | None] = {CONNECT: None}
    if spec.streams.sources():
        sources[SOURCE_JOB] = None
    return sources


def secret_name_of(arn: str) -> str:
    """A Secrets Manager secret's *name* from its ARN (``...:secret:<name>-<6 random characters>``).

    Connector configs reference secrets by name: Kafka's ``${provider:path:key}`` pattern cannot
    carry the colons of an ARN (``${secretsmanager:arn:aws:...}`` parses as path ``arn``).
    """
    name = arn.split(":secret:", 1)[1] if ":secret:" in arn else arn.rsplit(":", 1)[-1]
    return re.sub(r"-[A-Za-z0-9]{6}$", "", name)


def secret_ref_token(refs: dict[str, str]) -> SecretRef:
    """Placeholders for ``${secretsmanager:<name>:<key>}``: the names are Outputs, filled in afterwards."""
    def ref(name: str, key: str) -> str:
        refs[name] = key
        return "${secretsmanager:@@" + name + "@@:" + ("password" if name == "postgres-password" else "value") + "}"

    return ref


class MskConnect(AwsComponent):
    """The stack's connectors on MSK Connect and the CDC source's setup task."""

    def __init__(self, foundation: Foundation) -> None:
        ctx, spec = foundation.ctx, foundation.spec
        super().__init__("platform:aws:MskConnect", f"{spec.name}-{CONNECT}", ctx, LAYER)
        msk: BrokerOnAws | None = foundation.provider(BROKER)
        assert msk is not None, "MSK Connect runs against the stack's MSK cluster (built before it)"
        self.connectors: dict[str, aws.mskconnect.Connector] = {}
        self.jobs: dict[str, dict[str, Any]] = {}
        if spec.streams.connectors:
            self._connectors(foundation, msk)
        if spec.streams.sources():
            self._cdc_source_job(foundation)
        self.register_outputs({"connectors": {name: c.arn for name, c in self.connectors.items()}})

    def _connectors(self, foundation: Foundation, msk: BrokerOnAws) -> None:
        ctx, spec, gov = foundation.ctx, foundation.spec, foundation.gov
        network = gov.network
        plugins = ctx.artifacts.cloud.get(CONNECT)
        assert plugins is not None, "the MSK Connect plugins are resolved with the stack (make artifacts STACK=<stack>)"

        connect = spec.services[CONNECT]
        connect_tags = ctx.tags(LAYER, CONNECT)
        artifacts = foundation.code_bucket()
        # One custom plugin per plugin kind (a connector takes one), each with the platform's config provider.
        root = plugins.path
        provider = pulumi.FileArchive(str(root / PROVIDER_DIR))
        contents: dict[str, dict[str, pulumi.Asset | pulumi.Archive]] = {
            "debezium-postgres": {"debezium-connector-postgres":
                                  pulumi.FileArchive(str(root / debezium_plugin(
                                      ServiceContext(spec, CONNECT)).filename)),
                                  PROVIDER_DIR: provider},
            "iceberg-sink": {"iceberg-kafka-connect": pulumi.FileArchive(str(root / "iceberg-kafka-connect")),
                             PROVIDER_DIR: provider},
        }
        custom: dict[str, aws.mskconnect.CustomPlugin] = {}
        for kind in sorted({c.kind for c in spec.streams.connectors}):
            version = connect.image_tag if kind == "debezium-postgres" else spec.engines.iceberg
            obj = aws.s3.BucketObjectv2(
                f"{spec.name}-{kind}-plugin", bucket=artifacts.bucket.id,
                key=f"plugins/{kind}-{version}-{plugins.sha256[:12]}.zip",
                source=pulumi.AssetArchive(contents[kind]), server_side_encryption="aws:kms", kms_key_id=gov.key.arn,
                tags=connect_tags, opts=self.child_opts(),
            )
            custom[kind] = aws.mskconnect.CustomPlugin(
                f"{spec.name}-{kind}", name=f"{spec.name}-{pulumi.get_stack()}-{kind}-{plugins.sha256[:8]}",
                content_type="ZIP", location={"s3": {"bucket_arn": artifacts.bucket.arn, "file_key": obj.key}},
                tags=connect_tags, opts=self.child_opts(),
            )
        workers = aws.mskconnect.WorkerConfiguration(
            f"{spec.name}-connect-workers", name=f"{spec.name}-{pulumi.get_stack()}-connect-workers",
            # Secrets are resolved by the worker when it starts a task, through the provider each plugin carries.
            properties_file_content="\n".join([
                f"key.converter={JSON_CONVERTER}",
                f"value.converter={JSON_CONVERTER}",
                "config.providers=secretsmanager",
                f"config.providers.secretsmanager.class={PROVIDER_CLASS}",
                f"config.providers.secretsmanager.param.region={spec.aws.region}",
                "offset.flush.interval.ms=1000",
                "",
            ]),
            tags=connect_tags, opts=self.child_opts(),
        )

        # What the connectors reference, by platform secret name -> its Secrets Manager ARN.
        secret_arns: dict[str, pulumi.Input[str]] = {
            name: pulumi.Output.from_input(ref).apply(gov_module.secret_arn)
            for name, ref in foundation.secret_refs.items()}
        referenced: dict[str, str] = {}
        ref = secret_ref_token(referenced)
        service_ctx = ServiceContext(spec, CONNECT)
        rendered = {}
        for connector in spec.streams.connectors:
            if connector.kind == "debezium-postgres":
                config = source_config(service_ctx, connector, ref, user=MSK_DB_USER,
                                                     password_secret="postgres-password")  # noqa: S106 - a name
                config["database.sslmode"] = "require"
            else:
                config = sink_config(service_ctx, connector, ref)
                # The sink's own control-topic clients authenticate to MSK like the worker does.
                config.update({
                    "iceberg.kafka.security.protocol": "SASL_SSL", "iceberg.kafka.sasl.mechanism": "AWS_MSK_IAM",
                    "iceberg.kafka.sasl.jaas.config": "software.amazon.msk.auth.iam.IAMLoginModule required;",
                    "iceberg.kafka.sasl.client.callback.handler.class":
                        "software.amazon.msk.auth.iam.IAMClientCallbackHandler",
                })
            # MSK Connect otherwise restarts a connector that uses a config provider whenever it re-reads it.
            config["config.action.reload"] = "none"
            rendered[connector.name] = config
        unknown = sorted(set(referenced) - set(secret_arns))
        if unknown:
            raise KeyError(f"connectors reference secrets aws keeps nowhere: {', '.join(unknown)}")
        names = {n: pulumi.Output.from_input(secret_arns[n]).apply(secret_name_of) for n in referenced}

        def fill(config: dict[str, str]) -> pulumi.Output[dict[str, str]]:
            def sub(values: list[str]) -> dict[str, str]:
                table = dict(zip(names, values, strict=True))
                return {k: re.sub(r"@@([a-z0-9-]+)@@", lambda m: table[m.group(1)], v) for k, v in config.items()}

            return pulumi.Output.all(*names.values()).apply(sub)

        arn_of = msk.cluster.arn
        role = gov_module.service_role(
            ctx, gov, "connect", "kafkaconnect.amazonaws.com",
            "MSK Connect: the stack's connectors read and write MSK, read their secrets, log",
            [
                {"Sid": "KafkaCluster", "Effect": "Allow",
                 "Action": ["kafka-cluster:Connect", "kafka-cluster:DescribeCluster",
                            "kafka-cluster:WriteDataIdempotently"],
                 "Resource": arn_of},
                {"Sid": "KafkaTopics", "Effect": "Allow",
                 "Action": ["kafka-cluster:CreateTopic", "kafka-cluster:DescribeTopic", "kafka-cluster:WriteData",
                            "kafka-cluster:ReadData"],
                 "Resource": arn_of.apply(lambda arn: arn.replace(":cluster/", ":topic/") + "/*")},
                {"Sid": "KafkaGroups", "Effect": "Allow",
                 "Action": ["kafka-cluster:AlterGroup", "kafka-cluster:DescribeGroup"],
                 "Resource": arn_of.apply(lambda arn: arn.replace(":cluster/", ":group/") + "/*")},
                # The Iceberg sink commits with transactional producers.
                {"Sid": "KafkaTransactions", "Effect": "Allow",
                 "Action": ["kafka-cluster:DescribeTransactionalId", "kafka-cluster:AlterTransactionalId"],
                 "Resource": arn_of.apply(lambda arn: arn.replace(":cluster/", ":transactional-id/") + "/*")},
                {"Sid": "ConnectorSecrets", "Effect": "Allow", "Action": ["secretsmanager:GetSecretValue"],
                 "Resource": [secret_arns[n] for n in sorted(referenced)]},
                {"Sid": "DecryptConnectorSecrets", "Effect": "Allow", "Action": ["kms:Decrypt"],
                 "Resource": gov.key.arn},
                {"Sid": "WriteOwnLogs", "Effect": "Allow",
                 "Action": ["logs:CreateLogDelivery", "logs:PutLogEvents", "logs:CreateLogStream"], "Resource": "*"},
            ],
            layer=LAYER,
        )
        for connector in spec.streams.connectors:
            self.connectors[connector.name] = aws.mskconnect.Connector(
                f"{spec.name}-{connector.name}",
                name=f"{spec.name}-{pulumi.get_stack()}-{connector.name}",
                description=f"{connector.kind} connector {connector.name} (streams.connectors)",
                kafkaconnect_version=MSK_CONNECT_VERSION,
                capacity={"provisioned_capacity": {"mcu_count": 1, "worker_count": 1}},
                connector_configuration=fill(rendered[connector.name]),
                kafka_cluster={"apache_kafka_cluster": {
                    "bootstrap_servers": msk.bootstrap_brokers,
                    "vpc": {"security_groups": [network.sg("connect").id], "subnets": network.private_subnet_ids}}},
                kafka_cluster_client_authentication={"authentication_type": "IAM"},
                kafka_cluster_encryption_in_transit={"encryption_type": "TLS"},
                plugins=[{"custom_plugin": {"arn": custom[connector.kind].arn,
                                            "revision": custom[connector.kind].latest_revision}}],
                worker_configuration={"arn": workers.arn, "revision": workers.latest_revision},
                service_execution_role_arn=role.arn,
                log_delivery={"worker_log_delivery": {"cloudwatch_logs": {
                    "enabled": True, "log_group": log_group_name(spec, CONNECT)}}},
                tags=connect_tags,
                opts=self.child_opts(depends_on=[foundation.logs.group(CONNECT), *msk.topics,
                                                 *foundation.catalog_ready]),
            )

    def _cdc_source_job(self, foundation: Foundation) -> None:
        """The bookshop's CDC source on RDS: the same statements as the lab's step, as a one-off ECS task."""
        ctx, spec, gov = foundation.ctx, foundation.spec, foundation.gov
        database = needed(spec, DATABASE, CONNECT)
        pg = spec.services[database]
        statements = [s for source in spec.streams.sources() for s in source_statements(source, with_role=False)]
        script = ";\n".join(statements) + ";"
        entry_point, command = shell(["set -e", "psql -v ON_ERROR_STOP=1 -q <<'SQL'", script, "SQL"])
        env = {"PGHOST": host_of(spec, database, Side.INTERNAL), "PGPORT": str(pg.ports["pg"].internal),
               "PGUSER": MSK_DB_USER, "PGDATABASE": spec.streams.sources()[0].database, "PGSSLMODE": "require",
               "PGPASSWORD": secret("postgres-password")}
        container = Container(name=SOURCE_JOB, image=pg.image, memory_mib=512, env=env, command=command,
                              entry_point=entry_point)
        execution = gov_module.execution_role(ctx, gov, SOURCE_JOB, [SOURCE_JOB], secret_names(env),
                                              foundation.secret_refs)
        task = task_definition(ctx, LAYER, f"{spec.name}-{SOURCE_JOB}", [container],
                               tags=ctx.tags(LAYER, CONNECT, **{"lakehouse.kind": "job"}),
                               execution_role=execution, task_role=None, secret_refs=foundation.secret_refs,
                               cpu=256, memory=512, opts=self.child_opts())
        network = gov.network
        self.jobs[SOURCE_JOB] = {
            "task_definition": task.arn,
            "command": run_task_command(foundation.cluster(Layer.CATALOG).name, task.arn, network.private_subnet_ids,
                                        [network.sg("catalogs").id]),
        }

    def layer_outputs(self) -> dict[str, Any]:
        return {"connectors": {name: c.arn for name, c in self.connectors.items()}}

    def stack_outputs(self) -> dict[str, Any]:
        out: dict[str, Any] = {"connect_connectors": {name: c.arn for name, c in self.connectors.items()}}
        if self.jobs:
            out["streams_jobs"] = self.jobs
        return out


def build(foundation: Foundation) -> MskConnect:
    return MskConnect(foundation)

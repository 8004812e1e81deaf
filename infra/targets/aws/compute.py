"""Compute on AWS: the engines, each on the managed service that runs it at scale.

- Trino: a coordinator and ``aws.trino_workers`` workers on ECS Fargate; the catalog files are the
  same ``trino.catalog_files`` every target renders (on AWS they hold no S3 keys: the catalogs vend
  short-lived credentials); the coordinator is ``trino.<name>.internal`` (Cloud Map A record);
- Spark: an EMR Serverless application in the private subnets, its defaults pointing at the
  stack's default catalog (``aws.spark_emr_serverless``);
- Kafka: Amazon MSK (IAM auth, TLS, KMS) with Debezium on MSK Connect (``aws.kafka_msk``);
- Flink: the streaming job as an Amazon Managed Service for Apache Flink application (runtime
  ``flink.MSF_RUNTIME``), its jar from the artifact cache, the same arguments as on docker and native.
Never a home-made cluster.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_aws as aws

from infra.secrets import render
from infra.services import ServiceContext, flink, kafka, kafka_connect, postgres, profiles, registry, trino
from infra.services.context import Side, host_of, url
from infra.services.flink import aws as flink_aws
from infra.services.flink import config as flink_config
from infra.services.kafka import config as kafka_config
from infra.services.kafka_connect import artifact as kafka_connect_artifact
from infra.services.kafka_connect import cdc_source as kafka_connect_cdc_source
from infra.services.kafka_connect import config as kafka_connect_config
from infra.services.placeholders import SECRET_TOKEN, secret
from infra.services.trino import aws as trino_aws
from infra.spec import Layer, PlatformSpec
from infra.targets.aws import governance as gov_module
from infra.targets.aws.common import fargate_size, log_group_name
from infra.targets.aws.ecs import cluster as ecs_cluster
from infra.targets.aws.ecs import container_of, fargate_service, service_memory_mib
from infra.targets.aws.storage import SecureBucket, secure_bucket

if TYPE_CHECKING:
    from infra.targets.aws import AwsContext
    from infra.targets.aws.catalog import CatalogState
    from infra.targets.aws.observability import LogGroups

LAYER = Layer.COMPUTE
TRINO_WORKER = "trino-worker"
SPARK = "spark"
MSK_CONNECT = "kafka-connect"
FLINK = "flink"
MSK_CONNECT_VERSION = "3.7.x"
EMR_ICEBERG_JAR = "/usr/share/aws/iceberg/lib/iceberg-spark3-runtime.jar"  # Iceberg as EMR ships it


@dataclass
class ComputeState:
    cluster: aws.ecs.Cluster
    services: dict[str, aws.ecs.Service] = field(default_factory=dict)
    task_definitions: dict[str, aws.ecs.TaskDefinition] = field(default_factory=dict)
    spark: aws.emrserverless.Application | None = None
    spark_role: aws.iam.Role | None = None
    msk: aws.msk.Cluster | None = None
    connectors: dict[str, aws.mskconnect.Connector] = field(default_factory=dict)
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)  # one-off tasks CD runs (the CDC source)
    flink: aws.kinesisanalyticsv2.Application | None = None
    flink_job_name: str = ""
    artifacts: SecureBucket | None = None  # private bucket of uploaded code (Debezium plugin, Flink jar)
    trino_url: str | None = None
    trino_workers: int = 0

    def layer_outputs(self) -> dict[str, Any]:
        out: dict[str, Any] = {"cluster": self.cluster.name}
        if self.trino_url:
            out.update(trino_url=self.trino_url, trino_workers=self.trino_workers)
        if self.spark is not None:
            out["spark_application_id"] = self.spark.id
        if self.msk is not None:
            out["kafka_bootstrap_brokers"] = self.msk.bootstrap_brokers_sasl_iam
            out["connectors"] = {name: c.arn for name, c in self.connectors.items()}
        if self.flink is not None:
            out["flink_application"] = {"name": self.flink.name, "arn": self.flink.arn,
                                        "runtime": self.flink.runtime_environment}
        return out

    def stack_outputs(self) -> dict[str, Any]:
        out: dict[str, Any] = {"compute_cluster": self.cluster.name}
        if self.trino_url:
            out["trino_url"] = self.trino_url
        if self.spark is not None and self.spark_role is not None:
            out.update(spark_application_id=self.spark.id, spark_job_role_arn=self.spark_role.arn)
        if self.msk is not None:
            out["kafka_bootstrap_brokers"] = self.msk.bootstrap_brokers_sasl_iam
            out["connect_connectors"] = {name: c.arn for name, c in self.connectors.items()}
        if self.jobs:
            out["streams_jobs"] = self.jobs
        if self.flink is not None:
            out["jobs"] = {flink.JOB: {"job_name": self.flink_job_name, "application": self.flink.name,
                                       "application_arn": self.flink.arn, "runtime": flink.MSF_RUNTIME}}
        return out


def log_sources(spec: PlatformSpec) -> dict[str, str | None]:
    """The log groups this layer writes to (None: the platform's default name for the source)."""
    sources: dict[str, str | None] = {}
    if trino.NAME in spec.enabled_services():
        sources.update({trino.NAME: None, TRINO_WORKER: None})
    if spec.aws.spark_emr_serverless:
        sources[SPARK] = None
    if spec.aws.kafka_msk:
        sources.update({kafka.KAFKA: None, MSK_CONNECT: None})
        if spec.streams.sources():
            sources[SOURCE_JOB] = None
    if flink.JOBMANAGER in spec.enabled_services():
        sources[FLINK] = None
    return sources


def build(ctx: AwsContext, gov: gov_module.GovernanceState, logs: LogGroups, catalog: CatalogState) -> ComputeState:
    spec = ctx.spec
    state = ComputeState(ecs_cluster(ctx, LAYER))
    if trino.NAME in spec.enabled_services():
        _trino(ctx, gov, logs, state)
        state.trino_url = url(spec, trino.NAME, "http", Side.INTERNAL)
        state.trino_workers = spec.aws.trino_workers
    if spec.aws.spark_emr_serverless:
        state.spark = _spark(ctx, gov, logs, state)
    if spec.aws.kafka_msk:
        state.msk = _msk(ctx, gov, logs, catalog, state)
    if flink.JOBMANAGER in spec.enabled_services() and flink.JOB in spec.enabled_services():
        state.flink = _flink(ctx, gov, logs, state)
        state.flink_job_name = spec.flink.job.name
    return state


# -- Trino ---------------------------------------------------------------------------------------


def _trino(ctx: AwsContext, gov: gov_module.GovernanceState, logs: LogGroups, state: ComputeState) -> None:
    spec = ctx.spec
    network = gov.network
    opts = ctx.opts(LAYER)
    service = spec.services[trino.NAME]
    service_ctx = ServiceContext(spec, trino.NAME)
    port = service.ports["http"].internal
    tags = ctx.tags(LAYER, trino.NAME)

    # Coordinator: the service's own budget; registered as trino.<name>.internal.
    coordinator_memory = service_memory_mib(service)
    coordinator = container_of(ctx, trino.NAME, memory_mib=coordinator_memory, ports=[port])
    # Workers: the Fargate size the stack sets; heap three quarters of it.
    worker_memory = spec.aws.trino_worker_memory_mb
    worker = container_of(ctx, trino.NAME, trino_aws.ecs_worker(service_ctx, worker_memory), memory_mib=worker_memory,
                          ports=[port], log_source=TRINO_WORKER)
    worker.name = TRINO_WORKER

    registry_entry = aws.servicediscovery.Service(
        f"{spec.name}-trino-dns", name=trino.NAME,
        description=f"{host_of(spec, trino.NAME, Side.INTERNAL)}: the Trino coordinator",
        dns_config={"namespace_id": network.namespace.id, "dns_records": [{"type": "A", "ttl": 10}],
                    "routing_policy": "MULTIVALUE"},
        tags=tags, opts=opts,
    )
    for container, cpu_memory, desired, registries in (
        (coordinator, fargate_size(coordinator_memory, min_cpu=1024), 1, [{"registry_arn": registry_entry.arn}]),
        (worker, (spec.aws.trino_worker_cpu, worker_memory), spec.aws.trino_workers, []),
    ):
        cpu, memory = cpu_memory
        deployed = fargate_service(
            ctx, LAYER, gov, logs, state.cluster, container, cpu=cpu, memory=memory,
            task_role=None,  # no AWS rights of its own: table data only through catalog-vended credentials
            desired_count=desired, security_group=network.sg("engines").id,
            min_healthy_percent=0 if desired == 1 else 50, tags=tags, secret_refs=gov.secret_refs,
            service_registries=registries[0] if registries else None,
        )
        state.task_definitions[container.name] = deployed.task_definition
        state.services[container.name] = deployed.service


# -- Spark on EMR Serverless ---------------------------------------------------------------------


def _spark_catalog_secrets(ctx: AwsContext, gov: gov_module.GovernanceState,
                           catalog_name: str) -> dict[str, aws.secretsmanager.Secret]:
    """Spark property -> a Secrets Manager secret holding its value, for each client property with a secret.

    The default catalog's client properties (its ``CatalogRole``) carry secrets as placeholders,
    e.g. Polaris's ``credential`` (``root:<secret>``). An application's runtime configuration is
    plain text, so each such value lives in a secret of its own and the configuration names it
    with EMR Serverless's ``EMR.secret@<secret-id>`` annotation, resolved when a job runs.
    """
    spec = ctx.spec
    role = registry()[spec.catalog.default].catalog
    assert role is not None
    raw = role.client_properties(ServiceContext(spec, spec.catalog.default))
    held: dict[str, aws.secretsmanager.Secret] = {}
    for key, value in raw.items():
        if not SECRET_TOKEN.search(value):
            continue
        logical = f"{spec.name}-spark-catalog-{''.join(c if c.isalnum() else '-' for c in key).strip('-').lower()}"
        holder = aws.secretsmanager.Secret(
            logical,
            description=f"Spark on EMR Serverless: the {spec.catalog.default} catalog's {key} (client property)",
            kms_key_id=gov.key.arn, recovery_window_in_days=7,
            tags=ctx.tags(Layer.GOVERNANCE, spec.catalog.default), opts=ctx.governance_opts(),
        )
        aws.secretsmanager.SecretVersion(f"{logical}-value", secret_id=holder.id,
                                         secret_string=render(value, dict(ctx.secrets)), opts=ctx.governance_opts())
        held[f"spark.sql.catalog.{catalog_name}.{key}"] = holder
    return held


def _spark(ctx: AwsContext, gov: gov_module.GovernanceState, logs: LogGroups,
           state: ComputeState) -> aws.emrserverless.Application:
    spec = ctx.spec
    network = gov.network
    log_group = log_group_name(spec, SPARK)
    catalog_name = spec.name.replace("-", "_")
    held = _spark_catalog_secrets(ctx, gov, catalog_name)
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
    state.spark_role = gov_module.service_role(
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
    return aws.emrserverless.Application(
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
        opts=ctx.opts(LAYER, depends_on=[logs.group(SPARK)]),
    )


# -- Kafka on MSK; the stack's connectors on MSK Connect ----------------------------------------


def _artifacts_bucket_name(bucket: str) -> str:
    name = f"{bucket}-artifacts"
    if len(name) <= 63:
        return name
    return f"{bucket[:50].rstrip('-.')}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def secret_name_of(arn: str) -> str:
    """A Secrets Manager secret's *name* from its ARN (``...:secret:<name>-<6 random characters>``).

    Connector configs reference secrets by name: Kafka's ``${provider:path:key}`` pattern cannot
    carry the colons of an ARN (``${secretsmanager:arn:aws:...}`` parses as path ``arn``).
    """
    name = arn.split(":secret:", 1)[1] if ":secret:" in arn else arn.rsplit(":", 1)[-1]
    return re.sub(r"-[A-Za-z0-9]{6}$", "", name)


def _artifacts_bucket(ctx: AwsContext, gov: gov_module.GovernanceState, state: ComputeState) -> SecureBucket:
    """The layer's private bucket of uploaded code, created once for whoever needs it first."""
    spec = ctx.spec
    if state.artifacts is None:
        state.artifacts = secure_bucket(
            ctx, LAYER, f"{spec.name}-artifacts", _artifacts_bucket_name(spec.storage.bucket), gov.key,
            noncurrent_days=spec.storage.noncurrent_version_expiration_days,
            abort_multipart_days=spec.storage.abort_incomplete_multipart_days,
        )
    return state.artifacts


#: The Debezium user on aws: RDS's master user (the rds_replication role), its password the RDS-managed secret.
MSK_DB_USER = "postgres"
SOURCE_JOB = "bookshop-cdc-source"


def _secret_ref_token(refs: dict[str, str]) -> kafka_connect_config.SecretRef:
    """Placeholders for ``${secretsmanager:<name>:<key>}``: the names are Outputs, filled in afterwards."""
    def ref(name: str, key: str) -> str:
        refs[name] = key
        return "${secretsmanager:@@" + name + "@@:" + ("password" if name == "postgres-password" else "value") + "}"

    return ref


def _msk(ctx: AwsContext, gov: gov_module.GovernanceState, logs: LogGroups, catalog: CatalogState,
         state: ComputeState) -> aws.msk.Cluster:
    spec = ctx.spec
    network = gov.network
    opts = ctx.opts(LAYER)
    tags = ctx.tags(LAYER, kafka.KAFKA)
    broker_logs = log_group_name(spec, kafka.KAFKA)
    cluster = aws.msk.Cluster(
        f"{spec.name}-kafka",
        cluster_name=f"{spec.name}-{pulumi.get_stack()}",
        kafka_version=spec.aws.msk_kafka_version,
        number_of_broker_nodes=spec.aws.msk_broker_count,
        broker_node_group_info={
            "instance_type": spec.aws.msk_instance_type,
            "client_subnets": network.private_subnet_ids,
            "security_groups": [network.sg("msk").id],
            "storage_info": {"ebs_storage_info": {"volume_size": 100}},
        },
        encryption_info={"encryption_at_rest_kms_key_arn": gov.key.arn,
                         "encryption_in_transit": {"client_broker": "TLS", "in_cluster": True}},
        client_authentication={"sasl": {"iam": True}, "unauthenticated": False},
        logging_info={"broker_logs": {"cloudwatch_logs": {"enabled": True, "log_group": broker_logs}}},
        tags=tags,
        opts=ctx.opts(LAYER, depends_on=[logs.group(kafka.KAFKA)]),
    )
    # The platform's topics, as on every target (MSK never auto-creates them either).
    replication = min(3, spec.aws.msk_broker_count)
    topics = [aws.msk.Topic(f"{spec.name}-topic-{t.name.replace('.', '-')}", name=t.name, cluster_arn=cluster.arn,
                            partition_count=t.partitions, replication_factor=replication,
                            configs=json.dumps(kafka_config.topic_configs(t), sort_keys=True), opts=opts)
              for t in kafka_config.platform_topics(spec)]
    if not spec.streams.connectors:
        return cluster
    plugins = ctx.artifacts.cloud.get(kafka_connect.CONNECT)
    assert plugins is not None, "the MSK Connect plugins are resolved with the stack (make artifacts STACK=<stack>)"

    connect = spec.services[kafka_connect.CONNECT]
    connect_tags = ctx.tags(LAYER, kafka_connect.CONNECT)
    artifacts = _artifacts_bucket(ctx, gov, state)
    # One custom plugin per plugin kind (a connector takes one), each with the platform's config provider.
    root = plugins.path
    provider = pulumi.FileArchive(str(root / kafka_connect_artifact.PROVIDER_DIR))
    contents: dict[str, dict[str, pulumi.Asset | pulumi.Archive]] = {
        "debezium-postgres": {"debezium-connector-postgres":
                              pulumi.FileArchive(str(root / kafka_connect_artifact.debezium_plugin(
                                  ServiceContext(spec, kafka_connect.CONNECT)).filename)),
                              kafka_connect_artifact.PROVIDER_DIR: provider},
        "iceberg-sink": {"iceberg-kafka-connect": pulumi.FileArchive(str(root / "iceberg-kafka-connect")),
                         kafka_connect_artifact.PROVIDER_DIR: provider},
    }
    custom: dict[str, aws.mskconnect.CustomPlugin] = {}
    for kind in sorted({c.kind for c in spec.streams.connectors}):
        version = connect.image_tag if kind == "debezium-postgres" else spec.engines.iceberg
        obj = aws.s3.BucketObjectv2(
            f"{spec.name}-{kind}-plugin", bucket=artifacts.bucket.id,
            key=f"plugins/{kind}-{version}-{plugins.sha256[:12]}.zip",
            source=pulumi.AssetArchive(contents[kind]), server_side_encryption="aws:kms", kms_key_id=gov.key.arn,
            tags=connect_tags, opts=opts,
        )
        custom[kind] = aws.mskconnect.CustomPlugin(
            f"{spec.name}-{kind}", name=f"{spec.name}-{pulumi.get_stack()}-{kind}-{plugins.sha256[:8]}",
            content_type="ZIP", location={"s3": {"bucket_arn": artifacts.bucket.arn, "file_key": obj.key}},
            tags=connect_tags, opts=opts,
        )
    workers = aws.mskconnect.WorkerConfiguration(
        f"{spec.name}-connect-workers", name=f"{spec.name}-{pulumi.get_stack()}-connect-workers",
        # Secrets are resolved by the worker when it starts a task, through the provider each plugin carries.
        properties_file_content="\n".join([
            f"key.converter={kafka_connect_config.JSON_CONVERTER}",
            f"value.converter={kafka_connect_config.JSON_CONVERTER}",
            "config.providers=secretsmanager",
            f"config.providers.secretsmanager.class={kafka_connect_artifact.PROVIDER_CLASS}",
            f"config.providers.secretsmanager.param.region={spec.aws.region}",
            "offset.flush.interval.ms=1000",
            "",
        ]),
        tags=connect_tags, opts=opts,
    )

    # What the connectors reference, by platform secret name -> its Secrets Manager ARN.
    secret_arns: dict[str, pulumi.Input[str]] = {
        name: pulumi.Output.from_input(ref).apply(gov_module.secret_arn) for name, ref in catalog.secret_refs.items()}
    referenced: dict[str, str] = {}
    ref = _secret_ref_token(referenced)
    service_ctx = ServiceContext(spec, kafka_connect.CONNECT)
    rendered = {}
    for connector in spec.streams.connectors:
        if connector.kind == "debezium-postgres":
            config = kafka_connect_config.source_config(service_ctx, connector, ref, user=MSK_DB_USER,
                                                 password_secret="postgres-password")  # noqa: S106 - a name
            config["database.sslmode"] = "require"
        else:
            config = kafka_connect_config.sink_config(service_ctx, connector, ref)
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

    arn_of = cluster.arn
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
            {"Sid": "DecryptConnectorSecrets", "Effect": "Allow", "Action": ["kms:Decrypt"], "Resource": gov.key.arn},
            {"Sid": "WriteOwnLogs", "Effect": "Allow",
             "Action": ["logs:CreateLogDelivery", "logs:PutLogEvents", "logs:CreateLogStream"], "Resource": "*"},
        ],
        layer=LAYER,
    )
    for connector in spec.streams.connectors:
        state.connectors[connector.name] = aws.mskconnect.Connector(
            f"{spec.name}-{connector.name}",
            name=f"{spec.name}-{pulumi.get_stack()}-{connector.name}",
            description=f"{connector.kind} connector {connector.name} (streams.connectors)",
            kafkaconnect_version=MSK_CONNECT_VERSION,
            capacity={"provisioned_capacity": {"mcu_count": 1, "worker_count": 1}},
            connector_configuration=fill(rendered[connector.name]),
            kafka_cluster={"apache_kafka_cluster": {
                "bootstrap_servers": cluster.bootstrap_brokers_sasl_iam,
                "vpc": {"security_groups": [network.sg("connect").id], "subnets": network.private_subnet_ids}}},
            kafka_cluster_client_authentication={"authentication_type": "IAM"},
            kafka_cluster_encryption_in_transit={"encryption_type": "TLS"},
            plugins=[{"custom_plugin": {"arn": custom[connector.kind].arn,
                                        "revision": custom[connector.kind].latest_revision}}],
            worker_configuration={"arn": workers.arn, "revision": workers.latest_revision},
            service_execution_role_arn=role.arn,
            log_delivery={"worker_log_delivery": {"cloudwatch_logs": {
                "enabled": True, "log_group": log_group_name(spec, MSK_CONNECT)}}},
            tags=connect_tags,
            opts=ctx.opts(LAYER, depends_on=[logs.group(MSK_CONNECT), *topics]),
        )
    if spec.streams.sources():
        _cdc_source_job(ctx, gov, catalog, state)
    return cluster


def _cdc_source_job(ctx: AwsContext, gov: gov_module.GovernanceState, catalog: CatalogState,
                    state: ComputeState) -> None:
    """The bookshop's CDC source on RDS (schema, seed, publication, slot): the same statements as the
    lab's step, as a one-off ECS task CD runs before the connectors start (the database is private)."""
    from infra.targets.aws.catalog import run_task_command
    from infra.targets.aws.ecs import Container, secret_names, shell, task_definition

    spec = ctx.spec
    pg = spec.services[postgres.NAME]
    statements = [s for source in spec.streams.sources()
                  for s in kafka_connect_cdc_source.source_statements(source, with_role=False)]
    script = ";\n".join(statements) + ";"
    entry_point, command = shell(["set -e", "psql -v ON_ERROR_STOP=1 -q <<'SQL'", script, "SQL"])
    env = {"PGHOST": host_of(spec, postgres.NAME, Side.INTERNAL), "PGPORT": str(pg.ports["pg"].internal),
           "PGUSER": MSK_DB_USER, "PGDATABASE": spec.streams.sources()[0].database, "PGSSLMODE": "require",
           "PGPASSWORD": secret("postgres-password")}
    container = Container(name=SOURCE_JOB, image=pg.image, memory_mib=512, env=env, command=command,
                          entry_point=entry_point)
    execution = gov_module.execution_role(ctx, gov, SOURCE_JOB, [SOURCE_JOB], secret_names(env), catalog.secret_refs)
    task = task_definition(ctx, LAYER, f"{spec.name}-{SOURCE_JOB}", [container],
                           tags=ctx.tags(LAYER, kafka_connect.CONNECT, **{"lakehouse.kind": "job"}),
                           execution_role=execution, task_role=None, secret_refs=catalog.secret_refs,
                           cpu=256, memory=512)
    network = gov.network
    state.jobs[SOURCE_JOB] = {
        "task_definition": task.arn,
        "command": run_task_command(catalog.cluster.name, task.arn, network.private_subnet_ids,
                                    [network.sg("catalogs").id]),
    }


# -- Flink on Amazon Managed Service for Apache Flink ----------------------------------------------


def _flink(ctx: AwsContext, gov: gov_module.GovernanceState, logs: LogGroups,
           state: ComputeState) -> aws.kinesisanalyticsv2.Application:
    """The streaming job as an MSF application: checkpoints on the job's interval, snapshots on every stop
    and update (restored from the latest on start), in the private subnets with the engines' security group.

    No AWS rights on the warehouse: table data goes through the catalog's vended credentials, as Trino's does.
    """
    spec = ctx.spec
    job = spec.flink.job
    network = gov.network
    opts = ctx.opts(LAYER)
    tags = ctx.tags(LAYER, flink.JOB)
    artifact = ctx.artifacts.cloud.get(flink.JOBMANAGER)
    assert artifact is not None, "the Flink application jar is resolved with the stack (make artifacts STACK=<stack>)"
    bucket = _artifacts_bucket(ctx, gov, state)
    code = aws.s3.BucketObjectv2(
        f"{spec.name}-flink-application-jar", bucket=bucket.bucket.id,
        key=f"flink/{artifact.path.name.removesuffix('.jar')}-{artifact.sha256[:12]}.jar",
        source=pulumi.FileAsset(str(artifact.path)), server_side_encryption="aws:kms", kms_key_id=gov.key.arn,
        tags=tags, opts=opts,
    )
    stream = aws.cloudwatch.LogStream(f"{spec.name}-flink-application", name="application",
                                      log_group_name=logs.group(FLINK).name, opts=opts)
    secret_names = sorted({name for value in flink_config.catalog_secret_env(spec).values()
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
         "Action": ["ec2:DescribeVpcs", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups", "ec2:DescribeDhcpOptions",
                    "ec2:DescribeNetworkInterfaces", "ec2:CreateNetworkInterface",
                    "ec2:CreateNetworkInterfacePermission", "ec2:DeleteNetworkInterface"],
         "Resource": "*"},
    ]
    if secret_arns:
        statements += [
            {"Sid": "ReadCatalogCredential", "Effect": "Allow", "Action": ["secretsmanager:GetSecretValue"],
             "Resource": list(secret_arns.values())},
            {"Sid": "DecryptCatalogCredential", "Effect": "Allow", "Action": ["kms:Decrypt"], "Resource": gov.key.arn,
             "Condition": {"StringEquals": {"kms:ViaService": f"secretsmanager.{spec.aws.region}.amazonaws.com"}}},
        ]
    kafka_bootstrap = None
    if flink_config.job_source(spec) == "kafka":
        assert state.msk is not None, "a Kafka source on aws reads Amazon MSK (aws.kafka_msk)"
        kafka_bootstrap = state.msk.bootstrap_brokers_sasl_iam
        cluster = state.msk.arn
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
    properties = flink_aws.msf_properties(ServiceContext(spec, flink.JOB), secret_arns, kafka_bootstrap)
    return aws.kinesisanalyticsv2.Application(
        f"{spec.name}-flink",
        name=f"{spec.name}-{pulumi.get_stack()}-{job.name}",
        description="the platform's streaming writer: orders into Iceberg, one commit per checkpoint",
        runtime_environment=flink.MSF_RUNTIME,
        service_execution_role=role.arn,
        start_application=True,
        application_configuration={
            "application_code_configuration": {
                "code_content_type": "ZIPFILE",
                "code_content": {"s3_content_location": {"bucket_arn": bucket.bucket.arn, "file_key": code.key,
                                                          "object_version": code.version_id}},
            },
            "environment_properties": {"property_groups": [
                {"property_group_id": flink_aws.MSF_PROPERTY_GROUP, "property_map": properties}]},
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
        opts=ctx.opts(LAYER, depends_on=[logs.group(FLINK), role]),
    )

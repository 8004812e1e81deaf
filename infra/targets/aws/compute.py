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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_aws as aws

from infra import profiles
from infra.services import ServiceContext, flink, kafka, postgres, trino
from infra.services.base import SECRET_TOKEN, Side, host_of, url
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
    worker = container_of(ctx, trino.NAME, trino.ecs_worker(service_ctx, worker_memory), memory_mib=worker_memory,
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


def _spark(ctx: AwsContext, gov: gov_module.GovernanceState, logs: LogGroups,
           state: ComputeState) -> aws.emrserverless.Application:
    spec = ctx.spec
    network = gov.network
    log_group = log_group_name(spec, SPARK)
    state.spark_role = gov_module.service_role(
        ctx, gov, "spark-job", "emr-serverless.amazonaws.com",
        "EMR Serverless job runtime role: writes its logs; table data only through catalog-vended credentials",
        [
            {"Sid": "WriteOwnLogs", "Effect": "Allow",
             "Action": ["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
             "Resource": [gov.arn("logs", f"log-group:{log_group}"), gov.arn("logs", f"log-group:{log_group}:*")]},
            {"Sid": "EncryptOwnLogs", "Effect": "Allow", "Action": ["kms:GenerateDataKey", "kms:Decrypt"],
             "Resource": gov.key.arn},
        ],
        layer=LAYER,
    )
    defaults = {k: v for k, v in profiles.spark(spec, Side.INTERNAL, catalog_name=spec.name.replace("-", "_")).items()
                if not k.startswith("spark.jars.packages")}
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


# -- Kafka on MSK, Debezium on MSK Connect -------------------------------------------------------


def _artifacts_bucket_name(bucket: str) -> str:
    name = f"{bucket}-artifacts"
    if len(name) <= 63:
        return name
    return f"{bucket[:50].rstrip('-.')}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def debezium_plugin_url(version_tag: str) -> str:
    """Debezium's PostgreSQL connector plugin on Maven Central (Pulumi uploads the archive as a ZIP)."""
    base = "https://repo1.maven.org/maven2/io/debezium/debezium-connector-postgres"
    return f"{base}/{version_tag}/debezium-connector-postgres-{version_tag}-plugin.tar.gz"


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

    # Debezium on MSK Connect: plugin from Maven Central into a private artifacts bucket.
    connect = spec.services[kafka.CONNECT]
    artifacts = _artifacts_bucket(ctx, gov, state)
    plugin_key = f"plugins/debezium-connector-postgres-{connect.image_tag}.zip"
    plugin_object = aws.s3.BucketObjectv2(
        f"{spec.name}-debezium-plugin", bucket=artifacts.bucket.id, key=plugin_key,
        source=pulumi.RemoteArchive(debezium_plugin_url(connect.image_tag)),
        server_side_encryption="aws:kms", kms_key_id=gov.key.arn,
        tags=ctx.tags(LAYER, kafka.CONNECT), opts=opts,
    )
    plugin = aws.mskconnect.CustomPlugin(
        f"{spec.name}-debezium", name=f"{spec.name}-{pulumi.get_stack()}-debezium-{connect.version}",
        content_type="ZIP",
        location={"s3": {"bucket_arn": artifacts.bucket.arn, "file_key": plugin_object.key}},
        tags=ctx.tags(LAYER, kafka.CONNECT), opts=opts,
    )
    workers = aws.mskconnect.WorkerConfiguration(
        f"{spec.name}-connect-workers", name=f"{spec.name}-{pulumi.get_stack()}-connect-workers",
        # Secrets are resolved by the worker at run time (MSK config provider), never written in the connector.
        properties_file_content="\n".join([
            "key.converter=org.apache.kafka.connect.json.JsonConverter",
            "value.converter=org.apache.kafka.connect.json.JsonConverter",
            "config.providers=secretsmanager",
            "config.providers.secretsmanager.class="
            "com.amazonaws.kafka.config.providers.SecretsManagerConfigProvider",
            f"config.providers.secretsmanager.param.region={spec.aws.region}",
            "",
        ]),
        tags=ctx.tags(LAYER, kafka.CONNECT), opts=opts,
    )
    topics = cluster.arn.apply(lambda arn: arn.replace(":cluster/", ":topic/") + "/*")
    groups = cluster.arn.apply(lambda arn: arn.replace(":cluster/", ":group/") + "/*")
    db_secret = catalog.secret_refs["postgres-password"]
    role = gov_module.service_role(
        ctx, gov, "connect", "kafkaconnect.amazonaws.com",
        "MSK Connect: Debezium writes the bookshop's changes to MSK and reads the database secret",
        [
            {"Sid": "KafkaCluster", "Effect": "Allow",
             "Action": ["kafka-cluster:Connect", "kafka-cluster:DescribeCluster"], "Resource": cluster.arn},
            {"Sid": "KafkaTopics", "Effect": "Allow",
             "Action": ["kafka-cluster:CreateTopic", "kafka-cluster:DescribeTopic", "kafka-cluster:WriteData",
                        "kafka-cluster:ReadData"], "Resource": topics},
            {"Sid": "KafkaGroups", "Effect": "Allow",
             "Action": ["kafka-cluster:AlterGroup", "kafka-cluster:DescribeGroup"], "Resource": groups},
            {"Sid": "DatabaseSecret", "Effect": "Allow", "Action": ["secretsmanager:GetSecretValue"],
             "Resource": pulumi.Output.from_input(db_secret).apply(gov_module.secret_arn)},
            {"Sid": "DecryptDatabaseSecret", "Effect": "Allow", "Action": ["kms:Decrypt"], "Resource": gov.key.arn},
            {"Sid": "WriteOwnLogs", "Effect": "Allow",
             "Action": ["logs:CreateLogDelivery", "logs:PutLogEvents", "logs:CreateLogStream"], "Resource": "*"},
        ],
        layer=LAYER,
    )
    pg = spec.services[postgres.NAME]
    secret_arn = pulumi.Output.from_input(db_secret).apply(gov_module.secret_arn)
    aws.mskconnect.Connector(
        f"{spec.name}-bookshop-cdc",
        name=f"{spec.name}-{pulumi.get_stack()}-bookshop-cdc",
        description="Debezium: the bookshop's PostgreSQL changes to Kafka",
        kafkaconnect_version=MSK_CONNECT_VERSION,
        capacity={"provisioned_capacity": {"mcu_count": 1, "worker_count": 1}},
        connector_configuration={
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "tasks.max": "1",
            "database.hostname": host_of(spec, postgres.NAME, Side.INTERNAL),
            "database.port": str(pg.ports["pg"].internal),
            "database.user": "postgres",
            "database.password": secret_arn.apply(lambda arn: "${secretsmanager:" + arn + ":password}"),
            "database.dbname": "bookshop",
            "database.sslmode": "require",
            "topic.prefix": "bookshop",
            "plugin.name": "pgoutput",
            "slot.name": "debezium_bookshop",
            "publication.autocreate.mode": "filtered",
        },
        kafka_cluster={"apache_kafka_cluster": {
            "bootstrap_servers": cluster.bootstrap_brokers_sasl_iam,
            "vpc": {"security_groups": [network.sg("connect").id], "subnets": network.private_subnet_ids}}},
        kafka_cluster_client_authentication={"authentication_type": "IAM"},
        kafka_cluster_encryption_in_transit={"encryption_type": "TLS"},
        plugins=[{"custom_plugin": {"arn": plugin.arn, "revision": plugin.latest_revision}}],
        worker_configuration={"arn": workers.arn, "revision": workers.latest_revision},
        service_execution_role_arn=role.arn,
        log_delivery={"worker_log_delivery": {"cloudwatch_logs": {
            "enabled": True, "log_group": log_group_name(spec, MSK_CONNECT)}}},
        tags=ctx.tags(LAYER, kafka.CONNECT),
        opts=ctx.opts(LAYER, depends_on=[logs.group(MSK_CONNECT)]),
    )
    return cluster


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
    artifact = ctx.artifacts.services.get(flink.JOBMANAGER)
    assert artifact is not None, "the resolver found no Flink application jar"
    bucket = _artifacts_bucket(ctx, gov, state)
    code = aws.s3.BucketObjectv2(
        f"{spec.name}-flink-application-jar", bucket=bucket.bucket.id,
        key=f"flink/{artifact.path.name.removesuffix('.jar')}-{artifact.sha256[:12]}.jar",
        source=pulumi.FileAsset(str(artifact.path)), server_side_encryption="aws:kms", kms_key_id=gov.key.arn,
        tags=tags, opts=opts,
    )
    stream = aws.cloudwatch.LogStream(f"{spec.name}-flink-application", name="application",
                                      log_group_name=logs.group(FLINK).name, opts=opts)
    secret_names = sorted({name for value in flink.catalog_secret_env(spec).values()
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
    if flink.job_source(spec) == "kafka":
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
    properties = flink.msf_properties(ServiceContext(spec, flink.JOB), secret_arns, kafka_bootstrap)
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
                {"property_group_id": flink.MSF_PROPERTY_GROUP, "property_map": properties}]},
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

"""Kafka Connect's configuration on every target: the worker's properties, the connectors' configs (Debezium's
PostgreSQL source, the Iceberg sink) with secrets by reference, and the credentials from the environment.
"""

from __future__ import annotations

from collections.abc import Callable

from lakehouse_platform.model import DebeziumPostgresSpec, IcebergSinkSpec, PlatformSpec, Target, parse_size
from lakehouse_platform.placeholders import SECRET_TOKEN, secret
from lakehouse_platform.services.capabilities import DATABASE
from lakehouse_platform.services.context import ServiceContext, Side
from lakehouse_platform.services.definition import SecretSpec
from lakehouse_platform.services.kafka import config as kafka
from lakehouse_platform.services.plans import IDLE_HEAP_FLAGS
from lakehouse_platform.services.registry import needed, registry

CONNECT = "kafka-connect"
#: The bookshop's database on the platform's database: what the CDC sources capture (seeded by its setup step).
BOOKSHOP = "bookshop"


DEBEZIUM_CLASS = "io.debezium.connector.postgresql.PostgresConnector"


ICEBERG_CLASS = "org.apache.iceberg.connect.IcebergSinkConnector"


DEBEZIUM_TRANSFORM = "org.apache.iceberg.connect.transforms.DebeziumTransform"


JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"


ENV_PROVIDER = "org.apache.kafka.common.config.provider.EnvVarConfigProvider"


#: Connect's own topics (it creates them itself, compacted, replication 1 on one node).
INTERNAL_TOPICS = {"config": "connect-configs", "offset": "connect-offsets", "status": "connect-status"}


CDC_USER = "bookshop_cdc"


SECRET_ENV_PREFIX = "LAKEHOUSE_"  # noqa: S105 - a variable name prefix, not a password


CDC_SECRET = SecretSpec("bookshop-cdc-password", "bookshopCdcPassword", "lab-bookshop-cdc-password",
                        managed_on={Target.AWS: "MSK Connect's Debezium logs in with the RDS-managed secret"})


SecretRef = Callable[[str, str], str]  # (platform secret name, key within it) -> a config-provider reference


def env_name(secret_name: str) -> str:
    """The worker variable holding a secret natively and on docker (``EnvVarConfigProvider``)."""
    return SECRET_ENV_PREFIX + secret_name.upper().replace("-", "_")


def env_ref(secret_name: str, _key: str = "") -> str:
    """``${env:LAKEHOUSE_...}``: resolved by the worker when it starts a task; Connect stores the reference."""
    return "${env:" + env_name(secret_name) + "}"


def _converters() -> dict[str, str]:
    return {"key.converter": JSON_CONVERTER, "key.converter.schemas.enable": "true",
            "value.converter": JSON_CONVERTER, "value.converter.schemas.enable": "true"}


def source_config(ctx: ServiceContext, source: DebeziumPostgresSpec, ref: SecretRef = env_ref,
                  user: str = CDC_USER, password_secret: str = CDC_SECRET.name) -> dict[str, str]:
    """Debezium's PostgreSQL connector: pgoutput on the platform's publication and slot (never its own)."""
    host, port = ctx.address(needed(ctx.spec, DATABASE, ctx.name), "pg").rsplit(":", 1)
    config = {
        "connector.class": DEBEZIUM_CLASS,
        "tasks.max": "1",
        "database.hostname": host,
        "database.port": port,
        "database.user": user,
        "database.password": ref(password_secret, "password"),
        "database.dbname": source.database,
        "topic.prefix": source.topic_prefix,
        "plugin.name": "pgoutput",
        "publication.name": source.publication,
        "publication.autocreate.mode": "disabled",
        "slot.name": source.slot,
        "slot.drop.on.stop": "false",
        "table.include.list": ",".join(source.tables),
        "snapshot.mode": source.snapshot_mode,
        "decimal.handling.mode": "precise",
        "time.precision.mode": "connect",
        "tombstones.on.delete": "false",
        "poll.interval.ms": str(source.poll_interval_ms),
        **_converters(),
    }
    return {**config, **source.config}


def sink_config(ctx: ServiceContext, sink: IcebergSinkSpec, ref: SecretRef = env_ref) -> dict[str, str]:
    """The Iceberg sink through the stack's default catalog, on the stack's store, committing on an interval."""
    from lakehouse_platform.services import profiles

    spec = ctx.spec
    prefix = "iceberg.catalog."
    catalog = {
        f"{prefix}type": "rest",
        f"{prefix}uri": profiles.catalog_uri(spec, Side.INTERNAL),
        f"{prefix}warehouse": profiles.warehouse(spec),
        f"{prefix}io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        f"{prefix}client.region": spec.storage.region,
    }
    for key, value in profiles.client_secrets(spec).items():
        catalog[prefix + key] = _provider_refs(value, ref)
    endpoint = profiles.s3_endpoint(spec, Side.INTERNAL)
    if endpoint:  # the lab store: keys from the worker's environment; on aws the catalog vends credentials
        catalog.update({f"{prefix}s3.endpoint": endpoint, f"{prefix}s3.path-style-access": "true",
                        f"{prefix}s3.access-key-id": ref("s3-access-key", "access-key"),
                        f"{prefix}s3.secret-access-key": ref("s3-secret-key", "secret-key")})
    config = {
        "connector.class": ICEBERG_CLASS,
        "tasks.max": "1",
        "topics": ",".join(sink.topics),
        "iceberg.tables": sink.table,
        "iceberg.tables.auto-create-enabled": "true",
        "iceberg.tables.evolve-schema-enabled": "true",
        "iceberg.tables.auto-create-props.format-version": "2",
        # The platform's table properties on the table it creates (its retention's age, metadata kept, retries).
        **{f"iceberg.tables.auto-create-props.{key}": value
           for key, value in spec.table_properties(sink.table, spec.table_bounds(sinks=True)).items()},
        "iceberg.catalog": spec.name.replace("-", "_"),
        **catalog,
        "iceberg.control.topic": kafka.CONTROL_TOPIC,
        # Sinks share the control topic; each needs its own consumer group prefix.
        "iceberg.control.group-id-prefix": f"cg-control-{sink.name}-",
        "iceberg.control.commit.interval-ms": str(sink.commit_interval_s * 1000),
        "iceberg.control.commit.timeout-ms": str(sink.timeout_s * 1000),
        **_converters(),
        "consumer.override.auto.offset.reset": "earliest",
    }
    if sink.cdc:
        config.update({"transforms": "dbz", "transforms.dbz.type": DEBEZIUM_TRANSFORM})
    return {**config, **sink.config}


def _provider_refs(value: str, ref: SecretRef) -> str:
    """A catalog client property with its secret placeholders turned into config-provider references."""
    return SECRET_TOKEN.sub(lambda m: ref(m.group(1), "secret"), value)


def connector_config(ctx: ServiceContext, connector: DebeziumPostgresSpec | IcebergSinkSpec,
                     ref: SecretRef = env_ref) -> dict[str, str]:
    """One declared connector's Connect configuration (without ``name``), as every target registers it."""
    if isinstance(connector, DebeziumPostgresSpec):
        return source_config(ctx, connector, ref)
    return sink_config(ctx, connector, ref)


def worker_secrets(ctx: ServiceContext) -> list[str]:
    """The platform secrets the declared connectors reference (the worker's environment carries them)."""
    names: list[str] = []
    if ctx.spec.streams.sources():
        names.append(CDC_SECRET.name)
    if ctx.spec.streams.sinks():
        from lakehouse_platform.services import profiles
        if profiles.s3_endpoint(ctx.spec, Side.INTERNAL):
            names += ["s3-access-key", "s3-secret-key"]
        for value in profiles.client_secrets(ctx.spec).values():
            names += [n for n in SECRET_TOKEN.findall(value) if n not in names]
    return names


def worker_properties(ctx: ServiceContext, plugin_path: str, bind_host: str) -> dict[str, str]:
    """connect-distributed.properties of the one worker (every target; docker maps it to the image's variables)."""
    port = ctx.listen_port("rest")
    return {
        "bootstrap.servers": ctx.address(kafka.KAFKA, "broker"),
        "group.id": f"{ctx.spec.name}-connect",
        "listeners": f"http://{bind_host}:{port}",
        "rest.advertised.host.name": ctx.address(CONNECT, "rest").rsplit(":", 1)[0],
        "rest.advertised.port": str(port),
        "rest.advertised.listener": "http",
        "plugin.path": plugin_path,
        # Scanning the 150 MB sink reflectively (the default hybrid_warn) doubles start time; every
        # plugin here declares itself in META-INF/services.
        "plugin.discovery": "service_load",
        "key.converter": JSON_CONVERTER,
        "value.converter": JSON_CONVERTER,
        "config.storage.topic": INTERNAL_TOPICS["config"],
        "offset.storage.topic": INTERNAL_TOPICS["offset"],
        "status.storage.topic": INTERNAL_TOPICS["status"],
        "config.storage.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        # An idle sink answers the coordinator's START_COMMIT only inside put(), which the worker calls
        # at least every offset flush: the default 60 s would stretch every commit (measured: 5 s gave
        # p99 18.8 s at a 10 s interval, 1 s gave 11-12 s).
        "offset.flush.interval.ms": "1000",
        # Exactly-once source (KIP-618): a source task's records and its offsets commit in one Kafka transaction,
        # so a worker or broker restart (an upgrade restarts both) replays nothing the sink already has; the
        # sink's consumers read committed records only. The upgrade test saw one order doubled without it.
        "exactly.once.source.support": "enabled",
        "consumer.isolation.level": "read_committed",
        # JSON with schemas is ~4 KB an event; zstd made the 60k-row snapshot 49x smaller.
        "producer.compression.type": "zstd",
        # Credentials in connector configs are ${env:LAKEHOUSE_*} references: Connect stores the
        # reference, the worker resolves it when it starts a task; other variables are not readable.
        "config.providers": "env",
        "config.providers.env.class": ENV_PROVIDER,
        "config.providers.env.param.allowlist.pattern": f"^{SECRET_ENV_PREFIX}.*",
    }


def secret_env(ctx: ServiceContext) -> dict[str, str]:
    return {env_name(name): secret(name) for name in worker_secrets(ctx)}


LOG4J2 = kafka.LOG4J2 + """\
logger.connect.name = org.apache.kafka.connect
logger.connect.level = INFO
logger.iceberg.name = org.apache.iceberg
logger.iceberg.level = INFO
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = WARN
logger.parquet.name = org.apache.parquet
logger.parquet.level = WARN
"""


def jvm_flags(ctx: ServiceContext) -> list[str]:
    heap_mb = parse_size(ctx.service.heap or ctx.service.memory) // (1024 * 1024)
    # G1PeriodicGCInterval: an idle worker hands unused heap back to the OS (resident memory falls after a snapshot).
    return [f"-Xms{max(heap_mb // 4, 64)}m", f"-Xmx{heap_mb}m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            *IDLE_HEAP_FLAGS, "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true"]


def check(spec: PlatformSpec) -> list[str]:
    """A CDC source needs the platform's database wherever its connectors are deployed (here, or MSK Connect);
    each sink's table keeps a retention that holds its commits."""
    deployed = CONNECT in spec.enabled_services() or (spec.target is Target.AWS and spec.aws.kafka_msk)
    if not deployed:
        return []
    sinks = [b.problem for b in spec.table_bounds(sinks=True).values()
             if b.problem and b.key.startswith("streams.connectors.")]
    if sinks:
        return sinks
    if not spec.streams.sources() or registry().provider(spec, DATABASE) is not None:
        return []
    index = next(i for i, c in enumerate(spec.streams.connectors) if c.kind == "debezium-postgres")
    return [f"streams.connectors.{index}: a Debezium source captures the bookshop in the platform's PostgreSQL; "
            f"enable services.{registry().providers(DATABASE)[0]} or remove the connector"]

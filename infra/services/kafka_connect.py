"""Kafka Connect (distributed worker) with Debezium's PostgreSQL source and the Iceberg sink (compute, streams).

Whole definition: defaults, the worker's configuration (``worker_properties``: natively a
properties file, on docker the Debezium image's variables), the connectors the stack declares
(``connector_config``: one rendering for every target; credentials are config-provider references
the worker resolves, never values), the bookshop's CDC source in the platform's PostgreSQL
(``source_statements``: schema, sixty thousand seeded orders, the connector's role, the
publication and the replication slot), the deployment steps that register them, the local process,
the container, and the two artifacts: natively Kafka's classpath plus both plugin directories
assembled from jar locks beside this module; for the lab only the Iceberg sink's directory, which
the Debezium image (it carries its own Debezium) mounts as a second plugin.

Where the bookshop's setup lives, and why: it is a deployment step of this service (a typed dynamic
resource, ``PostgresSource``, built by ``infra/targets/deploy_steps.py``), not a post-start step of
PostgreSQL. A replication slot retains WAL for as long as it exists, read or not, so it must exist
exactly while a CDC connector is declared: created before the connector, dropped after the connector
is removed (or streams are turned off). PostgreSQL itself only creates the empty ``bookshop`` database.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from infra.artifacts import cache, java, maven
from infra.artifacts.recipe import Artifact, ArtifactError, ArtifactRecipe
from infra.paths import PROJECT_ROOT
from infra.services import kafka
from infra.services.base import (
    SECRET_TOKEN,
    ContainerHost,
    ContainerPlan,
    NativeHost,
    NativePlan,
    SecretSpec,
    ServiceContext,
    ServiceDefinition,
    Side,
    StepHost,
    StepPlan,
    properties,
    secret,
)
from infra.spec import DebeziumPostgresSpec, IcebergSinkSpec, PlatformSpec, Target, parse_size

CONNECT = "kafka-connect"
PLUGIN_DIR_IN_IMAGE = "/kafka/connect"  # the Debezium image's plugin.path: one subdirectory per plugin
DEBEZIUM_LOCK = kafka.LOCKS / "debezium-connector-postgres.lock.json"
ICEBERG_LOCK = kafka.LOCKS / "iceberg-kafka-connect.lock.json"
DEBEZIUM_CLASS = "io.debezium.connector.postgresql.PostgresConnector"
ICEBERG_CLASS = "org.apache.iceberg.connect.IcebergSinkConnector"
DEBEZIUM_TRANSFORM = "org.apache.iceberg.connect.transforms.DebeziumTransform"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
ENV_PROVIDER = "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
#: Connect's own topics (it creates them itself, compacted, replication 1 on one node).
INTERNAL_TOPICS = {"config": "connect-configs", "offset": "connect-offsets", "status": "connect-status"}
CDC_USER = "bookshop_cdc"
SECRET_ENV_PREFIX = "LAKEHOUSE_"  # noqa: S105 - a variable name prefix, not a password

CONNECT_DEFAULT = {
    "layer": "compute",
    "owner": "streaming",
    "role": "Kafka Connect: Debezium's PostgreSQL source and the Iceberg sink (change data capture)",
    "version": "3.6.2",  # Debezium, as the lab image's tag says
    # 3.6.2.Final does not resolve on Maven Central (its parent debezium-build-parent:3.6.2.Final is missing).
    "native_version": "3.6.1",
    "bundles": {"kafka connect": "4.3.0", "iceberg-kafka-connect": "1.11.0"},
    "native_bundles": {"kafka connect": "4.3.1", "iceberg-kafka-connect": "1.11.0"},
    "image": "quay.io/debezium/connect:3.6.2.Final",
    "ports": {"rest": {"internal": 8083, "external": 8083}},
    "health": {"kind": "http", "port": "rest", "path": "/health", "ready_timeout_s": 240,
               "command": ["CMD-SHELL", "curl -fsS http://127.0.0.1:8083/health >/dev/null"]},
    # Measured natively: at -Xmx768m RSS reached 1.04 GB during the 60k snapshot, while the live heap
    # after a full GC is ~150 MB with both connectors; 512 MiB keeps the process well inside its budget.
    "memory": "1GiB",
    "heap": "512MiB",
    # The topics first: brokers never auto-create them, and a source writing to a missing topic fails.
    "depends_on": [kafka.KAFKA, kafka.TOPICS_JOB],
}

CDC_SECRET = SecretSpec("bookshop-cdc-password", "bookshopCdcPassword", "lab-bookshop-cdc-password",
                        managed_on={Target.AWS: "MSK Connect's Debezium logs in with the RDS-managed secret"})

# -- the bookshop's CDC source ------------------------------------------------------------------

#: Orders the seed generates, and the window they span (nine days from 2026-03-01 00:00 UTC).
SEED_ORDERS = 60_000
SEED_START = "2026-03-01 00:00:00"
SEED_SPAN_MS = 9 * 86_400_000

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS public.orders (
    order_id    bigint        PRIMARY KEY,
    customer_id integer       NOT NULL,
    book_isbn   text          NOT NULL,
    quantity    integer       NOT NULL CHECK (quantity > 0),
    unit_price  numeric(10,2) NOT NULL CHECK (unit_price >= 0),
    status      text          NOT NULL CHECK (status IN ('placed','paid','shipped','delivered','cancelled')),
    order_ts    timestamp     NOT NULL,
    updated_at  timestamp     NOT NULL DEFAULT (now() AT TIME ZONE 'utc')
)"""

# Deterministic without any RNG state: every value is a function of md5(tag || id), so every
# target (psql in a job, the deploying host's driver) seeds byte-identical rows. timestamp, not
# timestamptz: Debezium (time.precision.mode=connect) maps it to Connect's Timestamp, an Iceberg
# timestamp column; timestamptz would arrive as a string. Millisecond precision: connect mode drops µs.
SEED_SQL = f"""
WITH h AS (
  SELECT i,
         ('x' || substr(md5('customer:' || i), 1, 7))::bit(28)::int AS hc,
         ('x' || substr(md5('book:' || i), 1, 7))::bit(28)::int AS hb,
         ('x' || substr(md5('pick:' || i), 1, 7))::bit(28)::int AS hp,
         ('x' || substr(md5('quantity:' || i), 1, 7))::bit(28)::int AS hq,
         ('x' || substr(md5('status:' || i), 1, 7))::bit(28)::int AS hs,
         ('x' || substr(md5('time:' || i), 1, 7))::bit(28)::int AS ht,
         ('x' || substr(md5('update:' || i), 1, 7))::bit(28)::int AS hu
  FROM generate_series(1, {SEED_ORDERS}) AS i
), books AS (
  SELECT b, core || ((10 - (SELECT sum(CASE WHEN k % 2 = 1 THEN 1 ELSE 3 END * substr(core, k, 1)::int)
                            FROM generate_series(1, 12) AS k) % 10) % 10)::text AS isbn,
         (ARRAY[7.99, 9.99, 12.50, 14.99, 19.99, 24.00, 29.95, 34.99, 49.00])[1 + hprice % 9] AS price
  FROM (SELECT b, '978' || lpad((('x' || substr(md5('isbn:' || b), 1, 8))::bit(32)::bigint % 1000000000)::text,
                                9, '0') AS core,
               ('x' || substr(md5('price:' || b), 1, 7))::bit(28)::int AS hprice
        FROM generate_series(0, 499) AS b) AS raw
), rows AS (
  SELECT i, 1 + hc % 5000 AS customer_id,
         -- half the orders pick a bestseller (a Pareto-skewed rank), half any of the 500 books
         CASE WHEN hp % 2 = 0 THEN least(floor(power((hb + 1)::float8 / 268435456, -1 / 1.2))::int - 1, 499)
              ELSE hb % 500 END AS book,
         (ARRAY[1, 1, 1, 1, 2, 2, 3, 4])[1 + hq % 8] AS quantity,
         CASE WHEN hs % 100 < 10 THEN 'placed' WHEN hs % 100 < 30 THEN 'paid' WHEN hs % 100 < 60 THEN 'shipped'
              WHEN hs % 100 < 95 THEN 'delivered' ELSE 'cancelled' END AS status,
         timestamp '{SEED_START}' + interval '1 millisecond'
           * floor(((i - 1) + ht::float8 / 268435456) * {SEED_SPAN_MS} / {SEED_ORDERS}) AS order_ts,
         hu % 259200 AS update_s
  FROM h
)
INSERT INTO public.orders (order_id, customer_id, book_isbn, quantity, unit_price, status, order_ts, updated_at)
SELECT i, customer_id, books.isbn, quantity, books.price, status, order_ts,
       CASE WHEN status = 'placed' THEN order_ts ELSE order_ts + update_s * interval '1 second' END
FROM rows JOIN books ON books.b = rows.book
WHERE NOT EXISTS (SELECT 1 FROM public.orders)
ORDER BY i"""  # noqa: S608 - built from this module's constants only


def source_statements(source: DebeziumPostgresSpec, with_role: bool = True) -> tuple[str, ...]:
    """Everything the CDC source needs, idempotent, in order: schema, seed, role, publication, slot.

    ``{cdc_password}`` is bound by the step (a literal composed by the driver, never string-built).
    The slot comes last and alone: PostgreSQL refuses to create a logical slot in a transaction
    that has written. ``with_role=False`` leaves out the connector's own role (on aws Debezium logs
    in as RDS's master user, whose password RDS keeps).
    """
    tables = ", ".join(source.tables)
    role = (
        f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{CDC_USER}') THEN "
        f"CREATE ROLE {CDC_USER} WITH LOGIN REPLICATION; END IF; END $$",
        f"ALTER ROLE {CDC_USER} WITH LOGIN REPLICATION PASSWORD {{cdc_password}}",
        f"GRANT CONNECT ON DATABASE {source.database} TO {CDC_USER}",
        f"GRANT USAGE ON SCHEMA public TO {CDC_USER}",
        f"GRANT SELECT ON {tables} TO {CDC_USER}",
    ) if with_role else ()
    return (
        SCHEMA_SQL,
        # Full before-images in the WAL: updates and deletes carry every column, not only the key.
        "ALTER TABLE public.orders REPLICA IDENTITY FULL",
        "CREATE INDEX IF NOT EXISTS orders_order_ts_idx ON public.orders (order_ts)",
        SEED_SQL,
        *role,
        f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_publication WHERE pubname = '{source.publication}') THEN "
        f"CREATE PUBLICATION {source.publication} FOR TABLE {tables}; END IF; END $$",
        # A changed table list reaches an existing publication too.
        f"ALTER PUBLICATION {source.publication} SET TABLE {tables}",
        f"SELECT pg_create_logical_replication_slot('{source.slot}', 'pgoutput') "  # noqa: S608 - validated names
        f"WHERE NOT EXISTS (SELECT FROM pg_replication_slots WHERE slot_name = '{source.slot}')",
    )


def teardown_statements(source: DebeziumPostgresSpec) -> tuple[str, ...]:
    """What ``source_statements`` made that costs anything while unused: the slot (WAL), the publication,
    the role. The orders stay (operational data is never destroyed by a deployment)."""
    tables = ", ".join(source.tables)
    return (
        f"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "  # noqa: S608 - validated names
        f"WHERE slot_name = '{source.slot}' AND NOT active",
        f"DROP PUBLICATION IF EXISTS {source.publication}",
        f"DO $$ BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{CDC_USER}') THEN "  # noqa: S608
        f"REVOKE ALL ON {tables} FROM {CDC_USER}; REVOKE USAGE ON SCHEMA public FROM {CDC_USER}; "
        f"REVOKE CONNECT ON DATABASE {source.database} FROM {CDC_USER}; DROP ROLE {CDC_USER}; END IF; END $$",
    )


# -- connectors ---------------------------------------------------------------------------------

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
    host, port = ctx.address("postgres", "pg").rsplit(":", 1)
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
    from infra import profiles  # profiles import the services: import here, not at module load

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
        from infra import profiles

        if profiles.s3_endpoint(ctx.spec, Side.INTERNAL):
            names += ["s3-access-key", "s3-secret-key"]
        for value in profiles.client_secrets(ctx.spec).values():
            names += [n for n in SECRET_TOKEN.findall(value) if n not in names]
    return names


def steps(ctx: ServiceContext, host: StepHost) -> list[StepPlan]:
    """The CDC sources, then every declared connector, as the deploying host reaches them."""
    from infra.targets.steps import Connector, PostgresSource

    spec = ctx.spec
    found: list[StepPlan] = []
    rest = ctx.url(CONNECT, "rest", host.side)
    pg_host, pg_port = ctx.address("postgres", "pg", host.side).rsplit(":", 1) if ctx.enabled("postgres") \
        else ("", "0")
    for source in spec.streams.sources():
        found.append(StepPlan(
            name=f"{source.name}-source", resource=PostgresSource,
            inputs={"host": pg_host, "port": int(pg_port), "database": source.database, "user": "postgres",
                    "password": secret("postgres-password"), "apply": source_statements(source),
                    "teardown": teardown_statements(source), "params": {"cdc_password": secret(CDC_SECRET.name)},
                    "slot": source.slot},
            after=("postgres",),
        ))
    sink_needs = tuple(n for n in (spec.catalog.default, "seaweedfs") if ctx.enabled(n))
    for connector in spec.streams.connectors:
        cdc = isinstance(connector, DebeziumPostgresSpec)
        found.append(StepPlan(
            name=f"connector-{connector.name}", resource=Connector,
            # A source's offsets point into its slot, which its source step drops: they go with the connector.
            inputs={"name": connector.name, "connect_url": rest, "config": connector_config(ctx, connector),
                    "reset_offsets_on_delete": cdc},
            after=(f"{connector.name}-source", "postgres") if cdc else sink_needs,
            outputs=("last_action",), export="connectors",
        ))
    return found


# -- the worker -----------------------------------------------------------------------------------


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
            "-XX:G1PeriodicGCInterval=30000", "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true"]


def native(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    """``ConnectDistributed`` on loopback with both plugins; no local state (configs, offsets, status are topics).

    The worker properties file is the last argument on purpose: the Iceberg sink reads it back from
    ``sun.java.command`` for its control-topic clients (IcebergSinkConfig.loadWorkerProps).
    """
    assert host.artifact is not None and host.java_home is not None
    root = host.artifact.path
    config, log4j = host.home / "connect-distributed.properties", host.home / "log4j2.properties"
    java = str(host.java_home / "bin" / "java")
    return NativePlan(
        argv=[java, *jvm_flags(ctx), f"-Dlog4j2.configurationFile={log4j}", "-cp", f"{root / 'libs'}/*",
              "org.apache.kafka.connect.cli.ConnectDistributed", str(config)],
        files={str(config): properties(worker_properties(ctx, str(root / "plugins"), "127.0.0.1")),
               str(log4j): LOG4J2},
        env={"JAVA_HOME": str(host.java_home), **secret_env(ctx)},
        health={"kind": "http", "url": ctx.url(CONNECT, "rest", path="/health"), "expect_status": 200},
        stop_grace_s=30.0,
    )


#: Worker settings the Debezium image takes from dedicated variables rather than CONNECT_<KEY>.
IMAGE_VARIABLES = {"bootstrap.servers": "BOOTSTRAP_SERVERS", "group.id": "GROUP_ID",
                   "config.storage.topic": "CONFIG_STORAGE_TOPIC", "offset.storage.topic": "OFFSET_STORAGE_TOPIC",
                   "status.storage.topic": "STATUS_STORAGE_TOPIC",
                   "offset.flush.interval.ms": "OFFSET_FLUSH_INTERVAL_MS"}


def image_env_name(key: str) -> str:
    """The Debezium image's variable for a worker property: ``CONNECT_<KEY, . as _>`` (it lowercases, _ -> .)."""
    if "_" in key or "-" in key:
        raise ValueError(f"{key!r} cannot be set through the Debezium image's CONNECT_* variables")
    return IMAGE_VARIABLES.get(key) or "CONNECT_" + key.replace(".", "_").upper()


def container(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """The Debezium image (its own Debezium) with the Iceberg sink's directory mounted as a second plugin (the
    lab's built image has both plugins under the same plugin path)."""
    assert host.artifact is not None
    props = worker_properties(ctx, PLUGIN_DIR_IN_IMAGE, "")
    props["listeners"] = f"http://0.0.0.0:{ctx.listen_port('rest')}"
    # The image sets plugin.path itself (its entrypoint falls back to /kafka/connect).
    env = {image_env_name(k): v for k, v in props.items() if k != "plugin.path"}
    env.update({"HEAP_OPTS": " ".join(jvm_flags(ctx)[:2]), **secret_env(ctx)})
    if ctx.spec.lab.images == "built":  # the lab's built image carries both plugin directories
        return ContainerPlan(env=env)
    return ContainerPlan(env=env, host_mounts={str(host.artifact.path): f"{PLUGIN_DIR_IN_IMAGE}/iceberg-kafka-connect"})


# -- artifacts: the worker's classpath and the plugin directories, from jar locks -----------------

PLUGINS = {"debezium-connector-postgres": DEBEZIUM_LOCK, "iceberg-kafka-connect": ICEBERG_LOCK}


def _locks() -> dict[str, maven.JarLock]:
    return {name: maven.JarLock.read(path) for name, path in PLUGINS.items()}


def artifact_key(ctx: ServiceContext) -> str:
    digests = "-".join(lock.digest()[:12] for lock in (kafka.lock(), *_locks().values()))
    return f"kafka-connect:{ctx.service.native_version or ctx.service.version}:{digests}"


def fetch_worker(ctx: ServiceContext) -> Artifact:
    """``<root>/libs`` (Kafka 4.3.1: the worker) and ``<root>/plugins/<plugin>/`` (one classloader each)."""
    locks = _locks()
    version = kafka.locked_version(locks["debezium-connector-postgres"], "debezium-connector-postgres")
    wanted = ctx.service.native_version or ctx.service.version
    if not version.startswith(wanted):
        raise ArtifactError(f"{DEBEZIUM_LOCK.name} pins Debezium {version}, the spec wants {wanted}")
    key = artifact_key(ctx)
    root = cache.cache_root() / CONNECT / key.split(":", 2)[2]
    with cache.locked(key):
        if found := cache.cached(key):
            return found
        libs = maven.link_into(maven.fetch_all(kafka.lock().jars), root / "libs")
        files = {f"libs/{p.name}": cache.file_record(p) for p in libs}
        for name, jar_lock in locks.items():
            for jar in maven.link_into(maven.fetch_all(jar_lock.jars), root / "plugins" / name):
                files[f"plugins/{name}/{jar.name}"] = cache.file_record(jar)
        entry = {
            "name": CONNECT, "requested": wanted, "version": version.removesuffix(".Final"), "path": str(root),
            "root": str(root), "files": files, "sha256": cache.tree_digest(files),
            "classpath": [str(p) for p in libs], "main_class": "org.apache.kafka.connect.cli.ConnectDistributed",
            "source": "Maven Central, jar locks kafka-runtime, debezium-connector-postgres, iceberg-kafka-connect",
            "notes": [f"Debezium {version}: 3.6.2.Final (the pin) does not resolve on Maven Central "
                      "(debezium-build-parent:3.6.2.Final missing); the newest fully served 3.6 is used",
                      f"plugins: {', '.join(f'{n} ({len(lk.jars)} jars)' for n, lk in locks.items())}"],
        }
        cache.record(key, entry)
        return cache.artifact_from(entry)


def lab_key(ctx: ServiceContext) -> str:
    return f"kafka-connect-plugin:iceberg-kafka-connect:{maven.JarLock.read(ICEBERG_LOCK).digest()[:12]}"


def fetch_sink_plugin(ctx: ServiceContext) -> Artifact:
    """The Iceberg sink's plugin directory for the lab's Connect container (real files: it is bind-mounted)."""
    jar_lock = maven.JarLock.read(ICEBERG_LOCK)
    version = kafka.locked_version(jar_lock, "iceberg-kafka-connect")
    out = cache.cache_root() / CONNECT / f"iceberg-kafka-connect-{jar_lock.digest()[:12]}"
    return kafka.assemble(lab_key(ctx), jar_lock, out, version,
                          [f"jar lock {ICEBERG_LOCK.name}: {len(jar_lock.jars)} jars, mounted at "
                           f"{PLUGIN_DIR_IN_IMAGE}/iceberg-kafka-connect"])


# -- cloud artifact: MSK Connect's custom plugins ---------------------------------------------------

MSK_CLIENTS_LOCK = kafka.LOCKS / "msk-connect-clients.lock.json"
PROVIDER_SOURCE = PROJECT_ROOT / "tools" / "msk-secrets-provider" / "SecretsManagerConfigProvider.java"
PROVIDER_CLASS = "lakehouse.connect.SecretsManagerConfigProvider"
PROVIDER_DIR = "secrets-provider"  # in the artifact, and in each plugin ZIP
#: MSK Connect's Java runtime is not documented; the provider targets the oldest one Kafka 3.x supports.
PROVIDER_RELEASE = 11


def msk_enabled(spec: PlatformSpec) -> bool:
    return spec.aws.kafka_msk and bool(spec.streams.connectors)


def debezium_plugin(ctx: ServiceContext) -> maven.Coordinate:
    """Debezium's published PostgreSQL plugin archive at the lab image's version (3.6.2.Final is served)."""
    return maven.Coordinate("io.debezium", "debezium-connector-postgres", ctx.service.image_tag, "plugin", "zip")


def msk_key(ctx: ServiceContext) -> str:
    source = hashlib.sha256(PROVIDER_SOURCE.read_bytes()).hexdigest()[:12]
    locks = "-".join(maven.JarLock.read(p).digest()[:12] for p in (ICEBERG_LOCK, MSK_CLIENTS_LOCK))
    return f"msk-connect-plugins:{ctx.service.image_tag}:{locks}:provider-{source}"


def fetch_msk_plugins(ctx: ServiceContext) -> Artifact:
    """What the aws target uploads as MSK Connect custom plugins (one ZIP per connector kind):

    ``debezium-connector-postgres-<v>-plugin.zip`` (Maven Central, verified), ``iceberg-kafka-connect/``
    (the sink's jar lock) and ``secrets-provider/`` (the platform's Secrets Manager config provider,
    compiled here, with the AWS SDK and MSK IAM authentication from their jar lock), which both ZIPs carry.
    """
    key = msk_key(ctx)
    root = cache.cache_root() / "msk-connect" / key.split(":", 2)[2].replace(":", "-")
    with cache.locked(key):
        if found := cache.cached(key):
            return found
        files: dict[str, dict] = {}
        clients = maven.link_into(maven.fetch_all(maven.JarLock.read(MSK_CLIENTS_LOCK).jars), root / PROVIDER_DIR)
        kafka_clients = next(p for p in maven.fetch_all(kafka.lock().jars) if p.name.startswith("kafka-clients-"))
        provider = java.compile_jar([PROVIDER_SOURCE], [kafka_clients, *clients],
                                    root / PROVIDER_DIR / "lakehouse-msk-secrets-provider.jar",
                                    release=PROVIDER_RELEASE)
        for path in [*clients, provider]:
            files[f"{PROVIDER_DIR}/{path.name}"] = cache.file_record(path)
        sink_jars = maven.fetch_all(maven.JarLock.read(ICEBERG_LOCK).jars)
        for jar in maven.link_into(sink_jars, root / "iceberg-kafka-connect"):
            files[f"iceberg-kafka-connect/{jar.name}"] = cache.file_record(jar)
        coordinate = debezium_plugin(ctx)
        archive = maven.fetch(coordinate)
        target = root / coordinate.filename
        target.unlink(missing_ok=True)
        os.link(archive, target)
        files[coordinate.filename] = cache.file_record(target)
        entry = {
            "name": "msk-connect-plugins", "requested": ctx.service.version, "version": ctx.service.version,
            "path": str(root), "root": str(root), "files": files, "sha256": cache.tree_digest(files),
            "source": f"Maven Central ({coordinate.filename}, jar locks iceberg-kafka-connect and msk-connect-clients)"
                      f" + javac {PROVIDER_SOURCE.relative_to(PROJECT_ROOT)}",
            "notes": [f"config provider {PROVIDER_CLASS} compiled for Java {PROVIDER_RELEASE}: AWS's own "
                      "(aws-samples/msk-config-providers) is not on Maven Central"],
        }
        cache.record(key, entry)
        return cache.artifact_from(entry)


SERVICES = (
    ServiceDefinition(
        name=CONNECT, default=CONNECT_DEFAULT, job_of=kafka.KAFKA,
        summary="Kafka Connect with Debezium's PostgreSQL source and the Iceberg sink",
        container=container, native=native, java=17, steps=steps, secrets=(CDC_SECRET,),
        artifact=ArtifactRecipe(key=artifact_key, fetch=fetch_worker,
                                source="Maven Central (jar locks: kafka-runtime + two plugin directories)"),
        lab_artifact=ArtifactRecipe(key=lab_key, fetch=fetch_sink_plugin,
                                    source="Maven Central (jar lock iceberg-kafka-connect)"),
        cloud_artifact=ArtifactRecipe(key=msk_key, fetch=fetch_msk_plugins,
                                      source="Maven Central + javac (MSK Connect custom plugins)"),
        cloud_enabled=msk_enabled,
        unavailable={Target.AWS: "on aws Connect is MSK Connect: set aws.kafka_msk: true instead"},
    ),
)


def plugin_dir(root: Path, plugin: str) -> Path:
    """Where one plugin lives in the native worker artifact."""
    return root / "plugins" / plugin

"""Pydantic models of the platform: the typed boundary between a stack's config and the program.

Everything a stack may set is declared here, with a description and a validator. Components never
see raw config: they receive plain typed values taken from a validated ``PlatformSpec``.
"""

from __future__ import annotations

import ipaddress
import re
from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from infra.spec.layers import LAYER_NAMES, Layer

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB|K|M|G|Ki|Mi|Gi)\s*$")
_UNITS = {
    "B": 1, "K": 1000, "KB": 1000, "M": 1000**2, "MB": 1000**2, "G": 1000**3, "GB": 1000**3,
    "TB": 1000**4, "Ki": 1024, "KiB": 1024, "Mi": 1024**2, "MiB": 1024**2, "Gi": 1024**3,
    "GiB": 1024**3, "TiB": 1024**4,
}
SIZE_HELP = "a number with a unit, such as 512MiB, 1.5GiB or 800MB"


def parse_size(value: str) -> int:
    """Bytes in a size such as ``512MiB`` or ``1.5GB``; ``ValueError`` naming the allowed form otherwise."""
    match = _SIZE_RE.match(str(value))
    if not match:
        raise ValueError(f"{value!r} is not a size; use {SIZE_HELP}")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


class Target(str, Enum):
    """Where one declaration is deployed."""

    DOCKER = "docker"
    AWS = "aws"
    NATIVE = "native"


class Strict(BaseModel):
    """Base of every config model: unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_enum_values=False)


class LayerSpec(Strict):
    """A layer's contract: who owns it, how it changes, what it promises, what its loss means."""

    owns: str = Field(description="What the layer owns.")
    owner: str = Field(description="The team that answers for the layer.")
    change_control: str = Field(description="How changes to the layer are reviewed and released.")
    promise: str = Field(description="What the owner promises everyone else.")
    down_means: str = Field(description="What the layer being down means for everyone else.")

    @field_validator("owner")
    @classmethod
    def _owner_named(cls, value: str) -> str:
        if not value or not value.strip():
            raise ValueError("every layer needs an owner: name the team that answers for it")
        return value.strip()


class PortSpec(Strict):
    """One port of a service: the one other services use and the one host-side clients use."""

    internal: int = Field(ge=1, le=65535, description="Port inside the service's network (container port).")
    external: int | None = Field(
        default=None, ge=1024, le=65535,
        description="Port host-side clients reach on 127.0.0.1; None keeps the port internal.",
    )


class HealthCheckSpec(Strict):
    """How a target knows a service is ready."""

    kind: Literal["http", "tcp", "command"] = Field(description="http GET, TCP connect, or a command.")
    port: str | None = Field(default=None, description="Name of the service port probed (http, tcp).")
    path: str = Field(default="/", description="HTTP path probed (http).")
    command: list[str] = Field(
        default_factory=list,
        description="In-container health command (docker test form); required for kind=command.",
    )
    interval_s: int = Field(default=5, ge=1, le=300, description="Seconds between checks.")
    timeout_s: int = Field(default=3, ge=1, le=120, description="Seconds one check may take.")
    retries: int = Field(default=30, ge=1, le=1000, description="Failed checks before unhealthy.")
    start_period_s: int = Field(default=10, ge=0, le=900, description="Grace period after start.")
    ready_timeout_s: int = Field(
        default=120, ge=5, le=1800, description="Longest a deployment waits for the service to be healthy."
    )

    @model_validator(mode="after")
    def _complete(self) -> "HealthCheckSpec":
        if self.kind in ("http", "tcp") and not self.port:
            raise ValueError(f"a {self.kind} health check needs 'port' (the name of one of the service's ports)")
        if self.kind == "command" and not self.command:
            raise ValueError("a command health check needs 'command'")
        return self


class ServiceSpec(Strict):
    """One service of the platform, on any target."""

    layer: Layer = Field(description="The layer the service belongs to.")
    enabled: bool = Field(default=True, description="Whether this stack runs the service.")
    role: str = Field(default="", description="What the service is, in a few words.")
    owner: str | None = Field(
        default=None, description="Team owning this service; defaults to its layer's owner (engines have their own)."
    )
    kind: Literal["server", "job"] = Field(
        default="server", description="server: long-running, health-checked; job: runs once to completion."
    )
    version: str = Field(min_length=1, description="The pinned version of the service.")
    native_version: str | None = Field(
        default=None, description="Version the native target obtains where the registries lack the pin."
    )
    image: str = Field(description="Container image, always with an explicit tag (digest advised).")
    ports: dict[str, PortSpec] = Field(default_factory=dict, description="Named ports.")
    env: dict[str, str] = Field(default_factory=dict, description="Non-secret environment variables.")
    command: list[str] = Field(default_factory=list, description="Container command override.")
    health: HealthCheckSpec | None = Field(default=None, description="Readiness check (required for servers).")
    memory: str = Field(description=f"Memory budget and container limit: {SIZE_HELP}.")
    heap: str | None = Field(default=None, description="JVM heap (-Xmx) for JVM services.")
    depends_on: list[str] = Field(default_factory=list, description="Services that must be up first.")

    @field_validator("image")
    @classmethod
    def _image_pinned(cls, value: str) -> str:
        name, _, digest = value.partition("@")
        last = name.rsplit("/", 1)[-1]
        if ":" not in last:
            raise ValueError(f"image {value!r} has no tag; pin a version such as {value}:1.2.3")
        if last.rsplit(":", 1)[1] in ("latest", ""):
            raise ValueError(f"image {value!r} uses 'latest'; pin an explicit version tag")
        if digest and not digest.startswith("sha256:"):
            raise ValueError(f"image {value!r} has a malformed digest; use @sha256:<hex>")
        return value

    @field_validator("memory", "heap")
    @classmethod
    def _size(cls, value: str | None) -> str | None:
        if value is not None:
            parse_size(value)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "ServiceSpec":
        if self.kind == "server" and self.health is None:
            raise ValueError("a server needs a health check ('health')")
        if self.health and self.health.port and self.health.port not in self.ports:
            raise ValueError(
                f"health.port {self.health.port!r} is not one of the service's ports ({', '.join(self.ports) or 'none'})"
            )
        if self.heap and parse_size(self.heap) >= parse_size(self.memory):
            raise ValueError(f"heap {self.heap} must be smaller than the memory budget {self.memory}")
        return self

    @property
    def memory_bytes(self) -> int:
        """The memory budget in bytes."""
        return parse_size(self.memory)

    @property
    def image_tag(self) -> str:
        """The image's tag (the part after the last colon of its name)."""
        return self.image.partition("@")[0].rsplit(":", 1)[1]


class IdentitySpec(Strict):
    """An S3 identity of the lab's object store (docker and native targets)."""

    access_key: str = Field(min_length=3, description="Access key id (not secret).")
    actions: list[Literal["Admin", "Read", "Write", "List", "Tagging"]] = Field(
        description="SeaweedFS S3 actions granted."
    )
    secret_config_key: str = Field(
        description="Stack config key (secret) holding the secret key; a lab default applies when unset."
    )


class StorageSpec(Strict):
    """The warehouse bucket and what may happen to it."""

    bucket: str = Field(default="warehouse", pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", description="Bucket name.")
    warehouse_prefixes: list[str] = Field(
        default_factory=lambda: [""], description="Prefixes holding Iceberg tables ('' = the whole bucket)."
    )
    region: str = Field(default="us-east-1", description="S3 region clients sign for.")
    noncurrent_version_expiration_days: int = Field(
        default=30, ge=1, le=3650, description="Days after which noncurrent object versions expire (cloud)."
    )
    abort_incomplete_multipart_days: int = Field(default=7, ge=1, le=365, description="Abort stale multipart uploads.")
    replica_bucket: bool = Field(default=False, description="Replicate to a second bucket (cloud recovery).")


class CatalogSpec(Strict):
    """How the catalogs store their pointers and which one engines use by default."""

    default: Literal["rest-fixture", "polaris", "lakekeeper"] = Field(
        default="rest-fixture", description="The catalog engine profiles point at."
    )
    fixture_jdbc_uri: str = Field(
        default="jdbc:sqlite:file:/catalog/fixture.db",
        description="JDBC URI of the REST fixture's SQLite database; must be file-backed.",
    )
    warehouse: str = Field(default="warehouse", description="Warehouse name in Polaris/Lakekeeper.")
    spark_cache_enabled: bool = Field(
        default=True, description="Spark REST client's table cache (cache-enabled); stale reads when true."
    )
    spark_cache_expiration_ms: int = Field(default=30000, description="cache.expiration-interval-ms for Spark.")

    @field_validator("fixture_jdbc_uri")
    @classmethod
    def _file_backed(cls, value: str) -> str:
        lowered = value.lower()
        if "mode=memory" in lowered or ":memory:" in lowered:
            raise ValueError(
                f"{value!r} is an in-memory SQLite database: each pooled connection gets its own empty copy "
                "(no such table: iceberg_tables under concurrent commits); use a file, e.g. "
                "jdbc:sqlite:file:/catalog/fixture.db"
            )
        if not lowered.startswith("jdbc:sqlite:"):
            raise ValueError(f"{value!r} is not a SQLite JDBC URI; use jdbc:sqlite:file:<path>")
        return value


class EngineSpec(Strict):
    """Host-side engines and the Iceberg library version the platform is certified with."""

    iceberg: str = Field(default="1.11.0", description="Iceberg library version wherever it is a library.")
    spark: str = Field(default="4.1.3", description="pyspark version (host client).")
    pyiceberg: str = Field(default="0.11.1", description="PyIceberg version.")
    duckdb: str = Field(default="1.5.5", description="DuckDB version.")
    duckdb_native: str = Field(
        default="1.4.4", description="DuckDB the native target runs: newest with extensions on PyPI."
    )


class MaintenanceJob(Strict):
    """A maintenance task scheduled by the platform (orchestration layer)."""

    action: Literal["rewrite_data_files", "expire_snapshots", "rewrite_manifests", "remove_orphan_files"]
    schedule: str = Field(description="Cron expression (UTC), e.g. '0 3 * * *'.")
    older_than_days: int = Field(default=7, ge=1, le=3650, description="Age threshold for expire/orphan removal.")

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str) -> str:
        if len(value.split()) != 5:
            raise ValueError(f"{value!r} is not a cron expression of five fields (minute hour day month weekday)")
        return value


class RecoverySpec(Strict):
    """What the recovery layer promises."""

    backup_retention_days: int = Field(default=7, ge=1, le=35, description="Catalog database backup retention.")
    rpo_minutes: int = Field(default=60, ge=1, description="Recovery point objective.")
    rto_minutes: int = Field(default=120, ge=1, description="Recovery time objective.")


class ObservabilitySpec(Strict):
    """Signals derived from the metadata tables."""

    freshness_minutes: int = Field(default=60, ge=1, description="A table older than this is stale.")
    alarm_email: str | None = Field(default=None, description="Where alarms go (cloud).")


AWS_REGION_RE = re.compile(r"^(us|eu|ap|sa|ca|me|af|il|mx)-(north|south|east|west|central|northeast|southeast|southwest|northwest)-\d$")


class AwsSpec(Strict):
    """Sizes and counts for the cloud target."""

    region: str = Field(default="eu-west-1", description="AWS region, e.g. eu-west-1.")
    vpc_cidr: str = Field(default="10.42.0.0/16", description="CIDR of the platform's VPC.")
    availability_zones: int = Field(default=2, ge=2, le=3, description="Private subnets, one per AZ.")
    rds_instance_class: str = Field(default="db.t4g.medium", description="RDS PostgreSQL instance class.")
    rds_allocated_storage_gb: int = Field(default=50, ge=20, le=16384, description="RDS storage in GB.")
    trino_workers: int = Field(default=2, ge=1, le=100, description="Trino workers on Fargate.")
    trino_worker_cpu: int = Field(default=2048, description="Fargate CPU units per Trino worker.")
    trino_worker_memory_mb: int = Field(default=8192, ge=512, description="Fargate memory per Trino worker.")
    catalog_task_count: int = Field(default=2, ge=1, le=20, description="Tasks per catalog service.")
    spark_emr_serverless: bool = Field(default=True, description="Run Spark as an EMR Serverless application.")
    kafka_msk: bool = Field(default=False, description="Run Kafka as Amazon MSK (with MSK Connect for Debezium).")
    msk_broker_count: int = Field(default=2, ge=2, description="MSK brokers (a multiple of the AZ count).")
    msk_instance_type: str = Field(default="kafka.m7g.large", pattern=r"^kafka\.[a-z0-9]+\.[a-z0-9]+$",
                                   description="MSK broker instance type.")
    msk_kafka_version: str = Field(default="3.9.x", description="Kafka version MSK runs (an MSK-supported version).")
    emr_release_label: str = Field(default="emr-7.10.0", pattern=r"^emr-\d+\.\d+\.\d+$",
                                   description="EMR Serverless release of the Spark application.")
    spark_max_vcpu: int = Field(default=16, ge=1, le=400,
                                description="Most vCPU the Spark application may hold (memory: 4 GB per vCPU).")
    log_retention_days: int = Field(default=30, description="CloudWatch log retention (a CloudWatch-allowed value).")
    replica_region: str | None = Field(
        default=None, description="Region of the replica bucket (storage.replica_bucket); the platform's region if unset."
    )

    @field_validator("region", "replica_region")
    @classmethod
    def _region(cls, value: str | None) -> str | None:
        if value is not None and not AWS_REGION_RE.match(value):
            raise ValueError(f"{value!r} is not an AWS region; use a region code such as eu-west-1 or us-east-1")
        return value

    @field_validator("trino_workers", mode="before")
    @classmethod
    def _workers(cls, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool) and value < 1:
            raise ValueError(
                f"{value} workers cannot run a query: the coordinator only plans; set at least 1 Trino worker"
            )
        return value

    @field_validator("vpc_cidr")
    @classmethod
    def _cidr(cls, value: str) -> str:
        try:
            network = ipaddress.ip_network(value, strict=True)
        except ValueError:
            raise ValueError(f"{value!r} is not an IPv4 network in CIDR form, such as 10.42.0.0/16") from None
        if network.version != 4 or not network.is_private or not 16 <= network.prefixlen <= 22:
            raise ValueError(
                f"{value!r} must be a private IPv4 network from /16 to /22 (an eighth of it per subnet, per AZ)"
            )
        return value

    @field_validator("rds_instance_class")
    @classmethod
    def _rds_class(cls, value: str) -> str:
        if not re.match(r"^db\.[a-z0-9]+\.[a-z0-9]+$", value):
            raise ValueError(f"{value!r} is not an RDS instance class; use one such as db.t4g.medium or db.r7g.large")
        return value

    @field_validator("log_retention_days")
    @classmethod
    def _retention(cls, value: int) -> int:
        if value not in CLOUDWATCH_RETENTION_DAYS:
            raise ValueError(
                f"{value} is not a CloudWatch retention; allowed: {', '.join(map(str, CLOUDWATCH_RETENTION_DAYS))}"
            )
        return value


# Fargate task sizes: CPU units -> allowed memory (MiB).
FARGATE_SIZES: dict[int, tuple[int, ...]] = {
    256: (512, 1024, 2048),
    512: tuple(range(1024, 4097, 1024)),
    1024: tuple(range(2048, 8193, 1024)),
    2048: tuple(range(4096, 16385, 1024)),
    4096: tuple(range(8192, 30721, 1024)),
    8192: tuple(range(16384, 61441, 4096)),
    16384: tuple(range(32768, 122881, 8192)),
}
CLOUDWATCH_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192,
                             2557, 2922, 3288, 3653)
# What the native target runs as local processes (jobs are folded into them); anything else
# enabled on native is refused with the reason.
NATIVE_SERVICES = ("seaweedfs", "seaweedfs-bucket", "postgres", "rest-fixture-init", "rest-fixture", "trino")
NOT_ON_NATIVE = {
    "lakekeeper": "no build of Lakekeeper is obtainable from the package registries; it runs on docker and aws",
    "lakekeeper-migrate": "Lakekeeper does not run natively",
    "lakekeeper-s3-loopback": "a docker sidecar; natively every service already shares 127.0.0.1",
}
# What the aws target runs; anything else enabled on aws is refused with the reason.
AWS_SERVICES = ("postgres", "polaris-bootstrap", "polaris", "lakekeeper-migrate", "lakekeeper", "trino")
NOT_ON_AWS = {
    "seaweedfs": "on aws the store is S3 itself",
    "kafka": "on aws Kafka runs as Amazon MSK: set aws.kafka_msk: true instead",
    "kafka-connect": "on aws Debezium runs on MSK Connect: set aws.kafka_msk: true instead",
    "lakekeeper-s3-loopback": "a docker sidecar; on aws the catalogs reach S3 directly",
    "flink-jobmanager": "Flink is not offered on the aws target",
    "flink-taskmanager": "Flink is not offered on the aws target",
}


class PlatformSpec(Strict):
    """The whole platform of one stack: target, seven layer contracts, services and their settings."""

    target: Target = Field(description="Where the stack deploys: docker, aws or native.")
    name: str = Field(default="lakehouse", pattern=r"^[a-z][a-z0-9-]{1,30}$", description="Resource name prefix.")
    layers: dict[Layer, LayerSpec] = Field(description="The seven layers' contracts.")
    services: dict[str, ServiceSpec] = Field(description="Every service, enabled or not.")
    storage: StorageSpec = Field(default_factory=StorageSpec)
    catalog: CatalogSpec = Field(default_factory=CatalogSpec)
    identities: dict[str, IdentitySpec] = Field(default_factory=dict, description="S3 identities of the lab store.")
    engines: EngineSpec = Field(default_factory=EngineSpec)
    maintenance: list[MaintenanceJob] = Field(default_factory=list, description="Scheduled maintenance.")
    recovery: RecoverySpec = Field(default_factory=RecoverySpec)
    observability: ObservabilitySpec = Field(default_factory=ObservabilitySpec)
    aws: AwsSpec = Field(default_factory=AwsSpec)

    @model_validator(mode="before")
    @classmethod
    def _aws_storage_region(cls, data: object) -> object:
        """On aws the bucket lives in aws.region: storage.region (what clients sign for) follows it when unset."""
        if not isinstance(data, dict) or str(getattr(data.get("target"), "value", data.get("target"))) != "aws":
            return data
        storage, cloud = data.get("storage") or {}, data.get("aws") or {}
        if isinstance(storage, dict) and isinstance(cloud, dict) and "region" not in storage:
            region = cloud.get("region", AwsSpec.model_fields["region"].default)
            data = {**data, "storage": {**storage, "region": region}}
        return data

    @model_validator(mode="after")
    def _whole_platform(self) -> "PlatformSpec":
        missing = [name for name in LAYER_NAMES if Layer(name) not in self.layers]
        if missing:
            raise ValueError(f"layers: missing {', '.join(missing)}; all seven layers need a contract")
        enabled = self.enabled_services()
        for name, service in enabled.items():
            for dep in service.depends_on:
                if dep not in self.services:
                    raise ValueError(
                        f"services.{name}.depends_on: unknown service {dep!r}; allowed: {', '.join(sorted(self.services))}"
                    )
                if dep not in enabled:
                    raise ValueError(
                        f"services.{name}.depends_on: {dep!r} is disabled in this stack; "
                        f"enable services.{dep} or disable {name}"
                    )
        seen: dict[int, str] = {}
        for name, service in enabled.items():
            for port_name, port in service.ports.items():
                if port.external is None:
                    continue
                here = f"services.{name}.ports.{port_name}.external"
                if port.external in seen:
                    raise ValueError(f"{here}: port {port.external} is already taken by {seen[port.external]}; "
                                     "every external port must be unique")
                seen[port.external] = here
        if self.target is Target.AWS and "rest-fixture" in enabled:
            raise ValueError(
                "services.rest-fixture.enabled: the REST fixture is a test server with SQLite behind it and is "
                "refused on the aws target; use polaris or lakekeeper (allowed on lab and native only)"
            )
        if self.catalog.default not in enabled:
            raise ValueError(
                f"catalog.default: {self.catalog.default!r} is not enabled; allowed: "
                + ", ".join(n for n in ("rest-fixture", "polaris", "lakekeeper") if n in enabled)
            )
        return self

    @model_validator(mode="after")
    def _fits_native(self) -> "PlatformSpec":
        """Native-only checks: what runs as a local process here."""
        if self.target is not Target.NATIVE:
            return self
        for name in self.enabled_services():
            if name not in NATIVE_SERVICES:
                reason = NOT_ON_NATIVE.get(name, "the native target does not run it yet")
                raise ValueError(
                    f"services.{name}.enabled: {name} does not run on the native target ({reason}); disable it. "
                    f"Allowed: {', '.join(NATIVE_SERVICES)}"
                )
        return self

    @model_validator(mode="after")
    def _fits_aws(self) -> "PlatformSpec":
        """Cloud-only checks: what the aws target can run, and sizes AWS accepts."""
        if self.target is not Target.AWS:
            return self
        cloud = self.aws
        for name in self.enabled_services():
            if name not in AWS_SERVICES:
                reason = NOT_ON_AWS.get(name, "the aws target has no way to run it")
                raise ValueError(f"services.{name}.enabled: {name} does not run on the aws target ({reason}); disable it")
        if self.storage.region != cloud.region:
            raise ValueError(
                f"storage.region: {self.storage.region!r} differs from aws.region {cloud.region!r}; on aws the bucket "
                "lives in aws.region, so leave storage.region unset or make them equal"
            )
        memories = FARGATE_SIZES.get(cloud.trino_worker_cpu)
        if memories is None:
            raise ValueError(
                f"aws.trino_worker_cpu: {cloud.trino_worker_cpu} is not a Fargate CPU size; allowed: "
                + ", ".join(map(str, FARGATE_SIZES))
            )
        if cloud.trino_worker_memory_mb not in memories:
            raise ValueError(
                f"aws.trino_worker_memory_mb: {cloud.trino_worker_memory_mb} does not fit {cloud.trino_worker_cpu} CPU "
                f"units on Fargate; allowed: {memories[0]} to {memories[-1]} in steps of {memories[1] - memories[0]}"
            )
        if cloud.kafka_msk and cloud.msk_broker_count % cloud.availability_zones:
            raise ValueError(
                f"aws.msk_broker_count: {cloud.msk_broker_count} brokers cannot spread evenly over "
                f"{cloud.availability_zones} availability zones; use a multiple of {cloud.availability_zones}"
            )
        if self.storage.replica_bucket and len(f"{self.storage.bucket}-replica") > 63:
            raise ValueError(
                f"storage.bucket: {self.storage.bucket!r} leaves no room for its replica "
                f"'{self.storage.bucket}-replica' (63 characters at most); shorten the bucket name"
            )
        if self.maintenance and "trino" not in self.enabled_services():
            raise ValueError(
                "maintenance: on aws maintenance runs through Trino (its CLI against the coordinator); "
                "enable services.trino or remove maintenance"
            )
        for index, job in enumerate(self.maintenance):
            _, _, day_of_month, _, day_of_week = job.schedule.split()
            if day_of_month != "*" and day_of_week != "*":
                raise ValueError(
                    f"maintenance.{index}.schedule: {job.schedule!r} restricts both day-of-month and day-of-week; "
                    "EventBridge Scheduler accepts only one of them (set the other to *)"
                )
        return self

    def enabled_services(self) -> dict[str, ServiceSpec]:
        """The services this stack runs, in declaration order."""
        return {name: svc for name, svc in self.services.items() if svc.enabled}

    def services_of(self, layer: Layer) -> dict[str, ServiceSpec]:
        """The enabled services of one layer."""
        return {name: svc for name, svc in self.enabled_services().items() if svc.layer is layer}

    def owner_of(self, service: str) -> str:
        """Who owns a service: its own owner, else its layer's owner."""
        svc = self.services[service]
        return svc.owner or self.layers[svc.layer].owner

    def pin_of(self, service: str) -> str:
        """The version this stack's target runs for a service (native may differ where registries lack the pin)."""
        svc = self.services[service]
        return svc.native_version if self.target is Target.NATIVE and svc.native_version else svc.version

    def version_manifest(self) -> dict[str, str]:
        """The pins of this stack: every enabled service plus the host engines and the Iceberg library."""
        manifest = {name: self.pin_of(name) for name in self.enabled_services()}
        manifest.update(
            {
                "iceberg": self.engines.iceberg,
                "pyspark": self.engines.spark,
                "pyiceberg": self.engines.pyiceberg,
                "duckdb": self.engines.duckdb_native if self.target is Target.NATIVE else self.engines.duckdb,
            }
        )
        return manifest

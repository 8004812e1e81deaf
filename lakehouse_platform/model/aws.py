"""Sizes and counts of the cloud target, with what AWS accepts."""

from __future__ import annotations

import ipaddress
import re

from pydantic import Field, field_validator

from lakehouse_platform.model.base import Strict
from lakehouse_platform.model.layers import Layer, of_layer

AWS_REGION_RE = re.compile(
    r"^(us|eu|ap|sa|ca|me|af|il|mx)-(north|south|east|west|central|northeast|southeast|southwest|northwest)-\d$"
)


class AwsSpec(Strict):
    """Sizes and counts for the cloud target."""

    # Each field names the layer its key belongs to (the change review), unless it shapes every layer (the region,
    # the network).
    region: str = Field(default="eu-west-1", description="AWS region, e.g. eu-west-1.")
    vpc_cidr: str = Field(default="10.42.0.0/16", description="CIDR of the platform's VPC.")
    availability_zones: int = Field(default=2, ge=2, le=3, description="Private subnets, one per AZ.")
    rds_instance_class: str = Field(default="db.t4g.medium", description="RDS PostgreSQL instance class.",
                                    json_schema_extra=of_layer(Layer.CATALOG))
    rds_allocated_storage_gb: int = Field(default=50, ge=20, le=16384, description="RDS storage in GB.",
                                          json_schema_extra=of_layer(Layer.CATALOG))
    trino_workers: int = Field(default=2, ge=1, le=100, description="Trino workers on Fargate.",
                               json_schema_extra=of_layer(Layer.COMPUTE))
    trino_worker_cpu: int = Field(default=2048, description="Fargate CPU units per Trino worker.",
                                  json_schema_extra=of_layer(Layer.COMPUTE))
    trino_worker_memory_mb: int = Field(default=8192, ge=512, description="Fargate memory per Trino worker.",
                                        json_schema_extra=of_layer(Layer.COMPUTE))
    catalog_task_count: int = Field(default=2, ge=1, le=20, description="Tasks per catalog service.",
                                    json_schema_extra=of_layer(Layer.CATALOG))
    spark_emr_serverless: bool = Field(default=True, description="Run Spark as an EMR Serverless application.",
                                       json_schema_extra=of_layer(Layer.COMPUTE))
    kafka_msk: bool = Field(default=False, description="Run Kafka as Amazon MSK (with MSK Connect for Debezium).",
                            json_schema_extra=of_layer(Layer.COMPUTE))
    msk_broker_count: int = Field(default=2, ge=2, description="MSK brokers (a multiple of the AZ count).",
                                  json_schema_extra=of_layer(Layer.COMPUTE))
    msk_instance_type: str = Field(default="kafka.m7g.large", pattern=r"^kafka\.[a-z0-9]+\.[a-z0-9]+$",
                                   description="MSK broker instance type.", json_schema_extra=of_layer(Layer.COMPUTE))
    msk_kafka_version: str = Field(default="3.9.x", description="Kafka version MSK runs (an MSK-supported version).",
                                   json_schema_extra=of_layer(Layer.COMPUTE))
    emr_release_label: str = Field(default="emr-7.10.0", pattern=r"^emr-\d+\.\d+\.\d+$",
                                   description="EMR Serverless release of the Spark application.",
                                   json_schema_extra=of_layer(Layer.COMPUTE))
    spark_max_vcpu: int = Field(default=16, ge=1, le=400,
                                description="Most vCPU the Spark application may hold (memory: 4 GB per vCPU).",
                                json_schema_extra=of_layer(Layer.COMPUTE))
    log_retention_days: int = Field(default=30, description="CloudWatch log retention (a CloudWatch-allowed value).",
                                    json_schema_extra=of_layer(Layer.OBSERVABILITY))
    replica_region: str | None = Field(
        default=None,
        description="Region of the replica bucket (storage.replica_bucket); the platform's region if unset.",
        json_schema_extra=of_layer(Layer.RECOVERY),
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

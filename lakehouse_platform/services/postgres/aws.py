"""PostgreSQL on aws: RDS for PostgreSQL holds the catalogs' databases (and the bookshop's CDC source).

TLS only, logical WAL for Debezium (the same settings as ``SERVER_SETTINGS`` on the lab), Multi-AZ,
encrypted with the platform's key, its master password kept by RDS in Secrets Manager (the
``postgres-password`` secret reference of every task that connects), every log export in a KMS-encrypted
group made before it. RDS creates one database: the ``postgres-init`` job creates the catalogs' and the
bookshop's (idempotent), first among the catalog jobs ``pulumi up`` runs.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws as aws

from lakehouse_platform.components.aws.alarms import Alarm
from lakehouse_platform.components.aws.ecs import Container, shell
from lakehouse_platform.components.aws.network import cname
from lakehouse_platform.model import Layer, PlatformSpec, parse_size
from lakehouse_platform.placeholders import secret
from lakehouse_platform.services.aws_catalogs import catalog_job
from lakehouse_platform.services.aws_parts import Foundation, PartComponent
from lakehouse_platform.services.context import Side, host_of
from lakehouse_platform.services.plans import EcsPlan
from lakehouse_platform.services.postgres.config import NAME, SERVER_SETTINGS, databases, disk_settings

LAYER = Layer.CATALOG
DB_INIT_JOB = "postgres-init"  # aws only: RDS creates one database; this job creates the catalogs'
DB_USER = "postgres"
RDS_LOG_EXPORTS = ("postgresql", "upgrade")


def db_identifier(spec: PlatformSpec) -> str:
    return f"{spec.name}-{pulumi.get_stack()}-catalog"


def log_sources(spec: PlatformSpec) -> dict[str, str | None]:
    """Its init job's group, and RDS's own groups (RDS names them; they are made first, encrypted)."""
    sources: dict[str, str | None] = {DB_INIT_JOB: None}
    for export in RDS_LOG_EXPORTS:
        sources[f"rds-{export}"] = f"/aws/rds/instance/{db_identifier(spec)}/{export}"
    return sources


def init_container(spec: PlatformSpec) -> Container:
    """RDS creates one database; this job creates the catalogs' and the bookshop's (idempotent)."""
    pg = spec.services[NAME]
    creates = " ".join(databases())
    entry_point, command = shell([
        "set -e",
        f"for db in {creates}; do",
        "  psql -tAc \"SELECT 1 FROM pg_database WHERE datname = '$db'\" | grep -q 1 \\",
        "    || psql -c \"CREATE DATABASE $db\"",
        "done",
    ])
    plan = EcsPlan(entry_point=entry_point, command=command, env={
        "PGHOST": host_of(spec, NAME, Side.INTERNAL), "PGPORT": str(pg.ports["pg"].internal),
        "PGUSER": DB_USER, "PGDATABASE": "postgres", "PGSSLMODE": "require", "PGPASSWORD": secret("postgres-password"),
    })
    return Container(name=DB_INIT_JOB, image=pg.image, memory_mib=256, env=plan.env, command=plan.command,
                     entry_point=plan.entry_point)


class CatalogDatabase(PartComponent):
    """The catalogs' PostgreSQL on RDS, reached as ``postgres.<name>.internal``, and its init job."""

    first_jobs = (DB_INIT_JOB,)  # RDS creates one database: its init creates the others before any catalog job

    def __init__(self, foundation: Foundation) -> None:
        ctx, spec, gov = foundation.ctx, foundation.spec, foundation.gov
        super().__init__("platform:aws:CatalogDatabase", f"{spec.name}-{NAME}", ctx, LAYER)
        opts = self.child_opts()
        tags = ctx.tags(LAYER, NAME)
        major = spec.services[NAME].version.split(".")[0]
        self.identifier = db_identifier(spec)
        subnets = aws.rds.SubnetGroup(
            f"{spec.name}-catalog-db", name=self.identifier,
            description=f"{spec.name}: private subnets of the catalog database",
            subnet_ids=gov.network.private_subnet_ids, tags=tags, opts=opts,
        )
        parameters = aws.rds.ParameterGroup(
            f"{spec.name}-catalog-db", name=f"{self.identifier}-pg{major}", family=f"postgres{major}",
            description=f"{spec.name}: TLS only; logical WAL for Debezium (as postgres.SERVER_SETTINGS on the lab)",
            parameters=[
                {"name": "rds.force_ssl", "value": "1", "apply_method": "immediate"},
                {"name": "rds.logical_replication", "value": "1", "apply_method": "pending-reboot"},
                {"name": "max_wal_senders", "value": SERVER_SETTINGS["max_wal_senders"],
                 "apply_method": "pending-reboot"},
                {"name": "max_replication_slots", "value": SERVER_SETTINGS["max_replication_slots"],
                 "apply_method": "pending-reboot"},
                # What bounds its disk, as on the lab (RDS takes the WAL sizes in MB, the naptime in seconds).
                *[aws.rds.ParameterGroupParameterArgs(name=name, value=value.removesuffix("MB").removesuffix("s"),
                                                      apply_method="immediate")
                  for name, value in disk_settings(spec).items()],
            ],
            tags=tags, opts=opts,
        )
        self.database = aws.rds.Instance(
            f"{spec.name}-catalog-db",
            identifier=self.identifier,
            engine="postgres",
            engine_version=major,
            instance_class=spec.aws.rds_instance_class,
            allocated_storage=spec.aws.rds_allocated_storage_gb,
            max_allocated_storage=spec.aws.rds_allocated_storage_gb * 4,
            storage_type="gp3",
            storage_encrypted=True,
            kms_key_id=gov.key.arn,
            username=DB_USER,
            manage_master_user_password=True,
            master_user_secret_kms_key_id=gov.key.arn,
            db_subnet_group_name=subnets.name,
            parameter_group_name=parameters.name,
            vpc_security_group_ids=[gov.network.sg("db").id],
            publicly_accessible=False,
            multi_az=True,
            backup_retention_period=spec.recovery.backup_retention_days,
            backup_window="02:00-02:30",
            maintenance_window="sun:04:00-sun:05:00",
            copy_tags_to_snapshot=True,
            delete_automated_backups=False,
            deletion_protection=True,
            skip_final_snapshot=False,
            final_snapshot_identifier=f"{self.identifier}-final",
            auto_minor_version_upgrade=True,
            iam_database_authentication_enabled=True,
            performance_insights_enabled=True,
            performance_insights_kms_key_id=gov.key.arn,
            enabled_cloudwatch_logs_exports=list(RDS_LOG_EXPORTS),
            tags=tags,
            # RDS would create its log groups unencrypted: wait for the KMS-encrypted ones.
            opts=self.child_opts(depends_on=[foundation.logs.group(f"rds-{export}") for export in RDS_LOG_EXPORTS]),
        )
        cname(ctx, NAME, self.database.address, gov.network,
              f"{host_of(spec, NAME, Side.INTERNAL)} -> the managed endpoint in front of {NAME}", opts, tags)
        self.secret_refs["postgres-password"] = self.database.master_user_secrets.apply(
            lambda secrets: f"{secrets[0].secret_arn}:password::")
        catalog_job(foundation, DB_INIT_JOB, init_container(spec), owner=NAME, parent=self)
        self.register_outputs({"endpoint": self.database.endpoint})

    def layer_outputs(self) -> dict[str, Any]:
        return {"rds_endpoint": self.database.endpoint}

    def stack_outputs(self) -> dict[str, Any]:
        return {"rds_endpoint": self.database.endpoint,
                "rds_master_secret_arn": self.database.master_user_secrets.apply(
                    lambda s: s[0].secret_arn if s else None)}

    def watch(self, alarm: Alarm) -> None:
        """The catalog database short of CPU or storage."""
        spec = self.ctx.spec
        dimensions = {"DBInstanceIdentifier": self.identifier}
        alarm("catalog-db-cpu", "catalog database CPU above 80% for 15 minutes", namespace="AWS/RDS",
              metric_name="CPUUtilization", dimensions=dimensions, statistic="Average", period=300,
              evaluation_periods=3, threshold=80, comparison_operator="GreaterThanThreshold",
              treat_missing_data="missing")
        free_bytes = spec.aws.rds_allocated_storage_gb * 1024**3 // 10
        alarm("catalog-db-storage", "catalog database has less than 10% of its storage free", namespace="AWS/RDS",
              metric_name="FreeStorageSpace", dimensions=dimensions, statistic="Minimum", period=300,
              evaluation_periods=1, threshold=free_bytes, comparison_operator="LessThanThreshold",
              treat_missing_data="missing")
        # A replication slot whose reader stopped holds WAL back (max_slot_wal_keep_size bounds it).
        alarm("catalog-db-slot-lag", f"a replication slot holds more than {spec.streams.slot_lag_alert} of WAL: its "
                                     "reader (Debezium on MSK Connect) fell behind or stopped", namespace="AWS/RDS",
              metric_name="OldestReplicationSlotLag", dimensions=dimensions, statistic="Maximum", period=300,
              evaluation_periods=1, threshold=parse_size(spec.streams.slot_lag_alert),
              comparison_operator="GreaterThanThreshold", treat_missing_data="notBreaching")


def build(foundation: Foundation) -> CatalogDatabase:
    return CatalogDatabase(foundation)

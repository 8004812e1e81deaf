"""PostgreSQL: the catalogs' database and the bookshop's operational source (catalog layer).

Whole definition: defaults (logical WAL for Debezium), the container, the local process (its own
initdb cluster, run as the Debian package's system user), and the native artifact (the server
binaries of the newest PostgreSQL major Debian offers up to the pin). On aws it is RDS.
"""

from __future__ import annotations

from lakehouse_platform.model import Layer, Target
from lakehouse_platform.services.capabilities import DATABASE, DATABASE_BACKUP_PASSWORD
from lakehouse_platform.services.definition import (
    ArtifactRecipe,
    AwsIngress,
    AwsPart,
    Governance,
    Lazy,
    OnAws,
    OnDocker,
    OnNative,
    ProbeHooks,
    SecretSpec,
    ServiceDefinition,
)
from lakehouse_platform.services.postgres import container, image, native
from lakehouse_platform.services.postgres.artifact import artifact_key, fetch_server
from lakehouse_platform.services.postgres.config import NAME

DEFAULT = {
    "layer": "catalog",
    "role": "database behind the production catalogs, and the bookshop's operational source",
    "version": "18.6",
    "image": "postgres:18.6",
    "ports": {"pg": {"internal": 5432, "external": 5432}},
    "health": {"kind": "tcp", "port": "pg", "command": ["CMD-SHELL", "pg_isready -U postgres -h 127.0.0.1"]},
    "memory": "256MiB",
    # Disk: pg_wal (catalog.database.max_wal_size; a slot's streams.slot_max_wal_keep_size) and the data.
    "disk": "2GiB",
}


SERVICES = (
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="catalog databases and the bookshop's source (logical WAL)",
        title="PostgreSQL",
        docker=OnDocker(image=image.IMAGE, container=container.server),
        native=OnNative(process=native.server,
                        artifact=ArtifactRecipe(key=artifact_key, fetch=fetch_server,
                                                source="Debian apt (postgresql-N)"),
                        in_place=native.in_place),
        aws=OnAws(managed="RDS PostgreSQL", ingress=(
            AwsIngress("db", "pg", "catalogs", "only the catalogs reach the database", back="the catalog database"),
            AwsIngress("db", "pg", "connect", "Debezium (change data capture of the bookshop)",
                       back="Debezium reads the bookshop's WAL", when=lambda spec: spec.aws.kafka_msk),
        )),
        governance=Governance(secrets=(
            SecretSpec("postgres-password", "postgresPassword", "lab-postgres-password",
                       managed_on={Target.AWS: "RDS keeps the master password in Secrets Manager"}),
            SecretSpec(DATABASE_BACKUP_PASSWORD, "postgresBackupPassword", "lab-postgres-backup-password",
                       managed_on={Target.AWS: "no role of its own: AWS Backup keeps the RDS database"}))),
        provides=(DATABASE,), probes=ProbeHooks(version=Lazy("lakehouse_platform.services.postgres.probe:version")),
    ),
)

AWS_PARTS = (
    AwsPart(name=NAME, layer=Layer.CATALOG, build=Lazy("lakehouse_platform.services.postgres.aws:build"),
            enabled=lambda spec: NAME in spec.enabled_services(),
            log_sources=Lazy("lakehouse_platform.services.postgres.aws:log_sources")),
)

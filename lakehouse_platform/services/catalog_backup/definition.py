"""Catalog backups on a schedule (recovery): the fixture's SQLite by online backup, the catalog databases by pg_dump.

Runs ``python -m lakehouse_platform.runtime scheduler --role backup``: every ``recovery.backup_schedule``
(cron, UTC) it backs up each catalog database of the stack into ``<state>/backups/<source>/``
with a sha256 sidecar, records the run (job ``backup-catalog``) and deletes backups older than
``recovery.backup_retention_days`` (the newest always stays); see ``lakehouse_platform/runtime/backup.py``.
The way back is ``lakehouse recovery restore|rebuild`` (README, Recovery).

Natively it is the project's own Python, with the platform PostgreSQL's own ``pg_dump`` (the
postgres artifact). In the lab it runs in the operations image, built with the client tools of the lab
server's major. On aws the catalog database is RDS and AWS Backup keeps it
(``lakehouse_platform/targets/aws/recovery.py``).
"""

from __future__ import annotations

from lakehouse_platform.services import operations_support as support
from lakehouse_platform.services.capabilities import BACKUPS
from lakehouse_platform.services.catalog_backup import container, native
from lakehouse_platform.services.catalog_backup.config import NAME, check, stack_outputs
from lakehouse_platform.services.definition import OnAws, OnDocker, OnNative, ServiceDefinition

DEFAULT = {
    "layer": "recovery",
    "role": "backs up the catalogs' databases on the recovery schedule, checksummed, kept per the promise",
    "version": support.APSCHEDULER_VERSION,
    # pg_dump of the server's major: the operations image is built with it (its PG_MAJOR build argument).
    "image": support.OPERATIONS_IMAGE,
    "ports": {"http": {"internal": 8791, "external": 8791}},  # host side: the probes read its /jobs
    "health": {"kind": "http", "port": "http", "path": "/healthz",
               "command": support.container_health_command(8791), "start_period_s": 300, "ready_timeout_s": 600},
    "memory": "128MiB",
    # Disk: its log (the backups themselves: recovery.backup_retention_days, under <state>/backups).
    "disk": "128MiB",
}


SERVICES = (
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="scheduled catalog backups (SQLite online backup, pg_dump), sha256",
        docker=OnDocker(container=container.server),
        native=OnNative(process=native.server),
        aws=OnAws(managed="AWS Backup: continuous backup of the RDS catalog database "
                          "(lakehouse_platform/targets/aws/recovery.py)"),
        stack_outputs=stack_outputs, check=check, provides=(BACKUPS,),
    ),
)

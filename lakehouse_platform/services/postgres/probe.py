"""What the post-deploy probes ask of PostgreSQL: its server version, through psycopg (else its own psql)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from lakehouse_platform.services.capabilities import DATABASE_USER
from lakehouse_platform.services.postgres.config import NAME
from lakehouse_platform.services.probing import DeployedStack, ServiceHands, VersionReading


def version(stack: DeployedStack, hands: ServiceHands | None) -> Mapping[str, VersionReading]:
    """``SHOW server_version`` as the platform's database user; nothing where the host cannot reach the server."""
    address = stack.endpoint(NAME, "pg")
    if address is None:
        return {}
    host, port = address.rsplit(":", 1)
    password = stack.credentials.get("postgres_password", "")
    try:
        import psycopg

        with psycopg.connect(host=host, port=int(port), user=DATABASE_USER, password=password, dbname="postgres",
                             connect_timeout=10) as conn:
            row = conn.execute("SHOW server_version").fetchone()
        value = str(row[0]) if row else None
        return {NAME: VersionReading(value, f"psycopg SHOW server_version @ {address}")}
    except ImportError:
        pass
    argv0 = stack.service_record(NAME).get("argv0")
    beside = Path(argv0).with_name("psql") if argv0 else None
    psql = str(beside) if beside is not None and beside.exists() else shutil.which("psql")
    if not psql:
        raise RuntimeError("no PostgreSQL client: add psycopg[binary] to requirements.txt (or install psql)")
    done = subprocess.run([psql, "-h", host, "-p", port, "-U", DATABASE_USER, "-d", "postgres", "-XAtc",
                           "SHOW server_version"], capture_output=True, text=True, timeout=30, check=False,
                          env={**os.environ, "PGPASSWORD": password, "PGCONNECT_TIMEOUT": "10"})
    if done.returncode != 0:
        raise RuntimeError(f"psql exited {done.returncode}: {done.stderr.strip()[:300]}")
    return {NAME: VersionReading(done.stdout.strip(),
                                 f"psql SHOW server_version @ {address} (no Python driver in the venv)")}

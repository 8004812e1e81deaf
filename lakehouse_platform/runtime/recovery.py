"""Recovery (recovery layer): the scripted way back after the catalog's database is lost.

Two procedures, one idea: storage keeps every metadata file the commits wrote; the catalog only
lost its pointers (the chapter's exercise 2). So:

``restore`` (a backup exists)
    1. stop the catalog; 2. verify the newest backup's checksum and put it in place (stale
    journals removed); 3. start the catalog through the target (``pulumi up``); 4. **roll forward**:
    for every table on storage whose newest ``metadata.json`` is newer than the pointer the backup
    holds (commits after the backup), or that the backup does not know (created after it), drop
    the catalog entry without purging and register the newest metadata; 5. read every table back.
    Rolling forward matters twice over: commits after the backup are not lost, and an old backup's
    pointer may name a metadata file the catalog has since deleted (it keeps only the last N).
``rebuild`` (no backup: the chapter-16 procedure)
    Register each table's newest ``metadata.json`` found on storage (the REST register endpoint,
    ``POST /v1/{prefix}/namespaces/{ns}/register``), then read every table back.

"Newest" is the highest version ``N`` of ``<N>-<uuid>.metadata.json`` under
``<warehouse>/<namespace>/<table>/metadata/`` (the REST catalogs' default layout; Trino's
``<table>-<uuid>`` directories too); two files of one version (writers that raced) are told apart
by their ``last-sequence-number`` and ``last-updated-ms``. Caveats: tables with a custom location
outside that layout are not found (Lakekeeper names directories by uuid: there, restore its
PostgreSQL dump);
the newest *written* metadata may belong to a commit whose pointer swap failed (Iceberg deletes
such a file when it knows the commit failed); namespace properties are not recovered.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

METADATA_FILE = re.compile(r"^(?P<version>\d+)-[0-9a-fA-F-]+\.metadata\.json$")
# Trino writes a table under ``<name>-<uuid without dashes>`` (iceberg.unique-table-location, on by default).
UNIQUE_LOCATION = re.compile(r"^(?P<name>.+)-[0-9a-f]{32}$")


class RecoveryError(RuntimeError):
    """A recovery step failed; the message says which and what was found."""


@dataclass(frozen=True)
class StoredTable:
    """A table found on storage by its metadata files."""

    identifier: str
    metadata_location: str
    version: int
    candidates: int  # metadata files of the table on storage


def metadata_version(location: str | None) -> int | None:
    """The version ``N`` of a ``<N>-<uuid>.metadata.json`` location, or None."""
    if not location:
        return None
    match = METADATA_FILE.match(location.rsplit("/", 1)[-1])
    return int(match["version"]) if match else None


def _tie_break(s3: Any, bucket: str, keys: list[str]) -> str:
    def rank(key: str) -> tuple[int, int]:
        body = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
        return int(body.get("last-sequence-number", 0)), int(body.get("last-updated-ms", 0))

    return max(keys, key=rank)


def table_identifier(directories: list[str]) -> str:
    """``namespace.table`` of a table directory path; Trino's unique locations (``<table>-<32 hex>``) stripped."""
    *namespace, name = directories
    match = UNIQUE_LOCATION.match(name)
    return ".".join([*namespace, match["name"] if match else name])


def _updated_ms(s3: Any, bucket: str, key: str) -> int:
    return int(json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read()).get("last-updated-ms", 0))


def tables_on_storage(s3: Any, warehouse: str) -> dict[str, StoredTable]:
    """Every table under the warehouse, by its newest metadata file (see module docstring).

    A name found in two directories (a table dropped without purge and created again, or Trino's
    unique locations) is the directory whose newest metadata was updated last.
    """
    bucket, _, prefix = warehouse.removeprefix("s3://").partition("/")
    prefix = prefix.strip("/")
    found: dict[str, dict[str, list[tuple[int, str]]]] = {}  # identifier -> table directory -> candidates
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=f"{prefix}/" if prefix else ""):
        for item in page.get("Contents", []):
            relative = item["Key"][len(prefix) + 1:] if prefix else item["Key"]
            parts = relative.split("/")
            if len(parts) < 4 or parts[-2] != "metadata":
                continue
            match = METADATA_FILE.match(parts[-1])
            if match:
                directory = "/".join(parts[:-2])
                found.setdefault(table_identifier(parts[:-2]), {}).setdefault(directory, []).append(
                    (int(match["version"]), item["Key"]))
    tables: dict[str, StoredTable] = {}
    for identifier, directories in sorted(found.items()):
        newest: list[tuple[str, int, int]] = []  # (key, version, candidates) per directory
        for candidates in directories.values():
            top = max(v for v, _ in candidates)
            keys = [k for v, k in candidates if v == top]
            newest.append((keys[0] if len(keys) == 1 else _tie_break(s3, bucket, keys), top, len(candidates)))
        if len(newest) > 1:
            newest.sort(key=lambda entry: _updated_ms(s3, bucket, entry[0]))
        key, version, count = newest[-1]
        tables[identifier] = StoredTable(identifier, f"s3://{bucket}/{key}", version, count)
    return tables


def _register(catalog: Any, stored: StoredTable) -> None:
    namespace = stored.identifier.rsplit(".", 1)[0]
    catalog.create_namespace_if_not_exists(namespace)
    catalog.register_table(stored.identifier, stored.metadata_location)


def roll_forward(catalog: Any, stored: Mapping[str, StoredTable]) -> list[dict[str, Any]]:
    """Bring the catalog's pointers up to the newest metadata on storage; what was done per table.

    A table the catalog lacks is registered; a pointer older than storage's newest (or naming a
    file that is gone) is replaced: the entry is dropped **without purge** (the catalog's row only;
    every file stays) and the newest metadata registered. Nothing else is touched.
    """
    from pyiceberg.exceptions import NoSuchTableError

    actions: list[dict[str, Any]] = []
    for identifier, table in stored.items():
        entry: dict[str, Any] = {"table": identifier, "metadata_location": table.metadata_location,
                                 "version": table.version}
        try:
            current = catalog.load_table(identifier).metadata_location
        except NoSuchTableError:
            _register(catalog, table)
            actions.append({**entry, "action": "registered"})
            continue
        except Exception as exc:  # noqa: BLE001 - the pointer names a metadata file that no longer loads
            catalog.drop_table(identifier)
            _register(catalog, table)
            actions.append({**entry, "action": "re-registered (pointer did not load)", "error": str(exc)[:300]})
            continue
        version = metadata_version(current)
        if current == table.metadata_location or (version is not None and version >= table.version):
            actions.append({**entry, "action": "current", "metadata_location": current})
            continue
        catalog.drop_table(identifier)  # REST DELETE without purgeRequested: the files stay
        _register(catalog, table)
        actions.append({**entry, "action": "rolled forward", "from_version": version})
    return actions


def count_rows(table: Any) -> int:
    """Rows of the current snapshot (position and equality deletes applied)."""
    return int(table.scan().count())


def read_back(catalog: Any, identifiers: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Each table loaded and counted: rows, current snapshot, every snapshot id, metadata location (or the error)."""
    result: dict[str, dict[str, Any]] = {}
    for identifier in identifiers:
        try:
            table = catalog.load_table(identifier)
            snapshot = table.current_snapshot()
            result[identifier] = {"rows": count_rows(table), "snapshot_id": snapshot.snapshot_id if snapshot else None,
                                  "snapshots": sorted(s.snapshot_id for s in table.metadata.snapshots),
                                  "metadata_location": table.metadata_location}
        except Exception as exc:  # noqa: BLE001 - reported per table
            result[identifier] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
    return result


def place_sqlite_backup(backup_file: Path, database: Path, expected_sha256: str | None) -> None:
    """Put a verified SQLite backup where the (stopped) catalog expects its database.

    A leftover ``-journal`` (or ``-wal``/``-shm``) of the lost database would be replayed onto the
    restored file by SQLite at the next open, so they are removed first. The file belongs to whoever owns its
    directory: in the lab that is the catalog container's user, who must write it (a root-owned copy would leave
    the catalog read-only).
    """
    from lakehouse_platform.runtime.backup import sha256_file

    if expected_sha256 is not None and sha256_file(backup_file) != expected_sha256:
        raise RecoveryError(f"{backup_file}: sha256 does not match its sidecar; choose another backup")
    database.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("-journal", "-wal", "-shm"):
        Path(f"{database}{suffix}").unlink(missing_ok=True)
    staging = database.with_name(database.name + ".restoring")
    shutil.copyfile(backup_file, staging)
    owner = database.parent.stat()
    if os.geteuid() == 0 and (owner.st_uid, owner.st_gid) != (0, 0):
        os.chown(staging, owner.st_uid, owner.st_gid)
    os.replace(staging, database)


def pointers_in(database: Path) -> dict[str, str]:
    """Each table's metadata pointer as a (stopped) catalog's SQLite database holds it."""
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as con:
        rows = con.execute("SELECT table_namespace, table_name, metadata_location FROM iceberg_tables").fetchall()
    return {f"{namespace}.{name}": location for namespace, name, location in rows}


def roll_forward_offline(database: Path, stored: Mapping[str, StoredTable]) -> list[dict[str, Any]]:
    """Before the restored catalog serves anyone: each table's pointer moved to storage's newest metadata.

    A live writer (the streaming job, a sink) retries its commit until the catalog is back; if the catalog
    came back with the backup's older pointers, its next commit would build on them and orphan every
    commit made since the backup (they are on storage, on a branch nothing points to any more). Moving
    the pointers in the stopped catalog's own database (the JDBC catalog's ``iceberg_tables`` rows) closes
    that race; tables the backup does not know are registered afterwards through the API (``roll_forward``).
    """
    import sqlite3
    from contextlib import closing

    moved: list[dict[str, Any]] = []
    with closing(sqlite3.connect(database)) as con, con:
        rows = con.execute("SELECT table_namespace, table_name, metadata_location FROM iceberg_tables").fetchall()
        for namespace, name, current in rows:
            table = stored.get(f"{namespace}.{name}")
            version = metadata_version(current)
            if table is None or current == table.metadata_location or (
                    version is not None and version >= table.version):
                continue
            con.execute("UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? "
                        "WHERE table_namespace = ? AND table_name = ?",
                        (table.metadata_location, current, namespace, name))
            moved.append({"table": table.identifier, "action": "rolled forward (catalog stopped)",
                          "from_version": version, "version": table.version,
                          "metadata_location": table.metadata_location})
    return moved


def wait_for_catalog(load: Callable[[], Any], timeout_s: float = 60.0) -> Any:
    """The catalog client once the catalog answers (it may still be starting)."""
    import tenacity

    def answering() -> Any:
        catalog = load()
        catalog.list_namespaces()
        return catalog

    retrying = tenacity.Retrying(stop=tenacity.stop_after_delay(timeout_s), wait=tenacity.wait_fixed(0.5), reraise=True)
    try:
        return retrying(answering)
    except Exception as exc:  # noqa: BLE001 - retried until the deadline, then said once
        raise RecoveryError(f"the catalog did not answer within {timeout_s:g}s: {exc}") from None

"""Catalog: the pointer to every table's current metadata survives and stays private; never an
in-memory SQLite database; the REST fixture is a lab tool."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from typing import Any

from lakehouse_platform.policies.adapters import aws, config_files, docker, env_entries
from lakehouse_platform.policies.resources import (
    DOCKER_CONTAINER,
    ECS_TASK_DEFINITION,
    RDS_CLUSTER,
    RDS_CLUSTER_INSTANCE,
    RDS_INSTANCE,
    PolicyDef,
    Resource,
    StackContext,
    fmt_days,
    index_of,
    is_dynamic,
    message,
    service_label,
)
from lakehouse_platform.policies.wire import is_unknown, known, number, reveal, strings, truthy

SQLITE_URI_RE = re.compile(r"jdbc:sqlite:[^\s\"',]*", re.IGNORECASE)
REST_FIXTURE_IMAGE = "apache/iceberg-rest-fixture"


def _is_memory_sqlite(uri: str) -> bool:
    lowered = uri.lower()
    return lowered.startswith("jdbc:sqlite:") and ("mode=memory" in lowered or ":memory:" in lowered)


def check_no_memory_sqlite(resource: Resource, context: StackContext | None) -> list[str]:
    """No catalog on an in-memory SQLite database, on any target.

    Each pooled connection to an in-memory SQLite database gets its own empty copy, so the second
    connection fails with ``no such table: iceberg_tables`` and every restart loses every table.
    """
    rule = "catalog-no-in-memory-sqlite"
    found: list[str] = []
    for entry in env_entries(resource):
        if isinstance(entry.value, str) and _is_memory_sqlite(entry.value):
            found.append(f"{entry.name}={entry.value}")
    for f in config_files(resource):
        found.extend(f"{m} in {f.path}" for m in SQLITE_URI_RE.findall(f.content) if _is_memory_sqlite(m))
    if resource.type == ECS_TASK_DEFINITION:
        for c in aws.container_definitions(resource) or []:
            for e in c.get("environment") or []:
                value = str(e.get("value", ""))
                if _is_memory_sqlite(value):
                    found.append(f"{e.get('name')}={value}")
    if not found:
        found.extend(m for s in strings(resource.props) for m in SQLITE_URI_RE.findall(s) if _is_memory_sqlite(m))
    return [message(resource, rule,
                    f"{what} is an in-memory SQLite database: each pooled connection gets its own empty copy "
                    "(no such table: iceberg_tables) and a restart loses every table; use a file, e.g. "
                    "jdbc:sqlite:file:/catalog/fixture.db", context)
            for what in dict.fromkeys(found)]


def _sqlite_file(uri: str) -> str | None:
    """The file path of a file-backed SQLite JDBC URI."""
    rest = uri[len("jdbc:sqlite:"):]
    rest = rest.split("?", 1)[0]
    rest = rest.removeprefix("file:")
    return rest or None


def _is_root(user: Any) -> bool:
    user = reveal(user)
    if user is None or is_unknown(user):
        return False
    return str(user).split(":", 1)[0] in ("0", "root")


def _docker_database(r: Resource, path: str, containers: Sequence[Resource]) -> str | None:
    """What keeps a docker catalog's SQLite file from surviving, or None."""
    directory = posixpath.dirname(path) or "/"
    mount = docker.covering_mount(r, directory)
    if mount is None:
        return (f"the catalog database {path} is on no mount: it lives in the container's writable layer and is "
                f"lost with it; bind-mount {directory}")
    if mount[0] != "bind":
        return None
    user = reveal(r.props.get("user"))
    if user is None:
        return (f"the catalog database's bind mount {directory} is written by the image's default user, which the "
                "init job cannot know; set the container user (the image's non-root uid:gid)")
    if _is_root(user):
        return (f"the catalog runs as root ({user}); run it as the image's non-root user and let an init job hand "
                "it the bind mount")
    if is_unknown(user):
        return None
    uid = str(user).split(":", 1)[0]
    init = [
        c for c in containers
        if c is not r and docker.is_job(c)
        and any(m[0] == "bind" and m[1] == mount[1] for m in docker.mount_targets(c))
        and "chown" in docker.command_text(c) and uid in docker.command_text(c)
    ]
    if not init:
        return (f"nothing hands the bind mount {mount[1]} (at {directory}) to the catalog's user {user}: add an init "
                f"job that mounts it and runs chown {user}, or SQLite fails with SQLITE_CANTOPEN")
    return None


def check_catalog_persistent(resources: Sequence[Resource], context: StackContext | None) -> list[str]:
    """The catalog database survives its process: a writable mount, a file under the data dir, or RDS backups.

    * docker: a container whose CATALOG_URI is a SQLite file has that file's directory on a mount;
      a bind mount needs a non-root container user and an init job (a container that mounts the
      same host path and chowns it to that user), or SQLite cannot create its file (SQLITE_CANTOPEN).
    * native: the SQLite file lies under the service's data_dir (kept when the stack is destroyed).
    * aws: every RDS instance/cluster keeps automated backups (backup_retention_period > 0).
    """
    rule = "catalog-database-persistent"
    index = index_of(resources)
    out: list[str] = []
    containers = [r for r in resources if r.type == DOCKER_CONTAINER]
    for r in resources:
        uris = [e.value for e in env_entries(r) if e.name == "CATALOG_URI" and isinstance(e.value, str)]
        uris = [u for u in uris if u.lower().startswith("jdbc:sqlite:") and not _is_memory_sqlite(u)]
        for uri in uris:
            path = _sqlite_file(uri)
            if not path:
                continue
            if r.type == DOCKER_CONTAINER:
                problem = _docker_database(r, path, containers)
                if problem:
                    out.append(message(r, rule, problem, context, index))
            elif is_dynamic(r.type):
                data_dir = reveal(r.props.get("data_dir"))
                if isinstance(data_dir, str) and not is_unknown(data_dir):
                    root = posixpath.normpath(data_dir)
                    if not posixpath.normpath(path).startswith(root.rstrip("/") + "/"):
                        out.append(message(r, rule, f"the catalog database {path} lies outside the service's data_dir "
                                                    f"{data_dir}, the only directory kept when the service is "
                                                    "replaced or the stack destroyed", context, index))
    for r in resources:
        if r.type not in (RDS_INSTANCE, RDS_CLUSTER) or known(r.props.get("replicateSourceDb")):
            continue
        days = number(r.props.get("backupRetentionPeriod"))
        if days is None and is_unknown(reveal(r.props.get("backupRetentionPeriod"))):
            continue
        if not days:
            out.append(message(r, rule, "the catalog database keeps no automated backups (backup_retention_period "
                                        f"is {fmt_days(days) if days is not None else 'not set'}); set it above 0",
                               context, index))
    return out


def check_database_private(resource: Resource, context: StackContext | None) -> list[str]:
    """No database instance is publicly accessible (aws): the catalog database lives in the private subnets.

    ``publicly_accessible=True`` gives an RDS instance (or an Aurora cluster instance) a public DNS
    name that resolves to a public address: the catalog's every pointer is then one leaked or
    guessed password away from anyone on the internet.
    """
    if resource.type not in (RDS_INSTANCE, RDS_CLUSTER_INSTANCE):
        return []
    if truthy(resource.props.get("publiclyAccessible")) is not True:
        return []
    return [message(resource, "catalog-database-private",
                    "publicly_accessible is true: the catalog database gets a public address, reachable from the "
                    "internet; set publicly_accessible=False and reach it from the private subnets (the tasks' "
                    "security group)", context)]


def lab_only_catalogs() -> tuple[str, ...]:
    """The catalogs the registry places off aws (the REST fixture), with their jobs and sidecars."""
    from lakehouse_platform.services.registry import registry

    off_aws = {name for name, d in registry().catalogs().items() if d.aws.unavailable is not None}
    return tuple(d.name for d in registry() if d.name in off_aws or d.job_of in off_aws)


def check_rest_fixture_lab_only(resource: Resource, context: StackContext | None) -> list[str]:
    """The REST fixture (a test server, SQLite behind it) runs only on lab and native, never on aws."""
    if not resource.type.startswith("aws:"):
        return []
    service = service_label(resource)
    mentions = [s for s in strings(resource.props) if REST_FIXTURE_IMAGE in s or "jdbc:sqlite:" in s.lower()]
    lab_only = lab_only_catalogs()
    if service in lab_only or mentions:
        fixture = service in lab_only or any(REST_FIXTURE_IMAGE in s for s in mentions)
        what = f"runs the REST fixture ({service or REST_FIXTURE_IMAGE})" if fixture else "puts a catalog on SQLite"
        return [message(resource, "catalog-rest-fixture-lab-only",
                        f"{what} on aws: the fixture is a test server with SQLite behind it, allowed on lab "
                        "and native only; use polaris on RDS", context)]
    return []


POLICIES: tuple[PolicyDef, ...] = (
    PolicyDef("catalog-no-in-memory-sqlite", "No catalog on an in-memory SQLite database, on any target.",
              "resource", check_no_memory_sqlite),
    PolicyDef("catalog-database-persistent", "The catalog database survives its process: a writable mount, a file "
              "under the data dir, or RDS with automated backups.", "stack", check_catalog_persistent),
    PolicyDef("catalog-database-private", "No database instance is publicly accessible.", "resource",
              check_database_private),
    PolicyDef("catalog-rest-fixture-lab-only", "The REST fixture runs on lab and native only.", "resource",
              check_rest_fixture_lab_only),
)

"""Trino's runtime code: Iceberg maintenance as Trino statements, run through Trino's protocol.

The runtime's maintenance (``lakehouse_platform.runtime.maintenance``) runs through the stack's SQL engine, whichever
provides ``SQL_ENGINE``: it loads that engine's runtime module (``EngineAccess.runtime``, this one for Trino) and asks
it for ``statement`` and ``executor``. Trino 476's procedures return no rows, so what a run did is measured around it
by the shared runtime.

Thresholds: Trino refuses thresholds under its own minimum (7 days by default), so each run sets the catalog session
property ``<catalog>.expire_snapshots_min_retention`` / ``remove_orphan_files_min_retention`` to the run's
threshold, per query; the server's settings are never changed. Trino's ``remove_orphan_files`` deletes only files no
snapshot of the table references.

Runtime code: the operations image and the native processes run it (the ``trino`` client of the operations lock).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lakehouse_platform.runtime.config import Credentials, EngineAccess
from lakehouse_platform.runtime.maintenance import DAY_S

#: How long a run waits for a Trino that is still starting, and how often it asks.
STARTING_WAIT_S = 180.0
STARTING_POLL_S = 2.0

# Iceberg maintenance as Trino statements; {table} is catalog-qualified and quoted.
STATEMENTS = {
    "expire_snapshots": "ALTER TABLE {table} EXECUTE expire_snapshots(retention_threshold => '{threshold}')",
    "remove_orphan_files": "ALTER TABLE {table} EXECUTE remove_orphan_files(retention_threshold => '{threshold}')",
    "rewrite_data_files": "ALTER TABLE {table} EXECUTE optimize",
    "rewrite_manifests": "ALTER TABLE {table} EXECUTE optimize_manifests",
}
# The catalog session property that bounds each threshold from below (Trino's default: 7 days).
MIN_RETENTION_PROPERTY = {
    "expire_snapshots": "expire_snapshots_min_retention",
    "remove_orphan_files": "remove_orphan_files_min_retention",
}


def trino_duration(seconds: float) -> str:
    """A Trino duration literal: whole days as ``7d``, anything else in seconds (``90s``)."""
    seconds = max(0, int(seconds))
    return f"{seconds // DAY_S}d" if seconds and seconds % DAY_S == 0 else f"{seconds}s"


def trino_table(catalog: str, identifier: str) -> str:
    namespace, name = identifier.rsplit(".", 1)
    return f'"{catalog}"."{namespace}"."{name}"'


def statement(action: str, catalog: str, identifier: str, threshold_s: float | None) -> tuple[str, dict[str, str]]:
    """The Trino statement of an action on a table, and the session properties it runs with."""
    if action not in STATEMENTS:
        raise ValueError(f"unknown maintenance action {action!r}; known: {', '.join(STATEMENTS)}")
    session: dict[str, str] = {}
    threshold = ""
    if action in MIN_RETENTION_PROPERTY:
        assert threshold_s is not None, f"{action} needs a threshold"
        threshold = trino_duration(threshold_s)
        session[f"{catalog}.{MIN_RETENTION_PROPERTY[action]}"] = threshold
    return STATEMENTS[action].format(table=trino_table(catalog, identifier), threshold=threshold), session


def executor(access: EngineAccess, creds: Credentials) -> Callable[[str, dict[str, str]], None]:
    """Runs one statement through the stack's Trino with the given session properties (HTTPS and a password where
    Trino asks for them, its certificate verified against the platform's)."""

    def execute(sql: str, session: dict[str, str]) -> None:
        import tempfile

        import requests
        import trino

        kwargs: dict[str, Any] = {}
        http = requests.Session()
        http.trust_env = False
        if access.password:
            kwargs["auth"] = trino.auth.BasicAuthentication(access.user, creds.resolve(access.password))
        if access.certificate:
            pem = tempfile.NamedTemporaryFile("w", suffix=".pem", delete=False)  # noqa: SIM115 - removed below
            with pem:
                pem.write(creds.resolve(access.certificate))
            http.verify = pem.name
            kwargs["http_session"] = http
        try:
            wait_until_started(http, f"{access.http_scheme}://{access.host}:{access.port}")
            connection = trino.dbapi.connect(host=access.host, port=access.port, user=access.user,
                                             catalog=access.catalog, http_scheme=access.http_scheme,
                                             session_properties=session, request_timeout=120, **kwargs)
            try:
                cursor = connection.cursor()
                cursor.execute(sql)
                cursor.fetchall()  # Trino 476's procedures return no rows; fetching waits for the query to finish
            finally:
                connection.close()
        finally:
            if access.certificate:
                Path(pem.name).unlink(missing_ok=True)

    return execute


def wait_until_started(http: Any, base_url: str, timeout_s: float = STARTING_WAIT_S) -> None:
    """Wait while Trino says it is still starting (``GET /v1/info``: ``starting``), at most ``timeout_s``.

    A Trino that answers HTTP while it starts fails every query ("authenticators were not loaded"): a run
    scheduled in that window (a restart, the platform coming up) waits instead of failing until its next slot.
    Whatever else goes wrong is the statement's to report.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if not http.get(f"{base_url}/v1/info", timeout=5).json().get("starting", False):
                return
        except Exception:  # noqa: BLE001, S110 - not answering yet: wait as while starting
            pass
        time.sleep(STARTING_POLL_S)

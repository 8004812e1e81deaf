"""What the post-deploy probes ask of Trino: its running version, and Trino as one engine of the cross-engine probes.

Found by the registry (``ProbeHooks``): the version manifest reads ``/v1/info`` and the Iceberg jars in its plugin
directory; the engines probe counts the same table through Trino; the governance probe reads as the read-only
identity through its read-only catalog, tries every kind of write (and the table procedures Trino's own access
control does not gate) and every wrong credential; the maintenance probes run their statements through it as the
stack's SQL engine.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from lakehouse_platform.services.probing import DeployedStack, ServiceHands, VersionReading, first_version, http_json
from lakehouse_platform.services.trino import client
from lakehouse_platform.services.trino.config import NAME, PROFILE


def trino_home(hands: ServiceHands) -> str | None:
    """Trino's installation (the directory with ``lib/`` and ``plugin/``), from its processes' classpath."""
    candidates: list[str] = []
    for process in hands.processes(NAME):
        for arg in re.split(r"[\s:=]+", process.args):
            if "/lib/" in arg and NAME in arg:
                candidates.append(arg.rsplit("/lib/", 1)[0])
    for home in dict.fromkeys(candidates):
        try:
            if "plugin" in hands.list_dir(NAME, home):
                return home
        except (RuntimeError, OSError):  # the service control's error is a RuntimeError
            continue
    return None


def version(stack: DeployedStack, hands: ServiceHands | None) -> Mapping[str, VersionReading]:
    """``GET /v1/info``, and the Iceberg that Trino ships (its plugin's jar names, where this host can list them)."""
    address = stack.endpoint(NAME, "http")
    if address is None:
        return {}
    info = http_json(f"http://{address}/v1/info")
    running = str(info.get("nodeVersion", {}).get("version"))
    found = {NAME: VersionReading(running, f"GET http://{address}/v1/info")}
    home = trino_home(hands) if hands is not None else None
    if hands is not None and home:
        jars = sorted(name for name in hands.list_dir(NAME, f"{home}/plugin/iceberg")
                      if re.fullmatch(r"org\.apache\.iceberg_iceberg-.*\.jar", name))
        bundled = sorted({v for v in (first_version(j) for j in jars) if v})
        key = f"iceberg in {NAME}"
        if bundled:
            # Declared by the stack (services.trino.bundles / native_bundles), never taken from what is observed.
            found[key] = VersionReading(",".join(bundled), "plugin/iceberg jar names",
                                        reason=f"an engine's Iceberg is whatever it ships: Trino {running} declares "
                                               f"{stack.version_manifest.get(key)}")
    return found


class TrinoEngine:
    """Trino as the probes drive it: over HTTPS with each identity's user and password (``client.connection``)."""

    name = NAME

    def __init__(self, stack: DeployedStack) -> None:
        self.stack = stack
        self.profile: dict[str, Any] = dict(stack.host_profiles.get(PROFILE) or {})

    @property
    def catalog(self) -> str:
        """The Trino catalog of the host profiles' identity (the writer's)."""
        return str((self.profile.get("catalogs") or ["fixture"])[0])

    def catalog_of(self, identity: str) -> str | None:
        """The Trino catalog an identity reaches (a reader: the read-only one), or None."""
        found = (self.profile.get("catalogs_by_identity") or {}).get(identity) or []
        return found[0] if found else None

    def cursor(self, identity: str | None = None, catalog: str | None = None, user: str | None = None,
               password: str | None = None) -> Any:
        """A DB-API cursor as ``identity``; ``user``/``password`` override its own (to prove refusals)."""
        return client.connection(self.stack.outputs, identity or self.stack.identity, catalog, user=user,
                                 password=password).cursor()

    def run(self, identity: str | None, statements: list[str], catalog: str | None = None) -> list[Any]:
        """Each statement in turn on one connection; the last one's rows."""
        cursor = self.cursor(identity=identity, catalog=catalog)
        try:
            result: list[Any] = []
            for statement in statements:
                cursor.execute(statement)
                result = cursor.fetchall()
            return result
        finally:
            cursor.close()

    def count(self, identity: str | None, namespace: str, table: str, snapshot_id: int | None = None) -> int:
        who = identity or self.stack.identity
        catalog = self.catalog_of(who) or self.catalog
        pinned = f" FOR VERSION AS OF {snapshot_id}" if snapshot_id is not None else ""
        return int(self.run(who, [f'SELECT count(*) FROM "{catalog}"."{namespace}"."{table}"{pinned}'], catalog)[0][0])

    def writes(self, identity: str, namespace: str, table: str) -> list[tuple[str, Callable[[], Any]]]:
        """Data and metadata writes, the table procedures Trino's access control does not gate once a catalog is
        readable, reading the writer's catalog, and impersonating the writer: all as ``identity``."""
        catalog = self.catalog_of(identity)
        quoted = f'"{namespace}"."{table}"'
        retention = f"SET SESSION {catalog}.expire_snapshots_min_retention = '0s'"
        orphans = f"SET SESSION {catalog}.remove_orphan_files_min_retention = '0s'"
        writes = [
            ("INSERT", [f"INSERT INTO {quoted} VALUES (4000, 1.0)"]),
            ("ALTER TABLE ADD COLUMN", [f"ALTER TABLE {quoted} ADD COLUMN note varchar"]),
            ("DROP TABLE", [f"DROP TABLE {quoted}"]),
            ("EXECUTE optimize", [f"ALTER TABLE {quoted} EXECUTE optimize"]),
            ("EXECUTE expire_snapshots",
             [retention, f"ALTER TABLE {quoted} EXECUTE expire_snapshots(retention_threshold => '0s')"]),
            ("EXECUTE remove_orphan_files",
             [orphans, f"ALTER TABLE {quoted} EXECUTE remove_orphan_files(retention_threshold => '0s')"]),
        ]
        found: list[tuple[str, Callable[[], Any]]] = [(what, self._runner(identity, statements, catalog))
                                                      for what, statements in writes]
        writer = self.stack.identity
        writer_catalog = self.catalog_of(writer)
        found.append((f"read the writer's catalog {writer_catalog}", lambda: self.run(
            identity, [f"SELECT count(*) FROM {writer_catalog}.{quoted}"], catalog)))
        found.append((f"impersonate {writer} (authenticated as {identity}, session user {writer})",
                      lambda: self._impersonating(identity, writer, writer_catalog).execute(
                          f"SELECT count(*) FROM {quoted}")))
        return found

    def _runner(self, identity: str, statements: list[str], catalog: str | None) -> Callable[[], list[Any]]:
        return lambda: self.run(identity, statements, catalog)

    def _impersonating(self, identity: str, as_user: str, catalog: str | None) -> Any:
        """A cursor authenticated as ``identity`` whose session user is ``as_user``."""
        import requests
        import trino

        own = self.stack.creds_of(identity)
        session = requests.Session()
        session.trust_env = False
        session.verify = self.stack.certificate_file(self.profile["certificate"])
        return trino.dbapi.connect(host=self.profile["host"], port=int(self.profile["port"]), user=as_user,
                                   auth=trino.auth.BasicAuthentication(own["trino_user"], own["trino_password"]),
                                   http_scheme="https", http_session=session, catalog=catalog,
                                   request_timeout=60).cursor()

    def refusals(self) -> list[tuple[str, Callable[[], Any]]]:
        """A wrong password, an unknown user, a query over HTTPS without a password and one over plain HTTP; each
        raises when refused (HTTP 401/403 said so), and returns what was served otherwise."""
        import requests

        session = requests.Session()
        session.trust_env = False
        identity = self.stack.identity

        def refused_with(response: Any, wanted: tuple[int, ...]) -> str:
            if response.status_code in wanted:
                raise PermissionError(f"HTTP {response.status_code} Unauthorized")
            return f"HTTP {response.status_code}"

        def https_without_password() -> str:
            https = f"https://{self.profile['host']}:{self.profile['port']}/v1/statement"
            verify = self.stack.certificate_file(self.profile["certificate"])
            return refused_with(session.post(https, data="SELECT 1", headers={"X-Trino-User": identity},
                                             verify=verify, timeout=20), (401,))

        def plain_http() -> str:
            plain = self.stack.endpoint(NAME, "http")
            return refused_with(session.post(f"http://{plain}/v1/statement", data="SELECT 1",
                                             headers={"X-Trino-User": identity}, timeout=20), (401, 403))

        return [
            ("query with a wrong password", lambda: self.cursor(password="wrong-password").execute("SELECT 1")),
            ("query as an unknown user", lambda: self.cursor(user="nobody", password="nothing").execute("SELECT 1")),
            ("POST /v1/statement over HTTPS without a password", https_without_password),
            ("POST /v1/statement over plain HTTP", plain_http),
        ]


def engine(stack: DeployedStack) -> TrinoEngine | None:
    """Trino as an engine of the probes, where the stack's host profiles name it."""
    return TrinoEngine(stack) if stack.host_profiles.get(PROFILE) else None

"""What the operating layers' processes and commands need to know about one deployed stack.

One model, three ways in:

* the program renders it from the spec (``from_spec``) into the scheduler's and the backup
  service's config file, and exports it as the ``operations`` stack output;
* ``lakehouse ... --stack S`` reads it back from the stack outputs
  (``from_outputs``), credentials from the secret ``credentials`` output;
* the scheduler service reads its file (``load``), credentials from its secret environment.

It holds no secret: S3 keys and the PostgreSQL password travel as secrets (``Credentials``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

CONFIG_FILE = "operations.json"
ENV_S3_ACCESS_KEY = "LAKEHOUSE_S3_ACCESS_KEY"
ENV_S3_SECRET_KEY = "LAKEHOUSE_S3_SECRET_KEY"  # noqa: S105 - names of variables, not values
ENV_PG_PASSWORD = "PGPASSWORD"  # noqa: S105 - read by pg_dump and pg_restore themselves
#: Where a maintenance task finds its job when its command names none (EventBridge's per-schedule override on aws).
ENV_MAINTENANCE_JOB = "MAINTENANCE_JOB"
#: Where the catalog gate finds the key it signs its access tokens with (its environment, never its config file).
ENV_GATE_SIGNING_KEY = "CATALOG_GATE_SIGNING_KEY"
#: The Iceberg REST spec's token endpoint, which the gate answers itself and the clients' profiles name.
TOKEN_PATH = "/v1/oauth/tokens"  # noqa: S105 - a path, not a credential
#: Connections the kernel queues for an operations server before it accepts them (socketserver's default is 5:
#: a burst of health checks and scrapes beyond it waits a SYN retry, a second or more). The kernel caps it at
#: net.core.somaxconn.
LISTEN_BACKLOG = 1024
#: Orphan removal's safety margin where a job sets none (and expiry's threshold on an on-demand run of an action).
DEFAULT_MARGIN_DAYS = 7
ENV_SECRET_PREFIX = "LAKEHOUSE_SECRET_"  # noqa: S105 - LAKEHOUSE_SECRET_POLARIS_ROOT_SECRET -> {polaris_root_secret}
_PLACEHOLDER = re.compile(r"\{([a-z0-9_]+)\}")
_ENV_REFERENCE = re.compile(r"\$\{ENV:" + ENV_SECRET_PREFIX + r"([A-Z0-9_]+)\}")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CatalogAccess(_Model):
    """The default catalog as a client reaches it: PyIceberg properties without credentials."""

    service: str
    engine_name: str
    properties: dict[str, str]
    #: Where its tables are laid out by name on storage (``CatalogRole.tables_location``); None: not by name.
    tables_location: str | None = None

    @property
    def uri(self) -> str:
        return self.properties["uri"]

    @property
    def bucket(self) -> str:
        return self.properties["warehouse"].removeprefix("s3://").split("/", 1)[0]


class EngineAccess(_Model):
    """The SQL engine maintenance runs through (the ``SQL_ENGINE`` provider): where it is, as one identity (its user
    and password there), and its runtime code, which says how each action is a statement and runs it."""

    host: str
    port: int
    catalog: str
    #: The engine's runtime module (``<package>.runtime``): ``statement`` and ``executor``, as
    #: ``lakehouse_platform.runtime.maintenance.EngineRuntime`` says.
    runtime: str
    #: The engine's service in this stack, as the run records name it (the services layer renders it).
    engine: str = ""
    user: str = "platform-maintenance"
    http_scheme: str = "http"
    #: ``${ENV:LAKEHOUSE_SECRET_<NAME>}`` references (``Credentials.secrets``), never the values.
    password: str | None = None
    certificate: str | None = None  # the PEM the engine's certificate is verified against


class MaintenanceJobConfig(_Model):
    """One scheduled maintenance job (the spec's ``maintenance`` entry, with its id)."""

    id: str
    action: str
    schedule: str
    #: Orphan removal's safety margin; on expire_snapshots a ceiling on every table's age (None: none).
    older_than_days: int | None = None
    scope: Literal["all", "declared"] = "all"

    @property
    def margin_days(self) -> int:
        """Orphan removal's safety margin in days (7 when the job sets none)."""
        return self.older_than_days if self.older_than_days is not None else DEFAULT_MARGIN_DAYS


class RetentionConfig(_Model):
    """How expiry treats one table (``lakehouse_platform.model.retention.TableBounds``): ages in real seconds."""

    identifier: str  # namespace.name; "*" for the tables nothing else covers
    keep_last: int
    max_age_s: float
    max_snapshots: int


class SqliteSource(_Model):
    """A catalog database kept in a SQLite file (the REST fixture's)."""

    name: str  # the catalog service
    path: str


class PostgresSource(_Model):
    """The PostgreSQL server holding the production catalogs' databases."""

    host: str
    port: int
    user: str  # the superuser: what a restore runs as (the operator's command, with the stack's credentials)
    databases: list[str]
    bindir: str | None = None  # where pg_dump/pg_restore are; None: from PATH
    dump_user: str | None = None  # the least role the backup service dumps as (None: ``user``, as before 0.5)


class BackupConfig(_Model):
    """Where catalog backups go, how often, and how long they are kept (the recovery promise)."""

    dir: str
    schedule: str
    retention_days: int
    sqlite: list[SqliteSource] = Field(default_factory=list)
    postgres: PostgresSource | None = None


class RecoveryObjectives(_Model):
    rpo_minutes: int
    rto_minutes: int


class OperationsConfig(_Model):
    """Everything the scheduler, the backup service and the operations commands read (no secrets)."""

    stack: str
    target: str
    state_dir: str
    runs_db: str
    locks_dir: str
    catalog: CatalogAccess
    engine: EngineAccess | None = None  # the SQL engine maintenance runs through
    maintenance: list[MaintenanceJobConfig] = Field(default_factory=list)
    tables: list[dict[str, Any]] = Field(default_factory=list)  # TableSpec.model_dump() of each declared table
    #: Each table's retention the stack knows (declared, the streams'), then ``default_retention`` for any other.
    retention: list[RetentionConfig] = Field(default_factory=list)
    default_retention: RetentionConfig | None = None
    #: The maintenance scheduler's clock runs this many times faster than real time (benchmarks, drills): every
    #: schedule fires that much more often, and orphan removal's margin is that much shorter.
    speedup: int = 1
    backups: BackupConfig | None = None
    recovery: RecoveryObjectives

    def job(self, name: str) -> MaintenanceJobConfig | None:
        """A scheduled job by id or by action (the first job of that action)."""
        return next((j for j in self.maintenance if j.id == name), None) or next(
            (j for j in self.maintenance if j.action == name), None)

    def retention_of(self, identifier: str) -> RetentionConfig | None:
        """How expiry treats a table: its own retention, else the default (None: the stack renders none)."""
        return next((r for r in self.retention if r.identifier == identifier), None) or self.default_retention

    def declared(self) -> dict[str, dict[str, Any]]:
        """Declared tables by ``namespace.name``."""
        return {f"{t['namespace']}.{t['name']}": t for t in self.tables}

    def dump(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> OperationsConfig:
        return cls.model_validate_json(Path(path).read_text())


class Credentials(_Model):
    """The secrets operations need: the platform's S3 key pair, the PostgreSQL password, and any other
    secret a catalog's client properties name (``{polaris_root_secret}``), by its credentials name."""

    s3_access_key: str | None = None
    s3_secret_key: str | None = None
    postgres_password: str | None = None
    # The backups' least role's (``PostgresSource.dump_user``): the backup service's PGPASSWORD holds only it.
    dump_password: str | None = None
    secrets: dict[str, str] = Field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return "Credentials(<secret>)"  # never in a log or a traceback

    __str__ = __repr__

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Credentials:
        env = os.environ if env is None else env
        named = {k.removeprefix(ENV_SECRET_PREFIX).lower(): v for k, v in env.items()
                 if k.startswith(ENV_SECRET_PREFIX)}
        return cls(s3_access_key=env.get(ENV_S3_ACCESS_KEY), s3_secret_key=env.get(ENV_S3_SECRET_KEY),
                   postgres_password=env.get(ENV_PG_PASSWORD), dump_password=env.get(ENV_PG_PASSWORD), secrets=named)

    @classmethod
    def from_outputs(cls, outputs: Mapping[str, Any]) -> Credentials:
        """What the processes get in their environment, from the stack's outputs (the CLI on the host)."""
        creds = outputs.get("credentials") or {}
        secrets = {str(k): str(v) for k, v in creds.items() if isinstance(v, str)}
        for identity, entry in (creds.get("identities") or {}).items():  # as in the processes' environment
            for key, value in entry.items():  # its catalog token and its secret at each service that declares one
                if key not in ("role", "s3_access_key", "s3_secret_key") and isinstance(value, str) and value:
                    secrets[f"{key}_{identity.replace('-', '_')}"] = value
        for name, pem in (outputs.get("certificates") or {}).items():
            secrets[f"{name.replace('-', '_')}_cert"] = str(pem)
        return cls(s3_access_key=creds.get("s3_access_key"), s3_secret_key=creds.get("s3_secret_key"),
                   postgres_password=creds.get("postgres_password"),
                   dump_password=creds.get("postgres_backup_password"), secrets=secrets)

    def resolve(self, value: str) -> str:
        """``value`` with ``{name}`` and ``${ENV:LAKEHOUSE_SECRET_NAME}`` filled from the secrets."""
        value = _ENV_REFERENCE.sub(lambda m: self.secrets.get(m.group(1).lower(), m.group(0)), value)
        return _PLACEHOLDER.sub(lambda m: self.secrets.get(m.group(1), m.group(0)), value)


def from_outputs(outputs: Mapping[str, Any]) -> tuple[OperationsConfig, Credentials]:
    """The operations config and credentials of a deployed stack, from its outputs."""
    if not outputs.get("operations"):
        raise KeyError("the stack outputs have no 'operations' (deployed before the operating layers existed? "
                       "run `make up` again)")
    return OperationsConfig.model_validate(outputs["operations"]), Credentials.from_outputs(outputs)


def pyiceberg_properties(config: OperationsConfig, creds: Credentials) -> dict[str, str]:
    """PyIceberg catalog properties with the S3 credentials filled in."""
    props = {k: creds.resolve(v) for k, v in config.catalog.properties.items()}
    if creds.s3_access_key and creds.s3_secret_key:
        props.update({"s3.access-key-id": creds.s3_access_key, "s3.secret-access-key": creds.s3_secret_key})
    return props


def load_catalog(config: OperationsConfig, creds: Credentials, name: str = "operations") -> Any:
    """A PyIceberg catalog on the stack's default catalog."""
    from pyiceberg.catalog import load_catalog as _load

    return _load(name, **pyiceberg_properties(config, creds))


def s3_client(config: OperationsConfig, creds: Credentials) -> Any:
    """boto3 S3 on the warehouse's store (path style on the lab store), with the platform's key."""
    import boto3
    from botocore.config import Config

    props = config.catalog.properties
    kwargs: dict[str, Any] = {"region_name": props.get("s3.region", "us-east-1")}
    if props.get("s3.endpoint"):
        kwargs["endpoint_url"] = props["s3.endpoint"]
    if creds.s3_access_key and creds.s3_secret_key:
        kwargs.update(aws_access_key_id=creds.s3_access_key, aws_secret_access_key=creds.s3_secret_key)
    style = "path" if props.get("s3.path-style-access") == "true" else "auto"
    return boto3.client("s3", config=Config(s3={"addressing_style": style},
                                            retries={"max_attempts": 5, "mode": "standard"}), **kwargs)

"""The REST fixture's configuration on every target: its catalog properties from the environment, the table
defaults, the JDBC backend (SQLite file or the platform's PostgreSQL), and the spec's checks.
"""

from __future__ import annotations

from pathlib import Path

from lakehouse_platform.artifacts import maven
from lakehouse_platform.model import PlatformSpec, Target
from lakehouse_platform.model.retention import TableDefaults
from lakehouse_platform.placeholders import secret
from lakehouse_platform.services.capabilities import BACKUPS, DATABASE, DATABASE_PASSWORD, DATABASE_USER
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.registry import registry

NAME = "rest-fixture"


INIT_JOB = "rest-fixture-init"


# The image's non-root user; the bind mount is handed to it by the init job below.
FIXTURE_UID = "1000:1000"


CATALOG_DIR = "/catalog"


# The host directory behind /catalog, under the stack's state; the fixture and its init job share it.
CATALOG_HOST_DIR = f"{NAME}/catalog"


# The fixture on PostgreSQL: its database on the platform's server, the driver, the password file.
POSTGRES_DATABASE = "fixture"


POSTGRES_DRIVER = maven.Coordinate("org.postgresql", "postgresql", "42.7.8")


PGPASS = "pgpass"


# SQLite serialises writers, so one pooled connection (see catalog_env); PostgreSQL takes several.
POSTGRES_CLIENTS = 4


LAUNCHER_MAIN = "org.apache.iceberg.rest.LoopbackRESTCatalogServer"


def property_env(prop: str) -> str:
    """The CATALOG_* variable of a catalog property: the fixture reads CATALOG_A__B_C as a-b.c."""
    if "_" in prop:
        raise ValueError(f"{prop!r}: the fixture's environment cannot express a property with an underscore")
    return "CATALOG_" + prop.replace("-", "__").replace(".", "_").upper()


def table_default_env(spec: PlatformSpec | None = None) -> dict[str, str]:
    """The platform's table properties (``PlatformSpec.table_properties``; without a spec, the defaults of
    ``TableDefaults``) as the fixture's ``table-default.*`` catalog properties: a table any engine creates through
    it gets them."""
    properties = spec.table_properties() if spec is not None else TableDefaults().properties()
    return {property_env(f"table-default.{key}"): value for key, value in properties.items()}


def postgres_jdbc_uri(pg_address: str) -> str:
    """The fixture's database on the platform's PostgreSQL; the password is in the pgpass file, not here."""
    return f"jdbc:postgresql://{pg_address}/{POSTGRES_DATABASE}?user={DATABASE_USER}"


def pgpass_line() -> str:
    """pgjdbc's pgpass format (host:port:database:user:password); any host, the fixture's database only."""
    return f"*:*:{POSTGRES_DATABASE}:{DATABASE_USER}:{secret(DATABASE_PASSWORD)}\n"


def on_postgres(spec: PlatformSpec) -> bool:
    return spec.catalog.fixture_backend == "postgres"  # not the service: a value of catalog.fixture_backend


def catalog_env(ctx: ServiceContext, s3_endpoint: str, sqlite_uri: str | None = None) -> dict[str, str]:
    """The fixture's CATALOG_* settings (it maps CATALOG_A__B_C to catalog property a-b.c).

    The JDBC URI is the backend's: the platform's PostgreSQL, or SQLite at ``sqlite_uri`` (where this
    target puts the spec's file; default the spec's own URI). S3 credentials go in AWS_* (the default
    chain): the fixture logs every catalog property.
    """
    spec = ctx.spec
    if on_postgres(spec):
        jdbc_uri = postgres_jdbc_uri(ctx.address(database(ctx.spec), "pg"))
    else:
        jdbc_uri = sqlite_uri or spec.catalog.fixture_jdbc_uri
    return {
        "CATALOG_URI": jdbc_uri,
        "CATALOG_WAREHOUSE": f"s3://{spec.storage.bucket}/",
        "CATALOG_IO__IMPL": "org.apache.iceberg.aws.s3.S3FileIO",
        "CATALOG_S3_ENDPOINT": s3_endpoint,
        "CATALOG_S3_PATH__STYLE__ACCESS": "true",
        "CATALOG_JDBC_STRICT__MODE": "true",
        # One pooled connection on SQLite: with two, commits right after a restart on an existing
        # database get 500 SQLITE_BUSY (database is locked); SQLite serialises writers anyway.
        "CATALOG_CLIENTS": str(POSTGRES_CLIENTS if on_postgres(spec) else 1),
        **table_default_env(spec),
        "AWS_REGION": spec.storage.region,
        "AWS_ACCESS_KEY_ID": secret("s3-access-key"),
        "AWS_SECRET_ACCESS_KEY": secret("s3-secret-key"),
        # RESTCatalogServer reads catalog property rest.port (CATALOG_REST_PORT); the image's
        # REST_PORT only feeds its own HEALTHCHECK, which the targets replace.
        "CATALOG_REST_PORT": str(ctx.listen_port("http")),
    }


def sqlite_filename(ctx: ServiceContext) -> str:
    """The SQLite file's name in the spec's JDBC URI (``fixture.db``)."""
    return ctx.spec.catalog.fixture_jdbc_uri.split("?", 1)[0].rsplit("/", 1)[-1]


def sqlite_file(ctx: ServiceContext, state_dir: Path) -> str | None:
    """Where the catalog's SQLite file is on the host: the native home, or the lab's bind mount (None on PostgreSQL)."""
    if on_postgres(ctx.spec):
        return None
    if ctx.spec.target is Target.NATIVE:
        return str(state_dir / NAME / sqlite_filename(ctx))
    return str(state_dir / CATALOG_HOST_DIR / sqlite_filename(ctx))


def check(spec: PlatformSpec) -> list[str]:
    """The fixture on PostgreSQL needs the platform's PostgreSQL, and gives up the SQLite backups."""
    if NAME not in spec.enabled_services() or not on_postgres(spec):
        return []
    problems = []
    if registry().provider(spec, DATABASE) is None:
        problems.append("catalog.fixture_backend: postgres keeps the fixture's pointers in the platform's PostgreSQL, "
                        f"which this stack disables; enable services.{registry().providers(DATABASE)[0]} or use sqlite")
    if (backups := registry().provider(spec, BACKUPS)) is not None:
        problems.append(f"catalog.fixture_backend: postgres is refused while services.{backups} is enabled: the "
                        "backups and the recovery drill restore the fixture's SQLite file; use sqlite, or disable "
                        f"services.{backups}")
    return problems


def database(spec: PlatformSpec) -> str:
    """The service that is the platform's database (where the fixture keeps its pointers on ``postgres``)."""
    found = registry().provider(spec, DATABASE)
    if found is None:
        raise ValueError("catalog.fixture_backend: postgres needs the platform's database, which no enabled service "
                         f"provides; enable services.{registry().providers(DATABASE)[0]} or use sqlite")
    return found

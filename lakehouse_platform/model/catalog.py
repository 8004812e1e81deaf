"""How the catalogs store their pointers, and which one engines use by default."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from lakehouse_platform.model.base import SIZE_HELP, Size, Strict, parse_size
from lakehouse_platform.model.layers import Layer, of_layer


class DatabaseSpec(Strict):
    """The platform's PostgreSQL (the catalogs' databases, the bookshop's source): what bounds its disk."""

    LAYER: ClassVar[Layer] = Layer.CATALOG  # the layer its keys belong to (change review)

    max_wal_size: Size = Field(
        default="256MB",
        description=f"max_wal_size ({SIZE_HELP}): the WAL a checkpoint lets accumulate; with min_wal_size it bounds "
                    "pg_wal (a replication slot aside: streams.slot_max_wal_keep_size). On aws the RDS parameter "
                    "group's.")
    min_wal_size: Size = Field(
        default="64MB", description=f"min_wal_size ({SIZE_HELP}): WAL kept for reuse below max_wal_size.")
    autovacuum_naptime_s: int = Field(
        default=60, ge=1, le=86_400,
        description="autovacuum_naptime: how often autovacuum visits each database. The catalogs update one row per "
                    "commit; vacuum reclaims the dead versions so a catalog's tables stay their size. (A SQLite "
                    "catalog reuses its free pages itself.)")

    @model_validator(mode="after")
    def _wal_order(self) -> DatabaseSpec:
        if parse_size(self.min_wal_size) > parse_size(self.max_wal_size):
            raise ValueError(f"min_wal_size: {self.min_wal_size} is above max_wal_size {self.max_wal_size}")
        return self

    def server_settings(self) -> dict[str, str]:
        """The PostgreSQL settings these are (sizes in whole MB, as the server takes them)."""
        return {"max_wal_size": f"{parse_size(self.max_wal_size) // 1_000_000}MB",
                "min_wal_size": f"{parse_size(self.min_wal_size) // 1_000_000}MB",
                "autovacuum_naptime": f"{self.autovacuum_naptime_s}s"}


class CatalogSpec(Strict):
    """How the catalogs store their pointers and which one engines use by default."""

    LAYER: ClassVar[Layer] = Layer.CATALOG  # the layer its keys belong to (change review)

    default: str = Field(default="", description="The catalog engine profiles point at (default: the registry's first "
                                                "catalog, the REST fixture).",
                         json_schema_extra=of_layer(Layer.CATALOG, on_change=(
                             "every engine and client moves to the new catalog (the engines restart); tables "
                             "registered only in the old catalog are not found through the new one")))
    fixture_jdbc_uri: str = Field(
        default="jdbc:sqlite:file:/catalog/fixture.db",
        description="JDBC URI of the REST fixture's SQLite database; must be file-backed.",
    )
    fixture_backend: Literal["sqlite", "postgres"] = Field(  # not the service: the fixture's JDBC backend
        default="sqlite",
        description="Where the REST fixture's JDBC catalog keeps its pointers: the file-backed SQLite of "
        "fixture_jdbc_uri, or the platform's PostgreSQL (database `fixture`; same JDBC catalog, pooled "
        "connections). Backups and the recovery drill restore the SQLite file, so they need sqlite.",
    )
    warehouse: str = Field(default="warehouse", description="Warehouse name in Polaris/Lakekeeper.")
    database: DatabaseSpec = Field(default_factory=DatabaseSpec,
                                   description="The platform's PostgreSQL: its WAL and vacuum (what bounds its disk).")
    spark_cache_enabled: bool = Field(
        default=True, description="Spark REST client's table cache (cache-enabled); stale reads when true."
    )
    spark_cache_expiration_ms: int = Field(
        default=30000, ge=-1,
        description="cache.expiration-interval-ms for Spark: how long a cached table is served (-1: never expires).")

    @field_validator("fixture_jdbc_uri")
    @classmethod
    def _file_backed(cls, value: str) -> str:
        lowered = value.lower()
        if "mode=memory" in lowered or ":memory:" in lowered:
            raise ValueError(
                f"{value!r} is an in-memory SQLite database: each pooled connection gets its own empty copy "
                "(no such table: iceberg_tables under concurrent commits); use a file, e.g. "
                "jdbc:sqlite:file:/catalog/fixture.db"
            )
        if not lowered.startswith("jdbc:sqlite:"):
            raise ValueError(f"{value!r} is not a SQLite JDBC URI; use jdbc:sqlite:file:<path>")
        return value


class EngineSpec(Strict):
    """Host-side engines and the Iceberg library version the platform is certified with."""

    LAYER: ClassVar[Layer] = Layer.COMPUTE  # the layer its keys belong to (change review)

    iceberg: str = Field(default="1.11.0", description="Iceberg library version wherever it is a library.")
    spark: str = Field(default="4.1.3", description="pyspark version (host client).")
    pyiceberg: str = Field(default="0.11.1", description="PyIceberg version.")
    duckdb: str = Field(default="1.5.5", description="DuckDB version.")
    duckdb_native: str = Field(
        default="1.4.4", description="DuckDB the native target runs: newest with extensions on PyPI."
    )

"""How the catalogs store their pointers, and which one engines use by default."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator

from lakehouse_platform.model.base import Strict
from lakehouse_platform.model.layers import Layer, of_layer


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

"""The REST fixture's settings: the platform's table defaults, and the fixture on PostgreSQL (both targets).

The PostgreSQL backend runs for real in the probes (``lakehouse_platform/probes/test_catalog_concurrency.py``) and in
``bench/bench_commits.py``; here its rendering is pinned: the JDBC URI, the password only in a pgpass
file (the fixture logs every catalog property), the driver on the classpath, and the refusals.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lakehouse_platform.config import ConfigError, load_platform
from lakehouse_platform.placeholders import secret
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.operations_config import host_paths
from lakehouse_platform.services.plans import ContainerHost, NativeHost
from lakehouse_platform.services.rest_fixture import config as rest_fixture
from lakehouse_platform.services.rest_fixture import container as rest_fixture_container
from lakehouse_platform.services.rest_fixture import native as rest_fixture_native
from tests.support.harness import fake_artifact
from tests.support.stacks import stack_platform

P = "lakehouse:platform"


def _platform(stack: str, backend: str = "postgres", backups: bool = False) -> dict:
    platform = stack_platform(stack)
    platform.setdefault("catalog", {})["fixture_backend"] = backend
    platform["services"].setdefault("catalog-backup", {})["enabled"] = backups
    return platform


def test_the_fixture_env_name_of_a_catalog_property_reads_back_as_that_property():
    name = rest_fixture.property_env("table-default.write.metadata.previous-versions-max")
    assert name == "CATALOG_TABLE__DEFAULT_WRITE_METADATA_PREVIOUS__VERSIONS__MAX"
    # RCKUtils' mapping, as the fixture applies it at 1.10.1
    back = name.removeprefix("CATALOG_").replace("__", "-").replace("_", ".").lower()
    assert back == "table-default.write.metadata.previous-versions-max"
    with pytest.raises(ValueError, match="underscore"):
        rest_fixture.property_env("jdbc.schema_version")


def test_every_table_the_fixture_creates_gets_the_platforms_table_defaults():
    spec = load_platform(stack_platform("native"))
    env = rest_fixture.catalog_env(ServiceContext(spec, rest_fixture.NAME), "http://127.0.0.1:8333")
    for key, value in spec.table_properties().items():
        assert env[rest_fixture.property_env(f"table-default.{key}")] == value
    assert env["CATALOG_TABLE__DEFAULT_WRITE_METADATA_DELETE__AFTER__COMMIT_ENABLED"] == "true"
    assert env["CATALOG_TABLE__DEFAULT_COMMIT_RETRY_NUM__RETRIES"] == "20"
    # The age of the retention of any table nobody declared (table_defaults.retention: 7 days).
    assert env["CATALOG_TABLE__DEFAULT_HISTORY_EXPIRE_MAX__SNAPSHOT__AGE__MS"] == str(7 * 86400 * 1000)
    assert env["CATALOG_CLIENTS"] == "1"  # SQLite: one pooled connection
    assert env["CATALOG_URI"].startswith("jdbc:sqlite:file:")


def test_natively_the_fixture_on_postgresql_reads_its_password_from_a_pgpass_file_only(tmp_path: Path):
    spec = load_platform(_platform("native"))
    ctx = ServiceContext(spec, rest_fixture.NAME)
    host = NativeHost(home=tmp_path / "rest-fixture", artifact=fake_artifact("rest-fixture"), java_home=Path("/jdk"))
    plan = rest_fixture_native.server(ctx, host)
    pg = ctx.address("postgres", "pg")
    assert plan.env["CATALOG_URI"] == f"jdbc:postgresql://{pg}/fixture?user=postgres"
    assert plan.env["CATALOG_CLIENTS"] == str(rest_fixture.POSTGRES_CLIENTS)
    assert plan.env["PGPASSFILE"] == str(host.home / "pgpass")
    assert plan.files == {str(host.home / "pgpass"): f"*:*:fixture:postgres:{secret('postgres-password')}\n"}
    assert not any("postgres-password" in value for value in plan.env.values())
    assert "postgres" in spec.services["rest-fixture"].depends_on  # starts after its database
    # The recovery layer has no SQLite file of this catalog to back up.
    assert host_paths(spec, str(tmp_path)).sqlite == {}


def test_in_the_lab_the_fixture_on_postgresql_runs_the_upstream_main_with_the_driver_beside_the_image_jar():
    spec = load_platform(_platform("lab"))
    ctx = ServiceContext(spec, rest_fixture.NAME)
    driver = fake_artifact("postgresql.jar")
    plan = rest_fixture_container.server(ctx, ContainerHost(state_dir=Path("/x"), artifact=driver))
    jar = f"/usr/lib/iceberg-rest/{rest_fixture.POSTGRES_DRIVER.filename}"
    assert plan.command == ["java", "-cp", f"/usr/lib/iceberg-rest/iceberg-rest-adapter.jar:{jar}",
                            "org.apache.iceberg.rest.RESTCatalogServer"]
    assert plan.upload_sources == {jar: str(driver.path)}
    assert plan.env["CATALOG_URI"] == "jdbc:postgresql://postgres:5432/fixture?user=postgres"
    assert plan.env["PGPASSFILE"] == "/usr/lib/iceberg-rest/pgpass"
    assert plan.uploads == {"/usr/lib/iceberg-rest/pgpass": f"*:*:fixture:postgres:{secret('postgres-password')}\n"}


def test_on_sqlite_the_lab_fixture_keeps_the_images_own_command():
    spec = load_platform(stack_platform("lab"))
    plan = rest_fixture_container.server(ServiceContext(spec, rest_fixture.NAME), ContainerHost(state_dir=Path("/x")))
    assert plan.command == [] and plan.uploads == {} and plan.upload_sources == {}


def test_the_lab_asks_for_postgresqls_jdbc_driver_only_when_the_fixture_is_on_postgresql():
    """`make artifacts --stack lab` fetched the driver, and the program looked it up, for a fixture on SQLite too."""
    from lakehouse_platform.services.resolver import recipe_of
    from tests.support.harness import FakeResolver

    on_sqlite, on_postgres = load_platform(stack_platform("lab")), load_platform(_platform("lab"))
    assert recipe_of(on_sqlite, rest_fixture.NAME) is None
    recipe = recipe_of(on_postgres, rest_fixture.NAME)
    assert recipe is not None
    assert recipe.key(ServiceContext(on_postgres, rest_fixture.NAME)) == rest_fixture.POSTGRES_DRIVER.key
    resolver = FakeResolver()
    resolver.resolve(on_sqlite)
    assert rest_fixture.NAME not in resolver.asked
    # Natively the fixture's one artifact carries the driver for either backend (the launcher's classpath).
    assert recipe_of(load_platform(stack_platform("native")), rest_fixture.NAME) is not None


def test_the_fixture_on_postgresql_is_refused_while_the_backups_restore_its_sqlite_file():
    with pytest.raises(ConfigError) as info:
        load_platform(_platform("native", backups=True))
    assert info.value.errors == [
        f"{P}.catalog.fixture_backend: postgres is refused while services.catalog-backup is enabled: the backups "
        "and the recovery drill restore the fixture's SQLite file; use sqlite, or disable services.catalog-backup"]


def test_an_unknown_fixture_backend_names_the_allowed_ones():
    platform = stack_platform("native")
    platform.setdefault("catalog", {})["fixture_backend"] = "mysql"
    with pytest.raises(ConfigError) as info:
        load_platform(platform)
    assert info.value.errors == [f"{P}.catalog.fixture_backend: 'mysql' is not allowed; input should be 'sqlite' "
                                 "or 'postgres'"]

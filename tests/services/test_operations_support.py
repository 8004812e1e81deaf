"""The operating layers in the program, under mocks: declared tables, the scheduler and backup services, outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lakehouse_platform.artifacts.runtime import OPERATIONS_LOCK
from lakehouse_platform.paths import state_root
from lakehouse_platform.runtime.config import OperationsConfig
from lakehouse_platform.services import operations_support as support
from tests.support.harness import ProgramRun, cached_run
from tests.support.rendered import is_secret, plain
from tests.support.stacks import stack_platform

LOCAL_SERVICE = "pulumi-python:dynamic/native:LocalService"
DECLARED_TABLE = "pulumi-python:dynamic/tables:DeclaredTable"
CONTAINER = "docker:index/container:Container"

LAB_TABLE = {"namespace": "sales", "name": "events", "owner": "growth", "freshness_minutes": 15,
             "columns": [{"name": "id", "type": "long"}], "maintenance": ["expire_snapshots"]}


@pytest.fixture(scope="module")
def native_run() -> ProgramRun:
    return cached_run("native", stack_platform("native"))


@pytest.fixture(scope="module")
def lab_with_tables() -> ProgramRun:
    platform = stack_platform("lab")
    platform["tables"] = [LAB_TABLE]
    return cached_run("lab", platform)


def _config_file(service: Any) -> OperationsConfig:
    files = plain(service.inputs["files"])
    (body,) = [plain(v) for k, v in files.items() if k.endswith("/operations.json")]
    return OperationsConfig.model_validate_json(body)


def test_each_declared_table_is_a_deployment_step_after_the_catalog(native_run: ProgramRun) -> None:
    tables = native_run.of_type(DECLARED_TABLE)
    assert [t.name for t in tables] == ["table-shop.orders", "table-shop.customers"]
    orders, customers = tables
    assert orders.inputs["table"]["owner"] == "bookshop data engineering"
    assert orders.inputs["table"]["partition_by"] == [{"source": "order_ts", "transform": "day"}]  # None: dropped
    assert {"rest-fixture", "seaweedfs"} <= set(orders.depends_on)
    assert "table-shop.orders" in customers.depends_on  # one at a time
    assert orders.parent == "lakehouse-orchestration"
    assert orders.inputs["labels"]["lakehouse.layer"] == "orchestration"
    assert is_secret(orders.inputs["catalog"])  # it carries the S3 key pair
    catalog = plain(orders.inputs["catalog"])
    assert catalog["uri"].startswith("http://127.0.0.1:") and catalog["s3.secret-access-key"] == "lab-secret-key"


def test_the_scheduler_and_the_backups_are_native_services_with_their_config(native_run: ProgramRun) -> None:
    services = {s.name: s for s in native_run.of_type(LOCAL_SERVICE)}
    scheduler, backups = services["maintenance-scheduler"], services["catalog-backup"]
    assert scheduler.inputs["argv"][1:5] == ["-m", "lakehouse_platform.runtime", "scheduler", "--config"]
    assert scheduler.inputs["argv"][-3:-1] == ["maintenance", "--listen"]
    assert scheduler.inputs["labels"]["lakehouse.layer"] == "orchestration"
    assert backups.inputs["labels"]["lakehouse.layer"] == "recovery"
    config = _config_file(scheduler)
    state = state_root() / "native"
    assert config.runs_db == f"{state}/operations/runs.db"
    assert [(j.id, j.schedule, j.older_than_days) for j in config.maintenance] == [
        ("expire_snapshots", "*/15 * * * *", None), ("rewrite_data_files", "0 4 * * *", None),
        ("rewrite_manifests", "0 5 * * 0", None), ("remove_orphan_files", "0 6 * * 0", 7)]
    # Expiry follows each table's retention: the streams' tables (a commit every 10 s, 90 between two runs of
    # expiry every 15 minutes) keep 500 - 1.5 x 90; a declared table of unknown rate half of max_snapshots.
    assert {r.identifier: r.keep_last for r in config.retention} == {
        "shop.orders": 250, "shop.customers": 250, "streams.orders": 365, "bookshop.orders_cdc": 365}
    assert config.default_retention is not None and config.default_retention.keep_last == 250
    assert config.speedup == 1
    assert config.engine is not None and (config.engine.port, config.engine.catalog) == (8443, "fixture")
    # HTTPS as governance.maintenance (the writer, never the platform's Admin identity), in its own Trino catalog;
    # the password and certificate are references to the environment.
    assert (config.engine.http_scheme, config.engine.user) == ("https", "writer")
    assert config.engine.password == "${ENV:LAKEHOUSE_SECRET_TRINO_PASSWORD_WRITER}"
    assert config.catalog.properties["token"] == "${ENV:LAKEHOUSE_SECRET_CATALOG_TOKEN_WRITER}"
    env = plain(services["maintenance-scheduler"].inputs["env"])
    assert {"LAKEHOUSE_SECRET_TRINO_PASSWORD_WRITER", "LAKEHOUSE_SECRET_CATALOG_TOKEN_WRITER",
            "LAKEHOUSE_SECRET_TRINO_TLS_CERT"} <= set(env)
    assert not any("PLATFORM" in name for name in env), "no credential of the platform's identity"
    assert env["LAKEHOUSE_S3_ACCESS_KEY"] == "writer-access-key"  # its own store key pair, not the admin's
    assert env["LAKEHOUSE_S3_SECRET_KEY"] == "writer-secret-key"  # the lab default of s3-secret-key-writer
    assert [t["name"] for t in config.tables] == ["orders", "customers"]
    plan = _config_file(backups).backups
    assert plan is not None and plan.schedule == "*/15 * * * *" and plan.retention_days == 7
    assert [(s.name, s.path) for s in plan.sqlite] == [("rest-fixture", f"{state}/rest-fixture/fixture.db")]
    assert plan.dir == f"{state}/backups"  # outside every service's own directory
    assert plan.postgres is not None and plan.postgres.databases == ["polaris", "lakekeeper"]
    assert plan.postgres.bindir == "/nonexistent/lakehouse-cache/postgres"  # the platform PostgreSQL's pg_dump
    env = backups.inputs["env"]
    # The backups dump as their least role (not the superuser): its password, never the superuser's.
    assert plan.postgres.user == "postgres" and plan.postgres.dump_user == "lakehouse_backup"
    assert is_secret(env) and plain(plain(env)["PGPASSWORD"]) == "lab-postgres-backup-password"


def test_the_outputs_carry_tables_recovery_objectives_and_operations(native_run: ProgramRun) -> None:
    out = native_run.outputs
    assert [(t["table"], t["owner"], t["freshness_minutes"]) for t in out["tables"]] == [
        ("shop.orders", "bookshop data engineering", 1440), ("shop.customers", "bookshop data engineering", 1440)]
    assert out["tables"][1]["maintenance"] == {"expire_snapshots": ["*/15 * * * *"],
                                               "remove_orphan_files": ["0 6 * * 0"]}
    assert out["recovery"] == {"rpo_minutes": 60, "rto_minutes": 120, "backup_retention_days": 7,
                               "backup_schedule": "*/15 * * * *",
                               "backups": "catalog-backup service: SQLite online backup / pg_dump, sha256 sidecars"}
    operations = OperationsConfig.model_validate(out["operations"])
    assert operations.catalog.service == "rest-fixture" and operations.backups is not None


def test_the_lab_runs_both_from_the_operations_image_with_nothing_installed_at_start(
        lab_with_tables: ProgramRun) -> None:
    containers = {c.name: c for c in lab_with_tables.of_type(CONTAINER)}
    scheduler, backups = containers["maintenance-scheduler"], containers["catalog-backup"]
    (image,) = lab_with_tables.of_type("docker:index/image:Image")  # one operations image for every operations service
    for container in (scheduler, backups):
        assert container.inputs["image"] == image.inputs["imageName"] == support.OPERATIONS_IMAGE
        assert container.inputs["user"] == support.OPERATIONS_USER
        assert container.inputs["command"][:4] == ["python", "-m", "lakehouse_platform.runtime", "scheduler"]
        assert not container.inputs.get("entrypoints") and not container.inputs.get("mounts")  # no venv volume
    uploads = {u["file"]: u for u in scheduler.inputs["uploads"]}
    assert set(uploads) == {support.CONTAINER_CONFIG}  # the code is in the image; only its config is uploaded
    config = OperationsConfig.model_validate_json(uploads[support.CONTAINER_CONFIG]["content"])
    assert config.engine is not None and (config.engine.host, config.engine.port) == ("trino", 8443)
    assert config.catalog.uri == "http://catalog-gate:8182"
    binds = {v["containerPath"]: v["hostPath"] for v in backups.inputs["volumes"]}  # Binds: the daemon creates them
    state = state_root() / "lab"
    assert binds["/var/lib/lakehouse/rest-fixture/catalog"] == f"{state}/rest-fixture/catalog"
    assert binds["/var/lib/lakehouse/backups"] == f"{state}/backups"
    backup_config = OperationsConfig.model_validate_json(
        {u["file"]: u for u in backups.inputs["uploads"]}[support.CONTAINER_CONFIG]["content"])
    assert backup_config.backups is not None
    assert backup_config.backups.sqlite[0].path == "/var/lib/lakehouse/rest-fixture/catalog/fixture.db"
    assert backup_config.backups.postgres is not None and backup_config.backups.postgres.host == "postgres"
    (table,) = lab_with_tables.of_type(DECLARED_TABLE)
    assert table.inputs["table"]["namespace"] == "sales" and "rest-fixture" in table.depends_on
    assert plain(table.inputs["catalog"])["uri"] == "http://localhost:8182"


def test_the_operations_lock_is_the_projects_own_pins() -> None:
    """The operations image installs exactly the versions and hashes of requirements.lock (make lock writes both
    from pyproject.toml), and pyproject's operations group pins what its dependencies pin."""
    import tomllib

    def pins(path: Path) -> dict[str, tuple[str, frozenset[str]]]:
        found: dict[str, tuple[str, frozenset[str]]] = {}
        name = None
        for line in path.read_text().splitlines():
            if "==" in line and not line.startswith((" ", "#")):
                name, version = line.split(" ")[0].split("==")
                found[name] = (version, frozenset())
            elif name and "--hash=sha256:" in line:
                version, hashes = found[name]
                found[name] = (version, hashes | {line.strip().split("sha256:")[1].rstrip(" \\")})
        return found

    root = Path(__file__).resolve().parents[2]
    lock = pins(root / "requirements.lock")
    operations = pins(OPERATIONS_LOCK)
    for name, (version, hashes) in operations.items():
        assert lock[name][0] == version, f"operations.lock: {name} {version} vs lock {lock[name][0]}"
        assert hashes and hashes <= lock[name][1], f"operations.lock: {name} hashes not in the lock"
    assert operations["apscheduler"][0] == support.APSCHEDULER_VERSION
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    main = {d.split("==")[0].split("[")[0]: d for d in project["dependencies"]}
    for requirement in project["optional-dependencies"]["operations"]:
        base = requirement.split("==")[0].split("[")[0]
        assert main.get(base, "").split("==")[-1] == requirement.split("==")[1], requirement
        assert base.lower() in {name.lower() for name in operations}
    assert not list(root.glob("lakehouse_platform/runtime/requirements-*")), "one lock: no per-service requirement files"


def test_the_cloud_keeps_its_managed_services_and_exports_the_objectives() -> None:
    run = cached_run("cloud", stack_platform("cloud"))
    assert not run.of_type(LOCAL_SERVICE) and not any(c.name == "maintenance-scheduler"
                                                      for c in run.of_type(CONTAINER))
    assert run.outputs["recovery"]["rpo_minutes"] == 60 and run.outputs["recovery"]["backup_retention_days"] == 14
    assert "AWS Backup" in run.outputs["recovery"]["backups"]
    assert "operations" not in run.outputs


def test_the_operations_config_round_trips_as_json(native_run: ProgramRun) -> None:
    operations = OperationsConfig.model_validate(native_run.outputs["operations"])
    assert OperationsConfig.model_validate(json.loads(operations.dump())) == operations


def test_rebuild_scans_where_the_default_catalog_lays_its_tables_out() -> None:
    """The fixture's ``warehouse`` is a location; Polaris's is a catalog name, its tables live under its own
    prefix; Lakekeeper names table directories by uuid: nothing to scan, its database is restored instead."""
    from lakehouse_platform.config import load_platform
    from lakehouse_platform.control.procedures import ProcedureError, tables_location
    from lakehouse_platform.services.operations_config import host_paths, operations_config

    def config_of(platform: dict[str, Any]) -> OperationsConfig:
        spec = load_platform(platform)
        return operations_config(spec, "test", host_paths(spec, "/nonexistent/state"))

    native = stack_platform("native")
    assert tables_location(config_of(native)) == config_of(native).catalog.properties["warehouse"]
    cloud = stack_platform("cloud")
    assert config_of(cloud).catalog.properties["warehouse"] == "warehouse"
    assert tables_location(config_of(cloud)) == f"s3://{cloud['storage']['bucket']}/polaris/"
    # Lakekeeper (refused on every target for now, ADR 0013) names table directories by uuid: its role says so.
    from lakehouse_platform.services.lakekeeper.definition import CATALOG as LAKEKEEPER

    assert LAKEKEEPER.tables_location(load_platform(cloud)) is None
    polaris = config_of(cloud)
    as_lakekeeper = polaris.model_copy(update={"catalog": polaris.catalog.model_copy(
        update={"service": "lakekeeper", "tables_location": None})})
    with pytest.raises(ProcedureError, match="lakekeeper does not lay its tables out by name"):
        tables_location(as_lakekeeper)

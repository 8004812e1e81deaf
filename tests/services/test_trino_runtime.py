"""Trino's runtime code (lakehouse_platform/services/trino/runtime.py): maintenance's actions as Trino statements, and
the shared maintenance finding it through the stack's SQL engine, never by name."""

from __future__ import annotations

import pytest

from lakehouse_platform.runtime import maintenance
from lakehouse_platform.runtime.config import CatalogAccess, EngineAccess, OperationsConfig, RecoveryObjectives
from lakehouse_platform.services.trino import runtime as trino_runtime


@pytest.mark.parametrize(("action", "older", "sql", "session"), [
    ("expire_snapshots", 7 * 86400, "ALTER TABLE \"fixture\".\"shop\".\"orders\" EXECUTE "
     "expire_snapshots(retention_threshold => '7d')", {"fixture.expire_snapshots_min_retention": "7d"}),
    ("remove_orphan_files", 30, "ALTER TABLE \"fixture\".\"shop\".\"orders\" EXECUTE "
     "remove_orphan_files(retention_threshold => '30s')", {"fixture.remove_orphan_files_min_retention": "30s"}),
    ("rewrite_data_files", None, "ALTER TABLE \"fixture\".\"shop\".\"orders\" EXECUTE optimize", {}),
    ("rewrite_manifests", None, "ALTER TABLE \"fixture\".\"shop\".\"orders\" EXECUTE optimize_manifests", {}),
])
def test_each_action_is_one_trino_procedure_with_its_threshold_as_the_session_minimum(
        action: str, older: int | None, sql: str, session: dict[str, str]) -> None:
    assert trino_runtime.statement(action, "fixture", "shop.orders", older) == (sql, session)


def test_durations() -> None:
    assert [trino_runtime.trino_duration(s) for s in (86400 * 7, 30, 90000)] == ["7d", "30s", "90000s"]


def test_maintenance_loads_the_engine_runtime_its_config_names() -> None:
    config = OperationsConfig(
        stack="t", target="native", state_dir="/x", runs_db="/x/runs.db", locks_dir="/x/locks",
        catalog=CatalogAccess(service="rest-fixture", engine_name="fixture", properties={"uri": "http://x"}),
        engine=EngineAccess(host="127.0.0.1", port=1, catalog="fixture", runtime=trino_runtime.__name__),
        recovery=RecoveryObjectives(rpo_minutes=60, rto_minutes=120))
    access, code = maintenance.engine_runtime(config)
    assert access is config.engine and code is trino_runtime
    with pytest.raises(maintenance.MaintenanceError, match="this stack runs no SQL engine"):
        maintenance.engine_runtime(config.model_copy(update={"engine": None}))

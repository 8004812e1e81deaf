"""Shared fixtures: the stacks' programs evaluated under Pulumi mocks, from the real stack files.

Each run is made once per test process (``cached_run``): tests only read what a run registered.
"""

from __future__ import annotations

import pytest

from tests.support.harness import ProgramRun, cached_run
from tests.support.stacks import cloud_platform, stack_platform, with_changes


@pytest.fixture
def lab_platform() -> dict:
    return stack_platform("lab")


@pytest.fixture(scope="module")
def lab_run() -> ProgramRun:
    """The lab program evaluated once under mocks (docker provider mocked: no engine here)."""
    return cached_run("lab", stack_platform("lab"))


@pytest.fixture(scope="module")
def lab(lab_run: ProgramRun) -> ProgramRun:
    """The lab program (``lab_run``), by the name the signals and governance checks use."""
    return lab_run


@pytest.fixture(scope="session")
def native_run() -> ProgramRun:
    """The native program evaluated once per session under mocks (FakeResolver: no cache, no ports)."""
    return cached_run("native", stack_platform("native"))


@pytest.fixture(scope="session")
def cloud_run() -> ProgramRun:
    """The cloud program evaluated once per session under mocks (the aws provider mocked: no account here)."""
    return cached_run("cloud", stack_platform("cloud"))


# -- the cloud stack and two variants of it (the aws checks of tests/targets/aws and tests/services) ----------


@pytest.fixture(scope="module")
def cloud() -> ProgramRun:
    """Pulumi.cloud.yaml as it is."""
    return cached_run("cloud", cloud_platform())


@pytest.fixture(scope="module")
def five_workers_no_spark() -> ProgramRun:
    """Five Trino workers, no EMR Serverless, no replica bucket."""
    platform = with_changes(trino_workers=5, spark_emr_serverless=False)
    platform["storage"]["replica_bucket"] = False
    return cached_run("cloud", platform)


@pytest.fixture(scope="module")
def streaming() -> ProgramRun:
    """Kafka on MSK, a replica in another region, an alarm e-mail."""
    platform = with_changes(kafka_msk=True, replica_region="eu-central-1")
    platform["observability"] = {"alarm_email": "oncall@example.com"}
    return cached_run("cloud", platform)


@pytest.fixture(scope="module")
def cloud_with_tables() -> ProgramRun:
    """The cloud stack with one declared table (the declared-tables task, the maintenance schedules' filters)."""
    platform = stack_platform("cloud")
    platform["tables"] = [
        {"namespace": "shop", "name": "orders", "owner": "bookshop data engineering", "freshness_minutes": 60,
         "columns": [{"name": "order_id", "type": "long"}], "maintenance": ["expire_snapshots"],
         "properties": {"comment": "the bookshop's orders"}}]
    return cached_run("cloud", platform)

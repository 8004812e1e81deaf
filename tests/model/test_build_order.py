"""The edges that matter, on every target: what must exist before what starts.

The harness records each resource's ``depends_on`` (tests/support/harness.py); a target that dropped a
dependency (or built in the wrong order) fails here.
"""

from __future__ import annotations

import pulumi
import pytest

from lakehouse_platform.config import load_platform
from lakehouse_platform.targets import UnbuiltDependency, dependencies
from tests.support.harness import ProgramRun
from tests.support.stacks import stack_platform

CONTAINER = "docker:index/container:Container"
LOCAL_SERVICE = "pulumi-python:dynamic/native:LocalService"
FLINK_JOB = "pulumi-python:dynamic/flink:FlinkJob"
ECS_SERVICE = "aws:ecs/service:Service"
RDS = "aws:rds/instance:Instance"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"


def edges(run: ProgramRun, type_: str) -> dict[str, set[str]]:
    """What each resource waits for among the services (every lab container also waits for its stack's state,
    the LabState resource, and every native process for the stack's copy of the operations code: their own test)."""
    return {r.name: {d for d in r.depends_on if not d.endswith("-lab-state") and d != "operations-runtime"}
            for r in run.of_type(type_)}


def test_every_native_process_waits_for_the_stacks_copy_of_the_operations_code(native_run: ProgramRun) -> None:
    processes = native_run.of_type(LOCAL_SERVICE)
    assert processes and all("operations-runtime" in r.depends_on for r in processes)


def test_lab_store_comes_before_the_catalog_and_its_bucket_job(lab_run: ProgramRun) -> None:
    containers = edges(lab_run, CONTAINER)
    assert "seaweedfs" in containers["rest-fixture"]
    assert "seaweedfs" in containers["seaweedfs-bucket"]


def test_lab_bootstrap_and_migrate_jobs_and_the_database_come_before_their_catalogs(lab_run: ProgramRun) -> None:
    containers = edges(lab_run, CONTAINER)
    assert {"postgres", "polaris-bootstrap"} <= containers["polaris"]
    assert "postgres" in containers["polaris-bootstrap"]


def test_lab_every_declared_dependency_is_an_edge(lab_run: ProgramRun) -> None:
    spec = load_platform(stack_platform("lab"))
    built = {**edges(lab_run, CONTAINER), **edges(lab_run, FLINK_JOB)}
    for name, service in spec.enabled_services().items():
        assert set(service.depends_on) <= built[name], name


def test_lab_streaming_job_waits_for_its_cluster_catalog_and_store(lab_run: ProgramRun) -> None:
    containers = edges(lab_run, CONTAINER)
    # Both managers wait for the bind mount to be uid 9999's, then start together.
    assert containers["flink-jobmanager"] == containers["flink-taskmanager"] == {"flink-state-init"}
    # The job writes generated orders (flink.job.source: generator), so it waits for no broker; the catalog's
    # gate too: on destroy the job's final savepoint commits through it (issue 19, item 6).
    assert edges(lab_run, FLINK_JOB)["flink-orders-job"] == {"flink-jobmanager", "flink-taskmanager", "rest-fixture",
                                                             "catalog-gate", "seaweedfs"}


def test_native_streaming_job_waits_for_its_cluster_catalog_and_store(native_run: ProgramRun) -> None:
    processes = edges(native_run, LOCAL_SERVICE)
    # The folded state-init job is the managers' own work: they wait for nothing and start together.
    assert processes["flink-jobmanager"] == processes["flink-taskmanager"] == set()
    assert edges(native_run, FLINK_JOB)["flink-orders-job"] == {"flink-jobmanager", "flink-taskmanager",
                                                                "rest-fixture", "catalog-gate", "seaweedfs"}


def test_native_store_comes_before_the_catalog(native_run: ProgramRun) -> None:
    processes = edges(native_run, LOCAL_SERVICE)
    assert "seaweedfs" in processes["rest-fixture"]
    # The folded init job has no process; its work is the fixture's own home, so nothing waits for it.
    assert "rest-fixture-init" not in processes


def test_cloud_database_comes_before_polaris_and_log_groups_before_every_writer(cloud_run: ProgramRun) -> None:
    services = edges(cloud_run, ECS_SERVICE)
    log_groups = {r.name for r in cloud_run.of_type(LOG_GROUP)}
    for name, on in services.items():
        own = f"lakehouse-logs-{name.removeprefix('lakehouse-')}"
        assert own in on, f"{name} does not wait for its log group ({own}); it waits for {sorted(on)}"
        assert own in log_groups
    database = cloud_run.of_type(RDS)[0]
    assert {"lakehouse-logs-rds-postgresql", "lakehouse-logs-rds-upgrade"} <= set(database.depends_on)
    # Polaris reads the database's managed secret (an RDS output) in its task, so Pulumi creates RDS first.
    polaris = next(r for r in cloud_run.of_type("aws:ecs/taskDefinition:TaskDefinition") if r.name == "lakehouse-polaris")
    assert "lakehouse-catalog-db" in polaris.inputs["containerDefinitions"]


def test_an_unbuilt_dependency_is_an_error_never_dropped() -> None:
    built = {"seaweedfs": pulumi.Resource.__new__(pulumi.Resource)}
    assert dependencies(built, "rest-fixture", ["seaweedfs"]) == [built["seaweedfs"]]
    with pytest.raises(UnbuiltDependency, match="rest-fixture depends on postgres, which is not built yet"):
        dependencies(built, "rest-fixture", ["seaweedfs", "postgres"])


def test_a_dependency_cycle_is_refused_naming_it() -> None:
    from lakehouse_platform.config import ConfigError

    platform = stack_platform("lab")
    platform["services"]["seaweedfs"] = {"depends_on": ["rest-fixture"]}
    with pytest.raises(ConfigError) as info:
        load_platform(platform)
    assert info.value.errors == ["lakehouse:platform.services.seaweedfs.depends_on: dependency cycle "
                                 "seaweedfs -> rest-fixture -> seaweedfs"]

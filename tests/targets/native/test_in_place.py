"""A change the data on this host cannot survive is refused when the program starts: preview and up stop before
any resource, with the procedure (``OnNative.in_place``, ``NativeTarget.not_in_place``)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pulumi
import pytest

from lakehouse_platform.control.isolated import isolated_platform
from lakehouse_platform.model import PlatformSpec
from lakehouse_platform.services.flink.config import JOB_STATE_VERSION, lineage
from lakehouse_platform.services.flink.native import native_state_dir
from tests.support.harness import FakeResolver, RecordingMocks, run_program

#: A block of ports no isolated stack uses, so the host checks find them free.
FIRST_PORT = 31500


class Resolver(FakeResolver):
    """The unit tier's fake artifacts, PostgreSQL's with a real version (what the refusal compares)."""

    def __init__(self, postgres: str) -> None:
        super().__init__()
        self.postgres = postgres

    def resolve(self, spec: PlatformSpec):  # type: ignore[no-untyped-def]
        found = super().resolve(spec)
        found.services["postgres"] = dataclasses.replace(found.services["postgres"], version=self.postgres)
        return found


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LAKEHOUSE_STATE_DIR", str(tmp_path))
    return tmp_path / f"native-test-{FIRST_PORT}"  # the isolated platform's state_dir


def _cluster(state: Path, major: str) -> None:
    data = state / "postgres" / "data"
    data.mkdir(parents=True)
    (data / "PG_VERSION").write_text(f"{major}\n")


def _platform() -> dict:
    return isolated_platform("native-test", first_port=FIRST_PORT)[0]


def test_a_postgresql_major_change_is_refused_before_any_resource(state: Path) -> None:
    _cluster(state, "14")
    mocks = RecordingMocks()
    with pytest.raises(pulumi.RunError) as info:
        run_program("native", _platform(), mocks=mocks, resolver=Resolver("15.18"), check_ports=True)
    message = str(info.value)
    assert "a change that cannot be made in place is refused; nothing was changed" in message
    assert f"services.postgres: the cluster in {state / 'postgres' / 'data'} is PostgreSQL 14" in message
    assert "this stack now runs PostgreSQL 15.18" in message
    assert "pg_upgrade" in message and "docs/operations/upgrades.md#postgresql" in message
    assert mocks.resources == []


def test_a_postgresql_minor_change_is_in_place(state: Path) -> None:
    _cluster(state, "15")
    run = run_program("native", _platform(), resolver=Resolver("15.20"), check_ports=True)
    assert run.named("postgres").inputs["argv"]


def test_a_fresh_stack_has_nothing_to_refuse(state: Path) -> None:
    assert run_program("native", _platform(), resolver=Resolver("18.6"), check_ports=True).resources


def _lineage_dir(state: Path, spec_platform: dict) -> Path:
    from lakehouse_platform.config import load_platform

    spec = load_platform(spec_platform)
    return native_state_dir(state) / "savepoints" / lineage(spec)


def test_a_job_graph_its_lineage_cannot_restore_is_refused(state: Path) -> None:
    platform = _platform()
    savepoints = _lineage_dir(state, platform)
    savepoints.mkdir(parents=True)
    (savepoints / "job-graph.json").write_text(json.dumps({"state_version": JOB_STATE_VERSION + 1}))
    mocks = RecordingMocks()
    with pytest.raises(pulumi.RunError) as info:
        run_program("native", platform, mocks=mocks, resolver=Resolver("15.18"), check_ports=True)
    message = str(info.value)
    assert f"services.flink-orders-job: the job's lineage {savepoints.name} holds state of job graph version " \
           f"{JOB_STATE_VERSION + 1}" in message
    assert "flink.job.restore: none" in message and "docs/operations/upgrades.md#flink" in message
    assert mocks.resources == []


def test_a_job_graph_change_the_operator_acknowledged_goes_ahead(state: Path) -> None:
    platform = _platform()
    savepoints = _lineage_dir(state, platform)
    savepoints.mkdir(parents=True)
    (savepoints / "job-graph.json").write_text(json.dumps({"state_version": JOB_STATE_VERSION + 1}))
    platform.setdefault("flink", {}).setdefault("job", {})["restore"] = "none"
    run = run_program("native", platform, resolver=Resolver("15.18"), check_ports=True)
    assert run.named("flink-orders-job").inputs["state_version"] == JOB_STATE_VERSION


def test_a_lineage_from_before_the_marker_counts_as_the_first_graph(state: Path) -> None:
    """Jobs deployed before markers existed (release 0.3.0) hold version 1's state: a savepoint without marker."""
    platform = _platform()
    savepoint = _lineage_dir(state, platform) / "savepoint-abc123"
    savepoint.mkdir(parents=True)
    (savepoint / "_metadata").write_bytes(b"\0")
    from lakehouse_platform.services.flink.job import recorded_graph

    assert recorded_graph(savepoint.parent) == 1
    assert recorded_graph(savepoint.parent.parent / "elsewhere") is None


def test_a_submitted_job_records_its_graph_beside_its_savepoints(tmp_path: Path) -> None:
    from lakehouse_platform.services.flink.job import GRAPH_MARKER, JobInputs, record_graph, recorded_graph

    spec = JobInputs(rest_url="http://127.0.0.1:1", job_name="orders", jar_path="/x.jar", jar_digest="0" * 64,
                     entry_class="Main", checkpoint_dir="file:///flink/checkpoints/orders-1",
                     savepoint_dir="file:///flink/savepoints/orders-1", host_paths={"file:///flink": str(tmp_path)},
                     state_version=3)
    record_graph(spec)
    marker = json.loads((tmp_path / "savepoints" / "orders-1" / GRAPH_MARKER).read_text())
    assert marker["state_version"] == 3 and marker["jar_digest"] == "0" * 64
    assert recorded_graph(tmp_path / "savepoints" / "orders-1") == 3


def _volumes(state: Path, marker: str | None) -> None:
    home = state / "seaweedfs"
    (home / "data").mkdir(parents=True)
    (home / "data" / "1.dat").write_bytes(b"\0")
    if marker is not None:
        (home / "volume-format").write_text(f"{marker}\n")


def _seaweedfs(platform: dict, native_version: str) -> dict:
    platform["services"]["seaweedfs"]["native_version"] = native_version
    return platform


def test_a_store_written_by_the_standard_build_refuses_a_large_disk_one(state: Path) -> None:
    """Volumes from before the marker are the standard build's (the only one there was): a large-disk pin is
    refused by name, with the procedure, before any resource."""
    _volumes(state, marker=None)
    mocks = RecordingMocks()
    with pytest.raises(pulumi.RunError) as info:
        run_program("native", _seaweedfs(_platform(), "4.45_large_disk"), mocks=mocks, resolver=Resolver("15.18"),
                    check_ports=True)
    message = str(info.value)
    assert f"services.seaweedfs: the volumes in {state / 'seaweedfs' / 'data'} were written by SeaweedFS's " \
           "standard build; this stack now pins 4.45_large_disk, a large_disk build" in message
    assert "native_version unset" in message and "docs/operations/upgrades.md#seaweedfs" in message
    assert mocks.resources == []


def test_a_large_disk_store_moves_between_large_disk_releases_and_records_its_format(state: Path) -> None:
    _volumes(state, marker="large_disk")
    run = run_program("native", _seaweedfs(_platform(), "4.45_large_disk"), resolver=Resolver("15.18"),
                      check_ports=True)
    files = run.named("seaweedfs").inputs["files"]["value"]  # a secret: s3.json holds the keys
    assert files[str(state / "seaweedfs" / "volume-format")] == "large_disk\n"
    with pytest.raises(pulumi.RunError, match=r"written by SeaweedFS's large_disk build.*native_version: "
                                              r"<release>_large_disk"):
        run_program("native", _platform(), resolver=Resolver("15.18"), check_ports=True)

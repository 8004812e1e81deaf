"""The lab's containers on a real Docker engine, from the program's own rendered inputs (issue 19's CI stage).

Marker ``lab``: runs only where an engine answers at DOCKER_HOST (``make engine``; ``eval "$(scripts/docker-engine.sh
env)"``) and the stack's artifacts are in the cache. The program is evaluated under Pulumi mocks (only the
provider is mocked: ``harness.run_program``), every ``docker:Container`` it registers is started with the Docker
SDK for Python as rendered, in the program's order, and must reach what the program waits for: healthy, or exit 0.
A deliberately broken config (a health check on a wrong port) must turn the run red.
"""

from __future__ import annotations

import os

import pytest

from infra.lab import runner
from tests.support.harness import RecordingMocks, run_program
from tests.support.stacks import stack_platform

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def engine():
    if not os.environ.get("DOCKER_HOST"):
        pytest.skip("no DOCKER_HOST: start an engine with `make engine` and eval \"$(scripts/docker-engine.sh env)\"")
    from infra.lab import images

    client = images.engine()
    try:
        client.ping()
    except Exception as exc:  # noqa: BLE001 - any failure to reach it means: no engine here
        pytest.skip(f"no engine answers at {os.environ['DOCKER_HOST']}: {exc}")
    return client


def built_lab(**services: dict) -> dict:
    """The lab stack with built images (no registry here), without Polaris and Lakekeeper (no artifact)."""
    platform = stack_platform("lab")
    platform["lab"] = {"images": "built"}
    platform["services"].update({"polaris": {"enabled": False}, "lakekeeper": {"enabled": False}, **services})
    return runner.lab_ports(platform, runner.first_run_port())


class RealCertificates(RecordingMocks):
    """The harness's mocks, with the platform's TLS certificates issued for real (Trino serves HTTPS with one)."""

    def new_resource(self, args):
        resource_id, outputs = super().new_resource(args)
        return resource_id, {**outputs, **runner.provider_outputs(args.typ, args.inputs)}


def recorded(platform: dict) -> list[runner.Recorded]:
    """What the program registers, as the runner starts it (the real artifact cache: the tags it built)."""
    from infra.services.resolver import CacheResolver

    mocks = RealCertificates()
    run_program("lab", platform, mocks=mocks, resolver=CacheResolver())
    return [runner.Recorded(r.type, r.name, runner.plain(r.inputs)) for r in mocks.resources]


@pytest.fixture(scope="module")
def images_built(engine):
    from infra.config import load_platform
    from infra.lab import driver
    from infra.services.resolver import CacheResolver

    spec = load_platform(built_lab())
    driver.build_all(spec, CacheResolver().resolve(spec), engine)  # cached: only what the engine lacks
    return engine


def test_every_lab_container_starts_from_the_programs_inputs_to_healthy(images_built) -> None:
    report = runner.up(recorded(built_lab()), images_built)
    print(report.summary())
    assert report.ok, report.summary()
    names = {s.name for s in report.started}
    assert {"seaweedfs", "postgres", "rest-fixture", "catalog-gate", "trino", "lakehouse-exporter", "prometheus",
            "flink-jobmanager", "flink-taskmanager", "kafka", "kafka-connect", "maintenance-scheduler",
            "catalog-backup"} <= names


def test_a_broken_container_config_turns_the_run_red(images_built) -> None:
    broken = built_lab(seaweedfs={"health": {"kind": "http", "port": "s3", "path": "/healthz", "ready_timeout_s": 15,
                                             "command": ["CMD", "wget", "-qO-", "http://127.0.0.1:1/healthz"]}})
    report = runner.up(recorded(broken), images_built)
    assert not report.ok
    assert report.started[-1].name == "seaweedfs" and "not healthy after 15 s" in report.started[-1].detail

"""The lab on a real Docker engine from the program itself (issue 19's CI stage): ``lakehouse_platform.lab.runner.deploy``.

Marker ``lab``: runs only where an engine answers at DOCKER_HOST (``make engine``; ``eval "$(scripts/docker-engine.sh
env)"``) and the stack's artifacts are in the cache. The program runs under mocks that make every resource for
real as Pulumi registers it (containers with the Docker SDK exactly as rendered; the program's dynamic resources
by their own providers); the smoke check and the engines probe then run against the stack's outputs, and
destroy leaves nothing in the engine. A deliberately broken config (a health check on a wrong port, a missing
variable) must turn the run red.
"""

from __future__ import annotations

import pytest

from lakehouse_platform.lab import runner
from tests.support.stacks import built_lab_platform

pytestmark = pytest.mark.lab


def built_lab(**services: dict) -> dict:
    """CI's built lab as a runner's stack (its own names and ports)."""
    return runner.run_stack(built_lab_platform(**services))


@pytest.fixture(scope="module")
def images_built(engine):
    from lakehouse_platform.config import load_platform
    from lakehouse_platform.control import image_builds
    from lakehouse_platform.services.resolver import CacheResolver

    spec = load_platform(built_lab())
    image_builds.build_all(spec, CacheResolver().resolve(spec), engine)  # cached: only what the engine lacks
    return engine


def deployed(platform: dict, client) -> runner.Deployment:
    from lakehouse_platform.services.resolver import CacheResolver

    return runner.deploy("lab-run", platform, client, resolver=CacheResolver())


def test_the_lab_comes_up_from_the_program_answers_the_probes_and_goes_without_a_trace(
        images_built, tmp_path) -> None:
    import json
    import subprocess
    import sys

    from lakehouse_platform.control import commands
    from lakehouse_platform.paths import state_root

    deployment = deployed(built_lab(), images_built)
    try:
        print(deployment.report.summary())
        assert deployment.report.ok, deployment.report.summary()
        names = {s.name for s in deployment.report.started}
        assert {"seaweedfs", "postgres", "rest-fixture", "catalog-gate", "trino", "lakehouse-exporter", "prometheus",
                "flink-jobmanager", "flink-taskmanager", "kafka", "kafka-connect", "maintenance-scheduler",
                "catalog-backup"} <= names
        assert (state_root() / "lab-run").is_dir()  # claimed by the stack's LabState before any container
        smoke = commands.smoke_checks(deployment.outputs)
        assert all(ok for *_, ok, _ in smoke), smoke
        outputs = tmp_path / "outputs.json"
        outputs.write_text(json.dumps(deployment.outputs))
        probe = subprocess.run([sys.executable, "-m", "pytest", "lakehouse_platform/probes/test_engines.py", "--outputs",
                                str(outputs), "-p", "no:cacheprovider", "-q"], capture_output=True, text=True,
                               check=False, timeout=900)
        assert probe.returncode == 0, probe.stdout[-4000:] + probe.stderr[-2000:]
    finally:
        problems = deployment.destroy()
    assert problems == [] and deployment.left_in_engine() == []
    assert not (state_root() / "lab-run").exists()  # destroy keeps none of the stack's state


@pytest.mark.parametrize(("services", "failing", "why"), [
    ({"seaweedfs": {"health": {"kind": "http", "port": "s3", "path": "/healthz", "ready_timeout_s": 15,
                               "command": ["CMD", "wget", "-qO-", "http://127.0.0.1:1/healthz"]}}},
     "seaweedfs", "not healthy after 15 s"),
    ({"seaweedfs-bucket": {"command": ["echo no bucket for you >&2; exit 3"]}},  # its entrypoint is sh -c
     "seaweedfs-bucket", "exit 3"),
])
def test_a_broken_container_config_turns_the_run_red(images_built, services, failing, why) -> None:
    deployment = deployed(built_lab(**services), images_built)
    try:
        assert not deployment.report.ok, deployment.report.summary()
        # The failure is the last container made: as pulumi up, nothing is created once a resource failed.
        last = deployment.report.started[-1]
        assert (last.name, why in last.detail) == (failing, True), deployment.report.summary()
    finally:
        deployment.destroy()
    assert deployment.left_in_engine() == []

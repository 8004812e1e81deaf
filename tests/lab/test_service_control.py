"""The service-control seam in the lab (``lakehouse_platform.control.services.DockerServices``) on a real Docker engine.

Marker ``lab``: runs only where an engine answers at DOCKER_HOST (``make engine``; ``eval "$(scripts/docker-engine.sh
env)"``) and has the stack's ``lab.base_image`` (``make lab-base``). One small container stands for a service, made
as the docker target makes a server (a restart policy, a health check, a memory limit): everything the probes do
to a lab service is done to it, and what the engine then reports is checked. It pins the decision that a crash is
a SIGKILL of the container's process by its host pid: ``docker kill`` is an operator's stop to the engine, which
its restart policy does not undo.
"""

from __future__ import annotations

import signal
import time
import uuid
from pathlib import Path

import pytest

from lakehouse_platform.config import load_platform
from lakehouse_platform.control import services
from tests.support.stacks import stack_platform

pytestmark = pytest.mark.lab

MiB = 2**20


@pytest.fixture(scope="module")
def client(engine):
    found = engine
    base = load_platform(stack_platform("lab")).lab.base_image
    try:
        found.images.get(base)
    except Exception:  # noqa: BLE001
        pytest.skip(f"the engine has no {base}: make lab-base")
    return found


@pytest.fixture
def lab_service(client):
    """A 'service' container as the docker target makes a server, and the control the probes get for it."""
    name = f"probe-seam-{uuid.uuid4().hex[:8]}"
    base = load_platform(stack_platform("lab")).lab.base_image
    container = client.containers.run(
        base, ["sh", "-c", "mkdir -p /srv && echo 'git.build.version=1.10.1' > /srv/build.properties && "
                           "(sleep 600 &) && exec sleep 601"],
        name=name, detach=True, restart_policy={"Name": "unless-stopped"}, mem_limit="64m", memswap_limit="64m",
        healthcheck={"test": ["CMD-SHELL", "test -f /srv/build.properties"], "interval": 500_000_000,
                     "timeout": 2_000_000_000, "retries": 3, "start_period": 0},
        labels={"lakehouse.probe-seam": "1"})
    outputs = {"target": "docker", "docker": {"containers": {"svc": {"name": name, "id": container.id, "kind": "server",
                                                                     "memory_budget_bytes": 64 * MiB}}}}
    ctl = services.for_outputs(outputs)
    assert isinstance(ctl, services.DockerServices)
    ctl.wait_healthy("svc", timeout_s=60)
    yield ctl, container
    container.remove(force=True)


def test_stop_start_and_restart_through_docker(lab_service):
    ctl, container = lab_service
    first = ctl.instance("svc")
    assert first.running and first.ident == f"container {container.name} ({container.id[:12]})"
    ctl.stop("svc", grace_s=1)
    assert not ctl.instance("svc").running
    time.sleep(2)
    assert ctl.instance("svc").detail["status"] == "exited"  # an operator's stop: the restart policy leaves it
    ctl.start("svc")
    second = ctl.instance("svc")
    assert second.running and not second.same_as(first) and second.detail["health"] == "healthy"
    ctl.restart("svc")
    third = ctl.instance("svc")
    assert third.running and not third.same_as(second) and third.ident == first.ident  # the same container


def test_a_crash_is_healed_by_the_restart_policy_and_docker_kill_is_not(lab_service):
    ctl, _ = lab_service
    ctl.can_crash("svc")
    victim = ctl.crash("svc")
    deadline = time.monotonic() + 30
    healed = ctl.instance("svc")
    while not (healed.running and not healed.same_as(victim)) and time.monotonic() < deadline:
        time.sleep(0.2)
        healed = ctl.instance("svc")
    assert healed.running and not healed.same_as(victim) and healed.restarts == (victim.restarts or 0) + 1
    ctl.kill("svc", signal.SIGKILL)  # `docker kill`: to the engine an operator's stop
    time.sleep(3)
    stopped = ctl.instance("svc")
    assert not stopped.running and stopped.restarts == healed.restarts


def test_a_paused_service_hangs_and_goes_on(lab_service):
    ctl, _ = lab_service
    assert ctl.pause("svc")
    assert ctl.instance("svc").detail["status"] == "paused" and not ctl.instance("svc").running
    ctl.unpause("svc")
    assert ctl.instance("svc").running


def test_memory_processes_and_files_are_read_inside_the_container(lab_service, tmp_path: Path):
    ctl, _ = lab_service
    assert ctl.services() == {"svc": 64 * MiB}
    memory = ctl.memory("svc")
    assert 0 < memory.bytes < 64 * MiB and memory.processes >= 2 and "docker stats" in memory.source
    args = [p.args for p in ctl.processes("svc")]
    assert "sleep 601" in args and "sleep 600" in args and all(p.cwd == "/" for p in ctl.processes("svc"))
    assert "build.properties" in ctl.list_dir("svc", "/srv")
    copied = ctl.fetch_file("svc", "/srv/build.properties", tmp_path / "build.properties")
    assert copied.read_text() == "git.build.version=1.10.1\n"
    with pytest.raises(services.ServiceControlError, match="exited"):
        ctl.list_dir("svc", "/no/such/dir")


def test_what_an_image_build_leaves_is_found_and_nothing_of_a_stack(client, tmp_path: Path):
    """pulumi-docker builds the platform's image with the classic builder and no ``Remove``: one intermediate
    container per step stays, through ``destroy`` too. ``make up``/``make down`` remove exactly those."""
    from lakehouse_platform.control.docker_stack import build_leftovers

    base = load_platform(stack_platform("lab")).lab.base_image
    tag = f"lakehouse-probe/leftovers:{uuid.uuid4().hex[:8]}"
    (tmp_path / "Dockerfile").write_text(f"FROM {base}\nRUN echo {tag} > /one\nENV X=1\nRUN cat /one > /two\n")
    for _ in client.api.build(path=str(tmp_path), tag=tag, rm=False, nocache=True, decode=True):
        pass  # as the provider asks: nothing removed
    layers = [entry["Id"] for entry in client.api.history(tag)]
    own = client.containers.create(tag, ["true"], labels={"lakehouse.layer": "catalog"})  # a stack's, stopped
    stray = client.containers.create(tag, ["true"])  # a container of the image itself
    try:
        left = build_leftovers(client, tag)
        assert len(left) == 3 and {c.attrs["Image"] for c in left} <= set(layers[1:])  # one per step
        for container in left:
            container.remove(v=True)
        assert build_leftovers(client, tag) == []
        assert {c.id for c in client.containers.list(all=True)} >= {own.id, stray.id}
    finally:
        own.remove()
        stray.remove()
        client.images.remove(tag, noprune=False)

"""The lab on a real engine from the program itself, without the Pulumi Docker provider (issue 19's CI stage).

The Pulumi Docker provider cannot be had here (docker-facts.md), so the lab is never ``pulumi up``-ed in CI.
Instead the program runs under Pulumi mocks that make each resource for real as it is registered (``deploy``):
the spec, the layers, the target and every renderer run as in ``pulumi up``, and only the provider's part is
done here, with the Docker SDK for Python, exactly as rendered: networks and volumes; each ``docker:Container``
with its image, command, entrypoint, environment, uploads, bind mounts and volumes, ports on 127.0.0.1,
memory, user, network and aliases, health check; a job run to completion (exit 0, or its log tail), a server
to ``healthy`` within its ``wait_timeout``. The program's own dynamic resources (the stack's state directory,
the TLS certificate, the CDC source, the connectors, the Flink job) run their own providers, deserialized as
Pulumi's dynamic provider host does. Registration order is Pulumi's: a resource is registered once its inputs
and ``depends_on`` are resolved, so everything is made after what it needs. The stack's outputs are then the
program's, from real values: the probes run against them (``--outputs``). ``Deployment.destroy`` undoes it
all, newest first (the dynamic resources' own ``delete``: the job's savepoint, the state directory).
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import re
import tarfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dill
import pulumi

from lakehouse_platform.providers import plain

CONTAINER = "docker:index/container:Container"
NETWORK = "docker:index/network:Network"
VOLUME = "docker:index/volume:Volume"
REMOTE_IMAGE = "docker:index/remoteImage:RemoteImage"
BUILT_IMAGE = "docker:index/image:Image"
DYNAMIC = "pulumi-python:dynamic"
DYNAMIC_PROVIDER = "__provider"  # the serialized provider among a dynamic resource's inputs (Pulumi's key)
#: Label every container, network and volume the runner makes carries (so a run removes only its own).
RUN_LABEL = "lakehouse.lab-run"


def lab_ports(platform: dict[str, Any], first_port: int) -> dict[str, Any]:
    """``platform`` with every published (external) port renumbered from ``first_port``; internal ports, which
    the images' health checks name, are kept. A run then never collides with another stack on this host."""
    from lakehouse_platform.config import load_platform

    spec = load_platform(platform)
    out = json.loads(json.dumps(platform))
    services = out.setdefault("services", {})
    port = first_port
    for name, service in spec.enabled_services().items():
        for port_name, spec_port in service.ports.items():
            if spec_port.external is None:
                continue
            ports = services.setdefault(name, {}).setdefault("ports", {})
            ports[port_name] = {"internal": spec_port.internal, "external": port}
            port += 1
    return out


@dataclass
class Started:
    """One container the run started: how long it took to be healthy (or to finish), and its outcome."""

    name: str
    kind: str  # server | job
    seconds: float
    ok: bool
    detail: str = ""
    exit_code: int | None = None  # a job's


@dataclass
class Report:
    """What a run did, in order."""

    started: list[Started] = field(default_factory=list)
    seconds: float = 0.0
    error: str = ""  # a resource that could not be made, or the program stopping

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.started) and not self.error

    def summary(self) -> str:
        lines = [f"{'ok ' if s.ok else 'BAD'} {s.kind:6} {s.name:32} {s.seconds:6.1f} s  {s.detail}".rstrip()
                 for s in self.started]
        if self.error:
            lines.append(f"BAD {self.error}")
        verdict = "all healthy" if self.ok else "FAILED"
        lines.append(f"{verdict}: {len(self.started)} containers in {self.seconds:.0f} s")
        return "\n".join(lines)


def _tar(uploads: list[dict[str, Any]]) -> bytes:
    """One tar of a container's uploads (content or a host file), with their parent directories."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        dirs: set[str] = set()
        for upload in uploads:
            path = upload["file"].lstrip("/")
            parts = path.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                directory = "/".join(parts[:i])
                if directory not in dirs:
                    dirs.add(directory)
                    info = tarfile.TarInfo(directory)
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    archive.addfile(info)
            data = upload["content"].encode() if upload.get("content") is not None \
                else Path(upload["source"]).read_bytes()
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), 0o755 if upload.get("executable") else 0o644
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _duration(value: str | None, default: float) -> float:
    """Seconds of a Go duration as the program writes them (``5s``, ``5m0s``, ``1h0m0s``)."""
    if not value:
        return default
    match = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?", value)
    if match is None or not any(match.groups()):
        raise ValueError(f"not a Go duration: {value!r}")
    hours, minutes, seconds = (float(g or 0) for g in match.groups())
    return hours * 3600 + minutes * 60 + seconds


class Engine:
    """Makes the Docker provider's resources on one engine, as registered; remembers what it made."""

    def __init__(self, client: Any, say: Callable[[str], None] = print, timeout_scale: float = 1.0):
        self.client = client
        self.say = say
        self.timeout_scale = timeout_scale
        self.made: list[tuple[str, Any]] = []  # (kind, what), in creation order
        self.report = Report()
        self.began = time.monotonic()

    def make(self, type_: str, name: str, inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """(id, outputs) of one registered resource, made for real where the provider would make it."""
        outputs = dict(inputs)
        if type_ == NETWORK:
            network = self.client.networks.create(inputs["name"], driver="bridge", labels={RUN_LABEL: "1"})
            self.made.append(("network", inputs["name"]))
            return network.id, outputs
        if type_ == VOLUME:
            self.client.volumes.create(inputs["name"], labels={RUN_LABEL: "1"})
            self.made.append(("volume", inputs["name"]))
            return inputs["name"], outputs
        if type_ in (REMOTE_IMAGE, BUILT_IMAGE):
            tag = inputs["name"] if type_ == REMOTE_IMAGE else inputs["imageName"]
            image_id = self.client.images.get(tag).id  # built beforehand (make lab-images); never pulled
            return image_id, {**outputs, "imageId": image_id, "repoDigest": image_id}
        if type_ == CONTAINER:
            started, container_id = self.start(name, inputs)
            self.report.started.append(started)
            self.report.seconds = time.monotonic() - self.began
            self.say(f"{'ok ' if started.ok else 'BAD'} {started.kind} {started.name} "
                     f"({started.seconds:.1f} s) {started.detail}".rstrip())
            if inputs.get("attach"):
                outputs.update({"exitCode": started.exit_code, "containerLogs": ""})
            return container_id, outputs
        if type_.startswith(DYNAMIC):
            # The program serialized it a moment ago in this process, as the engine would hand it to its host.
            provider = dill.loads(base64.b64decode(inputs[DYNAMIC_PROVIDER]))  # noqa: S301
            began = time.monotonic()
            result = provider.create(inputs)
            self.made.append(("dynamic", (provider, result.id, {**inputs, **(result.outs or {})})))
            self.say(f"ok  {type_.split(':')[-1]} {name} ({time.monotonic() - began:.1f} s)")
            return str(result.id), {**outputs, **(result.outs or {})}
        return f"{name}-id", outputs  # components and the rest: nothing to make

    def create(self, inputs: dict[str, Any]) -> str:
        """The container as the provider would create it (not started); returns its id."""
        from docker.types import Healthcheck, Mount

        api = self.client.api
        binds = {v["hostPath"]: {"bind": v["containerPath"], "mode": "ro" if v.get("readOnly") else "rw"}
                 for v in inputs.get("volumes") or []}
        mounts = [Mount(target=m["target"], source=m["source"], type=m.get("type", "volume"))
                  for m in inputs.get("mounts") or []]
        ports = {f"{p['internal']}/{p.get('protocol', 'tcp')}": (p.get("ip", "127.0.0.1"), p["external"])
                 for p in inputs.get("ports") or []}
        networks = inputs.get("networksAdvanced") or []
        memory = f"{inputs['memory']}m" if inputs.get("memory") else None
        swap = f"{inputs['memorySwap']}m" if inputs.get("memorySwap") else None
        restart = inputs.get("restart") or "no"
        host_config = api.create_host_config(
            binds=binds or None, mounts=mounts or None, port_bindings=ports or None, mem_limit=memory,
            memswap_limit=swap, restart_policy={"Name": restart} if restart != "no" else None,
            network_mode=inputs.get("networkMode") or (networks[0]["name"] if networks else None))
        health = inputs.get("healthcheck")
        healthcheck = Healthcheck(
            test=health["tests"], interval=int(_duration(health.get("interval"), 5) * 1e9),
            timeout=int(_duration(health.get("timeout"), 3) * 1e9), retries=health.get("retries", 3),
            start_period=int(_duration(health.get("startPeriod"), 0) * 1e9)) if health else None
        networking = api.create_networking_config({
            networks[0]["name"]: api.create_endpoint_config(aliases=networks[0].get("aliases"))}) if networks else None
        labels = {item["label"]: str(item["value"]) for item in inputs.get("labels") or []}
        created = api.create_container(
            image=inputs["image"], name=inputs["name"], command=inputs.get("command"),
            entrypoint=inputs.get("entrypoints"), environment=inputs.get("envs"), user=inputs.get("user") or None,
            labels={**labels, RUN_LABEL: "1"}, host_config=host_config, healthcheck=healthcheck,
            networking_config=networking, ports=[int(k.split("/")[0]) for k in ports] or None)
        container_id: str = created["Id"]
        self.made.append(("container", container_id))
        uploads = inputs.get("uploads") or []
        if uploads:
            api.put_archive(container_id, "/", _tar(uploads))
        return container_id

    def start(self, name: str, inputs: dict[str, Any]) -> tuple[Started, str]:
        began = time.monotonic()
        container_id = self.create(inputs)
        api = self.client.api
        api.start(container_id)
        if inputs.get("attach"):  # a job: to completion, exit 0
            result = api.wait(container_id, timeout=int(600 * self.timeout_scale))
            code = result.get("StatusCode")
            seconds = time.monotonic() - began
            if code == 0:
                return Started(name, "job", seconds, True, "exit 0", exit_code=0), container_id
            return (Started(name, "job", seconds, False, f"exit {code}:\n{self.tail(container_id)}", exit_code=code),
                    container_id)
        limit = float(inputs.get("waitTimeout") or 120) * self.timeout_scale
        while True:
            state = api.inspect_container(container_id)["State"]
            status = (state.get("Health") or {}).get("Status")
            seconds = time.monotonic() - began
            if status == "healthy" or (status is None and state.get("Running") and not inputs.get("healthcheck")):
                return Started(name, "server", seconds, True, "healthy"), container_id
            if not state.get("Running") and state.get("Status") in ("exited", "dead"):
                return Started(name, "server", seconds, False, f"exited {state.get('ExitCode')} before it was "
                                                               f"healthy:\n{self.tail(container_id)}"), container_id
            if seconds > limit:
                checks = (state.get("Health") or {}).get("Log") or []
                last = checks[-1].get("Output", "").strip()[-300:] if checks else ""
                return Started(name, "server", seconds, False, f"not healthy after {limit:.0f} s (last check: "
                                                               f"{last})\n{self.tail(container_id)}"), container_id
            time.sleep(1.0)

    def tail(self, container_id: str, lines: int = 30) -> str:
        logs = self.client.api.logs(container_id, tail=lines).decode(errors="replace").rstrip()
        return "\n".join(f"    {line}" for line in logs.splitlines()) or "    (no output)"

    def remove(self) -> list[str]:
        """Everything made, newest first: a dynamic resource by its own ``delete`` (while the containers it talks
        to still run), then containers, volumes and the network. Returns what could not be removed."""
        problems = []
        for kind, what in reversed(self.made):
            try:
                if kind == "dynamic":
                    provider, ident, props = what
                    provider.delete(ident, props)
                elif kind == "container":
                    self.client.api.remove_container(what, force=True, v=True)
                elif kind == "volume":
                    self.client.volumes.get(what).remove(force=True)
                else:
                    self.client.networks.get(what).remove()
            except Exception as exc:  # noqa: BLE001 - removal goes on; what stays is said
                problems.append(f"could not remove {kind} {what if kind != 'dynamic' else what[1]}: {exc}")
                self.say(problems[-1])
        self.made.clear()
        return problems


class EngineMocks(pulumi.runtime.Mocks):
    """Pulumi mocks that hand each registration to the ``Engine``, one at a time. After a failure nothing else is
    made (the rest is registered with its inputs as outputs), as ``pulumi up`` stops at a failed resource."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.lock = threading.Lock()

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        inputs = plain(dict(args.inputs))
        with self.lock:
            if not self.engine.report.ok:
                return f"{args.name}-id", inputs
            try:
                return self.engine.make(args.typ, args.name, inputs)
            except Exception as exc:  # noqa: BLE001 - said in the report; the program's registration goes on
                self.engine.report.error = f"{args.typ} {args.name}: {type(exc).__name__}: {exc}"
                self.engine.say(f"BAD {self.engine.report.error}")
                return f"{args.name}-id", inputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> Any:
        return {}


@dataclass
class Deployment:
    """A lab made by ``deploy``: its report, the stack's outputs (secrets as values), and its teardown."""

    report: Report
    outputs: dict[str, Any]
    engine: Engine

    def destroy(self) -> list[str]:
        """Remove everything the deployment made; returns what could not be removed."""
        return self.engine.remove()

    def left_in_engine(self) -> list[str]:
        """Containers, volumes and networks of a run still in the engine (after ``destroy``: none)."""
        client = self.engine.client
        labels = {"label": RUN_LABEL}
        return ([f"container {c.name}" for c in client.containers.list(all=True, filters=labels)]
                + [f"volume {v.name}" for v in client.volumes.list(filters=labels)]
                + [f"network {n.name}" for n in client.networks.list(filters=labels)])


def deploy(stack: str, platform: dict[str, Any], client: Any, resolver: Any = None,
           say: Callable[[str], None] = print, timeout_scale: float = 1.0) -> Deployment:
    """Run the program for ``stack`` with every resource made for real on ``client``'s engine (see the module)."""
    from pulumi.runtime import mocks as pulumi_mocks
    from pulumi.runtime.settings import SETTINGS
    from pulumi.runtime.stack import run_pulumi_func
    from pulumi.runtime.sync_await import _sync_await

    from lakehouse_platform import component

    engine = Engine(client, say, timeout_scale)
    pulumi.runtime.set_all_config({"lakehouse:platform": json.dumps(platform)}, [])
    # A run the program stopped leaves its pending registrations and its exception in the runtime (and their
    # tasks in the event loop): the next run in this process starts from none of them, in a loop of its own
    # (set before the mocks, which make the stack's futures in it), as pulumi's own ``mocks.test`` does.
    asyncio.set_event_loop(asyncio.new_event_loop())
    pulumi_mocks.set_mocks(EngineMocks(engine), project="lakehouse-platform", stack=stack, preview=False)
    SETTINGS.rpc_manager.clear()
    SETTINGS.outputs.clear()
    exported: dict[str, Any] = {}
    original_export = pulumi.export
    pulumi.export = exported.__setitem__  # type: ignore[assignment]
    try:  # whatever escapes (an interrupt, a bug here) takes down what was made: a run never leaves half a lab
        def body() -> None:  # this repository's program (__main__.py): the stack's one platform, its outputs
            spec = component.platform_config()
            component.export(component.LakehousePlatform(spec.name, spec, child_names="bare", resolver=resolver,
                                                         check_ports=False))

        try:
            _sync_await(run_pulumi_func(body))
        except Exception as exc:  # noqa: BLE001 - the program refused to go on (a job gate): said in the report
            if engine.report.ok:  # else it stopped at the failure already said (a gate of what was not made)
                engine.report.error = f"the program stopped: {exc}"
        outputs: dict[str, Any] = {}
        for key, value in exported.items():
            try:
                outputs[key] = _resolve(value)
            except Exception as exc:  # noqa: BLE001 - as pulumi up: an output of what was never made has no value
                outputs[key] = None
                if engine.report.ok:
                    engine.report.error = f"output {key}: {type(exc).__name__}: {exc}"
    except BaseException:
        engine.remove()
        raise
    finally:
        pulumi.export = original_export
    engine.report.seconds = time.monotonic() - engine.began
    return Deployment(engine.report, outputs, engine)


def _resolve(value: Any) -> Any:
    """An export's value, as ``pulumi stack output --json --show-secrets`` prints it."""
    from pulumi.runtime.sync_await import _sync_await

    if isinstance(value, pulumi.Output):
        value = _sync_await(value.future())
    if isinstance(value, dict):
        return {k: _resolve(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v) for v in value]
    return value


def run_stack(platform: dict[str, Any]) -> dict[str, Any]:
    """``platform`` as a runner's stack: its own resource names and published ports, never a user's lab."""
    run = lab_ports(platform, first_run_port())
    run["name"] = f"{platform.get('name', 'lakehouse')}-run"
    return run


def first_run_port(env: Mapping[str, str] = os.environ) -> int:
    """Where a run's published ports start: after the isolated stacks' blocks of ``LAKEHOUSE_PORT_BASE``."""
    from lakehouse_platform.control.isolated import BLOCK_SIZE, DEFAULT_PORT_BASE, STACKS

    return int(env.get("LAKEHOUSE_PORT_BASE", DEFAULT_PORT_BASE)) + len(STACKS) * BLOCK_SIZE

"""The lab's containers on a real engine, from the program's own rendered inputs (issue 19's CI stage).

The Pulumi Docker provider cannot be had here (docker-facts.md), so the lab is never ``pulumi up``-ed in CI.
Instead the program is evaluated under Pulumi mocks (``record``: only the provider is mocked; the spec, the
layers, the target and every renderer run for real) and each ``docker:Container`` it registers is started
with the Docker SDK for Python exactly as rendered, in the program's order: its image, command, entrypoint,
environment, uploads, bind mounts and volumes, ports on 127.0.0.1, memory, user, network and aliases, health
check. A job runs to completion and must exit 0 (its log tail otherwise); a server must reach ``healthy``
within its ``wait_timeout``. What the provider resolves (an image's id, a network's name, a sidecar's
``container:<id>``) is resolved the same way from the recorded resources.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CONTAINER = "docker:index/container:Container"
NETWORK = "docker:index/network:Network"
VOLUME = "docker:index/volume:Volume"
REMOTE_IMAGE = "docker:index/remoteImage:RemoteImage"
BUILT_IMAGE = "docker:index/image:Image"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"  # noqa: S105 - Pulumi's wire signature of a secret value
SECRET_KEY = "4dabf18193072939515e22adb298388d"  # noqa: S105 - the key it sits under
#: Label every container, network and volume the runner makes carries (so a run removes only its own).
RUN_LABEL = "lakehouse.lab-run"


@dataclass(frozen=True)
class Recorded:
    """One resource the program registered: type token, name, inputs (secrets unwrapped), in program order."""

    type: str
    name: str
    inputs: dict[str, Any]


def plain(value: Any) -> Any:
    """A recorded input with every secret unwrapped (the runner hands the container the value itself)."""
    if isinstance(value, dict):
        if value.get(SECRET_KEY) == SECRET_SIG:
            return plain(value.get("value"))
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)  # the mocks' wire form carries every number as a float
    return value


def lab_ports(platform: dict[str, Any], first_port: int) -> dict[str, Any]:
    """``platform`` with every published (external) port renumbered from ``first_port``; internal ports, which
    the images' health checks name, are kept. A run then never collides with another stack on this host."""
    from infra.config import load_platform

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


def provider_outputs(type_: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """What a provider computes on create that a container is handed, made for real: the platform's TLS
    certificates (the mocks' placeholder PEM would stop Trino's HTTPS server)."""
    if type_.endswith(":SelfSignedCertificate"):
        from infra.resources import certificate

        props = certificate._inputs(plain(dict(inputs)))
        return certificate.issue(props["common_name"], props["hosts"], props["days"])
    return {}


def record(stack: str, platform: dict[str, Any], resolver: Any = None) -> list[Recorded]:
    """The program evaluated under mocks for ``stack``: every resource it registers, in its order."""
    import pulumi
    from pulumi.runtime import mocks as pulumi_mocks
    from pulumi.runtime.stack import run_pulumi_func
    from pulumi.runtime.sync_await import _sync_await

    from infra import program

    found: list[Recorded] = []

    class Mocks(pulumi.runtime.Mocks):
        def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
            found.append(Recorded(args.typ, args.name, plain(dict(args.inputs))))
            outputs = dict(args.inputs)
            if args.typ == REMOTE_IMAGE:
                outputs["imageId"] = f"sha256:{args.name}"
            if args.typ == CONTAINER and args.inputs.get("attach"):
                outputs.update({"exitCode": 0, "containerLogs": ""})  # the runner checks the real ones
            outputs.update(provider_outputs(args.typ, args.inputs))
            return f"{args.name}-id", outputs

        def call(self, args: pulumi.runtime.MockCallArgs) -> Any:
            return {}

    pulumi.runtime.set_all_config({"lakehouse:platform": json.dumps(platform)}, [])
    pulumi_mocks.set_mocks(Mocks(), project="lakehouse-platform", stack=stack, preview=False)
    exported = pulumi.export
    pulumi.export = lambda *_: None
    try:
        def body() -> None:
            program.main(resolver=resolver, check_ports=False)

        _sync_await(run_pulumi_func(body))
    finally:
        pulumi.export = exported
    return found


@dataclass
class Started:
    """One container the run started: how long it took to be healthy (or to finish), and its outcome."""

    name: str
    kind: str  # server | job
    seconds: float
    ok: bool
    detail: str = ""


@dataclass
class Report:
    """What a run did, in order."""

    started: list[Started] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.started)

    def summary(self) -> str:
        lines = [f"{'ok ' if s.ok else 'BAD'} {s.kind:6} {s.name:32} {s.seconds:6.1f} s  {s.detail}".rstrip()
                 for s in self.started]
        verdict = "all healthy" if self.ok else "FAILED"
        lines.append(f"{verdict}: {len(self.started)} containers in {self.seconds:.0f} s")
        return "\n".join(lines)


class RunFailed(RuntimeError):
    """A container did not reach what the program waits for (healthy, or exit 0)."""


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
    return float(value.rstrip("s")) if value else default


class Runner:
    """Starts the recorded containers on one engine, in order; removes what it made (unless ``keep``)."""

    def __init__(self, resources: list[Recorded], client: Any, say: Callable[[str], None] = print):
        self.resources = resources
        self.client = client
        self.say = say
        self.images = {r.name: r.inputs["name"] for r in resources if r.type == REMOTE_IMAGE}
        self.images.update({r.name: r.inputs["imageName"] for r in resources if r.type == BUILT_IMAGE})
        self.ids: dict[str, str] = {}  # resource name -> real container id
        self.made: list[tuple[str, str]] = []  # (kind, id or name), in creation order

    def image_of(self, recorded: str) -> str:
        """The image a container input names: a RemoteImage's id resolves to its ``name``."""
        if recorded.startswith("sha256:") and recorded[len("sha256:"):] in self.images:
            return self.images[recorded[len("sha256:"):]]
        return recorded

    def run(self, timeout_scale: float = 1.0) -> Report:
        report = Report()
        started = time.monotonic()
        try:
            for resource in self.resources:
                if resource.type == NETWORK:
                    self.client.networks.create(resource.inputs["name"], driver="bridge",
                                                labels={RUN_LABEL: "1"})
                    self.made.append(("network", resource.inputs["name"]))
                elif resource.type == VOLUME:
                    self.client.volumes.create(resource.inputs["name"], labels={RUN_LABEL: "1"})
                    self.made.append(("volume", resource.inputs["name"]))
                elif resource.type == CONTAINER:
                    outcome = self.start(resource, timeout_scale)
                    report.started.append(outcome)
                    self.say(f"{'ok ' if outcome.ok else 'BAD'} {outcome.kind} {outcome.name} "
                             f"({outcome.seconds:.1f} s) {outcome.detail}".rstrip())
                    if not outcome.ok:
                        break
        finally:
            report.seconds = time.monotonic() - started
        return report

    def create(self, resource: Recorded) -> str:
        """The container as the provider would create it (not started); returns its id."""
        from docker.types import Healthcheck, Mount

        inputs = resource.inputs
        api = self.client.api
        binds = {v["hostPath"]: {"bind": v["containerPath"], "mode": "ro" if v.get("readOnly") else "rw"}
                 for v in inputs.get("volumes") or []}
        mounts = [Mount(target=m["target"], source=m["source"], type=m.get("type", "volume"))
                  for m in inputs.get("mounts") or []]
        ports = {f"{p['internal']}/{p.get('protocol', 'tcp')}": (p.get("ip", "127.0.0.1"), p["external"])
                 for p in inputs.get("ports") or []}
        network_mode = inputs.get("networkMode")
        if network_mode and network_mode.startswith("container:"):
            owner = network_mode[len("container:"):].removesuffix("-id")
            network_mode = f"container:{self.ids[owner]}"
        networks = inputs.get("networksAdvanced") or []
        memory = f"{inputs['memory']}m" if inputs.get("memory") else None
        swap = f"{inputs['memorySwap']}m" if inputs.get("memorySwap") else None
        restart = inputs.get("restart") or "no"
        host_config = api.create_host_config(
            binds=binds or None, mounts=mounts or None, port_bindings=ports or None, mem_limit=memory,
            memswap_limit=swap, restart_policy={"Name": restart} if restart != "no" else None,
            network_mode=network_mode or (networks[0]["name"] if networks else None))
        health = inputs.get("healthcheck")
        healthcheck = Healthcheck(
            test=health["tests"], interval=int(_duration(health.get("interval"), 5) * 1e9),
            timeout=int(_duration(health.get("timeout"), 3) * 1e9), retries=health.get("retries", 3),
            start_period=int(_duration(health.get("startPeriod"), 0) * 1e9)) if health else None
        networking = api.create_networking_config({
            networks[0]["name"]: api.create_endpoint_config(aliases=networks[0].get("aliases"))}) if networks else None
        labels = {item["label"]: str(item["value"]) for item in inputs.get("labels") or []}
        created = api.create_container(
            image=self.image_of(inputs["image"]), name=inputs["name"], command=inputs.get("command"),
            entrypoint=inputs.get("entrypoints"), environment=inputs.get("envs"), user=inputs.get("user") or None,
            labels={**labels, RUN_LABEL: "1"}, host_config=host_config, healthcheck=healthcheck,
            networking_config=networking, ports=[int(k.split("/")[0]) for k in ports] or None)
        container_id: str = created["Id"]
        self.made.append(("container", container_id))
        self.ids[resource.name] = container_id
        uploads = inputs.get("uploads") or []
        if uploads:
            api.put_archive(container_id, "/", _tar(uploads))
        return container_id

    def start(self, resource: Recorded, timeout_scale: float) -> Started:
        inputs = resource.inputs
        began = time.monotonic()
        container_id = self.create(resource)
        api = self.client.api
        api.start(container_id)
        if inputs.get("attach"):  # a job: to completion, exit 0
            result = api.wait(container_id, timeout=int(600 * timeout_scale))
            code = result.get("StatusCode")
            seconds = time.monotonic() - began
            if code == 0:
                return Started(resource.name, "job", seconds, True, "exit 0")
            return Started(resource.name, "job", seconds, False, f"exit {code}:\n{self.tail(container_id)}")
        limit = float(inputs.get("waitTimeout") or 120) * timeout_scale
        while True:
            state = api.inspect_container(container_id)["State"]
            status = (state.get("Health") or {}).get("Status")
            seconds = time.monotonic() - began
            if status == "healthy" or (status is None and state.get("Running") and not inputs.get("healthcheck")):
                return Started(resource.name, "server", seconds, True, "healthy")
            if not state.get("Running") and state.get("Status") in ("exited", "dead"):
                return Started(resource.name, "server", seconds, False,
                               f"exited {state.get('ExitCode')} before it was healthy:\n{self.tail(container_id)}")
            if seconds > limit:
                checks = (state.get("Health") or {}).get("Log") or []
                last = checks[-1].get("Output", "").strip()[-300:] if checks else ""
                return Started(resource.name, "server", seconds, False,
                               f"not healthy after {limit:.0f} s (last check: {last})\n{self.tail(container_id)}")
            time.sleep(1.0)

    def tail(self, container_id: str, lines: int = 30) -> str:
        logs = self.client.api.logs(container_id, tail=lines).decode(errors="replace").rstrip()
        return "\n".join(f"    {line}" for line in logs.splitlines()) or "    (no output)"

    def remove(self) -> None:
        """Everything the run made, newest first (containers, then volumes and the network)."""
        for kind, ident in reversed(self.made):
            try:
                if kind == "container":
                    self.client.api.remove_container(ident, force=True, v=True)
                elif kind == "volume":
                    self.client.volumes.get(ident).remove(force=True)
                else:
                    self.client.networks.get(ident).remove()
            except Exception as exc:  # noqa: BLE001 - removal goes on; what stays is said
                self.say(f"could not remove {kind} {ident}: {exc}")


def up(resources: list[Recorded], client: Any, keep: bool = False, say: Callable[[str], None] = print,
       timeout_scale: float = 1.0, state_dir: Path | None = None) -> Report:
    """Start every recorded container in order, to healthy; remove them afterwards unless ``keep``.

    ``state_dir``: the stack's state directory the containers bind-mount. A run that found none removes the one
    it made with its containers: left behind, it is a half-kept state the stack's own ``pulumi up`` refuses
    (``infra.targets.lab_state``).
    """
    made_state = state_dir is not None and not state_dir.exists()
    runner = Runner(resources, client, say)
    try:
        return runner.run(timeout_scale)
    finally:
        if not keep:
            runner.remove()
            if made_state and state_dir is not None:
                shutil.rmtree(state_dir, ignore_errors=True)


def first_run_port(env: Mapping[str, str] = os.environ) -> int:
    """Where a run's published ports start: after the isolated stacks' blocks of ``LAKEHOUSE_PORT_BASE``."""
    from infra.control.isolated import BLOCK_SIZE, DEFAULT_PORT_BASE, STACKS

    return int(env.get("LAKEHOUSE_PORT_BASE", DEFAULT_PORT_BASE)) + len(STACKS) * BLOCK_SIZE

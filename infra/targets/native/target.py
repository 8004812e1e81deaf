"""The native target: each service a real local process on 127.0.0.1, managed by ``LocalService``.

The same service specs as the docker target: each service module's ``native()`` renders the
process from the spec (ports, heap, catalog files, credentials as secrets), and the artifacts it
runs come from the registries through ``artifacts`` (cached, checksum-verified). Jobs that
containers need are folded into the processes here (see ``FOLDED_JOBS``).
"""

from __future__ import annotations

import resource
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import pulumi

from infra.layers.base import layer_labels
from infra.secrets_config import render
from infra.services import postgres, rest_fixture, seaweedfs, trino
from infra.services.base import NativeHost, NativePlan, ServiceContext
from infra.spec import PlatformSpec
from infra.spec.loader import PROJECT_ROOT, state_root
from infra.targets.base import DeployTarget
from infra.targets.native import artifacts as fetch
from infra.targets.native import local_service
from infra.targets.native.local_service import LocalService

if TYPE_CHECKING:
    from infra.layers.base import LayerComponent

# Container jobs that have no process of their own natively, and why.
FOLDED_JOBS = {
    seaweedfs.BUCKET_JOB: "a post-start step of seaweedfs creates the bucket",
    rest_fixture.INIT_JOB: "the fixture's home is created for the user it runs as",
}


def _open_files_hard_limit() -> int:
    return resource.getrlimit(resource.RLIMIT_NOFILE)[1]


# service name -> how to render its process from the spec and its host paths
PLANS: dict[str, Callable[[ServiceContext, NativeHost], NativePlan]] = {
    seaweedfs.NAME: seaweedfs.native,
    postgres.NAME: postgres.native,
    rest_fixture.NAME: rest_fixture.native,
    trino.NAME: lambda ctx, host: trino.native(ctx, host, _open_files_hard_limit()),
}


def resolve_artifacts(spec: PlatformSpec) -> dict[str, Any]:
    """What each enabled service runs, from the cache (fetched on first use), plus the JDKs."""
    enabled = spec.enabled_services()
    found: dict[str, Any] = {"java17": fetch.find_java(fetch.JAVA_FOR_JVM_SERVICES)}
    if seaweedfs.NAME in enabled:
        found[seaweedfs.NAME] = fetch.ensure_seaweedfs(enabled[seaweedfs.NAME].version)
    if postgres.NAME in enabled:
        found[postgres.NAME] = fetch.ensure_postgres(enabled[postgres.NAME].version.split(".")[0])
    if rest_fixture.NAME in enabled:
        found[rest_fixture.NAME] = fetch.ensure_rest_fixture(enabled[rest_fixture.NAME].version)
    if trino.NAME in enabled:
        svc = enabled[trino.NAME]
        found[trino.NAME] = fetch.ensure_trino(svc.native_version or svc.version)
        found["java24"] = fetch.find_java(fetch.JAVA_FOR_TRINO)
    found["spark_jars"] = fetch.ensure_spark_jars(spec.engines.spark, spec.engines.iceberg)
    found["duckdb"] = fetch.duckdb_extensions()
    return found


def port_conflicts(spec: PlatformSpec, state_dir: Path) -> list[str]:
    """Ports of native services held by a process that is not that service's own recorded process.

    Checked before any resource is registered, so a taken port stops `pulumi up`/`preview` with a
    clear message and nothing half-deployed; a second `pulumi up` finds the ports held by its own
    services (their pid files) and passes.
    """
    problems = []
    for name, service in spec.enabled_services().items():
        if name in FOLDED_JOBS:
            continue
        record = local_service.ProcessRecord.from_pid_file(state_dir / name / local_service.PID_FILE_NAME)
        ours = {p.pid for p in local_service.service_processes(record)} if record else set()
        for port_name, port in service.ports.items():
            number = port.external or port.internal
            if local_service.port_is_free(number):
                continue
            owner = local_service.port_owner_pid(number)
            if (owner in ours) if owner is not None else bool(ours):
                continue  # held by this service's own recorded process (a second `pulumi up`)
            who = local_service.port_owner(number) or "an unknown process"
            problems.append(
                f"services.{name}.ports.{port_name}: port {number} on 127.0.0.1 is already in use by {who}; "
                f"stop that process or give {name} another port in Pulumi.{pulumi.get_stack()}.yaml"
            )
    return problems


class NativeTarget(DeployTarget):
    """Builds the platform as local processes under ``<state root>/<stack>/`` (see ``state_root``)."""

    def __init__(self, spec: PlatformSpec, secrets: dict[str, pulumi.Output[str]],
                 artifacts: Callable[[PlatformSpec], dict[str, Any]] = resolve_artifacts,
                 check_ports: bool = True):
        super().__init__(spec, secrets)
        self.state_dir = state_root() / pulumi.get_stack()
        conflicts = port_conflicts(spec, self.state_dir) if check_ports else []
        if conflicts:
            raise pulumi.RunError("the native platform cannot start:\n" + "\n".join(f"  - {c}" for c in conflicts))
        self.artifacts = artifacts(spec)
        self.processes: dict[str, LocalService] = {}

    def host(self, name: str) -> NativeHost:
        java = self.artifacts.get("java24") if name == trino.NAME else self.artifacts.get("java17")
        return NativeHost(
            home=self.state_dir / name,
            artifact=self.artifacts.get(name),
            java_home=Path(java) if java else None,
            python=sys.executable,
            project_root=PROJECT_ROOT,
        )

    def build_layer(self, component: "LayerComponent", spec: PlatformSpec) -> dict[str, Any]:
        built: dict[str, Any] = {}
        for name, service in spec.services_of(component.layer).items():
            if name in FOLDED_JOBS:
                built[name] = FOLDED_JOBS[name]
                continue
            host = self.host(name)
            plan = PLANS[name](ServiceContext(spec, name), host)
            ports = [p.external or p.internal for p in service.ports.values()]
            process = LocalService(
                name,
                service=name,
                argv=plan.argv,
                cwd=str(host.home),
                data_dir=str(host.home),
                log_file=str(self.state_dir / "logs" / f"{name}.log"),
                health=plan.health,
                env={k: render(v, self.secrets) for k, v in plan.env.items()},
                files={k: render(v, self.secrets) for k, v in plan.files.items()},
                ports=ports,
                health_timeout_s=float(service.health.ready_timeout_s),
                stop_grace_s=plan.stop_grace_s,
                setup=plan.setup,
                post_start=plan.post_start,
                run_as_user=plan.run_as_user,
                ulimit_nofile=plan.ulimit_nofile,
                labels=layer_labels(spec, service.layer, name),
                memory_budget_bytes=service.memory_bytes,
                opts=pulumi.ResourceOptions(
                    parent=component,
                    depends_on=[self.processes[d] for d in service.depends_on if d in self.processes],
                ),
            )
            self.processes[name] = process
            built[name] = {"pid": process.pid, "log_file": process.log_file}
        return {"processes": built}

    def stack_outputs(self) -> dict[str, Any]:
        """Where each process lives, what was obtained, and what host clients load (Spark jars, DuckDB)."""
        services = {
            name: {
                "pid": process.pid,
                "data_dir": process.data_dir,
                "log_file": process.log_file,
                "memory_budget_bytes": self.spec.services[name].memory_bytes,
            }
            for name, process in self.processes.items()
        }
        obtained = {name: art.version for name, art in self.artifacts.items()
                    if hasattr(art, "version") and name in self.spec.services}
        spark_jars = self.artifacts["spark_jars"]
        duckdb = self.artifacts["duckdb"]
        obtained.update({
            "iceberg-spark-runtime": spark_jars.version,
            "duckdb": duckdb.duckdb_version,
        })
        return {
            "native": {
                "state_dir": str(self.state_dir),
                "services": services,
                "java_home": str(self.artifacts["java17"]),
                "spark_jars": [str(p) for p in spark_jars.classpath],
                "duckdb_extensions": duckdb.load_statements(),
                "obtained_versions": obtained,
                "notes": {name: list(art.notes) for name, art in self.artifacts.items()
                          if getattr(art, "notes", None)},
            }
        }

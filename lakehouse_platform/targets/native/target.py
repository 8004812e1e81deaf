"""The native target: each service a real local process on 127.0.0.1, managed by ``LocalService``.

The same service specs as the docker target: each definition's ``native`` renderer makes the process
from the spec (ports, heap, catalog files, credentials as secrets), and what it runs comes from the
artifact cache (looked up, never fetched: ``make artifacts`` fetches). Jobs that containers need are
folded into the processes here (``OnNative.folded``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pulumi

from lakehouse_platform.artifacts import runtime
from lakehouse_platform.artifacts.artifact import ArtifactError
from lakehouse_platform.artifacts.stack import host_clients
from lakehouse_platform.layers import LayerComponent, layer_labels
from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.paths import PACKAGE_PARENT, stack_state_dir
from lakehouse_platform.runtime.config import OperationsConfig
from lakehouse_platform.services.capabilities import DATABASE
from lakehouse_platform.services.catalogs import default_catalog
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.plans import NativeHost, StepHost
from lakehouse_platform.services.registry import registry
from lakehouse_platform.services.resolver import Resolver
from lakehouse_platform.services.secrets import render
from lakehouse_platform.targets import Built, TargetNotReady, declared_tables, dependencies
from lakehouse_platform.targets.deploy_steps import build_steps, export_steps
from lakehouse_platform.targets.native import local_service
from lakehouse_platform.targets.native import runtime as native_runtime
from lakehouse_platform.targets.native.local_service import LocalService
from lakehouse_platform.targets.state_owner import StateOwner, program_identity


def port_conflicts(spec: PlatformSpec, state_dir: Path, stack: str) -> list[str]:
    """Ports of native services held by a process that is not that service's own recorded process.

    Checked before any resource is registered, so a taken port stops `pulumi up`/`preview` with a
    clear message and nothing half-deployed; a second `pulumi up` finds the ports held by its own
    services (their pid files) and passes.
    """
    problems = []
    for name, service in spec.enabled_services().items():
        if registry()[name].native.folded:
            continue
        record = local_service.ProcessRecord.from_pid_file(state_dir / name / local_service.PID_FILE_NAME)
        ours = {p.pid for p in local_service.service_processes(record)} if record else set()
        for port_name, port in service.ports.items():
            number = port.bound
            if local_service.port_is_free(number):
                continue
            owner = local_service.port_owner_pid(number)
            if (owner in ours) if owner is not None else bool(ours):
                continue  # held by this service's own recorded process (a second `pulumi up`)
            who = local_service.port_owner(number) or "an unknown process"
            problems.append(
                f"services.{name}.ports.{port_name}: port {number} on 127.0.0.1 is already in use by {who}; "
                f"stop that process or give {name} another port in Pulumi.{stack}.yaml"
            )
    return problems

#: Every native process's environment, under its service's own (see ``NativeTarget.service``).
NATIVE_ENV = {"MALLOC_ARENA_MAX": "2"}


class NativeTarget:
    """Builds the platform as local processes under ``<state root>/<stack>/`` (see ``state_root``)."""

    def __init__(self, spec: PlatformSpec, secrets: dict[str, pulumi.Output[str]], resolver: Resolver,
                 check_ports: bool = True):
        self.spec = spec
        self.secrets = secrets
        stack = pulumi.get_stack()
        self.state_dir = stack_state_dir(stack, spec.state_dir)
        problems = port_conflicts(spec, self.state_dir, stack) if check_ports else []
        try:
            self.artifacts = resolver.resolve(spec)
        except ArtifactError as exc:
            problems.append(str(exc))
        if problems:
            raise TargetNotReady("the native platform cannot start:\n" + "\n".join(f"  - {p}" for p in problems))
        assert self.artifacts.runtime is not None  # the resolver refuses a native stack without it
        self.python = str(runtime.python_of(self.artifacts.runtime))
        self.code = native_runtime.code_dir(self.state_dir / "runtime")
        # Like the ports, the data on this host is the host's business: the unit tier (check_ports=False) skips both.
        refused = self.not_in_place() if check_ports else []
        if refused:
            raise TargetNotReady("a change that cannot be made in place is refused; nothing was changed:\n"
                                 + "\n".join(f"  - {r}" for r in refused))
        self.processes: dict[str, LocalService] = {}
        self.runtime: native_runtime.NativeRuntime | None = None

    def not_in_place(self) -> list[str]:
        """Every enabled service's refusal of a change its data on this host cannot survive (``in_place``)."""
        refused = []
        for name in self.spec.enabled_services():
            check = registry()[name].native.in_place
            if check is not None and (why := check(ServiceContext(self.spec, name), self.host(name))):
                refused.append(why)
        return refused

    def host(self, name: str) -> NativeHost:
        definition = registry()[name]
        return NativeHost(
            home=self.state_dir / name,
            artifact=self.artifacts.services.get(name),
            java_home=self.artifacts.java_home(definition.native.java) if definition.native.java else None,
            python=self.python,
            code_root=self.code,
            state_dir=self.state_dir,
            artifacts=dict(self.artifacts.services),
        )

    def build(self, layers: Mapping[Layer, LayerComponent]) -> Built:
        built = Built()
        # Who owns the state directory, recorded before anything is written there (state_owner); on destroy it goes
        # last, and a disposable stack's directory with it.
        owner = StateOwner(f"{self.spec.name}-state-owner", self.state_dir, program_identity(), self.spec.disposable,
                           opts=pulumi.ResourceOptions(parent=layers[Layer.STORAGE]))
        # The code the platform's own Python processes run, copied into the stack's state before any of them.
        self.runtime = native_runtime.NativeRuntime(
            layers[Layer.ORCHESTRATION].child_name("operations-runtime"), directory=str(self.state_dir / "runtime"),
            sources=native_runtime.code_sources(PACKAGE_PARENT),
            opts=pulumi.ResourceOptions(parent=layers[Layer.ORCHESTRATION], depends_on=[owner]))
        folded: dict[str, str] = {}
        for name in self.spec.start_order():
            definition = registry()[name]
            service = self.spec.services[name]
            if definition.native.folded:
                folded[name] = definition.native.folded
                built.layer(service.layer).setdefault("folded", {})[name] = definition.native.folded
                continue
            if definition.native.process is None:
                continue  # only deployment steps (the streaming job): built below
            process = self._process(layers[service.layer], name, folded)
            built.layer(service.layer).setdefault("processes", {})[name] = {"pid": process.pid,
                                                                             "log_file": process.log_file}
        # Steps that are not processes (the CDC source, connectors, the streaming job), once what they need is up.
        made = build_steps(self.spec, self.secrets, layers, self.processes,
                           lambda name: StepHost(state_dir=self.state_dir, artifact=self.artifacts.services.get(name)),
                           lambda name, deps: self._waits_for(name, deps, folded))
        # Declared tables through the default catalog, once it (and the store it writes to) is up.
        catalog = default_catalog(self.spec)  # clients reach a gated catalog through its gate
        needed = (*catalog.path, *self.spec.services[catalog.name].depends_on)
        waits = [self.processes[n] for n in needed if n in self.processes]
        tables = declared_tables.declare_tables(self.spec, self.secrets, layers[Layer.ORCHESTRATION], waits)
        if tables:
            built.layer(Layer.ORCHESTRATION)["tables"] = {ident: t.result for ident, t in tables.items()}
        built.outputs = self.stack_outputs()
        export_steps(self.spec, built, made)
        return built

    def _waits_for(self, name: str, depends_on: list[str], folded: dict[str, str]) -> list[str]:
        """What a resource waits for: a folded job's work is done by its service's own process.

        A member of that same service (Flink's task manager, beside its job manager) does the folded
        work itself, so for it the edge goes away instead.
        """
        family = registry()[name].job_of or name
        waits = []
        for dep in depends_on:
            if dep in folded:
                owner = registry()[dep].job_of or dep
                if owner == family:
                    continue
                dep = owner
            waits.append(dep)
        return [d for d in dict.fromkeys(waits) if d != name]

    def _process(self, component: LayerComponent, name: str, folded: dict[str, str]) -> LocalService:
        spec = self.spec
        service = spec.services[name]
        definition = registry()[name]
        assert definition.native.process is not None and service.health is not None
        host = self.host(name)
        plan = definition.native.process(ServiceContext(spec, name), host)
        waits_for = self._waits_for(name, service.depends_on, folded)
        process = LocalService(
            component.child_name(name),
            service=name,
            argv=plan.argv,
            cwd=str(host.home),
            data_dir=str(host.home),
            log_file=str(self.state_dir / "logs" / f"{name}.log"),
            health=plan.health,
            # The stack's own settings (services.<x>.env) under the plan's, as on docker and aws; under both, two
            # malloc arenas: glibc keeps up to 8 per core, 64 MB each, and a JVM's threads fill them and never hand
            # them back (the broker held four, 250 MB, beside a 320 MB heap).
            env={k: render(v, self.secrets) for k, v in {**NATIVE_ENV, **service.env, **plan.env}.items()},
            files={k: render(v, self.secrets) for k, v in plan.files.items()},
            ports=[p.bound for p in service.ports.values()],
            health_timeout_s=float(service.health.ready_timeout_s),
            stop_grace_s=plan.stop_grace_s,
            stop_signal=plan.stop_signal,
            setup=plan.setup,
            post_start=plan.post_start,
            pre_stop=plan.pre_stop,
            run_as_user=plan.run_as_user,
            ulimit_nofile=plan.ulimit_nofile,
            restart_policy=service.restart.model_dump(),
            log_rotation={"max_bytes": service.logs.max_bytes, "keep": service.logs.keep},
            labels=layer_labels(spec, service.layer, name),
            memory_budget_bytes=service.memory_bytes,
            opts=pulumi.ResourceOptions(parent=component, depends_on=[
                *([self.runtime] if self.runtime is not None else []),
                *dependencies(self.processes, name, waits_for)]),
        )
        self.processes[name] = process
        return process

    def stack_outputs(self) -> dict[str, Any]:
        """Where each process lives, what was obtained, and what host clients load (Spark jars, DuckDB)."""
        services = {
            name: {
                "pid": process.pid,
                "data_dir": process.data_dir,
                "log_file": process.log_file,
                "memory_budget_bytes": self.spec.services[name].memory_bytes,
                # The watchdog's view at the last up/refresh (live: <data_dir>/.watchdog.json).
                "restarts": process.restarts,
                "supervisor": process.supervisor_state,
                "restart_policy": self.spec.services[name].restart.model_dump(),
            }
            for name, process in self.processes.items()
        }
        found = self.artifacts
        obtained = {name: art.version for name, art in found.services.items()}
        notes = {name: list(art.notes) for name, art in found.services.items() if art.notes}
        native: dict[str, Any] = {
            "state_dir": str(self.state_dir),
            "services": services,
            "java_home": str(found.java_home(min(found.java))) if found.java else None,
            "java_homes": {str(major): str(home) for major, home in found.java.items()},
            "artifacts": {name: {"version": art.version, "path": str(art.path),
                                 "classpath": [str(p) for p in art.classpath], "main_class": art.main_class}
                          for name, art in found.services.items()},
            "obtained_versions": obtained,
            "notes": notes,
        }
        if found.spark_jars is not None:
            obtained["iceberg-spark-runtime"] = found.spark_jars.version
            native["spark_jars"] = [str(p) for p in found.spark_jars.classpath]
        if found.duckdb is not None:
            obtained["duckdb"] = found.duckdb.duckdb_version
            native["duckdb_extensions"] = found.duckdb.load_statements()
        outputs: dict[str, Any] = {"native": native}
        if (clients := host_clients(self.spec, found)) is not None:
            outputs["clients"] = clients  # the target-independent form of spark_jars, duckdb_extensions, versions
        if self.operations is not None:
            outputs["operations"] = self.operations.model_dump(mode="json")
        return outputs

    @property
    def operations(self) -> OperationsConfig | None:
        """The operations config as the host sees this stack (the CLI reads it from the outputs)."""
        from lakehouse_platform.services.context import Side
        from lakehouse_platform.services.operations_config import host_paths, operations_config

        database = registry().provider(self.spec, DATABASE)  # its client tools: the database server's own
        postgres = self.artifacts.services.get(database) if database else None
        return operations_config(self.spec, self.state_dir.name,
                                 host_paths(self.spec, str(self.state_dir), str(postgres.path) if postgres else None),
                                 Side.EXTERNAL)

"""The whole platform of one stack: target, seven layer contracts, services and their settings.

What the services are (their defaults, where each can run) comes from the service registry; the
loader passes it to validation as context (``PlacementContext``), so this model never imports the
services and the services import it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field, ValidationInfo, field_validator, model_validator

from lakehouse_platform.labels import LAYER_NAMES, Ownership
from lakehouse_platform.model.aws import FARGATE_SIZES, AwsSpec
from lakehouse_platform.model.base import Strict, Target
from lakehouse_platform.model.catalog import CatalogSpec, EngineSpec
from lakehouse_platform.model.flink import FlinkSpec
from lakehouse_platform.model.governance import (
    ACTIONS,
    EVERY_NAMESPACE,
    IDENTITY_NAME,
    READ_ONLY_ACTIONS,
    ROLE_GRANTS,
    Action,
    GovernanceSpec,
    IdentitySpec,
    Role,
    access_table,
    identity_config_keys,
    role_of,
)
from lakehouse_platform.model.governance import may as grants_allow
from lakehouse_platform.model.lab import LabSpec
from lakehouse_platform.model.layers import Layer, LayerSpec, of_layer
from lakehouse_platform.model.operations import (
    MaintenanceJob,
    ObservabilitySpec,
    RecoverySpec,
    cron_max_interval_minutes,
    eventbridge_cron,
)
from lakehouse_platform.model.retention import SnapshotRetention, TableBounds, TableDefaults, bounds
from lakehouse_platform.model.review import ReviewSpec
from lakehouse_platform.model.service import ServiceSpec
from lakehouse_platform.model.storage import StorageSpec
from lakehouse_platform.model.streams import IcebergSinkSpec, StreamsSpec
from lakehouse_platform.model.tables import TableSpec

#: A platform's name: the prefix of its resources' names (and the name of its component).
PLATFORM_NAME = re.compile(r"^[a-z][a-z0-9-]{1,30}$")


@dataclass(frozen=True)
class PlacementContext:
    """What the registry knows and the model checks: where each service cannot run, jobs, catalogs."""

    unavailable: Mapping[str, Mapping[Target, str]] = field(default_factory=dict)  # service -> target -> why
    job_of: Mapping[str, str] = field(default_factory=dict)  # job -> its service
    catalogs: tuple[str, ...] = ()  # services that are catalogs
    # Checks a service definition declares about the whole spec: each returns "key.path: what is wrong" lines.
    checks: tuple[Callable[[PlatformSpec], list[str]], ...] = ()
    gates: Mapping[str, str] = field(default_factory=dict)  # gate service -> the catalog it fronts
    secret_keys: Mapping[str, str] = field(default_factory=dict)  # a service's secret's stack config key -> service
    #: The per-identity secrets services declare: kind -> (its stack config key prefix, what it is, e.g. "Trino
    #: password"), so each identity's keys are checked like its own.
    identity_secrets: Mapping[str, tuple[str, str]] = field(default_factory=dict)


def _context(info: ValidationInfo) -> PlacementContext | None:
    context = info.context
    return context if isinstance(context, PlacementContext) else None


class PlatformSpec(Strict):
    """The whole platform of one stack: target, seven layer contracts, services and their settings."""

    target: Target = Field(description="Where the stack deploys: docker, aws or native.")
    name: str = Field(default="lakehouse", description="Resource name prefix: lowercase letters, digits and -, 2 to 31 "
                                                       "characters, starting with a letter.")
    disposable: bool = Field(
        default=False,
        description="Whether this stack may be disturbed: the disruptive probes (faults, restarts, the recovery drill, "
                    "commit storms, maintenance runs, CDC changes, alerts made to fire) run only against a disposable "
                    "stack (or with pytest's --disruptive=<this stack>); against any other they skip, saying why. "
                    "Exported as the `disposable` stack output. The lab and the isolated stacks of tests are "
                    "disposable; a stack anyone relies on is not.")
    layers: dict[Layer, LayerSpec] = Field(description="The seven layers' contracts.")
    services: dict[str, ServiceSpec] = Field(description="Every service, enabled or not.")
    storage: StorageSpec = Field(default_factory=StorageSpec, description="The warehouse bucket and its protection.")
    catalog: CatalogSpec = Field(default_factory=CatalogSpec,
                                 description="The default catalog and how the REST fixture keeps its pointers.")
    identities: dict[str, IdentitySpec] = Field(
        default_factory=dict, description="The platform's principals: lab store S3 identity (IAM role on aws), "
                                          "catalog token and Trino user each, with their grants per namespace "
                                          "(see governance).")
    governance: GovernanceSpec = Field(default_factory=GovernanceSpec,
                                       description="Which identity engines, the exporter and maintenance act as; the "
                                                   "namespaces grants may name; Trino's certificate.")
    engines: EngineSpec = Field(default_factory=EngineSpec,
                                description="Host-side engine versions and the certified Iceberg library.")
    flink: FlinkSpec = Field(default_factory=FlinkSpec, description="Flink's cluster settings and its streaming job.")
    maintenance: list[MaintenanceJob] = Field(default_factory=list, description="Scheduled maintenance.")
    tables: list[TableSpec] = Field(default_factory=list, description="Tables the platform creates and watches.")
    table_defaults: TableDefaults = Field(
        default_factory=TableDefaults,
        description="The table properties the platform sets (metadata kept, manifest merging, commit retries), "
                    "also as the catalog's defaults, and the retention of tables nothing else describes.")
    maintenance_speedup: int = Field(
        default=1, ge=1, le=10_000,
        description="The maintenance scheduler's clock runs this many times faster than real time: every "
                    "maintenance schedule fires this much more often, and every age (snapshot retention, orphan "
                    "removal's margin) is this much shorter. For benchmarks and drills on a disposable stack "
                    "(bench/bench_week.py runs a week of schedules in an hour with 168); 1 anywhere else.",
        json_schema_extra=of_layer(Layer.ORCHESTRATION))
    streams: StreamsSpec = Field(default_factory=StreamsSpec,
                                 description="Kafka topics and Connect connectors (deployed where Connect runs).")
    recovery: RecoverySpec = Field(default_factory=RecoverySpec,
                                   description="The recovery point and time the platform promises, and its backups.")
    observability: ObservabilitySpec = Field(default_factory=ObservabilitySpec,
                                             description="Signals from the metadata tables and how fast alerts fire.")
    aws: AwsSpec = Field(default_factory=AwsSpec, description="Region, sizes and counts of the cloud target.")
    lab: LabSpec = Field(default_factory=LabSpec, description="The lab's images (docker target): upstream or built.")
    review: ReviewSpec = Field(default_factory=ReviewSpec,
                               description="Change review: the teams' handles where pull requests are reviewed.")
    state_dir: str | None = Field(
        default=None, description="Where this stack keeps its data on the host (native: every service's data dir "
                                  "and log; the lab: its bind mounts), an absolute path. Default: <state root>/"
                                  "<stack>, the state root being $LAKEHOUSE_STATE_DIR, else /var/lib/lakehouse-"
                                  "platform as root, else ~/.local/state/lakehouse-platform: never inside a checkout. "
                                  "Not for aws.")

    @field_validator("state_dir")
    @classmethod
    def _state_dir(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("/"):
            raise ValueError(f"{value!r} is not an absolute path")
        return value

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not PLATFORM_NAME.match(value):
            raise ValueError(f"{value!r} is not a resource name prefix: lowercase letters, digits and -, 2 to 31 "
                             "characters, starting with a letter")
        return value

    @model_validator(mode="before")
    @classmethod
    def _aws_storage_region(cls, data: object) -> object:
        """On aws the bucket lives in aws.region: storage.region (what clients sign for) follows it when unset."""
        if not isinstance(data, dict) or str(getattr(data.get("target"), "value", data.get("target"))) != "aws":
            return data
        storage, cloud = data.get("storage") or {}, data.get("aws") or {}
        if isinstance(storage, dict) and isinstance(cloud, dict) and "region" not in storage:
            region = cloud.get("region", AwsSpec.model_fields["region"].default)
            data = {**data, "storage": {**storage, "region": region}}
        return data

    # The checks below run in this order, so the first thing a user reads is the real reason:
    # whether a service can run on the target at all comes before what depends on it.

    @model_validator(mode="after")
    def _lab_on_docker(self) -> PlatformSpec:
        if self.lab_built and self.target is not Target.DOCKER:
            raise ValueError(f"lab.images: 'built' makes the lab's container images; the {self.target.value} target "
                             "runs none of them: remove lab.images or use upstream")
        return self

    @model_validator(mode="after")
    def _state_dir_on_the_host(self) -> PlatformSpec:
        if self.state_dir is not None and self.target is Target.AWS:
            raise ValueError("state_dir: the aws target keeps no state on this host (S3, RDS): remove state_dir")
        return self

    @model_validator(mode="after")
    def _port_offset_on_docker(self) -> PlatformSpec:
        if self.lab.published_port_offset and self.target is not Target.DOCKER:
            raise ValueError(f"lab.published_port_offset: moves the lab's published ports; the {self.target.value} "
                             "target publishes none: remove it (natively, give each service its own ports)")
        return self

    @model_validator(mode="after")
    def _all_layers(self) -> PlatformSpec:
        missing = [name for name in LAYER_NAMES if Layer(name) not in self.layers]
        if missing:
            raise ValueError(f"layers: missing {', '.join(missing)}; all seven layers need a contract")
        return self

    @model_validator(mode="after")
    def _placement(self, info: ValidationInfo) -> PlatformSpec:
        """Every enabled service runs on this target; a refused job is reported as its service."""
        context = _context(info)
        if context is None:
            return self
        problems: dict[str, str] = {}
        for name in self.enabled_services():
            why = context.unavailable.get(name, {}).get(self.target)
            if why is None:
                continue
            owner = context.job_of.get(name)
            if owner is not None and context.unavailable.get(owner, {}).get(self.target) is not None:
                name, why = owner, context.unavailable[owner][self.target]  # the service the user enabled
            problems.setdefault(name, why)
        if problems:
            allowed = [n for n in self.services if self.target not in context.unavailable.get(n, {})
                       and n not in context.job_of]
            raise ValueError("\n".join(
                f"services.{name}.enabled: {name} does not run on the {self.target.value} target ({why}); "
                f"disable it. Allowed on {self.target.value}: {', '.join(allowed)}"
                for name, why in problems.items()
            ))
        return self

    @model_validator(mode="after")
    def _dependencies(self) -> PlatformSpec:
        enabled = self.enabled_services()
        for name, service in enabled.items():
            for dep in service.depends_on:
                if dep not in self.services:
                    raise ValueError(f"services.{name}.depends_on: unknown service {dep!r}; "
                                     f"allowed: {', '.join(sorted(self.services))}")
                if dep not in enabled:
                    raise ValueError(f"services.{name}.depends_on: {dep!r} is disabled in this stack; "
                                     f"enable services.{dep} or disable {name}")
        self.start_order()  # refuses a cycle
        return self

    @model_validator(mode="after")
    def _ports(self) -> PlatformSpec:
        """Published ports are unique; natively every port of every service binds 127.0.0.1, so all are."""
        seen: dict[int, str] = {}
        for name, service in self.enabled_services().items():
            for port_name, port in service.ports.items():
                if self.target is Target.NATIVE:
                    number, key = port.bound, "external" if port.external is not None else "internal"
                elif port.external is not None:
                    number, key = port.external, "external"
                else:
                    continue
                here = f"services.{name}.ports.{port_name}.{key}"
                if number in seen:
                    if self.target is Target.NATIVE:
                        raise ValueError(f"{here}: port {number} is already taken by {seen[number]}; natively every "
                                         "port of every service binds 127.0.0.1, so every port must be unique")
                    raise ValueError(f"{here}: port {number} is already taken by {seen[number]}; "
                                     "every external port must be unique")
                seen[number] = here
        return self

    @model_validator(mode="after")
    def _default_catalog(self, info: ValidationInfo) -> PlatformSpec:
        context = _context(info)
        enabled = self.enabled_services()
        catalogs = context.catalogs if context is not None else (self.catalog.default,)
        if self.catalog.default not in catalogs or self.catalog.default not in enabled:
            choices = [n for n in catalogs if n in enabled]
            raise ValueError(f"catalog.default: {self.catalog.default!r} is not an enabled catalog; allowed: "
                             + (", ".join(choices) or "none (enable one of " + ", ".join(catalogs) + ")"))
        return self

    @model_validator(mode="after")
    def _native_command(self) -> PlatformSpec:
        """A container command override means nothing natively: a local process runs its own argv (the artifact's
        java, classpath and main class), with no image entrypoint to hand the override to; refused, not ignored."""
        if self.target is not Target.NATIVE:
            return self
        for name, service in self.enabled_services().items():
            if service.command:
                raise ValueError(f"services.{name}.command: a container command override; natively a service runs "
                                 "its own process (no image entrypoint takes it): remove it from the native stack "
                                 "(services.<x>.env applies on every target)")
        return self

    @model_validator(mode="after")
    def _service_checks(self, info: ValidationInfo) -> PlatformSpec:
        """The checks service definitions declare (``ServiceDefinition.check``): their own settings, and what they
        need of the rest (a CDC source its database, declared maintenance its scheduler and engine, a recovery
        point its backups' schedule, the store an Admin identity)."""
        context = _context(info)
        problems = [line for check in (context.checks if context is not None else ()) for line in check(self)]
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @model_validator(mode="after")
    def _accelerated_clock(self) -> PlatformSpec:
        if self.maintenance_speedup == 1:
            return self
        if self.target is Target.AWS:
            raise ValueError("maintenance_speedup: the aws target schedules maintenance with EventBridge Scheduler, "
                             "which runs on real time: remove it (1)")
        if not self.disposable:
            raise ValueError(f"maintenance_speedup: {self.maintenance_speedup} expires snapshots and removes orphan "
                             f"files {self.maintenance_speedup} times sooner than their settings say: only on a "
                             "disposable stack (disposable: true), for benchmarks and drills")
        return self

    @model_validator(mode="after")
    def _retention_fits_the_write_rate(self) -> PlatformSpec:
        """A declared table (or any other) may not gain more snapshots between two expiry runs than its retention
        holds; the streams' tables are checked by their services' checks, where those run."""
        problems = [b.problem for b in self.table_bounds().values() if b.problem]
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @model_validator(mode="after")
    def _unique_tables(self) -> PlatformSpec:
        seen: set[str] = set()
        for index, table in enumerate(self.tables):
            if table.identifier in seen:
                raise ValueError(f"tables.{index}: {table.identifier} is declared twice")
            seen.add(table.identifier)
        return self

    @model_validator(mode="after")
    def _identities(self) -> PlatformSpec:
        """Every use names an identity with exactly the rights it needs: a read-only identity that could
        write, or a writer that is the platform's admin, would fail open."""
        for name in self.identities:
            if not IDENTITY_NAME.match(name):
                raise ValueError(f"identities.{name}: {name!r} is not an identity name: lowercase letters, digits "
                                 "and -, 2 to 31 characters, starting with a letter")
        for use, wanted in (("writer", "writer"), ("reader", "reader")):
            name = getattr(self.governance, use)
            if name not in self.identities:
                raise ValueError(f"governance.{use}: {name!r} is not an identity; allowed: "
                                 + (", ".join(self.identities) or "none (declare identities)"))
            actions = self.identities[name].actions
            if use == "reader" and not set(actions) <= READ_ONLY_ACTIONS:
                extra = ", ".join(sorted(set(actions) - READ_ONLY_ACTIONS))
                raise ValueError(f"governance.reader: identity {name!r} has {extra}; "
                                 "the read-only identity may hold only Read and List")
            if role_of(actions) != wanted:
                raise ValueError(f"governance.{use}: identity {name!r} has actions {', '.join(actions)}, which make it "
                                 f"a {role_of(actions)}; a {wanted} needs "
                                 + ("Write and not Admin" if use == "writer" else "Read and List only"))
            if "Read" not in actions:
                raise ValueError(f"governance.{use}: identity {name!r} has actions {', '.join(actions)} without Read; "
                                 + ("a writer reads the table's metadata before every commit" if use == "writer"
                                    else "the read-only identity reads through every engine") + ": add Read")
        return self

    @model_validator(mode="after")
    def _own_credentials(self, info: ValidationInfo) -> PlatformSpec:
        """Every identity's access key and every stack config key of its secrets are its own.

        Two identities sharing a token key share a token, and the catalog gate, which keys identities by
        their token, gives it the rights of whichever it read last: a reader's token could write. The same
        holds for an access key at the store, and for a key another service's secret is read from.
        """
        context = _context(info)
        service_keys = context.secret_keys if context is not None else {}
        kinds = dict(context.identity_secrets) if context is not None else {}
        what = {"secret_config_key": "secret key", "catalog_token_config_key": "catalog token",
                **{f"secret_keys.{kind}": held for kind, (_, held) in kinds.items()}}
        for name, identity in self.identities.items():
            unknown = [kind for kind in identity.secret_keys if kind not in kinds]
            if unknown:
                raise ValueError(f"identities.{name}.secret_keys.{unknown[0]}: no enabled or disabled service declares "
                                 f"a per-identity secret {unknown[0]!r}; allowed: " + (", ".join(kinds) or "none"))
        access_keys: dict[str, str] = {}
        config_keys: dict[str, tuple[str, str]] = {}  # stack config key -> (identity, what it holds)
        for name, identity in self.identities.items():
            if identity.access_key in access_keys:
                raise ValueError(
                    f"identities.{name}.access_key: {identity.access_key!r} is also the access key of identities."
                    f"{access_keys[identity.access_key]}; each identity needs its own: the store knows an identity by "
                    "its access key, so one would act with the other's rights")
            access_keys[identity.access_key] = name
            for key_field, key in identity_config_keys(name, identity, {k: p for k, (p, _) in kinds.items()}).items():
                named = (key_field.removeprefix("secret_keys.") in identity.secret_keys
                         if key_field.startswith("secret_keys.") else getattr(identity, key_field) is not None)
                default = "" if named else " (by default)"
                here = f"identities.{name}.{key_field}: {key!r}{default}"
                if key in config_keys:
                    owner, held = config_keys[key]
                    why = ("one value would be two credentials of it" if owner == name else
                           "a shared secret is one credential, and whoever holds it has both identities' rights "
                           "(a reader's token could write)")
                    raise ValueError(f"{here} is also the stack config key of identities.{owner}'s {held}; each "
                                     f"secret of an identity ({', '.join(dict.fromkeys(what.values()))}) needs a key "
                                     f"of its own: {why}")
                if key in service_keys:
                    raise ValueError(f"{here} is the stack config key of services.{service_keys[key]}'s own secret; "
                                     "name a key of this identity's own")
                config_keys[key] = (name, what[key_field] + default)
        return self

    @model_validator(mode="after")
    def _grants(self) -> PlatformSpec:
        """Grants name namespaces the platform knows; the platform's identity is whole; the operations' identities
        hold what their jobs need and no more (an exporter that could write, maintenance as Admin, fail open)."""
        known = self.known_namespaces()
        for name, identity in self.identities.items():
            for namespace in identity.grants or {}:
                if namespace != EVERY_NAMESPACE and namespace not in known:
                    raise ValueError(
                        f"identities.{name}.grants.{namespace}: {namespace!r} is not a namespace the platform knows; "
                        f"known: {', '.join(known) or 'none'} (the declared tables' namespaces and "
                        "governance.namespaces): add it to governance.namespaces, or use '*' for every namespace")
            if self.role_of_identity(name) == "platform" and self.grants_of(name) != ROLE_GRANTS["platform"]:
                raise ValueError(
                    f"identities.{name}.grants: {name} is the platform's own identity (Admin at the store, which no "
                    "grant narrows): it runs the catalog and creates the declared tables, so it manages every "
                    "namespace; leave its grants unset and give narrower rights to an identity of their own")
        for use in ("exporter", "maintenance"):
            name = getattr(self.governance, use)
            if name not in self.identities:
                raise ValueError(f"governance.{use}: {name!r} is not an identity; allowed: "
                                 + (", ".join(self.identities) or "none (declare identities)"))
            if self.role_of_identity(name) == "platform":
                raise ValueError(f"governance.{use}: {name!r} is the platform's own identity (Admin at the store); "
                                 f"the {use} runs as the least identity that does its job: name one without Admin")
        exporter = self.governance.exporter
        writes = [ns for ns, actions in self.access_of(exporter).items() if "write" in actions or "manage" in actions]
        if writes:
            raise ValueError(f"governance.exporter: identity {exporter!r} may write ({', '.join(writes)}); the "
                             "exporter only reads: name an identity that writes nowhere (e.g. governance.reader)")
        watched = [t.namespace for t in self.tables]
        if self.observability.discover_tables:  # it watches every table it finds
            watched += [*known, EVERY_NAMESPACE]
        blind = [ns for ns in dict.fromkeys(watched) if not self.may(exporter, "read", ns)]
        if blind:
            raise ValueError(f"governance.exporter: identity {exporter!r} may not read {', '.join(blind)}, which the "
                             "exporter watches; grant it read there, or name an identity that reads them")
        maintainer = self.governance.maintenance
        needed = [t.namespace for t in self.tables if t.maintenance]
        if any(job.scope == "all" for job in self.maintenance):  # a job with scope all reaches every table
            needed += [*known, EVERY_NAMESPACE]
        if self.maintenance:
            short = [ns for ns in dict.fromkeys(needed)
                     if not (self.may(maintainer, "read", ns) and self.may(maintainer, "write", ns))]
            if short:
                raise ValueError(f"governance.maintenance: identity {maintainer!r} may not write {', '.join(short)}, "
                                 "where maintenance rewrites and expires ('*': any other namespace, which a job "
                                 "with scope all reaches); grant it read and write there, or name an identity that "
                                 "has them")
        return self

    @model_validator(mode="after")
    def _gates_kept(self, info: ValidationInfo) -> PlatformSpec:
        """A catalog with no authentication of its own is only reachable through its gate: disabling the gate
        would hand every client, with or without credentials, the whole catalog."""
        context = _context(info)
        if context is None:
            return self
        enabled = self.enabled_services()
        for gate, catalog in context.gates.items():
            if catalog in enabled and gate not in enabled:
                raise ValueError(f"services.{gate}.enabled: {catalog} has no authentication of its own and {gate} is "
                                 f"what refuses clients without a valid token; keep {gate} enabled while {catalog} is")
        return self

    @model_validator(mode="after")
    def _fits_aws(self) -> PlatformSpec:
        """Cloud-only checks: sizes and forms AWS accepts."""
        if self.target is not Target.AWS:
            return self
        cloud = self.aws
        if self.storage.region != cloud.region:
            raise ValueError(
                f"storage.region: {self.storage.region!r} differs from aws.region {cloud.region!r}; on aws the bucket "
                "lives in aws.region, so leave storage.region unset or make them equal"
            )
        memories = FARGATE_SIZES.get(cloud.trino_worker_cpu)
        if memories is None:
            raise ValueError(
                f"aws.trino_worker_cpu: {cloud.trino_worker_cpu} is not a Fargate CPU size; allowed: "
                + ", ".join(map(str, FARGATE_SIZES))
            )
        if cloud.trino_worker_memory_mb not in memories:
            raise ValueError(
                f"aws.trino_worker_memory_mb: {cloud.trino_worker_memory_mb} does not fit {cloud.trino_worker_cpu} CPU "
                f"units on Fargate; allowed: {memories[0]} to {memories[-1]} in steps of {memories[1] - memories[0]}"
            )
        if cloud.kafka_msk and cloud.msk_broker_count % cloud.availability_zones:
            raise ValueError(
                f"aws.msk_broker_count: {cloud.msk_broker_count} brokers cannot spread evenly over "
                f"{cloud.availability_zones} availability zones; use a multiple of {cloud.availability_zones}"
            )
        if self.storage.replica_bucket and len(f"{self.storage.bucket}-replica") > 63:
            raise ValueError(
                f"storage.bucket: {self.storage.bucket!r} leaves no room for its replica "
                f"'{self.storage.bucket}-replica' (63 characters at most); shorten the bucket name"
            )
        for index, job in enumerate(self.maintenance):
            try:
                eventbridge_cron(job.schedule)
            except ValueError as exc:
                raise ValueError(f"maintenance.{index}.schedule: {exc}") from None
        return self

    def expiry_gap_s(self, declared: TableSpec | None) -> tuple[float | None, float | None]:
        """(the longest real gap between two runs of the expire job covering a table, that job's age ceiling in
        seconds): ``declared`` is the table's declaration, None for any other table. (None, None): no job covers
        it. Of several jobs, the most frequent bounds the gap."""
        covering = [job for job in self.maintenance if job.action == "expire_snapshots"
                    and (job.scope == "all" or declared is not None)
                    and (declared is None or "expire_snapshots" in declared.maintenance)]
        if not covering:
            return None, None
        job = min(covering, key=lambda j: cron_max_interval_minutes(j.schedule))
        gap = cron_max_interval_minutes(job.schedule) * 60 / self.maintenance_speedup
        return gap, (job.older_than_days * 86400.0 if job.older_than_days is not None else None)

    def table_bounds(self, flink_job: bool = False, sinks: bool = False) -> dict[str, TableBounds]:
        """Each table the stack knows (declared; with ``flink_job`` the streaming job's, with ``sinks`` each
        Iceberg sink's: where those run, which the registry knows) with its retention resolved, then ``*``: any
        other table. A table whose write rate its retention cannot hold carries its ``problem``."""
        found: dict[str, TableBounds] = {}
        defaults = self.table_defaults

        def add(identifier: str, owner: str, key: str, retention: SnapshotRetention, interval: int | None,
                declared: TableSpec | None = None) -> None:
            if identifier in found:
                return
            gap, ceiling = self.expiry_gap_s(declared)
            found[identifier] = bounds(identifier, owner, key, retention, interval, gap, ceiling,
                                       self.maintenance_speedup)

        for index, table in enumerate(self.tables):
            add(table.identifier, table.owner, f"tables.{index}.retention", table.retention, table.commit_interval_s,
                table)
        streams_owner = self.layers[Layer.COMPUTE].owner
        if flink_job:
            job = self.flink.job
            add(job.table, streams_owner, "flink.job.retention", job.retention, job.checkpoint_interval_s)
        for index, connector in enumerate(self.streams.connectors if sinks else ()):
            if isinstance(connector, IcebergSinkSpec):
                add(connector.table, streams_owner, f"streams.connectors.{index}.retention", connector.retention,
                    connector.commit_interval_s)
        add("*", "", "table_defaults.retention", defaults.retention, defaults.commit_interval_s)
        return found

    def table_properties(self, identifier: str = "*", bounds: Mapping[str, TableBounds] | None = None) -> dict[str,
                                                                                                                 str]:
        """The Iceberg properties the platform sets on a table (``table_defaults``' and the table's retention age):
        on a declared table, on the streams' tables their writers create, as the catalog's defaults (``*``)."""
        found = bounds if bounds is not None else self.table_bounds()
        return {**self.table_defaults.properties(), **(found.get(identifier) or found["*"]).properties()}

    def declaration(self, table: TableSpec) -> dict[str, Any]:
        """A declared table as the deployment applies it (``lakehouse_platform.runtime.tables``): its spec, with the
        platform's table properties under its own (which win)."""
        return {**table.model_dump(mode="json"),
                "properties": {**self.table_properties(table.identifier), **table.properties}}

    def identities_of(self, role: Role) -> list[str]:
        """The identities with a role (platform, writer, reader), in declaration order."""
        return [name for name, identity in self.identities.items() if role_of(identity.actions) == role]

    def role_of_identity(self, name: str) -> Role:
        return role_of(self.identities[name].actions)

    def grants_of(self, identity: str) -> dict[str, tuple[Action, ...]]:
        """An identity's grants as declared, else its role's (``ROLE_GRANTS``); actions in ``ACTIONS`` order."""
        declared = self.identities[identity].grants
        if declared is None:
            return dict(ROLE_GRANTS[self.role_of_identity(identity)])
        return {ns: tuple(a for a in ACTIONS if a in actions) for ns, actions in declared.items()}

    def may(self, identity: str, action: Action, namespace: str) -> bool:
        """Whether ``identity`` may take ``action`` on ``namespace``: the decision every enforcer is rendered from."""
        return grants_allow(self.grants_of(identity), action, namespace)

    def known_namespaces(self) -> list[str]:
        """The namespaces grants may name: the declared tables', then ``governance.namespaces``, each once."""
        return list(dict.fromkeys([*(t.namespace for t in self.tables), *self.governance.namespaces]))

    def access_of(self, identity: str) -> dict[str, tuple[Action, ...]]:
        """What ``identity`` may do on each known namespace and on any other (``*``), as ``may`` decides."""
        return access_table(self.grants_of(identity), self.known_namespaces())

    def owners_without_writer(self) -> list[tuple[str, str, str]]:
        """Declared tables whose owner team has no identity that may write the table's namespace:
        (table, owner, namespace). The review flags them: a team answers for what it cannot write."""
        gaps = []
        for table in self.tables:
            team = [name for name, identity in self.identities.items() if identity.team == table.owner]
            if not any(self.may(name, "write", table.namespace) for name in team):
                gaps.append((table.identifier, table.owner, table.namespace))
        return gaps

    @property
    def platform_identity(self) -> str | None:
        """The platform's own identity (the first with Admin)."""
        found = self.identities_of("platform")
        return found[0] if found else None

    def enabled_services(self) -> dict[str, ServiceSpec]:
        """The services this stack runs, in declaration order."""
        return {name: svc for name, svc in self.services.items() if svc.enabled}

    def start_order(self) -> list[str]:
        """Enabled services with every service after what it depends on (declaration order otherwise)."""
        enabled = self.enabled_services()
        order: list[str] = []
        state: dict[str, str] = {}

        def visit(name: str, path: tuple[str, ...]) -> None:
            if state.get(name) == "done":
                return
            if state.get(name) == "visiting":
                cycle = " -> ".join((*path[path.index(name):], name))
                raise ValueError(f"services.{name}.depends_on: dependency cycle {cycle}")
            state[name] = "visiting"
            for dep in enabled[name].depends_on:
                if dep in enabled:
                    visit(dep, (*path, name))
            state[name] = "done"
            order.append(name)

        for name in enabled:
            visit(name, ())
        return order

    def services_of(self, layer: Layer) -> dict[str, ServiceSpec]:
        """The enabled services of one layer."""
        return {name: svc for name, svc in self.enabled_services().items() if svc.layer is layer}

    def owner_of(self, service: str) -> str:
        """Who owns a service: its own owner, else its layer's owner."""
        svc = self.services[service]
        return svc.owner or self.layers[svc.layer].owner

    def ownership(self) -> Ownership:
        """The stack's ownership table as the owner rule reads it (``labels``): labels and policies share it."""
        return Ownership(
            layer_owners={layer.value: contract.owner for layer, contract in self.layers.items()},
            service_layers={name: svc.layer.value for name, svc in self.services.items()},
            service_owners={name: svc.owner for name, svc in self.services.items()},
        )

    @property
    def lab_built(self) -> bool:
        """Whether the lab runs images built here (``lab.images: built``; the model allows it on docker only)."""
        return self.lab.images == "built"

    @property
    def runs_native_artifacts(self) -> bool:
        """Whether this stack's services run the native target's artifacts: natively, or in the lab's built images."""
        return self.target is Target.NATIVE or self.lab_built

    def pin_of(self, service: str) -> str:
        """The version this stack's target runs for a service (native and built images run the artifacts, aws its
        managed service's version, where they lack the pin)."""
        svc = self.services[service]
        if self.target is Target.AWS and svc.aws_version:
            return svc.aws_version
        return svc.native_version if self.runs_native_artifacts and svc.native_version else svc.version

    def bundles_of(self, service: str) -> dict[str, str]:
        """The libraries this stack's build of a service ships (native and built images may differ)."""
        svc = self.services[service]
        if self.runs_native_artifacts and svc.native_bundles is not None:
            return dict(svc.native_bundles)
        if self.target is Target.AWS and svc.aws_bundles is not None:
            return dict(svc.aws_bundles)
        return dict(svc.bundles)

    def version_manifest(self) -> dict[str, str]:
        """The pins of this stack: every enabled service, what each ships, the host engines, the Iceberg library."""
        manifest = {name: self.pin_of(name) for name in self.enabled_services()}
        for name in self.enabled_services():
            manifest.update({f"{library} in {name}": version for library, version in self.bundles_of(name).items()})
        manifest.update(
            {
                "iceberg": self.engines.iceberg,
                "pyiceberg": self.engines.pyiceberg,
                "pyspark": self.engines.spark,
                "duckdb": self.engines.duckdb_native if self.target is Target.NATIVE else self.engines.duckdb,
            }
        )
        return manifest

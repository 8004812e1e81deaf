"""A new service, a new catalog and a new engine are each one package and one line in the registry: proved on a copy.

The repository's tracked files are copied into a temporary directory, and three made-up packages are added there,
each with its one line in ``lakehouse_platform/services/registry.py``'s ``MODULES``:

- ``quack``, a SQL gateway (its definition and its aws half): ports, a secret, a per-identity secret, a client
  profile, a check of the spec, aws ingress, an aws part and probe hooks;
- ``heron``, an Iceberg REST catalog (its definition and its aws half): a ``CatalogRole`` that every engine renders
  in its own terms, on every target (on aws a catalog server behind the catalogs' load balancer), and the stack's
  default catalog on the lab and native stacks, which every client of the default catalog then reaches;
- ``duckling``, a SQL engine that provides ``SQL_ENGINE`` with runtime code of its own (its definition and its
  ``runtime.py``): where Trino is off, the maintenance runs through it, loaded by the name its config carries.

The copy's program is then evaluated for the lab, native and cloud stacks under Pulumi mocks
(``tests/support/harness.py``, in a process of its own that imports only the copy), each piece must appear in the
graph and the outputs, and a maintenance run goes through duckling's runtime code. ``git status`` in the copy shows
the three packages and the three registry lines, and nothing else.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.support import REPO_ROOT

QUACK = {
    "__init__.py": '''
        """Quack: a made-up SQL gateway (compute), written by tests/services/test_a_new_service.py."""
        ''',
    "definition.py": '''
        """Quack: a made-up SQL gateway (compute), written by tests/services/test_a_new_service.py.

        Its whole definition: defaults, the container, the local process, its ECS task and aws part, a secret of its
        own, a token per identity, the profile its clients get, a check of the spec, what the aws network admits to
        it and what the smoke check asks of it. It reaches the store by capability, never by name.
        """

        from __future__ import annotations

        from typing import Any

        from lakehouse_platform.services.capabilities import STORE
        from lakehouse_platform.services.context import ServiceContext, Side, url
        from lakehouse_platform.services.definition import (
            AwsIngress,
            AwsPart,
            ClientProfile,
            Governance,
            IdentitySecret,
            Lazy,
            OnAws,
            OnDocker,
            OnNative,
            ProbeHooks,
            SecretSpec,
            ServiceDefinition,
        )
        from lakehouse_platform.placeholders import secret
        from lakehouse_platform.services.plans import ContainerHost, ContainerPlan, EcsPlan, NativeHost, NativePlan
        from lakehouse_platform.services.profiles import host_profiles
        from lakehouse_platform.services.registry import registry
        from lakehouse_platform.model import Layer, PlatformSpec, Target

        NAME = "quack"
        ADMIN_KEY = SecretSpec("quack-admin-key", "quackAdminKey", "lab-quack-admin-key")
        TOKEN = IdentitySecret("quack-token", "quackToken", "Quack token", needed_on_aws=False,
                               values=lambda identity: {"quack_user": identity})

        DEFAULT = {
            "layer": "compute",
            "role": "a made-up SQL gateway",
            "version": "1.0.0",
            "image": "example/quack:1.0.0",
            "ports": {"http": {"internal": 18765, "external": 18765}},
            "health": {"kind": "http", "port": "http", "path": "/", "command": ["CMD", "true"]},
            "memory": "64MiB",
        }


        def store_env(ctx: ServiceContext) -> dict[str, str]:
            store = registry().provider(ctx.spec, STORE)
            return {"QUACK_STORE": ctx.url(store, "s3")} if store else {}


        def container(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
            return ContainerPlan(command=["quack", "--port", str(ctx.listen_port("http"))],
                                 env={"QUACK_ADMIN_KEY": secret(ADMIN_KEY.name), **store_env(ctx)})


        def native(ctx: ServiceContext, host: NativeHost) -> NativePlan:
            port = ctx.listen_port("http")
            return NativePlan(argv=[host.python, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                              env={"QUACK_ADMIN_KEY": secret(ADMIN_KEY.name), **store_env(ctx)},
                              health={"kind": "http", "url": ctx.url(NAME, "http", path="/"), "expect_status": 200})


        def ecs(ctx: ServiceContext) -> EcsPlan:
            return EcsPlan(env={"QUACK_ADMIN_KEY": secret(ADMIN_KEY.name)}, command=["quack"])


        def client(spec: PlatformSpec, side: Side) -> dict[str, str]:
            return {"url": url(spec, NAME, "http", side), "user": "{quack_user}", "token": "{quack_token}"}


        def check(spec: PlatformSpec) -> list[str]:
            if NAME in spec.enabled_services() and spec.services[NAME].memory_bytes < 32 * 1024 * 1024:
                return [f"services.{NAME}.memory: quack needs at least 32MiB"]
            return []


        def smoke(outputs: Any) -> list[tuple[str, str, bool, str]]:
            profile = host_profiles(outputs).get(NAME)
            return [("compute", "Quack answers", True, profile["url"])] if profile else []


        SERVICES = (
            ServiceDefinition(
                name=NAME, default=DEFAULT, summary="a made-up SQL gateway", title="Quack",
                docker=OnDocker(container=container), native=OnNative(process=native),
                aws=OnAws(task=ecs, ingress=(AwsIngress("engines", "http", "engines", "Quack clients"),)),
                governance=Governance(secrets=(ADMIN_KEY,), identity_secrets=(TOKEN,)),
                profile=ClientProfile(NAME, client=client), check=check, probes=ProbeHooks(smoke=smoke),
            ),
        )

        AWS_PARTS = (
            AwsPart(name=NAME, layer=Layer.COMPUTE, build=Lazy("lakehouse_platform.services.quack.aws:build"),
                    enabled=lambda spec: NAME in spec.enabled_services(),
                    log_sources=Lazy("lakehouse_platform.services.quack.aws:log_sources")),
        )
        ''',
    "aws.py": '''
        """Quack on aws: one Fargate service in the compute layer."""

        from __future__ import annotations

        from typing import Any

        import pulumi

        from lakehouse_platform.components.aws.ecs import FargateService, FargateServiceArgs
        from lakehouse_platform.model import Layer, PlatformSpec
        from lakehouse_platform.services.aws_parts import Foundation, PartComponent, container_of
        from lakehouse_platform.services.context import ServiceContext, Side, url
        from lakehouse_platform.services.quack.definition import ecs

        NAME = "quack"
        LAYER = Layer.COMPUTE


        class QuackService(PartComponent):
            def __init__(self, foundation: Foundation) -> None:
                ctx, spec, gov = foundation.ctx, foundation.spec, foundation.gov
                super().__init__("platform:aws:QuackService", f"{spec.name}-{NAME}", ctx, LAYER)
                self.url = url(spec, NAME, "http", Side.INTERNAL)
                self.deployed = FargateService(f"{spec.name}-{NAME}", FargateServiceArgs(
                    ctx=ctx, layer=LAYER, governance=gov, logs=foundation.logs, cluster=foundation.cluster(LAYER),
                    container=container_of(ctx, NAME, ecs(ServiceContext(spec, NAME))), cpu=256, memory=512,
                    desired_count=1,
                    security_group=gov.network.sg("engines").id, min_healthy_percent=0, tags=ctx.tags(LAYER, NAME),
                    secret_refs=gov.secret_refs), opts=pulumi.ResourceOptions(parent=self))
                self.register_outputs({"url": self.url})

            def stack_outputs(self) -> dict[str, Any]:
                return {"quack_url": self.url}


        def build(foundation: Foundation) -> QuackService:
            return QuackService(foundation)


        def log_sources(spec: PlatformSpec) -> dict[str, str | None]:
            return {NAME: None}
        ''',
}

HERON = {
    "__init__.py": '''
        """Heron: a made-up Iceberg REST catalog (catalog), written by tests/services/test_a_new_service.py."""
        ''',
    "definition.py": '''
        """Heron: a made-up Iceberg REST catalog on every target, its tables under ``heron/`` of the warehouse.

        Its whole definition: defaults, the container, the local process, its ECS task and aws part (a catalog server
        behind the catalogs' load balancer), and its role as a catalog: where its REST API is, the warehouse, where
        it lays tables out. Engines render its client properties in their own terms.
        """

        from __future__ import annotations

        from lakehouse_platform.model import Layer, PlatformSpec
        from lakehouse_platform.services.context import ServiceContext
        from lakehouse_platform.services.definition import (
            AwsPart,
            CatalogRole,
            Lazy,
            OnAws,
            OnDocker,
            OnNative,
            ServiceDefinition,
        )
        from lakehouse_platform.services.plans import ContainerHost, ContainerPlan, EcsPlan, NativeHost, NativePlan

        NAME = "heron"
        PATH = "/catalog"
        DEFAULT = {
            "layer": "catalog",
            "role": "a made-up Iceberg REST catalog",
            "enabled": False,
            "version": "0.1.0",
            "image": "example/heron:0.1.0",
            # On aws every catalog server shares the load balancer's one listener: the REST port of the others.
            "ports": {"http": {"internal": 8181, "external": 18181}},
            "health": {"kind": "http", "port": "http", "path": "/health", "command": ["CMD", "true"]},
            "memory": "128MiB",
        }


        def tables(spec: PlatformSpec) -> str:
            return f"s3://{spec.storage.bucket}/heron/"


        def container(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
            return ContainerPlan(command=["heron", "serve", "--port", str(ctx.listen_port("http"))])


        def native(ctx: ServiceContext, host: NativeHost) -> NativePlan:
            port = ctx.listen_port("http")
            return NativePlan(argv=[host.python, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                              health={"kind": "http", "url": ctx.url(NAME, "http", path="/"), "expect_status": 200})


        def ecs(ctx: ServiceContext) -> EcsPlan:
            return EcsPlan(command=["heron", "serve", "--port", str(ctx.listen_port("http"))])


        SERVICES = (
            ServiceDefinition(
                name=NAME, default=DEFAULT, summary="a made-up Iceberg REST catalog", title="Heron",
                docker=OnDocker(container=container), native=OnNative(process=native), aws=OnAws(task=ecs),
                catalog=CatalogRole(path=PATH, engine_name=NAME, warehouse=tables, tables_location=tables),
            ),
        )

        AWS_PARTS = (
            AwsPart(name=NAME, layer=Layer.CATALOG, build=Lazy("lakehouse_platform.services.heron.aws:build"),
                    enabled=lambda spec: NAME in spec.enabled_services(),
                    log_sources=Lazy("lakehouse_platform.services.heron.aws:log_sources")),
        )
        ''',
    "aws.py": '''
        """Heron on aws: a catalog server behind the catalogs' load balancer."""

        from __future__ import annotations

        from lakehouse_platform.model import PlatformSpec
        from lakehouse_platform.services.aws_catalogs import CatalogServer
        from lakehouse_platform.services.aws_parts import Foundation

        NAME = "heron"


        def build(foundation: Foundation) -> CatalogServer:
            return CatalogServer(foundation, NAME)


        def log_sources(spec: PlatformSpec) -> dict[str, str | None]:
            return {NAME: None}
        ''',
}

DUCKLING = {
    "__init__.py": '''
        """Duckling: a made-up SQL engine (compute), written by tests/services/test_a_new_service.py."""
        ''',
    "definition.py": '''
        """Duckling: a made-up SQL engine that provides ``SQL_ENGINE``: where Trino is off, maintenance runs through it.

        Its whole definition: defaults, the container, the local process (not on aws), a password per identity, the
        client profile the capability's contract asks for, and its runtime code (``runtime.py``).
        """

        from __future__ import annotations

        from typing import Any

        from lakehouse_platform.model import PlatformSpec
        from lakehouse_platform.services.capabilities import SQL_ENGINE
        from lakehouse_platform.services.context import ServiceContext, Side, url
        from lakehouse_platform.services.definition import (
            ClientProfile,
            Governance,
            IdentitySecret,
            OnAws,
            OnDocker,
            OnNative,
            ServiceDefinition,
        )
        from lakehouse_platform.services.plans import ContainerHost, ContainerPlan, NativeHost, NativePlan

        NAME = "duckling"
        PASSWORD = IdentitySecret("duckling-password", "ducklingPassword", "Duckling password", needed_on_aws=False)
        DEFAULT = {
            "layer": "compute",
            "role": "a made-up SQL engine",
            "enabled": False,
            "version": "0.0.1",
            "image": "example/duckling:0.0.1",
            "ports": {"http": {"internal": 18766, "external": 18766}},
            "health": {"kind": "http", "port": "http", "path": "/", "command": ["CMD", "true"]},
            "memory": "64MiB",
        }


        def container(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
            return ContainerPlan(command=["duckling", "--port", str(ctx.listen_port("http"))])


        def native(ctx: ServiceContext, host: NativeHost) -> NativePlan:
            port = ctx.listen_port("http")
            return NativePlan(argv=[host.python, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                              health={"kind": "http", "url": ctx.url(NAME, "http", path="/"), "expect_status": 200})


        def client(spec: PlatformSpec, side: Side) -> dict[str, Any]:
            host, port = url(spec, NAME, "http", side).removeprefix("http://").rsplit(":", 1)
            return {"host": host, "port": int(port), "http_scheme": "http"}


        SERVICES = (
            ServiceDefinition(
                name=NAME, default=DEFAULT, summary="a made-up SQL engine", title="Duckling",
                docker=OnDocker(container=container), native=OnNative(process=native),
                aws=OnAws(unavailable="a made-up engine of the lab and the host"),
                governance=Governance(identity_secrets=(PASSWORD,)), provides=(SQL_ENGINE,),
                profile=ClientProfile(NAME, client=client), runtime="lakehouse_platform.services.duckling.runtime",
            ),
        )
        ''',
    "runtime.py": '''
        """Duckling's runtime code: maintenance's actions as Duckling's calls, run by appending them to its log."""

        from __future__ import annotations

        import os
        from collections.abc import Callable

        from lakehouse_platform.runtime.config import Credentials, EngineAccess


        def statement(action: str, catalog: str, identifier: str,
                      threshold_s: float | None) -> tuple[str, dict[str, str]]:
            return f"CALL duckling.{action}('{catalog}.{identifier}', {int(threshold_s or 0)})", {}


        def executor(access: EngineAccess, creds: Credentials) -> Callable[[str, dict[str, str]], None]:
            def execute(sql: str, session: dict[str, str]) -> None:
                with open(os.environ["DUCKLING_LOG"], "a") as log:
                    log.write(f"{access.user}@{access.host}:{access.port}/{access.catalog} {sql}\\n")

            return execute
        ''',
}

PACKAGES = {"quack": QUACK, "heron": HERON, "duckling": DUCKLING}

#: What runs in the copy, with only the copy on its path: each stack's program under mocks, summarised as JSON, and a
#: maintenance run through the native stack's SQL engine.
EVALUATE = '''
import json, os, sys, tempfile
from types import SimpleNamespace
from tests.support.harness import CLOUD_SECRETS, run_program
from tests.support.stacks import stack_platform
from lakehouse_platform.config import load_platform
from lakehouse_platform.runtime import maintenance
from lakehouse_platform.runtime.config import Credentials
from lakehouse_platform.services.context import Side
from lakehouse_platform.services.operations_config import host_paths, operations_config
from lakehouse_platform.services.registry import registry
from lakehouse_platform.services.trino.config import catalogs as trino_catalogs


def with_made_up(stack):
    platform = stack_platform(stack)
    services = platform.setdefault("services", {})
    services["heron"] = {"enabled": True}
    if stack != "cloud":  # heron the default catalog, duckling the SQL engine (Trino off)
        platform.setdefault("catalog", {})["default"] = "heron"
        services["duckling"] = {"enabled": True}
        services["trino"] = {"enabled": False}
    return platform


found = {}
for stack in ("lab", "native", "cloud"):
    extra = {**CLOUD_SECRETS, "lakehouse:quackAdminKey": "test-quack-admin-key"} if stack == "cloud" else None
    platform = with_made_up(stack)
    run = run_program(stack, platform, extra_config=extra)
    out = run.outputs
    made_up = ("quack", "heron", "duckling")
    found[stack] = {
        "resources": sorted(f"{r.type} {r.name}" for r in run.resources if any(m in r.name for m in made_up)),
        "inputs": {f"{r.type} {r.name}": r.inputs for r in run.resources if r.name in ("quack", "lakehouse-quack")
                   and r.type in ("docker:index/container:Container", "pulumi-python:dynamic/native:LocalService")},
        "ingress": sorted((r.name, r.inputs.get("fromPort"), r.inputs.get("description")) for r in run.resources
                          if r.type.endswith("SecurityGroupIngressRule") and r.inputs.get("fromPort") == 18765),
        "endpoints": out["endpoints"].get("quack"),
        "profile": out["profiles"]["host"].get("quack"),
        "pyiceberg": out["profiles"]["host"].get("pyiceberg"),
        "catalog": out.get("observability", {}).get("catalog"),
        "catalog_urls": out.get("catalog_urls"),
        "identities": {k: sorted(v) for k, v in out["credentials"]["value"]["identities"].items()},
        "quack_url": out.get("quack_url"),
        # Its own smoke hook only: the others would reach for services this evaluation never started.
        "smoke": list(registry()["quack"].probes.smoke(out)),
        "trino_catalogs": sorted(trino_catalogs(load_platform(platform))) if stack == "cloud" else None,
    }

# Maintenance on the native stack: the operations config names the SQL engine's runtime code, which runs the action.
spec = load_platform(with_made_up("native"))
state = tempfile.mkdtemp()
os.environ["DUCKLING_LOG"] = log = os.path.join(state, "duckling.log")
config = operations_config(spec, "native", host_paths(spec, state), Side.EXTERNAL)
table = SimpleNamespace(metadata=SimpleNamespace(snapshots=[]), current_snapshot=lambda: None,
                        location=lambda: "s3://warehouse/heron/shop/orders")
catalog = SimpleNamespace(load_table=lambda identifier: table)
store = SimpleNamespace(get_paginator=lambda name: SimpleNamespace(paginate=lambda **page: [{"Contents": []}]))
run = maintenance.run_action(config, Credentials(), "expire_snapshots", "shop.orders", catalog=catalog, s3=store)
found["maintenance"] = {"engine": config.engine.model_dump() if config.engine else None, "status": run.status,
                        "run_engine": run.engine, "statement": run.detail.get("statement"),
                        "detail": run.detail, "executed": open(log).read().splitlines() if os.path.exists(log) else []}
print(json.dumps(found, default=str))
'''


def git(copy: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=copy, capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's tracked files in a new git repository, committed as they are."""
    target = tmp_path_factory.mktemp("repo")
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True
                             ).stdout.decode().split("\0")
    for name in filter(None, tracked):
        source = REPO_ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    git(target, "init", "-q")
    git(target, "add", "-A")
    git(target, "-c", "user.name=test", "-c", "user.email=test@example.invalid", "commit", "-q", "-m", "as it is")
    return target


@pytest.fixture(scope="module")
def added(copy: Path) -> dict[str, Any]:
    """The made-up packages added to the copy (each one package, one registry line); its programs' summary."""
    for name, files in PACKAGES.items():
        package = copy / "lakehouse_platform" / "services" / name
        package.mkdir()
        for file, body in files.items():
            (package / file).write_text(textwrap.dedent(body).lstrip())
    registry = copy / "lakehouse_platform" / "services" / "registry.py"
    text = registry.read_text()
    last = '    "lakehouse_platform.services.catalog_backup.definition",\n'
    assert last in text
    lines = "".join(f'    "lakehouse_platform.services.{name}.definition",\n' for name in PACKAGES)
    registry.write_text(text.replace(last, last + lines))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PULUMI_CONFIG")}
    done = subprocess.run([sys.executable, "-c", EVALUATE], cwd=copy, env={**env, "PYTHONPATH": str(copy)},
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("name", list(PACKAGES))
def test_the_copy_changes_only_by_the_package_and_its_registry_line(copy: Path, added: dict[str, Any],
                                                                     name: str) -> None:
    status = git(copy, "status", "--porcelain", "--untracked-files=all").splitlines()
    mine = sorted(line for line in status if f"/services/{name}/" in line)
    assert mine == sorted(f"?? lakehouse_platform/services/{name}/{file}" for file in PACKAGES[name]), status
    others = [line for line in status if line not in mine and not any(f"/services/{n}/" in line for n in PACKAGES)]
    assert others == [" M lakehouse_platform/services/registry.py"], status
    changed = [line for line in git(copy, "diff", "-U0", "lakehouse_platform/services/registry.py").splitlines()
               if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))]
    assert [line for line in changed if f".{name}." in line] == [f'+    "lakehouse_platform.services.{name}.definition",']
    assert len(changed) == len(PACKAGES), "one line per package, nothing else"


# -- the catalog ---------------------------------------------------------------------------------------------


def test_the_made_up_catalog_is_the_default_catalog_every_client_reaches(added: dict[str, Any]) -> None:
    for stack, host in (("lab", "localhost"), ("native", "127.0.0.1")):
        assert added[stack]["catalog"] == "heron"
        assert added[stack]["pyiceberg"]["uri"] == f"http://{host}:18181/catalog"
    assert "docker:index/container:Container heron" in added["lab"]["resources"]
    assert "pulumi-python:dynamic/native:LocalService heron" in added["native"]["resources"]


def test_on_aws_the_made_up_catalog_is_a_catalog_server_every_engine_renders(added: dict[str, Any]) -> None:
    cloud = added["cloud"]
    assert "platform:aws:CatalogServer lakehouse-heron" in cloud["resources"]
    assert {"aws:ecs/service:Service lakehouse-heron", "aws:lb/listenerRule:ListenerRule lakehouse-heron",
            "aws:iam/role:Role lakehouse-heron-task"} <= set(cloud["resources"])
    assert cloud["catalog_urls"]["heron"] == "http://heron.lakehouse.internal:8181/catalog"
    assert "heron" in cloud["trino_catalogs"], "Trino renders a catalog file for every catalog of the stack"


# -- the engine ----------------------------------------------------------------------------------------------


def test_the_made_up_engine_runs_the_maintenance_through_its_own_runtime_code(added: dict[str, Any]) -> None:
    run = added["maintenance"]
    engine = run["engine"]
    assert engine["runtime"] == "lakehouse_platform.services.duckling.runtime" and engine["engine"] == "duckling"
    assert (engine["host"], engine["port"], engine["catalog"]) == ("127.0.0.1", 18766, "heron")
    assert run["status"] == "ok" and run["run_engine"] == "duckling", run["detail"]
    statement = "CALL duckling.expire_snapshots('heron.shop.orders', 604800)"
    assert run["statement"] == statement
    assert run["executed"] == [f"writer@127.0.0.1:18766/heron {statement}"]
    assert "pulumi-python:dynamic/native:LocalService duckling" in added["native"]["resources"]


# -- the service ---------------------------------------------------------------------------------------------


def test_the_lab_runs_it_as_a_container_with_its_secret_and_profile(added: dict[str, Any]) -> None:
    lab = added["lab"]
    assert "docker:index/container:Container quack" in lab["resources"]
    container = lab["inputs"]["docker:index/container:Container quack"]
    assert any(str(e).startswith("QUACK_STORE=http://seaweedfs:") for e in _plain(container["envs"]))
    assert lab["endpoints"] == {"http": {"internal": "quack:18765", "external": "localhost:18765"}}
    assert lab["profile"] == {"url": "http://localhost:18765", "user": "{quack_user}", "token": "{quack_token}"}
    for identity in ("platform", "writer", "reader"):
        assert {"quack_token", "quack_user"} <= set(lab["identities"][identity])
    assert lab["smoke"] == [["compute", "Quack answers", True, "http://localhost:18765"]]


def test_natively_it_is_a_local_process_on_its_port(added: dict[str, Any]) -> None:
    native = added["native"]
    process = native["inputs"]["pulumi-python:dynamic/native:LocalService quack"]
    assert process["argv"][-4:] == ["http.server", "18765", "--bind", "127.0.0.1"]
    assert native["endpoints"]["http"]["internal"] == "127.0.0.1:18765"
    assert native["profile"]["url"] == "http://127.0.0.1:18765"
    assert {"quack_token", "quack_user"} <= set(native["identities"]["reader"])


def test_on_aws_its_part_and_ingress_are_built(added: dict[str, Any]) -> None:
    cloud = added["cloud"]
    assert "platform:aws:QuackService lakehouse-quack" in cloud["resources"]
    assert {"aws:ecs/service:Service lakehouse-quack", "aws:cloudwatch/logGroup:LogGroup lakehouse-logs-quack",
            "aws:secretsmanager/secret:Secret lakehouse-quack-admin-key"} <= set(cloud["resources"])
    assert [(name, port, why) for name, port, why in cloud["ingress"]] == [
        ("lakehouse-engines-in-18765-from-engines", 18765, "Quack clients")]
    assert cloud["quack_url"] == "http://quack.lakehouse.internal:18765"
    assert cloud["profile"] == {"url": "http://quack.lakehouse.internal:18765", "user": "{quack_user}",
                                "token": "{quack_token}"}


def _plain(value: Any) -> list[Any]:
    """A resolved input list, whether or not Pulumi marked it secret."""
    if isinstance(value, dict) and "value" in value:
        value = value["value"]
    return [(_plain(v)[0] if isinstance(v, dict) else v) for v in value] if isinstance(value, list) else [value]

"""A new service is one package and one line in the registry: proved on a copy of the repository.

The repository's tracked files are copied into a temporary directory; a made-up service ("quack", a SQL
gateway) is added there as one package, ``lakehouse_platform/services/quack/``, with its ports, a secret, a per-identity
secret, a client profile, a check of the spec, aws ingress, an aws part and probe hooks, plus one line in
``lakehouse_platform/services/registry.py``'s ``MODULES``. The copy's program is then evaluated for the lab, native and
cloud stacks under Pulumi mocks (``tests/support/harness.py``, in a process of its own that imports only the
copy), and each of its pieces must appear in the graph and the outputs. ``git status`` in the copy shows the
package and the registry line, and nothing else.
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

PACKAGE = {
    "__init__.py": '''
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
            IdentitySecret,
            Lazy,
            ProbeHooks,
            SecretSpec,
            ServiceDefinition,
        )
        from lakehouse_platform.services.placeholders import secret
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
                container=container, native=native, ecs=ecs, secrets=(ADMIN_KEY,), identity_secrets=(TOKEN,),
                profile=ClientProfile(NAME, client=client), check=check,
                aws_ingress=(AwsIngress("engines", "http", "engines", "Quack clients"),),
                probes=ProbeHooks(smoke=smoke),
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

        from lakehouse_platform.services.context import Side, url
        from lakehouse_platform.model import Layer, PlatformSpec
        from lakehouse_platform.targets.aws.context import AwsComponent
        from lakehouse_platform.targets.aws.ecs import FargateService, FargateServiceConfig, container_of
        from lakehouse_platform.targets.aws.foundation import Foundation

        NAME = "quack"
        LAYER = Layer.COMPUTE


        class QuackService(AwsComponent):
            def __init__(self, foundation: Foundation) -> None:
                ctx, spec, gov = foundation.ctx, foundation.spec, foundation.gov
                super().__init__("platform:aws:QuackService", f"{spec.name}-{NAME}", ctx, LAYER)
                self.url = url(spec, NAME, "http", Side.INTERNAL)
                self.deployed = FargateService(
                    FargateServiceConfig(container=container_of(ctx, NAME), cpu=256, memory=512, desired_count=1,
                                         security_group=gov.network.sg("engines").id, min_healthy_percent=0,
                                         tags=ctx.tags(LAYER, NAME)),
                    ctx, LAYER, gov, foundation.logs, foundation.cluster(LAYER), gov.secret_refs, parent=self)
                self.register_outputs({"url": self.url})

            def stack_outputs(self) -> dict[str, Any]:
                return {"quack_url": self.url}


        def build(foundation: Foundation) -> QuackService:
            return QuackService(foundation)


        def log_sources(spec: PlatformSpec) -> dict[str, str | None]:
            return {NAME: None}
        ''',
}

#: What runs in the copy, with only the copy on its path: each stack's program under mocks, summarised as JSON.
EVALUATE = '''
import json, sys
from tests.support.harness import CLOUD_SECRETS, run_program
from tests.support.stacks import stack_platform
from lakehouse_platform.control import commands

found = {}
for stack in ("lab", "native", "cloud"):
    extra = {**CLOUD_SECRETS, "lakehouse:quackAdminKey": "test-quack-admin-key"} if stack == "cloud" else None
    run = run_program(stack, stack_platform(stack), extra_config=extra)
    out = run.outputs
    found[stack] = {
        "resources": sorted(f"{r.type} {r.name}" for r in run.resources if "quack" in r.name),
        "inputs": {f"{r.type} {r.name}": r.inputs for r in run.resources if r.name in ("quack", "lakehouse-quack")
                   and r.type in ("docker:index/container:Container", "pulumi-python:dynamic/native:LocalService")},
        "ingress": sorted((r.name, r.inputs.get("fromPort"), r.inputs.get("description")) for r in run.resources
                          if r.type.endswith("SecurityGroupIngressRule") and r.inputs.get("fromPort") == 18765),
        "endpoints": out["endpoints"].get("quack"),
        "profile": out["profiles"]["host"].get("quack"),
        "identities": {k: sorted(v) for k, v in out["credentials"]["value"]["identities"].items()},
        "quack_url": out.get("quack_url"),
        # Its own smoke hook only: the others would reach for services this evaluation never started.
        "smoke": list(__import__("lakehouse_platform.services", fromlist=["registry"]).registry()["quack"].probes.smoke(out)),
    }
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
    """The made-up service added to the copy (one package, one registry line); its programs' summary."""
    package = copy / "lakehouse_platform" / "services" / "quack"
    package.mkdir()
    for name, body in PACKAGE.items():
        (package / name).write_text(textwrap.dedent(body).lstrip())
    registry = copy / "lakehouse_platform" / "services" / "registry.py"
    text = registry.read_text()
    last = '    "lakehouse_platform.services.catalog_backup",\n'
    assert last in text
    registry.write_text(text.replace(last, last + '    "lakehouse_platform.services.quack",\n'))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PULUMI_CONFIG")}
    done = subprocess.run([sys.executable, "-c", EVALUATE], cwd=copy, env={**env, "PYTHONPATH": str(copy)},
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_the_copy_changes_only_by_the_package_and_the_registry_line(copy: Path, added: dict[str, Any]) -> None:
    status = git(copy, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert sorted(status) == [" M lakehouse_platform/services/registry.py", "?? lakehouse_platform/services/quack/__init__.py",
                              "?? lakehouse_platform/services/quack/aws.py"], status
    changed = [line for line in git(copy, "diff", "-U0", "lakehouse_platform/services/registry.py").splitlines()
               if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))]
    assert changed == ['+    "lakehouse_platform.services.quack",']


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

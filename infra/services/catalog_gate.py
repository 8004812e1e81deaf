"""The catalog gate: bearer-token authentication and read-only enforcement in front of the REST fixture (governance).

The fixture has no authentication and writes metadata with its own store keys, so read-only store keys
alone do not make a reader read-only (it could still commit schema changes or expire snapshots through
the catalog). The gate (``infra/operations/catalog_gate.py``) is the address every client gets for the
fixture: each identity's token (``catalog-token-<identity>``) opens it with that identity's role, no or
a wrong token is refused, a reader's writes are refused. It follows the fixture (a sidecar: enabled
with it), and the spec refuses disabling it while the fixture runs.

The gate is also the fixture's OAuth2 token endpoint: it signs the access tokens it issues with the
secret ``catalog-gate-signing-key``, which reaches it in its environment, never in its config file.

Whole definition: defaults, the gate's config (token hashes, never tokens), the local process (the
project's Python, supervised like every native service), the container (the platform's operations
image, built from this repository). Not on aws: the fixture does not run there, and the production
catalogs authenticate their own principals.
"""

from __future__ import annotations

import json

from infra.paths import PROJECT_ROOT
from infra.services.base import (
    ContainerHost,
    ContainerPlan,
    NativeHost,
    NativePlan,
    SecretSpec,
    ServiceContext,
    ServiceDefinition,
    code_digest,
    secret,
    sha256_of,
)
from infra.spec import Target

NAME = "catalog-gate"
FRONTS = "rest-fixture"
GATE_SOURCE = PROJECT_ROOT / "infra" / "operations" / "catalog_gate.py"
GATE_MODULE = "infra.operations.catalog_gate"
IMAGE_CONFIG = "/etc/lakehouse/catalog-gate.json"
#: Dockerfile of the platform's operations image (the exporter's too).
OPERATIONS_DOCKERFILE = "docker/operations.Dockerfile"
#: The key the gate signs its access tokens with (HS256: at least 32 bytes).
SIGNING_KEY = SecretSpec("catalog-gate-signing-key", "catalogGateSigningKey",
                         "lab-catalog-gate-access-token-signing-key")

DEFAULT = {
    "layer": "governance",
    "role": "bearer tokens in front of the REST fixture: readers read, writers write, no token is refused",
    "version": "0.3.0",  # the project's own (pyproject.toml)
    "image": "lakehouse/operations:0.3.0",  # built from docker/operations.Dockerfile
    "ports": {"http": {"internal": 8182, "external": 8182}},
    "health": {"kind": "http", "port": "http", "path": "/healthz",
               "command": ["CMD", "python", "-c", "import urllib.request; "
                           "urllib.request.urlopen('http://127.0.0.1:8182/healthz', timeout=2)"]},
    "memory": "96MiB",
    "depends_on": [FRONTS],
}


def gate_config(ctx: ServiceContext, listen_host: str) -> str:
    """The gate's config: where it listens, the catalog behind it, and each identity's role and token hash."""
    spec = ctx.spec
    identities = [{"name": name, "role": spec.role_of_identity(name),
                   "token_sha256": sha256_of(f"catalog-token-{name}")} for name in spec.identities]
    return json.dumps({
        "listen_host": listen_host,
        "listen_port": ctx.listen_port("http"),
        "upstream": ctx.url(FRONTS, "http"),
        "identities": identities,
    }, indent=2)


def signing_env() -> dict[str, str]:
    """The signing key, in the gate's environment (never its config file)."""
    from infra.operations.catalog_gate import SIGNING_KEY_ENV

    return {SIGNING_KEY_ENV: secret(SIGNING_KEY.name)}


def native(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    config = host.home / "catalog-gate.json"
    assert ctx.service.health is not None
    return NativePlan(
        argv=[host.python, "-m", GATE_MODULE, "--config", str(config)],
        files={str(config): gate_config(ctx, "127.0.0.1")},
        env={"PYTHONPATH": str(host.project_root or PROJECT_ROOT), "PYTHONUNBUFFERED": "1",
             "LAKEHOUSE_CODE": code_digest(GATE_SOURCE),  # a change of the gate's code restarts it
             **signing_env()},
        health={"kind": "http", "url": ctx.url(NAME, "http", path=ctx.service.health.path), "expect_status": 200},
        stop_grace_s=5.0,
    )


def container(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return ContainerPlan(
        command=["python", "-m", GATE_MODULE, "--config", IMAGE_CONFIG],
        env=signing_env(),
        uploads={IMAGE_CONFIG: gate_config(ctx, "0.0.0.0")},  # noqa: S104 - inside its container
        build_dockerfile=OPERATIONS_DOCKERFILE,
    )


SERVICES = (
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="bearer-token gate in front of the REST fixture (fails closed)",
        job_of=FRONTS, fronts=FRONTS, container=container, native=native, secrets=(SIGNING_KEY,),
        unavailable={Target.AWS: "the REST fixture does not run on aws; Polaris and Lakekeeper authenticate "
                                 "their own principals"},
    ),
)

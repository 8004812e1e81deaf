"""The catalog gate: bearer-token authentication and read-only enforcement in front of the REST fixture (governance).

The fixture has no authentication and writes metadata with its own store keys, so read-only store keys
alone do not make a reader read-only (it could still commit schema changes or expire snapshots through
the catalog). The gate (``infra/operations/catalog_gate.py``) is the address every client gets for the
fixture: each identity's token (``catalog-token-<identity>``) opens it with that identity's role, no or
a wrong token is refused, a reader's writes are refused. It follows the fixture (a sidecar: enabled
with it), and the spec refuses disabling it while the fixture runs.

Whole definition: defaults, the gate's config (token hashes, never tokens), the local process (the
project's Python, supervised like every native service), the container (the platform's one operations
image running ``python -m infra.operations.catalog_gate``). Not on aws: the fixture does not run there,
and the production catalogs authenticate their own principals.
"""

from __future__ import annotations

import json

from infra.paths import PROJECT_ROOT
from infra.services import operations_support as support
from infra.services.base import (
    ContainerHost,
    ContainerPlan,
    NativeHost,
    NativePlan,
    ServiceContext,
    ServiceDefinition,
    code_digest,
    sha256_of,
)
from infra.spec import Target

NAME = "catalog-gate"
FRONTS = "rest-fixture"
GATE_SOURCE = PROJECT_ROOT / "infra" / "operations" / "catalog_gate.py"
IMAGE_CONFIG = "/etc/lakehouse/catalog-gate.json"

DEFAULT = {
    "layer": "governance",
    "role": "bearer tokens in front of the REST fixture: readers read, writers write, no token is refused",
    "version": "0.3.0",  # the project's own (pyproject.toml)
    "image": support.OPERATIONS_IMAGE,
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


def native(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    config = host.home / "catalog-gate.json"
    assert ctx.service.health is not None
    return NativePlan(
        argv=[host.python, str(GATE_SOURCE), "--config", str(config)],
        files={str(config): gate_config(ctx, "127.0.0.1")},
        env={"LAKEHOUSE_CODE": code_digest(GATE_SOURCE)},  # a change of the gate's code restarts it
        health={"kind": "http", "url": ctx.url(NAME, "http", path=ctx.service.health.path), "expect_status": 200},
        stop_grace_s=5.0,
    )


def container(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """The operations image running the gate's module (its code is in the image)."""
    return support.operations_plan(
        command=["python", "-m", "infra.operations.catalog_gate", "--config", IMAGE_CONFIG], env={},
        uploads={IMAGE_CONFIG: gate_config(ctx, "0.0.0.0")},  # noqa: S104 - inside its container
        bind_mounts={})


SERVICES = (
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="bearer-token gate in front of the REST fixture (fails closed)",
        job_of=FRONTS, fronts=FRONTS, container=container, native=native,
        unavailable={Target.AWS: "the REST fixture does not run on aws; Polaris and Lakekeeper authenticate "
                                 "their own principals"},
    ),
)

"""The catalog gate: bearer-token authentication and grants per namespace in front of the REST fixture (governance).

The fixture has no authentication and writes metadata with its own store keys, so read-only store keys
alone do not make a reader read-only (it could still commit schema changes or expire snapshots through
the catalog). The gate (``lakehouse_platform/runtime/catalog_gate.py``) is the address every client gets for the
fixture: each identity's token (``catalog-token-<identity>``) opens it with that identity's grants (read,
write, manage per namespace), no or a wrong token is refused, anything its grants do not allow is refused.
It follows the fixture (a sidecar: enabled with it), and the spec refuses disabling it while the fixture runs.

The gate is also the fixture's OAuth2 token endpoint: it signs the access tokens it issues with the
secret ``catalog-gate-signing-key``, which reaches it in its environment, never in its config file.

Whole definition: defaults, the gate's config (token hashes, never tokens), the local process (the
project's Python, supervised like every native service), the container (the platform's operations
image, built from this repository). Not on aws: the fixture does not run there, and the production
catalogs authenticate their own principals.
"""

from __future__ import annotations

from lakehouse_platform.services import operations_support as support
from lakehouse_platform.services.catalog_gate import container, native
from lakehouse_platform.services.catalog_gate.config import FRONTS, NAME, SIGNING_KEY, local_trust, trust_outputs
from lakehouse_platform.services.definition import (
    Governance,
    GrantsEnforcement,
    Metrics,
    OnAws,
    OnDocker,
    OnNative,
    ServiceDefinition,
)
from lakehouse_platform.version import PLATFORM_VERSION

DEFAULT = {
    "layer": "governance",
    "role": "bearer tokens in front of the REST fixture: each identity's grants per namespace, no token is refused",
    "version": PLATFORM_VERSION,  # the project's own (pyproject.toml)
    "image": support.OPERATIONS_IMAGE,  # built from lakehouse_platform/runtime/image/Dockerfile
    "ports": {"http": {"internal": 8182, "external": 8182}},
    "health": {"kind": "http", "port": "http", "path": "/healthz",
               "command": ["CMD", "python", "-c", "import urllib.request; "
                           "urllib.request.urlopen('http://127.0.0.1:8182/healthz', timeout=2)"]},
    "memory": "96MiB",
    # Disk: its log.
    "disk": "128MiB",
    "depends_on": [FRONTS],
}


SERVICES = (
    ServiceDefinition(
        name=NAME, default=DEFAULT, job_of=FRONTS,
        summary="bearer-token gate in front of the REST fixture (fails closed)",
        docker=OnDocker(container=container.server),
        native=OnNative(process=native.server),
        aws=OnAws(unavailable="the REST fixture does not run on aws; Polaris and Lakekeeper authenticate "
                              "their own principals"),
        governance=Governance(secrets=(SIGNING_KEY,),
                              enforces_grants=GrantsEnforcement("every REST request of the fixture, per namespace",
                                                                gaps=local_trust)),
        fronts=FRONTS, metrics=Metrics("catalog_gate_metrics"), stack_outputs=trust_outputs,
    ),
)

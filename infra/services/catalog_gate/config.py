"""The catalog gate's configuration: where it listens, the catalog behind it, each identity's role and token hash."""

from __future__ import annotations

import json

from infra.paths import PROJECT_ROOT
from infra.services.context import ServiceContext
from infra.services.placeholders import sha256_of

NAME = "catalog-gate"


FRONTS = "rest-fixture"


GATE_SOURCE = PROJECT_ROOT / "infra" / "operations" / "catalog_gate.py"


IMAGE_GATE = "/opt/lakehouse/catalog_gate.py"


IMAGE_CONFIG = "/etc/lakehouse/catalog-gate.json"


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

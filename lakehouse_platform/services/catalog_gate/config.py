"""The catalog gate's configuration: where it listens, the catalog behind it, each identity's access table (what it
may do on each namespace, from the stack's grants) and token hash, and the key it signs the access tokens it issues
with (in its environment, never its config file)."""

from __future__ import annotations

import json

from lakehouse_platform.model import PlatformSpec, Target
from lakehouse_platform.paths import PACKAGE_DIR
from lakehouse_platform.placeholders import secret, sha256_of
from lakehouse_platform.runtime.config import ENV_GATE_SIGNING_KEY
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.definition import SecretSpec

NAME = "catalog-gate"
#: The catalog the gate fronts: its declared dependency (``job_of``, ``fronts``, ``depends_on`` of its definition).
FRONTS = "rest-fixture"  # not the service: the gate's declared dependency, the catalog it fronts
GATE_SOURCE = PACKAGE_DIR / "runtime" / "catalog_gate.py"
GATE_MODULE = "lakehouse_platform.runtime.catalog_gate"
IMAGE_CONFIG = "/etc/lakehouse/catalog-gate.json"
#: The key the gate signs its access tokens with (HS256: at least 32 bytes).
SIGNING_KEY = SecretSpec("catalog-gate-signing-key", "catalogGateSigningKey",
                         "lab-catalog-gate-access-token-signing-key")


def local_trust(spec: PlatformSpec) -> list[str]:
    """What the gate cannot enforce natively, said plainly (the review's flags, the ``trust`` output): the fixture it
    fronts listens on 127.0.0.1 like every native service, so any local process that calls the fixture's own port
    skips the gate and its grants. In the lab the fixture's port is not published (only the Docker network reaches
    it); it does not run on aws."""
    if spec.target is not Target.NATIVE or FRONTS not in spec.enabled_services():
        return []
    port = spec.services[FRONTS].ports["http"].bound
    return [f"native: the {FRONTS} catalog listens on 127.0.0.1:{port} behind the gate, so this target trusts every "
            "local process: one that calls that port directly skips the gate and its grants (the lab keeps it on "
            "the Docker network, unpublished)"]


def trust_outputs(spec: PlatformSpec) -> dict[str, list[str]]:
    """The ``trust`` stack output: what a deployment of this stack trusts beyond its grants (empty: nothing)."""
    found = local_trust(spec)
    return {"trust": found} if found else {}


def gate_config(ctx: ServiceContext, listen_host: str) -> str:
    """The gate's config: where it listens, the catalog behind it, and each identity's access table and token hash.

    The access table is the one decision's (``PlatformSpec.access_of``): each known namespace with what the
    identity may do there, and ``*`` for any other.
    """
    spec = ctx.spec
    identities = [{"name": name, "grants": {ns: list(actions) for ns, actions in spec.access_of(name).items()},
                   "token_sha256": sha256_of(f"catalog-token-{name}")} for name in spec.identities]
    return json.dumps({
        "listen_host": listen_host,
        "listen_port": ctx.listen_port("http"),
        "upstream": ctx.url(FRONTS, "http"),
        "identities": identities,
    }, indent=2)


def signing_env() -> dict[str, str]:
    """The signing key, in the gate's environment (never its config file)."""
    return {ENV_GATE_SIGNING_KEY: secret(SIGNING_KEY.name)}

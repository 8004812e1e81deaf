"""SeaweedFS's configuration on every target: its S3 identities (one per platform identity, each with the actions its
grants give it per bucket and prefix) and server flags."""

from __future__ import annotations

import json

from lakehouse_platform.model import PlatformSpec
from lakehouse_platform.placeholders import secret
from lakehouse_platform.services.catalogs import table_prefixes
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.probing import first_version

NAME = "seaweedfs"


BUCKET_JOB = "seaweedfs-bucket"

#: The suffix of upstream's large-disk builds (5-byte volume offsets), as its own image tags and release files name
#: them: ``native_version: 4.45_large_disk``. Their volume files and the standard build's do not mix.
LARGE_DISK = "_large_disk"


def release_of(printed: str) -> str | None:
    """The release ``weed version`` or the master's status names (``"30GB 4.53 7506e5f91cd6"``: build, release,
    commit), ``_large_disk`` appended for upstream's large-disk (``8000GB``) builds; None when it names none."""
    found = first_version(printed)
    return found + LARGE_DISK if found and "8000GB" in printed else found


#: 4.45 by digest: the upstream snapshot read here ends at tag 4.44, so the tag is confirmed by the
#: same digest pinned in several unrelated public repositories (no registry is reachable here).
IMAGE = "chrislusf/seaweedfs:4.45@sha256:fc9f76fa993ad69966ffeb2f65d0318fcae39c6f8e20cf68ef7b3a5cb97769e5"


#: The SeaweedFS actions each grant action needs at the store (``Tagging`` only where the identity's actions hold it).
STORE_ACTIONS = {"read": ("Read", "List"), "write": ("Write", "Tagging")}


def store_actions(spec: PlatformSpec, name: str) -> list[str]:
    """The SeaweedFS actions of one identity, from its grants (``PlatformSpec.access_of``, the one decision).

    The platform's identity (Admin) keeps its actions: it is the store's administrator. Any other identity's
    ``*`` rights hold on the whole warehouse bucket (``Read:<bucket>``), and each namespace's rights beyond them
    on that namespace's keys (``Write:<bucket>/<prefix><namespace>/*``; SeaweedFS matches a pattern with ``*``
    against ``<action>:<bucket>/<key>``, and a List against its ``prefix``). Its ``actions`` decide which kinds
    it may hold at all. Nothing else: no other bucket, no other key.
    """
    identity = spec.identities[name]
    if "Admin" in identity.actions:
        return list(identity.actions)
    bucket, access = spec.storage.bucket, spec.access_of(name)
    everywhere = access["*"]
    found: list[str] = []
    for grant_action, kinds in STORE_ACTIONS.items():
        for kind in (k for k in kinds if k in identity.actions):
            if grant_action in everywhere:
                found.append(f"{kind}:{bucket}")
                continue
            found += [f"{kind}:{bucket}/{prefix}{namespace}/*" for namespace, actions in access.items()
                      if namespace != "*" and grant_action in actions for prefix in table_prefixes(spec)]
    return found


def wider_than_grants(spec: PlatformSpec, name: str) -> dict[str, list[str]]:
    """What the store lets an identity do on a namespace its grants narrow below ``*`` (namespace -> actions).

    SeaweedFS's identity actions only allow: a namespace whose entry gives less than ``*`` cannot be carved out
    of the bucket-wide ``*`` rights, so there the store allows ``*``'s rights (the catalog gate and Trino still
    refuse every catalog operation beyond the namespace's own grant). The review prints it.
    """
    identity = spec.identities[name]
    if "Admin" in identity.actions:
        return {}
    access = spec.access_of(name)
    wider: dict[str, list[str]] = {}
    for namespace, actions in access.items():
        extra: list[str] = [a for a in access["*"] if a in STORE_ACTIONS and a not in actions]
        if namespace != "*" and extra:
            wider[namespace] = extra
    return wider


def grant_gaps(spec: PlatformSpec) -> list[str]:
    """The review's lines for what the store cannot say of this stack's grants (``wider_than_grants``)."""
    return [f"identity {name}: the lab store cannot narrow '*' for {namespace}: its store keys may still "
            f"{', '.join(actions)} there (the catalog and Trino refuse it; list its namespaces instead of '*' to "
            "close the store too)" for name in spec.identities
            for namespace, actions in wider_than_grants(spec, name).items()]


def s3_config(ctx: ServiceContext) -> str:
    """SeaweedFS S3 identities file, each identity's actions from its grants; secret keys are placeholders the
    target fills with secrets."""
    identities = [
        {
            "name": name,
            "credentials": [{"accessKey": identity.access_key, "secretKey": secret(f"s3-secret-key-{name}")}],
            "actions": store_actions(ctx.spec, name),
        }
        for name, identity in ctx.spec.identities.items()
    ]
    return json.dumps({"identities": identities}, indent=2)


def server_args(ctx: ServiceContext, data_dir: str, config_path: str, bind_ip: str, announce_ip: str) -> list[str]:
    """`weed server` flags shared by every target: master, volume, filer and the S3 gateway.

    The defaults weed would otherwise take are wrong for this platform: telemetry to an internet
    host, a volume server on Trino's 8080, gRPC ports the spec does not know, and its own Iceberg
    catalog and Lance server on the fixture's 8181 and 9101.
    """
    port = ctx.listen_port
    return [
        "server", f"-ip={announce_ip}", f"-ip.bind={bind_ip}", f"-dir={data_dir}",
        f"-master.port={port('master')}", f"-master.port.grpc={port('master-grpc')}",
        "-master.telemetry=false", "-master.volumeSizeLimitMB=256",
        f"-volume.port={port('volume')}", f"-volume.port.grpc={port('volume-grpc')}", "-volume.max=0",
        "-volume.preStopSeconds=1",
        "-filer", f"-filer.port={port('filer')}", f"-filer.port.grpc={port('filer-grpc')}",
        "-s3", f"-s3.port={port('s3')}", f"-s3.port.grpc={port('s3-grpc')}", f"-s3.config={config_path}",
        "-s3.port.iceberg=0", "-s3.port.lance=0",
    ]


def go_memory_limit(ctx: ServiceContext) -> str:
    """GOMEMLIMIT at three quarters of the budget: Go's heap target, as -Xmx is a JVM's.

    Without it the store's resident memory grew past its 512 MiB budget over a few probe runs.
    """
    return f"{ctx.service.memory_bytes * 3 // 4 // (1024 * 1024)}MiB"


def check(spec: PlatformSpec) -> list[str]:
    """The store needs the platform's own identity: it creates the warehouse bucket and runs the catalog with it."""
    if NAME in spec.enabled_services() and not spec.identities_of("platform"):
        return ["identities: no identity has Admin; the platform itself needs one (it creates the warehouse bucket "
                "and runs the catalog)"]
    return []

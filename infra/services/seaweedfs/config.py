"""SeaweedFS's configuration on every target: its S3 identities (one per platform identity) and server flags."""

from __future__ import annotations

import json

from infra.services.context import ServiceContext
from infra.services.placeholders import secret
from infra.spec import PlatformSpec

NAME = "seaweedfs"


BUCKET_JOB = "seaweedfs-bucket"


#: 4.45 by digest: the upstream snapshot read here ends at tag 4.44, so the tag is confirmed by the
#: same digest pinned in several unrelated public repositories (no registry is reachable here).
IMAGE = "chrislusf/seaweedfs:4.45@sha256:fc9f76fa993ad69966ffeb2f65d0318fcae39c6f8e20cf68ef7b3a5cb97769e5"


def s3_config(ctx: ServiceContext) -> str:
    """SeaweedFS S3 identities file; secret keys are placeholders the target fills with secrets."""
    identities = [
        {
            "name": name,
            "credentials": [{"accessKey": identity.access_key, "secretKey": secret(f"s3-secret-key-{name}")}],
            "actions": list(identity.actions),
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

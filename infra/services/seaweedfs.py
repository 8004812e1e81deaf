"""SeaweedFS: the S3-compatible object store holding every byte of table data (storage layer)."""

from __future__ import annotations

import json

from infra.services.base import ContainerPlan, NativeHost, NativePlan, ServiceContext, secret

NAME = "seaweedfs"

DEFAULT = {
    "layer": "storage",
    "role": "S3-compatible object store, single process, with IAM and STS",
    "version": "4.45",
    "image": "chrislusf/seaweedfs:4.45",
    "ports": {
        "s3": {"internal": 8333, "external": 8333},
        "master": {"internal": 9333, "external": 9333},
        "filer": {"internal": 8888, "external": 8888},
        # Moved off weed's default 8080, which is Trino's.
        "volume": {"internal": 9340},
    },
    "health": {"kind": "http", "port": "s3", "path": "/healthz", "command": ["CMD", "wget", "-qO-", "http://127.0.0.1:8333/healthz"]},
    "memory": "512MiB",
}

# After writes the filer flushes its metadata log for ~15 s on SIGTERM before it exits.
STOP_GRACE_S = 30.0

BUCKET_JOB = "seaweedfs-bucket"

BUCKET_JOB_DEFAULT = {
    "layer": "storage",
    "kind": "job",
    "role": "creates the warehouse bucket once the store is up",
    "version": "4.45",
    "image": "chrislusf/seaweedfs:4.45",
    "memory": "128MiB",
    "depends_on": [NAME],
}


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


def server_args(ctx: ServiceContext, data_dir: str, config_path: str, bind_ip: str) -> list[str]:
    """`weed server` flags shared by every target: master, volume, filer and the S3 gateway.

    The defaults weed would otherwise take are wrong for this platform: telemetry to an internet
    host, a volume server on Trino's 8080, and its own Iceberg catalog and Lance server on the
    fixture's 8181 and 9101.
    """
    port = ctx.listen_port
    return [
        "server", f"-ip={bind_ip}", f"-ip.bind={bind_ip}", f"-dir={data_dir}",
        f"-master.port={port('master')}", "-master.telemetry=false", "-master.volumeSizeLimitMB=256",
        f"-volume.port={port('volume')}", "-volume.max=0", "-volume.preStopSeconds=1",
        "-filer", f"-filer.port={port('filer')}",
        "-s3", f"-s3.port={port('s3')}", f"-s3.config={config_path}",
        "-s3.port.iceberg=0", "-s3.port.lance=0",
    ]


def go_memory_limit(ctx: ServiceContext) -> str:
    """GOMEMLIMIT at three quarters of the budget: Go's heap target, as -Xmx is a JVM's.

    Without it the store's resident memory grew past its 512 MiB budget over a few probe runs.
    """
    return f"{ctx.service.memory_bytes * 3 // 4 // (1024 * 1024)}MiB"


def container(ctx: ServiceContext) -> ContainerPlan:
    """One `weed server` with master, volume, filer and S3 gateway; data on a named volume."""
    return ContainerPlan(
        command=server_args(ctx, "/data", "/etc/seaweedfs/s3.json", "0.0.0.0"),
        env={"GOMEMLIMIT": go_memory_limit(ctx)},
        uploads={"/etc/seaweedfs/s3.json": s3_config(ctx)},
        volumes={"data": "/data"},
    )


def native(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    """`weed server` on loopback; the warehouse bucket is created after every healthy start."""
    home = host.home
    config = str(home / "s3.json")
    argv = [str(host.artifact.path), *server_args(ctx, str(home / "data"), config, "127.0.0.1")]
    # Unix sockets inside the home, not shared /tmp names (a developer and CI on one machine).
    argv += [f"-filer.localSocket={home / 'filer.sock'}", f"-s3.localSocket={home / 's3.sock'}"]
    s3 = ctx.url(NAME, "s3")
    return NativePlan(
        argv=argv,
        files={config: s3_config(ctx)},
        setup=[["mkdir", "-p", str(home / "data")]],
        env={
            "GOMEMLIMIT": go_memory_limit(ctx),
            "LAKEHOUSE_S3_ACCESS_KEY": secret("s3-access-key"),
            "LAKEHOUSE_S3_SECRET_KEY": secret("s3-secret-key"),
            "PYTHONPATH": str(host.project_root),
        },
        post_start=[[host.python, "-m", "infra.targets.native.tasks", "create-bucket", "--endpoint", s3,
                     "--bucket", ctx.spec.storage.bucket, "--region", ctx.spec.storage.region]],
        health={"kind": "http", "url": f"{s3}{ctx.service.health.path}", "expect_status": 200},
        stop_grace_s=STOP_GRACE_S,
    )


def bucket_job(ctx: ServiceContext) -> ContainerPlan:
    """Creates the warehouse bucket through `weed shell` against the store's master."""
    master = ctx.address(NAME, "master")
    bucket = ctx.spec.storage.bucket
    return ContainerPlan(
        command=["sh", "-c", f"echo 's3.bucket.create -name {bucket}' | weed shell -master={master}"],
    )

"""SeaweedFS natively: ``weed server -s3`` on 127.0.0.1, the bucket made by a post-start step."""

from __future__ import annotations

from infra.services.context import ServiceContext
from infra.services.placeholders import secret
from infra.services.plans import NativeHost, NativePlan
from infra.services.seaweedfs.config import NAME, go_memory_limit, s3_config, server_args

# After writes the filer flushes its metadata log for ~15 s on SIGTERM before it exits.
STOP_GRACE_S = 30.0


def server(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    """`weed server` on loopback; the warehouse bucket is created after every healthy start."""
    assert host.artifact is not None
    home = host.home
    config = str(home / "s3.json")
    argv = [str(host.artifact.path), *server_args(ctx, str(home / "data"), config, "127.0.0.1", "127.0.0.1")]
    # Unix sockets inside the home, not shared /tmp names (a developer and CI on one machine).
    argv += [f"-filer.localSocket={home / 'filer.sock'}", f"-s3.localSocket={home / 's3.sock'}"]
    s3 = ctx.url(NAME, "s3")
    assert ctx.service.health is not None
    return NativePlan(
        argv=argv,
        files={config: s3_config(ctx)},
        setup=[["mkdir", "-p", str(home / "data")]],
        env={
            "GOMEMLIMIT": go_memory_limit(ctx),
            "LAKEHOUSE_S3_ACCESS_KEY": secret("s3-access-key"),
            "LAKEHOUSE_S3_SECRET_KEY": secret("s3-secret-key"),
            "PYTHONPATH": str(host.code_root),
        },
        post_start=[[host.python, "-m", "infra.operations.tasks", "create-bucket", "--endpoint", s3,
                     "--bucket", ctx.spec.storage.bucket, "--region", ctx.spec.storage.region]],
        health={"kind": "http", "url": f"{s3}{ctx.service.health.path}", "expect_status": 200},
        stop_grace_s=STOP_GRACE_S,
    )

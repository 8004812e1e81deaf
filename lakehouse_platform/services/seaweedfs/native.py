"""SeaweedFS natively: ``weed server -s3`` on 127.0.0.1, the bucket made by a post-start step."""

from __future__ import annotations

from lakehouse_platform.placeholders import secret
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.plans import NativeHost, NativePlan
from lakehouse_platform.services.seaweedfs.config import LARGE_DISK, NAME, go_memory_limit, s3_config, server_args

# After writes the filer flushes its metadata log for ~15 s on SIGTERM before it exits.
STOP_GRACE_S = 30.0
#: The kind of build whose volume files are in the home's data directory, written with every start: ``standard``
#: or ``large_disk``. Data without it predates the marker: the standard build, the only one there was.
VOLUME_FORMAT = "volume-format"
#: Where the runbook says how to move a store to the other kind of build (the refusal names it).
FORMAT_CHANGE_DOC = "docs/operations/upgrades.md#seaweedfs"


def volume_format(ctx: ServiceContext) -> str:
    """The kind of build this stack's pin runs: ``large_disk`` (5-byte offsets) or ``standard``."""
    return LARGE_DISK.lstrip("_") if ctx.spec.pin_of(NAME).endswith(LARGE_DISK) else "standard"


def in_place(ctx: ServiceContext, host: NativeHost) -> str | None:
    """Refuse a build whose volume servers cannot read the volumes on disk: standard and large-disk builds differ.

    Any release of the same kind reads them (4.44_large_disk -> 4.45_large_disk is in place). A large-disk volume
    server refuses the standard build's volumes ("BytesOffset mismatch"), and the other way round; moving a store
    is copying its objects, the operator's procedure, never a side effect of ``pulumi up``.
    """
    data = host.home / "data"
    if not any(data.glob("*.dat")):
        return None  # no volume yet: any build starts it
    try:
        on_disk = (host.home / VOLUME_FORMAT).read_text().strip()
    except OSError:
        on_disk = "standard"
    wanted = volume_format(ctx)
    if on_disk == wanted:
        return None
    keep = "native_version unset" if on_disk == "standard" else f"native_version: <release>{LARGE_DISK}"
    return (f"services.{ctx.name}: the volumes in {data} were written by SeaweedFS's {on_disk} build; this stack "
            f"now pins {ctx.spec.pin_of(NAME)}, a {wanted} build, whose volume servers cannot read them. Keep "
            f"{ctx.name} on a {on_disk} build ({keep}), or follow {FORMAT_CHANGE_DOC} (back up, pulumi destroy, "
            f"move {host.home} aside, pulumi up on the new build, copy the bucket's objects over from the old store "
            "started by hand on its own ports).")


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
        files={config: s3_config(ctx), str(home / VOLUME_FORMAT): volume_format(ctx) + "\n"},
        setup=[["mkdir", "-p", str(home / "data")]],
        env={
            "GOMEMLIMIT": go_memory_limit(ctx),
            "LAKEHOUSE_S3_ACCESS_KEY": secret("s3-access-key"),
            "LAKEHOUSE_S3_SECRET_KEY": secret("s3-secret-key"),
            "PYTHONPATH": str(host.code_root),
        },
        post_start=[[host.python, "-m", "lakehouse_platform.runtime.tasks", "create-bucket", "--endpoint", s3,
                     "--bucket", ctx.spec.storage.bucket, "--region", ctx.spec.storage.region]],
        health={"kind": "http", "url": f"{s3}{ctx.service.health.path}", "expect_status": 200},
        stop_grace_s=STOP_GRACE_S,
    )

"""SeaweedFS on docker: the server from the pinned image, and the bucket job (``weed shell``, checked)."""

from __future__ import annotations

from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.plans import ContainerHost, ContainerPlan
from lakehouse_platform.services.seaweedfs.config import NAME, go_memory_limit, s3_config, server_args


def server(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """One `weed server` with master, volume, filer and S3 gateway; data on a named volume.

    ``-ip`` is the address the master hands to clients and peers (weed/command/server.go: "ip or
    server name, also used as identifier"): the service's name on the network, bound on every
    interface (``-ip.bind``), as upstream's docker/seaweedfs-compose.yml does. ``-ip=0.0.0.0``
    would send a client asking the master for the filer to 0.0.0.0, i.e. itself.
    """
    return ContainerPlan(
        command=server_args(ctx, "/data", "/etc/seaweedfs/s3.json", "0.0.0.0", NAME),  # noqa: S104 - in its container
        env={"GOMEMLIMIT": go_memory_limit(ctx)},
        uploads={"/etc/seaweedfs/s3.json": s3_config(ctx)},
        volumes={"data": "/data"},
    )


#: How long one `weed shell` may take (it waits for the master without a deadline of its own).
SHELL_TIMEOUT_S = 60


def bucket_script(ctx: ServiceContext) -> str:
    """Create the warehouse bucket unless it exists, then check that it does.

    `weed shell` prints a failed command's error and still exits 0 (weed/shell/shell_liner.go,
    processEachCmd), so the job checks the bucket list itself and exits 1 when the bucket is
    missing: a failed bucket creation fails the deployment instead of passing silently.
    """
    bucket = ctx.spec.storage.bucket
    listed = "^[[:space:]]+" + bucket.replace(".", "\\.") + "[[:space:]]"  # s3.bucket.list: "  <name>\tsize:..."
    weed = (f"timeout {SHELL_TIMEOUT_S} weed shell -master={ctx.address(NAME, 'master')} "
            f"-filer={ctx.address(NAME, 'filer')}")
    return "\n".join([
        "set -eu",
        f'run() {{ echo "$1" | {weed} 2>&1; }}',
        f"if run s3.bucket.list | grep -Eq '{listed}'; then echo 'bucket {bucket} exists'; exit 0; fi",
        f"run 's3.bucket.create -name {bucket}'",
        f"if run s3.bucket.list | grep -Eq '{listed}'; then echo 'bucket {bucket} created'; exit 0; fi",
        f"echo 'bucket {bucket} is missing after s3.bucket.create' >&2",
        "exit 1",
        "",
    ])


def bucket_job(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """The bucket script in the image's shell.

    Not through the image's entrypoint: docker/entrypoint.sh runs an unknown first word as
    ``weed <word>`` (its ``*)`` case), so ``sh -c ...`` there would be ``weed sh -c ...``.
    """
    return ContainerPlan(entrypoint=["/bin/sh", "-c"], command=[bucket_script(ctx)])

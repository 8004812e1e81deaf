"""SeaweedFS: the S3-compatible object store holding every byte of table data (storage layer).

Whole definition: defaults (one ``weed server`` with master, volume, filer and S3 gateway; every
gRPC port declared, so nothing binds a port the spec does not know), the container, the local
process, the bucket job, and the native artifact (``weed`` built from the Go module proxy).
"""

from __future__ import annotations

import json
import re

from infra.artifacts import cache, gobuild
from infra.artifacts.recipe import Artifact, ArtifactError, ArtifactRecipe
from infra.services.context import ServiceContext
from infra.services.definition import ServiceDefinition
from infra.services.placeholders import secret
from infra.services.plans import ContainerHost, ContainerPlan, NativeHost, NativePlan
from infra.spec import Target

NAME = "seaweedfs"
BUCKET_JOB = "seaweedfs-bucket"
#: 4.45 by digest: the upstream snapshot read here ends at tag 4.44, so the tag is confirmed by the
#: same digest pinned in several unrelated public repositories (no registry is reachable here).
IMAGE = "chrislusf/seaweedfs:4.45@sha256:fc9f76fa993ad69966ffeb2f65d0318fcae39c6f8e20cf68ef7b3a5cb97769e5"

DEFAULT = {
    "layer": "storage",
    "role": "S3-compatible object store, single process, with IAM and STS",
    "version": "4.45",
    "image": IMAGE,
    "ports": {
        "s3": {"internal": 8333, "external": 8333},
        "master": {"internal": 9333, "external": 9333},
        "filer": {"internal": 8888, "external": 8888},
        # Moved off weed's default 8080, which is Trino's.
        "volume": {"internal": 9340},
        # weed's default gRPC port is each port + 10000; declared so the spec knows every bound port.
        "s3-grpc": {"internal": 18333},
        "master-grpc": {"internal": 19333},
        "filer-grpc": {"internal": 18888},
        "volume-grpc": {"internal": 19340},
    },
    "health": {"kind": "http", "port": "s3", "path": "/healthz",
               "command": ["CMD", "wget", "-qO-", "http://127.0.0.1:8333/healthz"]},
    "memory": "512MiB",
}

BUCKET_JOB_DEFAULT = {
    "layer": "storage",
    "kind": "job",
    "role": "creates the warehouse bucket once the store is up",
    "version": "4.45",
    "image": IMAGE,
    "memory": "128MiB",
    "depends_on": [NAME],
}

# After writes the filer flushes its metadata log for ~15 s on SIGTERM before it exits.
STOP_GRACE_S = 30.0

MODULE = "github.com/seaweedfs/seaweedfs"
#: SeaweedFS release -> Go module version the proxy serves. The proxy has no tag for SeaweedFS
#: releases; this pseudo-version is the one that resolves. Its source says 4.53, not 4.45
#: (weed/util/version/constants.go); the artifact's version is what ``weed version`` prints.
MODULE_VERSIONS = {"4.45": "v0.0.0-20261109003541-7506e5f91cd6"}


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


def container(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
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


def native(ctx: ServiceContext, host: NativeHost) -> NativePlan:
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
            "PYTHONPATH": str(host.project_root),
        },
        post_start=[[host.python, "-m", "infra.targets.native.tasks", "create-bucket", "--endpoint", s3,
                     "--bucket", ctx.spec.storage.bucket, "--region", ctx.spec.storage.region]],
        health={"kind": "http", "url": f"{s3}{ctx.service.health.path}", "expect_status": 200},
        stop_grace_s=STOP_GRACE_S,
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


# -- native artifact: `weed` from the Go module proxy ------------------------------------------


def artifact_key(ctx: ServiceContext) -> str:
    return f"seaweedfs:{ctx.service.version}"


def fetch_weed(ctx: ServiceContext) -> Artifact:
    """``weed`` built for the SeaweedFS release the spec pins (cold: minutes on 2 cores)."""
    version = ctx.service.version
    key = artifact_key(ctx)
    with cache.locked(key):
        if found := cache.cached(key):
            return found
        if version not in MODULE_VERSIONS:
            raise ArtifactError(f"no Go module version known for SeaweedFS {version}; add it to "
                                f"seaweedfs.MODULE_VERSIONS (known: {', '.join(MODULE_VERSIONS)})")
        module_version = MODULE_VERSIONS[version]
        out_dir = cache.cache_root() / "seaweedfs" / version
        binary = out_dir / "weed"
        commit = module_version.rsplit("-", 1)[-1]
        seconds = gobuild.build_from_module(MODULE, module_version, "./weed", binary,
                                            ldflags=f"-s -w -X {MODULE}/weed/util/version.COMMIT={commit}")
        printed = cache.run([str(binary), "version"]).strip()
        match = re.search(r"\b(\d+\.\d+)\b", printed)
        obtained = match.group(1) if match else printed
        notes = [f"weed version: {printed}", f"go module {MODULE}@{module_version}"]
        if obtained != version:
            notes.append(f"pin {version} resolves to source version {obtained}")
        entry = {
            "name": NAME, "requested": version, "version": obtained, "path": str(binary), "root": str(out_dir),
            "files": {"weed": cache.file_record(binary)}, "sha256": cache.sha256_file(binary),
            "source": f"{MODULE}@{module_version}", "build_seconds": seconds, "notes": notes,
        }
        cache.record(key, entry)
        return cache.artifact_from(entry)


SERVICES = (
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="S3 store (master, volume, filer, S3 gateway in one process)",
        container=container, native=native,
        unavailable={Target.AWS: "on aws the store is S3 itself"},
        artifact=ArtifactRecipe(key=artifact_key, fetch=fetch_weed, source="Go module proxy (go build ./weed)"),
    ),
    ServiceDefinition(
        name=BUCKET_JOB, default=BUCKET_JOB_DEFAULT, job_of=NAME, summary="creates the warehouse bucket",
        container=bucket_job, native_folded="a post-start step of seaweedfs creates the bucket",
        unavailable={Target.AWS: "on aws the storage layer creates the bucket itself"},
    ),
)

